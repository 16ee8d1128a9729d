/*
 * table.c — output helpers of the gpupool command: aligned tables for people,
 * the flag reader the commands share, and cli_visible(), which turns a string
 * from the server into one that cannot drive the terminal (every text a
 * person reads passes through it: names, reasons, messages).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

const char *cli_flag(int argc, char **argv, int *i, const char *name, int *missing) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    *i += 1;
    return argv[*i];
}

/* Length of the UTF-8 sequence at s that a terminal shows as text (not a C1
 * control character U+0080..U+009F, not overlong, not a surrogate), or 0. */
static size_t printable_utf8(const unsigned char *s) {
    size_t n;
    unsigned min;
    unsigned cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, min = 0xa0, cp = s[0] & 0x1fu;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, min = 0x800, cp = s[0] & 0x0fu;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, min = 0x10000, cp = s[0] & 0x07u;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

char *cli_visible(const char *s) {
    size_t len = strlen(s);
    char *out = malloc(4 * len + 1);
    if (!out)
        return NULL;
    char *w = out;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n;
        if (*p >= 0x20 && *p < 0x7f) {
            *w++ = (char)*p++;
        } else if ((n = printable_utf8(p)) > 0) {
            memcpy(w, p, n);
            w += n;
            p += n;
        } else {
            const char *esc = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\r' ? "\\r" : NULL;
            if (esc) {
                memcpy(w, esc, 2);
                w += 2;
            } else {
                w += sprintf(w, "\\x%02x", *p);
            }
            p++;
        }
    }
    *w = '\0';
    return out;
}

void cli_table_init(cli_table *t, int ncols, const char *const *head) {
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    for (int i = 0; i < ncols; i++)
        t->head[i] = head[i];
}

void cli_table_add(cli_table *t, const char *const *cells) {
    char **nc = realloc(t->cells, sizeof *nc * (size_t)(t->nrows + 1) * (size_t)t->ncols);
    if (!nc)
        return;
    t->cells = nc;
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->nrows * t->ncols + i] = cli_visible(cells[i] ? cells[i] : "");
    t->nrows++;
}

void cli_table_print(cli_table *t) {
    int w[12] = {0};
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->nrows; r++) {
            const char *s = t->cells[r * t->ncols + c];
            if (s && (int)strlen(s) > w[c])
                w[c] = (int)strlen(s);
        }
    }
    for (int r = -1; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r < 0 ? t->head[c] : t->cells[r * t->ncols + c];
            if (c == t->ncols - 1)
                printf("%s", s ? s : "");
            else
                printf("%-*s  ", w[c], s ? s : "");
        }
        putchar('\n');
    }
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = 0;
}
