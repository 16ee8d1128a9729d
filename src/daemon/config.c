/*
 * config.c — see config.h. The config file is read whole and parsed from
 * memory, so that the parser can be fed any bytes (fuzz/daemon-config.c):
 * lines end at '\n' (a '\r' before it is dropped), '#' starts a comment, blanks
 * around keys and values are ignored.
 */
#include "daemon/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "daemon/auth.h"

#define LINE_MAX_ 2048
#define FILE_MAX  (1024 * 1024)

/* Where a field of gpd__config is, and its size. */
#define FIELD(f) offsetof(gpd__config, f), sizeof(((gpd__config *)0)->f)

/* The settings read the same way as others, each with its default: a string,
 * a duration of up to an hour, a whole number. */
static const struct {
    const char *key;
    size_t off, len;
    const char *def;
} strs[] = {
    {"data-dir", FIELD(data_dir), "./gpupool-data"},
    {"log-dir", FIELD(log_dir), ""},
    {"executor", FIELD(executor), "local"},
    {"executor-config", FIELD(executor_config), ""},
    {"tls-cert", FIELD(tls_cert), ""},
    {"tls-key", FIELD(tls_key), ""},
};
static const struct {
    const char *key;
    size_t off;
    int64_t min_ms, def_ms;
} durations[] = {
    {"period", offsetof(gpd__config, period_ms), 10, 2000},
    {"poll", offsetof(gpd__config, poll_ms), 10, 500},
    {"usage-period", offsetof(gpd__config, usage_ms), 10, 15000},
    {"inventory-period", offsetof(gpd__config, inventory_ms), 10, 10000},
    {"header-timeout", offsetof(gpd__config, header_timeout_ms), 100, 10000},
    {"request-timeout", offsetof(gpd__config, request_timeout_ms), 100, 60000},
};
static const struct {
    const char *key;
    size_t off;
    long min, max;
    int def;
} counts[] = {
    {"http-threads", offsetof(gpd__config, http_threads), 1, 256, 16},
    {"max-connections", offsetof(gpd__config, max_connections), 1, 1000000, 16384},
    {"max-client-connections", offsetof(gpd__config, max_client_connections), 1, 1000000, 128},
    {"max-user-sessions", offsetof(gpd__config, max_user_sessions), 1, 100000, 32},
    {"max-user-forwards", offsetof(gpd__config, max_user_forwards), 1, 100000, 64},
    {"max-pending-per-user", offsetof(gpd__config, max_pending_per_user), 0, 100000000, 1000},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The field of c at off. */
static void *field(gpd__config *c, size_t off) {
    return (char *)c + off;
}

/* Copies val into a field of len bytes; too long is an error, never cut. */
static int set_str(char *field, size_t len, const char *key, const char *val, char *err,
                   size_t errlen) {
    size_t n = strlen(val);
    if (n >= len) {
        snprintf(err, errlen, "%s: the value is longer than %zu bytes", key, len - 1);
        return GP_EINVAL;
    }
    memcpy(field, val, n + 1);
    return 0;
}

/* Reads val, "HOST:PORT" (an IPv4 address, a port from 0 to 65535 in digits
 * only), into c's listen and its parts; on error nothing is changed. The one
 * reader of the address: the server, the warning about plain HTTP and the
 * address file use the parts. */
static int set_listen(gpd__config *c, const char *key, const char *val, char *err, size_t errlen) {
    if (strlen(val) >= sizeof c->listen)
        return set_str(c->listen, sizeof c->listen, key, val, err, errlen);
    char host[sizeof c->listen_host];
    const char *colon = strrchr(val, ':');
    size_t n = colon != NULL ? (size_t)(colon - val) : 0;
    uint64_t port = 0;
    struct in_addr a;
    if (n > 0 && n < sizeof host) {
        memcpy(host, val, n);
        host[n] = '\0';
    }
    if (n == 0 || n >= sizeof host || gp_parse_uint(colon + 1, NULL, 10, 65535, &port) < 0 ||
        inet_pton(AF_INET, host, &a) != 1) {
        snprintf(err, errlen, "%s: \"%.64s\" is not an IPv4 address and port like 127.0.0.1:8642",
                 key, val);
        return GP_EINVAL;
    }
    int rc = set_str(c->listen, sizeof c->listen, key, val, err, errlen);
    if (rc < 0)
        return rc;
    memcpy(c->listen_host, host, n + 1);
    c->listen_port = (int)port;
    return 0;
}

/* Sets *out to the whole number val (digits only), from min to max. */
static int set_count(int *out, const char *key, const char *val, long min, long max, char *err,
                     size_t errlen) {
    long v = 0;
    const char *p = val;
    for (; *p >= '0' && *p <= '9' && v <= max; p++)
        v = v * 10 + (*p - '0');
    if (p == val || *p || v < min || v > max) {
        snprintf(err, errlen, "%s: \"%.64s\" is not a whole number from %ld to %ld", key, val, min,
                 max);
        return GP_EINVAL;
    }
    *out = (int)v;
    return 0;
}

/* Sets *out to the duration val, from min_ms to max_ms (max_name says it). */
static int set_span(int64_t *out, const char *key, const char *val, int64_t min_ms, int64_t max_ms,
                    const char *max_name, char *err, size_t errlen) {
    int64_t ms;
    if (gp_parse_duration_ms(val, &ms) < 0 || ms < min_ms || ms > max_ms) {
        snprintf(err, errlen, "%s: \"%.64s\" is not a duration from %lldms to %s", key, val,
                 (long long)min_ms, max_name);
        return GP_EINVAL;
    }
    *out = ms;
    return 0;
}

/* Sets *out to the duration val, from min_ms to one hour. */
static int set_duration(int64_t *out, const char *key, const char *val, int64_t min_ms, char *err,
                        size_t errlen) {
    return set_span(out, key, val, min_ms, 3600000, "1h", err, errlen);
}

/* --paused-memory-max: a size ("64G") or a share of each node's memory
 * ("25%", from 0 to 100); 0 in either form lets no task be paused. */
static int set_paused_mem(gpd__config *c, const char *key, const char *val, char *err,
                          size_t errlen) {
    size_t n = strlen(val);
    if (n > 1 && val[n - 1] == '%') {
        char num[8];
        int pct = -1;
        if (n - 1 < sizeof num) {
            memcpy(num, val, n - 1);
            num[n - 1] = '\0';
            if (set_count(&pct, key, num, 0, 100, err, errlen) < 0)
                pct = -1;
        }
        if (pct < 0) {
            snprintf(err, errlen, "%s: \"%.64s\" is not a share from 0%% to 100%%", key, val);
            return GP_EINVAL;
        }
        c->paused_mem_max = -1;
        c->paused_mem_pct = pct;
        return 0;
    }
    int64_t bytes;
    if (gp_parse_size(val, &bytes) < 0 || bytes < 0) {
        snprintf(err, errlen, "%s: \"%.64s\" is neither a size (e.g. 64G) nor a share (e.g. 25%%)",
                 key, val);
        return GP_EINVAL;
    }
    c->paused_mem_max = bytes;
    return 0;
}

/* Whether key is name, with '-' and '_' taken as the same. */
static int is(const char *key, const char *name) {
    for (; *key && *name; key++, name++)
        if (*key != *name && !((*key == '-' || *key == '_') && (*name == '-' || *name == '_')))
            return 0;
    return *key == *name;
}

void gpd__config_defaults(gpd__config *c) {
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < COUNT_OF(strs); i++)
        snprintf(field(c, strs[i].off), strs[i].len, "%s", strs[i].def);
    for (size_t i = 0; i < COUNT_OF(durations); i++)
        *(int64_t *)field(c, durations[i].off) = durations[i].def_ms;
    for (size_t i = 0; i < COUNT_OF(counts); i++)
        *(int *)field(c, counts[i].off) = counts[i].def;
    /* The address, read into its parts as --listen is. */
    set_listen(c, "listen", "127.0.0.1:8642", NULL, 0);
    c->log_retention_ms = INT64_C(7) * 86400000;
    c->console_idle_ms = GPD__SESSION_IDLE_MS;
    c->console_life_ms = GPD__SESSION_LIFE_MS;
    c->paused_mem_max = -1;
    c->paused_mem_pct = GPD__PAUSED_MEM_PCT;
}

int gpd__config_set(gpd__config *c, const char *key, const char *val, char *err, size_t errlen) {
    for (size_t i = 0; i < COUNT_OF(strs); i++)
        if (is(key, strs[i].key))
            return set_str(field(c, strs[i].off), strs[i].len, key, val, err, errlen);
    for (size_t i = 0; i < COUNT_OF(durations); i++)
        if (is(key, durations[i].key))
            return set_duration(field(c, durations[i].off), key, val, durations[i].min_ms, err,
                                errlen);
    for (size_t i = 0; i < COUNT_OF(counts); i++)
        if (is(key, counts[i].key))
            return set_count(field(c, counts[i].off), key, val, counts[i].min, counts[i].max, err,
                             errlen);
    if (is(key, "listen"))
        return set_listen(c, key, val, err, errlen);
    if (is(key, "log-retention")) {
        /* 0: kept as long as the directory is; else from a second to a year. */
        if (strcmp(val, "0") == 0) {
            c->log_retention_ms = 0;
            return 0;
        }
        return set_span(&c->log_retention_ms, key, val, 1000, INT64_C(365) * 86400000, "365d", err,
                        errlen);
    }
    if (is(key, "allow-root-workloads")) {
        if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0) {
            snprintf(err, errlen, "%s: \"%.64s\" is not yes or no", key, val);
            return GP_EINVAL;
        }
        c->allow_root_workloads = val[0] == 'y';
        return 0;
    }
    if (is(key, "usage-half-life")) {
        /* Time-based fair share: 0 is off; a half-life is hours or days. */
        int64_t ms;
        if (gp_parse_duration_ms(val, &ms) < 0 || ms > INT64_C(365) * 24 * 3600 * 1000) {
            snprintf(err, errlen, "%s: \"%.64s\" is not a duration from 0 to 365d", key, val);
            return GP_EINVAL;
        }
        c->half_life_ms = ms;
        return 0;
    }
    if (is(key, "console-idle-timeout"))
        return set_span(&c->console_idle_ms, key, val, 1000, INT64_C(30) * 86400000, "30d", err,
                        errlen);
    if (is(key, "console-lifetime"))
        return set_span(&c->console_life_ms, key, val, 1000, INT64_C(30) * 86400000, "30d", err,
                        errlen);
    if (is(key, "paused-memory-max"))
        return set_paused_mem(c, key, val, err, errlen);
    snprintf(err, errlen, "unknown setting \"%.64s\" (see gpupoold --help)", key);
    return GP_EINVAL;
}

static int is_blank(char ch) {
    return ch == ' ' || ch == '\t';
}

/* Parses one line (NUL-terminated, no line end) in place. */
static int parse_line(gpd__config *c, char *line, char *err, size_t errlen) {
    line[strcspn(line, "#")] = '\0';
    char *k = line;
    while (is_blank(*k))
        k++;
    if (!*k)
        return 0;
    char *eq = strchr(k, '=');
    if (!eq) {
        snprintf(err, errlen, "expected key = value");
        return GP_EINVAL;
    }
    char *v = eq + 1;
    char *kend = eq;
    while (kend > k && is_blank(kend[-1]))
        kend--;
    *kend = '\0';
    while (is_blank(*v))
        v++;
    char *vend = v + strlen(v);
    while (vend > v && is_blank(vend[-1]))
        vend--;
    *vend = '\0';
    return gpd__config_set(c, k, v, err, errlen);
}

int gpd__config_parse(gpd__config *c, const char *name, const char *text, size_t len, char *err,
                      size_t errlen) {
    char line[LINE_MAX_];
    int lineno = 0;
    size_t pos = 0;
    while (pos < len) {
        lineno++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        if (n > 0 && text[pos + n - 1] == '\r')
            n--;
        if (n >= sizeof line) {
            snprintf(err, errlen, "config %.200s:%d: the line is longer than %d bytes", name,
                     lineno, LINE_MAX_ - 1);
            return GP_EINVAL;
        }
        if (memchr(text + pos, '\0', n)) {
            snprintf(err, errlen, "config %.200s:%d: the line holds a NUL byte", name, lineno);
            return GP_EINVAL;
        }
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos += nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
        char sub[512];
        int rc = parse_line(c, line, sub, sizeof sub);
        if (rc < 0) {
            snprintf(err, errlen, "config %.200s:%d: %s", name, lineno, sub);
            return rc;
        }
    }
    return 0;
}

int gpd__config_read(gpd__config *c, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "config %.200s: %s", path, strerror(errno));
        return GP_EINVAL;
    }
    char *buf = malloc(FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, FILE_MAX + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    int rc;
    if (!buf) {
        snprintf(err, errlen, "config %.200s: out of memory", path);
        rc = GP_ENOMEM;
    } else if (bad || n > FILE_MAX) {
        snprintf(err, errlen, "config %.200s: %s", path,
                 bad ? "cannot be read" : "larger than 1 MiB");
        rc = GP_EINVAL;
    } else {
        rc = gpd__config_parse(c, path, buf, n, err, errlen);
    }
    free(buf);
    return rc;
}
