/*
 * pause-check.c — the GPU tier's check of pause against the real driver
 * (tests/gpu/pause.sh builds and runs it): a CUDA process (the holder) takes
 * GIB GiB of device memory and fills it with a pattern; this process locks
 * and checkpoints it through the driver's checkpoint API, reads what NVML
 * says is in use, lets a third process allocate the same amount and leave,
 * restores and unlocks the holder, which checks its pattern. Prints the time
 * of each step and "ok" or the first failure; exit status 0 if all held.
 *
 * Both workloads are forked before this process initialises CUDA (a child
 * forked after cuInit cannot use the driver); the other one waits on a pipe
 * until the holder is paused, then takes all the memory then free, which must
 * be more than was free before the pause by most of what the holder held.
 *
 *   pause-check GIB
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64ULL << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "not ok - %s: %d\n", #call, (int)r_);                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* GPU 0's primary context made current. */
static int context(void) {
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    return 0;
}

/* GPU 0's primary context made current, and bytes of device memory in *p. */
static int take(size_t bytes, CUdeviceptr *p) {
    if (context() != 0)
        return 1;
    CK(cuMemAlloc(p, bytes));
    return 0;
}

/* The holder: fills bytes with one 32-bit value per chunk, then answers 'v'
 * with 'y' if every chunk still holds its value (first and last 4 KiB). */
static int holder(size_t bytes, int cmd, int ans) {
    CUdeviceptr p;
    if (take(bytes, &p) != 0)
        return 1;
    for (size_t off = 0; off < bytes; off += CHUNK)
        CK(cuMemsetD32(p + off, (unsigned)(off / CHUNK) * 2654435761u + 1, CHUNK / 4));
    CK(cuCtxSynchronize());
    char c = 'r';
    if (write(ans, &c, 1) != 1)
        return 1;
    while (read(cmd, &c, 1) == 1) {
        char out = 'y';
        unsigned buf[1024];
        for (size_t off = 0; off < bytes && out == 'y'; off += CHUNK) {
            unsigned want = (unsigned)(off / CHUNK) * 2654435761u + 1;
            for (int end = 0; end < 2; end++) {
                size_t at = off + (end ? CHUNK - sizeof buf : 0);
                if (cuMemcpyDtoH(buf, p + at, sizeof buf) != CUDA_SUCCESS)
                    out = 'e';
                for (size_t i = 0; i < 1024 && out == 'y'; i++)
                    if (buf[i] != want)
                        out = 'n';
            }
        }
        if (write(ans, &out, 1) != 1)
            return 1;
    }
    return 0;
}

/* Another workload: once told (go), takes all the free memory but 512 MiB,
 * writes over it, leaves, and reports how many MiB it had (ans). */
static int other(int go, int ans) {
    char c;
    if (read(go, &c, 1) != 1)
        return 1;
    if (context() != 0)
        return 1;
    size_t free_b = 0, total = 0;
    CK(cuMemGetInfo(&free_b, &total));
    size_t bytes = free_b > (1ULL << 30) ? free_b - (512ULL << 20) : 0;
    CUdeviceptr p;
    CK(cuMemAlloc(&p, bytes));
    CK(cuMemsetD8(p, 0x5a, bytes));
    CK(cuCtxSynchronize());
    CK(cuMemFree(p));
    long mib = (long)(bytes >> 20);
    return write(ans, &mib, sizeof mib) == (ssize_t)sizeof mib ? 0 : 1;
}

/* NVML's figure (nvidia-smi) of GPU 0: memory.used or memory.total, MiB. */
static long nvml_mib(const char *what) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "nvidia-smi --query-gpu=%s --format=csv,noheader,nounits -i 0", what);
    FILE *f = popen(cmd, "r");
    long v = -1;
    if (f != NULL) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        pclose(f);
    }
    return v;
}

int main(int argc, char **argv) {
    size_t bytes = (size_t)(argc > 1 ? atoll(argv[1]) : 40) << 30;
    int c[2], a[2], og[2], oa[2];
    if (pipe(c) != 0 || pipe(a) != 0 || pipe(og) != 0 || pipe(oa) != 0)
        return 1;
    pid_t o = fork();
    if (o == 0) {
        close(og[1]);
        close(oa[0]);
        _exit(other(og[0], oa[1]));
    }
    close(og[0]);
    close(oa[1]);
    pid_t h = fork();
    if (h == 0) {
        close(c[1]);
        close(a[0]);
        _exit(holder(bytes, c[0], a[1]));
    }
    close(c[0]);
    close(a[1]);
    char r = 0;
    if (read(a[0], &r, 1) != 1 || r != 'r') {
        fprintf(stderr, "not ok - the holder did not start\n");
        return 1;
    }
    long before = nvml_mib("memory.used"), total = nvml_mib("memory.total");
    CK(cuInit(0)); /* the driver's restore wants it in the caller */
    CUcheckpointLockArgs la;
    memset(&la, 0, sizeof la);
    la.timeoutMs = 10000;
    double t0 = now_s();
    CK(cuCheckpointProcessLock(h, &la));
    double t1 = now_s();
    CK(cuCheckpointProcessCheckpoint(h, NULL));
    double t2 = now_s();
    CUprocessState st;
    CK(cuCheckpointProcessGetState(h, &st));
    long paused = nvml_mib("memory.used");
    printf("holding %zu GiB: NVML used %ld MiB before, %ld MiB paused (state %d)\n", bytes >> 30,
           before, paused, (int)st);
    int fails = 0;
    if (st != CU_PROCESS_STATE_CHECKPOINTED || paused < 0 ||
        before - paused < (long)(bytes >> 20) * 9 / 10) {
        printf("not ok - the paused holder's memory was not freed\n");
        fails++;
    }
    char g = 'g';
    long got = -1;
    if (write(og[1], &g, 1) != 1 || read(oa[0], &got, sizeof got) != (ssize_t)sizeof got)
        got = -1;
    int ost = 0;
    waitpid(o, &ost, 0);
    printf("another process took %ld MiB while paused (%ld MiB were free before the pause)\n", got,
           total - before);
    if (!WIFEXITED(ost) || WEXITSTATUS(ost) != 0 || got < 0 ||
        got < total - before + (long)(bytes >> 20) * 9 / 10) {
        printf("not ok - another process could not allocate the freed memory\n");
        fails++;
    }
    double t3 = now_s();
    CK(cuCheckpointProcessRestore(h, NULL));
    double t4 = now_s();
    CK(cuCheckpointProcessUnlock(h, NULL));
    double t5 = now_s();
    char v = 'v';
    if (write(c[1], &v, 1) != 1 || read(a[0], &v, 1) != 1 || v != 'y') {
        printf("not ok - the holder's data did not survive (%c)\n", v);
        fails++;
    }
    printf("pause %zu GiB: lock %.3f s, checkpoint %.3f s; resume: restore %.3f s, unlock "
           "%.3f s\n",
           bytes >> 30, t1 - t0, t2 - t1, t4 - t3, t5 - t4);
    close(c[1]);
    waitpid(h, NULL, 0);
    if (fails == 0)
        printf("ok - paused, freed, reused, resumed, data verified\n");
    return fails != 0;
}
