/*
 * test-consolidate.c — consolidation moves preemptible single-task workloads
 * to free a whole GPU for a pending request, only when every moved workload
 * is placed again; never otherwise.
 */
#include "gptest.h"
#include "helpers.h"

/* Two GPUs, each half used by a workload restored there (as after a daemon
 * restart): a one-GPU request is fragmented out. */
static gp_engine *fragmented(gp_kind kind) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    for (int g = 0; g < 2; g++) {
        gp_workload_spec w;
        gp_workload_spec_init(&w, (uint64_t)g + 1, "p");
        w.kind = kind;
        w.req.gpu = GP_GPU_FRACTION;
        w.req.gpu_milli = 500;
        gp_task_binding b = {.node = "n1", .nslices = 1};
        b.slices[0] = (gp_slice){.gpu = g, .milli = 500, .mem = 40 * GIB, .mig_slot = -1};
        char err[GP_ERR_MAX];
        ck_assert_msg(gp_engine_restore(e, &w, 1, &b, 0, err, sizeof err) == 0, "%s", err);
    }
    return e;
}

START_TEST(test_moves_one_to_free_a_gpu) {
    gp_engine *e = fragmented(GP_KIND_TRAIN);
    ck_assert_int_eq(t_submit(e, 10, "p", GP_KIND_TRAIN, 1, 1, 0, 0), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 1000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_CONSOLIDATE), 1);
    ck_assert_uint_eq(d[0].for_workload, 10);
    /* Next cycle: the whole GPU goes to 10, the moved half joins the other. */
    n = t_cycle(e, 2000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 2);
    ck_assert_int_eq(t_state(e, 1), GP_STATE_RUNNING);
    ck_assert_int_eq(t_state(e, 2), GP_STATE_RUNNING);
    ck_assert_int_eq(t_state(e, 10), GP_STATE_RUNNING);
    gp_engine_free(e);
}
END_TEST

/* Nothing moves when the moved workload could not be placed again. */
START_TEST(test_no_move_without_a_place_to_go) {
    gp_engine *e = fragmented(GP_KIND_TRAIN);
    t_submit(e, 10, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_submit(e, 11, "p", GP_KIND_TRAIN, 0.5, 1, 0, 0);
    /* 11 fills the free half first (same priority, older id) ... */
    const gp_decision *d;
    size_t n = t_cycle(e, 1000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    gp_engine_free(e);
}
END_TEST

/* Non-preemptible work is never moved. */
START_TEST(test_never_moves_non_preemptible) {
    gp_engine *e = fragmented(GP_KIND_INFERENCE);
    t_submit(e, 10, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 1000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 10, why, sizeof why), GP_WAIT_FRAGMENTED);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_moves_one_to_free_a_gpu);
    tcase_add_test(tc, test_no_move_without_a_place_to_go);
    tcase_add_test(tc, test_never_moves_non_preemptible);
}

GP_TEST_MAIN("engine/consolidate", add_tests)
