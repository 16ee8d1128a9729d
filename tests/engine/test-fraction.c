/*
 * test-fraction.c — fractional and memory requests: slices on one GPU never
 * sum past its milli-GPU or its bytes; fractions pack onto partly used GPUs;
 * a memory request charges memory / GPU memory, rounded up; a fraction gets
 * its part of the GPU's memory as its cap.
 */
#include "gptest.h"
#include "helpers.h"

START_TEST(test_four_quarters_share_one_gpu) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "p", "", 8, -1, 1);
    for (uint64_t id = 1; id <= 4; id++)
        ck_assert_int_eq(t_submit(e, id, "p", GP_KIND_TRAIN, 0.25, 1, 0, 0), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 4);
    int gpu = d[0].tasks[0].slices[0].gpu;
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(d[i].tasks[0].nslices, 1);
        ck_assert_int_eq(d[i].tasks[0].slices[0].gpu, gpu);
        ck_assert_int_eq(d[i].tasks[0].slices[0].milli, 250);
        ck_assert_int_eq(d[i].tasks[0].slices[0].mem, 20 * GIB);
    }
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.gpus[gpu].used_milli, 1000);
    ck_assert_int_eq(ni.gpus[gpu].used_mem, 80 * GIB);
    ck_assert_int_eq(ni.gpus[gpu].slices, 4);
    gp_engine_free(e);
}
END_TEST

/* 0.6 + 0.6 cannot share a GPU: the second lands on another. */
START_TEST(test_slices_never_exceed_a_gpu) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 0.6, 1, 0, 0);
    t_submit(e, 2, "p", GP_KIND_TRAIN, 0.6, 1, 0, 0);
    t_submit(e, 3, "p", GP_KIND_TRAIN, 0.6, 1, 0, 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 2);
    ck_assert_int_ne(d[0].tasks[0].slices[0].gpu, d[1].tasks[0].slices[0].gpu);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 3, why, sizeof why), GP_WAIT_FRAGMENTED);
    ck_assert_str_eq(why, "no single GPU has 0.6 free; the largest free slice is 0.4 on node n1");
    gp_engine_free(e);
}
END_TEST

/* 20 GiB of an 80 GiB GPU charges 250 milli; 10 GiB of 80 charges 125;
 * 1 byte charges 1 (rounded up). */
START_TEST(test_memory_request_charge) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 1, "H100", 80, "");
    t_queue(e, "p", "", 1, -1, 1);
    int64_t sizes[] = {20 * GIB, 10 * GIB, 1};
    int32_t expect[] = {250, 125, 1};
    for (int i = 0; i < 3; i++) {
        gp_workload_spec w;
        gp_workload_spec_init(&w, (uint64_t)i + 1, "p");
        w.req.gpu = GP_GPU_MEMORY;
        w.req.gpu_mem = sizes[i];
        ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    }
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        int k = (int)d[i].workload - 1;
        ck_assert_int_eq(d[i].tasks[0].slices[0].milli, expect[k]);
        ck_assert_int_eq(d[i].tasks[0].slices[0].mem, sizes[k]);
    }
    ck_assert_int_eq(t_alloc(e, "p"), 376);
    gp_engine_free(e);
}
END_TEST

/* A memory request larger than what is free on any one GPU waits, even if
 * the milli-GPU would fit: memory is tracked in bytes too. */
START_TEST(test_bytes_are_tracked_too) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 1, "H100", 80, "");
    t_queue(e, "p", "", 1, -1, 1);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.req.gpu = GP_GPU_MEMORY;
    w.req.gpu_mem = 70 * GIB;
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    gp_workload_spec_init(&w, 2, "p");
    w.req.gpu = GP_GPU_MEMORY;
    w.req.gpu_mem = 20 * GIB;
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(t_state(e, 2), GP_STATE_PENDING);
    gp_engine_free(e);
}
END_TEST

/* Fractions pack: a second half lands on the half-used GPU. */
START_TEST(test_fractions_pack) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 4, "H100", 80, "");
    t_queue(e, "p", "", 4, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 0.5, 1, 0, 0);
    const gp_decision *d;
    t_cycle(e, 0, 1, 1, &d);
    int first = d[0].tasks[0].slices[0].gpu;
    t_submit(e, 2, "p", GP_KIND_TRAIN, 0.5, 1, 0, 0);
    t_cycle(e, 1, 1, 1, &d);
    ck_assert_int_eq(d[0].tasks[0].slices[0].gpu, first);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_four_quarters_share_one_gpu);
    tcase_add_test(tc, test_slices_never_exceed_a_gpu);
    tcase_add_test(tc, test_memory_request_charge);
    tcase_add_test(tc, test_bytes_are_tracked_too);
    tcase_add_test(tc, test_fractions_pack);
}

GP_TEST_MAIN("engine/fraction", add_tests)
