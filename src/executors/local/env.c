/*
 * env.c — the environment a task of the local executor receives.
 *
 * Three layers, later ones winning: a clean base, never the daemon's own
 * environment (which may hold its secrets, and whose CUDA_VISIBLE_DEVICES
 * must not be handed on):
 *
 *   PATH=/usr/local/bin:/usr/bin:/bin   HOME, USER, LOGNAME, SHELL of the
 *   task's Unix user                    LANG=C.UTF-8
 *
 * then the workload's variables (gp_task_launch.env; GPUPOOL_* and
 * CUDA_VISIBLE_DEVICES given there are ignored), and gpupool's variables,
 * which a workload cannot override because they carry what the task is
 * allowed to use:
 *
 *   CUDA_VISIBLE_DEVICES     UUIDs of the bound GPUs, comma-separated ("" if none)
 *   GPUPOOL_WORKLOAD_ID, GPUPOOL_TASK_INDEX, GPUPOOL_ATTEMPT,
 *   GPUPOOL_PROJECT, GPUPOOL_USER, GPUPOOL_NODE
 *   GPUPOOL_CHECKPOINT_DIR   the directory that survives restarts
 *   GPUPOOL_CHECKPOINT_SIGNAL  the name of the checkpoint signal, e.g. TERM
 *   GPUPOOL_EMULATED=1       when the GPUs are emulated
 *   for a fractional slice (less than a whole GPU):
 *   GPUPOOL_MEMORY_LIMIT     the slice's memory cap in bytes
 *   GPUPOOL_COMPUTE_SHARE    its compute share in percent (if set)
 *   GPUPOOL_SLICE            the name of its shared-memory ledger,
 *                            "<instance>-w<workload>-t<task>-a<attempt>" (one
 *                            per start, so that a restart never inherits stale
 *                            books, and one per executor instance, so that two
 *                            daemons on one host never share one)
 *   LD_PRELOAD               the interposer, ahead of any the workload gave,
 *                            if the interposer file exists
 *   for a MIG slice:
 *   GPUPOOL_MIG_PROFILE      the instance's profile (CUDA_VISIBLE_DEVICES
 *                            names the parent GPU until instance UUIDs are known)
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gp_env.h"
#include "common/gp_error.h"
#include "executors/local/local.h"
#include "executors/registry.h"

typedef struct envb {
    char **v;
    size_t n, cap;
    int oom;
} envb;

/* Length of the name part of "NAME=VALUE". */
static size_t name_len(const char *kv) {
    const char *eq = strchr(kv, '=');
    return eq != NULL ? (size_t)(eq - kv) : strlen(kv);
}

/* True for the variables that only gpupool sets (common/gp_env.h). */
static int managed(const char *kv) {
    return gp_env_managed(kv, name_len(kv));
}

/* Adds a copy of kv, replacing a variable of the same name. */
static void env_put(envb *e, const char *kv) {
    char *copy = strdup(kv);
    if (copy == NULL) {
        e->oom = 1;
        return;
    }
    size_t n = name_len(kv);
    for (size_t i = 0; i < e->n; i++) {
        if (name_len(e->v[i]) == n && strncmp(e->v[i], kv, n) == 0) {
            free(e->v[i]);
            e->v[i] = copy;
            return;
        }
    }
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        char **v = realloc(e->v, cap * sizeof *v);
        if (v == NULL) {
            free(copy);
            e->oom = 1;
            return;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = copy;
    e->v[e->n] = NULL;
}

static void env_setf(envb *e, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void env_setf(envb *e, const char *name, const char *fmt, ...) {
    char value[4096], kv[4200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    gpx__exec_fmt(kv, sizeof kv, "%s=%s", name, value);
    env_put(e, kv);
}

const char *gpx__env_get(char *const *env, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

void gpx__env_free(char **env) {
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

void gpx__slice_name(const char *instance, uint64_t workload, int32_t task, int32_t attempt,
                     char *buf, size_t len) {
    gpx__exec_fmt(buf, len, "%s-w%llu-t%d-a%d", instance, (unsigned long long)workload, task,
                  attempt);
}

/* Checks the binding against the node; finds its fractional slice (-1: none). */
static int check_binding(const gp_task_launch *t, int *frac, char *err, size_t errlen) {
    const gp_task_binding *b = t->binding;
    *frac = -1;
    if (b == NULL || b->nslices == 0)
        return 0;
    if (t->node == NULL) {
        gp_errf(err, errlen, "node: required when the binding has GPU slices");
        return GP_EINVAL;
    }
    if (b->nslices < 0 || b->nslices > GP_MAX_GPUS_PER_NODE) {
        gp_errf(err, errlen, "binding.nslices: %d is out of range", b->nslices);
        return GP_EINVAL;
    }
    for (int i = 0; i < b->nslices; i++) {
        const gp_slice *s = &b->slices[i];
        if (s->gpu < 0 || s->gpu >= t->node->ngpus) {
            gp_errf(err, errlen, "binding.slices[%d].gpu: %d is not a GPU of node %s", i, s->gpu,
                    t->node->name);
            return GP_EINVAL;
        }
        if (s->mig_slot < 0 && s->milli > 0 && s->milli < GP_MILLI) {
            if (*frac >= 0) {
                gp_errf(err, errlen,
                        "binding.slices[%d]: a task may hold only one fractional slice", i);
                return GP_EINVAL;
            }
            *frac = i;
        }
    }
    return 0;
}

/* Sets CUDA_VISIBLE_DEVICES and the MIG profile; describes the GPUs in note. */
static void set_gpus(envb *e, const gpx__local *lx, const gp_task_launch *t, char *note,
                     size_t notelen) {
    char uuids[GP_MAX_GPUS_PER_NODE * (GP_NAME_MAX + 1)] = "";
    const gp_task_binding *b = t->binding;
    for (int i = 0; b != NULL && i < b->nslices; i++) {
        const gp_gpu_spec *g = &t->node->gpus[b->slices[i].gpu];
        size_t l = strlen(uuids);
        gpx__exec_fmt(uuids + l, sizeof uuids - l, "%s%s", l ? "," : "", g->uuid);
        int slot = b->slices[i].mig_slot;
        if (slot >= 0 && slot < g->nmig)
            env_setf(e, GP_ENV_MIG_PROFILE, "%s", g->mig_layout[slot]);
    }
    env_setf(e, GP_ENV_VISIBLE_DEVICES, "%s", uuids);
    gpx__exec_fmt(note, notelen, "GPUs: %s%s", uuids[0] ? uuids : "none",
                  lx->emulated && uuids[0] ? " (EMULATED: no real GPU behind them)" : "");
}

/* Sets the limits of a fractional slice and injects the interposer. */
static void set_slice(envb *e, const gpx__local *lx, const gp_task_launch *t, const gp_slice *s,
                      const char *user_preload, char *note, size_t notelen) {
    char ledger[96];
    gpx__slice_name(lx->instance, t->workload, t->task, t->attempt, ledger, sizeof ledger);
    env_setf(e, GP_ENV_MEMORY_LIMIT, "%lld", (long long)s->mem);
    env_setf(e, GP_ENV_SLICE, "%s", ledger);
    if (t->compute_share > 0)
        env_setf(e, GP_ENV_COMPUTE_SHARE, "%d", t->compute_share);
    size_t l = strlen(note);
    if (lx->interposer[0] != '\0' && access(lx->interposer, R_OK) == 0) {
        if (user_preload != NULL && user_preload[0] != '\0')
            env_setf(e, GP_ENV_PRELOAD, "%s:%s", lx->interposer, user_preload);
        else
            env_setf(e, GP_ENV_PRELOAD, "%s", lx->interposer);
        gpx__exec_fmt(note + l, notelen - l,
                      "; slice %d milli-GPU, memory cap %lld bytes, enforced by %s", s->milli,
                      (long long)s->mem, lx->interposer);
    } else {
        gpx__exec_fmt(
            note + l, notelen - l,
            "; slice %d milli-GPU, memory cap %lld bytes, NOT ENFORCED: interposer %s not "
            "found (the cap is only announced in GPUPOOL_MEMORY_LIMIT)",
            s->milli, (long long)s->mem, lx->interposer[0] ? lx->interposer : "(none)");
    }
}

int gpx__env_build(const gpx__local *lx, const gp_task_launch *t, const gpx__user *u,
                   const char *ckpt_dir, char ***out, char *note, size_t notelen, char *err,
                   size_t errlen) {
    *out = NULL;
    int frac;
    int rc = check_binding(t, &frac, err, errlen);
    if (rc < 0)
        return rc;
    envb e = {NULL, 0, 0, 0};
    env_setf(&e, "PATH", "%s", GPX__TASK_PATH);
    env_setf(&e, "HOME", "%s", u->home);
    env_setf(&e, "USER", "%s", u->name);
    env_setf(&e, "LOGNAME", "%s", u->name);
    env_setf(&e, "SHELL", "%s", u->shell);
    env_setf(&e, "LANG", "C.UTF-8");
    const char *user_preload = NULL;
    for (size_t i = 0; t->env != NULL && t->env[i] != NULL; i++) {
        const char *kv = t->env[i];
        if (strchr(kv, '=') == NULL || kv[0] == '=') {
            gpx__env_free(e.v);
            gp_errf(err, errlen, "env[%zu]: '%.60s' is not NAME=VALUE", i, kv);
            return GP_EINVAL;
        }
        if (strncmp(kv, "LD_PRELOAD=", 11) == 0)
            user_preload = kv + 11;
        else if (managed(kv))
            continue; /* gpupool's to set; a workload cannot widen its slice */
        env_put(&e, kv);
    }
    char sig[32];
    const char *abbrev = sigabbrev_np(t->checkpoint_signal);
    gpx__exec_fmt(sig, sizeof sig, "%s", abbrev != NULL ? abbrev : "TERM");
    env_setf(&e, GP_ENV_WORKLOAD_ID, "%llu", (unsigned long long)t->workload);
    env_setf(&e, GP_ENV_TASK_INDEX, "%d", t->task);
    env_setf(&e, GP_ENV_ATTEMPT, "%d", t->attempt);
    env_setf(&e, GP_ENV_PROJECT, "%s", t->project != NULL ? t->project : "");
    env_setf(&e, GP_ENV_USER, "%s", t->user != NULL ? t->user : "");
    env_setf(&e, GP_ENV_NODE, "%s", t->node != NULL ? t->node->name : lx->node_name);
    env_setf(&e, GP_ENV_CHECKPOINT_DIR, "%s", ckpt_dir);
    env_setf(&e, GP_ENV_CHECKPOINT_SIGNAL, "%s", sig);
    if (lx->emulated)
        env_setf(&e, GP_ENV_EMULATED, "1");
    set_gpus(&e, lx, t, note, notelen);
    if (frac >= 0)
        set_slice(&e, lx, t, &t->binding->slices[frac], user_preload, note, notelen);
    if (e.oom || e.v == NULL) {
        gpx__env_free(e.v);
        gp_errf(err, errlen, "env: out of memory");
        return GP_ENOMEM;
    }
    *out = e.v;
    return 0;
}
