/*
 * executor.h — the interface between gpupoold and the places where workloads
 * really run.
 *
 * An executor is a versioned table of function pointers (the shape of
 * SQLite's sqlite3_io_methods and of Slurm's plugins): `local` runs tasks as
 * process groups on this host; cluster engines (Slurm, Kubernetes) plug in as
 * further tables without any change to the daemon. Methods are only ever
 * appended; `version` says how many a table has, and `control(op, arg)` is the
 * escape hatch for what does not deserve a method of its own.
 *
 * The daemon calls executors only through the gp_exec_* wrappers of
 * src/executors/registry.c, which check the version and missing methods.
 *
 * The contract every executor keeps:
 * - launch() is asynchronous and idempotent per (workload, task, attempt):
 *   it returns at once with a handle, a printable string that survives a
 *   restart of the daemon (stored with the task) and lets the executor find
 *   the task again; launching a key that already runs returns its handle.
 *   A launch that failed for a reason that may pass (the cluster's
 *   controller busy or unreachable, a host that cannot fork for now)
 *   returns GP_EAGAIN, leaving whatever it began to be found (or, where
 *   nothing ran, nothing) by the next launch of the same key: the daemon keeps
 *   the workload's GPUs and tries that key again later, never a new one. A
 *   launch that ran out of memory returns GP_ENOMEM, and is tried again so too.
 * - poll() is non-blocking and batched: it fills the state of many handles in
 *   one call (one `squeue`, one walk over /proc), so the daemon's loop costs
 *   one call per tick, not one per task.
 * - signal() delivers the checkpoint signal to every process of the task;
 *   stop() ends the task for good (SIGKILL to the whole process group, scancel,
 *   pod deletion). Both are idempotent and succeed on a task already gone.
 * - Nothing is lost: a task whose handle an executor no longer recognises is
 *   reported GP_TASK_LOST, never silently dropped.
 * - Threads: every method of an instance, and its gp_exec_* wrapper, is
 *   called from one thread at a time (gpupoold's scheduling loop), so an
 *   executor keeps its state without locks of its own. The exceptions say
 *   so where they are declared: session() (any thread, at any time),
 *   control()'s GP_EXEC_CTL_PAUSE and GP_EXEC_CTL_RESUME (on one other
 *   thread, one at a time, for tasks the loop leaves alone meanwhile) and the
 *   registry's lookups (gp_executor_find, gp_executor_name: constant
 *   tables). What other threads need from an executor (its description) the
 *   caller's loop reads and keeps.
 */
#ifndef GP_EXECUTOR_H
#define GP_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

#include "engine/gp_engine.h"

#define GP_EXECUTOR_VERSION 3
#define GP_HANDLE_MAX       128

typedef struct gp_executor gp_executor;

/* What the daemon asks an executor to start: one task of one workload. */
typedef struct gp_task_launch {
    uint64_t workload;
    int32_t task;    /* index within its gang */
    int32_t attempt; /* 1 for the first run, +1 per restart */
    const char *project;
    const char *user;
    const char *const *argv;    /* NULL-terminated; argv[0] looked up in PATH */
    const char *const *env;     /* NULL-terminated "K=V" added to the task's */
    const char *workdir;        /* created if missing */
    const char *log_path;       /* stdout and stderr, appended */
    const char *checkpoint_dir; /* survives restarts; GPUPOOL_CHECKPOINT_DIR */
    int64_t cpu_milli;          /* limits for the task's cgroup (0: none) */
    int64_t mem_bytes;
    int32_t compute_share;          /* percent for a slice, 0: none */
    int32_t checkpoint_signal;      /* e.g. SIGTERM */
    const gp_node_spec *node;       /* the node chosen, as the inventory said */
    const gp_task_binding *binding; /* its GPU slices on that node */
    const char *run_as;             /* the Unix user the task runs as (the
                                       token's); NULL: the executor's own */
    /* Appended: the gang, so that an executor can give a distributed
     * trainer its rendezvous (WORLD_SIZE, RANK, MASTER_ADDR). A caller that
     * zeroes the struct and leaves them unset launches a task alone. */
    int32_t gang_size;              /* tasks in the workload; 0 or 1: alone */
    const gp_node_spec *gang_first; /* the node of task 0, as the inventory said */
    /* Appended (version 3): 1 gives the task a pseudo-terminal as its
     * standard input, output and error, and a session endpoint that
     * session() reaches (attach, exec, port forwarding). 0: a batch task. */
    int32_t tty;
    /* Appended: a gang's rendezvous port (MASTER_PORT), the same for every
     * task of an attempt, chosen by the daemon among the gangs it runs
     * (gpupoold: GP_MASTER_PORT_OF(workload) unless a live gang whose task 0
     * is on the same node holds it). 0: GP_MASTER_PORT_OF(workload). */
    int32_t master_port;
} gp_task_launch;

/* The range of gangs' rendezvous ports: GP_MASTER_PORTS ports from
 * GP_MASTER_PORT_BASE, and the one a workload prefers (base + id mod
 * GP_MASTER_PORTS), so that a user can predict it in the common case. */
#define GP_MASTER_PORT_BASE   29500
#define GP_MASTER_PORTS       1000
#define GP_MASTER_PORT_OF(id) ((int32_t)(GP_MASTER_PORT_BASE + (id) % GP_MASTER_PORTS))

typedef enum gp_task_state {
    GP_TASK_STARTING = 0, /* accepted, not yet running */
    GP_TASK_RUNNING,
    GP_TASK_EXITED, /* ended on its own; exit_code / term_signal */
    GP_TASK_FAILED, /* could not be started */
    GP_TASK_LOST    /* the executor no longer knows the handle */
} gp_task_state;

typedef struct gp_task_status {
    char handle[GP_HANDLE_MAX]; /* in: which task */
    gp_task_state state;        /* out */
    int32_t exit_code;          /* out: EXITED normally */
    int32_t term_signal;        /* out: EXITED by a signal (0 if none) */
    int64_t gpu_mem_used;       /* out: bytes really in use, -1 if unknown */
    char detail[128];           /* out: a sentence for FAILED / LOST; for
                                   EXITED, empty unless the executor itself
                                   stopped the task (e.g. "stopped by the
                                   watchdog: ..."), which makes it a failure
                                   whatever its exit status */
} gp_task_status;

/* What the daemon tells an executor about itself when it opens one
 * (version 2). Executors derive their defaults from it, so that the daemon
 * never writes an executor's configuration; any field may be NULL. */
typedef struct gp_executor_ctx {
    const char *data_dir;     /* the daemon's data directory (absolute): state
                                 of this daemon's tasks belongs below it */
    const char *lib_dir;      /* where gpupool's programs and libraries (e.g.
                                 libgpuslice.so) are installed */
    int allow_root_workloads; /* 1: tasks may run as root (--allow-root-workloads) */
} gp_executor_ctx;

/* How an executor runs tasks, in sentences for the daemon's log, its /nodes
 * answer and its dashboard (version 2). A field that does not apply to an
 * executor is left empty. */
typedef struct gp_executor_info {
    int emulated;       /* 1: the GPUs are emulated, not real */
    char gpus[256];     /* where the GPUs come from */
    char limits[256];   /* how CPU and memory limits are applied, or why not */
    char slices[256];   /* whether fractional slices are enforced */
    char state[256];    /* where task state is kept */
    char identity[256]; /* who tasks run as (Unix users, or single-user mode) */
    /* Appended: how a task is kept to its own GPUs' device files, and what
     * limits its GPU memory besides the interposer (e.g. the dmem cgroup). */
    char devices[256];
    char gpu_memory[256];
} gp_executor_info;

/* What a session asks of a task (version 3). */
typedef enum gp_session_kind {
    GP_SESSION_ATTACH = 1, /* the task's terminal: its recent output first, then live */
    GP_SESSION_EXEC,       /* another command in the task, as its user, in its cgroups,
                              namespaces and environment */
    GP_SESSION_PORT,       /* a TCP connection to 127.0.0.1:port in the task's network view */
    GP_SESSION_NOTICE      /* text shown on the task's terminal, as its output (no fd) */
} gp_session_kind;

typedef struct gp_session_req {
    gp_session_kind kind;
    uint16_t rows, cols;     /* ATTACH, EXEC with tty: the terminal's size (0: unchanged) */
    int32_t tty;             /* EXEC: 1 runs the command on a terminal of its own */
    const char *const *argv; /* EXEC: NULL-terminated; argv[0] looked up in the task's PATH */
    int32_t port;            /* PORT: 1..65535 */
    const char *text;        /* NOTICE: at most GP_SESSION_NOTICE_MAX bytes */
} gp_session_req;

#define GP_SESSION_NOTICE_MAX 1024

typedef struct gp_executor_methods {
    int version;      /* GP_EXECUTOR_VERSION when written */
    const char *name; /* "local", "slurm", ... */

    /* Creates an instance from a configuration string (its meaning is the
     * executor's: a directory, "key=value,..." pairs). */
    int (*open)(const char *config, void **state, char *err, size_t errlen);
    void (*close)(void *state);

    /* The nodes this executor can run on, with their GPUs. Fills at most max
     * specs, sets *n to the number found. *emulated is set to 1 if any GPU is
     * emulated rather than real (the daemon labels that loudly). */
    int (*inventory)(void *state, gp_node_spec *nodes, size_t max, size_t *n, int *emulated,
                     char *err, size_t errlen);

    /* Starts a task; writes its handle. */
    int (*launch)(void *state, const gp_task_launch *t, char handle[GP_HANDLE_MAX], char *err,
                  size_t errlen);

    /* Sends sig to every process of the task. */
    int (*signal)(void *state, const char *handle, int sig);

    /* Ends the task for good. */
    int (*stop)(void *state, const char *handle);

    /* Fills the out fields of n statuses whose handles are set. */
    int (*poll)(void *state, gp_task_status *tasks, size_t n);

    /* Forgets a finished task and frees what it held (log files stay). */
    int (*reap)(void *state, const char *handle);

    /* Escape hatch for executor-specific operations; GP_ENOTSUP if unknown. */
    int (*control)(void *state, int op, void *arg);

    /* ---- Version 2 ---- */

    /* As open, with what the daemon says about itself (ctx, never NULL).
     * An empty config asks for the executor's embedded defaults, which may
     * use ctx (e.g. keep task state under ctx->data_dir). The wrapper uses
     * open_ctx when a table has it, open otherwise. */
    int (*open_ctx)(const gp_executor_ctx *ctx, const char *config, void **state, char *err,
                    size_t errlen);

    /* Lists the handles of every task this instance holds (running, or
     * finished and not yet reaped), so that after a restart the daemon can
     * stop and reap those it has no record of. Fills at most max handles and
     * sets *n to the number found, which may exceed max. */
    int (*tasks)(void *state, char (*handles)[GP_HANDLE_MAX], size_t max, size_t *n);

    /* Fills info (zeroed by the wrapper first). */
    int (*describe)(void *state, gp_executor_info *info);

    /* ---- Version 3 ---- */

    /* Opens a session with a running task launched with tty set (see
     * gp_session_req). Returns 0 with *fd a connected stream socket the
     * caller owns: for GP_SESSION_ATTACH and GP_SESSION_EXEC it carries the
     * stream-framed messages of common/gp_channel.h (the executor's
     * STDOUT, STDERR, EXIT and ERROR; the caller's STDIN, RESIZE, SIGNAL and
     * EOF); for GP_SESSION_PORT it is the connection to the port itself;
     * for GP_SESSION_NOTICE (text the terminal shows as its own output, which
     * attached clients see and a later attach replays) *fd is -1 once the
     * text is shown.
     * Errors: GP_EINVAL (a bad request; err names the field), GP_ESTATE (the
     * task has ended, or has no terminal), GP_EIO (the port refused the
     * connection, or the session endpoint did not answer), GP_ELIMIT (the
     * task holds as many sessions as it may); err says why.
     *
     * Thread-safe: may be called from any thread, concurrently with every
     * other method (it reads only what a task's launch wrote and talks to
     * the task's own endpoint), and blocks for at most about 15 s (the
     * task's side may answer opens one after another); a NOTICE, which the
     * scheduling loop sends, for at most a few seconds. */
    int (*session)(void *state, const char *handle, const gp_session_req *req, int *fd, char *err,
                   size_t errlen);
} gp_executor_methods;

/* The table of an executor that has every method of this version, each the
 * function of its prefix P and the method's name (P_open for open_ctx,
 * P_close, P_inventory, ...): an executor's table is one line, and a method
 * the contract gains is added here once. An executor without some method
 * writes its table itself and leaves that method NULL. */
#define GP_EXECUTOR_TABLE(NAME, P)                                                                 \
    {                                                                                              \
        .version = GP_EXECUTOR_VERSION, .name = NAME, .open_ctx = P##_open, .close = P##_close,    \
        .inventory = P##_inventory, .launch = P##_launch, .signal = P##_signal, .stop = P##_stop,  \
        .poll = P##_poll, .reap = P##_reap, .control = P##_control, .tasks = P##_tasks,            \
        .describe = P##_describe, .session = P##_session                                           \
    }

/* ---- Generic control operations ----
 *
 * Operations any executor may answer through control(); one that cannot
 * returns GP_ENOTSUP. Their numbers start at 0x1000 so that they never meet
 * an executor's own operations (which count from 1). */
enum {
    /* arg: gp_exec_gpu_usage *. Samples every GPU the executor runs on:
     * how busy it was lately and how much of its memory is in use. */
    GP_EXEC_CTL_GPU_USAGE = 0x1000,
    /* arg: gp_exec_pause *. Pauses a running task without its help and
     * without a signal: each of its processes that holds a CUDA context is
     * locked (lock_timeout_ms), its GPU memory moved to host memory through
     * the driver's checkpoint API, then the task is frozen (cgroup freezer).
     * Its GPUs are then free; host memory keeps its state. A task with no
     * CUDA context (or on emulated GPUs) is frozen alone. Returns 0 (also
     * for a task already paused); GP_ENOTSUP when this executor or node
     * cannot pause it (no freezer, no driver with the checkpoint API: use
     * checkpoint mode; detail says why); GP_ETIMEDOUT when a process did not
     * answer the lock in time, GP_EIO when the driver failed: then nothing
     * has changed, the task runs on, and detail says why; GP_ENOENT if the
     * task has ended. */
    /* Threads: PAUSE and RESUME may run on one thread other than the one
     * that calls the other methods (gpupoold's pause worker, so that its
     * scheduling loop never waits on the driver), one at a time, never for
     * a task whose other method calls are under way: the caller stops no
     * task and reaps none while its pause or resume runs. An executor
     * that answers them keeps what they touch (a task's pause journal and
     * cgroups, a driver loaded by PAUSE_SUPPORT before) apart from the
     * other methods' state. PAUSE_SUPPORT and PAUSE_RECOVER are called by
     * the loop before it hands that thread any step. */
    GP_EXEC_CTL_PAUSE = 0x1001,
    /* arg: gp_exec_pause *. Resumes a paused task on the same node: thaws it
     * and restores each CUDA process onto the GPUs to_uuid names (the
     * driver remaps from_uuid[i] to to_uuid[i]; none given: the same GPUs),
     * then unlocks it. Onto other GPUs, what the task's binding set up at
     * launch (device rules, memory limits, the executor's own records)
     * moves to them first. A UUID is the driver's (NVML's) or one of the
     * executor's inventory (emulated GPUs: a task without a CUDA context
     * resumes on any of them); GP_EINVAL for one that is neither. If a
     * restore fails (too little free GPU memory, a driver error) the task
     * stays paused on its old GPUs, detail says why, and the caller retries
     * later: GP_ENOSPC or GP_EIO. GP_ESTATE if it is not paused. */
    GP_EXEC_CTL_RESUME = 0x1002,
    /* arg: gp_exec_pause *. After a restart of the daemon: finishes a pause
     * or a resume that was under way when it stopped (or, for a pause that
     * cannot be finished, undoes it), and says where the task stands
     * (paused 1 or 0) and which step that was (recovered), so that the
     * caller knows which GPUs the task is on after a resume onto others. */
    GP_EXEC_CTL_PAUSE_RECOVER = 0x1003,
    /* arg: gp_exec_pause *, handle NULL. Whether this node can pause tasks
     * that hold GPU state: 0, or GP_ENOTSUP with detail saying why not. */
    GP_EXEC_CTL_PAUSE_SUPPORT = 0x1004,
    /* arg: gp_exec_node_usage *. How much CPU and memory each node really
     * uses now (all its processes, not what tasks asked for); -1 where it
     * cannot be told (e.g. the first sample of a rate). */
    GP_EXEC_CTL_NODE_USAGE = 0x1005,
    /* arg: gp_exec_abandon *. A launch that returned GP_EAGAIN will not be
     * tried again (its workload was stopped meanwhile, or its tries ran
     * out): whatever it began is ended for good and forgotten, so that a
     * task the cluster took before its answer was lost never runs. 0; or
     * the reason it could not yet (the controller still out of reach): the
     * executor then keeps trying on its own (the slurm executor at each
     * inventory, across restarts), and the caller need not call again. */
    GP_EXEC_CTL_ABANDON = 0x1006
};

/* The key of a launch to abandon (GP_EXEC_CTL_ABANDON). */
typedef struct gp_exec_abandon {
    uint64_t workload;
    int32_t task;
    int32_t attempt;
} gp_exec_abandon;

/* One node as GP_EXEC_CTL_NODE_USAGE saw it. */
typedef struct gp_node_usage {
    char node[GP_NAME_MAX + 1];
    int64_t cpu_milli; /* CPU in use since the previous sample, milli-cores; -1 unknown */
    int64_t mem_bytes; /* host memory in use (total less available); -1 unknown */
} gp_node_usage;

typedef struct gp_exec_node_usage {
    gp_node_usage *nodes; /* in: room for max samples */
    size_t max;           /* in */
    size_t n;             /* out: samples written */
} gp_exec_node_usage;

/* What a pause or a resume is asked to do, and what it did. */
typedef struct gp_exec_pause {
    const char *handle;      /* in: the task */
    int32_t lock_timeout_ms; /* in, PAUSE: how long a process may hold off the lock (0: 10 s) */
    int32_t ngpus;           /* in, RESUME: GPUs remapped (0: restore onto the same GPUs) */
    const char *const *from_uuid; /* in, RESUME: the GPUs the task had (NVML's UUIDs) */
    const char *const *to_uuid;   /* in, RESUME: the GPUs it is to resume on */
    int32_t paused;               /* out: 1 if the task is now paused */
    int32_t cuda_procs;           /* out: its processes holding a CUDA context */
    int64_t gpu_bytes;            /* out: device memory moved to host (-1: unknown) */
    /* out, milliseconds: PAUSE: lock, checkpoint, freeze; RESUME: thaw,
     * restore, unlock. */
    int64_t step_ms[3];
    char detail[256]; /* out: a sentence for the workload's events */
    /* out, PAUSE_RECOVER: the step it found under way: 0 none;
     * GP_EXEC_CTL_PAUSE, finished or undone (the task is on the GPUs it
     * had); GP_EXEC_CTL_RESUME, finished (paused 0: on the GPUs the resume
     * named) or failed (paused 1: on those it had). */
    int32_t recovered;
    /* out, PAUSE_RECOVER: 1 if a pause under way could be neither finished
     * nor undone (the CUDA driver cannot be loaded now, or the task has no
     * freezer any more): the task was thawed where its freezer allows, but
     * the GPU state a checkpoint may have taken from it cannot be given
     * back, so the caller takes the task as lost (detail says why); paused
     * is 0. */
    int32_t lost;
} gp_exec_pause;

/* One GPU as GP_EXEC_CTL_GPU_USAGE saw it. */
typedef struct gp_gpu_usage {
    char node[GP_NAME_MAX + 1];
    int32_t index;         /* the GPU's position in its node's inventory gpus[] */
    int32_t busy_permille; /* time a kernel ran, per mille of the recent past; -1 unknown */
    int64_t mem_used;      /* bytes in use on the whole GPU; -1 unknown */
} gp_gpu_usage;

typedef struct gp_exec_gpu_usage {
    gp_gpu_usage *gpus; /* in: room for max samples */
    size_t max;         /* in */
    size_t n;           /* out: samples written */
    char note[192];     /* out: where the figures come from, or why some are unknown */
} gp_exec_gpu_usage;

/* ---- The registry and the wrappers the daemon calls (registry.c) ---- */

/* The table registered under name, or NULL. */
const gp_executor_methods *gp_executor_find(const char *name);

/* Opens an executor by name. GP_ENOENT if no such executor, GP_ENOTSUP if its
 * table is of a version this daemon cannot use. */
int gp_executor_open(const char *name, const char *config, gp_executor **out, char *err,
                     size_t errlen);
/* As gp_executor_open, telling the executor about the daemon (ctx may be
 * NULL: then every field is unknown). */
int gp_executor_open_ctx(const char *name, const gp_executor_ctx *ctx, const char *config,
                         gp_executor **out, char *err, size_t errlen);
void gp_executor_close(gp_executor *ex);
const char *gp_executor_name(const gp_executor *ex);

int gp_exec_inventory(gp_executor *ex, gp_node_spec *nodes, size_t max, size_t *n, int *emulated,
                      char *err, size_t errlen);
int gp_exec_launch(gp_executor *ex, const gp_task_launch *t, char handle[GP_HANDLE_MAX], char *err,
                   size_t errlen);
int gp_exec_signal(gp_executor *ex, const char *handle, int sig);
int gp_exec_stop(gp_executor *ex, const char *handle);
int gp_exec_poll(gp_executor *ex, gp_task_status *tasks, size_t n);
int gp_exec_reap(gp_executor *ex, const char *handle);
int gp_exec_control(gp_executor *ex, int op, void *arg);
int gp_exec_tasks(gp_executor *ex, char (*handles)[GP_HANDLE_MAX], size_t max, size_t *n);
int gp_exec_describe(gp_executor *ex, gp_executor_info *info);
/* Thread-safe (see the method): GP_ENOTSUP where the executor has no sessions. */
int gp_exec_session(gp_executor *ex, const char *handle, const gp_session_req *req, int *fd,
                    char *err, size_t errlen);

#endif /* GP_EXECUTOR_H */
