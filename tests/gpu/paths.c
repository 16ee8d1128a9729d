/*
 * paths.c — GPU tier: the interposer against the real driver.
 *
 *   paths caps    (run with LD_PRELOAD=libgpuslice.so, GPUPOOL_MEMORY_LIMIT=1G,
 *                  GPUPOOL_CONTEXT_MEMORY=0) checks the cap on every allocation
 *                  path and the reported memory; prints TAP lines
 *   paths bench   prints ns per cuMemAlloc_v2+cuMemFree_v2 pair and per
 *                  cuLaunchKernel (an empty kernel); run.sh runs it with and
 *                  without the library and prints the ratio
 *   paths ctxmem  prints the device memory a fresh primary context takes
 *                  (NVML, before and after), to size GPUPOOL_CONTEXT_MEMORY
 *
 * Built by tests/gpu/run.sh with nvcc against the real cuda.h; never part of
 * `make test`. The kernel is PTX embedded here, so no device code is needed.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MiB (1ULL << 20)

static const char noop_ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                               ".visible .entry noop()\n{\n\tret;\n}\n";
static int failures, n_checks;

static void check(int ok, const char *what, CUresult r) {
    n_checks++;
    printf("%s %d - %s (CUresult %d)\n", ok ? "ok" : "not ok", n_checks, what, (int)r);
    failures += !ok;
}

#define MUST(call)                                                                                 \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s: %d\n", #call, (int)r_);                                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void caps(void) {
    const size_t cap = 1024 * MiB;
    size_t f, t;
    CUdeviceptr a, b;
    CUresult r;
    MUST(cuMemGetInfo(&f, &t));
    check(t == cap && f <= cap, "cuMemGetInfo reports the slice", CUDA_SUCCESS);
    MUST(cuDeviceTotalMem(&t, 0));
    check(t == cap, "cuDeviceTotalMem reports the cap", CUDA_SUCCESS);

    MUST(cuMemAlloc(&a, 768 * MiB));
    r = cuMemAlloc(&b, 512 * MiB);
    check(r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc over the cap", r);
    MUST(cuMemFree(a));
    r = cuMemAlloc(&b, 1000 * MiB);
    check(r == CUDA_SUCCESS, "cuMemAlloc after a free", r);
    MUST(cuMemFree(b));

    size_t pitch;
    r = cuMemAllocPitch(&a, &pitch, 64 * MiB, 17, 4);
    check(r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocPitch over the cap", r);
    r = cuMemAllocPitch(&a, &pitch, 1000, 1000, 4);
    check(r == CUDA_SUCCESS, "cuMemAllocPitch within", r);
    MUST(cuMemFree(a));

    MUST(cuMemAllocManaged(&a, 768 * MiB, CU_MEM_ATTACH_GLOBAL));
    r = cuMemAllocManaged(&b, 512 * MiB, CU_MEM_ATTACH_GLOBAL);
    check(r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocManaged over the cap", r);
    MUST(cuMemFree(a));

    CUstream s;
    MUST(cuStreamCreate(&s, 0));
    MUST(cuMemAllocAsync(&a, 768 * MiB, s));
    r = cuMemAllocAsync(&b, 512 * MiB, s);
    check(r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocAsync over the cap", r);
    MUST(cuMemFreeAsync(a, s));
    MUST(cuStreamSynchronize(s));

    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool;
    MUST(cuMemPoolCreate(&pool, &pp));
    MUST(cuMemAllocFromPoolAsync(&a, 768 * MiB, pool, s));
    r = cuMemAllocFromPoolAsync(&b, 512 * MiB, pool, s);
    check(r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocFromPoolAsync over the cap", r);
    MUST(cuMemFreeAsync(a, s));
    MUST(cuStreamSynchronize(s));
    MUST(cuMemPoolDestroy(pool));

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h1, h2;
    MUST(cuMemCreate(&h1, 768 * MiB, &prop, 0));
    r = cuMemCreate(&h2, 512 * MiB, &prop, 0);
    check(r == CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate over the cap", r);
    MUST(cuMemRelease(h1));
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = 0;
    r = cuMemCreate(&h2, 2048 * MiB, &prop, 0);
    check(r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE,
          "cuMemCreate on the host is not charged", r);
    if (r == CUDA_SUCCESS)
        cuMemRelease(h2);

    CUDA_ARRAY_DESCRIPTOR ad = {8192, 8192, CU_AD_FORMAT_FLOAT, 4}; /* 1 GiB */
    CUarray arr;
    r = cuArrayCreate(&arr, &ad);
    check(r == CUDA_ERROR_OUT_OF_MEMORY, "cuArrayCreate over the cap", r);
    ad.NumChannels = 1;
    r = cuArrayCreate(&arr, &ad);
    check(r == CUDA_SUCCESS, "cuArrayCreate within", r);
    if (r == CUDA_SUCCESS)
        cuArrayDestroy(arr);
    MUST(cuMemGetInfo(&f, &t));
    check(f == cap || f + 64 * MiB >= cap, "everything given back", CUDA_SUCCESS);
}

static void bench(void) {
    CUmodule mod;
    CUfunction fn;
    MUST(cuModuleLoadData(&mod, noop_ptx));
    MUST(cuModuleGetFunction(&fn, mod, "noop"));
    CUdeviceptr p;
    for (int i = 0; i < 1000; i++) {
        MUST(cuMemAlloc(&p, MiB));
        MUST(cuMemFree(p));
    }
    double best_a = 1e30, best_l = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = now_ns();
        for (int i = 0; i < 10000; i++) {
            MUST(cuMemAlloc(&p, MiB));
            MUST(cuMemFree(p));
        }
        double t1 = now_ns();
        for (int i = 0; i < 100000; i++)
            MUST(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
        MUST(cuCtxSynchronize());
        double t2 = now_ns();
        best_a = (t1 - t0) / 10000 < best_a ? (t1 - t0) / 10000 : best_a;
        best_l = (t2 - t1) / 100000 < best_l ? (t2 - t1) / 100000 : best_l;
    }
    printf("alloc_free_ns %.1f\nlaunch_ns %.1f\n", best_a, best_l);
}

typedef struct {
    unsigned long long total, free, used;
} nvml_mem;

static void ctxmem(void) {
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!h)
        exit(1);
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*byidx)(unsigned, void **) =
        (int (*)(unsigned, void **))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    int (*mem)(void *, nvml_mem *) =
        (int (*)(void *, nvml_mem *))dlsym(h, "nvmlDeviceGetMemoryInfo");
    void *dev;
    nvml_mem before, after;
    if (init() || byidx(0, &dev) || mem(dev, &before))
        exit(1);
    CUcontext ctx;
    MUST(cuDevicePrimaryCtxRetain(&ctx, 0));
    MUST(cuCtxSetCurrent(ctx));
    CUmodule mod;
    MUST(cuModuleLoadData(&mod, noop_ptx));
    MUST(cuCtxSynchronize());
    if (mem(dev, &after))
        exit(1);
    printf("context_memory_mib %.0f\n", (double)(after.used - before.used) / (double)MiB);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "caps";
    MUST(cuInit(0));
    if (strcmp(mode, "ctxmem") == 0) {
        ctxmem();
        return 0;
    }
    CUcontext ctx;
    MUST(cuDevicePrimaryCtxRetain(&ctx, 0));
    MUST(cuCtxSetCurrent(ctx));
    if (strcmp(mode, "bench") == 0) {
        bench();
        return 0;
    }
    caps();
    printf("1..%d\n", n_checks);
    return failures ? 1 : 0;
}
