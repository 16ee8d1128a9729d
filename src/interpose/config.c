/*
 * config.c — the interposer's settings, read from the environment once, and
 * narrowed by the executor's slice file where there is one.
 *
 * The executor decides what the slice is and says so in environment
 * variables; this file validates them. A workload can change its own
 * environment, so where the executor runs as root it also writes the slice's
 * limits into a root-owned file, GP_SLICE_FILE_DIR/<instance>.<task key>, that
 * the library finds from the process's cgroup (which the task cannot leave):
 * that file's limits win over the environment, which may only narrow them. A bad value is never
 * guessed at: the caller (slice.c) prints the message we fill in and refuses every allocation, so
 * that a typo cannot hand a workload a whole GPU. The variables and their defaults are listed in
 * docs/interposer.md.
 */
#include "interpose/gpuslice.h"

#include "common/gp_env.h"
#include "common/gp_error.h"
#include "common/units.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Reads a small file into buf (NUL-terminated); its length or -1. */
static ssize_t read_small(int fd, char *buf, size_t cap) {
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    return (ssize_t)n;
}

/* True for a name the executor makes: [A-Za-z0-9._-], not starting with '.'. */
static int plain_name(const char *s, size_t n) {
    if (n == 0 || n > 64 || s[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return 0;
    return 1;
}

/* Opens the executor's slice file of this process's task, found from each
 * cgroup path in /proc/self/cgroup ("<...>/<instance>/<key>"); only a
 * regular file of root's that no one else may write counts. -1 if none. */
static int open_slice_file(void) {
    char text[4096];
    int cg = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    if (cg < 0)
        return -1;
    read_small(cg, text, sizeof text);
    close(cg);
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char path[512];
        if (len < sizeof path) {
            memcpy(path, line, len);
            path[len] = '\0';
            char *c2 = strchr(path, ':') ? strchr(strchr(path, ':') + 1, ':') : NULL;
            char *key = c2 ? strrchr(c2, '/') : NULL;
            char *inst = NULL;
            if (key && key > c2 + 1) {
                *key++ = '\0';
                inst = strrchr(c2, '/');
            }
            if (inst && plain_name(inst + 1, strlen(inst + 1)) && plain_name(key, strlen(key))) {
                char file[700];
                snprintf(file, sizeof file, "%s/%s.%s", GP_SLICE_FILE_DIR, inst + 1, key);
                int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
                    !(st.st_mode & 022))
                    return fd;
                if (fd >= 0)
                    close(fd);
            }
        }
        line = nl ? nl + 1 : line + len;
    }
    return -1;
}

/* Narrows c by the executor's slice file, if this process has one: its memory
 * limit and compute share are upper bounds the environment cannot raise, and
 * its ledger (a file the executor made, or else a name) is the one used. */
static void apply_slice_file(struct gps__config *c) {
    int fd = open_slice_file();
    if (fd < 0)
        return;
    char text[512];
    read_small(fd, text, sizeof text);
    close(fd);
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            const char *v = eq + 1;
            uint64_t size;
            uint32_t pct;
            if (strcmp(line, "memory_limit") == 0 && parse_size(v, 1, &size) == 0 &&
                (c->mem_limit == 0 || size < c->mem_limit)) {
                c->mem_limit = size;
                snprintf(c->mem_limit_text, sizeof c->mem_limit_text, "%s", v);
            } else if (strcmp(line, "compute_share") == 0 && parse_percent(v, &pct) == 0 &&
                       pct > 0 && pct < 100 && (c->compute_share == 0 || pct < c->compute_share)) {
                c->compute_share = pct;
            } else if (strcmp(line, "slice") == 0) {
                copy_path(c->slice, sizeof c->slice, v);
            } else if (strcmp(line, "ledger") == 0) {
                copy_path(c->ledger, sizeof c->ledger, v);
            }
        }
        if (!nl)
            break;
        line = nl + 1;
    }
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
    apply_slice_file(c);
    return 0;
}
