/*
 * test-reclaim.c — reclaim restores a queue to its fair share (not only its
 * deserved quota), takes victims only from queues above theirs and never
 * pushes them below, reclaims for a gang as a whole, prefers the right
 * victims, and never touches non-preemptible work.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

static gp_engine *two_queues(double des_a, double des_b) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "A", "", des_a, -1, 1);
    t_queue(e, "B", "", des_b, -1, 1);
    return e;
}

static void fill_b(gp_engine *e, int n, gp_kind kind) {
    for (int i = 1; i <= n; i++)
        ck_assert_int_eq(t_submit(e, (uint64_t)i, "B", kind, 1, 1, 0, 0), 0);
    t_cycle(e, 1000, 1, 1, NULL);
}

/* Pool 8, deserved 2 + 2, B borrowed all 8. A asks for 6: fair share is
 * 2 + 2 each plus half of the other 4 -> 4 each. A gets 4, not only its
 * deserved 2 (KAI-Scheduler #1934). */
START_TEST(test_reclaim_up_to_fair_share_not_only_deserved) {
    gp_engine *e = two_queues(2, 2);
    fill_b(e, 8, GP_KIND_TRAIN);
    for (uint64_t id = 101; id <= 106; id++)
        t_submit(e, id, "A", GP_KIND_TRAIN, 1, 1, 0, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 4);
    ck_assert_int_eq(t_fair(e, "A"), 4000);
    t_cycle(e, 4000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "A"), 4000);
    ck_assert_int_eq(t_alloc(e, "B"), 4000);
    /* A's other two wait for B, which is at its fair share now. */
    n = t_cycle(e, 5000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    gp_engine_free(e);
}
END_TEST

/* B holds exactly its fair share: nothing may be taken from it. */
START_TEST(test_victims_never_pushed_below_fair_share) {
    gp_engine *e = two_queues(4, 4);
    fill_b(e, 4, GP_KIND_TRAIN);
    for (uint64_t id = 101; id <= 104; id++)
        t_submit(e, id, "A", GP_KIND_TRAIN, 1, 1, 0, 2000);
    t_cycle(e, 3000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "A"), 4000);
    t_submit(e, 105, "A", GP_KIND_TRAIN, 1, 1, 0, 4000);
    const gp_decision *d;
    size_t n = t_cycle(e, 5000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    ck_assert_int_eq(t_alloc(e, "B"), 4000);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 105, why, sizeof why), GP_WAIT_FAIR_SHARE);
    ck_assert_ptr_nonnull(strstr(why, "project A"));
    gp_engine_free(e);
}
END_TEST

/* A gang of four one-GPU tasks reclaims as a whole, then starts together. */
START_TEST(test_gang_reclaims_as_a_whole) {
    gp_engine *e = two_queues(4, 4);
    fill_b(e, 8, GP_KIND_TRAIN);
    ck_assert_int_eq(t_submit(e, 200, "A", GP_KIND_TRAIN, 1, 4, 0, 2000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 4);
    n = t_cycle(e, 4000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1);
    ck_assert_int_eq(d[0].ntasks, 4);
    ck_assert_int_eq(t_alloc(e, "A"), 4000);
    gp_engine_free(e);
}
END_TEST

/* Victims: lowest priority first, then the most recently started. */
START_TEST(test_victim_preference) {
    gp_engine *e = two_queues(4, 4);
    for (uint64_t id = 1; id <= 8; id++)
        t_submit(e, id, "B", GP_KIND_TRAIN, 1, 1, id == 3 ? -5 : 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    /* Restart 7 later than the others: it is the most recently started. */
    ck_assert_int_eq(gp_engine_requeue(e, 7), 0);
    t_cycle(e, 1500, 1, 1, NULL);
    t_submit(e, 101, "A", GP_KIND_TRAIN, 1, 1, 0, 2000);
    t_submit(e, 102, "A", GP_KIND_TRAIN, 1, 1, 0, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 0, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 2);
    ck_assert_int_eq(t_state(e, 3), GP_STATE_EVICTING);
    ck_assert_int_eq(t_state(e, 7), GP_STATE_EVICTING);
    gp_engine_free(e);
}
END_TEST

/* Interactive work is never a victim: only B's training workloads go. */
START_TEST(test_non_preemptible_never_reclaimed) {
    gp_engine *e = two_queues(4, 4);
    for (uint64_t id = 1; id <= 4; id++)
        t_submit(e, id, "B", GP_KIND_INTERACTIVE, 1, 1, 0, 0);
    for (uint64_t id = 5; id <= 8; id++)
        t_submit(e, id, "B", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "B"), 8000);
    for (uint64_t id = 101; id <= 104; id++)
        t_submit(e, id, "A", GP_KIND_TRAIN, 1, 1, 0, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 4);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_ge(d[i].workload, 5);
    gp_engine_free(e);
}
END_TEST

/* Inside one department, a project below its share reclaims from a sibling
 * above its share; a queue of another department that is at its own share
 * is not touched. */
START_TEST(test_reclaim_between_sibling_projects) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "D", "", 4, -1, 1);
    t_queue(e, "E", "", 4, -1, 1);
    t_queue(e, "p1", "D", 2, -1, 1);
    t_queue(e, "p2", "D", 2, -1, 1);
    for (uint64_t id = 1; id <= 4; id++)
        t_submit(e, id, "p2", GP_KIND_TRAIN, 1, 1, 0, 0);
    for (uint64_t id = 11; id <= 14; id++)
        t_submit(e, id, "E", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    t_submit(e, 101, "p1", GP_KIND_TRAIN, 1, 1, 0, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 1);
    ck_assert_uint_le(d[0].workload, 4); /* from p2, not from E */
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_reclaim_up_to_fair_share_not_only_deserved);
    tcase_add_test(tc, test_victims_never_pushed_below_fair_share);
    tcase_add_test(tc, test_gang_reclaims_as_a_whole);
    tcase_add_test(tc, test_victim_preference);
    tcase_add_test(tc, test_non_preemptible_never_reclaimed);
    tcase_add_test(tc, test_reclaim_between_sibling_projects);
}

GP_TEST_MAIN("engine/reclaim", add_tests)
