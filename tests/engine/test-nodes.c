/*
 * test-nodes.c — the pool model under change: a removed node's workloads go
 * back to the queue and are reported; a node change cannot take away what is
 * bound; a cordoned node takes nothing new; GPUs taken outside the pool are
 * offered to no task, even while some of them are bound.
 */
#include "gptest.h"
#include "helpers.h"

#include <stdio.h>
#include <string.h>

START_TEST(test_removed_node_requeues_and_reports) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_node(e, "n2", 2, "H100", 80, "");
    t_queue(e, "p", "", 4, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 2, 0, 0); /* a gang of 2 x 1 GPU */
    const gp_decision *d;
    t_cycle(e, 0, 1, 1, &d);
    const char *node = d[0].tasks[0].node;
    char gone[64];
    strcpy(gone, node);
    ck_assert_int_eq(gp_engine_node_remove(e, gone), 0);
    ck_assert_int_eq(t_state(e, 1), GP_STATE_PENDING);
    ck_assert_int_eq(t_alloc(e, "p"), 0);
    size_t n = t_cycle(e, 1, 0, 0, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_NODE_GONE), 1);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1); /* on the other node */
    ck_assert_int_eq(gp_engine_node_remove(e, "nope"), GP_ENOENT);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_change_cannot_take_bound_gpus) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    const gp_decision *d;
    t_cycle(e, 0, 1, 1, &d);
    gp_node_spec n;
    gp_node_spec_init(&n, "n1");
    n.cpu_milli = 64000;
    n.mem_bytes = 512 * GIB;
    n.ngpus = 0;
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), GP_EBUSY);
    ck_assert_ptr_nonnull(strstr(err, "gpus["));
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.ngpus, 2);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_cordoned_node_takes_nothing) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    gp_node_spec n;
    gp_node_spec_init(&n, "n1");
    n.cpu_milli = 64000;
    n.mem_bytes = 512 * GIB;
    n.ngpus = 2;
    for (int i = 0; i < 2; i++) {
        strcpy(n.gpus[i].model, "H100");
        n.gpus[i].mem_bytes = 80 * GIB;
    }
    n.schedulable = 0;
    ck_assert_int_eq(gp_engine_node_set(e, &n, NULL, 0), 0);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    const gp_decision *d;
    size_t cnt = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(cnt, 0);
    gp_engine_free(e);
}
END_TEST

/* GPUs bound on node n1 and GPUs withheld there. */
static void bound_taken(gp_engine *e, int *bound, int *taken) {
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    *bound = *taken = 0;
    for (int g = 0; g < ni.ngpus; g++) {
        *bound += ni.gpus[g].slices > 0;
        *taken += ni.gpus[g].taken;
        ck_assert(!(ni.gpus[g].taken && ni.gpus[g].used_milli));
    }
}

static void set_taken(gp_engine *e, int ngpus, int taken) {
    gp_node_spec n;
    t_node_spec(&n, "n1", ngpus, "H100", 80, "");
    n.gpus_taken = taken;
    char err[GP_ERR_MAX] = "";
    int rc = gp_engine_node_set(e, &n, err, sizeof err);
    ck_assert_msg(rc == 0, "node_set: %s", err);
}

/* A node of 8 GPUs, 3 bound; 4 taken outside the pool leave 1 to offer;
 * the GPUs keep their indices (the bound ones are not moved). */
START_TEST(test_taken_gpus_are_not_offered) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "p", "", 8, -1, 1);
    for (uint64_t id = 1; id <= 3; id++)
        t_submit(e, id, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    set_taken(e, 8, 4);
    int bound, taken;
    bound_taken(e, &bound, &taken);
    ck_assert_int_eq(bound, 3);
    ck_assert_int_eq(taken, 4);
    for (uint64_t id = 4; id <= 6; id++)
        t_submit(e, id, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 1, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1);
    bound_taken(e, &bound, &taken);
    ck_assert_int_eq(bound + taken, 8);
    ck_assert_int_eq(t_state(e, 5), GP_STATE_PENDING);
    /* A fraction finds no room on a withheld GPU either. */
    ck_assert_int_eq(t_submit(e, 7, "p", GP_KIND_TRAIN, 0.5, 1, 0, 0), 0);
    n = t_cycle(e, 2, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 0);
    /* Given back: offered again. */
    set_taken(e, 8, 0);
    n = t_cycle(e, 3, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 3);
    gp_engine_free(e);
}
END_TEST

/* All 8 bound, then 4 taken (a direct job got GPUs that gpupool's pending
 * jobs were waiting for): accepted, nothing offered, and each GPU freed goes
 * to what is taken first, never to new work. */
START_TEST(test_taken_while_bound) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "p", "", 8, -1, 1);
    for (uint64_t id = 1; id <= 8; id++)
        t_submit(e, id, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    set_taken(e, 8, 4);
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.gpus_taken, 4);
    ck_assert_int_eq(ni.taken_bound, 4);
    t_submit(e, 9, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    for (uint64_t id = 1; id <= 5; id++) {
        ck_assert_int_eq(gp_engine_finished(e, id), 0);
        const gp_decision *d;
        size_t n = t_cycle(e, (gp_time_ms)id, 1, 1, &d);
        int bound, taken;
        bound_taken(e, &bound, &taken);
        if (id <= 4) {
            ck_assert_uint_eq(n, 0);
            ck_assert_int_eq(taken, (int)id);
        } else {
            ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1);
        }
        ck_assert_int_le(bound + taken, 8);
    }
    /* Every taken GPU is withheld again. */
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.taken_bound, 0);
    gp_engine_free(e);
}
END_TEST

/* Whether a gang could ever run is judged on the nodes' GPUs, not on what
 * others hold now; and a restored task may sit on a GPU that was withheld. */
START_TEST(test_taken_gpus_and_could_ever_run) {
    gp_engine *e = t_engine();
    t_queue(e, "p", "", 16, -1, 1);
    for (int i = 0; i < 2; i++) {
        gp_node_spec n;
        t_node_spec(&n, i ? "n2" : "n1", 8, "H100", 80, "");
        n.gpus_taken = 1;
        ck_assert_int_eq(gp_engine_node_set(e, &n, NULL, 0), 0);
    }
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.tasks = 2;
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 8;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_submit_check(e, &w, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    const gp_decision *d;
    ck_assert_uint_eq(t_cycle(e, 0, 1, 1, &d), 0);
    ck_assert_int_eq(t_state(e, 1), GP_STATE_PENDING);
    /* GPU 7 of n1 is withheld; a restart restores a task bound to it. */
    gp_workload_spec r;
    gp_workload_spec_init(&r, 2, "p");
    r.req.gpu = GP_GPU_WHOLE;
    r.req.gpus = 1;
    gp_task_binding b = {.node = "n1", .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 7, .milli = GP_MILLI, .mem = 80 * GIB, .mig_slot = -1};
    ck_assert_msg(gp_engine_restore(e, &r, 1, &b, 0, err, sizeof err) == 0, "%s", err);
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.gpus[7].taken, 0);
    ck_assert_int_eq(ni.gpus[6].taken, 1);
    ck_assert_int_eq(gp_engine_check(e, err, sizeof err), 0);
    /* Out of range: refused, naming the field, nothing changed. */
    gp_node_spec n;
    t_node_spec(&n, "n1", 8, "H100", 80, "");
    n.gpus_taken = 9;
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "gpus_taken"));
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.gpus_taken, 1);
    gp_engine_free(e);
}
END_TEST

/* The largest GPU count and GPU memory of the pool as request validation
 * reports them (a request above each is refused naming the pool's maximum). */
static void pool_maxima(gp_engine *e, int32_t *gpus, int64_t *mem) {
    gp_workload_spec w;
    char err[GP_ERR_MAX] = "";
    gp_workload_spec_init(&w, 1, "p");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = GP_MAX_GPUS_PER_NODE;
    ck_assert_int_eq(gp_engine_submit_check(e, &w, err, sizeof err), GP_EINVAL);
    const char *at = strstr(err, "more than ");
    ck_assert_msg(at && sscanf(at, "more than %d", gpus) == 1, "%s", err);
    w.req.gpu = GP_GPU_MEMORY;
    w.req.gpu_mem = INT64_MAX;
    ck_assert_int_eq(gp_engine_submit_check(e, &w, err, sizeof err), GP_EINVAL);
    long long m = -1;
    at = strrchr(err, '(');
    ck_assert_msg(at && sscanf(at, "(%lld)", &m) == 1, "%s", err);
    *mem = m;
}

/* The pool's maxima follow nodes that come, change and go, in any order
 * (node.c keeps them as counts instead of looking at every node on each
 * change): the largest GPU and GPU count leaving, shrinking, ties. */
START_TEST(test_pool_maxima_follow_changes) {
    enum { SLOTS = 24 };
    static const int64_t gibs[] = {16, 24, 40, 80};
    struct {
        int present, ngpus;
        int64_t gib;
    } model[SLOTS] = {{0}};
    gp_engine *e = t_engine();
    t_queue(e, "p", "", 0, -1, 1);
    uint64_t x = 88172645463325252u;
    for (int step = 0; step < 3000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = (int)(x % SLOTS);
        char name[16];
        snprintf(name, sizeof name, "n%d", k);
        if (model[k].present && (x >> 20) % 3 == 0) {
            ck_assert_int_eq(gp_engine_node_remove(e, name), 0);
            model[k].present = 0;
        } else {
            model[k].present = 1;
            model[k].ngpus = (int)((x >> 24) % 9);
            model[k].gib = gibs[(x >> 32) % 4];
            t_node(e, name, model[k].ngpus, "H100", model[k].gib, "");
        }
        char err[GP_ERR_MAX] = "";
        ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "step %d: %s", step, err);
        int32_t want_gpus = 0, gpus;
        int64_t want_mem = 0, mem;
        int any = 0;
        for (int i = 0; i < SLOTS; i++) {
            if (!model[i].present)
                continue;
            any = 1;
            want_gpus = model[i].ngpus > want_gpus ? model[i].ngpus : want_gpus;
            if (model[i].ngpus && model[i].gib * GIB > want_mem)
                want_mem = model[i].gib * GIB;
        }
        if (!any)
            continue;
        pool_maxima(e, &gpus, &mem);
        ck_assert_msg(gpus == want_gpus && mem == want_mem,
                      "step %d: the pool says %d GPUs, %lld bytes; its nodes %d, %lld", step, gpus,
                      (long long)mem, want_gpus, (long long)want_mem);
    }
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_removed_node_requeues_and_reports);
    tcase_add_test(tc, test_pool_maxima_follow_changes);
    tcase_add_test(tc, test_change_cannot_take_bound_gpus);
    tcase_add_test(tc, test_cordoned_node_takes_nothing);
    tcase_add_test(tc, test_taken_gpus_are_not_offered);
    tcase_add_test(tc, test_taken_while_bound);
    tcase_add_test(tc, test_taken_gpus_and_could_ever_run);
}

GP_TEST_MAIN("engine/nodes", add_tests)
