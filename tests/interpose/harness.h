/*
 * harness.h — how the interposer's tests reach the driver: the way the CUDA
 * runtime and PyTorch do, by dlopen'ing libcuda.so.1, taking
 * cuGetProcAddress_v2 with dlsym and asking it for every entry point at a
 * chosen CUDA version. The test programs link libgpuslice.so, so the
 * interposer is in the process exactly as if it had been preloaded, and the
 * fake driver (tests/fake) stands in for the GPU.
 *
 * A test sets its environment (h_env) and then calls h_open() once; the
 * library reads the environment on its first call, so every test, which
 * Check runs in its own process, may configure its own slice.
 */
#ifndef GP_TESTS_INTERPOSE_HARNESS_H
#define GP_TESTS_INTERPOSE_HARNESS_H

#include "interpose/entries.h"

#include <stdint.h>

#define MiB (1ULL << 20)

/* Driver functions the tests call, as the runtime would obtain them. */
struct drv {
    void *lib;  /* dlopen handle of the fake libcuda.so.1 */
    void *nvml; /* dlopen handle of the fake libnvidia-ml.so.1 */
    gp_pfn_cuGetProcAddress_v2 getProc;
    CUresult (*init)(unsigned int);
    CUresult (*deviceGet)(CUdevice *, int);
    CUresult (*ctxSetCurrent)(CUcontext);
    CUresult (*ctxSynchronize)(void);
    CUresult (*defaultPool)(CUmemoryPool *, CUdevice);
#define H_MEMBER_(sym, base, ver, stream, params, args) gp_pfn_##sym sym;
    GP_CU_WRAPPED(H_MEMBER_)
#undef H_MEMBER_
    gp_nvml_pfn_nvmlDeviceGetMemoryInfo nvmlMem;
    gp_nvml_pfn_nvmlDeviceGetMemoryInfo_v2 nvmlMem2;
    nvmlReturn_t (*nvmlHandle)(unsigned int, nvmlDevice_t *);
    /* The fake's books (tests/fake/fake.h). */
    uint64_t (*fake_used)(int);
    uint64_t (*fake_peak)(int);
    uint64_t (*fake_busy_ns)(int, int, int64_t, int64_t);
    const char *(*fake_symbol)(const char *, int, cuuint64_t, void **);
};

extern struct drv D;

/* The build directory (from /proc/self/exe) and paths inside it. */
const char *h_build(void);

/* Sets the environment every test shares (fake driver paths, a 1 GiB fake
 * GPU, no context memory, no slice name) unless the test set it already. */
void h_env(void);

/* A slice / fake-ledger name unique to this process and tag. */
const char *h_unique(const char *tag);

/* Opens the driver at `version` through cuGetProcAddress_v2, fills D,
 * initialises it and makes device 0's primary context current. Fails the
 * test on any error. */
void h_open(int version);

/* Like h_open() but without a context (for tests of context creation). */
void h_open_noctx(int version);

/* n divided by GPTEST_SCALE (default 1): the ThreadSanitizer pass, ten
 * times slower, runs the long loops shorter. */
int h_scaled(int n);

/* Redirects stderr into a file and returns what was written since, for
 * checking the library's messages. */
void h_capture_stderr(void);
const char *h_captured(void);

#endif /* GP_TESTS_INTERPOSE_HARNESS_H */
