/*
 * gp_nvml.h — the one description of the NVML binary interface that gpupool
 * uses: the types, the return codes and the entry points, for the local
 * executor (inventory, usage, the watchdog), the interposer (which wraps and
 * calls some of them) and the fake NVML of the tests (which implements them
 * all).
 *
 * NVML is always loaded at run time (dlopen), so nothing here is linked:
 * every value is one of the public, stable NVML ABI (the numbers and layouts
 * nvml.h gives these names), declared here so that gpupool builds without
 * NVIDIA's headers. Nothing may include nvml.h. Opaque handles are pointers
 * to incomplete structs, as in nvml.h, so that a mismatch is a compile error.
 *
 * GP_NVML_ENTRIES lists each entry point once, as
 *
 *     X(symbol, (parameters), (arguments))
 *
 * and generates a typed function pointer gp_nvml_pfn_<symbol> for each; the
 * parts that use the list generate their own tables from it (the executor's
 * resolution in src/executors/local/inventory.c, the interposer's in
 * src/interpose/resolve.c, the fake's prototypes in tests/fake/fake_nvml.c).
 * A new entry point is one line here.
 */
#ifndef GP_COMMON_NVML_H
#define GP_COMMON_NVML_H

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_UNKNOWN = 999
};

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

/* NVML_STRUCT_VERSION(Memory, 2): the size in the low bits, 2 in the top byte. */
#define GP_NVML_MEMORY_V2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

/* Percent of the last sample period a kernel ran / memory was read or written. */
typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* microseconds */
    unsigned int smUtil;          /* percent */
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

/* One process using a GPU, as nvmlDeviceGetComputeRunningProcesses_v3 gives
 * it (nvml.h's nvmlProcessInfo_t, the same layout as nvmlProcessInfo_v2_t).
 * usedGpuMemory is GP_NVML_VALUE_NOT_AVAILABLE where the driver cannot say. */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes */
    unsigned int gpuInstanceId;       /* MIG: 0xFFFFFFFF when not MIG */
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* Where a GPU sits on the PCI bus (nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3
 * fills it). */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[16]; /* "0000:03:00.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32]; /* "00000000:03:00.0" */
} nvmlPciInfo_t;

/* NVML_VALUE_NOT_AVAILABLE. */
#define GP_NVML_VALUE_NOT_AVAILABLE (~0ULL)

/* Length of the "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" string NVML gives
 * (NVML_DEVICE_UUID_V2_BUFFER_SIZE), and of a device name. */
#define GP_NVML_UUID_LEN 96
#define GP_NVML_NAME_LEN 96

#define GP_NVML_ENTRIES(X)                                                                         \
    X(nvmlInit_v2, (void), ())                                                                     \
    X(nvmlShutdown, (void), ())                                                                    \
    X(nvmlDeviceGetCount_v2, (unsigned int *count), (count))                                       \
    X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *dev), (index, dev))        \
    X(nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *dev), (uuid, dev))               \
    X(nvmlDeviceGetUUID, (nvmlDevice_t dev, char *uuid, unsigned int len), (dev, uuid, len))       \
    X(nvmlDeviceGetName, (nvmlDevice_t dev, char *name, unsigned int len), (dev, name, len))       \
    X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t dev, nvmlMemory_t * mem), (dev, mem))                 \
    X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t dev, nvmlMemory_v2_t * mem), (dev, mem))           \
    X(nvmlDeviceGetMigMode, (nvmlDevice_t dev, unsigned int *current, unsigned int *pending),      \
      (dev, current, pending))                                                                     \
    X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t dev, nvmlUtilization_t * util), (dev, util))    \
    X(nvmlDeviceGetMinorNumber, (nvmlDevice_t dev, unsigned int *minor), (dev, minor))             \
    X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t dev, nvmlPciInfo_t * pci), (dev, pci))                \
    X(nvmlDeviceGetProcessUtilization,                                                             \
      (nvmlDevice_t dev, nvmlProcessUtilizationSample_t * samples, unsigned int *count,            \
       unsigned long long since),                                                                  \
      (dev, samples, count, since))                                                                \
    X(nvmlDeviceGetComputeRunningProcesses_v3,                                                     \
      (nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos), (dev, count, infos))

/* ---- generated: one typed pointer per entry point ------------------------ */

#define GP_NVML_PFN_(sym, params, args) typedef nvmlReturn_t(*gp_nvml_pfn_##sym) params;
GP_NVML_ENTRIES(GP_NVML_PFN_)
#undef GP_NVML_PFN_

#endif /* GP_COMMON_NVML_H */
