/*
 * config.c — see config.h. The config file is read whole and parsed from
 * memory, so that the parser can be fed any bytes (fuzz/daemon-config.c):
 * lines end at '\n' (a '\r' before it is dropped), '#' starts a comment, blanks
 * around keys and values are ignored.
 */
#include "daemon/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "daemon/auth.h"

#define LINE_MAX_ 2048
#define FILE_MAX  (1024 * 1024)

void gpd__config_defaults(gpd__config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:8642");
    snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
    c->listen_port = 8642;
    snprintf(c->data_dir, sizeof c->data_dir, "./gpupool-data");
    snprintf(c->executor, sizeof c->executor, "local");
    c->period_ms = 2000;
    c->poll_ms = 500;
    c->usage_ms = 15000;
    c->inventory_ms = 10000;
    c->http_threads = 16;
    c->max_connections = 16384;
    c->max_client_connections = 128;
    c->max_user_sessions = 32;
    c->max_user_forwards = 64;
    c->header_timeout_ms = 10000;
    c->request_timeout_ms = 60000;
    c->max_pending_per_user = 1000;
    c->log_retention_ms = INT64_C(7) * 86400000;
    c->console_idle_ms = GPD__SESSION_IDLE_MS;
    c->console_life_ms = GPD__SESSION_LIFE_MS;
    c->paused_mem_max = -1;
    c->paused_mem_pct = GPD__PAUSED_MEM_PCT;
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

int gpd__config_set(gpd__config *c, const char *key, const char *val, char *err, size_t errlen) {
    /* The settings read the same way as others: a string, a duration of up
     * to an hour, a whole number. */
    const struct {
        const char *key;
        char *field;
        size_t len;
    } strs[] = {
        {"data-dir", c->data_dir, sizeof c->data_dir},
        {"log-dir", c->log_dir, sizeof c->log_dir},
        {"executor", c->executor, sizeof c->executor},
        {"executor-config", c->executor_config, sizeof c->executor_config},
        {"tls-cert", c->tls_cert, sizeof c->tls_cert},
        {"tls-key", c->tls_key, sizeof c->tls_key},
    };
    const struct {
        const char *key;
        int64_t *field;
        int64_t min_ms;
    } durations[] = {
        {"period", &c->period_ms, 10},
        {"poll", &c->poll_ms, 10},
        {"usage-period", &c->usage_ms, 10},
        {"inventory-period", &c->inventory_ms, 10},
        {"header-timeout", &c->header_timeout_ms, 100},
        {"request-timeout", &c->request_timeout_ms, 100},
    };
    const struct {
        const char *key;
        int *field;
        long min, max;
    } counts[] = {
        {"http-threads", &c->http_threads, 1, 256},
        {"max-connections", &c->max_connections, 1, 1000000},
        {"max-client-connections", &c->max_client_connections, 1, 1000000},
        {"max-user-sessions", &c->max_user_sessions, 1, 100000},
        {"max-user-forwards", &c->max_user_forwards, 1, 100000},
        {"max-pending-per-user", &c->max_pending_per_user, 0, 100000000},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (is(key, strs[i].key))
            return set_str(strs[i].field, strs[i].len, key, val, err, errlen);
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++)
        if (is(key, durations[i].key))
            return set_duration(durations[i].field, key, val, durations[i].min_ms, err, errlen);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (is(key, counts[i].key))
            return set_count(counts[i].field, key, val, counts[i].min, counts[i].max, err, errlen);
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
