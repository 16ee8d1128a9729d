/*
 * interposer-env.c — fuzz target for the interposer's settings, read from
 * the environment of a workload (which the workload controls): the input's
 * lines are the values of the GPUPOOL_* variables, in a fixed order; an
 * empty line leaves that variable unset.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/gpuslice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vars[] = {
    "GPUPOOL_MEMORY_LIMIT",   "GPUPOOL_COMPUTE_SHARE",   "GPUPOOL_CONTEXT_MEMORY",
    "GPUPOOL_MANAGED_MEMORY", "GPUPOOL_SHARE_WINDOW_MS", "GPUPOOL_SLICE",
    "GPUPOOL_CUDA_LIBRARY",   "GPUPOOL_NVML_LIBRARY",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *p = text;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        char *nl = p ? strchr(p, '\n') : NULL;
        if (nl)
            *nl = '\0';
        if (p && *p)
            setenv(vars[i], p, 1);
        else
            unsetenv(vars[i]);
        p = nl ? nl + 1 : NULL;
    }
    struct gps__config c;
    char err[256];
    if (gps__config_load(&c, err) == 0 && c.compute_share > 100)
        __builtin_trap();
    free(text);
    return 0;
}
