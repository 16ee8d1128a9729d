/*
 * test-mig.c — MIG: an admin sets each MIG GPU's layout; a MIG request binds
 * one free instance of its profile; MIG GPUs take nothing else; layouts are
 * validated.
 */
#include "gptest.h"
#include "helpers.h"

#include <stdio.h>
#include <string.h>

static void mig_node(gp_engine *e) {
    gp_node_spec n;
    gp_node_spec_init(&n, "m1");
    n.cpu_milli = 64000;
    n.mem_bytes = 512 * GIB;
    n.ngpus = 2;
    for (int i = 0; i < 2; i++) {
        snprintf(n.gpus[i].uuid, sizeof n.gpus[i].uuid, "GPU-m1-%d", i);
        snprintf(n.gpus[i].model, sizeof n.gpus[i].model, "H200");
        n.gpus[i].mem_bytes = 141 * GIB;
    }
    n.gpus[0].mig = 1;
    n.gpus[0].nmig = 4;
    snprintf(n.gpus[0].mig_layout[0], 16, "3g.71gb");
    snprintf(n.gpus[0].mig_layout[1], 16, "2g.35gb");
    snprintf(n.gpus[0].mig_layout[2], 16, "1g.18gb");
    snprintf(n.gpus[0].mig_layout[3], 16, "1g.18gb");
    char err[GP_ERR_MAX];
    ck_assert_msg(gp_engine_node_set(e, &n, err, sizeof err) == 0, "%s", err);
}

static int submit_mig(gp_engine *e, uint64_t id, const char *profile) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, "p");
    w.req.gpu = GP_GPU_MIG;
    snprintf(w.req.mig_profile, sizeof w.req.mig_profile, "%s", profile);
    return gp_engine_submit(e, &w, NULL, 0);
}

START_TEST(test_mig_instances_bind_by_profile) {
    gp_engine *e = t_engine();
    mig_node(e);
    t_queue(e, "p", "", 2, -1, 1);
    for (uint64_t id = 1; id <= 3; id++)
        ck_assert_int_eq(submit_mig(e, id, "1g.18gb"), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 2);
    ck_assert_int_eq(d[0].tasks[0].slices[0].gpu, 0);
    ck_assert_int_ne(d[0].tasks[0].slices[0].mig_slot, d[1].tasks[0].slices[0].mig_slot);
    ck_assert_int_ge(d[0].tasks[0].slices[0].mig_slot, 2);
    ck_assert_int_eq(d[0].tasks[0].slices[0].milli, 142);
    ck_assert_int_eq(t_state(e, 3), GP_STATE_PENDING);
    gp_engine_free(e);
}
END_TEST

/* A whole-GPU request never lands on the MIG GPU. */
START_TEST(test_mig_gpu_takes_nothing_else) {
    gp_engine *e = t_engine();
    mig_node(e);
    t_queue(e, "p", "", 2, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_submit(e, 2, "p", GP_KIND_TRAIN, 0.5, 1, 0, 0);
    t_submit(e, 3, "p", GP_KIND_TRAIN, 0.5, 1, 0, 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(d[i].tasks[0].slices[0].gpu, 1);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_mig_profile_validation) {
    gp_engine *e = t_engine();
    mig_node(e);
    t_queue(e, "p", "", 2, -1, 1);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.req.gpu = GP_GPU_MIG;
    snprintf(w.req.mig_profile, sizeof w.req.mig_profile, "5g.99gb");
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "req.mig_profile"));
    /* A layout using more than 7 compute slices is refused. */
    gp_node_spec n;
    gp_node_spec_init(&n, "bad");
    n.ngpus = 1;
    snprintf(n.gpus[0].model, sizeof n.gpus[0].model, "H200");
    n.gpus[0].mem_bytes = 141 * GIB;
    n.gpus[0].mig = 1;
    n.gpus[0].nmig = 2;
    snprintf(n.gpus[0].mig_layout[0], 16, "4g.71gb");
    snprintf(n.gpus[0].mig_layout[1], 16, "4g.71gb");
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "gpus[0].mig_layout"));
    ck_assert_uint_eq(gp_engine_node_count(e), 1);
    gp_engine_free(e);
}
END_TEST

/* A profile no GPU's layout has is refused: it could never run here. */
START_TEST(test_mig_profile_missing_from_layouts) {
    gp_engine *e = t_engine();
    mig_node(e);
    t_queue(e, "p", "", 2, -1, 1);
    ck_assert_int_eq(submit_mig(e, 1, "7g.141gb"), GP_EINVAL);
    ck_assert_int_eq(t_state(e, 1), -1);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_mig_instances_bind_by_profile);
    tcase_add_test(tc, test_mig_gpu_takes_nothing_else);
    tcase_add_test(tc, test_mig_profile_validation);
    tcase_add_test(tc, test_mig_profile_missing_from_layouts);
}

GP_TEST_MAIN("engine/mig", add_tests)
