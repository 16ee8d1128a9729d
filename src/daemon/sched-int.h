/*
 * sched-int.h — internal to the scheduling loop (sched.c, sched-recover.c,
 * sched-tasks.c): the loop's state and the helpers its files share.
 *
 * The loop thread is the only one that calls the executor (executor.h's
 * threading rule; the architecture test allows gp_exec_* calls only in the
 * loop's files, sched-tasks.c, sched-recover.c and sched-usage.c) or changes
 * the array of active workloads; it takes eng_mu for every engine call and
 * for every change of that array, so that API threads holding eng_mu see both
 * consistent. What API threads need from the executor (its description) the
 * loop reads and keeps here. The recovery at start runs on the loop thread
 * too, before its first cycle.
 *
 * Functions named gpd__loop_* run on the loop thread only; the architecture
 * test keeps their calls inside the loop's files.
 */
#ifndef GP_DAEMON_SCHED_INT_H
#define GP_DAEMON_SCHED_INT_H

#include <pthread.h>

#include "daemon/mailbox.h"
#include "daemon/sched.h"
#include "daemon/store.h"
#include "daemon/usage.h"
#include "executors/executor.h"

/* One task of an active workload. */
typedef struct task_rt {
    char handle[GP_HANDLE_MAX]; /* "" until launched */
    char node[GP_NAME_MAX + 1];
    gp_task_binding binding; /* binding.node points at node[] */
    gp_task_state state;
    int32_t exit_code, term_signal;
    int64_t mem_used;
    char detail[128];
} task_rt;

/* A hold on launches after the executor's GP_EAGAIN: until `until`, no
 * launch it covers is asked of the executor, each taken as deferred for the
 * same reason (why), so that a controller out of reach costs one try per
 * hold, not one per workload; it doubles with each GP_EAGAIN in a row (n;
 * 1 s ... 30 s), and a launch that succeeds ends the run. */
typedef struct gpd__launch_hold {
    int64_t until;
    int n;
    char why[256];
} gpd__launch_hold;

/* A workload whose tasks were launched: STARTING, RUNNING or STOPPING. */
typedef struct active {
    uint64_t id;
    gp_wl_state state;
    int32_t attempt;
    char project[GP_NAME_MAX + 1]; /* whose it is */
    char user[GP_NAME_MAX + 1];
    int ntasks;
    task_rt *tasks;
    int32_t gang; /* the tasks its request asks for: a gang (more than 1) is never paused */
    /* Bound with more than one task: the attempt's rendezvous port
     * (MASTER_PORT), which no other live gang whose task 0 is on the node
     * of its task 0 holds; 0 otherwise. */
    int32_t master_port;
    char stop_kind[16];
    int64_t deadline; /* STOPPING: when the grace period ends */
    int64_t stop_at;  /* STOPPING: when the checkpoint signal was sent (0: unknown) */
    int64_t grace_ms;
    int32_t ckpt_signal;
    int32_t compute_pct;      /* the slice's share of its GPU's time, percent; 0: none */
    int64_t mem_bytes;        /* the node memory its request asks for each task */
    gp_on_preempt on_preempt; /* how the engine's evictions stop it */
    int in_engine;            /* 0: the engine already took it back (node gone) */
    int64_t launched_ms;      /* STARTING: when its tasks were launched */
    /* STARTING, a launch the executor asked to try again (GP_EAGAIN): when
     * the next try is due (0: none), the tries that failed in a row, and
     * since when they fail. */
    int64_t relaunch_at;
    int launch_fails;
    int64_t launch_failing_ms;
    int64_t held_until; /* the end of the launch hold its last try met */
    /* Interactive workloads (sched-idle.c): when it began to run and when
     * its GPUs were last seen busy (or their use unknown). */
    int interactive;
    int64_t running_ms, busy_ms;
    /* STOPPING: why, when the stop's own outcome should not replace it as
     * the workload's reason ("" : the outcome is the reason). */
    char stop_note[512];
    /* Pause (sched-pause.c): where its pause stands, a delete or a
     * suspend that waits for a step under way to end, and the resumes that failed in a row
     * (the backoff before the next). */
    int pausing;    /* GPD__PAUSE_* */
    int stop_after; /* 0, or the GPD__CMD_DELETE or _SUSPEND that waits */
    int resume_fails;
    /* Paused by the idle policy (sched-idle.c): out of the engine, it waits
     * for its owner's resume (or attach), never resumed by the engine. Set
     * while that pause is under way too. */
    int held;
    /* Paused by the idle policy: the host memory its task holds, which the
     * engine counts on its node as paused outside its decisions
     * (gpd__loop_idle_books). */
    int64_t held_mem;
    /* The store has a row of the GPUs the idle policy took back from it
     * (sched-idle.c), which goes once it runs again or stops for good
     * (gpd__loop_idle_drop). */
    int returned;
} active;

enum { GPD__PAUSE_NONE = 0, GPD__PAUSE_PAUSING, GPD__PAUSE_PAUSED, GPD__PAUSE_RESUMING };

typedef struct gpd__pause_job gpd__pause_job;

/* The letters of the loop's inbox: commands, which API threads (and the
 * opening thread, for the recovery) call, and the pause worker's outcomes,
 * which it posts. */
enum { GPD__LETTER_CMD = 1, GPD__LETTER_PAUSE };

typedef struct cmd {
    gpd__letter l; /* GPD__LETTER_CMD */
    int op;
    uint64_t id;
    gpd__err *e;
} cmd;

struct gpd__sched {
    gpd__daemon *d;
    gp_engine *eng;
    pthread_mutex_t eng_mu; /* the engine and the active array */
    gp_executor *ex;
    int emulated;
    gp_node_spec *nodes;
    size_t nnodes;
    int inventory_failing; /* the last refresh failed (logged once) */
    /* Whether the executor can pause tasks (GP_EXEC_CTL_PAUSE_SUPPORT, asked
     * once at start), and its sentence on it. */
    int can_pause;
    char pause_note[256];
    /* The executor's description as the loop last read it (at recovery and
     * at each inventory refresh), kept for API threads under eng_mu: they
     * never call the executor themselves. */
    gp_executor_info info;
    active **act;
    size_t nact, capact;
    /* Handles of stopped tasks whose reap the executor refused because the
     * task had not finished ending yet; the loop retries them (loop thread
     * only). */
    char (*reap_later)[GP_HANDLE_MAX];
    size_t nreap, capreap;
    /* Holds on launches after the executor's GP_EAGAIN (loop thread only):
     * hold_all over every launch, set by a launch without a terminal (a
     * fork failed: the host is out of processes or memory for now), and
     * hold_tty over the launches with a terminal, set by theirs (which may
     * also be the host out of pseudo-terminals, which any tenant's tasks can
     * use up: that holds no batch work). */
    gpd__launch_hold hold_all, hold_tty;
    /* A stored pending workload could not be handed to the engine for now
     * (out of memory, the store unreadable): before its next cycle, the
     * loop hands every pending workload over again (loop thread only). */
    int resubmit;
    /* A workload was handed back to the engine after its bind could not be
     * carried out (loop thread only): the loop runs a cycle at its next
     * poll, not at its period's end, so that it is bound again soon. */
    int cycle_soon;
    /* The tasks of the BIND decision the loop carries out (loop thread
     * only): kept here, so that carrying out a cycle's decisions allocates
     * nothing (run_cycle). */
    task_rt bind_tasks[GPD__MAX_GANG];
    /* Loop control: the loop takes commands, the pause worker's outcomes
     * and wake-ups from its inbox, in the order they came; closing the
     * inbox stops it. */
    pthread_t th;
    int started;
    gpd__mailbox inbox;
    pthread_mutex_t hist_mu;
    gpd__cycle_hist hist;
    /* Usage accounting (sched-usage.c): the loop samples; API threads read
     * the last sample under usage_mu. */
    pthread_mutex_t usage_mu;
    int64_t usage_next_ms, usage_prune_ms;
    gpd__usage_now usage; /* the last sample, of which API threads get copies */
    /* Each node's CPU and memory really in use at the last sample. */
    gp_node_usage *usage_nodes;
    size_t usage_nnodes;
    /* The pause worker (sched-pause.c): it takes steps to run from its own
     * mailbox and posts their outcomes into the loop's inbox. */
    pthread_t pause_th;
    int pause_started;
    gpd__mailbox pause_box;
};

/* ---- sched-pause.c: pause and resume off the loop ---- */

/* Starts / stops the pause worker (stop after the loop has ended). */
int gpd__pause_start(gpd__sched *s);
void gpd__pause_stop(gpd__sched *s);
/* Frees a chain of steps never carried out (what a closed mailbox handed
 * back). */
void gpd__pause_free_letters(gpd__letter *l);
/* Hands the pause of a's single running task to the worker (why: the
 * eviction's sentence; grace_max: the bound on its grace period should the
 * pause fail and it be evicted in checkpoint mode, or -1: its own);
 * GP_EINVAL for a gang or a task without a handle. */
int gpd__loop_pause_begin(gpd__sched *s, active *a, const char *why, int64_t grace_max);
/* Carries out the engine's resume of paused workload id onto binding b:
 * hands it to the worker; one that cannot begin stays paused for the
 * backoff of a failed resume; one without a task here is requeued to start
 * again, or dropped where its stored state is over. */
void gpd__loop_resume(gpd__sched *s, uint64_t id, const gp_task_binding *b, int64_t now);
/* Rewrites the stored row of single-task a's task with binding b, the GPUs
 * the task holds, and resuming, those a resume under way moves it to (NULL:
 * none), so that a restart books the GPUs the task really holds (the
 * executor's PAUSE_RECOVER says which): 0 or the store's error. */
int gpd__loop_store_binding(gpd__sched *s, const active *a, const gp_task_binding *b,
                            const gp_task_binding *resuming, gpd__err *e);
/* Carries out the outcome of a step the worker finished (events, engine,
 * store) and frees it: l is a GPD__LETTER_PAUSE letter of the inbox. */
void gpd__loop_pause_result(gpd__sched *s, gpd__letter *l);

/* ---- sched-tasks.c: carrying out decisions, polling, stopping ---- */

active *gpd__loop_act_find(gpd__sched *s, uint64_t id);
/* Fills a's fields that come from stored workload w and its request r
 * (id, project, user, limits, memory, eviction mode, kind), with attempt and
 * ntasks; the caller sets the rest (state, tasks, times). */
void gpd__active_init(active *a, const gpd__wl *w, const gpd__request *r, int32_t attempt,
                      int ntasks);
/* Adds a (takes ownership) / removes and frees a; take eng_mu inside. */
int gpd__loop_act_add(gpd__sched *s, active *a);

/* Launches the tasks of a bound workload (its bindings copied in tasks[]). */
void gpd__loop_bind(gpd__sched *s, uint64_t id, int ntasks, const task_rt *tasks);
/* The engine's spec of stored workload w, from its stored request: 0,
 * GP_ECORRUPT (e says why) if the request cannot be read back, or
 * GP_ENOMEM. */
int gpd__sched_stored_spec(const gpd__wl *w, gp_workload_spec *out, gpd__err *e);
/* Reads a workload row and parses its request; *j owns what r borrows
 * (the caller frees both with json_decref and gpd__wl_free). */
int gpd__sched_load_request(gpd__sched *s, uint64_t id, gpd__wl *w, json_t **j, gpd__request *r,
                            gpd__err *e);
/* Launches every task of a that has no handle yet (the executor's launch is
 * idempotent per key); on failure err says why, and the tasks launched so
 * far are left as they are: the caller stops them (launch_outcome, or
 * requeue_lost after a restart), or keeps them where the executor asks to
 * try again (GP_EAGAIN). */
int gpd__loop_launch_all(gpd__sched *s, active *a, const gpd__wl *w, const gpd__request *r,
                         char *err, size_t errlen);
/* How long the daemon tries a launch again that the executor says may
 * succeed later, before the workload fails. */
#define GPD__LAUNCH_RETRY_MS (10 * 60 * 1000)
/* The executor's poll of n statuses, of which those with no handle (a task
 * whose launch is to be tried again) are left out and reported STARTING. */
int gpd__loop_exec_poll(gpd__sched *s, gp_task_status *st, size_t n);
/* Starts a graceful stop: checkpoint signal now, stop after grace_ms. */
void gpd__loop_begin_stop(gpd__sched *s, active *a, const char *kind, int64_t grace_ms,
                          const char *why);
/* Stops every task and records the outcome the stop kind implies. */
void gpd__loop_finish_stop(gpd__sched *s, active *a, const char *why);
/* Stops a at once for its owner's delete or suspend (kind), why being the
 * workload's reason: a note of a stop of the loop's own (an eviction, the
 * idle policy) is dropped, and so is the idle policy's row of it. */
void gpd__loop_owner_stop(gpd__sched *s, active *a, const char *kind, const char *why);
/* What a workload whose tasks were lost becomes, found so by the loop's
 * poll or by the recovery at start: back in the queue (PENDING), or, one the
 * idle policy holds out of the engine for its owner (a->held, a->in_engine
 * 0), SUSPENDED, as the policy's suspend leaves it, its row of returned GPUs
 * kept: only its owner's resume runs it again, from the beginning. *note is
 * what its event's message adds ("" or why it is suspended). */
gp_wl_state gpd__loop_lost_state(const active *a, const char **note);
/* One batched poll of every active task; acts on what ended. */
void gpd__loop_poll(gpd__sched *s, int64_t now);

/* Starts an eviction's graceful stop (gpd__loop_begin_stop) with a's own
 * grace period, bounded by grace_max unless it is -1 (a reclaim keeps to the
 * victim queue's bound: a borrower's own grace period never holds back
 * another queue's GPUs); why, of size whylen, then says so. */
void gpd__loop_begin_evict(gpd__sched *s, active *a, int64_t grace_max, char *why, size_t whylen);

/* Stores one change, logging (not failing) if the store refuses: the loop
 * carries on, and a restart reconciles from what the store holds. */
void gpd__sched_record(gpd__sched *s, const gpd__wl_change *c);
/* Records the handles of a's first ntasks tasks (at most GPD__MAX_GANG), the
 * workload still STARTING, with an event of kind saying msg: launched (not
 * yet running in the executor, e.g. a Slurm job PENDING) or launch-deferred
 * (its launch to be tried again). */
void gpd__loop_record_starting(gpd__sched *s, const active *a, int ntasks, gpd__event_kind kind,
                               const char *msg);
/* Reaps a task; one that has not finished ending (GP_ESTATE: a stop was just
 * sent, its supervisor has not yet recorded the end) is kept and reaped by a
 * later poll, so that no task directory or cgroup is left behind. */
void gpd__loop_reap(gpd__sched *s, const char *handle);

/* A task's stored binding into t, and into *resuming (where not NULL) the
 * one a resume under way moves it to (nslices -1 where none): 0, GP_ENOMEM
 * or GP_ECORRUPT. */
int gpd__binding_from_json(const char *json, task_rt *t, gp_task_binding *resuming);

/* The node spec of the inventory named name, or NULL. */
const gp_node_spec *gpd__sched_node(gpd__sched *s, const char *name);

/* ---- sched-usage.c ---- */

/* Samples the pool if a usage period has passed since the last sample:
 * GPU busy ratios from the executor, the rates of usage.h, their
 * GPU-seconds since the previous sample into the store. */
void gpd__loop_usage_tick(gpd__sched *s, int64_t now);
void gpd__sched_usage_free(gpd__sched *s);

/* ---- sched-idle.c ---- */

/* The idle policy, after each usage sample (gpus: its busy ratios): an
 * interactive workload whose GPUs were seen idle for its project's
 * idle_gpu_timeout, or which ran for its max_session_length, is told so on
 * its terminal and suspended (checkpoint signal, grace, stop). */
void gpd__loop_idle_tick(gpd__sched *s, const gp_gpu_usage *gpus, size_t ngpus, int64_t now);
/* A workload the policy suspended is back (resumed) or gone (deleted). */
void gpd__loop_idle_forget(gpd__sched *s, uint64_t id);
/* a runs again or stops for good (deleted, suspended by its owner, ended,
 * back in the queue): its row of returned GPUs goes, if it has one. */
void gpd__loop_idle_drop(gpd__sched *s, active *a);
/* The idle policy's pause of a (a->held) ended: rc 0, it is paused and the
 * engine forgets it; else it is suspended as before, detail saying why. */
void gpd__loop_idle_paused(gpd__sched *s, active *a, int rc, const char *detail);
/* The owner resumes a workload the idle policy paused: back in the engine,
 * paused on its node, where the engine resumes it once a GPU is free. */
int gpd__loop_idle_resume(gpd__sched *s, active *a, gpd__err *e);
/* After a restart of gpupoold: true if the idle policy paused or suspended
 * workload id (the store still has its row of returned GPUs). */
int gpd__loop_idle_was_held(gpd__sched *s, uint64_t id);
/* After a restart of gpupoold, for such a workload, added to the active
 * array outside the engine: held again, its host memory in its node's
 * books, resumed only when its owner asks. */
void gpd__loop_idle_rehold(gpd__sched *s, active *a);
/* Tells the engine the host memory that sessions the idle policy paused on
 * node hold (the sum of their held_mem), so that pauses and placements there
 * count on it. */
void gpd__loop_idle_books(gpd__sched *s, const char *node);

/* ---- sched-recover.c ---- */

/* Rebuilds the engine: nodes, queues, then every active workload of the
 * store, reconciling those that had tasks with what the executor reports. */
int gpd__loop_recover(gpd__sched *s, gpd__err *e);

/* Reads the executor's inventory again and hands what changed to the engine:
 * a node reported unschedulable, or no longer reported, takes no new work
 * (its running tasks are the executor's to report); a node back or new
 * joins. A failing inventory keeps the pool as it was. Returns 1 if any
 * node changed. Called by the scheduling thread only. */
int gpd__loop_refresh_nodes(gpd__sched *s);

#endif /* GP_DAEMON_SCHED_INT_H */
