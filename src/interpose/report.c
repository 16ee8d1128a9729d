/*
 * report.c — what CUDA and NVML say about memory: the slice, not the GPU.
 *
 * cuMemGetInfo_v2, cuDeviceTotalMem_v2 and nvmlDeviceGetMemoryInfo (v1, v2)
 * first ask the real driver (so its errors and argument checks stay its
 * own), then replace the figures with the slice's: total is the cap (never
 * above the GPU's memory), used is what the whole slice has charged on that
 * GPU, and free is total - used, never negative (unsigned arithmetic that
 * underflows is how peers came to report 17 PiB free) and never above what
 * the GPU really has free. NVML names GPUs by handle, so its figures are
 * looked up by the GPU's UUID; a GPU the slice has not used yet reports the
 * cap with nothing used.
 */
#include "interpose/gpuslice.h"

#include <string.h>

#include "common/units.h"

struct view {
    uint64_t total, used, free;
};

/* The slice's view of ledger GPU dev (or, with dev < 0, of a GPU the slice
 * has not used) given the driver's physical figures. */
static struct view slice_view(int dev, uint64_t phys_total, uint64_t phys_free) {
    uint64_t cap = gps__cfg.mem_limit ? gps__cfg.mem_limit : phys_total, used = 0;
    if (dev >= 0)
        gps__usage(dev, &cap, &used);
    struct view v;
    v.total = cap < phys_total ? cap : phys_total;
    v.used = used;
    v.free = used >= v.total ? 0 : v.total - used;
    if (v.free > phys_free)
        v.free = phys_free;
    return v;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    gps__init();
    size_t f = 0, t = 0;
    CUresult r = GP_CU(cuMemGetInfo_v2, &f, &t);
    if (r != CUDA_SUCCESS || !gps__ledger())
        goto out;
    int dev;
    CUcontext ctx;
    if (gps__current(&dev, &ctx) != CUDA_SUCCESS)
        goto out;
    struct view v = slice_view(dev, t, f);
    t = v.total;
    f = v.free;
out:
    if (r == CUDA_SUCCESS) {
        if (free_bytes)
            *free_bytes = f;
        if (total_bytes)
            *total_bytes = t;
    }
    return r;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    gps__init();
    CUresult r = GP_CU(cuDeviceTotalMem_v2, bytes, dev);
    if (r == CUDA_SUCCESS && gps__ledger()) {
        struct view v = slice_view(gps__device_index(dev), *bytes, *bytes);
        *bytes = v.total;
    }
    return r;
}

/* ---- NVML ---------------------------------------------------------------- */

/* Parses NVML's "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into the 16
 * bytes CUDA gives. Returns 0, or -1 for another form (e.g. a MIG UUID). */
static int parse_uuid(const char *s, uint8_t out[16]) {
    if (strncmp(s, "GPU-", 4) != 0)
        return -1;
    s += 4;
    for (int i = 0; i < 16; i++) {
        while (*s == '-')
            s++;
        int hi = gp_hex_digit((unsigned char)s[0]),
            lo = hi < 0 ? -1 : gp_hex_digit((unsigned char)s[1]);
        if (lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
        s += 2;
    }
    return *s == '\0' ? 0 : -1;
}

/* The ledger index of an NVML device, or -1 when the slice has not used it. */
static int nvml_dev(nvmlDevice_t device) {
    char text[GP_NVML_UUID_LEN];
    uint8_t uuid[16];
    gp_ledger *l = gps__ledger();
    if (!l || GP_NVML(nvmlDeviceGetUUID, device, text, sizeof text) != NVML_SUCCESS ||
        parse_uuid(text, uuid) != 0)
        return -1;
    int d = gps__ledger_find(l, uuid);
    return d < 0 ? -1 : d;
}

/* Replaces NVML's figures of device's memory with the slice's. v1's have no
 * reservation (reserved is NULL): they come out as v2's with none. */
static void nvml_slice(nvmlDevice_t device, unsigned long long *total, unsigned long long *reserved,
                       unsigned long long *used, unsigned long long *avail) {
    if (!gps__ledger())
        return;
    struct view v = slice_view(nvml_dev(device), *total, *avail);
    /* The driver's reservation stays visible, inside the slice's total. */
    uint64_t held = 0;
    if (reserved != NULL) {
        held = *reserved < v.total ? *reserved : v.total;
        *reserved = held;
    }
    *total = v.total;
    *used = v.used < v.total - held ? v.used : v.total - held;
    *avail = v.total - held - *used;
    if (*avail > v.free)
        *avail = v.free;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    if (!gps__nvml_ready())
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = GP_NVML(nvmlDeviceGetMemoryInfo, device, memory);
    if (r == NVML_SUCCESS)
        nvml_slice(device, &memory->total, NULL, &memory->used, &memory->free);
    return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    if (!gps__nvml_ready())
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = GP_NVML(nvmlDeviceGetMemoryInfo_v2, device, memory);
    if (r == NVML_SUCCESS)
        nvml_slice(device, &memory->total, &memory->reserved, &memory->used, &memory->free);
    return r;
}
