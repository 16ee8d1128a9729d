/*
 * interposer-env.c — fuzz target for the interposer's settings, read from
 * the environment of a workload (which the workload controls): the input's
 * lines are the values of the GPUPOOL_* variables, in a fixed order; an
 * empty line leaves that variable unset.
 *
 * The variables are set with putenv on strings this target owns, not with
 * setenv: glibc's setenv keeps every value it was ever given (so that old
 * pointers stay valid), and millions of distinct values grew the target to
 * its memory limit in a long run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "interpose/gpuslice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vars[] = {
    "GPUPOOL_MEMORY_LIMIT",   "GPUPOOL_COMPUTE_SHARE",   "GPUPOOL_CONTEXT_MEMORY",
    "GPUPOOL_MANAGED_MEMORY", "GPUPOOL_SHARE_WINDOW_MS", "GPUPOOL_SLICE",
    "GPUPOOL_CUDA_LIBRARY",   "GPUPOOL_NVML_LIBRARY",
};

/* The "NAME=value" string each variable holds now, owned here. */
static char *held[sizeof vars / sizeof vars[0]];

/* Sets or (value NULL) unsets vars[i], freeing the string it held. */
static int set_var(size_t i, const char *value) {
    char *old = held[i];
    held[i] = NULL;
    if (!value) {
        unsetenv(vars[i]);
    } else {
        size_t n = strlen(vars[i]) + 1 + strlen(value) + 1;
        char *s = malloc(n);
        if (!s) {
            unsetenv(vars[i]);
            free(old);
            return -1;
        }
        snprintf(s, n, "%s=%s", vars[i], value);
        putenv(s);
        held[i] = s;
    }
    free(old);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    if (text == NULL)
        return 0;
    char *p = text;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        char *nl = p ? strchr(p, '\n') : NULL;
        if (nl)
            *nl = '\0';
        if (set_var(i, p && *p ? p : NULL) != 0) {
            free(text);
            return 0;
        }
        p = nl ? nl + 1 : NULL;
    }
    struct gps__config c;
    char err[256];
    if (gps__config_load(&c, err) == 0 && c.compute_share > 100)
        __builtin_trap();
    free(text);
    return 0;
}
