/*
 * slice-child.c — a workload process for the interposer's multi-process
 * tests. It links libgpuslice.so (as if preloaded) and drives the fake
 * driver from its command line:
 *
 *   slice-child alloc MIB [MIB...]   allocate each amount, then exit 0
 *   ... hold                         after the allocations, sleep until killed
 *   ... exec MIB...                  after them, exec itself with the rest
 *
 * Exit status: 0 when every allocation succeeded, 2 at the first
 * CUDA_ERROR_OUT_OF_MEMORY, 1 on any other error. Before holding it writes
 * one byte on stdout so that the parent knows the allocations are done.
 */
#include "interpose/entries.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *lib = getenv("GPUPOOL_CUDA_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!h || argc < 2 || strcmp(argv[1], "alloc") != 0)
        return 1;
    gp_pfn_cuGetProcAddress_v2 gpa = (gp_pfn_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
    void *retain, *set_current, *alloc;
    CUdriverProcAddressQueryResult st;
    if (!gpa || gpa("cuDevicePrimaryCtxRetain", &retain, 12080, 0, &st) ||
        gpa("cuCtxSetCurrent", &set_current, 12080, 0, &st) ||
        gpa("cuMemAlloc", &alloc, 12080, 0, &st))
        return 1;
    CUcontext ctx;
    if (((gp_pfn_cuDevicePrimaryCtxRetain)retain)(&ctx, 0) != CUDA_SUCCESS ||
        ((CUresult(*)(CUcontext))set_current)(ctx) != CUDA_SUCCESS)
        return 1;
    int i = 2;
    for (; i < argc && strcmp(argv[i], "hold") != 0 && strcmp(argv[i], "exec") != 0; i++) {
        CUdeviceptr p;
        CUresult r = ((gp_pfn_cuMemAlloc_v2)alloc)(&p, strtoull(argv[i], NULL, 10) << 20);
        if (r != CUDA_SUCCESS)
            return r == CUDA_ERROR_OUT_OF_MEMORY ? 2 : 1;
    }
    if (i < argc && strcmp(argv[i], "hold") == 0) {
        if (write(1, "x", 1) != 1)
            return 1;
        for (;;)
            pause();
    }
    if (i < argc && strcmp(argv[i], "exec") == 0) {
        static char alloc_word[] = "alloc";
        argv[i] = alloc_word;
        execv("/proc/self/exe", argv + i - 1);
        return 1;
    }
    return 0;
}
