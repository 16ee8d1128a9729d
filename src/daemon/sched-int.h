/*
 * sched-int.h — internal to the scheduling loop (sched.c, sched-recover.c,
 * sched-tasks.c): the loop's state and the helpers its files share.
 *
 * The loop thread is the only one that calls the executor or changes the
 * array of active workloads; it takes eng_mu for every engine call and for
 * every change of that array, so that API threads holding eng_mu see both
 * consistent.
 */
#ifndef GP_DAEMON_SCHED_INT_H
#define GP_DAEMON_SCHED_INT_H

#include <pthread.h>

#include "daemon/sched.h"
#include "daemon/store.h"
#include "executors/executor.h"

/* One task of an active workload. */
typedef struct task_rt {
    char handle[GP_HANDLE_MAX];     /* "" until launched */
    char node[GP_NAME_MAX + 1];
    gp_task_binding binding;        /* binding.node points at node[] */
    gp_task_state state;
    int32_t exit_code, term_signal;
    int64_t mem_used;
    char detail[128];
} task_rt;

/* A workload whose tasks were launched: STARTING, RUNNING or STOPPING. */
typedef struct active {
    uint64_t id;
    char project[GP_NAME_MAX + 1];
    gp__wl_state state;
    int32_t attempt;
    int ntasks;
    task_rt *tasks;
    char stop_kind[16];
    int64_t deadline;               /* STOPPING: when the grace period ends */
    int64_t grace_ms;
    int32_t ckpt_signal;
    int in_engine;                  /* 0: the engine already took it back (node gone) */
} active;

typedef struct cmd {
    int op;
    uint64_t id;
    gp__err *e;
    int rc;
    int done;
    struct cmd *next;
} cmd;

struct gp__sched {
    gp__daemon *d;
    gp_engine *eng;
    pthread_mutex_t eng_mu;         /* the engine and the active array */
    gp_executor *ex;
    int emulated;
    gp_node_spec *nodes;
    size_t nnodes;
    active **act;
    size_t nact, capact;
    /* Loop control. */
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv, cmd_done;
    int stop, wake;
    cmd *cmds;
    pthread_mutex_t hist_mu;
    gp__cycle_hist hist;
};

/* ---- sched-tasks.c: carrying out decisions, polling, stopping ---- */

active *gp__act_find(gp__sched *s, uint64_t id);
/* Adds a (takes ownership) / removes and frees a; take eng_mu inside. */
int gp__act_add(gp__sched *s, active *a);
void gp__act_remove(gp__sched *s, active *a);

/* Launches the tasks of a bound workload (its bindings copied in tasks[]). */
void gp__sched_bind(gp__sched *s, uint64_t id, int ntasks, const task_rt *tasks);
/* Reads a workload row and parses its request; *j owns what r borrows
 * (the caller frees both with json_decref and gp__wl_free). */
int gp__sched_load_request(gp__sched *s, uint64_t id, gp__wl *w, json_t **j, gp__request *r,
                           gp__err *e);
/* Launches every task of a that has no handle yet (the executor's launch is
 * idempotent per key); on failure stops those launched, err says why. */
int gp__sched_launch_all(gp__sched *s, active *a, const gp__wl *w, const gp__request *r,
                         char *err, size_t errlen);
/* Starts a graceful stop: checkpoint signal now, stop after grace_ms. */
void gp__sched_begin_stop(gp__sched *s, active *a, const char *kind, int64_t grace_ms,
                          const char *why);
/* Stops every task and records the outcome the stop kind implies. */
void gp__sched_finish_stop(gp__sched *s, active *a, const char *why);
/* One batched poll of every active task; acts on what ended. */
void gp__sched_poll(gp__sched *s, int64_t now);

/* Stores one change, logging (not failing) if the store refuses: the loop
 * carries on, and a restart reconciles from what the store holds. */
void gp__sched_record(gp__sched *s, const gp__wl_change *c);

/* Task bindings in the store: {"node":N,"slices":[[gpu,milli,mem,mig],...]}. */
char *gp__binding_to_json(const gp_task_binding *b);
int gp__binding_from_json(const char *json, task_rt *t);

/* The node spec of the inventory named name, or NULL. */
const gp_node_spec *gp__sched_node(gp__sched *s, const char *name);

/* ---- sched-recover.c ---- */

/* Rebuilds the engine: nodes, queues, then every active workload of the
 * store, reconciling those that had tasks with what the executor reports. */
int gp__sched_recover(gp__sched *s, gp__err *e);

/* Logs a line to stderr with a timestamp. */
void gp__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* GP_DAEMON_SCHED_INT_H */
