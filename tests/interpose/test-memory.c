/*
 * test-memory.c — the memory cap on every allocation path, what CUDA and
 * NVML report, and the behaviour on bad settings, in one process over the
 * fake driver (1 GiB GPU) with a 256 MiB cap unless a test says otherwise.
 * Each test checks that exactly the allocation that would cross the cap
 * fails, with CUDA_ERROR_OUT_OF_MEMORY, that the fake driver's own books
 * never went over, and that a free makes room again.
 */
#include "harness.h"

#include "gptest.h"

#include <stdlib.h>
#include <string.h>

#define CAP (256 * MiB)

static void open_capped(void) {
    setenv("GPUPOOL_MEMORY_LIMIT", "256M", 1);
    h_open(12080);
}

static uint64_t slice_free(void) {
    size_t f = 0, t = 0;
    ck_assert_int_eq(D.cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, CAP);
    return f;
}

START_TEST(test_alloc_cap_exact) {
    open_capped();
    CUdeviceptr a, b, c;
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 100 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&b, 156 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&c, 1), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(D.fake_used(0), CAP);
    ck_assert_uint_eq(slice_free(), 0);
    ck_assert_int_eq(D.cuMemFree_v2(a), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), 100 * MiB);
    ck_assert_int_eq(D.cuMemAlloc_v2(&c, 100 * MiB), CUDA_SUCCESS);
    ck_assert_uint_le(D.fake_peak(0), CAP);
}
END_TEST

START_TEST(test_unknown_free_forwarded) {
    open_capped();
    CUdeviceptr a;
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 10 * MiB), CUDA_SUCCESS);
    /* The driver's own answer to a pointer nobody allocated. */
    ck_assert_int_eq(D.cuMemFree_v2((CUdeviceptr)0x1000), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(slice_free(), CAP - 10 * MiB);
    /* A double free is also the driver's to answer, and charges nothing. */
    ck_assert_int_eq(D.cuMemFree_v2(a), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(slice_free(), CAP);
}
END_TEST

START_TEST(test_pitch_charges_returned_pitch) {
    open_capped();
    CUdeviceptr p;
    size_t pitch;
    ck_assert_int_eq(D.cuMemAllocPitch_v2(&p, &pitch, 1000, 1000, 4), CUDA_SUCCESS);
    ck_assert_uint_eq(pitch, 1024);
    ck_assert_uint_eq(slice_free(), CAP - 1024 * 1000);
    /* 256 rows of 1 MiB + 1 byte pad to 1 MiB + 512: over the cap. */
    ck_assert_int_eq(D.cuMemAllocPitch_v2(&p, &pitch, MiB + 1, 255, 4), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_le(D.fake_peak(0), CAP);
}
END_TEST

START_TEST(test_managed_charged) {
    open_capped();
    CUdeviceptr a, b;
    ck_assert_int_eq(D.cuMemAllocManaged(&a, 200 * MiB, 1), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAllocManaged(&b, 100 * MiB, 1), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(D.cuMemFree_v2(a), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAllocManaged(&b, 100 * MiB, 1), CUDA_SUCCESS);
}
END_TEST

START_TEST(test_managed_ignored_by_policy) {
    setenv("GPUPOOL_MANAGED_MEMORY", "ignore", 1);
    open_capped();
    CUdeviceptr a;
    ck_assert_int_eq(D.cuMemAllocManaged(&a, 512 * MiB, 1), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP);
}
END_TEST

START_TEST(test_async_paths) {
    open_capped();
    CUdeviceptr a, b, c;
    ck_assert_int_eq(D.cuMemAllocAsync(&a, 128 * MiB, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAllocAsync_ptsz(&b, 128 * MiB, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAllocAsync(&c, MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(D.cuMemAllocAsync_ptsz(&c, MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(D.cuMemFreeAsync(a, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAllocAsync_ptsz(&c, 128 * MiB, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemFreeAsync_ptsz(b, NULL), CUDA_SUCCESS);
    /* A synchronous free of stream-ordered memory gives it back too. */
    ck_assert_int_eq(D.cuMemFree_v2(c), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP);
}
END_TEST

START_TEST(test_pools) {
    open_capped();
    CUmemoryPool dflt, dev_pool, host_pool;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ck_assert_int_eq(D.cuMemPoolCreate(&dev_pool, &props), CUDA_SUCCESS);
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    ck_assert_int_eq(D.cuMemPoolCreate(&host_pool, &props), CUDA_SUCCESS);
    ck_assert_int_eq(D.defaultPool(&dflt, 0), CUDA_SUCCESS);

    CUdeviceptr a, b, c, h;
    ck_assert_int_eq(D.cuMemAllocFromPoolAsync(&a, 128 * MiB, dev_pool, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAllocFromPoolAsync_ptsz(&b, 128 * MiB, dflt, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAllocFromPoolAsync(&c, MiB, dflt, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(D.cuMemAllocFromPoolAsync_ptsz(&c, MiB, dev_pool, NULL),
                     CUDA_ERROR_OUT_OF_MEMORY);
    /* Host pools are host memory: neither charged nor refused. */
    ck_assert_int_eq(D.cuMemAllocFromPoolAsync(&h, 512 * MiB, host_pool, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemFreeAsync(h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemFreeAsync(a, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemFreeAsync_ptsz(b, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP);
    ck_assert_int_eq(D.cuMemPoolDestroy(dev_pool), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemPoolDestroy(host_pool), CUDA_SUCCESS);
    ck_assert_uint_le(D.fake_peak(0), CAP);
}
END_TEST

START_TEST(test_vmm) {
    open_capped();
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle a, b, h;
    ck_assert_int_eq(D.cuMemCreate(&a, 200 * MiB, &prop, 0), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemCreate(&b, 100 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    ck_assert_int_eq(D.cuMemCreate(&h, 512 * MiB, &prop, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP - 200 * MiB);
    ck_assert_int_eq(D.cuMemRelease(h), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemRelease(a), CUDA_SUCCESS);
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ck_assert_int_eq(D.cuMemCreate(&b, 256 * MiB, &prop, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), 0);
    ck_assert_uint_le(D.fake_peak(0), CAP);
}
END_TEST

START_TEST(test_arrays) {
    open_capped();
    CUDA_ARRAY_DESCRIPTOR d2 = {
        .Width = 8192, .Height = 8192, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUarray big, small, vol;
    ck_assert_int_eq(D.cuArrayCreate_v2(&big, &d2), CUDA_ERROR_OUT_OF_MEMORY);
    d2.NumChannels = 1;
    d2.Width = d2.Height = 4096; /* 64 MiB */
    ck_assert_int_eq(D.cuArrayCreate_v2(&small, &d2), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP - 64 * MiB);
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 1024,
                                  .Height = 1024,
                                  .Depth = 64,
                                  .Format = CU_AD_FORMAT_HALF,
                                  .NumChannels = 2}; /* 256 MiB */
    ck_assert_int_eq(D.cuArray3DCreate_v2(&vol, &d3), CUDA_ERROR_OUT_OF_MEMORY);
    d3.Depth = 32;
    ck_assert_int_eq(D.cuArray3DCreate_v2(&vol, &d3), CUDA_SUCCESS);
    CUmipmappedArray mip;
    CUDA_ARRAY3D_DESCRIPTOR dm = {
        .Width = 4096, .Height = 4096, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    /* 64 MiB at level 0 and a third more below: more than the 64 MiB left. */
    ck_assert_int_eq(D.cuMipmappedArrayCreate(&mip, &dm, 13), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(D.cuArrayDestroy(vol), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMipmappedArrayCreate(&mip, &dm, 13), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMipmappedArrayDestroy(mip), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuArrayDestroy(small), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP);
    ck_assert_uint_le(D.fake_peak(0), CAP);
}
END_TEST

START_TEST(test_context_memory) {
    setenv("GPUPOOL_CONTEXT_MEMORY", "64M", 1);
    setenv("GPUPOOL_FAKE_CONTEXT_MEMORY", "64M", 1);
    open_capped();
    ck_assert_uint_eq(slice_free(), CAP - 64 * MiB);
    CUcontext ctx, prim;
    ck_assert_int_eq(D.cuCtxCreate_v4(&ctx, NULL, 0, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP - 128 * MiB);
    CUdeviceptr a, b;
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 100 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&b, 100 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_le(D.fake_peak(0), CAP);
    /* Destroying the context frees its memory and its allocations. */
    ck_assert_int_eq(D.cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&prim, 0), CUDA_SUCCESS);
    ck_assert_int_eq(D.ctxSetCurrent(prim), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP - 64 * MiB);
    ck_assert_uint_eq(D.fake_used(0), 64 * MiB);
    /* Older context creation entry points are charged the same way. */
    ck_assert_int_eq(D.cuCtxCreate_v2(&ctx, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuCtxCreate_v3(&ctx, NULL, 0, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuCtxCreate_v4(&ctx, NULL, 0, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), 0);
    ck_assert_int_eq(D.cuCtxCreate_v2(&ctx, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_le(D.fake_peak(0), CAP);
}
END_TEST

START_TEST(test_primary_reset_and_release) {
    open_capped();
    CUdeviceptr a;
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 200 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP);
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 200 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    CUcontext prim;
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&prim, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(slice_free(), CAP);
    ck_assert_uint_eq(D.fake_used(0), 0);
}
END_TEST

START_TEST(test_report_cuda_and_nvml) {
    open_capped();
    CUdeviceptr a;
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 56 * MiB), CUDA_SUCCESS);
    size_t total;
    ck_assert_int_eq(D.cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(total, CAP);
    nvmlDevice_t dev;
    ck_assert_int_eq(D.nvmlHandle(0, &dev), NVML_SUCCESS);
    nvmlMemory_t m;
    ck_assert_int_eq(D.nvmlMem(dev, &m), NVML_SUCCESS);
    ck_assert_uint_eq(m.total, CAP);
    ck_assert_uint_eq(m.used, 56 * MiB);
    ck_assert_uint_eq(m.free, 200 * MiB);
    nvmlMemory_v2_t m2 = {.version = GP_NVML_MEMORY_V2};
    ck_assert_int_eq(D.nvmlMem2(dev, &m2), NVML_SUCCESS);
    ck_assert_uint_eq(m2.total, CAP);
    ck_assert_uint_eq(m2.used + m2.reserved + m2.free, CAP);
    ck_assert_uint_eq(m2.free, 200 * MiB);
    /* The driver's own argument checks still apply. */
    m2.version = 1;
    ck_assert_int_eq(D.nvmlMem2(dev, &m2), NVML_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_report_never_underflows) {
    open_capped();
    /* Someone outside the slice fills the GPU: free follows the GPU. */
    void *raw;
    D.fake_symbol("cuMemAlloc", 12080, 0, &raw);
    CUdeviceptr big, mine;
    ck_assert_int_eq(((gp_pfn_cuMemAlloc_v2)raw)(&big, 900 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&mine, 100 * MiB), CUDA_SUCCESS);
    uint64_t f = slice_free();
    ck_assert_uint_eq(f, 24 * MiB);
    nvmlDevice_t dev;
    nvmlMemory_t m;
    ck_assert_int_eq(D.nvmlHandle(0, &dev), NVML_SUCCESS);
    ck_assert_int_eq(D.nvmlMem(dev, &m), NVML_SUCCESS);
    ck_assert_uint_le(m.free, m.total);
    ck_assert_uint_eq(m.free, 24 * MiB);
}
END_TEST

START_TEST(test_cap_above_gpu_is_clamped) {
    setenv("GPUPOOL_MEMORY_LIMIT", "4G", 1);
    h_capture_stderr();
    h_open(13000);
    size_t f, t;
    ck_assert_int_eq(D.cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, 1024 * MiB);
    CUdeviceptr a;
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 1024 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&a, 1), CUDA_ERROR_OUT_OF_MEMORY);
    const char *msg = h_captured();
    ck_assert_ptr_nonnull(strstr(msg, "GPUPOOL_MEMORY_LIMIT=4G is above"));
    ck_assert_ptr_null(strstr(strstr(msg, "is above") + 1, "is above")); /* said once */
}
END_TEST

/* Sizes read as everywhere in gpupool: "0.25G" is 256 MiB exactly (the
 * interposer once had a parser of its own that refused decimals). */
START_TEST(test_decimal_limit) {
    setenv("GPUPOOL_MEMORY_LIMIT", "0.25G", 1);
    h_open(12080);
    size_t f, t;
    ck_assert_int_eq(D.cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, 256 * MiB);
}
END_TEST

/* Every bad setting: one message naming it, and allocations refused. */
static void check_refused(const char *var, const char *value) {
    setenv(var, value, 1);
    h_capture_stderr();
    h_open_noctx(12080);
    CUcontext ctx;
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_NOT_PERMITTED);
    ck_assert_int_eq(D.cuCtxCreate_v2(&ctx, 0, 0), CUDA_ERROR_NOT_PERMITTED);
    const char *msg = h_captured();
    ck_assert_msg(strstr(msg, var) && strstr(msg, "refused"), "message was: %s", msg);
    ck_assert_uint_eq(D.fake_used(0), 0);
}

START_TEST(test_bad_limit) {
    check_refused("GPUPOOL_MEMORY_LIMIT", "12X");
}
END_TEST

START_TEST(test_bad_share) {
    check_refused("GPUPOOL_COMPUTE_SHARE", "150");
}
END_TEST

START_TEST(test_bad_slice_name) {
    check_refused("GPUPOOL_SLICE", "../etc/passwd");
}
END_TEST

START_TEST(test_unknown_device) {
    open_capped();
    CUcontext ctx;
    /* The fake GPU has one device; ordinal 3 gets the driver's answer. */
    ck_assert_int_eq(D.cuCtxCreate_v2(&ctx, 0, 3), CUDA_ERROR_INVALID_DEVICE);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 3;
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(D.cuMemCreate(&h, MiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
}
END_TEST

START_TEST(test_async_pool_vmm_cycles_return_to_baseline) {
    open_capped();
    CUdeviceptr keep;
    ck_assert_int_eq(D.cuMemAlloc_v2(&keep, 10 * MiB), CUDA_SUCCESS);
    uint64_t base_free = slice_free(), base_used = D.fake_used(0);
    CUmemoryPool pool;
    ck_assert_int_eq(D.defaultPool(&pool, 0), CUDA_SUCCESS);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    for (int i = 0; i < h_scaled(100000); i++) {
        CUdeviceptr p;
        CUmemGenericAllocationHandle h;
        size_t sz = (size_t)(i % 64 + 1) * 4096;
        switch (i % 3) {
        case 0:
            ck_assert_int_eq(D.cuMemAllocAsync(&p, sz, NULL), CUDA_SUCCESS);
            ck_assert_int_eq(D.cuMemFreeAsync(p, NULL), CUDA_SUCCESS);
            break;
        case 1:
            ck_assert_int_eq(D.cuMemAllocFromPoolAsync_ptsz(&p, sz, pool, NULL), CUDA_SUCCESS);
            ck_assert_int_eq(D.cuMemFreeAsync_ptsz(p, NULL), CUDA_SUCCESS);
            break;
        default:
            ck_assert_int_eq(D.cuMemCreate(&h, sz, &prop, 0), CUDA_SUCCESS);
            ck_assert_int_eq(D.cuMemRelease(h), CUDA_SUCCESS);
        }
    }
    ck_assert_uint_eq(slice_free(), base_free);
    ck_assert_uint_eq(D.fake_used(0), base_used);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_alloc_cap_exact);
    tcase_add_test(tc, test_unknown_free_forwarded);
    tcase_add_test(tc, test_pitch_charges_returned_pitch);
    tcase_add_test(tc, test_managed_charged);
    tcase_add_test(tc, test_managed_ignored_by_policy);
    tcase_add_test(tc, test_async_paths);
    tcase_add_test(tc, test_pools);
    tcase_add_test(tc, test_vmm);
    tcase_add_test(tc, test_arrays);
    tcase_add_test(tc, test_context_memory);
    tcase_add_test(tc, test_primary_reset_and_release);
    tcase_add_test(tc, test_report_cuda_and_nvml);
    tcase_add_test(tc, test_report_never_underflows);
    tcase_add_test(tc, test_cap_above_gpu_is_clamped);
    tcase_add_test(tc, test_decimal_limit);
    tcase_add_test(tc, test_bad_limit);
    tcase_add_test(tc, test_bad_share);
    tcase_add_test(tc, test_bad_slice_name);
    tcase_add_test(tc, test_unknown_device);
    tcase_add_test(tc, test_async_pool_vmm_cycles_return_to_baseline);
}

GP_TEST_MAIN("interpose/memory", add_tests)
