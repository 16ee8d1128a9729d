/*
 * replay.h — `gpupool-sim replay`: a trace in virtual time (arrivals and
 * durations) through the full engine cycle — queueing, quotas, over-quota
 * borrowing, reclaim, preemption, gangs — in the modes an administrator
 * compares on the same trace and hardware:
 *
 *   static             each project owns a fixed share of the nodes (one
 *                      engine; nodes carry a project label and every pod a
 *                      node selector for it); deserved = limit = the GPUs it
 *                      owns; no reclaim; whole GPUs only.
 *   pooled             one pool: deserved quotas, over-quota borrowing and
 *                      reclaim; fractional requests rounded up to one GPU.
 *   pooled-fractional  the same with fractional requests honoured.
 *
 * The engine is used only through its public API (gp_engine.h).
 */
#ifndef GP_SIM_REPLAY_H
#define GP_SIM_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/gp_names.h"
#include "engine/gp_engine.h"
#include "sim/projects.h"
#include "sim/trace.h"

/* The ways a replay shares the pool (docs/simulator.md). */
#define SIM_MODES(XX)                                                                              \
    XX(SIM_MODE_STATIC, "static")                                                                  \
    XX(SIM_MODE_POOLED, "pooled")                                                                  \
    XX(SIM_MODE_FRACTIONAL, "pooled-fractional")

GP_NAMED_ENUM_DECLARE(sim_mode, SIM_MODES, SIM_MODE_COUNT);

typedef struct sim_replay_opts {
    sim_mode mode;
    gp_placement policy; /* default GP_PLACE_GPUPOOL */
    uint64_t seed;
    int64_t grace_s;       /* checkpoint grace after an eviction (30) */
    int64_t min_runtime_s; /* protected from eviction this long (0) */
    int64_t tick_s;        /* also cycle this often while work waits (0: only on events) */
    int progress;          /* percent progress on stderr for long runs */
} sim_replay_opts;

void sim_replay_opts_init(sim_replay_opts *o);

/* One workload of the trace as the replay sees it. */
typedef struct sim_job {
    size_t pod;               /* index into pods[] */
    int32_t leaf;             /* index into the projects */
    int64_t submit, duration; /* seconds */
} sim_job;

/*
 * The jobs of a pod list: pods with both creation_time and deletion_time;
 * duration = deletion - scheduled_time when the pod has one between the two,
 * else deletion - creation. A pod without the two times is an error naming
 * its line. *out is malloc'ed, sorted by submission (then file order).
 */
int sim_replay_jobs(const sim_pod *pods, size_t npods, const int32_t *leaf_of,
                    const char *pods_path, sim_job **out, size_t *n, char *err, size_t errlen);

typedef struct sim_project_result {
    const char *name; /* points into the projects */
    int32_t leaf;
    double deserved_gpus; /* deserved quota in this mode, GPUs */
    double mean_gpus;     /* time-weighted GPUs allocated */
    double share;         /* mean_gpus / deserved_gpus (0 if none) */
    int64_t jobs;
    double delay_p95; /* seconds */
} sim_project_result;

/* A point of the allocation series: allocated milli-GPU from time t on. */
typedef struct sim_point {
    int64_t t;
    int64_t milli;
} sim_point;

typedef struct sim_replay_result {
    sim_mode mode;
    int32_t nodes;
    int64_t capacity_milli;
    int64_t jobs, started, finished, rejected, unserved;
    int64_t evictions;                       /* preemptions of all kinds */
    int64_t evict_by[GP_EVICT_REASON_COUNT]; /* by gp_evict_reason */
    int64_t cycles;
    int64_t t0, t1;   /* first arrival, last event (seconds) */
    double alloc_pct; /* time-weighted allocated / capacity over [t0, t1] */
    double delay_mean, delay_p50, delay_p95, delay_p99; /* queueing delay, seconds */
    double jct_mean, jct_p50, jct_p95;                  /* completion time, seconds */
    double *delays;    /* [jobs], sorted: waiting until the end counts */
    sim_point *series; /* allocation changes, in time order */
    size_t nseries;
    sim_project_result *projects; /* one per leaf, in file order */
    size_t nprojects;
    char first_reject[GP_ERR_MAX]; /* why the first rejected job was refused */
    int static_by_gpu; /* static: projects own GPUs of shared nodes (sim_static_carve) */
    double seconds;    /* wall time */
} sim_replay_result;

void sim_replay_result_free(sim_replay_result *r);

/*
 * Replays jobs on nodes under the projects in mode o->mode. Returns 0 with
 * *res filled (free it with sim_replay_result_free), or a negative code
 * with err filled and nothing to free.
 */
int sim_replay_run(const sim_node *nodes, size_t nnodes, const sim_pod *pods, const sim_job *jobs,
                   size_t njobs, const sim_project *pr, size_t npr, const sim_replay_opts *o,
                   sim_replay_result *res, char *err, size_t errlen);

/* The command entry points: argv[0] is the command name. Return the exit
 * status. */
int sim_cmd_replay(int argc, char **argv);
int sim_cmd_plan(int argc, char **argv);

#endif /* GP_SIM_REPLAY_H */
