/*
 * submit.c — the table of a submission's fields made from GP_SUBMIT_FIELDS
 * (gp_submit.h), looking one up; a field's range check and the reference
 * tables docs/api.md shows, for a submission's fields and a queue's.
 */
#include "common/gp_submit.h"

#include <string.h>

#include "common/gp_queue.h"
#include "common/units.h"

const gp_field gp_submit_fields[GP_SUBMIT_NFIELDS] = {
#define GP_SUBMIT_ROW_(name, req, flag, type, lo, hi, arg, unit, help)                             \
    {#name, req, flag, type, lo, hi, arg, unit, help},
    GP_SUBMIT_FIELDS(GP_SUBMIT_ROW_)
#undef GP_SUBMIT_ROW_
};

const gp_field *gp_submit_find(const char *name) {
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
static void format_bound(const gp_field *f, int64_t v, char *buf, size_t len) {
    switch (f->type) {
    case GP_SUBMIT_MILLI:
    case GP_SUBMIT_QUOTA:
        gp_format_milli(v, buf, len);
        break;
    case GP_SUBMIT_SIZE:
        gp_format_size(v, buf, len);
        break;
    case GP_SUBMIT_DURATION:
    case GP_SUBMIT_BOUND:
        gp_format_duration(v, buf, len);
        break;
    default:
        snprintf(buf, len, "%lld", (long long)v);
    }
}

static int is_number(const gp_field *f) {
    return f->type == GP_SUBMIT_MILLI || f->type == GP_SUBMIT_SIZE ||
           f->type == GP_SUBMIT_DURATION || f->type == GP_SUBMIT_INT ||
           f->type == GP_SUBMIT_QUOTA || f->type == GP_SUBMIT_WEIGHT || f->type == GP_SUBMIT_BOUND;
}

void gp_field_range(const gp_field *f, char *buf, size_t len) {
    static const char *const modes[] = {GP_ON_PREEMPT_MODES(GP_ENUM_NAME_OF)};
    char lo[32], hi[32];
    buf[0] = '\0';
    if (f->type == GP_SUBMIT_MODE)
        gp_names_or(buf, len, modes, (int)(sizeof modes / sizeof *modes));
    if (!is_number(f))
        return;
    format_bound(f, f->lo, lo, sizeof lo);
    format_bound(f, f->hi, hi, sizeof hi);
    if (f->hi != GP_SUBMIT_NO_MAX)
        snprintf(buf, len, "%s to %s%s", lo, hi, f->type == GP_SUBMIT_QUOTA ? " GPUs or CPUs" : "");
    else if (f->lo == 1)
        snprintf(buf, len, "above 0");
    else if (f->lo > 0)
        snprintf(buf, len, "%s or more", lo);
}

int gp_field_out_of_range(const gp_field *f, int64_t x, char *why, size_t len) {
    if (!is_number(f) || (x >= f->lo && x <= f->hi) || (f->type == GP_SUBMIT_BOUND && x == 0))
        return 0;
    char v[32], lo[32], range[80];
    format_bound(f, x, v, sizeof v);
    format_bound(f, f->lo, lo, sizeof lo);
    gp_field_range(f, range, sizeof range);
    const char *sp = f->unit[0] ? " " : "";
    if (x < f->lo && f->lo == 1)
        snprintf(why, len, "must be above 0");
    else if (f->hi == GP_SUBMIT_NO_MAX)
        snprintf(why, len, "%s%s%s is below %s", v, sp, f->unit, lo);
    else
        snprintf(why, len, "%s%s%s is outside %s%s", v, sp, f->unit, range,
                 f->type == GP_SUBMIT_BOUND ? " (or 0 or none: no bound)" : "");
    return 1;
}

/* The flag cell of field x: its flag and value word, or each of a quota's
 * flags. */
static void flag_words(const gp_field *x, char *buf, size_t len) {
    buf[0] = '\0';
    if (x->type == GP_SUBMIT_ARGV) {
        snprintf(buf, len, "`-- %s...`", x->arg);
    } else if (x->type == GP_SUBMIT_QUOTA) {
        size_t at = 0;
        for (int r = 0; r < GP_QUEUE_NRES && at < len; r++) {
            gp_queue_part p;
            gp_queue_part_of(x, r, &p);
            at +=
                (size_t)snprintf(buf + at, len - at, "%s`%s %s`", r ? ", " : "", p.f.flag, p.f.arg);
        }
    } else if (x->flag != NULL) {
        snprintf(buf, len, "`%s%s%s`%s", x->flag, x->arg[0] ? " " : "", x->arg,
                 x->type == GP_SUBMIT_LIST || x->type == GP_SUBMIT_MAP ? ", repeatable" : "");
    }
}

/* Writes s as the text of a table's cell: a "|" of a value word ("N|none")
 * escaped, as it would end the cell. */
static void cell(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', f);
        fputc(*s, f);
    }
}

void gp_fields_doc_table(FILE *f, const gp_field *fields, int n, const char *cmd,
                         const char *once) {
    fprintf(f, "| field | type | range | `gpupool %s` | meaning |\n|---|---|---|---|---|\n", cmd);
    for (int i = 0; i < n; i++) {
        const gp_field *x = &fields[i];
        char range[80], flag[160];
        gp_field_range(x, range, sizeof range);
        flag_words(x, flag, sizeof flag);
        fprintf(f, "| `%s`%s%s | %s | %s | ", x->name, x->required ? " " : "",
                x->required ? once : "", type_words[x->type], range);
        cell(f, flag);
        fprintf(f, " | %s |\n", x->help);
    }
}
