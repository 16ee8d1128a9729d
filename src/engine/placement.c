/*
 * placement.c — the placement policies behind placement.h: bin-pack, spread,
 * the six policies of the FGD paper ("Beware of Fragmentation: Scheduling
 * GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23)
 * and gpupool's own policy, plus FGD's fragmentation measure and the per-node
 * caches that keep the expensive policies cheap.
 *
 * The paper's six policies (random, dotprod, gpuclustering, gpupacking,
 * bestfit, fgd) are reimplemented as its open-source Kubernetes scheduler
 * simulator scores them: integer node scores from 0 to 100, GPUs chosen inside
 * a node by best fit (or at random, or by least fragmentation for FGD), and
 * ties between nodes broken by a fixed node order. That simulator runs a
 * Kubernetes scheduler patched to give a tie to the node whose name sorts
 * first, and prefixes every node name with a seeded random number: in effect
 * a random order of the nodes drawn once per run. Here the order is
 * gp__placer_rank(), added as a bonus in [0, 0.5) to the integer score. random
 * picks a uniformly random node that fits. docs/placement.md explains every
 * score and gpupool's policy.
 *
 * Caches: FGD and gpupool evaluate the fragmentation of every candidate state
 * of a node, which costs (typical shapes x GPUs) per candidate GPU. Each node
 * keeps the fragmentation of its current state and a version stamp bumped by
 * gp__placer_node_changed. Outcomes (fits or not, GPUs chosen, score) are
 * kept per request shape in one array indexed by node id, each entry stamped
 * with the node version it was computed for; the cycle scores one request on
 * many nodes in a row, so the shape is looked up once and the per-node
 * lookups walk one contiguous array. Between two changes of a node, a request
 * shape seen before costs one array read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/placement.h"

#include "engine/alloc.h"

/* The largest node the FGD paper's scores normalise by (its MaxSpecCpu and
 * MaxSpecGpu): 128 cores and 8 GPUs. */
#define MAX_SPEC_CPU 128000.0
#define MAX_SPEC_GPU 8000.0

/* Affinity classes of GPU clustering: 0 holds GPU-sharing tasks, k holds
 * tasks of k whole GPUs. */
#define NCLASSES (GP_MAX_GPUS_PER_NODE + 1)

/* ------------------------------------------------------------------------ */
/* Per-node state                                                            */
/* ------------------------------------------------------------------------ */

/* What a request keys the score cache by: everything in gp__preq except
 * host memory, which never changes a score and is checked on every call. */
typedef struct cache_key {
    int32_t ngpus, milli;
    int64_t gpu_mem, cpu;
    uint64_t models;
} cache_key;

/* One cached outcome: valid only if gen equals the node's version. The GPUs
 * chosen are kept as a bit mask: whole GPUs are always chosen in index order
 * and a share takes one GPU, so the mask gives back the list exactly. */
typedef struct cache_ent {
    uint32_t gen;
    uint16_t gpus; /* bit per chosen GPU */
    int8_t fits;
    double score;
} cache_ent;

/* The outcomes of one request shape on every node, indexed by node id. */
typedef struct cache_shape {
    cache_key key;
    uint32_t cap; /* entries in ents */
    cache_ent *ents;
} cache_shape;

typedef struct pstate {
    uint32_t gen; /* node version, bumped on every change */
    int frag_valid;
    double frag;           /* fragmentation of the current state */
    int32_t aff[NCLASSES]; /* tasks per affinity class */
    int32_t naff;          /* classes with at least one task */
} pstate;

/* A typical shape reduced to what the fragmentation measure needs. */
typedef struct fshape {
    double w; /* popularity */
    int64_t cpu;
    uint64_t models; /* 0 = any */
    int32_t need;    /* milli-GPU per GPU; -1: by GPU memory */
    int32_t count;   /* GPUs it needs with room; 0: no GPU */
    const gp__preq *req;
} fshape;

struct gp__placer {
    const gp_allocator *alloc; /* the engine's */
    gp_placement policy;
    uint64_t seed; /* draws the nodes' tie-break order */
    uint64_t rng;
    gp__pshape *shapes;
    fshape *fs; /* [nshapes] */
    size_t nshapes;
    pstate *nodes; /* indexed by gp__pnode.id */
    uint32_t nnodes;
    cache_shape *cs; /* request shapes seen, in first-seen order */
    uint32_t ncs, ccs;
    uint32_t *cs_index; /* open addressing over cs: index + 1, 0 empty */
    uint32_t cs_index_cap;
    int32_t last;   /* cs entry of the last request, -1 none */
    int32_t *room;  /* [nshapes] scratch for frag_drop */
    int64_t *small; /* [nshapes] scratch for frag_drop */
};

static uint64_t next_rand(gp__placer *p) {
    /* splitmix64: small, fast and good enough for tie-breaking. */
    uint64_t z = (p->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* A uniform double in [0, 1). */
static double rand_unit(gp__placer *p) {
    return (double)(next_rand(p) >> 11) * (1.0 / 9007199254740992.0);
}

/* A function of the seed and the id only: splitmix64 of the two mixed. */
double gp__placer_rank(const gp__placer *p, uint32_t id) {
    uint64_t z = p->seed ^ ((uint64_t)id + 1) * UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* The tie-break bonus of the paper's policies: half the node's rank, in
 * [0, 0.5), so it orders equal integer scores and never overturns a point. */
static double tie_bonus(const gp__placer *p, uint32_t id) {
    return 0.5 * gp__placer_rank(p, id);
}

/* Returns the state of node id, growing the table; NULL if out of memory. */
static pstate *state_of(gp__placer *p, uint32_t id) {
    if (id >= p->nnodes) {
        uint32_t n = p->nnodes ? p->nnodes : 64;
        while (n <= id)
            n *= 2;
        pstate *s = gp__realloc(p->alloc, p->nodes, (size_t)n * sizeof *s);
        if (!s)
            return NULL;
        memset(s + p->nnodes, 0, (size_t)(n - p->nnodes) * sizeof *s);
        for (uint32_t i = p->nnodes; i < n; i++)
            s[i].gen = 1;
        p->nodes = s;
        p->nnodes = n;
    }
    return &p->nodes[id];
}

/* Forgets every cached outcome of node id (entries stamped 0 are never
 * live). */
static void cache_forget_node(gp__placer *p, uint32_t id) {
    for (uint32_t i = 0; i < p->ncs; i++)
        if (id < p->cs[i].cap)
            p->cs[i].ents[id].gen = 0;
}

/* Drops node id's cached fragmentation and outcomes. Versions start at 1 and
 * skip 0, so that zeroed (new) cache entries never look live; on wrap-around
 * the node's old entries are cleared for the same reason. */
static void state_invalidate(gp__placer *p, uint32_t id) {
    pstate *s = &p->nodes[id];
    s->frag_valid = 0;
    if (++s->gen == 0) {
        s->gen = 1;
        cache_forget_node(p, id);
    }
}

gp__placer *gp__placer_new(const gp_allocator *a, gp_placement policy, uint64_t seed) {
    gp__placer *p = gp__calloc(a, 1, sizeof *p);
    if (!p)
        return NULL;
    p->alloc = a;
    p->policy = policy;
    p->seed = seed;
    p->rng = seed ^ UINT64_C(0x5DEECE66D);
    p->last = -1;
    return p;
}

void gp__placer_free(gp__placer *p) {
    if (!p)
        return;
    for (uint32_t i = 0; i < p->ncs; i++)
        gp__free(p->alloc, p->cs[i].ents);
    gp__free(p->alloc, p->cs);
    gp__free(p->alloc, p->cs_index);
    gp__free(p->alloc, p->nodes);
    gp__free(p->alloc, p->shapes);
    gp__free(p->alloc, p->fs);
    gp__free(p->alloc, p->room);
    gp__free(p->alloc, p->small);
    gp__free(p->alloc, p);
}

int gp__placer_set_shapes(gp__placer *p, const gp__pshape *shapes, size_t n) {
    gp__pshape *copy = NULL;
    fshape *fs = NULL;
    int32_t *room = NULL;
    int64_t *small = NULL;
    if (n) {
        copy = gp__malloc(p->alloc, n * sizeof *copy);
        fs = gp__malloc(p->alloc, n * sizeof *fs);
        room = gp__malloc(p->alloc, n * sizeof *room);
        small = gp__malloc(p->alloc, n * sizeof *small);
        if (!copy || !fs || !room || !small) {
            gp__free(p->alloc, copy);
            gp__free(p->alloc, fs);
            gp__free(p->alloc, room);
            gp__free(p->alloc, small);
            return GP_ENOMEM;
        }
        memcpy(copy, shapes, n * sizeof *copy);
    }
    /* What frag_of needs per shape, worked out once. */
    for (size_t i = 0; i < n; i++) {
        const gp__preq *r = &copy[i].req;
        fs[i].w = copy[i].popularity;
        fs[i].cpu = r->cpu;
        fs[i].models = r->models;
        fs[i].req = r;
        if (r->ngpus > 0) {
            fs[i].need = GP_MILLI;
            fs[i].count = r->ngpus;
        } else if (r->milli > 0) {
            fs[i].need = r->milli;
            fs[i].count = 1;
        } else if (r->gpu_mem > 0) {
            fs[i].need = -1;
            fs[i].count = 1;
        } else {
            fs[i].need = 0;
            fs[i].count = 0;
        }
    }
    gp__free(p->alloc, p->shapes);
    gp__free(p->alloc, p->fs);
    gp__free(p->alloc, p->room);
    gp__free(p->alloc, p->small);
    p->shapes = copy;
    p->fs = fs;
    p->room = room;
    p->small = small;
    p->nshapes = n;
    for (uint32_t i = 0; i < p->nnodes; i++)
        state_invalidate(p, i);
    return 0;
}

void gp__placer_node_changed(gp__placer *p, const gp__pnode *n) {
    if (state_of(p, n->id))
        state_invalidate(p, n->id);
}

void gp__placer_node_removed(gp__placer *p, uint32_t id) {
    if (id >= p->nnodes)
        return;
    pstate *s = &p->nodes[id];
    /* A new node reusing the id starts clean; its version keeps counting so
     * that nothing cached for the old node looks live. */
    uint32_t gen = s->gen;
    memset(s, 0, sizeof *s);
    s->gen = gen;
    state_invalidate(p, id);
}

/* The affinity class of r (GPU clustering), or -1 if r asks for no GPU. */
static int affinity_class(const gp__preq *r) {
    if (r->ngpus > 0)
        return r->ngpus < NCLASSES ? r->ngpus : NCLASSES - 1;
    if (r->milli > 0 || r->gpu_mem > 0)
        return 0;
    return -1;
}

static void affinity_count(gp__placer *p, const gp__pnode *n, const gp__preq *r, int delta) {
    pstate *s = state_of(p, n->id);
    if (!s)
        return;
    state_invalidate(p, n->id);
    int c = affinity_class(r);
    if (c < 0)
        return;
    int32_t before = s->aff[c];
    s->aff[c] += delta;
    if (s->aff[c] < 0)
        s->aff[c] = 0;
    if (before == 0 && s->aff[c] > 0)
        s->naff++;
    else if (before > 0 && s->aff[c] == 0)
        s->naff--;
}

void gp__placer_bound(gp__placer *p, const gp__pnode *n, const gp__preq *r, const gp__pchoice *c) {
    (void)c;
    affinity_count(p, n, r, +1);
}

void gp__placer_unbound(gp__placer *p, const gp__pnode *n, const gp__preq *r,
                        const gp__pchoice *c) {
    (void)c;
    affinity_count(p, n, r, -1);
}

/* ------------------------------------------------------------------------ */
/* Feasibility and GPU choice                                                */
/* ------------------------------------------------------------------------ */

static int is_share(const gp__preq *r) {
    return r->ngpus == 0 && (r->milli > 0 || r->gpu_mem > 0);
}

static int wants_gpu(const gp__preq *r) {
    return r->ngpus > 0 || r->milli > 0 || r->gpu_mem > 0;
}

/* The milli-GPU r takes from GPU g of n (0 for CPU-only requests). */
static int32_t charge_milli(const gp__preq *r, const gp__pnode *n, int32_t g) {
    int32_t milli;
    int64_t mem;
    gp__preq_charge(r, n->cap_mem[g], &milli, &mem);
    return milli;
}

/* Total milli-GPU one task of r takes on n (the request vector's GPU part). */
static double request_milli(const gp__preq *r, const gp__pnode *n) {
    if (r->ngpus > 0)
        return (double)r->ngpus * GP_MILLI;
    if (r->milli > 0)
        return r->milli;
    if (r->gpu_mem > 0 && n->ngpus > 0)
        return charge_milli(r, n, 0);
    return 0;
}

static int64_t idle_milli(const gp__pnode *n) {
    int64_t t = 0;
    for (int32_t g = 0; g < n->ngpus; g++)
        t += n->free_milli[g];
    return t;
}

/* Whole GPUs: the first r->ngpus GPUs that are entirely free, in index order
 * (what the FGD simulator's AllocateExclusiveGpuId does). Returns 0 if there
 * are not enough. */
static int choose_whole(const gp__preq *r, const gp__pnode *n, gp__pchoice *c) {
    c->ngpus = 0;
    for (int32_t g = 0; g < n->ngpus && c->ngpus < r->ngpus; g++)
        if (gp__preq_fits_gpu(r, n, g))
            c->gpu[c->ngpus++] = g;
    return c->ngpus == r->ngpus;
}

/* A share of one GPU: the fitting GPU with the least (best) or the most
 * (worst) free milli-GPU, the first one on ties. Returns 0 if none fits. */
static int choose_fit(const gp__preq *r, const gp__pnode *n, int worst, gp__pchoice *c) {
    int32_t best = -1;
    for (int32_t g = 0; g < n->ngpus; g++) {
        if (!gp__preq_fits_gpu(r, n, g))
            continue;
        if (best < 0 || (worst ? n->free_milli[g] > n->free_milli[best]
                               : n->free_milli[g] < n->free_milli[best]))
            best = g;
    }
    c->ngpus = best >= 0;
    c->gpu[0] = best;
    return best >= 0;
}

/* A share of one GPU chosen uniformly among those that fit. */
static int choose_random(gp__placer *p, const gp__preq *r, const gp__pnode *n, gp__pchoice *c) {
    int32_t seen = 0, pick = -1;
    for (int32_t g = 0; g < n->ngpus; g++) {
        if (!gp__preq_fits_gpu(r, n, g))
            continue;
        seen++;
        if (next_rand(p) % (uint64_t)seen == 0)
            pick = g;
    }
    c->ngpus = pick >= 0;
    c->gpu[0] = pick;
    return pick >= 0;
}

/* Whether r fits n at all (CPU, memory, models, GPU capacity); fills *c with
 * the best-fit choice (or the worst-fit one if worst). */
static int fits_node(const gp__preq *r, const gp__pnode *n, int worst, gp__pchoice *c) {
    if (n->cpu_free < r->cpu || n->mem_free < r->mem)
        return 0;
    if (r->ngpus > 0)
        return choose_whole(r, n, c);
    if (is_share(r))
        return choose_fit(r, n, worst, c);
    c->ngpus = 0;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* FGD's fragmentation measure                                               */
/* ------------------------------------------------------------------------ */

/* Whether GPU g of n is of a model that model mask `models` allows. */
static int model_ok(uint64_t models, const gp__pnode *n, int32_t g) {
    return !models || (models & (UINT64_C(1) << (n->gpu_model[g] & 63)));
}

/* The milli-GPU typical shape s needs on GPU g of n. */
static int32_t shape_need(const fshape *s, const gp__pnode *n, int32_t g) {
    return s->need >= 0 ? s->need : charge_milli(s->req, n, g);
}

/* Whether shape s could run on a node with cpu_free milli-CPU at all, GPU
 * capacity aside. */
static int shape_may_run(const fshape *s, int64_t cpu_free) {
    return s->count > 0 && cpu_free >= s->cpu;
}

/* For shape s on GPUs free[] of n, which add up to idle, and cpu_free
 * milli-CPU: how many GPUs have room for it (*room) and the free milli-GPU of
 * the others (*small). A shape that cannot run there at all (shape_may_run)
 * has room on no GPU. */
static void shape_split(const fshape *s, const gp__pnode *n, int64_t cpu_free, const int32_t *free,
                        int64_t idle, int32_t *room, int64_t *small) {
    int32_t k = 0;
    int64_t sm = 0;
    if (!shape_may_run(s, cpu_free)) {
        *room = 0;
        *small = idle;
        return;
    }
    for (int32_t g = 0; g < n->ngpus; g++)
        if (model_ok(s->models, n, g) && free[g] >= shape_need(s, n, g))
            k++;
        else
            sm += free[g];
    *room = k;
    *small = sm;
}

/* Shape s's term of the fragmentation of a node with idle milli-GPU free,
 * given its split there (shape_split): the idle capacity s could not use,
 * weighted by its popularity. That is all of it unless enough GPUs have
 * room for s; then only the GPUs without. */
static double shape_frag(const fshape *s, int32_t room, int64_t small, int64_t idle) {
    return s->w * (double)(room >= s->count ? small : idle);
}

/*
 * The fragmentation of node n if it had cpu_free milli-CPU and free[] milli-GPU
 * free: for every typical shape s with popularity w, the idle GPU capacity s
 * could not use there, weighted by w. If s cannot run on the node at all (too
 * little CPU, too few GPUs with room for it, no GPU of an allowed model, or s
 * asks for no GPU), all idle GPU capacity counts; if it can, only the GPUs
 * with less free than s needs count. This is the simulator's
 * NodeGpuShareFragAmountScore; host memory plays no part in it. frag_drop
 * relies on the sum being taken shape by shape in this order.
 */
static double frag_of(const gp__placer *p, const gp__pnode *n, int64_t cpu_free,
                      const int32_t *free) {
    int64_t idle = 0;
    for (int32_t g = 0; g < n->ngpus; g++)
        idle += free[g];
    if (idle == 0)
        return 0;
    double f = 0;
    for (size_t i = 0; i < p->nshapes; i++) {
        int32_t room;
        int64_t small;
        shape_split(&p->fs[i], n, cpu_free, free, idle, &room, &small);
        f += shape_frag(&p->fs[i], room, small, idle);
    }
    return f;
}

double gp__placer_node_frag(gp__placer *p, const gp__pnode *n) {
    pstate *s = state_of(p, n->id);
    if (s && s->frag_valid)
        return s->frag;
    double f = frag_of(p, n, n->cpu_free, n->free_milli);
    if (s) {
        s->frag = f;
        s->frag_valid = 1;
    }
    return f;
}

static double sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

/* FGD's node score for a fragmentation drop d: 100 sigmoid(d / 1000),
 * truncated as the simulator's int64() does. */
static double fgd_score(double d) {
    return (double)(int64_t)(sigmoid(d / 1000.0) * 100.0);
}

/*
 * The fragmentation of n after taking m milli-GPU from GPU g and leaving cpu
 * milli-CPU, from the per-shape split of the current GPUs (p->room and
 * p->small, made by frag_drop for the same cpu). Equal, bit for bit, to
 * frag_of on the changed state, at the cost of one step per shape.
 */
static double frag_after_share(const gp__placer *p, const gp__pnode *n, int64_t cpu, int64_t idle,
                               int32_t g, int32_t m) {
    int32_t before = n->free_milli[g], after = before - m;
    int64_t idle2 = idle - m;
    if (idle2 == 0)
        return 0;
    double f = 0;
    for (size_t i = 0; i < p->nshapes; i++) {
        const fshape *s = &p->fs[i];
        int32_t room = p->room[i];
        int64_t small = p->small[i];
        if (!shape_may_run(s, cpu) || !model_ok(s->models, n, g)) {
            small -= m; /* g had no room for s and has none */
        } else {
            int32_t need = shape_need(s, n, g);
            int in0 = before >= need, in1 = after >= need;
            room += in1 - in0;
            small += (in1 ? 0 : after) - (in0 ? 0 : before);
        }
        f += shape_frag(s, room, small, idle2);
    }
    return f;
}

/*
 * FGD and gpupool: the drop of fragmentation if r were placed on n (positive
 * is good), for the best GPU choice, which goes into *c. For a share, every
 * GPU with room is tried and the one whose placement has the best integer
 * score is kept (the simulator compares the truncated scores, not the raw
 * drops); on a tie FGD keeps the first, gpupool the fuller GPU (best fit,
 * which keeps whole GPUs free for whole-GPU requests). Whole GPUs go to the
 * first free ones. Assumes r fits n (fits_node returned 1 with *c filled).
 */
static double frag_drop(gp__placer *p, const gp__pnode *n, const gp__preq *r, double before,
                        gp__pchoice *c, int gpupool) {
    int64_t cpu = n->cpu_free - r->cpu;
    if (!is_share(r)) {
        int32_t free[GP_MAX_GPUS_PER_NODE];
        memcpy(free, n->free_milli, (size_t)n->ngpus * sizeof *free);
        for (int32_t i = 0; i < c->ngpus; i++)
            free[c->gpu[i]] -= GP_MILLI;
        return before - frag_of(p, n, cpu, free);
    }
    int64_t idle = idle_milli(n);
    for (size_t i = 0; i < p->nshapes; i++)
        shape_split(&p->fs[i], n, cpu, n->free_milli, idle, &p->room[i], &p->small[i]);
    double best = -INFINITY, best_key = -INFINITY;
    int32_t pick = -1;
    for (int32_t g = 0; g < n->ngpus; g++) {
        if (!gp__preq_fits_gpu(r, n, g))
            continue;
        double d = before - frag_after_share(p, n, cpu, idle, g, charge_milli(r, n, g));
        double key = fgd_score(d);
        if (pick < 0 || key > best_key ||
            (gpupool && key == best_key && n->free_milli[g] < n->free_milli[pick])) {
            best_key = key;
            best = d;
            pick = g;
        }
    }
    c->ngpus = 1;
    c->gpu[0] = pick;
    return best;
}

/* ------------------------------------------------------------------------ */
/* Scores                                                                    */
/* ------------------------------------------------------------------------ */

/* Go's int64(x): truncation toward zero, as the simulator's scores do. */
static double trunc_score(double x) {
    return (double)(int64_t)x;
}

static double score_dotprod(const gp__preq *r, const gp__pnode *n) {
    double nv[2] = {(double)n->cpu_free / MAX_SPEC_CPU, (double)idle_milli(n) / MAX_SPEC_GPU};
    double pv[2] = {(double)r->cpu / MAX_SPEC_CPU, request_milli(r, n) / MAX_SPEC_GPU};
    double dot = (nv[0] * pv[0] + nv[1] * pv[1]) / 2.0;
    return trunc_score(100.0 * (1.0 - dot));
}

static double score_bestfit(const gp__preq *r, const gp__pnode *n) {
    double s = ((double)(n->cpu_free - r->cpu) / MAX_SPEC_CPU) * 0.5 +
               (((double)idle_milli(n) - request_milli(r, n)) / MAX_SPEC_GPU) * 0.5;
    return trunc_score((1.0 - s) * 100.0);
}

static double score_clustering(const gp__placer *p, const gp__preq *r, const gp__pnode *n) {
    int c = affinity_class(r);
    if (c < 0)
        return 0;
    const pstate *s = &p->nodes[n->id];
    int64_t left = idle_milli(n);
    int64_t base = 25 * ((int64_t)MAX_SPEC_GPU - left) / (int64_t)MAX_SPEC_GPU;
    if (s->aff[c] > 0)
        return (double)(base + (s->naff == 1 ? 75 : 50));
    return (double)(base + (s->naff == 0 ? 25 : 0));
}

static double score_packing(const gp__preq *r, const gp__pnode *n) {
    if (!wants_gpu(r))
        return 0;
    int32_t fully = 0;
    for (int32_t g = 0; g < n->ngpus; g++)
        fully += n->free_milli[g] == GP_MILLI;
    if (fully == n->ngpus) {
        int32_t s = 100 / 3 - fully;
        return (double)(s > fully ? s : fully);
    }
    /* The GPUs a best-fit allocation would use: least free first. */
    int32_t order[GP_MAX_GPUS_PER_NODE], k = 0;
    for (int32_t g = 0; g < n->ngpus; g++) {
        int32_t j = k++;
        while (j > 0 && n->free_milli[order[j - 1]] > n->free_milli[g]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = g;
    }
    int32_t need = r->ngpus > 0 ? r->ngpus : 1, used_free = 0;
    int64_t ratio = 0;
    for (int32_t i = 0; i < k && need > 0; i++) {
        int32_t g = order[i];
        int32_t m = r->ngpus > 0 ? GP_MILLI : charge_milli(r, n, g);
        if (n->free_milli[g] < m)
            continue;
        need--;
        used_free += n->free_milli[g] == GP_MILLI;
        ratio += (int64_t)n->free_milli[g] * 100 / GP_MILLI;
    }
    if (need > 0)
        return 0;
    if (used_free > 0) {
        int32_t s = 100 / 2 - used_free;
        return (double)(s > 100 / 3 ? s : 100 / 3);
    }
    int64_t s = 100 - ratio / 10;
    return (double)(s > 50 ? s : 50);
}

/* Bin-pack and spread: the share of the node's GPUs (then CPU) left free after
 * the placement, as a fraction; bin-pack prefers the smallest. */
static double free_after(const gp__preq *r, const gp__pnode *n) {
    double gcap = (double)n->ngpus * GP_MILLI, ccap = (double)n->cpu_cap;
    double g = gcap > 0 ? ((double)idle_milli(n) - request_milli(r, n)) / gcap : 0;
    double c = ccap > 0 ? (double)(n->cpu_free - r->cpu) / ccap : 0;
    return g + c * 1e-3;
}

/*
 * gpupool's score: FGD's integer score, and within a tie a soft order that
 * leans to fuller nodes: GPUPOOL_RANK times the node's place in the fixed
 * tie-break order, minus GPUPOOL_PACK times the share of the node's GPU
 * capacity left idle after the placement. Both terms together stay below 1,
 * so they never overturn a difference of FGD's score.
 *
 * Why: FGD's score is blind to whatever its typical shapes do not see (rare
 * 8-GPU tasks, the last few percent at saturation), so within a tie what
 * keeps capacity usable is to fill nodes that are already busy and keep the
 * others whole. A fixed order alone already does that (it is what makes the
 * FGD simulator's numbers); leaning it towards fuller nodes does better. The
 * share, not the absolute idle GPUs, is what leans: absolute idle makes
 * every small node look fuller and pulls unconstrained work onto them, which
 * starves the tasks that may only use those models. The 1:2 ratio was the
 * best of 1:1 to 1:10 on the openb workloads; packing alone (no order) and
 * the order alone (FGD) both did worse (docs/placement.md).
 */
#define GPUPOOL_RANK 0.1
#define GPUPOOL_PACK 0.05

static double score_gpupool(const gp__placer *p, double drop, const gp__preq *r,
                            const gp__pnode *n) {
    double idle_after = ((double)idle_milli(n) - request_milli(r, n)) / GP_MILLI;
    double gpu_share = n->ngpus > 0 ? idle_after / n->ngpus : 0;
    return fgd_score(drop) + GPUPOOL_RANK * gp__placer_rank(p, n->id) - GPUPOOL_PACK * gpu_share;
}

static uint64_t key_hash(const cache_key *k) {
    uint64_t h = (uint64_t)k->ngpus * UINT64_C(0x9E3779B97F4A7C15) ^
                 (uint64_t)k->milli * UINT64_C(0xC2B2AE3D27D4EB4F) ^
                 (uint64_t)k->gpu_mem * UINT64_C(0x165667B19E3779F9) ^
                 (uint64_t)k->cpu * UINT64_C(0x27D4EB2F165667C5) ^ k->models;
    return h ^ (h >> 29);
}

/* The slot of key k in the shape index: where it is, or the empty slot where
 * it would go. The index is never full (at most half its slots are used). */
static uint32_t index_slot(const gp__placer *p, const cache_key *k) {
    uint32_t mask = p->cs_index_cap - 1, i = (uint32_t)key_hash(k) & mask;
    while (p->cs_index[i] && memcmp(&p->cs[p->cs_index[i] - 1].key, k, sizeof *k))
        i = (i + 1) & mask;
    return i;
}

/* Adds request shape k to the cache; returns its number, or -1 if out of
 * memory (nothing changed then). */
static int32_t cache_add_shape(gp__placer *p, const cache_key *k) {
    if (p->ncs == p->ccs) {
        uint32_t n = p->ccs ? 2 * p->ccs : 16;
        cache_shape *cs = gp__realloc(p->alloc, p->cs, (size_t)n * sizeof *cs);
        if (!cs)
            return -1;
        p->cs = cs;
        p->ccs = n;
    }
    if (2 * (p->ncs + 1) > p->cs_index_cap) {
        uint32_t cap = p->cs_index_cap ? 2 * p->cs_index_cap : 64;
        uint32_t *idx = gp__calloc(p->alloc, cap, sizeof *idx);
        if (!idx)
            return -1;
        gp__free(p->alloc, p->cs_index);
        p->cs_index = idx;
        p->cs_index_cap = cap;
        for (uint32_t i = 0; i < p->ncs; i++)
            idx[index_slot(p, &p->cs[i].key)] = i + 1;
    }
    p->cs_index[index_slot(p, k)] = p->ncs + 1;
    p->cs[p->ncs] = (cache_shape){*k, 0, NULL};
    return (int32_t)p->ncs++;
}

/*
 * The cache entry of request r on node id, growing the tables as needed; NULL
 * if out of memory (the cache is an optimisation only). Consecutive calls for
 * the same request, as the cycle's scan over nodes makes, skip the hashing.
 */
static cache_ent *cache_entry(gp__placer *p, const gp__preq *r, uint32_t id) {
    cache_key k;
    memset(&k, 0, sizeof k);
    k.ngpus = r->ngpus;
    k.milli = r->milli;
    k.gpu_mem = r->gpu_mem;
    k.cpu = r->cpu;
    k.models = r->models;
    int32_t i = p->last;
    if (i < 0 || memcmp(&p->cs[i].key, &k, sizeof k)) {
        if (p->cs_index_cap && p->cs_index[index_slot(p, &k)])
            i = (int32_t)p->cs_index[index_slot(p, &k)] - 1;
        else if ((i = cache_add_shape(p, &k)) < 0)
            return NULL;
        p->last = i;
    }
    cache_shape *c = &p->cs[i];
    if (id >= c->cap) {
        uint32_t cap = p->nnodes > id ? p->nnodes : id + 1;
        cache_ent *e = gp__realloc(p->alloc, c->ents, (size_t)cap * sizeof *e);
        if (!e)
            return NULL;
        memset(e + c->cap, 0, (size_t)(cap - c->cap) * sizeof *e);
        c->ents = e;
        c->cap = cap;
    }
    return &c->ents[id];
}

/* FGD and gpupool, through the cache. */
static int score_frag(gp__placer *p, const gp__pnode *n, const gp__preq *r, gp__pchoice *out) {
    if (n->cpu_free < r->cpu || n->mem_free < r->mem)
        return 0;
    uint32_t gen = p->nodes[n->id].gen; /* gp__placer_score made it exist */
    cache_ent *e = cache_entry(p, r, n->id);
    if (e && e->gen == gen) {
        out->ngpus = 0;
        for (uint32_t m = e->gpus; m; m &= m - 1)
            out->gpu[out->ngpus++] = __builtin_ctz(m);
        out->score = e->score;
        return e->fits;
    }
    int fits = fits_node(r, n, 0, out);
    if (fits) {
        double before = gp__placer_node_frag(p, n);
        int gpupool = p->policy == GP_PLACE_GPUPOOL;
        double drop = frag_drop(p, n, r, before, out, gpupool);
        out->score = gpupool ? score_gpupool(p, drop, r, n) : fgd_score(drop) + tie_bonus(p, n->id);
    } else {
        memset(out, 0, sizeof *out);
    }
    if (e) {
        e->gen = gen;
        e->fits = (int8_t)fits;
        e->score = out->score;
        e->gpus = 0;
        for (int32_t k = 0; k < out->ngpus; k++)
            e->gpus |= (uint16_t)(1u << out->gpu[k]);
    }
    return fits;
}

int gp__placer_score(gp__placer *p, const gp__pnode *n, const gp__preq *r, gp__pchoice *out) {
    if (!state_of(p, n->id)) {
        /* Without memory for the node's state, fall back to bin-pack. */
        if (!fits_node(r, n, 0, out))
            return 0;
        out->score = -free_after(r, n);
        return 1;
    }
    switch (p->policy) {
    case GP_PLACE_FGD:
    case GP_PLACE_GPUPOOL:
        return score_frag(p, n, r, out);
    case GP_PLACE_RANDOM:
        if (!fits_node(r, n, 0, out))
            return 0;
        if (is_share(r))
            choose_random(p, r, n, out);
        out->score = rand_unit(p);
        return 1;
    default:
        break;
    }
    int worst = p->policy == GP_PLACE_SPREAD;
    if (!fits_node(r, n, worst, out))
        return 0;
    switch (p->policy) {
    case GP_PLACE_BINPACK:
        out->score = -free_after(r, n);
        return 1;
    case GP_PLACE_SPREAD:
        out->score = free_after(r, n);
        return 1;
    case GP_PLACE_DOTPROD:
        out->score = score_dotprod(r, n);
        break;
    case GP_PLACE_GPUCLUSTERING:
        out->score = score_clustering(p, r, n);
        break;
    case GP_PLACE_GPUPACKING:
        out->score = score_packing(r, n);
        break;
    case GP_PLACE_BESTFIT:
        out->score = score_bestfit(r, n);
        break;
    default:
        out->score = 0;
        break;
    }
    out->score += tie_bonus(p, n->id);
    return 1;
}
