/*
 * table.c — output helpers of the gpupool command: aligned tables for people
 * and the flag reader the commands share.
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
        t->cells[t->nrows * t->ncols + i] = strdup(cells[i] ? cells[i] : "");
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
