/*
 * test-preempt.c — inside one project, a higher-priority workload evicts
 * lower-priority preemptible ones; equal priority or non-preemptible work is
 * left alone; and the fewest victims are taken.
 */
#include "gptest.h"
#include "helpers.h"

static gp_engine *full_project(gp_kind kind, int priority) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "p", "", 8, -1, 1);
    for (uint64_t id = 1; id <= 8; id++)
        ck_assert_int_eq(t_submit(e, id, "p", kind, 1, 1, priority, 0), 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "p"), 8000);
    return e;
}

START_TEST(test_higher_priority_evicts_lower) {
    gp_engine *e = full_project(GP_KIND_TRAIN, 0);
    ck_assert_int_eq(t_submit(e, 100, "p", GP_KIND_TRAIN, 2, 1, 10, 2000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_PREEMPT), 2);
    ck_assert_uint_eq(d[0].for_workload, 100);
    n = t_cycle(e, 4000, 1, 1, &d);
    ck_assert_int_eq(t_state(e, 100), GP_STATE_RUNNING);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_equal_priority_does_not_preempt) {
    gp_engine *e = full_project(GP_KIND_TRAIN, 0);
    t_submit(e, 100, "p", GP_KIND_TRAIN, 1, 1, 0, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    ck_assert_int_eq(t_state(e, 100), GP_STATE_PENDING);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_non_preemptible_is_not_preempted) {
    gp_engine *e = full_project(GP_KIND_INFERENCE, 0);
    t_submit(e, 100, "p", GP_KIND_TRAIN, 1, 1, 10, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    gp_engine_free(e);
}
END_TEST

/* One 4-GPU workload of low priority and four 1-GPU ones: a 4-GPU request
 * of high priority evicts the single 4-GPU workload, not four small ones,
 * even though the small ones were started more recently. */
START_TEST(test_fewest_victims) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "p", "", 8, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 4, 1, 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    for (uint64_t id = 2; id <= 5; id++)
        t_submit(e, id, "p", GP_KIND_TRAIN, 1, 1, 0, 1500);
    t_cycle(e, 2000, 1, 1, NULL);
    t_submit(e, 100, "p", GP_KIND_TRAIN, 4, 1, 10, 2500);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 0, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 1);
    ck_assert_uint_eq(d[0].workload, 1);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_higher_priority_evicts_lower);
    tcase_add_test(tc, test_equal_priority_does_not_preempt);
    tcase_add_test(tc, test_non_preemptible_is_not_preempted);
    tcase_add_test(tc, test_fewest_victims);
}

GP_TEST_MAIN("engine/preempt", add_tests)
