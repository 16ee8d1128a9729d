/*
 * test-aging.c — a workload pending long enough gains priority, so nothing
 * starves behind a stream of higher-priority work; aging orders work inside
 * a queue but never lets old work preempt.
 */
#include "gptest.h"
#include "helpers.h"

static gp_engine *aging_engine(void) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.check_invariants = 1;
    c.aging_interval = 1000;
    c.aging_max = 10;
    gp_engine *e = t_open(&c);
    t_node(e, "n1", 1, "H100", 80, "");
    t_queue(e, "p", "", 1, -1, 1);
    return e;
}

START_TEST(test_old_low_priority_goes_before_new_high_priority) {
    gp_engine *e = aging_engine();
    t_submit(e, 1, "p", GP_KIND_INTERACTIVE, 1, 1, 0, 0); /* holds the GPU */
    t_cycle(e, 0, 1, 1, NULL);
    t_submit(e, 2, "p", GP_KIND_TRAIN, 1, 1, 0, 0);    /* waits from 0 */
    t_submit(e, 3, "p", GP_KIND_TRAIN, 1, 1, 3, 9000); /* priority 3, from 9000 */
    t_cycle(e, 9500, 1, 1, NULL);
    ck_assert_int_eq(gp_engine_finished(e, 1), 0);
    /* At 10000: 2 has aged 10 levels (0 + 10), 3 only 1 (3 + 1). */
    const gp_decision *d;
    size_t n = t_cycle(e, 10000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1);
    ck_assert_uint_eq(d[0].workload, 2);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_without_aging_priority_wins) {
    gp_engine *e = aging_engine();
    t_submit(e, 1, "p", GP_KIND_INTERACTIVE, 1, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    t_submit(e, 2, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_submit(e, 3, "p", GP_KIND_TRAIN, 1, 1, 3, 0);
    ck_assert_int_eq(gp_engine_finished(e, 1), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 500, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1);
    ck_assert_uint_eq(d[0].workload, 3);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_aged_work_does_not_preempt) {
    gp_engine *e = aging_engine();
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 1, 5, 0);
    t_cycle(e, 0, 1, 1, NULL);
    t_submit(e, 2, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 100000, 1, 1, &d); /* 2 aged 10 levels, past 5 */
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_old_low_priority_goes_before_new_high_priority);
    tcase_add_test(tc, test_without_aging_priority_wins);
    tcase_add_test(tc, test_aged_work_does_not_preempt);
}

GP_TEST_MAIN("engine/aging", add_tests)
