/*
 * test-placement.c — the placement policies of src/engine/placement.c on
 * small hand-made clusters, checked against scores and choices computed by
 * hand (docs/placement.md gives the formulas), plus FGD's fragmentation
 * measure, the charge arithmetic of placement.h and the per-node caches.
 *
 * The tests drive the placer directly through placement.h, the way the
 * engine's cycle does: score every node, keep the best.
 */
#include <math.h>
#include <string.h>

#include "engine/alloc.h"
#include "engine/placement.h"
#include "gptest.h"

/* A node for the tests: owns the arrays its gp__pnode view points into. */
typedef struct tnode {
    gp__pnode v;
    int32_t free_milli[GP_MAX_GPUS_PER_NODE];
    int64_t free_mem[GP_MAX_GPUS_PER_NODE];
    int64_t cap_mem[GP_MAX_GPUS_PER_NODE];
    int32_t model[GP_MAX_GPUS_PER_NODE];
} tnode;

#define GIB (INT64_C(1) << 30)

/* Node id with ngpus GPUs of 16 GiB and model 0, whose free milli-GPU are
 * free[] (memory free pro rata), and cpu_free of 64 cores free. */
static void tnode_init(tnode *t, uint32_t id, int32_t ngpus, const int32_t *free,
                       int64_t cpu_free) {
    memset(t, 0, sizeof *t);
    for (int32_t g = 0; g < ngpus; g++) {
        t->cap_mem[g] = 16 * GIB;
        t->free_milli[g] = free[g];
        t->free_mem[g] = t->cap_mem[g] * free[g] / GP_MILLI;
    }
    t->v.id = id;
    t->v.ngpus = ngpus;
    t->v.cpu_cap = 64000;
    t->v.cpu_free = cpu_free;
    t->v.mem_cap = t->v.mem_free = 256 * GIB;
    t->v.free_milli = t->free_milli;
    t->v.free_mem = t->free_mem;
    t->v.cap_mem = t->cap_mem;
    t->v.gpu_model = t->model;
}

static gp__preq share(int32_t milli, int64_t cpu) {
    gp__preq r = {0};
    r.milli = milli;
    r.cpu = cpu;
    return r;
}

static gp__preq whole(int32_t n, int64_t cpu) {
    gp__preq r = {0};
    r.ngpus = n;
    r.cpu = cpu;
    return r;
}

/* Scores r on every node and returns the index of the winner (first best),
 * or -1; *choice receives its choice. */
static int pick(gp__placer *p, tnode *nodes, int n, const gp__preq *r, gp__pchoice *choice) {
    int best = -1;
    gp__pchoice c, bc;
    memset(&bc, 0, sizeof bc);
    for (int i = 0; i < n; i++) {
        if (!gp__placer_score(p, &nodes[i].v, r, &c))
            continue;
        if (best < 0 || c.score > bc.score) {
            best = i;
            bc = c;
        }
    }
    if (choice)
        *choice = bc;
    return best;
}

/* The integer part of a score: the paper's policies add a tie-break bonus
 * in [0, 0.5), half the node's rank. */
static long ipart(double score) {
    return (long)floor(score);
}

static double score_on(gp__placer *p, tnode *t, const gp__preq *r) {
    gp__pchoice c;
    ck_assert_int_eq(gp__placer_score(p, &t->v, r, &c), 1);
    return c.score;
}

/* ------------------------------------------------------------------------ */

START_TEST(test_charge_whole_fraction_memory) {
    int32_t milli;
    int64_t mem;
    gp__preq r = whole(2, 0);
    gp__preq_charge(&r, 16 * GIB, &milli, &mem);
    ck_assert_int_eq(milli, 1000);
    ck_assert_int_eq(mem, 16 * GIB);

    r = share(333, 0); /* floor(333 * 1000 / 1000) bytes of a 1000-byte GPU */
    gp__preq_charge(&r, 1000, &milli, &mem);
    ck_assert_int_eq(milli, 333);
    ck_assert_int_eq(mem, 333);
    gp__preq_charge(&r, 999, &milli, &mem); /* 333 * 999 / 1000 = 332.667 */
    ck_assert_int_eq(mem, 332);

    memset(&r, 0, sizeof r);
    r.gpu_mem = 4 * GIB; /* a quarter of 16 GiB: exactly 250 milli */
    gp__preq_charge(&r, 16 * GIB, &milli, &mem);
    ck_assert_int_eq(milli, 250);
    ck_assert_int_eq(mem, 4 * GIB);
    r.gpu_mem = 4 * GIB + 1; /* rounds up */
    gp__preq_charge(&r, 16 * GIB, &milli, &mem);
    ck_assert_int_eq(milli, 251);
    r.gpu_mem = 17 * GIB; /* more than the GPU: never fits */
    gp__preq_charge(&r, 16 * GIB, &milli, &mem);
    ck_assert_int_gt(milli, GP_MILLI);

    memset(&r, 0, sizeof r);
    gp__preq_charge(&r, 16 * GIB, &milli, &mem);
    ck_assert_int_eq(milli, 0);
    ck_assert_int_eq(mem, 0);
}
END_TEST

START_TEST(test_fits_gpu_models_and_whole) {
    tnode t;
    int32_t f[2] = {1000, 600};
    tnode_init(&t, 0, 2, f, 64000);
    t.model[1] = 3;
    gp__preq r = whole(1, 0);
    ck_assert_int_eq(gp__preq_fits_gpu(&r, &t.v, 0), 1);
    ck_assert_int_eq(gp__preq_fits_gpu(&r, &t.v, 1), 0); /* not entirely free */
    r = share(600, 0);
    ck_assert_int_eq(gp__preq_fits_gpu(&r, &t.v, 1), 1);
    r.models = UINT64_C(1) << 0; /* only model 0 */
    ck_assert_int_eq(gp__preq_fits_gpu(&r, &t.v, 0), 1);
    ck_assert_int_eq(gp__preq_fits_gpu(&r, &t.v, 1), 0);
}
END_TEST

/* Shapes: a 500-milli share (popularity 0.5), one whole GPU (0.25) and a
 * CPU-only task (0.25), each with 1 core. */
static void three_shapes(gp__placer *p) {
    gp__pshape s[3];
    memset(s, 0, sizeof s);
    s[0].req = share(500, 1000);
    s[0].popularity = 0.5;
    s[1].req = whole(1, 1000);
    s[1].popularity = 0.25;
    s[2].req.cpu = 1000;
    s[2].popularity = 0.25;
    ck_assert_int_eq(gp__placer_set_shapes(p, s, 3), 0);
}

START_TEST(test_frag_hand_computed) {
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, 1);
    three_shapes(p);
    tnode t;
    int32_t f[2] = {1000, 300};
    tnode_init(&t, 0, 2, f, 8000);
    /* idle 1300. Share 500: fits on GPU 0, GPU 1 (300) is a fragment: 0.5 *
     * 300. Whole GPU: fits, GPU 1 a fragment: 0.25 * 300. CPU-only: every
     * idle GPU is a fragment to it: 0.25 * 1300. Sum: 150 + 75 + 325. */
    ck_assert_double_eq_tol(gp__placer_node_frag(p, &t.v), 550.0, 1e-9);

    /* Too little CPU for every shape: all idle GPU is fragment. */
    tnode_init(&t, 1, 2, f, 500);
    ck_assert_double_eq_tol(gp__placer_node_frag(p, &t.v), 1300.0, 1e-9);

    /* No idle GPU: no fragment at all. */
    int32_t z[2] = {0, 0};
    tnode_init(&t, 2, 2, z, 8000);
    ck_assert_double_eq_tol(gp__placer_node_frag(p, &t.v), 0.0, 1e-9);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_frag_model_not_allowed_counts_all) {
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, 1);
    gp__pshape s;
    memset(&s, 0, sizeof s);
    s.req = share(200, 0);
    s.req.models = UINT64_C(1) << 5;
    s.popularity = 1;
    ck_assert_int_eq(gp__placer_set_shapes(p, &s, 1), 0);
    tnode t;
    int32_t f[2] = {1000, 700};
    tnode_init(&t, 0, 2, f, 8000);
    ck_assert_double_eq_tol(gp__placer_node_frag(p, &t.v), 1700.0, 1e-9);
    t.model[0] = t.model[1] = 5;
    gp__placer_node_changed(p, &t.v);
    ck_assert_double_eq_tol(gp__placer_node_frag(p, &t.v), 0.0, 1e-9);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_frag_cache_follows_node_changed) {
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, 1);
    three_shapes(p);
    tnode t;
    int32_t f[2] = {1000, 300};
    tnode_init(&t, 0, 2, f, 8000);
    ck_assert_double_eq_tol(gp__placer_node_frag(p, &t.v), 550.0, 1e-9);
    t.free_milli[0] = 400; /* now neither share nor whole GPU fits: all idle */
    gp__placer_node_changed(p, &t.v);
    ck_assert_double_eq_tol(gp__placer_node_frag(p, &t.v), 700.0, 1e-9);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_bestfit_prefers_least_free) {
    /* A: [1000,1000], 32 cores free; B: [1000,500], 32 cores. Share 500 with
     * 1 core: A scores (1 - (31000/128000*0.5 + 1500/8000*0.5)) * 100 = 78.5,
     * B (1 - (31000/128000*0.5 + 1000/8000*0.5)) * 100 = 81.6. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_BESTFIT, 7);
    tnode n[2];
    int32_t a[2] = {1000, 1000}, b[2] = {1000, 500};
    tnode_init(&n[0], 0, 2, a, 32000);
    tnode_init(&n[1], 1, 2, b, 32000);
    gp__preq r = share(500, 1000);
    ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), 78);
    ck_assert_int_eq(ipart(score_on(p, &n[1], &r)), 81);
    gp__pchoice c;
    ck_assert_int_eq(pick(p, n, 2, &r, &c), 1);
    ck_assert_int_eq(c.ngpus, 1);
    ck_assert_int_eq(c.gpu[0], 1); /* best-fit GPU: the one with 500 free */
    gp__placer_free(p);
}
END_TEST

START_TEST(test_dotprod_prefers_aligned_small_node) {
    /* A: 4 free GPUs, 64 cores; B: [1000,1000,0,0], 16 cores. Two whole GPUs,
     * 8 cores: A 100*(1 - (0.5*0.0625 + 0.5*0.25)/2) = 92.2, B 100*(1 -
     * (0.125*0.0625 + 0.25*0.25)/2) = 96.5. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_DOTPROD, 7);
    tnode n[2];
    int32_t a[4] = {1000, 1000, 1000, 1000}, b[4] = {1000, 1000, 0, 0};
    tnode_init(&n[0], 0, 4, a, 64000);
    tnode_init(&n[1], 1, 4, b, 16000);
    gp__preq r = whole(2, 8000);
    ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), 92);
    ck_assert_int_eq(ipart(score_on(p, &n[1], &r)), 96);
    gp__pchoice c;
    ck_assert_int_eq(pick(p, n, 2, &r, &c), 1);
    ck_assert_int_eq(c.ngpus, 2);
    ck_assert_int_eq(c.gpu[0], 0);
    ck_assert_int_eq(c.gpu[1], 1);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_gpupacking_prefers_shared_gpu) {
    /* Share 300: A all free (4 GPUs): max(33 - 4, 4) = 29. B [1000,1000,200,0]
     * must open a free GPU: 50 - 1 = 49. C [600,1000]: uses the 600 GPU:
     * 100 - 60/10 = 94. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_GPUPACKING, 7);
    tnode n[3];
    int32_t a[4] = {1000, 1000, 1000, 1000}, b[4] = {1000, 1000, 200, 0}, c3[2] = {600, 1000};
    tnode_init(&n[0], 0, 4, a, 64000);
    tnode_init(&n[1], 1, 4, b, 64000);
    tnode_init(&n[2], 2, 2, c3, 64000);
    gp__preq r = share(300, 1000);
    ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), 29);
    ck_assert_int_eq(ipart(score_on(p, &n[1], &r)), 49);
    ck_assert_int_eq(ipart(score_on(p, &n[2], &r)), 94);
    gp__pchoice c;
    ck_assert_int_eq(pick(p, n, 3, &r, &c), 2);
    ck_assert_int_eq(c.gpu[0], 0);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_gpuclustering_prefers_same_class) {
    /* A holds share tasks only, B holds a one-GPU task, C is empty. For a
     * share: base 25*(8000-idle)/8000, plus 75 (A), 0 (B), 25 (C):
     * A [500,1000] 20+75 = 95, B [0,1000] 21+0, C [1000,1000] 18+25. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_GPUCLUSTERING, 7);
    tnode n[3];
    int32_t a[2] = {500, 1000}, b[2] = {0, 1000}, c3[2] = {1000, 1000};
    tnode_init(&n[0], 0, 2, a, 64000);
    tnode_init(&n[1], 1, 2, b, 64000);
    tnode_init(&n[2], 2, 2, c3, 64000);
    gp__pchoice c = {0};
    gp__preq s = share(500, 0), w = whole(1, 0);
    gp__placer_bound(p, &n[0].v, &s, &c);
    gp__placer_bound(p, &n[1].v, &w, &c);
    gp__preq r = share(500, 1000);
    ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), 95);
    ck_assert_int_eq(ipart(score_on(p, &n[1], &r)), 21);
    ck_assert_int_eq(ipart(score_on(p, &n[2], &r)), 43);
    ck_assert_int_eq(pick(p, n, 3, &r, &c), 0);
    /* Once A also holds a whole-GPU task it has two classes: 20 + 50. */
    gp__placer_bound(p, &n[0].v, &w, &c);
    ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), 70);
    gp__placer_unbound(p, &n[0].v, &w, &c);
    ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), 95);
    gp__placer_free(p);
}
END_TEST

/* One typical shape: a 700-milli share. */
static void share700(gp__placer *p) {
    gp__pshape s;
    memset(&s, 0, sizeof s);
    s.req = share(700, 0);
    s.popularity = 1;
    ck_assert_int_eq(gp__placer_set_shapes(p, &s, 1), 0);
}

START_TEST(test_fgd_hand_computed) {
    /* A [1000,600]: frag 600 (the 600 GPU cannot hold a 700 share). Placing
     * 400 on GPU 1 leaves [1000,200]: frag 200, a drop of 400, score
     * int(sigmoid(0.4)*100) = 59; on GPU 0 leaves [600,600], frag 1200,
     * int(sigmoid(-0.6)*100) = 35. B [1000,1000]: frag 0 -> 600: 35. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, 7);
    share700(p);
    tnode n[2];
    int32_t a[2] = {1000, 600}, b[2] = {1000, 1000};
    tnode_init(&n[0], 0, 2, a, 64000);
    tnode_init(&n[1], 1, 2, b, 64000);
    gp__preq r = share(400, 0);
    ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), 59);
    ck_assert_int_eq(ipart(score_on(p, &n[1], &r)), 35);
    gp__pchoice c;
    ck_assert_int_eq(pick(p, n, 2, &r, &c), 0);
    ck_assert_int_eq(c.gpu[0], 1);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_fgd_ties_follow_fixed_node_order) {
    /* Two identical empty nodes tie on every integer score. Within one placer
     * the same node, the one of larger rank, wins every time (the FGD
     * simulator's scheduler gives ties to the first node name, and the names
     * carry a seeded random prefix); across seeds each node wins about half
     * of the time. */
    tnode n[2];
    int32_t a[2] = {1000, 1000};
    tnode_init(&n[0], 0, 2, a, 64000);
    tnode_init(&n[1], 1, 2, a, 64000);
    gp__preq r = share(400, 0);
    int seeds_won[2] = {0, 0};
    for (uint64_t seed = 1; seed <= 400; seed++) {
        gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, seed);
        share700(p);
        int first = pick(p, n, 2, &r, NULL);
        ck_assert_int_eq(first, gp__placer_rank(p, 1) > gp__placer_rank(p, 0));
        for (int i = 0; i < 20; i++)
            ck_assert_int_eq(pick(p, n, 2, &r, NULL), first);
        ck_assert_int_eq(ipart(score_on(p, &n[0], &r)), ipart(score_on(p, &n[1], &r)));
        seeds_won[first]++;
        gp__placer_free(p);
    }
    ck_assert_int_gt(seeds_won[0], 150);
    ck_assert_int_gt(seeds_won[1], 150);
}
END_TEST

/* gpupool's score (placement.c): FGD's integer score, plus 0.1 x the node's
 * rank, minus 0.05 x the share of its GPUs left idle. */
static double gpupool_score(const gp__placer *p, long fgd, uint32_t id, double idle_share) {
    return (double)fgd + 0.1 * gp__placer_rank(p, id) - 0.05 * idle_share;
}

/* FGD's integer score of a drop in milli-GPU: trunc(100 x sigmoid(drop / 1000)). */
static long fgd_int(double drop) {
    return (long)(100.0 / (1.0 + exp(-drop / 1000.0)));
}

START_TEST(test_fgd_score_cache_follows_node_changed) {
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, 7);
    share700(p);
    tnode t;
    int32_t a[2] = {1000, 600};
    tnode_init(&t, 0, 2, a, 64000);
    gp__preq r = share(400, 0);
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 59);
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 59); /* from the cache */
    t.free_milli[1] = 1000;
    t.free_mem[1] = 16 * GIB;
    gp__placer_node_changed(p, &t.v);
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 35);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_gpupool_hand_computed) {
    /* The same cluster as FGD's: drop 0.4 GPU on A (GPU 1), FGD score 59,
     * against -0.6 on B, 35. The lean: A is left with 1.2 of its 2 GPUs idle
     * (0.05 x 0.6 = 0.03), B with 1.6 (0.04). */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_GPUPOOL, 7);
    share700(p);
    tnode n[2];
    int32_t a[2] = {1000, 600}, b[2] = {1000, 1000};
    tnode_init(&n[0], 0, 2, a, 64000);
    tnode_init(&n[1], 1, 2, b, 64000);
    gp__preq r = share(400, 0);
    ck_assert_int_eq(fgd_int(400), 59);
    ck_assert_int_eq(fgd_int(-600), 35);
    ck_assert_double_eq_tol(score_on(p, &n[0], &r), gpupool_score(p, 59, 0, 0.6), 1e-9);
    ck_assert_double_eq_tol(score_on(p, &n[1], &r), gpupool_score(p, 35, 1, 0.8), 1e-9);
    gp__pchoice c;
    ck_assert_int_eq(pick(p, n, 2, &r, &c), 0);
    ck_assert_int_eq(c.gpu[0], 1);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_gpupool_equal_drop_leans_to_fuller_node) {
    /* No typical shapes: every drop is 0 and FGD's score 50 everywhere, so
     * the order and the lean decide. A is left with 1.7 of 2 GPUs idle
     * (-0.0425), B with 1.2 (-0.03): B gains 0.0125 on A, which wins only
     * where the order puts A more than 0.125 ahead. On B the share goes to
     * the fuller GPU. Over 400 seeds B wins well over half of the time. */
    tnode n[2];
    int32_t a[2] = {1000, 1000}, b[2] = {1000, 500};
    tnode_init(&n[0], 0, 2, a, 64000);
    tnode_init(&n[1], 1, 2, b, 64000);
    gp__preq r = share(300, 0);
    int b_wins = 0;
    for (uint64_t seed = 1; seed <= 400; seed++) {
        gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_GPUPOOL, seed);
        ck_assert_double_eq_tol(score_on(p, &n[0], &r), gpupool_score(p, 50, 0, 0.85), 1e-9);
        ck_assert_double_eq_tol(score_on(p, &n[1], &r), gpupool_score(p, 50, 1, 0.6), 1e-9);
        int a_ahead = gp__placer_rank(p, 0) - gp__placer_rank(p, 1) > 0.125;
        gp__pchoice c;
        int w = pick(p, n, 2, &r, &c);
        ck_assert_int_eq(w, !a_ahead);
        if (w == 1) {
            ck_assert_int_eq(c.gpu[0], 1);
            b_wins++;
        }
        gp__placer_free(p);
    }
    ck_assert_int_gt(b_wins, 220);
}
END_TEST

START_TEST(test_gpupool_packs_by_share_of_node) {
    /* No typical shapes, one whole GPU: A (2 GPUs, both free) is left with
     * 1 of 2 GPUs idle, -0.05 x 0.5 = -0.025; B (8 GPUs, 3 free) with 2 of
     * 8, -0.05 x 0.25 = -0.0125: the lean is by the share of the node, by
     * which B is fuller; by absolute idle GPUs (1 against 2) A would be. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_GPUPOOL, 7);
    tnode n[2];
    int32_t a[2] = {1000, 1000}, b[8] = {0, 1000, 0, 1000, 0, 0, 1000, 0};
    tnode_init(&n[0], 0, 2, a, 64000);
    tnode_init(&n[1], 1, 8, b, 64000);
    gp__preq r = whole(1, 0);
    ck_assert_double_eq_tol(score_on(p, &n[0], &r), gpupool_score(p, 50, 0, 0.5), 1e-9);
    ck_assert_double_eq_tol(score_on(p, &n[1], &r), gpupool_score(p, 50, 1, 0.25), 1e-9);
    gp__pchoice c;
    ck_assert_int_eq(gp__placer_score(p, &n[1].v, &r, &c), 1);
    ck_assert_int_eq(c.ngpus, 1);
    ck_assert_int_eq(c.gpu[0], 1);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_random_spreads_over_feasible_nodes) {
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_RANDOM, 3);
    tnode n[3];
    int32_t a[1] = {1000}, full[1] = {100};
    tnode_init(&n[0], 0, 1, a, 64000);
    tnode_init(&n[1], 1, 1, full, 64000); /* cannot take 500 */
    tnode_init(&n[2], 2, 1, a, 64000);
    gp__preq r = share(500, 0);
    int wins[3] = {0, 0, 0};
    for (int i = 0; i < 3000; i++)
        wins[pick(p, n, 3, &r, NULL)]++;
    ck_assert_int_eq(wins[1], 0);
    ck_assert_int_gt(wins[0], 1300);
    ck_assert_int_gt(wins[2], 1300);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_binpack_and_spread) {
    tnode n[2];
    int32_t a[2] = {1000, 1000}, b[2] = {1000, 500};
    tnode_init(&n[0], 0, 2, a, 64000);
    tnode_init(&n[1], 1, 2, b, 64000);
    gp__preq r = share(300, 0);
    gp__pchoice c;
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_BINPACK, 1);
    ck_assert_int_eq(pick(p, n, 2, &r, &c), 1);
    ck_assert_int_eq(c.gpu[0], 1);
    gp__placer_free(p);
    p = gp__placer_new(&gp__libc_alloc, GP_PLACE_SPREAD, 1);
    ck_assert_int_eq(pick(p, n, 2, &r, &c), 0);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_no_fit_cpu_memory_gpus) {
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, 1);
    share700(p);
    tnode t;
    int32_t a[2] = {1000, 200};
    tnode_init(&t, 0, 2, a, 4000);
    gp__pchoice c;
    gp__preq r = share(500, 8000); /* CPU */
    ck_assert_int_eq(gp__placer_score(p, &t.v, &r, &c), 0);
    r = share(500, 0);
    r.mem = 512 * GIB; /* host memory */
    ck_assert_int_eq(gp__placer_score(p, &t.v, &r, &c), 0);
    r = whole(2, 0); /* only one GPU entirely free */
    ck_assert_int_eq(gp__placer_score(p, &t.v, &r, &c), 0);
    r = whole(1, 0);
    ck_assert_int_eq(gp__placer_score(p, &t.v, &r, &c), 1);
    ck_assert_int_eq(c.ngpus, 1);
    ck_assert_int_eq(c.gpu[0], 0);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_node_removed_resets_state) {
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_GPUCLUSTERING, 1);
    tnode t;
    int32_t a[2] = {1000, 1000};
    tnode_init(&t, 4, 2, a, 64000);
    gp__pchoice c = {0};
    gp__preq w = whole(1, 0), r = share(500, 0);
    gp__placer_bound(p, &t.v, &w, &c);
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 18); /* other class only */
    gp__placer_node_removed(p, 4);
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 43); /* a fresh empty node */
    gp__placer_free(p);
}
END_TEST

START_TEST(test_fgd_cache_forgets_removed_node) {
    /* A node removed and its id reused by a node in another state: nothing
     * cached for the old node may answer for the new one. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_FGD, 7);
    share700(p);
    tnode t;
    int32_t a[2] = {1000, 600}, b[2] = {1000, 1000};
    tnode_init(&t, 3, 2, a, 64000);
    gp__preq r = share(400, 0);
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 59);
    gp__placer_node_removed(p, 3);
    tnode_init(&t, 3, 2, b, 64000);
    gp__placer_node_changed(p, &t.v); /* the engine announces the new node */
    /* [1000,1000] leaves [600,1000]: frag 0 -> 600, 100 sigmoid(-0.6) */
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 35);
    gp__placer_node_removed(p, 3);
    tnode_init(&t, 3, 2, a, 64000); /* not announced: still no stale answer */
    ck_assert_int_eq(ipart(score_on(p, &t, &r)), 59);
    gp__placer_free(p);
}
END_TEST

START_TEST(test_share_drop_matches_full_recompute) {
    /* The drop of a share is computed shape by shape from the node's split;
     * it must equal the fragmentation of the changed node computed afresh,
     * on a node whose GPUs straddle every shape's threshold. */
    gp__placer *p = gp__placer_new(&gp__libc_alloc, GP_PLACE_GPUPOOL, 1);
    three_shapes(p);
    tnode t, after;
    int32_t f[4] = {1000, 700, 500, 300};
    tnode_init(&t, 0, 4, f, 8000);
    gp__preq r = share(300, 1000);
    gp__pchoice c;
    ck_assert_int_eq(gp__placer_score(p, &t.v, &r, &c), 1);
    ck_assert_int_eq(c.ngpus, 1);
    double before = gp__placer_node_frag(p, &t.v);
    int32_t g[4];
    memcpy(g, f, sizeof g);
    g[c.gpu[0]] -= 300;
    tnode_init(&after, 1, 4, g, 7000);
    double drop = before - gp__placer_node_frag(p, &after.v);
    /* gpupool's score: FGD's integer score of that drop, the order, and the
     * lean by the share of the node's 4 GPUs left idle. */
    double idle_share = (2500.0 - 300.0) / GP_MILLI / 4;
    ck_assert_double_eq_tol(c.score, gpupool_score(p, fgd_int(drop), 0, idle_share), 1e-12);
    gp__placer_free(p);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_charge_whole_fraction_memory);
    tcase_add_test(tc, test_fits_gpu_models_and_whole);
    tcase_add_test(tc, test_frag_hand_computed);
    tcase_add_test(tc, test_frag_model_not_allowed_counts_all);
    tcase_add_test(tc, test_frag_cache_follows_node_changed);
    tcase_add_test(tc, test_bestfit_prefers_least_free);
    tcase_add_test(tc, test_dotprod_prefers_aligned_small_node);
    tcase_add_test(tc, test_gpupacking_prefers_shared_gpu);
    tcase_add_test(tc, test_gpuclustering_prefers_same_class);
    tcase_add_test(tc, test_fgd_hand_computed);
    tcase_add_test(tc, test_fgd_ties_follow_fixed_node_order);
    tcase_add_test(tc, test_fgd_score_cache_follows_node_changed);
    tcase_add_test(tc, test_gpupool_hand_computed);
    tcase_add_test(tc, test_gpupool_equal_drop_leans_to_fuller_node);
    tcase_add_test(tc, test_gpupool_packs_by_share_of_node);
    tcase_add_test(tc, test_random_spreads_over_feasible_nodes);
    tcase_add_test(tc, test_binpack_and_spread);
    tcase_add_test(tc, test_no_fit_cpu_memory_gpus);
    tcase_add_test(tc, test_node_removed_resets_state);
    tcase_add_test(tc, test_fgd_cache_forgets_removed_node);
    tcase_add_test(tc, test_share_drop_matches_full_recompute);
}

GP_TEST_MAIN("engine/placement", add_tests)
