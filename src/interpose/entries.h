/*
 * entries.h — the one list of CUDA driver and NVML entry points that the
 * interposer knows, and everything generated from it.
 *
 * Each CUDA entry is written once as
 *
 *     X(symbol, "base name", version, stream, (parameters), (arguments))
 *
 * where "base name" and version are what a caller passes to cuGetProcAddress
 * to obtain this exact symbol (the driver hands out the variant with the
 * highest version not above the caller's), and stream says whether it is the
 * legacy-stream form (GP_SL) or the per-thread-default-stream form (GP_SP,
 * the `_ptsz` symbols). From the lists this header generates the id enum,
 * typed function-pointer typedefs (gp_pfn_<symbol>), the prototypes of the
 * exported wrappers and the checked call macro GP_CU(); resolve.c generates
 * the name, version and wrapper tables from the same lists, so a new entry
 * point is one line here plus its wrapper.
 *
 * GP_CU_WRAPPED lists the symbols the library exports and wraps (the launch
 * symbols are a sublist because their wrappers are generated too);
 * GP_CU_USED lists driver functions the library calls itself but does not
 * wrap. NVML's entry points are described once for all of gpupool in
 * common/gp_nvml.h (GP_NVML_ENTRIES, with typed pointers gp_nvml_pfn_<symbol>);
 * the library resolves every one of them and GP_NVML_WRAPPED names those it
 * wraps and exports.
 */
#ifndef GP_INTERPOSE_ENTRIES_H
#define GP_INTERPOSE_ENTRIES_H

#include "interpose/cuda_abi.h"

#define GP_SL 0 /* legacy default stream, or no stream at all */
#define GP_SP 1 /* per-thread default stream (_ptsz) */

/* Kernel launches: throttled when the slice has a compute share. */
#define GP_CU_LAUNCH(X)                                                                            \
    X(cuLaunchKernel, "cuLaunchKernel", 4000, GP_SL,                                               \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
       unsigned int by, unsigned int bz, unsigned int shmem, CUstream hStream, void **params,      \
       void **extra),                                                                              \
      (f, gx, gy, gz, bx, by, bz, shmem, hStream, params, extra))                                  \
    X(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, GP_SP,                                          \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
       unsigned int by, unsigned int bz, unsigned int shmem, CUstream hStream, void **params,      \
       void **extra),                                                                              \
      (f, gx, gy, gz, bx, by, bz, shmem, hStream, params, extra))                                  \
    X(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, GP_SL,                                          \
      (const CUlaunchConfig *config, CUfunction f, void **params, void **extra),                   \
      (config, f, params, extra))                                                                  \
    X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, GP_SP,                                     \
      (const CUlaunchConfig *config, CUfunction f, void **params, void **extra),                   \
      (config, f, params, extra))                                                                  \
    X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000, GP_SL,                         \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
       unsigned int by, unsigned int bz, unsigned int shmem, CUstream hStream, void **params),     \
      (f, gx, gy, gz, bx, by, bz, shmem, hStream, params))                                         \
    X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000, GP_SP,                    \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
       unsigned int by, unsigned int bz, unsigned int shmem, CUstream hStream, void **params),     \
      (f, gx, gy, gz, bx, by, bz, shmem, hStream, params))                                         \
    X(cuGraphLaunch, "cuGraphLaunch", 10000, GP_SL, (CUgraphExec exec, CUstream hStream),          \
      (exec, hStream))                                                                             \
    X(cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, GP_SP, (CUgraphExec exec, CUstream hStream),     \
      (exec, hStream))

#define GP_CU_WRAPPED(X)                                                                           \
    X(cuGetProcAddress, "cuGetProcAddress", 11030, GP_SL,                                          \
      (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags),                         \
      (symbol, pfn, cudaVersion, flags))                                                           \
    X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, GP_SL,                                       \
      (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                          \
       CUdriverProcAddressQueryResult *symbolStatus),                                              \
      (symbol, pfn, cudaVersion, flags, symbolStatus))                                             \
    X(cuMemAlloc_v2, "cuMemAlloc", 3020, GP_SL, (CUdeviceptr * dptr, size_t bytesize),             \
      (dptr, bytesize))                                                                            \
    X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, GP_SL,                                          \
      (CUdeviceptr * dptr, size_t * pitch, size_t width, size_t height, unsigned int elemsize),    \
      (dptr, pitch, width, height, elemsize))                                                      \
    X(cuMemAllocManaged, "cuMemAllocManaged", 6000, GP_SL,                                         \
      (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags))          \
    X(cuMemFree_v2, "cuMemFree", 3020, GP_SL, (CUdeviceptr dptr), (dptr))                          \
    X(cuMemAllocAsync, "cuMemAllocAsync", 11020, GP_SL,                                            \
      (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream))          \
    X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, GP_SP,                                       \
      (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream))          \
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, GP_SL,                            \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                  \
      (dptr, bytesize, pool, hStream))                                                             \
    X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, GP_SP,                       \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                  \
      (dptr, bytesize, pool, hStream))                                                             \
    X(cuMemFreeAsync, "cuMemFreeAsync", 11020, GP_SL, (CUdeviceptr dptr, CUstream hStream),        \
      (dptr, hStream))                                                                             \
    X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, GP_SP, (CUdeviceptr dptr, CUstream hStream),   \
      (dptr, hStream))                                                                             \
    X(cuMemPoolCreate, "cuMemPoolCreate", 11020, GP_SL,                                            \
      (CUmemoryPool * pool, const CUmemPoolProps *props), (pool, props))                           \
    X(cuMemPoolDestroy, "cuMemPoolDestroy", 11020, GP_SL, (CUmemoryPool pool), (pool))             \
    X(cuMemCreate, "cuMemCreate", 10020, GP_SL,                                                    \
      (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,        \
       unsigned long long flags),                                                                  \
      (handle, size, prop, flags))                                                                 \
    X(cuMemRelease, "cuMemRelease", 10020, GP_SL, (CUmemGenericAllocationHandle handle), (handle)) \
    X(cuArrayCreate_v2, "cuArrayCreate", 3020, GP_SL,                                              \
      (CUarray * handle, const CUDA_ARRAY_DESCRIPTOR *desc), (handle, desc))                       \
    X(cuArray3DCreate_v2, "cuArray3DCreate", 3020, GP_SL,                                          \
      (CUarray * handle, const CUDA_ARRAY3D_DESCRIPTOR *desc), (handle, desc))                     \
    X(cuArrayDestroy, "cuArrayDestroy", 2000, GP_SL, (CUarray handle), (handle))                   \
    X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", 5000, GP_SL,                               \
      (CUmipmappedArray * handle, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned int levels),       \
      (handle, desc, levels))                                                                      \
    X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000, GP_SL, (CUmipmappedArray handle),  \
      (handle))                                                                                    \
    X(cuCtxCreate_v2, "cuCtxCreate", 3020, GP_SL,                                                  \
      (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))                    \
    X(cuCtxCreate_v3, "cuCtxCreate", 11040, GP_SL,                                                 \
      (CUcontext * pctx, CUexecAffinityParam * aff, int naff, unsigned int flags, CUdevice dev),   \
      (pctx, aff, naff, flags, dev))                                                               \
    X(cuCtxCreate_v4, "cuCtxCreate", 12050, GP_SL,                                                 \
      (CUcontext * pctx, CUctxCreateParams * params, unsigned int flags, CUdevice dev),            \
      (pctx, params, flags, dev))                                                                  \
    X(cuCtxDestroy_v2, "cuCtxDestroy", 4000, GP_SL, (CUcontext ctx), (ctx))                        \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, GP_SL,                           \
      (CUcontext * pctx, CUdevice dev), (pctx, dev))                                               \
    X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000, GP_SL, (CUdevice dev),     \
      (dev))                                                                                       \
    X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, GP_SL, (CUdevice dev), (dev))  \
    X(cuMemGetInfo_v2, "cuMemGetInfo", 3020, GP_SL, (size_t * free_bytes, size_t * total_bytes),   \
      (free_bytes, total_bytes))                                                                   \
    X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", 3020, GP_SL, (size_t * bytes, CUdevice dev),        \
      (bytes, dev))                                                                                \
    GP_CU_LAUNCH(X)

#define GP_CU_USED(X)                                                                              \
    X(cuInit, "cuInit", 2000, GP_SL, (unsigned int flags), (flags))                                \
    X(cuDriverGetVersion, "cuDriverGetVersion", 2020, GP_SL, (int *version), (version))            \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", 4000, GP_SL, (CUcontext * pctx), (pctx))                 \
    X(cuCtxGetDevice, "cuCtxGetDevice", 2000, GP_SL, (CUdevice * dev), (dev))                      \
    X(cuDeviceGetUuid, "cuDeviceGetUuid", 9020, GP_SL, (CUuuid * uuid, CUdevice dev), (uuid, dev)) \
    X(cuDeviceGetUuid_v2, "cuDeviceGetUuid", 11040, GP_SL, (CUuuid * uuid, CUdevice dev),          \
      (uuid, dev))

/* The NVML entry points the library wraps and exports (their signatures are
 * in common/gp_nvml.h's GP_NVML_ENTRIES, from which it resolves every entry). */
#define GP_NVML_WRAPPED(X)                                                                         \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetMemoryInfo_v2)

/* ---- generated: ids ------------------------------------------------------ */

#define GP_CU_ENUM_(sym, base, ver, stream, params, args) GP_CU_##sym,
#define GP_NVML_ENUM_(sym, params, args)                  GP_NVML_##sym,
#define GP_NVML_WENUM_(sym)                               GP_NVML_WRAP_##sym,
enum { GP_CU_WRAPPED(GP_CU_ENUM_) GP_CU_NWRAPPED };
enum { GP_CU_FIRST_USED_ = GP_CU_NWRAPPED - 1, GP_CU_USED(GP_CU_ENUM_) GP_CU_COUNT };
enum { GP_NVML_ENTRIES(GP_NVML_ENUM_) GP_NVML_COUNT };
enum { GP_NVML_WRAPPED(GP_NVML_WENUM_) GP_NVML_NWRAPPED };
#undef GP_CU_ENUM_
#undef GP_NVML_ENUM_
#undef GP_NVML_WENUM_

/* ---- generated: typed pointers and exported prototypes ------------------- */

#define GP_EXPORT __attribute__((visibility("default")))

#define GP_CU_TYPEDEF_(sym, base, ver, stream, params, args) typedef CUresult(*gp_pfn_##sym) params;
#define GP_CU_PROTO_(sym, base, ver, stream, params, args)   GP_EXPORT CUresult sym params;
#define GP_NVML_PROTO_(sym, params, args)                    GP_EXPORT nvmlReturn_t sym params;
GP_CU_WRAPPED(GP_CU_TYPEDEF_)
GP_CU_USED(GP_CU_TYPEDEF_)
GP_CU_WRAPPED(GP_CU_PROTO_)
GP_NVML_ENTRIES(GP_NVML_PROTO_)
#undef GP_CU_TYPEDEF_
#undef GP_CU_PROTO_
#undef GP_NVML_PROTO_

/* The real functions, filled by resolve.c; NULL where the driver lacks one.
 * Entries may be filled late (cuGetProcAddress can find what dlsym did not),
 * so they are read and written atomically. */
extern void *gps__cu_real[GP_CU_COUNT];
extern void *gps__nvml_real[GP_NVML_COUNT];

#define GP_CU_PTR(sym) ((gp_pfn_##sym)__atomic_load_n(&gps__cu_real[GP_CU_##sym], __ATOMIC_ACQUIRE))
#define GP_NVML_PTR(sym)                                                                           \
    ((gp_nvml_pfn_##sym)__atomic_load_n(&gps__nvml_real[GP_NVML_##sym], __ATOMIC_ACQUIRE))

/* Calls the real sym, or answers CUDA_ERROR_NOT_FOUND when the driver has no
 * such symbol: a missing entry point is an error code, never a call through
 * NULL. GP_NVML does the same with NVML_ERROR_FUNCTION_NOT_FOUND. */
#define GP_CU(sym, ...)                                                                            \
    __extension__({                                                                                \
        gp_pfn_##sym fn_ = GP_CU_PTR(sym);                                                         \
        fn_ ? fn_(__VA_ARGS__) : CUDA_ERROR_NOT_FOUND;                                             \
    })
#define GP_NVML(sym, ...)                                                                          \
    __extension__({                                                                                \
        gp_nvml_pfn_##sym fn_ = GP_NVML_PTR(sym);                                                  \
        fn_ ? fn_(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND;                                    \
    })

#endif /* GP_INTERPOSE_ENTRIES_H */
