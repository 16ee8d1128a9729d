/*
 * text.c — a growing text buffer for answers written piece by piece (the
 * usage series, the Prometheus metrics), where building a JSON tree first
 * would cost more than the answer. Writes after a failed allocation are
 * dropped and remembered, so that a handler checks once, when it replies.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api.h"

/* Makes room for n more bytes and the terminating NUL: 0, or -1 with oom
 * set. */
static int grow(gpd__text *t, size_t n) {
    if (t->oom)
        return -1;
    if (t->len + n + 1 <= t->cap)
        return 0;
    size_t cap = (t->len + n + 1) * 2;
    char *np = realloc(t->p, cap);
    if (!np) {
        t->oom = 1;
        return -1;
    }
    t->p = np;
    t->cap = cap;
    return 0;
}

void gpd__text_put(gpd__text *t, const char *s, size_t n) {
    if (grow(t, n) < 0)
        return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

void gpd__text_puts(gpd__text *t, const char *s) {
    gpd__text_put(t, s, strlen(s));
}

void gpd__text_printf(gpd__text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(t, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

int gpd__text_reply(gpd__text *t, gpd__resp *out, const char *content_type, gpd__err *e) {
    if (!t->p && grow(t, 0) == 0)
        t->p[0] = '\0'; /* an empty answer */
    if (t->oom) {
        free(t->p);
        *t = (gpd__text){0};
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    }
    out->status = 200;
    out->body = t->p;
    out->len = t->len;
    out->content_type = content_type;
    *t = (gpd__text){0};
    return 0;
}
