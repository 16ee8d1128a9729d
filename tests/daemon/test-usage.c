/*
 * test-usage.c — usage accounting against figures computed by hand: known
 * tasks on known GPUs with known busy ratios (as the fake NVML reports them)
 * held for a known time, checked to the GPU-second and the percent. The
 * clock is an argument of the accounting, so no test waits for time to pass.
 *
 * The pool of the tests: departments research (deserved 2 GPUs; projects
 * nlp and vision, 1 each) and ops (deserved 2; project infra, 2). Node a has
 * four GPUs: GPU 0 is 50 % busy, GPU 1 25 %, GPU 2 unknown (MIG or emulated),
 * GPU 3 100 %.
 *
 *   task  project user   slices          attributed use
 *   T1    nlp     alice  GPU 0, 1.0      0.5 (alone on a 50 % GPU)
 *   T2    nlp     alice  GPU 1, 0.5      0.125 (half of 25 %)
 *   T3    vision  bob    GPU 1, 0.5      0.125
 *   T4    nlp     bob    GPU 2, 1.0      unknown
 *   T5    vision  bob    GPU 3, 0.5      0.5 (100 % busy, capped at its 0.5)
 *
 * So nlp holds 2.5 GPUs and uses 0.625 of the 1.5 measured; vision holds
 * 1.0 and uses 0.625; research holds 3.5 (1.5 beyond its deserved 2), and
 * ops, holding nothing, lends 2 * min(1, 1.5 / 2) = 1.5.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_error.h"
#include "daemon/usage.h"
#include "gptest.h"

#define EPS 1e-9

static const gp_slice s_t1[] = {{.gpu = 0, .milli = 1000, .mig_slot = -1}};
static const gp_slice s_t2[] = {{.gpu = 1, .milli = 500, .mig_slot = -1}};
static const gp_slice s_t3[] = {{.gpu = 1, .milli = 500, .mig_slot = -1}};
static const gp_slice s_t4[] = {{.gpu = 2, .milli = 1000, .mig_slot = -1}};
static const gp_slice s_t5[] = {{.gpu = 3, .milli = 500, .mig_slot = -1}};

static const gpd__usage_task tasks[] = {
    {"nlp", "alice", "a", 1, s_t1},  {"nlp", "alice", "a", 1, s_t2},
    {"vision", "bob", "a", 1, s_t3}, {"nlp", "bob", "a", 1, s_t4},
    {"vision", "bob", "a", 1, s_t5},
};
static const gp_gpu_usage gpus[] = {
    {"a", 0, 500, -1}, {"a", 1, 250, -1}, {"a", 2, -1, -1}, {"a", 3, 1000, -1}};
static const gpd__usage_queue queues[] = {
    {"research", "", 2000}, {"nlp", "research", 1000}, {"vision", "research", 1000},
    {"ops", "", 2000},      {"infra", "ops", 2000},
};

static gpd__usage_input pool(void) {
    gpd__usage_input in = {tasks, 5, gpus, 4, queues, 5, NULL, 0};
    return in;
}

static const gpd__usage_rate *find(const gpd__usage_rate *r, size_t n, gpd__usage_kind k,
                                   const char *key) {
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == k && strcmp(r[i].key, key) == 0)
            return &r[i];
    return NULL;
}

static void check_rate(const gpd__usage_rate *x, double alloc, double used, double measured,
                       double borrowed, double lent) {
    ck_assert_ptr_nonnull(x);
    ck_assert_double_eq_tol(x->alloc, alloc, EPS);
    ck_assert_double_eq_tol(x->used, used, EPS);
    ck_assert_double_eq_tol(x->measured, measured, EPS);
    ck_assert_double_eq_tol(x->borrowed, borrowed, EPS);
    ck_assert_double_eq_tol(x->lent, lent, EPS);
}

START_TEST(test_rates_by_hand) {
    gpd__usage_input in = pool();
    gpd__usage_rate *r = NULL;
    size_t n = 0;
    ck_assert_int_eq(gpd__usage_rates(&in, &r, &n), 0);
    check_rate(find(r, n, GPD__USAGE_QUEUE, "nlp"), 2.5, 0.625, 1.5, 1.5, 0);
    check_rate(find(r, n, GPD__USAGE_QUEUE, "vision"), 1.0, 0.625, 1.0, 0, 0);
    check_rate(find(r, n, GPD__USAGE_QUEUE, "research"), 3.5, 1.25, 2.5, 1.5, 0);
    check_rate(find(r, n, GPD__USAGE_QUEUE, "ops"), 0, 0, 0, 0, 1.5);
    /* infra holds nothing and lends nothing (ops has no other project to
     * lend to): it is left out. */
    ck_assert_ptr_null(find(r, n, GPD__USAGE_QUEUE, "infra"));
    check_rate(find(r, n, GPD__USAGE_USER, "alice"), 1.5, 0.625, 1.5, 0, 0);
    check_rate(find(r, n, GPD__USAGE_USER, "bob"), 2.0, 0.625, 1.0, 0, 0);
    check_rate(find(r, n, GPD__USAGE_NODE, "a"), 3.5, 1.25, 2.5, 0, 0);
    ck_assert_uint_eq(n, 7);
    /* To the percent: nlp used 41.7 % of what could be measured. */
    const gpd__usage_rate *nlp = find(r, n, GPD__USAGE_QUEUE, "nlp");
    ck_assert_int_eq((int)lround(nlp->used / nlp->measured * 1000), 417);
    free(r);
}
END_TEST

static const gpd__usage_row *row(const gpd__usage_row *rows, size_t n, int32_t res, int64_t ts,
                                 gpd__usage_kind k, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (rows[i].res == res && rows[i].ts == ts && rows[i].kind == k &&
            strcmp(rows[i].key, key) == 0)
            return &rows[i];
    return NULL;
}

START_TEST(test_seconds_by_hand) {
    gpd__usage_input in = pool();
    gpd__usage_rate *r = NULL;
    size_t n = 0;
    ck_assert_int_eq(gpd__usage_rates(&in, &r, &n), 0);
    /* 10:00:30 to 10:02:00 on day one: 30 s in the first minute, 60 s in the
     * second, 90 s in the hour. */
    int64_t h10 = 10 * 3600;
    gpd__usage_row *rows = NULL;
    size_t nrows = 0;
    ck_assert_int_eq(gpd__usage_account(r, n, (h10 + 30) * 1000, (h10 + 120) * 1000, &rows, &nrows),
                     0);
    ck_assert_uint_eq(nrows, 3 * n);
    const gpd__usage_row *x = row(rows, nrows, 60, h10, GPD__USAGE_QUEUE, "nlp");
    ck_assert_ptr_nonnull(x);
    ck_assert_double_eq_tol(x->alloc, 75, EPS); /* 2.5 GPUs * 30 s */
    ck_assert_double_eq_tol(x->used, 18.75, EPS);
    ck_assert_double_eq_tol(x->measured, 45, EPS);
    ck_assert_double_eq_tol(x->borrowed, 45, EPS);
    x = row(rows, nrows, 60, h10 + 60, GPD__USAGE_QUEUE, "nlp");
    ck_assert_double_eq_tol(x->alloc, 150, EPS);
    x = row(rows, nrows, 3600, h10, GPD__USAGE_QUEUE, "nlp");
    ck_assert_double_eq_tol(x->alloc, 225, EPS);
    ck_assert_double_eq_tol(x->used, 56.25, EPS);
    x = row(rows, nrows, 3600, h10, GPD__USAGE_QUEUE, "ops");
    ck_assert_double_eq_tol(x->lent, 135, EPS); /* 1.5 GPUs * 90 s */
    x = row(rows, nrows, 3600, h10, GPD__USAGE_USER, "bob");
    ck_assert_double_eq_tol(x->alloc, 180, EPS);
    ck_assert_double_eq_tol(x->used, 56.25, EPS);
    ck_assert_double_eq_tol(x->measured, 90, EPS);
    free(rows);

    /* Across an hour: 10:59:45 to 11:00:15 is 15 s in each hour. */
    ck_assert_int_eq(
        gpd__usage_account(r, n, (h10 + 3585) * 1000, (h10 + 3615) * 1000, &rows, &nrows), 0);
    ck_assert_double_eq_tol(row(rows, nrows, 3600, h10, GPD__USAGE_NODE, "a")->alloc, 52.5, EPS);
    ck_assert_double_eq_tol(row(rows, nrows, 3600, h10 + 3600, GPD__USAGE_NODE, "a")->alloc, 52.5,
                            EPS);
    ck_assert_double_eq_tol(row(rows, nrows, 60, h10 + 3540, GPD__USAGE_NODE, "a")->alloc, 52.5,
                            EPS);
    free(rows);

    /* An empty interval adds nothing; a backwards one is refused. */
    ck_assert_int_eq(gpd__usage_account(r, n, 5000, 5000, &rows, &nrows), 0);
    ck_assert_uint_eq(nrows, 0);
    ck_assert_int_eq(gpd__usage_account(r, n, 5000, 4000, &rows, &nrows), GP_EINVAL);
    free(r);
}
END_TEST

START_TEST(test_lending_is_capped_by_borrowing) {
    /* Only T5 runs: vision holds 0.5 of its 1 GPU, nobody borrows, nobody
     * lends; a MIG slice is never measured even on a GPU with busy time. */
    gp_slice mig[] = {{.gpu = 0, .milli = 1000, .mig_slot = 2}};
    gpd__usage_task t[] = {{"vision", "bob", "a", 1, s_t5}, {"nlp", "alice", "a", 1, mig}};
    gpd__usage_input in = {t, 2, gpus, 4, queues, 5, NULL, 0};
    gpd__usage_rate *r = NULL;
    size_t n = 0;
    ck_assert_int_eq(gpd__usage_rates(&in, &r, &n), 0);
    check_rate(find(r, n, GPD__USAGE_QUEUE, "vision"), 0.5, 0.5, 0.5, 0, 0);
    check_rate(find(r, n, GPD__USAGE_QUEUE, "nlp"), 1.0, 0, 0, 0, 0);
    check_rate(find(r, n, GPD__USAGE_QUEUE, "research"), 1.5, 0.5, 0.5, 0, 0);
    ck_assert_ptr_null(find(r, n, GPD__USAGE_QUEUE, "ops"));
    free(r);
}
END_TEST

START_TEST(test_returned_by_the_idle_policy) {
    /* Two suspended sessions of nlp (1 and 0.25 GPU) and none running: nlp
     * and research returned 1.25 GPUs, alice 1, bob 0.25; they hold nothing,
     * and an hour of it is 1.25 GPU-hours in the hour's row. */
    gpd__usage_return ret[] = {{"nlp", "alice", 1000}, {"nlp", "bob", 250}};
    gpd__usage_input in = {NULL, 0, gpus, 4, queues, 5, ret, 2};
    gpd__usage_rate *r = NULL;
    size_t n = 0;
    ck_assert_int_eq(gpd__usage_rates(&in, &r, &n), 0);
    const gpd__usage_kind q = GPD__USAGE_QUEUE, u = GPD__USAGE_USER;
    ck_assert_double_eq_tol(find(r, n, q, "nlp")->returned, 1.25, EPS);
    ck_assert_double_eq_tol(find(r, n, q, "research")->returned, 1.25, EPS);
    ck_assert_double_eq_tol(find(r, n, u, "alice")->returned, 1.0, EPS);
    ck_assert_double_eq_tol(find(r, n, u, "bob")->returned, 0.25, EPS);
    check_rate(find(r, n, q, "nlp"), 0, 0, 0, 0, 0);
    ck_assert_ptr_null(find(r, n, q, "vision"));
    gpd__usage_row *rows = NULL;
    size_t nrows = 0;
    ck_assert_int_eq(gpd__usage_account(r, n, 0, 3600 * 1000, &rows, &nrows), 0);
    double hour = 0;
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].res == GPD__USAGE_COARSE && rows[i].kind == q &&
            strcmp(rows[i].key, "nlp") == 0)
            hour += rows[i].returned;
    ck_assert_double_eq_tol(hour, 1.25 * 3600, EPS);
    free(rows);
    free(r);
}
END_TEST

START_TEST(test_kind_names) {
    gpd__usage_kind k;
    ck_assert_int_eq(gpd__usage_kind_parse("user", &k), 0);
    ck_assert_int_eq(k, GPD__USAGE_USER);
    ck_assert_str_eq(gpd__usage_kind_name(GPD__USAGE_NODE), "node");
    ck_assert_int_eq(gpd__usage_kind_parse("project", &k), GP_EINVAL);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_rates_by_hand);
    tcase_add_test(tc, test_seconds_by_hand);
    tcase_add_test(tc, test_lending_is_capped_by_borrowing);
    tcase_add_test(tc, test_returned_by_the_idle_policy);
    tcase_add_test(tc, test_kind_names);
}

GP_TEST_MAIN("daemon/usage", add_tests)
