/*
 * usage.h — usage accounting: what each queue, user and node was allocated
 * and what it really used, in GPU-seconds, from samples of the pool.
 *
 * A sample is the pool at one instant: the running tasks with their slices,
 * each GPU's busy ratio as the executor measured it (or unknown), and the
 * queue tree with its deserved quotas. gpd__usage_rates() turns it into
 * rates (GPUs allocated, used, borrowed, lent) per queue, user and node;
 * gpd__usage_account() multiplies the rates by the time since the previous
 * sample and splits the result into minute and hour buckets, the rows the
 * store keeps (store-usage.c). Both are pure: no clock, no I/O, so that a
 * test checks them against figures computed by hand.
 *
 * How "used" is attributed: a GPU's busy ratio (kernel time over wall time,
 * from NVML) is shared among the slices on it in proportion to their
 * milli-GPU, and a slice is never charged more than it holds. A GPU whose
 * busy time is unknown (emulated, MIG) leaves its slices' use unknown: they
 * count in "allocated" but not in "measured", the GPU-seconds whose use is
 * known, so that used / measured stays a true ratio.
 *
 * Borrowed and lent, per queue: a queue holding more than its deserved quota
 * borrows the excess; among siblings, the ones below their deserved quota
 * lend their idle part in proportion to it, up to what their siblings
 * borrow (so that, at each level, lent never exceeds borrowed).
 */
#ifndef GP_DAEMON_USAGE_H
#define GP_DAEMON_USAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/gp_names.h"
#include "engine/gp_engine.h"
#include "executors/executor.h"

/* Bucket lengths in seconds, and how long each is kept. */
#define GPD__USAGE_FINE        60
#define GPD__USAGE_COARSE      3600
#define GPD__USAGE_FINE_DAYS   14
#define GPD__USAGE_COARSE_DAYS 400

/* What usage is grouped by. */
#define GPD__USAGE_KINDS(XX)                                                                       \
    XX(GPD__USAGE_QUEUE, "queue")                                                                  \
    XX(GPD__USAGE_USER, "user")                                                                    \
    XX(GPD__USAGE_NODE, "node")

GP_NAMED_ENUM_DECLARE(gpd__usage_kind, GPD__USAGE_KINDS, GPD__USAGE_NKINDS);

/* A running task, as a sample sees it. */
typedef struct gpd__usage_task {
    const char *project, *user, *node;
    int32_t nslices;
    const gp_slice *slices; /* slices[i].gpu indexes the node's GPUs */
} gpd__usage_task;

/* A queue, parents before children. */
typedef struct gpd__usage_queue {
    const char *name, *parent; /* parent "" for a department at the top */
    int64_t deserved_milli;
} gpd__usage_queue;

/* A session the idle policy suspended (store-idle.c): GPUs it gave back. */
typedef struct gpd__usage_return {
    const char *project, *user;
    int64_t milli;
} gpd__usage_return;

typedef struct gpd__usage_input {
    const gpd__usage_task *tasks;
    size_t ntasks;
    const gp_gpu_usage *gpus; /* busy ratios; a GPU missing here is unknown */
    size_t ngpus;
    const gpd__usage_queue *queues;
    size_t nqueues;
    const gpd__usage_return *returns; /* counted in "returned" of queue and user */
    size_t nreturns;
} gpd__usage_input;

/* Rates of one key at the sample's instant, in GPUs. */
typedef struct gpd__usage_rate {
    gpd__usage_kind kind;
    char key[GP_NAME_MAX + 1];
    double alloc, used, measured, borrowed, lent;
    double returned; /* GPUs the idle policy gave back to the pool (sched-idle.c) */
} gpd__usage_rate;

/*
 * Computes the rates of every queue (departments include their projects),
 * user and node of the sample. *out is malloc'ed (caller frees); keys with
 * nothing allocated, borrowed or lent are left out. GP_ENOMEM on failure,
 * with *out NULL.
 */
int gpd__usage_rates(const gpd__usage_input *in, gpd__usage_rate **out, size_t *n);

/* GPU-seconds of one key in one bucket. */
typedef struct gpd__usage_row {
    int32_t res; /* GPD__USAGE_FINE or GPD__USAGE_COARSE */
    int64_t ts;  /* bucket start, seconds since the epoch, a multiple of res */
    gpd__usage_kind kind;
    char key[GP_NAME_MAX + 1];
    double alloc, used, measured, borrowed, lent, returned;
} gpd__usage_row;

/*
 * The rows that rates held over [from_ms, to_ms) add: the interval split at
 * minute boundaries into fine rows, and the same seconds summed per hour into
 * coarse rows. *out is malloc'ed (caller frees; NULL with *n 0 when there is
 * nothing to add). GP_EINVAL if to_ms < from_ms, GP_ENOMEM.
 */
int gpd__usage_account(const gpd__usage_rate *rates, size_t nrates, int64_t from_ms, int64_t to_ms,
                       gpd__usage_row **out, size_t *n);

#endif /* GP_DAEMON_USAGE_H */
