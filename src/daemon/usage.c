/*
 * usage.c — the arithmetic of usage accounting (see usage.h): rates of a
 * sample per queue, user and node, and the GPU-seconds they add to minute
 * and hour buckets. Pure functions, tested against hand-computed figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_array.h"
#include "common/gp_error.h"
#include "common/gp_names.h"
#include "daemon/usage.h"

GP_NAMED_ENUM_DEFINE(gpd__usage_kind, GPD__USAGE_KINDS, GPD__USAGE_NKINDS, "?")

/* A growing table of rates, found by (kind, key). */
typedef struct table {
    gpd__usage_rate *r;
    size_t n, cap;
    int oom;
} table;

static gpd__usage_rate *slot(table *t, gpd__usage_kind kind, const char *key) {
    for (size_t i = 0; i < t->n; i++)
        if (t->r[i].kind == kind && strcmp(t->r[i].key, key) == 0)
            return &t->r[i];
    if (GP_ARRAY_ROOM(t->r, t->n, t->cap, 32) < 0) {
        t->oom = 1;
        return NULL;
    }
    gpd__usage_rate *x = &t->r[t->n++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    snprintf(x->key, sizeof x->key, "%s", key);
    return x;
}

/* The busy ratio of GPU index on node, or -1 if unknown. */
static double busy_of(const gpd__usage_input *in, const char *node, int32_t index) {
    for (size_t i = 0; i < in->ngpus; i++)
        if (in->gpus[i].index == index && strcmp(in->gpus[i].node, node) == 0)
            return in->gpus[i].busy_permille < 0 ? -1 : in->gpus[i].busy_permille / 1000.0;
    return -1;
}

/* Milli-GPU allocated on GPU index of node, over every task's slices. */
static int64_t milli_on(const gpd__usage_input *in, const char *node, int32_t index) {
    int64_t sum = 0;
    for (size_t t = 0; t < in->ntasks; t++) {
        if (strcmp(in->tasks[t].node, node) != 0)
            continue;
        for (int s = 0; s < in->tasks[t].nslices; s++)
            if (in->tasks[t].slices[s].gpu == index)
                sum += in->tasks[t].slices[s].milli;
    }
    return sum;
}

static const gpd__usage_queue *queue_of(const gpd__usage_input *in, const char *name) {
    for (size_t i = 0; i < in->nqueues; i++)
        if (strcmp(in->queues[i].name, name) == 0)
            return &in->queues[i];
    return NULL;
}

static void add(gpd__usage_rate *x, double alloc, double used, int known) {
    if (!x)
        return;
    x->alloc += alloc;
    if (known) {
        x->used += used;
        x->measured += alloc;
    }
}

/* Borrowed and lent of every queue, level by level among siblings. */
static void borrow_lend(const gpd__usage_input *in, table *t) {
    for (size_t p = 0; p <= in->nqueues; p++) {
        const char *parent = p < in->nqueues ? in->queues[p].name : "";
        double borrowed = 0, idle = 0;
        for (size_t i = 0; i < in->nqueues; i++) {
            if (strcmp(in->queues[i].parent, parent) != 0)
                continue;
            gpd__usage_rate *x = slot(t, GPD__USAGE_QUEUE, in->queues[i].name);
            if (!x)
                return;
            double deserved = in->queues[i].deserved_milli / 1000.0;
            if (x->alloc > deserved)
                borrowed += x->borrowed = x->alloc - deserved;
            else
                idle += deserved - x->alloc;
        }
        if (borrowed <= 0 || idle <= 0)
            continue;
        double share = borrowed < idle ? borrowed / idle : 1.0;
        for (size_t i = 0; i < in->nqueues; i++) {
            if (strcmp(in->queues[i].parent, parent) != 0)
                continue;
            gpd__usage_rate *x = slot(t, GPD__USAGE_QUEUE, in->queues[i].name);
            double deserved = in->queues[i].deserved_milli / 1000.0;
            if (x && x->alloc < deserved)
                x->lent = (deserved - x->alloc) * share;
        }
    }
}

int gpd__usage_rates(const gpd__usage_input *in, gpd__usage_rate **out, size_t *n) {
    table t = {0};
    for (size_t i = 0; i < in->ntasks; i++) {
        const gpd__usage_task *tk = &in->tasks[i];
        for (int s = 0; s < tk->nslices; s++) {
            const gp_slice *sl = &tk->slices[s];
            double alloc = sl->milli / 1000.0;
            double busy = sl->mig_slot >= 0 ? -1 : busy_of(in, tk->node, sl->gpu);
            double used = 0;
            if (busy >= 0) {
                int64_t sum = milli_on(in, tk->node, sl->gpu);
                used = sum > 0 ? busy * (double)sl->milli / (double)sum : 0;
                if (used > alloc)
                    used = alloc;
            }
            int known = busy >= 0;
            add(slot(&t, GPD__USAGE_USER, tk->user), alloc, used, known);
            add(slot(&t, GPD__USAGE_NODE, tk->node), alloc, used, known);
            /* The project and every department above it. */
            const char *q = tk->project;
            for (int depth = 0; q && q[0] && depth < 64; depth++) {
                add(slot(&t, GPD__USAGE_QUEUE, q), alloc, used, known);
                const gpd__usage_queue *qq = queue_of(in, q);
                q = qq ? qq->parent : NULL;
            }
        }
    }
    for (size_t i = 0; i < in->nreturns; i++) {
        const gpd__usage_return *rt = &in->returns[i];
        gpd__usage_rate *x = slot(&t, GPD__USAGE_USER, rt->user);
        if (x)
            x->returned += (double)rt->milli / 1000.0;
        const char *q = rt->project;
        for (int depth = 0; q && q[0] && depth < 64; depth++) {
            if ((x = slot(&t, GPD__USAGE_QUEUE, q)) != NULL)
                x->returned += (double)rt->milli / 1000.0;
            const gpd__usage_queue *qq = queue_of(in, q);
            q = qq ? qq->parent : NULL;
        }
    }
    borrow_lend(in, &t);
    if (t.oom) {
        free(t.r);
        *out = NULL;
        *n = 0;
        return GP_ENOMEM;
    }
    /* Keep only keys with something to say. */
    size_t k = 0;
    for (size_t i = 0; i < t.n; i++)
        if (t.r[i].alloc > 0 || t.r[i].borrowed > 0 || t.r[i].lent > 0 || t.r[i].returned > 0)
            t.r[k++] = t.r[i];
    *out = t.r;
    *n = k;
    return 0;
}

static int64_t floor_to(int64_t v, int64_t step) {
    return v >= 0 ? v - v % step : v - ((v % step) + step) % step;
}

int gpd__usage_account(const gpd__usage_rate *rates, size_t nrates, int64_t from_ms, int64_t to_ms,
                       gpd__usage_row **out, size_t *n) {
    *out = NULL;
    *n = 0;
    if (to_ms < from_ms)
        return GP_EINVAL;
    if (to_ms == from_ms || nrates == 0)
        return 0;
    /* Minute pieces of [from, to), and the hours they fall in. */
    int64_t fine_ms = GPD__USAGE_FINE * 1000, coarse_ms = GPD__USAGE_COARSE * 1000;
    size_t nmin =
        (size_t)((floor_to(to_ms - 1, fine_ms) - floor_to(from_ms, fine_ms)) / fine_ms) + 1;
    size_t nhour =
        (size_t)((floor_to(to_ms - 1, coarse_ms) - floor_to(from_ms, coarse_ms)) / coarse_ms) + 1;
    gpd__usage_row *rows = calloc((nmin + nhour) * nrates, sizeof *rows);
    if (!rows)
        return GP_ENOMEM;
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t step = pass == 0 ? fine_ms : coarse_ms;
        for (int64_t b = floor_to(from_ms, step); b < to_ms; b += step) {
            int64_t lo = b > from_ms ? b : from_ms, hi = b + step < to_ms ? b + step : to_ms;
            double secs = (double)(hi - lo) / 1000.0;
            for (size_t i = 0; i < nrates; i++) {
                gpd__usage_row *r = &rows[k++];
                r->res = (int32_t)(step / 1000);
                r->ts = b / 1000;
                r->kind = rates[i].kind;
                memcpy(r->key, rates[i].key, sizeof r->key);
                r->alloc = rates[i].alloc * secs;
                r->used = rates[i].used * secs;
                r->measured = rates[i].measured * secs;
                r->borrowed = rates[i].borrowed * secs;
                r->lent = rates[i].lent * secs;
                r->returned = rates[i].returned * secs;
            }
        }
    }
    *out = rows;
    *n = k;
    return 0;
}
