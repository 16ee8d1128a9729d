/*
 * submit.c — the table of a submission's fields made from GP_SUBMIT_FIELDS
 * (gp_submit.h), looking one up, and the reference table docs/api.md shows.
 */
#include "common/gp_submit.h"

#include <string.h>

#include "common/units.h"

const gp_submit_field gp_submit_fields[GP_SUBMIT_NFIELDS] = {
#define GP_SUBMIT_ROW_(name, req, flag, type, lo, hi, arg, unit, help)                             \
    {#name, req, flag, type, lo, hi, arg, unit, help},
    GP_SUBMIT_FIELDS(GP_SUBMIT_ROW_)
#undef GP_SUBMIT_ROW_
};

const gp_submit_field *gp_submit_find(const char *name) {
    for (int i = 0; i < GP_SUBMIT_NFIELDS; i++)
        if (strcmp(gp_submit_fields[i].name, name) == 0)
            return &gp_submit_fields[i];
    return NULL;
}

/* What a value of each type is, in the table's words. */
static const char *const type_words[] = {
#define GP_SUBMIT_TYPE_WORDS_(type, words) words,
    GP_SUBMIT_TYPES(GP_SUBMIT_TYPE_WORDS_)
#undef GP_SUBMIT_TYPE_WORDS_
};

/* One bound of a number field, as a person writes it. */
static void format_bound(const gp_submit_field *f, int64_t v, char *buf, size_t len) {
    switch (f->type) {
    case GP_SUBMIT_MILLI:
        gp_format_milli(v, buf, len);
        break;
    case GP_SUBMIT_SIZE:
        gp_format_size(v, buf, len);
        break;
    case GP_SUBMIT_DURATION:
        gp_format_duration(v, buf, len);
        break;
    default:
        snprintf(buf, len, "%lld", (long long)v);
    }
}

static int is_number(const gp_submit_field *f) {
    return f->type == GP_SUBMIT_MILLI || f->type == GP_SUBMIT_SIZE ||
           f->type == GP_SUBMIT_DURATION || f->type == GP_SUBMIT_INT;
}

/* The range of a number field ("" for the others and for no bound). */
static void range_words(const gp_submit_field *f, char *buf, size_t len) {
    char lo[32], hi[32];
    buf[0] = '\0';
    if (!is_number(f))
        return;
    format_bound(f, f->lo, lo, sizeof lo);
    format_bound(f, f->hi, hi, sizeof hi);
    if (f->hi != GP_SUBMIT_NO_MAX)
        snprintf(buf, len, "%s to %s", lo, hi);
    else if (f->lo == 1)
        snprintf(buf, len, "above 0");
    else if (f->lo > 0)
        snprintf(buf, len, "%s or more", lo);
}

int gp_submit_out_of_range(const gp_submit_field *f, int64_t x, char *why, size_t len) {
    if (!is_number(f) || (x >= f->lo && x <= f->hi))
        return 0;
    char v[32], lo[32], range[80];
    format_bound(f, x, v, sizeof v);
    format_bound(f, f->lo, lo, sizeof lo);
    range_words(f, range, sizeof range);
    const char *sp = f->unit[0] ? " " : "";
    if (x < f->lo && f->lo == 1)
        snprintf(why, len, "must be above 0");
    else if (f->hi == GP_SUBMIT_NO_MAX)
        snprintf(why, len, "%s%s%s is below %s", v, sp, f->unit, lo);
    else
        snprintf(why, len, "%s%s%s is outside %s", v, sp, f->unit, range);
    return 1;
}

void gp_submit_doc_table(FILE *f) {
    fputs("| field | type | range | `gpupool submit` | meaning |\n|---|---|---|---|---|\n", f);
    for (int i = 0; i < GP_SUBMIT_NFIELDS; i++) {
        const gp_submit_field *x = &gp_submit_fields[i];
        char range[80], flag[64] = "";
        range_words(x, range, sizeof range);
        if (x->type == GP_SUBMIT_ARGV)
            snprintf(flag, sizeof flag, "`-- %s...`", x->arg);
        else if (x->flag != NULL)
            snprintf(flag, sizeof flag, "`%s%s%s`%s", x->flag, x->arg[0] ? " " : "", x->arg,
                     x->type == GP_SUBMIT_LIST || x->type == GP_SUBMIT_MAP ? ", repeatable" : "");
        fprintf(f, "| `%s`%s | %s | %s | %s | %s |\n", x->name, x->required ? " (required)" : "",
                type_words[x->type], range, flag, x->help);
    }
}
