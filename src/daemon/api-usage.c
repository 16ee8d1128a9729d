/*
 * api-usage.c — GET /api/v1/usage: GPU-hours allocated, used, idle while
 * allocated, borrowed and lent per queue, user or node over any period, from
 * the usage buckets of the store (store-usage.c), in steps for charts and in
 * totals for chargeback.
 *
 * Parameters: from and to (seconds since the epoch, a date such as
 * 2026-12-01 or 2026-12-01T08:00:00Z, or a duration such as 7d meaning that
 * long before now; default the last day), step (a duration; default about a
 * hundred steps), by (queue, user or node; default queue). Minute buckets
 * answer periods within their retention and steps under an hour; hour
 * buckets answer the rest, and the period is widened to whole buckets.
 * Researchers see only their own user in by=user.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "daemon/api.h"
#include "daemon/sched.h"
#include "daemon/store.h"

#define MAX_STEPS 20000

/* Parses a point in time; now_s for relative ones. */
static int parse_time(const char *field, const char *s, int64_t now_s, int64_t *out, gpd__err *e) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s && !*end && v >= 0) {
        *out = v;
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = strptime(s, "%Y-%m-%d", &tm);
    if (rest && (*rest == 'T' || *rest == ' '))
        rest = strptime(rest + 1, "%H:%M:%S", &tm);
    if (rest && (*rest == '\0' || strcmp(rest, "Z") == 0)) {
        *out = (int64_t)timegm(&tm);
        return 0;
    }
    int64_t ms;
    if (gp_parse_duration_ms(s[0] == '-' ? s + 1 : s, &ms) == 0 && ms >= 0) {
        *out = now_s - ms / 1000;
        return 0;
    }
    return gpd__fail(e, GP_EINVAL, field,
                     "%s: \"%s\" is not a time (seconds since 1970, 2026-12-01, "
                     "2026-12-01T08:00:00Z, or a duration before now such as 7d)",
                     field, s);
}

typedef struct collect {
    json_t *keys;
    json_t *cur; /* the key being filled */
    json_t *pts; /* its points */
    char key[GP_NAME_MAX + 1];
    double tot[5]; /* alloc, used, measured, borrowed, lent */
    const char *only_user;
} collect;

static json_t *hours(double secs) {
    return json_real((double)llround(secs / 0.0036) / 1e6); /* GPU-hours, to 3.6 ms */
}

static void close_key(collect *c) {
    if (!c->cur)
        return;
    double *t = c->tot;
    json_object_set_new(c->cur, "allocated_gpu_hours", hours(t[0]));
    json_object_set_new(c->cur, "measured_gpu_hours", hours(t[2]));
    json_object_set_new(c->cur, "used_gpu_hours", t[2] > 0 ? hours(t[1]) : json_null());
    json_object_set_new(c->cur, "idle_gpu_hours", t[2] > 0 ? hours(t[2] - t[1]) : json_null());
    json_object_set_new(c->cur, "used_percent",
                        t[2] > 0 ? json_real((double)llround(t[1] / t[2] * 1000) / 10.0)
                                 : json_null());
    json_object_set_new(c->cur, "borrowed_gpu_hours", hours(t[3]));
    json_object_set_new(c->cur, "lent_gpu_hours", hours(t[4]));
    json_object_set_new(c->cur, "points", c->pts);
    json_array_append_new(c->keys, c->cur);
    c->cur = c->pts = NULL;
    memset(c->tot, 0, sizeof c->tot);
}

static int on_point(const gpd__usage_point *p, void *arg) {
    collect *c = arg;
    if (c->only_user && strcmp(p->key, c->only_user) != 0)
        return 0;
    if (!c->cur || strcmp(c->key, p->key) != 0) {
        close_key(c);
        snprintf(c->key, sizeof c->key, "%s", p->key);
        c->cur = json_pack("{s:s}", "key", p->key);
        c->pts = json_array();
    }
    c->tot[0] += p->alloc;
    c->tot[1] += p->used;
    c->tot[2] += p->measured;
    c->tot[3] += p->borrowed;
    c->tot[4] += p->lent;
    json_array_append_new(c->pts,
                          json_pack("[I,o,o,o,o,o]", (json_int_t)p->ts, hours(p->alloc),
                                    p->measured > 0 ? hours(p->used) : json_null(),
                                    hours(p->measured), hours(p->borrowed), hours(p->lent)));
    return 0;
}

/* Adds each queue's parent, so that a reader can draw the tree. */
static void add_parents(gpd__req *r, json_t *keys) {
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        gp_queue_info qi;
        const char *name = json_string_value(json_object_get(k, "key"));
        if (name && gp_engine_queue_get(eng, name, &qi) == 0)
            json_object_set_new(k, "parent", json_string(qi.parent));
    }
    gpd__sched_unlock(r->d->sched);
}

int gpd__h_usage(gpd__req *r, gpd__resp *out, gpd__err *e) {
    int64_t now = gpd__now_ms() / 1000, from, to, step = 0;
    const char *s;
    int rc = 0;
    to = now;
    if ((s = gpd__query(r, "to")) && (rc = parse_time("to", s, now, &to, e)) < 0)
        return rc;
    from = to - 86400;
    if ((s = gpd__query(r, "from")) && (rc = parse_time("from", s, now, &from, e)) < 0)
        return rc;
    if (from >= to)
        return gpd__fail(e, GP_EINVAL, "from", "from: must be before to");
    if ((s = gpd__query(r, "step"))) {
        int64_t ms;
        if (gp_parse_duration_ms(s, &ms) < 0 || ms < 60000)
            return gpd__fail(e, GP_EINVAL, "step",
                             "step: \"%s\" is not a duration of at least a minute (1m, 1h, 1d)", s);
        step = ms / 1000;
    }
    gpd__usage_kind kind = GP__USAGE_QUEUE;
    if ((s = gpd__query(r, "by")) && gpd__usage_kind_parse(s, &kind) < 0)
        return gpd__fail(e, GP_EINVAL, "by", "by: \"%s\" is not queue, user or node", s);
    if (step == 0) {
        step = (to - from) / 100;
        step = step < 60 ? 60 : step;
    }
    /* Minute buckets while they are kept and the steps are finer than an
     * hour; hour buckets otherwise. Steps are whole buckets. */
    int32_t res = GP__USAGE_COARSE;
    if (step < GP__USAGE_COARSE && from >= now - (int64_t)GP__USAGE_FINE_DAYS * 86400)
        res = GP__USAGE_FINE;
    step = (step + res - 1) / res * res;
    from -= ((from % res) + res) % res;
    to = (to + res - 1) / res * res;
    if ((to - from) / step > MAX_STEPS)
        return gpd__fail(e, GP_EINVAL, "step",
                         "step: %lld s makes more than %d steps from from to to; take a longer one",
                         (long long)step, MAX_STEPS);
    collect c = {.keys = json_array()};
    if (kind == GP__USAGE_USER && r->who.role == GP__ROLE_RESEARCHER)
        c.only_user = r->who.user;
    rc = gpd__store_usage_query(r->d->store, res, (int)kind, from, to, step, on_point, &c, e);
    close_key(&c);
    if (rc < 0) {
        json_decref(c.keys);
        return rc;
    }
    if (kind == GP__USAGE_QUEUE)
        add_parents(r, c.keys);
    gpd__usage_now un;
    char note[192] = "";
    if (gpd__sched_usage_now(r->d->sched, &un) == 0) {
        snprintf(note, sizeof note, "%s", un.note);
        gpd__usage_now_free(&un);
    }
    json_t *j =
        json_pack("{s:I, s:I, s:I, s:i, s:s, s:s, s:[s,s,s,s,s,s], s:o}", "from", (json_int_t)from,
                  "to", (json_int_t)to, "step", (json_int_t)step, "resolution", res, "by",
                  gpd__usage_kind_name(kind), "note", note, "columns", "t", "allocated", "used",
                  "measured", "borrowed", "lent", "keys", c.keys);
    return gpd__reply_json(out, 200, j);
}
