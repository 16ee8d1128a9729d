/*
 * test-checkpoint.c — the fake driver's checkpoint API (tests/fake/fake_ckpt.c)
 * against the driver's documented state machine, as the local executor's
 * pause will use it: a forked "workload" process holds device memory with a
 * pattern in it; this process, the caller, locks, checkpoints, fills the GPU
 * itself, restores and unlocks, and the workload checks its pattern.
 *
 * The two processes share the fake GPUs through a named fake state
 * (GPUPOOL_FAKE_LEDGER); the test program links the fake libcuda directly.
 */
#include "../fake/fake.h"
#include "common/gp_cuckpt.h"

#include "gptest.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB  (1ULL << 20)
#define HELD (16 * MiB)

CUresult cuInit(unsigned int flags);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuCtxGetDevice(CUdevice *dev);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
#define PROTO_(sym, params) int sym params;
GP_CU_CKPT_ENTRIES(PROTO_)

/* The workload: its pid and the two pipes of its commands and answers. */
static struct {
    pid_t pid;
    int cmd, ans;
} W;

static char ledger[64];

static void setup(const char *gpus) {
    snprintf(ledger, sizeof ledger, "gpfake-ckpt-%d", (int)getpid());
    setenv("GPUPOOL_FAKE_LEDGER", ledger, 1);
    setenv("GPUPOOL_FAKE_GPUS", gpus, 1);
    setenv("GPUPOOL_FAKE_GPU_MEMORY", "1G", 1);
}

static void teardown(void) {
    if (W.pid > 0) {
        kill(W.pid, SIGKILL);
        waitpid(W.pid, NULL, 0);
    }
    char path[80];
    snprintf(path, sizeof path, "/%s", ledger);
    shm_unlink(path);
}

static unsigned char pattern(size_t i) {
    return (unsigned char)(i * 131 + 7);
}

/* The workload's loop: 'v' verifies the pattern (answers 'y' or 'n'), 'a'
 * allocates 1 MiB (answers 'd' once it returns), '0' and '1' answer 'y' when
 * its context is still on ordinal 0 and that ordinal's UUID is fake GPU 0's
 * or 1's. */
static void workload(int cmd, int ans) {
    CUcontext ctx;
    CUdeviceptr p;
    if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate_v2(&ctx, 0, 0) != CUDA_SUCCESS ||
        cuMemAlloc_v2(&p, HELD) != CUDA_SUCCESS)
        _exit(2);
    unsigned char *m = (unsigned char *)(uintptr_t)p;
    for (size_t i = 0; i < HELD; i += 4096)
        m[i] = pattern(i);
    char c = 'r';
    if (write(ans, &c, 1) != 1)
        _exit(3);
    while (read(cmd, &c, 1) == 1) {
        char out = 'n';
        if (c == 'v') {
            out = 'y';
            for (size_t i = 0; i < HELD; i += 4096)
                if (m[i] != pattern(i))
                    out = 'n';
        } else if (c == 'a') {
            CUdeviceptr q;
            out = cuMemAlloc_v2(&q, MiB) == CUDA_SUCCESS ? 'd' : 'f';
        } else if (c == '0' || c == '1') {
            CUdevice dev = -1;
            CUuuid u;
            uint8_t want[16];
            gpfake_uuid(c - '0', want);
            if (cuCtxGetDevice(&dev) == CUDA_SUCCESS && dev == 0 &&
                cuDeviceGetUuid_v2(&u, dev) == CUDA_SUCCESS && memcmp(u.bytes, want, 16) == 0)
                out = 'y';
        }
        if (write(ans, &out, 1) != 1)
            _exit(3);
    }
    _exit(0);
}

static void start_workload(void) {
    int c[2], a[2];
    ck_assert_int_eq(pipe(c), 0);
    ck_assert_int_eq(pipe(a), 0);
    W.pid = fork();
    ck_assert_int_ge(W.pid, 0);
    if (W.pid == 0) {
        close(c[1]);
        close(a[0]);
        workload(c[0], a[1]);
    }
    close(c[0]);
    close(a[1]);
    W.cmd = c[1];
    W.ans = a[0];
    char r = 0;
    ck_assert_int_eq(read(W.ans, &r, 1), 1);
    ck_assert_int_eq(r, 'r');
}

/* Sends cmd; returns the answer, or 0 if none came within ms. */
static char ask(char cmd, int ms) {
    if (cmd)
        ck_assert_int_eq(write(W.cmd, &cmd, 1), 1);
    struct pollfd p = {W.ans, POLLIN, 0};
    if (poll(&p, 1, ms) != 1)
        return 0;
    char r = 0;
    ck_assert_int_eq(read(W.ans, &r, 1), 1);
    return r;
}

static gp_cu_process_state state(void) {
    gp_cu_process_state s = GP_CU_PROCESS_FAILED;
    ck_assert_int_eq(cuCheckpointProcessGetState(W.pid, &s), GP_CU_SUCCESS);
    return s;
}

static void pause_workload(void) {
    gp_cu_lock_args la = {.timeout_ms = 5000};
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, &la), GP_CU_SUCCESS);
    ck_assert_int_eq(state(), GP_CU_PROCESS_LOCKED);
    ck_assert_int_eq(cuCheckpointProcessCheckpoint(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(state(), GP_CU_PROCESS_CHECKPOINTED);
}

/* Restores (onto the same GPUs), unlocks, and has the workload check its pattern. */
static void resume_and_verify(void) {
    ck_assert_int_eq(cuCheckpointProcessRestore(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(state(), GP_CU_PROCESS_LOCKED);
    ck_assert_int_eq(cuCheckpointProcessUnlock(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(state(), GP_CU_PROCESS_RUNNING);
    ck_assert_int_eq(ask('v', 10000), 'y');
}

/* This process takes every byte of GPU gpu, scribbles on it and gives it back. */
static void fill_and_leave(int gpu) {
    CUcontext ctx;
    CUdeviceptr p;
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxCreate_v2(&ctx, 0, gpu), CUDA_SUCCESS);
    uint64_t room = gpfake_total(gpu) - gpfake_used(gpu);
    ck_assert_uint_eq(room, gpfake_total(gpu));
    ck_assert_int_eq(cuMemAlloc_v2(&p, room), CUDA_SUCCESS);
    memset((void *)(uintptr_t)p, 0x5a, HELD);
    ck_assert_int_eq(cuMemFree_v2(p), CUDA_SUCCESS);
}

START_TEST(test_contents_survive) {
    setup("1");
    start_workload();
    ck_assert_int_eq(state(), GP_CU_PROCESS_RUNNING);
    ck_assert_uint_eq(gpfake_used(0), HELD);
    int tid = 0;
    ck_assert_int_eq(cuCheckpointProcessGetRestoreThreadId(W.pid, &tid), GP_CU_SUCCESS);
    ck_assert_int_gt(tid, 0);
    ck_assert_int_ne(tid, W.pid);

    pause_workload();
    ck_assert_uint_eq(gpfake_used(0), 0);
    ck_assert_uint_eq(gpfake_host_held(W.pid), HELD);
    int pids[4];
    uint64_t bytes[4];
    ck_assert_int_eq(gpfake_processes(0, pids, bytes, 4), 0); /* NVML sees it gone */

    fill_and_leave(0);

    resume_and_verify();
    ck_assert_uint_eq(gpfake_used(0), HELD);
    ck_assert_uint_eq(gpfake_host_held(W.pid), 0);
    teardown();
}
END_TEST

START_TEST(test_wrong_order_and_unknown) {
    setup("1");
    start_workload();
    ck_assert_int_eq(cuCheckpointProcessCheckpoint(W.pid, NULL), GP_CU_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(cuCheckpointProcessRestore(W.pid, NULL), GP_CU_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(cuCheckpointProcessUnlock(W.pid, NULL), GP_CU_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(state(), GP_CU_PROCESS_RUNNING);
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, NULL), GP_CU_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(cuCheckpointProcessRestore(W.pid, NULL), GP_CU_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(state(), GP_CU_PROCESS_LOCKED);
    ck_assert_int_eq(cuCheckpointProcessCheckpoint(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(cuCheckpointProcessCheckpoint(W.pid, NULL), GP_CU_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(cuCheckpointProcessUnlock(W.pid, NULL), GP_CU_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(state(), GP_CU_PROCESS_CHECKPOINTED);

    /* No such process, and a process that never used CUDA (this one). */
    gp_cu_process_state s;
    ck_assert_int_eq(cuCheckpointProcessGetState(0, &s), GP_CU_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuCheckpointProcessLock(-1, NULL), GP_CU_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuCheckpointProcessGetState(getpid(), &s), GP_CU_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuCheckpointProcessLock(getpid(), NULL), GP_CU_ERROR_INVALID_VALUE);

    /* A process that ended is unknown too. */
    kill(W.pid, SIGKILL);
    waitpid(W.pid, NULL, 0);
    ck_assert_int_eq(cuCheckpointProcessGetState(W.pid, &s), GP_CU_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuCheckpointProcessRestore(W.pid, NULL), GP_CU_ERROR_INVALID_VALUE);
    W.pid = 0;
    teardown();
}
END_TEST

START_TEST(test_restore_without_room) {
    setup("1");
    start_workload();
    pause_workload();
    CUcontext ctx;
    CUdeviceptr p;
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxCreate_v2(&ctx, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&p, gpfake_total(0) - HELD / 2), CUDA_SUCCESS);
    ck_assert_int_eq(cuCheckpointProcessRestore(W.pid, NULL), GP_CU_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(state(), GP_CU_PROCESS_CHECKPOINTED);
    ck_assert_uint_eq(gpfake_host_held(W.pid), HELD);
    ck_assert_uint_eq(gpfake_used(0), gpfake_total(0) - HELD / 2);
    ck_assert_int_eq(cuMemFree_v2(p), CUDA_SUCCESS);
    resume_and_verify();
    teardown();
}
END_TEST

START_TEST(test_restore_driver_error_retried) {
    setup("1");
    start_workload();
    pause_workload();
    ck_assert_int_eq(gpfake_fail_restores(W.pid, 1), 0);
    ck_assert_int_ne(cuCheckpointProcessRestore(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(state(), GP_CU_PROCESS_CHECKPOINTED);
    ck_assert_uint_eq(gpfake_host_held(W.pid), HELD);
    resume_and_verify();
    teardown();
}
END_TEST

START_TEST(test_lock_blocks_calls) {
    setup("1");
    start_workload();
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, NULL), GP_CU_SUCCESS);
    /* Its allocation waits while the process is locked (a bounded look). */
    ck_assert_int_eq(ask('a', 300), 0);
    ck_assert_uint_eq(gpfake_used(0), HELD);
    ck_assert_int_eq(cuCheckpointProcessUnlock(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(ask(0, 10000), 'd');
    ck_assert_uint_eq(gpfake_used(0), HELD + MiB);
    teardown();
}
END_TEST

START_TEST(test_lock_timeout) {
    setup("1");
    setenv("GPUPOOL_FAKE_ALLOC_DELAY_US", "1000000", 1);
    start_workload(); /* its first allocation took the 1 s */
    char c = 'a';
    ck_assert_int_eq(write(W.cmd, &c, 1), 1);
    /* Once its allocation is booked, the call is under way for 1 s. */
    while (gpfake_used(0) < HELD + MiB)
        usleep(1000);
    gp_cu_lock_args la = {.timeout_ms = 200};
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, &la), GP_CU_ERROR_NOT_READY);
    ck_assert_int_eq(state(), GP_CU_PROCESS_RUNNING);
    ck_assert_int_eq(ask(0, 20000), 'd');
    la.timeout_ms = 10000;
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, &la), GP_CU_SUCCESS);
    ck_assert_int_eq(cuCheckpointProcessUnlock(W.pid, NULL), GP_CU_SUCCESS);
    teardown();
}
END_TEST

START_TEST(test_lock_timeout_stopped) {
    /* A stopped process's thread takes up no request: the lock gives up at
     * its timeout, as the driver's does, and the process, continued, is
     * neither locked nor blocked by the lock it was asked for. The fake's
     * lock waited for ever. */
    setup("1");
    start_workload();
    ck_assert_int_eq(kill(W.pid, SIGSTOP), 0);
    int st;
    ck_assert_int_eq(waitpid(W.pid, &st, WUNTRACED), W.pid);
    ck_assert(WIFSTOPPED(st));
    gp_cu_lock_args la = {.timeout_ms = 300};
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, &la), GP_CU_ERROR_NOT_READY);
    ck_assert_int_eq(state(), GP_CU_PROCESS_RUNNING);
    ck_assert_int_eq(kill(W.pid, SIGCONT), 0);
    ck_assert_int_eq(ask('a', 10000), 'd');
    ck_assert_int_eq(state(), GP_CU_PROCESS_RUNNING);
    la.timeout_ms = 10000;
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, &la), GP_CU_SUCCESS);
    ck_assert_int_eq(cuCheckpointProcessUnlock(W.pid, NULL), GP_CU_SUCCESS);
    teardown();
}
END_TEST

START_TEST(test_restore_onto_other_gpu) {
    setup("2");
    start_workload();
    ck_assert_int_eq(ask('0', 10000), 'y');
    pause_workload();
    gp_cu_gpu_pair pair;
    gpfake_uuid(0, (uint8_t *)pair.old_uuid);
    gpfake_uuid(1, (uint8_t *)pair.new_uuid);
    gp_cu_restore_args ra = {.pairs = &pair, .npairs = 1};
    /* A pair naming an unknown GPU is refused, and nothing changes. */
    gp_cu_gpu_pair bad = pair;
    bad.new_uuid[15] = 9;
    gp_cu_restore_args rb = {.pairs = &bad, .npairs = 1};
    ck_assert_int_eq(cuCheckpointProcessRestore(W.pid, &rb), GP_CU_ERROR_INVALID_VALUE);
    ck_assert_int_eq(state(), GP_CU_PROCESS_CHECKPOINTED);
    ck_assert_int_eq(cuCheckpointProcessRestore(W.pid, &ra), GP_CU_SUCCESS);
    ck_assert_uint_eq(gpfake_used(0), 0);
    ck_assert_uint_eq(gpfake_used(1), HELD);
    ck_assert_int_eq(cuCheckpointProcessUnlock(W.pid, NULL), GP_CU_SUCCESS);
    ck_assert_int_eq(ask('v', 10000), 'y');
    /* As with the driver: the process keeps its ordinal 0, which is now GPU
     * 1, UUID included. */
    ck_assert_int_eq(ask('1', 10000), 'y');
    ck_assert_int_eq(ask('a', 10000), 'd'); /* its context is on GPU 1 now */
    ck_assert_uint_eq(gpfake_used(1), HELD + MiB);
    teardown();
}
END_TEST

START_TEST(test_old_driver) {
    setup("1");
    setenv("GPUPOOL_FAKE_DRIVER_VERSION", "12040", 1);
    start_workload();
    gp_cu_process_state s;
    ck_assert_int_eq(cuCheckpointProcessGetState(W.pid, &s), GP_CU_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq(cuCheckpointProcessLock(W.pid, NULL), GP_CU_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq(cuCheckpointProcessCheckpoint(W.pid, NULL), GP_CU_ERROR_NOT_SUPPORTED);
    teardown();
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_contents_survive);
    tcase_add_test(tc, test_wrong_order_and_unknown);
    tcase_add_test(tc, test_restore_without_room);
    tcase_add_test(tc, test_restore_driver_error_retried);
    tcase_add_test(tc, test_lock_blocks_calls);
    tcase_add_test(tc, test_lock_timeout);
    tcase_add_test(tc, test_lock_timeout_stopped);
    tcase_add_test(tc, test_restore_onto_other_gpu);
    tcase_add_test(tc, test_old_driver);
}

GP_TEST_MAIN("fake/checkpoint", add_tests)
