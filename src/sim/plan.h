/*
 * plan.h — `gpupool-sim plan`, the capacity-planning report: the three
 * modes compared on the given hardware, and for each mode the smallest pool
 * (the node list scaled down, or up to SIM_PLAN_MAX_GROWTH times, keeping
 * its mix of models) whose p95 queueing
 * delay stays under a target with every job served. Also the inputs shared
 * with `replay` (nodes, pods, projects, jobs) and the scaling of a node list.
 */
#ifndef GP_SIM_PLAN_H
#define GP_SIM_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "sim/replay.h"

/* Everything a replay reads, loaded and checked once. */
typedef struct sim_inputs {
    const char *nodes_path, *pods_path, *projects_path; /* projects_path may be NULL */
    sim_node *nodes;
    size_t nnodes;
    sim_pod *pods;
    size_t npods;
    sim_project *pr;
    size_t npr;
    int32_t *leaf_of; /* [npods] */
    sim_job *jobs;
    size_t njobs;
} sim_inputs;

/* Reads and checks the three files, assigns pods to projects and builds the
 * jobs. Returns 0, or a negative code with err naming file, line and field
 * (and nothing to free). */
int sim_inputs_load(sim_inputs *in, char *err, size_t errlen);
void sim_inputs_free(sim_inputs *in);

/* The plan's search goes up to this many times the given node list. */
#define SIM_PLAN_MAX_GROWTH 4

/* Scales a node list to k nodes keeping its mix of models: floor(k/n) whole
 * copies of the list (copy c > 0 renamed "NAME~c"), then r = k mod n nodes
 * spread evenly over it (node i is taken when floor((i+1)r/n) > floor(ir/n)).
 * Writes k nodes to out. */
void sim_scale_nodes(const sim_node *nodes, size_t n, size_t k, sim_node *out);

/* GPUs of a node list. */
int64_t sim_nodes_gpus(const sim_node *nodes, size_t n);

typedef struct sim_plan_mode {
    sim_replay_result full; /* on the given hardware */
    int found;              /* 1: a pool meeting the target was found */
    size_t nodes_needed;
    int64_t gpus_needed;
    sim_replay_result needed; /* the run at that size */
    int steps;                /* replays the search took */
} sim_plan_mode;

typedef struct sim_plan {
    double target_p95_s;
    double price_per_gpu; /* for the report's money: 0 shows none */
    char currency[16];    /* printed before amounts, e.g. "EUR" ("": none) */
    size_t nnodes;        /* of the given hardware */
    int64_t gpus;
    sim_plan_mode modes[SIM_MODE_COUNT];
    double seconds;
} sim_plan;

/* Runs the comparison and the search; progress on stderr if o->progress.
 * Returns 0 or a negative code with err filled. */
int sim_plan_run(const sim_inputs *in, const sim_replay_opts *o, double target_p95_s, sim_plan *out,
                 char *err, size_t errlen);
void sim_plan_free(sim_plan *p);

/* The self-contained HTML report (inline SVG, no external resources). */
int sim_plan_html(const sim_plan *p, const sim_inputs *in, FILE *f);

#endif /* GP_SIM_PLAN_H */
