/*
 * pause-check.c — the GPU tier's check of pause against the real driver
 * (tests/gpu/pause.sh builds and runs it): a CUDA process (the holder) takes
 * GIB GiB of device memory and fills it with a pattern; this process locks
 * and checkpoints it through the driver's checkpoint API, reads what NVML
 * says is in use, lets a third process allocate the same amount and leave,
 * restores and unlocks the holder, which checks its pattern. Prints the time
 * of each step and "ok" or the first failure; exit status 0 if all held.
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

/* GPU 0's primary context made current, and bytes of device memory in *p. */
static int take(size_t bytes, CUdeviceptr *p) {
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
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

/* Another workload: takes bytes, writes over them, leaves. */
static int other(size_t bytes) {
    CUdeviceptr p;
    if (take(bytes, &p) != 0)
        return 1;
    CK(cuMemsetD8(p, 0x5a, bytes));
    CK(cuCtxSynchronize());
    CK(cuMemFree(p));
    return 0;
}

static long nvml_used_mib(void) {
    FILE *f = popen("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0", "r");
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
    int c[2], a[2];
    if (pipe(c) != 0 || pipe(a) != 0)
        return 1;
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
    long before = nvml_used_mib();
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
    long paused = nvml_used_mib();
    printf("holding %zu GiB: NVML used %ld MiB before, %ld MiB paused (state %d)\n", bytes >> 30,
           before, paused, (int)st);
    int fails = 0;
    if (st != CU_PROCESS_STATE_CHECKPOINTED || paused < 0 ||
        before - paused < (long)(bytes >> 20) * 9 / 10) {
        printf("not ok - the paused holder's memory was not freed\n");
        fails++;
    }
    pid_t o = fork();
    if (o == 0)
        _exit(other(bytes));
    int ost = 0;
    waitpid(o, &ost, 0);
    if (!WIFEXITED(ost) || WEXITSTATUS(ost) != 0) {
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
