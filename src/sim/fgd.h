/*
 * fgd.h — the FGD paper's experiment (USENIX ATC'23, "Beware of
 * Fragmentation"), replayed through gpupool's engine: typical pod shapes,
 * the arrival protocol (shuffle by seed, inflate to `tune` x the cluster's
 * GPU capacity by re-sampling, no departures, one pod at a time, failed pods
 * skipped), and the allocation / fragmentation curves against arrived demand.
 *
 * The engine is used only through its public API (gp_engine.h).
 */
#ifndef GP_SIM_FGD_H
#define GP_SIM_FGD_H

#include <stddef.h>
#include <stdint.h>

#include "engine/gp_engine.h"
#include "sim/metrics.h"
#include "sim/trace.h"

/* A seeded random source (splitmix64), the simulator's only one. */
typedef struct sim_rng {
    uint64_t s;
} sim_rng;

/*
 * The typical shapes of a pod list, as the FGD simulator defines them: pods
 * grouped by (CPU, GPUs, milli-GPU per GPU, allowed models), most frequent
 * first (ties: the larger shape first), taken until they cover at least
 * `cover` (0.95) of all pods, popularity renormalised to sum to 1. CPU-only
 * pods count. Returns the number of shapes written to *out (malloc'ed), or a
 * negative code.
 */
int sim_typical_shapes(const sim_pod *pods, size_t n, double cover, gp_shape **out);

/*
 * The arrival order: indices into pods[]. Pods are sorted by name, shuffled
 * with the seed, and then, while their total GPU demand is below tune x
 * capacity_milli, pods drawn at random from the name-sorted list are appended
 * (stopping at the first draw whose per-GPU milli would overshoot, as the
 * FGD simulator does); if the demand is above, random pods are removed until
 * it is not. Returns the count (order is malloc'ed) or a negative code.
 */
int sim_fgd_arrivals(const sim_pod *pods, size_t n, int64_t capacity_milli, double tune,
                     uint64_t seed, size_t **order);

typedef struct sim_fgd_opts {
    gp_placement policy;
    uint64_t seed;
    double tune; /* 1.3 in the paper */
} sim_fgd_opts;

typedef struct sim_fgd_result {
    sim_curve_row rows[SIM_CURVE_MAX + 1]; /* allocation %, frag %, frag ratio % */
    size_t arrived, placed, failed;
    int64_t capacity_milli;
    double seconds; /* wall time of the replay */
} sim_fgd_result;

/* Turns a trace node into an engine node (GPUs of 16 GiB each: the openb
 * trace does not give GPU memory, and the experiment does not use it). */
void sim_node_spec(const sim_node *n, gp_node_spec *out);

/* Turns a pod into a workload of queue `queue` with id `id`. */
void sim_pod_workload(const sim_pod *p, uint64_t id, const char *queue, gp_workload_spec *out);

/* Runs the experiment. Returns 0, or a negative code with err filled. */
int sim_fgd_run(const sim_node *nodes, size_t nnodes, const sim_pod *pods, size_t npods,
                const sim_fgd_opts *o, sim_fgd_result *res, char *err, size_t errlen);

/* Seconds of a monotonic clock. */
double sim_now(void);

#endif /* GP_SIM_FGD_H */
