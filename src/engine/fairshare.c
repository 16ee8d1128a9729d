/*
 * fairshare.c — what each queue should hold right now, by water-filling down
 * the queue tree (the rules are written out exactly in docs/fairshare.md,
 * which is the reference; tests/engine/fairshare_ref.py implements them from
 * the document alone and the property test compares the two).
 *
 * For each resource, every queue first gets its want: what its subtree can
 * use, i.e. for a project what it holds plus what its pending work asks for,
 * for a department the sum of its children's wants; either capped by the
 * queue's own limit. Then, at each level, the amount the parent holds as its
 * fair share (the whole pool at the top) is divided among its children:
 *   1. every child gets its deserved quota, capped by its want. If these add
 *      up to more than the parent has, the parent's amount is water-filled
 *      among them in proportion to deserved instead (a child never gets more
 *      than min(deserved, want)); this is continuous in every quota: one more
 *      milli-GPU of deserved quota moves a share by about that much;
 *   2. what is left goes to children that want more, highest priority first,
 *      in proportion to over-quota weight; a child never gets more than it
 *      wants, and what it cannot use flows to its siblings (water-filling);
 *   3. each child's fair share is divided among its own children the same way.
 * All arithmetic is in integers; remainders of a proportional division go
 * one unit at a time to the children with the largest remainders, ties to
 * the earlier child (by priority, then name), so the result is exact and
 * deterministic.
 *
 * With time-based fair share on, each child's weight is multiplied by
 * 2^(-u/w), where u is its share of its siblings' decayed usage and w its
 * share of their weight: a queue that used more than its weight recently
 * gets less of what is left over, one that used less gets more.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

typedef struct kid {
    gp__queue *q;
    int64_t want; /* demand capped by limit */
    int64_t give;
    int64_t weight;
} kid;

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* Splits amount into out[0..n) in proportion to w[0..n) (not all zero);
 * remainders go one unit each to the largest remainders, ties to the earlier
 * entry. out must be zeroed by the caller. */
static void split(const gp_engine *e, int64_t amount, const int64_t *w, int64_t *out, size_t n) {
    __int128 total = 0;
    for (size_t i = 0; i < n; i++)
        total += w[i];
    if (total == 0 || amount <= 0)
        return;
    __int128 *rem = gp__malloc(&e->alloc, n * sizeof *rem);
    int64_t given = 0;
    for (size_t i = 0; i < n; i++) {
        __int128 num = (__int128)amount * w[i];
        out[i] = (int64_t)(num / total);
        if (rem)
            rem[i] = num % total;
        given += out[i];
    }
    for (int64_t left = amount - given; left > 0 && rem; left--) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (rem[i] > rem[best])
                best = i;
        out[best]++;
        rem[best] = -1;
    }
    gp__free(&e->alloc, rem);
}

/* Water-fills amount among the children in k[0..n) that want more than they
 * were given, by weight; returns what nobody could use. */
static int64_t water_fill(const gp_engine *e, kid *k, size_t n, int64_t amount) {
    kid **open = gp__malloc(&e->alloc, n * sizeof *open);
    int64_t *w = gp__malloc(&e->alloc, n * sizeof *w), *out = gp__calloc(&e->alloc, n, sizeof *out);
    size_t nopen = 0;
    if (!open || !w || !out)
        goto done; /* no memory: leave the rest undivided this cycle */
    for (size_t i = 0; i < n; i++)
        if (k[i].weight > 0 && k[i].want > k[i].give)
            open[nopen++] = &k[i];
    while (amount > 0 && nopen > 0) {
        __int128 wsum = 0;
        for (size_t i = 0; i < nopen; i++)
            wsum += open[i]->weight;
        /* A child that wants no more than its proportional part is satisfied
         * now; what it leaves flows to the others in the next round. */
        size_t full = nopen;
        for (size_t i = 0; i < nopen && full == nopen; i++)
            if ((__int128)(open[i]->want - open[i]->give) * wsum <=
                (__int128)amount * open[i]->weight)
                full = i;
        if (full < nopen) {
            amount -= open[full]->want - open[full]->give;
            open[full]->give = open[full]->want;
            /* Keep the order: ties of a later split go to the earlier child. */
            memmove(&open[full], &open[full + 1], (nopen - full - 1) * sizeof *open);
            nopen--;
            continue;
        }
        /* Nobody can be satisfied: divide what is left by weight. */
        for (size_t i = 0; i < nopen; i++) {
            w[i] = open[i]->weight;
            out[i] = 0;
        }
        split(e, amount, w, out, nopen);
        for (size_t i = 0; i < nopen; i++)
            open[i]->give += out[i];
        amount = 0;
    }
done:
    gp__free(&e->alloc, open);
    gp__free(&e->alloc, w);
    gp__free(&e->alloc, out);
    return amount;
}

static int by_priority(const void *a, const void *b) {
    const kid *x = a, *y = b;
    if (x->q->spec.priority != y->q->spec.priority)
        return x->q->spec.priority > y->q->spec.priority ? -1 : 1;
    return strcmp(x->q->spec.name, y->q->spec.name);
}

static void add_warning(gp_engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_warning(gp_engine *e, const char *fmt, ...) {
    char buf[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *copy = gp__strdup(&e->alloc, buf);
    uint32_t n = (uint32_t)e->nwarnings, cap = (uint32_t)e->cap_warnings;
    if (!copy || gp__push(&e->alloc, (void **)&e->warnings, &n, &cap, sizeof copy, &copy) != 0) {
        gp__free(&e->alloc, copy);
        return;
    }
    e->nwarnings = n;
    e->cap_warnings = cap;
}

/* Usage-adjusted weights of siblings (time-based fair share). */
static void adjust_weights(const gp_engine *e, kid *k, size_t n, int r) {
    if (e->cfg.usage_half_life <= 0)
        return;
    double usum = 0, wsum = 0;
    for (size_t i = 0; i < n; i++) {
        usum += k[i].q->usage[r];
        wsum += (double)k[i].weight;
    }
    if (usum <= 0 || wsum <= 0)
        return;
    for (size_t i = 0; i < n; i++) {
        if (k[i].weight == 0)
            continue;
        double u = k[i].q->usage[r] / usum, w = (double)k[i].weight / wsum;
        double f = exp2(-u / w);
        int64_t adj = llround((double)k[i].weight * 1000.0 * f);
        k[i].weight = adj > 0 ? adj : 1;
    }
}

/* Divides amount (the parent's fair share, or the pool at the top) among
 * qs[0..n). promised is what the parent itself is guaranteed (its deserved
 * quota, or the pool at the top): children promised more than that is a
 * configuration mistake worth a warning. */
static void divide(gp_engine *e, const char *parent, gp__queue **qs, uint32_t n, int r,
                   int64_t amount, int64_t promised) {
    if (n == 0)
        return;
    kid *k = gp__calloc(&e->alloc, n, sizeof *k), *d = gp__calloc(&e->alloc, n, sizeof *d);
    if (!k || !d) {
        gp__free(&e->alloc, k);
        gp__free(&e->alloc, d);
        return;
    }
    int64_t dsum = 0, base = 0;
    for (uint32_t i = 0; i < n; i++) {
        gp__queue *q = qs[i];
        k[i].q = q;
        k[i].want = q->want.v[r];
        k[i].weight = q->spec.quota[r].weight;
        dsum += q->deserved[r];
        base += min64(q->deserved[r], k[i].want);
    }
    qsort(k, n, sizeof *k, by_priority);
    if (dsum > promised) {
        char a[48], b[48];
        gp__fmt_amount(a, sizeof a, r, dsum);
        gp__fmt_amount(b, sizeof b, r, promised);
        add_warning(e,
                    "deserved %s quotas of the queues under %s add up to %s, more than the %s "
                    "it has; when they ask for more than there is, they are scaled down in "
                    "proportion to deserved",
                    gp_resource_name((gp_resource)r), parent, a, b);
    }
    /* Deserved first: min(deserved, want) each, or, when these do not fit in
     * amount, amount water-filled in proportion to deserved up to them. */
    for (uint32_t i = 0; i < n; i++) {
        d[i] = k[i];
        d[i].want = min64(k[i].q->deserved[r], k[i].want);
        d[i].weight = k[i].q->deserved[r];
        d[i].give = base > amount ? 0 : d[i].want;
    }
    if (base > amount)
        water_fill(e, d, n, amount);
    int64_t left = amount;
    for (uint32_t i = 0; i < n; i++) {
        k[i].give = d[i].give;
        k[i].q->guaranteed.v[r] = d[i].give;
        left -= k[i].give;
    }
    /* Over-quota: highest priority group first. */
    for (uint32_t i = 0; i < n && left > 0;) {
        uint32_t j = i;
        while (j < n && k[j].q->spec.priority == k[i].q->spec.priority)
            j++;
        adjust_weights(e, &k[i], j - i, r);
        left = water_fill(e, &k[i], j - i, left);
        i = j;
    }
    for (uint32_t i = 0; i < n; i++) {
        k[i].q->fair.v[r] = k[i].give;
        divide(e, k[i].q->spec.name, k[i].q->children, k[i].q->nchildren, r, k[i].give,
               k[i].q->deserved[r]);
    }
    gp__free(&e->alloc, k);
    gp__free(&e->alloc, d);
}

/* Every queue's want, bottom-up: a project's holding plus what its pending
 * work asks for, a department's sum of its children's wants; each capped by
 * the queue's own limit. */
static void compute_wants(gp_engine *e) {
    for (uint32_t i = e->nqueues; i-- > 0;) {
        gp__queue *q = e->queues[i];
        for (int r = 0; r < GP_RES_COUNT; r++) {
            int64_t w = 0;
            if (q->nchildren == 0)
                w = q->alloc.v[r] + q->demand.v[r];
            else
                for (uint32_t c = 0; c < q->nchildren; c++)
                    w += q->children[c]->want.v[r];
            q->want.v[r] = min64(w, q->spec.quota[r].limit);
        }
    }
}

/* Decays each queue's usage to now and adds what it held since. */
static void decay_usage(gp_engine *e) {
    if (e->cfg.usage_half_life <= 0)
        return;
    gp_time_ms dt = e->now - e->usage_at;
    if (dt <= 0)
        return;
    double f = exp2(-(double)dt / (double)e->cfg.usage_half_life);
    for (uint32_t i = 0; i < e->nqueues; i++) {
        gp__queue *q = e->queues[i];
        for (int r = 0; r < GP_RES_COUNT; r++)
            q->usage[r] = q->usage[r] * f + (double)q->alloc.v[r] * (double)dt / 1000.0;
    }
    e->usage_at = e->now;
}

void gp__fairshare(gp_engine *e) {
    for (size_t i = 0; i < e->nwarnings; i++)
        gp__free(&e->alloc, e->warnings[i]);
    e->nwarnings = 0;
    gp__queue_tree_refresh(e);
    decay_usage(e);
    compute_wants(e);
    for (int r = 0; r < GP_RES_COUNT; r++)
        divide(e, "the pool", e->roots, e->nroots, r, e->capacity.v[r], e->capacity.v[r]);
}
