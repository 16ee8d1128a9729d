/*
 * config.c — the interposer's settings, read from the environment once.
 *
 * The executor decides what the slice is and says so in environment
 * variables; this file validates them. A bad value is never guessed at: the
 * caller (slice.c) prints the message we fill in and refuses every
 * allocation, so that a typo cannot hand a workload a whole GPU. The
 * variables and their defaults are listed in docs/interposer.md.
 */
#include "interpose/gpuslice.h"

#include "common/gp_env.h"
#include "common/gp_error.h"
#include "common/units.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CTX_MEMORY      (256ULL << 20)
#define DEFAULT_SHARE_WINDOW_MS 100u

/* A size as every part of gpupool reads it (gp_parse_size: "20G", "1.5G",
 * "512MiB"), which must be positive when positive is set. */
static int parse_size(const char *text, int positive, uint64_t *out) {
    int64_t v;
    if (gp_parse_size(text, &v) != 0 || v < 0 || (positive && v == 0))
        return GP_EINVAL;
    *out = (uint64_t)v;
    return 0;
}

/* Parses an integer percentage 0..100 with an optional '%'. */
static int parse_percent(const char *text, uint32_t *out) {
    char *end;
    if (!text || !isdigit((unsigned char)*text))
        return GP_EINVAL;
    unsigned long v = strtoul(text, &end, 10);
    if (*end == '%')
        end++;
    if (*end != '\0' || v > 100)
        return GP_EINVAL;
    *out = (uint32_t)v;
    return 0;
}

static int copy_path(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap)
        return GP_EINVAL;
    memcpy(dst, src, n + 1);
    return 0;
}

static int bad(char *err, const char *var, const char *value, const char *expected) {
    snprintf(err, 256, "%s='%.120s' is invalid (expected %.100s)", var, value, expected);
    return GP_EINVAL;
}

int gps__config_load(struct gps__config *c, char *err) {
    memset(c, 0, sizeof *c);
    c->ctx_memory = DEFAULT_CTX_MEMORY;
    c->managed_charge = 1;
    c->share_window_ms = DEFAULT_SHARE_WINDOW_MS;
    strcpy(c->cuda_lib, "libcuda.so.1");
    strcpy(c->nvml_lib, "libnvidia-ml.so.1");

    const char *v;
    if ((v = getenv(GP_ENV_MEMORY_LIMIT)) && *v) {
        if (parse_size(v, 1, &c->mem_limit) != 0)
            return bad(err, GP_ENV_MEMORY_LIMIT, v,
                       "a positive size in bytes, like 20G, 1.5G or 512MiB");
        snprintf(c->mem_limit_text, sizeof c->mem_limit_text, "%s", v);
    }
    if ((v = getenv(GP_ENV_COMPUTE_SHARE)) && *v) {
        if (parse_percent(v, &c->compute_share) != 0 || c->compute_share == 0)
            return bad(err, GP_ENV_COMPUTE_SHARE, v, "a percentage from 1 to 100");
        if (c->compute_share == 100)
            c->compute_share = 0;
    }
    if ((v = getenv(GP_ENV_CONTEXT_MEMORY)) && *v && parse_size(v, 0, &c->ctx_memory) != 0)
        return bad(err, GP_ENV_CONTEXT_MEMORY, v, "a size in bytes, like 256M");
    if ((v = getenv(GP_ENV_MANAGED_MEMORY)) && *v) {
        if (strcmp(v, "charge") == 0)
            c->managed_charge = 1;
        else if (strcmp(v, "ignore") == 0)
            c->managed_charge = 0;
        else
            return bad(err, GP_ENV_MANAGED_MEMORY, v, "'charge' or 'ignore'");
    }
    if ((v = getenv(GP_ENV_SHARE_WINDOW_MS)) && *v) {
        char *end;
        unsigned long ms = strtoul(v, &end, 10);
        if (!isdigit((unsigned char)*v) || *end || ms < 10 || ms > 10000)
            return bad(err, GP_ENV_SHARE_WINDOW_MS, v, "milliseconds from 10 to 10000");
        c->share_window_ms = (uint32_t)ms;
    }
    if ((v = getenv(GP_ENV_SLICE)) && *v && copy_path(c->slice, sizeof c->slice, v) != 0)
        return bad(err, GP_ENV_SLICE, v, "a name of at most 100 characters");
    if ((v = getenv(GP_ENV_CUDA_LIBRARY)) && *v &&
        copy_path(c->cuda_lib, sizeof c->cuda_lib, v) != 0)
        return bad(err, GP_ENV_CUDA_LIBRARY, v, "a path");
    if ((v = getenv(GP_ENV_NVML_LIBRARY)) && *v &&
        copy_path(c->nvml_lib, sizeof c->nvml_lib, v) != 0)
        return bad(err, GP_ENV_NVML_LIBRARY, v, "a path");
    return 0;
}
