/*
 * fake_cuda.c — TEST DOUBLE: a fake libcuda.so.1 over host memory.
 *
 * Implements the driver entry points the interposer wraps or calls, with
 * the driver's argument checks and error codes where the tests depend on
 * them: device memory is mmap'ed host memory (MAP_NORESERVE, so a fake
 * 141 GiB GPU costs nothing until touched), arrays, VMM handles, pools and
 * contexts are small host objects, and every allocation is booked in the
 * shared fake state (fake_state.c) so that tests can check what the
 * interposer let through. cuGetProcAddress resolves names by its own table
 * of (name, symbol, version, per-thread-stream) modelled on the real
 * driver's rules, written independently of the interposer's list so that
 * the two check each other.
 */
#include "fake_internal.h"

#include "interpose/entries.h"

#include <pthread.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

/* The driver functions the fake has beyond those entries.h declares. */
#define FAKE_PROTO_(sym, base, ver, stream, params, args) FAKE_EXPORT CUresult sym params;
GP_CU_USED(FAKE_PROTO_)
FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal);
FAKE_EXPORT CUresult cuDeviceGetCount(int *n);
FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx);
FAKE_EXPORT CUresult cuCtxSynchronize(void);
FAKE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev);
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s);
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s);
FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);

struct CUctx_st {
    int gpu; /* the fake GPU its memory is on */
    int dev; /* the ordinal it was made on (cuCtxGetDevice) */
};
struct CUmemPoolHandle_st {
    int gpu; /* -1: host */
};

/* One allocation: kind + key identify it (key: address or handle). */
enum { K_MEM = 1, K_ARRAY, K_MIPMAP, K_VMM, K_POOL, K_CTX };
struct rec {
    int kind;
    uint64_t key;
    uint64_t bytes;
    int gpu; /* -1: host memory, not booked */
    CUcontext ctx;
    void *saved; /* checkpointed: the contents, in host memory */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static void *reg_root;
static __thread CUcontext current;
static struct CUctx_st primary[GPFAKE_MAX_GPUS];
static unsigned primary_retains[GPFAKE_MAX_GPUS];
static struct CUmemPoolHandle_st default_pool[GPFAKE_MAX_GPUS];

static int rec_cmp(const void *a, const void *b) {
    const struct rec *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static void reg_put(int kind, uint64_t key, uint64_t bytes, int gpu, CUcontext ctx) {
    struct rec *r = malloc(sizeof *r);
    *r = (struct rec){kind, key, bytes, gpu, ctx, NULL};
    pthread_mutex_lock(&reg_lock);
    tsearch(r, &reg_root, rec_cmp);
    pthread_mutex_unlock(&reg_lock);
}

/* Removes and returns the record of (kind, key), or NULL. */
static struct rec *reg_take(int kind, uint64_t key) {
    struct rec probe = {.kind = kind, .key = key}, *r = NULL;
    pthread_mutex_lock(&reg_lock);
    void **node = tfind(&probe, &reg_root, rec_cmp);
    if (node) {
        r = *node;
        tdelete(&probe, &reg_root, rec_cmp);
    }
    pthread_mutex_unlock(&reg_lock);
    return r;
}

/* This process's CUDA ordinals: the fake GPU each one is. The identity until
 * a restore onto other GPUs (fake_ckpt_move_in) moves an ordinal onto the
 * GPU its pair names: as with the driver, the process keeps its ordinals and
 * its contexts, and what an ordinal says of itself (cuDeviceGetUuid) is the
 * new GPU's. */
static int ordinal_gpu[GPFAKE_MAX_GPUS] = {0, 1, 2, 3, 4, 5, 6, 7};

static int fake_gpu_of(CUdevice dev) {
    fake_init();
    return dev >= 0 && dev < fake_cfg.ngpus ? __atomic_load_n(&ordinal_gpu[dev], __ATOMIC_RELAXED)
                                            : -1;
}

/* Books and maps `bytes` of device memory on gpu. */
static CUresult alloc_mem_(int gpu, uint64_t bytes, CUdeviceptr *dptr) {
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (gpu >= 0 && fake_charge(gpu, bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    static uint64_t next_addr = 0x7e0000000000ULL;
    void *p = fake_cfg.no_backing ? (void *)(uintptr_t)__atomic_fetch_add(
                                        &next_addr, (bytes + 4095) & ~4095ULL, __ATOMIC_RELAXED)
                                  : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        if (gpu >= 0)
            fake_uncharge(gpu, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)(uintptr_t)p;
    reg_put(K_MEM, *dptr, bytes, gpu, current);
    return CUDA_SUCCESS;
}

/* The calls the checkpoint lock blocks go through the gate (fake_ckpt.c). */
static CUresult alloc_mem(int gpu, uint64_t bytes, CUdeviceptr *dptr) {
    fake_gate_enter();
    CUresult r = alloc_mem_(gpu, bytes, dptr);
    fake_gate_leave();
    return r;
}

static void free_rec(struct rec *r) {
    if (r->kind == K_MEM) {
        if (!fake_cfg.no_backing)
            munmap((void *)(uintptr_t)r->key, r->bytes);
    } else if (r->kind != K_CTX)
        free((void *)(uintptr_t)r->key);
    if (r->gpu >= 0)
        fake_uncharge(r->gpu, r->bytes);
    free(r);
}

static CUresult free_handle(int kind, uint64_t key) {
    fake_gate_enter();
    struct rec *r = reg_take(kind, key);
    if (r != NULL)
        free_rec(r);
    fake_gate_leave();
    if (r == NULL)
        return kind == K_MEM ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

/* A handle object booked as `bytes` on gpu (arrays, VMM memory). */
static CUresult alloc_handle(int kind, int gpu, uint64_t bytes, uint64_t *key) {
    fake_gate_enter();
    int full = gpu >= 0 && fake_charge(gpu, bytes) != 0;
    if (!full) {
        void *obj = malloc(16);
        *key = (uint64_t)(uintptr_t)obj;
        reg_put(kind, *key, bytes, gpu, current);
    }
    fake_gate_leave();
    return full ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/* What the real driver does when a context goes: free all it holds. */
static struct {
    CUcontext ctx;
    struct rec *found[4096];
    int n;
} sweep;

static void sweep_visit(const void *node, VISIT v, int depth) {
    (void)depth;
    struct rec *r = *(struct rec *const *)node;
    if ((v == postorder || v == leaf) && r->ctx == sweep.ctx && r->kind != K_CTX &&
        r->kind != K_POOL && sweep.n < 4096)
        sweep.found[sweep.n++] = r;
}

static void free_ctx_memory(CUcontext ctx) {
    pthread_mutex_lock(&reg_lock);
    sweep.ctx = ctx;
    sweep.n = 0;
    twalk(reg_root, sweep_visit);
    for (int i = 0; i < sweep.n; i++)
        tdelete(sweep.found[i], &reg_root, rec_cmp);
    int n = sweep.n;
    struct rec *found[4096];
    memcpy(found, sweep.found, sizeof(found[0]) * (size_t)n);
    pthread_mutex_unlock(&reg_lock);
    for (int i = 0; i < n; i++)
        free_rec(found[i]);
}

/* ---- device and driver -------------------------------------------------------- */

FAKE_EXPORT CUresult cuInit(unsigned int flags) {
    fake_init();
    fake_ckpt_attach();
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *v) {
    fake_init();
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = fake_cfg.driver_version;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *n) {
    fake_init();
    *n = fake_cfg.ngpus;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
    if (fake_gpu_of(ordinal) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
    int gpu = fake_gpu_of(dev);
    if (gpu < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    gpfake_uuid(gpu, (uint8_t *)uuid->bytes);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    return cuDeviceGetUuid_v2(uuid, dev);
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    if (fake_gpu_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = fake_cfg.total;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *total = fake_cfg.total;
    *free_bytes = fake_cfg.total - gpfake_used(current->gpu);
    return CUDA_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------ */

static CUresult ctx_create_(CUcontext *pctx, CUdevice dev) {
    int gpu = fake_gpu_of(dev);
    if (gpu < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (fake_cfg.ctx_memory && fake_charge(gpu, fake_cfg.ctx_memory) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUcontext c = malloc(sizeof *c);
    c->gpu = gpu;
    c->dev = dev;
    reg_put(K_CTX, (uint64_t)(uintptr_t)c, fake_cfg.ctx_memory, gpu, c);
    *pctx = current = c;
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, CUdevice dev) {
    fake_ckpt_attach();
    fake_gate_enter();
    CUresult r = ctx_create_(pctx, dev);
    fake_gate_leave();
    return r;
}

FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    (void)flags;
    return ctx_create(pctx, dev);
}

FAKE_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *aff, int naff,
                                    unsigned int flags, CUdevice dev) {
    (void)aff, (void)naff, (void)flags;
    return ctx_create(pctx, dev);
}

FAKE_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                    CUdevice dev) {
    (void)params, (void)flags;
    return ctx_create(pctx, dev);
}

FAKE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
    struct rec *r = reg_take(K_CTX, (uint64_t)(uintptr_t)ctx);
    if (!r)
        return CUDA_ERROR_INVALID_CONTEXT;
    free_ctx_memory(ctx);
    free_rec(r);
    if (current == ctx)
        current = NULL;
    free(ctx);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
    *pctx = current;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    current = ctx;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice *dev) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = current->dev;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSynchronize(void) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_gate_enter();
    fake_sync(current->gpu);
    fake_gate_leave();
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    int gpu = fake_gpu_of(dev);
    if (gpu < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    fake_ckpt_attach();
    if (primary_retains[dev] == 0 && fake_cfg.ctx_memory &&
        fake_charge(gpu, fake_cfg.ctx_memory) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    primary_retains[dev]++;
    primary[dev].gpu = gpu;
    primary[dev].dev = dev;
    *pctx = &primary[dev];
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    if (fake_gpu_of(dev) < 0 || primary_retains[dev] == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--primary_retains[dev] == 0) {
        free_ctx_memory(&primary[dev]);
        if (fake_cfg.ctx_memory)
            fake_uncharge(primary[dev].gpu, fake_cfg.ctx_memory);
    }
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    if (fake_gpu_of(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    free_ctx_memory(&primary[dev]);
    return CUDA_SUCCESS;
}

/* ---- memory --------------------------------------------------------------------- */

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_gate_enter(); /* the delay too: a call under way holds off the lock */
    CUresult r = alloc_mem_(current->gpu, bytesize, dptr);
    if (fake_cfg.alloc_delay_us)
        usleep((useconds_t)fake_cfg.alloc_delay_us);
    fake_gate_leave();
    return r;
}

FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                        size_t height, unsigned int elemsize) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!pitch || width == 0 || height == 0 || (elemsize != 4 && elemsize != 8 && elemsize != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (width + 511) / 512 * 512;
    CUresult r = alloc_mem(current->gpu, (uint64_t)p * height, dptr);
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}

FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    (void)flags;
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    return alloc_mem(current->gpu, bytesize, dptr);
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    return free_handle(K_MEM, dptr);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    return alloc_mem(current->gpu, bytesize, dptr);
}

FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s) {
    (void)s;
    return alloc_async(dptr, bytesize);
}

FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream s) {
    (void)s;
    return alloc_async(dptr, bytesize);
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_mem(pool->gpu, bytesize, dptr);
}

FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream s) {
    (void)s;
    return alloc_from_pool(dptr, bytesize, pool);
}

FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream s) {
    (void)s;
    return alloc_from_pool(dptr, bytesize, pool);
}

/* Copies between host memory and the start of one device allocation of this
 * process (the fake's device memory is the process's own mapping). */
static CUresult memcpy_dev(void *host, CUdeviceptr dev, size_t bytes, int to_dev) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_gate_enter();
    struct rec probe = {.kind = K_MEM, .key = dev}, *hit = NULL;
    pthread_mutex_lock(&reg_lock);
    void **node = tfind(&probe, &reg_root, rec_cmp);
    if (node != NULL)
        hit = *node;
    pthread_mutex_unlock(&reg_lock);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (hit != NULL && bytes <= hit->bytes && !fake_cfg.no_backing) {
        if (to_dev)
            memcpy((void *)(uintptr_t)dev, host, bytes);
        else
            memcpy(host, (const void *)(uintptr_t)dev, bytes);
        r = CUDA_SUCCESS;
    }
    fake_gate_leave();
    return r;
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
    return memcpy_dev((void *)(uintptr_t)src, dst, bytes, 1);
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
    return memcpy_dev(dst, src, bytes, 0);
}

FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
    (void)s;
    return free_handle(K_MEM, dptr);
}

FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) {
    (void)s;
    return free_handle(K_MEM, dptr);
}

FAKE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
    if (!pool || !props)
        return CUDA_ERROR_INVALID_VALUE;
    int gpu = -1;
    if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
        (gpu = fake_gpu_of(props->location.id)) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    CUmemoryPool p = malloc(sizeof *p);
    p->gpu = gpu;
    reg_put(K_POOL, (uint64_t)(uintptr_t)p, 0, -1, NULL);
    *pool = p;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
    return free_handle(K_POOL, (uint64_t)(uintptr_t)pool);
}

FAKE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
    int gpu = fake_gpu_of(dev);
    if (gpu < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    default_pool[gpu].gpu = gpu;
    *pool = &default_pool[gpu];
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags) {
    (void)flags;
    if (!handle || !prop || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int gpu = -1;
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if ((gpu = fake_gpu_of(prop->location.id)) < 0)
            return CUDA_ERROR_INVALID_DEVICE;
        break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t key;
    CUresult r = alloc_handle(K_VMM, gpu, size, &key);
    if (r == CUDA_SUCCESS)
        *handle = key;
    return r;
}

FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    return free_handle(K_VMM, handle);
}

/* ---- arrays ---------------------------------------------------------------------- */

static uint64_t texel(CUarray_format f, unsigned ch) {
    uint64_t e = f == CU_AD_FORMAT_UNSIGNED_INT8 || f == CU_AD_FORMAT_SIGNED_INT8 ? 1
                 : f == CU_AD_FORMAT_UNSIGNED_INT16 || f == CU_AD_FORMAT_SIGNED_INT16 ||
                         f == CU_AD_FORMAT_HALF
                     ? 2
                     : 4;
    return e * (ch ? ch : 1);
}

static CUresult array_create(int kind, uint64_t bytes, uint64_t *key) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    return alloc_handle(kind, current->gpu, bytes, key);
}

FAKE_EXPORT CUresult cuArrayCreate_v2(CUarray *h, const CUDA_ARRAY_DESCRIPTOR *d) {
    if (!h || !d || d->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t key = 0,
             bytes = d->Width * (d->Height ? d->Height : 1) * texel(d->Format, d->NumChannels);
    CUresult r = array_create(K_ARRAY, bytes, &key);
    *h = (CUarray)(uintptr_t)key;
    return r;
}

FAKE_EXPORT CUresult cuArray3DCreate_v2(CUarray *h, const CUDA_ARRAY3D_DESCRIPTOR *d) {
    if (!h || !d || d->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t key = 0, bytes = d->Width * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
                              texel(d->Format, d->NumChannels);
    CUresult r = array_create(K_ARRAY, bytes, &key);
    *h = (CUarray)(uintptr_t)key;
    return r;
}

FAKE_EXPORT CUresult cuArrayDestroy(CUarray h) {
    return free_handle(K_ARRAY, (uint64_t)(uintptr_t)h);
}

FAKE_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *h, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                            unsigned int levels) {
    if (!h || !d || d->Width == 0 || levels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t bytes = 0, w = d->Width, hh = d->Height ? d->Height : 1, dd = d->Depth ? d->Depth : 1;
    for (unsigned i = 0; i < levels; i++) {
        bytes += w * hh * dd * texel(d->Format, d->NumChannels);
        w = w > 1 ? w / 2 : 1;
        hh = hh > 1 ? hh / 2 : 1;
        dd = dd > 1 ? dd / 2 : 1;
    }
    uint64_t key = 0;
    CUresult r = array_create(K_MIPMAP, bytes, &key);
    *h = (CUmipmappedArray)(uintptr_t)key;
    return r;
}

FAKE_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h) {
    return free_handle(K_MIPMAP, (uint64_t)(uintptr_t)h);
}

/* ---- launches and streams ------------------------------------------------------ */

static CUresult launch(void) {
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_gate_enter();
    fake_launch(current->gpu);
    fake_gate_leave();
    return CUDA_SUCCESS;
}

#define FAKE_LAUNCH_(sym, base, ver, stream, params, args)                                         \
    FAKE_EXPORT CUresult sym params {                                                              \
        return launch();                                                                           \
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
GP_CU_LAUNCH(FAKE_LAUNCH_)
#pragma GCC diagnostic pop

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s) {
    (void)s;
    return cuCtxSynchronize();
}

FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
    (void)s;
    return cuCtxSynchronize();
}

/* ---- cuGetProcAddress ------------------------------------------------------------ */

/* The fake's own symbol table: (name asked for, symbol given, version from
 * which the symbol is the answer, per-thread-stream form). */
#define FAKE_PROC_TABLE(X)                                                                         \
    X("cuInit", cuInit, 2000, 0)                                                                   \
    X("cuDriverGetVersion", cuDriverGetVersion, 2020, 0)                                           \
    X("cuDeviceGet", cuDeviceGet, 2000, 0)                                                         \
    X("cuDeviceGetCount", cuDeviceGetCount, 2000, 0)                                               \
    X("cuDeviceGetUuid", cuDeviceGetUuid, 9020, 0)                                                 \
    X("cuDeviceGetUuid", cuDeviceGetUuid_v2, 11040, 0)                                             \
    X("cuDeviceTotalMem", cuDeviceTotalMem_v2, 3020, 0)                                            \
    X("cuMemGetInfo", cuMemGetInfo_v2, 3020, 0)                                                    \
    X("cuCtxCreate", cuCtxCreate_v2, 3020, 0)                                                      \
    X("cuCtxCreate", cuCtxCreate_v3, 11040, 0)                                                     \
    X("cuCtxCreate", cuCtxCreate_v4, 12050, 0)                                                     \
    X("cuCtxDestroy", cuCtxDestroy_v2, 4000, 0)                                                    \
    X("cuCtxGetCurrent", cuCtxGetCurrent, 4000, 0)                                                 \
    X("cuCtxSetCurrent", cuCtxSetCurrent, 4000, 0)                                                 \
    X("cuCtxGetDevice", cuCtxGetDevice, 2000, 0)                                                   \
    X("cuCtxSynchronize", cuCtxSynchronize, 2000, 0)                                               \
    X("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000, 0)                               \
    X("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2, 11000, 0)                         \
    X("cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset_v2, 11000, 0)                             \
    X("cuMemAlloc", cuMemAlloc_v2, 3020, 0)                                                        \
    X("cuMemAllocPitch", cuMemAllocPitch_v2, 3020, 0)                                              \
    X("cuMemAllocManaged", cuMemAllocManaged, 6000, 0)                                             \
    X("cuMemFree", cuMemFree_v2, 3020, 0)                                                          \
    X("cuMemcpyHtoD", cuMemcpyHtoD_v2, 3020, 0)                                                    \
    X("cuMemcpyDtoH", cuMemcpyDtoH_v2, 3020, 0)                                                    \
    X("cuMemAllocAsync", cuMemAllocAsync, 11020, 0)                                                \
    X("cuMemAllocAsync", cuMemAllocAsync_ptsz, 11020, 1)                                           \
    X("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020, 0)                                \
    X("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync_ptsz, 11020, 1)                           \
    X("cuMemFreeAsync", cuMemFreeAsync, 11020, 0)                                                  \
    X("cuMemFreeAsync", cuMemFreeAsync_ptsz, 11020, 1)                                             \
    X("cuMemPoolCreate", cuMemPoolCreate, 11020, 0)                                                \
    X("cuMemPoolDestroy", cuMemPoolDestroy, 11020, 0)                                              \
    X("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool, 11020, 0)                            \
    X("cuMemCreate", cuMemCreate, 10020, 0)                                                        \
    X("cuMemRelease", cuMemRelease, 10020, 0)                                                      \
    X("cuArrayCreate", cuArrayCreate_v2, 3020, 0)                                                  \
    X("cuArray3DCreate", cuArray3DCreate_v2, 3020, 0)                                              \
    X("cuArrayDestroy", cuArrayDestroy, 2000, 0)                                                   \
    X("cuMipmappedArrayCreate", cuMipmappedArrayCreate, 5000, 0)                                   \
    X("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy, 5000, 0)                                 \
    X("cuLaunchKernel", cuLaunchKernel, 4000, 0)                                                   \
    X("cuLaunchKernel", cuLaunchKernel_ptsz, 7000, 1)                                              \
    X("cuLaunchKernelEx", cuLaunchKernelEx, 11060, 0)                                              \
    X("cuLaunchKernelEx", cuLaunchKernelEx_ptsz, 11060, 1)                                         \
    X("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, 9000, 0)                             \
    X("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel_ptsz, 9000, 1)                        \
    X("cuGraphLaunch", cuGraphLaunch, 10000, 0)                                                    \
    X("cuGraphLaunch", cuGraphLaunch_ptsz, 10000, 1)                                               \
    X("cuStreamSynchronize", cuStreamSynchronize, 2000, 0)                                         \
    X("cuStreamSynchronize", cuStreamSynchronize_ptsz, 7000, 1)                                    \
    X("cuGetProcAddress", cuGetProcAddress, 11030, 0)                                              \
    X("cuGetProcAddress", cuGetProcAddress_v2, 12000, 0)                                           \
    X("cuCheckpointProcessGetRestoreThreadId", cuCheckpointProcessGetRestoreThreadId, 12080, 0)    \
    X("cuCheckpointProcessGetState", cuCheckpointProcessGetState, 12080, 0)                        \
    X("cuCheckpointProcessLock", cuCheckpointProcessLock, 12080, 0)                                \
    X("cuCheckpointProcessCheckpoint", cuCheckpointProcessCheckpoint, 12080, 0)                    \
    X("cuCheckpointProcessRestore", cuCheckpointProcessRestore, 12080, 0)                          \
    X("cuCheckpointProcessUnlock", cuCheckpointProcessUnlock, 12080, 0)

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *st);
FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                                      cuuint64_t flags);

struct proc_entry {
    const char *name, *symbol;
    void *fn;
    int version, ptsz;
};
#define FAKE_PROC_ENTRY_(name, sym, ver, ptsz) {name, #sym, (void *)sym, ver, ptsz},
static const struct proc_entry proc_table[] = {FAKE_PROC_TABLE(FAKE_PROC_ENTRY_)};

FAKE_EXPORT const char *gpfake_proc_symbol(const char *name, int version, cuuint64_t flags,
                                           void **fn) {
    int want = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct proc_entry *best = NULL, *best_legacy = NULL;
    for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; i++) {
        const struct proc_entry *e = &proc_table[i];
        if (strcmp(e->name, name) != 0 || e->version > version)
            continue;
        if (e->ptsz == want && (!best || e->version > best->version))
            best = e;
        if (!e->ptsz && (!best_legacy || e->version > best_legacy->version))
            best_legacy = e;
    }
    if (!best)
        best = best_legacy;
    *fn = best ? best->fn : NULL;
    return best ? best->symbol : NULL;
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *st) {
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    void *fn;
    int known = 0;
    for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; i++)
        known |= strcmp(proc_table[i].name, symbol) == 0;
    gpfake_proc_symbol(symbol, version, flags, &fn);
    *pfn = fn;
    if (st)
        *st = fn      ? CU_GET_PROC_ADDRESS_SUCCESS
              : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                                      cuuint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

/* ---- checkpoint: device memory to host and back (fake_ckpt.c) ------------------ */

static struct {
    struct rec **all;
    size_t n, cap;
    int failed;
} walk;

static void walk_visit(const void *node, VISIT v, int depth) {
    (void)depth;
    struct rec *r = *(struct rec *const *)node;
    if ((v != postorder && v != leaf) || r->gpu < 0 || walk.failed)
        return;
    if (walk.n == walk.cap) {
        size_t cap = walk.cap ? walk.cap * 2 : 64;
        struct rec **all = realloc(walk.all, cap * sizeof *all);
        if (all == NULL) {
            walk.failed = 1;
            return;
        }
        walk.all = all;
        walk.cap = cap;
    }
    walk.all[walk.n++] = r;
}

/* Every record on a GPU, under reg_lock (held by the caller); -1 if out of
 * memory. The process's API is locked, so nothing changes them meanwhile. */
static int gpu_records(void) {
    walk.n = 0;
    walk.failed = 0;
    twalk(reg_root, walk_visit);
    return walk.failed ? -1 : 0;
}

int fake_ckpt_move_out(uint64_t host[GPFAKE_MAX_GPUS], uint32_t *gpus) {
    pthread_mutex_lock(&reg_lock);
    int rc = gpu_records() == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    /* First the host copies, so that a failure changes nothing. */
    for (size_t i = 0; i < walk.n && rc == CUDA_SUCCESS; i++) {
        struct rec *r = walk.all[i];
        if (r->kind == K_MEM && !fake_cfg.no_backing && (r->saved = malloc(r->bytes)) == NULL)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < walk.n; i++) {
        struct rec *r = walk.all[i];
        if (rc != CUDA_SUCCESS) {
            free(r->saved);
            r->saved = NULL;
            continue;
        }
        if (r->saved != NULL) {
            void *at = (void *)(uintptr_t)r->key;
            memcpy(r->saved, at, r->bytes);
            /* What was on the device is gone: fresh pages in its place. */
            mmap(at, r->bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        }
        host[r->gpu] += r->bytes;
        *gpus |= 1u << r->gpu;
    }
    pthread_mutex_unlock(&reg_lock);
    if (rc != CUDA_SUCCESS)
        return rc;
    for (int o = 0; o < fake_cfg.ngpus; o++)
        if (primary_retains[o] > 0) {
            *gpus |= 1u << primary[o].gpu;
            host[primary[o].gpu] += fake_cfg.ctx_memory;
        }
    for (int g = 0; g < fake_cfg.ngpus; g++)
        if (host[g] > 0)
            fake_uncharge(g, host[g]);
    return CUDA_SUCCESS;
}

/* The ordinals on GPUs that were checkpointed (gpus) go to the GPUs map[]
 * names; each other ordinal keeps its GPU if no ordinal moved onto it, else
 * takes one of those left, so that each GPU is still one ordinal. */
static void remap_ordinals(const int32_t map[GPFAKE_MAX_GPUS], uint32_t gpus) {
    int next[GPFAKE_MAX_GPUS], taken[GPFAKE_MAX_GPUS] = {0};
    for (int o = 0; o < fake_cfg.ngpus; o++) {
        int g = ordinal_gpu[o];
        next[o] = gpus >> g & 1 ? map[g] : -1;
        if (next[o] >= 0)
            taken[next[o]] = 1;
    }
    for (int o = 0; o < fake_cfg.ngpus; o++)
        if (next[o] < 0 && !taken[ordinal_gpu[o]]) {
            next[o] = ordinal_gpu[o];
            taken[next[o]] = 1;
        }
    for (int o = 0, free_gpu = 0; o < fake_cfg.ngpus; o++) {
        while (next[o] < 0 && free_gpu < fake_cfg.ngpus && taken[free_gpu])
            free_gpu++;
        if (next[o] < 0 && free_gpu < fake_cfg.ngpus) {
            next[o] = free_gpu;
            taken[free_gpu] = 1;
        }
    }
    for (int o = 0; o < fake_cfg.ngpus; o++)
        if (next[o] >= 0)
            __atomic_store_n(&ordinal_gpu[o], next[o], __ATOMIC_RELAXED);
}

int fake_ckpt_move_in(const int32_t map[GPFAKE_MAX_GPUS], const uint64_t host[GPFAKE_MAX_GPUS],
                      uint32_t gpus) {
    uint64_t want[GPFAKE_MAX_GPUS] = {0};
    for (int g = 0; g < GPFAKE_MAX_GPUS; g++)
        if (gpus >> g & 1)
            want[map[g]] += host[g];
    int charged = 0;
    for (; charged < GPFAKE_MAX_GPUS; charged++)
        if (want[charged] > 0 && fake_charge(charged, want[charged]) != 0)
            break;
    if (charged < GPFAKE_MAX_GPUS) {
        for (int g = 0; g < charged; g++)
            if (want[g] > 0)
                fake_uncharge(g, want[g]);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&reg_lock);
    if (gpu_records() != 0) {
        pthread_mutex_unlock(&reg_lock);
        for (int g = 0; g < GPFAKE_MAX_GPUS; g++)
            if (want[g] > 0)
                fake_uncharge(g, want[g]);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < walk.n; i++) {
        struct rec *r = walk.all[i];
        if (r->saved != NULL) {
            memcpy((void *)(uintptr_t)r->key, r->saved, r->bytes);
            free(r->saved);
            r->saved = NULL;
        }
        r->gpu = map[r->gpu];
        if (r->kind == K_CTX)
            ((CUcontext)(uintptr_t)r->key)->gpu = r->gpu;
    }
    pthread_mutex_unlock(&reg_lock);
    for (int o = 0; o < fake_cfg.ngpus; o++)
        if (primary_retains[o] > 0)
            primary[o].gpu = map[primary[o].gpu];
    remap_ordinals(map, gpus);
    return CUDA_SUCCESS;
}
