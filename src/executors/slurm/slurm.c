/*
 * slurm.c — the `slurm` executor: gpupool's tasks as jobs of an existing
 * Slurm cluster. gpupool stays the scheduler (quotas, borrowing, reclaim,
 * fractions, placement); Slurm launches on its nodes, isolates, watches node
 * health and accounts. This file holds the methods table, the configuration
 * and the task methods; cmd.c runs Slurm's commands, inventory.c reads the
 * nodes and job.c writes and submits the batch scripts.
 *
 * Everything the executor knows about a task is in Slurm and in the task's
 * directory under state_dir, never only in memory: a new instance (after a
 * restart of gpupoold) finds every job again from its handle, and a launch
 * repeated with the same (workload, task, attempt) returns the job already
 * submitted (found by its job id file, or by its name in Slurm if gpupoold
 * died between sbatch and writing that file) instead of submitting twice.
 *
 * poll() asks Slurm once per call for every job it is given (`squeue
 * --states=all --jobs=<ids>`, text: see gpx__slurm_squeue); a job Slurm has
 * forgotten (its MinJobAge passed) is judged from the exit file its script
 * wrote.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gp_array.h"
#include "common/gp_error.h"
#include "common/units.h"
#include "executors/registry.h"
#include "executors/slurm/slurm.h"

extern char **environ;

#define DEFAULT_INTERPOSER   "/usr/lib/gpupool/libgpuslice.so"
#define DEFAULT_GPU_MEM      (80LL << 30)
#define DEFAULT_SESSION_PROG "/usr/lib/gpupool/gpupool-slurm-session"
#define DEFAULT_NVML         "libnvidia-ml.so.1"

/* ======================================================================== */
/* Configuration                                                             */
/* ======================================================================== */

static int set_path(char *dst, size_t len, const char *key, const char *val, int absolute,
                    char *err, size_t errlen) {
    if (absolute && val[0] != '/') {
        gp_errf(err, errlen, "executor-config: %s must be an absolute path", key);
        return GP_EINVAL;
    }
    if (gpx__exec_fmt(dst, len, "%s", val) < 0) {
        gp_errf(err, errlen, "executor-config: %s is too long", key);
        return GP_EINVAL;
    }
    return 0;
}

static int set_partitions(gpx__slurm *sx, const char *key, const char *val, char *err,
                          size_t errlen) {
    (void)key;
    sx->npart = 0;
    const char *p = val;
    while (*p != '\0') {
        size_t len = strcspn(p, ":");
        if (len == 0 || len > GP_NAME_MAX || sx->npart == GPX__SLURM_PARTS) {
            gp_errf(err, errlen, "executor-config: partitions: at most %d names separated by ':'",
                    GPX__SLURM_PARTS);
            return GP_EINVAL;
        }
        snprintf(sx->parts[sx->npart++], GP_NAME_MAX + 1, "%.*s", (int)len, p);
        p += len;
        p += *p == ':';
    }
    return 0;
}

static int set_gpu_mem(gpx__slurm *sx, const char *key, const char *val, char *err, size_t errlen) {
    int64_t bytes;
    if (gp_parse_size(val, &bytes) < 0 || bytes <= 0) {
        gp_errf(err, errlen, "executor-config: %s: '%s' is not a size (like 80G)", key, val);
        return GP_EINVAL;
    }
    if (strcmp(key, "gpu_mem") == 0) {
        sx->gpu_mem_default = bytes;
        return 0;
    }
    const char *model = key + strlen("gpu_mem.");
    if (model[0] == '\0' || strlen(model) > GP_NAME_MAX || sx->nmodel == GPX__SLURM_MODEL_MEM) {
        gp_errf(err, errlen, "executor-config: %s: bad model or too many models", key);
        return GP_EINVAL;
    }
    snprintf(sx->model_mem[sx->nmodel].model, GP_NAME_MAX + 1, "%s", model);
    sx->model_mem[sx->nmodel++].bytes = bytes;
    return 0;
}

static int set_nvml(gpx__slurm *sx, const char *key, const char *val, char *err, size_t errlen) {
    sx->nvml_auto = strcmp(val, "auto") == 0;
    if (strcmp(val, "off") == 0) {
        sx->nvml[0] = '\0';
        return 0;
    }
    return set_path(sx->nvml, sizeof sx->nvml, key, sx->nvml_auto ? DEFAULT_NVML : val,
                    !sx->nvml_auto, err, errlen);
}

static int set_hold(gpx__slurm *sx, const char *key, const char *val, char *err, size_t errlen) {
    (void)key;
    if (gp_parse_duration_ms(val, &sx->hold_ms) < 0 || sx->hold_ms > GPX__SLURM_HOLD_MAX_MS) {
        gp_errf(err, errlen,
                "executor-config: gpu_hold: '%s' is not a duration from 0 to 1h (e.g. 10s)", val);
        return GP_EINVAL;
    }
    return 0;
}

static int set_expiry(gpx__slurm *sx, const char *key, const char *val, char *err, size_t errlen) {
    (void)key;
    if (gp_parse_duration_ms(val, &sx->expiry_ms) < 0 || sx->expiry_ms < 1000 ||
        sx->expiry_ms > GPX__SLURM_EXPIRY_MAX_MS) {
        gp_errf(err, errlen,
                "executor-config: holder_expiry: '%s' is not a duration from 1s to 24h "
                "(e.g. 10m)",
                val);
        return GP_EINVAL;
    }
    return 0;
}

static int set_tag(gpx__slurm *sx, const char *key, const char *val, char *err, size_t errlen) {
    (void)key;
    if (!gpx__id_ok(val, sizeof sx->tag - 1)) {
        gp_errf(err, errlen, "executor-config: tag: 1 to %zu " GPX__ID_RULE, sizeof sx->tag - 1);
        return GP_EINVAL;
    }
    memcpy(sx->tag, val, strlen(val) + 1);
    return 0;
}

/* The configuration's keys, in docs/executors.md's order: each read by its
 * set, or, without one, an absolute path into the field at off. A key
 * ending ".<model>" stands for every key with that prefix. */
#define PATH_KEY(k, field)                                                                         \
    { k, NULL, offsetof(gpx__slurm, field), sizeof((gpx__slurm *)0)->field }
static const struct {
    const char *key;
    int (*set)(gpx__slurm *sx, const char *key, const char *val, char *err, size_t errlen);
    size_t off, len;
} config_keys[] = {
    PATH_KEY("state_dir", state_dir),
    PATH_KEY("checkpoint_dir", ckpt_root),
    {"partitions", set_partitions, 0, 0},
    PATH_KEY("slurm_conf", conf),
    PATH_KEY("bin_dir", bin),
    {"gpu_mem", set_gpu_mem, 0, 0},
    {"gpu_mem.<model>", set_gpu_mem, 0, 0},
    PATH_KEY("interposer", interposer),
    {"tag", set_tag, 0, 0},
    {"gpu_hold", set_hold, 0, 0},
    {"holder_expiry", set_expiry, 0, 0},
    PATH_KEY("session_program", session_prog),
    {"nvml", set_nvml, 0, 0},
};
#undef PATH_KEY
#define NKEYS (sizeof config_keys / sizeof config_keys[0])

/* Whether key is the row's key, or has the prefix a ".<model>" row stands for. */
static int key_is(const char *row, const char *key) {
    const char *var = strstr(row, ".<");
    return var != NULL ? strncmp(key, row, (size_t)(var - row) + 1) == 0 : strcmp(key, row) == 0;
}

/* One key=value of the configuration into the gpx__slurm arg
 * (a gpx__config_set): 0, or GP_EINVAL naming the key. */
static int set_key(void *arg, const char *key, const char *val, char *err, size_t errlen) {
    gpx__slurm *sx = arg;
    const char *names[NKEYS];
    for (size_t i = 0; i < NKEYS; i++) {
        names[i] = config_keys[i].key;
        if (!key_is(config_keys[i].key, key))
            continue;
        if (config_keys[i].set != NULL)
            return config_keys[i].set(sx, key, val, err, errlen);
        return set_path((char *)sx + config_keys[i].off, config_keys[i].len, key, val, 1, err,
                        errlen);
    }
    gpx__config_unknown(key, names, (int)NKEYS, err, errlen);
    return GP_EINVAL;
}

static int parse_config(gpx__slurm *sx, const char *text, char *err, size_t errlen) {
    int rc = gpx__config_parse(text, set_key, sx, err, errlen);
    if (rc == 0 && sx->state_dir[0] == '\0') {
        gp_errf(err, errlen,
                "executor-config: state_dir is required (a directory every node "
                "sees) when the daemon gives no data directory");
        rc = GP_EINVAL;
    }
    return rc;
}

/* The commands' environment: a few of ours (PATH, the locale, HOME, USER,
 * LOGNAME) plus SLURM_CONF if configured. No more: sbatch hands its
 * environment to the job (--export=ALL), where the job's user could read it
 * in its batch script's /proc/<pid>/environ before the script cleans it, and
 * gpupoold's environment may hold its secrets. */
static int build_envp(gpx__slurm *sx) {
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    sx->envp = calloc(n + 2, sizeof *sx->envp);
    if (sx->envp == NULL)
        return GP_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        static const char *const keep[] = {
            "PATH=", "LANG=", "LC_", "TZ=", "HOME=", "USER=", "LOGNAME="};
        int kept = 0;
        for (size_t j = 0; j < sizeof keep / sizeof keep[0]; j++)
            kept |= strncmp(e, keep[j], strlen(keep[j])) == 0;
        if (!kept)
            continue;
        if ((sx->envp[k] = strdup(e)) == NULL)
            return GP_ENOMEM;
        k++;
    }
    if (sx->conf[0] != '\0' && asprintf(&sx->envp[k], "SLURM_CONF=%s", sx->conf) < 0) {
        sx->envp[k] = NULL;
        return GP_ENOMEM;
    }
    return 0;
}

static void slurm_close(void *state) {
    gpx__slurm *sx = state;
    if (sx == NULL)
        return;
    gpx__slurm_sess_reap(sx, 1);
    /* A holder kept for a next task that will not come from this daemon
     * gives its GPU back now; one with tasks stays for them. */
    gpx__slurm_holders_sweep(sx, 1);
    pthread_mutex_destroy(&sx->sess_mu);
    free(sx->sess);
    pthread_mutex_destroy(&sx->ended_mu);
    free(sx->ended);
    free(sx->abandoned);
    free(sx->seen);
    for (size_t i = 0; sx->envp != NULL && sx->envp[i] != NULL; i++)
        free(sx->envp[i]);
    free(sx->envp);
    free(sx);
}

/* Abandoned launches (below, Abandon). */
static void find_abandoned(gpx__slurm *sx);
static void retry_abandoned(gpx__slurm *sx);

/*
 * Opens an instance. Defaults come from what the daemon says about itself:
 * state_dir is <data_dir>/slurm (the data directory must then be on storage
 * the nodes see), the interposer <lib_dir>/libgpuslice.so if it is there.
 */
static int slurm_open(const gp_executor_ctx *ctx, const char *text, void **state, char *err,
                      size_t errlen) {
    gpx__slurm *sx = calloc(1, sizeof *sx);
    if (sx == NULL)
        return GP_ENOMEM;
    pthread_mutex_init(&sx->ended_mu, NULL);
    pthread_mutex_init(&sx->sess_mu, NULL);
    snprintf(sx->interposer, sizeof sx->interposer, "%s", DEFAULT_INTERPOSER);
    snprintf(sx->session_prog, sizeof sx->session_prog, "%s", DEFAULT_SESSION_PROG);
    snprintf(sx->nvml, sizeof sx->nvml, "%s", DEFAULT_NVML);
    sx->nvml_auto = 1;
    sx->expiry_ms = GPX__SLURM_EXPIRY_DEFAULT_MS;
    snprintf(sx->tag, sizeof sx->tag, "gpupool");
    sx->gpu_mem_default = DEFAULT_GPU_MEM;
    char lib[PATH_MAX];
    if (ctx->lib_dir != NULL && ctx->lib_dir[0] != '\0' &&
        gpx__exec_fmt(lib, sizeof lib, "%s/libgpuslice.so", ctx->lib_dir) == 0 &&
        access(lib, R_OK) == 0)
        memcpy(sx->interposer, lib, sizeof lib);
    if (ctx->lib_dir != NULL && ctx->lib_dir[0] != '\0' &&
        gpx__exec_fmt(lib, sizeof lib, "%s/gpupool-slurm-session", ctx->lib_dir) == 0 &&
        access(lib, X_OK) == 0)
        memcpy(sx->session_prog, lib, sizeof lib);
    sx->allow_root = ctx->allow_root_workloads;
    if (ctx->data_dir != NULL && ctx->data_dir[0] == '/')
        gpx__exec_fmt(sx->state_dir, sizeof sx->state_dir, "%s/slurm", ctx->data_dir);
    int rc = parse_config(sx, text, err, errlen);
    if (rc == 0 && (rc = build_envp(sx)) < 0)
        gp_errf(err, errlen, "slurm executor: out of memory");
    int mrc = rc == 0 ? gpx__exec_mkdirs(sx->state_dir) : 0;
    if (mrc < 0) {
        gp_errf(err, errlen, "executor-config: state_dir: cannot create %s: %s", sx->state_dir,
                gp_strerror(mrc));
        rc = GP_ESYS;
    }
    if (rc == 0) {
        /* Fail early, with Slurm's own words, if the controller is not there. */
        const char *argv[] = {"scontrol", "ping", NULL};
        char *out = NULL;
        rc = gpx__slurm_run(sx, argv, &out, err, errlen);
        free(out);
    }
    if (rc < 0) {
        slurm_close(sx);
        return rc;
    }
    find_abandoned(sx);
    *state = sx;
    return 0;
}

static int slurm_inventory(void *state, gp_node_spec *nodes, size_t max, size_t *n, int *emulated,
                           char *err, size_t errlen) {
    *emulated = 0;
    retry_abandoned(state);
    gpx__slurm_holders_sweep(state, 0);
    return gpx__slurm_inventory(state, nodes, max, n, err, errlen);
}

/* ======================================================================== */
/* Handles and task directories                                              */
/* ======================================================================== */

/* "slurm:<jobid>:<key>" into its parts; GP_EINVAL if it is not one of ours. */
static int parse_handle(const char *h, long *jobid, char key[GPX__SLURM_KEY_MAX]) {
    if (strncmp(h, "slurm:", 6) != 0)
        return GP_EINVAL;
    char *end;
    long id = strtol(h + 6, &end, 10);
    if (end == h + 6 || *end != ':' || id <= 0)
        return GP_EINVAL;
    const char *k = end + 1;
    size_t n = strlen(k);
    if (n == 0 || n >= GPX__SLURM_KEY_MAX || strchr(k, '/') != NULL || k[0] == '.')
        return GP_EINVAL;
    *jobid = id;
    memcpy(key, k, n + 1);
    return 0;
}

static void make_handle(char handle[GP_HANDLE_MAX], long jobid, const char *key) {
    snprintf(handle, GP_HANDLE_MAX, "slurm:%ld:%.63s", jobid, key);
}

/* The job Slurm knows under our name for key, if any: 1 with *jobid, 0 if
 * none, or a negative code if Slurm could not be asked. */
static int find_by_name(const gpx__slurm *sx, const char *key, long *jobid, char *err,
                        size_t errlen) {
    char filter[176], want[160];
    snprintf(want, sizeof want, "gp-%s.%s", sx->tag, key);
    snprintf(filter, sizeof filter, "--name=%s", want);
    gpx__slurm_job job;
    int rc = gpx__slurm_squeue_one(sx, filter, 0, want, &job, err, errlen);
    if (rc == 1)
        *jobid = job.id;
    return rc;
}

/* ======================================================================== */
/* Launch                                                                    */
/* ======================================================================== */

static int slurm_launch(void *state, const gp_task_launch *t, char handle[GP_HANDLE_MAX], char *err,
                        size_t errlen) {
    gpx__slurm *sx = state;
    if (t->node == NULL) {
        gp_errf(err, errlen, "node: no node given");
        return GP_EINVAL;
    }
    char key[GPX__SLURM_KEY_MAX], dir[PATH_MAX], buf[64];
    gpx__slurm_key(t, key, sizeof key);
    if (gpx__slurm_task_dir(sx, key, dir, sizeof dir) < 0) {
        gp_errf(err, errlen, "state_dir: path too long");
        return GP_EINVAL;
    }
    long jobid = 0;
    int rc;
    if (gpx__slurm_read(dir, "jobid", buf, sizeof buf) > 0 && (jobid = strtol(buf, NULL, 10)) > 0) {
        make_handle(handle, jobid, key);
        return gpx__slurm_gang_release(sx, t, err, errlen);
    }
    struct stat st;
    char hdir[PATH_MAX];
    if (stat(dir, &st) == 0 && gpx__slurm_is_slice(dir, hdir, sizeof hdir)) {
        /* A slice queued in its holder before gpupoold died: the holder's
         * job id is its own. One gpupoold marked but died before queueing
         * never reached the holder and would stay STARTING for ever; it
         * never ran, so its launch is completed below, once. */
        if (gpx__slurm_slice_queued(dir, hdir, key) &&
            gpx__slurm_read(hdir, "jobid", buf, sizeof buf) > 0 &&
            (jobid = strtol(buf, NULL, 10)) > 0) {
            gpx__slurm_write(dir, "jobid", buf);
            make_handle(handle, jobid, key);
            return 0;
        }
    } else if (stat(dir, &st) == 0) {
        /* A launch of this key began before: gpupoold may have died between
         * sbatch and the jobid file. Slurm knows the job by its name. */
        int found = find_by_name(sx, key, &jobid, err, errlen);
        if (found < 0)
            return found;
        if (found) {
            snprintf(buf, sizeof buf, "%ld\n", jobid);
            gpx__slurm_write(dir, "jobid", buf);
            make_handle(handle, jobid, key);
            return gpx__slurm_gang_release(sx, t, err, errlen);
        }
    }
    gpx__exec_user u;
    if ((rc = gpx__slurm_user_resolve(sx, t->run_as, &u, err, errlen)) < 0)
        return rc;
    if (stat(dir, &st) < 0 && (rc = gpx__exec_mkdirs(dir)) < 0) {
        gp_errf(err, errlen, "state_dir: cannot create %s: %s", dir, gp_strerror(rc));
        return GP_ESYS;
    }
    char ckpt[PATH_MAX];
    const char *ckpt_dir = t->checkpoint_dir != NULL ? t->checkpoint_dir : dir;
    if (sx->ckpt_root[0] != '\0') {
        gpx__exec_fmt(ckpt, sizeof ckpt, "%s/%llu", sx->ckpt_root, (unsigned long long)t->workload);
        ckpt_dir = ckpt;
    }
    int whole = 0, frac = -1, first = -1;
    for (int i = 0; t->binding != NULL && i < t->binding->nslices; i++)
        if (t->binding->slices[i].milli >= GP_MILLI)
            whole++, first = first < 0 ? t->binding->slices[i].gpu : first;
        else
            frac = t->binding->slices[i].gpu;
    if (frac >= 0 && whole > 0) {
        gp_errf(err, errlen, "binding: whole GPUs and a fraction in one task");
        return GP_EINVAL;
    }
    /* With gpu_hold, a batch task of one whole GPU runs as a step of that
     * GPU's holder, as a fraction does: started at once in a holder kept
     * from the task before, not at Slurm's next scheduling pass. A gang's
     * task (released with its gang) and an interactive one keep their own
     * job. */
    int held = frac;
    if (held < 0 && sx->hold_ms > 0 && whole == 1 && t->gang_size <= 1 && !t->tty)
        held = first;
    rc = gpx__slurm_user_files(&u, dir, ckpt_dir, t->log_path, held >= 0, err, errlen);
    if (rc == 0 && whole > 0 && held < 0) {
        /* How many GPUs the job asks for: its record of which must say as
         * many (inventory.c). */
        snprintf(buf, sizeof buf, "%d\n", whole);
        if (gpx__slurm_write(dir, "ngpus", buf) < 0) {
            gp_errf(err, errlen, "state_dir: cannot write %s/ngpus", dir);
            rc = GP_ESYS;
        }
    }
    if (rc == 0 && t->tty && (rc = gpx__slurm_sess_mark(dir, &u)) < 0)
        gp_errf(err, errlen, "state_dir: cannot write %s/tty", dir);
    if (rc == 0 && gpx__slurm_samples(sx, t) && (rc = gpx__slurm_bound_mark(dir, t)) < 0)
        gp_errf(err, errlen, "state_dir: cannot write %s/bound", dir);
    if (rc == 0)
        rc = gpx__slurm_write_script(sx, t, dir, ckpt_dir, held >= 0, &u, err, errlen);
    if (rc == 0 && held >= 0) {
        rc = gpx__slurm_slice_launch(sx, t, key, dir, held, &jobid, err, errlen);
    } else if (rc == 0) {
        if (whole > 0)
            gpx__slurm_holders_release(sx, t->node->name, NULL);
        /* A gang's jobs are submitted held and released together. */
        rc = gpx__slurm_submit(sx, t, dir, key, &u, t->gang_size > 1, &jobid, err, errlen);
    }
    if (rc < 0)
        return rc;
    snprintf(buf, sizeof buf, "%ld\n", jobid);
    if (gpx__slurm_write(dir, "jobid", buf) < 0) {
        gp_errf(err, errlen, "state_dir: cannot record job %ld in %s", jobid, dir);
        rc = GP_ESYS;
    } else {
        rc = gpx__slurm_gang_release(sx, t, err, errlen);
    }
    if (rc < 0) {
        /* The daemon stops the tasks it got handles for; this job it never
         * hears of, so it is cancelled here (a slice's holder is shared and
         * stays). */
        buf[strcspn(buf, "\n")] = '\0';
        const char *argv[] = {"scancel", buf, NULL};
        if (held < 0)
            gpx__slurm_run(sx, argv, NULL, NULL, 0);
        return rc;
    }
    make_handle(handle, jobid, key);
    return 0;
}

/* ======================================================================== */
/* Jobs known to have ended                                                  */
/* ======================================================================== */

/* Notes that a poll found job id ended in Slurm (a terminal state, or
 * forgotten). Without memory for the note, stop() simply asks scancel. */
static void ended_add(gpx__slurm *sx, long id) {
    pthread_mutex_lock(&sx->ended_mu);
    size_t i = 0;
    while (i < sx->nended && sx->ended[i] != id)
        i++;
    if (i == sx->nended) {
        if (GP_ARRAY_ROOM(sx->ended, sx->nended, sx->capended, 64) == 0)
            sx->ended[sx->nended++] = id;
    }
    pthread_mutex_unlock(&sx->ended_mu);
}

/* 1 if job id was noted ended; with forget, the note is dropped. */
static int ended_has(gpx__slurm *sx, long id, int forget) {
    pthread_mutex_lock(&sx->ended_mu);
    int found = 0;
    for (size_t i = 0; i < sx->nended && !found; i++)
        if (sx->ended[i] == id) {
            found = 1;
            if (forget)
                sx->ended[i] = sx->ended[--sx->nended];
        }
    pthread_mutex_unlock(&sx->ended_mu);
    return found;
}

/* ======================================================================== */
/* Signal, stop, reap                                                        */
/* ======================================================================== */

/* Reads a handle for signal and stop: its job id and key, and whether it
 * names a slice in a holder job (then dir is the slice's task directory).
 * GP_EINVAL for a handle this executor never made. */
static int read_handle(gpx__slurm *sx, const char *handle, long *jobid,
                       char key[GPX__SLURM_KEY_MAX], char dir[PATH_MAX], int *slice) {
    if (parse_handle(handle, jobid, key) < 0)
        return GP_EINVAL;
    char hdir[PATH_MAX];
    *slice = gpx__slurm_task_dir(sx, key, dir, PATH_MAX) == 0 &&
             gpx__slurm_is_slice(dir, hdir, sizeof hdir);
    return 0;
}

/*
 * Runs scancel for job jobid: with sigarg ("--signal=N"), that signal to the
 * batch script and every step (--full: every process of the job); without,
 * the job is cancelled. A job that has ended has nothing to signal or cancel;
 * scancel says so with a failure, which is success here. Only a command that
 * cannot run at all is an error (GP_ESYS).
 */
static int scancel(gpx__slurm *sx, long jobid, const char *sigarg) {
    char id[32], err[256];
    snprintf(id, sizeof id, "%ld", jobid);
    const char *full[] = {"scancel", "--full", sigarg, id, NULL};
    const char *plain[] = {"scancel", id, NULL};
    int rc = gpx__slurm_run(sx, sigarg != NULL ? full : plain, NULL, err, sizeof err);
    return rc == GP_ESYS ? rc : 0;
}

/* Signals (stop 0: with sig) or stops the task of handle: a slice through
 * its GPU holder, a job with scancel (stopping: SIGKILL to every process,
 * then the job cancelled). */
static int signal_or_stop(gpx__slurm *sx, const char *handle, int stop, int sig) {
    long jobid;
    char key[GPX__SLURM_KEY_MAX], dir[PATH_MAX];
    int slice;
    if (read_handle(sx, handle, &jobid, key, dir, &slice) < 0)
        return GP_EINVAL;
    if (slice)
        return stop ? gpx__slurm_slice_stop(sx, dir, key) : gpx__slurm_slice_signal(sx, dir, sig);
    if (stop) {
        /* The daemon stops every task of a workload it concludes, those
         * that ended too; a job Slurm already reported ended has nothing
         * left to kill, and two scancel per job were most of the cost of a
         * short job. */
        if (ended_has(sx, jobid, 0))
            return 0;
        scancel(sx, jobid, "--signal=KILL");
        return scancel(sx, jobid, NULL);
    }
    char sigarg[32];
    snprintf(sigarg, sizeof sigarg, "--signal=%d", sig);
    return scancel(sx, jobid, sigarg);
}

static int slurm_signal(void *state, const char *handle, int sig) {
    return signal_or_stop(state, handle, 0, sig);
}

static int slurm_stop(void *state, const char *handle) {
    return signal_or_stop(state, handle, 1, 0);
}

/* Removes the directory name (relative to dirfd) and what it holds, never
 * following a link: a job of another user wrote part of it. Depth is
 * bounded; what lies deeper stays. */
static void remove_tree(int dirfd, const char *name, int depth) {
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(fd, de->d_name, 0) < 0 && errno == EISDIR && depth < 8)
            remove_tree(fd, de->d_name, depth + 1);
    }
    closedir(d);
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

static int slurm_reap(void *state, const char *handle) {
    gpx__slurm *sx = state;
    long jobid;
    char key[GPX__SLURM_KEY_MAX], dir[PATH_MAX];
    if (parse_handle(handle, &jobid, key) < 0 || gpx__slurm_task_dir(sx, key, dir, sizeof dir) < 0)
        return GP_EINVAL;
    ended_has(sx, jobid, 1);
    gpx__slurm_slice_reap(sx, dir, key);
    remove_tree(AT_FDCWD, dir, 0);
    return 0;
}

/* ======================================================================== */
/* Poll                                                                      */
/* ======================================================================== */

/* Fills st from the status the script recorded ("status=N", the shell's $?:
 * 128+N for a command killed by signal N) in the task directory, or, for a
 * job of another user, in its "user" directory. 1 if there was one. */
static int from_exit_file(const gpx__slurm *sx, const char *key, gp_task_status *st) {
    char dir[PATH_MAX], buf[64];
    if (gpx__slurm_task_dir(sx, key, dir, sizeof dir) < 0)
        return 0;
    if (gpx__slurm_read(dir, "exit", buf, sizeof buf) <= 0 &&
        gpx__slurm_read_untrusted(dir, "user/exit", buf, sizeof buf) <= 0)
        return 0;
    if (strncmp(buf, "status=", 7) != 0)
        return 0;
    int status = atoi(buf + 7);
    st->state = GP_TASK_EXITED;
    if (status > 128 && status <= 128 + 64)
        st->term_signal = status - 128;
    else
        st->exit_code = status;
    return 1;
}

static const char *const starting_states[] = {
    "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", NULL};
static const char *const running_states[] = {"RUNNING",   "SUSPENDED", "COMPLETING", "STOPPED",
                                             "SIGNALING", "STAGE_OUT", "RESIZING",   NULL};
static const char *const lost_states[] = {"NODE_FAIL", "BOOT_FAIL", NULL};

static int in_list(const char *s, const char *const *list) {
    for (size_t i = 0; list[i] != NULL; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

/* Judges one task from Slurm's record of its job (NULL: Slurm has none). */
static void judge(const gpx__slurm *sx, long jobid, const char *key, const gpx__slurm_job *job,
                  gp_task_status *st) {
    const char *state = job != NULL ? job->state : NULL;
    if (state != NULL && in_list(state, starting_states)) {
        st->state = GP_TASK_STARTING;
        return;
    }
    if (state != NULL && in_list(state, running_states)) {
        st->state = GP_TASK_RUNNING;
        return;
    }
    if (state != NULL && strcmp(state, "CANCELLED") == 0) {
        /* gpupool cancels only what it is stopping, and then takes any end as
         * the end; a job cancelled by someone else was taken from gpupool
         * behind its back, whatever its command made of the signal. */
        st->state = GP_TASK_LOST;
        snprintf(st->detail, sizeof st->detail, "Slurm job %ld was cancelled outside gpupool",
                 jobid);
        return;
    }
    if (from_exit_file(sx, key, st))
        return;
    if (state == NULL) {
        st->state = GP_TASK_LOST;
        snprintf(st->detail, sizeof st->detail,
                 "Slurm no longer knows job %ld and it left no exit status", jobid);
        return;
    }
    if (in_list(state, lost_states)) {
        st->state = GP_TASK_LOST;
        snprintf(st->detail, sizeof st->detail, "Slurm job %ld ended with %s", jobid, state);
        return;
    }
    if (strcmp(job->reason, "JobLaunchFailure") == 0) {
        /* Its node could not start the script (which records the status
         * before anything else can end it): the command never ran, and the
         * attempt is lost, not failed. */
        st->state = GP_TASK_LOST;
        snprintf(st->detail, sizeof st->detail, "Slurm could not launch job %ld (%s)", jobid,
                 job->reason);
        return;
    }
    /* Ended without the script recording a status: timed out, killed for
     * memory. Slurm's exit_code is a wait status. */
    int ws = job->wstatus;
    st->state = GP_TASK_EXITED;
    if ((ws & 0x7f) != 0) {
        st->term_signal = ws & 0x7f;
    } else {
        st->exit_code = (ws >> 8) & 0xff;
        if (st->exit_code == 0)
            st->exit_code = 1;
    }
    snprintf(st->detail, sizeof st->detail, "Slurm job %ld ended %s", jobid, state);
}

static int cmp_job(const void *a, const void *b) {
    long x = ((const gpx__slurm_job *)a)->id, y = ((const gpx__slurm_job *)b)->id;
    return x < y ? -1 : x > y;
}

static int slurm_poll(void *state, gp_task_status *tasks, size_t n) {
    gpx__slurm *sx = state;
    gpx__slurm_sess_reap(sx, 0);
    if (n == 0)
        return 0;
    long *ids = calloc(n, sizeof *ids);
    char(*keys)[GPX__SLURM_KEY_MAX] = calloc(n, sizeof *keys);
    size_t cap = 32 + n * 21;
    char *list = malloc(cap);
    if (ids == NULL || keys == NULL || list == NULL) {
        free(ids);
        free(keys);
        free(list);
        return GP_ENOMEM;
    }
    size_t len = (size_t)snprintf(list, cap, "--jobs=");
    size_t valid = 0;
    for (size_t i = 0; i < n; i++) {
        gp_task_status *st = &tasks[i];
        st->exit_code = 0;
        st->term_signal = 0;
        st->gpu_mem_used = -1;
        st->detail[0] = '\0';
        if (parse_handle(st->handle, &ids[i], keys[i]) < 0) {
            ids[i] = 0;
            st->state = GP_TASK_LOST;
            snprintf(st->detail, sizeof st->detail, "not a handle of the slurm executor");
            continue;
        }
        len += (size_t)snprintf(list + len, cap - len, "%s%ld", valid ? "," : "", ids[i]);
        valid++;
    }
    gpx__slurm_job *jobs = NULL;
    size_t nj = 0;
    int rc = 0;
    if (valid > 0) {
        char err[256];
        rc = gpx__slurm_squeue(sx, list, &jobs, &nj, err, sizeof err);
    }
    /* Slurm's answer, sorted by job id, so that each handle is found by
     * binary search: n log n for n tasks instead of n times the jobs. */
    if (nj > 0)
        qsort(jobs, nj, sizeof *jobs, cmp_job);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (ids[i] == 0)
            continue;
        gpx__slurm_job want = {.id = ids[i]};
        const gpx__slurm_job *hit = nj > 0 ? bsearch(&want, jobs, nj, sizeof *jobs, cmp_job) : NULL;
        char dir[PATH_MAX], hdir[PATH_MAX];
        if (gpx__slurm_task_dir(sx, keys[i], dir, sizeof dir) == 0 &&
            gpx__slurm_is_slice(dir, hdir, sizeof hdir)) {
            if (hit != NULL && strcmp(hit->state, "RUNNING") == 0)
                gpx__slurm_holder_seen(sx, ids[i]);
            if (!from_exit_file(sx, keys[i], &tasks[i]))
                gpx__slurm_slice_judge(dir, hit != NULL ? hit->state : NULL, ids[i], &tasks[i]);
            continue;
        }
        judge(sx, ids[i], keys[i], hit, &tasks[i]);
        if (tasks[i].state == GP_TASK_EXITED || tasks[i].state == GP_TASK_LOST)
            ended_add(sx, ids[i]);
    }
    free(jobs);
    free(ids);
    free(keys);
    free(list);
    return rc;
}

/* ======================================================================== */
/* Abandon                                                                   */
/* ======================================================================== */

/* Cancels any job of an abandoned key by its name (scancel --name: no job
 * id is known) and forgets the key. 0, or scancel's error with the key's
 * directory kept. */
static int cancel_abandoned(gpx__slurm *sx, const char *key) {
    char dir[PATH_MAX], name[176], err[256];
    if (gpx__slurm_task_dir(sx, key, dir, sizeof dir) < 0)
        return GP_EINVAL;
    snprintf(name, sizeof name, "--name=gp-%s.%s", sx->tag, key);
    const char *argv[] = {"scancel", name, NULL};
    int rc = gpx__slurm_run(sx, argv, NULL, err, sizeof err);
    if (rc == 0)
        remove_tree(AT_FDCWD, dir, 0);
    return rc;
}

/* Remembers an abandoned key whose cancel failed, for retry_abandoned. */
static void keep_abandoned(gpx__slurm *sx, const char *key) {
    for (size_t i = 0; i < sx->nabandoned; i++)
        if (strcmp(sx->abandoned[i], key) == 0)
            return;
    if (GP_ARRAY_ROOM(sx->abandoned, sx->nabandoned, sx->capabandoned, 8) == 0)
        snprintf(sx->abandoned[sx->nabandoned++], GPX__SLURM_KEY_MAX, "%s", key);
}

/* Cancels again the abandoned keys whose cancel failed, until the first
 * that fails again (the controller is still out of reach). */
static void retry_abandoned(gpx__slurm *sx) {
    while (sx->nabandoned > 0 && cancel_abandoned(sx, sx->abandoned[sx->nabandoned - 1]) == 0)
        sx->nabandoned--;
}

/* The keys marked abandoned in the state directory, at open: a daemon that
 * stopped before their cancel succeeded. */
static void find_abandoned(gpx__slurm *sx) {
    DIR *d = opendir(sx->state_dir);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        char dir[PATH_MAX], buf[8];
        if (de->d_name[0] == 'w' && strlen(de->d_name) < GPX__SLURM_KEY_MAX &&
            gpx__slurm_task_dir(sx, de->d_name, dir, sizeof dir) == 0 &&
            gpx__slurm_read(dir, "abandoned", buf, sizeof buf) > 0)
            keep_abandoned(sx, de->d_name);
    }
    if (d != NULL)
        closedir(d);
}

/* GP_EXEC_CTL_ABANDON: a launch that got no answer will not be tried
 * again. A slice handed to its holder is stopped there; a job of the key,
 * which Slurm may have taken before its answer was lost, is cancelled by
 * its name; then the key is forgotten. If scancel cannot reach the
 * controller either, its error is returned, and the key is marked
 * "abandoned" and cancelled again at each inventory (after a restart too)
 * until Slurm answers. */
static int abandon(gpx__slurm *sx, const gp_exec_abandon *ab) {
    gp_task_launch t;
    memset(&t, 0, sizeof t);
    t.workload = ab->workload;
    t.task = ab->task;
    t.attempt = ab->attempt;
    char key[GPX__SLURM_KEY_MAX], dir[PATH_MAX], hdir[PATH_MAX];
    gpx__slurm_key(&t, key, sizeof key);
    struct stat st;
    if (gpx__slurm_task_dir(sx, key, dir, sizeof dir) < 0)
        return GP_EINVAL;
    if (stat(dir, &st) < 0)
        return 0; /* nothing was begun */
    if (gpx__slurm_is_slice(dir, hdir, sizeof hdir)) {
        if (gpx__slurm_slice_queued(dir, hdir, key))
            gpx__slurm_slice_stop(sx, dir, key);
        gpx__slurm_slice_reap(sx, dir, key);
        remove_tree(AT_FDCWD, dir, 0);
        return 0;
    }
    int rc = cancel_abandoned(sx, key);
    if (rc < 0) {
        gpx__slurm_write(dir, "abandoned", "1\n");
        keep_abandoned(sx, key);
    }
    return rc;
}

static int slurm_control(void *state, int op, void *arg) {
    if (op == GP_EXEC_CTL_ABANDON && arg != NULL)
        return abandon(state, arg);
    if (op == GP_EXEC_CTL_GPU_USAGE && arg != NULL)
        return gpx__slurm_gpu_usage(state, arg);
    return GP_ENOTSUP;
}

/* Every task attempt with a directory under state_dir and a job id. */
static int slurm_tasks(void *state, char (*handles)[GP_HANDLE_MAX], size_t max, size_t *n) {
    gpx__slurm *sx = state;
    *n = 0;
    DIR *d = opendir(sx->state_dir);
    if (d == NULL)
        return errno == ENOENT ? 0 : GP_ESYS;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char dir[PATH_MAX], buf[64];
        long jobid;
        if (de->d_name[0] != 'w' || strlen(de->d_name) >= GPX__SLURM_KEY_MAX ||
            gpx__slurm_task_dir(sx, de->d_name, dir, sizeof dir) < 0 ||
            gpx__slurm_read(dir, "jobid", buf, sizeof buf) <= 0 ||
            (jobid = strtol(buf, NULL, 10)) <= 0)
            continue;
        if (*n < max)
            make_handle(handles[*n], jobid, de->d_name);
        (*n)++;
    }
    closedir(d);
    return 0;
}

static int slurm_describe(void *state, gp_executor_info *info) {
    gpx__slurm *sx = state;
    char parts[GPX__SLURM_PARTS * (GP_NAME_MAX + 1) + 1] = "";
    for (int i = 0; i < sx->npart; i++) {
        size_t k = strlen(parts);
        snprintf(parts + k, sizeof parts - k, "%s%s", i ? "," : "", sx->parts[i]);
    }
    snprintf(info->gpus, sizeof info->gpus, "Slurm GRES of the nodes of partition(s) %.160s",
             sx->npart ? parts : "(all)");
    char hold[32];
    gp_format_duration(sx->hold_ms, hold, sizeof hold);
    if (sx->hold_ms > 0)
        snprintf(info->limits, sizeof info->limits,
                 "by Slurm: each task is a job with --cpus-per-task and --mem, but for a batch "
                 "task of one GPU, a step of its GPU's holder (gpu_hold=%s), whose CPU and memory "
                 "gpupool accounts and Slurm does not limit",
                 hold);
    else
        snprintf(info->limits, sizeof info->limits,
                 "by Slurm: each task is a job with --cpus-per-task and --mem");
    snprintf(info->slices, sizeof info->slices, "%s %.200s",
             access(sx->interposer, R_OK) == 0 ? "enforced by" : "NOT ENFORCED: missing",
             sx->interposer);
    snprintf(info->state, sizeof info->state, "%.250s", sx->state_dir);
    gpx__slurm_user_mode(sx, info->identity, sizeof info->identity);
    return 0;
}

/* Thread-safe, as the method must be: it reads the task's files and starts
 * an srun (session.c). */
static int slurm_session(void *state, const char *handle, const gp_session_req *req, int *fd,
                         char *err, size_t errlen) {
    long jobid;
    char key[GPX__SLURM_KEY_MAX];
    *fd = -1;
    if (parse_handle(handle, &jobid, key) < 0) {
        gp_errf(err, errlen, "not a handle of the slurm executor");
        return GP_EINVAL;
    }
    return gpx__slurm_session(state, jobid, key, req, fd, err, errlen);
}

const gp_executor_methods gpx__slurm_methods = GP_EXECUTOR_TABLE("slurm", slurm);
