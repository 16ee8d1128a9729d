/*
 * test-fairshare.c — the fair-share division (docs/fairshare.md), on trees
 * with weights, limits, priorities and over-committed quotas. Expectations
 * are computed by hand in each test's comment. Allocation is switched off so
 * that demand stays exactly what the test submits.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

static gp_engine *engine_without_allocation(int gpus) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.allocate = 0;
    c.check_invariants = 1;
    gp_engine *e = t_open(&c);
    ck_assert_ptr_nonnull(e);
    t_node(e, "n1", gpus, "H100", 80, "");
    return e;
}

static void queue_p(gp_engine *e, const char *name, const char *parent, double des, double lim,
                    int weight, int priority) {
    t_queue(e, name, parent, des, lim, weight);
    gp_queue_spec q;
    gp_queue_spec_init(&q, name, parent);
    q.quota[GP_RES_GPU].deserved = (int64_t)(des * 1000);
    if (lim >= 0)
        q.quota[GP_RES_GPU].limit = (int64_t)(lim * 1000);
    q.quota[GP_RES_GPU].weight = weight;
    q.priority = priority;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, NULL, 0), 0);
}

/* Pool 10. A: deserved 2, weight 1; B: deserved 2, weight 3; both want 100.
 * Deserved first (2, 2); the other 6 split 1:3 -> A 2 + 1.5, B 2 + 4.5. */
START_TEST(test_weights_split_the_remainder) {
    gp_engine *e = engine_without_allocation(10);
    t_queue(e, "A", "", 2, -1, 1);
    t_queue(e, "B", "", 2, -1, 3);
    t_want(e, 1, "A", 100);
    t_want(e, 2, "B", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "A"), 3500);
    ck_assert_int_eq(t_fair(e, "B"), 6500);
    gp_engine_free(e);
}
END_TEST

/* As above, but B's limit is 5: B's part of the 6 would be 4.5 but it can take
 * only 3 more, so it is satisfied (5) and A takes the remaining 3 (5). */
START_TEST(test_limits_cap_and_the_rest_flows_on) {
    gp_engine *e = engine_without_allocation(10);
    t_queue(e, "A", "", 2, -1, 1);
    t_queue(e, "B", "", 2, 5, 3);
    t_want(e, 1, "A", 100);
    t_want(e, 2, "B", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "A"), 5000);
    ck_assert_int_eq(t_fair(e, "B"), 5000);
    gp_engine_free(e);
}
END_TEST

/* A queue asking for less than its deserved quota gets what it asks for
 * (1); the rest goes to B (9). */
START_TEST(test_deserved_capped_by_demand) {
    gp_engine *e = engine_without_allocation(10);
    t_queue(e, "A", "", 4, -1, 1);
    t_queue(e, "B", "", 4, -1, 1);
    t_want(e, 1, "A", 1);
    t_want(e, 2, "B", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "A"), 1000);
    ck_assert_int_eq(t_fair(e, "B"), 9000);
    gp_engine_free(e);
}
END_TEST

/* Higher priority takes the whole remainder first: A (priority 1) 2 + 6,
 * B (priority 0) keeps its deserved 2. */
START_TEST(test_priority_first) {
    gp_engine *e = engine_without_allocation(10);
    queue_p(e, "A", "", 2, -1, 1, 1);
    queue_p(e, "B", "", 2, -1, 1, 0);
    t_want(e, 1, "A", 100);
    t_want(e, 2, "B", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "A"), 8000);
    ck_assert_int_eq(t_fair(e, "B"), 2000);
    gp_engine_free(e);
}
END_TEST

/* Deserved 8 + 12 = 20 on a pool of 10: scaled in proportion to deserved
 * (4 and 6), with a warning; reclaim keeps working on the scaled figures. */
START_TEST(test_overcommitted_deserved_scaled_with_warning) {
    gp_engine *e = engine_without_allocation(10);
    t_queue(e, "A", "", 8, -1, 1);
    t_queue(e, "B", "", 12, -1, 1);
    t_want(e, 1, "A", 100);
    t_want(e, 2, "B", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "A"), 4000);
    ck_assert_int_eq(t_fair(e, "B"), 6000);
    ck_assert_uint_ge(gp_engine_warning_count(e), 1);
    ck_assert_ptr_nonnull(strstr(gp_engine_warning(e, 0), "more than"));
    gp_engine_free(e);
}
END_TEST

/* A department whose projects deserve what it deserves is not
 * over-committed, even while nobody asks (its fair share is then 0). */
START_TEST(test_no_warning_when_consistent) {
    gp_engine *e = engine_without_allocation(8);
    t_queue(e, "research", "", 8, -1, 1);
    t_queue(e, "nlp", "research", 4, -1, 1);
    t_queue(e, "vision", "research", 4, -1, 1);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_uint_eq(gp_engine_warning_count(e), 0);
    t_want(e, 1, "nlp", 100);
    t_cycle(e, 1, 0, 0, NULL);
    ck_assert_uint_eq(gp_engine_warning_count(e), 0);
    ck_assert_int_eq(t_fair(e, "nlp"), 8000);
    gp_engine_free(e);
}
END_TEST

/* Pool 12. D1 (6): p1 (2), p2 (2); D2 (6): p3 (6). p1 wants 100, p2 wants 1,
 * p3 wants nothing. D2's fair share is 0, D1 gets all 12; inside D1, p2
 * gets the 1 it asks for and p1 the other 11. */
START_TEST(test_recursive_water_filling) {
    gp_engine *e = engine_without_allocation(12);
    t_queue(e, "D1", "", 6, -1, 1);
    t_queue(e, "D2", "", 6, -1, 1);
    t_queue(e, "p1", "D1", 2, -1, 1);
    t_queue(e, "p2", "D1", 2, -1, 1);
    t_queue(e, "p3", "D2", 6, -1, 1);
    t_want(e, 1, "p1", 100);
    t_want(e, 2, "p2", 1);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "D1"), 12000);
    ck_assert_int_eq(t_fair(e, "D2"), 0);
    ck_assert_int_eq(t_fair(e, "p1"), 11000);
    ck_assert_int_eq(t_fair(e, "p2"), 1000);
    ck_assert_int_eq(t_fair(e, "p3"), 0);
    gp_engine_free(e);
}
END_TEST

/* Weight 0 means no over-quota share: A stays at 2, B takes the other 8. */
START_TEST(test_zero_weight_gets_no_remainder) {
    gp_engine *e = engine_without_allocation(10);
    t_queue(e, "A", "", 2, -1, 0);
    t_queue(e, "B", "", 2, -1, 1);
    t_want(e, 1, "A", 100);
    t_want(e, 2, "B", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "A"), 2000);
    ck_assert_int_eq(t_fair(e, "B"), 8000);
    gp_engine_free(e);
}
END_TEST

/* An unset deserved of a department is the sum of its projects' (3 + 1 = 4):
 * pool 8 with E deserving 4 splits 4 / 4, and D's 4 splits 3 / 1. */
START_TEST(test_unset_parent_deserved_is_sum_of_children) {
    gp_engine *e = engine_without_allocation(8);
    t_queue(e, "D", "", 0, -1, 1);
    t_queue(e, "E", "", 4, -1, 1);
    t_queue(e, "p1", "D", 3, -1, 1);
    t_queue(e, "p2", "D", 1, -1, 1);
    t_want(e, 1, "p1", 100);
    t_want(e, 2, "p2", 100);
    t_want(e, 3, "E", 100);
    t_cycle(e, 0, 0, 0, NULL);
    gp_queue_info qi;
    ck_assert_int_eq(gp_engine_queue_get(e, "D", &qi), 0);
    ck_assert_int_eq(qi.deserved.v[GP_RES_GPU], 4000);
    ck_assert_int_eq(t_fair(e, "D"), 4000);
    ck_assert_int_eq(t_fair(e, "E"), 4000);
    ck_assert_int_eq(t_fair(e, "p1"), 3000);
    ck_assert_int_eq(t_fair(e, "p2"), 1000);
    gp_engine_free(e);
}
END_TEST

/* Three equal queues and 10 GPUs: 10000 milli split 3334 / 3333 / 3333, the
 * extra unit to the first by name; the sum is exact. */
START_TEST(test_integer_remainders_are_exact) {
    gp_engine *e = engine_without_allocation(10);
    t_queue(e, "a", "", 0, -1, 1);
    t_queue(e, "b", "", 0, -1, 1);
    t_queue(e, "c", "", 0, -1, 1);
    t_want(e, 1, "a", 100);
    t_want(e, 2, "b", 100);
    t_want(e, 3, "c", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "a") + t_fair(e, "b") + t_fair(e, "c"), 10000);
    ck_assert_int_eq(t_fair(e, "a"), 3334);
    ck_assert_int_eq(t_fair(e, "b"), 3333);
    gp_engine_free(e);
}
END_TEST

/* Time-based fair share: with equal weights and deserved 0, a queue that used
 * the pool alone for a while gets less of it than one that did not. */
START_TEST(test_usage_decay_shifts_weights) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.usage_half_life = 60 * 60 * 1000;
    c.check_invariants = 1;
    c.reclaim = c.preempt = c.consolidate = 0;
    gp_engine *e = t_open(&c);
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "A", "", 0, -1, 1);
    t_queue(e, "B", "", 0, -1, 1);
    for (uint64_t id = 1; id <= 8; id++)
        t_submit(e, id, "A", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    t_cycle(e, 2 * 60 * 60 * 1000, 1, 1, NULL); /* A held 8 GPUs for two hours */
    t_want(e, 100, "A", 100);
    t_want(e, 101, "B", 100);
    t_cycle(e, 2 * 60 * 60 * 1000 + 1, 0, 0, NULL);
    ck_assert_int_lt(t_fair(e, "A"), 4000);
    ck_assert_int_gt(t_fair(e, "B"), 4000);
    ck_assert_int_eq(t_fair(e, "A") + t_fair(e, "B"), 8000);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_weights_split_the_remainder);
    tcase_add_test(tc, test_limits_cap_and_the_rest_flows_on);
    tcase_add_test(tc, test_deserved_capped_by_demand);
    tcase_add_test(tc, test_priority_first);
    tcase_add_test(tc, test_overcommitted_deserved_scaled_with_warning);
    tcase_add_test(tc, test_no_warning_when_consistent);
    tcase_add_test(tc, test_recursive_water_filling);
    tcase_add_test(tc, test_zero_weight_gets_no_remainder);
    tcase_add_test(tc, test_unset_parent_deserved_is_sum_of_children);
    tcase_add_test(tc, test_integer_remainders_are_exact);
    tcase_add_test(tc, test_usage_decay_shifts_weights);
}

GP_TEST_MAIN("engine/fairshare", add_tests)
