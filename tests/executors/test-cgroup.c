/*
 * test-cgroup.c — CPU and memory limits of the local executor's tasks.
 *
 * Where this machine lets the test make cgroups (v2 with cpu and memory, or
 * v1 cpu and memory hierarchies, writable), a task must run inside its own
 * cgroup with the limits asked for, and its cgroup must be gone after reap.
 * Where it does not, the tests say so and pass: the executor then runs tasks
 * without limits, which test_no_cgroups checks is said in the task's log.
 * Every test uses a parent cgroup of its own and removes it at the end.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"

/* Opens the executor with cgroup=<mode> under a parent cgroup unique to this
 * test process, on a fresh directory (*dir). Returns NULL (and says why, and
 * removes the directory) where that is not possible. */
static gp_executor *open_cg_with(const char **dir, const char *mode, char *parent, size_t len,
                                 const char *extra) {
    char config[PATH_MAX + 300], err[GP_ERR_MAX] = "";
    *dir = gpt_tmpdir();
    snprintf(parent, len, "gpexec-test-%d", (int)getpid());
    snprintf(config, sizeof config,
             "state_dir=%s/state,nvml=off,devices=off,cgroup=%s,cgroup_parent=%s%s", *dir, mode,
             parent, extra);
    gp_executor *ex = NULL;
    int rc = gp_executor_open("local", config, &ex, err, sizeof err);
    gp_executor_info d;
    if (rc < 0) {
        printf("# SKIP cgroup=%s not usable here: %s\n", mode, err);
    } else if (gp_exec_describe(ex, &d) == 0 && strncmp(d.limits, "cgroup v", 8) != 0) {
        printf("# SKIP %s\n", d.limits);
        gp_executor_close(ex);
        ex = NULL;
    }
    if (ex == NULL)
        gpt_rmrf(*dir);
    return ex;
}

static gp_executor *open_cg(const char **dir, const char *mode, char *parent, size_t len) {
    return open_cg_with(dir, mode, parent, len, "");
}

/* The task's cgroup directory that holds pids.max, or NULL. */
static const char *pids_dir(const gpx__task_cg *cg) {
    for (int i = 0; i < cg->ndirs; i++)
        if (access(gpt_path(cg->dirs[i], "pids.max"), F_OK) == 0)
            return cg->dirs[i];
    return NULL;
}

/* Removes a cgroup directory and then its parent (the executor's instance
 * cgroup lives under the configured cgroup_parent). */
static void rmdir_up(char *dir) {
    rmdir(dir);
    char *slash = strrchr(dir, '/');
    if (slash != NULL) {
        *slash = '\0';
        rmdir(dir);
    }
}

static int rmdir_walked(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    return 0;
}

/* Removes the test's parent cgroup(s), which the executor's description
 * names: "cgroup v1 under A and B: ..." or "cgroup v2 under A: ...", and
 * the v1 freezer's, which it does not ("; freezer for pause"): every run
 * left one behind before. */
static void remove_parents(gp_executor *ex) {
    char frz[PATH_MAX], mine[PATH_MAX + 32];
    if (gpx__cg_find_mount(0, "freezer", frz, sizeof frz) == 0) {
        snprintf(mine, sizeof mine, "%s/gpexec-test-%d", frz, (int)getpid());
        nftw(mine, rmdir_walked, 8, FTW_DEPTH | FTW_PHYS);
        ck_assert_msg(access(mine, F_OK) != 0, "%s is left", mine);
    }
    gp_executor_info d;
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    char *p = strstr(d.limits, " under ");
    ck_assert_ptr_nonnull(p);
    p += 7;
    p[strcspn(p, ":")] = '\0';
    for (;;) { /* "A", "A and B" or "A and B and C" */
        char *and = strstr(p, " and ");
        if (and != NULL)
            *and = '\0';
        rmdir_up(p);
        if (and == NULL)
            break;
        p = and+5;
    }
}

/* The first line of dir/file, without its newline. */
static char *first_line(const char *dir, const char *file) {
    char *s = gpt_slurp(gpt_path(dir, file));
    ck_assert_msg(s != NULL, "cannot read %s/%s", dir, file);
    s[strcspn(s, "\n")] = '\0';
    return s;
}

START_TEST(test_limits_applied) {
    const char *dir;
    char parent[64];
    gp_executor *ex = open_cg(&dir, "auto", parent, sizeof parent);
    if (ex == NULL)
        return;
    const char *argv[] = {"/bin/sh", "-c", "touch ready; while [ ! -e go ]; do sleep 0.05; done",
                          NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    t.cpu_milli = 500;
    t.mem_bytes = 64 << 20;
    char h[GP_HANDLE_MAX], err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_exec_launch(ex, &t, h, err, sizeof err), 0);
    ck_assert(gpt_wait_file(gpt_path(dir, "ready")));

    gpx__task_cg cg;
    ck_assert_int_eq(gpx__cg_load(&cg, gpt_path(dir, "state/w1.t0.a1/cgroup")), 0);
    ck_assert_int_ge(cg.ndirs, 1);
    pid_t pid;
    uint64_t start;
    ck_assert_int_eq(gpx__task_read(gpt_path(dir, "state/w1.t0.a1"), &pid, &start), 0);
    char want[32];
    snprintf(want, sizeof want, "%d\n", (int)pid);
    for (int i = 0; i < cg.ndirs; i++) {
        char *procs = gpt_slurp(gpt_path(cg.dirs[i], "cgroup.procs"));
        ck_assert_ptr_nonnull(procs);
        ck_assert_msg(strncmp(procs, want, strlen(want)) == 0 || strstr(procs, want),
                      "task %d is not in %s: %s", (int)pid, cg.dirs[i], procs);
        free(procs);
    }
    char *a, *b;
    if (cg.ndirs == 1) { /* v2 */
        ck_assert_str_eq(a = first_line(cg.dirs[0], "cpu.max"), "50000 100000");
        ck_assert_str_eq(b = first_line(cg.dirs[0], "memory.max"), "67108864");
    } else { /* v1 */
        ck_assert_str_eq(a = first_line(cg.dirs[0], "cpu.cfs_quota_us"), "50000");
        ck_assert_str_eq(b = first_line(cg.dirs[1], "memory.limit_in_bytes"), "67108864");
    }
    free(a);
    free(b);
    /* Every task has a process limit, 4096 unless configured. */
    const char *pd = pids_dir(&cg);
    ck_assert_msg(pd != NULL, "no pids.max in the task's cgroups");
    ck_assert_str_eq(a = first_line(pd, "pids.max"), "4096");
    free(a);
    char *log = gpt_slurp(gpt_path(dir, "logs/w1.log"));
    ck_assert_ptr_nonnull(strstr(log, "CPU 500m, memory 64M, at most 4096 processes"));
    free(log);

    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    gpt_exited(ex, h);
    ck_assert_int_eq(gp_exec_reap(ex, h), 0);
    for (int i = 0; i < cg.ndirs; i++)
        ck_assert_msg(access(cg.dirs[i], F_OK) != 0, "%s is left after reap", cg.dirs[i]);
    remove_parents(ex);
    gpt_done(ex, dir);
}
END_TEST

/* A task's process limit was above the host's pid_max and no pids cgroup
 * was used: a fork loop could take every pid. With pids_max=16 the task's
 * forks beyond 16 processes fail, and its cgroup holds no more. */
START_TEST(test_process_limit) {
    const char *dir;
    char parent[64];
    gp_executor *ex = open_cg_with(&dir, "auto", parent, sizeof parent, ",pids_max=16");
    if (ex == NULL)
        return;
    char h[GP_HANDLE_MAX];
    /* dash ends at the first fork it cannot make ("Cannot fork"); the
     * sleeps it made stay in the cgroup. */
    gpt_launch_sh(ex, 4,
                  ": > ready; i=0; while [ $i -lt 40 ]; do sleep 60 & i=$((i+1)); done; "
                  "exec sleep 60",
                  dir, h);
    ck_assert(gpt_wait_file(gpt_path(dir, "ready")));
    char *log = NULL;
    for (int i = 0; i < 300; i++) {
        free(log);
        log = gpt_slurp(gpt_path(dir, "logs/w4.log"));
        if (log != NULL && strstr(log, "fork") != NULL)
            break;
        usleep(50 * 1000);
    }
    ck_assert_msg(log != NULL && strstr(log, "fork") != NULL, "no failed fork in the log: %s",
                  log ? log : "");
    ck_assert_msg(strstr(log, "at most 16 processes") != NULL, "log: %s", log);
    free(log);
    gpx__task_cg cg;
    ck_assert_int_eq(gpx__cg_load(&cg, gpt_path(dir, "state/w4.t0.a1/cgroup")), 0);
    const char *pd = pids_dir(&cg);
    ck_assert_msg(pd != NULL, "no pids.max in the task's cgroups");
    char *a = first_line(pd, "pids.max"), *b = first_line(pd, "pids.current");
    ck_assert_str_eq(a, "16");
    ck_assert_int_le(atoi(b), 16);
    free(a);
    free(b);
    gp_exec_stop(ex, h); /* the shell may have ended already: its sleeps have not */
    gpt_exited(ex, h);
    ck_assert_int_eq(gp_exec_reap(ex, h), 0);
    remove_parents(ex);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_signal_reaches_cgroup_members) {
    /* A process that left the task's process group is still in its cgroup,
     * so the checkpoint signal reaches it too. */
    const char *dir;
    char parent[64];
    gp_executor *ex = open_cg(&dir, "auto", parent, sizeof parent);
    if (ex == NULL)
        return;
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 2,
                  "setsid sh -c 'trap \"touch escaped-got-term; exit 0\" TERM; touch esc-ready; "
                  "while :; do sleep 0.05; done' & "
                  "trap 'i=0; while [ ! -e escaped-got-term ] && [ $i -lt 200 ]; do "
                  "sleep 0.05; i=$((i+1)); done; exit 0' TERM; while :; do sleep 0.05; done",
                  dir, h);
    ck_assert(gpt_wait_file(gpt_path(dir, "esc-ready")));
    ck_assert_int_eq(gp_exec_signal(ex, h, SIGTERM), 0);
    ck_assert(gpt_wait_file(gpt_path(dir, "escaped-got-term")));
    gpt_exited(ex, h);
    ck_assert_int_eq(gp_exec_reap(ex, h), 0);
    remove_parents(ex);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_no_cgroups) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL); /* cgroup=off */
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 3, "exit 0", dir, h);
    gpt_exited(ex, h);
    ck_assert_int_eq(access(gpt_path(dir, "state/w3.t0.a1/cgroup"), F_OK), -1);
    char *log = gpt_slurp(gpt_path(dir, "logs/w3.log"));
    ck_assert_ptr_nonnull(log);
    ck_assert_msg(strstr(log, "limits: no cgroup: cgroups are off"), "log: %s", log);
    free(log);
    gpt_done(ex, dir);
}
END_TEST

START_TEST(test_explicit_mode_that_is_missing) {
    /* Asking for the cgroup version this machine does not offer fails at
     * open with a reason, instead of silently running without limits. */
    const char *dir;
    char parent[64];
    gp_executor *ex = open_cg(&dir, "auto", parent, sizeof parent);
    if (ex == NULL)
        return;
    gp_executor_info d;
    ck_assert_int_eq(gp_exec_describe(ex, &d), 0);
    remove_parents(ex);
    gp_executor_close(ex);
    const char *other = strncmp(d.limits, "cgroup v1", 9) == 0 ? "v2" : "v1";
    char config[PATH_MAX + 100], err[GP_ERR_MAX] = "";
    snprintf(config, sizeof config, "state_dir=%s/state,nvml=off,cgroup=%s,cgroup_parent=%s", dir,
             other, parent);
    int rc = gp_executor_open("local", config, &ex, err, sizeof err);
    if (rc == 0) { /* the machine offers both */
        gp_executor_close(ex);
    } else {
        ck_assert_int_eq(rc, GP_ENOTSUP);
        ck_assert_msg(strncmp(err, "cgroup: ", 8) == 0, "err: %s", err);
    }
    gpt_rmrf(dir);
}
END_TEST

/* Puts this test process into a pids cgroup of its own (v1, or v2 under
 * the root with pids enabled), written to cg; -1 (and says why) where the
 * machine does not allow it. */
static int join_own_pids_cgroup(char *cg, size_t len) {
    char mnt[PATH_MAX - 64], pid[32];
    int v2 = gpx__cg_find_mount(0, "pids", mnt, sizeof mnt) < 0;
    if (v2 && (gpx__cg_find_mount(1, "pids", mnt, sizeof mnt) < 0 ||
               gpx__cg_write(mnt, "cgroup.subtree_control", "+pids") != 0)) {
        printf("# SKIP no pids cgroup controller to use here\n");
        return -1;
    }
    snprintf(cg, len, "%s/gpexec-fork-%d", mnt, (int)getpid());
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (mkdir(cg, 0755) < 0 || gpx__cg_write(cg, "cgroup.procs", pid) != 0) {
        printf("# SKIP cannot make and join a pids cgroup under %s\n", mnt);
        rmdir(cg);
        return -1;
    }
    return 0;
}

/* A launch whose fork failed for want of a process slot (this process's
 * pids cgroup full, as a user's or the host's limit would be) failed the
 * workload at once: GP_ESYS. It may pass: now launch says GP_EAGAIN,
 * leaves no state directory behind, and the same key launches once a slot
 * is free. With no slot the daemon's fork fails; with one, the
 * intermediate's fork of the supervisor. */
START_TEST(test_fork_without_a_slot_may_pass) {
    char cg[PATH_MAX];
    if (join_own_pids_cgroup(cg, sizeof cg) < 0)
        return;
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    for (int slots = 0; slots <= 1; slots++) {
        char *cur = first_line(cg, "pids.current"), max[32];
        snprintf(max, sizeof max, "%d", atoi(cur) + slots);
        free(cur);
        ck_assert_int_eq(gpx__cg_write(cg, "pids.max", max), 0);
        const char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
        gp_task_launch t;
        gpt_launch_init(&t, 10 + (uint64_t)slots, argv, dir);
        char h[GP_HANDLE_MAX] = "", err[GP_ERR_MAX] = "";
        int rc = gp_exec_launch(ex, &t, h, err, sizeof err);
        ck_assert_int_eq(gpx__cg_write(cg, "pids.max", "max"), 0);
        ck_assert_msg(rc == GP_EAGAIN, "%d slot(s): launch: %s (%s)", slots, gp_err_name(rc), err);
        ck_assert_msg(strstr(err, strerror(EAGAIN)) != NULL, "err: %s", err);
        char state[64];
        snprintf(state, sizeof state, "state/w%d.t0.a1", 10 + slots);
        ck_assert_msg(access(gpt_path(dir, state), F_OK) != 0, "%s was left behind", state);
        rc = gp_exec_launch(ex, &t, h, err, sizeof err);
        ck_assert_msg(rc == 0, "the launch again: %s (%s)", gp_err_name(rc), err);
        ck_assert_int_eq(gpt_exited(ex, h).exit_code, 3);
        ck_assert_int_eq(gp_exec_reap(ex, h), 0);
    }
    gpt_done(ex, dir);
    char parent[PATH_MAX], pid[32];
    snprintf(parent, sizeof parent, "%s", cg);
    *strrchr(parent, '/') = '\0';
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    gpx__cg_write(parent, "cgroup.procs", pid);
    ck_assert_msg(rmdir(cg) == 0, "cannot remove %s", cg);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_limits_applied);
    tcase_add_test(tc, test_signal_reaches_cgroup_members);
    tcase_add_test(tc, test_process_limit);
    tcase_add_test(tc, test_no_cgroups);
    tcase_add_test(tc, test_explicit_mode_that_is_missing);
    tcase_add_test(tc, test_fork_without_a_slot_may_pass);
}

GP_TEST_MAIN("executors/cgroup", add_tests)
