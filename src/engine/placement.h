/*
 * placement.h — internal to the engine: the interface between the cycle and
 * the placement policies (bin-pack, spread, the FGD paper's six policies and
 * gpupool's own fragmentation-aware policy).
 *
 * The cycle decides *whether* and *when* a task may be placed (quotas, order,
 * gangs); a placer decides *where*: for one task and one node it chooses the
 * GPUs and scores the node, and the cycle keeps the best-scoring node. The
 * placer sees nodes only through gp__pnode views and may keep per-node state of
 * its own (caches, what is placed where), kept current through the
 * node_changed / node_removed / bound / unbound hooks, which the cycle calls
 * after every change of a node's free capacity.
 *
 * MIG requests never reach a placer: MIG instances are fixed slots that the
 * cycle matches by profile. GPUs in MIG mode appear with free_milli 0.
 */
#ifndef GP_PLACEMENT_H
#define GP_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/gp_engine.h"

/* A read-only view of one node's capacity and what is free on it now. */
typedef struct gp__pnode {
    uint32_t id; /* dense index, stable while the node exists */
    int32_t ngpus;
    int64_t cpu_cap, cpu_free; /* milli-CPU */
    int64_t mem_cap, mem_free; /* bytes */
    const int32_t *free_milli; /* [ngpus] milli-GPU free; 0 on MIG GPUs */
    const int64_t *free_mem;   /* [ngpus] bytes of GPU memory free */
    const int64_t *cap_mem;    /* [ngpus] bytes of GPU memory */
    const int32_t *gpu_model;  /* [ngpus] model id (engine-interned) */
} gp__pnode;

/*
 * One task's request in placement terms. Exactly one of these holds:
 *   ngpus > 0                 whole GPUs (each charged GP_MILLI and all memory);
 *   ngpus == 0, milli > 0     a fraction of one GPU (memory charged pro rata);
 *   ngpus == 0, gpu_mem > 0   an amount of one GPU's memory (milli pro rata,
 *                             rounded up);
 *   all zero                  no GPU (CPU and memory only).
 */
typedef struct gp__preq {
    int32_t ngpus;
    int32_t milli;
    int64_t gpu_mem;
    int64_t cpu, mem; /* milli-CPU, bytes */
    uint64_t models;  /* bit per allowed model id; 0 = any */
} gp__preq;

/* The GPUs chosen on one node, and the node's score (higher is better). */
typedef struct gp__pchoice {
    int32_t ngpus;
    int32_t gpu[GP_MAX_GPUS_PER_NODE];
    double score;
} gp__pchoice;

/* A typical request shape with its popularity (weights sum to 1). */
typedef struct gp__pshape {
    gp__preq req;
    double popularity;
} gp__pshape;

/*
 * What a request charges on a GPU of memory cap_mem: *milli and *mem. Whole
 * GPUs charge all of it; a fraction f charges f milli and floor(f * cap / 1000)
 * bytes; a memory amount m charges ceil(m * 1000 / cap) milli and m bytes.
 */
static inline void gp__preq_charge(const gp__preq *r, int64_t cap_mem, int32_t *milli,
                                   int64_t *mem) {
    if (r->ngpus > 0) {
        *milli = GP_MILLI;
        *mem = cap_mem;
    } else if (r->milli > 0) {
        *milli = r->milli;
        *mem = (int64_t)((__int128)cap_mem * r->milli / GP_MILLI);
    } else if (r->gpu_mem > 0) {
        __int128 m = ((__int128)r->gpu_mem * GP_MILLI + cap_mem - 1) / cap_mem;
        *milli = m > GP_MILLI ? GP_MILLI + 1 : (int32_t)m; /* > GP_MILLI never fits */
        *mem = r->gpu_mem;
    } else {
        *milli = 0;
        *mem = 0;
    }
}

/* Whether GPU g of node n could take one GPU's part of request r now. */
static inline int gp__preq_fits_gpu(const gp__preq *r, const gp__pnode *n, int32_t g) {
    if (r->models && !(r->models & (UINT64_C(1) << (n->gpu_model[g] & 63))))
        return 0;
    int32_t milli;
    int64_t mem;
    gp__preq_charge(r, n->cap_mem[g], &milli, &mem);
    if (r->ngpus > 0)
        return n->free_milli[g] == GP_MILLI && n->free_mem[g] == n->cap_mem[g];
    return n->free_milli[g] >= milli && n->free_mem[g] >= mem;
}

typedef struct gp__placer gp__placer;

/* A new placer for policy, seeded for its random choices, that allocates
 * through a (which must outlive it); NULL if no memory. */
gp__placer *gp__placer_new(const gp_allocator *a, gp_placement policy, uint64_t seed);
void gp__placer_free(gp__placer *p);

/* Replaces the typical shapes (copied). GP_ENOMEM on failure, nothing changed. */
int gp__placer_set_shapes(gp__placer *p, const gp__pshape *shapes, size_t n);

/*
 * Chooses the GPUs for one task of r on node n. Returns 1 and fills *out if
 * the task fits (CPU, memory, GPU models and GPU capacity), 0 if it does not.
 * Must not change the node; may update the placer's caches.
 */
int gp__placer_score(gp__placer *p, const gp__pnode *n, const gp__preq *r, gp__pchoice *out);

/*
 * Node id's place in the placer's tie-break order, in [0, 1): drawn from the
 * seed, fixed for the placer's lifetime. Among equal integer scores the paper's
 * policies pick the node with the largest rank (gpupool leans it, see
 * placement.c).
 */
double gp__placer_rank(const gp__placer *p, uint32_t id);

/* Hooks: n's free capacity changed (also: the node was added); n was removed;
 * a task of r was placed on / taken off n's GPUs c. */
void gp__placer_node_changed(gp__placer *p, const gp__pnode *n);
void gp__placer_node_removed(gp__placer *p, uint32_t id);
void gp__placer_bound(gp__placer *p, const gp__pnode *n, const gp__preq *r, const gp__pchoice *c);
void gp__placer_unbound(gp__placer *p, const gp__pnode *n, const gp__preq *r, const gp__pchoice *c);

/*
 * FGD's fragmentation measure of node n against the typical shapes, in
 * milli-GPU: the popularity-weighted idle GPU capacity that a typical task
 * could not use there.
 */
double gp__placer_node_frag(gp__placer *p, const gp__pnode *n);

#endif /* GP_PLACEMENT_H */
