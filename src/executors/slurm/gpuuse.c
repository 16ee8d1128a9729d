/*
 * gpuuse.c — the GPU use record of an interactive task on the slurm
 * executor (gpuuse.h): written by gpupool-slurm-session, read by the
 * executor.
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/slurm/gpuuse.h"

#define MAGIC "gpupool-gpu-use "

int gpx__gpu_use_format(const gpx__gpu_use *u, char *buf) {
    if (u->n < 0 || u->n > GPX__GPU_USE_MAX)
        return GP_EINVAL;
    size_t k = (size_t)snprintf(buf, GPX__GPU_USE_RECORD,
                                MAGIC "at=%lld n=%d busy=", (long long)u->at, u->n);
    for (int i = 0; i < u->n && k < GPX__GPU_USE_RECORD; i++)
        k += (size_t)snprintf(buf + k, GPX__GPU_USE_RECORD - k, "%s%d", i ? "," : "",
                              (int)u->busy[i]);
    if (k < GPX__GPU_USE_RECORD)
        k += (size_t)snprintf(buf + k, GPX__GPU_USE_RECORD - k, " mem=");
    for (int i = 0; i < u->n && k < GPX__GPU_USE_RECORD; i++)
        k += (size_t)snprintf(buf + k, GPX__GPU_USE_RECORD - k, "%s%lld", i ? "," : "",
                              (long long)u->mem[i]);
    /* At most 16 GPUs of 5 + 21 characters and 60 of the rest: always fits. */
    if (k >= GPX__GPU_USE_RECORD - 1)
        return GP_EINVAL;
    memset(buf + k, ' ', GPX__GPU_USE_RECORD - 1 - k);
    buf[GPX__GPU_USE_RECORD - 1] = '\n';
    return 0;
}

/* A decimal number, "-1" or digits, at *p (before end), at most max: moves
 * *p past it. 0, or -1 if there is none or it is out of range. */
static int number(const char **p, const char *end, int64_t max, int64_t *v) {
    const char *s = *p;
    if (s < end && *s == '-') {
        if (end - s < 2 || s[1] != '1' || (end - s > 2 && s[2] >= '0' && s[2] <= '9'))
            return -1;
        *v = -1;
        *p = s + 2;
        return 0;
    }
    int64_t x = 0;
    const char *q = s;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (x > (max - (*q - '0')) / 10)
            return -1;
        x = x * 10 + (*q - '0');
    }
    if (q == s)
        return -1;
    *v = x;
    *p = q;
    return 0;
}

/* "name=" at *p: moves *p past it. */
static int word(const char **p, const char *end, const char *name) {
    size_t n = strlen(name);
    if ((size_t)(end - *p) < n || memcmp(*p, name, n) != 0)
        return -1;
    *p += n;
    return 0;
}

/* n comma-separated numbers, each -1 or 0..max, into v (of n). */
static int list(const char **p, const char *end, int n, int64_t max, int64_t *v) {
    for (int i = 0; i < n; i++)
        if ((i > 0 && word(p, end, ",") < 0) || number(p, end, max, &v[i]) < 0)
            return -1;
    return 0;
}

int gpx__gpu_use_parse(const char *text, size_t len, gpx__gpu_use *u) {
    const char *p = text, *end = text + len;
    int64_t at, n, busy[GPX__GPU_USE_MAX], mem[GPX__GPU_USE_MAX];
    memset(u, 0, sizeof *u);
    /* The padding and the newline at the end. */
    while (end > p && (end[-1] == ' ' || end[-1] == '\n'))
        end--;
    if (word(&p, end, MAGIC "at=") < 0 || number(&p, end, INT64_MAX, &at) < 0 || at < 0 ||
        word(&p, end, " n=") < 0 || number(&p, end, GPX__GPU_USE_MAX, &n) < 0 || n < 0 ||
        word(&p, end, " busy=") < 0 || list(&p, end, (int)n, 1000, busy) < 0 ||
        word(&p, end, " mem=") < 0 || list(&p, end, (int)n, INT64_MAX, mem) < 0 || p != end)
        return GP_EINVAL;
    u->at = at;
    u->n = (int)n;
    for (int i = 0; i < u->n; i++) {
        u->busy[i] = (int32_t)busy[i];
        u->mem[i] = mem[i];
    }
    return 0;
}
