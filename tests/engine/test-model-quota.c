/*
 * test-model-quota.c — per-GPU-model quotas: a project limited to 2 H100s
 * gets no more H100s, but may use other models.
 */
#include "gptest.h"
#include "helpers.h"

#include <stdio.h>
#include <string.h>

static gp_engine *mixed_pool(void) {
    gp_engine *e = t_engine();
    t_node(e, "h", 4, "H100", 80, "");
    t_node(e, "a", 4, "A100", 40, "");
    gp_queue_spec q;
    gp_queue_spec_init(&q, "p", "");
    q.quota[GP_RES_GPU].deserved = 8000;
    q.nmodels = 1;
    snprintf(q.models[0].model, sizeof q.models[0].model, "H100");
    q.models[0].gpu.deserved = 2000;
    q.models[0].gpu.limit = 2000;
    q.models[0].gpu.weight = 1;
    char err[GP_ERR_MAX];
    ck_assert_msg(gp_engine_queue_set(e, &q, err, sizeof err) == 0, "%s", err);
    return e;
}

static int submit_model(gp_engine *e, uint64_t id, const char *model) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, "p");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    if (model) {
        w.req.nmodels = 1;
        snprintf(w.req.models[0], sizeof w.req.models[0], "%s", model);
    }
    return gp_engine_submit(e, &w, NULL, 0);
}

START_TEST(test_model_limit_holds) {
    gp_engine *e = mixed_pool();
    for (uint64_t id = 1; id <= 4; id++)
        ck_assert_int_eq(submit_model(e, id, "H100"), 0);
    t_cycle(e, 0, 1, 1, NULL);
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "h", &ni), 0);
    int used = 0;
    for (int g = 0; g < ni.ngpus; g++)
        used += ni.gpus[g].used_milli;
    ck_assert_int_eq(used, 2000);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 4, why, sizeof why), GP_WAIT_QUEUE_LIMIT);
    ck_assert_ptr_nonnull(strstr(why, "every GPU model"));
    gp_engine_free(e);
}
END_TEST

START_TEST(test_other_models_still_usable) {
    gp_engine *e = mixed_pool();
    for (uint64_t id = 1; id <= 2; id++)
        submit_model(e, id, "H100");
    t_cycle(e, 0, 1, 1, NULL);
    for (uint64_t id = 3; id <= 6; id++)
        ck_assert_int_eq(submit_model(e, id, NULL), 0);
    t_cycle(e, 1, 1, 1, NULL);
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "a", &ni), 0);
    int used = 0;
    for (int g = 0; g < ni.ngpus; g++)
        used += ni.gpus[g].used_milli;
    ck_assert_int_eq(used, 4000);
    ck_assert_int_eq(t_alloc(e, "p"), 6000);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_unknown_model_refused) {
    gp_engine *e = mixed_pool();
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    w.req.nmodels = 1;
    snprintf(w.req.models[0], sizeof w.req.models[0], "V100");
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "req.models[0]: no GPU of model 'V100' in the pool");
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_model_limit_holds);
    tcase_add_test(tc, test_other_models_still_usable);
    tcase_add_test(tc, test_unknown_model_refused);
}

GP_TEST_MAIN("engine/model-quota", add_tests)
