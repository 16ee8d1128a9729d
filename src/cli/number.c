/*
 * number.c — the one parser of every number a person types on gpupool's
 * command line: whole numbers (--gang, --priority, --weight), amounts with up
 * to three decimals (--gpu, --cpu, --deserved), sizes (--memory) and
 * durations (--grace, --min-runtime). Each parser takes all of the text or
 * nothing, checks the range, and on failure prints a usage error that
 * repeats what was typed, so that "--priority abc" is an error and not a
 * silent 0. And a field's flag, of gpupool submit or gpupool queue, read as
 * its list says (cli_field_flag).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/gp_queue.h"
#include "common/gp_submit.h"
#include "common/units.h"

/* Reads text as a whole number: a sign, then gp_parse_uint's digits (no
 * blanks, no "+"); INT64_MIN's magnitude is one more than INT64_MAX's. */
static int whole(const char *text, int64_t *out) {
    const char *p = text + (text[0] == '-');
    uint64_t mag = 0;
    if (gp_parse_uint(p, NULL, 10, (uint64_t)INT64_MAX + (p != text), &mag) < 0)
        return -1;
    *out = p == text ? (int64_t)mag : mag > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)mag;
    return 0;
}

int cli_parse_int(const char *cmd, const char *flag, const char *text, int64_t lo, int64_t hi,
                  int64_t *out) {
    int64_t x = 0;
    char range[64];
    if (hi == INT64_MAX)
        snprintf(range, sizeof range, "%lld or more", (long long)lo);
    else
        snprintf(range, sizeof range, "%lld to %lld", (long long)lo, (long long)hi);
    if (whole(text, &x) < 0)
        return cli_usage(cmd, "%s: \"%s\" is not a whole number (%s)", flag, text, range);
    if (x < lo || x > hi)
        return cli_usage(cmd, "%s: %s is outside %s", flag, text, range);
    *out = x;
    return EXIT_OK;
}

int cli_parse_milli(const char *cmd, const char *flag, const char *text, const char *unit,
                    int64_t lo, int64_t hi, int64_t *out) {
    int64_t m;
    char a[32], b[32];
    gp_format_milli(lo, a, sizeof a);
    gp_format_milli(hi, b, sizeof b);
    if (gp_parse_milli(text, &m) < 0)
        return cli_usage(cmd, "%s: \"%s\" is not a number of %s (at most 3 decimals, %s to %s)",
                         flag, text, unit, a, b);
    if (m < lo || m > hi)
        return cli_usage(cmd, "%s: %s %s is outside %s to %s", flag, text, unit, a, b);
    *out = m;
    return EXIT_OK;
}

static int parse_size(const char *cmd, const char *flag, const char *text, int64_t *out) {
    if (gp_parse_size(text, out) < 0)
        return cli_usage(cmd, "%s: \"%s\" is not a size (like 512M, 20G, 1.5T)", flag, text);
    return EXIT_OK;
}

int cli_parse_duration(const char *cmd, const char *flag, const char *text, int64_t *out) {
    if (gp_parse_duration_ms(text, out) < 0)
        return cli_usage(cmd, "%s: \"%s\" is not a duration (like 30s, 10m, 2h)", flag, text);
    return EXIT_OK;
}

/* The object or list that field f collects into, made on first use. */
static json_t *collection(json_t *b, const gp_field *f) {
    json_t *c = json_object_get(b, f->name);
    if (c == NULL) {
        c = f->type == GP_SUBMIT_LIST ? json_array() : json_object();
        json_object_set_new(b, f->name, c);
    }
    return c;
}

int cli_field_flag(const char *what, json_t *b, const gp_field *f, const char *v) {
    static const char *const modes[] = {GP_ON_PREEMPT_MODES(GP_ENUM_NAME_OF) "inherit"};
    const int nmodes = (int)(sizeof modes / sizeof *modes);
    int64_t x = 0;
    char why[128];
    int rc = EXIT_OK;
    const char *eq;
    /* What is sent: the text as typed, unless a case says otherwise. */
    json_t *sent = NULL;
    switch (f->type) {
    /* A number is read here, and its range checked below, in the daemon's
     * words (gp_field_out_of_range). */
    case GP_SUBMIT_MILLI:
        if (gp_parse_milli(v, &x) < 0) {
            gp_field_range(f, why, sizeof why);
            return cli_usage(what, "%s: \"%s\" is not a number of %s (at most 3 decimals, %s)",
                             f->flag, v, f->unit, why);
        }
        break;
    case GP_SUBMIT_SIZE:
        rc = parse_size(what, f->flag, v, &x);
        break;
    case GP_SUBMIT_BOUND: /* or 0 or none: no bound */
        if (strcmp(v, "none") != 0 && strcmp(v, "0") != 0)
            rc = cli_parse_duration(what, f->flag, v, &x);
        break;
    case GP_SUBMIT_DURATION:
        rc = cli_parse_duration(what, f->flag, v, &x);
        break;
    case GP_SUBMIT_MODE: /* inherit: none of its own, its parent's (null) */
        if (gp_name_index(modes, nmodes, v) < 0)
            return cli_usage(what, "%s: \"%s\" is not %s", f->flag, v,
                             gp_names_or(why, sizeof why, modes, nmodes));
        sent = strcmp(v, "inherit") == 0 ? json_null() : NULL;
        break;
    case GP_SUBMIT_INT:
    case GP_SUBMIT_WEIGHT:
        if (whole(v, &x) < 0) {
            gp_field_range(f, why, sizeof why);
            return cli_usage(what, "%s: \"%s\" is not a whole number (%s)", f->flag, v, why);
        }
        sent = json_integer(x);
        break;
    case GP_SUBMIT_TRUE:
    case GP_SUBMIT_FALSE:
        sent = json_boolean(f->type == GP_SUBMIT_TRUE);
        break;
    case GP_SUBMIT_LIST:
        json_array_append_new(collection(b, f), json_string(v));
        return EXIT_OK;
    case GP_SUBMIT_MAP:
        if ((eq = strchr(v, '=')) == NULL)
            return cli_usage(what, "%s wants %s, got %s", f->flag, f->arg, v);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
        json_object_set_new(collection(b, f), name, json_string(eq + 1));
        return EXIT_OK;
    case GP_SUBMIT_STRING:
    case GP_SUBMIT_ARGV:
        break;
    case GP_SUBMIT_QUOTA: /* a flag for each resource: gp_queue_part_of */
        return cli_usage(what, "%s: set by resource", f->flag);
    }
    json_object_set_new(b, f->name, sent != NULL ? sent : json_string(v));
    if (rc == EXIT_OK && gp_field_out_of_range(f, x, why, sizeof why))
        rc = cli_usage(what, "%s: %s", f->flag, why);
    return rc;
}
