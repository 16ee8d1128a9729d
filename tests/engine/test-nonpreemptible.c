/*
 * test-nonpreemptible.c — interactive and inference work runs only inside
 * deserved quota (it cannot be evicted, so it must never sit on borrowed
 * GPUs); training work may borrow beyond it.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

START_TEST(test_interactive_bounded_by_deserved) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "A", "", 2, -1, 1);
    t_queue(e, "B", "", 6, -1, 1);
    for (uint64_t id = 1; id <= 3; id++)
        t_submit(e, id, "A", GP_KIND_INTERACTIVE, 1, 1, 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "A"), 2000);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 3, why, sizeof why), GP_WAIT_DESERVED);
    ck_assert_ptr_nonnull(strstr(why, "project A deserves 2 GPUs"));
    gp_engine_free(e);
}
END_TEST

START_TEST(test_training_borrows_beyond_deserved) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "A", "", 2, -1, 1);
    t_queue(e, "B", "", 6, -1, 1);
    for (uint64_t id = 1; id <= 2; id++)
        t_submit(e, id, "A", GP_KIND_INTERACTIVE, 1, 1, 0, 0);
    for (uint64_t id = 3; id <= 6; id++)
        t_submit(e, id, "A", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "A"), 6000);
    gp_engine_free(e);
}
END_TEST

/* An inference workload explicitly marked preemptible may borrow. */
START_TEST(test_explicit_preemptible_flag_wins) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "A", "", 0, -1, 1);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "A");
    w.kind = GP_KIND_INFERENCE;
    w.preemptible = 1;
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(t_state(e, 1), GP_STATE_RUNNING);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_interactive_bounded_by_deserved);
    tcase_add_test(tc, test_training_borrows_beyond_deserved);
    tcase_add_test(tc, test_explicit_preemptible_flag_wins);
}

GP_TEST_MAIN("engine/nonpreemptible", add_tests)
