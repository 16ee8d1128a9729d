/*
 * helpers.h — shorthand for the engine tests: build pools and queue trees in
 * one line each, submit typical requests, and run cycles the way the daemon
 * and the simulator do (bound workloads start at once; evicted ones release
 * at once unless a test holds them), with the invariant checker after every
 * cycle.
 */
#ifndef GP_TEST_ENGINE_HELPERS_H
#define GP_TEST_ENGINE_HELPERS_H

#include "engine/gp_engine.h"

#define GIB (INT64_C(1) << 30)

/* An engine with the invariant checker on and aging off. */
gp_engine *t_engine(void);
/* An engine with config c; fails the test if it cannot be opened. */
gp_engine *t_open(const gp_engine_config *c);

/* Fills *n with node name: ngpus GPUs of model and gib GiB each, in domain,
 * with 64 CPUs and 512 GiB of memory. */
void t_node_spec(gp_node_spec *n, const char *name, int ngpus, const char *model, int64_t gib,
                 const char *domain);

/* Adds node name with ngpus GPUs of model and gib GiB each, in domain, with
 * 64 CPUs and 512 GiB of memory. */
void t_node(gp_engine *e, const char *name, int ngpus, const char *model, int64_t gib,
            const char *domain);

/* Adds a queue with deserved and limit in whole GPUs (limit < 0: unlimited). */
void t_queue(gp_engine *e, const char *name, const char *parent, double deserved_gpus,
             double limit_gpus, int weight);

/* Submits a workload of `tasks` tasks each asking for `gpus` GPUs: a whole
 * number >= 1 means whole GPUs, less than 1 a fraction. Returns the engine's
 * answer. */
int t_submit(gp_engine *e, uint64_t id, const char *queue, gp_kind kind, double gpus, int tasks,
             int priority, gp_time_ms now);

/* Asks for `gpus` whole GPUs in queue q, as one-GPU training workloads
 * with ids id * 1000 + k (a gang larger than the pool would be refused). */
void t_want(gp_engine *e, uint64_t id, const char *q, int gpus);

/* Runs a cycle at now; asserts it succeeds and the books balance. If
 * auto_start, BIND decisions are started at once; if auto_release, EVICT
 * decisions are released at once. Returns the decision count; *out may be
 * NULL. */
size_t t_cycle(gp_engine *e, gp_time_ms now, int auto_start, int auto_release,
               const gp_decision **out);

/* Counts decisions of a type (and, for evictions, a reason; 0 = any). */
size_t t_count(const gp_decision *d, size_t n, gp_decision_type type, gp_evict_reason reason);

/* The workload's state, or -1 if it does not exist. */
int t_state(gp_engine *e, uint64_t id);

/* milli-GPU held by a queue / its fair share. */
int64_t t_alloc(const gp_engine *e, const char *queue);
int64_t t_fair(const gp_engine *e, const char *queue);

/*
 * Runs a random but reproducible sequence of `steps` events (nodes coming and
 * going, queues and quotas changing, submissions of every request kind,
 * finishes, cancels, failures, cycles with starts and delayed releases)
 * from seed, with the invariant checker and the decision properties asserted
 * after every cycle. Returns a hash of every decision made.
 */
uint64_t t_random_run(uint64_t seed, int steps, gp_placement placement);

#endif
