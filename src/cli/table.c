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

/* How many bytes the UTF-8 sequence that lead begins has (2 to 4), or 0. */
static size_t utf8_len(unsigned char lead) {
    return lead >= 0xc2 && lead <= 0xdf   ? 2
           : lead >= 0xe0 && lead <= 0xef ? 3
           : lead >= 0xf0 && lead <= 0xf4 ? 4
                                          : 0;
}

/* At p, n bytes left, p[0] an ESC: the length of a colour sequence (SGR),
 * 0 if there is none, or -1 where the end of the bytes may have cut one. */
static long sgr_len(const unsigned char *p, size_t n) {
    for (size_t i = 1; i < n && i < CLI_TERM_HOLD; i++) {
        if (i == 1 ? p[i] != '[' : p[i] == 'm')
            return i == 1 ? 0 : (long)i + 1;
        if (i > 1 && !(p[i] >= '0' && p[i] <= '9') && p[i] != ';' && p[i] != ':')
            return 0;
    }
    return n < CLI_TERM_HOLD ? -1 : 0;
}

/* At p, n bytes left: how many bytes pass as they are (0: escape p[0]), or
 * -1 where what is left may be the start of a character or a colour. */
static long term_pass(const unsigned char *p, size_t n) {
    if ((p[0] >= 0x20 && p[0] < 0x7f) || p[0] == '\n' || p[0] == '\t' || p[0] == '\r')
        return 1;
    if (p[0] == 0x1b)
        return sgr_len(p, n);
    size_t need = utf8_len(p[0]);
    if (need == 0)
        return 0;
    if (n < need) {
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        return -1;
    }
    return (long)printable_utf8(p);
}

void cli_term_write(cli_term *t, const char *buf, size_t n, FILE *out) {
    /* The bytes held from the last call, then buf: one run. */
    unsigned char *all = malloc(t->nheld + n + 1);
    const unsigned char *p = (const unsigned char *)buf;
    size_t len = n;
    if (all == NULL) {
        cli_term_end(t, out); /* out of memory: nothing is held */
    } else {
        memcpy(all, t->held, t->nheld);
        if (n > 0)
            memcpy(all + t->nheld, buf, n);
        p = all;
        len = t->nheld + n;
        t->nheld = 0;
    }
    size_t i = 0;
    while (i < len) {
        long k = term_pass(p + i, len - i);
        if (k < 0 && all != NULL) {
            t->nheld = len - i;
            memcpy(t->held, p + i, t->nheld);
            break;
        }
        if (k > 0) {
            fwrite(p + i, 1, (size_t)k, out);
            i += (size_t)k;
        } else {
            fprintf(out, "\\x%02x", p[i++]);
        }
    }
    free(all);
}

void cli_term_end(cli_term *t, FILE *out) {
    for (size_t i = 0; i < t->nheld; i++)
        fprintf(out, "\\x%02x", t->held[i]);
    t->nheld = 0;
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
