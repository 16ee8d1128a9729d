/*
 * harness.c — shared set-up of the interposer's tests (see harness.h).
 */
#include "harness.h"

#include "gptest.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct drv D;

const char *h_build(void) {
    static char dir[PATH_MAX];
    if (!dir[0]) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        ck_assert_int_gt(n, 0);
        exe[n] = '\0';
        /* BUILD/tests/interpose/test-x -> BUILD */
        snprintf(dir, sizeof dir, "%s", dirname(dirname(dirname(exe))));
    }
    return dir;
}

static void set_default(const char *name, const char *value) {
    setenv(name, value, 0);
}

void h_env(void) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/fake/libcuda.so.1", h_build());
    set_default("GPUPOOL_CUDA_LIBRARY", path);
    snprintf(path, sizeof path, "%s/fake/libnvidia-ml.so.1", h_build());
    set_default("GPUPOOL_NVML_LIBRARY", path);
    set_default("GPUPOOL_FAKE_GPU_MEMORY", "1G");
    set_default("GPUPOOL_CONTEXT_MEMORY", "0");
}

const char *h_unique(const char *tag) {
    static char names[8][64];
    static int next;
    char *s = names[next++ % 8];
    snprintf(s, 64, "gptest-%s-%d", tag, (int)getpid());
    return s;
}

/* An entry point the way the runtime gets it: through cuGetProcAddress_v2
 * when that is the variant the driver hands out at `version`, otherwise
 * (an older variant) through dlsym on the driver's handle. */
static void *get_entry(const char *sym, const char *base, int stream, int version) {
    cuuint64_t flags = stream == GP_SP ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
    void *fn = NULL, *ignored;
    const char *chosen = D.fake_symbol(base, version, flags, &ignored);
    if (chosen && strcmp(chosen, sym) == 0 &&
        D.getProc(base, &fn, version, flags, NULL) == CUDA_SUCCESS)
        return fn;
    return dlsym(D.lib, sym);
}

#define GET_(sym, base, ver, stream, params, args)                                                 \
    D.sym = (gp_pfn_##sym)get_entry(#sym, base, stream, version);

static void *must_get(const char *name, int version) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    ck_assert_int_eq(D.getProc(name, &fn, version, 0, &st), CUDA_SUCCESS);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
    return fn;
}

void h_open_noctx(int version) {
    h_env();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/fake/libcuda.so.1", h_build());
    D.lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    ck_assert_msg(D.lib != NULL, "dlopen %s: %s", path, dlerror());
    D.getProc = (gp_pfn_cuGetProcAddress_v2)dlsym(D.lib, "cuGetProcAddress_v2");
    ck_assert_ptr_nonnull(D.getProc);
    D.init = (CUresult(*)(unsigned))must_get("cuInit", version);
    D.deviceGet = (CUresult(*)(CUdevice *, int))must_get("cuDeviceGet", version);
    D.ctxSetCurrent = (CUresult(*)(CUcontext))must_get("cuCtxSetCurrent", version);
    D.ctxSynchronize = (CUresult(*)(void))must_get("cuCtxSynchronize", version);
    D.defaultPool =
        (CUresult(*)(CUmemoryPool *, CUdevice))must_get("cuDeviceGetDefaultMemPool", version);
    D.fake_used = (uint64_t(*)(int))dlsym(D.lib, "gpfake_used");
    D.fake_peak = (uint64_t(*)(int))dlsym(D.lib, "gpfake_peak");
    D.fake_busy_ns = (uint64_t(*)(int, int, int64_t, int64_t))dlsym(D.lib, "gpfake_busy_ns");
    D.fake_symbol =
        (const char *(*)(const char *, int, cuuint64_t, void **))dlsym(D.lib, "gpfake_proc_symbol");
    ck_assert_ptr_nonnull(D.fake_symbol);
    GP_CU_WRAPPED(GET_)

    snprintf(path, sizeof path, "%s/fake/libnvidia-ml.so.1", h_build());
    D.nvml = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    ck_assert_ptr_nonnull(D.nvml);
    D.nvmlMem = (gp_nvml_pfn_nvmlDeviceGetMemoryInfo)dlsym(D.nvml, "nvmlDeviceGetMemoryInfo");
    D.nvmlMem2 =
        (gp_nvml_pfn_nvmlDeviceGetMemoryInfo_v2)dlsym(D.nvml, "nvmlDeviceGetMemoryInfo_v2");
    D.nvmlHandle =
        (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(D.nvml, "nvmlDeviceGetHandleByIndex_v2");
    ck_assert_int_eq(D.init(0), CUDA_SUCCESS);
}

void h_open(int version) {
    h_open_noctx(version);
    CUcontext ctx;
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    ck_assert_int_eq(D.ctxSetCurrent(ctx), CUDA_SUCCESS);
}

int h_scaled(int n) {
    const char *v = getenv("GPTEST_SCALE");
    int k = v ? atoi(v) : 1;
    return k > 1 ? n / k : n;
}

static char capture_path[64];
static long capture_start;

void h_capture_stderr(void) {
    snprintf(capture_path, sizeof capture_path, "/tmp/gptest-stderr-%d", (int)getpid());
    int fd = open(capture_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    dup2(fd, 2);
    close(fd);
    capture_start = 0;
}

const char *h_captured(void) {
    static char buf[4096];
    fflush(stderr);
    FILE *f = fopen(capture_path, "r");
    ck_assert_ptr_nonnull(f);
    fseek(f, capture_start, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(capture_path);
    return buf;
}
