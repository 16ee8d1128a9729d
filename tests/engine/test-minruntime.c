/*
 * test-minruntime.c — a workload inside its minimum runtime (at most its
 * queue's min_runtime_max) is not a victim of fair-share rebalancing or
 * preemption (no thrashing); once past it, it may be.
 */
#include "gptest.h"
#include "helpers.h"

/* A deserves nothing, so it takes back GPUs by fair share alone, which a
 * minimum runtime (within the queue's bound) holds off. A deserved quota's
 * reclaim is not held off: see test-guarantee.c. */
START_TEST(test_protected_until_min_runtime) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 4, "H100", 80, "");
    t_queue(e, "A", "", 0, -1, 1);
    t_queue(e, "B", "", 2, -1, 1);
    for (uint64_t id = 1; id <= 4; id++) {
        gp_workload_spec w;
        gp_workload_spec_init(&w, id, "B");
        w.req.gpu = GP_GPU_WHOLE;
        w.req.gpus = 1;
        w.min_runtime = 60000;
        ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    }
    t_cycle(e, 0, 1, 1, NULL);
    t_submit(e, 100, "A", GP_KIND_TRAIN, 1, 1, 0, 1000);
    const gp_decision *d;
    size_t n = t_cycle(e, 30000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    n = t_cycle(e, 59999, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    n = t_cycle(e, 60000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 1);
    gp_engine_free(e);
}
END_TEST

/* A workload restarted after eviction gets its minimum runtime again. */
START_TEST(test_restarted_workload_protected_again) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 1, "H100", 80, "");
    t_queue(e, "p", "", 1, -1, 1);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    w.min_runtime = 10000;
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    t_cycle(e, 0, 1, 1, NULL);
    t_submit(e, 2, "p", GP_KIND_TRAIN, 1, 1, 5, 100);
    const gp_decision *d;
    size_t n = t_cycle(e, 10000, 1, 1, &d); /* 1 evicted for 2 */
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_PREEMPT), 1);
    t_cycle(e, 11000, 1, 1, NULL); /* 2 runs */
    ck_assert_int_eq(gp_engine_finished(e, 2), 0);
    t_cycle(e, 12000, 1, 1, NULL); /* 1 runs again, from 12000 */
    ck_assert_int_eq(t_state(e, 1), GP_STATE_RUNNING);
    t_submit(e, 3, "p", GP_KIND_TRAIN, 1, 1, 5, 12500);
    n = t_cycle(e, 15000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_protected_until_min_runtime);
    tcase_add_test(tc, test_restarted_workload_protected_again);
}

GP_TEST_MAIN("engine/minruntime", add_tests)
