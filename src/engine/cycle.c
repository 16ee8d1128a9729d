/*
 * cycle.c — the scheduling cycle: report lost workloads, refresh fair share,
 * allocate pending workloads in order, then hand what did not fit to the
 * eviction phases (consolidate, reclaim, preempt, in evict.c), and count
 * pending workloads by reason.
 *
 * Workloads whose victims have all gone are allocated before anything else:
 * the room was made for them (docs/engine.md).
 *
 * Order of allocation: the leaf queue furthest below its fair share goes
 * first (compared level by level from the top: the most starved department,
 * then its most starved project), then inside the queue the workload with
 * the highest effective priority (its priority plus one level per aging
 * interval waited), then the oldest. After each workload the queues are
 * compared again, so a queue that just got GPUs yields to the others.
 *
 * Allocation is work-conserving: idle GPUs go to whoever can use them, up to
 * each queue's limit, and only non-preemptible work is held to deserved
 * quota. A workload whose request failed to fit makes every later workload
 * with the same request fail at once in this cycle (free capacity only
 * shrinks while allocating), which keeps cycles short with many pending.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* w's priority raised by aging: one level per aging_interval it has waited,
 * at most aging_max. */
static int64_t effective_priority(const gp_engine *e, const gp__wl *w) {
    int64_t p = w->spec.priority;
    if (e->cfg.aging_interval > 0 && e->now > w->spec.submitted) {
        int64_t levels = (e->now - w->spec.submitted) / e->cfg.aging_interval;
        p += levels < e->cfg.aging_max ? levels : e->cfg.aging_max;
    }
    return p;
}

/* alloc / fair as a fraction; fair 0 counts as "at its share" when empty and
 * as infinitely over when holding anything. */
static void share_ratio(const gp__queue *q, __int128 *num, __int128 *den) {
    int64_t a = q->alloc.v[GP_RES_GPU], f = q->fair.v[GP_RES_GPU];
    if (f > 0) {
        *num = a;
        *den = f;
    } else {
        *num = 1;
        *den = a > 0 ? 0 : 1;
    }
}

/* Ordering of queues: <0 if a is further below its fair share than b. */
static int queue_cmp_share(const gp__queue *a, const gp__queue *b) {
    __int128 an, ad, bn, bd;
    share_ratio(a, &an, &ad);
    share_ratio(b, &bn, &bd);
    __int128 l = an * bd, r = bn * ad;
    if (l != r)
        return l < r ? -1 : 1;
    if (a->spec.priority != b->spec.priority)
        return a->spec.priority > b->spec.priority ? -1 : 1;
    return strcmp(a->spec.name, b->spec.name);
}

/* A pending workload's place in its queue's order, computed once per cycle
 * so that sorting compares plain numbers. A workload that victims made room
 * for comes first: the room is its (docs/engine.md). */
typedef struct okey {
    int32_t first; /* 1: its victims are gone, the room is its */
    int64_t prio;  /* effective priority */
    gp_time_ms submitted;
    uint64_t id;
    gp__wl *w;
} okey;

static int by_order(const void *pa, const void *pb) {
    const okey *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first > b->first ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->submitted != b->submitted)
        return a->submitted < b->submitted ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int quota_allows(gp_engine *e, gp__wl *w, uint64_t *models);

/* Milli-GPU leaf q may still take under the limits of its path (INT64_MAX if
 * none is set). */
static int64_t gpu_headroom(const gp__queue *q) {
    int64_t room = INT64_MAX;
    for (; q; q = q->parent) {
        int64_t lim = q->spec.quota[GP_RES_GPU].limit;
        if (lim != GP_UNLIMITED && lim - q->alloc.v[GP_RES_GPU] < room)
            room = lim - q->alloc.v[GP_RES_GPU];
    }
    return room;
}

static int okey_before(const okey *a, const okey *b) {
    return by_order(a, b) < 0;
}

/* Non-preemptible work must fit inside deserved quota at every level
 * (evicting preemptible work never changes this). */
static int deserved_check(const gp__wl *w, const gp_res *need, const gp__queue **at, int *res) {
    if (w->preemptible)
        return GP_WAIT_NONE;
    for (const gp__queue *q = w->queue; q; q = q->parent) {
        for (int r = 0; r < GP_RES_COUNT; r++) {
            if (q->alloc_np.v[r] + need->v[r] > q->deserved[r] && need->v[r] > 0) {
                *at = q;
                *res = r;
                return GP_WAIT_DESERVED;
            }
        }
    }
    return GP_WAIT_NONE;
}

static int64_t need_gpu(const gp__wl *w) {
    return w->per_task.v[GP_RES_GPU] * w->spec.min_tasks;
}

/* Whether w, blocked by a limit, could start were room made under it: its
 * other quota checks pass. */
static int room_would_do(const gp__wl *w) {
    gp_res need;
    const gp__queue *at;
    int res;
    for (int r = 0; r < GP_RES_COUNT; r++)
        need.v[r] = w->per_task.v[r] * w->spec.min_tasks;
    return deserved_check(w, &need, &at, &res) == GP_WAIT_NONE;
}

/* How many request sizes of a leaf at a limit reach the eviction phases. */
#define FULL_LEAF_SIZES 8

static int same_size(const gp__wl *a, const gp__wl *b) {
    return need_gpu(a) == need_gpu(b) && a->per_task.v[GP_RES_CPU] == b->per_task.v[GP_RES_CPU] &&
           a->per_task.v[GP_RES_MEM] == b->per_task.v[GP_RES_MEM];
}

/* Keeps in fit[0..*n) the first workload in order of each request size (GPU
 * at once, CPU and memory per task), for at most FULL_LEAF_SIZES sizes (the
 * first sizes seen). */
static void keep_first_of_size(okey *fit, int *n, const okey *key) {
    for (int i = 0; i < *n; i++) {
        if (same_size(fit[i].w, key->w)) {
            if (okey_before(key, &fit[i]))
                fit[i] = *key;
            return;
        }
    }
    if (*n < FULL_LEAF_SIZES)
        fit[(*n)++] = *key;
}

static int is_beneficiary(const gp__wl *w) {
    return w->promised > 0 && w->victims_left == 0;
}

/* Fills e->order with every pending workload that may be considered,
 * grouped by leaf and sorted, and sets each queue's cursor range and active
 * count. A leaf at a GPU limit (its own or a department's) puts only its
 * first GPU request in the order, which reaches the eviction phases (room
 * may be made under the limit); the others get their reason at once (a full
 * queue with a long backlog costs a pass over it, not a sort). Returns the
 * number of workloads whose victims made room for them, or GP_ENOMEM. */
static int build_order(gp_engine *e) {
    e->norder = 0;
    int first = 0;
    int64_t total = 0;
    for (uint32_t i = 0; i < e->nroots; i++)
        total += e->roots[i]->npending;
    okey *keys = total ? gp__malloc(&e->alloc, (size_t)total * sizeof *keys) : NULL;
    if (total && !keys)
        return GP_ENOMEM;
    if ((uint64_t)total > e->cap_order) {
        gp__wl **p = gp__realloc(&e->alloc, e->order, (size_t)total * sizeof *p);
        if (!p) {
            gp__free(&e->alloc, keys);
            return GP_ENOMEM;
        }
        e->order = p;
        e->cap_order = (uint32_t)total;
    }
    for (uint32_t i = e->nqueues; i-- > 0;) {
        gp__queue *q = e->queues[i];
        q->active = 0;
        if (q->nchildren)
            continue;
        int full = gpu_headroom(q) <= 0;
        uint32_t start = e->norder, n = 0;
        /* A full leaf sends on its first workload in order (it may preempt
         * in its own project), and, for reclaim, the first of each of a few
         * request sizes whose GPUs stay within its fair share. */
        okey top = {0}, fit[FULL_LEAF_SIZES];
        int nfit = 0;
        int64_t room = q->fair.v[GP_RES_GPU] - q->alloc.v[GP_RES_GPU] - q->arriving;
        for (uint32_t k = 0; k < q->npend; k++) {
            gp__wl *w = q->pending[k];
            uint64_t models;
            okey key = {is_beneficiary(w), effective_priority(e, w), w->spec.submitted, w->spec.id,
                        w};
            if (full && w->per_task.v[GP_RES_GPU] > 0) {
                quota_allows(e, w, &models); /* sets the limit reason */
                if (!top.w || okey_before(&key, &top))
                    top = key;
                if (need_gpu(w) <= room && room_would_do(w))
                    keep_first_of_size(fit, &nfit, &key);
                continue;
            }
            first += key.first;
            keys[start + n++] = key;
        }
        if (top.w) {
            first += top.first;
            keys[start + n++] = top;
        }
        for (int f = 0; f < nfit; f++) {
            if (fit[f].w == top.w)
                continue;
            first += fit[f].first;
            keys[start + n++] = fit[f];
        }
        if (n > 1)
            qsort(keys + start, n, sizeof *keys, by_order);
        for (uint32_t k = 0; k < n; k++)
            e->order[start + k] = keys[start + k].w;
        q->cursor = start;
        q->end = e->norder = start + n;
    }
    gp__free(&e->alloc, keys);
    /* Children come after parents in pre-order: walk backwards to count. */
    for (uint32_t i = e->nqueues; i-- > 0;) {
        gp__queue *q = e->queues[i];
        int has = q->nchildren ? q->active > 0 : q->cursor < q->end;
        if (has && q->parent)
            q->parent->active++;
    }
    return first;
}

/* The most starved leaf with candidates left, or NULL. */
static gp__queue *next_leaf(gp_engine *e) {
    gp__queue **level = e->roots;
    uint32_t n = e->nroots;
    gp__queue *pick = NULL;
    for (;;) {
        gp__queue *best = NULL;
        for (uint32_t i = 0; i < n; i++) {
            gp__queue *q = level[i];
            int has = q->nchildren ? q->active > 0 : q->cursor < q->end;
            if (has && (!best || queue_cmp_share(q, best) < 0))
                best = q;
        }
        if (!best)
            return pick;
        pick = best;
        if (best->nchildren == 0)
            return best;
        level = best->children;
        n = best->nchildren;
    }
}

/* Marks leaf q exhausted, propagating up. */
static void leaf_done(gp__queue *q) {
    for (gp__queue *a = q->parent; a; a = a->parent)
        if (--a->active > 0)
            break;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
    return h;
}

uint64_t gp__signature(const gp__wl *w, uint64_t models) {
    const gp__preq *r = &w->preq;
    uint64_t h = mix(0, (uint64_t)r->ngpus);
    h = mix(h, (uint64_t)r->milli);
    h = mix(h, (uint64_t)r->gpu_mem);
    h = mix(h, (uint64_t)r->cpu);
    h = mix(h, (uint64_t)r->mem);
    h = mix(h, models);
    h = mix(h, (uint64_t)(int64_t)w->mig_profile);
    h = mix(h, (uint64_t)w->spec.tasks << 32 | (uint64_t)w->spec.min_tasks);
    h = mix(h, (uint64_t)w->spec.same_domain);
    for (int32_t i = 0; i < w->spec.req.nselectors; i++)
        for (const char *c = w->spec.req.selectors[i].key; *c; c++)
            h = mix(h, (uint64_t)(unsigned char)*c);
    for (int32_t i = 0; i < w->spec.req.nselectors; i++)
        for (const char *c = w->spec.req.selectors[i].value; *c; c++)
            h = mix(h, (uint64_t)(unsigned char)*c);
    return h ? h : 1;
}

int gp__quota_check(const gp__wl *w, const gp__queue **at, int *res) {
    gp_res need;
    for (int r = 0; r < GP_RES_COUNT; r++)
        need.v[r] = w->per_task.v[r] * w->spec.min_tasks;
    gp_resource lres;
    if (!gp__queue_fits_limits(w->queue, &need, at, &lres)) {
        *res = (int)lres;
        return GP_WAIT_QUEUE_LIMIT;
    }
    return deserved_check(w, &need, at, res);
}

/* Quota checks before placement; sets the wait reason and returns 0 if w
 * may not take more now. */
static int quota_allows(gp_engine *e, gp__wl *w, uint64_t *models) {
    const gp__queue *at;
    int res;
    gp_wait why = (gp_wait)gp__quota_check(w, &at, &res);
    if (why != GP_WAIT_NONE) {
        gp__wait_set(w, why);
        w->wait.queue = at;
        w->wait.a = res;
        w->wait.b = why == GP_WAIT_QUEUE_LIMIT ? at->spec.quota[res].limit : at->deserved[res];
        return 0;
    }
    *models = gp__allowed_models(e, w);
    if (*models == 0 && w->spec.req.gpu != GP_GPU_NONE) {
        gp__wait_set(w, GP_WAIT_QUEUE_LIMIT);
        w->wait.queue = w->queue;
        w->wait.a = -1; /* a per-model limit */
        w->wait.b = 0;
        return 0;
    }
    return 1;
}

static int bind_decision(gp_engine *e, gp__wl *w) {
    for (int32_t t = 0; t < w->nbound; t++)
        if (gp__push(&e->alloc, (void **)&e->bindbuf, &e->nbind, &e->cap_bind, sizeof w->tasks[t].b,
                     &w->tasks[t].b))
            return GP_ENOMEM;
    gp_decision d = {
        .type = GP_DECISION_BIND, .workload = w->spec.id, .ntasks = w->nbound, .resume = w->resume};
    /* tasks is an offset into bindbuf until the cycle ends (it may move). */
    d.tasks = (const gp_task_binding *)(uintptr_t)(e->nbind - (uint32_t)w->nbound);
    return gp__push(&e->alloc, (void **)&e->dec, &e->ndec, &e->cap_dec, sizeof d, &d);
}

int gp__decision_evict(gp_engine *e, gp__wl *v, gp_evict_reason why, uint64_t for_wl) {
    gp_decision d = {.type = GP_DECISION_EVICT,
                     .workload = v->spec.id,
                     .reason = why,
                     .for_workload = for_wl,
                     .grace_max = why == GP_EVICT_RECLAIM ? v->queue->spec.reclaim_grace_max : -1};
    if (gp__reserve(&e->alloc, (void **)&e->dec, e->ndec + 1, &e->cap_dec, sizeof d))
        return GP_ENOMEM;
    d.mode = gp__pause_mode(e, v, why, &d.mode_why);
    if (gp__push(&e->alloc, (void **)&e->dec, &e->ndec, &e->cap_dec, sizeof d, &d))
        abort(); /* reserved above */
    if (why != GP_EVICT_NODE_GONE) {
        gp__wl_set_state(e, v, GP_STATE_EVICTING);
        gp__wl_leaving(v, +1);
        v->beneficiary = for_wl;
        v->evict_reason = why;
        v->evictions++;
    }
    return 0;
}

/* Tries to allocate w now. Returns 1 if bound, 0 if it waits. */
static int try_allocate(gp_engine *e, gp__wl *w, gp_cycle_stats *st) {
    uint64_t models = 0;
    if (w->victims_left > 0) {
        gp__wait_set(w, GP_WAIT_EVICTING);
        return 0;
    }
    gp__wl_promise(w, 0); /* its victims are gone: it competes like any other */
    if (!quota_allows(e, w, &models))
        return 0;
    w->sig = gp__signature(w, models);
    const gp__wl *seen = w->paused_on ? NULL : gp__u64map_get(&e->memo, w->sig);
    if (seen) {
        w->wait = seen->wait;
        return 0;
    }
    if (w->paused_on) {
        /* Only on its node: no memo (its request is not the question). Room
         * for its decision first, so that a resume is never undone. */
        st->nodes_scored++;
        if (gp__reserve(&e->alloc, (void **)&e->bindbuf, e->nbind + 1, &e->cap_bind,
                        sizeof *e->bindbuf) ||
            gp__reserve(&e->alloc, (void **)&e->dec, e->ndec + 1, &e->cap_dec, sizeof *e->dec) ||
            !gp__pause_try_resume(e, w, models))
            return 0;
    } else {
        st->nodes_scored += e->live_nodes;
    }
    if (w->resume || gp__place(e, w, models, 1) > 0) {
        gp__wl_set_state(e, w, GP_STATE_BOUND);
        gp__wait_set(w, GP_WAIT_NONE);
        if (bind_decision(e, w) != 0) {
            gp__wl_unbind(e, w);
            gp__wl_set_state(e, w, GP_STATE_PENDING); /* room: it was just pending */
            return 0;
        }
        st->bound++;
        return 1;
    }
    /* Why it does not fit is worked out when someone asks (a pass over the
     * nodes): the eviction phases, a pending reason, the metrics. */
    w->wait.why = GP_WAIT_NO_FIT;
    w->wait.undiagnosed = 1;
    w->wait.diag_models = models;
    gp__u64map_put(&e->memo, w->sig, w); /* a failed put only costs speed */
    return 0;
}

void gp_engine_pending_by_reason(gp_engine *e, int64_t counts[GP_WAIT_COUNT]) {
    /* Workloads with the same request signature fail for the same reason:
     * diagnose one of each, copy to the others. */
    gp__u64map_clear(&e->memo);
    memset(counts, 0, GP_WAIT_COUNT * sizeof *counts);
    for (uint32_t i = 0; i < e->nqueues; i++) {
        const gp__queue *q = e->queues[i];
        for (uint32_t k = 0; k < q->npend; k++) {
            gp__wl *w = q->pending[k];
            if (w->wait.undiagnosed) {
                const gp__wl *seen = gp__u64map_get(&e->memo, w->sig);
                if (seen && !seen->wait.undiagnosed && seen->queue == w->queue) {
                    w->wait = seen->wait;
                } else {
                    gp__wl_diagnosed(e, w);
                    gp__u64map_put(&e->memo, w->sig, w);
                }
            }
            counts[w->wait.why]++;
        }
    }
}

int gp_engine_cycle(gp_engine *e, gp_time_ms now, const gp_decision **out, size_t *n,
                    gp_cycle_stats *stats) {
    gp_cycle_stats st = {0};
    e->now = now;
    e->ndec = 0;
    e->nbind = 0;
    int rc = 0;

    for (uint32_t i = 0; i < e->ngone; i++) {
        gp__wl *w = gp__wl_find(e, e->gone[i]);
        if (w && (rc = gp__decision_evict(e, w, GP_EVICT_NODE_GONE, 0)) != 0)
            goto out;
    }
    e->ngone = 0;

    gp__shapes_refresh(e);
    gp__fairshare(e);

    gp__wl **failed = NULL;
    uint32_t nfailed = 0, cap_failed = 0;
    int first = e->cfg.allocate ? build_order(e) : 0;
    if (first < 0)
        rc = first;
    if (e->cfg.allocate && rc == 0) {
        gp__u64map_clear(&e->memo);
        /* Workloads whose victims are gone go first, wherever their queue
         * stands: the room was made for them, and a move that lets another
         * take it would be undone and made again, cycle after cycle. */
        for (uint32_t i = 0; i < e->nqueues && first > 0 && rc == 0; i++) {
            gp__queue *q = e->queues[i];
            while (q->nchildren == 0 && q->cursor < q->end && is_beneficiary(e->order[q->cursor])) {
                gp__wl *w = e->order[q->cursor++];
                if (q->cursor == q->end)
                    leaf_done(q);
                first--;
                st.pending_considered++;
                if (!try_allocate(e, w, &st) && gp__push(&e->alloc, (void **)&failed, &nfailed,
                                                         &cap_failed, sizeof w, &w) != 0) {
                    rc = GP_ENOMEM;
                    break;
                }
            }
        }
        gp__queue *q;
        while (rc == 0 && (q = next_leaf(e)) != NULL) {
            gp__wl *w = e->order[q->cursor++];
            if (q->cursor == q->end)
                leaf_done(q);
            st.pending_considered++;
            if (!try_allocate(e, w, &st) &&
                gp__push(&e->alloc, (void **)&failed, &nfailed, &cap_failed, sizeof w, &w) != 0) {
                rc = GP_ENOMEM;
                break;
            }
        }
    }
    if (rc == 0)
        gp__evict_phase(e, failed, nfailed);
    gp__free(&e->alloc, failed);

out:
    for (uint32_t i = 0; i < e->ndec; i++)
        if (e->dec[i].type == GP_DECISION_BIND)
            e->dec[i].tasks = e->bindbuf + (uintptr_t)e->dec[i].tasks;
    for (uint32_t i = 0; i < e->ndec; i++)
        st.evicted += e->dec[i].type == GP_DECISION_EVICT;
    *out = e->dec;
    *n = e->ndec;
    if (stats)
        *stats = st;
    if (rc == 0 && e->cfg.check_invariants) {
        char err[GP_ERR_MAX];
        /* The checker needs memory too; without it nothing was checked. */
        rc = gp_engine_check(e, err, sizeof err);
        if (rc != 0 && rc != GP_ENOMEM)
            return GP_ECORRUPT;
    }
    return rc;
}
