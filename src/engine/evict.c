/*
 * evict.c — the phases of a cycle that make room by evicting: consolidate,
 * reclaim and preempt, for the workloads that allocation could not place.
 *
 * Every search works on the real books, tentatively: victims are unbound
 * (their bindings saved), the beneficiary is test-placed, and everything is
 * put back before the decisions are written. Evictions are graceful, so the
 * victims keep their GPUs (state EVICTING) until the caller reports them
 * released; the beneficiary waits (GP_WAIT_EVICTING) and is placed by a later
 * cycle's allocation.
 *
 * - Reclaim (the rules are in docs/fairshare.md): compared below the two
 *   queues' lowest common ancestor, the beneficiary's side must stay within
 *   its fair share after placement. If it also stays within the guaranteed
 *   (deserved) part of its share, each victim's side must keep at least
 *   min(deserved, fair share), and minimum runtimes do not protect; otherwise
 *   each victim's side must stay at or above its fair share, and the victim
 *   must be past its minimum runtime.
 * - Through a limit: a workload blocked by a GPU limit looks for victims only
 *   under the queue at its limit, and must then pass every quota check.
 * - Preempt: inside one project, higher priority evicts lower priority.
 * - Consolidate: moves single-task preemptible workloads off one node so that
 *   a fragmented request fits there, only if, with them gone, the beneficiary
 *   is placed there and every moved workload is placed again right now; a
 *   workload is moved this way at most once (the cycle serves the
 *   beneficiary first, so no later cycle undoes the move).
 * Victims are preemptible and RUNNING; a minimum runtime counts for at most
 * its queue's min_runtime_max. The fewest victims win: for a single task, the
 * node needing the fewest; then any victim not needed after all is spared.
 * Among candidates, victims of the queue furthest over its fair share go
 * first, then lowest priority, then the most recently started.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/*
 * A single task's search looks at no more than this many nodes that could
 * work (those whose free plus evictable room could hold the task), starting
 * where the previous search of the cycle left off, and stops early at a node
 * needing one victim. This bounds the cost of a search on a large pool; the
 * price is that the fewest-victims choice is the best among those nodes.
 */
#define NODES_PER_SEARCH 16

/* Victims taken off tentatively, with their bindings saved. */
typedef struct taken {
    gp__wl *v;
    int32_t nbound;
    gp__task *saved;
} taken;

typedef struct vset {
    taken *t;
    uint32_t n, cap;
} vset;

static int take(gp_engine *e, vset *s, gp__wl *v) {
    taken t = {v, v->nbound, gp__malloc(&e->alloc, (size_t)v->nbound * sizeof *v->tasks)};
    if (!t.saved || gp__push(&e->alloc, (void **)&s->t, &s->n, &s->cap, sizeof t, &t) != 0) {
        gp__free(&e->alloc, t.saved);
        return GP_ENOMEM;
    }
    memcpy(t.saved, v->tasks, (size_t)v->nbound * sizeof *v->tasks);
    gp__wl_unbind(e, v);
    return 0;
}

/* Rebinds victim i where it was. Cannot fail: the node index arrays kept the
 * room the victim's tasks used. */
static void put_back(gp_engine *e, vset *s, uint32_t i) {
    taken *t = &s->t[i];
    gp__wl_unbind(e, t->v); /* if it was test-placed elsewhere */
    for (int32_t k = 0; k < t->nbound; k++)
        gp__wl_bind_task(e, t->v, k, t->saved[k].node, t->saved[k].b.slices, t->saved[k].b.nslices);
    gp__free(&e->alloc, t->saved);
    t->saved = NULL;
    t->v = NULL;
}

static void restore_all(gp_engine *e, vset *s) {
    for (uint32_t i = s->n; i-- > 0;)
        if (s->t[i].v)
            put_back(e, s, i);
    s->n = 0;
}

/* ---- Who may be evicted ---- */

typedef enum mode { RECLAIM, PREEMPT, CONSOLIDATE } mode;

typedef struct search {
    gp_engine *e;
    gp__wl *w;
    uint64_t models;
    mode mode;
    uint64_t attempt; /* stamp of this search's eligible victims */
    /* A queue limit blocks w: only victims under this queue (the deepest one
     * at its limit) make room, and w must then fit its limits too. */
    const gp__queue *within;
} search;

static const gp__queue *lca(const gp__queue *a, const gp__queue *b) {
    while (a->depth > b->depth)
        a = a->parent;
    while (b->depth > a->depth)
        b = b->parent;
    while (a != b) {
        a = a->parent;
        b = b->parent;
    }
    return a;
}

static int is_under(const gp__queue *q, const gp__queue *top) {
    for (; q; q = q->parent)
        if (q == top)
            return 1;
    return 0;
}

/* Never a victim: not running, not preemptible. */
static int untouchable(const gp__wl *v) {
    return v->state != GP_STATE_RUNNING || !v->preemptible || v->nbound == 0;
}

/* Inside its minimum runtime, bounded by its queue's min_runtime_max. */
static int too_young(const gp_engine *e, const gp__wl *v) {
    gp_time_ms min = v->spec.min_runtime;
    if (min > v->queue->spec.min_runtime_max)
        min = v->queue->spec.min_runtime_max;
    return e->now - v->started < min;
}

/* How the beneficiary's side below top stands with need more: 2 if every
 * queue stays within its guaranteed (deserved) part of its fair share, 1 if
 * within its fair share, 0 otherwise. */
static int beneficiary_side(const gp__queue *q, const gp__queue *top, int64_t need) {
    int within_deserved = 1;
    for (; q && q != top; q = q->parent) {
        int64_t after = q->alloc.v[GP_RES_GPU] + q->arriving + need;
        if (after > q->fair.v[GP_RES_GPU])
            return 0;
        if (after > q->guaranteed.v[GP_RES_GPU])
            within_deserved = 0;
    }
    return within_deserved ? 2 : 1;
}

/* The least a victim's queue keeps: its fair share, or, against a queue
 * within its deserved quota, min(deserved, fair share). */
static int64_t victim_floor(const gp__queue *q, int guaranteed) {
    int64_t fair = q->fair.v[GP_RES_GPU];
    if (guaranteed && q->deserved[GP_RES_GPU] < fair)
        return q->deserved[GP_RES_GPU];
    return fair;
}

/* Whether v may be evicted for s->w now (books as they stand, tentatively). */
static int eligible(const search *s, const gp__wl *v) {
    if (v == s->w || untouchable(v))
        return 0;
    if (s->within && !is_under(v->queue, s->within))
        return 0;
    switch (s->mode) {
    case PREEMPT:
        return v->queue == s->w->queue && v->spec.priority < s->w->spec.priority &&
               !too_young(s->e, v);
    case CONSOLIDATE:
        /* A workload moved once to defragment is never moved again that way,
         * so no cycle undoes an earlier cycle's move. */
        return v->spec.tasks == 1 && v->mig_profile < 0 &&
               v->evict_reason != GP_EVICT_CONSOLIDATE && !too_young(s->e, v);
    case RECLAIM: {
        if (v->queue == s->w->queue || v->charged.v[GP_RES_GPU] <= 0)
            return 0;
        /* Books net of evictions already under way this cycle or before. */
        const gp__queue *top = lca(v->queue, s->w->queue);
        int64_t need = s->w->per_task.v[GP_RES_GPU] * s->w->spec.min_tasks;
        int side = beneficiary_side(s->w->queue, top, need);
        if (side == 0)
            return 0;
        /* A minimum runtime never defeats a deserved quota. */
        if (side == 1 && too_young(s->e, v))
            return 0;
        for (const gp__queue *x = v->queue; x && x != top; x = x->parent)
            if (x->alloc.v[GP_RES_GPU] - x->leaving - v->charged.v[GP_RES_GPU] <
                victim_floor(x, side == 2))
                return 0;
        return 1;
    }
    }
    return 0;
}

/* Victim preference: queue furthest over fair share, lowest priority, most
 * recently started, highest id. */
static int by_preference(const void *pa, const void *pb) {
    const gp__wl *a = *(gp__wl *const *)pa, *b = *(gp__wl *const *)pb;
    int64_t oa = a->queue->alloc.v[GP_RES_GPU] - a->queue->leaving - a->queue->fair.v[GP_RES_GPU];
    int64_t ob = b->queue->alloc.v[GP_RES_GPU] - b->queue->leaving - b->queue->fair.v[GP_RES_GPU];
    if (oa != ob)
        return oa > ob ? -1 : 1;
    if (a->spec.priority != b->spec.priority)
        return a->spec.priority < b->spec.priority ? -1 : 1;
    if (a->started != b->started)
        return a->started > b->started ? -1 : 1;
    return a->spec.id > b->spec.id ? -1 : a->spec.id < b->spec.id;
}

/* Whether leaf q could give victims at all for s (a cheap filter before
 * looking at its workloads). */
static int source_ok(const search *s, const gp__queue *q) {
    if (q->nchildren || q->nhold == 0)
        return 0;
    switch (s->mode) {
    case PREEMPT:
        return q == s->w->queue;
    case RECLAIM:
        return q != s->w->queue && q->alloc.v[GP_RES_GPU] - q->leaving > victim_floor(q, 1);
    case CONSOLIDATE:
        return 1;
    }
    return 0;
}

static int add_victim(search *s, gp__wl *v, uint64_t stamp, gp__wl ***out, uint32_t *nout,
                      uint32_t *cap) {
    if (v->mark == stamp || !eligible(s, v))
        return 0;
    v->mark = stamp;
    return gp__push(&s->e->alloc, (void **)out, nout, cap, sizeof v, &v);
}

/* Collects the eligible victims with a task on node n (or anywhere if n is
 * NULL), de-duplicated, sorted by preference if sorted is set. On a node,
 * only workloads room_possible() marked eligible in this attempt are looked
 * at (greedy() checks again before taking one). */
static int collect(search *s, gp__node *n, int sorted, gp__wl ***out, uint32_t *nout) {
    gp_engine *e = s->e;
    uint64_t stamp = ++e->stamp;
    uint32_t cap = 0;
    int rc = 0;
    *out = NULL;
    *nout = 0;
    if (n) {
        for (uint32_t k = 0; k < n->ntasks && rc == 0; k++) {
            gp__wl *v = n->tasks[k].wl;
            if (v->mark == stamp || v->elig != s->attempt)
                continue;
            v->mark = stamp;
            rc = gp__push(&e->alloc, (void **)out, nout, &cap, sizeof v, &v);
        }
    } else {
        for (uint32_t i = 0; i < e->nqueues && rc == 0; i++) {
            gp__queue *q = e->queues[i];
            if (!source_ok(s, q))
                continue;
            for (uint32_t k = 0; k < q->nhold && rc == 0; k++)
                rc = add_victim(s, q->holding[k], stamp, out, nout, &cap);
        }
    }
    if (rc == 0 && sorted && *nout > 1)
        qsort(*out, *nout, sizeof **out, by_preference);
    return rc;
}

/* Whether the beneficiary fits now: on node n, or anywhere if n is NULL. */
static int fits(search *s, gp__node *n) {
    if (s->within) {
        /* Room under the limit is no use unless every quota check passes. */
        const gp__queue *at;
        int res;
        if (gp__quota_check(s->w, &at, &res) != GP_WAIT_NONE)
            return 0;
    }
    if (n)
        return gp__fits_on(s->e, s->w, s->models, n);
    return gp__place(s->e, s->w, s->models, 0) > 0;
}

/* Takes victims from cand in order until w fits (on n, or anywhere).
 * Returns 1 with the victims in *vs (still taken), 0 if w never fit (all
 * restored), or a negative error. */
static int greedy(search *s, gp__node *n, gp__wl **cand, uint32_t ncand, uint32_t max, vset *vs) {
    for (uint32_t i = 0; i < ncand && vs->n < max; i++) {
        if (!eligible(s, cand[i]))
            continue; /* earlier victims changed its queue's books */
        int rc = take(s->e, vs, cand[i]);
        if (rc) {
            restore_all(s->e, vs);
            return rc;
        }
        if (fits(s, n))
            return 1;
    }
    restore_all(s->e, vs);
    return 0;
}

/* Spares every victim that is not needed after all. */
static void spare_unneeded(search *s, gp__node *n, vset *vs) {
    for (uint32_t i = 0; i < vs->n; i++) {
        gp__wl *v = vs->t[i].v;
        vset one = {&vs->t[i], 1, 1};
        put_back(s->e, &one, 0);
        if (!fits(s, n)) {
            /* Needed: take it again. take() appends, so swap it back in. */
            vset again = {0};
            if (take(s->e, &again, v) != 0) {
                gp__free(&s->e->alloc, again.t);
                continue;
            }
            vs->t[i] = again.t[0];
            gp__free(&s->e->alloc, again.t);
        }
    }
}

/* Writes the decisions for the victims in vs, restoring the books first. */
static int commit(search *s, vset *vs, gp_evict_reason why) {
    gp__wl *list[64];
    uint32_t n = 0;
    gp__wl **victims = vs->n <= 64 ? list : gp__malloc(&s->e->alloc, vs->n * sizeof *victims);
    if (!victims) {
        restore_all(s->e, vs);
        return GP_ENOMEM;
    }
    for (uint32_t i = 0; i < vs->n; i++)
        if (vs->t[i].v)
            victims[n++] = vs->t[i].v;
    restore_all(s->e, vs);
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = gp__decision_evict(s->e, victims[i], why, s->w->spec.id);
    s->w->victims_left = (int32_t)n;
    gp__wait_set(s->w, GP_WAIT_EVICTING);
    gp__wl_promise(s->w, s->w->per_task.v[GP_RES_GPU] * s->w->spec.min_tasks);
    if (victims != list)
        gp__free(&s->e->alloc, victims);
    return rc;
}

/* Whether node n could hold one task of s->w if its eligible victims were
 * gone (a quick upper bound on free plus evictable milli-GPU). Marks the
 * eligible victims for collect(). */
static int room_possible(search *s, gp__node *n) {
    const gp__wl *w = s->w;
    if (n->ntasks == 0 || !gp__could_fit_empty(n, w, s->models))
        return 0;
    int64_t room = 0;
    int any = 0;
    for (int32_t g = 0; g < n->spec.ngpus; g++)
        room += n->spec.gpus[g].mig ? 0 : n->free_milli[g];
    /* GPUs its victims free go first to what is held outside the pool. */
    room -= (int64_t)n->taken_short * GP_MILLI;
    for (uint32_t k = 0; k < n->ntasks; k++) {
        gp__wl *v = n->tasks[k].wl;
        if (v->elig != s->attempt) {
            if (!eligible(s, v))
                continue;
            v->elig = s->attempt;
        }
        any = 1;
        const gp__task *t = &v->tasks[n->tasks[k].task];
        for (int32_t i = 0; i < t->b.nslices; i++)
            room += t->b.slices[i].mig_slot < 0 ? t->b.slices[i].milli : 0;
    }
    return any && (w->mig_profile >= 0 || room >= w->per_task.v[GP_RES_GPU]);
}

static int by_size(const void *pa, const void *pb) {
    const gp__wl *a = *(gp__wl *const *)pa, *b = *(gp__wl *const *)pb;
    int64_t x = a->charged.v[GP_RES_GPU], y = b->charged.v[GP_RES_GPU];
    if (x != y)
        return x > y ? -1 : 1;
    return by_preference(pa, pb);
}

/* Victims on node n that make room for s->w, taken in preference order or
 * (by_largest) largest first, with the unneeded spared. Returns how many
 * (the victims stay taken in *vs), or 0 if no set works (nothing taken). */
static uint32_t node_victims(search *s, gp__node *n, int by_largest, uint32_t max, vset *vs) {
    gp__wl **cand;
    uint32_t ncand, k = 0;
    if (collect(s, n, 1, &cand, &ncand) != 0)
        return 0;
    if (by_largest && ncand > 1)
        qsort(cand, ncand, sizeof *cand, by_size);
    /* One victim alone first: taking victims in order can pass by the one
     * that suffices (an earlier victim that frees GPUs but not the CPU or
     * memory beside them makes a later one of the same queue ineligible). */
    for (uint32_t i = 0; i < ncand && !by_largest && max >= 1; i++) {
        if (!eligible(s, cand[i]) || take(s->e, vs, cand[i]) != 0)
            continue;
        if (fits(s, n)) {
            gp__free(&s->e->alloc, cand);
            return 1;
        }
        restore_all(s->e, vs);
    }
    if (greedy(s, n, cand, ncand, max, vs) == 1) {
        spare_unneeded(s, n, vs);
        for (uint32_t j = 0; j < vs->n; j++)
            k += vs->t[j].v != NULL;
    }
    gp__free(&s->e->alloc, cand);
    return k;
}

/* Reclaim or preempt for w: returns 1 if victims were chosen. */
static int evict_for(search *s, gp_evict_reason why) {
    gp_engine *e = s->e;
    vset vs = {0};
    int found = 0;
    if (s->w->spec.tasks == 1) {
        /* The node and order that need the fewest victims; preference order
         * first, so it wins ties. */
        int64_t best = -1;
        int best_order = 0, tried = 0;
        uint32_t best_k = UINT32_MAX;
        for (uint32_t i = 0; i < e->nnodes && best_k > 1 && tried < NODES_PER_SEARCH; i++) {
            gp__node *n = e->nodes[(i + e->evict_cursor) % e->nnodes];
            if (!n || !room_possible(s, n))
                continue;
            tried++;
            for (int order = 0; order < 2 && best_k > 1; order++) {
                uint32_t k = node_victims(s, n, order, best_k - 1, &vs);
                restore_all(e, &vs);
                if (k > 0 && k < best_k) {
                    best_k = k;
                    best = n->id;
                    best_order = order;
                }
            }
        }
        if (best >= 0 && node_victims(s, e->nodes[best], best_order, UINT32_MAX, &vs) > 0) {
            found = commit(s, &vs, why) == 0;
            e->evict_cursor = (uint32_t)best + 1;
        }
        restore_all(e, &vs);
    } else {
        /* A gang: victims anywhere, as a whole, most preferred first. */
        gp__wl **cand;
        uint32_t ncand;
        if (collect(s, NULL, 1, &cand, &ncand) == 0 &&
            greedy(s, NULL, cand, ncand, 256, &vs) == 1) {
            spare_unneeded(s, NULL, &vs);
            found = commit(s, &vs, why) == 0;
        }
        gp__free(&s->e->alloc, cand);
    }
    gp__free(&s->e->alloc, vs.t);
    return found;
}

/* Consolidation for a single fragmented task: empty enough of one node by
 * moving single-task workloads elsewhere. Returns 1 if moves were chosen. */
static int consolidate(search *s) {
    gp_engine *e = s->e;
    if (s->w->spec.tasks != 1 || s->w->mig_profile >= 0)
        return 0;
    int found = 0, tried = 0;
    for (uint32_t i = 0; i < e->nnodes && !found && tried < NODES_PER_SEARCH; i++) {
        gp__node *n = e->nodes[(i + e->evict_cursor) % e->nnodes];
        if (!n || !room_possible(s, n))
            continue;
        tried++;
        gp__wl **cand;
        uint32_t ncand;
        vset vs = {0};
        if (collect(s, n, 1, &cand, &ncand) != 0)
            break;
        if (greedy(s, n, cand, ncand, 8, &vs) == 1) {
            spare_unneeded(s, n, &vs);
            /* Hold the beneficiary's room on n, then every moved workload
             * must find a place again (on n too, on another GPU). */
            int ok = gp__place_on(e, s->w, s->models, n);
            for (uint32_t k = 0; k < vs.n && ok; k++) {
                gp__wl *v = vs.t[k].v;
                if (v)
                    ok = gp__place(e, v, gp__allowed_models(e, v), 1) > 0;
            }
            gp__wl_unbind(e, s->w);
            if (ok)
                found = commit(s, &vs, GP_EVICT_CONSOLIDATE) == 0;
            else
                restore_all(e, &vs);
        }
        gp__free(&s->e->alloc, vs.t);
        gp__free(&s->e->alloc, cand);
    }
    return found;
}

/* Whether w's project would stay within its fair share with w placed (the
 * levels above are checked per victim, below the common ancestor). Sets the
 * FAIR_SHARE reason if not. */
static int below_fair_share(const gp_engine *e, gp__wl *w) {
    const gp__queue *q = w->queue;
    int64_t need = w->per_task.v[GP_RES_GPU] * w->spec.min_tasks;
    if (q->alloc.v[GP_RES_GPU] + q->arriving + need <= q->fair.v[GP_RES_GPU])
        return 1;
    /* Say so only where it is the news: other queues hold what it needs. A
     * gang or fragmentation reason is more useful as it stands. */
    int64_t others = 0;
    for (uint32_t i = 0; i < e->nroots; i++)
        others += e->roots[i]->alloc.v[GP_RES_GPU];
    others -= q->alloc.v[GP_RES_GPU];
    if (w->wait.why != GP_WAIT_NO_FIT || others <= 0)
        return 0;
    gp__wait_set(w, GP_WAIT_FAIR_SHARE);
    w->wait.queue = q;
    w->wait.b = q->fair.v[GP_RES_GPU];
    return 0;
}

/* Runs one kind of search for w unless the same request of the same queue
 * already failed it this cycle: books only tighten as evictions are chosen,
 * so a failed search stays failed. */
static int search_once(search *s, int (*fn)(search *, gp_evict_reason), gp_evict_reason why) {
    gp_engine *e = s->e;
    uint64_t key = s->w->sig ^ ((uint64_t)(uintptr_t)s->w->queue * UINT64_C(0x9e3779b97f4a7c15)) ^
                   ((uint64_t)(uintptr_t)s->within * UINT64_C(0xff51afd7ed558ccd)) ^
                   ((uint64_t)s->mode << 61);
    if (s->within) /* through a limit, its other quota checks decide too */
        key ^= (uint64_t)(s->w->preemptible == 0) * UINT64_C(0xd6e8feb86659fd93);
    if (s->mode == PREEMPT) /* whom it may preempt depends on its priority */
        key ^= (uint64_t)(uint32_t)s->w->spec.priority * UINT64_C(0xc2b2ae3d27d4eb4f);
    key = key ? key : 1;
    if (gp__u64map_get(&e->evict_memo, key))
        return 0;
    s->attempt = ++e->stamp;
    if (fn(s, why))
        return 1;
    gp__u64map_put(&e->evict_memo, key, (void *)1); /* a failed put only costs speed */
    return 0;
}

static int consolidate_fn(search *s, gp_evict_reason why) {
    (void)why;
    return consolidate(s);
}

void gp__evict_phase(gp_engine *e, gp__wl **failed, uint32_t nfailed) {
    int32_t budget = e->cfg.max_evicting_attempts ? e->cfg.max_evicting_attempts : INT32_MAX;
    gp__u64map_clear(&e->evict_memo);
    for (uint32_t i = 0; i < nfailed && budget > 0; i++) {
        gp__wl *w = failed[i];
        if (w->state != GP_STATE_PENDING || w->wait.why == GP_WAIT_EVICTING || w->paused_on)
            continue;
        gp__wl_diagnosed(e, w);
        gp_wait why = w->wait.why;
        /* A limit on the GPUs of its project or a department above it:
         * evicting work under that queue makes room (reclaim from a sibling
         * over its fair share, or preempt in its own project). */
        const gp__queue *within = NULL;
        if (why == GP_WAIT_QUEUE_LIMIT && w->wait.a == GP_RES_GPU && w->wait.queue)
            within = w->wait.queue;
        else if (why != GP_WAIT_NO_FIT && why != GP_WAIT_FRAGMENTED && why != GP_WAIT_GANG)
            continue;
        budget--;
        search s = {e, w, gp__allowed_models(e, w), CONSOLIDATE, 0, within};
        if (within)
            w->sig = gp__signature(w, s.models);
        if (e->cfg.consolidate && why == GP_WAIT_FRAGMENTED &&
            search_once(&s, consolidate_fn, GP_EVICT_CONSOLIDATE))
            continue;
        s.mode = RECLAIM;
        if (e->cfg.reclaim && below_fair_share(e, w) &&
            search_once(&s, evict_for, GP_EVICT_RECLAIM))
            continue;
        s.mode = PREEMPT;
        if (e->cfg.preempt && search_once(&s, evict_for, GP_EVICT_PREEMPT))
            continue;
    }
}
