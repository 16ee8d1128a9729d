/*
 * test-slurm-config.c — the slurm executor refuses a bad configuration with
 * an error naming the key, before it asks Slurm anything, and reports a
 * controller that cannot be reached in Slurm's own words. Its behaviour on a
 * real cluster is the Slurm tier's (tests/slurm).
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "gptest.h"

/* Opens the slurm executor with config; returns the code, err filled. */
static int open_with(const char *config, char *err, size_t errlen) {
    gp_executor *ex = NULL;
    err[0] = '\0';
    int rc = gp_executor_open("slurm", config, &ex, err, errlen);
    if (rc == 0)
        gp_executor_close(ex);
    else
        ck_assert_ptr_null(ex);
    return rc;
}

START_TEST(test_bad_keys_are_named) {
    static const struct {
        const char *config;
        const char *says;
    } cases[] = {
        {"", "state_dir is required"},
        {"state_dir=relative", "state_dir must be an absolute path"},
        {"state_dir=/tmp/x,statedir=/y", "unknown key 'statedir'"},
        {"state_dir=/tmp/x,novalue", "'novalue' is not key=value"},
        {"state_dir=/tmp/x,gpu_mem=80X", "gpu_mem: '80X' is not a size"},
        {"state_dir=/tmp/x,gpu_mem.a100=-1", "gpu_mem.a100: '-1' is not a size"},
        {"state_dir=/tmp/x,tag=a/b", "tag: 1 to"},
        {"state_dir=/tmp/x,gpu_hold=2h", "gpu_hold: '2h' is not a duration from 0 to 1h"},
        {"state_dir=/tmp/x,gpu_hold=-1s", "gpu_hold: '-1s' is not a duration"},
        {"state_dir=/tmp/x,gpu_hold=soon", "gpu_hold: 'soon' is not a duration"},
        {"state_dir=/tmp/x,holder_expiry=0", "holder_expiry: '0' is not a duration from 1s to 24h"},
        {"state_dir=/tmp/x,holder_expiry=2d", "holder_expiry: '2d' is not a duration"},
        {"state_dir=/tmp/x,holder_expiry=later", "holder_expiry: 'later' is not a duration"},
        {"state_dir=/tmp/x,partitions=a::b", "partitions: at most"},
        {"state_dir=/tmp/x,slurm_conf=etc/slurm.conf", "slurm_conf must be an absolute path"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[GP_ERR_MAX];
        ck_assert_int_eq(open_with(cases[i].config, err, sizeof err), GP_EINVAL);
        ck_assert_msg(strstr(err, cases[i].says) != NULL, "'%s': err '%s' lacks '%s'",
                      cases[i].config, err, cases[i].says);
    }
}
END_TEST

START_TEST(test_missing_commands_are_reported) {
    char err[GP_ERR_MAX];
    int rc =
        open_with("state_dir=/tmp/gpupool-test-slurm-config,bin_dir=/nonexistent", err, sizeof err);
    ck_assert_int_eq(rc, GP_EIO);
    ck_assert_msg(strstr(err, "/nonexistent/scontrol") != NULL, "err: %s", err);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_bad_keys_are_named);
    tcase_add_test(tc, test_missing_commands_are_reported);
}

GP_TEST_MAIN("executors/slurm-config", add_tests)
