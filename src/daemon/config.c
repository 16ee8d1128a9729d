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

#define SECOND INT64_C(1000)
#define HOUR   (3600 * SECOND)
#define DAY    (24 * HOUR)

/* How a setting's value is read. */
typedef enum kind {
    TEXT,       /* a string that fits its field */
    SPAN,       /* a duration from lo to hi ms, held as int64_t ms */
    SPAN_OR_0,  /* the same, or 0, which turns it off */
    COUNT,      /* a whole number from lo to hi (digits only), held as int */
    LISTEN,     /* HOST:PORT, held with its parts */
    PAUSED_MEM, /* a size or a share of a node's memory */
    SWITCH,     /* yes or no in a file; on the command line, a flag alone says yes */
} kind;

/* One setting: its key (the flag without "--"; in a file '_' may stand for
 * '-'), the word for its value, how it is read, where it is held, its bounds,
 * its default and what --help says of it. A numeric default is def, another
 * is text, applied by the same reader as a value given, so that what --help
 * and docs/daemon.md show is what the daemon takes. */
typedef struct setting {
    const char *key, *arg;
    kind kind;
    size_t off, len;
    int64_t lo, hi, def;
    const char *text;
    const char *help;
} setting;

/* Where a field of gpd__config is, and its size. */
#define AT(f) offsetof(gpd__config, f), sizeof(((gpd__config *)0)->f)

/* The list: every setting, in --help's order. */
static const setting settings[] = {
    {"listen", "HOST:PORT", LISTEN, AT(listen), 0, 0, 0, "127.0.0.1:8642",
     "the API's address: an IPv4 address and a port (0 picks one)"},
    {"data-dir", "DIR", TEXT, AT(data_dir), 0, 0, 0, "./gpupool-data",
     "the store, logs, checkpoints and tokens"},
    {"log-dir", "DIR", TEXT, AT(log_dir), 0, 0, 0, "",
     "the tasks' logs (empty: DATA/logs), e.g. on a disk of their own; each log is capped by "
     "the executor (local's log_max, 64M, one older part kept)"},
    {"checkpoint-dir", "DIR", TEXT, AT(checkpoint_dir), 0, 0, 0, "",
     "the workloads' checkpoint directories, DIR/ID (empty: DATA/checkpoints), e.g. on a disk "
     "of their own; also a workload's working directory when it names none"},
    {"log-retention", "DURATION", SPAN_OR_0, AT(log_retention_ms), SECOND, 365 * DAY, 7 * DAY, NULL,
     "a workload's logs are removed this long after it ends (0: kept)"},
    {"executor", "NAME", TEXT, AT(executor), 0, 0, 0, "local", "where workloads run"},
    {"executor-config", "STR", TEXT, AT(executor_config), 0, 0, 0, "",
     "the executor's settings, e.g. \"inventory=FILE,cgroup=off\" (empty: the executor's own, "
     "see docs/executors.md; for local: state in DATA/tasks, emulated GPUs when NVML finds "
     "none)"},
    {"period", "DURATION", SPAN, AT(period_ms), 10, HOUR, 2 * SECOND, NULL,
     "the scheduling period"},
    {"poll", "DURATION", SPAN, AT(poll_ms), 10, HOUR, 500, NULL, "the task polling period"},
    {"inventory-period", "DURATION", SPAN, AT(inventory_ms), 10, HOUR, 10 * SECOND, NULL,
     "how often the executor's nodes are read again: a node it stops reporting, or reports "
     "unschedulable, takes no new work until it is back"},
    {"usage-period", "DURATION", SPAN, AT(usage_ms), 10, HOUR, 15 * SECOND, NULL,
     "how often GPU use is sampled for accounting"},
    {"usage-half-life", "DURATION", SPAN, AT(half_life_ms), 0, 365 * DAY, 0, NULL,
     "time-based fair share: over-quota weights follow recent use, decayed with this half-life "
     "(0: off; see docs/fairshare.md)"},
    {"tls-cert", "FILE", TEXT, AT(tls_cert), 0, 0, 0, "", "serve HTTPS with this certificate"},
    {"tls-key", "FILE", TEXT, AT(tls_key), 0, 0, 0, "", "the certificate's private key"},
    {"http-threads", "N", COUNT, AT(http_threads), 1, 256, 16, NULL, "API event-loop threads"},
    {"max-connections", "N", COUNT, AT(max_connections), 1, 1000000, 16384, NULL,
     "open API connections in all (the descriptor limit is raised to fit, or this lowered)"},
    {"max-client-connections", "N", COUNT, AT(max_client_connections), 1, 1000000, 128, NULL,
     "open API connections per client address, sessions and forwarded connections included"},
    {"max-user-sessions", "N", COUNT, AT(max_user_sessions), 1, 100000, 32, NULL,
     "terminals and exec sessions open at once per user"},
    {"max-user-forwards", "N", COUNT, AT(max_user_forwards), 1, 100000, 64, NULL,
     "forwarded connections open at once per user"},
    {"max-pending-per-user", "N", COUNT, AT(max_pending_per_user), 0, 100000000, 1000, NULL,
     "pending workloads one user may have (0: no bound); a submission beyond it is answered 429"},
    {"console-idle-timeout", "DURATION", SPAN, AT(console_idle_ms), SECOND, 30 * DAY,
     GPD__SESSION_IDLE_MS, NULL, "a console session unused this long ends"},
    {"console-lifetime", "DURATION", SPAN, AT(console_life_ms), SECOND, 30 * DAY,
     GPD__SESSION_LIFE_MS, NULL,
     "a console session ends this long after sign-in, however much it is used"},
    {"paused-memory-max", "SIZE|N%", PAUSED_MEM, AT(paused_mem_max), 0, 0, 0, "25%",
     "the most host memory tasks paused on a node may hold (their memory and the GPU memory "
     "moved to host): a size for every node, or a share of each node's memory (0: no pause)"},
    {"header-timeout", "DURATION", SPAN, AT(header_timeout_ms), 100, HOUR, 10 * SECOND, NULL,
     "to send a request's head"},
    {"request-timeout", "DURATION", SPAN, AT(request_timeout_ms), 100, HOUR, 60 * SECOND, NULL,
     "to send a body, and to read an answer"},
    {"allow-root-workloads", "", SWITCH, AT(allow_root_workloads), 0, 0, 0, "no",
     "a daemon running as root may run workloads as root (tokens with --unix-user root)"},
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

/* A duration as --help and the messages write it. */
static void span_text(int64_t ms, char *buf, size_t len) {
    if (ms == 0)
        snprintf(buf, len, "0");
    else
        gp_format_duration(ms, buf, len);
}

/* The values a SPAN, SPAN_OR_0 or COUNT setting takes, "10ms to 1h"; "" for
 * another. */
static void range_text(const setting *s, char *buf, size_t len) {
    char lo[32], hi[32];
    if (s->kind == COUNT) {
        snprintf(buf, len, "%lld to %lld", (long long)s->lo, (long long)s->hi);
        return;
    }
    if (s->kind != SPAN && s->kind != SPAN_OR_0) {
        snprintf(buf, len, "%s", "");
        return;
    }
    span_text(s->lo, lo, sizeof lo);
    span_text(s->hi, hi, sizeof hi);
    snprintf(buf, len, "%s to %s%s", lo, hi, s->kind == SPAN_OR_0 ? ", or 0" : "");
}

/* Sets *out to the duration val, within s's bounds. */
static int set_span(int64_t *out, const setting *s, const char *key, const char *val, char *err,
                    size_t errlen) {
    int64_t ms;
    if (gp_parse_duration_ms(val, &ms) < 0 ||
        !((ms >= s->lo && ms <= s->hi) || (ms == 0 && s->kind == SPAN_OR_0))) {
        char range[80];
        range_text(s, range, sizeof range);
        snprintf(err, errlen, "%s: \"%.64s\" is not a duration from %s", key, val, range);
        return GP_EINVAL;
    }
    *out = ms;
    return 0;
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

/* Applies val to s's field of c (key as the caller spelled it). */
static int apply(gpd__config *c, const setting *s, const char *key, const char *val, char *err,
                 size_t errlen) {
    switch (s->kind) {
    case TEXT:
        return set_str(field(c, s->off), s->len, key, val, err, errlen);
    case SPAN:
    case SPAN_OR_0:
        return set_span(field(c, s->off), s, key, val, err, errlen);
    case COUNT:
        return set_count(field(c, s->off), key, val, (long)s->lo, (long)s->hi, err, errlen);
    case LISTEN:
        return set_listen(c, key, val, err, errlen);
    case PAUSED_MEM:
        return set_paused_mem(c, key, val, err, errlen);
    case SWITCH:
        if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0) {
            snprintf(err, errlen, "%s: \"%.64s\" is not yes or no", key, val);
            return GP_EINVAL;
        }
        *(int *)field(c, s->off) = val[0] == 'y';
        return 0;
    }
    return GP_EINVAL;
}

/* s's default as a value is written ("2s", "16", "./gpupool-data"). */
static const char *default_text(const setting *s, char *buf, size_t len) {
    if (s->text != NULL)
        return s->text;
    if (s->kind == COUNT)
        snprintf(buf, len, "%lld", (long long)s->def);
    else
        span_text(s->def, buf, len);
    return buf;
}

static const setting *find(const char *key) {
    for (size_t i = 0; i < COUNT_OF(settings); i++)
        if (is(key, settings[i].key))
            return &settings[i];
    return NULL;
}

int gpd__config_defaults(gpd__config *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < COUNT_OF(settings); i++) {
        char b[32];
        const setting *s = &settings[i];
        /* A reader writes its kind's type: the row's field must be of it. */
        size_t want = s->kind == SPAN || s->kind == SPAN_OR_0 || s->kind == PAUSED_MEM
                          ? sizeof(int64_t)
                      : s->kind == COUNT || s->kind == SWITCH ? sizeof(int)
                                                              : s->len;
        if (s->len != want) {
            snprintf(err, errlen, "settings: %s's field is not of its kind's type", s->key);
            return GP_EINVAL;
        }
        int rc = apply(c, s, s->key, default_text(s, b, sizeof b), err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int gpd__config_set(gpd__config *c, const char *key, const char *val, char *err, size_t errlen) {
    const setting *s = find(key);
    if (s == NULL) {
        snprintf(err, errlen, "unknown setting \"%.64s\" (see gpupoold --help)", key);
        return GP_EINVAL;
    }
    return apply(c, s, key, val, err, errlen);
}

int gpd__config_switch(const char *key) {
    const setting *s = find(key);
    return s != NULL && s->kind == SWITCH;
}

/* Writes text to f from column col on, in lines of at most 79 columns that
 * continue at column 27; a word longer than a line stands alone. */
static void wrap(FILE *f, int col, const char *text) {
    for (int first = 1; *text != '\0'; first = 0) {
        size_t n = strcspn(text, " ");
        if (!first && col + 1 + (int)n > 79) {
            fprintf(f, "\n%27s", "");
            col = 27;
        } else if (!first) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)n, text);
        col += (int)n;
        text += n;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

void gpd__config_help_line(FILE *f, const char *flag, const char *text) {
    int col = fprintf(f, "  %s", flag);
    int pad = col < 25 ? 27 - col : 2;
    fprintf(f, "%*s", pad, "");
    wrap(f, col + pad, text);
}

void gpd__config_help(FILE *f) {
    for (size_t i = 0; i < COUNT_OF(settings); i++) {
        const setting *s = &settings[i];
        char b[32], range[80], flag[96], text[1024];
        snprintf(flag, sizeof flag, "--%s%s%s", s->key, s->arg[0] != '\0' ? " " : "", s->arg);
        range_text(s, range, sizeof range);
        const char *def = default_text(s, b, sizeof b);
        if (s->kind == SWITCH || def[0] == '\0')
            snprintf(text, sizeof text, "%s", s->help);
        else
            snprintf(text, sizeof text, "%s [default %s%s%s]", s->help, def,
                     range[0] != '\0' ? "; " : "", range);
        gpd__config_help_line(f, flag, text);
    }
}

/* Writes text to f with each '|' escaped, as a Markdown table's cell. */
static void cell(FILE *f, const char *text) {
    for (; *text != '\0'; text++) {
        if (*text == '|')
            fputc('\\', f);
        fputc(*text, f);
    }
}

void gpd__config_print_table(FILE *f) {
    fprintf(f, "| flag | value | default | range | what |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < COUNT_OF(settings); i++) {
        const setting *s = &settings[i];
        char b[32], range[80];
        const char *def = default_text(s, b, sizeof b);
        range_text(s, range, sizeof range);
        fprintf(f, "| `--%s` | ", s->key);
        cell(f, s->arg);
        fprintf(f, " | %s%s%s | %s | ", def[0] != '\0' ? "`" : "", def[0] != '\0' ? def : "none",
                def[0] != '\0' ? "`" : "", range);
        cell(f, s->help);
        fprintf(f, " |\n");
    }
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
