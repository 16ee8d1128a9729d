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

#include "common/gp_array.h"
#include "common/units.h"
#include "daemon/api.h"
#include "daemon/sched.h"
#include "daemon/store.h"

#define MAX_STEPS 20000

int gpd__parse_time(const char *field, const char *s, int64_t now_s, int64_t *out, gpd__err *e) {
    uint64_t v;
    int64_t t = -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = NULL;
    int64_t ms;
    if (gp_parse_uint(s, NULL, 10, INT64_MAX, &v) == 0) {
        t = (int64_t)v;
    } else {
        rest = strptime(s, "%Y-%m-%d", &tm);
        if (rest && (*rest == 'T' || *rest == ' '))
            rest = strptime(rest + 1, "%H:%M:%S", &tm);
        if (rest && (*rest == '\0' || strcmp(rest, "Z") == 0))
            t = (int64_t)timegm(&tm);
        else if (gp_parse_duration_ms(s[0] == '-' ? s + 1 : s, &ms) == 0 && ms >= 0)
            /* A duration reaching before 1970: from the beginning. */
            t = ms / 1000 > now_s ? 0 : now_s - ms / 1000;
    }
    /* Bounded, so that no sum or product of times (rounded to whole
     * buckets, in milliseconds) can overflow: to=2^63-1 did. */
    if (t >= 0 && t <= GPD__TIME_MAX) {
        *out = t;
        return 0;
    }
    return gpd__fail(e, GP_EINVAL, field,
                     "%s: \"%.64s\" is not a time from 1970 to 9999 (seconds since 1970, "
                     "2026-12-01, 2026-12-01T08:00:00Z, or a duration before now such as 7d)",
                     field, s);
}

/* GPU-seconds as GPU-hours to a millionth (3.6 ms), without a trailing
 * zero: a year of hourly points is hundreds of thousands of numbers, which
 * a JSON library's generic formatting makes too slow for the console. */
static void put_hours(gpd__text *t, double secs) {
    long long m = llround(secs / 0.0036);
    char b[48];
    int n = snprintf(b, sizeof b, "%s%lld.%06lld", m < 0 ? "-" : "", llabs(m) / 1000000,
                     llabs(m) % 1000000);
    while (n > 0 && b[n - 1] == '0')
        n--;
    if (n > 0 && b[n - 1] == '.')
        n--;
    gpd__text_put(t, b, (size_t)n);
}

/* A string as JSON (quoted and escaped). */
static void put_str(gpd__text *t, const char *s) {
    json_t *j = json_string(s);
    char *d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    if (d)
        gpd__text_puts(t, d);
    else
        t->oom = 1;
    free(d);
    json_decref(j);
}

/* One key of the answer: its totals and its points as JSON text. */
typedef struct key_sum {
    char key[GP_NAME_MAX + 1];
    double tot[6]; /* alloc, used, measured, borrowed, lent, returned */
    gpd__text pts;
} key_sum;

typedef struct collect {
    key_sum *k;
    size_t n, cap, last;
    int oom;
    /* By user for a non-admin: only these users (a researcher itself, a
     * department admin the users of its projects). */
    int only_users;
    char (*users)[GP_NAME_MAX + 1];
    size_t nusers, capusers;
} collect;

static int user_listed(const collect *c, const char *user) {
    for (size_t i = 0; i < c->nusers; i++)
        if (strcmp(c->users[i], user) == 0)
            return 1;
    return 0;
}

static int add_user(const char *user, void *arg) {
    collect *c = arg;
    if (user_listed(c, user))
        return 0;
    if (GP_ARRAY_ROOM(c->users, c->nusers, c->capusers, 16) < 0)
        return GP_ENOMEM;
    snprintf(c->users[c->nusers++], sizeof c->users[0], "%s", user);
    return 0;
}

/* The users whose usage by user r's caller may see: a researcher only
 * itself, a department admin the users of its department's projects (as
 * their workloads name them); an admin every one. */
static int users_seen(gpd__req *r, collect *c, gpd__err *e) {
    if (r->who.role == GPD__ROLE_ADMIN)
        return 0;
    c->only_users = 1;
    if (r->who.role == GPD__ROLE_RESEARCHER)
        return add_user(r->who.user, c) < 0 ? gpd__fail(e, GP_ENOMEM, "", "out of memory") : 0;
    char *buf = NULL;
    const char **projects = gpd__visible_projects(r, &buf);
    int rc = projects != NULL ? 0 : gpd__fail(e, GP_ENOMEM, "", "out of memory");
    for (size_t i = 0; rc == 0 && projects[i] != NULL; i++)
        rc = gpd__store_project_users(r->d->store, projects[i], add_user, c, e);
    free(projects);
    free(buf);
    return rc;
}

/* The key's entry, made if new; points arrive in time order, keys mixed. */
static key_sum *key_of(collect *c, const char *key) {
    if (c->last < c->n && strcmp(c->k[c->last].key, key) == 0)
        return &c->k[c->last];
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->k[i].key, key) == 0)
            return &c->k[c->last = i];
    if (GP_ARRAY_ROOM(c->k, c->n, c->cap, 16) < 0)
        return NULL;
    key_sum *k = &c->k[c->last = c->n++];
    memset(k, 0, sizeof *k);
    snprintf(k->key, sizeof k->key, "%s", key);
    return k;
}

static int on_point(const gpd__usage_point *p, void *arg) {
    collect *c = arg;
    if (c->only_users && !user_listed(c, p->key))
        return 0;
    key_sum *k = key_of(c, p->key);
    if (!k) {
        c->oom = 1;
        return 1;
    }
    const double v[6] = {p->alloc, p->used, p->measured, p->borrowed, p->lent, p->returned};
    char b[32];
    int n = snprintf(b, sizeof b, "%s[%lld", k->pts.len ? "," : "", (long long)p->ts);
    gpd__text_put(&k->pts, b, (size_t)n);
    for (int i = 0; i < 6; i++) {
        k->tot[i] += v[i];
        gpd__text_puts(&k->pts, ",");
        if (i == 1 && p->measured <= 0)
            gpd__text_puts(&k->pts, "null");
        else
            put_hours(&k->pts, v[i]);
    }
    gpd__text_puts(&k->pts, "]");
    c->oom |= k->pts.oom;
    return c->oom;
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const key_sum *)a)->key, ((const key_sum *)b)->key);
}

static void collect_free(collect *c) {
    for (size_t i = 0; i < c->n; i++)
        free(c->k[i].pts.p);
    free(c->k);
    free(c->users);
}

/* Writes one key's object: totals in GPU-hours (null where nothing was
 * measured), its parent for queues, and its points. */
static void put_key(gpd__text *t, const key_sum *k, const char *parent) {
    const double *x = k->tot;
    gpd__text_puts(t, "{\"key\":");
    put_str(t, k->key);
    if (parent) {
        gpd__text_puts(t, ",\"parent\":");
        put_str(t, parent);
    }
    static const char *const names[] = {"allocated", "used", "measured",
                                        "borrowed",  "lent", "returned"};
    for (int i = 0; i < 6; i++) {
        char b[64];
        snprintf(b, sizeof b, ",\"%s_gpu_hours\":", names[i]);
        gpd__text_puts(t, b);
        if (i == 1 && x[2] <= 0)
            gpd__text_puts(t, "null");
        else
            put_hours(t, x[i]);
    }
    gpd__text_puts(t, ",\"idle_gpu_hours\":");
    if (x[2] > 0)
        put_hours(t, x[2] - x[1]);
    else
        gpd__text_puts(t, "null");
    char b[64];
    if (x[2] > 0)
        snprintf(b, sizeof b, ",\"used_percent\":%.1f", (double)llround(x[1] / x[2] * 1000) / 10);
    else
        snprintf(b, sizeof b, ",\"used_percent\":null");
    gpd__text_puts(t, b);
    gpd__text_puts(t, ",\"points\":[");
    if (k->pts.len)
        gpd__text_put(t, k->pts.p, k->pts.len);
    gpd__text_puts(t, "]}");
}

int gpd__h_usage(gpd__req *r, gpd__resp *out, gpd__err *e) {
    int64_t now = gpd__now_ms() / 1000, from, to, step = 0;
    const char *s;
    int rc = 0;
    to = now;
    if ((s = gpd__query(r, "to")) && (rc = gpd__parse_time("to", s, now, &to, e)) < 0)
        return rc;
    from = to - 86400;
    if ((s = gpd__query(r, "from")) && (rc = gpd__parse_time("from", s, now, &from, e)) < 0)
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
    static const char *const kinds[] = {GPD__USAGE_KINDS(GP_ENUM_NAME_OF)};
    gpd__usage_kind kind = GPD__USAGE_QUEUE;
    char list[64];
    if ((s = gpd__query(r, "by")) && gpd__usage_kind_parse(s, &kind) < 0)
        return gpd__fail(e, GP_EINVAL, "by", "by: \"%s\" is not %s", s,
                         gp_names_or(list, sizeof list, kinds, GPD__USAGE_NKINDS));
    if (step == 0) {
        step = (to - from) / 100;
        step = step < 60 ? 60 : step;
    }
    /* Minute buckets while they are kept and the steps are finer than an
     * hour; hour buckets otherwise. Steps are whole buckets. */
    int32_t res = GPD__USAGE_COARSE;
    if (step < GPD__USAGE_COARSE && from >= now - (int64_t)GPD__USAGE_FINE_DAYS * 86400)
        res = GPD__USAGE_FINE;
    step = (step + res - 1) / res * res;
    from -= ((from % res) + res) % res;
    to = (to + res - 1) / res * res;
    if ((to - from) / step > MAX_STEPS)
        return gpd__fail(e, GP_EINVAL, "step",
                         "step: %lld s makes more than %d steps from from to to; take a longer one",
                         (long long)step, MAX_STEPS);
    collect c = {0};
    if (kind == GPD__USAGE_USER)
        rc = users_seen(r, &c, e);
    if (rc == 0)
        rc = gpd__store_usage_query(r->d->store, res, (int)kind, from, to, step, on_point, &c, e);
    if (rc < 0 || c.oom) {
        collect_free(&c);
        return rc < 0 ? rc : gpd__fail(e, GP_ENOMEM, "", "out of memory");
    }
    if (c.n > 1)
        qsort(c.k, c.n, sizeof *c.k, by_key);
    gpd__usage_now un;
    char note[192] = "", head[256];
    if (gpd__sched_usage_now(r->d->sched, &un) == 0) {
        snprintf(note, sizeof note, "%s", un.note);
        gpd__usage_now_free(&un);
    }
    gpd__text t = {0};
    snprintf(head, sizeof head,
             "{\"from\":%lld,\"to\":%lld,\"step\":%lld,\"resolution\":%d,\"by\":\"%s\","
             "\"columns\":[\"t\",\"allocated\",\"used\",\"measured\",\"borrowed\",\"lent\","
             "\"returned\"],"
             "\"note\":",
             (long long)from, (long long)to, (long long)step, res, gpd__usage_kind_name(kind));
    gpd__text_puts(&t, head);
    put_str(&t, note);
    gpd__text_puts(&t, ",\"keys\":[");
    /* Queues name their parent, so that a reader can draw the tree; the
     * engine's names are copied out under its lock. */
    char(*parents)[GP_NAME_MAX + 1] = calloc(c.n ? c.n : 1, sizeof *parents);
    int *has = calloc(c.n ? c.n : 1, sizeof *has);
    if (kind == GPD__USAGE_QUEUE && parents && has) {
        gp_engine *eng = gpd__sched_lock(r->d->sched);
        for (size_t i = 0; i < c.n; i++) {
            gp_queue_info qi;
            if (gp_engine_queue_get(eng, c.k[i].key, &qi) == 0) {
                snprintf(parents[i], sizeof parents[i], "%s", qi.parent);
                has[i] = 1;
            }
        }
        gpd__sched_unlock(r->d->sched);
    }
    for (size_t i = 0; i < c.n; i++) {
        if (i)
            gpd__text_puts(&t, ",");
        put_key(&t, &c.k[i], has && has[i] ? parents[i] : NULL);
    }
    gpd__text_puts(&t, "]}");
    free(parents);
    free(has);
    collect_free(&c);
    t.oom |= !parents || !has;
    return gpd__text_reply(&t, out, "application/json", e);
}
