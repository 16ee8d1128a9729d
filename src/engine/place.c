/*
 * place.c — putting one workload's tasks on nodes: the candidate scan that
 * asks the placement policy to choose GPUs and score each node, gang and
 * elastic-gang rules, topology domains, MIG instances, per-model quota
 * filtering, and the diagnosis of why a workload does not fit.
 *
 * Placement binds tasks as it goes (so the next task of a gang sees what the
 * previous ones took) and unbinds them all if the gang cannot be completed:
 * a gang is never left partly placed.
 */
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "engine/internal.h"

/* Bonuses added to a policy's score so that a gang prefers nodes it already
 * uses (fewest nodes), then its first task's topology domain. */
#define SAME_NODE_BONUS   1e12
#define SAME_DOMAIN_BONUS 1e11

uint64_t gp__allowed_models(const gp_engine *e, const gp__wl *w) {
    uint64_t all = e->nmodels >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << e->nmodels) - 1;
    uint64_t mask = w->preq.models ? w->preq.models : all;
    int64_t need = w->per_task.v[GP_RES_GPU] * w->spec.tasks;
    for (const gp__queue *q = w->queue; q; q = q->parent) {
        for (int32_t i = 0; i < q->spec.nmodels; i++) {
            int64_t lim = q->spec.models[i].gpu.limit;
            int32_t m = q->model_id[i];
            if (lim != GP_UNLIMITED && q->model_alloc[m] + need > lim)
                mask &= ~(UINT64_C(1) << m);
        }
    }
    return mask;
}

/* Cheap tests that rule a node out before the policy is asked. */
static int may_fit(const gp__node *n, const gp__wl *w) {
    const gp__preq *r = &w->preq;
    if (n->cpu_free < r->cpu || n->mem_free < r->mem)
        return 0;
    if (r->ngpus > 0)
        return n->free_whole >= r->ngpus;
    if (r->milli > 0)
        return n->best_free_milli >= r->milli;
    if (r->gpu_mem > 0)
        return n->best_free_milli > 0;
    return 1;
}

/* Finds a free MIG instance of w's profile on node n; returns 1 and fills s. */
static int mig_choose(const gp__node *n, const gp__wl *w, uint64_t models, gp_slice *s) {
    const char *profile = w->spec.req.mig_profile;
    int best_used = -1;
    for (int32_t g = 0; g < n->spec.ngpus; g++) {
        const gp_gpu_spec *gs = &n->spec.gpus[g];
        if (!gs->mig || !(models & (UINT64_C(1) << n->gpu_model[g])))
            continue;
        int used = 0, free_slot = -1;
        for (int32_t k = 0; k < gs->nmig; k++)
            if (n->mig_owner[g][k])
                used++;
            else if (free_slot < 0 && strncmp(gs->mig_layout[k], profile, 16) == 0)
                free_slot = k;
        /* Pack: prefer the GPU whose other instances are busiest. */
        if (free_slot >= 0 && used > best_used) {
            best_used = used;
            s->gpu = g;
            s->mig_slot = free_slot;
            s->milli = gp__mig_milli(w->mig_profile);
            s->mem = gp__mig_mem(w->mig_profile);
        }
    }
    return best_used >= 0;
}

/* The best node found so far for one task, and what it needs there. */
typedef struct pick {
    gp_engine *e;
    gp__wl *w;
    const gp__preq *r;
    int32_t domain, t, first_domain;
    int64_t best;
    double best_score;
    gp_slice *slices;
    int32_t *nslices;
} pick;

/* Scores node n for the next task of the gang and keeps it if it is the best
 * so far; equal scores go to the node added first (the lower id), whatever
 * the order nodes are visited in. */
static void consider(pick *p, gp__node *n) {
    gp_engine *e = p->e;
    gp__wl *w = p->w;
    const gp__preq *r = p->r;
    if (!n || !gp__node_matches(n, w) || (p->domain >= 0 && n->domain != p->domain))
        return;
    double score;
    gp_slice s[GP_MAX_GPUS_PER_NODE];
    int32_t ns = 0;
    if (w->mig_profile >= 0) {
        if (n->cpu_free < r->cpu || n->mem_free < r->mem || !mig_choose(n, w, r->models, s))
            return;
        ns = 1;
        score = 0;
    } else {
        if (!may_fit(n, w))
            return;
        gp__pchoice c;
        if (!gp__placer_score(e->placer, &n->view, r, &c))
            return;
        score = c.score;
        for (int32_t k = 0; k < c.ngpus; k++) {
            s[k].gpu = c.gpu[k];
            s[k].mig_slot = -1;
            gp__preq_charge(r, n->cap_mem[c.gpu[k]], &s[k].milli, &s[k].mem);
        }
        ns = c.ngpus;
    }
    for (int32_t k = 0; k < p->t; k++) {
        if (w->tasks[k].node == n->id) {
            score += SAME_NODE_BONUS;
            break;
        }
    }
    if (n->domain == p->first_domain)
        score += SAME_DOMAIN_BONUS;
    if (p->best < 0 || score > p->best_score ||
        (score == p->best_score && (int64_t)n->id < p->best)) {
        p->best = n->id;
        p->best_score = score;
        memcpy(p->slices, s, (size_t)ns * sizeof *s);
        *p->nslices = ns;
    }
}

static void consider_list(pick *p, const gp__idlist *l, int f) {
    for (uint32_t id1 = l->first; id1; id1 = p->e->nodes[id1 - 1]->link[f][1])
        consider(p, p->e->nodes[id1 - 1]);
}

/* Chooses the best node for one more task of w (only node `only`, if >= 0);
 * returns its id or -1. Only nodes whose capacity bucket could hold the
 * request are looked at: on a nearly full pool, a few. */
static int64_t choose_node(gp_engine *e, gp__wl *w, gp__preq *r, int32_t domain, int32_t t,
                           gp_slice *slices, int32_t *nslices, int64_t only) {
    pick p = {e,  w, r,      domain, t, t > 0 ? gp__node_at(e, w->tasks[0].node)->domain : -1,
              -1, 0, slices, nslices};
    if (only >= 0)
        consider(&p, e->nodes[only]);
    else if (r->ngpus > 0)
        for (int b = r->ngpus; b <= GP_MAX_GPUS_PER_NODE; b++)
            consider_list(&p, &e->by_whole[b], 0);
    else if (w->mig_profile < 0 && (r->milli > 0 || r->gpu_mem > 0))
        for (int b = r->milli > 0 ? r->milli : 1; b <= GP_MILLI; b++)
            consider_list(&p, &e->by_frac[b], 1);
    else
        for (uint32_t i = 0; i < e->nnodes; i++)
            consider(&p, e->nodes[i]);
    return p.best;
}

/* Places up to spec.tasks tasks of w in domain (-1: any); returns how many
 * were placed if at least min_tasks, else unbinds them and returns 0.
 * *most receives the most tasks that were placed before giving up. */
static int32_t place_in(gp_engine *e, gp__wl *w, uint64_t models, int32_t domain, int32_t *most) {
    gp__preq r = w->preq;
    r.models = models;
    int32_t t = 0;
    for (; t < w->spec.tasks; t++) {
        gp_slice s[GP_MAX_GPUS_PER_NODE];
        int32_t ns = 0;
        int64_t node = choose_node(e, w, &r, domain, t, s, &ns, -1);
        if (node < 0 || gp__wl_bind_task(e, w, t, (uint32_t)node, s, ns) != 0)
            break;
    }
    if (t > *most)
        *most = t;
    if (t < w->spec.min_tasks) {
        gp__wl_unbind(e, w);
        return 0;
    }
    return t;
}

int gp__place(gp_engine *e, gp__wl *w, uint64_t models, int commit) {
    int32_t most = 0, placed = 0;
    if (models == 0 && w->spec.req.gpu != GP_GPU_NONE)
        return 0;
    if (w->spec.same_domain && e->ndomains > 1)
        for (int32_t d = 0; d < e->ndomains && !placed; d++)
            placed = place_in(e, w, models, d, &most);
    else
        placed = place_in(e, w, models, -1, &most);
    if (placed && !commit)
        gp__wl_unbind(e, w);
    if (!placed)
        w->wait.a = most; /* for the diagnosis: tasks that did fit */
    return placed;
}

/* ---- Why it does not fit ---- */

/* How many tasks of w node n could hold at once were it empty: an upper
 * bound, each of GPU, CPU and memory counted on its own. */
static int64_t empty_tasks(const gp__node *n, const gp__wl *w, uint64_t models) {
    const gp__preq *r = &w->preq;
    int64_t k = INT64_C(1) << 40;
    if (r->cpu > 0 && n->spec.cpu_milli / r->cpu < k)
        k = n->spec.cpu_milli / r->cpu;
    if (r->mem > 0 && n->spec.mem_bytes / r->mem < k)
        k = n->spec.mem_bytes / r->mem;
    if (w->spec.req.gpu == GP_GPU_NONE)
        return k;
    int64_t g = 0;
    for (int32_t i = 0; i < n->spec.ngpus; i++) {
        const gp_gpu_spec *gs = &n->spec.gpus[i];
        if (!(models & (UINT64_C(1) << n->gpu_model[i])))
            continue;
        if (w->mig_profile >= 0) {
            for (int32_t s = 0; gs->mig && s < gs->nmig; s++)
                g += strncmp(gs->mig_layout[s], w->spec.req.mig_profile, 16) == 0;
        } else if (!gs->mig) {
            if (r->ngpus > 0)
                g++;
            else if (r->milli > 0)
                g += GP_MILLI / r->milli;
            else if (r->gpu_mem > 0)
                g += gs->mem_bytes / r->gpu_mem;
        }
    }
    if (r->ngpus > 0)
        g /= r->ngpus;
    return g < k ? g : k;
}

/* Whether an empty node n could ever hold one task of w. */
static int could_ever_fit(const gp__node *n, const gp__wl *w, uint64_t models) {
    return empty_tasks(n, w, models) > 0;
}

int64_t gp__pool_could_hold(const gp_engine *e, const gp__wl *w, uint64_t models, int cordoned,
                            int64_t enough) {
    int64_t total = 0, best = 0;
    int64_t *per = NULL;
    int by_domain = w->spec.same_domain && e->ndomains > 0;
    if (by_domain) {
        per = gp__calloc(&e->alloc, (size_t)e->ndomains, sizeof *per);
        if (!per)
            return INT64_C(1) << 40; /* no memory: claim nothing impossible */
    }
    /* Stops as soon as enough is found: a request that can run costs a few
     * nodes, only one that cannot costs a pass over the pool. */
    for (uint32_t i = 0; i < e->nnodes && best < enough && total < enough; i++) {
        const gp__node *n = e->nodes[i];
        if (!n || !n->alive || (!cordoned && !n->spec.schedulable))
            continue;
        if (!gp__node_matches_labels(n, w))
            continue;
        int64_t k = empty_tasks(n, w, models);
        if (per && n->domain >= 0 && n->domain < e->ndomains) {
            per[n->domain] += k;
            if (per[n->domain] > best)
                best = per[n->domain];
        } else {
            total += k;
        }
    }
    gp__free(&e->alloc, per);
    return by_domain ? best : total;
}

static void diagnose(gp_engine *e, gp__wl *w, uint64_t models);

void gp__wl_diagnosed(gp_engine *e, gp__wl *w) {
    if (w->wait.undiagnosed && w->state == GP_STATE_PENDING)
        diagnose(e, w, w->wait.diag_models);
    w->wait.undiagnosed = 0;
}

/* Sets w's wait reason after gp__place() failed. */
static void diagnose(gp_engine *e, gp__wl *w, uint64_t models) {
    int32_t placed_some = (int32_t)w->wait.a;
    int ever = 0;
    int64_t free_total = 0, need = 0;
    int32_t best_free = 0, best_whole = 0;
    const gp__node *best_node = NULL, *whole_node = NULL;
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const gp__node *n = e->nodes[i];
        if (!n || !gp__node_matches(n, w) || !could_ever_fit(n, w, models))
            continue;
        ever = 1;
        if (n->free_whole > best_whole) {
            best_whole = n->free_whole;
            whole_node = n;
        }
        for (int32_t g = 0; g < n->spec.ngpus; g++) {
            if (n->spec.gpus[g].mig || !(models & (UINT64_C(1) << n->gpu_model[g])))
                continue;
            free_total += n->free_milli[g];
            if (n->free_milli[g] > best_free) {
                best_free = n->free_milli[g];
                best_node = n;
            }
        }
    }
    need = w->per_task.v[GP_RES_GPU];
    /* The best a single GPU (fractions) or node (whole GPUs) offers now. */
    const gp__node *hint = w->preq.ngpus > 0 ? whole_node : best_node;
    w->wait.node = hint ? (int64_t)hint->id : -1;
    w->wait.b = w->preq.ngpus > 0 ? best_whole : best_free;
    if (!ever) {
        w->wait.why = GP_WAIT_NO_NODE;
        w->wait.a = 0;
    } else if (w->spec.min_tasks > 1 &&
               (w->wait.a = gp__pool_could_hold(e, w, models, 0, w->spec.min_tasks)) <
                   w->spec.min_tasks) {
        w->wait.why = GP_WAIT_NO_NODE; /* even with every node empty */
    } else if (w->spec.tasks > 1 && placed_some > 0) {
        w->wait.why = GP_WAIT_GANG;
        w->wait.a = placed_some;
    } else if (w->mig_profile < 0 && w->spec.req.gpu != GP_GPU_NONE && free_total >= need &&
               need > 0) {
        w->wait.why = GP_WAIT_FRAGMENTED;
        w->wait.a = free_total;
    } else {
        w->wait.why = GP_WAIT_NO_FIT;
        w->wait.a = free_total;
    }
    w->wait.undiagnosed = 0;
}

/* Whether one task of w fits on node n as it is now. */
int gp__fits_on(gp_engine *e, const gp__wl *w, uint64_t models, gp__node *n) {
    if (!gp__node_matches(n, w))
        return 0;
    gp__preq r = w->preq;
    r.models = models;
    if (w->mig_profile >= 0) {
        gp_slice s;
        return n->cpu_free >= r.cpu && n->mem_free >= r.mem && mig_choose(n, w, models, &s);
    }
    gp__pchoice c;
    return may_fit(n, w) && gp__placer_score(e->placer, &n->view, &r, &c);
}

int gp__place_on(gp_engine *e, gp__wl *w, uint64_t models, gp__node *n) {
    gp__preq r = w->preq;
    r.models = models;
    gp_slice s[GP_MAX_GPUS_PER_NODE];
    int32_t ns = 0;
    if (w->nbound != 0 || choose_node(e, w, &r, -1, 0, s, &ns, n->id) < 0)
        return 0;
    return gp__wl_bind_task(e, w, 0, n->id, s, ns) == 0;
}

int gp__could_fit_empty(const gp__node *n, const gp__wl *w, uint64_t models) {
    return gp__node_matches(n, w) && could_ever_fit(n, w, models);
}
