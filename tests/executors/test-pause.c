/*
 * test-pause.c — the local executor's pause and resume (pause.c) with real
 * processes, cgroup freezers and the fake driver's checkpoint API: a CUDA
 * workload (cuda-holder) that knows nothing of checkpoints is paused, its GPU
 * memory freed and used by another process, resumed on the same or another
 * GPU with its data intact, from the step where it stopped; a restore without
 * room leaves it paused; a task without CUDA is paused by the freezer alone;
 * a paused task can be stopped; and a pause or a resume cut short at each of
 * its steps (the process calling it ends there, as a kill -9 of the daemon
 * would) is finished by GP_EXEC_CTL_PAUSE_RECOVER. A resume onto other GPUs
 * moves what the task's binding touched at launch (its device rules, the
 * watchdog's record) before the restore, and back if the restore or the
 * thaw fails (the task stays paused, and the next resume is planned afresh); a
 * task on emulated GPUs resumes on any GPU of the node. A task the
 * compute-share throttle stopped is paused and resumed, and not stopped
 * again while it is being paused. A process that starts using CUDA while
 * the task is being paused undoes the pause; a task of more processes than
 * a pause can list is not paused. The interposer of a
 * process moved onto another GPU checks its charges against what the
 * driver says the task's other processes hold on that GPU, not the old one,
 * and paces a compute share by that GPU's utilisation.
 *
 * Needs cgroups with a freezer (root): skipped otherwise, with the reason.
 * Every task's cgroups are made under gpexec-pause-<pid of the runner>, and
 * the runner sweeps them (their processes killed), the fake driver's files
 * and the tests' directories after the last test, so that a test that fails
 * half-way (Check ends its process on the spot) leaves nothing behind.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_clock.h"
#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"
#include "interpose/cuda_abi.h"
#include "interpose/ledger-int.h"

#define HELD_MIB 32

static char build[PATH_MAX / 2], ledger[64];
static pid_t runner; /* the process that runs the tests (and sweeps after them) */
static char tmp_base[64];
static void *fake; /* the fake libcuda, as the executor loads it */
static uint64_t (*used)(int gpu);
static CUresult (*f_init)(unsigned int);
static CUresult (*f_ctx)(CUcontext *, unsigned int, CUdevice);
static CUresult (*f_alloc)(CUdeviceptr *, size_t);
static CUresult (*f_free)(CUdeviceptr);
static uint64_t (*busy_ns)(int gpu, int pid, int64_t from_ns, int64_t to_ns);

static void find_build(void) {
    ssize_t n = readlink("/proc/self/exe", build, sizeof build - 1);
    ck_assert_int_gt(n, 0);
    build[n] = '\0';
    *strrchr(build, '/') = '\0'; /* build/tests/executors */
}

/* Opens the executor with cgroups, the fake driver and more (NULL: none),
 * or skips. */
static gp_executor *open_with(const char *dir, const char *more, int *skip) {
    find_build();
    snprintf(ledger, sizeof ledger, "gpfake-pause-%d-%d", (int)runner, (int)getpid());
    setenv("GPUPOOL_FAKE_LEDGER", ledger, 1);
    setenv("GPUPOOL_FAKE_GPUS", "2", 1);
    setenv("GPUPOOL_FAKE_GPU_MEMORY", "1G", 1);
    char extra[3 * PATH_MAX], lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/../../fake/libcuda.so.1", build);
    snprintf(extra, sizeof extra, "cgroup=auto,cgroup_parent=gpexec-pause-%d,cuda=%s%s%s",
             (int)runner, lib, more != NULL ? "," : "", more != NULL ? more : "");
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
    *(void **)&busy_ns = dlsym(fake, "gpfake_busy_ns");
    return ex;
}

static void done(gp_executor *ex, const char *dir) {
    gpt_done(ex, dir);
    char path[80];
    snprintf(path, sizeof path, "/dev/shm/%s", ledger);
    unlink(path);
}

#define OPEN_OR_SKIP(ex, dir) OPEN_WITH_OR_SKIP(ex, dir, NULL)
#define OPEN_WITH_OR_SKIP(ex, dir, more)                                                           \
    int skip_;                                                                                     \
    gp_executor *ex = open_with(dir, more, &skip_);                                                \
    if (skip_ == 1)                                                                                \
        GP_TEST_SKIP("pausing needs cgroups, which need root");                                    \
    if (skip_ == 2)                                                                                \
        return;

/* Launches the holder on the GPUs of binding b on node (NULL: none given),
 * with a compute share of `share` percent (0: none). */
static void launch_holder_on(gp_executor *ex, const char *dir, char h[GP_HANDLE_MAX],
                             const gp_node_spec *node, const gp_task_binding *b, int share) {
    char prog[PATH_MAX], mib[16], state[PATH_MAX];
    snprintf(prog, sizeof prog, "%s/cuda-holder", build);
    snprintf(mib, sizeof mib, "%d", HELD_MIB);
    snprintf(state, sizeof state, "%s/state.txt", dir);
    const char *argv[] = {prog, ledger, "2", "1G", mib, state, NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    t.node = node;
    t.binding = b;
    t.compute_share = share;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_exec_launch(ex, &t, h, err, sizeof err) == 0, "launch: %s", err);
    ck_assert(gpt_wait_file(state));
}

static void launch_holder(gp_executor *ex, const char *dir, char h[GP_HANDLE_MAX]) {
    launch_holder_on(ex, dir, h, NULL, NULL, 0);
}

/* Launches `sh -c script` as a task (its processes the script's). */
static void launch_script(gp_executor *ex, const char *dir, const char *script,
                          char h[GP_HANDLE_MAX]) {
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_exec_launch(ex, &t, h, err, sizeof err) == 0, "launch: %s", err);
}

/* The last step of the holder whose state file is path, and whether its
 * pattern was intact. */
static long step_in(const char *path, int *ok) {
    char *s = gpt_slurp(path);
    ck_assert_ptr_nonnull(s);
    long step = strtol(s, NULL, 10);
    *ok = strstr(s, " ok") != NULL;
    free(s);
    return step;
}

static long holder_step(const char *dir, int *ok) {
    return step_in(gpt_path(dir, "state.txt"), ok);
}

/* Waits until the holder whose state file is path has gone past step
 * `after`; its pattern must hold. */
static void goes_on_in(const char *path, long after) {
    int ok = 0;
    long s = after;
    for (int i = 0; i < GPT_WAIT_MS / 10 && s <= after; i++) {
        usleep(10000);
        s = step_in(path, &ok);
    }
    ck_assert_msg(s > after, "the holder of %s stayed at step %ld", path, s);
    ck_assert_msg(ok, "the holder's pattern did not survive (step %ld)", s);
}

static void holder_goes_on(const char *dir, long after) {
    goes_on_in(gpt_path(dir, "state.txt"), after);
}

/* A frozen holder counts no further (a bounded look). */
static long holder_frozen(const char *dir) {
    int ok;
    long s = holder_step(dir, &ok);
    usleep(300000);
    ck_assert_int_eq(holder_step(dir, &ok), s);
    return s;
}

/* This process takes bytes of GPU gpu (another workload); returns the pointer. */
static CUdeviceptr take_gpu_on(int gpu, uint64_t bytes) {
    CUcontext c;
    CUdeviceptr d;
    ck_assert_int_eq(f_init(0), CUDA_SUCCESS);
    ck_assert_int_eq(f_ctx(&c, 0, gpu), CUDA_SUCCESS);
    ck_assert_int_eq(f_alloc(&d, bytes), CUDA_SUCCESS);
    return d;
}

static CUdeviceptr take_gpu(uint64_t bytes) {
    return take_gpu_on(0, bytes);
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

/* A resume of h from one GPU to another (the UUIDs in from[0], to[0]). */
static void one_gpu(gp_exec_pause *p, const char *h, const char **from, const char **to) {
    memset(p, 0, sizeof *p);
    p->handle = h;
    p->ngpus = 1;
    p->from_uuid = from;
    p->to_uuid = to;
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
    /* No NVML here: how much it held is not known. */
    ck_assert_msg(strstr(p.detail, "paused: an unknown amount of GPU memory of 1 process") != NULL,
                  "%s", p.detail);
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
    one_gpu(&p, h, from, bad);
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

/* A pause that fails at the checkpoint of one of a task's CUDA processes
 * undoes itself for them all: those already checkpointed are restored,
 * every one is unlocked, and each goes on with its data. */
START_TEST(test_failed_checkpoint_of_several_is_undone) {
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char script[4 * PATH_MAX], state[3][PATH_MAX];
    int n = snprintf(script, sizeof script,
                     "for s in a b c; do \"%s/cuda-holder\" %s 2 1G %d "
                     "\"%s/$s.txt\" & done; wait",
                     build, ledger, HELD_MIB, dir);
    ck_assert(n > 0 && (size_t)n < sizeof script);
    char h[GP_HANDLE_MAX];
    launch_script(ex, dir, script, h);
    for (int i = 0; i < 3; i++) {
        snprintf(state[i], sizeof state[i], "%s/%c.txt", dir, 'a' + i);
        ck_assert(gpt_wait_file(state[i]));
    }
    void (*fail_after)(int);
    *(void **)&fail_after = dlsym(fake, "gpfake_fail_checkpoint_after");
    ck_assert_ptr_nonnull(fail_after);
    fail_after(1); /* the second process's checkpoint */
    gp_exec_pause p;
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), GP_EIO);
    ck_assert_int_eq(p.paused, 0);
    ck_assert_msg(strstr(p.detail, "the CUDA checkpoint of process") != NULL, "%s", p.detail);
    fail_after(-1);
    for (int i = 0; i < 3; i++) {
        int ok;
        goes_on_in(state[i], step_in(state[i], &ok));
    }
    ck_assert_uint_eq(used(0), (uint64_t)3 * HELD_MIB << 20);
    stop_and_done(ex, dir, h);
}
END_TEST

/* Launches `sh -c script` in dir (workload 2), waits for the file it writes
 * once it is under way and pauses it: the pause's code, its answer in *p. */
static int launch_sh_and_pause(gp_executor *ex, const char *dir, char h[GP_HANDLE_MAX],
                               const char *script, const char *file, gp_exec_pause *p) {
    gpt_launch_sh(ex, 2, script, dir, h);
    ck_assert(gpt_wait_file(gpt_path(dir, file)));
    return ctl(ex, GP_EXEC_CTL_PAUSE, h, p);
}

START_TEST(test_no_cuda_freezer_alone_and_stop) {
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    gp_exec_pause p;
    int rc = launch_sh_and_pause(ex, dir, h,
                                 "n=0; while :; do n=$((n+1)); echo \"$n ok\" > state.tmp; "
                                 "mv state.tmp state.txt; sleep 0.02; done",
                                 "state.txt", &p);
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

/* Runs op with the request req (NULL: a plain one for h) in a child that
 * ends at step k, as a daemon killed there would. */
static void cut_short_req(gp_executor *ex, int op, const char *h, const gp_exec_pause *req, int k) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        crash_at = k;
        gpx__pause_step_hook = crash_hook;
        gp_exec_pause p;
        if (req != NULL) {
            p = *req;
            gp_exec_control(ex, op, &p);
        } else {
            ctl(ex, op, h, &p);
        }
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 9, "step %d was not reached", k);
}

static void cut_short(gp_executor *ex, int op, const char *h, int k) {
    cut_short_req(ex, op, h, NULL, k);
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

/* ---- a resume onto other GPUs -------------------------------------------------- */

/* Character devices 195:0 and 195:1 (what /dev/nvidia0 and 1 are) in dir:
 * opening one fails with EPERM where the task's device rules deny it, with
 * ENXIO (no driver behind it) where they allow it. */
static void make_gpu_nodes(const char *dir) {
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/nvidia%d", dir, i);
        ck_assert_msg(mknod(path, S_IFCHR | 0666, makedev(195, (unsigned)i)) == 0, "mknod %s: %s",
                      path, strerror(errno));
    }
}

/* The task's directory in the v1 devices tree (its cgroup file), or "". */
static void devices_cg(const char *dir, char *out, size_t len) {
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/state/w1.t0.a1/cgroup", dir);
    char *text = gpt_slurp(file), *save = NULL;
    ck_assert_ptr_nonnull(text);
    out[0] = '\0';
    for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save))
        if (strstr(l, "/devices/") != NULL)
            snprintf(out, len, "%s", l);
    free(text);
}

/* The task may open GPU `given` and not the other one (of 0 and 1). */
static void only_gpu(const char *cg, const char *dir, int given) {
    if (cg[0] == '\0')
        return; /* no v1 devices cgroup here: said by the caller */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nvidia%d", dir, given);
    int e = gpt_open_in(cg, path);
    ck_assert_msg(e != EPERM, "GPU %d, given, is denied", given);
    snprintf(path, sizeof path, "%s/nvidia%d", dir, 1 - given);
    e = gpt_open_in(cg, path);
    ck_assert_msg(e == EPERM, "GPU %d, not given, opens (%s)", 1 - given, strerror(e));
}

/* The text of the task's file name (its state directory), or "". */
static char *task_file(const char *dir, const char *name) {
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/state/w1.t0.a1/%s", dir, name);
    char *text = gpt_slurp(file);
    return text != NULL ? text : strdup("");
}

/* The watchdog's record and the binding name the GPU at position gpu of the
 * node (the fake NVML's index is the position), with its whole memory. */
static void recorded_on(const char *dir, int gpu, const char *mem) {
    char want[64];
    snprintf(want, sizeof want, "gpu=%d %s\n", gpu, mem);
    char *wd = task_file(dir, "gpus"), *b = task_file(dir, "binding");
    const char *first = strstr(wd, "gpu=");
    ck_assert_msg(first != NULL && strcmp(first, want) == 0,
                  "the watchdog's record is '%s', not on GPU %d alone", wd, gpu);
    snprintf(want, sizeof want, "gpu=%d ", gpu);
    ck_assert_msg(strncmp(b, want, strlen(want)) == 0, "the binding is '%s', not GPU %d", b, gpu);
    free(wd);
    free(b);
}

/* NVML's "GPU-xxxxxxxx-xxxx-..." as 16 bytes. */
static void uuid_of(const char *text, uint8_t out[16]) {
    int n = 0;
    for (const char *p = text + 4; *p != '\0' && n < 16; p++)
        if (*p != '-') {
            unsigned v;
            ck_assert_int_eq(sscanf(p, "%2x", &v), 1);
            out[n++] = (uint8_t)v;
            p++;
        }
    ck_assert_int_eq(n, 16);
}

/* The node the executor reports (one). */
static gp_node_spec *node_of(gp_executor *ex) {
    gp_node_spec *node = calloc(1, sizeof *node);
    ck_assert_ptr_nonnull(node);
    size_t n = 0;
    int emulated = 0;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_exec_inventory(ex, node, 1, &n, &emulated, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(node->ngpus, 2);
    return node;
}

/* The slice ledger of task w1.t0.a1 under its name, as the interposer
 * inside the task makes it, with a row for the GPU of NVML UUID `uuid`
 * holding 1 MiB. */
static gp_ledger *slice_ledger(const char *dir, const char *uuid) {
    char *inst = task_file(dir, "../instance"), name[96], err[256] = "";
    inst[strcspn(inst, "\n")] = '\0';
    snprintf(name, sizeof name, "%s-w1-t0-a1", inst);
    free(inst);
    gp_ledger *l = NULL;
    ck_assert_msg(gp_ledger_open(name, GP_LEDGER_WRITE | GP_LEDGER_CREATE, &l, err) == 0, "%s",
                  err);
    uint8_t row[16];
    uuid_of(uuid, row);
    int dev = gps__ledger_device(l, row, 1ULL << 30, 0);
    ck_assert_int_eq(dev, 0);
    ck_assert_int_eq(gps__ledger_charge(l, dev, 1ULL << 20, UINT64_MAX), 0);
    return l;
}

/* The ledger's one row is the GPU of NVML UUID `uuid`, with its cap and use. */
static void books_on(gp_ledger *l, const char *uuid) {
    gp_ledger_device_usage u[GP_LEDGER_MAX_DEVICES];
    uint8_t want[16];
    uuid_of(uuid, want);
    ck_assert_int_eq(gp_ledger_usage(l, u, GP_LEDGER_MAX_DEVICES), 1);
    ck_assert_msg(memcmp(u[0].uuid, want, 16) == 0, "the slice's books are not under %s", uuid);
    ck_assert_uint_eq(u[0].cap, 1ULL << 30);
    ck_assert_uint_eq(u[0].used, 1ULL << 20);
}

/* A fresh directory, the executor opened with the fake NVML (which knows
 * the GPUs: their device files 195:0 and 195:1 and the UUIDs the driver
 * remaps) or the test skipped, the node, and the holder launched on the
 * whole of GPU 0 with a compute share of `share` percent (handle h, its v1
 * devices cgroup in cg, or ""). */
#define LAUNCH_ON_GPU0_OR_SKIP(ex, dir, node, h, cg, share)                                        \
    const char *dir = gpt_tmpdir();                                                                \
    char more_[PATH_MAX + 16], nvml_[PATH_MAX];                                                    \
    gpt_fake_nvml(nvml_, sizeof nvml_);                                                            \
    snprintf(more_, sizeof more_, "nvml=%s", nvml_);                                               \
    OPEN_WITH_OR_SKIP(ex, dir, more_);                                                             \
    gp_node_spec *node = node_of(ex);                                                              \
    gp_task_binding b_ = {.node = node->name, .nslices = 1};                                       \
    b_.slices[0] = (gp_slice){.gpu = 0, .milli = 1000, .mem = 0, .mig_slot = -1};                  \
    char h[GP_HANDLE_MAX], cg[PATH_MAX];                                                           \
    launch_holder_on(ex, dir, h, node, &b_, share);                                                \
    make_gpu_nodes(dir);                                                                           \
    devices_cg(dir, cg, sizeof cg);                                                                \
    if (cg[0] == '\0')                                                                             \
    printf("# no devices cgroup v1 here: the device rules are not checked\n")

START_TEST(test_resume_elsewhere_moves_the_binding) {
    LAUNCH_ON_GPU0_OR_SKIP(ex, dir, node, h, cg, 0);
    only_gpu(cg, dir, 0);
    recorded_on(dir, 0, "1073741824");
    gp_ledger *books = slice_ledger(dir, node->gpus[0].uuid);
    gp_exec_pause p;
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
    long at = holder_frozen(dir);

    /* GPU 1 is full: the restore fails, the task stays paused on GPU 0 with
     * its rules and records as they were. */
    const char *from[] = {node->gpus[0].uuid}, *to[] = {node->gpus[1].uuid};
    CUdeviceptr d = take_gpu_on(1, (1ULL << 30) - (1ULL << 20));
    one_gpu(&p, h, from, to);
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_RESUME, &p), GP_ENOSPC);
    ck_assert_int_eq(p.paused, 1);
    only_gpu(cg, dir, 0);
    recorded_on(dir, 0, "1073741824");
    books_on(books, node->gpus[0].uuid);
    ck_assert_int_eq(holder_frozen(dir), at);

    /* Room on GPU 1; the resume is cut short once the rules have moved and
     * the task is thawed, and recovery finishes it there. */
    ck_assert_int_eq(f_free(d), CUDA_SUCCESS);
    one_gpu(&p, h, from, to);
    cut_short_req(ex, GP_EXEC_CTL_RESUME, h, &p, 12);
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE_RECOVER, h, &p), 0);
    ck_assert_msg(p.paused == 0, "%s", p.detail);
    ck_assert_uint_eq(used(0), 0);
    ck_assert_uint_eq(used(1), (uint64_t)HELD_MIB << 20);
    only_gpu(cg, dir, 1);
    recorded_on(dir, 1, "1073741824");
    /* The slice's books moved with it: a process started now books on GPU 1
     * into the same row, under the same cap. */
    books_on(books, node->gpus[1].uuid);
    gps__ledger_release(books, 0, 1ULL << 20);
    gp_ledger_close(books);
    holder_goes_on(dir, at);
    /* The watchdog judges it on GPU 1 now: polls leave it running. */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(gpt_wait(ex, h, GP_TASK_RUNNING).state, GP_TASK_RUNNING);
    char *why = task_file(dir, "watchdog");
    ck_assert_msg(why[0] == '\0', "the watchdog stopped it: %s", why);
    free(why);
    holder_goes_on(dir, at);
    free(node);
    stop_and_done(ex, dir, h);
}
END_TEST

/* Freezes (on 1) or thaws the cgroups just above the task's own, which hold
 * it frozen whatever its own freezer is told: a thaw of the task then fails. */
static void freeze_above(const char *dir, int on) {
    char *text = task_file(dir, "cgroup"), *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
        char path[PATH_MAX];
        if (strrchr(l, '/') == NULL)
            continue;
        *strrchr(l, '/') = '\0';
        snprintf(path, sizeof path, "%s/freezer.state", l);
        if (access(path, F_OK) == 0)
            gpt_spit(path, on ? "FROZEN" : "THAWED");
        snprintf(path, sizeof path, "%s/cgroup.freeze", l);
        if (access(path, F_OK) == 0)
            gpt_spit(path, on ? "1" : "0");
    }
    free(text);
}

static const char *frozen_above_dir;
static void freeze_above_hook(int s) {
    if (s == 11)
        freeze_above(frozen_above_dir, 1);
}

START_TEST(test_failed_thaw_stays_paused_on_the_old_gpus) {
    /* A resume onto GPU 1 whose thaw fails (the cgroup above the task's is
     * frozen) leaves the task paused on GPU 0, its rules and records back
     * there, and its journal paused: the next resume, with other GPUs or
     * none, is planned afresh and not restored onto GPU 1. */
    LAUNCH_ON_GPU0_OR_SKIP(ex, dir, node, h, cg, 0);
    gp_exec_pause p;
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
    long at = holder_frozen(dir);

    const char *from[] = {node->gpus[0].uuid}, *to[] = {node->gpus[1].uuid};
    one_gpu(&p, h, from, to);
    frozen_above_dir = dir;
    gpx__pause_step_hook = freeze_above_hook;
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_RESUME, &p), GP_EIO);
    gpx__pause_step_hook = NULL;
    ck_assert_int_eq(p.paused, 1);
    ck_assert_msg(strstr(p.detail, "thaw") != NULL, "%s", p.detail);
    only_gpu(cg, dir, 0);
    recorded_on(dir, 0, "1073741824");
    char *journal = task_file(dir, "pause");
    ck_assert_msg(strstr(journal, "state=paused\n") != NULL, "the journal: %s", journal);
    free(journal);

    freeze_above(dir, 0);
    ck_assert_int_eq(holder_frozen(dir), at);
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_RESUME, h, &p), 0);
    ck_assert_msg(strstr(p.detail, "other GPUs") == NULL, "%s", p.detail);
    ck_assert_uint_eq(used(0), (uint64_t)HELD_MIB << 20);
    ck_assert_uint_eq(used(1), 0);
    only_gpu(cg, dir, 0);
    recorded_on(dir, 0, "1073741824");
    holder_goes_on(dir, at);
    free(node);
    stop_and_done(ex, dir, h);
}
END_TEST

/* ---- a task the compute-share throttle stopped --------------------------------- */

static gp_executor *polled_ex;
static const char *polled_h;

/* A poll of the task once it is locked and before it is checkpointed. */
static void poll_hook(int s) {
    if (s == 2)
        gpt_wait(polled_ex, polled_h, GP_TASK_RUNNING);
}

/* Runs op on h in a child, as the daemon's pause worker does, and waits at
 * most secs for its answer: its code with *p filled, or 1 if none came (the
 * child is killed). For a step the driver gives no timeout (a restore). */
static int ctl_within(gp_executor *ex, int op, const char *h, gp_exec_pause *p, int secs) {
    struct {
        int rc;
        gp_exec_pause p;
    } out;
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        out.rc = ctl(ex, op, h, &out.p);
        _exit(write(fds[1], &out, sizeof out) == (ssize_t)sizeof out ? 0 : 1);
    }
    close(fds[1]);
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    size_t got = 0;
    for (ssize_t n = 1; n > 0 && got < sizeof out && poll(&pfd, 1, secs * 1000) == 1;
         got += (size_t)n)
        if ((n = read(fds[0], (char *)&out + got, sizeof out - got)) <= 0)
            n = 0;
    if (got < sizeof out)
        kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fds[0]);
    if (got < sizeof out)
        return 1;
    *p = out.p;
    return out.rc;
}

/* Sends SIGCONT to every process of the task's cgroups, as any process of
 * the task's user may. */
static void cont_all(const char *dir) {
    char *text = task_file(dir, "cgroup"), *save = NULL, procs[PATH_MAX];
    for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
        snprintf(procs, sizeof procs, "%s/cgroup.procs", l);
        char *pids = gpt_slurp(procs), *psave = NULL;
        for (char *q = pids != NULL ? strtok_r(pids, "\n", &psave) : NULL; q != NULL;
             q = strtok_r(NULL, "\n", &psave))
            kill((pid_t)atoi(q), SIGCONT);
        free(pids);
    }
    free(text);
}

/* Writes a debt of 100 s of GPU time, as a loop beyond its share runs up,
 * and polls: the task is held. */
static void in_debt(gp_executor *ex, const char *dir, const char *h) {
    char text[128], file[PATH_MAX];
    snprintf(text, sizeof text, "debt_ms=100000\nat_ms=%lld\nstopped=0\noff=0\n",
             (long long)gp_clock_ms(CLOCK_REALTIME) - 100);
    snprintf(file, sizeof file, "%s/state/w1.t0.a1/throttle", dir);
    gpt_spit(file, text);
    gpt_wait(ex, h, GP_TASK_RUNNING);
    char *th = task_file(dir, "throttle");
    ck_assert_msg(strstr(th, "stopped=1") != NULL, "the throttle did not stop it: %s", th);
    free(th);
}

START_TEST(test_pause_of_a_throttled_task) {
    /* The compute-share throttle froze the task: a pause thaws it before
     * the CUDA lock, which a thread inside it answers, and a poll while it
     * is being paused (locked, not yet checkpointed) does not stop it
     * again, so that its checkpoint, also answered inside it, runs. The pause waited on a lock that
     * a stopped task never answers (the real driver, with its timeout, says it did not answer, and
     * the daemon evicted it). */
    LAUNCH_ON_GPU0_OR_SKIP(ex, dir, node, h, cg, 25);
    in_debt(ex, dir, h);
    /* Its user cannot undo the throttle: the task is frozen, not stopped
     * (it went on when sent SIGCONT before). */
    cont_all(dir);
    long at = holder_frozen(dir);

    polled_ex = ex;
    polled_h = h;
    gpx__pause_step_hook = poll_hook;
    gp_exec_pause p;
    int rc = ctl(ex, GP_EXEC_CTL_PAUSE, h, &p);
    gpx__pause_step_hook = NULL;
    ck_assert_msg(rc == 0 && p.paused == 1, "pause: %s (%s)", gp_err_name(rc), p.detail);
    ck_assert_uint_eq(used(0), 0);
    rc = ctl_within(ex, GP_EXEC_CTL_RESUME, h, &p, 20);
    ck_assert_msg(rc != 1, "the resume did not answer in 20 s: the task was stopped again");
    ck_assert_msg(rc == 0 && p.paused == 0, "resume: %s (%s)", gp_err_name(rc), p.detail);
    ck_assert_uint_eq(used(0), (uint64_t)HELD_MIB << 20);
    holder_goes_on(dir, at);
    only_gpu(cg, dir, 0);
    /* The throttle is in charge again: a new debt holds the task, and a
     * stop ends it while it is held. */
    char *th = task_file(dir, "throttle");
    ck_assert_msg(strstr(th, "off=0") != NULL, "the resume turned the throttle off: %s", th);
    free(th);
    in_debt(ex, dir, h);
    cont_all(dir);
    holder_frozen(dir);
    free(node);
    stop_and_done(ex, dir, h);
}
END_TEST

START_TEST(test_throttled_task_across_a_restart) {
    /* A task the throttle holds when the daemon stops is no paused task to
     * the next one (its journal says so, not its freezer), and stays held
     * while in debt; a daemon that cannot measure it lets it go (it stayed
     * stopped for ever before). */
    LAUNCH_ON_GPU0_OR_SKIP(ex, dir, node, h, cg, 25);
    in_debt(ex, dir, h);
    long at = holder_frozen(dir);
    gp_executor_close(ex);
    int skip;
    ex = open_with(dir, more_, &skip);
    gp_exec_pause p;
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE_RECOVER, h, &p), 0);
    ck_assert_int_eq(p.paused, 0);
    gpt_wait(ex, h, GP_TASK_RUNNING);
    ck_assert_int_eq(holder_frozen(dir), at);
    gp_executor_close(ex);
    ex = open_with(dir, NULL, &skip); /* no NVML */
    gpt_wait(ex, h, GP_TASK_RUNNING);
    holder_goes_on(dir, at);
    free(node);
    stop_and_done(ex, dir, h);
}
END_TEST

/* ---- a process that starts CUDA during a pause ---------------------------------- */

static const char *late_dir;

/* Once the task's processes are locked: a holder starts in the task's
 * cgroups (late.txt its state), as a process the task forks would. */
static void late_holder_hook(int s) {
    if (s != 2)
        return;
    char state[PATH_MAX];
    snprintf(state, sizeof state, "%s/late.txt", late_dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *text = task_file(late_dir, "cgroup"), *save = NULL, procs[PATH_MAX], prog[PATH_MAX],
             mib[16];
        for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
            snprintf(procs, sizeof procs, "%s/cgroup.procs", l);
            gpt_spit(procs, "0");
        }
        snprintf(prog, sizeof prog, "%s/cuda-holder", build);
        snprintf(mib, sizeof mib, "%d", HELD_MIB);
        execl(prog, prog, ledger, "2", "1G", mib, state, (char *)NULL);
        _exit(127);
    }
    ck_assert(gpt_wait_file(state));
}

/* Pauses h with hook (given late_dir = dir) called at each step, a pause
 * that is undone: GP_EIO, not paused, p's detail saying why. */
static void pause_undone_with(gp_executor *ex, const char *dir, const char *h, void (*hook)(int),
                              gp_exec_pause *p) {
    late_dir = dir;
    gpx__pause_step_hook = hook;
    int rc = ctl(ex, GP_EXEC_CTL_PAUSE, h, p);
    gpx__pause_step_hook = NULL;
    ck_assert_msg(rc == GP_EIO, "pause: %s (%s)", gp_err_name(rc), p->detail);
    ck_assert_int_eq(p->paused, 0);
}

START_TEST(test_cuda_started_during_the_pause_undoes_it) {
    /* A process that starts using CUDA after the pause listed the task's
     * processes would be frozen with its GPU memory held: the pause looks
     * again once the task is frozen and is undone, and both go on. */
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    launch_holder(ex, dir, h);
    gp_exec_pause p;
    pause_undone_with(ex, dir, h, late_holder_hook, &p);
    ck_assert_msg(strstr(p.detail, "started using CUDA during the pause") != NULL, "%s", p.detail);
    char *journal = task_file(dir, "pause");
    ck_assert_msg(journal[0] == '\0', "the journal stayed: %s", journal);
    free(journal);
    holder_goes_on(dir, holder_step(dir, &(int){0}));
    char late[PATH_MAX];
    snprintf(late, sizeof late, "%s/late.txt", dir);
    int ok;
    goes_on_in(late, step_in(late, &ok));
    ck_assert_uint_eq(used(0), (uint64_t)2 * HELD_MIB << 20);
    stop_and_done(ex, dir, h);
}
END_TEST

/* Once the task's processes are locked: the task's waiting shell, listed
 * before the pause without CUDA, is told to become a holder (late.txt). */
static void go_hook(int s) {
    if (s != 2)
        return;
    char go[PATH_MAX], state[PATH_MAX];
    snprintf(go, sizeof go, "%s/go", late_dir);
    snprintf(state, sizeof state, "%s/late.txt", late_dir);
    gpt_spit(go, "1");
    ck_assert(gpt_wait_file(state));
}

START_TEST(test_cuda_started_by_a_listed_process_undoes_it) {
    /* A process the task had before the pause, without CUDA then, that
     * starts using it while the others are locked is not one the pause
     * checkpointed: it is looked at too, and the pause is undone. */
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char script[4 * PATH_MAX], state[PATH_MAX], late[PATH_MAX];
    snprintf(state, sizeof state, "%s/state.txt", dir);
    snprintf(late, sizeof late, "%s/late.txt", dir);
    int n = snprintf(script, sizeof script,
                     "\"%s/cuda-holder\" %s 2 1G %d \"%s\" & while [ ! -f \"%s/go\" ]; do "
                     "sleep 0.05; done; exec \"%s/cuda-holder\" %s 2 1G %d \"%s\"",
                     build, ledger, HELD_MIB, state, dir, build, ledger, HELD_MIB, late);
    ck_assert(n > 0 && (size_t)n < sizeof script);
    char h[GP_HANDLE_MAX];
    launch_script(ex, dir, script, h);
    ck_assert(gpt_wait_file(state));
    gp_exec_pause p;
    pause_undone_with(ex, dir, h, go_hook, &p);
    int ok;
    goes_on_in(state, step_in(state, &ok));
    goes_on_in(late, step_in(late, &ok));
    stop_and_done(ex, dir, h);
}
END_TEST

/* 1 if the task's freezer says it is frozen. */
static int task_frozen(const char *dir) {
    char *text = task_file(dir, "cgroup"), *save = NULL, path[PATH_MAX];
    int frozen = 0;
    for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
        snprintf(path, sizeof path, "%s/freezer.state", l);
        char *st = gpt_slurp(path);
        frozen |= st != NULL && strncmp(st, "FROZEN", 6) == 0;
        free(st);
        snprintf(path, sizeof path, "%s/cgroup.events", l);
        st = gpt_slurp(path);
        frozen |= st != NULL && strstr(st, "frozen 1") != NULL;
        free(st);
    }
    free(text);
    return frozen;
}

START_TEST(test_too_many_processes_not_paused) {
    /* A task of more processes than a pause lists: one of those left out
     * could hold GPU memory, frozen. The pause is refused, in words, and
     * the task runs on. */
    const char *dir = gpt_tmpdir();
    OPEN_OR_SKIP(ex, dir);
    char h[GP_HANDLE_MAX];
    gp_exec_pause p;
    int rc = launch_sh_and_pause(
        ex, dir, h,
        "i=0; while [ $i -lt 300 ]; do sleep 600 & i=$((i+1)); done; echo up > up.txt; "
        "wait",
        "up.txt", &p);
    ck_assert_msg(rc == GP_ENOTSUP, "pause: %s (%s)", gp_err_name(rc), p.detail);
    ck_assert_int_eq(p.paused, 0);
    ck_assert_msg(strstr(p.detail, "more than 256 processes") != NULL, "%s", p.detail);
    ck_assert(!task_frozen(dir));
    char *journal = task_file(dir, "pause");
    ck_assert_msg(journal[0] == '\0', "the journal stayed: %s", journal);
    free(journal);
    stop_and_done(ex, dir, h);
}
END_TEST

START_TEST(test_emulated_resumes_on_any_gpu) {
    /* Emulated GPUs have UUIDs no driver knows; a task on them is paused by
     * the freezer alone and resumes on whichever GPU the engine gives. */
    const char *dir = gpt_tmpdir();
    char conf[PATH_MAX], text[2 * PATH_MAX + 64], more[PATH_MAX + 16];
    make_gpu_nodes(dir);
    snprintf(conf, sizeof conf, "%s/gpus.conf", dir);
    snprintf(text, sizeof text, "gpu = H100 80G 2 dev=%s/nvidia0,%s/nvidia1\n", dir, dir);
    gpt_spit(conf, text);
    snprintf(more, sizeof more, "inventory=%s", conf);
    OPEN_WITH_OR_SKIP(ex, dir, more);
    gp_node_spec *node = node_of(ex);
    gp_task_binding b = {.node = node->name, .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 0, .milli = 1000, .mem = 0, .mig_slot = -1};
    const char *argv[] = {"/bin/sh", "-c",
                          "n=0; while :; do n=$((n+1)); echo \"$n ok\" > state.tmp; "
                          "mv state.tmp state.txt; sleep 0.02; done",
                          NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    t.node = node;
    t.binding = &b;
    char h[GP_HANDLE_MAX], cg[PATH_MAX], err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_exec_launch(ex, &t, h, err, sizeof err) == 0, "launch: %s", err);
    ck_assert(gpt_wait_file(gpt_path(dir, "state.txt")));
    devices_cg(dir, cg, sizeof cg);
    only_gpu(cg, dir, 0);
    gp_exec_pause p;
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
    ck_assert_msg(strstr(p.detail, "freezer alone") != NULL, "%s", p.detail);
    long at = holder_frozen(dir);
    const char *from[] = {node->gpus[0].uuid}, *to[] = {node->gpus[1].uuid};
    const char *elsewhere[] = {"GPU-emulated-othernode-1"};
    one_gpu(&p, h, from, elsewhere);
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_RESUME, &p), GP_EINVAL);
    ck_assert_msg(strstr(p.detail, "gpu 0") != NULL, "%s", p.detail);
    p.to_uuid = to;
    int rc = gp_exec_control(ex, GP_EXEC_CTL_RESUME, &p);
    ck_assert_msg(rc == 0, "resume: %s (%s)", gp_err_name(rc), p.detail);
    ck_assert_int_eq(p.paused, 0);
    only_gpu(cg, dir, 1);
    char *bound = task_file(dir, "binding");
    ck_assert_msg(strncmp(bound, "gpu=1 ", 6) == 0, "binding: %s", bound);
    free(bound);
    holder_goes_on(dir, at);
    free(node);
    stop_and_done(ex, dir, h);
}
END_TEST

/* What the slice lets holder B allocate now: it is asked through the file
 * `ask` and answers in ask.out ("ok", "oom"). */
static char *ask_holder(const char *dir) {
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/ask.out", dir);
    unlink(out);
    gpt_spit(gpt_path(dir, "ask"), "");
    ck_assert_msg(gpt_wait_file(out), "the holder did not answer");
    char *s = gpt_slurp(out);
    ck_assert_ptr_nonnull(s);
    s[strcspn(s, "\n")] = '\0';
    return s;
}

/* The executor's configuration for slices run by the interposer, with the
 * fake NVML (whose path goes into nvml) for the GPUs' UUIDs. */
static void sliced_config(char *more, size_t len, char *nvml, size_t nvml_len) {
    gpt_fake_nvml(nvml, nvml_len);
    find_build();
    snprintf(more, len, "nvml=%s,interposer=%s/../../libgpuslice.so", nvml, build);
}

/* A fresh directory, the executor opened for slices run by the interposer
 * (or the test skipped), the fake NVML's path, the node and a handle. */
/* A sanitizer build's interposer is not preloadable: its slices' tests skip. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define OPEN_SLICED_OR_SKIP(ex, dir, nvml, node, h)                                                \
    if (SANITIZED)                                                                                 \
        GP_TEST_SKIP("a sanitizer build's interposer is not preloadable");                         \
    const char *dir = gpt_tmpdir();                                                                \
    char more_[3 * PATH_MAX], nvml[PATH_MAX];                                                      \
    sliced_config(more_, sizeof more_, nvml, sizeof nvml);                                         \
    OPEN_WITH_OR_SKIP(ex, dir, more_);                                                             \
    gp_node_spec *node = node_of(ex);                                                              \
    char h[GP_HANDLE_MAX]

/* Launches `sh -c <script>` (printf's format and arguments) with half of GPU
 * 0 of node (512 MiB) and a compute share of `share` percent (0: none). */
static void launch_sliced(gp_executor *ex, const char *dir, const gp_node_spec *node, int share,
                          char h[GP_HANDLE_MAX], const char *fmt, ...) {
    static gp_task_binding b;
    static char script[4 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(script, sizeof script, fmt, ap);
    va_end(ap);
    b = (gp_task_binding){.node = node->name, .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 0, .milli = 500, .mem = 512LL << 20, .mig_slot = -1};
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    gp_task_launch t;
    gpt_launch_init(&t, 1, argv, dir);
    t.node = node;
    t.binding = &b;
    t.compute_share = share;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_exec_launch(ex, &t, h, err, sizeof err) == 0, "launch: %s", err);
}

/* Pauses task h and resumes it on GPU 1 of node. */
static void move_to_gpu1(gp_executor *ex, const gp_node_spec *node, const char *h, int procs) {
    gp_exec_pause p;
    ck_assert_int_eq(ctl(ex, GP_EXEC_CTL_PAUSE, h, &p), 0);
    ck_assert_int_eq(p.cuda_procs, procs);
    const char *from[] = {node->gpus[0].uuid}, *to[] = {node->gpus[1].uuid};
    one_gpu(&p, h, from, to);
    ck_assert_int_eq(gp_exec_control(ex, GP_EXEC_CTL_RESUME, &p), 0);
    ck_assert_uint_eq(used(0), 0);
}

START_TEST(test_truth_follows_the_remap) {
    /* A 512 MiB slice with the interposer: holder A takes 32 MiB and a
     * context of 300 MiB that the ledger does not count (the interposer
     * charges no context memory here), holder B 1 MiB. B then asks for 200
     * MiB: the ledger would allow it (233 MiB), the driver's count of A
     * (332 MiB) does not. Resumed on GPU 1, B must still be refused: its
     * interposer kept GPU 0's NVML handle, found none of A there, and let
     * the 200 MiB through. */
    OPEN_SLICED_OR_SKIP(ex, dir, nvml, node, h);
    launch_sliced(ex, dir, node, 0, h,
                  "export GPUPOOL_CONTEXT_MEMORY=0 GPUPOOL_FAKE_CONTEXT_MEMORY=300M "
                  "GPUPOOL_NVML_LIBRARY=%s; h=%s/cuda-holder; $h %s 2 1G 32 %s/a.txt & "
                  "exec $h %s 2 1G 1 %s/b.txt %s/ask 200",
                  nvml, build, ledger, dir, ledger, dir, dir);
    ck_assert(gpt_wait_file(gpt_path(dir, "a.txt")));
    ck_assert(gpt_wait_file(gpt_path(dir, "b.txt")));
    char *got = ask_holder(dir);
    ck_assert_msg(strcmp(got, "oom") == 0, "on GPU 0, B got 200 MiB more: %s", got);
    free(got);
    move_to_gpu1(ex, node, h, 2);
    ck_assert_uint_eq(used(1), (332ULL + 301) << 20);
    got = ask_holder(dir);
    ck_assert_msg(strcmp(got, "oom") == 0,
                  "resumed on GPU 1, B got 200 MiB more than its slice (%s): its check looked "
                  "at GPU 0",
                  got);
    free(got);
    free(node);
    stop_and_done(ex, dir, h);
}
END_TEST

/* The fraction of GPU gpu's time that kernels took over the next 1.5 s
 * (after 1 s for the throttle to settle). */
static double busy_next(int gpu) {
    struct timespec settle = {1, 0}, span = {1, 500000000L}, a, b;
    nanosleep(&settle, NULL);
    clock_gettime(CLOCK_REALTIME, &a);
    nanosleep(&span, NULL);
    clock_gettime(CLOCK_REALTIME, &b);
    int64_t from = (int64_t)a.tv_sec * 1000000000LL + a.tv_nsec;
    int64_t to = (int64_t)b.tv_sec * 1000000000LL + b.tv_nsec;
    return (double)busy_ns(gpu, 0, from, to) / (double)(to - from);
}

/* The loop's share of gpu, measured until it is near its 40 % (a loaded
 * host may starve one measurement) or the wait is over: the last one. */
static double share_on(int gpu) {
    double v = 0;
    for (int i = 0; i < GPT_WAIT_MS / 2500 && !(v > 0.1 && v < 0.7); i++)
        v = busy_next(gpu);
    return v;
}

START_TEST(test_share_follows_the_remap) {
    /* A loop of 1 ms kernels with a 40 % compute share, moved from GPU 0 to
     * GPU 1, is still held near its share there: its throttle read GPU 0's
     * utilisation, found the slice idle and let it take all of GPU 1. */
    OPEN_SLICED_OR_SKIP(ex, dir, nvml, node, h);
    launch_sliced(ex, dir, node, 40, h,
                  "export GPUPOOL_FAKE_LEDGER=%s GPUPOOL_FAKE_GPUS=2 GPUPOOL_FAKE_GPU_MEMORY=1G "
                  "GPUPOOL_NVML_LIBRARY=%s LD_LIBRARY_PATH=%s/../../fake; "
                  "exec %s/../daemon/share-loop 600",
                  ledger, nvml, build, build);
    double on0 = share_on(0);
    ck_assert_msg(on0 > 0.1 && on0 < 0.7, "on GPU 0 the loop had %.2f of it, its share 0.40", on0);
    move_to_gpu1(ex, node, h, 1);
    double on1 = share_on(1);
    ck_assert_msg(on1 > 0.1 && on1 < 0.7,
                  "resumed on GPU 1, the loop had %.2f of it, its share 0.40: its throttle "
                  "read GPU 0",
                  on1);
    free(node);
    stop_and_done(ex, dir, h);
}
END_TEST

/* ---- the runner's sweep ------------------------------------------------------------ */

static void runner_setup(void) {
    runner = getpid();
    const char *base = getenv("TMPDIR");
    snprintf(tmp_base, sizeof tmp_base, "%.40s/gpexec-pause-%d",
             base != NULL && base[0] ? base : "/tmp", (int)runner);
    mkdir(tmp_base, 0755);
    setenv("TMPDIR", tmp_base, 1);
}

/* Thaws what is left in the cgroup dir and below, from the top, kills it
 * and removes them, deepest first. */
static void sweep_cg(const char *dir) {
    /* Thawed before those below: a cgroup frozen above holds them frozen. */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/freezer.state", dir);
    if (access(path, F_OK) == 0)
        gpt_spit(path, "THAWED");
    snprintf(path, sizeof path, "%s/cgroup.freeze", dir);
    if (access(path, F_OK) == 0)
        gpt_spit(path, "0");
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char sub[PATH_MAX];
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        sweep_cg(sub);
    }
    if (d != NULL)
        closedir(d);
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    int round = 0;
    for (; round < 500 && rmdir(dir) < 0 && errno == EBUSY; round++) {
        FILE *f = fopen(path, "re");
        long pid;
        while (f != NULL && fscanf(f, "%ld", &pid) == 1)
            kill((pid_t)pid, SIGKILL);
        if (f != NULL)
            fclose(f);
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    if (access(dir, F_OK) == 0)
        printf("# sweep: %s stays after %d rounds: %s\n", dir, round, strerror(errno));
}

/* After the last test, in the runner: whatever a test that failed half-way
 * left (its tasks' processes and cgroups, the fake driver's files, its
 * directory) goes. */
static void runner_sweep(void) {
    if (getpid() != runner)
        return;
    char name[64], path[PATH_MAX];
    snprintf(name, sizeof name, "gpexec-pause-%d", (int)runner);
    DIR *d;
    struct dirent *e;
    /* Twice: a process killed in one hierarchy may leave another only once
     * it is reaped. */
    for (int pass = 0; pass < 2; pass++) {
        snprintf(path, sizeof path, "/sys/fs/cgroup/%s", name);
        if (access(path, F_OK) == 0)
            sweep_cg(path);
        d = opendir("/sys/fs/cgroup");
        while (d != NULL && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "/sys/fs/cgroup/%s/%s", e->d_name, name);
            if (access(path, F_OK) == 0)
                sweep_cg(path);
        }
        if (d != NULL)
            closedir(d);
    }
    snprintf(name, sizeof name, "gpfake-pause-%d-", (int)runner);
    d = opendir("/dev/shm");
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, name, strlen(name)) != 0)
            continue;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    gpt_rmrf(tmp_base);
}

static void add_tests(TCase *tc) {
    tcase_add_unchecked_fixture(tc, runner_setup, runner_sweep);
    tcase_add_test(tc, test_pause_frees_gpu_and_keeps_data);
    tcase_add_test(tc, test_resume_on_other_gpu);
    tcase_add_test(tc, test_restore_without_room_stays_paused);
    tcase_add_test(tc, test_failed_checkpoint_of_several_is_undone);
    tcase_add_test(tc, test_no_cuda_freezer_alone_and_stop);
    tcase_add_test(tc, test_crash_at_every_step);
    tcase_add_test(tc, test_driver_too_old);
    tcase_add_test(tc, test_resume_elsewhere_moves_the_binding);
    tcase_add_test(tc, test_failed_thaw_stays_paused_on_the_old_gpus);
    tcase_add_test(tc, test_pause_of_a_throttled_task);
    tcase_add_test(tc, test_throttled_task_across_a_restart);
    tcase_add_test(tc, test_cuda_started_during_the_pause_undoes_it);
    tcase_add_test(tc, test_cuda_started_by_a_listed_process_undoes_it);
    tcase_add_test(tc, test_too_many_processes_not_paused);
    tcase_add_test(tc, test_emulated_resumes_on_any_gpu);
    tcase_add_test(tc, test_truth_follows_the_remap);
    tcase_add_test(tc, test_share_follows_the_remap);
}

GP_TEST_MAIN("executors/pause", add_tests)
