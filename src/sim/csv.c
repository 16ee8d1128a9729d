/*
 * csv.c — reading comma-separated trace files record by record, with error
 * messages that name the file, the line and the field (see csv.h).
 */
#include "common/gp_array.h"
#include "sim/csv.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_error.h"

/* Longest line accepted: a trace line is a few hundred bytes; anything far
 * longer is not a trace. */
#define MAX_LINE (1 << 20)

int sim_errf(char *err, size_t errlen, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gp_verrf(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

/* Reads one physical line into c->buf without its newline; 0 at EOF. */
static int read_line(sim_csv *c, char *err, size_t errlen) {
    size_t n = 0;
    int ch;
    while ((ch = getc(c->f)) != EOF && ch != '\n') {
        if (n + 2 > c->cap) {
            if (c->cap >= MAX_LINE)
                return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: line longer than %d bytes",
                                c->path, c->line + 1, MAX_LINE);
            size_t ncap = c->cap ? 2 * c->cap : 256;
            char *b = realloc(c->buf, ncap);
            if (!b)
                return sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
            c->buf = b;
            c->cap = ncap;
        }
        if (ch == '\0')
            return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: NUL byte in a text file", c->path,
                            c->line + 1);
        c->buf[n++] = (char)ch;
    }
    if (ch == EOF && n == 0)
        return ferror(c->f) ? sim_errf(err, errlen, GP_EIO, "%s: read error", c->path) : 0;
    if (!c->buf) {
        c->buf = malloc(1);
        if (!c->buf)
            return sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
        c->cap = 1;
    }
    if (n > 0 && c->buf[n - 1] == '\r')
        n--;
    c->buf[n] = '\0';
    c->line++;
    return 1;
}

static int push_field(sim_csv *c, char *f) {
    if (GP_ARRAY_ROOM(c->field, c->nfield, c->capfield, 16) < 0)
        return GP_ENOMEM;
    c->field[c->nfield++] = f;
    return 0;
}

/* Splits c->buf in place into fields, unquoting quoted ones. */
static int split(sim_csv *c, char *err, size_t errlen) {
    c->nfield = 0;
    char *p = c->buf;
    for (;;) {
        char *start = p, *out = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: unterminated quoted field",
                                    c->path, c->line);
                if (*p == '"') {
                    if (p[1] == '"') {
                        *out++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *out++ = *p++;
            }
            if (*p != ',' && *p != '\0')
                return sim_errf(err, errlen, GP_EPARSE,
                                "%s:%ld: text after a closing quote in field %zu", c->path, c->line,
                                c->nfield + 1);
        } else {
            while (*p != ',' && *p != '\0') {
                if (*p == '"')
                    return sim_errf(err, errlen, GP_EPARSE,
                                    "%s:%ld: stray quote in unquoted field %zu", c->path, c->line,
                                    c->nfield + 1);
                *out++ = *p++;
            }
        }
        int last = *p == '\0';
        *out = '\0';
        if (push_field(c, start) < 0)
            return sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
        if (last)
            return 0;
        p++;
    }
}

static int read_record(sim_csv *c, char *err, size_t errlen) {
    for (;;) {
        int rc = read_line(c, err, errlen);
        if (rc <= 0)
            return rc;
        if (c->buf[0] == '\0')
            continue;
        rc = split(c, err, errlen);
        return rc < 0 ? rc : 1;
    }
}

static int open_common(sim_csv *c, char *err, size_t errlen) {
    int rc = read_record(c, err, errlen);
    if (rc == 0)
        rc = sim_errf(err, errlen, GP_EPARSE, "%s: empty file (no header line)", c->path);
    if (rc < 0) {
        sim_csv_close(c);
        return rc;
    }
    c->header = calloc(c->nfield, sizeof *c->header);
    if (!c->header) {
        sim_csv_close(c);
        return sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
    }
    c->nheader = c->nfield;
    for (size_t i = 0; i < c->nfield; i++) {
        c->header[i] = strdup(c->field[i]);
        if (!c->header[i]) {
            sim_csv_close(c);
            return sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->header[j], c->header[i])) {
                int code = sim_errf(err, errlen, GP_EPARSE, "%s:%ld: column '%s' appears twice",
                                    c->path, c->line, c->header[i]);
                sim_csv_close(c);
                return code;
            }
    }
    return 0;
}

int sim_csv_open(sim_csv *c, const char *path, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    c->f = fopen(path, "r");
    if (!c->f)
        return sim_errf(err, errlen, GP_ENOENT, "%s: cannot open: %s", path, strerror(errno));
    c->own = 1;
    return open_common(c, err, errlen);
}

int sim_csv_open_mem(sim_csv *c, const char *name, const char *data, size_t len, char *err,
                     size_t errlen) {
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", name);
    if (len == 0)
        return sim_errf(err, errlen, GP_EPARSE, "%s: empty file (no header line)", name);
    c->f = fmemopen((void *)(uintptr_t)data, len, "r");
    if (!c->f)
        return sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", name);
    c->own = 1;
    return open_common(c, err, errlen);
}

int sim_csv_next(sim_csv *c, char *err, size_t errlen) {
    int rc = read_record(c, err, errlen);
    if (rc <= 0)
        return rc;
    if (c->nfield != c->nheader)
        return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: %zu fields, the header has %zu", c->path,
                        c->line, c->nfield, c->nheader);
    return 1;
}

int sim_csv_col(const sim_csv *c, const char *name) {
    for (size_t i = 0; i < c->nheader; i++)
        if (!strcmp(c->header[i], name))
            return (int)i;
    return -1;
}

const char *sim_csv_get(const sim_csv *c, int i) {
    if (i < 0 || (size_t)i >= c->nfield)
        return "";
    return c->field[i];
}

void sim_csv_close(sim_csv *c) {
    if (c->f && c->own)
        fclose(c->f);
    for (size_t i = 0; i < c->nheader; i++)
        free(c->header[i]);
    free(c->header);
    free(c->field);
    free(c->buf);
    memset(c, 0, sizeof *c);
}

static const char *col_name(const sim_csv *c, int col) {
    return col >= 0 && (size_t)col < c->nheader ? c->header[col] : "?";
}

int sim_csv_int(const sim_csv *c, int col, int64_t min, int64_t max, int64_t empty_value,
                int64_t *out, char *err, size_t errlen) {
    const char *s = sim_csv_get(c, col);
    if (*s == '\0') {
        if (empty_value == SIM_CSV_REQUIRED)
            return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field %s: empty", c->path, c->line,
                            col_name(c, col));
        *out = empty_value;
        return 0;
    }
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno == ERANGE)
        return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field %s: '%s' is not an integer", c->path,
                        c->line, col_name(c, col), s);
    if (*end == '.') {
        /* "12.0" from pandas: accept a zero fraction only. */
        const char *q = end + 1;
        while (*q == '0')
            q++;
        if (q == end + 1 || *q != '\0')
            return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field %s: '%s' is not an integer",
                            c->path, c->line, col_name(c, col), s);
        end = (char *)(uintptr_t)q;
    }
    if (*end != '\0')
        return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field %s: '%s' is not an integer", c->path,
                        c->line, col_name(c, col), s);
    if (v < min || v > max)
        return sim_errf(err, errlen, GP_ERANGE,
                        "%s:%ld: field %s: %lld is out of range [%lld, %lld]", c->path, c->line,
                        col_name(c, col), v, (long long)min, (long long)max);
    *out = v;
    return 0;
}

int sim_csv_double(const sim_csv *c, int col, double min, double max, double *out, char *err,
                   size_t errlen) {
    const char *s = sim_csv_get(c, col);
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field %s: '%s' is not a number", c->path,
                        c->line, col_name(c, col), s);
    if (v < min || v > max)
        return sim_errf(err, errlen, GP_ERANGE, "%s:%ld: field %s: %g is out of range [%g, %g]",
                        c->path, c->line, col_name(c, col), v, min, max);
    *out = v;
    return 0;
}

int sim_csv_check_header(const sim_csv *c, const char *const *known, const char *const *required,
                         char *err, size_t errlen) {
    for (size_t i = 0; i < c->nheader; i++) {
        int ok = 0;
        for (const char *const *k = known; *k && !ok; k++)
            ok = !strcmp(*k, c->header[i]);
        if (!ok)
            return sim_errf(err, errlen, GP_EPARSE, "%s:1: unknown column '%s'", c->path,
                            c->header[i]);
    }
    for (const char *const *r = required; *r; r++)
        if (sim_csv_col(c, *r) < 0)
            return sim_errf(err, errlen, GP_EPARSE, "%s:1: missing column '%s'", c->path, *r);
    return 0;
}
