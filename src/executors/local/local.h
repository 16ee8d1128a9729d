/*
 * local.h — internal to the `local` executor: the instance state and the
 * functions its files share.
 *
 * The executor is split by concern: local.c holds the methods table and the
 * configuration, proc.c the supervising process and everything about process
 * groups and /proc, cgroup.c the cgroup v1 and v2 code, inventory.c NVML and
 * the emulated inventory file, env.c the environment a task receives.
 *
 * Layout on disk: every attempt of every task has a directory
 * <state_dir>/<key>, key = "w<workload>.t<task>.a<attempt>", holding
 *   start   made and locked (flock) by the launch before it forks; the
 *           supervisor holds the lock for as long as it lives, so that a
 *           launch of the key again (a restarted daemon's) knows a start
 *           whose handle is not written yet from one that never started;
 *   handle  the task's handle, written by its supervisor when it starts;
 *   task    "pid=<pid>\nstart=<starttime>\n" of the task's main process
 *           (its process group id is the same pid);
 *   cgroup  the task's cgroup directories, one a line (absent if none);
 *   exit    written atomically (rename) by the supervisor when the task has
 *           ended: "exit_code=N\nterm_signal=N\n", plus "start_stage=N" and
 *           "start_errno=N" if it never started.
 * A handle is "local:<key>:<supervisor pid>:<supervisor starttime>": the
 * starttime (field 22 of /proc/<pid>/stat, in clock ticks since boot) makes
 * the handle immune to the reuse of a pid.
 */
#ifndef GP_EXECUTORS_LOCAL_H
#define GP_EXECUTORS_LOCAL_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/gp_cuckpt.h"
#include "executors/nvml.h"
#include "executors/contract.h"
#include "executors/executor.h"

#define GPX__KEY_MAX 64

/* The file in a task's state directory that marks its launch abandoned
 * (GP_EXEC_CTL_ABANDON): a supervisor that finds it once it has written its
 * handle does not start the task (local.c, proc.c). */
#define GPX__ABANDONED_FILE "abandoned"

/* An instance id: up to 16 letters, digits, '_' or '-' (local.c). */
#define GPX__INSTANCE_MAX 17

/* ------------------------------------------------------------------------ */
/* cgroup.c                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum gpx__cg_mode { GPX__CG_NONE = 0, GPX__CG_V1, GPX__CG_V2 } gpx__cg_mode;

/* How this instance applies limits: decided once, at open. */
typedef struct gpx__cgroups {
    gpx__cg_mode mode;
    char cpu_parent[PATH_MAX]; /* v2: parent of every task cgroup; v1: in the cpu tree */
    char mem_parent[PATH_MAX]; /* v1: in the memory tree; unused for v2 */
    char frz_parent[PATH_MAX]; /* v1: in the freezer tree ("" if none is mounted) */
    /* The process limit of each task (pids.max; 0: none) and, where the
     * pids controller is there: v1, the parent in the pids tree; v2, "v2". */
    int64_t pids_max;
    char pids_parent[PATH_MAX];
    char note[256]; /* what is applied, or why nothing is */
} gpx__cgroups;

/* The default process limit of a task (config key pids_max). */
#define GPX__PIDS_MAX_DEFAULT 4096

/* v1: cpu, memory, freezer, pids and devices; hybrid: a sixth in the cgroup2
 * tree. */
#define GPX__CG_DIRS 6

/* One task's cgroup directories (v2: one; v1: cpu and memory, then those
 * devices.c adds). */
typedef struct gpx__task_cg {
    int ndirs;
    char dirs[GPX__CG_DIRS][PATH_MAX];
    char note[512]; /* the limits applied, or why none */
} gpx__task_cg;

/*
 * Decides how limits are applied. want is "auto", "v2", "v1" or "off";
 * parent the name of the cgroup that holds task cgroups, created if missing.
 * With "auto", a machine that allows nothing gives mode NONE and a note that
 * says why (returns 0); an explicit "v1"/"v2" that cannot be used fails with
 * GP_ENOTSUP and err says why.
 */
int gpx__cg_detect(gpx__cgroups *cg, const char *want, const char *parent, int64_t pids_max,
                   char *err, size_t errlen);

/*
 * Makes the cgroup of one task, named name, under cg, with the given limits
 * (0: none). Never fails: where a cgroup cannot be made the task runs without
 * one, out->ndirs is 0 and out->note says why.
 */
void gpx__cg_create(const gpx__cgroups *cg, const char *name, int64_t cpu_milli, int64_t mem_bytes,
                    gpx__task_cg *out);

/*
 * Sends sig to every process in the task's cgroups, except those of process
 * group skip_pgid (0: none). Async-signal-safe (the supervisor calls it).
 * Returns the number of processes signalled.
 */
int gpx__cg_signal(const gpx__task_cg *tc, int sig, pid_t skip_pgid);

/* Kills what is left in the task's cgroups and removes them. */
void gpx__cg_remove(const gpx__task_cg *tc);

/* The CPU (milli-cores) and memory (bytes) limits of this process's own
 * cgroup, -1 where there is none or it cannot be read. */
void gpx__cg_own_limits(int64_t *cpu_milli, int64_t *mem_bytes);

/* Writes the cgroup directories to file / reads them back (no file: none). */
int gpx__cg_save(const gpx__task_cg *tc, const char *file);
int gpx__cg_load(gpx__task_cg *tc, const char *file);

/* Helpers that devices.c shares. gpx__cg_write writes value into dir/file
 * (0 or a system code from gp_syserr). gpx__cg_find_mount finds the mount point of a cgroup2 file
 * system whose cgroup.controllers lists every space-separated word of
 * controller (NULL: any), or (v2 0) of the cgroup v1 hierarchy whose options
 * name controller; 0 or -1. gpx__cg_make_parent is mkdir -p of root/rel,
 * writing enable (NULL: nothing) into cgroup.subtree_control at each level
 * (0 or a system code from gp_syserr). gpx__cg_make_dir makes parent/name, reusing an existing one
 * and making parent again if it was removed (0 or a system code from gp_syserr). gpx__cg_has_word
 * is true if the list of words separated by sep has w. */
int gpx__cg_write(const char *dir, const char *file, const char *value);
int gpx__cg_find_mount(int v2, const char *controller, char *out, size_t len);
int gpx__cg_make_parent(const char *root, const char *rel, const char *enable, char *out,
                        size_t len);
int gpx__cg_make_dir(char *out, size_t len, const char *parent, const char *name);
int gpx__cg_has_word(const char *list, const char *w, char sep);

/* ------------------------------------------------------------------------ */
/* devices.c                                                                 */
/* ------------------------------------------------------------------------ */

/* NVIDIA's character major: /dev/nvidiaN is 195:N, /dev/nvidiactl 195:255. */
#define GPX__NVIDIA_MAJOR 195

/* What the kernel knows of a GPU: its device file, a character device
 * major:minor (major -1 where none is known: an emulated GPU without a
 * device file, which is then never filtered), and its PCI address ("" if
 * unknown), which names its dmem region. */
typedef struct gpx__gpu_dev {
    int32_t major, minor;
    char bus[32];
} gpx__gpu_dev;

typedef enum gpx__dev_mode { GPX__DEV_NONE = 0, GPX__DEV_V1, GPX__DEV_V2 } gpx__dev_mode;

#define GPX__DMEM_MAX 32

/* The dmem controller's regions (dmem.capacity of the cgroup2 root), e.g.
 * "drm/0000:03:00.0/vram0" of 85899345920 bytes. */
typedef struct gpx__dmem {
    int present; /* 1: cgroup2's cgroup.controllers lists dmem */
    int nregions;
    struct {
        char name[128];
        int64_t capacity;
    } regions[GPX__DMEM_MAX];
} gpx__dmem;

/* How this instance limits device access and GPU memory: decided at open. */
typedef struct gpx__devices {
    gpx__dev_mode mode;
    char v1_parent[PATH_MAX]; /* mode v1: the instance's cgroup in the devices tree */
    char v2_parent[PATH_MAX]; /* mode v2 or dmem_on: in the cgroup2 tree; else "" */
    char note[256];           /* what is applied to GPU devices, or why nothing is */
    gpx__dmem dmem;
    int dmem_on;         /* 1: tasks get dmem.max for their GPUs' regions */
    char dmem_note[256]; /* "GPU memory limits: ..." */
} gpx__devices;

/*
 * Decides how device access is limited. want is "auto", "v1", "v2" or "off";
 * parent the relative cgroup that holds this instance's task cgroups; cg the
 * CPU and memory mode already decided (v2 there means v2 here under auto).
 * auto: the cgroup2 tree on a pure v2 host, else the v1 devices controller,
 * else the cgroup2 tree of a hybrid host, else nothing and a note saying
 * why (returns 0). An explicit "v1"/"v2" that cannot be used fails with
 * GP_ENOTSUP and err says why. Also looks for the dmem controller.
 */
int gpx__dev_detect(gpx__devices *dv, const gpx__cgroups *cg, const char *want, const char *parent,
                    char *err, size_t errlen);

/* What one task is denied and limited to. */
typedef struct gpx__dev_plan {
    int ndeny;
    gpx__gpu_dev deny[GP_MAX_GPUS_PER_NODE]; /* device files of GPUs not given */
    int nlimits;
    struct {
        int region; /* index into gpx__dmem.regions */
        int64_t bytes;
    } limits[GP_MAX_GPUS_PER_NODE];
} gpx__dev_plan;

/*
 * Plans a task's device rules: the device files of the node's GPUs (devs,
 * ngpus of them, in the node's order) that binding does not name are
 * denied; each bound GPU with a dmem region and a slice smaller than the
 * region gets a limit of the slice's memory.
 */
void gpx__dev_plan_make(const gpx__devices *dv, const gpx__gpu_dev *devs, int ngpus,
                        const gp_task_binding *binding, gpx__dev_plan *plan);

/*
 * Applies plan to the task named name (its cgroups in tc, made by
 * gpx__cg_create) before it starts: a devices cgroup with devices.deny (v1),
 * or a BPF_PROG_TYPE_CGROUP_DEVICE program attached to its cgroup2 directory
 * (v2), and dmem.max there; a new directory is added to tc->dirs, and
 * tc->note gets a sentence. Everything else stays allowed. Returns 0, or -1
 * with a sentence in why where it cannot apply the rules: what it made is
 * removed, and the caller does not start the task (a task that would run
 * without the rules its instance promises is refused, not started open).
 */
int gpx__dev_apply(const gpx__devices *dv, const char *name, const gpx__dev_plan *plan,
                   gpx__task_cg *tc, char *why, size_t whylen);

/*
 * Rewrites the device rules of a running (paused) task named name to plan,
 * made for other GPUs than those it was launched with (a resume onto other
 * GPUs): v1, an allow line for each GPU of devs (ngpus, the node's order)
 * that plan does not deny and a deny line for each it does; v2, the task's
 * device program replaced by plan's in one step; dmem.max of every region of
 * devs set to plan's limit or to "max". Each write states the whole rule, so
 * running it again, or with the old plan to undo it, is safe. 0, or -1 with
 * a sentence in why (the rules may then be half rewritten: the caller puts
 * the old plan back).
 */
int gpx__dev_rebind(const gpx__devices *dv, const char *name, const gpx__gpu_dev *devs, int ngpus,
                    const gpx__dev_plan *plan, const gpx__task_cg *tc, char *why, size_t whylen);

/*
 * Reads root/cgroup.controllers and root/dmem.capacity into dm (a root that
 * lists no dmem, or has no such file, gives present 0 or no regions).
 * Returns 0, or GP_EPARSE for a malformed capacity line.
 */
int gpx__dmem_read(const char *root, gpx__dmem *dm);

/*
 * The region of dm that holds the memory of the GPU at PCI address bus
 * (NVML's "00000000:03:00.0" or the kernel's "0000:03:00.0", any case):
 * "drm/<domain:bus:dev.fn>/vram<N>". Its index, or -1 if none.
 */
int gpx__dmem_region(const gpx__dmem *dm, const char *bus);

/* Writes "<region> <bytes>" into dir/dmem.max. 0 or a system code. */
int gpx__dmem_limit(const char *dir, const char *region, int64_t bytes);

/* ------------------------------------------------------------------------ */
/* proc.c                                                                    */
/* ------------------------------------------------------------------------ */

/* What stage of starting a task failed (stored in the exit file). */
enum {
    GPX__STAGE_NONE = 0,
    GPX__STAGE_SUPERVISOR, /* the fork of the supervisor */
    GPX__STAGE_STDIO,      /* redirecting standard input/output */
    GPX__STAGE_CHDIR,      /* entering the working directory */
    GPX__STAGE_EXEC,       /* executing the program */
    GPX__STAGE_USER,       /* becoming the task's Unix user */
    GPX__STAGE_SESSION,    /* making the terminal and session socket of an interactive task */
    GPX__STAGE_TASK,       /* the supervisor's start of the task: its setsid, handle, pipes, fork */
    GPX__STAGE_COUNT
};

/* "supervisor", "stdio", "chdir", "exec", "user", "session", "task". */
const char *gpx__stage_name(int stage);

/* Everything the supervisor needs, prepared by the daemon before it forks so
 * that the forked processes only make system calls. */
/*
 * A task's log as its supervisor writes it (tasklog.c): capped at max bytes,
 * then rotated to PATH.1, with PATH.start holding where PATH begins in the
 * task's whole output. System calls only: for the supervisor.
 */
typedef struct gpx__tasklog {
    int fd;           /* the log, open for append (-1: none) */
    const char *path; /* its path */
    int64_t max;      /* the cap (0: none) */
    int64_t size;     /* bytes in the current file */
    int64_t start;    /* where it begins in the whole output */
    uint64_t lost;    /* bytes dropped since the last write that succeeded */
    int rotations;
} gpx__tasklog;

/* The default cap of a task's log (executor key log_max). */
#define GPX__LOG_MAX_DEFAULT (INT64_C(64) << 20)

/* Starts writing fd (path, cap max; its size and PATH.start are read). */
void gpx__tasklog_init(gpx__tasklog *l, int fd, const char *path, int64_t max);
/* Appends n bytes, rotating at the cap; output that cannot be written (a
 * full disk) is dropped and counted, and said once writes succeed again. */
void gpx__tasklog_write(gpx__tasklog *l, const char *buf, size_t n);

/* Async-signal-safe string building (proc.c): appends s (or the decimal v)
 * at *pos, never past end-1, and keeps the result NUL-terminated. */
void gpx__sa_str(char **pos, char *end, const char *s);
void gpx__sa_u64(char **pos, char *end, uint64_t v);

typedef struct gpx__spawn {
    const char *path; /* the program: a name without a slash is looked up in
                         envp's PATH by the task, as its user */
    char *const *argv;
    char *const *envp;
    const char *workdir;
    int log_fd;           /* open for append: the supervisor writes the task's
                             output there (tasklog.c), capped at log_max */
    const char *log_path; /* its path, for rotation */
    int64_t log_max;      /* bytes before the log rotates (0: never) */
    const char *dir;      /* the task's state directory */
    const char *key;
    const char *title; /* what `ps` shows for the supervisor */
    const gpx__task_cg *cg;
    const gpx__exec_user *user; /* who the task runs as */
    int make_workdir;           /* 1: create workdir (as the task's user) if missing */
    const char *preload;        /* a file naming the interposer, bound over
                                   /etc/ld.so.preload in the task's own mount
                                   namespace; NULL: none */
    const char *ledger;         /* the slice ledger the executor made, bound over
                                   GP_LEDGER_MOUNT there too; NULL: none */
    int tty;                    /* 1: a terminal and a session socket (session.c) */
    int start_fd;               /* the locked start file: the supervisor keeps it
                                   open (and so locked) while it lives */
} gpx__spawn;

typedef struct gpx__spawned {
    pid_t spid; /* the supervisor */
    uint64_t sstart;
    pid_t tpid; /* the task's main process and process group */
    uint64_t tstart;
    int stage; /* GPX__STAGE_NONE if the task started */
    int start_errno;
} gpx__spawned;

/*
 * Starts the supervisor and through it the task, and waits until the task has
 * been exec'd (or failed to be). The supervisor is a grandchild that
 * setsid()s, so neither it nor the task depends on the daemon's life. Returns
 * 0 with *out filled (out->stage says whether the task started), or
 * GP_ESYS/GP_EIO with err set if the supervisor could not be started or
 * vanished before reporting: GP_EAGAIN where the daemon could not fork for
 * want of processes or memory (gpx__spawn_transient), which may pass. A
 * supervisor that finds its launch abandoned (GPX__ABANDONED_FILE) once it
 * has written its handle starts no task: it records a start that failed
 * (GPX__STAGE_TASK, ECANCELED) and ends.
 */
int gpx__spawn_task(const gpx__spawn *s, gpx__spawned *out, char *err, size_t errlen);

/* 1 if a fork that failed with errno e may succeed later: no process slot
 * (a pids cgroup's or the user's limit, the system's pid_max) or no memory
 * for now. */
static inline int gpx__spawn_transient(int e) {
    return e == EAGAIN || e == ENOMEM;
}

/*
 * Runs argv inside the task whose main process is tpid, as s describes it:
 * a session of its own (in, out and err become its standard streams; with
 * tty, in is a terminal that becomes its controlling terminal), the task's
 * cgroups, its mount namespace (that of tpid, where the interposer and the
 * ledger are bound), its user, working directory and environment, no new
 * privileges and no user namespaces. For a forked child of the supervisor:
 * never returns; a failure is written on err and the child exits 127.
 */
void gpx__exec_in_task(const gpx__spawn *s, pid_t tpid, int in, int out, int err, int tty,
                       char *const *argv) __attribute__((noreturn));

/* 1 when this process may give a child a private mount namespace (root, and
 * the kernel or container allows it), else 0. Tried once, in a child. */
int gpx__private_mounts(void);

/* 1 if pid exists with this start time and is not a zombie, else 0. */
int gpx__proc_alive(pid_t pid, uint64_t start);

/* 1 if pid exists with this start time, zombie or not, else 0. */
int gpx__proc_present(pid_t pid, uint64_t start);

/* What the supervisor recorded in the exit file. */
typedef struct gpx__exit {
    int present; /* 0: no exit file (yet) */
    int exit_code;
    int term_signal;
    int start_stage; /* GPX__STAGE_NONE if the task started */
    int start_errno;
} gpx__exit;

/* Reads <dir>/exit. 0 (present says whether it exists) or GP_ECORRUPT. */
int gpx__exit_read(const char *dir, gpx__exit *ex);

/* Reads <dir>/task. 0, GP_ENOENT if absent, GP_ECORRUPT if unreadable. */
int gpx__task_read(const char *dir, pid_t *pid, uint64_t *start);

/*
 * Reads a small file (at most cap-1 bytes) into buf, NUL-terminated.
 * Returns its length or a system code (gp_syserr). Async-signal-safe.
 */
ssize_t gpx__read_small(const char *path, char *buf, size_t cap);

/* ------------------------------------------------------------------------ */
/* session.c                                                                 */
/* ------------------------------------------------------------------------ */

/* The session socket in a task's state directory. */
#define GPX__SESS_SOCK "session.sock"

/*
 * For the supervisor of a tty task, before it forks the task: a
 * pseudo-terminal (the side it keeps in *master, the task's in *slave, owned
 * by the task's user) and the listening session socket in s->dir (*lfd).
 * 0, or -1 with errno set and nothing left open. System calls only.
 */
int gpx__sess_prepare(const gpx__spawn *s, int *master, int *slave, int *lfd);

/*
 * The supervisor's loop for a tty task, in place of waiting for it: serves
 * the session socket (session-server.c's gpx__sessd_serve) until the task tpid ends, sends its exit
 * status to the attached clients, and returns it in *code / *sig (the task is left a zombie, as
 * wait_task leaves it). Closes master and lfd. -1 if it could not start (no memory): the caller
 * then waits for the task itself.
 */
int gpx__sess_serve(const gpx__spawn *s, pid_t tpid, int master, int lfd, gpx__tasklog *log,
                    int *code, int *sig);

/*
 * The daemon's side: opens a session of kind req->kind with the task whose
 * state directory is dir (see the session method in executor.h). Blocks at
 * most about GPX__SESS_OPEN_S for an open, GPX__SESS_NOTICE_S for a notice
 * (sent from the scheduling loop).
 */
#define GPX__SESS_OPEN_S   15
#define GPX__SESS_NOTICE_S 5
int gpx__sess_open(const char *dir, const gp_session_req *req, int *fd, char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* inventory.c                                                               */
/* ------------------------------------------------------------------------ */

/* Fills node->gpus from NVML (node->ngpus set). GP_EIO with err on failure. */
int gpx__nvml_gpus(gpx__nvml *nv, gp_node_spec *node, char *err, size_t errlen);

/* Fills devs[0..n) with the device file (195:<NVML's minor number>) and PCI
 * address of each GPU NVML reports, n at most max; returns n (0 if NVML is
 * not in use). A GPU whose minor number NVML cannot give has major -1. */
int gpx__nvml_devs(gpx__nvml *nv, gpx__gpu_dev *devs, int max);

/* Samples busy time and memory in use of every GPU NVML reports into
 * u->gpus (named node), as GP_EXEC_CTL_GPU_USAGE asks. A figure NVML cannot
 * give is -1 and u->note says so. GP_ENOTSUP if NVML is not in use. */
int gpx__nvml_usage(gpx__nvml *nv, const char *node, gp_exec_gpu_usage *u);

/*
 * Reads an emulated inventory file into node, whose name, cpu and memory the
 * caller has set to this host's (the file may override them), and the
 * device file of each GPU into devs (GP_MAX_GPUS_PER_NODE of them, indexed
 * as node->gpus; major -1 where a GPU has none; NULL: not wanted).
 * GP_ENOENT if the file cannot be read, GP_EPARSE with err naming the file,
 * the line and the field for a malformed one. On error node may be partly
 * filled.
 */
int gpx__inv_parse_file(const char *path, gp_node_spec *node, gpx__gpu_dev *devs, char *err,
                        size_t errlen);

/*
 * Writes the default emulated inventory (one node "local" with 8 H100 80G
 * GPUs) to path, replacing what was there, and reads it into node as
 * gpx__inv_parse_file does. GP_EIO with err if the file cannot be written.
 */
int gpx__inv_emulate(const char *path, gp_node_spec *node, gpx__gpu_dev *devs, char *err,
                     size_t errlen);

/* This host's CPU (milli-cores, limited by our own cgroup and affinity) and
 * memory (bytes, limited by our own cgroup). */
void gpx__host_resources(int64_t *cpu_milli, int64_t *mem_bytes);

/* ------------------------------------------------------------------------ */
/* local.c                                                                   */
/* ------------------------------------------------------------------------ */

/* The driver's checkpoint API (common/gp_cuckpt.h) as this instance loaded
 * it, on first use. */
typedef struct gpx__cuda {
    int tried;      /* 1 once loading was tried */
    void *lib;      /* NULL: the checkpoint API is not usable here */
    int version;    /* cuDriverGetVersion's answer, 0 if unknown */
    char note[256]; /* where it was loaded from, or why it is not usable */
    int (*cuInit)(unsigned int flags);
    int (*cuDriverGetVersion)(int *version);
#define GPX__CUDA_FIELD(sym, params) int(*sym) params;
    GP_CU_CKPT_ENTRIES(GPX__CUDA_FIELD)
#undef GPX__CUDA_FIELD
} gpx__cuda;

typedef struct gpx__local {
    char state_dir[PATH_MAX];
    char instance[GPX__INSTANCE_MAX]; /* names its cgroups, ledgers, supervisors */
    char inventory[PATH_MAX];         /* "" if none */
    char emulate[PATH_MAX];           /* where to write emulated GPUs if none is found; "" never */
    char interposer[PATH_MAX];
    char node_name[GP_NAME_MAX + 1];
    char domain[GP_NAME_MAX + 1];
    int emulated;     /* the GPUs come from an inventory file (given or written) */
    int allow_root;   /* a root daemon may run tasks as root */
    gp_node_spec emu; /* that file, read at open */
    gpx__gpu_dev emu_dev[GP_MAX_GPUS_PER_NODE]; /* its GPUs' device files */
    gpx__cgroups cg;
    gpx__devices dev;
    gpx__nvml nvml;
    char cuda_lib[PATH_MAX]; /* the driver for pause (cuda=...); "" if off */
    gpx__cuda cuda;
    int64_t log_max; /* a task's log rotates at this size (log_max=; 0: never) */
    /* The host's CPU counters at the previous GP_EXEC_CTL_NODE_USAGE (the
     * scheduling loop's thread alone asks): busy and all jiffies. */
    uint64_t cpu_busy, cpu_all;
    /* Abandoned launches whose start lives still (a supervisor not yet at
     * its handle, or its task not yet ended): ended and removed at each poll
     * and inventory; at open, those the state directory marks. */
    char (*abandoned)[GPX__KEY_MAX];
    size_t nabandoned, capabandoned;
} gpx__local;

/* The device files of the node's GPUs (devs[GP_MAX_GPUS_PER_NODE]), from
 * the emulated inventory or NVML; returns how many GPUs. */
int gpx__gpu_devs(gpx__local *lx, gpx__gpu_dev *devs);

/* GP_EXEC_CTL_NODE_USAGE (hostuse.c): this host's CPU in use since the
 * previous call (from /proc/stat) and memory in use (/proc/meminfo). */
int gpx__host_usage(gpx__local *lx, gp_exec_node_usage *u);

/*
 * Sends sig to every process of the task whose key is key: its process group,
 * if its main process is still there, and whatever else is in its cgroups.
 * A task that has ended has nothing to signal. 0, or GP_EINVAL for a bad key
 * or signal.
 */
int gpx__task_signal(const gpx__local *lx, const char *key, int sig);

/* ------------------------------------------------------------------------ */
/* watchdog.c                                                                */
/* ------------------------------------------------------------------------ */

/* How long a task stopped by the watchdog has between the checkpoint signal
 * and SIGKILL. */
#define GPX__WD_GRACE_MS 10000

/* What a task was given: bytes per GPU (NVML index; 0: not given) and its
 * checkpoint signal. */
typedef struct gpx__wd_limits {
    int sig;
    int share; /* compute share in percent; 0: none */
    int64_t mem[GP_MAX_GPUS_PER_NODE];
} gpx__wd_limits;

/* What a task's processes hold per GPU (NVML index), as a scan found it. */
typedef struct gpx__wd_use {
    int64_t bytes[GP_MAX_GPUS_PER_NODE];
    int procs[GP_MAX_GPUS_PER_NODE]; /* how many of its processes */
} gpx__wd_use;

/* How much GPU time below its share a task may bank for a later burst. */
#define GPX__TH_CREDIT_MS 200

/*
 * The compute share's outer layer, at each poll of a running task (key, in
 * its state directory dir): measures the GPU time its processes used since
 * the last poll (NVML per-process utilisation) and stops it while that is
 * beyond its share, continuing it once the debt is paid: with its cgroup
 * freezer, which the task's user cannot thaw, or with SIGSTOP and SIGCONT
 * where it has none (which any process of its user can undo). Nothing for a
 * task without a share, or where NVML cannot say. State in <dir>/throttle.
 * It decides and acts holding the task's freezer lock (gpx__freezer_lock),
 * and leaves a task with a pause journal alone.
 */
void gpx__wd_throttle(const gpx__local *lx, const char *dir, const char *key);

/* Continues a task that the throttle stopped and leaves it alone from then
 * on: before any other signal reaches it (eviction, delete), so that it can
 * handle that signal. */
void gpx__wd_release(const gpx__local *lx, const char *dir, const char *key);

/* Continues a task that the throttle stopped, without turning the throttle
 * off: before a pause or a resume asks the driver's thread inside the task
 * to lock or restore it. The throttle leaves a task alone while its pause
 * journal exists (gpx__pause_journaled); a pause journals and calls this
 * holding the task's freezer lock, so that the throttle cannot freeze the
 * task in between. The caller holds that lock. */
void gpx__wd_unstop(const gpx__local *lx, const char *dir, const char *key);

/* What NVML may count per process for its own CUDA context beyond what the
 * interposer books for it within the slice (docs/executors.md), and for how
 * many of a task's processes on one GPU at most: beyond those, every
 * process's context counts against the slice in full, so that a slice's
 * allowance does not grow with the processes a workload starts. */
#define GPX__WD_CONTEXT       (512LL << 20)
#define GPX__WD_CONTEXT_PROCS 4

/* How far above its slice a task with procs processes on the GPU may go
 * unjudged: the larger of 2 % of the slice and 64 MiB, plus GPX__WD_CONTEXT
 * for each process up to GPX__WD_CONTEXT_PROCS (2 GiB at most). */
int64_t gpx__wd_tolerance(int64_t slice, int procs);

/*
 * Judges a task's use per GPU against lim. 1 if it is to be stopped, with
 * why set to the sentence that says so ("stopped by the watchdog: 30.0 GiB
 * on GPU 0, its slice is 20 GiB"); 0 if not (why untouched).
 */
int gpx__wd_judge(const gpx__wd_limits *lim, const gpx__wd_use *use, char *why, size_t len);

/*
 * Finds the task of this instance that a process belongs to, from the text
 * of its /proc/PID/cgroup: 1 with key set if a cgroup path has the component
 * instance followed by a task key; 0 if none does.
 */
int gpx__wd_task_of(const char *cgroups, const char *instance, char *key, size_t len);

/* Writes what the task t was given to <dir>/gpus (at launch) / reads it
 * back (0, GP_ENOENT if there is none, GP_ECORRUPT). */
int gpx__wd_record(const char *dir, const gp_task_launch *t);
int gpx__wd_limits_read(const char *dir, gpx__wd_limits *lim);

/* After a resume onto other GPUs: rewrites <dir>/gpus for the binding b on
 * node's GPUs, keeping its signal and share, so that the watchdog judges the
 * task on the GPUs it now uses. 0 (also where nothing was recorded),
 * GP_ECORRUPT or GP_EIO. */
int gpx__wd_rebind(const char *dir, const gp_task_binding *b, const gp_node_spec *node);

/* One pass of the watchdog over every GPU NVML reports (a no-op without
 * NVML's per-process memory): tasks over their slice are recorded and get
 * their checkpoint signal. */
void gpx__wd_scan(const gpx__local *lx);

/* For a running task in dir: SIGKILL once the grace after the watchdog's
 * checkpoint signal is over. */
void gpx__wd_enforce(const gpx__local *lx, const char *dir, const char *key);

/* 1 with detail set to the watchdog's sentence if it stopped the task in
 * dir, else 0. */
int gpx__wd_detail(const char *dir, char *detail, size_t len);

/* A sentence on whether the watchdog works on this node, and if not why. */
void gpx__wd_describe(const gpx__local *lx, char *out, size_t len);

/* ------------------------------------------------------------------------ */
/* pause.c                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Freezes (on 1) or thaws (on 0) every process in the task's cgroups: the
 * cgroup2 freezer (cgroup.freeze) in a directory that has one, the v1
 * freezer (freezer.state) in one that has that, and waits until the kernel
 * says they are frozen (a few seconds at most). 0; -1 with why set when the
 * task has no freezer or it did not freeze.
 */
int gpx__freeze(const gpx__task_cg *tc, int on, char *why, size_t len);
/* The same, asked of the kernel without waiting for it to be done: 0 once
 * every freezer was written; -1 with why set as for gpx__freeze. */
int gpx__freeze_ask(const gpx__task_cg *tc, int on, char *why, size_t len);

/* 1 if the task's cgroups have a freezer, else 0. */
int gpx__freezable(const gpx__task_cg *tc);

/*
 * The task's freezer has one owner at a time: the compute-share throttle
 * (watchdog.c, on the daemon's loop) or a pause (on the pause worker). Each
 * takes this lock (flock on the task's state directory dir) around what it
 * decides from the pause journal and does to the freezer: the throttle
 * around its whole decision and act, and gpx__wd_release; a pause around
 * writing its journal and thawing a throttled task. Returns a descriptor
 * for gpx__freezer_unlock, or -1 if dir cannot be opened. Not reentrant:
 * its holder never takes it again.
 */
int gpx__freezer_lock(const char *dir);
void gpx__freezer_unlock(int fd);

/* The control operations GP_EXEC_CTL_PAUSE, _RESUME, _PAUSE_RECOVER and
 * _PAUSE_SUPPORT (executor.h) for the task whose state directory is dir
 * (NULL for support). */
int gpx__pause_ctl(struct gpx__local *lx, int op, const char *dir, gp_exec_pause *p);

/* 1 while the task in dir is being paused, is paused or is being resumed
 * (its pause journal exists), else 0. */
int gpx__pause_journaled(const char *dir);

/* Closes the driver if it was loaded. */
void gpx__cuda_close(gpx__cuda *c);

/* Records the task's binding (b, NULL: none) in <dir>/binding at launch,
 * "gpu=<position> <bytes>" a slice, so that a resume onto other GPUs knows
 * which rules to move; a resume rewrites it. 0 or GP_EIO. */
int gpx__bind_record(const char *dir, const gp_task_binding *b);

/* Tests only: called after each step of a pause (1 journal written, 2 all
 * locked, 3 all checkpointed, 4 frozen) and of a resume (10 begun, nothing
 * done, 11 journal written, 12 thawed, 13 all restored), so that a test can
 * end the process there as a kill -9 of the daemon would. NULL in
 * production. */
extern void (*gpx__pause_step_hook)(int step);

/* Tests only: called in the daemon once it has forked a launch (1) and in
 * the supervisor before it writes its handle (2), so that a test can kill
 * the daemon there and hold the supervisor back. NULL in production. */
extern void (*gpx__spawn_step_hook)(int step);

/* ------------------------------------------------------------------------ */
/* user.c                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Decides who a task runs as. As root: the user run_as names, with its
 * groups (GP_EINVAL if there is none on this node, GP_EPERM for root unless
 * lx->allow_root; err names run_as). Not root: ourselves, u->switch_to 0.
 */
int gpx__user_resolve(const gpx__local *lx, const char *run_as, gpx__exec_user *u, char *err,
                      size_t errlen);

/* A sentence on who tasks run as, for the executor's description. */
void gpx__user_mode(const gpx__local *lx, char *out, size_t len);

/* ------------------------------------------------------------------------ */
/* env.c                                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Builds the environment of a task: a clean base for the user u (PATH, HOME,
 * USER, LOGNAME, SHELL, LANG; nothing of the daemon's own environment), then
 * t->env, then gpupool's own variables (which win): CUDA_VISIBLE_DEVICES,
 * GPUPOOL_*, and for a fractional slice LD_PRELOAD and the slice's limits.
 * ckpt_dir is the checkpoint directory decided by the caller. *note receives
 * a sentence for the log about the GPUs and their enforcement. Returns 0 with
 * *out a NULL-terminated array (free with gpx__env_free), or GP_EINVAL (err
 * names the field) / GP_ENOMEM.
 */
int gpx__env_build(const gpx__local *lx, const gp_task_launch *t, const gpx__exec_user *u,
                   const char *ckpt_dir, char ***out, char *note, size_t notelen, char *err,
                   size_t errlen);
void gpx__env_free(char **env);

/* The value of name in env, or NULL. */
const char *gpx__env_get(char *const *env, const char *name);

/* ---- ledgers.c ------------------------------------------------------------ */

/* Makes GP_SLICE_FILE_DIR and the directory above it, root's, 0755 (so the
 * tasks' users can read their slice files). 0, or -1 when they cannot be. */
int gpx__slice_dirs(void);

/* The path of the ledger the executor makes for task `key` of `instance`. */
void gpx__ledger_path(const char *instance, const char *key, char *buf, size_t len);

/* Makes a fresh ledger for task `key`, owned by the user it runs as, where
 * only root and the task's own mount namespace reach it (ledgers.c). Returns
 * 0 with its path in path, or -1 (path "") when this executor cannot (not
 * root, no private mount namespaces, the ledger reader not linked, or a
 * failed system call); the task then makes its own, as in single-user mode. */
int gpx__ledger_make(const char *instance, const char *key, const gpx__exec_user *u, char *path,
                     size_t len);

#endif /* GP_EXECUTORS_LOCAL_H */
