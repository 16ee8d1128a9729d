/*
 * test-registry.c — the executor registry and the gp_exec_* wrappers: lookup
 * by name, refusal of unusable tables, GP_ENOTSUP (never a call through NULL)
 * for methods a table lacks, arguments checked before any method runs, and
 * calls passed through unchanged to a complete table.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/registry.h"
#include "gptest.h"

/* A table with open and close only. */
static int calls;
static int fake_open(const char *config, void **state, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    calls++;
    *state = (void *)&calls;
    return strcmp(config, "fail") == 0 ? GP_EINVAL : 0;
}
static void fake_close(void *state) {
    ck_assert_ptr_eq(state, &calls);
    calls++;
}

static const gp_executor_methods bare = {
    .version = GP_EXECUTOR_VERSION, .name = "bare", .open = fake_open, .close = fake_close};

/* A complete table whose methods record what they were given. */
static int last_sig;
static char last_handle[GP_HANDLE_MAX];
static int full_inventory(void *s, gp_node_spec *nodes, size_t max, size_t *n, int *emulated,
                          char *err, size_t errlen) {
    (void)s;
    (void)nodes;
    (void)max;
    (void)err;
    (void)errlen;
    *n = 2;
    *emulated = 1;
    return 0;
}
static int full_launch(void *s, const gp_task_launch *t, char handle[GP_HANDLE_MAX], char *err,
                       size_t errlen) {
    (void)s;
    (void)err;
    (void)errlen;
    snprintf(handle, GP_HANDLE_MAX, "full:%llu", (unsigned long long)t->workload);
    return 0;
}
static int full_signal(void *s, const char *h, int sig) {
    (void)s;
    snprintf(last_handle, sizeof last_handle, "%s", h);
    last_sig = sig;
    return 0;
}
static int full_stop(void *s, const char *h) {
    return full_signal(s, h, SIGKILL);
}
static int full_poll(void *s, gp_task_status *t, size_t n) {
    (void)s;
    for (size_t i = 0; i < n; i++)
        t[i].state = GP_TASK_RUNNING;
    return (int)n;
}
static int full_reap(void *s, const char *h) {
    return full_signal(s, h, 0);
}
static int full_control(void *s, int op, void *arg) {
    (void)s;
    (void)arg;
    return op == 1 ? 42 : GP_ENOTSUP;
}

static int full_tasks(void *s, char (*handles)[GP_HANDLE_MAX], size_t max, size_t *n) {
    (void)s;
    if (max > 0)
        snprintf(handles[0], GP_HANDLE_MAX, "full:1");
    *n = 3;
    return 0;
}
static int full_describe(void *s, gp_executor_info *info) {
    (void)s;
    info->emulated = 1;
    snprintf(info->gpus, sizeof info->gpus, "fake");
    return 0;
}

/* A version-2 open: records what the daemon said about itself. */
static char seen_data_dir[64];
static int ctx_open(const gp_executor_ctx *ctx, const char *config, void **state, char *err,
                    size_t errlen) {
    snprintf(seen_data_dir, sizeof seen_data_dir, "%s", ctx->data_dir ? ctx->data_dir : "(null)");
    return fake_open(config, state, err, errlen);
}

static const gp_executor_methods full = {
    .version = GP_EXECUTOR_VERSION,
    .name = "full",
    .open = fake_open,
    .close = fake_close,
    .inventory = full_inventory,
    .launch = full_launch,
    .signal = full_signal,
    .stop = full_stop,
    .poll = full_poll,
    .reap = full_reap,
    .control = full_control,
    .tasks = full_tasks,
    .describe = full_describe,
};

START_TEST(test_find) {
    const gp_executor_methods *m = gp_executor_find("local");
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->name, "local");
    ck_assert_int_ge(m->version, 1);
    ck_assert_ptr_nonnull(gp_executor_find("slurm"));
    ck_assert_ptr_null(gp_executor_find("kubernetes"));
    ck_assert_ptr_null(gp_executor_find(NULL));

    gp_executor *ex = (gp_executor *)&calls; /* must be overwritten */
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_executor_open("kubernetes", "", &ex, err, sizeof err), GP_ENOENT);
    ck_assert_ptr_null(ex);
    ck_assert_msg(strstr(err, "'kubernetes'"), "err: %s", err);
}
END_TEST

START_TEST(test_unusable_tables) {
    char err[GP_ERR_MAX] = "";
    gp_executor *ex = NULL;
    gp_executor_methods old = full;
    old.version = 0;
    ck_assert_int_eq(gpx__executor_open_methods(&old, NULL, "", &ex, err, sizeof err), GP_ENOTSUP);
    ck_assert_ptr_null(ex);
    ck_assert_msg(strstr(err, "version"), "err: %s", err);

    gp_executor_methods no_open = full;
    no_open.open = NULL;
    ck_assert_int_eq(gpx__executor_open_methods(&no_open, NULL, "", &ex, err, sizeof err),
                     GP_ENOTSUP);
    ck_assert_msg(strstr(err, "open or close"), "err: %s", err);

    calls = 0;
    ck_assert_int_eq(gpx__executor_open_methods(&full, NULL, "fail", &ex, err, sizeof err),
                     GP_EINVAL);
    ck_assert_ptr_null(ex);
    ck_assert_int_eq(calls, 1); /* open ran; nothing left to close */
}
END_TEST

START_TEST(test_missing_methods_are_not_supported) {
    char err[GP_ERR_MAX] = "", handle[GP_HANDLE_MAX] = "x";
    gp_executor *ex = NULL;
    calls = 0;
    ck_assert_int_eq(gpx__executor_open_methods(&bare, NULL, "", &ex, err, sizeof err), 0);
    ck_assert_str_eq(gp_executor_name(ex), "bare");
    gp_node_spec node;
    size_t n = 9;
    int emulated = 9;
    gp_task_launch t;
    memset(&t, 0, sizeof t);
    gp_task_status st;
    memset(&st, 0, sizeof st);
    ck_assert_int_eq(gp_exec_inventory(ex, &node, 1, &n, &emulated, err, sizeof err), GP_ENOTSUP);
    ck_assert_msg(strstr(err, "'bare'"), "err: %s", err);
    ck_assert_int_eq(gp_exec_launch(ex, &t, handle, err, sizeof err), GP_ENOTSUP);
    ck_assert_int_eq(gp_exec_signal(ex, "h", SIGTERM), GP_ENOTSUP);
    ck_assert_int_eq(gp_exec_stop(ex, "h"), GP_ENOTSUP);
    ck_assert_int_eq(gp_exec_poll(ex, &st, 1), GP_ENOTSUP);
    ck_assert_int_eq(gp_exec_reap(ex, "h"), GP_ENOTSUP);
    ck_assert_int_eq(gp_exec_control(ex, 1, NULL), GP_ENOTSUP);
    char handles[1][GP_HANDLE_MAX];
    gp_executor_info info;
    ck_assert_int_eq(gp_exec_tasks(ex, handles, 1, &n), GP_ENOTSUP);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(gp_exec_describe(ex, &info), GP_ENOTSUP);
    gp_executor_close(ex);
    ck_assert_int_eq(calls, 2);
    gp_executor_close(NULL);

    /* A version-1 table cannot have methods of later versions; a table that
     * claims a newer version than this daemon knows is still usable. */
    gp_executor_methods newer = full;
    newer.version = GP_EXECUTOR_VERSION + 3;
    ck_assert_int_eq(gpx__executor_open_methods(&newer, NULL, "", &ex, err, sizeof err), 0);
    ck_assert_int_eq(gp_exec_stop(ex, "h"), 0);
    gp_executor_close(ex);

    /* A version-1 table written before tasks and describe existed: the
     * fields beyond its version are never read, whatever they hold. */
    gp_executor_methods v1 = full;
    v1.version = 1;
    v1.open_ctx = ctx_open;
    seen_data_dir[0] = '\0';
    gp_executor_ctx ctx = {.data_dir = "/data"};
    ck_assert_int_eq(gpx__executor_open_methods(&v1, &ctx, "", &ex, err, sizeof err), 0);
    ck_assert_str_eq(seen_data_dir, ""); /* open, not open_ctx */
    ck_assert_int_eq(gp_exec_tasks(ex, handles, 1, &n), GP_ENOTSUP);
    ck_assert_int_eq(gp_exec_describe(ex, &info), GP_ENOTSUP);
    ck_assert_int_eq(gp_exec_stop(ex, "h"), 0);
    gp_executor_close(ex);
}
END_TEST

START_TEST(test_calls_pass_through) {
    char err[GP_ERR_MAX] = "", handle[GP_HANDLE_MAX];
    gp_executor *ex = NULL;
    ck_assert_int_eq(gpx__executor_open_methods(&full, NULL, "", &ex, err, sizeof err), 0);
    gp_node_spec node;
    size_t n = 0;
    int emulated = 0;
    ck_assert_int_eq(gp_exec_inventory(ex, &node, 1, &n, &emulated, err, sizeof err), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(emulated, 1);
    gp_task_launch t;
    memset(&t, 0, sizeof t);
    t.workload = 77;
    ck_assert_int_eq(gp_exec_launch(ex, &t, handle, err, sizeof err), 0);
    ck_assert_str_eq(handle, "full:77");
    ck_assert_int_eq(gp_exec_signal(ex, handle, SIGUSR1), 0);
    ck_assert_int_eq(last_sig, SIGUSR1);
    ck_assert_str_eq(last_handle, "full:77");
    ck_assert_int_eq(gp_exec_stop(ex, handle), 0);
    ck_assert_int_eq(last_sig, SIGKILL);
    gp_task_status st[2];
    memset(st, 0, sizeof st);
    ck_assert_int_eq(gp_exec_poll(ex, st, 2), 2);
    ck_assert_int_eq(st[1].state, GP_TASK_RUNNING);
    ck_assert_int_eq(gp_exec_reap(ex, handle), 0);
    ck_assert_int_eq(gp_exec_control(ex, 1, NULL), 42);
    char handles[2][GP_HANDLE_MAX];
    ck_assert_int_eq(gp_exec_tasks(ex, handles, 2, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(handles[0], "full:1");
    gp_executor_info info;
    memset(&info, 0x7f, sizeof info);
    ck_assert_int_eq(gp_exec_describe(ex, &info), 0);
    ck_assert_int_eq(info.emulated, 1);
    ck_assert_str_eq(info.gpus, "fake");
    ck_assert_str_eq(info.limits, ""); /* zeroed before the executor fills it */

    /* Bad arguments never reach the executor. */
    ck_assert_int_eq(gp_exec_launch(ex, NULL, handle, err, sizeof err), GP_EINVAL);
    ck_assert_int_eq(gp_exec_signal(ex, NULL, SIGTERM), GP_EINVAL);
    ck_assert_int_eq(gp_exec_poll(ex, NULL, 1), GP_EINVAL);
    ck_assert_int_eq(gp_exec_poll(NULL, st, 1), GP_EINVAL);
    ck_assert_int_eq(gp_exec_inventory(ex, NULL, 1, &n, &emulated, err, sizeof err), GP_EINVAL);
    ck_assert_int_eq(gp_exec_tasks(ex, NULL, 1, &n), GP_EINVAL);
    ck_assert_int_eq(gp_exec_tasks(ex, handles, 1, NULL), GP_EINVAL);
    ck_assert_int_eq(gp_exec_describe(ex, NULL), GP_EINVAL);
    gp_executor_close(ex);
}

/* A version-2 table may give open_ctx without open; it is told about the
 * daemon, or gets a context of NULL fields when the caller has none. */
START_TEST(test_open_with_context) {
    char err[GP_ERR_MAX] = "";
    gp_executor *ex = NULL;
    gp_executor_methods v2 = bare;
    v2.open = NULL;
    v2.open_ctx = ctx_open;
    gp_executor_ctx ctx = {.data_dir = "/data"};
    calls = 0;
    ck_assert_int_eq(gpx__executor_open_methods(&v2, &ctx, "", &ex, err, sizeof err), 0);
    ck_assert_str_eq(seen_data_dir, "/data");
    gp_executor_close(ex);
    ck_assert_int_eq(gpx__executor_open_methods(&v2, NULL, "", &ex, err, sizeof err), 0);
    ck_assert_str_eq(seen_data_dir, "(null)");
    gp_executor_close(ex);
    ck_assert_int_eq(calls, 4);
}
END_TEST
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_find);
    tcase_add_test(tc, test_unusable_tables);
    tcase_add_test(tc, test_missing_methods_are_not_supported);
    tcase_add_test(tc, test_calls_pass_through);
    tcase_add_test(tc, test_open_with_context);
}

GP_TEST_MAIN("executors/registry", add_tests)
