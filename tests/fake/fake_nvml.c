/*
 * fake_nvml.c — TEST DOUBLE: a fake libnvidia-ml.so.1 over the fake GPUs,
 * the one fake NVML of every test.
 *
 * It implements every entry point of common/gp_nvml.h and answers from the
 * fake libcuda's books (it links against the fake libcuda.so.1 and reads
 * them through the gpfake_* functions): memory is what the fake driver
 * really has allocated, per GPU and per process, UUIDs are the fake GPUs',
 * busy time and per-process utilisation come from each GPU's kernel
 * timeline. What a real GPU would say that the books cannot (its name, MIG
 * mode, a fixed busy figure, memory held outside the fake) is configured by
 * the environment variables of fake.h.
 */
#include "fake.h"

#include "common/gp_nvml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define MAX_PIDS    256

#define FAKE_PROTO_(sym, params, args) FAKE_EXPORT nvmlReturn_t sym params;
GP_NVML_ENTRIES(FAKE_PROTO_)

struct nvmlDevice_st {
    int index;
};
static struct nvmlDevice_st devices[GPFAKE_MAX_GPUS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};

static int valid(nvmlDevice_t d) {
    return d >= devices && d < devices + gpfake_count();
}

/* The GPU in MIG mode (GPUPOOL_FAKE_MIG), or -1. */
static int mig_index(void) {
    const char *s = gpfake_getenv("GPUPOOL_FAKE_MIG");
    return s != NULL && *s != '\0' ? atoi(s) : -1;
}

static unsigned long long now_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
    return gpfake_getenv("GPUPOOL_FAKE_NVML_INIT_FAIL") ? NVML_ERROR_DRIVER_NOT_LOADED
                                                        : NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned)gpfake_count();
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *dev) {
    if (i >= (unsigned)gpfake_count() || !dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &devices[i];
    return NVML_SUCCESS;
}

static void uuid_text(int gpu, char *out, size_t len) {
    uint8_t b[16];
    gpfake_uuid(gpu, b);
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int len) {
    if (!valid(dev) || !uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    char text[GP_NVML_UUID_LEN];
    uuid_text(dev->index, text, sizeof text);
    if (strlen(text) >= len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(uuid, text);
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev) {
    char text[GP_NVML_UUID_LEN];
    for (int i = 0; uuid && dev && i < gpfake_count(); i++) {
        uuid_text(i, text, sizeof text);
        if (strcmp(text, uuid) == 0) {
            *dev = &devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int len) {
    const char *s = gpfake_getenv("GPUPOOL_FAKE_GPU_NAME");
    if (!valid(dev) || !name)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!s || !*s)
        s = "NVIDIA H200";
    if (strlen(s) >= len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(name, s);
    return NVML_SUCCESS;
}

/* Memory in use on a GPU: the fake driver's books plus what the environment
 * says is held outside them, never beyond the total. */
static unsigned long long used_on(int gpu) {
    const char *s = gpfake_getenv("GPUPOOL_FAKE_OTHER_MEMORY");
    unsigned long long total = gpfake_total(gpu);
    unsigned long long used = gpfake_used(gpu) + (s ? strtoull(s, NULL, 10) : 0);
    return used < total ? used : total;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m) {
    if (!valid(dev) || !m)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->total = gpfake_total(dev->index);
    m->used = used_on(dev->index);
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m) {
    if (!valid(dev) || !m || m->version != GP_NVML_MEMORY_V2)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->total = gpfake_total(dev->index);
    m->reserved = 0;
    m->used = used_on(dev->index);
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

/* GPUs without MIG answer NOT_SUPPORTED, as real ones do. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current,
                                              unsigned int *pending) {
    if (!valid(dev) || !current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->index != mig_index())
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = 1;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util) {
    if (!valid(dev) || !util)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->index == mig_index())
        return NVML_ERROR_NOT_SUPPORTED;
    const char *s = gpfake_getenv("GPUPOOL_FAKE_BUSY");
    unsigned int busy = 0;
    if (s && *s) {
        for (int i = 0; *s != '\0' && i <= dev->index; i++) {
            char *end;
            busy = (unsigned int)strtoul(s, &end, 10);
            s = *end == ',' ? end + 1 : end;
        }
    } else {
        int64_t to = (int64_t)now_us() * 1000, from = to - 1000000000LL;
        busy = (unsigned int)(gpfake_busy_ns(dev->index, 0, from, to) * 100 / 1000000000ULL);
    }
    util->gpu = busy > 100 ? 100 : busy;
    util->memory = 0;
    return NVML_SUCCESS;
}

/* The fake GPUs are /dev/nvidia0, /dev/nvidia1, ... in NVML's order. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor) {
    if (!valid(dev) || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minor = (unsigned)dev->index;
    return NVML_SUCCESS;
}

/* On buses 0x10, 0x11, ... of domain 0. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    if (!valid(dev) || !pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    pci->bus = 0x10u + (unsigned)dev->index;
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02x:00.0", pci->bus);
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02x:00.0", pci->bus);
    pci->pciDeviceId = 0x233510deu; /* an H200's device id, vendor NVIDIA */
    return NVML_SUCCESS;
}

/* One sample per process that ran kernels on the GPU since since_us. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev,
                                                         nvmlProcessUtilizationSample_t *samples,
                                                         unsigned int *count,
                                                         unsigned long long since_us) {
    if (!valid(dev) || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long now = now_us();
    if (since_us == 0 || since_us >= now)
        since_us = now > 1000000 ? now - 1000000 : 0;
    int64_t from = (int64_t)since_us * 1000, to = (int64_t)now * 1000;
    int pids[MAX_PIDS], npids = gpfake_timeline_pids(dev->index, from, to, pids, MAX_PIDS);
    if (!samples || *count < (unsigned)npids) {
        *count = (unsigned)npids;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < npids; i++) {
        uint64_t busy = gpfake_busy_ns(dev->index, pids[i], from, to);
        samples[i] = (nvmlProcessUtilizationSample_t){
            .pid = (unsigned)pids[i],
            .timeStamp = now,
            .smUtil = (unsigned)((busy * 100 + (uint64_t)(to - from) / 2) / (uint64_t)(to - from)),
        };
    }
    *count = (unsigned)npids;
    return NVML_SUCCESS;
}

/* Every live process holding memory on the GPU, with its bytes, as the
 * driver's books say (whether or not an interposer saw the allocation). As
 * NVML: *count in is the room in infos; with too little room, *count out is
 * what is needed and the answer INSUFFICIENT_SIZE. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev,
                                                                 unsigned int *count,
                                                                 nvmlProcessInfo_t *infos) {
    if (!valid(dev) || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    int pids[MAX_PIDS];
    uint64_t bytes[MAX_PIDS];
    int n = gpfake_processes(dev->index, pids, bytes, MAX_PIDS);
    if (n > MAX_PIDS)
        n = MAX_PIDS;
    if (*count < (unsigned)n || (!infos && n > 0)) {
        *count = (unsigned)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < n; i++)
        infos[i] = (nvmlProcessInfo_t){
            .pid = (unsigned)pids[i],
            .usedGpuMemory = bytes[i],
            .gpuInstanceId = 0xFFFFFFFFu,
            .computeInstanceId = 0xFFFFFFFFu,
        };
    *count = (unsigned)n;
    return NVML_SUCCESS;
}
