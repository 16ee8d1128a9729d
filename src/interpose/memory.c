/*
 * memory.c — the memory cap on every allocation path of the driver API.
 *
 * Each path follows the same order: find the GPU, charge the ledger (an
 * atomic reservation under the ledger's lock; over the cap the call fails
 * with CUDA_ERROR_OUT_OF_MEMORY before the driver is asked), call the real
 * driver, and either roll the charge back (the driver failed) or record the
 * handle so that its free gives back exactly that charge. Frees take the
 * record out before calling the driver, so that an address the driver
 * reuses at once for another thread's allocation is never confused with
 * the old one; a free the driver refuses puts the record back.
 *
 * Paths and what they charge:
 *  - cuMemAlloc_v2, cuMemAllocAsync(_ptsz): the bytes asked, on the current
 *    context's GPU (stream-ordered frees give the charge back when the free
 *    is enqueued; the pool reuses that memory for later allocations);
 *  - cuMemAllocPitch_v2: an estimate (rows padded to 512 bytes) before the
 *    call, corrected to pitch x height from the pitch the driver returns;
 *  - cuMemAllocManaged: the bytes asked, on the current GPU, unless
 *    GPUPOOL_MANAGED_MEMORY=ignore (docs/interposer.md gives the policy);
 *  - cuMemAllocFromPoolAsync(_ptsz): the bytes asked, on the pool's GPU;
 *    pools made by cuMemPoolCreate are recorded with their location, and
 *    pools on the host are not charged;
 *  - cuMemCreate / cuMemRelease: the bytes of device-located physical
 *    memory; host locations are neither charged nor refused;
 *  - cuArrayCreate_v2, cuArray3DCreate_v2, cuMipmappedArrayCreate: width x
 *    height x depth x channels x element size (all levels of a mipmapped
 *    array), rounded up to 2 MiB; unknown formats count 16 bytes a channel.
 */
#include "interpose/gpuslice.h"

#define ARRAY_ROUND  (2ULL << 20)
#define PITCH_ALIGN  512ULL
#define POOL_ON_HOST (-100) /* the "GPU" recorded for a pool in host memory */

/* A charge taken for a call in progress. */
struct charge {
    int dev;
    CUcontext ctx;
    uint64_t bytes;
};

/* Charges bytes on the current context's GPU. Returns CUDA_SUCCESS with
 * *c filled; the error to return; or CUDA_ERROR_INVALID_CONTEXT when there
 * is no current context (the caller then lets the driver answer). */
static CUresult charge_current(uint64_t bytes, struct charge *c) {
    gps__init();
    CUresult r = gps__current(&c->dev, &c->ctx);
    if (r != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    c->bytes = bytes;
    return gps__charge(c->dev, bytes);
}

/* Completes an allocation: on driver failure gives the charge back and
 * returns the driver's code; on success records key and returns success.
 * If the record cannot be kept (no host memory) the allocation is undone
 * through `undo` and CUDA_ERROR_OUT_OF_MEMORY returned. */
static CUresult settle(CUresult r, const struct charge *c, int kind, uint64_t key,
                       CUresult (*undo)(uint64_t)) {
    if (r != CUDA_SUCCESS) {
        gps__release(c->dev, c->bytes);
        return r;
    }
    struct gps__track t = {.bytes = c->bytes, .dev = c->dev, .ctx = c->ctx};
    if (gps__track_put(kind, key, &t) != 0) {
        undo(key);
        gps__release(c->dev, c->bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult undo_mem(uint64_t key) {
    return GP_CU(cuMemFree_v2, (CUdeviceptr)key);
}
static CUresult undo_vmm(uint64_t key) {
    return GP_CU(cuMemRelease, (CUmemGenericAllocationHandle)key);
}
static CUresult undo_array(uint64_t key) {
    return GP_CU(cuArrayDestroy, (CUarray)(uintptr_t)key);
}
static CUresult undo_mipmap(uint64_t key) {
    return GP_CU(cuMipmappedArrayDestroy, (CUmipmappedArray)(uintptr_t)key);
}

/* The body of a free: takes the record of (kind, key) out, makes the
 * driver's free `call`, then gives the charge back, or puts the record back
 * when the driver refused. Pointers without a record are just forwarded. */
#define FREE_TRACKED(kind, key, call)                                                              \
    do {                                                                                           \
        struct gps__track t_;                                                                      \
        gps__init();                                                                               \
        int known_ = gps__track_take((kind), (key), &t_);                                          \
        CUresult r_ = (call);                                                                      \
        if (known_ && r_ == CUDA_SUCCESS)                                                          \
            gps__release(t_.dev, t_.bytes);                                                        \
        else if (known_)                                                                           \
            gps__track_put((kind), (key), &t_);                                                    \
        return r_;                                                                                 \
    } while (0)

/* The body of an allocation charged on the current context's GPU: `call`
 * is the real call (made once), `key` what it created (read on success
 * only). Without a current context the driver answers, uncharged. */
#define CHARGED(bytes, kind, key, undo, call)                                                      \
    do {                                                                                           \
        struct charge c_;                                                                          \
        CUresult r_ = charge_current((bytes), &c_);                                                \
        if (r_ == CUDA_ERROR_INVALID_CONTEXT)                                                      \
            return (call);                                                                         \
        if (r_ != CUDA_SUCCESS)                                                                    \
            return r_;                                                                             \
        r_ = (call);                                                                               \
        return settle(r_, &c_, (kind), r_ == CUDA_SUCCESS ? (uint64_t)(key) : 0, (undo));          \
    } while (0)

/* ---- linear memory -------------------------------------------------------- */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    CHARGED(bytesize, GP_K_MEM, *dptr, undo_mem, GP_CU(cuMemAlloc_v2, dptr, bytesize));
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elemsize) {
    uint64_t row = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    struct charge c;
    CUresult r =
        charge_current(height && row > UINT64_MAX / height ? UINT64_MAX : row * height, &c);
    if (r == CUDA_ERROR_INVALID_CONTEXT)
        return GP_CU(cuMemAllocPitch_v2, dptr, pitch, width, height, elemsize);
    if (r != CUDA_SUCCESS)
        return r;
    r = GP_CU(cuMemAllocPitch_v2, dptr, pitch, width, height, elemsize);
    if (r == CUDA_SUCCESS) {
        /* Correct the estimate to what the driver really padded. */
        uint64_t real = (uint64_t)*pitch * height;
        if (real > c.bytes && gps__charge(c.dev, real - c.bytes) != CUDA_SUCCESS) {
            GP_CU(cuMemFree_v2, *dptr);
            gps__release(c.dev, c.bytes);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (real < c.bytes)
            gps__release(c.dev, c.bytes - real);
        c.bytes = real;
    }
    return settle(r, &c, GP_K_MEM, r == CUDA_SUCCESS ? *dptr : 0, undo_mem);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    gps__init();
    if (!gps__cfg.managed_charge)
        return GP_CU(cuMemAllocManaged, dptr, bytesize, flags);
    CHARGED(bytesize, GP_K_MEM, *dptr, undo_mem, GP_CU(cuMemAllocManaged, dptr, bytesize, flags));
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
    FREE_TRACKED(GP_K_MEM, dptr, GP_CU(cuMemFree_v2, dptr));
}

/* ---- stream-ordered allocation and pools ---------------------------------- */

/* The undo of a stream-ordered allocation is a synchronous free, which the
 * driver accepts for pool memory. */
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    CHARGED(bytesize, GP_K_MEM, *dptr, undo_mem, GP_CU(cuMemAllocAsync, dptr, bytesize, hStream));
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    CHARGED(bytesize, GP_K_MEM, *dptr, undo_mem,
            GP_CU(cuMemAllocAsync_ptsz, dptr, bytesize, hStream));
}

/* Allocation from an explicit pool: a host pool is not charged, a pool we
 * saw created is charged on its own GPU, any other pool (a device's default
 * or current pool) on the current context's GPU. */
static CUresult alloc_from_pool(int ptsz, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                CUstream hStream) {
    gps__init();
    struct gps__track p;
    int known = gps__track_get(GP_K_POOL, (uint64_t)(uintptr_t)pool, &p);
    if (known && p.dev == POOL_ON_HOST)
        return ptsz ? GP_CU(cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, hStream)
                    : GP_CU(cuMemAllocFromPoolAsync, dptr, bytesize, pool, hStream);
    struct charge c;
    CUresult r = gps__current(&c.dev, &c.ctx);
    if (r == CUDA_SUCCESS) {
        if (known)
            c.dev = p.dev;
        c.bytes = bytesize;
        r = gps__charge(c.dev, bytesize);
        if (r != CUDA_SUCCESS)
            return r;
    }
    CUresult a = ptsz ? GP_CU(cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, hStream)
                      : GP_CU(cuMemAllocFromPoolAsync, dptr, bytesize, pool, hStream);
    if (r != CUDA_SUCCESS) /* no current context: nothing was charged */
        return a;
    return settle(a, &c, GP_K_MEM, a == CUDA_SUCCESS ? *dptr : 0, undo_mem);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
    return alloc_from_pool(0, dptr, bytesize, pool, hStream);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
    return alloc_from_pool(1, dptr, bytesize, pool, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    FREE_TRACKED(GP_K_MEM, dptr, GP_CU(cuMemFreeAsync, dptr, hStream));
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    FREE_TRACKED(GP_K_MEM, dptr, GP_CU(cuMemFreeAsync_ptsz, dptr, hStream));
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
    gps__init();
    CUresult r = GP_CU(cuMemPoolCreate, pool, props);
    if (r == CUDA_SUCCESS && props) {
        /* A device pool on an unknown GPU keeps that index, so that its
         * allocations are refused rather than charged elsewhere. */
        struct gps__track t = {.dev = POOL_ON_HOST};
        if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
            t.dev = gps__device_index(props->location.id);
        gps__track_put(GP_K_POOL, (uint64_t)(uintptr_t)*pool, &t);
    }
    return r;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
    gps__init();
    struct gps__track t;
    gps__track_take(GP_K_POOL, (uint64_t)(uintptr_t)pool, &t);
    return GP_CU(cuMemPoolDestroy, pool);
}

/* ---- virtual memory management ------------------------------------------- */

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags) {
    gps__init();
    if (!prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return GP_CU(cuMemCreate, handle, size, prop, flags);
    struct charge c = {.dev = gps__device_index(prop->location.id), .bytes = size};
    CUcontext ignored;
    int dev_ignored;
    if (gps__current(&dev_ignored, &ignored) != CUDA_SUCCESS)
        ignored = NULL;
    c.ctx = ignored;
    CUresult r = gps__charge(c.dev, size);
    if (r != CUDA_SUCCESS)
        return r;
    r = GP_CU(cuMemCreate, handle, size, prop, flags);
    return settle(r, &c, GP_K_VMM, r == CUDA_SUCCESS ? *handle : 0, undo_vmm);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    FREE_TRACKED(GP_K_VMM, handle, GP_CU(cuMemRelease, handle));
}

/* ---- arrays ---------------------------------------------------------------- */

static uint64_t format_bytes(CUarray_format f) {
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 16;
    }
}

/* Saturating product of array extents (zero extents count as one). */
static uint64_t array_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch) {
    uint64_t dims[5] = {w ? w : 1, h ? h : 1, d ? d : 1, ch ? ch : 1, format_bytes(f)};
    uint64_t v = 1;
    for (int i = 0; i < 5; i++) {
        if (v > UINT64_MAX / dims[i])
            return UINT64_MAX;
        v *= dims[i];
    }
    return v;
}

static uint64_t round_array(uint64_t v) {
    return v > UINT64_MAX - ARRAY_ROUND ? UINT64_MAX
                                        : (v + ARRAY_ROUND - 1) / ARRAY_ROUND * ARRAY_ROUND;
}

CUresult cuArrayCreate_v2(CUarray *handle, const CUDA_ARRAY_DESCRIPTOR *desc) {
    gps__init();
    if (!desc)
        return GP_CU(cuArrayCreate_v2, handle, desc);
    CHARGED(round_array(array_bytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels)),
            GP_K_ARRAY, (uintptr_t)*handle, undo_array, GP_CU(cuArrayCreate_v2, handle, desc));
}

CUresult cuArray3DCreate_v2(CUarray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc) {
    gps__init();
    if (!desc)
        return GP_CU(cuArray3DCreate_v2, handle, desc);
    CHARGED(round_array(array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format,
                                    desc->NumChannels)),
            GP_K_ARRAY, (uintptr_t)*handle, undo_array, GP_CU(cuArray3DCreate_v2, handle, desc));
}

CUresult cuArrayDestroy(CUarray handle) {
    FREE_TRACKED(GP_K_ARRAY, (uint64_t)(uintptr_t)handle, GP_CU(cuArrayDestroy, handle));
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                unsigned int levels) {
    gps__init();
    if (!desc)
        return GP_CU(cuMipmappedArrayCreate, handle, desc, levels);
    uint64_t total = 0;
    size_t w = desc->Width, h = desc->Height, d = desc->Depth;
    for (unsigned i = 0; i < (levels ? levels : 1) && total != UINT64_MAX; i++) {
        uint64_t lv = array_bytes(w, h, d, desc->Format, desc->NumChannels);
        total = lv > UINT64_MAX - total ? UINT64_MAX : total + lv;
        w = w > 1 ? w / 2 : w;
        h = h > 1 ? h / 2 : h;
        d = d > 1 ? d / 2 : d;
    }
    CHARGED(round_array(total), GP_K_MIPMAP, (uintptr_t)*handle, undo_mipmap,
            GP_CU(cuMipmappedArrayCreate, handle, desc, levels));
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray handle) {
    FREE_TRACKED(GP_K_MIPMAP, (uint64_t)(uintptr_t)handle, GP_CU(cuMipmappedArrayDestroy, handle));
}
