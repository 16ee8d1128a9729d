/*
 * context.c — contexts: their own memory is charged, and what they held is
 * given back when they go.
 *
 * A CUDA context costs device memory of its own (code, stacks, the
 * driver's heaps) that no allocation call shows. The interposer charges
 * GPUPOOL_CONTEXT_MEMORY bytes (default 256 MiB) for each context the
 * process creates and once for a device's primary context while this
 * process retains it. Destroying a context, releasing the last retain of a
 * primary context or resetting it frees every allocation made in it, so
 * their charges are dropped too: accounting never outlives the memory.
 */
#include "interpose/gpuslice.h"

#define MAX_ORDINALS 64

/* Per CUDA ordinal: this process's retains of the primary context, the
 * context itself once seen, and the ledger GPU charged for it. */
static unsigned prim_retains[MAX_ORDINALS];
static CUcontext prim_ctx[MAX_ORDINALS];

void gps__ctx_after_fork(void) {
    for (int i = 0; i < MAX_ORDINALS; i++) {
        prim_retains[i] = 0;
        prim_ctx[i] = NULL;
    }
}

/* Gives back the allocations a destroyed context held. */
static void ctx_gone(CUcontext ctx) {
    if (!ctx)
        return;
    uint64_t per_dev[GP_LEDGER_MAX_DEVICES] = {0};
    gps__track_drop_ctx(ctx, per_dev);
    for (int d = 0; d < GP_LEDGER_MAX_DEVICES; d++)
        gps__release(d, per_dev[d]);
    __atomic_add_fetch(&gps__ctx_generation, 1, __ATOMIC_RELAXED);
}

/* Charges a new context on ordinal dev; returns the ledger index in *idx. */
static CUresult charge_ctx(CUdevice dev, int *idx) {
    gps__init();
    *idx = gps__device_index(dev);
    return gps__charge(*idx, gps__cfg.ctx_memory);
}

/* Completes a context creation (see memory.c's settle()). */
static CUresult settle_ctx(CUresult r, int idx, CUcontext *pctx) {
    if (r != CUDA_SUCCESS) {
        gps__release(idx, gps__cfg.ctx_memory);
        return r;
    }
    struct gps__track t = {.bytes = gps__cfg.ctx_memory, .dev = idx, .ctx = *pctx};
    if (gps__track_put(GP_K_CTX, (uint64_t)(uintptr_t)*pctx, &t) != 0) {
        GP_CU(cuCtxDestroy_v2, *pctx);
        gps__release(idx, gps__cfg.ctx_memory);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    int idx;
    CUresult r = charge_ctx(dev, &idx);
    if (r != CUDA_SUCCESS)
        return r;
    return settle_ctx(GP_CU(cuCtxCreate_v2, pctx, flags, dev), idx, pctx);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *aff, int naff, unsigned int flags,
                        CUdevice dev) {
    int idx;
    CUresult r = charge_ctx(dev, &idx);
    if (r != CUDA_SUCCESS)
        return r;
    return settle_ctx(GP_CU(cuCtxCreate_v3, pctx, aff, naff, flags, dev), idx, pctx);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                        CUdevice dev) {
    int idx;
    CUresult r = charge_ctx(dev, &idx);
    if (r != CUDA_SUCCESS)
        return r;
    return settle_ctx(GP_CU(cuCtxCreate_v4, pctx, params, flags, dev), idx, pctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
    gps__init();
    struct gps__track t;
    int known = gps__track_take(GP_K_CTX, (uint64_t)(uintptr_t)ctx, &t);
    CUresult r = GP_CU(cuCtxDestroy_v2, ctx);
    if (r != CUDA_SUCCESS) {
        if (known)
            gps__track_put(GP_K_CTX, (uint64_t)(uintptr_t)ctx, &t);
        return r;
    }
    ctx_gone(ctx);
    if (known)
        gps__release(t.dev, t.bytes);
    return r;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    gps__init();
    if (dev < 0 || dev >= MAX_ORDINALS)
        return GP_CU(cuDevicePrimaryCtxRetain, pctx, dev);
    int idx = gps__device_index(dev);
    int first = __atomic_fetch_add(&prim_retains[dev], 1, __ATOMIC_ACQ_REL) == 0;
    CUresult r = first ? gps__charge(idx, gps__cfg.ctx_memory) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
        __atomic_fetch_sub(&prim_retains[dev], 1, __ATOMIC_ACQ_REL);
        return r;
    }
    r = GP_CU(cuDevicePrimaryCtxRetain, pctx, dev);
    if (r != CUDA_SUCCESS) {
        if (first)
            gps__release(idx, gps__cfg.ctx_memory);
        __atomic_fetch_sub(&prim_retains[dev], 1, __ATOMIC_ACQ_REL);
        return r;
    }
    __atomic_store_n(&prim_ctx[dev], *pctx, __ATOMIC_RELAXED);
    return r;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    gps__init();
    CUresult r = GP_CU(cuDevicePrimaryCtxRelease_v2, dev);
    if (r != CUDA_SUCCESS || dev < 0 || dev >= MAX_ORDINALS)
        return r;
    unsigned old = __atomic_load_n(&prim_retains[dev], __ATOMIC_ACQUIRE);
    while (old > 0 && !__atomic_compare_exchange_n(&prim_retains[dev], &old, old - 1, 0,
                                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    if (old == 1) {
        /* The last retain went: the driver destroyed the context. */
        ctx_gone(__atomic_load_n(&prim_ctx[dev], __ATOMIC_RELAXED));
        gps__release(gps__device_index(dev), gps__cfg.ctx_memory);
    }
    return r;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    gps__init();
    CUresult r = GP_CU(cuDevicePrimaryCtxReset_v2, dev);
    /* The driver freed every allocation of the primary context; the retain
     * count (and so the context's own charge) stays, as the driver's does. */
    if (r == CUDA_SUCCESS && dev >= 0 && dev < MAX_ORDINALS)
        ctx_gone(__atomic_load_n(&prim_ctx[dev], __ATOMIC_RELAXED));
    return r;
}
