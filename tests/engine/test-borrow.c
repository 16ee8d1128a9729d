/*
 * test-borrow.c — over-quota borrowing and reclaim, the scenario gpupool
 * exists for: an 8-GPU server with two departments of 4 deserved GPUs each.
 * The idle department's GPUs are lent to the busy one, and come back in one
 * cycle when the owner submits.
 */
#include "gptest.h"
#include "helpers.h"

static gp_engine *server(void) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "rack1");
    t_queue(e, "A", "", 4, -1, 1);
    t_queue(e, "B", "", 4, -1, 1);
    t_queue(e, "a1", "A", 4, -1, 1);
    t_queue(e, "b1", "B", 4, -1, 1);
    return e;
}

START_TEST(test_idle_gpus_are_lent) {
    gp_engine *e = server();
    for (uint64_t id = 1; id <= 8; id++)
        ck_assert_int_eq(t_submit(e, id, "b1", GP_KIND_TRAIN, 1, 1, 0, 0), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 1000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 8);
    ck_assert_int_eq(t_alloc(e, "B"), 8000);
    ck_assert_int_eq(t_fair(e, "B"), 8000); /* A asks for nothing: B's fair share is all */
    gp_engine_free(e);
}
END_TEST

START_TEST(test_owner_gets_gpus_back_in_one_cycle) {
    gp_engine *e = server();
    for (uint64_t id = 1; id <= 8; id++)
        t_submit(e, id, "b1", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 1000, 1, 0, NULL);
    ck_assert_int_eq(t_submit(e, 101, "a1", GP_KIND_TRAIN, 1, 1, 0, 2000), 0);
    ck_assert_int_eq(t_submit(e, 102, "a1", GP_KIND_TRAIN, 1, 1, 0, 2000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 0, &d);
    /* Exactly two of B's borrowed workloads are evicted, for A's two. */
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 2);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 0);
    for (size_t i = 0; i < n; i++)
        ck_assert(d[i].for_workload == 101 || d[i].for_workload == 102);
    ck_assert_int_eq(t_fair(e, "A"), 2000);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 101, why, sizeof why), GP_WAIT_EVICTING);
    /* The victims stop (grace period over): A's two bind in the next cycle. */
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(gp_engine_released(e, d[i].workload, 4000), 0);
    n = t_cycle(e, 5000, 1, 0, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 2);
    ck_assert_int_eq(t_state(e, 101), GP_STATE_RUNNING);
    ck_assert_int_eq(t_state(e, 102), GP_STATE_RUNNING);
    ck_assert_int_eq(t_alloc(e, "A"), 2000);
    ck_assert_int_eq(t_alloc(e, "B"), 6000);
    /* The requeued borrowers wait, and say why. */
    int64_t counts[GP_WAIT_COUNT];
    gp_engine_pending_by_reason(e, counts);
    ck_assert_int_eq(counts[GP_WAIT_FAIR_SHARE] + counts[GP_WAIT_NO_FIT], 2);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_requeued_borrowers_resume_when_gpus_free) {
    gp_engine *e = server();
    for (uint64_t id = 1; id <= 8; id++)
        t_submit(e, id, "b1", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    t_submit(e, 101, "a1", GP_KIND_TRAIN, 1, 1, 0, 2000);
    t_submit(e, 102, "a1", GP_KIND_TRAIN, 1, 1, 0, 2000);
    t_cycle(e, 3000, 1, 1, NULL);
    t_cycle(e, 4000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "A"), 2000);
    ck_assert_int_eq(gp_engine_finished(e, 101), 0);
    ck_assert_int_eq(gp_engine_finished(e, 102), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 5000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 2);
    ck_assert_int_eq(t_alloc(e, "B"), 8000);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_no_reclaim_when_owner_within_free_capacity) {
    gp_engine *e = server();
    for (uint64_t id = 1; id <= 6; id++)
        t_submit(e, id, "b1", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    t_submit(e, 101, "a1", GP_KIND_TRAIN, 1, 1, 0, 2000);
    t_submit(e, 102, "a1", GP_KIND_TRAIN, 1, 1, 0, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 2);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_idle_gpus_are_lent);
    tcase_add_test(tc, test_owner_gets_gpus_back_in_one_cycle);
    tcase_add_test(tc, test_requeued_borrowers_resume_when_gpus_free);
    tcase_add_test(tc, test_no_reclaim_when_owner_within_free_capacity);
}

GP_TEST_MAIN("engine/borrow", add_tests)
