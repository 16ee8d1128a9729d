/*
 * workload.c — workloads inside the engine: validation of what callers
 * submit, the state machine (PENDING, BOUND, RUNNING, EVICTING), binding and
 * unbinding tasks with the books of nodes and queues, restoring bindings after
 * a caller's restart, and reading a workload back.
 *
 * Every state change goes through gp__wl_set_state(), which moves the
 * workload in and out of its queue's pending list and demand; every change of
 * what a workload holds goes through gp__wl_bind_task() / gp__wl_unbind(),
 * which charge and refund nodes and queues together, so the books balance by
 * construction (gp_engine_check() verifies it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* ---- MIG profiles (A100 40/80 GB, H100 80 GB, H200 141 GB) ---- */

static const struct {
    const char *name;
    int32_t slices; /* compute slices of 7 */
    int32_t gb;     /* memory, in 10^9 bytes */
} mig_profiles[] = {
    {"1g.5gb", 1, 5},     {"1g.10gb", 1, 10}, {"2g.10gb", 2, 10}, {"3g.20gb", 3, 20},
    {"4g.20gb", 4, 20},   {"7g.40gb", 7, 40}, {"1g.20gb", 1, 20}, {"2g.20gb", 2, 20},
    {"3g.40gb", 3, 40},   {"4g.40gb", 4, 40}, {"7g.80gb", 7, 80}, {"1g.18gb", 1, 18},
    {"1g.35gb", 1, 35},   {"2g.35gb", 2, 35}, {"3g.71gb", 3, 71}, {"4g.71gb", 4, 71},
    {"7g.141gb", 7, 141},
};
#define NPROFILES ((int)(sizeof mig_profiles / sizeof mig_profiles[0]))

int gp__mig_profile_find(const char *name) {
    for (int i = 0; i < NPROFILES; i++)
        if (strncmp(name, mig_profiles[i].name, 16) == 0)
            return i;
    return -1;
}

/* A MIG instance charges its compute slices as sevenths of a GPU (rounded
 * down, so seven 1g instances never exceed one GPU) and its memory. */
int32_t gp__mig_milli(int p) {
    int32_t s = mig_profiles[p].slices;
    return s == 7 ? GP_MILLI : s * GP_MILLI / 7;
}

int64_t gp__mig_mem(int p) {
    return (int64_t)mig_profiles[p].gb * 1000000000;
}

/* ---- Specs and validation ---- */

void gp_workload_spec_init(gp_workload_spec *w, uint64_t id, const char *queue) {
    memset(w, 0, sizeof *w);
    w->id = id;
    snprintf(w->queue, sizeof w->queue, "%s", queue ? queue : "");
    w->kind = GP_KIND_TRAIN;
    w->preemptible = GP_DEFAULT;
    w->tasks = 1;
    w->req.gpu = GP_GPU_NONE;
}

static int validate_req(const gp_engine *e, const gp_task_req *r, char *err, size_t errlen) {
    int pool = e->live_nodes > 0;
    switch (r->gpu) {
    case GP_GPU_NONE:
        break;
    case GP_GPU_WHOLE:
        if (r->gpus < 1 || r->gpus > GP_MAX_GPUS_PER_NODE) {
            gp_errf(err, errlen, "req.gpus: must be 1 to %d whole GPUs per task",
                    GP_MAX_GPUS_PER_NODE);
            return GP_EINVAL;
        }
        if (pool && r->gpus > e->max_gpus) {
            gp_errf(err, errlen, "req.gpus: %d GPUs per task, but no node has more than %d",
                    r->gpus, e->max_gpus);
            return GP_EINVAL;
        }
        break;
    case GP_GPU_FRACTION:
        if (r->gpu_milli < 1 || r->gpu_milli >= GP_MILLI) {
            gp_errf(err, errlen,
                    "req.gpu_milli: a fraction of one GPU must be 1 to 999 milli-GPU "
                    "(use whole GPUs for more)");
            return GP_EINVAL;
        }
        break;
    case GP_GPU_MEMORY:
        if (r->gpu_mem <= 0) {
            gp_errf(err, errlen, "req.gpu_mem: must be positive");
            return GP_EINVAL;
        }
        if (pool && r->gpu_mem > e->max_gpu_mem) {
            gp_errf(err, errlen,
                    "req.gpu_mem: %lld bytes, more than any GPU of the pool has (%lld)",
                    (long long)r->gpu_mem, (long long)e->max_gpu_mem);
            return GP_EINVAL;
        }
        break;
    case GP_GPU_MIG:
        if (gp__too_long(r->mig_profile, sizeof r->mig_profile, NULL, NULL, 0) ||
            gp__mig_profile_find(r->mig_profile) < 0) {
            gp_errf(err, errlen, "req.mig_profile: unknown MIG profile '%.16s'", r->mig_profile);
            return GP_EINVAL;
        }
        break;
    default:
        gp_errf(err, errlen, "req.gpu: unknown kind of GPU request");
        return GP_EINVAL;
    }
    if (gp__negative(r->cpu_milli, "req.cpu_milli", err, errlen) ||
        gp__negative(r->mem_bytes, "req.mem_bytes", err, errlen) ||
        gp__not_count(r->nmodels, GP_MAX_MODELS, "req.nmodels", err, errlen))
        return GP_EINVAL;
    for (int32_t i = 0; i < r->nmodels; i++) {
        if (gp__bad_name(r->models[i], sizeof r->models[i], NULL, NULL, 0)) {
            gp_errf(err, errlen, "req.models[%d]: must be 1 to %d characters", i, GP_NAME_MAX);
            return GP_EINVAL;
        }
        if (pool && gp__model_find(e, r->models[i]) < 0) {
            gp_errf(err, errlen, "req.models[%d]: no GPU of model '%s' in the pool", i,
                    r->models[i]);
            return GP_EINVAL;
        }
    }
    if (gp__not_count(r->nselectors, GP_MAX_SELECTORS, "req.nselectors", err, errlen) ||
        gp__bad_labels(r->selectors, r->nselectors, "req.selectors", err, errlen))
        return GP_EINVAL;
    return 0;
}

/* Checks w; with check_id 0, its id is not looked at (a dry run). */
static int validate(const gp_engine *e, const gp_workload_spec *w, int check_id, gp__queue **q,
                    char *err, size_t errlen) {
    if (check_id && w->id == 0) {
        gp_errf(err, errlen, "id: must not be 0");
        return GP_EINVAL;
    }
    if (check_id && gp__wl_find(e, w->id)) {
        gp_errf(err, errlen, "id: workload %llu exists", (unsigned long long)w->id);
        return GP_EEXIST;
    }
    if (gp__too_long(w->queue, sizeof w->queue, "queue", err, errlen) ||
        gp__too_long(w->user, sizeof w->user, "user", err, errlen))
        return GP_EINVAL;
    *q = gp__queue_find(e, w->queue);
    if (!*q) {
        gp_errf(err, errlen, "queue: no project named '%s'", w->queue);
        return GP_ENOENT;
    }
    if ((*q)->nchildren) {
        gp_errf(err, errlen, "queue: '%s' is a department; submit to one of its projects",
                w->queue);
        return GP_EINVAL;
    }
    if (gp__bad_kind(w->kind, "kind", err, errlen) ||
        gp__bad_on_preempt(w->on_preempt, "on_preempt", err, errlen))
        return GP_EINVAL;
    if (w->preemptible != 0 && w->preemptible != 1 && w->preemptible != GP_DEFAULT) {
        gp_errf(err, errlen, "preemptible: must be 0, 1 or default");
        return GP_EINVAL;
    }
    if (gp__negative(w->min_runtime, "min_runtime", err, errlen))
        return GP_EINVAL;
    if (w->tasks < 1 || w->tasks > 100000) {
        gp_errf(err, errlen, "tasks: must be 1 to 100000");
        return GP_EINVAL;
    }
    if (w->min_tasks < 0 || w->min_tasks > w->tasks) {
        gp_errf(err, errlen, "min_tasks: must be 0 to tasks (%d)", w->tasks);
        return GP_EINVAL;
    }
    if (w->same_domain != 0 && w->same_domain != 1) {
        gp_errf(err, errlen, "same_domain: must be 0 or 1");
        return GP_EINVAL;
    }
    return validate_req(e, &w->req, err, errlen);
}

/* The lists of kept fields (internal.h) name the public fields' types. */
#define SAME_TYPE(pub, type, name)                                                                 \
    _Static_assert(_Generic(((pub *)NULL)->name, type : 1, default : 0),                           \
                   #pub "." #name " is not " #type);
#define TREQ_SAME_TYPE(type, name)  SAME_TYPE(gp_task_req, type, name)
#define WSPEC_SAME_TYPE(type, name) SAME_TYPE(gp_workload_spec, type, name)
GP__TREQ_KEPT(TREQ_SAME_TYPE)
GP__WSPEC_KEPT(WSPEC_SAME_TYPE)

/* Copies what the engine keeps of spec into w (selectors already copied). */
static void keep_spec(gp__wl *w, const gp_workload_spec *in) {
    gp__wspec *s = &w->spec;
#define KEEP(type, name)     s->name = in->name;
#define KEEP_REQ(type, name) s->req.name = in->req.name;
    GP__WSPEC_KEPT(KEEP)
    GP__TREQ_KEPT(KEEP_REQ)
#undef KEEP
#undef KEEP_REQ
    memcpy(s->req.mig_profile, in->req.mig_profile, sizeof s->req.mig_profile);
}

/* Fills the derived fields of a new workload from its spec. */
static void derive(const gp_engine *e, gp__wl *w, const gp_workload_spec *in) {
    const gp__treq *r = &w->spec.req;
    if (w->spec.min_tasks == 0)
        w->spec.min_tasks = w->spec.tasks;
    w->preemptible =
        w->spec.preemptible == GP_DEFAULT ? w->spec.kind == GP_KIND_TRAIN : w->spec.preemptible;
    w->mig_profile = r->gpu == GP_GPU_MIG ? gp__mig_profile_find(r->mig_profile) : -1;
    memset(&w->preq, 0, sizeof w->preq);
    w->preq.cpu = r->cpu_milli;
    w->preq.mem = r->mem_bytes;
    int64_t milli = 0;
    switch (r->gpu) {
    case GP_GPU_WHOLE:
        w->preq.ngpus = r->gpus;
        milli = (int64_t)r->gpus * GP_MILLI;
        break;
    case GP_GPU_FRACTION:
        w->preq.milli = r->gpu_milli;
        milli = r->gpu_milli;
        break;
    case GP_GPU_MEMORY:
        w->preq.gpu_mem = r->gpu_mem;
        /* Pending demand is estimated on the largest GPU; the real charge is
         * known once a GPU is chosen. */
        milli = e->max_gpu_mem > 0
                    ? ((__int128)r->gpu_mem * GP_MILLI + e->max_gpu_mem - 1) / e->max_gpu_mem
                    : GP_MILLI;
        if (milli > GP_MILLI)
            milli = GP_MILLI;
        break;
    case GP_GPU_MIG:
        milli = gp__mig_milli(w->mig_profile);
        break;
    case GP_GPU_NONE:
        break;
    }
    for (int32_t i = 0; i < in->req.nmodels; i++) {
        int id = gp__model_find(e, in->req.models[i]);
        /* A model the pool does not have yet still restricts the request:
         * bit 63 stands for "some other model", which no GPU carries. */
        w->preq.models |= UINT64_C(1) << (id >= 0 ? id : 63);
    }
    w->per_task.v[GP_RES_GPU] = milli;
    w->per_task.v[GP_RES_CPU] = r->cpu_milli;
    w->per_task.v[GP_RES_MEM] = r->mem_bytes;
    w->started = -1;
    gp__wait_set(w, GP_WAIT_NEW);
    w->wait.node = -1;
}

gp__wl *gp__wl_find(const gp_engine *e, uint64_t id) {
    return id ? gp__u64map_get(&e->wl_by_id, id) : NULL;
}

static void demand_of(const gp__wl *w, gp_res *out) {
    for (int r = 0; r < GP_RES_COUNT; r++)
        out->v[r] = w->per_task.v[r] * w->spec.tasks;
}

void gp__wl_set_state(gp_engine *e, gp__wl *w, gp_state s) {
    (void)e;
    if (w->state == s)
        return;
    gp_res d;
    demand_of(w, &d);
    if (w->state == GP_STATE_PENDING) {
        if (gp__queue_hold_add(w->queue, w) != 0)
            abort(); /* room reserved by the caller: see gp__queue_reserve() */
        gp__queue_pending_del(w->queue, w);
        gp__queue_demand(w->queue, &d, -1);
        for (gp__queue *a = w->queue; a; a = a->parent)
            a->nrunning++;
    }
    if (s == GP_STATE_PENDING) {
        gp__queue_hold_del(w->queue, w);
        for (gp__queue *a = w->queue; a; a = a->parent)
            a->nrunning--;
        gp__queue_pending_add(w->queue, w); /* room reserved by the caller */
        gp__queue_demand(w->queue, &d, +1);
        gp__wait_set(w, GP_WAIT_NEW);
        w->started = -1;
    }
    w->state = s;
}

/* Creates the engine's workload from a validated spec, PENDING. */
static gp__wl *create(gp_engine *e, const gp_workload_spec *spec, gp__queue *q) {
    gp__wl *w = gp__calloc(&e->alloc, 1, sizeof *w);
    if (!w)
        return NULL;
    w->tasks = gp__calloc(&e->alloc, (size_t)spec->tasks, sizeof *w->tasks);
    size_t nsel = (size_t)spec->req.nselectors;
    w->spec.req.selectors =
        nsel ? gp__malloc(&e->alloc, nsel * sizeof *w->spec.req.selectors) : NULL;
    if (!w->tasks || (nsel && !w->spec.req.selectors) || gp__queue_reserve(q) != 0 ||
        gp__u64map_put(&e->wl_by_id, spec->id, w)) {
        gp__free(&e->alloc, w->spec.req.selectors);
        gp__free(&e->alloc, w->tasks);
        gp__free(&e->alloc, w);
        return NULL;
    }
    if (nsel)
        memcpy(w->spec.req.selectors, spec->req.selectors, nsel * sizeof *spec->req.selectors);
    keep_spec(w, spec);
    w->queue = q;
    derive(e, w, spec);
    w->state = GP_STATE_PENDING;
    gp_res d;
    demand_of(w, &d);
    gp__queue_pending_add(q, w);
    gp__queue_demand(q, &d, +1);
    e->nworkloads++;
    gp__shapes_learn(e, w);
    return w;
}

/* Refuses what no state of the pool could ever run (docs/engine.md): more
 * than a limit of its project or a department above it allows at once, or,
 * on a pool with nodes, more tasks than the pool with every node empty
 * (cordoned ones included) could hold at once. */
static int check_runnable(const gp_engine *e, const gp_workload_spec *spec, gp__queue *q, char *err,
                          size_t errlen) {
    gp__wl t;
    gp_label sel[GP_MAX_SELECTORS];
    memset(&t, 0, sizeof t);
    keep_spec(&t, spec);
    memcpy(sel, spec->req.selectors, (size_t)spec->req.nselectors * sizeof *sel);
    t.spec.req.selectors = sel;
    t.queue = q;
    derive(e, &t, spec);
    for (const gp__queue *x = q; x; x = x->parent) {
        for (int r = 0; r < GP_RES_COUNT; r++) {
            int64_t lim = x->spec.quota[r].limit, need = t.per_task.v[r] * t.spec.min_tasks;
            if (lim == GP_UNLIMITED || need <= lim)
                continue;
            char a[48], b[48];
            gp__fmt_amount(a, sizeof a, r, need);
            gp__fmt_amount(b, sizeof b, r, lim);
            gp_errf(err, errlen,
                    "cannot run on this pool: it needs %s at once, more than the limit of %s "
                    "of %s %s (an administrator can raise the limit)",
                    a, b, x->nchildren ? "department" : "project", x->spec.name);
            return GP_EINVAL;
        }
    }
    if (e->live_nodes == 0)
        return 0; /* nodes may not have joined yet */
    uint64_t all = e->nmodels >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << e->nmodels) - 1;
    int64_t k =
        gp__pool_could_hold(e, &t, t.preq.models ? t.preq.models : all, 1, t.spec.min_tasks);
    if (k >= t.spec.min_tasks)
        return 0;
    if (t.spec.min_tasks == 1 || k == 0)
        gp_errf(err, errlen,
                "cannot run on this pool: no node could ever hold one task (GPUs, CPU, "
                "memory%s%s)",
                spec->req.nmodels ? ", allowed GPU models" : "",
                spec->req.nselectors ? ", node selectors" : "");
    else
        gp_errf(err, errlen,
                "cannot run on this pool: even with every node empty, only %lld of its %d "
                "tasks fit at once%s",
                (long long)k, t.spec.min_tasks, spec->same_domain ? " in one topology domain" : "");
    return GP_EINVAL;
}

int gp_engine_submit_check(const gp_engine *e, const gp_workload_spec *spec, char *err,
                           size_t errlen) {
    gp__queue *q;
    int rc = validate(e, spec, 0, &q, err, errlen);
    return rc ? rc : check_runnable(e, spec, q, err, errlen);
}

int gp_engine_submit(gp_engine *e, const gp_workload_spec *spec, char *err, size_t errlen) {
    gp__queue *q;
    int rc = validate(e, spec, 1, &q, err, errlen);
    if (rc == 0)
        rc = check_runnable(e, spec, q, err, errlen);
    if (rc)
        return rc;
    return create(e, spec, q) ? 0 : GP_ENOMEM;
}

/* ---- Binding ---- */

/* The quota charge of one task's slices. */
static void task_charge(const gp__node *n, const gp__wl *w, const gp__task *t, gp_res *out) {
    out->v[GP_RES_GPU] = 0;
    for (int32_t i = 0; i < t->b.nslices; i++)
        out->v[GP_RES_GPU] += t->b.slices[i].milli;
    out->v[GP_RES_CPU] = w->spec.req.cpu_milli;
    out->v[GP_RES_MEM] = w->spec.req.mem_bytes;
    (void)n;
}

static void account_task(gp_engine *e, gp__wl *w, const gp__node *n, const gp__task *t, int sign) {
    (void)e;
    gp_res c;
    task_charge(n, w, t, &c);
    gp__queue_account(w->queue, &c, w->preemptible ? NULL : &c, sign);
    for (int32_t i = 0; i < t->b.nslices; i++)
        gp__queue_model(w->queue, n->gpu_model[t->b.slices[i].gpu], t->b.slices[i].milli, sign);
    for (int r = 0; r < GP_RES_COUNT; r++)
        w->charged.v[r] += sign * c.v[r];
}

/* Tells the placer that task t of w was placed on (sign +1) or taken off
 * (sign -1) node n, for policies that remember what runs where (GPU
 * clustering). MIG tasks never went through a placer. */
static void placer_hook(gp_engine *e, const gp__wl *w, const gp__node *n, const gp__task *t,
                        int sign) {
    if (w->mig_profile >= 0)
        return;
    gp__pchoice c = {.ngpus = t->b.nslices};
    for (int32_t i = 0; i < t->b.nslices; i++)
        c.gpu[i] = t->b.slices[i].gpu;
    if (sign > 0)
        gp__placer_bound(e->placer, &n->view, &w->preq, &c);
    else
        gp__placer_unbound(e->placer, &n->view, &w->preq, &c);
}

int gp__wl_bind_task(gp_engine *e, gp__wl *w, int32_t ti, uint32_t node, const gp_slice *slices,
                     int32_t nslices) {
    gp__node *n = gp__node_at(e, node);
    gp__tref ref = {w, ti};
    if (gp__push(&e->alloc, (void **)&n->tasks, &n->ntasks, &n->cap_tasks, sizeof ref, &ref) != 0)
        return GP_ENOMEM;
    gp__task *t = &w->tasks[ti];
    t->node = node;
    t->node_pos = n->ntasks - 1;
    t->b.node = n->spec.name;
    t->b.nslices = nslices;
    memmove(t->b.slices, slices, (size_t)nslices * sizeof *slices); /* may be restoring itself */
    for (int32_t i = 0; i < nslices; i++)
        gp__node_charge(e, n, &slices[i], w->spec.id, +1);
    gp__node_cpu(e, n, w->spec.req.cpu_milli, w->spec.req.mem_bytes, +1);
    gp__node_refresh(e, n);
    placer_hook(e, w, n, t, +1);
    account_task(e, w, n, t, +1);
    w->nbound++;
    return 0;
}

/* Takes the last bound task of w off its node. */
static void unbind_last(gp_engine *e, gp__wl *w) {
    gp__task *t = &w->tasks[--w->nbound];
    gp__node *n = gp__node_at(e, t->node);
    account_task(e, w, n, t, -1);
    placer_hook(e, w, n, t, -1);
    for (int32_t i = 0; i < t->b.nslices; i++)
        gp__node_charge(e, n, &t->b.slices[i], w->spec.id, -1);
    gp__node_cpu(e, n, w->spec.req.cpu_milli, w->spec.req.mem_bytes, -1);
    /* Swap-remove from the node's task index. */
    uint32_t pos = t->node_pos;
    n->tasks[pos] = n->tasks[--n->ntasks];
    if (pos < n->ntasks) {
        gp__tref *moved = &n->tasks[pos];
        moved->wl->tasks[moved->task].node_pos = pos;
    }
    gp__node_refresh(e, n);
}

void gp__wl_unbind(gp_engine *e, gp__wl *w) {
    while (w->nbound > 0)
        unbind_last(e, w);
}

void gp__wl_dispose(gp_engine *e, gp__wl *w) {
    gp__free(&e->alloc, w->spec.req.selectors);
    gp__free(&e->alloc, w->tasks);
    gp__free(&e->alloc, w);
}

void gp__wl_leaving(gp__wl *v, int sign) {
    for (gp__queue *a = v->queue; a; a = a->parent)
        a->leaving += sign * v->charged.v[GP_RES_GPU];
}

void gp__wl_promise(gp__wl *w, int64_t milli) {
    for (gp__queue *a = w->queue; a; a = a->parent)
        a->arriving += milli - w->promised;
    w->promised = milli;
}

/* ---- Events from the caller ---- */

static void destroy(gp_engine *e, gp__wl *w) {
    gp__pause_drop(e, w);
    if (w->state == GP_STATE_EVICTING) {
        gp__wl_leaving(w, -1); /* before unbinding: it counts what w holds */
        gp__wl *b = gp__wl_find(e, w->beneficiary);
        if (b && b->victims_left > 0)
            b->victims_left--;
    }
    gp__wl_unbind(e, w);
    if (w->state == GP_STATE_PENDING) {
        gp_res d;
        demand_of(w, &d);
        gp__queue_pending_del(w->queue, w);
        gp__queue_demand(w->queue, &d, -1);
    } else {
        gp__queue_hold_del(w->queue, w);
        for (gp__queue *a = w->queue; a; a = a->parent)
            a->nrunning--;
    }
    gp__wl_promise(w, 0);
    gp__u64map_del(&e->wl_by_id, w->spec.id);
    e->nworkloads--;
    gp__wl_dispose(e, w);
}

int gp_engine_cancel(gp_engine *e, uint64_t id) {
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    destroy(e, w);
    return 0;
}

int gp_engine_finished(gp_engine *e, uint64_t id) {
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    /* Pending, only a paused one has a task that can end. */
    if (w->state == GP_STATE_PENDING && !w->paused_on)
        return GP_ESTATE;
    destroy(e, w);
    return 0;
}

int gp_engine_started(gp_engine *e, uint64_t id, gp_time_ms now) {
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    if (w->state != GP_STATE_BOUND)
        return GP_ESTATE;
    gp__wl_set_state(e, w, GP_STATE_RUNNING);
    w->started = now;
    w->resume = 0;
    return 0;
}

/* Sends a bound workload back to PENDING, freeing what it holds. */
int gp__wl_back_to_pending(gp_engine *e, gp__wl *w) {
    if (gp__queue_reserve(w->queue) != 0)
        return GP_ENOMEM;
    uint64_t beneficiary = w->beneficiary;
    if (w->state == GP_STATE_EVICTING)
        gp__wl_leaving(w, -1);
    gp__wl_unbind(e, w);
    gp__wl_set_state(e, w, GP_STATE_PENDING);
    w->beneficiary = 0;
    gp__wl *b = gp__wl_find(e, beneficiary);
    if (b && b->victims_left > 0)
        b->victims_left--;
    return 0;
}

void gp__wl_lost(gp_engine *e, gp__wl *w) {
    /* Report first: once the tasks are gone the caller must hear of it. */
    if (gp__push(&e->alloc, (void **)&e->gone, &e->ngone, &e->cap_gone, sizeof w->spec.id,
                 &w->spec.id) ||
        gp__queue_reserve(w->queue) != 0)
        abort(); /* gp_engine_node_remove() reserves room for all of it first */
    gp__pause_drop(e, w);
    if (gp__wl_back_to_pending(e, w) != 0)
        abort(); /* reserved just above */
    w->evictions++;
}

int gp_engine_released(gp_engine *e, uint64_t id, gp_time_ms now) {
    (void)now;
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    if (w->state != GP_STATE_EVICTING)
        return GP_ESTATE;
    if (gp__queue_reserve(w->queue) != 0)
        return GP_ENOMEM;
    gp__pause_drop(e, w); /* a pause that failed: stopped in checkpoint mode */
    return gp__wl_back_to_pending(e, w);
}

int gp_engine_requeue(gp_engine *e, uint64_t id) {
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    if (w->state == GP_STATE_PENDING) {
        if (!w->paused_on)
            return GP_ESTATE;
        gp__pause_drop(e, w); /* its frozen task is gone: nothing to resume */
        return 0;
    }
    if (gp__queue_reserve(w->queue) != 0)
        return GP_ENOMEM;
    gp__pause_drop(e, w);
    return gp__wl_back_to_pending(e, w);
}

/* Checks that slices s[0..n) of a restored task are valid and free on node. */
static int restore_fits(const gp__node *node, const gp__wl *w, const gp_slice *s, int32_t n,
                        char *err, size_t errlen) {
    int32_t milli[GP_MAX_GPUS_PER_NODE] = {0};
    int64_t mem[GP_MAX_GPUS_PER_NODE] = {0};
    if (gp__not_count(n, GP_MAX_GPUS_PER_NODE, "tasks.nslices", err, errlen))
        return GP_EINVAL;
    for (int32_t i = 0; i < n; i++) {
        int32_t g = s[i].gpu;
        if (g < 0 || g >= node->spec.ngpus) {
            gp_errf(err, errlen, "tasks.slices[%d].gpu: node %s has no GPU %d", i, node->spec.name,
                    g);
            return GP_EINVAL;
        }
        if (s[i].mig_slot >= 0) {
            if (!node->spec.gpus[g].mig || s[i].mig_slot >= node->spec.gpus[g].nmig ||
                node->mig_owner[g][s[i].mig_slot]) {
                gp_errf(err, errlen, "tasks.slices[%d].mig_slot: not a free MIG instance", i);
                return GP_EBUSY;
            }
            continue;
        }
        milli[g] += s[i].milli;
        mem[g] += s[i].mem;
        if (s[i].milli <= 0 || s[i].mem < 0 || node->spec.gpus[g].mig ||
            milli[g] > (node->withheld[g] ? GP_MILLI : node->free_milli[g]) ||
            mem[g] > (node->withheld[g] ? node->cap_mem[g] : node->free_mem[g])) {
            gp_errf(err, errlen, "tasks.slices[%d]: GPU %d of node %s has no such room free", i, g,
                    node->spec.name);
            return GP_EBUSY;
        }
    }
    if (node->cpu_free < w->spec.req.cpu_milli || node->mem_free < w->spec.req.mem_bytes) {
        gp_errf(err, errlen, "tasks.node: node %s lacks the CPU or memory", node->spec.name);
        return GP_EBUSY;
    }
    return 0;
}

int gp_engine_restore(gp_engine *e, const gp_workload_spec *spec, int32_t ntasks,
                      const gp_task_binding *tasks, gp_time_ms started, char *err, size_t errlen) {
    gp__queue *q;
    int rc = validate(e, spec, 1, &q, err, errlen);
    if (rc)
        return rc;
    int32_t min = spec->min_tasks ? spec->min_tasks : spec->tasks;
    if (ntasks < min || ntasks > spec->tasks) {
        gp_errf(err, errlen, "ntasks: must be %d to %d", min, spec->tasks);
        return GP_EINVAL;
    }
    gp__wl *w = create(e, spec, q);
    if (!w)
        return GP_ENOMEM;
    for (int32_t t = 0; t < ntasks && rc == 0; t++) {
        gp__node *n = tasks[t].node ? gp__strmap_get(&e->node_by_name, tasks[t].node) : NULL;
        if (!n) {
            gp_errf(err, errlen, "tasks[%d].node: no node named '%s'", t,
                    tasks[t].node ? tasks[t].node : "");
            rc = GP_ENOENT;
            break;
        }
        rc = restore_fits(n, w, tasks[t].slices, tasks[t].nslices, err, errlen);
        if (rc == 0)
            rc = gp__wl_bind_task(e, w, t, n->id, tasks[t].slices, tasks[t].nslices);
    }
    if (rc) {
        destroy(e, w);
        return rc;
    }
    gp__wl_set_state(e, w, GP_STATE_BOUND);
    if (started >= 0) {
        gp__wl_set_state(e, w, GP_STATE_RUNNING);
        w->started = started;
    }
    gp__wait_set(w, GP_WAIT_NONE);
    return 0;
}

/* ---- Reading workloads ---- */

int gp_engine_workload_get(gp_engine *e, uint64_t id, gp_workload_info *out) {
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    gp__wl_diagnosed(e, w);
    memset(out, 0, sizeof *out);
    out->id = w->spec.id;
    out->queue = w->queue->spec.name;
    out->state = w->state;
    out->wait = w->state == GP_STATE_PENDING ? w->wait.why : GP_WAIT_NONE;
    out->preemptible = w->preemptible;
    out->bound_tasks = w->nbound;
    out->started = w->started;
    out->evictions = w->evictions;
    if (w->paused_on)
        out->paused_on = gp__node_at(e, w->paused_on - 1)->spec.name;
    return 0;
}

int gp_engine_workload_binding(const gp_engine *e, uint64_t id, int32_t task,
                               gp_task_binding *out) {
    const gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    if (task < 0 || task >= w->nbound)
        return GP_ERANGE;
    *out = w->tasks[task].b;
    return 0;
}
