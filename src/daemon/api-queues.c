/*
 * api-queues.c — the /api/v1/queues routes: the queue tree of departments and
 * projects, their quotas (deserved, limit, weight per resource) and, from the
 * engine, their fair share, allocation and demand as of the last cycle.
 *
 * Quantities in JSON: GPUs as numbers of GPUs (0.5 is half a GPU), CPU as
 * cores, memory as bytes or a size string ("64G"); a limit of null is
 * unlimited. Department admins manage the queues strictly below their
 * department; only admins create or change departments. The bounds that
 * protect the lenders of GPUs (lender_bounds) a department admin may set
 * only at or below what applies above the queue, and one lowered lowers the
 * queues below that hold more (with_lowered).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "daemon/api.h"
#include "daemon/request.h"
#include "daemon/sched.h"
#include "daemon/store.h"

/* gpu and cpu are kept in milli-units, memory in bytes. */
static json_t *res_value(int r, int64_t v) {
    if (v == GP_UNLIMITED)
        return json_null();
    if (r == GP_RES_MEM)
        return json_integer(v);
    if (v % 1000 == 0)
        return json_integer(v / 1000);
    return json_real((double)v / 1000.0);
}

static json_t *res_json(const gp_res *x) {
    json_t *j = json_object();
    for (gp_resource r = 0; r < GP_RES_COUNT; r++)
        json_object_set_new(j, gp_resource_name(r), res_value(r, x->v[r]));
    return j;
}

/* Adds what the last usage sample saw of the queue: GPUs really used now
 * (null when busy time is unknown), borrowed beyond deserved and lent. */
static void usage_json(json_t *j, const gpd__usage_now *un, const char *name) {
    const gpd__usage_rate *u = un ? gpd__usage_find(un, GPD__USAGE_QUEUE, name) : NULL;
    int known = 0;
    for (size_t g = 0; un && g < un->ngpus && !known; g++)
        known = un->gpus[g].busy_permille >= 0;
    if (u && u->alloc > 0)
        known = u->measured > 0;
    json_object_set_new(
        j, "used", json_pack("{s:o}", "gpu", known ? json_real(u ? u->used : 0) : json_null()));
    json_object_set_new(j, "borrowed", json_pack("{s:f}", "gpu", u ? u->borrowed : 0));
    json_object_set_new(j, "lent", json_pack("{s:f}", "gpu", u ? u->lent : 0));
}

static json_t *queue_json(const gp_queue_info *qi, const gp_queue_spec *sp) {
    json_t *j =
        json_pack("{s:s, s:s, s:i, s:b, s:i, s:o, s:o, s:o, s:o, s:o, s:I, s:I}", "name", qi->name,
                  "parent", qi->parent, "depth", qi->depth, "leaf", qi->leaf, "priority",
                  qi->priority, "deserved", res_json(&qi->deserved), "limit", res_json(&qi->limit),
                  "fair_share", res_json(&qi->fair_share), "allocated", res_json(&qi->allocated),
                  "requested", res_json(&qi->requested), "pending", (json_int_t)qi->pending,
                  "running", (json_int_t)qi->running);
    if (sp) {
        json_t *w = json_object();
        for (gp_resource r = 0; r < GP_RES_COUNT; r++)
            json_object_set_new(w, gp_resource_name(r), json_integer(sp->quota[r].weight));
        json_object_set_new(j, "weight", w);
        /* Seconds, as durations are written in requests. */
        json_object_set_new(j, "min_runtime_max", json_integer(sp->min_runtime_max / 1000));
        json_object_set_new(j, "reclaim_grace_max", json_integer(sp->reclaim_grace_max / 1000));
        /* The mode in force for submissions below it; the queue's own
         * (null: it inherits) and the queue it comes from (null: the
         * default, checkpoint). */
        json_object_set_new(j, "on_preempt", json_string(gp_on_preempt_name(qi->on_preempt)));
        json_object_set_new(j, "on_preempt_own",
                            qi->on_preempt_set ? json_string(gp_on_preempt_name(qi->on_preempt))
                                               : json_null());
        json_object_set_new(j, "on_preempt_from",
                            *qi->on_preempt_from ? json_string(qi->on_preempt_from) : json_null());
        /* Seconds; null: no bound. */
        json_object_set_new(j, "idle_gpu_timeout",
                            sp->idle_gpu_timeout ? json_integer(sp->idle_gpu_timeout / 1000)
                                                 : json_null());
        json_object_set_new(j, "max_session_length",
                            sp->max_session_length ? json_integer(sp->max_session_length / 1000)
                                                   : json_null());
        /* Cores and bytes per task; 0: none. */
        json_object_set_new(j, "default_cpu", json_real((double)sp->default_cpu_milli / 1000.0));
        json_object_set_new(j, "default_memory", json_integer(sp->default_mem_bytes));
    }
    if (qi->overcommitted)
        json_object_set_new(j, "overcommitted", json_true());
    return j;
}

int gpd__h_q_list(gpd__req *r, gpd__resp *out, gpd__err *e) {
    /* The stored specs, for weights, which the engine's info does not carry. */
    gpd__queue_specs sp;
    int rc = gpd__store_queue_specs(r->d->store, &sp, e);
    if (rc < 0)
        return rc;
    json_t *arr = json_array(), *warn = json_array();
    gpd__usage_now un;
    int have = gpd__sched_usage_now(r->d->sched, &un) == 0;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    size_t n = gp_engine_queue_count(eng);
    for (size_t i = 0; i < n; i++) {
        gp_queue_info qi;
        if (gp_engine_queue_at(eng, i, &qi) == 0) {
            json_t *q = queue_json(&qi, gpd__queue_spec_find(&sp, qi.name));
            usage_json(q, have ? &un : NULL, qi.name);
            json_array_append_new(arr, q);
        }
    }
    if (have)
        gpd__usage_now_free(&un);
    for (size_t i = 0; i < gp_engine_warning_count(eng); i++)
        json_array_append_new(warn, json_string(gp_engine_warning(eng, i)));
    gpd__sched_unlock(r->d->sched);
    free(sp.q);
    return gpd__reply_json(out, 200, json_pack("{s:o, s:o}", "queues", arr, "warnings", warn));
}

int gpd__h_q_get(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gpd__queue_specs sp;
    int rc = gpd__store_queue_specs(r->d->store, &sp, e);
    if (rc < 0)
        return rc;
    gp_queue_info qi;
    json_t *j = NULL;
    gpd__usage_now un;
    int have = gpd__sched_usage_now(r->d->sched, &un) == 0;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    if (gp_engine_queue_get(eng, r->params[0], &qi) == 0) {
        j = queue_json(&qi, gpd__queue_spec_find(&sp, qi.name));
        usage_json(j, have ? &un : NULL, qi.name);
    }
    gpd__sched_unlock(r->d->sched);
    if (have)
        gpd__usage_now_free(&un);
    free(sp.q);
    if (!j)
        return gpd__fail(e, GP_ENOENT, "name", "no queue named %s", r->params[0]);
    return gpd__reply_json(out, 200, j);
}

static int reply_queue(gpd__req *r, gpd__resp *out, int status, const char *name, gpd__err *e) {
    gpd__resp tmp = {0};
    const char *saved = r->params[0];
    r->params[0] = name;
    int rc = gpd__h_q_get(r, &tmp, e);
    r->params[0] = saved;
    if (rc == 0) {
        *out = tmp;
        out->status = status;
    }
    return rc;
}

static int found_one(const gpd__wl *w, void *arg) {
    (void)w;
    *(int *)arg = 1;
    return 1;
}

/* Whether project holds workloads that are not over: active or suspended
 * (which resume() reopens). A department cannot hold them. */
static int has_workloads(gp_store *st, const char *project, int *yes, gpd__err *e) {
    gpd__wl_filter f = {.project = project, .state = -1, .limit = 1, .active_only = 1};
    *yes = 0;
    int rc = gpd__store_wl_list(st, &f, found_one, yes, e);
    if (rc >= 0 && !*yes) {
        f.active_only = 0;
        f.state = GP_WL_SUSPENDED;
        rc = gpd__store_wl_list(st, &f, found_one, yes, e);
    }
    return rc < 0 ? rc : 0;
}

/* The fields of a queue that bound how long its workloads keep GPUs they
 * borrowed from other departments once these reclaim them: they protect the
 * lenders, so the borrower's side may not raise them. */
static const int lender_bounds_of[] = {GP_QUEUE_F_min_runtime_max, GP_QUEUE_F_reclaim_grace_max};

static gp_time_ms bound_of(const gp_queue_spec *q, int field) {
    return field == GP_QUEUE_F_min_runtime_max ? q->min_runtime_max : q->reclaim_grace_max;
}

static void bound_set(gp_queue_spec *q, int field, gp_time_ms v) {
    *(field == GP_QUEUE_F_min_runtime_max ? &q->min_runtime_max : &q->reclaim_grace_max) = v;
}

/* The ancestor of a queue under parent with the least of field's bound;
 * NULL for a department, which has none. */
static const gp_queue_spec *least_above(const gpd__queue_specs *sp, const char *parent, int f) {
    const gp_queue_spec *a = gpd__queue_spec_find(sp, parent), *least = a;
    for (int depth = 0; a != NULL && depth < 64; depth++) {
        if (bound_of(a, f) < bound_of(least, f))
            least = a;
        a = a->parent[0] ? gpd__queue_spec_find(sp, a->parent) : NULL;
    }
    return least;
}

/* The lenders' bounds of q, the queue as it would be. One the body names: a
 * department admin sets it at most to the least its ancestors hold (its
 * department's own, which the pool's admin sets); the pool's admin sets
 * anything. One a new queue's body does not name: the default, lowered to
 * that least, so that an unnamed bound never exceeds what applies above. */
static int lender_bounds(gpd__req *r, gp_queue_spec *q, int creating, gpd__err *e) {
    if (r->who.role == GPD__ROLE_ADMIN && !creating)
        return 0;
    gpd__queue_specs sp;
    int rc = gpd__store_queue_specs(r->d->store, &sp, e);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < sizeof lender_bounds_of / sizeof lender_bounds_of[0] && rc == 0; i++) {
        int f = lender_bounds_of[i];
        const char *field = gp_queue_fields[f].name;
        const gp_queue_spec *least = least_above(&sp, q->parent, f);
        int named = json_object_get(r->json, field) != NULL;
        if (least == NULL || bound_of(q, f) <= bound_of(least, f) ||
            (named && r->who.role == GPD__ROLE_ADMIN) || (!named && !creating))
            continue;
        if (!named) {
            bound_set(q, f, bound_of(least, f));
            continue;
        }
        char lim[32];
        gp_format_duration(bound_of(least, f), lim, sizeof lim);
        rc = gpd__fail(e, GP_EPERM, field,
                       "%s: a department admin may set at most %s (%s's), which protects "
                       "the departments that lend it GPUs",
                       field, lim, least->name);
    }
    free(sp.q);
    return rc;
}

/* Whether q is strictly below the queue named name in sp. */
static int is_below(const gpd__queue_specs *sp, const gp_queue_spec *q, const char *name) {
    for (int depth = 0; q != NULL && q->parent[0] && depth < 64; depth++) {
        if (strcmp(q->parent, name) == 0)
            return 1;
        q = gpd__queue_spec_find(sp, q->parent);
    }
    return 0;
}

/* Into out (room for sp->n + 1): q, the queue as it will be (old, as it
 * is), then each queue below it whose lenders' bound is above one that q's
 * change lowers, lowered to it. A bound protects the lenders from every
 * queue below the one that holds it, so that a department's lowered lowers
 * its projects' in the same change (a value its admin set under the old
 * bound, or one the pool's admin set above it); a change that lowers
 * nothing changes nothing below. Returns how many queues out holds. */
static size_t with_lowered(const gpd__queue_specs *sp, const gp_queue_spec *old,
                           const gp_queue_spec *q, gp_queue_spec *out) {
    size_t n = 0;
    out[n++] = *q;
    for (size_t i = 0; i < sp->n; i++) {
        gp_queue_spec c = sp->q[i];
        int lowered = 0;
        for (size_t k = 0; k < sizeof lender_bounds_of / sizeof lender_bounds_of[0]; k++) {
            int f = lender_bounds_of[k];
            if (bound_of(q, f) < bound_of(old, f) && bound_of(&c, f) > bound_of(q, f) &&
                is_below(sp, &sp->q[i], q->name)) {
                bound_set(&c, f, bound_of(q, f));
                lowered = 1;
            }
        }
        if (lowered)
            out[n++] = c;
    }
    return n;
}

int gpd__h_q_create(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gp_queue_spec q;
    int rc = gpd__queue_parse(r->json, 1, &q, e);
    if (rc == 0) {
        gp_queue_info old;
        gp_engine *eng = gpd__sched_lock(r->d->sched);
        int exists = gp_engine_queue_get(eng, q.name, &old) == 0;
        int parent_ok = !q.parent[0] || gp_engine_queue_get(eng, q.parent, &old) == 0;
        gpd__sched_unlock(r->d->sched);
        int busy = 0;
        if (parent_ok && q.parent[0] && old.leaf && !exists)
            rc = has_workloads(r->d->store, q.parent, &busy, e);
        if (rc < 0)
            busy = 0; /* the store failed: rc says so */
        else if (exists)
            rc = gpd__fail(e, GP_EEXIST, "name", "name: a queue named %s exists", q.name);
        else if (busy)
            rc = gpd__fail(e, GP_EBUSY, "parent",
                           "parent: %s is a project with workloads, and only projects hold "
                           "workloads; create %s elsewhere, or delete %s's workloads first",
                           q.parent, q.name, q.parent);
        else if (!parent_ok)
            rc = gpd__fail(e, GP_EINVAL, "parent", "parent: there is no queue named %s", q.parent);
        else if (!gpd__can_admin_queue(r, q.name, q.parent[0] ? q.parent : NULL))
            rc = gpd__fail(e, GP_EPERM, "parent",
                           "parent: this token may create queues only under department %s",
                           r->who.scope);
        else if ((rc = lender_bounds(r, &q, 1, e)) == 0)
            rc = gpd__sched_queue_set(r->d->sched, &q, 1, e);
    }
    if (rc < 0)
        return rc;
    return reply_queue(r, out, 201, q.name, e);
}

int gpd__h_q_update(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gpd__queue_specs sp;
    int rc = gpd__store_queue_specs(r->d->store, &sp, e);
    if (rc < 0)
        return rc;
    const gp_queue_spec *cur = gpd__queue_spec_find(&sp, r->params[0]);
    gp_queue_spec q, *set = NULL;
    if (cur == NULL)
        rc = gpd__fail(e, GP_ENOENT, "name", "no queue named %s", r->params[0]);
    else if (!gpd__can_admin_queue(r, cur->name, NULL))
        rc = gpd__fail(e, GP_EPERM, "name", "this token may not change queue %s", cur->name);
    if (rc == 0) {
        q = *cur;
        rc = gpd__queue_parse(r->json, 0, &q, e);
    }
    if (rc == 0)
        rc = lender_bounds(r, &q, 0, e);
    if (rc == 0 && (set = calloc(sp.n + 1, sizeof *set)) == NULL)
        rc = gpd__fail(e, GP_ENOMEM, "", "out of memory");
    if (rc == 0)
        rc = gpd__sched_queue_set(r->d->sched, set, with_lowered(&sp, cur, &q, set), e);
    free(set);
    free(sp.q);
    if (rc < 0)
        return rc;
    return reply_queue(r, out, 200, q.name, e);
}

int gpd__h_q_delete(gpd__req *r, gpd__resp *out, gpd__err *e) {
    if (!gpd__can_admin_queue(r, r->params[0], NULL))
        return gpd__fail(e, GP_EPERM, "name", "this token may not remove queue %s", r->params[0]);
    int rc = gpd__sched_queue_remove(r->d->sched, r->params[0], e);
    if (rc < 0)
        return rc;
    gpd__auth_forget_scope(r->d->auth, r->params[0]);
    return gpd__reply_json(out, 200, json_pack("{s:s}", "deleted", r->params[0]));
}
