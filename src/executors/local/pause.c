/*
 * pause.c — pausing a task without its help: its GPU state moved to host
 * memory through the CUDA driver's checkpoint API, the task frozen, its GPUs
 * free; and resuming it on the same node, on the same GPUs or on others of
 * the same model (the driver remaps them).
 *
 * The driver is reached through dlopen (no link-time dependency) on the
 * first use: libcuda.so.1 by default (cuda= in the configuration), at least
 * GP_CU_CKPT_MIN_DRIVER, with all six cuCheckpointProcess* entry points. The
 * API is cross-process: the daemon names a pid, and the driver's own thread
 * inside that process does the work, so the daemon needs no GPU context.
 *
 * A pause, for the task's processes (those in its cgroups):
 *   1. journal "pausing" in the task's state directory (<dir>/pause);
 *   2. lock every process that holds a CUDA context (with a timeout: one
 *      that does not answer in time undoes everything, GP_ETIMEDOUT);
 *   3. checkpoint each (its device memory to host memory; GPUs released);
 *   4. freeze the task's cgroups (v2 cgroup.freeze, v1 freezer.state), and
 *      look again: a process that started using CUDA since the listing
 *      would keep its GPU memory frozen, and undoes everything (GP_EIO);
 *   5. journal "paused".
 * A resume: journal "resuming" (with the GPUs to restore onto), thaw,
 * restore each process (the driver's restore runs on a thread of the
 * process, so the process must be thawed first; while it is still locked it
 * makes no CUDA call), unlock each, remove the journal. A restore that fails
 * checkpoints again the processes already restored and freezes the task: it
 * stays paused, with the reason, and the caller retries.
 *
 * Every step looks at what the driver and the freezer say before it acts
 * (a process already LOCKED is not locked again, one CHECKPOINTED is not
 * checkpointed again), so a pause or a resume can be run again from the
 * start at any point: after a crash of the daemon, GP_EXEC_CTL_PAUSE_RECOVER
 * reads the journal and runs the operation that was under way to its end
 * (a pause that can no longer finish is undone; one that cannot be undone
 * either, the driver gone, leaves the task thawed and lost).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_clock.h"
#include "common/gp_error.h"
#include "common/units.h"
#include "executors/contract.h"
#include "executors/registry.h"
#include "interpose/ledger.h"
#include "local.h"

/* Optional, as in local.c: only a program that links the ledger moves a
 * slice's books onto the GPUs a resume gives it. */
#pragma weak gp_ledger_file_gpus
#pragma weak gp_ledger_file_set_gpus

#define DEFAULT_LOCK_TIMEOUT_MS 10000
#define FREEZE_WAIT_MS          10000
#define MAX_PROCS               256

void (*gpx__pause_step_hook)(int step);

static void step(int n) {
    if (gpx__pause_step_hook != NULL)
        gpx__pause_step_hook(n);
}

/* Waits and phases are timed on the monotonic clock: setting the wall clock
 * neither cuts a wait short nor stretches it. */
static int64_t now_ms(void) {
    return gp_clock_ms(CLOCK_MONOTONIC);
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the driver ------------------------------------------------------------- */

/* Loads the driver once. 0, or -1 with c->note saying why it is unusable. */
static int cuda_load(gpx__local *lx) {
    gpx__cuda *c = &lx->cuda;
    if (c->tried)
        return c->lib != NULL ? 0 : -1;
    c->tried = 1;
    if (lx->cuda_lib[0] == '\0' || strcmp(lx->cuda_lib, "off") == 0) {
        gpx__exec_fmt(c->note, sizeof c->note, "the CUDA checkpoint API is off (cuda=off)");
        return -1;
    }
    void *h = dlopen(lx->cuda_lib, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        gpx__exec_fmt(c->note, sizeof c->note, "no CUDA driver (%.200s)",
                      why != NULL ? why : lx->cuda_lib);
        return -1;
    }
    *(void **)&c->cuInit = dlsym(h, "cuInit");
    *(void **)&c->cuDriverGetVersion = dlsym(h, "cuDriverGetVersion");
    const char *missing = c->cuInit == NULL               ? "cuInit"
                          : c->cuDriverGetVersion == NULL ? "cuDriverGetVersion"
                                                          : NULL;
#define GPX__CUDA_SYM(sym, params)                                                                 \
    *(void **)&c->sym = dlsym(h, #sym);                                                            \
    if (c->sym == NULL && missing == NULL)                                                         \
        missing = #sym;
    GP_CU_CKPT_ENTRIES(GPX__CUDA_SYM)
#undef GPX__CUDA_SYM
    int rc = -1;
    if (missing == NULL && c->cuDriverGetVersion(&c->version) != GP_CU_SUCCESS)
        c->version = 0;
    if (missing != NULL)
        gpx__exec_fmt(c->note, sizeof c->note,
                      "the CUDA driver %.100s is too old to pause tasks: it lacks %s (CUDA 12.8, "
                      "driver r570, is the first with the checkpoint API)",
                      lx->cuda_lib, missing);
    else if (c->version < GP_CU_CKPT_MIN_DRIVER)
        gpx__exec_fmt(c->note, sizeof c->note,
                      "the CUDA driver %.100s (API version %d) is too old to pause tasks: the "
                      "checkpoint API needs %d",
                      lx->cuda_lib, c->version, GP_CU_CKPT_MIN_DRIVER);
    else if (c->cuInit(0) != GP_CU_SUCCESS) /* the driver's restore wants it */
        gpx__exec_fmt(c->note, sizeof c->note, "the CUDA driver %.100s: cuInit failed",
                      lx->cuda_lib);
    else {
        gpx__exec_fmt(c->note, sizeof c->note, "CUDA checkpoint API of %.100s (version %d)",
                      lx->cuda_lib, c->version);
        rc = 0;
    }
    if (rc < 0)
        dlclose(h);
    else
        c->lib = h;
    return rc;
}

void gpx__cuda_close(gpx__cuda *c) {
    if (c->lib != NULL)
        dlclose(c->lib);
    memset(c, 0, sizeof *c);
}

/* ---- the freezer -------------------------------------------------------------- */

static int has_file(const char *dir, const char *name) {
    char path[PATH_MAX];
    gpx__exec_fmt(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

int gpx__freezable(const gpx__task_cg *tc) {
    for (int i = 0; i < tc->ndirs; i++)
        if (has_file(tc->dirs[i], "cgroup.freeze") || has_file(tc->dirs[i], "freezer.state"))
            return 1;
    return 0;
}

/* 1 when dir's freezer says the state wanted is reached. */
static int settled(const char *dir, int on) {
    char path[PATH_MAX], buf[512];
    if (has_file(dir, "cgroup.freeze")) {
        gpx__exec_fmt(path, sizeof path, "%s/cgroup.events", dir);
        if (gpx__read_small(path, buf, sizeof buf) < 0)
            return 1;
        char *f = strstr(buf, "frozen ");
        return f == NULL || (f[7] == '1') == on;
    }
    gpx__exec_fmt(path, sizeof path, "%s/freezer.state", dir);
    if (gpx__read_small(path, buf, sizeof buf) < 0)
        return 1;
    return on ? strncmp(buf, "FROZEN", 6) == 0 : strncmp(buf, "THAWED", 6) == 0;
}

int gpx__freezer_lock(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

void gpx__freezer_unlock(int fd) {
    if (fd >= 0)
        close(fd); /* which releases the lock */
}

int gpx__freeze_ask(const gpx__task_cg *tc, int on, char *why, size_t len) {
    int any = 0;
    for (int i = 0; i < tc->ndirs; i++) {
        const char *d = tc->dirs[i];
        int rc = 1;
        if (has_file(d, "cgroup.freeze"))
            rc = gpx__cg_write(d, "cgroup.freeze", on ? "1" : "0");
        else if (has_file(d, "freezer.state"))
            rc = gpx__cg_write(d, "freezer.state", on ? "FROZEN" : "THAWED");
        if (rc < 0) {
            if (why != NULL)
                gpx__exec_fmt(why, len, "cannot %s %s: %s", on ? "freeze" : "thaw", d,
                              gp_strerror(rc));
            return -1;
        }
        any |= rc == 0;
    }
    if (!any) {
        if (why != NULL)
            gpx__exec_fmt(why, len, "the task has no cgroup freezer");
        return -1;
    }
    return 0;
}

int gpx__freeze(const gpx__task_cg *tc, int on, char *why, size_t len) {
    if (gpx__freeze_ask(tc, on, why, len) < 0)
        return -1;
    /* The kernel freezes asynchronously: wait until every freezer says so.
     * The v1 freezer may stay FREEZING when a task could not be frozen at
     * that moment (one forking, one in a vfork); writing FROZEN again retries. */
    for (int64_t until = now_ms() + FREEZE_WAIT_MS, round = 1;; round++) {
        int done = 1;
        for (int i = 0; i < tc->ndirs; i++) {
            if (settled(tc->dirs[i], on))
                continue;
            done = 0;
            if (round % 20 == 0 && !has_file(tc->dirs[i], "cgroup.freeze"))
                gpx__cg_write(tc->dirs[i], "freezer.state", on ? "FROZEN" : "THAWED");
        }
        if (done)
            return 0;
        if (now_ms() > until)
            break;
        nap_ms(5);
    }
    if (why != NULL)
        gpx__exec_fmt(why, len, "the task did not %s within %d ms", on ? "freeze" : "thaw",
                      FREEZE_WAIT_MS);
    return -1;
}

/* ---- the task's processes ------------------------------------------------------ */

/* The pids of the task's cgroups (cgroup.procs), without repeats: how many
 * (max at most), with *more set to 1 if there are others. */
static int task_pids(const gpx__task_cg *tc, pid_t *pids, int max, int *more) {
    int n = 0;
    *more = 0;
    for (int i = 0; i < tc->ndirs && !*more; i++) {
        char path[PATH_MAX];
        gpx__exec_fmt(path, sizeof path, "%s/cgroup.procs", tc->dirs[i]);
        FILE *f = fopen(path, "re");
        long v;
        while (f != NULL && !*more && fscanf(f, "%ld", &v) == 1) {
            int seen = 0;
            for (int k = 0; k < n && !seen; k++)
                seen = pids[k] == (pid_t)v;
            if (!seen && n == max)
                *more = 1;
            else if (!seen)
                pids[n++] = (pid_t)v;
        }
        if (f != NULL)
            fclose(f);
    }
    return n;
}

/* The task's processes that hold a CUDA context, each in the state the
 * driver said and then as the moves below change it; and what the moves need
 * beyond a process. */
typedef struct cuda_procs {
    int n;
    pid_t pids[MAX_PROCS];
    gp_cu_process_state st[MAX_PROCS];
    gp_cu_lock_args lock;             /* a lock's arguments: its timeout */
    gp_cu_restore_args *restore_args; /* a restore's GPU pairs; NULL: the same GPUs */
} cuda_procs;

/* Finds the task's processes that hold a CUDA context (the driver knows them),
 * with their states; ps's lock and restore arguments are zero. 0, or -1 if
 * the task has more than MAX_PROCS processes (ps has those of the first). */
static int find_cuda_procs(gpx__local *lx, const gpx__task_cg *tc, cuda_procs *ps) {
    memset(ps, 0, sizeof *ps);
    if (lx->cuda.lib == NULL)
        return 0;
    pid_t all[MAX_PROCS];
    int more, n = task_pids(tc, all, MAX_PROCS, &more);
    for (int i = 0; i < n; i++) {
        gp_cu_process_state st;
        if (lx->cuda.cuCheckpointProcessGetState(all[i], &st) == GP_CU_SUCCESS) {
            ps->pids[ps->n] = all[i];
            ps->st[ps->n++] = st;
        }
    }
    return more ? -1 : 0;
}

/* ---- the driver's moves ---------------------------------------------------------- */

/* The four moves of a process through the driver's checkpoint states: a pause
 * locks and checkpoints, a resume restores and unlocks. */
typedef enum { LOCK, CHECKPOINT, RESTORE, UNLOCK } cuda_move;

static const struct {
    gp_cu_process_state from, to;
    const char *name; /* in messages: "the CUDA lock of process 12 failed" */
} moves[] = {
    [LOCK] = {GP_CU_PROCESS_RUNNING, GP_CU_PROCESS_LOCKED, "lock"},
    [CHECKPOINT] = {GP_CU_PROCESS_LOCKED, GP_CU_PROCESS_CHECKPOINTED, "checkpoint"},
    [RESTORE] = {GP_CU_PROCESS_CHECKPOINTED, GP_CU_PROCESS_LOCKED, "restore"},
    [UNLOCK] = {GP_CU_PROCESS_LOCKED, GP_CU_PROCESS_RUNNING, "unlock"},
};

/* Asks the driver to make move m of process pid: its CUresult. */
static int drive(gpx__local *lx, cuda_procs *ps, cuda_move m, pid_t pid) {
    gp_cu_ckpt_args ca;
    gp_cu_unlock_args ua;
    switch (m) {
    case LOCK:
        return lx->cuda.cuCheckpointProcessLock(pid, &ps->lock);
    case CHECKPOINT:
        memset(&ca, 0, sizeof ca);
        return lx->cuda.cuCheckpointProcessCheckpoint(pid, &ca);
    case RESTORE:
        return lx->cuda.cuCheckpointProcessRestore(pid, ps->restore_args);
    default: /* UNLOCK */
        memset(&ua, 0, sizeof ua);
        return lx->cuda.cuCheckpointProcessUnlock(pid, &ua);
    }
}

/* Says in detail why the driver refused move m of process pid (CUresult cr),
 * and returns the error that stands for it. */
static int refused(const cuda_procs *ps, cuda_move m, pid_t pid, int cr, char *detail, size_t len) {
    if (m == LOCK && cr == GP_CU_ERROR_NOT_READY) {
        gpx__exec_fmt(detail, len, "process %d did not answer the CUDA lock within %u ms", (int)pid,
                      ps->lock.timeout_ms);
        return GP_ETIMEDOUT;
    }
    if (m == RESTORE) {
        int oom = cr == GP_CU_ERROR_OUT_OF_MEMORY;
        gpx__exec_fmt(detail, len,
                      "still paused: the CUDA restore of process %d failed (%s, %d); it will "
                      "be tried again",
                      (int)pid, oom ? "too little free GPU memory" : "a driver error", cr);
        return oom ? GP_ENOSPC : GP_EIO;
    }
    gpx__exec_fmt(detail, len, "the CUDA %s of process %d failed (%d)", moves[m].name, (int)pid,
                  cr);
    return GP_EIO;
}

/*
 * Makes move m of every process of ps in its start state, in order. The
 * first that the driver refuses stops it: the error, with detail saying
 * which process and why. With detail NULL (an undoing, best effort) a
 * process that is refused stays as it is, the others move all the same, and
 * it returns 0.
 */
static int move_all(gpx__local *lx, cuda_procs *ps, cuda_move m, char *detail, size_t len) {
    for (int i = 0; i < ps->n; i++) {
        if (ps->st[i] != moves[m].from)
            continue;
        int cr = drive(lx, ps, m, ps->pids[i]);
        if (cr == GP_CU_SUCCESS)
            ps->st[i] = moves[m].to;
        else if (detail != NULL)
            return refused(ps, m, ps->pids[i], cr, detail, len);
    }
    return 0;
}

/* NVML's "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as the driver's 16 bytes. */
static int uuid_bytes(const char *text, char out[16]) {
    if (strncmp(text, "GPU-", 4) == 0)
        text += 4;
    int n = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '-')
            continue;
        int hi = gp_hex_digit((unsigned char)p[0]),
            lo = p[1] ? gp_hex_digit((unsigned char)p[1]) : -1;
        if (hi < 0 || lo < 0 || n == 16)
            return -1;
        out[n++] = (char)(hi << 4 | lo);
        p++;
    }
    return n == 16 ? 0 : -1;
}

/* ---- the journal -------------------------------------------------------------- */

enum { J_NONE = 0, J_PAUSING, J_PAUSED, J_RESUMING };

/* One slice of the task's binding moved by a resume: from the GPU at
 * position `from` of the node to the one at `to` (the node's order, as
 * gp_slice.gpu), with its memory (0: the whole GPU). */
typedef struct moved_slice {
    int from, to;
    int64_t mem;
} moved_slice;

typedef struct journal {
    int state;
    int ngpus;
    char from[GP_MAX_GPUS_PER_NODE][GP_NAME_MAX + 1];
    char to[GP_MAX_GPUS_PER_NODE][GP_NAME_MAX + 1];
    /* RESUMING: the task's binding before and after (the old binding comes
     * back if the resume fails); none where it was not recorded at launch. */
    int nslices;
    moved_slice slices[GP_MAX_GPUS_PER_NODE];
    /* RESUMING: the UUIDs of the slice ledger's GPU rows before the resume
     * (they are written again, moved or as they were, never derived from
     * what the ledger says by then). */
    int nrows;
    uint8_t rows[GP_LEDGER_MAX_DEVICES][16];
    int64_t gpu_bytes;
    char detail[256];
} journal;

static const char *const j_names[] = {"none", "pausing", "paused", "resuming"};

static void j_path(const char *dir, char *out, size_t len) {
    gpx__exec_fmt(out, len, "%s/pause", dir);
}

/* A file is replaced atomically: written as <path>.tmp (open_new), synced
 * and renamed over path (commit: 0, or GP_EIO with nothing changed). */
static FILE *open_new(const char *path, char *tmp, size_t len) {
    gpx__exec_fmt(tmp, len, "%s.tmp", path);
    return fopen(tmp, "we");
}

static int commit(FILE *f, const char *tmp, const char *path) {
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return GP_EIO;
    }
    return 0;
}

/* Writes the journal atomically. */
static int j_write(const char *dir, const journal *j) {
    char path[PATH_MAX], tmp[PATH_MAX];
    j_path(dir, path, sizeof path);
    FILE *f = open_new(path, tmp, sizeof tmp);
    if (f == NULL)
        return GP_EIO;
    fprintf(f, "state=%s\ngpu_bytes=%lld\n", j_names[j->state], (long long)j->gpu_bytes);
    for (int i = 0; i < j->ngpus; i++)
        fprintf(f, "gpu=%s %s\n", j->from[i], j->to[i]);
    for (int i = 0; i < j->nslices; i++)
        fprintf(f, "slice=%d %d %lld\n", j->slices[i].from, j->slices[i].to,
                (long long)j->slices[i].mem);
    for (int i = 0; i < j->nrows; i++) {
        fputs("row=", f);
        for (int k = 0; k < 16; k++)
            fprintf(f, "%02x", j->rows[i][k]);
        fputc('\n', f);
    }
    fprintf(f, "detail=%s\n", j->detail);
    return commit(f, tmp, path);
}

/* Reads the journal: 0 (state J_NONE if there is none) or GP_ECORRUPT. */
static int j_read(const char *dir, journal *j) {
    memset(j, 0, sizeof *j);
    char path[PATH_MAX], buf[4096];
    j_path(dir, path, sizeof path);
    ssize_t n = gpx__read_small(path, buf, sizeof buf);
    if (n == gp_syserr(ENOENT))
        return 0;
    if (n < 0)
        return GP_ECORRUPT;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "state=", 6) == 0) {
            for (int s = J_PAUSING; s <= J_RESUMING; s++)
                if (strcmp(line + 6, j_names[s]) == 0)
                    j->state = s;
        } else if (strncmp(line, "gpu_bytes=", 10) == 0) {
            j->gpu_bytes = strtoll(line + 10, NULL, 10);
        } else if (strncmp(line, "gpu=", 4) == 0 && j->ngpus < GP_MAX_GPUS_PER_NODE) {
            char *sp = strchr(line + 4, ' ');
            if (sp == NULL)
                return GP_ECORRUPT;
            *sp = '\0';
            gpx__exec_fmt(j->from[j->ngpus], sizeof j->from[0], "%s", line + 4);
            gpx__exec_fmt(j->to[j->ngpus], sizeof j->to[0], "%s", sp + 1);
            j->ngpus++;
        } else if (strncmp(line, "slice=", 6) == 0 && j->nslices < GP_MAX_GPUS_PER_NODE) {
            moved_slice *m = &j->slices[j->nslices++];
            long long mem;
            if (sscanf(line + 6, "%d %d %lld", &m->from, &m->to, &mem) != 3 || m->from < 0 ||
                m->to < 0 || m->from >= GP_MAX_GPUS_PER_NODE || m->to >= GP_MAX_GPUS_PER_NODE)
                return GP_ECORRUPT;
            m->mem = mem;
        } else if (strncmp(line, "row=", 4) == 0 && j->nrows < GP_LEDGER_MAX_DEVICES) {
            if (uuid_bytes(line + 4, (char *)j->rows[j->nrows++]) < 0)
                return GP_ECORRUPT;
        } else if (strncmp(line, "detail=", 7) == 0) {
            gpx__exec_fmt(j->detail, sizeof j->detail, "%s", line + 7);
        }
    }
    return j->state == J_NONE ? GP_ECORRUPT : 0;
}

int gpx__pause_journaled(const char *dir) {
    char path[PATH_MAX];
    j_path(dir, path, sizeof path);
    return access(path, F_OK) == 0;
}

static void j_remove(const char *dir) {
    char path[PATH_MAX];
    j_path(dir, path, sizeof path);
    unlink(path);
}

/* The task's key: the last component of its state directory. */
static const char *task_key(const char *dir) {
    return strrchr(dir, '/') != NULL ? strrchr(dir, '/') + 1 : dir;
}

/* ---- the task's binding ---------------------------------------------------------- */

/* Writes <dir>/binding: "gpu=<position> <bytes>" for each slice (atomically). */
static int bind_write(const char *dir, const gp_task_binding *b) {
    char path[PATH_MAX], tmp[PATH_MAX];
    gpx__exec_fmt(path, sizeof path, "%s/binding", dir);
    FILE *f = open_new(path, tmp, sizeof tmp);
    if (f == NULL)
        return GP_EIO;
    for (int i = 0; i < b->nslices; i++)
        fprintf(f, "gpu=%d %lld\n", (int)b->slices[i].gpu, (long long)b->slices[i].mem);
    return commit(f, tmp, path);
}

int gpx__bind_record(const char *dir, const gp_task_binding *b) {
    return b != NULL && b->nslices > 0 ? bind_write(dir, b) : 0;
}

/* Reads <dir>/binding into b (no file: no slice). 0 or GP_ECORRUPT. */
static int bind_read(const char *dir, gp_task_binding *b) {
    memset(b, 0, sizeof *b);
    char path[PATH_MAX], buf[2048];
    gpx__exec_fmt(path, sizeof path, "%s/binding", dir);
    if (gpx__read_small(path, buf, sizeof buf) < 0)
        return 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        int gpu;
        long long mem;
        if (b->nslices == GP_MAX_GPUS_PER_NODE || sscanf(line, "gpu=%d %lld", &gpu, &mem) != 2 ||
            gpu < 0 || gpu >= GP_MAX_GPUS_PER_NODE)
            return GP_ECORRUPT;
        gp_slice *sl = &b->slices[b->nslices++];
        sl->gpu = gpu;
        sl->mem = mem;
        sl->mig_slot = -1;
    }
    return 0;
}

/* The node's GPUs (the emulated inventory or NVML's), in the node's order;
 * node->ngpus 0 where they are not known. */
static void node_gpus(gpx__local *lx, gp_node_spec *node) {
    memset(node, 0, sizeof *node);
    char err[128];
    if (lx->emulated)
        *node = lx->emu;
    else if (gpx__nvml_gpus(&lx->nvml, node, err, sizeof err) < 0)
        node->ngpus = 0;
}

/* The position of the GPU whose UUID is uuid on node, or -1. */
static int gpu_at(const gp_node_spec *node, const char *uuid) {
    for (int i = 0; i < node->ngpus; i++)
        if (strcmp(node->gpus[i].uuid, uuid) == 0)
            return i;
    return -1;
}

/* The task's slice ledger: the file the executor made for it (as root),
 * else the one its workload made under the slice's name. */
static void ledger_file(const gpx__local *lx, const char *key, char *out, size_t len) {
    gpx__ledger_path(lx->instance, key, out, len);
    unsigned long long w;
    int t, a;
    if (access(out, F_OK) == 0 || sscanf(key, "w%llu.t%d.a%d", &w, &t, &a) != 3)
        return;
    char name[GP_LEDGER_NAME_MAX + 1];
    gpx__slice_name(lx->instance, (uint64_t)w, t, a, name, sizeof name);
    gpx__exec_fmt(out, len, "/dev/shm/gpupool-slice-%s", name);
}

/* Keys the slice ledger's rows by the journal's new GPUs (to_new 1: each
 * row of a GPU from[i] by to[i]) or by those it had (0), so that a process
 * the task starts after a remap books into the rows of those moved, under
 * their caps, instead of opening rows of its own. 0, or -1 with why set. */
static int move_books(const gpx__local *lx, const char *key, const journal *j, int to_new,
                      char *why, size_t len) {
    if (j->nrows == 0 || gp_ledger_file_set_gpus == NULL)
        return 0;
    uint8_t rows[GP_LEDGER_MAX_DEVICES][16];
    memcpy(rows, j->rows, sizeof rows);
    for (int r = 0; to_new && r < j->nrows; r++)
        for (int i = 0; i < j->ngpus; i++) {
            char from[16], to[16];
            if (uuid_bytes(j->from[i], from) == 0 && uuid_bytes(j->to[i], to) == 0 &&
                memcmp(j->rows[r], from, 16) == 0) {
                memcpy(rows[r], to, 16);
                break;
            }
        }
    char file[PATH_MAX], err[256] = "";
    ledger_file(lx, key, file, sizeof file);
    if (gp_ledger_file_set_gpus(file, (const uint8_t(*)[16])rows, j->nrows, err) < 0) {
        gpx__exec_fmt(why, len, "the slice's ledger could not be moved: %s", err);
        return -1;
    }
    return 0;
}

/* Puts everything the task's binding touched at launch on the GPUs of the
 * journal's new binding (to_new 1) or back on the old ones (0): its device
 * rules and dmem limits, the watchdog's record and <dir>/binding. Each
 * writes the whole state wanted, so it can be run again after a crash.
 * 0, or -1 with why set. */
static int rebind(gpx__local *lx, const char *dir, const gpx__task_cg *tc, const journal *j,
                  int to_new, char *why, size_t len) {
    if (j->nslices == 0)
        return 0;
    gp_task_binding b;
    memset(&b, 0, sizeof b);
    b.nslices = j->nslices;
    for (int i = 0; i < j->nslices; i++) {
        b.slices[i].gpu = to_new ? j->slices[i].to : j->slices[i].from;
        b.slices[i].mem = j->slices[i].mem;
        b.slices[i].mig_slot = -1;
    }
    gpx__gpu_dev devs[GP_MAX_GPUS_PER_NODE];
    int n = gpx__gpu_devs(lx, devs);
    gpx__dev_plan plan;
    gpx__dev_plan_make(&lx->dev, devs, n, &b, &plan);
    const char *key = task_key(dir);
    char detail[200];
    if (gpx__dev_rebind(&lx->dev, key, devs, n, &plan, tc, detail, sizeof detail) < 0) {
        gpx__exec_fmt(why, len, "the device rules could not be moved: %s", detail);
        return -1;
    }
    gp_node_spec *node = malloc(sizeof *node);
    int rc = node == NULL ? GP_ENOMEM : 0;
    if (rc == 0) {
        node_gpus(lx, node);
        rc = gpx__wd_rebind(dir, &b, node);
        free(node);
    }
    if (rc == 0)
        rc = bind_write(dir, &b);
    if (rc < 0) {
        gpx__exec_fmt(why, len, "the task's record of its GPUs could not be rewritten: %s",
                      gp_strerror(rc));
        return -1;
    }
    return move_books(lx, key, j, to_new, why, len);
}

/*
 * Fills the journal's GPUs and slices for a resume from p: each pair must
 * name GPUs of this node or be driver UUIDs; each slice of the recorded
 * binding on a GPU of from_uuid moves to the matching to_uuid. 0, or
 * GP_EINVAL / GP_ENOMEM with p->detail set.
 */
static int plan_resume(gpx__local *lx, const char *dir, const gp_exec_pause *in, journal *j,
                       char *detail, size_t len) {
    gp_node_spec *node = malloc(sizeof *node);
    if (node == NULL)
        return GP_ENOMEM;
    node_gpus(lx, node);
    int at_from[GP_MAX_GPUS_PER_NODE], at_to[GP_MAX_GPUS_PER_NODE], rc = 0;
    j->ngpus = in->ngpus;
    for (int i = 0; rc == 0 && i < in->ngpus; i++) {
        char b[16];
        at_from[i] = gpu_at(node, in->from_uuid[i]);
        at_to[i] = gpu_at(node, in->to_uuid[i]);
        /* An emulated GPU's UUID is no driver's: it names a GPU of the node. */
        if ((at_from[i] < 0 && uuid_bytes(in->from_uuid[i], b) < 0) ||
            (at_to[i] < 0 && uuid_bytes(in->to_uuid[i], b) < 0)) {
            gpx__exec_fmt(detail, len, "gpu %d: not a GPU UUID nor a GPU of this node", i);
            rc = GP_EINVAL;
        }
        gpx__exec_fmt(j->from[i], sizeof j->from[0], "%s", in->from_uuid[i]);
        gpx__exec_fmt(j->to[i], sizeof j->to[0], "%s", in->to_uuid[i]);
    }
    gp_task_binding was;
    if (rc == 0 && bind_read(dir, &was) < 0) {
        gpx__exec_fmt(detail, len, "the task's record of its GPUs (binding) is unreadable");
        rc = GP_ECORRUPT;
    }
    j->nslices = 0;
    for (int s = 0; rc == 0 && in->ngpus > 0 && s < was.nslices; s++) {
        moved_slice *m = &j->slices[j->nslices++];
        m->from = m->to = was.slices[s].gpu;
        m->mem = was.slices[s].mem;
        for (int i = 0; i < in->ngpus; i++) {
            if (at_from[i] != m->from)
                continue;
            if (at_to[i] < 0) {
                gpx__exec_fmt(detail, len, "gpu %d: %.80s is not a GPU of this node", i,
                              in->to_uuid[i]);
                rc = GP_EINVAL;
            }
            m->to = at_to[i];
        }
    }
    /* The ledger's rows as they are, while no process of the task runs: a
     * slice on whole GPUs, or with no interposer, has none. */
    j->nrows = 0;
    if (rc == 0 && in->ngpus > 0 && j->nslices > 0 && gp_ledger_file_gpus != NULL) {
        char file[PATH_MAX];
        const char *key = task_key(dir);
        ledger_file(lx, key, file, sizeof file);
        int n = gp_ledger_file_gpus(file, j->rows, GP_LEDGER_MAX_DEVICES, NULL);
        j->nrows = n > 0 ? n : 0;
    }
    free(node);
    return rc;
}

/* ---- pause and resume ------------------------------------------------------------ */

/* Device memory NVML sees the task's processes hold, or -1 if unknown (NVML
 * absent, or it cannot say how much one of them holds: MIG, containers). */
static int64_t gpu_bytes_of(gpx__local *lx, const pid_t *pids, int n) {
    if (lx->nvml.lib == NULL || lx->nvml.nvmlDeviceGetComputeRunningProcesses_v3 == NULL)
        return -1;
    unsigned int count = 0;
    if (lx->nvml.nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
        return -1;
    int64_t sum = 0;
    for (unsigned g = 0; g < count; g++) {
        nvmlDevice_t dev;
        nvmlProcessInfo_t info[64];
        unsigned int k = 64;
        if (lx->nvml.nvmlDeviceGetHandleByIndex_v2(g, &dev) != NVML_SUCCESS ||
            lx->nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, &k, info) != NVML_SUCCESS)
            return -1;
        for (unsigned i = 0; i < k; i++)
            for (int p = 0; p < n; p++) {
                if ((pid_t)info[i].pid != pids[p])
                    continue;
                if (info[i].usedGpuMemory == GP_NVML_VALUE_NOT_AVAILABLE)
                    return -1;
                sum += (int64_t)info[i].usedGpuMemory;
            }
    }
    return sum;
}

/*
 * Once the task is frozen: GP_EIO with detail set if a process the pause did
 * not checkpoint holds GPU memory or a CUDA context (it started using CUDA
 * after ps was listed, or appeared since: frozen, it would keep its GPU
 * memory), else 0. Those ps checkpointed are so by its hand; the others are
 * asked about through NVML, which answers from the driver's books without
 * the process, and through the checkpoint API only where NVML cannot tell
 * (whether the driver answers that for a frozen process is unproven).
 */
static int cuda_left_running(gpx__local *lx, const gpx__task_cg *tc, const cuda_procs *ps,
                             char *detail, size_t len) {
    if (lx->cuda.lib == NULL)
        return 0;
    pid_t now[MAX_PROCS], added[MAX_PROCS];
    int more, n = task_pids(tc, now, MAX_PROCS, &more), nadded = 0;
    if (more) {
        gpx__exec_fmt(detail, len,
                      "the task started more than %d processes during the pause, which is "
                      "undone: a pause cannot follow them",
                      MAX_PROCS);
        return GP_EIO;
    }
    for (int i = 0; i < n; i++) {
        int moved = 0;
        for (int k = 0; k < ps->n && !moved; k++)
            moved = ps->pids[k] == now[i] && ps->st[k] == GP_CU_PROCESS_CHECKPOINTED;
        if (!moved)
            added[nadded++] = now[i];
    }
    int64_t held = nadded > 0 ? gpu_bytes_of(lx, added, nadded) : 0;
    if (held > 0) {
        char b[32];
        gp_format_size(held, b, sizeof b);
        gpx__exec_fmt(detail, len,
                      "processes the pause did not checkpoint hold %s of GPU memory (they "
                      "started using CUDA during the pause), so it is undone: frozen, they "
                      "would have kept it",
                      b);
        return GP_EIO;
    }
    for (int i = 0; held < 0 && i < nadded; i++) {
        gp_cu_process_state st;
        if (lx->cuda.cuCheckpointProcessGetState(added[i], &st) == GP_CU_SUCCESS &&
            st != GP_CU_PROCESS_CHECKPOINTED) {
            gpx__exec_fmt(detail, len,
                          "process %d started using CUDA during the pause, which is undone: "
                          "frozen, it would have kept its GPU memory",
                          (int)added[i]);
            return GP_EIO;
        }
    }
    return 0;
}

/* Brings every CUDA process of the task back to RUNNING and thaws it: the
 * undoing of a pause that cannot finish. */
static void undo_pause(gpx__local *lx, const gpx__task_cg *tc) {
    gpx__freeze(tc, 0, NULL, 0);
    cuda_procs ps;
    find_cuda_procs(lx, tc, &ps);
    move_all(lx, &ps, RESTORE, NULL, 0);
    move_all(lx, &ps, UNLOCK, NULL, 0);
}

/* Loads the task's cgroups; GP_ENOENT if the task has ended. */
static int task_cg(const char *dir, gpx__task_cg *tc) {
    pid_t tpid;
    uint64_t tstart;
    char file[PATH_MAX];
    if (gpx__task_read(dir, &tpid, &tstart) != 0 || !gpx__proc_alive(tpid, tstart))
        return GP_ENOENT;
    gpx__exec_fmt(file, sizeof file, "%s/cgroup", dir);
    if (gpx__cg_load(tc, file) != 0)
        memset(tc, 0, sizeof *tc);
    return 0;
}

/* A pause or a resume of the task in dir, given its cgroups and journal. */
typedef int (*task_op)(gpx__local *lx, const char *dir, gpx__task_cg *tc, journal *j,
                       gp_exec_pause *p);

/* Runs op with the task's cgroups and journal; GP_ENOENT (detail set) if the
 * task has ended. */
static int on_task(gpx__local *lx, const char *dir, gp_exec_pause *p, task_op op) {
    gpx__task_cg tc;
    journal j;
    int rc = task_cg(dir, &tc);
    if (rc < 0) {
        gpx__exec_fmt(p->detail, sizeof p->detail, "the task has ended");
        return rc;
    }
    if ((rc = j_read(dir, &j)) < 0)
        return rc;
    return op(lx, dir, &tc, &j, p);
}

/* A pause under way before a restart that can be neither finished nor
 * undone (why: what it lacks): the task is thawed, where its freezer allows,
 * and the journal goes, but a process the pause locked or checkpointed stays
 * so, its GPU state out of reach: the task is lost (p->lost). GP_ENOTSUP. */
static int pause_lost(const char *dir, const gpx__task_cg *tc, gp_exec_pause *p, const char *why) {
    char thaw[192] = "";
    if (gpx__freezable(tc) && gpx__freeze(tc, 0, thaw, sizeof thaw) == 0)
        gpx__exec_fmt(thaw, sizeof thaw, "thawed");
    else if (thaw[0] == '\0')
        gpx__exec_fmt(thaw, sizeof thaw, "it has no cgroup freezer to thaw");
    j_remove(dir);
    p->lost = 1;
    gpx__exec_fmt(p->detail, sizeof p->detail,
                  "the pause under way could be neither finished nor undone (%s): the task is "
                  "lost, its GPU state out of reach (%s)",
                  why, thaw);
    return GP_ENOTSUP;
}

static int do_pause(gpx__local *lx, const char *dir, gpx__task_cg *tc, journal *j,
                    gp_exec_pause *p) {
    int rc = 0;
    if (j->state == J_PAUSED) {
        p->paused = 1;
        p->gpu_bytes = j->gpu_bytes;
        gpx__exec_fmt(p->detail, sizeof p->detail, "%s", j->detail);
        return gpx__freeze(tc, 1, NULL, 0) == 0 ? 0 : GP_EIO;
    }
    if (j->state == J_RESUMING) {
        gpx__exec_fmt(p->detail, sizeof p->detail, "the task is being resumed");
        return GP_ESTATE;
    }
    if (!gpx__freezable(tc)) {
        if (j->state == J_PAUSING)
            return pause_lost(dir, tc, p, "the task has no cgroup freezer now");
        gpx__exec_fmt(p->detail, sizeof p->detail,
                      "pause is not supported for this task: it has no cgroup freezer");
        return GP_ENOTSUP;
    }
    int have_cuda = cuda_load(lx) == 0;
    if (!have_cuda && !lx->emulated) {
        if (j->state == J_PAUSING) /* its locks and checkpoints cannot be undone */
            return pause_lost(dir, tc, p, lx->cuda.note);
        gpx__exec_fmt(p->detail, sizeof p->detail, "pause is not supported on this node: %s",
                      lx->cuda.note);
        return GP_ENOTSUP;
    }
    cuda_procs ps;
    if (find_cuda_procs(lx, tc, &ps) < 0) {
        gpx__exec_fmt(p->detail, sizeof p->detail,
                      "pause is not supported for this task: it has more than %d processes, "
                      "which a pause cannot follow",
                      MAX_PROCS);
        if (j->state == J_PAUSING) { /* one under way before a restart is undone */
            undo_pause(lx, tc);
            j_remove(dir);
        }
        return GP_ENOTSUP;
    }
    /* The driver's thread inside each process answers the lock: a task the
     * compute-share throttle froze is thawed. The journal is written and the
     * task thawed holding the task's freezer lock, which the throttle holds
     * while it decides and acts, and it leaves a task with a journal alone:
     * from here to the journal's removal the freezer is the pause's. */
    int lock = gpx__freezer_lock(dir);
    if (j->state == J_NONE) {
        j->state = J_PAUSING;
        j->gpu_bytes = gpu_bytes_of(lx, ps.pids, ps.n);
        if ((rc = j_write(dir, j)) < 0) {
            gpx__freezer_unlock(lock);
            return rc;
        }
    }
    gpx__wd_unstop(lx, dir, task_key(dir));
    gpx__freezer_unlock(lock);
    step(1);
    p->cuda_procs = ps.n;
    p->gpu_bytes = j->gpu_bytes;
    int64_t t0 = now_ms();
    ps.lock.timeout_ms =
        p->lock_timeout_ms > 0 ? (unsigned)p->lock_timeout_ms : DEFAULT_LOCK_TIMEOUT_MS;
    rc = move_all(lx, &ps, LOCK, p->detail, sizeof p->detail);
    int64_t t1 = now_ms();
    if (rc == 0) {
        step(2);
        rc = move_all(lx, &ps, CHECKPOINT, p->detail, sizeof p->detail);
    }
    int64_t t2 = now_ms();
    if (rc == 0)
        step(3);
    char why[192];
    if (rc == 0 && gpx__freeze(tc, 1, why, sizeof why) < 0) {
        gpx__exec_fmt(p->detail, sizeof p->detail, "%s", why);
        rc = GP_EIO;
    }
    if (rc == 0)
        rc = cuda_left_running(lx, tc, &ps, p->detail, sizeof p->detail);
    int64_t t3 = now_ms();
    if (rc < 0) {
        /* Nothing may stay half done: the task runs on as before. */
        undo_pause(lx, tc);
        j_remove(dir);
        return rc;
    }
    step(4);
    p->step_ms[0] = t1 - t0;
    p->step_ms[1] = t2 - t1;
    p->step_ms[2] = t3 - t2;
    char held[32] = "an unknown amount";
    if (j->gpu_bytes >= 0)
        gp_format_size(j->gpu_bytes, held, sizeof held);
    if (ps.n == 0)
        gpx__exec_fmt(j->detail, sizeof j->detail,
                      "paused by the freezer alone (no process holds a CUDA context); froze in "
                      "%lld ms",
                      (long long)p->step_ms[2]);
    else
        gpx__exec_fmt(j->detail, sizeof j->detail,
                      "paused: %s of GPU memory of %d process%s moved to host memory; lock %lld "
                      "ms, checkpoint %lld ms, freeze %lld ms",
                      held, ps.n, ps.n == 1 ? "" : "es", (long long)p->step_ms[0],
                      (long long)p->step_ms[1], (long long)p->step_ms[2]);
    j->state = J_PAUSED;
    if ((rc = j_write(dir, j)) < 0)
        return rc;
    p->paused = 1;
    gpx__exec_fmt(p->detail, sizeof p->detail, "%s", j->detail);
    return 0;
}

/* A resume that cannot finish: the task's rules go back to its old GPUs and
 * the journal says paused again, with p->detail as the reason. */
static void stay_paused(gpx__local *lx, const char *dir, const gpx__task_cg *tc, journal *j,
                        gp_exec_pause *p) {
    char why[192];
    if (rebind(lx, dir, tc, j, 0, why, sizeof why) < 0) {
        size_t l = strlen(p->detail);
        gpx__exec_fmt(p->detail + l, sizeof p->detail - l, " (and %s)", why);
    }
    gpx__exec_fmt(j->detail, sizeof j->detail, "%s", p->detail);
    j->state = J_PAUSED;
    j->ngpus = 0;
    j->nslices = 0;
    j->nrows = 0;
    j_write(dir, j);
    p->paused = 1;
}

static int do_resume(gpx__local *lx, const char *dir, gpx__task_cg *tc, journal *j,
                     gp_exec_pause *p) {
    int rc = 0;
    if (j->state != J_PAUSED && j->state != J_RESUMING) {
        gpx__exec_fmt(p->detail, sizeof p->detail, "the task is not paused");
        return GP_ESTATE;
    }
    if (j->state == J_PAUSED) {
        if (p->ngpus < 0 || p->ngpus > GP_MAX_GPUS_PER_NODE ||
            (p->ngpus > 0 && (p->from_uuid == NULL || p->to_uuid == NULL))) {
            gpx__exec_fmt(p->detail, sizeof p->detail, "ngpus: %d is out of range", p->ngpus);
            return GP_EINVAL;
        }
        step(10);
        if ((rc = plan_resume(lx, dir, p, j, p->detail, sizeof p->detail)) < 0)
            return rc;
        /* The new binding is in the journal before anything is rewritten. */
        j->state = J_RESUMING;
        if ((rc = j_write(dir, j)) < 0)
            return rc;
    }
    step(11);
    int lock = gpx__freezer_lock(dir); /* the restore runs inside it, as a pause's lock */
    gpx__wd_unstop(lx, dir, task_key(dir));
    gpx__freezer_unlock(lock);
    int64_t t0 = now_ms();
    char why[192];
    /* The device rules first: the driver's restore opens the new GPUs. A
     * thaw that fails leaves them on the old ones too, and the task frozen:
     * the next resume is planned afresh, for the GPUs it names. */
    if (rebind(lx, dir, tc, j, 1, why, sizeof why) < 0 || gpx__freeze(tc, 0, why, sizeof why) < 0) {
        gpx__exec_fmt(p->detail, sizeof p->detail, "still paused: %s; it will be tried again", why);
        gpx__freeze(tc, 1, NULL, 0);
        stay_paused(lx, dir, tc, j, p);
        return GP_EIO;
    }
    int64_t t1 = now_ms();
    step(12);
    cuda_load(lx);
    cuda_procs ps;
    find_cuda_procs(lx, tc, &ps);
    gp_cu_gpu_pair pairs[GP_MAX_GPUS_PER_NODE];
    gp_cu_restore_args ra;
    memset(&ra, 0, sizeof ra);
    int remap = 0, driver_uuids = 1;
    for (int i = 0; i < j->ngpus; i++) {
        driver_uuids &= uuid_bytes(j->from[i], pairs[i].old_uuid) == 0 &&
                        uuid_bytes(j->to[i], pairs[i].new_uuid) == 0;
        remap |= strcmp(j->from[i], j->to[i]) != 0;
    }
    if (remap) {
        ra.pairs = pairs;
        ra.npairs = (unsigned)j->ngpus;
        ps.restore_args = &ra;
    }
    for (int i = 0; i < ps.n && remap && !driver_uuids && rc == 0; i++) {
        if (ps.st[i] == GP_CU_PROCESS_CHECKPOINTED) {
            /* Emulated GPUs: the driver knows none of them. */
            gpx__exec_fmt(p->detail, sizeof p->detail,
                          "still paused: process %d holds a CUDA context, which the driver cannot "
                          "move onto GPUs it does not know (emulated UUIDs)",
                          (int)ps.pids[i]);
            rc = GP_EIO;
        }
    }
    if (rc == 0)
        rc = move_all(lx, &ps, RESTORE, p->detail, sizeof p->detail);
    int64_t t2 = now_ms();
    if (rc < 0) {
        /* It stays paused: what was restored goes back to host memory. */
        move_all(lx, &ps, CHECKPOINT, NULL, 0);
        gpx__freeze(tc, 1, NULL, 0);
        stay_paused(lx, dir, tc, j, p);
        return rc;
    }
    step(13);
    move_all(lx, &ps, UNLOCK, NULL, 0);
    int64_t t3 = now_ms();
    j_remove(dir);
    p->paused = 0;
    p->cuda_procs = ps.n;
    p->gpu_bytes = j->gpu_bytes;
    p->step_ms[0] = t1 - t0;
    p->step_ms[1] = t2 - t1;
    p->step_ms[2] = t3 - t2;
    gpx__exec_fmt(p->detail, sizeof p->detail,
                  "resumed%s: thaw %lld ms, restore %lld ms, unlock %lld ms",
                  remap ? " on other GPUs of the node" : "", (long long)p->step_ms[0],
                  (long long)p->step_ms[1], (long long)p->step_ms[2]);
    return 0;
}

/* After a restart: runs the operation the journal says was under way. */
static int do_recover(gpx__local *lx, const char *dir, gp_exec_pause *p) {
    journal j;
    int rc = j_read(dir, &j);
    if (rc < 0)
        return rc;
    switch (j.state) {
    case J_NONE:
        p->paused = 0;
        return 0;
    case J_PAUSING:
    case J_PAUSED:
        p->recovered = GP_EXEC_CTL_PAUSE;
        rc = on_task(lx, dir, p, do_pause);
        /* A pause that cannot be finished was undone: the task runs; or,
         * where it could not be undone either, it is lost (p->lost). */
        return rc == GP_ETIMEDOUT || rc == GP_EIO || rc == GP_ENOTSUP ? 0 : rc;
    default:
        p->recovered = GP_EXEC_CTL_RESUME;
        rc = on_task(lx, dir, p, do_resume);
        return rc == GP_ENOSPC || rc == GP_EIO ? 0 : rc;
    }
}

int gpx__pause_ctl(gpx__local *lx, int op, const char *dir, gp_exec_pause *p) {
    p->paused = 0;
    p->recovered = 0;
    p->lost = 0;
    p->cuda_procs = 0;
    p->gpu_bytes = -1;
    memset(p->step_ms, 0, sizeof p->step_ms);
    p->detail[0] = '\0';
    switch (op) {
    case GP_EXEC_CTL_PAUSE:
        return on_task(lx, dir, p, do_pause);
    case GP_EXEC_CTL_RESUME:
        return on_task(lx, dir, p, do_resume);
    case GP_EXEC_CTL_PAUSE_RECOVER:
        return do_recover(lx, dir, p);
    default: /* GP_EXEC_CTL_PAUSE_SUPPORT */
        if (lx->cg.mode == GPX__CG_NONE ||
            (lx->cg.mode == GPX__CG_V1 && lx->cg.frz_parent[0] == '\0')) {
            gpx__exec_fmt(p->detail, sizeof p->detail,
                          "pause is not supported on this node: tasks get no cgroup freezer");
            return GP_ENOTSUP;
        }
        if (cuda_load(lx) < 0 && !lx->emulated) {
            gpx__exec_fmt(p->detail, sizeof p->detail, "pause is not supported on this node: %s",
                          lx->cuda.note);
            return GP_ENOTSUP;
        }
        gpx__exec_fmt(p->detail, sizeof p->detail, "pause: %s",
                      lx->cuda.lib != NULL ? lx->cuda.note : "emulated GPUs, the freezer alone");
        return 0;
    }
}
