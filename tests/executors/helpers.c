/*
 * helpers.c — the shared helpers of the executor tests (see helpers.h).
 */
#include "helpers.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gp_error.h"

static void nap_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

const char *gpt_tmpdir(void) {
    static char dir[PATH_MAX];
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gpexec-XXXXXX", base != NULL && base[0] ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void gpt_rmrf(const char *path) {
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *gpt_path(const char *dir, const char *name) {
    static char bufs[8][PATH_MAX];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, PATH_MAX, "%s/%s", dir, name);
    return b;
}

gp_executor *gpt_open(const char *dir, const char *extra) {
    char config[2 * PATH_MAX], err[GP_ERR_MAX] = "";
    snprintf(config, sizeof config,
             "state_dir=%s/state,nvml=off,cgroup=off,interposer=%s/no-interposer.so%s%s", dir, dir,
             extra != NULL ? "," : "", extra != NULL ? extra : "");
    gp_executor *ex = NULL;
    int rc = gp_executor_open("local", config, &ex, err, sizeof err);
    ck_assert_msg(rc == 0, "opening the local executor failed: %s (%s)", gp_err_name(rc), err);
    return ex;
}

void gpt_done(gp_executor *ex, const char *dir) {
    gp_executor_close(ex);
    gpt_rmrf(dir);
}

void gpt_launch_init(gp_task_launch *t, uint64_t w, const char *const *argv, const char *dir) {
    static char log[PATH_MAX], ckpt[PATH_MAX];
    memset(t, 0, sizeof *t);
    snprintf(log, sizeof log, "%s/logs/w%llu.log", dir, (unsigned long long)w);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt/w%llu", dir, (unsigned long long)w);
    t->workload = w;
    t->task = 0;
    t->attempt = 1;
    t->project = "test";
    t->user = "tester";
    t->argv = argv;
    t->workdir = dir;
    t->log_path = log;
    t->checkpoint_dir = ckpt;
    t->checkpoint_signal = SIGTERM;
}

void gpt_launch_sh(gp_executor *ex, uint64_t w, const char *script, const char *dir,
                   char handle[GP_HANDLE_MAX]) {
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    gp_task_launch t;
    gpt_launch_init(&t, w, argv, dir);
    char err[GP_ERR_MAX] = "";
    int rc = gp_exec_launch(ex, &t, handle, err, sizeof err);
    ck_assert_msg(rc == 0, "launch failed: %s (%s)", gp_err_name(rc), err);
    ck_assert_str_ne(handle, "");
}

gp_task_status gpt_wait(gp_executor *ex, const char *handle, gp_task_state want) {
    gp_task_status st;
    memset(&st, 0, sizeof st);
    snprintf(st.handle, sizeof st.handle, "%s", handle);
    for (int waited = 0;; waited += 20) {
        ck_assert_int_eq(gp_exec_poll(ex, &st, 1), 0);
        if (st.state == want || waited >= GPT_WAIT_MS)
            return st;
        nap_ms(20);
    }
}

gp_task_status gpt_exited(gp_executor *ex, const char *handle) {
    gp_task_status st = gpt_wait(ex, handle, GP_TASK_EXITED);
    ck_assert_msg(st.state == GP_TASK_EXITED, "task %s: state %d, not EXITED (%s)", handle,
                  (int)st.state, st.detail);
    return st;
}

int gpt_wait_file(const char *path) {
    for (int waited = 0; waited < GPT_WAIT_MS; waited += 20) {
        if (access(path, F_OK) == 0)
            return 1;
        nap_ms(20);
    }
    return access(path, F_OK) == 0;
}

char *gpt_slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        size_t r = fread(buf + n, 1, 4096, f);
        n += r;
        if (r == 0)
            break;
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

void gpt_spit(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

pid_t gpt_read_pid(const char *path) {
    ck_assert_msg(gpt_wait_file(path), "the task did not write %s", path);
    for (int waited = 0; waited < GPT_WAIT_MS; waited += 20) {
        char *s = gpt_slurp(path);
        long pid = s != NULL ? strtol(s, NULL, 10) : 0;
        free(s);
        if (pid > 0)
            return (pid_t)pid;
        nap_ms(20);
    }
    ck_abort_msg("no pid in %s", path);
    return -1;
}

/* The state letter of pid from /proc, or 0 if there is no such process. */
static char proc_state(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' ? p[2] : 0;
}

int gpt_wait_gone(pid_t pid) {
    for (int waited = 0; waited < GPT_WAIT_MS; waited += 20) {
        char s = proc_state(pid);
        if (s == 0 || s == 'Z' || s == 'X')
            return 1;
        nap_ms(20);
    }
    return 0;
}

/* The test programs are in <build>/tests/executors/, the fake driver in
 * <build>/fake/. */
void gpt_fake_nvml(char *out, size_t len) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    ck_assert_int_lt(snprintf(out, len, "%s/../../fake/libnvidia-ml.so.1", exe), (int)len);
    ck_assert_msg(access(out, R_OK) == 0, "%s is missing", out);
}

int gpt_open_in(const char *cg, const char *path) {
    char procs[PATH_MAX];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *f = fopen(procs, "w");
        if (f == NULL || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
            _exit(200);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        _exit(fd >= 0 ? 0 : errno);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 200, "cannot join %s", cg);
    return WEXITSTATUS(st);
}
