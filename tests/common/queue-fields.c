/*
 * queue-fields.c — prints what GP_QUEUE_FIELDS (common/gp_queue.h) says of
 * a queue, for test-queue-fields.sh to hold its copies to: "table" the field
 * table of docs/api.md, "names" the JSON names, "flags" the flags of
 * `gpupool queue` (a quota's one for each resource), one a line; "past" a
 * value just past each bound of each flag that takes a number, as
 * "FLAG<tab>VALUE<tab>FIELD<tab>BODY": what to type, the field the daemon
 * names and the JSON body that gives it the same value.
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_queue.h"
#include "common/gp_submit.h"

/* The text of value x of a number field f, as a person may type it: an
 * amount with its 3 decimals, a duration in milliseconds, bytes, a whole
 * number (written here, not by units.h, which the checks use). */
static void text_of(const gp_field *f, int64_t x, char *buf, size_t len) {
    long long a = x < 0 ? -(long long)x : (long long)x;
    if (f->type == GP_SUBMIT_MILLI)
        snprintf(buf, len, "%s%lld.%03lld", x < 0 ? "-" : "", a / 1000, a % 1000);
    else if (f->type == GP_SUBMIT_DURATION || f->type == GP_SUBMIT_BOUND)
        snprintf(buf, len, "%lldms", (long long)x);
    else
        snprintf(buf, len, "%lld", (long long)x);
}

/* Prints a line of "past" for each bound of f (a part of a quota: in the
 * object of its field, parent). */
static void past(const gp_field *f, const char *parent) {
    /* One step of the field's unit: a millisecond, a byte, a thousandth. */
    const int64_t step = 1;
    /* No upper bound has nothing past it (and INT64_MAX + 1 overflows). */
    int n = f->hi == GP_SUBMIT_NO_MAX ? 1 : 2;
    int64_t xs[2] = {f->lo - step, n == 2 ? f->hi + step : 0};
    for (int k = 0; k < n; k++) {
        char v[64], field[64], body[160];
        text_of(f, xs[k], v, sizeof v);
        int whole = f->type == GP_SUBMIT_INT || f->type == GP_SUBMIT_WEIGHT;
        if (parent != NULL) {
            snprintf(field, sizeof field, "%s.%s", parent, f->name);
            snprintf(body, sizeof body, "{\"%s\": {\"%s\": \"%s\"}}", parent, f->name, v);
        } else {
            snprintf(field, sizeof field, "%s", f->name);
            snprintf(body, sizeof body, whole ? "{\"%s\": %s}" : "{\"%s\": \"%s\"}", f->name, v);
        }
        printf("%s\t%s\t%s\t%s\n", f->flag, v, field, body);
    }
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "table";
    if (strcmp(what, "table") == 0) {
        gp_fields_doc_table(stdout, gp_queue_fields, GP_QUEUE_NFIELDS, "queue", "(at creation)");
        return 0;
    }
    int names = strcmp(what, "names") == 0, flags = strcmp(what, "flags") == 0;
    if (!names && !flags && strcmp(what, "past") != 0) {
        fprintf(stderr, "usage: queue-fields [table|names|flags|past]\n");
        return 2;
    }
    for (int i = 0; i < GP_QUEUE_NFIELDS; i++) {
        const gp_field *f = &gp_queue_fields[i];
        if (names) {
            printf("%s\n", f->name);
        } else if (f->flag != NULL && f->type == GP_SUBMIT_QUOTA) {
            for (int r = 0; r < GP_QUEUE_NRES; r++) {
                gp_queue_part p;
                gp_queue_part_of(f, r, &p);
                if (flags)
                    printf("%s\n", p.f.flag);
                else
                    past(&p.f, f->name);
            }
        } else if (f->flag != NULL && flags) {
            printf("%s\n", f->flag);
        } else if (f->flag != NULL && f->type != GP_SUBMIT_STRING && f->type != GP_SUBMIT_MODE) {
            past(f, NULL);
        }
    }
    return 0;
}
