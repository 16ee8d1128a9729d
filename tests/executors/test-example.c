/*
 * test-example.c — examples/train.py keeps the workload contract when run by
 * the local executor: signalled, it saves a checkpoint and exits; started
 * again as the next attempt with the same checkpoint directory, it resumes
 * where it stopped. Skipped where python3 is not installed (the example is
 * documentation, not a dependency of the build).
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "gptest.h"
#include "helpers.h"

/* The python3 that a task would find in PATH, or 0. */
static int have_python3(void) {
    return system("command -v python3 >/dev/null 2>&1") == 0;
}

START_TEST(test_train_checkpoints_and_resumes) {
    char script[PATH_MAX];
    if (!have_python3() || realpath("examples/train.py", script) == NULL)
        GP_TEST_SKIP("python3 or examples/train.py not found");
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    const char *argv[] = {"python3", script,           "--steps", "100000", "--every",
                          "5",       "--step-seconds", "0.01",    NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    char h1[GP_HANDLE_MAX], h2[GP_HANDLE_MAX], err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_exec_launch(ex, &t, h1, err, sizeof err), 0);
    ck_assert(gpt_wait_file(gpt_path(dir, "ckpt/w1/state.json")));
    ck_assert_int_eq(gp_exec_signal(ex, h1, SIGTERM), 0);
    gp_task_status st = gpt_exited(ex, h1);
    ck_assert_int_eq(st.exit_code, 0);

    t.attempt = 2;
    ck_assert_int_eq(gp_exec_launch(ex, &t, h2, err, sizeof err), 0);
    char *log = NULL;
    for (int i = 0; i < 500 && (log == NULL || !strstr(log, "attempt 2: resuming")); i++) {
        free(log);
        usleep(20000);
        log = gpt_slurp(gpt_path(dir, "logs/w1.log"));
    }
    ck_assert_ptr_nonnull(log);
    ck_assert_msg(strstr(log, "checkpoint signal: saved step"), "log: %s", log);
    ck_assert_msg(strstr(log, "attempt 2: resuming at step ") &&
                      !strstr(log, "attempt 2: resuming at step 0 "),
                  "log: %s", log);
    free(log);
    ck_assert_int_eq(gp_exec_stop(ex, h2), 0);
    gpt_exited(ex, h2);
    gpt_done(ex, dir);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_train_checkpoints_and_resumes);
}

GP_TEST_MAIN("executors/example", add_tests)
