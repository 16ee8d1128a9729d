/*
 * test-pause.c — the local executor's pause and resume (pause.c) with real
 * processes, cgroup freezers and the fake driver's checkpoint API: a CUDA
 * workload (cuda-holder) that knows nothing of checkpoints is paused, its GPU
 * memory freed and used by another process, resumed on the same or another
 * GPU with its data intact, from the step where it stopped; a restore without
 * room leaves it paused; a task without CUDA is paused by the freezer alone;
 * a paused task can be stopped; and a pause or a resume cut short at each of
 * its steps (the process calling it ends there, as a kill -9 of the daemon
 * would) is finished by GP_EXEC_CTL_PAUSE_RECOVER.
 *
 * Needs cgroups with a freezer (root): skipped otherwise, with the reason.
 */
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"
#include "interpose/cuda_abi.h"

#define HELD_MIB 32

static char build[PATH_MAX / 2], ledger[64];
static void *fake; /* the fake libcuda, as the executor loads it */
static uint64_t (*used)(int gpu);
static CUresult (*f_init)(unsigned int);
static CUresult (*f_ctx)(CUcontext *, unsigned int, CUdevice);
static CUresult (*f_alloc)(CUdeviceptr *, size_t);
static CUresult (*f_free)(CUdeviceptr);

static void find_build(void) {
    ssize_t n = readlink("/proc/self/exe", build, sizeof build - 1);
    ck_assert_int_gt(n, 0);
    build[n] = '\0';
    *strrchr(build, '/') = '\0'; /* build/tests/executors */
}

/* Opens the executor with cgroups and the fake driver, or skips. */
static gp_executor *open_pausing(const char *dir, int *skip) {
    find_build();
    snprintf(ledger, sizeof ledger, "gpfake-pause-%d", (int)getpid());
    setenv("GPUPOOL_FAKE_LEDGER", ledger, 1);
    setenv("GPUPOOL_FAKE_GPUS", "2", 1);
    setenv("GPUPOOL_FAKE_GPU_MEMORY", "1G", 1);
    char extra[2 * PATH_MAX], lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/../../fake/libcuda.so.1", build);
    snprintf(extra, sizeof extra, "cgroup=auto,cuda=%s", lib);
    *skip = 0;
    if (geteuid() != 0) {
        *skip = 1;
        return NULL;
    }
    gp_executor *ex = gpt_open(dir, extra);
    gp_exec_pause p = {0};
    if (gp_exec_control(ex, GP_EXEC_CTL_PAUSE_SUPPORT, &p) != 0) {
        printf("# SKIP %s\n", p.detail);
        *skip = 2;
        gpt_done(ex, dir);
        return NULL;
    }
    fake = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(fake);
    *(void **)&used = dlsym(fake, "gpfake_used");
    *(void **)&f_init = dlsym(fake, "cuInit");
    *(void **)&f_ctx = dlsym(fake, "cuCtxCreate_v2");
    *(void **)&f_alloc = dlsym(fake, "cuMemAlloc_v2");
    *(void **)&f_free = dlsym(fake, "cuMemFree_v2");
    return ex;
}

static void done(gp_executor *ex, const char *dir) {
    gpt_done(ex, dir);
    char path[80];
    snprintf(path, sizeof path, "/dev/shm/%s", ledger);
    unlink(path);
}

#define OPEN_OR_SKIP(ex, dir)                                                                      \
    int skip_;                                                                                     \
    gp_executor *ex = open_pausing(dir, &skip_);                                                   \
    if (skip_ == 1)                                                                                \
        GP_TEST_SKIP("pausing needs cgroups, which need root");                                    \
    if (skip_ == 2)                                                                                \
        return;

static void launch_holder(gp_executor *ex, const char *dir, char h[GP_HANDLE_MAX]) {
    char prog[PATH_MAX], mib[16], state[PATH_MAX];
    snprintf(prog, sizeof prog, "%s/cuda-holder", build);
    snprintf(mib, sizeof mib, "%d", HELD_MIB);
    snprintf(state, sizeof state, "%s/state.txt", dir);
    const char *argv[] = {prog, ledger, "2", "1G", mib, state, NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_exec_launch(ex, &t, h, err, sizeof err) == 0, "launch: %s", err);
    ck_assert(gpt_wait_file(state));
}

/* The holder's last step, and whether its pattern was intact. */
static long holder_step(const char *dir, int *ok) {
    char *s = gpt_slurp(gpt_path(dir, "state.txt"));
    ck_assert_ptr_nonnull(s);
    long step = strtol(s, NULL, 10);
    *ok = strstr(s, " ok") != NULL;
    free(s);
    return step;
}

/* Waits until the holder has gone past step `after`; its pattern must hold. */
static void holder_goes_on(const char *dir, long after) {
    int ok = 0;
    long s = after;
    for (int i = 0; i < GPT_WAIT_MS / 10 && s <= after; i++) {
        usleep(10000);
        s = holder_step(dir, &ok);
    }
    ck_assert_msg(s > after, "the holder stayed at step %ld", s);
    ck_assert_msg(ok, "the holder's pattern did not survive (step %ld)", s);
}

/* A frozen holder counts no further (a bounded look). */
static long holder_frozen(const char *dir) {
    int ok;
    long s = holder_step(dir, &ok);
    usleep(300000);
    ck_assert_int_eq(holder_step(dir, &ok), s);
    return s;
}

/* This process takes bytes of GPU 0 (another workload); returns the pointer. */
static CUdeviceptr take_gpu(uint64_t bytes) {
    CUcontext c;
    CUdeviceptr d;
    ck_assert_int_eq(f_init(0), CUDA_SUCCESS);
    ck_assert_int_eq(f_ctx(&c, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(f_alloc(&d, bytes), CUDA_SUCCESS);
    return d;
}

static int ctl(gp_executor *ex, int op, const char *h, gp_exec_pause *p);

static void launch_and_pause(gp_executor *ex, const char *dir, char h[GP_HANDLE_MAX],
                             gp_exec_pause *p) {
    launch_holder(ex, dir, h);
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, p), 0);
    ck_assert_int_eq(p->paused, 1);
}

static void stop_and_done(gp_executor *ex, const char *dir, const char *h) {
    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    gpt_exited(ex, h);
    done(ex, dir);
}

static int ctl(gp_executor *ex, int op, const char *h, gp_exec_pause *p) {
    memset(p, 0, sizeof *p);
    p->handle = h;
    p->lock_timeout_ms = 5000;
    return gp_exec_control(ex, op, p);
}

START_TEST(test_pause_frees_gpu_and_keeps_data) {
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    launch_holder(ex, dir, h);
    ck_assert_uint_eq(used(0), (uint64_t)HELD_MIB << 20);
    gp_exec_pause p;
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
    ck_assert_int_eq(p.paused, 1);
    ck_assert_int_eq(p.cuda_procs, 1);
    ck_assert_msg(strstr(p.detail, "paused") != NULL, "%s", p.detail);
    ck_assert_uint_eq(used(0), 0);
    long at = holder_frozen(dir);
    /* Pausing again is a no-op; the task still counts as running. */
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
    ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).state, GP_TASK_RUNNING);

    /* Another workload fills the GPU, scribbles on it and leaves. */
    CUdeviceptr d = take_gpu(1ULL << 30);
    memset((void *)(uintptr_t)d, 0x5a, (size_t)HELD_MIB << 20);
    ck_assert_int_eq(f_free(d), CUDA_SUCCESS);

    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_RESUME, h, &p), 0);
    ck_assert_int_eq(p.paused, 0);
    ck_assert_msg(strstr(p.detail, "resumed") != NULL, "%s", p.detail);
    ck_assert_uint_eq(used(0), (uint64_t)HELD_MIB << 20);
    holder_goes_on(dir, at);
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_RESUME, h, &p), GP_ESTATE);
    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    gpt_exited(ex, h);
    done(ex, dir);
}
END_TEST

START_TEST(test_resume_on_other_gpu) {
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    gp_exec_pause p;
    launch_and_pause(ex, dir, h, &p);
    long at = holder_frozen(dir);
    const char *from[] = {"GPU-67706661-6b65-2d67-7075-2d3030303000"};
    const char *to[] = {"GPU-67706661-6b65-2d67-7075-2d3030303001"};
    const char *bad[] = {"GPU-not-a-uuid"};
    memset(&p, 0, sizeof p);
    p.handle = h;
    p.ngpus = 1;
    p.from_uuid = from;
    p.to_uuid = bad;
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_RESUME, &p), GP_EINVAL);
    ck_assert_msg(strstr(p.detail, "gpu 0") != NULL, "%s", p.detail);
    p.to_uuid = to;
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_RESUME, &p), 0);
    ck_assert_msg(strstr(p.detail, "other GPUs") != NULL, "%s", p.detail);
    ck_assert_uint_eq(used(0), 0);
    ck_assert_uint_eq(used(1), (uint64_t)HELD_MIB << 20);
    holder_goes_on(dir, at);
    stop_and_done(ex, dir, h);
}
END_TEST

START_TEST(test_restore_without_room_stays_paused) {
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    gp_exec_pause p;
    launch_and_pause(ex, dir, h, &p);
    CUdeviceptr d = take_gpu((1ULL << 30) - (1ULL << 20));
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_RESUME, h, &p), GP_ENOSPC);
    ck_assert_int_eq(p.paused, 1);
    ck_assert_msg(strstr(p.detail, "too little free GPU memory") != NULL, "%s", p.detail);
    long at = holder_frozen(dir);
    ck_assert_int_eq(f_free(d), CUDA_SUCCESS);
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_RESUME, h, &p), 0);
    holder_goes_on(dir, at);
    stop_and_done(ex, dir, h);
}
END_TEST

START_TEST(test_no_cuda_freezer_alone_and_stop) {
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    gpt_launch_sh(ex, 2,
                  "n=0; while :; do n=$((n+1)); echo \"$n ok\" > state.tmp; "
                  "mv state.tmp state.txt; sleep 0.02; done",
                  dir, h);
    ck_assert(gpt_wait_file(gpt_path(dir, "state.txt")));
    gp_exec_pause p;
    int rc = ctl(ex, GP_EXEC_CTL_PAUSE, h, &p);
    ck_assert_msg(rc == 0, "pause: %s (%s)", gp_err_name(rc), p.detail);
    ck_assert_int_eq(p.cuda_procs, 0);
    ck_assert_msg(strstr(p.detail, "freezer alone") != NULL, "%s", p.detail);
    long at = holder_frozen(dir);
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_RESUME, h, &p), 0);
    holder_goes_on(dir, at);
    /* A paused task can be stopped (the freezer lets SIGKILL through). */
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
    ck_assert_int_eq(gp_exec_stop(ex, h), 0);
    ck_assert_int_eq(gpt_exited(ex, h).term_signal, SIGKILL);
    done(ex, dir);
}
END_TEST

static int crash_at;
static void crash_hook(int s) {
    if (s == crash_at)
        _exit(9);
}

/* Runs op in a child that ends at step k, as a daemon killed there would. */
static void cut_short(gp_executor *ex, int op, const char *h, int k) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        crash_at = k;
        gpx__pause_step_hook = crash_hook;
        gp_exec_pause p;
        ctl(ex, op, h, &p);
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 9, "step %d was not reached", k);
}

START_TEST(test_crash_at_every_step) {
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    launch_holder(ex, dir, h);
    gp_exec_pause p;
    /* The driver is loaded before the children fork, as in a daemon that paused before. */
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_PAUSE_SUPPORT, &p), 0);
    static const int pause_steps[] = {1, 2, 3, 4}, resume_steps[] = {11, 12, 13};
    for (size_t i = 0; i < 4; i++) {
        cut_short(ex, GP_EXEC_CTL_PAUSE, h, pause_steps[i]);
        ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE_RECOVER, h, &p), 0);
        ck_assert_msg(p.paused == 1, "after pause step %d: %s", pause_steps[i], p.detail);
        ck_assert_uint_eq(used(0), 0);
        long at = holder_frozen(dir);
        ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_RESUME, h, &p), 0);
        holder_goes_on(dir, at);
    }
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
        long at = holder_frozen(dir);
        cut_short(ex, GP_EXEC_CTL_RESUME, h, resume_steps[i]);
        ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE_RECOVER, h, &p), 0);
        ck_assert_msg(p.paused == 0, "after resume step %d: %s", resume_steps[i], p.detail);
        ck_assert_uint_eq(used(0), (uint64_t)HELD_MIB << 20);
        holder_goes_on(dir, at);
    }
    /* Nothing under way: recovery finds it running. */
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE_RECOVER, h, &p), 0);
    ck_assert_int_eq(p.paused, 0);
    stop_and_done(ex, dir, h);
}
END_TEST

START_TEST(test_driver_too_old) {
    if (geteuid() != 0)
        GP_TEST_SKIP("pausing needs cgroups, which need root");
    const char *dir = gpt_tmpdir();
    find_build();
    setenv("GPUPOOL_FAKE_DRIVER_VERSION", "12040", 1);
    char extra[2 * PATH_MAX];
    snprintf(extra, sizeof extra, "cgroup=auto,cuda=%s/../../fake/libcuda.so.1", build);
    gp_executor *ex = gpt_open(dir, extra);
    gp_exec_pause p = {0};
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_PAUSE_SUPPORT, &p), GP_ENOTSUP);
    ck_assert_msg(strstr(p.detail, "too old") != NULL, "%s", p.detail);
    gpt_done(ex, dir);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_pause_frees_gpu_and_keeps_data);
    tcase_add_test(tc, test_resume_on_other_gpu);
    tcase_add_test(tc, test_restore_without_room_stays_paused);
    tcase_add_test(tc, test_no_cuda_freezer_alone_and_stop);
    tcase_add_test(tc, test_crash_at_every_step);
    tcase_add_test(tc, test_driver_too_old);
}

GP_TEST_MAIN("executors/pause", add_tests)
