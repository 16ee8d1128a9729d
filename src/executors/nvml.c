/*
 * nvml.c — loading NVML at run time and sampling a GPU's use: the part of
 * NVML every executor and program of gpupool shares (nvml.h).
 */
#include <dlfcn.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/nvml.h"
#include "executors/util.h"

/* The entry points without which NVML is not used; the others are only
 * asked of drivers that have them (MIG mode, busy time, per-process memory). */
#define REQUIRED(X)                                                                                \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlShutdown)                                                                                \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetName)                                                                           \
    X(nvmlDeviceGetMemoryInfo)

int gpx__nvml_open(gpx__nvml *nv, const char *lib, int required, char *err, size_t errlen) {
    memset(nv, 0, sizeof *nv);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        gpx__exec_fmt(nv->note, sizeof nv->note, "NVML not loaded (%.200s)", why ? why : lib);
        if (required) {
            gp_errf(err, errlen, "nvml: cannot load %s: %s", lib, why ? why : "unknown error");
            return GP_ENOENT;
        }
        return 0;
    }
    const char *missing = NULL;
#define RESOLVE(sym, params, args) *(void **)&nv->sym = dlsym(h, #sym);
#define CHECK(sym)                                                                                 \
    if (nv->sym == NULL && missing == NULL)                                                        \
        missing = #sym;
    GP_NVML_ENTRIES(RESOLVE)
    REQUIRED(CHECK)
#undef RESOLVE
#undef CHECK
    int rc = missing == NULL ? nv->nvmlInit_v2() : -1;
    if (rc != NVML_SUCCESS) {
        char note[256];
        if (missing != NULL)
            gpx__exec_fmt(note, sizeof note, "NVML from %.200s lacks %s", lib, missing);
        else
            gpx__exec_fmt(note, sizeof note, "NVML from %.200s: nvmlInit_v2 failed (%d)", lib, rc);
        dlclose(h);
        memset(nv, 0, sizeof *nv);
        gpx__exec_fmt(nv->note, sizeof nv->note, "%s", note);
        if (required) {
            gp_errf(err, errlen, "nvml: %s", note);
            return GP_EIO;
        }
        return 0;
    }
    nv->lib = h;
    gpx__exec_fmt(nv->note, sizeof nv->note, "NVML from %s", lib);
    return 0;
}

void gpx__nvml_close(gpx__nvml *nv) {
    if (nv->lib != NULL) {
        nv->nvmlShutdown();
        dlclose(nv->lib);
    }
    memset(nv, 0, sizeof *nv);
}

int gpx__nvml_sample(gpx__nvml *nv, unsigned int i, int32_t *busy_permille, int64_t *mem_used) {
    nvmlDevice_t dev;
    *busy_permille = -1;
    *mem_used = -1;
    if (nv->lib == NULL || nv->nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
        return -1;
    nvmlMemory_t mem;
    if (nv->nvmlDeviceGetMemoryInfo(dev, &mem) == NVML_SUCCESS)
        *mem_used = mem.used > (unsigned long long)INT64_MAX ? INT64_MAX : (int64_t)mem.used;
    /* MIG GPUs and old drivers answer NOT_SUPPORTED: busy stays unknown. */
    nvmlUtilization_t ut;
    if (nv->nvmlDeviceGetUtilizationRates != NULL &&
        nv->nvmlDeviceGetUtilizationRates(dev, &ut) == NVML_SUCCESS && ut.gpu <= 100)
        *busy_permille = (int32_t)ut.gpu * 10;
    return 0;
}
