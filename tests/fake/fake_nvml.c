/*
 * fake_nvml.c — TEST DOUBLE: a fake libnvidia-ml.so.1 over the fake GPUs.
 *
 * It answers from the fake libcuda's books (it links against the fake
 * libcuda.so.1 and reads them through the gpfake_* functions): memory is
 * what the fake driver really has allocated, UUIDs are the fake GPUs', and
 * per-process utilisation is each process's share of the GPU's kernel
 * timeline since the caller's lastSeenTimeStamp (one sample per process,
 * stamped now), which is what the compute-share throttle reads.
 */
#include "fake.h"

#include "interpose/entries.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define MAX_PIDS    256

/* What the fake has beyond the entries the interposer knows (entries.h). */
#define FAKE_PROTO_(sym, params, args) FAKE_EXPORT nvmlReturn_t sym params;
GP_NVML_USED(FAKE_PROTO_)
FAKE_EXPORT nvmlReturn_t nvmlShutdown(void);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *dev);

struct nvmlDevice_st {
    int index;
};
static struct nvmlDevice_st devices[GPFAKE_MAX_GPUS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};

static int valid(nvmlDevice_t d) {
    return d >= devices && d < devices + gpfake_count();
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    *count = (unsigned)gpfake_count();
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *dev) {
    if (i >= (unsigned)gpfake_count())
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
    for (int i = 0; i < gpfake_count(); i++) {
        uuid_text(i, text, sizeof text);
        if (strcmp(text, uuid) == 0) {
            *dev = &devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m) {
    if (!valid(dev) || !m)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->total = gpfake_total(dev->index);
    m->used = gpfake_used(dev->index);
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m) {
    if (!valid(dev) || !m || m->version != GP_NVML_MEMORY_V2)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->total = gpfake_total(dev->index);
    m->reserved = 0;
    m->used = gpfake_used(dev->index);
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

/* One sample per process that ran kernels on the GPU since since_us. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev,
                                                         nvmlProcessUtilizationSample_t *samples,
                                                         unsigned int *count,
                                                         unsigned long long since_us) {
    if (!valid(dev) || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long now_us =
        (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
    if (since_us == 0 || since_us >= now_us)
        since_us = now_us > 1000000 ? now_us - 1000000 : 0;
    int64_t from = (int64_t)since_us * 1000, to = (int64_t)now_us * 1000;
    int pids[MAX_PIDS], npids = gpfake_timeline_pids(dev->index, from, to, pids, MAX_PIDS);
    if (!samples || *count < (unsigned)npids) {
        *count = (unsigned)npids;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < npids; i++) {
        uint64_t busy = gpfake_busy_ns(dev->index, pids[i], from, to);
        samples[i] = (nvmlProcessUtilizationSample_t){
            .pid = (unsigned)pids[i],
            .timeStamp = now_us,
            .smUtil = (unsigned)((busy * 100 + (uint64_t)(to - from) / 2) / (uint64_t)(to - from)),
        };
    }
    *count = (unsigned)npids;
    return NVML_SUCCESS;
}
