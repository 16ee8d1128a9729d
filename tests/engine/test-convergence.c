/*
 * test-convergence.c — random queue trees and workloads arriving in waves;
 * once the cycles settle, the promises of docs/fairshare.md hold:
 *   - every queue is within its limits;
 *   - idle GPUs are lent: no one-GPU training workload waits while a GPU is
 *     free and its limits allow it;
 *   - no reclaim the rules allow is left undone (in particular, no project
 *     within its deserved quota waits while another holds GPUs beyond its
 *     own): checked by the rules themselves, on the public books;
 *   - nothing is evicted and bound again in a loop: the last cycles decide
 *     nothing, and no workload is evicted more than twice per wave.
 * The checks look at one-GPU, one-task training workloads (where "a free GPU
 * lets it start" needs no placement reasoning beyond the CPU and memory of
 * its node); the waves also carry fractions, gangs, two-GPU tasks and
 * non-preemptible work around them. Every other world has nodes with few
 * CPUs and little memory, and requests that ask for them.
 */
#include "gptest.h"
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXQ   16
#define MAXW   400
#define WAVES  4
#define SETTLE 40
#define QUIET  10
#define NSEEDS 1000

typedef struct rng {
    uint64_t s;
} rng;

static int rnd(rng *r, int lo, int hi) { /* inclusive */
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return lo + (int)(r->s % (uint64_t)(hi - lo + 1));
}

typedef struct world {
    gp_engine *e;
    char names[MAXQ][16];
    int parent[MAXQ]; /* index, or -1 */
    int leaf[MAXQ];
    int nq;
    int evictions[MAXW + 1];
    int one_gpu[MAXW + 1]; /* a one-GPU, one-task, preemptible workload */
    int64_t cpu[MAXW + 1], mem[MAXW + 1];
    int tight; /* nodes with few CPUs and little memory, requests asking for them */
    int ngpus;
    uint64_t nextid;
} world;

static void add_queue(world *w, rng *r, int parent) {
    int i = w->nq++;
    snprintf(w->names[i], sizeof w->names[i], "q%d", i);
    w->parent[i] = parent;
    w->leaf[i] = 1;
    if (parent >= 0)
        w->leaf[parent] = 0;
    gp_queue_spec q;
    gp_queue_spec_init(&q, w->names[i], parent >= 0 ? w->names[parent] : "");
    int64_t des = rnd(r, 0, 3) ? (int64_t)rnd(r, 0, 6) * GP_MILLI : 0;
    q.quota[GP_RES_GPU].deserved = des;
    if (rnd(r, 0, 3) == 0)
        q.quota[GP_RES_GPU].limit = des + (int64_t)rnd(r, 0, 8) * GP_MILLI;
    q.quota[GP_RES_GPU].weight = rnd(r, 0, 5);
    q.priority = rnd(r, 0, 4) == 0;
    char err[GP_ERR_MAX];
    ck_assert_msg(gp_engine_queue_set(w->e, &q, err, sizeof err) == 0, "%s", err);
}

static void build(world *w, rng *r, int tight) {
    memset(w, 0, sizeof *w);
    w->tight = tight;
    w->e = t_engine();
    int nodes = rnd(r, 2, 4);
    for (int n = 0; n < nodes; n++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", n);
        int g = rnd(r, 2, 8);
        t_node(w->e, name, g, "H100", 80, "");
        if (w->tight) {
            /* Few CPUs and little memory: placement is bound by them too. */
            gp_node_spec ns;
            gp_node_spec_init(&ns, name);
            ns.ngpus = g;
            for (int i = 0; i < g; i++) {
                snprintf(ns.gpus[i].uuid, sizeof ns.gpus[i].uuid, "GPU-%s-%d", name, i);
                snprintf(ns.gpus[i].model, sizeof ns.gpus[i].model, "H100");
                ns.gpus[i].mem_bytes = 80 * GIB;
                ns.gpus[i].index = i;
            }
            ns.cpu_milli = (int64_t)rnd(r, 4, 16) * 1000;
            ns.mem_bytes = (int64_t)rnd(r, 32, 128) * GIB;
            ck_assert_int_eq(gp_engine_node_set(w->e, &ns, NULL, 0), 0);
        }
        w->ngpus += g;
    }
    int tops = rnd(r, 2, 3);
    for (int t = 0; t < tops; t++) {
        int d = w->nq;
        add_queue(w, r, -1);
        int kids = rnd(r, 0, 3);
        for (int k = 0; k < kids && w->nq < MAXQ; k++)
            add_queue(w, r, d);
    }
    w->nextid = 1;
}

static int random_leaf(const world *w, rng *r) {
    for (;;) {
        int i = rnd(r, 0, w->nq - 1);
        if (w->leaf[i])
            return i;
    }
}

static void submit_wave(world *w, rng *r, gp_time_ms now) {
    int n = rnd(r, 4, 16);
    for (int k = 0; k < n && w->nextid <= MAXW; k++) {
        gp_workload_spec s;
        uint64_t id = w->nextid++;
        gp_workload_spec_init(&s, id, w->names[random_leaf(w, r)]);
        s.submitted = now;
        s.req.gpu = GP_GPU_WHOLE;
        s.req.gpus = 1;
        int kind = rnd(r, 0, 9);
        if (kind == 0) {
            s.req.gpu = GP_GPU_FRACTION;
            s.req.gpu_milli = 500;
        } else if (kind == 1) {
            s.tasks = rnd(r, 2, 3);
        } else if (kind == 2) {
            s.req.gpus = 2;
        } else if (kind == 3) {
            s.kind = GP_KIND_INTERACTIVE;
        }
        s.priority = rnd(r, 0, 3) == 0;
        if (w->tight) {
            s.req.cpu_milli = (int64_t)rnd(r, 0, 4) * 1000;
            s.req.mem_bytes = (int64_t)rnd(r, 0, 16) * GIB;
        }
        w->cpu[id] = s.req.cpu_milli;
        w->mem[id] = s.req.mem_bytes;
        w->one_gpu[id] = kind >= 4;
        gp_engine_submit(w->e, &s, NULL, 0); /* refusals (limits) are fine */
    }
}

/* One cycle: binds start at once, evictions release at once; counts. */
static size_t cycle(world *w, gp_time_ms now) {
    const gp_decision *d;
    size_t n = t_cycle(w->e, now, 1, 1, &d);
    for (size_t i = 0; i < n; i++)
        if (d[i].type == GP_DECISION_EVICT && d[i].workload <= MAXW)
            w->evictions[d[i].workload]++;
    return n;
}

static void finish_some(world *w, rng *r) {
    for (uint64_t id = 1; id < w->nextid; id++)
        if (t_state(w->e, id) == GP_STATE_RUNNING && rnd(r, 0, 4) == 0)
            ck_assert_int_eq(gp_engine_finished(w->e, id), 0);
}

static void info(const world *w, int i, gp_queue_info *qi) {
    ck_assert_int_eq(gp_engine_queue_get(w->e, w->names[i], qi), 0);
}

static int is_under(const world *w, int q, int top) {
    for (; q >= 0; q = w->parent[q])
        if (q == top)
            return 1;
    return 0;
}

static int queue_of(const world *w, uint64_t id) {
    gp_workload_info wi;
    ck_assert_int_eq(gp_engine_workload_get(w->e, id, &wi), 0);
    for (int i = 0; i < w->nq; i++)
        if (strcmp(w->names[i], wi.queue) == 0)
            return i;
    ck_abort_msg("no queue %s", wi.queue);
    return -1;
}

/* Whether evicting the one-GPU workload v (in queue vq) for the one-GPU
 * pending workload of queue q is allowed by the rules of docs/fairshare.md
 * (nothing leaving or arriving: the world is settled). */
static int rules_allow(const world *w, int q, int vq) {
    const int64_t c = GP_MILLI, need = GP_MILLI;
    if (q == vq)
        return 0;
    int top = -1;
    for (int a = q; a >= 0 && top < 0; a = w->parent[a])
        if (is_under(w, vq, a))
            top = a;
    int guaranteed = 1;
    gp_queue_info x;
    for (int a = q; a != top; a = w->parent[a]) {
        info(w, a, &x);
        int64_t after = x.allocated.v[GP_RES_GPU] + need;
        if (after > x.fair_share.v[GP_RES_GPU])
            return 0;
        if (after > x.guaranteed.v[GP_RES_GPU])
            guaranteed = 0;
        /* The limits on its path, with the victim gone if under them. */
        if (x.limit.v[GP_RES_GPU] != GP_UNLIMITED && after > x.limit.v[GP_RES_GPU])
            return 0;
    }
    for (int a = top; a >= 0; a = w->parent[a]) {
        info(w, a, &x); /* above the common ancestor the victim's GPU stays */
        if (x.limit.v[GP_RES_GPU] != GP_UNLIMITED &&
            x.allocated.v[GP_RES_GPU] - c + need > x.limit.v[GP_RES_GPU])
            return 0;
    }
    for (int a = vq; a != top; a = w->parent[a]) {
        info(w, a, &x);
        int64_t fair = x.fair_share.v[GP_RES_GPU], des = x.deserved.v[GP_RES_GPU];
        int64_t floor = guaranteed && des < fair ? des : fair;
        if (x.allocated.v[GP_RES_GPU] - c < floor)
            return 0;
    }
    return 1;
}

/* Whether evicting one-GPU workload v leaves, on its node, the CPU and
 * memory that one-GPU workload id asks for. */
static int room_after(const world *w, uint64_t id, uint64_t v) {
    gp_task_binding b;
    gp_node_info n;
    ck_assert_int_eq(gp_engine_workload_binding(w->e, v, 0, &b), 0);
    ck_assert_int_eq(gp_engine_node_get(w->e, b.node, &n), 0);
    return n.cpu_milli - n.cpu_used + w->cpu[v] >= w->cpu[id] &&
           n.mem_bytes - n.mem_used + w->mem[v] >= w->mem[id];
}

static void check_settled(world *w, int seed) {
    gp_engine *e = w->e;
    /* Limits hold. */
    for (int i = 0; i < w->nq; i++) {
        gp_queue_info x;
        info(w, i, &x);
        ck_assert_msg(x.limit.v[GP_RES_GPU] == GP_UNLIMITED ||
                          x.allocated.v[GP_RES_GPU] <= x.limit.v[GP_RES_GPU],
                      "seed %d: %s holds %lld over its limit %lld", seed, x.name,
                      (long long)x.allocated.v[GP_RES_GPU], (long long)x.limit.v[GP_RES_GPU]);
    }
    for (uint64_t id = 1; id < w->nextid; id++) {
        if (!w->one_gpu[id] || t_state(e, id) != GP_STATE_PENDING)
            continue;
        int free_gpu = 0; /* a free GPU on a node with the CPU and memory it asks */
        for (size_t i = 0; i < gp_engine_node_count(e); i++) {
            gp_node_info n;
            gp_engine_node_at(e, i, &n);
            if (n.cpu_milli - n.cpu_used < w->cpu[id] || n.mem_bytes - n.mem_used < w->mem[id])
                continue;
            for (int g = 0; g < n.ngpus; g++)
                free_gpu |= n.gpus[g].used_milli == 0;
        }
        int q = queue_of(w, id);
        char why[256];
        gp_engine_pending_reason(e, id, why, sizeof why);
        /* Idle GPUs are lent. */
        int room = 1;
        for (int a = q; a >= 0; a = w->parent[a]) {
            gp_queue_info x;
            info(w, a, &x);
            if (x.limit.v[GP_RES_GPU] != GP_UNLIMITED &&
                x.allocated.v[GP_RES_GPU] + GP_MILLI > x.limit.v[GP_RES_GPU])
                room = 0;
        }
        ck_assert_msg(!(room && free_gpu), "seed %d: workload %llu waits with a GPU free: %s", seed,
                      (unsigned long long)id, why);
        /* No reclaim the rules allow is left undone. */
        for (uint64_t v = 1; v < w->nextid; v++) {
            if (!w->one_gpu[v] || t_state(e, v) != GP_STATE_RUNNING)
                continue;
            int vq = queue_of(w, v);
            if (!room_after(w, id, v))
                continue; /* its GPU would be free, but not the CPU or memory beside it */
            ck_assert_msg(!rules_allow(w, q, vq),
                          "seed %d: workload %llu of %s waits (%s) although %llu of %s could "
                          "be reclaimed",
                          seed, (unsigned long long)id, w->names[q], why, (unsigned long long)v,
                          w->names[vq]);
        }
    }
    for (uint64_t id = 1; id < w->nextid; id++)
        ck_assert_msg(w->evictions[id] <= 2 * WAVES, "seed %d: workload %llu evicted %d times",
                      seed, (unsigned long long)id, w->evictions[id]);
}

START_TEST(test_random_trees_converge) {
    for (int seed = 1; seed <= NSEEDS; seed++) {
        rng r = {UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)seed};
        world w;
        build(&w, &r, seed % 2 == 0);
        gp_time_ms now = 0;
        for (int wave = 0; wave < WAVES; wave++) {
            submit_wave(&w, &r, now);
            for (int c = 0; c < 8; c++)
                cycle(&w, now += 1000);
            finish_some(&w, &r);
        }
        size_t quiet = 0;
        for (int c = 0; c < SETTLE; c++)
            quiet = cycle(&w, now += 1000) == 0 ? quiet + 1 : 0;
        ck_assert_msg(quiet >= QUIET, "seed %d: still deciding after %d cycles", seed, SETTLE);
        check_settled(&w, seed);
        gp_engine_free(w.e);
    }
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_random_trees_converge);
}

GP_TEST_MAIN("engine/convergence", add_tests)
