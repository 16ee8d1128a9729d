/*
 * deep-lib.c — a library linked against the (fake) driver, calling
 * cuMemAlloc_v2 directly, for test-resolve: opened with RTLD_DEEPBIND, or
 * into a new link-map namespace with dlmopen, its reference would bind to
 * the driver itself unless the interposer's dlopen and dlmopen keep it from
 * doing so.
 */
#include <stddef.h>

typedef unsigned long long CUdeviceptr;
int cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
int deep_alloc(CUdeviceptr *dptr, size_t bytes);

int deep_alloc(CUdeviceptr *dptr, size_t bytes) {
    return cuMemAlloc_v2(dptr, bytes);
}
