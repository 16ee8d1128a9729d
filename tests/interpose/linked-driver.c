/*
 * linked-driver.c — a workload linked with -lcuda (the fake driver of
 * tests/fake), for test-resolve: it calls the driver's functions by their
 * symbols, without dlsym, so that whatever the dynamic linker bound them to
 * at start is what runs. It makes a context and allocates MIB of device
 * memory: exit 0 when the allocation succeeded, 2 on
 * CUDA_ERROR_OUT_OF_MEMORY, 1 on any other error.
 *
 *   linked-driver MIB
 */
#include "interpose/cuda_abi.h"

#include <stdlib.h>

CUresult cuInit(unsigned int flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);

int main(int argc, char **argv) {
    CUcontext ctx;
    CUdeviceptr p;
    if (argc != 2 || cuInit(0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    CUresult r = cuMemAlloc_v2(&p, (size_t)strtoull(argv[1], NULL, 10) << 20);
    return r == CUDA_SUCCESS ? 0 : r == CUDA_ERROR_OUT_OF_MEMORY ? 2 : 1;
}
