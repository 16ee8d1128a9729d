/*
 * queue.c — the queue tree: departments over projects, any depth, only
 * leaves take workloads. Each queue keeps the books of its subtree (what it
 * holds, what its pending work asks for), updated on every bind, unbind,
 * submit and removal, so quota checks and fair share never walk workloads.
 *
 * Defaults are explicit: an unset weight is 1, an unset limit is unlimited,
 * and an unset (zero) deserved quota of a parent is the sum of its
 * children's deserved quotas (so a department that only lists projects does
 * not silently guarantee nothing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

void gp_queue_spec_init(gp_queue_spec *q, const char *name, const char *parent) {
    memset(q, 0, sizeof *q);
    snprintf(q->name, sizeof q->name, "%s", name ? name : "");
    snprintf(q->parent, sizeof q->parent, "%s", parent ? parent : "");
    for (int r = 0; r < GP_RES_COUNT; r++) {
        q->quota[r].limit = GP_UNLIMITED;
        q->quota[r].weight = 1;
    }
    q->min_runtime_max = GP_MIN_RUNTIME_MAX_DEFAULT;
    q->reclaim_grace_max = GP_RECLAIM_GRACE_MAX_DEFAULT;
}

gp__queue *gp__queue_find(const gp_engine *e, const char *name) {
    return name ? gp__strmap_get(&e->queue_by_name, name) : NULL;
}

static int check_quota(const gp_quota *q, const char *what, char *err, size_t errlen) {
    if (q->deserved < 0) {
        gp_errf(err, errlen, "%s.deserved: must not be negative", what);
        return GP_EINVAL;
    }
    if (q->limit < 0) {
        gp_errf(err, errlen, "%s.limit: must not be negative", what);
        return GP_EINVAL;
    }
    if (q->weight < 0) {
        gp_errf(err, errlen, "%s.weight: must not be negative", what);
        return GP_EINVAL;
    }
    if (q->limit < q->deserved) {
        gp_errf(err, errlen, "%s.limit: below its deserved quota", what);
        return GP_EINVAL;
    }
    return 0;
}

static int validate(gp_engine *e, const gp_queue_spec *s, gp__queue *self, gp__queue **parent,
                    char *err, size_t errlen) {
    if (gp__bad_name(s->name, sizeof s->name, "name", err, errlen) ||
        gp__too_long(s->parent, sizeof s->parent, "parent", err, errlen))
        return GP_EINVAL;
    *parent = NULL;
    if (s->parent[0]) {
        *parent = gp__queue_find(e, s->parent);
        if (!*parent) {
            gp_errf(err, errlen, "parent: no queue named '%s'", s->parent);
            return GP_ENOENT;
        }
        if ((*parent)->npend || (*parent)->nrunning || (*parent)->alloc.v[GP_RES_GPU] ||
            (*parent)->alloc.v[GP_RES_CPU] || (*parent)->alloc.v[GP_RES_MEM]) {
            if ((*parent)->nchildren == 0) {
                gp_errf(err, errlen, "parent: queue '%s' holds workloads; only leaves may",
                        s->parent);
                return GP_EBUSY;
            }
        }
        for (gp__queue *a = *parent; a; a = a->parent) {
            if (a == self) {
                gp_errf(err, errlen, "parent: '%s' is inside queue '%s'", s->parent, s->name);
                return GP_EINVAL;
            }
        }
    }
    for (gp_resource r = 0; r < GP_RES_COUNT; r++) {
        char what[32];
        snprintf(what, sizeof what, "quota.%s", gp_resource_name(r));
        int rc = check_quota(&s->quota[r], what, err, errlen);
        if (rc)
            return rc;
    }
    if (gp__negative(s->min_runtime_max, "min_runtime_max", err, errlen) ||
        gp__negative(s->reclaim_grace_max, "reclaim_grace_max", err, errlen))
        return GP_EINVAL;
    if (gp__bad_on_preempt(s->on_preempt, "on_preempt", err, errlen))
        return GP_EINVAL;
    if (gp__negative(s->default_cpu_milli, "default_cpu", err, errlen) ||
        gp__negative(s->default_mem_bytes, "default_memory", err, errlen) ||
        gp__negative(s->idle_gpu_timeout, "idle_gpu_timeout", err, errlen) ||
        gp__negative(s->max_session_length, "max_session_length", err, errlen) ||
        gp__not_count(s->nmodels, GP_MAX_MODEL_QUOTAS, "nmodels", err, errlen))
        return GP_EINVAL;
    for (int32_t i = 0; i < s->nmodels; i++) {
        char what[48];
        snprintf(what, sizeof what, "models[%d].gpu", i);
        if (gp__bad_name(s->models[i].model, sizeof s->models[i].model, NULL, NULL, 0)) {
            gp_errf(err, errlen, "models[%d].model: must be 1 to %d characters", i, GP_NAME_MAX);
            return GP_EINVAL;
        }
        int rc = check_quota(&s->models[i].gpu, what, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

static int child_add(gp__queue *p, gp__queue *c) {
    return gp__push(p->mem, (void **)&p->children, &p->nchildren, &p->cap_children, sizeof c, &c);
}

static void child_del(gp__queue **arr, uint32_t *n, gp__queue *c) {
    for (uint32_t i = 0; i < *n; i++) {
        if (arr[i] == c) {
            memmove(&arr[i], &arr[i + 1], (*n - i - 1) * sizeof *arr);
            (*n)--;
            return;
        }
    }
}

/* Adds (sign +1) or removes (sign -1) a subtree's books from q and its
 * ancestors, when a queue moves in the tree. */
static void books_move(gp__queue *from, const gp__queue *q, int sign) {
    for (gp__queue *a = from; a; a = a->parent) {
        for (int r = 0; r < GP_RES_COUNT; r++) {
            a->alloc.v[r] += sign * q->alloc.v[r];
            a->alloc_np.v[r] += sign * q->alloc_np.v[r];
            a->demand.v[r] += sign * q->demand.v[r];
        }
        for (int m = 0; m < GP__MAX_MODELS; m++)
            a->model_alloc[m] += sign * q->model_alloc[m];
        a->leaving += sign * q->leaving;
        a->arriving += sign * q->arriving;
        a->npending += sign * q->npending;
        a->nrunning += sign * q->nrunning;
    }
}

int gp_engine_queue_set(gp_engine *e, const gp_queue_spec *s, char *err, size_t errlen) {
    gp__queue *q = gp__queue_find(e, s->name), *parent;
    int rc = validate(e, s, q, &parent, err, errlen);
    if (rc)
        return rc;
    int32_t model_id[GP_MAX_MODEL_QUOTAS];
    for (int32_t i = 0; i < s->nmodels; i++) {
        model_id[i] = gp__model_intern(e, s->models[i].model);
        if (model_id[i] < 0) {
            gp_errf(err, errlen, "models[%d].model: more than %d GPU models", i, GP__MAX_MODELS);
            return model_id[i];
        }
    }
    if (!q) {
        /* Into the name map first: its table may have to grow (the first
         * queue of an engine, or one past the load factor), and the put
         * below then only replaces this entry. */
        q = gp__calloc(&e->alloc, 1, sizeof *q);
        if (q) {
            q->mem = &e->alloc;
            q->spec = *s;
        }
        if (!q || gp__strmap_put(&e->queue_by_name, q->spec.name, q) != 0) {
            gp__free(&e->alloc, q);
            return GP_ENOMEM;
        }
        if (gp__push(&e->alloc, (void **)&e->queues, &e->nqueues, &e->cap_queues, sizeof q, &q)) {
            gp__strmap_del(&e->queue_by_name, q->spec.name);
            gp__free(&e->alloc, q);
            return GP_ENOMEM;
        }
        if (parent ? child_add(parent, q)
                   : gp__push(&e->alloc, (void **)&e->roots, &e->nroots, &e->cap_roots, sizeof q,
                              &q)) {
            e->nqueues--;
            gp__strmap_del(&e->queue_by_name, q->spec.name);
            gp__free(&e->alloc, q);
            return GP_ENOMEM;
        }
        q->parent = parent;
    } else if (q->parent != parent) {
        if (parent
                ? child_add(parent, q)
                : gp__push(&e->alloc, (void **)&e->roots, &e->nroots, &e->cap_roots, sizeof q, &q))
            return GP_ENOMEM;
        books_move(q->parent, q, -1);
        if (q->parent)
            child_del(q->parent->children, &q->parent->nchildren, q);
        else
            child_del(e->roots, &e->nroots, q);
        q->parent = parent;
        books_move(parent, q, +1);
    }
    if (q->spec.name[0])
        gp__strmap_del(&e->queue_by_name, q->spec.name);
    q->spec = *s;
    memcpy(q->model_id, model_id, sizeof model_id);
    if (gp__strmap_put(&e->queue_by_name, q->spec.name, q) != 0)
        abort(); /* cannot fail: the entry was there (put above for a new queue) */
    e->tree_dirty = 1;
    gp__queue_tree_refresh(e);
    return 0;
}

int gp_engine_queue_remove(gp_engine *e, const char *name) {
    gp__queue *q = gp__queue_find(e, name);
    if (!q)
        return GP_ENOENT;
    if (q->nchildren || q->npending || q->nrunning || q->npend)
        return GP_EBUSY;
    for (int r = 0; r < GP_RES_COUNT; r++)
        if (q->alloc.v[r])
            return GP_EBUSY;
    if (q->parent)
        child_del(q->parent->children, &q->parent->nchildren, q);
    else
        child_del(e->roots, &e->nroots, q);
    child_del(e->queues, &e->nqueues, q);
    gp__strmap_del(&e->queue_by_name, q->spec.name);
    gp__free(&e->alloc, q->children);
    gp__free(&e->alloc, q->pending);
    gp__free(&e->alloc, q->holding);
    gp__free(&e->alloc, q);
    e->tree_dirty = 1;
    gp__queue_tree_refresh(e);
    return 0;
}

/* ---- Tree order and effective quotas ---- */

static int by_name(const void *a, const void *b) {
    return strcmp((*(gp__queue *const *)a)->spec.name, (*(gp__queue *const *)b)->spec.name);
}

static void preorder(gp_engine *e, gp__queue **level, uint32_t n, int32_t depth, uint32_t *pos) {
    if (n > 1)
        qsort(level, n, sizeof *level, by_name);
    for (uint32_t i = 0; i < n; i++) {
        gp__queue *q = level[i];
        q->depth = depth;
        q->order = *pos;
        e->queues[(*pos)++] = q;
        preorder(e, q->children, q->nchildren, depth + 1, pos);
    }
}

/* Effective deserved quotas, bottom-up: unset parents take their children's
 * sum. Also flags parents whose children are promised more than they are. */
static void effective_deserved(gp__queue *q) {
    int64_t sum[GP_RES_COUNT] = {0};
    for (uint32_t i = 0; i < q->nchildren; i++) {
        effective_deserved(q->children[i]);
        for (int r = 0; r < GP_RES_COUNT; r++)
            sum[r] += q->children[i]->deserved[r];
    }
    q->overcommitted = 0;
    for (int r = 0; r < GP_RES_COUNT; r++) {
        int64_t own = q->spec.quota[r].deserved;
        q->deserved[r] = (own == 0 && q->nchildren) ? sum[r] : own;
        if (q->nchildren && sum[r] > q->deserved[r])
            q->overcommitted = 1;
    }
}

void gp__queue_tree_refresh(gp_engine *e) {
    if (!e->tree_dirty)
        return;
    uint32_t pos = 0;
    preorder(e, e->roots, e->nroots, 0, &pos);
    for (uint32_t i = 0; i < e->nroots; i++)
        effective_deserved(e->roots[i]);
    e->tree_dirty = 0;
}

/* ---- Books ---- */

void gp__queue_account(gp__queue *q, const gp_res *r, const gp_res *np, int sign) {
    for (; q; q = q->parent) {
        for (int k = 0; k < GP_RES_COUNT; k++) {
            q->alloc.v[k] += sign * r->v[k];
            if (np)
                q->alloc_np.v[k] += sign * np->v[k];
        }
    }
}

void gp__queue_demand(gp__queue *q, const gp_res *r, int sign) {
    for (; q; q = q->parent)
        for (int k = 0; k < GP_RES_COUNT; k++)
            q->demand.v[k] += sign * r->v[k];
}

void gp__queue_model(gp__queue *q, int32_t model, int64_t milli, int sign) {
    for (; q; q = q->parent)
        q->model_alloc[model] += sign * milli;
}

void gp__queue_pending_add(gp__queue *q, gp__wl *w) {
    w->pend_pos = q->npend;
    if (gp__push(q->mem, (void **)&q->pending, &q->npend, &q->cap_pend, sizeof w, &w) != 0)
        abort(); /* callers reserve room first: see gp__queue_reserve() */
    for (gp__queue *a = q; a; a = a->parent)
        a->npending++;
}

void gp__queue_pending_del(gp__queue *q, gp__wl *w) {
    uint32_t i = w->pend_pos;
    q->pending[i] = q->pending[--q->npend];
    q->pending[i]->pend_pos = i;
    for (gp__queue *a = q; a; a = a->parent)
        a->npending--;
}

int gp__queue_hold_add(gp__queue *q, gp__wl *w) {
    w->hold_pos = q->nhold;
    return gp__push(q->mem, (void **)&q->holding, &q->nhold, &q->cap_hold, sizeof w, &w);
}

void gp__queue_hold_del(gp__queue *q, gp__wl *w) {
    uint32_t i = w->hold_pos;
    q->holding[i] = q->holding[--q->nhold];
    q->holding[i]->hold_pos = i;
}

int gp__queue_reserve(gp__queue *q) {
    /* Each list can hold every workload of the queue plus the next one, so
     * no move between them can fail. */
    uint32_t need = q->npend + q->nhold + 1;
    if (gp__reserve(q->mem, (void **)&q->pending, need, &q->cap_pend, sizeof *q->pending) ||
        gp__reserve(q->mem, (void **)&q->holding, need, &q->cap_hold, sizeof *q->holding))
        return GP_ENOMEM;
    return 0;
}

int gp__queue_fits_limits(const gp__queue *q, const gp_res *add, const gp__queue **at,
                          gp_resource *res) {
    for (; q; q = q->parent) {
        for (int k = 0; k < GP_RES_COUNT; k++) {
            int64_t lim = q->spec.quota[k].limit;
            if (lim != GP_UNLIMITED && q->alloc.v[k] + add->v[k] > lim) {
                *at = q;
                *res = (gp_resource)k;
                return 0;
            }
        }
    }
    return 1;
}

/* ---- Reading queues ---- */

static void fill_info(const gp__queue *q, gp_queue_info *out) {
    memset(out, 0, sizeof *out);
    out->name = q->spec.name;
    out->parent = q->spec.parent;
    out->depth = q->depth;
    out->leaf = q->nchildren == 0;
    out->priority = q->spec.priority;
    out->on_preempt_set = q->spec.on_preempt_set != 0;
    out->on_preempt_from = "";
    for (const gp__queue *a = q; a; a = a->parent) {
        if (a->spec.on_preempt_set) {
            out->on_preempt = a->spec.on_preempt;
            out->on_preempt_from = a->spec.name;
            break;
        }
    }
    out->default_cpu_milli = q->spec.default_cpu_milli;
    out->default_mem_bytes = q->spec.default_mem_bytes;
    for (int r = 0; r < GP_RES_COUNT; r++) {
        out->deserved.v[r] = q->deserved[r];
        out->limit.v[r] = q->spec.quota[r].limit;
        out->requested.v[r] = q->alloc.v[r] + q->demand.v[r];
    }
    out->fair_share = q->fair;
    out->guaranteed = q->guaranteed;
    out->allocated = q->alloc;
    out->pending = q->npending;
    out->running = q->nrunning;
    out->overcommitted = q->overcommitted;
}

size_t gp_engine_queue_count(const gp_engine *e) {
    return e->nqueues;
}

int gp_engine_queue_at(const gp_engine *e, size_t i, gp_queue_info *out) {
    if (i >= e->nqueues)
        return GP_ENOENT;
    fill_info(e->queues[i], out);
    return 0;
}

int gp_engine_queue_get(const gp_engine *e, const char *name, gp_queue_info *out) {
    const gp__queue *q = gp__queue_find(e, name);
    if (!q)
        return GP_ENOENT;
    fill_info(q, out);
    return 0;
}

size_t gp_engine_warning_count(const gp_engine *e) {
    return e->nwarnings;
}

const char *gp_engine_warning(const gp_engine *e, size_t i) {
    return i < e->nwarnings ? e->warnings[i] : NULL;
}
