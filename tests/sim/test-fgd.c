/*
 * test-fgd.c — the FGD experiment's protocol (src/sim/fgd.c): typical shapes,
 * the arrival order (shuffle, inflation, deflation), and a whole run through
 * the engine on the small fixture.
 */
#include <string.h>

#include "gptest.h"
#include "sim/fgd.h"

static sim_pod *fixture_pods(size_t *n) {
    sim_pod *p;
    char err[256];
    ck_assert_int_eq(sim_read_pods("tests/sim/fixtures/pods.csv", &p, n, err, sizeof err), 0);
    return p;
}

START_TEST(test_typical_shapes_cover_and_order) {
    size_t n;
    sim_pod *p = fixture_pods(&n);
    gp_shape *s;
    /* Counts: the 500-milli share twice, the rest once. 95% of 4 pods needs
     * three shapes; among equal counts the larger (8-core) shape comes first. */
    ck_assert_int_eq(sim_typical_shapes(p, n, 0.95, &s), 3);
    ck_assert_int_eq(s[0].gpu_milli, 500);
    ck_assert_int_eq(s[0].gpus, 0);
    ck_assert_double_eq_tol(s[0].popularity, 0.5, 1e-12);
    ck_assert_int_eq(s[1].cpu_milli, 8000);
    ck_assert_int_eq(s[1].gpus, 1);
    ck_assert_int_eq(s[1].nmodels, 1);
    ck_assert_str_eq(s[1].models[0], "T4");
    ck_assert_int_eq(s[2].cpu_milli, 2000);
    ck_assert_double_eq_tol(s[2].popularity, 0.25, 1e-12);
    free(s);
    /* Half the pods are covered by the first shape alone: renormalised to 1. */
    ck_assert_int_eq(sim_typical_shapes(p, n, 0.5, &s), 1);
    ck_assert_double_eq_tol(s[0].popularity, 1.0, 1e-12);
    free(s);
    free(p);
}
END_TEST

START_TEST(test_arrivals_shuffle_and_inflate) {
    size_t n, *o, *o2;
    sim_pod *p = fixture_pods(&n);
    /* Capacity 3000 milli, demand 2000: inflate to 1.3 x 3000 = 3900. */
    int k = sim_fgd_arrivals(p, n, 3000, 1.3, 42, &o);
    ck_assert_int_gt(k, 4);
    int seen[4] = {0};
    int64_t total = 0;
    for (int i = 0; i < 4; i++)
        seen[o[i]]++;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(seen[i], 1); /* the originals come first, each once */
    for (int i = 0; i < k; i++)
        total += sim_pod_milli(&p[o[i]]);
    ck_assert_int_le(total, 3900);
    ck_assert_int_ge(total, 3900 - 1000);
    ck_assert_int_eq(sim_fgd_arrivals(p, n, 3000, 1.3, 42, &o2), k);
    ck_assert_mem_eq(o, o2, (size_t)k * sizeof *o); /* same seed, same order */
    free(o);
    free(o2);
    free(p);
}
END_TEST

START_TEST(test_arrivals_deflate) {
    size_t n, *o;
    sim_pod *p = fixture_pods(&n);
    /* Target 0.5 x 3000 = 1500 < 2000: random pods leave until it fits. */
    int k = sim_fgd_arrivals(p, n, 3000, 0.5, 1, &o);
    int64_t total = 0;
    for (int i = 0; i < k; i++)
        total += sim_pod_milli(&p[o[i]]);
    ck_assert_int_lt(k, 4);
    ck_assert_int_le(total, 1500);
    free(o);
    free(p);
}
END_TEST

START_TEST(test_run_through_engine) {
    size_t n, nn;
    sim_pod *p = fixture_pods(&n);
    sim_node *nodes;
    char err[256];
    ck_assert_int_eq(sim_read_nodes("tests/sim/fixtures/nodes.csv", &nodes, &nn, err, sizeof err),
                     0);
    for (int pol = GP_PLACE_RANDOM; pol <= GP_PLACE_FGD; pol++) {
        sim_fgd_opts o = {(gp_placement)pol, 3, 1.3};
        sim_fgd_result r;
        ck_assert_int_eq(sim_fgd_run(nodes, nn, p, n, &o, &r, err, sizeof err), 0);
        ck_assert_int_eq(r.capacity_milli, 3000);
        ck_assert_int_eq(r.placed + r.failed, r.arrived);
        ck_assert_int_gt(r.placed, 0);
        for (int x = 0; x <= SIM_CURVE_MAX; x++)
            if (r.rows[x].present) {
                ck_assert_double_le(r.rows[x].y[0], 100.0);
                ck_assert_double_ge(r.rows[x].y[1], 0.0);
            }
    }
    free(nodes);
    free(p);
}
END_TEST

START_TEST(test_pod_workload_mapping) {
    sim_pod p;
    memset(&p, 0, sizeof p);
    strcpy(p.name, "x");
    p.ngpus = 1;
    p.gpu_milli = 250;
    p.cpu_milli = 100;
    p.tasks = 1;
    strcpy(p.spec, "A|B");
    gp_workload_spec w;
    sim_pod_workload(&p, 9, "pool", &w);
    ck_assert_int_eq(w.req.gpu, GP_GPU_FRACTION);
    ck_assert_int_eq(w.req.gpu_milli, 250);
    ck_assert_int_eq(w.req.nmodels, 2);
    p.gpu_milli = 1000;
    p.ngpus = 4;
    sim_pod_workload(&p, 9, "pool", &w);
    ck_assert_int_eq(w.req.gpu, GP_GPU_WHOLE);
    ck_assert_int_eq(w.req.gpus, 4);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_typical_shapes_cover_and_order);
    tcase_add_test(tc, test_arrivals_shuffle_and_inflate);
    tcase_add_test(tc, test_arrivals_deflate);
    tcase_add_test(tc, test_run_through_engine);
    tcase_add_test(tc, test_pod_workload_mapping);
}

GP_TEST_MAIN("sim/fgd", add_tests)
