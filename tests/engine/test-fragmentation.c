/*
 * test-fragmentation.c — the pool's fragmentation figure, kept per node and
 * recomputed only where something changed, always equals a full
 * recomputation; and it means what the FGD paper means on a hand-made case.
 */
#include "gptest.h"
#include "helpers.h"

#include <math.h>
#include <string.h>

static void set_half_gpu_shape(gp_engine *e) {
    gp_shape s;
    memset(&s, 0, sizeof s);
    s.gpu_milli = 500;
    s.popularity = 1;
    ck_assert_int_eq(gp_engine_set_shapes(e, &s, 1), 0);
}

/* One GPU with 0.3 free cannot take a typical 0.5 task: 300 milli of
 * fragmentation; a free GPU can, so it adds none. */
START_TEST(test_hand_made_case) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    set_half_gpu_shape(e);
    double idle;
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, &idle), 0, 1e-9);
    ck_assert_double_eq_tol(idle, 2000, 1e-9);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 0.7, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, &idle), 300, 1e-9);
    ck_assert_double_eq_tol(idle, 1300, 1e-9);
    gp_engine_free(e);
}
END_TEST

/* Two H100s, one of them with 0.3 free, measured against a 0.5 shape: 300
 * milli of fragmentation. */
static gp_engine *gpu_with_300_left(void) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    set_half_gpu_shape(e);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 0.7, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, NULL), 300, 1e-9);
    return e;
}

/* Shapes whose allowed GPU model is empty or fills its field with no NUL are
 * refused, and the shapes in use stay: a 0.2 shape would fit in the 0.3 left
 * free, the 0.5 shape set before does not. */
START_TEST(test_bad_shape_models_refused) {
    gp_engine *e = gpu_with_300_left();
    gp_shape s[2];
    memset(s, 0, sizeof s);
    s[0].gpu_milli = 200;
    s[0].popularity = 1;
    s[0].nmodels = 1;
    memset(s[0].models[0], 'A', sizeof s[0].models[0]); /* no NUL */
    ck_assert_int_eq(gp_engine_set_shapes(e, s, 1), GP_EINVAL);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, NULL), 300, 1e-9);
    s[0].models[0][0] = '\0';
    ck_assert_int_eq(gp_engine_set_shapes(e, s, 1), GP_EINVAL);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, NULL), 300, 1e-9);
    strcpy(s[0].models[0], "H100");
    ck_assert_int_eq(gp_engine_set_shapes(e, s, 1), 0);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, NULL), 0, 1e-9);
    gp_engine_free(e);
}
END_TEST

/* Shapes naming more GPU models than the engine has room for are refused
 * with GP_ELIMIT before any is taken in: the shapes in use stay, and the
 * room is still there for shapes that fit in it (the models of the refused
 * call were taken in one by one until the limit, and stayed). */
START_TEST(test_shapes_past_model_limit_change_nothing) {
    gp_engine *e = gpu_with_300_left();
    gp_shape s;
    memset(&s, 0, sizeof s);
    s.gpu_milli = 200;
    s.popularity = 1;
    s.nmodels = 1;
    /* H100 and 61 more: two models of room left. */
    for (int i = 0; i < 61; i++) {
        snprintf(s.models[0], sizeof s.models[0], "M%d", i);
        ck_assert_int_eq(gp_engine_set_shapes(e, &s, 1), 0);
    }
    set_half_gpu_shape(e);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, NULL), 300, 1e-9);
    s.nmodels = 3;
    strcpy(s.models[0], "X1");
    strcpy(s.models[1], "X2");
    strcpy(s.models[2], "X3");
    ck_assert_int_eq(gp_engine_set_shapes(e, &s, 1), GP_ELIMIT);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, NULL), 300, 1e-9);
    /* Named twice, a new model takes one place. */
    strcpy(s.models[0], "Y1");
    strcpy(s.models[1], "Y2");
    strcpy(s.models[2], "Y1");
    ck_assert_int_eq(gp_engine_set_shapes(e, &s, 1), 0);
    s.nmodels = 1;
    strcpy(s.models[0], "H100");
    ck_assert_int_eq(gp_engine_set_shapes(e, &s, 1), 0);
    ck_assert_double_eq_tol(gp_engine_fragmentation(e, NULL), 0, 1e-9);
    strcpy(s.models[0], "X1");
    ck_assert_int_eq(gp_engine_set_shapes(e, &s, 1), GP_ELIMIT);
    gp_engine_free(e);
}
END_TEST

/* Along random sequences, the running figure equals a full recomputation
 * (forced by setting the same shapes again). */
START_TEST(test_incremental_equals_full) {
    gp_engine *e = t_engine();
    for (int i = 0; i < 6; i++) {
        char name[8] = "n0";
        name[1] = (char)('0' + i);
        t_node(e, name, 8, "H100", 80, "");
    }
    t_queue(e, "p", "", 48, -1, 1);
    set_half_gpu_shape(e);
    uint64_t r = 12345;
    for (uint64_t id = 1; id <= 300; id++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        double gpus = (double)((r >> 33) % 9 + 1) / 10.0;
        t_submit(e, id, "p", GP_KIND_TRAIN, gpus, 1, 0, (gp_time_ms)id);
        if (id % 3 == 0 && id > 10)
            gp_engine_finished(e, id - 10); /* may not be running: fine */
        t_cycle(e, (gp_time_ms)id, 1, 1, NULL);
        double idle_a, idle_b;
        double a = gp_engine_fragmentation(e, &idle_a);
        set_half_gpu_shape(e);
        double b = gp_engine_fragmentation(e, &idle_b);
        ck_assert_double_eq_tol(a, b, 1e-6 * fmax(1, b));
        ck_assert_double_eq_tol(idle_a, idle_b, 1e-6);
    }
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_hand_made_case);
    tcase_add_test(tc, test_bad_shape_models_refused);
    tcase_add_test(tc, test_shapes_past_model_limit_change_nothing);
    tcase_add_test(tc, test_incremental_equals_full);
}

GP_TEST_MAIN("engine/fragmentation", add_tests)
