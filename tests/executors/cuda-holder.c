/*
 * cuda-holder.c — a workload for the pause tests (test-pause.c and
 * bench/bench-pause.c): a CUDA program over the fake driver (tests/fake)
 * that knows nothing of gpupool's checkpoint signal. It takes MIB of device
 * memory, copies a pattern into it, and then counts steps: each step copies
 * it back (cuMemcpyDtoH, a CUDA call, so a locked holder waits), checks it
 * and writes "<step> ok" (or "<step> bad") into STATE
 * (replaced atomically). A paused holder stops counting; resumed, it goes on
 * from the step where it stopped.
 *
 *   cuda-holder LEDGER GPUS GPU_MEMORY MIB STATE [ASK MORE]
 *
 * LEDGER, GPUS and GPU_MEMORY configure the fake driver (GPUPOOL_FAKE_LEDGER,
 * _GPUS, _GPU_MEMORY: a task does not inherit gpupool's variables). With
 * ASK and MORE, a step that finds the file ASK removes it, tries to allocate
 * MORE MiB (freed at once) and writes "ok", "oom" or "error" into ASK.out
 * (replaced atomically): a test asks what the slice lets it have now.
 */
#include "interpose/cuda_abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

CUresult cuInit(unsigned int flags);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);

static unsigned char pattern(size_t i) {
    return (unsigned char)(i * 131 + 7);
}

/* Answers the file ask, if it is there, with the outcome of allocating
 * `more` bytes. */
static void answer(const char *ask, size_t more) {
    if (unlink(ask) != 0)
        return;
    CUdeviceptr q;
    CUresult r = cuMemAlloc_v2(&q, more);
    if (r == CUDA_SUCCESS)
        cuMemFree_v2(q);
    char out[4096], tmp[4096 + 8];
    snprintf(out, sizeof out, "%s.out", ask);
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return;
    fprintf(f, "%s\n", r == CUDA_SUCCESS ? "ok" : r == CUDA_ERROR_OUT_OF_MEMORY ? "oom" : "error");
    fclose(f);
    rename(tmp, out);
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 8) {
        fprintf(stderr, "usage: cuda-holder LEDGER GPUS GPU_MEMORY MIB STATE [ASK MORE]\n");
        return 2;
    }
    setenv("GPUPOOL_FAKE_LEDGER", argv[1], 1);
    setenv("GPUPOOL_FAKE_GPUS", argv[2], 1);
    setenv("GPUPOOL_FAKE_GPU_MEMORY", argv[3], 1);
    size_t bytes = (size_t)strtoull(argv[4], NULL, 10) << 20;
    CUcontext ctx;
    CUdeviceptr p;
    if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate_v2(&ctx, 0, 0) != CUDA_SUCCESS ||
        cuMemAlloc_v2(&p, bytes) != CUDA_SUCCESS) {
        fprintf(stderr, "cuda-holder: no device memory\n");
        return 1;
    }
    unsigned char *m = malloc(bytes);
    for (size_t i = 0; m != NULL && i < bytes; i++)
        m[i] = pattern(i);
    if (m == NULL || cuMemcpyHtoD_v2(p, m, bytes) != CUDA_SUCCESS)
        return 1;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[5]);
    for (long step = 1;; step++) {
        memset(m, 0, bytes);
        int ok = cuMemcpyDtoH_v2(m, p, bytes) == CUDA_SUCCESS;
        for (size_t i = 0; ok && i < bytes; i += 512)
            ok = m[i] == pattern(i);
        FILE *f = fopen(tmp, "w");
        if (f == NULL)
            return 1;
        fprintf(f, "%ld %s\n", step, ok ? "ok" : "bad");
        fclose(f);
        rename(tmp, argv[5]);
        if (argc == 8)
            answer(argv[6], (size_t)strtoull(argv[7], NULL, 10) << 20);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
