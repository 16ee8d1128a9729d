/*
 * local.c — the `local` executor: runs gpupool's tasks as process groups on
 * this host. This file holds its methods table, its configuration and the
 * methods themselves; the mechanisms live beside it (proc.c: the supervisor
 * and /proc; cgroup.c: limits; inventory.c: GPUs; env.c: the environment).
 *
 * Every task attempt has a state directory, <state_dir>/<key>, with the files
 * described in local.h. All that the executor knows about a task is on disk
 * and in /proc, never only in memory, so that a new instance (after a crash
 * or restart of the daemon) finds running tasks again from their handles, and
 * a launch repeated with the same (workload, task, attempt) returns the
 * handle of the first instead of running the task twice.
 *
 * The executor provides the mechanisms of graceful eviction; the daemon owns
 * the policy and the clock: it calls signal(checkpoint signal), waits the
 * workload's grace period, and calls stop() if the task still runs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_array.h"
#include "common/gp_error.h"
#include "common/units.h"
#include "executors/local/local.h"
#include "executors/registry.h"
#include "interpose/ledger.h"

/* The slice ledger's reader (libgpledger) is optional: where a program links
 * it, poll() reports the GPU memory a slice really uses and reap() removes
 * the ledger through it; elsewhere these references stay NULL. Weak
 * references do not pull members out of an archive, so a program that wants
 * them links src/interpose/ledger.o itself (or libgpledger.a whole). */
#pragma weak gp_ledger_open
#pragma weak gp_ledger_usage
#pragma weak gp_ledger_close
#pragma weak gp_ledger_unlink
#pragma weak gp_ledger_open_file

#define DEFAULT_STATE_DIR  "/var/lib/gpupool/tasks"
#define DEFAULT_INTERPOSER "/usr/lib/gpupool/libgpuslice.so"
#define DEFAULT_NVML       "libnvidia-ml.so.1"

/* ======================================================================== */
/* Small helpers                                                             */
/* ======================================================================== */

/* Creates the directory that holds path. */
static int mkdirs_parent(const char *path) {
    char buf[PATH_MAX];
    gpx__exec_fmt(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (slash == NULL || slash == buf)
        return 0;
    *slash = '\0';
    return gpx__exec_mkdirs(buf);
}

/* The key of a task attempt: "w<workload>.t<task>.a<attempt>". */
static void make_key(char *key, size_t len, uint64_t w, int32_t task, int32_t attempt) {
    gpx__exec_fmt(key, len, "w%llu.t%d.a%d", (unsigned long long)w, task, attempt);
}

/* Parses a key; 0 or GP_EINVAL. Only keys this file makes are accepted, so a
 * handle can never name a path outside state_dir. */
static int parse_key(const char *key, uint64_t *w, int32_t *task, int32_t *attempt) {
    unsigned long long ww;
    int t, a;
    char again[GPX__KEY_MAX];
    if (sscanf(key, "w%llu.t%d.a%d", &ww, &t, &a) != 3)
        return GP_EINVAL;
    make_key(again, sizeof again, ww, t, a);
    if (strcmp(again, key) != 0)
        return GP_EINVAL;
    *w = ww;
    *task = t;
    *attempt = a;
    return 0;
}

typedef struct handle_parts {
    char key[GPX__KEY_MAX];
    pid_t spid;
    uint64_t sstart;
} handle_parts;

/* Parses "local:<key>:<pid>:<starttime>"; 0 or GP_EINVAL. */
static int parse_handle(const char *h, handle_parts *out) {
    if (strncmp(h, "local:", 6) != 0)
        return GP_EINVAL;
    const char *k = h + 6;
    const char *colon = strchr(k, ':');
    if (colon == NULL || (size_t)(colon - k) >= sizeof out->key)
        return GP_EINVAL;
    memcpy(out->key, k, (size_t)(colon - k));
    out->key[colon - k] = '\0';
    uint64_t w;
    int32_t t, a;
    long long pid;
    unsigned long long start;
    char tail;
    if (parse_key(out->key, &w, &t, &a) < 0 ||
        sscanf(colon + 1, "%lld:%llu%c", &pid, &start, &tail) != 2 || pid <= 0 || pid > INT32_MAX)
        return GP_EINVAL;
    out->spid = (pid_t)pid;
    out->sstart = start;
    return 0;
}

static void task_dir(const gpx__local *lx, const char *key, char *out, size_t len) {
    gpx__exec_fmt(out, len, "%s/%s", lx->state_dir, key);
}

/* The path of a task's slice file (see GP_SLICE_FILE_DIR in ledger.h). */
static void slice_file(const gpx__local *lx, const char *key, char *out, size_t len) {
    gpx__exec_fmt(out, len, "%s/%s.%s", GP_SLICE_FILE_DIR, lx->instance, key);
}

/* The slice ledger name of the task attempt key names. */
static void slice_of(const gpx__local *lx, const char *key, char *name, size_t len) {
    uint64_t w = 0;
    int32_t t = 0, a = 0;
    parse_key(key, &w, &t, &a);
    gpx__slice_name(lx->instance, w, t, a, name, len);
}

/* Reads the handle file of a task directory into handle (no newline).
 * 0, or GP_ENOENT if there is none. */
static int read_handle(const char *dir, char handle[GP_HANDLE_MAX]) {
    char path[PATH_MAX];
    gpx__exec_fmt(path, sizeof path, "%s/handle", dir);
    ssize_t n = gpx__read_small(path, handle, GP_HANDLE_MAX);
    if (n <= 0)
        return GP_ENOENT;
    handle[strcspn(handle, "\n")] = '\0';
    return 0;
}

/* Removes a task's state directory and what it holds. */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

/* ======================================================================== */
/* Configuration                                                             */
/* ======================================================================== */

/*
 * The configuration string is "key=value,..." with the keys of parse_config's
 * table below; docs/executors.md's table describes each, its default and its
 * values (tests/executors/test-config-doc.sh holds the two to one list).
 */
typedef struct config {
    char instance[GPX__INSTANCE_MAX + 1];
    char cgroup[16];
    char devices[16];
    char cgroup_parent[256];
    char pids_max[24];
    char log_max[24];
    char nvml[PATH_MAX];
} config;

/* Parses "key=value,key=value" into lx and c (gpx__config_parse); the
 * values are checked by open() once all are read. */
static int parse_config(gpx__local *lx, config *c, const char *text, char *err, size_t errlen) {
    gpx__config_key keys[] = {
        {"state_dir", lx->state_dir, sizeof lx->state_dir},
        {"inventory", lx->inventory, sizeof lx->inventory},
        {"emulate", lx->emulate, sizeof lx->emulate},
        {"nvml", c->nvml, sizeof c->nvml},
        {"interposer", lx->interposer, sizeof lx->interposer},
        {"cgroup", c->cgroup, sizeof c->cgroup},
        {"devices", c->devices, sizeof c->devices},
        {"cgroup_parent", c->cgroup_parent, sizeof c->cgroup_parent},
        {"pids_max", c->pids_max, sizeof c->pids_max},
        {"log_max", c->log_max, sizeof c->log_max},
        {"node", lx->node_name, sizeof lx->node_name},
        {"domain", lx->domain, sizeof lx->domain},
        {"instance", c->instance, sizeof c->instance},
        {"cuda", lx->cuda_lib, sizeof lx->cuda_lib},
        {NULL, NULL, 0},
    };
    int rc = gpx__config_parse(text, gpx__config_string, keys, err, errlen);
    if (rc == 0 && lx->state_dir[0] != '/') {
        gp_errf(err, errlen, "config: state_dir: '%.60s' is not an absolute path", lx->state_dir);
        rc = GP_EINVAL;
    }
    return rc;
}

/*
 * Decides this instance's id: the one the configuration gives, else the one
 * kept in <state_dir>/instance, made there (8 random hex digits) on the first
 * open. Every executor opened on one state directory is one instance, across
 * restarts; two state directories are two instances, whose cgroups, ledgers
 * and supervisors never share a name. The file is published with link(2), so
 * that of two first opens racing, both end up with the one that won.
 */
static int decide_instance(gpx__local *lx, const char *given, char *err, size_t errlen) {
    if (given[0] != '\0') {
        if (!gpx__id_ok(given, GPX__INSTANCE_MAX - 1)) {
            gp_errf(err, errlen, "config: instance: '%.40s' is not 1 to %d " GPX__ID_RULE, given,
                    GPX__INSTANCE_MAX - 1);
            return GP_EINVAL;
        }
        gpx__exec_fmt(lx->instance, sizeof lx->instance, "%s", given);
        return 0;
    }
    char path[PATH_MAX], tmp[PATH_MAX], buf[64];
    gpx__exec_fmt(path, sizeof path, "%s/instance", lx->state_dir);
    for (int tries = 0; tries < 2; tries++) {
        ssize_t n = gpx__read_small(path, buf, sizeof buf);
        if (n > 0) {
            buf[strcspn(buf, "\n")] = '\0';
            if (!gpx__id_ok(buf, GPX__INSTANCE_MAX - 1)) {
                gp_errf(err, errlen, "state_dir: %s does not hold an instance id", path);
                return GP_ECORRUPT;
            }
            gpx__exec_fmt(lx->instance, sizeof lx->instance, "%s", buf);
            return 0;
        }
        if (n < 0 && n != gp_syserr(ENOENT)) {
            gp_errf(err, errlen, "state_dir: cannot read %s: %s", path, gp_strerror((int)n));
            return GP_EIO;
        }
        unsigned char r[4];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            gp_errf(err, errlen, "instance: no random bytes: %s", strerror(errno));
            return GP_ESYS;
        }
        gpx__exec_fmt(buf, sizeof buf, "%02x%02x%02x%02x\n", r[0], r[1], r[2], r[3]);
        gpx__exec_fmt(tmp, sizeof tmp, "%s/instance.%d.tmp", lx->state_dir, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int ok = fd >= 0 && write(fd, buf, strlen(buf)) == (ssize_t)strlen(buf);
        if (fd >= 0)
            ok = close(fd) == 0 && ok;
        ok = ok && (link(tmp, path) == 0 || errno == EEXIST);
        unlink(tmp);
        if (!ok) {
            gp_errf(err, errlen, "state_dir: cannot write %s: %s", path, strerror(errno));
            return GP_EIO;
        }
    }
    gp_errf(err, errlen, "state_dir: %s vanished while it was made", path);
    return GP_EIO;
}

/* Marks a node as emulated where everyone looks at it: in its labels. */
static void label_emulated(gp_node_spec *n) {
    if (n->nlabels < GP_MAX_LABELS) {
        gpx__exec_fmt(n->labels[n->nlabels].key, sizeof n->labels[0].key, "gpupool.emulated");
        gpx__exec_fmt(n->labels[n->nlabels].value, sizeof n->labels[0].value, "true");
        n->nlabels++;
    }
}

/* The node as this host is: name, domain, CPU and memory, no GPUs. */
static void host_node(const gpx__local *lx, gp_node_spec *n) {
    memset(n, 0, sizeof *n);
    gpx__exec_fmt(n->name, sizeof n->name, "%s", lx->node_name);
    gpx__exec_fmt(n->domain, sizeof n->domain, "%s", lx->domain);
    n->schedulable = 1;
    gpx__host_resources(&n->cpu_milli, &n->mem_bytes);
}

static void local_close(void *state);
static void find_abandoned(gpx__local *lx);
static void settle_abandoned(gpx__local *lx);

/* The defaults that depend on the daemon (ctx): task state below its data
 * directory, the interposer installed beside it, and, on the embedded
 * defaults (an empty configuration), emulated GPUs when none is found. */
static void ctx_defaults(gpx__local *lx, const gp_executor_ctx *ctx, const char *text) {
    lx->allow_root = ctx->allow_root_workloads;
    if (ctx->data_dir != NULL && ctx->data_dir[0] != '\0') {
        gpx__exec_fmt(lx->state_dir, sizeof lx->state_dir, "%s/tasks", ctx->data_dir);
        if (text[0] == '\0')
            gpx__exec_fmt(lx->emulate, sizeof lx->emulate, "%s/emulated-gpus.conf", ctx->data_dir);
    }
    char lib[PATH_MAX];
    if (ctx->lib_dir != NULL && ctx->lib_dir[0] != '\0' &&
        gpx__exec_fmt(lib, sizeof lib, "%s/libgpuslice.so", ctx->lib_dir) == 0 &&
        access(lib, R_OK) == 0)
        gpx__exec_fmt(lx->interposer, sizeof lx->interposer, "%s", lib);
}

/* 1 if NVML, as opened, reports at least one GPU on this host. */
static int nvml_has_gpus(gpx__local *lx) {
    if (lx->nvml.lib == NULL)
        return 0;
    gp_node_spec *n = calloc(1, sizeof *n);
    char err[GP_ERR_MAX];
    int found = n != NULL && gpx__nvml_gpus(&lx->nvml, n, err, sizeof err) == 0 && n->ngpus > 0;
    free(n);
    return found;
}

static int local_open(const gp_executor_ctx *ctx, const char *text, void **state, char *err,
                      size_t errlen) {
    *state = NULL;
    gpx__local *lx = calloc(1, sizeof *lx);
    config *c = calloc(1, sizeof *c);
    if (lx == NULL || c == NULL) {
        free(lx);
        free(c);
        gp_errf(err, errlen, "local: out of memory");
        return GP_ENOMEM;
    }
    gpx__exec_fmt(lx->state_dir, sizeof lx->state_dir, "%s", DEFAULT_STATE_DIR);
    gpx__exec_fmt(lx->interposer, sizeof lx->interposer, "%s", DEFAULT_INTERPOSER);
    gpx__exec_fmt(lx->domain, sizeof lx->domain, "local");
    gpx__exec_fmt(c->cgroup, sizeof c->cgroup, "auto");
    gpx__exec_fmt(c->devices, sizeof c->devices, "auto");
    gpx__exec_fmt(c->cgroup_parent, sizeof c->cgroup_parent, "gpupool");
    gpx__exec_fmt(c->pids_max, sizeof c->pids_max, "%d", GPX__PIDS_MAX_DEFAULT);
    lx->log_max = GPX__LOG_MAX_DEFAULT;
    gpx__exec_fmt(c->nvml, sizeof c->nvml, "auto");
    gpx__exec_fmt(lx->cuda_lib, sizeof lx->cuda_lib, "libcuda.so.1");
    ctx_defaults(lx, ctx, text);
    int rc = parse_config(lx, c, text, err, errlen);
    if (rc == 0 && lx->node_name[0] == '\0' &&
        gethostname(lx->node_name, sizeof lx->node_name - 1) < 0)
        gpx__exec_fmt(lx->node_name, sizeof lx->node_name, "localhost");
    int made = rc == 0 ? gpx__exec_mkdirs(lx->state_dir) : 0;
    if (rc == 0 && made == 0) {
        /* Task state (handles, exit files, cgroup lists) is ours alone. */
        chmod(lx->state_dir, 0700);
    } else if (rc == 0) {
        rc = made;
        gp_errf(err, errlen, "config: state_dir: cannot create %s: %s", lx->state_dir,
                gp_strerror(rc));
        rc = GP_EIO;
    }
    if (rc == 0 && lx->inventory[0] != '\0') {
        host_node(lx, &lx->emu);
        rc = gpx__inv_parse_file(lx->inventory, &lx->emu, lx->emu_dev, err, errlen);
        lx->emulated = 1;
        label_emulated(&lx->emu);
    } else if (rc == 0 && strcmp(c->nvml, "off") != 0) {
        int required = strcmp(c->nvml, "auto") != 0;
        rc = gpx__nvml_open(&lx->nvml, required ? c->nvml : DEFAULT_NVML, required, err, errlen);
    } else if (rc == 0) {
        gpx__exec_fmt(lx->nvml.note, sizeof lx->nvml.note, "NVML is off (nvml=off)");
    }
    if (rc == 0 && !lx->emulated && lx->emulate[0] != '\0' && !nvml_has_gpus(lx)) {
        host_node(lx, &lx->emu);
        rc = gpx__inv_emulate(lx->emulate, &lx->emu, lx->emu_dev, err, errlen);
        gpx__exec_fmt(lx->inventory, sizeof lx->inventory, "%s", lx->emulate);
        lx->emulated = 1;
        label_emulated(&lx->emu);
    }
    uint64_t pids_max = 0;
    if (rc == 0 && gp_parse_uint(c->pids_max, NULL, 10, 4194304, &pids_max) < 0) {
        gp_errf(err, errlen, "config: pids_max: '%.20s' is not a whole number from 0 to 4194304",
                c->pids_max);
        rc = GP_EINVAL;
    }
    /* A cap below 64 KiB would leave no room for the log's own notes. */
    if (rc == 0 && c->log_max[0] != '\0' &&
        (gp_parse_size(c->log_max, &lx->log_max) < 0 ||
         (lx->log_max != 0 && lx->log_max < 65536))) {
        gp_errf(err, errlen, "config: log_max: '%.20s' is not 0 or a size of at least 64K",
                c->log_max);
        rc = GP_EINVAL;
    }
    if (rc == 0)
        rc = decide_instance(lx, c->instance, err, errlen);
    if (rc == 0) {
        /* One cgroup tree per instance: the clean-up of one daemon's task
         * can never reach a task of another daemon with the same key. */
        char parent[sizeof c->cgroup_parent + GPX__INSTANCE_MAX + 1];
        gpx__exec_fmt(parent, sizeof parent, "%s/%s", c->cgroup_parent, lx->instance);
        rc = gpx__cg_detect(&lx->cg, c->cgroup, c->cgroup_parent[0] != '\0' ? parent : "",
                            (int64_t)pids_max, err, errlen);
        if (rc == 0) {
            rc = gpx__dev_detect(&lx->dev, &lx->cg, c->devices,
                                 c->cgroup_parent[0] != '\0' ? parent : "", err, errlen);
        }
    }
    free(c);
    if (rc == 0) {
        find_abandoned(lx);
        *state = lx;
    } else {
        local_close(lx);
    }
    return rc;
}

static void local_close(void *state) {
    gpx__local *lx = state;
    if (lx != NULL) {
        /* The instance's cgroups go when no task is left in them; with tasks
         * still running (a daemon stopped, to be restarted) rmdir fails and
         * they stay. */
        if (lx->cg.mode != GPX__CG_NONE)
            rmdir(lx->cg.cpu_parent);
        if (lx->cg.mode == GPX__CG_V1)
            rmdir(lx->cg.mem_parent);
        if (lx->cg.frz_parent[0] != '\0')
            rmdir(lx->cg.frz_parent);
        if (lx->dev.v1_parent[0] != '\0')
            rmdir(lx->dev.v1_parent);
        if (lx->dev.v2_parent[0] != '\0')
            rmdir(lx->dev.v2_parent);
        gpx__nvml_close(&lx->nvml);
        gpx__cuda_close(&lx->cuda);
        free(lx->abandoned);
        free(lx);
    }
}

static int local_inventory(void *state, gp_node_spec *nodes, size_t max, size_t *n, int *emulated,
                           char *err, size_t errlen) {
    gpx__local *lx = state;
    settle_abandoned(lx);
    *emulated = lx->emulated;
    *n = 1;
    if (max == 0)
        return 0;
    if (lx->emulated) {
        nodes[0] = lx->emu;
        return 0;
    }
    host_node(lx, &nodes[0]);
    return gpx__nvml_gpus(&lx->nvml, &nodes[0], err, errlen);
}

/* ======================================================================== */
/* Launch                                                                    */
/* ======================================================================== */

/* Writes the reason a task could not start into err. */
static void start_error(const gp_task_launch *t, const char *path, const char *workdir, int stage,
                        int e, char *err, size_t errlen) {
    switch (stage) {
    case GPX__STAGE_EXEC:
        if (strchr(path, '/') == NULL && e == ENOENT)
            gp_errf(err, errlen, "argv[0]: '%s' is not an executable in the task's PATH", path);
        else
            gp_errf(err, errlen, "argv[0]: cannot execute '%s': %s", path, strerror(e));
        break;
    case GPX__STAGE_CHDIR:
        gp_errf(err, errlen, "workdir: cannot enter '%s': %s", workdir, strerror(e));
        break;
    case GPX__STAGE_STDIO:
        gp_errf(err, errlen, "log_path: cannot send output to '%s': %s",
                t->log_path ? t->log_path : "(default)", strerror(e));
        break;
    case GPX__STAGE_USER:
        gp_errf(err, errlen, "run_as: cannot become '%s': %s", t->run_as ? t->run_as : "(none)",
                strerror(e));
        break;
    case GPX__STAGE_TASK:
        gp_errf(err, errlen, "launch: the task's supervisor cannot start the task: %s",
                strerror(e));
        break;
    case GPX__STAGE_SESSION:
        gp_errf(err, errlen, "launch: the task's supervisor cannot make the task's terminal: %s",
                strerror(e));
        break;
    default:
        gp_errf(err, errlen, "launch: cannot start the task's supervisor: %s", strerror(e));
    }
}

/* What a task that could not start returns: GP_EAGAIN where the host
 * lacked something for now (nothing ran, and a later try may work): a fork
 * of the supervisor or of the task failing for want of processes or memory,
 * or the terminal of an interactive task for want of a pseudo-terminal
 * (ENOSPC: the host's pty/max in use); GP_ESYS for any other failure of
 * these; GP_ENOENT for the task's own (its program, working directory,
 * user...). */
static int start_rc(int stage, int e) {
    switch (stage) {
    case GPX__STAGE_SUPERVISOR:
    case GPX__STAGE_TASK:
        return gpx__spawn_transient(e) ? GP_EAGAIN : GP_ESYS;
    case GPX__STAGE_SESSION:
        return gpx__spawn_transient(e) || e == ENOSPC ? GP_EAGAIN : GP_ESYS;
    default:
        return GP_ENOENT;
    }
}

/* Removes what a task's launch made outside its state directory: its slice
 * file and its ledgers. */
static void remove_slice(const gpx__local *lx, const char *key) {
    char file[PATH_MAX], name[64];
    slice_file(lx, key, file, sizeof file);
    unlink(file);
    gpx__ledger_path(lx->instance, key, file, sizeof file);
    unlink(file);
    slice_of(lx, key, name, sizeof name);
    if (gp_ledger_unlink != NULL)
        gp_ledger_unlink(name);
}

/* Removes all that a launch of key made, in its state directory dir and
 * outside it (its cgroups, its slice), once no process of it runs. */
static void remove_attempt(const gpx__local *lx, const char *key, const char *dir) {
    char file[PATH_MAX];
    gpx__exec_fmt(file, sizeof file, "%s/cgroup", dir);
    gpx__task_cg cg;
    if (gpx__cg_load(&cg, file) == 0)
        gpx__cg_remove(&cg);
    remove_slice(lx, key);
    remove_dir(dir);
}

/* Opens and locks dir's start file, made for a new start: the supervisor
 * inherits the descriptor and, with it, the lock. -1 if it cannot. */
static int start_lock(const char *dir) {
    char file[PATH_MAX];
    gpx__exec_fmt(file, sizeof file, "%s/start", dir);
    int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Whether a process of a start of dir lives: a launch forking it, or its
 * supervisor, which holds the start file's lock until it ends. */
static int start_held(const char *dir) {
    char file[PATH_MAX];
    gpx__exec_fmt(file, sizeof file, "%s/start", dir);
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

/*
 * A launch of a key that was launched before: returns 1 with its handle (or
 * the start failure it recorded, as an error), or 0 if the directory holds no
 * start (it is then emptied for a new one), nor one that failed for now (a
 * supervisor that could not fork, whose launch's clean-up did not happen: the
 * daemon stopped meanwhile). A directory without a handle may belong to a
 * launch still in flight in another process, so this waits up to a second
 * for the handle; a start whose process lives still (its start file locked:
 * a supervisor not yet at its handle, whose daemon was killed after the
 * fork) gets GP_EAGAIN, to be tried again, never started a second time.
 * Only a directory that no process of a start holds is called stale.
 */
static int launched_before(const gpx__local *lx, const gp_task_launch *t, const char *key,
                           const char *dir, char handle[GP_HANDLE_MAX], char *err, size_t errlen) {
    for (int i = 0; i < 100; i++) {
        if (read_handle(dir, handle) == 0) {
            gpx__exit ex;
            if (gpx__exit_read(dir, &ex) == 0 && ex.present && ex.start_stage != GPX__STAGE_NONE) {
                handle[0] = '\0';
                int rc = start_rc(ex.start_stage, ex.start_errno);
                if (rc == GP_EAGAIN)
                    break;
                start_error(t, t->argv[0], t->workdir ? t->workdir : "(default)", ex.start_stage,
                            ex.start_errno, err, errlen);
                return rc;
            }
            return 1;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (start_held(dir)) {
        gp_errf(err, errlen, "launch: a start of this attempt is still in flight");
        return GP_EAGAIN;
    }
    remove_attempt(lx, key, dir);
    return 0;
}

/* Writes the header of an attempt into its log. */
static void log_header(int fd, const gpx__local *lx, const gp_task_launch *t, const char *path,
                       const char *gpus, const char *cg, const gpx__exec_user *u) {
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    dprintf(fd,
            "==== gpupool: workload %llu task %d attempt %d starting %s on %s%s ====\n"
            "gpupool: command: %s\n"
            "gpupool: runs as: %s (uid %d)%s\n"
            "gpupool: %s\n"
            "gpupool: limits: %s\n",
            (unsigned long long)t->workload, t->task, t->attempt, when, lx->node_name,
            lx->emulated ? " (EMULATED GPUs)" : "", path, u->name, (int)u->uid,
            u->switch_to ? "" : " (single-user mode: the daemon's own user)", gpus, cg);
}

/* Everything launch() prepares before it forks, so that one cleanup frees it. */
typedef struct prep {
    char dir[PATH_MAX], path[PATH_MAX], workdir[PATH_MAX], ckpt[PATH_MAX], log[PATH_MAX];
    char gpus[512];
    char preload[PATH_MAX]; /* the slice's ld.so.preload file; "" if none */
    char ledger[PATH_MAX];  /* the slice's ledger, made here; "" if none */
    gpx__exec_user user;    /* who the task runs as */
    char **argv;            /* a copy: execve wants it without const */
    char **env;
    int log_fd;
    gpx__task_cg cg;
} prep;

/* A copy of a NULL-terminated argv (free with gpx__env_free), or NULL. */
static char **copy_argv(const char *const *argv) {
    size_t n = 0;
    while (argv[n] != NULL)
        n++;
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v != NULL && i < n; i++) {
        if ((v[i] = strdup(argv[i])) == NULL) {
            gpx__env_free(v);
            return NULL;
        }
    }
    return v;
}

/* Decides the directories of a task (defaults where the daemon gave none)
 * and creates them. */
static int prepare_dirs(const gpx__local *lx, const gp_task_launch *t, prep *p, char *err,
                        size_t errlen) {
    char base[64];
    gpx__exec_fmt(base, sizeof base, "w%llu.t%d", (unsigned long long)t->workload, t->task);
    if (t->checkpoint_dir != NULL)
        gpx__exec_fmt(p->ckpt, sizeof p->ckpt, "%s", t->checkpoint_dir);
    else
        gpx__exec_fmt(p->ckpt, sizeof p->ckpt, "%s/checkpoints/%s", lx->state_dir, base);
    gpx__exec_fmt(p->workdir, sizeof p->workdir, "%s", t->workdir != NULL ? t->workdir : p->ckpt);
    if (t->log_path != NULL)
        gpx__exec_fmt(p->log, sizeof p->log, "%s", t->log_path);
    else
        gpx__exec_fmt(p->log, sizeof p->log, "%s/logs/%s.log", lx->state_dir, base);
    /* The checkpoint directory is the task user's: made by us (the path is
     * ours to choose), then given to the user; the directory above it only
     * lets the user pass through. The log is ours: the task writes it
     * through the descriptor it is given and cannot read other logs. The
     * workdir is made, if missing, by the task itself as its user (proc.c). */
    int rc = gpx__exec_mkdirs(p->ckpt);
    if (rc == 0 && p->user.switch_to)
        rc = gpx__exec_give_dir(p->ckpt, p->user.uid, p->user.gid);
    if (rc < 0) {
        gp_errf(err, errlen, "checkpoint_dir: cannot create '%s': %s", p->ckpt, gp_strerror(rc));
        return GP_EIO;
    }
    if ((rc = mkdirs_parent(p->log)) < 0) {
        gp_errf(err, errlen, "log_path: cannot create '%s': %s", p->log, gp_strerror(rc));
        return GP_EIO;
    }
    p->log_fd = open(p->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (p->log_fd < 0) {
        gp_errf(err, errlen, "log_path: cannot open '%s': %s", p->log, strerror(errno));
        return GP_EIO;
    }
    return 0;
}

/*
 * Writes the limits of a fractional slice where its workload cannot change
 * them: a root-owned file (0644) that the interposer finds from the task's
 * cgroup, and whose limits the environment can only narrow. Only an executor
 * running as root, whose task has a cgroup, can offer this; elsewhere the
 * limits are the environment's alone (docs/interposer.md, threat model).
 * Atomic (write, rename), so that the interposer reads all of it or none.
 */
static void write_slice_file(const gpx__local *lx, const char *key, prep *p) {
    const char *mem = gpx__env_get(p->env, "GPUPOOL_MEMORY_LIMIT");
    if (mem == NULL || geteuid() != 0 || p->cg.ndirs == 0 || gpx__slice_dirs() < 0)
        return;
    const char *share = gpx__env_get(p->env, "GPUPOOL_COMPUTE_SHARE");
    const char *ledger = gpx__env_get(p->env, "GPUPOOL_SLICE");
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    gpx__ledger_make(lx->instance, key, &p->user, p->ledger, sizeof p->ledger);
    slice_file(lx, key, path, sizeof path);
    gpx__exec_fmt(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    fchmod(fd, 0644);
    dprintf(fd, "memory_limit=%s\n%s%s%sslice=%s\n%s%s%s", mem, share ? "compute_share=" : "",
            share ? share : "", share ? "\n" : "", ledger ? ledger : "",
            p->ledger[0] ? "ledger=" : "", p->ledger[0] ? GP_LEDGER_MOUNT : "",
            p->ledger[0] ? "\n" : "");
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return;
    }
    /* The interposer, named in a file that the task's own mount namespace
     * binds over /etc/ld.so.preload (proc.c), so that a workload that drops
     * LD_PRELOAD still loads it. The bind needs a file to cover: an empty
     * /etc/ld.so.preload is made once if there is none (it changes nothing
     * outside the tasks). */
    if (access(lx->interposer, R_OK) != 0)
        return;
    int etc = open("/etc/ld.so.preload", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (etc >= 0) {
        fchmod(etc, 0644); /* as the system's own would be, whatever our umask */
        close(etc);
    }
    gpx__exec_fmt(path, sizeof path, "%s/%s.preload", GP_SLICE_FILE_DIR, lx->instance);
    gpx__exec_fmt(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    fchmod(fd, 0644);
    dprintf(fd, "%s\n", lx->interposer);
    if (close(fd) == 0 && rename(tmp, path) == 0 && access("/etc/ld.so.preload", F_OK) == 0)
        gpx__exec_fmt(p->preload, sizeof p->preload, "%s", path);
    else
        unlink(tmp);
}

int gpx__gpu_devs(gpx__local *lx, gpx__gpu_dev *devs) {
    if (lx->emulated) {
        memcpy(devs, lx->emu_dev, sizeof lx->emu_dev);
        return lx->emu.ngpus;
    }
    return gpx__nvml_devs(&lx->nvml, devs, GP_MAX_GPUS_PER_NODE);
}

/* Denies the task the device files of the node's GPUs it was not given and
 * sets its dmem limits (devices.c), before it starts; -1 with a sentence in
 * why where it cannot. */
static int limit_devices(gpx__local *lx, const gp_task_launch *t, const char *key, gpx__task_cg *tc,
                         char *why, size_t whylen) {
    gpx__gpu_dev devs[GP_MAX_GPUS_PER_NODE];
    int n = gpx__gpu_devs(lx, devs);
    gpx__dev_plan plan;
    gpx__dev_plan_make(&lx->dev, devs, n, t->binding, &plan);
    return gpx__dev_apply(&lx->dev, key, &plan, tc, why, whylen);
}

static int local_launch(void *state, const gp_task_launch *t, char handle[GP_HANDLE_MAX], char *err,
                        size_t errlen) {
    gpx__local *lx = state;
    if (t->argv == NULL || t->argv[0] == NULL || t->argv[0][0] == '\0') {
        gp_errf(err, errlen, "argv: a task needs a program to run");
        return GP_EINVAL;
    }
    if (t->task < 0 || t->attempt < 1) {
        gp_errf(err, errlen, "%s: must be %s", t->task < 0 ? "task" : "attempt",
                t->task < 0 ? ">= 0" : ">= 1");
        return GP_EINVAL;
    }
    char key[GPX__KEY_MAX];
    make_key(key, sizeof key, t->workload, t->task, t->attempt);
    prep *p = calloc(1, sizeof *p);
    if (p == NULL)
        return GP_ENOMEM;
    p->log_fd = -1;
    task_dir(lx, key, p->dir, sizeof p->dir);
    int rc = 0;
    if (mkdir(p->dir, 0755) < 0) {
        if (errno != EEXIST) {
            gp_errf(err, errlen, "state_dir: cannot create '%s': %s", p->dir, strerror(errno));
            rc = GP_EIO;
        } else if ((rc = launched_before(lx, t, key, p->dir, handle, err, errlen)) != 0) {
            free(p);
            return rc < 0 ? rc : 0;
        } else if (mkdir(p->dir, 0755) < 0) {
            gp_errf(err, errlen, "state_dir: cannot create '%s': %s", p->dir, strerror(errno));
            rc = GP_EIO;
        }
    }
    int start_fd = -1;
    if (rc == 0 && (start_fd = start_lock(p->dir)) < 0) {
        gp_errf(err, errlen, "state_dir: cannot lock the start in '%s': %s", p->dir,
                strerror(errno));
        rc = GP_EIO;
    }
    if (rc == 0)
        rc = gpx__user_resolve(lx, t->run_as, &p->user, err, errlen);
    if (rc == 0)
        rc = prepare_dirs(lx, t, p, err, errlen);
    if (rc == 0) {
        rc =
            gpx__env_build(lx, t, &p->user, p->ckpt, &p->env, p->gpus, sizeof p->gpus, err, errlen);
    }
    if (rc == 0 && (p->argv = copy_argv(t->argv)) == NULL)
        rc = GP_ENOMEM;
    /* A name without a slash is looked up in the task's PATH by the task
     * itself, as its user (proc.c): looked up here, as root, it told the
     * workload which programs exist in directories it may not enter. */
    if (rc == 0 && gpx__exec_fmt(p->path, sizeof p->path, "%s", t->argv[0]) < 0) {
        gp_errf(err, errlen, "argv[0]: longer than %d bytes", PATH_MAX - 1);
        rc = GP_EINVAL;
    }
    gpx__spawned sp;
    int spawned = 0;
    if (rc == 0) {
        gpx__cg_create(&lx->cg, key, t->cpu_milli, t->mem_bytes, &p->cg);
        char why[256];
        if (limit_devices(lx, t, key, &p->cg, why, sizeof why) < 0) {
            /* The instance promised these rules (describe says so): a task
             * that would run without them is not started. */
            gp_errf(err, errlen, "GPU device rules could not be applied: %s", why);
            dprintf(
                p->log_fd,
                "==== gpupool: could not start: GPU device rules could not be applied: %s ====\n",
                why);
            gpx__cg_remove(&p->cg);
            rc = GP_ESYS;
        }
    }
    if (rc == 0) {
        spawned = 1;
        char file[PATH_MAX];
        gpx__exec_fmt(file, sizeof file, "%s/cgroup", p->dir);
        gpx__cg_save(&p->cg, file);
        gpx__wd_record(p->dir, t);
        gpx__bind_record(p->dir, t->binding);
        write_slice_file(lx, key, p);
        log_header(p->log_fd, lx, t, p->path, p->gpus, p->cg.note, &p->user);
        char title[96];
        gpx__exec_fmt(title, sizeof title, "gpupool-supervisor %s %s", lx->instance, key);
        gpx__spawn s = {p->path,
                        p->argv,
                        p->env,
                        p->workdir,
                        p->log_fd,
                        p->log,
                        lx->log_max,
                        p->dir,
                        key,
                        title,
                        &p->cg,
                        &p->user,
                        1,
                        p->preload[0] ? p->preload : NULL,
                        p->ledger[0] ? p->ledger : NULL,
                        t->tty != 0,
                        start_fd};
        rc = gpx__spawn_task(&s, &sp, err, errlen);
        if (rc == 0 && sp.stage != GPX__STAGE_NONE) {
            start_error(t, p->path, p->workdir, sp.stage, sp.start_errno, err, errlen);
            rc = start_rc(sp.stage, sp.start_errno);
        }
    }
    if (rc < 0 && spawned) {
        if (rc == GP_EAGAIN) {
            dprintf(p->log_fd,
                    "==== gpupool: not started yet: %s; the launch will be tried again ====\n",
                    err ? err : "");
        } else {
            dprintf(p->log_fd, "==== gpupool: could not start: %s ====\n", err ? err : "");
        }
    }
    char recorded[GP_HANDLE_MAX];
    if (rc == 0) {
        gpx__exec_fmt(handle, GP_HANDLE_MAX, "local:%s:%d:%llu", key, (int)sp.spid,
                      (unsigned long long)sp.sstart);
    } else if (!spawned) {
        /* Nothing was made outside the directory: leave none that a
         * relaunch of the key would take for a start in flight. */
        remove_dir(p->dir);
    } else if (rc == GP_EAGAIN || read_handle(p->dir, recorded) < 0) {
        /* Nothing ran: no supervisor started (none wrote its handle), or
         * it could not fork the task for now and has reported and ended.
         * What the launch made goes, its cgroups, slice file and ledger as
         * well as its directory, so that a try again of the key starts
         * afresh and one never made (its workload deleted meanwhile)
         * leaves nothing. The cgroups are the launch's own, not read
         * back from the directory: its cgroup file may not have been
         * written (a full disk fails forks and writes alike). */
        gpx__cg_remove(&p->cg);
        remove_slice(lx, key);
        remove_dir(p->dir);
    } else {
        /* The supervisor recorded why the task could not start, which a
         * relaunch of the key reports; the rest goes. */
        gpx__cg_remove(&p->cg);
        remove_slice(lx, key);
    }
    if (p->log_fd >= 0)
        close(p->log_fd);
    if (start_fd >= 0)
        close(start_fd);
    gpx__env_free(p->env);
    gpx__env_free(p->argv);
    free(p);
    return rc;
}

/* ======================================================================== */
/* Signal, stop, poll, reap                                                  */
/* ======================================================================== */

/* The process group of a task is its main process's pid (local.h). */
int gpx__task_signal(const gpx__local *lx, const char *key, int sig) {
    uint64_t w;
    int32_t t, a;
    if (parse_key(key, &w, &t, &a) < 0 || sig <= 0 || sig >= NSIG)
        return GP_EINVAL;
    char dir[PATH_MAX], file[PATH_MAX];
    task_dir(lx, key, dir, sizeof dir);
    if (sig != SIGSTOP && sig != SIGCONT)
        gpx__wd_release(lx, dir, key);
    pid_t tpid = 0;
    uint64_t tstart;
    if (gpx__task_read(dir, &tpid, &tstart) == 0 && gpx__proc_present(tpid, tstart))
        kill(-tpid, sig);
    else
        tpid = 0;
    gpx__task_cg cg;
    gpx__exec_fmt(file, sizeof file, "%s/cgroup", dir);
    if (gpx__cg_load(&cg, file) == 0) {
        gpx__cg_signal(&cg, sig, tpid);
        /* A paused (frozen) task receives SIGKILL only once thawed. */
        if (sig == SIGKILL)
            gpx__freeze(&cg, 0, NULL, 0);
    }
    return 0;
}

static int signal_task(const gpx__local *lx, const char *handle, int sig) {
    handle_parts h;
    return parse_handle(handle, &h) < 0 ? GP_EINVAL : gpx__task_signal(lx, h.key, sig);
}

static int local_signal(void *state, const char *handle, int sig) {
    return signal_task(state, handle, sig);
}

static int local_stop(void *state, const char *handle) {
    return signal_task(state, handle, SIGKILL);
}

/* Bytes of GPU memory the task's slice holds now, from its ledger; -1 if the
 * task has no slice ledger or the reader is not linked. */
static int64_t slice_memory(const gpx__local *lx, const handle_parts *h) {
    char name[64];
    gp_ledger *l = NULL;
    if (gp_ledger_open == NULL || gp_ledger_usage == NULL || gp_ledger_close == NULL)
        return -1;
    slice_of(lx, h->key, name, sizeof name);
    char file[PATH_MAX];
    gpx__ledger_path(lx->instance, h->key, file, sizeof file);
    /* The slice's name is read only where the executor made no ledger: a
     * task of the same user may have put anything under that name. Either
     * is read as a copy (never mapped), so its workload cannot fault us. */
    int rc = gp_ledger_open_file != NULL ? gp_ledger_open_file(file, GP_LEDGER_READ, &l, NULL)
                                         : GP_ENOENT;
    if (rc == GP_ENOENT)
        rc = gp_ledger_open(name, GP_LEDGER_READ, &l, NULL);
    if (rc < 0)
        return -1;
    gp_ledger_device_usage use[GP_LEDGER_MAX_DEVICES];
    int n = gp_ledger_usage(l, use, GP_LEDGER_MAX_DEVICES);
    int64_t sum = n < 0 ? -1 : 0;
    for (int i = 0; i < n && i < GP_LEDGER_MAX_DEVICES; i++)
        sum += (int64_t)use[i].used;
    gp_ledger_close(l);
    return sum;
}

static void poll_one(const gpx__local *lx, gp_task_status *st) {
    st->state = GP_TASK_LOST;
    st->exit_code = 0;
    st->term_signal = 0;
    st->gpu_mem_used = -1;
    st->detail[0] = '\0';
    handle_parts h;
    if (parse_handle(st->handle, &h) < 0) {
        gpx__exec_fmt(st->detail, sizeof st->detail, "not a handle of the local executor");
        return;
    }
    char dir[PATH_MAX], recorded[GP_HANDLE_MAX];
    task_dir(lx, h.key, dir, sizeof dir);
    int have = read_handle(dir, recorded) == 0;
    if (have && strcmp(recorded, st->handle) != 0) {
        gpx__exec_fmt(st->detail, sizeof st->detail,
                      "the task was started again under this key; this handle is stale");
        return;
    }
    /* The exit file first: the supervisor writes it just before it exits, so
     * reading it after seeing the supervisor gone would race. */
    gpx__exit ex;
    for (int pass = 0; pass < 2; pass++) {
        if (gpx__exit_read(dir, &ex) < 0) {
            gpx__exec_fmt(st->detail, sizeof st->detail, "the task's exit file is corrupt");
            return;
        }
        if (ex.present && ex.start_stage != GPX__STAGE_NONE) {
            st->state = GP_TASK_FAILED;
            gpx__exec_fmt(st->detail, sizeof st->detail, "could not start (%s): %s",
                          gpx__stage_name(ex.start_stage), strerror(ex.start_errno));
            return;
        }
        if (ex.present) {
            st->state = GP_TASK_EXITED;
            st->exit_code = ex.exit_code;
            st->term_signal = ex.term_signal;
            gpx__wd_detail(dir, st->detail, sizeof st->detail);
            return;
        }
        if (pass == 0 && gpx__proc_alive(h.spid, h.sstart)) {
            st->state = GP_TASK_RUNNING;
            st->gpu_mem_used = slice_memory(lx, &h);
            gpx__wd_enforce(lx, dir, h.key);
            gpx__wd_throttle(lx, dir, h.key);
            return;
        }
    }
    if (!have) {
        gpx__exec_fmt(st->detail, sizeof st->detail, "no state for this task in %s", lx->state_dir);
    } else {
        gpx__exec_fmt(st->detail, sizeof st->detail,
                      "the task's supervisor (pid %d) is gone and left no exit status",
                      (int)h.spid);
    }
}

static int local_poll(void *state, gp_task_status *tasks, size_t n) {
    settle_abandoned(state);
    gpx__wd_scan(state);
    for (size_t i = 0; i < n; i++)
        poll_one(state, &tasks[i]);
    return 0;
}

static int local_reap(void *state, const char *handle) {
    gpx__local *lx = state;
    handle_parts h;
    if (parse_handle(handle, &h) < 0)
        return GP_EINVAL;
    char dir[PATH_MAX], recorded[GP_HANDLE_MAX];
    task_dir(lx, h.key, dir, sizeof dir);
    if (read_handle(dir, recorded) == 0 && strcmp(recorded, handle) != 0)
        return 0; /* a stale handle: the directory belongs to a later start */
    gpx__exit ex;
    pid_t tpid;
    uint64_t tstart;
    if ((gpx__exit_read(dir, &ex) == 0 && !ex.present && gpx__proc_alive(h.spid, h.sstart)) ||
        (gpx__task_read(dir, &tpid, &tstart) == 0 && gpx__proc_alive(tpid, tstart)))
        return GP_ESTATE;
    /* Its cgroups, and the books and the limits of an ended slice, go with it. */
    remove_attempt(lx, h.key, dir);
    return 0;
}

/* ======================================================================== */
/* Abandoned launches                                                        */
/* ======================================================================== */

/* Ends for good what an abandoned launch of key began: 1 once nothing of it
 * is left, 0 while a process of it lives still (a supervisor held back
 * before its handle, or a task killed here that has not yet ended). */
static int end_abandoned(gpx__local *lx, const char *key) {
    char dir[PATH_MAX], handle[GP_HANDLE_MAX];
    task_dir(lx, key, dir, sizeof dir);
    if (access(dir, F_OK) != 0)
        return 1;
    if (read_handle(dir, handle) == 0) {
        gpx__task_signal(lx, key, SIGKILL);
        return local_reap(lx, handle) == 0;
    }
    if (start_held(dir))
        return 0;
    remove_attempt(lx, key, dir);
    return 1;
}

/* Keeps key among the abandoned launches still to end. */
static int keep_abandoned(gpx__local *lx, const char *key) {
    for (size_t i = 0; i < lx->nabandoned; i++)
        if (strcmp(lx->abandoned[i], key) == 0)
            return 0;
    if (GP_ARRAY_ROOM(lx->abandoned, lx->nabandoned, lx->capabandoned, 4) < 0)
        return GP_ENOMEM;
    gpx__exec_fmt(lx->abandoned[lx->nabandoned++], GPX__KEY_MAX, "%s", key);
    return 0;
}

/* Ends the abandoned launches it can, at each poll and inventory. */
static void settle_abandoned(gpx__local *lx) {
    for (size_t i = lx->nabandoned; i-- > 0;)
        if (end_abandoned(lx, lx->abandoned[i]))
            memmove(lx->abandoned[i], lx->abandoned[--lx->nabandoned], GPX__KEY_MAX);
}

/* At open: the launches the state directory marks abandoned, by a daemon
 * that stopped before it could end them. */
static void find_abandoned(gpx__local *lx) {
    DIR *d = opendir(lx->state_dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        uint64_t w;
        int32_t t, a;
        char file[PATH_MAX];
        gpx__exec_fmt(file, sizeof file, "%s/%s/" GPX__ABANDONED_FILE, lx->state_dir, e->d_name);
        if (parse_key(e->d_name, &w, &t, &a) == 0 && access(file, F_OK) == 0)
            keep_abandoned(lx, e->d_name);
    }
    if (d != NULL)
        closedir(d);
}

/*
 * GP_EXEC_CTL_ABANDON: a launch that returned GP_EAGAIN will not be tried
 * again. Its start may live still: a supervisor whose daemon was killed
 * after the fork, held back before its handle. The mark written here stops
 * that supervisor before it starts the task (proc.c); one already past it
 * has written its handle, by which its task is killed. What cannot be ended
 * now (a supervisor still before its mark) is ended at a later poll or
 * inventory, after a restart too (the mark says so): 0 if all is ended,
 * GP_EAGAIN if some is left to that.
 */
static int abandon(gpx__local *lx, const gp_exec_abandon *ab) {
    char key[GPX__KEY_MAX], file[PATH_MAX];
    make_key(key, sizeof key, ab->workload, ab->task, ab->attempt);
    gpx__exec_fmt(file, sizeof file, "%s/%s/" GPX__ABANDONED_FILE, lx->state_dir, key);
    int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 && errno == ENOENT)
        return 0; /* no directory: nothing began */
    if (fd >= 0)
        close(fd);
    if (end_abandoned(lx, key))
        return 0;
    int rc = keep_abandoned(lx, key);
    return rc < 0 ? rc : GP_EAGAIN;
}

/* A session with a task: its supervisor serves it (session.c). */
static int local_session(void *state, const char *handle, const gp_session_req *req, int *fd,
                         char *err, size_t errlen) {
    const gpx__local *lx = state;
    handle_parts h;
    char dir[PATH_MAX], recorded[GP_HANDLE_MAX];
    if (parse_handle(handle, &h) < 0) {
        gp_errf(err, errlen, "handle: not a handle of the local executor");
        return GP_EINVAL;
    }
    task_dir(lx, h.key, dir, sizeof dir);
    if (read_handle(dir, recorded) < 0 || strcmp(recorded, handle) != 0 ||
        !gpx__proc_alive(h.spid, h.sstart)) {
        gp_errf(err, errlen, "the task has ended");
        return GP_ESTATE;
    }
    return gpx__sess_open(dir, req, fd, err, errlen);
}

/* ======================================================================== */
/* Describe and list                                                         */
/* ======================================================================== */

static int local_describe(void *state, gp_executor_info *d) {
    gpx__local *lx = state;
    d->emulated = lx->emulated;
    if (lx->emulated && strcmp(lx->inventory, lx->emulate) == 0) {
        gpx__exec_fmt(d->gpus, sizeof d->gpus,
                      "EMULATED: no GPU was found, so %d GPUs are declared in %.200s; no real "
                      "GPU is used",
                      lx->emu.ngpus, lx->inventory);
    } else if (lx->emulated) {
        gpx__exec_fmt(d->gpus, sizeof d->gpus,
                      "EMULATED: %d GPUs declared in %.200s; no real GPU is used", lx->emu.ngpus,
                      lx->inventory);
    } else if (lx->nvml.lib != NULL) {
        gpx__exec_fmt(d->gpus, sizeof d->gpus, "%s", lx->nvml.note);
    } else {
        gpx__exec_fmt(d->gpus, sizeof d->gpus, "no GPUs: %.200s", lx->nvml.note);
    }
    gpx__exec_fmt(d->limits, sizeof d->limits, "%s", lx->cg.note);
    gpx__gpu_dev devs[GP_MAX_GPUS_PER_NODE];
    int n = gpx__gpu_devs(lx, devs), unknown = 0;
    for (int i = 0; i < n; i++)
        unknown += devs[i].major < 0;
    if (lx->dev.mode != GPX__DEV_NONE && unknown > 0) {
        gpx__exec_fmt(d->devices, sizeof d->devices,
                      "%.150s; %d of %d GPUs have no device file known (%s) and are not filtered",
                      lx->dev.note, unknown, n,
                      lx->emulated ? "emulated, no dev= in the inventory" : "no NVML minor number");
    } else {
        gpx__exec_fmt(d->devices, sizeof d->devices, "%s", lx->dev.note);
    }
    char wd[96];
    gpx__wd_describe(lx, wd, sizeof wd);
    gpx__exec_fmt(d->gpu_memory, sizeof d->gpu_memory, "%.150s; %s", lx->dev.dmem_note, wd);
    if (access(lx->interposer, R_OK) == 0) {
        gpx__exec_fmt(d->slices, sizeof d->slices, "fractional slices enforced by %.200s",
                      lx->interposer);
    } else {
        gpx__exec_fmt(d->slices, sizeof d->slices,
                      "fractional slices NOT enforced: interposer %.150s not found",
                      lx->interposer);
    }
    gpx__exec_fmt(d->state, sizeof d->state, "task state in %.200s", lx->state_dir);
    gpx__user_mode(lx, d->identity, sizeof d->identity);
    return 0;
}

static int local_tasks(void *state, char (*handles)[GP_HANDLE_MAX], size_t max, size_t *n) {
    const gpx__local *lx = state;
    *n = 0;
    DIR *d = opendir(lx->state_dir);
    if (d == NULL)
        return GP_EIO;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t w;
        int32_t t, a;
        char dir[PATH_MAX], handle[GP_HANDLE_MAX];
        if (parse_key(e->d_name, &w, &t, &a) < 0)
            continue;
        task_dir(lx, e->d_name, dir, sizeof dir);
        if (read_handle(dir, handle) == 0) {
            if (*n < max)
                gpx__exec_fmt(handles[*n], GP_HANDLE_MAX, "%s", handle);
            (*n)++;
        }
    }
    closedir(d);
    return 0;
}

/* GP_EXEC_CTL_GPU_USAGE: NVML's figures, or for emulated GPUs a sample
 * that says it knows nothing (an emulated GPU runs no kernels). */
static int gpu_usage(gpx__local *lx, gp_exec_gpu_usage *u) {
    u->n = 0;
    if (!lx->emulated)
        return gpx__nvml_usage(&lx->nvml, lx->node_name, u);
    for (int i = 0; i < lx->emu.ngpus && u->n < u->max; i++) {
        gp_gpu_usage *g = &u->gpus[u->n++];
        memset(g, 0, sizeof *g);
        gpx__exec_fmt(g->node, sizeof g->node, "%s", lx->emu.name);
        g->index = lx->emu.gpus[i].index;
        g->busy_permille = -1;
        g->mem_used = -1;
    }
    gpx__exec_fmt(u->note, sizeof u->note,
                  "EMULATED GPUs: no busy time or memory can be measured, so used is unknown");
    return 0;
}

/* The generic operations of executor.h this executor answers. */
static int local_control(void *state, int op, void *arg) {
    if (arg == NULL)
        return GP_EINVAL;
    switch (op) {
    case GP_EXEC_CTL_GPU_USAGE:
        return gpu_usage(state, arg);
    case GP_EXEC_CTL_PAUSE:
    case GP_EXEC_CTL_RESUME:
    case GP_EXEC_CTL_PAUSE_RECOVER: {
        gp_exec_pause *p = arg;
        handle_parts h;
        char dir[PATH_MAX];
        if (p->handle == NULL || parse_handle(p->handle, &h) < 0)
            return GP_EINVAL;
        task_dir(state, h.key, dir, sizeof dir);
        return gpx__pause_ctl(state, op, dir, p);
    }
    case GP_EXEC_CTL_PAUSE_SUPPORT:
        return gpx__pause_ctl(state, op, NULL, arg);
    case GP_EXEC_CTL_NODE_USAGE:
        return gpx__host_usage(state, arg);
    case GP_EXEC_CTL_ABANDON:
        return abandon(state, arg);
    default:
        return GP_ENOTSUP;
    }
}

const gp_executor_methods gpx__local_methods = GP_EXECUTOR_TABLE("local", local);
