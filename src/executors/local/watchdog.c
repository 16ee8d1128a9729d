/*
 * watchdog.c — the local executor's GPU memory watchdog: the layer of slice
 * enforcement that does not depend on the interposer.
 *
 * The interposer caps a slice from inside the workload, so a process it does
 * not see (its own copy of the driver, a static binary, a way around the
 * preload) is not capped. The watchdog looks from outside: on each poll of
 * the daemon it asks NVML which processes hold memory on each GPU and how
 * much (nvmlDeviceGetComputeRunningProcesses_v3), maps each pid to its task
 * by the pid's cgroup (/proc/PID/cgroup names the instance and the task key,
 * as cgroup.c made them), sums per task and GPU, and judges each task
 * against what it was given, as recorded at launch in <dir>/gpus:
 *
 *   signal=15              the task's checkpoint signal
 *   gpu=0 21474836480      one line per GPU it was given: NVML index, bytes
 *
 * A task over its slice by more than the tolerance (the larger of 2 % of the
 * slice and 64 MiB: NVML counts memory in the driver's allocation granules,
 * which the interposer's books round differently; plus GPX__WD_CONTEXT per
 * process, for the CUDA context NVML counts and the interposer books only as
 * an estimate, for GPX__WD_CONTEXT_PROCS processes at most: 100 processes
 * once held 68 GiB in a 20 GiB slice), or holding any memory on a GPU it
 * was not given, is
 * stopped: the reason is
 * written to <dir>/watchdog ("since=<ms>\nwhy=<sentence>\n", atomically), the
 * checkpoint signal is sent at once, and SIGKILL once GPX__WD_GRACE_MS have
 * passed. poll() then reports the task's end with that sentence as detail,
 * which makes the daemon fail the workload with it as the reason.
 *
 * A task with a compute share is also held to it from outside, in duty
 * cycles (gpx__wd_throttle, below).
 *
 * Everything the watchdog knows is on disk, so a restarted daemon carries on
 * where the last one stopped. It does not see memory used between two
 * polls, processes outside a cgroup of this instance, or GPUs NVML does not
 * report per-process memory for (docs/executors.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_clock.h"
#include "common/gp_error.h"
#include "executors/local/local.h"
#include "executors/registry.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)

/* ======================================================================== */
/* Judgement (pure: tested on its own)                                      */
/* ======================================================================== */

int64_t gpx__wd_tolerance(int64_t slice, int procs) {
    int64_t two_percent = slice / 50;
    int counted = procs < 0 ? 0 : procs > GPX__WD_CONTEXT_PROCS ? GPX__WD_CONTEXT_PROCS : procs;
    return (two_percent > 64 * MIB ? two_percent : 64 * MIB) + (int64_t)counted * GPX__WD_CONTEXT;
}

/* "30.0 GiB", "512 MiB", and with whole 1 a slice's "20 GiB": what a person
 * reads in a reason. */
static void human(int64_t bytes, int whole, char *out, size_t len) {
    if (bytes >= GIB && bytes % GIB == 0 && whole)
        gpx__exec_fmt(out, len, "%lld GiB", (long long)(bytes / GIB));
    else if (bytes >= GIB)
        gpx__exec_fmt(out, len, "%.1f GiB", (double)bytes / (double)GIB);
    else
        gpx__exec_fmt(out, len, "%lld MiB", (long long)((bytes + MIB - 1) / MIB));
}

int gpx__wd_judge(const gpx__wd_limits *lim, const gpx__wd_use *use, char *why, size_t len) {
    char u[32], s[32];
    for (int g = 0; g < GP_MAX_GPUS_PER_NODE; g++) {
        if (use->bytes[g] <= 0)
            continue;
        human(use->bytes[g], 0, u, sizeof u);
        if (lim->mem[g] <= 0) {
            gpx__exec_fmt(why, len, "stopped by the watchdog: %s on GPU %d, which it was not given",
                          u, g);
            return 1;
        }
        if (use->bytes[g] > lim->mem[g] + gpx__wd_tolerance(lim->mem[g], use->procs[g])) {
            human(lim->mem[g], 1, s, sizeof s);
            gpx__exec_fmt(why, len, "stopped by the watchdog: %s on GPU %d, its slice is %s", u, g,
                          s);
            return 1;
        }
    }
    return 0;
}

/* A task key as make_key (local.c) writes it: "w<id>.t<task>.a<attempt>". */
static int key_like(const char *c) {
    return c[0] == 'w' && strspn(c, "0123456789wta.") == strlen(c);
}

int gpx__wd_task_of(const char *cgroups, const char *instance, char *key, size_t len) {
    char line[PATH_MAX];
    for (const char *p = cgroups; *p != '\0';) {
        size_t n = strcspn(p, "\n");
        if (n < sizeof line) {
            memcpy(line, p, n);
            line[n] = '\0';
            /* "hierarchy:controllers:/path": the path is after the second ':'. */
            char *path = strchr(line, ':');
            path = path != NULL ? strchr(path + 1, ':') : NULL;
            char *save = NULL, *prev = NULL;
            for (char *c = path != NULL ? strtok_r(path + 1, "/", &save) : NULL; c != NULL;
                 prev = c, c = strtok_r(NULL, "/", &save)) {
                if (prev != NULL && strcmp(prev, instance) == 0 && key_like(c) && strlen(c) < len) {
                    memcpy(key, c, strlen(c) + 1);
                    return 1;
                }
            }
        }
        p += n;
        p += *p == '\n';
    }
    return 0;
}

/* ======================================================================== */
/* What a task was given, recorded at launch                                */
/* ======================================================================== */

/* Writes text to <dir>/<name> atomically; 0 or -1. */
static int write_file(const char *dir, const char *name, const char *text) {
    char path[PATH_MAX], tmp[PATH_MAX];
    gpx__exec_fmt(path, sizeof path, "%s/%s", dir, name);
    gpx__exec_fmt(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Writes <dir>/gpus: the checkpoint signal, the compute share (0: none) and
 * one line per slice of b (NULL: none) on a GPU of node. */
static int write_gpus(const char *dir, int sig, int share, const gp_task_binding *b,
                      const gp_node_spec *node) {
    char text[64 + GP_MAX_GPUS_PER_NODE * 48];
    size_t l = (size_t)snprintf(text, sizeof text, "signal=%d\n", sig > 0 ? sig : SIGTERM);
    if (share > 0 && share < 100)
        l += (size_t)snprintf(text + l, sizeof text - l, "share=%d\n", share);
    for (int i = 0; b != NULL && node != NULL && i < b->nslices; i++) {
        const gp_slice *s = &b->slices[i];
        if (s->gpu < 0 || s->gpu >= node->ngpus)
            continue;
        const gp_gpu_spec *g = &node->gpus[s->gpu];
        int64_t mem = s->mem > 0 ? s->mem : g->mem_bytes;
        l += (size_t)snprintf(text + l, sizeof text - l, "gpu=%d %lld\n", (int)g->index,
                              (long long)mem);
    }
    return write_file(dir, "gpus", text);
}

int gpx__wd_record(const char *dir, const gp_task_launch *t) {
    return write_gpus(dir, t->checkpoint_signal, (int)t->compute_share, t->binding, t->node);
}

int gpx__wd_rebind(const char *dir, const gp_task_binding *b, const gp_node_spec *node) {
    gpx__wd_limits lim;
    int rc = gpx__wd_limits_read(dir, &lim);
    if (rc < 0)
        return rc == GP_ENOENT ? 0 : rc;
    return write_gpus(dir, lim.sig, lim.share, b, node) == 0 ? 0 : GP_EIO;
}

int gpx__wd_limits_read(const char *dir, gpx__wd_limits *lim) {
    char path[PATH_MAX], buf[64 + GP_MAX_GPUS_PER_NODE * 48];
    memset(lim, 0, sizeof *lim);
    gpx__exec_fmt(path, sizeof path, "%s/gpus", dir);
    if (gpx__read_small(path, buf, sizeof buf) <= 0)
        return GP_ENOENT;
    for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        int gpu;
        long long mem;
        if (sscanf(line, "signal=%d", &lim->sig) == 1)
            continue;
        if (sscanf(line, "share=%d", &lim->share) == 1) {
            if (lim->share <= 0 || lim->share > 100)
                return GP_ECORRUPT;
            continue;
        }
        if (sscanf(line, "gpu=%d %lld", &gpu, &mem) != 2 || gpu < 0 ||
            gpu >= GP_MAX_GPUS_PER_NODE || mem <= 0)
            return GP_ECORRUPT;
        lim->mem[gpu] += mem;
    }
    if (lim->sig <= 0 || lim->sig >= NSIG)
        return GP_ECORRUPT;
    return 0;
}

/* ======================================================================== */
/* The decision, on disk                                                     */
/* ======================================================================== */

/* Milliseconds since boot: comparable across restarts of the daemon. */
static int64_t now_ms(void) {
    return gp_clock_ms(CLOCK_BOOTTIME);
}

/* Reads <dir>/watchdog: 1 with *since and why filled, or 0 if there is none. */
static int read_decision(const char *dir, int64_t *since, char *why, size_t len) {
    char path[PATH_MAX], buf[320];
    gpx__exec_fmt(path, sizeof path, "%s/watchdog", dir);
    if (gpx__read_small(path, buf, sizeof buf) <= 0)
        return 0;
    long long s = 0;
    char *w = strstr(buf, "\nwhy=");
    if (sscanf(buf, "since=%lld", &s) != 1 || w == NULL)
        return 0;
    w += 5;
    w[strcspn(w, "\n")] = '\0';
    *since = s;
    gpx__exec_fmt(why, len, "%s", w);
    return 1;
}

int gpx__wd_detail(const char *dir, char *detail, size_t len) {
    int64_t since;
    return read_decision(dir, &since, detail, len);
}

void gpx__wd_enforce(const gpx__local *lx, const char *dir, const char *key) {
    int64_t since;
    char why[160];
    if (read_decision(dir, &since, why, sizeof why) && now_ms() - since >= GPX__WD_GRACE_MS)
        gpx__task_signal(lx, key, SIGKILL);
}

/* Judges one task's use and, if it is over, records why and sends the
 * checkpoint signal (once: a task already judged is left to enforce()). */
static void judge_task(const gpx__local *lx, const char *key, const gpx__wd_use *use) {
    char dir[PATH_MAX], path[PATH_MAX], why[160], text[200];
    gpx__exec_fmt(dir, sizeof dir, "%s/%s", lx->state_dir, key);
    gpx__exec_fmt(path, sizeof path, "%s/exit", dir);
    int64_t since;
    gpx__wd_limits lim;
    if (access(path, F_OK) == 0 || read_decision(dir, &since, why, sizeof why) ||
        gpx__wd_limits_read(dir, &lim) < 0 || !gpx__wd_judge(&lim, use, why, sizeof why))
        return;
    gpx__exec_fmt(text, sizeof text, "since=%lld\nwhy=%s\n", (long long)now_ms(), why);
    if (write_file(dir, "watchdog", text) == 0)
        gpx__task_signal(lx, key, lim.sig);
}

/* ======================================================================== */
/* The compute share's outer layer: duty cycles                              */
/* ======================================================================== */

/*
 * The interposer paces a slice's kernel launches to its compute share from
 * inside; launches that do not pass through it (a driver reached around the
 * wrappers) are not paced. So at each poll a task with a share has its
 * GPU time measured from outside (NVML's per-process utilisation of its
 * processes, found by their cgroup, over the time since its last poll) and
 * kept as a debt in <dir>/throttle ("debt_ms=", "at_ms=", "stopped="):
 *
 *   debt += busy time - share x elapsed time     (never below -GPX__TH_CREDIT_MS)
 *
 * A task in debt is frozen (its cgroup freezer, whose files are root's: no
 * process of its user can thaw it) until the debt is paid, which it is at
 * the share's rate while it uses nothing; then it is thawed. A task without
 * a freezer is stopped with SIGSTOP (to its process group and every process
 * of its cgroups) and continued with SIGCONT instead, which its user can
 * undo. Over time the task gets its share in duty cycles of a poll's
 * length. A task that is signalled for any other reason (eviction, delete)
 * is continued first and left alone from then on (gpx__wd_release), so that
 * it can handle the signal. A task being paused or resumed (its pause
 * journal exists) is continued by the pause (gpx__wd_unstop) and left alone
 * until the journal is gone: the driver's checkpoint calls are answered by a
 * thread inside it, and the freezer is the pause's meanwhile. The throttle
 * decides and acts holding the task's freezer lock (gpx__freezer_lock),
 * which the pause takes to journal and continue the task: so it never
 * freezes a task that a pause has begun on, nor thaws one it has frozen.
 */

typedef struct throttle_state {
    int64_t debt_ms; /* GPU time used beyond the share, in milliseconds of one GPU */
    int64_t at_ms;   /* CLOCK_REALTIME, the last measurement */
    int stopped;
    int off;
} throttle_state;

static void throttle_read(const char *dir, throttle_state *t) {
    char path[PATH_MAX], buf[160];
    memset(t, 0, sizeof *t);
    gpx__exec_fmt(path, sizeof path, "%s/throttle", dir);
    long long debt, at;
    int stopped, off;
    if (gpx__read_small(path, buf, sizeof buf) > 0 &&
        sscanf(buf, "debt_ms=%lld\nat_ms=%lld\nstopped=%d\noff=%d", &debt, &at, &stopped, &off) ==
            4) {
        t->debt_ms = debt;
        t->at_ms = at;
        t->stopped = stopped != 0;
        t->off = off != 0;
    }
}

static void throttle_write(const char *dir, const throttle_state *t) {
    char text[160];
    gpx__exec_fmt(text, sizeof text, "debt_ms=%lld\nat_ms=%lld\nstopped=%d\noff=%d\n",
                  (long long)t->debt_ms, (long long)t->at_ms, t->stopped, t->off);
    write_file(dir, "throttle", text);
}

/* Stops (on 1) or continues (on 0) the task: with its cgroup freezer, whose
 * files are root's, so that none of the task's user's processes can undo it;
 * with SIGSTOP and SIGCONT where it has none. A freeze is asked, not
 * waited for: the loop runs this, and a task that is slow to freeze (a v1
 * freezer left FREEZING by a process in a vfork) must not hold it up; the
 * throttle asks again at each poll while it holds the task (writing FROZEN
 * again is what retries a v1 freezer). A thaw is waited for, so that a pause
 * that continues a held task finds it running. 0, or -1 if the freezer could
 * not be written or did not thaw. */
static int hold(const gpx__local *lx, const char *dir, const char *key, int on) {
    char file[PATH_MAX];
    gpx__task_cg cg;
    gpx__exec_fmt(file, sizeof file, "%s/cgroup", dir);
    if (gpx__cg_load(&cg, file) == 0 && gpx__freezable(&cg))
        return on ? gpx__freeze_ask(&cg, 1, NULL, 0) : gpx__freeze(&cg, 0, NULL, 0);
    gpx__task_signal(lx, key, on ? SIGSTOP : SIGCONT);
    return 0;
}

/* Writes t with the task running, and continues it if the throttle had
 * stopped it. The caller holds the task's freezer lock. */
static void unstop(const gpx__local *lx, const char *dir, const char *key, throttle_state *t) {
    int was = t->stopped;
    t->stopped = 0;
    throttle_write(dir, t);
    if (was)
        hold(lx, dir, key, 0);
}

/* Percent of one GPU that task key's processes used on NVML device dev since
 * since_ms (summed over its processes, each averaged over its samples), or
 * -1 when NVML cannot say. */
static int task_busy(const gpx__local *lx, nvmlDevice_t dev, const char *key, int64_t since_ms) {
    const gpx__nvml *nv = &lx->nvml;
    unsigned count = 0;
    nvmlReturn_t r =
        nv->nvmlDeviceGetProcessUtilization(dev, NULL, &count, (unsigned long long)since_ms * 1000);
    if (r == NVML_ERROR_NOT_FOUND || (r == NVML_SUCCESS && count == 0))
        return 0; /* no samples: nothing ran */
    if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE)
        return -1;
    count += 16;
    nvmlProcessUtilizationSample_t *s = calloc(count, sizeof *s);
    if (s == NULL || nv->nvmlDeviceGetProcessUtilization(
                         dev, s, &count, (unsigned long long)since_ms * 1000) != NVML_SUCCESS) {
        free(s);
        return -1;
    }
    int busy = 0;
    for (unsigned i = 0; i < count; i++) {
        unsigned pid = s[i].pid, sum = 0, k = 0;
        int seen = 0;
        for (unsigned j = 0; j < i && !seen; j++)
            seen = s[j].pid == pid;
        char path[64], cg[4096], owner[GPX__KEY_MAX];
        gpx__exec_fmt(path, sizeof path, "/proc/%u/cgroup", pid);
        if (seen || gpx__read_small(path, cg, sizeof cg) <= 0 ||
            !gpx__wd_task_of(cg, lx->instance, owner, sizeof owner) || strcmp(owner, key) != 0)
            continue;
        for (unsigned j = i; j < count; j++)
            if (s[j].pid == pid) {
                sum += s[j].smUtil <= 100 ? s[j].smUtil : 100;
                k++;
            }
        busy += (int)(sum / k);
    }
    free(s);
    return busy;
}

/* The throttle's decision and its act for a task with a share (lim), with
 * the task's freezer lock held. */
static void throttle(const gpx__local *lx, const char *dir, const char *key,
                     const gpx__wd_limits *lim) {
    const gpx__nvml *nv = &lx->nvml;
    throttle_state t;
    throttle_read(dir, &t);
    if (t.off || gpx__pause_journaled(dir))
        return; /* the freezer is the pause's: its driver calls need the task running */
    if (lx->emulated || nv->lib == NULL || nv->nvmlDeviceGetProcessUtilization == NULL) {
        if (t.stopped)
            unstop(lx, dir, key, &t); /* left stopped by a daemon that could measure */
        return;
    }
    int64_t now = gp_clock_ms(CLOCK_REALTIME);
    if (t.at_ms <= 0 || t.at_ms > now) {
        t.at_ms = now;
        throttle_write(dir, &t);
        return;
    }
    int busy = -1;
    for (int g = 0; g < GP_MAX_GPUS_PER_NODE; g++) {
        nvmlDevice_t dev;
        if (lim->mem[g] <= 0 ||
            nv->nvmlDeviceGetHandleByIndex_v2((unsigned)g, &dev) != NVML_SUCCESS)
            continue;
        int b = task_busy(lx, dev, key, t.at_ms);
        busy = b > busy ? b : busy; /* the share holds on each of its GPUs */
    }
    if (busy < 0)
        return; /* NVML cannot say: leave the task as it is */
    int64_t elapsed = now - t.at_ms;
    t.debt_ms += (busy - lim->share) * elapsed / 100;
    if (t.debt_ms < -GPX__TH_CREDIT_MS)
        t.debt_ms = -GPX__TH_CREDIT_MS;
    t.at_ms = now;
    int stop = t.debt_ms > 0;
    if ((stop != t.stopped || stop) && hold(lx, dir, key, stop) == 0)
        t.stopped = stop;
    throttle_write(dir, &t);
}

void gpx__wd_throttle(const gpx__local *lx, const char *dir, const char *key) {
    gpx__wd_limits lim;
    if (gpx__wd_limits_read(dir, &lim) < 0 || lim.share <= 0 || lim.share >= 100)
        return;
    int lock = gpx__freezer_lock(dir);
    if (lock >= 0)
        throttle(lx, dir, key, &lim);
    gpx__freezer_unlock(lock);
}

void gpx__wd_release(const gpx__local *lx, const char *dir, const char *key) {
    int lock = gpx__freezer_lock(dir);
    throttle_state t;
    throttle_read(dir, &t);
    if (lock >= 0 && t.at_ms != 0 && !t.off) {
        t.off = 1;
        unstop(lx, dir, key, &t);
    }
    gpx__freezer_unlock(lock);
}

void gpx__wd_unstop(const gpx__local *lx, const char *dir, const char *key) {
    throttle_state t;
    throttle_read(dir, &t);
    if (t.stopped)
        unstop(lx, dir, key, &t);
}

/* ======================================================================== */
/* The scan                                                                  */
/* ======================================================================== */

typedef struct task_use {
    char key[GPX__KEY_MAX];
    gpx__wd_use use;
} task_use;

/* The processes on one GPU (malloc'd, *n of them), or NULL. */
static nvmlProcessInfo_t *processes(const gpx__nvml *nv, nvmlDevice_t dev, unsigned *n) {
    unsigned room = 64;
    for (int tries = 0; tries < 4; tries++) {
        nvmlProcessInfo_t *p = calloc(room, sizeof *p);
        unsigned count = room;
        if (p == NULL)
            return NULL;
        nvmlReturn_t r = nv->nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, p);
        if (r == NVML_SUCCESS) {
            *n = count;
            return p;
        }
        free(p);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            return NULL;
        room = count > room ? count + 16 : room * 2; /* more may start meanwhile */
    }
    return NULL;
}

/* Adds bytes on gpu to the task that process pid belongs to, if any. A
 * task that finds no memory for its row is left out of this scan. */
static void add_use(const gpx__local *lx, task_use **tasks, size_t *n, unsigned pid, int gpu,
                    int64_t bytes) {
    char path[64], cg[4096], key[GPX__KEY_MAX];
    gpx__exec_fmt(path, sizeof path, "/proc/%u/cgroup", pid);
    if (gpx__read_small(path, cg, sizeof cg) <= 0 ||
        !gpx__wd_task_of(cg, lx->instance, key, sizeof key))
        return; /* gone, or not a task of this instance */
    size_t i = 0;
    while (i < *n && strcmp((*tasks)[i].key, key) != 0)
        i++;
    if (i == *n) {
        task_use *more = realloc(*tasks, (*n + 1) * sizeof **tasks);
        if (more == NULL)
            return;
        *tasks = more;
        memset(&more[i], 0, sizeof more[i]);
        gpx__exec_fmt(more[i].key, sizeof more[i].key, "%s", key);
        (*n)++;
    }
    (*tasks)[i].use.bytes[gpu] += bytes;
    (*tasks)[i].use.procs[gpu]++;
}

void gpx__wd_scan(const gpx__local *lx) {
    const gpx__nvml *nv = &lx->nvml;
    unsigned count = 0;
    if (lx->emulated || nv->lib == NULL || nv->nvmlDeviceGetComputeRunningProcesses_v3 == NULL ||
        nv->nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
        return;
    task_use *tasks = NULL;
    size_t ntasks = 0;
    for (unsigned g = 0; g < count && g < GP_MAX_GPUS_PER_NODE; g++) {
        nvmlDevice_t dev;
        unsigned n = 0;
        if (nv->nvmlDeviceGetHandleByIndex_v2(g, &dev) != NVML_SUCCESS)
            continue;
        nvmlProcessInfo_t *p = processes(nv, dev, &n);
        for (unsigned i = 0; p != NULL && i < n; i++)
            if (p[i].usedGpuMemory != GP_NVML_VALUE_NOT_AVAILABLE && p[i].usedGpuMemory > 0 &&
                p[i].usedGpuMemory <= (unsigned long long)INT64_MAX)
                add_use(lx, &tasks, &ntasks, p[i].pid, (int)g, (int64_t)p[i].usedGpuMemory);
        free(p);
    }
    for (size_t i = 0; i < ntasks; i++)
        judge_task(lx, tasks[i].key, &tasks[i].use);
    free(tasks);
}

void gpx__wd_describe(const gpx__local *lx, char *out, size_t len) {
    const gpx__nvml *nv = &lx->nvml;
    if (lx->emulated || nv->lib == NULL)
        gpx__exec_fmt(out, len, "watchdog off (no NVML)");
    else if (nv->nvmlDeviceGetComputeRunningProcesses_v3 == NULL)
        gpx__exec_fmt(out, len, "watchdog off (NVML gives no per-process memory)");
    else if (lx->cg.mode == GPX__CG_NONE)
        gpx__exec_fmt(out, len, "watchdog off (no cgroups to tell tasks apart)");
    else
        gpx__exec_fmt(out, len, "watchdog on (NVML per-process memory, at each poll)");
}
