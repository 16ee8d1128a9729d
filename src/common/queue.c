/*
 * queue.c — the table of a queue's fields made from GP_QUEUE_FIELDS
 * (gp_queue.h), and one resource of a quota or a weight as a field (both
 * declared in gp_submit.h, beside a submission's, as gp_field needs).
 */
#include "common/gp_submit.h"

#include <stdio.h>
#include <string.h>

const gp_field gp_queue_fields[GP_QUEUE_NFIELDS] = {
#define GP_QUEUE_ROW_(name, create, flag, type, lo, hi, arg, unit, help)                           \
    {#name, create, flag, type, lo, hi, arg, unit, help},
    GP_QUEUE_FIELDS(GP_QUEUE_ROW_)
#undef GP_QUEUE_ROW_
};

void gp_queue_part_of(const gp_field *f, int r, gp_queue_part *p) {
    static const char *const names[] = {GP_RESOURCES(GP_ENUM_NAME_OF)};
    static const char *const units[] = {"GPUs", "CPUs", ""};
    _Static_assert(sizeof units / sizeof *units == GP_QUEUE_NRES, "a unit for every resource");
    int mem = strcmp(names[r], "memory") == 0;
    p->f = *f;
    p->f.name = names[r];
    /* A weight is a share, in no resource's unit. */
    p->f.unit = f->type == GP_SUBMIT_WEIGHT ? "" : units[r];
    p->f.type = f->type == GP_SUBMIT_WEIGHT ? GP_SUBMIT_INT
                : mem                       ? GP_SUBMIT_SIZE
                                            : GP_SUBMIT_MILLI;
    if (mem && f->type == GP_SUBMIT_QUOTA)
        p->f.hi = GP_SUBMIT_NO_MAX;
    /* The GPUs are the field's own flag; the others carry their name
     * before it, and a size where the GPUs' word is N. */
    if (r == 0 || f->flag == NULL) {
        snprintf(p->flag, sizeof p->flag, "%s", f->flag ? f->flag : "");
        snprintf(p->arg, sizeof p->arg, "%s", f->arg);
    } else {
        snprintf(p->flag, sizeof p->flag, "--%s-%s", names[r], f->flag + 2);
        snprintf(p->arg, sizeof p->arg, "%s%s", mem ? "SIZE" : "N", f->arg + 1);
    }
    p->f.flag = p->flag;
    p->f.arg = p->arg;
}
