/*
 * share-loop.c — a workload for the compute share test (test-share.sh): a
 * training-like loop of kernel launches on the fake driver (tests/fake), run
 * by the daemon like any workload, with the interposer preloaded by the
 * executor. It opens libcuda.so.1 (the fake, through LD_PRELOAD's neighbour
 * LD_LIBRARY_PATH), gives each kernel 1 ms of GPU time, launches and
 * synchronises for `seconds` (default 3.5), and prints the fraction of the
 * GPU's time it had after the first, settling second: "busy=0.251".
 * `share-loop alloc MIB [SECS]` instead allocates MIB of device memory at
 * once, prints "alloc=ok" or "alloc=oom" and holds it for SECS seconds
 * (default 0) (test-slice-limits.sh). SHARE_LOOP_LIBCUDA, if set, names the
 * driver library to open instead of libcuda.so.1 (a renamed copy, as a
 * workload escaping its slice would try).
 * `share-loop unseen MIB [other]` books MIB on its own GPU (the first of
 * CUDA_VISIBLE_DEVICES), or with "other" on the next one, through the fake's
 * test-only gpfake_alloc_unseen, which no interposer sees; prints
 * "unseen=ok gpu=N" (or "unseen=full") and holds it until killed
 * (test-watchdog.sh).
 * `share-loop shrink PATH SECS` is the hostile workload of test-hostile.sh:
 * for SECS seconds it shrinks the file at PATH (its slice's ledger) to its
 * first page and grows it back, as fast as it can, then prints
 * "shrink=done N" (N rounds). It needs no driver.
 */
#include "interpose/entries.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The fake GPU whose UUID is the first of CUDA_VISIBLE_DEVICES (0 if none). */
static int own_gpu(void *h) {
    void (*uuid)(int, uint8_t *) = (void (*)(int, uint8_t *))dlsym(h, "gpfake_uuid");
    int (*count)(void) = (int (*)(void))dlsym(h, "gpfake_count");
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    for (int g = 0; uuid && count && v && g < count(); g++) {
        uint8_t b[16];
        char text[64];
        uuid(g, b);
        snprintf(text, sizeof text,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        if (strncmp(v, text, strlen(text)) == 0)
            return g;
    }
    return 0;
}

/* `unseen MIB [other]`: see the top of the file. */
static int unseen(void *h, const char *mib, int other) {
    int (*alloc)(int, uint64_t) = (int (*)(int, uint64_t))dlsym(h, "gpfake_alloc_unseen");
    int (*count)(void) = (int (*)(void))dlsym(h, "gpfake_count");
    if (!alloc || !count) {
        fprintf(stderr, "share-loop: not the fake driver\n");
        return 1;
    }
    int gpu = (own_gpu(h) + (other ? 1 : 0)) % count();
    if (alloc(gpu, (uint64_t)strtoull(mib, NULL, 10) << 20) != 0) {
        printf("unseen=full\n");
        return 1;
    }
    printf("unseen=ok gpu=%d\n", gpu);
    fflush(stdout);
    for (;;)
        pause();
}

/* `shrink PATH SECS`: see the top of the file. */
static int shrink(const char *path, double secs) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 4096) {
        fprintf(stderr, "share-loop: cannot shrink %s\n", path);
        return 1;
    }
    long rounds = 0;
    for (int64_t end = now_ns() + (int64_t)(secs * 1e9); now_ns() < end; rounds++)
        if (ftruncate(fd, 4096) != 0 || ftruncate(fd, st.st_size) != 0)
            break;
    printf("shrink=done %ld\n", rounds);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 3 && strcmp(argv[1], "shrink") == 0)
        return shrink(argv[2], atof(argv[3]));
    int alloc_mode = argc > 2 && strcmp(argv[1], "alloc") == 0;
    double secs = argc > 1 && !alloc_mode ? atof(argv[1]) : 3.5;
    /* The fake driver reads this when it is loaded: 1 ms per kernel, unless
     * the caller asked for another length. */
    setenv("GPUPOOL_FAKE_KERNEL_US", "1000", 0);
    const char *lib = getenv("SHARE_LOOP_LIBCUDA");
    void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "share-loop: %s\n", dlerror());
        return 1;
    }
    if (argc > 2 && strcmp(argv[1], "unseen") == 0)
        return unseen(h, argv[2], argc > 3 && strcmp(argv[3], "other") == 0);
    gp_pfn_cuGetProcAddress_v2 gpa = (gp_pfn_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
    uint64_t (*busy_ns)(int, int, int64_t, int64_t) =
        (uint64_t(*)(int, int, int64_t, int64_t))dlsym(h, "gpfake_busy_ns");
    void *init, *retain, *set_current, *launch, *sync, *alloc;
    CUdriverProcAddressQueryResult st;
    if (!gpa || !busy_ns || gpa("cuInit", &init, 12080, 0, &st) ||
        gpa("cuDevicePrimaryCtxRetain", &retain, 12080, 0, &st) ||
        gpa("cuCtxSetCurrent", &set_current, 12080, 0, &st) ||
        gpa("cuLaunchKernel", &launch, 12080, 0, &st) ||
        gpa("cuCtxSynchronize", &sync, 12080, 0, &st) || gpa("cuMemAlloc", &alloc, 12080, 0, &st)) {
        fprintf(stderr, "share-loop: not the fake driver\n");
        return 1;
    }
    CUcontext ctx;
    if (((CUresult(*)(unsigned))init)(0) != CUDA_SUCCESS ||
        ((gp_pfn_cuDevicePrimaryCtxRetain)retain)(&ctx, 0) != CUDA_SUCCESS ||
        ((CUresult(*)(CUcontext))set_current)(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "share-loop: no context\n");
        return 1;
    }
    if (alloc_mode) {
        CUdeviceptr ptr;
        CUresult r = ((CUresult(*)(CUdeviceptr *, size_t))alloc)(
            &ptr, (size_t)strtoull(argv[2], NULL, 10) << 20);
        printf("alloc=%s\n", r == CUDA_SUCCESS               ? "ok"
                             : r == CUDA_ERROR_OUT_OF_MEMORY ? "oom"
                                                             : "error");
        fflush(stdout);
        if (argc > 3)
            sleep((unsigned)atoi(argv[3]));
        return 0;
    }
    gp_pfn_cuLaunchKernel kernel = (gp_pfn_cuLaunchKernel)launch;
    CUresult (*synchronize)(void) = (CUresult(*)(void))sync;
    int64_t start = now_ns(), from = start + 1000000000LL, end = start + (int64_t)(secs * 1e9);
    for (int i = 0; now_ns() < end; i++) {
        if (kernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS ||
            (i % 8 == 7 && synchronize() != CUDA_SUCCESS)) {
            fprintf(stderr, "share-loop: a launch failed\n");
            return 1;
        }
    }
    synchronize();
    int64_t to = now_ns();
    printf("busy=%.3f\n", (double)busy_ns(0, (int)getpid(), from, to) / (double)(to - from));
    return 0;
}
