/*
 * sched.h — the scheduling loop: one thread that owns the engine and the
 * executor. It feeds the engine (nodes from the executor's inventory, queues
 * and workloads from the store), runs a cycle on events and on a period,
 * carries out the decisions (launch bound tasks; evict with the checkpoint
 * signal, a grace period and a stop), polls the tasks in one batch per tick
 * and records every state change and attempt in the store before or right
 * after acting, so that a restart finds everything again (see sched.c).
 *
 * API handlers read the engine under gpd__sched_lock() and change workloads
 * only through gpd__sched_command(), which the loop carries out.
 */
#ifndef GP_DAEMON_SCHED_H
#define GP_DAEMON_SCHED_H

#include "daemon/daemon.h"
#include "daemon/request.h"
#include "daemon/usage.h"
#include "engine/gp_engine.h"
#include "executors/executor.h"

/* Opens the executor, rebuilds the engine from the store and the executor
 * (recovering tasks that ran before a restart) and starts the loop. */
int gpd__sched_open(gpd__daemon *d, gpd__err *e);
void gpd__sched_close(gpd__sched *s);

/* 1 if any GPU of the inventory is emulated. */
int gpd__sched_emulated(gpd__sched *s);
const char *gpd__sched_executor_name(gpd__sched *s);
/* The executor's description (gp_exec_describe) as the loop last read it;
 * all empty if it has none. Any thread. */
void gpd__sched_describe(gpd__sched *s, gp_executor_info *info);

/* Exclusive access to the engine for reading; never held across I/O. */
gp_engine *gpd__sched_lock(gpd__sched *s);
void gpd__sched_unlock(gpd__sched *s);

/* Checks a request against the pool: the project exists and takes
 * workloads, and some node could hold one task. GP_EINVAL naming the field. */
int gpd__sched_check_request(gpd__sched *s, const gpd__request *r, gpd__err *e);

/* A submission is durable: the loop hands the stored workload to the engine
 * if it is still pending, in the order of the commands it takes (a delete
 * or a suspend taken before leaves it as they stored it), and this returns
 * once it has. */
void gpd__sched_submitted(gpd__sched *s, uint64_t id);

enum { GPD__CMD_DELETE = 1, GPD__CMD_SUSPEND, GPD__CMD_RESUME };

/* Carries out a command on the loop's thread and waits for its outcome:
 * GP_ENOENT, GP_ESTATE ("already finished") or a store error; a resume that
 * ran out of memory changed nothing and is GP_EAGAIN (try again). */
int gpd__sched_command(gpd__sched *s, int cmd, uint64_t id, gpd__err *e);

/* Opens a session with a task (gp_exec_session, which the executor
 * contract makes thread-safe): callable from any thread, never the loop's
 * business. */
int gpd__sched_session(gpd__sched *s, const char *handle, const gp_session_req *req, int *fd,
                       char *err, size_t errlen);

/* Creates or changes a queue, q[0], in the engine and the store, both or
 * neither, with q[1..n): queues below it that its change changes too (the
 * lenders' bounds it lowers), stored in the same transaction. */
int gpd__sched_queue_set(gpd__sched *s, const gp_queue_spec *q, size_t n, gpd__err *e);
int gpd__sched_queue_remove(gpd__sched *s, const char *name, gpd__err *e);

/* A running task, as the last poll saw it. */
typedef struct gpd__live_task {
    uint64_t workload;
    int32_t task;
    char project[GP_NAME_MAX + 1];
    gp_task_binding binding; /* binding.node points into node[] */
    char node[GP_NAME_MAX + 1];
    int64_t gpu_mem_used; /* bytes, -1 if unknown */
    int32_t compute_pct;  /* share of the GPU's time, percent; 0: not limited */
} gpd__live_task;

/* A copy of the live tasks (malloc'ed array, caller frees). */
int gpd__sched_live_tasks(gpd__sched *s, gpd__live_task **out, size_t *n);

/* The last usage sample (sched-usage.c): rates per queue, user and node,
 * and each GPU's busy ratio and memory in use, as copies the caller frees
 * with gpd__usage_now_free; note says where the figures come from. */
typedef struct gpd__usage_now {
    int64_t at_ms; /* 0 before the first sample */
    gpd__usage_rate *rates;
    size_t nrates;
    gp_gpu_usage *gpus;
    size_t ngpus;
    char note[192];
} gpd__usage_now;
int gpd__sched_usage_now(gpd__sched *s, gpd__usage_now *out);
void gpd__usage_now_free(gpd__usage_now *u);

/* The CPU (milli-cores) and memory (bytes) node really used at the last
 * usage sample (the executor's GP_EXEC_CTL_NODE_USAGE); -1 each where it is
 * not known (no sample yet, or an executor that cannot tell). */
void gpd__sched_node_usage(gpd__sched *s, const char *node, int64_t *cpu_milli, int64_t *mem_bytes);

/* Whether tasks on a node of mem_bytes of memory can be paused (the
 * executor's answer, asked once at start, and --paused-memory-max not 0),
 * and in *max the most host memory paused tasks may hold there. Any thread. */
int gpd__sched_pause_of(gpd__sched *s, int64_t mem_bytes, int64_t *max);

/* The rate of one key in a sample, or NULL. */
const gpd__usage_rate *gpd__usage_find(const gpd__usage_now *u, gpd__usage_kind kind,
                                       const char *key);

/* Scheduling cycle latency histogram (upper bounds in seconds). */
#define GPD__CYCLE_BUCKETS 12
extern const double gpd__cycle_bounds[GPD__CYCLE_BUCKETS];
typedef struct gpd__cycle_hist {
    uint64_t counts[GPD__CYCLE_BUCKETS]; /* cumulative at read time */
    uint64_t count;
    double sum; /* seconds */
    /* Attempts that started, and the seconds their tasks waited in the
     * executor between launch and running (a Slurm job PENDING). */
    uint64_t starts;
    double start_wait;
} gpd__cycle_hist;
void gpd__sched_cycle_hist(gpd__sched *s, gpd__cycle_hist *out);

#endif /* GP_DAEMON_SCHED_H */
