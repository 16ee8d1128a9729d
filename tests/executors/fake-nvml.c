/*
 * fake-nvml.c — TEST DOUBLE for libnvidia-ml.so.1: the eight entry points
 * the local executor's inventory calls, over GPUs described by environment
 * variables, so that the NVML path runs on machines without a GPU.
 *
 *   GPEXEC_FAKE_NVML_GPUS       how many GPUs (default 2, at most 8)
 *   GPEXEC_FAKE_NVML_INIT_FAIL  if set, nvmlInit_v2 fails (as without a driver)
 *   GPEXEC_FAKE_NVML_MIG        index of the GPU in MIG mode (default 1; -1: none)
 *   GPEXEC_FAKE_NVML_BUSY       busy percent per GPU, comma-separated ("50,25";
 *                               default 0; missing entries repeat the last)
 *   GPEXEC_FAKE_NVML_MEM_USED   bytes in use on every GPU (default 0)
 *
 * Every GPU is an "NVIDIA H200" with 141 GiB; the MIG GPU answers
 * NOT_SUPPORTED to nvmlDeviceGetUtilizationRates, as MIG GPUs do; the others
 * answer NOT_SUPPORTED to nvmlDeviceGetMigMode, as GPUs without MIG do. UUIDs
 * are "GPU-fake-0000-<index>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fake_dev *dev_t_;
typedef struct {
    unsigned long long total, free, used;
} mem_t_;
typedef struct {
    unsigned int gpu, memory;
} util_t_;

enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, DRIVER_NOT_LOADED = 9 };

struct fake_dev {
    unsigned int index;
};

static struct fake_dev devs[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
static int initialised;

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, dev_t_ *dev);
int nvmlDeviceGetUUID(dev_t_ dev, char *uuid, unsigned int len);
int nvmlDeviceGetName(dev_t_ dev, char *name, unsigned int len);
int nvmlDeviceGetMemoryInfo(dev_t_ dev, mem_t_ *mem);
int nvmlDeviceGetMigMode(dev_t_ dev, unsigned int *cur, unsigned int *pending);
int nvmlDeviceGetUtilizationRates(dev_t_ dev, util_t_ *util);

static int mig_index(void) {
    const char *s = getenv("GPEXEC_FAKE_NVML_MIG");
    return s != NULL ? atoi(s) : 1;
}

static unsigned int count(void) {
    const char *s = getenv("GPEXEC_FAKE_NVML_GPUS");
    int n = s != NULL ? atoi(s) : 2;
    return n < 0 ? 0 : n > 8 ? 8 : (unsigned int)n;
}

int nvmlInit_v2(void) {
    if (getenv("GPEXEC_FAKE_NVML_INIT_FAIL") != NULL) {
        return DRIVER_NOT_LOADED;
    }
    initialised = 1;
    return OK;
}

int nvmlShutdown(void) {
    initialised = 0;
    return OK;
}

int nvmlDeviceGetCount_v2(unsigned int *n) {
    if (!initialised) {
        return UNINITIALIZED;
    }
    *n = count();
    return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, dev_t_ *dev) {
    if (!initialised || index >= count()) {
        return INVALID_ARGUMENT;
    }
    *dev = &devs[index];
    return OK;
}

int nvmlDeviceGetUUID(dev_t_ dev, char *uuid, unsigned int len) {
    snprintf(uuid, len, "GPU-fake-0000-%u", dev->index);
    return OK;
}

int nvmlDeviceGetName(dev_t_ dev, char *name, unsigned int len) {
    (void)dev;
    snprintf(name, len, "NVIDIA H200");
    return OK;
}

int nvmlDeviceGetMemoryInfo(dev_t_ dev, mem_t_ *mem) {
    (void)dev;
    mem->total = 141ULL << 30;
    const char *s = getenv("GPEXEC_FAKE_NVML_MEM_USED");
    mem->used = s != NULL ? strtoull(s, NULL, 10) : 0;
    mem->free = mem->total - mem->used;
    return OK;
}

int nvmlDeviceGetMigMode(dev_t_ dev, unsigned int *cur, unsigned int *pending) {
    if ((int)dev->index != mig_index()) {
        return NOT_SUPPORTED;
    }
    *cur = *pending = 1;
    return OK;
}

int nvmlDeviceGetUtilizationRates(dev_t_ dev, util_t_ *util) {
    if ((int)dev->index == mig_index()) {
        return NOT_SUPPORTED;
    }
    const char *s = getenv("GPEXEC_FAKE_NVML_BUSY");
    unsigned int busy = 0;
    for (unsigned int i = 0; s != NULL && *s != '\0' && i <= dev->index; i++) {
        char *end;
        busy = (unsigned int)strtoul(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
    }
    util->gpu = busy;
    util->memory = 0;
    return OK;
}
