/*
 * contract.c — the environment a task receives, for every executor: the one
 * place that decides its variables (docs/workload-contract.md). Executors
 * only deliver the list (local: execve's envp; slurm: its batch script).
 *
 * Three layers, later ones winning: a clean base, never the daemon's own
 * environment (which may hold its secrets, and whose CUDA_VISIBLE_DEVICES
 * must not be handed on); the workload's variables (GPUPOOL_* and
 * CUDA_VISIBLE_DEVICES given there are skipped); gpupool's, which a workload
 * cannot override because they carry what the task is allowed to use.
 *
 * A name is kept once: a later layer replaces an earlier value in place.
 * Names are found through an open-addressing table sized from the number of
 * variables before the first one is added, so that building n variables
 * costs O(n) (a workload with 60,000 variables once cost the scheduler 25 s
 * through a linear search per variable).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/gp_env.h"
#include "common/gp_error.h"
#include "common/units.h"
#include "executors/contract.h"
#include "executors/registry.h"

void gpx__slice_name(const char *instance, uint64_t workload, int32_t task, int32_t attempt,
                     char *buf, size_t len) {
    gpx__exec_fmt(buf, len, "%s-w%llu-t%d-a%d", instance, (unsigned long long)workload, task,
                  attempt);
}

/* FNV-1a of the n bytes of a name. */
static uint64_t hash_name(const char *s, size_t n) {
    uint64_t h = GP_FNV1A_BASIS;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= GP_FNV1A_PRIME;
    }
    return h;
}

/* The slot of the name (n bytes): the one holding it, or the empty one
 * where it would go. The table is never more than half full. */
static size_t *slot_of(gpx__contract *c, const char *name, size_t n) {
    size_t mask = c->nslots - 1;
    for (size_t i = (size_t)hash_name(name, n) & mask;; i = (i + 1) & mask) {
        size_t k = c->slots[i];
        if (k == 0)
            return &c->slots[i];
        const gpx__env_var *v = &c->v[k - 1];
        if (v->name_len == n && memcmp(v->kv, name, n) == 0)
            return &c->slots[i];
    }
}

/* Sizes the list and its table for up to max variables. */
static int reserve(gpx__contract *c, size_t max) {
    size_t slots = 64;
    while (slots < 2 * max + 2)
        slots *= 2;
    c->v = calloc(max, sizeof *c->v);
    c->slots = calloc(slots, sizeof *c->slots);
    if (c->v == NULL || c->slots == NULL)
        return GP_ENOMEM;
    c->cap = max;
    c->nslots = slots;
    return 0;
}

/* Sets name (n bytes) to value, replacing an earlier value in place;
 * marks the list out of memory on failure. */
static gpx__env_var *put_n(gpx__contract *c, const char *name, size_t n, const char *value) {
    if (c->oom)
        return NULL;
    size_t vlen = strlen(value);
    char *kv = malloc(n + vlen + 2);
    if (kv == NULL) {
        c->oom = 1;
        return NULL;
    }
    memcpy(kv, name, n);
    kv[n] = '=';
    memcpy(kv + n + 1, value, vlen + 1);
    size_t *slot = slot_of(c, name, n);
    gpx__env_var *v;
    if (*slot != 0) {
        v = &c->v[*slot - 1];
        free(v->kv);
        free(v->otherwise);
    } else if (c->n < c->cap) {
        v = &c->v[c->n++];
        *slot = c->n;
    } else {
        free(kv); /* cannot happen: reserve() counted every variable */
        c->oom = 1;
        return NULL;
    }
    *v = (gpx__env_var){kv, n, 0, NULL};
    return v;
}

static gpx__env_var *put(gpx__contract *c, const char *name, const char *value) {
    return put_n(c, name, strlen(name), value);
}

static void putf(gpx__contract *c, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void putf(gpx__contract *c, const char *name, const char *fmt, ...) {
    char value[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    put(c, name, value);
}

const char *gpx__contract_get(const gpx__contract *c, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].name_len == n && memcmp(c->v[i].kv, name, n) == 0)
            return c->v[i].kv + n + 1;
    return NULL;
}

void gpx__contract_free(gpx__contract *c) {
    for (size_t i = 0; c->v != NULL && i < c->n; i++) {
        free(c->v[i].kv);
        free(c->v[i].otherwise);
    }
    free(c->v);
    free(c->slots);
    memset(c, 0, sizeof *c);
}

/* True for a name a shell can export (the daemon's API takes no other). */
static int valid_name(const char *s, size_t n) {
    if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char ch = s[i];
        if (!(ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9')))
            return 0;
    }
    return 1;
}

/* Checks the binding against the node; finds its fractional slice. */
static int check_binding(const gp_task_launch *t, const gp_slice **frac, char *err, size_t errlen) {
    const gp_task_binding *b = t->binding;
    *frac = NULL;
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
            if (*frac != NULL) {
                gp_errf(err, errlen,
                        "binding.slices[%d]: a task may hold only one fractional slice", i);
                return GP_EINVAL;
            }
            *frac = s;
        }
    }
    return 0;
}

/* CUDA_VISIBLE_DEVICES (the bound GPUs' UUIDs) and a MIG slice's profile. */
static void put_gpus(gpx__contract *c, const gpx__contract_in *in) {
    const gp_task_launch *t = in->t;
    const gp_task_binding *b = t->binding;
    char uuids[GP_MAX_GPUS_PER_NODE * (GP_NAME_MAX + 1)] = "";
    for (int i = 0; b != NULL && i < b->nslices; i++) {
        const gp_gpu_spec *g = &t->node->gpus[b->slices[i].gpu];
        size_t l = strlen(uuids);
        gpx__exec_fmt(uuids + l, sizeof uuids - l, "%s%s", l ? "," : "", g->uuid);
        int slot = b->slices[i].mig_slot;
        if (slot >= 0 && slot < g->nmig)
            put(c, GP_ENV_MIG_PROFILE, g->mig_layout[slot]);
    }
    if (!in->engine_devices || uuids[0] == '\0')
        put(c, GP_ENV_VISIBLE_DEVICES, in->engine_devices ? "" : uuids);
}

/* The limits of a fractional slice, its ledger's name, and the interposer
 * ahead of the workload's own preload. */
static void put_slice(gpx__contract *c, const gpx__contract_in *in, const gp_slice *s,
                      const char *user_preload) {
    const gp_task_launch *t = in->t;
    char ledger[128];
    gpx__slice_name(in->instance != NULL ? in->instance : "", t->workload, t->task, t->attempt,
                    ledger, sizeof ledger);
    putf(c, GP_ENV_MEMORY_LIMIT, "%lld", (long long)s->mem);
    put(c, GP_ENV_SLICE, ledger);
    if (t->compute_share > 0)
        putf(c, GP_ENV_COMPUTE_SHARE, "%d", t->compute_share);
    if (in->interposer == NULL || in->interposer[0] == '\0' || in->interposer_found == 0)
        return;
    int mine = user_preload != NULL && user_preload[0] != '\0';
    size_t len = strlen(in->interposer) + (mine ? strlen(user_preload) + 1 : 0) + 1;
    char *value = malloc(len);
    if (value == NULL) {
        c->oom = 1;
        return;
    }
    snprintf(value, len, "%s%s%s", in->interposer, mine ? ":" : "", mine ? user_preload : "");
    gpx__env_var *v = put(c, GP_ENV_PRELOAD, value);
    free(value);
    if (v != NULL && in->interposer_found < 0) {
        /* Decided on the node: without the interposer there, the
         * workload's own preload stays as it gave it. */
        v->if_interposer = 1;
        if (mine && (v->otherwise = strdup(user_preload)) == NULL)
            c->oom = 1;
    }
}

/* A gang's rendezvous, as torch.distributed's env:// reads it. Every task
 * sees only its own GPUs, so its local rank is 0 wherever it runs. The port
 * is the daemon's choice (t->master_port), which knows the other gangs on
 * task 0's node; none given, the workload's preferred one. */
static void put_gang(gpx__contract *c, const gpx__contract_in *in) {
    const gp_task_launch *t = in->t;
    putf(c, "WORLD_SIZE", "%d", t->gang_size);
    putf(c, "RANK", "%d", t->task);
    put(c, "LOCAL_RANK", "0");
    put(c, "MASTER_ADDR", in->master_addr != NULL ? in->master_addr : "");
    putf(c, "MASTER_PORT", "%d",
         t->master_port > 0 ? t->master_port : GP_MASTER_PORT_OF(t->workload));
}

/* How many variables the list may hold: the base, the workload's, gpupool's. */
#define GPUPOOL_VARS 32

int gpx__contract_build(const gpx__contract_in *in, gpx__contract *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    const gp_task_launch *t = in->t;
    const gp_slice *frac;
    int rc = check_binding(t, &frac, err, errlen);
    if (rc < 0)
        return rc;
    size_t nenv = 0;
    for (; t->env != NULL && t->env[nenv] != NULL; nenv++) {
        const char *kv = t->env[nenv];
        const char *eq = strchr(kv, '=');
        if (eq == NULL || !valid_name(kv, (size_t)(eq - kv))) {
            gp_errf(err, errlen, "env[%zu]: '%.60s' is not NAME=VALUE", nenv, kv);
            return GP_EINVAL;
        }
    }
    if (reserve(c, nenv + GPUPOOL_VARS) < 0) {
        gpx__contract_free(c);
        gp_errf(err, errlen, "env: out of memory");
        return GP_ENOMEM;
    }
    c->frac = frac;
    put(c, "PATH", GPX__TASK_PATH);
    const gpx__exec_user *u = in->user;
    put(c, "HOME", u != NULL ? u->home : "/");
    put(c, "USER", u != NULL ? u->name : "");
    put(c, "LOGNAME", u != NULL ? u->name : "");
    put(c, "SHELL", u != NULL ? u->shell : "/bin/sh");
    put(c, "LANG", "C.UTF-8");
    const char *user_preload = NULL;
    for (size_t i = 0; i < nenv; i++) {
        const char *kv = t->env[i];
        size_t n = (size_t)(strchr(kv, '=') - kv);
        if (gp_env_is(kv, n, GP_ENV_PRELOAD))
            user_preload = kv + n + 1;
        else if (gp_env_managed(kv, n))
            continue; /* gpupool's to set; a workload cannot widen its slice */
        put_n(c, kv, n, kv + n + 1);
    }
    const char *sig = gp_signal_name(t->checkpoint_signal > 0 ? t->checkpoint_signal : SIGTERM);
    putf(c, GP_ENV_WORKLOAD_ID, "%llu", (unsigned long long)t->workload);
    putf(c, GP_ENV_TASK_INDEX, "%d", t->task);
    putf(c, GP_ENV_ATTEMPT, "%d", t->attempt);
    put(c, GP_ENV_PROJECT, t->project != NULL ? t->project : "");
    put(c, GP_ENV_USER, t->user != NULL ? t->user : "");
    put(c, GP_ENV_NODE,
        t->node != NULL         ? t->node->name
        : in->node_name != NULL ? in->node_name
                                : "");
    put(c, GP_ENV_CHECKPOINT_DIR, in->ckpt_dir != NULL ? in->ckpt_dir : "");
    put(c, GP_ENV_CHECKPOINT_SIGNAL, sig != NULL ? sig : "TERM");
    if (in->emulated)
        put(c, GP_ENV_EMULATED, "1");
    if (t->gang_size > 1)
        put_gang(c, in);
    put_gpus(c, in);
    if (frac != NULL)
        put_slice(c, in, frac, user_preload);
    if (c->oom) {
        gpx__contract_free(c);
        gp_errf(err, errlen, "env: out of memory");
        return GP_ENOMEM;
    }
    return 0;
}
