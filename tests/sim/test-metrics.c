/*
 * test-metrics.c — the simulator's measurements (src/sim/metrics.c) on
 * hand-computed cases: curve buckets and their neighbour fallback, quantiles,
 * time-weighted means.
 */
#include "gptest.h"
#include "sim/metrics.h"

START_TEST(test_curve_buckets_mean) {
    sim_curve c;
    sim_curve_init(&c);
    double a[3] = {10, 1, 2}, b[3] = {20, 3, 4}, d[3] = {50, 5, 6};
    sim_curve_add(&c, 0.4, a);   /* bucket 0 */
    sim_curve_add(&c, 0.6, b);   /* bucket 1 */
    sim_curve_add(&c, 1.2, d);   /* bucket 1 */
    sim_curve_add(&c, 2.5, a);   /* half to even: bucket 2 */
    sim_curve_add(&c, 131.0, a); /* outside: ignored */
    sim_curve_row rows[SIM_CURVE_MAX + 1];
    sim_curve_rows(&c, rows);
    ck_assert(rows[0].present);
    ck_assert_double_eq(rows[0].y[0], 10);
    ck_assert_double_eq(rows[1].y[0], 35);
    ck_assert_double_eq(rows[1].y[2], 5);
    ck_assert_double_eq(rows[2].y[0], 10);
    /* Bucket 3 is empty: the mean of buckets 2..4 (one event). */
    ck_assert(rows[3].present);
    ck_assert_double_eq(rows[3].y[0], 10);
    ck_assert(!rows[5].present);
}
END_TEST

START_TEST(test_quantile_interpolates) {
    double v[] = {4, 1, 3, 2};
    ck_assert_double_eq_tol(sim_quantile(v, 4, 0.5), 2.5, 1e-12);
    ck_assert_double_eq_tol(sim_quantile(v, 4, 0.95), 3.85, 1e-12);
    ck_assert_double_eq(sim_quantile(v, 4, 0), 1);
    ck_assert_double_eq(sim_quantile(v, 4, 1), 4);
    ck_assert_double_eq(sim_quantile(v, 0, 0.5), 0);
}
END_TEST

START_TEST(test_time_weighted_mean) {
    sim_twmean m;
    sim_twmean_init(&m);
    sim_twmean_set(&m, 0, 10); /* 10 for 2 s, 40 for 1 s: (20 + 40) / 3 */
    sim_twmean_set(&m, 2, 40);
    ck_assert_double_eq_tol(sim_twmean_mean(&m, 3), 20.0, 1e-12);
    ck_assert_double_eq_tol(sim_twmean_mean(&m, 2), 10.0, 1e-12);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_curve_buckets_mean);
    tcase_add_test(tc, test_quantile_interpolates);
    tcase_add_test(tc, test_time_weighted_mean);
}

GP_TEST_MAIN("sim/metrics", add_tests)
