/*
 * test-local.c — the local executor with real processes: exit codes and
 * signals, stop() ending a whole process tree, the checkpoint signal, handles
 * that survive a restart (and a SIGKILL) of the daemon, handles that are
 * lost, idempotent launches, start failures (one a supervisor recorded
 * before the daemon stopped), reap and the task list.
 *
 * Tasks are /bin/sh scripts. Anything a test waits for is polled with a
 * limit of several seconds, so the tests hold on a loaded machine.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "gptest.h"
#include "helpers.h"

/* A script that waits for the file "go" in its working directory. */
#define WAIT_GO "while [ ! -e go ]; do sleep 0.05; done; "

START_TEST(test_exit_code_and_log) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 1, "echo hello from the task; echo oops >&2; exit 3", dir, h);
    ck_assert_msg(strncmp(h, "local:w1.t0.a1:", 15) == 0, "handle %s", h);
    gp_task_status st = gpt_exited(ex, h);
    ck_assert_int_eq(st.exit_code, 3);
    ck_assert_int_eq(st.term_signal, 0);
    ck_assert_int_eq(st.gpu_mem_used, -1);

    char *log = gpt_slurp(gpt_path(dir, "logs/w1.log"));
    ck_assert_ptr_nonnull(log);
    ck_assert_ptr_nonnull(strstr(log, "==== gpupool: workload 1 task 0 attempt 1 starting"));
    ck_assert_ptr_nonnull(strstr(log, "hello from the task\n"));
    ck_assert_ptr_nonnull(strstr(log, "oops\n"));
    ck_assert_ptr_nonnull(strstr(log, "==== gpupool: the task ended: exit code 3 ===="));
    free(log);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_crash_by_signal) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 2, "ulimit -c 0; kill -SEGV $$", dir, h);
    gp_task_status st = gpt_exited(ex, h);
    ck_assert_int_eq(st.term_signal, SIGSEGV);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_stop_kills_whole_tree) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX];
    /* A child, a grandchild, and a process that left the group with setsid:
     * all must end with the task. */
    gpt_launch_sh(ex, 3,
                  "sleep 30 & echo $! > child.tmp; mv child.tmp child; "
                  "sh -c 'sleep 30 & echo $! > gc.tmp; mv gc.tmp grandchild; wait' & "
                  "setsid sleep 30 & echo $! > esc.tmp; mv esc.tmp escaped; wait",
                  dir, h);
    pid_t child = gpt_read_pid(gpt_path(dir, "child"));
    pid_t grandchild = gpt_read_pid(gpt_path(dir, "grandchild"));
    pid_t escaped = gpt_read_pid(gpt_path(dir, "escaped"));
    ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).state, GP_TASK_RUNNING);

    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    gp_task_status st = gpt_exited(ex, h);
    ck_assert_int_eq(st.term_signal, SIGKILL);
    ck_assert_msg(gpt_wait_gone(child), "child %d survived stop()", (int)child);
    ck_assert_msg(gpt_wait_gone(grandchild), "grandchild %d survived stop()", (int)grandchild);
    ck_assert_msg(gpt_wait_gone(escaped), "setsid'd process %d survived", (int)escaped);
    /* stop() and signal() of a task that has ended succeed and do nothing. */
    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    ck_assert_int_eq(gp_exec_signal(ex, h, SIGTERM), 0);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_checkpoint_signal_delivered) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 4,
                  "trap 'echo \"saved at $GPUPOOL_CHECKPOINT_SIGNAL\" > checkpointed; exit 0' "
                  "TERM; touch ready; while :; do sleep 0.05; done",
                  dir, h);
    ck_assert(gpt_wait_file(gpt_path(dir, "ready")));
    ck_assert_int_eq(gp_exec_signal(ex, h, SIGTERM), 0);
    gp_task_status st = gpt_exited(ex, h);
    ck_assert_int_eq(st.exit_code, 0);
    ck_assert_int_eq(st.term_signal, 0);
    char *saved = gpt_slurp(gpt_path(dir, "checkpointed"));
    ck_assert_ptr_nonnull(saved);
    ck_assert_str_eq(saved, "saved at TERM\n");
    free(saved);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_ignored_signal_then_stop) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 5, "trap '' TERM; touch ready; while :; do sleep 0.05; done", dir, h);
    ck_assert(gpt_wait_file(gpt_path(dir, "ready")));
    ck_assert_int_eq(gp_exec_signal(ex, h, SIGTERM), 0);
    /* The task ignores the checkpoint signal: a second later it still runs. */
    sleep(1);
    gp_task_status st = gpt_wait(ex, h, GP_TASK_RUNNING);
    ck_assert_int_eq(st.state, GP_TASK_RUNNING);
    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    st = gpt_exited(ex, h);
    ck_assert_int_eq(st.term_signal, SIGKILL);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_handle_survives_restart) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 6, WAIT_GO "exit 7", dir, h);
    gp_executor_close(ex);

    /* A new instance on the same state directory knows the task. */
    ex = gpt_open(dir, NULL);
    ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).state, GP_TASK_RUNNING);
    gpt_spit(gpt_path(dir, "go"), "");
    gp_task_status st = gpt_exited(ex, h);
    ck_assert_int_eq(st.exit_code, 7);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_task_survives_daemon_sigkill) {
    const char *dir = gpt_tmpdir();
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t daemon = fork();
    ck_assert_int_ge(daemon, 0);
    if (daemon == 0) {
        /* The "daemon": launches, hands over the handle, and waits to die. */
        gp_executor *ex = gpt_open(dir, NULL);
        char h[GP_HANDLE_MAX];
        gpt_launch_sh(ex, 8, WAIT_GO "exit 5", dir, h);
        ssize_t w = write(fds[1], h, sizeof h);
        (void)w;
        pause();
        _exit(0);
    }
    close(fds[1]);
    char h[GP_HANDLE_MAX];
    ck_assert_int_eq(read(fds[0], h, sizeof h), (ssize_t)sizeof h);
    close(fds[0]);
    kill(daemon, SIGKILL);
    waitpid(daemon, NULL, 0);

    gp_executor *ex = gpt_open(dir, NULL);
    ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).state, GP_TASK_RUNNING);
    gpt_spit(gpt_path(dir, "go"), "");
    gp_task_status st = gpt_exited(ex, h);
    ck_assert_int_eq(st.exit_code, 5);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_lost_handles) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 9, WAIT_GO "exit 0", dir, h);

    gp_task_status st[5];
    memset(st, 0, sizeof st);
    /* Not a handle at all; a key that escapes state_dir. */
    snprintf(st[0].handle, GP_HANDLE_MAX, "garbage");
    snprintf(st[1].handle, GP_HANDLE_MAX, "local:../../etc:1:2");
    /* A pid that is alive (ours) but with another start time: pid reuse. */
    snprintf(st[2].handle, GP_HANDLE_MAX, "local:w99.t0.a1:%d:12345", (int)getpid());
    /* The real task's key with a forged start time: not the recorded handle. */
    snprintf(st[3].handle, GP_HANDLE_MAX, "%s", h);
    snprintf(strrchr(st[3].handle, ':'), 3, ":1");
    snprintf(st[4].handle, GP_HANDLE_MAX, "%s", h);
    ck_assert_int_eq(gp_exec_poll(ex, st, 5), 0);
    for (int i = 0; i < 4; i++) {
        ck_assert_msg(st[i].state == GP_TASK_LOST, "handle %s: state %d", st[i].handle,
                      st[i].state);
        ck_assert_str_ne(st[i].detail, "");
    }
    ck_assert_str_eq(st[0].detail, "not a handle of the local executor");
    ck_assert_int_eq(st[4].state, GP_TASK_RUNNING);

    /* A supervisor that died without an exit file: its task is lost. */
    char state_dir[512];
    snprintf(state_dir, sizeof state_dir, "%s/state/w77.t0.a1", dir);
    ck_assert_int_eq(mkdir(state_dir, 0755), 0);
    gpt_spit(gpt_path(state_dir, "handle"), "local:w77.t0.a1:999999:1\n");
    gp_task_status gone;
    memset(&gone, 0, sizeof gone);
    snprintf(gone.handle, GP_HANDLE_MAX, "local:w77.t0.a1:999999:1");
    ck_assert_int_eq(gp_exec_poll(ex, &gone, 1), 0);
    ck_assert_int_eq(gone.state, GP_TASK_LOST);
    ck_assert_ptr_nonnull(strstr(gone.detail, "supervisor"));

    gpt_spit(gpt_path(dir, "go"), "");
    gpt_exited(ex, h);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_launch_is_idempotent) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    const char *script = "echo run >> runs; " WAIT_GO "exit 0";
    char h1[GP_HANDLE_MAX], h2[GP_HANDLE_MAX], h3[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 10, script, dir, h1);
    gpt_launch_sh(ex, 10, script, dir, h2);
    ck_assert_str_eq(h1, h2);

    /* The next attempt is a new run. */
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 10, argv, dir);
    t.attempt = 2;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_exec_launch(ex, &t, h3, err, sizeof err), 0);
    ck_assert_str_ne(h1, h3);

    gpt_spit(gpt_path(dir, "go"), "");
    gpt_exited(ex, h1);
    gpt_exited(ex, h3);
    char *runs = gpt_slurp(gpt_path(dir, "runs"));
    ck_assert_ptr_nonnull(runs);
    ck_assert_str_eq(runs, "run\nrun\n");
    free(runs);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_start_failures) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "";
    gp_task_launch t;

    const char *missing[] = {"/nonexistent/program", NULL};
    gpt_launch_init(&t, 11, missing, dir);
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), GP_ENOENT);
    ck_assert_msg(strstr(err, "argv[0]") && strstr(err, "/nonexistent/program"), "err: %s", err);
    /* Launching the same key again reports the same failure, and runs nothing. */
    err[0] = '\0';
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), GP_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "argv[0]"));

    const char *unknown[] = {"no-such-program-anywhere", NULL};
    gpt_launch_init(&t, 12, unknown, dir);
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), GP_ENOENT);
    ck_assert_msg(strstr(err, "not an executable in the task's PATH"), "err: %s", err);

    const char *none[] = {NULL};
    gpt_launch_init(&t, 13, none, dir);
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strncmp(err, "argv", 4) == 0, "err: %s", err);

    const char *sh[] = {"/bin/sh", "-c", "exit 0", NULL};
    gpt_launch_init(&t, 14, sh, dir);
    t.workdir = "/proc/no-such-dir";
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), GP_ENOENT);
    ck_assert_msg(strncmp(err, "workdir", 7) == 0, "err: %s", err);
    gpt_done(ex, dir);
}
END_TEST

/* A supervisor that could not fork its task records the failure in the
 * attempt's directory, which its launch then removes. A daemon stopped in
 * between leaves the record: launching the key again starts the task if the
 * fork failed for want of processes or memory (EAGAIN, nothing ran), and
 * reports any other failure again, running nothing. */
static void supervisor_failed(const char *dir, const char *key, int e) {
    char sub[64], task[PATH_MAX], text[128];
    snprintf(sub, sizeof sub, "state/%s", key);
    snprintf(task, sizeof task, "%s", gpt_path(dir, sub));
    mkdir(gpt_path(dir, "state"), 0755);
    ck_assert_int_eq(mkdir(task, 0755), 0);
    snprintf(text, sizeof text, "local:%s:1:1\n", key);
    gpt_spit(gpt_path(task, "handle"), text);
    snprintf(text, sizeof text, "exit_code=127\nterm_signal=0\nstart_stage=1\nstart_errno=%d\n", e);
    gpt_spit(gpt_path(task, "exit"), text);
}

START_TEST(test_supervisor_fork_failure_recorded) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "";
    supervisor_failed(dir, "w17.t0.a1", EAGAIN);
    gpt_launch_sh(ex, 17, "echo ran >> runs", dir, h);
    ck_assert_int_eq(gpt_exited(ex, h).exit_code, 0);
    char *runs = gpt_slurp(gpt_path(dir, "runs"));
    ck_assert_ptr_nonnull(runs);
    ck_assert_str_eq(runs, "ran\n");
    free(runs);

    supervisor_failed(dir, "w18.t0.a1", EPERM);
    const char *argv[] = {"/bin/sh", "-c", "echo ran >> runs", NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 18, argv, dir);
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), GP_ESYS);
    ck_assert_msg(strstr(err, "supervisor") != NULL, "err: %s", err);
    runs = gpt_slurp(gpt_path(dir, "runs"));
    ck_assert_str_eq(runs, "ran\n");
    free(runs);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_reap_and_list) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char h1[GP_HANDLE_MAX], h2[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 15, WAIT_GO "exit 0", dir, h1);
    gpt_launch_sh(ex, 16, "exit 0", dir, h2);

    char handles[4][GP_HANDLE_MAX];
    size_t n = 0;
    ck_assert_int_eq(gp_exec_tasks(ex, handles, 4, &n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert(strcmp(handles[0], h1) == 0 || strcmp(handles[1], h1) == 0);

    ck_assert_int_eq(gp_exec_reap(ex, h1), GP_ESTATE); /* still running */
    gpt_exited(ex, h2);
    ck_assert_int_eq(gp_exec_reap(ex, h2), 0);
    ck_assert_int_eq(gp_exec_reap(ex, h2), 0); /* idempotent */
    ck_assert_int_eq(access(gpt_path(dir, "state/w16.t0.a1"), F_OK), -1);
    ck_assert_int_eq(gpt_wait(ex, h2, GP_TASK_LOST).state, GP_TASK_LOST);
    ck_assert_int_eq(access(gpt_path(dir, "logs/w16.log"), F_OK), 0); /* logs stay */

    ck_assert_int_eq(gp_exec_tasks(ex, handles, 4, &n), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(handles[0], h1);
    ck_assert_int_eq(gp_exec_tasks(ex, handles, 0, &n), 0); /* counts without room */
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(gp_exec_control(ex, 999, handles), GP_ENOTSUP);

    gpt_spit(gpt_path(dir, "go"), "");
    gpt_exited(ex, h1);
    ck_assert_int_eq(gp_exec_reap(ex, h1), 0);
    gpt_done(ex, dir);
}
END_TEST

/* The text of /proc/<pid>/cmdline with its NULs as spaces, trailing ones cut. */
static void cmdline_of(pid_t pid, char *out, size_t len) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "re");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    while (n > 0 && (out[n - 1] == '\0' || out[n - 1] == ' '))
        n--;
    for (size_t i = 0; i < n; i++)
        out[i] = out[i] == '\0' ? ' ' : out[i];
    out[n] = '\0';
}

START_TEST(test_instance_and_supervisor_title) {
    /* Each state directory is an instance of its own, kept across opens. */
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char *id = gpt_slurp(gpt_path(dir, "state/instance"));
    ck_assert_ptr_nonnull(id);
    id[strcspn(id, "\n")] = '\0';
    ck_assert_uint_eq(strlen(id), 8);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 12, WAIT_GO "exit 0", dir, h);
    gp_executor_close(ex);
    ex = gpt_open(dir, NULL);
    char *again = gpt_slurp(gpt_path(dir, "state/instance"));
    ck_assert_int_eq(strncmp(again, id, strlen(id)), 0);

    /* The supervisor shows in ps as what it is, not as a copy of us. */
    ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).state, GP_TASK_RUNNING);
    long spid = strtol(strchr(h + 6, ':') + 1, NULL, 10);
    ck_assert_int_gt(spid, 0);
    char line[256], want[128], comm[64];
    cmdline_of((pid_t)spid, line, sizeof line);
    snprintf(want, sizeof want, "gpupool-supervisor %s w12.t0.a1", id);
    ck_assert_str_eq(line, want);
    snprintf(comm, sizeof comm, "/proc/%ld/comm", spid);
    char *name = gpt_slurp(comm);
    ck_assert_ptr_nonnull(name);
    ck_assert_str_eq(name, "gpupool-superv\n");
    free(name);
    gpt_spit(gpt_path(dir, "go"), "");
    ck_assert_int_eq(gpt_exited(ex, h).exit_code, 0);
    gpt_done(ex, dir);
    free(id);
    free(again);

    /* Another state directory, another instance; a given one is used. */
    const char *dir2 = gpt_tmpdir();
    ex = gpt_open(dir2, "instance=fixed-1");
    gpt_launch_sh(ex, 12, "exit 0", dir2, h);
    ck_assert_int_eq(gpt_exited(ex, h).exit_code, 0);
    gpt_done(ex, dir2);
    char err[GP_ERR_MAX] = "", config[600];
    const char *dir3 = gpt_tmpdir();
    snprintf(config, sizeof config, "state_dir=%s,cgroup=off,instance=../x", dir3);
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "instance"), "err: %s", err);
    gpt_rmrf(dir3);
}
END_TEST

START_TEST(test_config_errors) {
    char err[GP_ERR_MAX] = "";
    gp_executor *ex = NULL;
    ck_assert_int_eq(gp_executor_open("local", "colour=blue", &ex, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "unknown key 'colour'"), "err: %s", err);
    ck_assert_ptr_null(ex);
    ck_assert_int_eq(gp_executor_open("local", "state_dir=relative/dir", &ex, err, sizeof err),
                     GP_EINVAL);
    ck_assert_msg(strstr(err, "state_dir"), "err: %s", err);
    const char *dir = gpt_tmpdir();
    char config[512];
    snprintf(config, sizeof config, "state_dir=%s,cgroup=maybe", dir);
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "cgroup"), "err: %s", err);
    snprintf(config, sizeof config, "state_dir=%s,nvml=/no/libnvml.so", dir);
    ck_assert_int_eq(gp_executor_open("local", config, &ex, err, sizeof err), GP_ENOENT);
    ck_assert_msg(strstr(err, "nvml"), "err: %s", err);
    gpt_rmrf(dir);
    ck_assert_int_eq(gp_executor_open("local", "novalue", &ex, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "key=value"), "err: %s", err);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_instance_and_supervisor_title);
    tcase_add_test(tc, test_exit_code_and_log);
    tcase_add_test(tc, test_crash_by_signal);
    tcase_add_test(tc, test_stop_kills_whole_tree);
    tcase_add_test(tc, test_checkpoint_signal_delivered);
    tcase_add_test(tc, test_ignored_signal_then_stop);
    tcase_add_test(tc, test_handle_survives_restart);
    tcase_add_test(tc, test_task_survives_daemon_sigkill);
    tcase_add_test(tc, test_lost_handles);
    tcase_add_test(tc, test_launch_is_idempotent);
    tcase_add_test(tc, test_start_failures);
    tcase_add_test(tc, test_supervisor_fork_failure_recorded);
    tcase_add_test(tc, test_reap_and_list);
    tcase_add_test(tc, test_config_errors);
}

GP_TEST_MAIN("executors/local", add_tests)
