/*
 * api-workloads.c — the /api/v1/workloads routes: submit, list, get, delete,
 * suspend, resume, logs and events, and the scope rules they share.
 *
 * Who sees what: an admin sees everything; a department admin the workloads
 * of the projects under its department; a researcher those of the projects in
 * its token's scope. A workload the caller may not see answers 404, as if it
 * did not exist. Stopping (delete, suspend) needs more: a researcher may stop
 * only its own workloads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/units.h"
#include "daemon/api.h"
#include "daemon/request.h"
#include "daemon/sched.h"
#include "daemon/store.h"

#define LIST_DEFAULT 100
#define LIST_MAX     1000
#define LOG_CHUNK    (1024 * 1024)

/* ---- Scopes ------------------------------------------------------------ */

/* 1 if anc is name or one of its ancestors (engine locked by the caller). */
static int under(gp_engine *eng, const char *name, const char *anc) {
    char cur[GP_NAME_MAX + 1];
    snprintf(cur, sizeof cur, "%s", name);
    for (int depth = 0; cur[0] && depth < 64; depth++) {
        if (strcmp(cur, anc) == 0)
            return 1;
        gp_queue_info qi;
        if (gp_engine_queue_get(eng, cur, &qi) < 0)
            return 0;
        snprintf(cur, sizeof cur, "%s", qi.parent);
    }
    return 0;
}

/* May the caller see workloads of project? (dept-admins: via the tree). */
static int can_see_project(gpd__req *r, const char *project) {
    switch (r->who.role) {
    case GPD__ROLE_ADMIN:
        return 1;
    case GPD__ROLE_RESEARCHER:
        return gpd__scope_has(r->who.scope, project);
    case GPD__ROLE_DEPT_ADMIN: {
        gp_engine *eng = gpd__sched_lock(r->d->sched);
        int ok = under(eng, project, r->who.scope);
        gpd__sched_unlock(r->d->sched);
        return ok;
    }
    default:
        return 0;
    }
}

int gpd__can_admin_queue(gpd__req *r, const char *name, const char *parent) {
    if (r->who.role == GPD__ROLE_ADMIN)
        return 1;
    if (r->who.role != GPD__ROLE_DEPT_ADMIN)
        return 0;
    /* Strictly below its department: the department itself is the admin's. */
    if (strcmp(name, r->who.scope) == 0)
        return 0;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    int ok = parent ? under(eng, parent, r->who.scope) : under(eng, name, r->who.scope);
    gpd__sched_unlock(r->d->sched);
    return ok;
}

int gpd__can_see_wl(gpd__req *r, const gpd__wl *w, int *yes, gpd__err *e) {
    *yes = can_see_project(r, w->project);
    if (!*yes || r->who.role == GPD__ROLE_ADMIN)
        return 0;
    return gpd__store_wl_current(r->d->store, w->id, yes, e);
}

const char **gpd__visible_projects(gpd__req *r, char **buf) {
    *buf = NULL;
    size_t n = 0;
    if (r->who.role == GPD__ROLE_RESEARCHER) {
        size_t cap = 1;
        for (const char *c = r->who.scope; *c; c++)
            cap += *c == ',';
        const char **list = calloc(cap + 1, sizeof *list);
        if (!list || !(*buf = strdup(r->who.scope))) {
            free(list);
            return NULL;
        }
        for (char *save = NULL, *p = strtok_r(*buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
            list[n++] = p;
        return list;
    }
    /* Department admin: the leaves under its department. */
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    size_t nq = gp_engine_queue_count(eng);
    const char **list = calloc(nq + 1, sizeof *list);
    *buf = list ? calloc(nq + 1, GP_NAME_MAX + 1) : NULL;
    for (size_t i = 0; *buf && i < nq; i++) {
        gp_queue_info qi;
        if (gp_engine_queue_at(eng, i, &qi) == 0 && qi.leaf && under(eng, qi.name, r->who.scope)) {
            char *slot = *buf + n * (GP_NAME_MAX + 1);
            snprintf(slot, GP_NAME_MAX + 1, "%s", qi.name);
            list[n++] = slot;
        }
    }
    gpd__sched_unlock(r->d->sched);
    if (!*buf) {
        free(list);
        return NULL;
    }
    return list;
}

/* ---- JSON of a workload ------------------------------------------------- */

/*
 * A pending workload's reason as gpupool's users read it: the engine's
 * sentence, which says what holds, and the remedy in the words of the CLI
 * (the command an administrator runs, the flag a researcher submits with),
 * worded here from the engine's figures. Returns the reason code or a
 * negative code; called with the scheduler's lock held.
 */
static int pending_reason(gp_engine *eng, uint64_t id, char *buf, size_t len) {
    static const char *const limit_flag[GP_RES_COUNT] = {"--limit", "--cpu-limit",
                                                         "--memory-limit"};
    int code = gp_engine_pending_reason(eng, id, buf, len);
    gp_pending_figures f;
    if (code < 0 || gp_engine_pending_figures(eng, id, &f) < 0)
        return code;
    size_t n = strlen(buf);
    if (n >= len)
        return code;
    if (f.wait == GP_WAIT_QUEUE_LIMIT && f.resource >= 0 && f.resource < GP_RES_COUNT)
        snprintf(buf + n, len - n, ": gpupool queue set %s %s N", f.queue, limit_flag[f.resource]);
    else if (f.wait == GP_WAIT_DESERVED && f.kind == GP_KIND_TRAIN && !f.preemptible)
        snprintf(buf + n, len - n,
                 "; it was submitted with --no-preempt, without which training may borrow idle "
                 "GPUs");
    else if (f.wait == GP_WAIT_NO_FIT && f.own_preemptible_milli > 0)
        snprintf(buf + n, len - n, "; submit with --priority above %d", (int)f.priority);
    return code;
}

static json_t *wl_json(gpd__req *r, const gpd__wl *w) {
    json_t *j = json_pack("{s:I, s:s, s:s, s:s, s:s, s:i, s:s, s:I, s:I}", "id", (json_int_t)w->id,
                          "name", w->name, "project", w->project, "user", w->user, "state",
                          gp_wl_state_name(w->state), "attempt", w->attempt, "request", w->request,
                          "submitted_ms", (json_int_t)w->submitted_ms, "updated_ms",
                          (json_int_t)w->updated_ms);
    if (!j)
        return NULL;
    /* A running workload has no reason: one left from an earlier attempt
     * (an eviction, a failure) would mislead. */
    if (w->reason[0] && w->state != GP_WL_STARTING && w->state != GP_WL_RUNNING)
        json_object_set_new(j, "reason", json_string(w->reason));
    if (w->exit_code >= 0)
        json_object_set_new(j, "exit_code", json_integer(w->exit_code));
    if (w->state == GP_WL_PENDING) {
        char why[512] = "";
        gp_engine *eng = gpd__sched_lock(r->d->sched);
        int code = pending_reason(eng, w->id, why, sizeof why);
        gpd__sched_unlock(r->d->sched);
        if (code >= 0) {
            json_object_set_new(j, "wait", json_string(gp_wait_name((gp_wait)code)));
            json_object_set_new(j, "pending_reason", json_string(why));
        }
    }
    if (w->state == GP_WL_STOPPING) {
        json_object_set_new(j, "stopping_for", json_string(w->stop_kind));
        json_object_set_new(j, "stop_deadline_ms", json_integer(w->stop_deadline_ms));
    }
    return j;
}

/* Reads a workload the caller may see; 404 otherwise. */
static int visible_wl(gpd__req *r, gpd__wl *w, gpd__err *e) {
    uint64_t id;
    int rc = gpd__param_id(r, 0, &id, e);
    if (rc < 0)
        return rc;
    if ((rc = gpd__store_wl_get(r->d->store, id, w, e)) < 0)
        return rc;
    int yes = 0;
    if ((rc = gpd__can_see_wl(r, w, &yes, e)) < 0 || !yes) {
        gpd__wl_free(w);
        return rc < 0
                   ? rc
                   : gpd__fail(e, GP_ENOENT, "id", "id: no workload %llu", (unsigned long long)id);
    }
    return 0;
}

/* The id of a workload the caller may see, for a handler that needs no more
 * of it; 404 otherwise. */
static int visible_id(gpd__req *r, uint64_t *id, gpd__err *e) {
    gpd__wl w;
    int rc = visible_wl(r, &w, e);
    if (rc < 0)
        return rc;
    *id = w.id;
    gpd__wl_free(&w);
    return 0;
}

/* Whether the tasks of unix_user run as the daemon's own Unix identity:
 * always in single-user mode (the daemon is not root), and for root's. */
static int runs_as_daemon(const char *unix_user) {
    if (geteuid() != 0)
        return 1;
    char buf[4096];
    struct passwd pw, *res = NULL;
    return getpwnam_r(unix_user, &pw, buf, sizeof buf, &res) == 0 && res != NULL && pw.pw_uid == 0;
}

/* path (absolute) with ".", ".." and repeated slashes taken out by its
 * words alone, as the kernel reads them where no symbolic link is met:
 * nothing on the disk is looked at. 0, or -1 if it does not fit. */
static int path_by_words(const char *path, char *out, size_t len) {
    size_t n = 0;
    const char *p = path;
    while (*p != '\0') {
        while (*p == '/')
            p++;
        size_t w = strcspn(p, "/");
        if (w == 0 || (w == 1 && p[0] == '.')) {
            /* nothing, or "." */
        } else if (w == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
        } else {
            if (n + 1 + w + 1 > len)
                return -1;
            out[n++] = '/';
            memcpy(out + n, p, w);
            n += w;
        }
        p += w;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
    return 0;
}

/* Whether path (resolved) is dir or lies inside it. */
static int inside(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* A workdir must not be the data directory or lie inside it: tasks must
 * never be pointed at the store, the tokens or the logs; nor inside the
 * checkpoint directory (DATA/checkpoints, or --checkpoint-dir: judged alike
 * wherever it is), whose directories are each one workload's, its own given
 * to it as GPUPOOL_CHECKPOINT_DIR. Whether the workload's user may use it is
 * the kernel's to say, when the task enters it as that user. The path is
 * judged by its words; its symbolic links are followed only where the tasks
 * run as the daemon's own identity (resolved as root for another user, the
 * answer, refused or not, told that user whether a name existed in a
 * directory it may not search). */
static int workdir_check(const gpd__daemon *d, const char *workdir, const char *unix_user,
                         gpd__err *e) {
    if (!workdir)
        return 0;
    char real[PATH_MAX];
    if (!(runs_as_daemon(unix_user) && realpath(workdir, real)) &&
        path_by_words(workdir, real, sizeof real) < 0)
        return gpd__fail(e, GP_EINVAL, "workdir", "workdir: longer than %d bytes", PATH_MAX - 1);
    if (inside(real, d->cfg.data_dir))
        return gpd__fail(e, GP_EINVAL, "workdir",
                         "workdir: %s is inside the daemon's data directory, which workloads may "
                         "not use",
                         workdir);
    if (inside(real, d->cfg.checkpoint_dir))
        return gpd__fail(e, GP_EINVAL, "workdir",
                         "workdir: %s is inside the daemon's checkpoint directory, which "
                         "workloads may not name (a workload that names no workdir starts in "
                         "its own, GPUPOOL_CHECKPOINT_DIR)",
                         workdir);
    return 0;
}

/* A workload of another Unix user than root fails at its checkpoint
 * directory when that user cannot pass through the data directory, the
 * checkpoint directory or a directory above them (a 0700 parent): refused
 * here, with the fix, instead.
 * Checked at every submit, so that fixing the mode needs no restart. */
static int data_dir_check(const gpd__daemon *d, const char *unix_user, gpd__err *e) {
    char why[PATH_MAX + 400];
    if (runs_as_daemon(unix_user))
        return 0;
    if (gpd__dirs_passable(&d->cfg, why, sizeof why) < 0)
        return gpd__fail(e, GP_ESTATE, "", "%s", why);
    return 0;
}

/* One user may hold at most max_pending_per_user pending workloads (33,000
 * were once accepted from one user, each a row and a place in every cycle):
 * beyond it, 429 naming the limit. The repeat of an idempotent submit is
 * let through, to be answered with its workload. Checked before the insert,
 * so concurrent submits of one user may pass the bound by a few. */
static int pending_check(gpd__req *r, const char *client_key, gpd__err *e) {
    int max = r->d->cfg.max_pending_per_user;
    if (max <= 0 || client_key != NULL)
        return 0;
    int64_t n = 0;
    int rc = gpd__store_wl_count_user(r->d->store, r->who.user, GP_WL_PENDING, &n, e);
    if (rc < 0)
        return rc;
    if (n >= max)
        return gpd__fail(e, GP_ETOOMANY, "max_pending_per_user",
                         "max_pending_per_user: %s already has %lld pending workloads, the most "
                         "this daemon accepts from one user (%d); wait for some to start, or "
                         "delete some",
                         r->who.user, (long long)n, max);
    return 0;
}

/* A submission that names no eviction mode takes its project's default as
 * it is now: written into the stored request, so that a later change of the
 * default, or a restart, never changes how an accepted workload is evicted.
 * (check_request has just found the project.) */
static void on_preempt_default(gpd__req *r, json_t *body, gpd__request *q) {
    if (json_object_get(body, "on_preempt"))
        return;
    gp_queue_info qi;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    if (gp_engine_queue_get(eng, q->spec.queue, &qi) == 0)
        q->spec.on_preempt = qi.on_preempt;
    gpd__sched_unlock(r->d->sched);
    json_object_set_new(body, "on_preempt", json_string(gp_on_preempt_name(q->spec.on_preempt)));
}

/* A submission that asks for no CPU, or no memory, gets its project's
 * default_cpu and default_memory (when it has them): written into the
 * stored request, as the eviction mode is, and counted before the request
 * is judged (30 CPU-only workloads once ran on a 2-core node counting 0).
 * An unknown project is left to gpd__sched_check_request to name. */
static void resources_default(gpd__req *r, json_t *body, gpd__request *q) {
    gp_queue_info qi;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    int found = gp_engine_queue_get(eng, q->spec.queue, &qi) == 0;
    gpd__sched_unlock(r->d->sched);
    if (!found)
        return;
    if (!json_object_get(body, "cpu") && qi.default_cpu_milli > 0) {
        char b[32];
        q->spec.req.cpu_milli = qi.default_cpu_milli;
        gp_format_milli(qi.default_cpu_milli, b, sizeof b);
        json_object_set_new(body, "cpu", json_string(b));
    }
    if (!json_object_get(body, "memory") && qi.default_mem_bytes > 0) {
        q->spec.req.mem_bytes = qi.default_mem_bytes;
        json_object_set_new(body, "memory", json_integer(qi.default_mem_bytes));
    }
}

/* ---- Routes -------------------------------------------------------------- */

int gpd__h_wl_submit(gpd__req *r, gpd__resp *out, gpd__err *e) {
    json_t *body = r->json;
    gpd__request q;
    char *canon = NULL;
    int rc;
    /* The Unix user is the token's, never the request's: it is written into
     * the stored request, which every attempt is launched from. */
    if (json_object_get(body, "run_as")) {
        rc = gpd__fail(e, GP_EINVAL, "run_as",
                       "run_as: workloads run as their token's Unix user; it cannot be given");
        goto out;
    }
    if ((rc = gpd__unix_user_check(r->d, r->who.unix_user, e)) < 0 ||
        (rc = data_dir_check(r->d, r->who.unix_user, e)) < 0)
        goto out;
    json_object_set_new(body, "run_as", json_string(r->who.unix_user));
    if ((rc = gpd__request_parse(body, &q, e)) < 0)
        goto out;
    if ((rc = workdir_check(r->d, q.workdir, r->who.unix_user, e)) < 0)
        goto out;
    if (!can_see_project(r, q.spec.queue)) {
        rc = gpd__fail(e, GP_EPERM, "project", "project: this token may not submit to %s",
                       q.spec.queue);
        goto out;
    }
    resources_default(r, body, &q);
    if ((rc = gpd__sched_check_request(r->d->sched, &q, e)) < 0 ||
        (rc = pending_check(r, q.client_key, e)) < 0)
        goto out;
    on_preempt_default(r, body, &q);
    canon = gpd__request_canonical(body);
    gpd__wl w;
    memset(&w, 0, sizeof w);
    snprintf(w.name, sizeof w.name, "%s", q.name);
    snprintf(w.project, sizeof w.project, "%s", q.spec.queue);
    snprintf(w.user, sizeof w.user, "%s", r->who.user);
    snprintf(w.request, sizeof w.request, "%s", q.summary);
    w.submitted_ms = gpd__now_ms();
    w.spec = canon;
    int existed = 0;
    if (!canon) {
        rc = gpd__fail(e, GP_ENOMEM, "", "out of memory");
        goto out;
    }
    if ((rc = gpd__store_wl_insert(r->d->store, &w, q.client_key, &existed, e)) < 0)
        goto out;
    if (!existed)
        gpd__sched_submitted(r->d->sched, w.id);
    /* The repeat of an idempotent submit answers with the workload's real
     * state, as a GET would. */
    gp_wl_state st = GP_WL_PENDING;
    gpd__wl now;
    if (existed && gpd__store_wl_get(r->d->store, w.id, &now, NULL) == 0) {
        st = now.state;
        gpd__wl_free(&now);
    }
    rc = gpd__reply_json(out, existed ? 200 : 201,
                         json_pack("{s:I, s:s, s:b}", "id", (json_int_t)w.id, "state",
                                   gp_wl_state_name(st), "existed", existed));
out:
    free(canon);
    return rc;
}

typedef struct list_ctx {
    gpd__req *r;
    json_t *arr;
    gpd__wl_order order;
    uint64_t last;
    char key[GP_NAME_MAX + 64]; /* the last row's sort key */
} list_ctx;

static int list_one(const gpd__wl *w, void *arg) {
    list_ctx *c = arg;
    json_array_append_new(c->arr, wl_json(c->r, w));
    c->last = w->id;
    gpd__wl_order_key(w, c->order, c->key, sizeof c->key);
    return 0;
}

/* A cursor is "<id>.<the key in hex>": opaque to clients, safe in a URL
 * without escaping, and it carries both halves of the (key, id) position. */
static json_t *cursor_json(const list_ctx *c) {
    char buf[2 * sizeof c->key + 32];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%llu.", (unsigned long long)c->last);
    for (const unsigned char *p = (const unsigned char *)c->key; *p && n + 3 < sizeof buf; p++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%02x", *p);
    return json_string(buf);
}

/* Decodes a cursor into f (key written into key[len]): 0, or GP_EINVAL
 * naming the field cursor. */
static int cursor_parse(const char *v, gpd__wl_filter *f, char *key, size_t len, gpd__err *e) {
    const char *end;
    uint64_t id;
    size_t hex = 1;
    if (gp_parse_uint(v, &end, 10, INT64_MAX, &id) == 0 && *end == '.')
        hex = strlen(end + 1);
    if (hex % 2 || hex / 2 >= len)
        return gpd__fail(e, GP_EINVAL, "cursor",
                         "cursor: not a cursor from a previous page (next_cursor)");
    for (size_t i = 0; i < hex / 2; i++) {
        int hi = gp_hex_digit((unsigned char)end[1 + 2 * i]);
        int lo = hi < 0 ? -1 : gp_hex_digit((unsigned char)end[2 + 2 * i]);
        if (lo < 0 || (hi | lo) == 0)
            return gpd__fail(e, GP_EINVAL, "cursor",
                             "cursor: not a cursor from a previous page (next_cursor)");
        key[i] = (char)(hi * 16 + lo);
    }
    key[hex / 2] = '\0';
    f->has_cursor = 1;
    f->cur_id = id;
    f->cur_key = key;
    return 0;
}

int gpd__h_wl_list(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gpd__wl_filter f = {.state = -1, .limit = LIST_DEFAULT};
    const char *v;
    int64_t limit = f.limit, after = 0;
    int rc;
    if ((rc = gpd__query_int(r, "limit", 1, LIST_MAX, &limit, e)) < 0 ||
        (rc = gpd__query_int(r, "after", 0, INT64_MAX, &after, e)) < 0)
        return rc;
    f.limit = (int)limit;
    f.after = (uint64_t)after;
    f.project = gpd__query(r, "project");
    f.user = gpd__query(r, "user");
    if ((v = gpd__query(r, "order")) && gpd__wl_order_read(v, &f.order, &f.desc) < 0) {
        static const char *const orders[] = {GPD__WL_ORDERS(GP_ENUM_NAME_OF)};
        char list[128];
        return gpd__fail(e, GP_EINVAL, "order",
                         "order: must be %s, with a leading - for descending",
                         gp_names_or(list, sizeof list, orders, GPD__NORDERS));
    }
    if (after && (f.order != GPD__ORDER_ID || f.desc))
        return gpd__fail(e, GP_EINVAL, "after",
                         "after: pages only in order=id; in other orders pass next_cursor as "
                         "cursor");
    char key[GP_NAME_MAX + 64];
    if ((v = gpd__query(r, "cursor")) && (rc = cursor_parse(v, &f, key, sizeof key, e)) < 0)
        return rc;
    if ((v = gpd__query(r, "state"))) {
        static const char *const states[] = {"active", GP_WL_STATES(GP_ENUM_NAME_OF)};
        gp_wl_state st;
        char list[256];
        if (strcmp(v, "active") == 0)
            f.active_only = 1;
        else if (gp_wl_state_parse(v, &st) < 0)
            return gpd__fail(
                e, GP_EINVAL, "state", "state: must be %s",
                gp_names_or(list, sizeof list, states, (int)(sizeof states / sizeof states[0])));
        else
            f.state = (int)st;
    }
    char *buf = NULL;
    const char **projects = NULL;
    if (r->who.role != GPD__ROLE_ADMIN) {
        projects = gpd__visible_projects(r, &buf);
        if (!projects)
            return gpd__fail(e, GP_ENOMEM, "", "out of memory");
        f.projects = projects;
    }
    list_ctx c = {r, json_array(), f.order, 0, ""};
    rc = gpd__store_wl_list(r->d->store, &f, list_one, &c, e);
    free(projects);
    free(buf);
    if (rc < 0) {
        json_decref(c.arr);
        return rc;
    }
    json_t *j = json_pack("{s:o}", "workloads", c.arr);
    if (json_array_size(c.arr) == (size_t)f.limit) {
        json_object_set_new(j, "next_cursor", cursor_json(&c));
        if (f.order == GPD__ORDER_ID && !f.desc)
            json_object_set_new(j, "next_after", json_integer((json_int_t)c.last));
    }
    return gpd__reply_json(out, 200, j);
}

/* The tasks of the current attempt, while it has tasks (starting, running,
 * stopping): a pending workload shows none, not its old attempt's. */
static json_t *tasks_json(gpd__req *r, const gpd__wl *w) {
    gpd__task_rec *t = NULL;
    int n = 0;
    json_t *arr = json_array();
    if (w->state != GP_WL_STARTING && w->state != GP_WL_RUNNING && w->state != GP_WL_STOPPING)
        return arr;
    if (gpd__store_tasks_get(r->d->store, w->id, &t, &n, NULL) < 0)
        return arr;
    for (int i = 0; i < n; i++) {
        json_t *b = json_loads(t[i].binding, 0, NULL);
        json_t *tj = json_pack("{s:i, s:i, s:s, s:s}", "task", t[i].task, "attempt", t[i].attempt,
                               "node", t[i].node, "handle", t[i].handle);
        if (b && json_object_get(b, "slices"))
            json_object_set(tj, "slices", json_object_get(b, "slices"));
        if (t[i].master_port > 0)
            json_object_set_new(tj, "master_port", json_integer(t[i].master_port));
        json_decref(b);
        json_array_append_new(arr, tj);
    }
    gpd__task_recs_free(t, n);
    return arr;
}

static int attempt_one(const gpd__attempt *a, void *arg) {
    json_t *j = json_pack("{s:i, s:s, s:I, s:I, s:s, s:s}", "attempt", a->attempt, "node", a->node,
                          "started_ms", (json_int_t)a->started_ms, "ended_ms",
                          (json_int_t)a->ended_ms, "outcome", a->outcome, "reason", a->reason);
    if (a->exit_code >= 0)
        json_object_set_new(j, "exit_code", json_integer(a->exit_code));
    json_array_append_new(arg, j);
    return 0;
}

static int event_one(const gpd__event *ev, void *arg) {
    json_array_append_new(arg, json_pack("{s:I, s:s, s:s}", "ts_ms", (json_int_t)ev->ts_ms, "kind",
                                         ev->kind, "message", ev->message));
    return 0;
}

/* The values of a workload's environment are its submitter's (a project's
 * researchers share workloads, not secrets such as a DB_PASSWORD): others
 * than the submitter and administrators see the names, each with a null
 * value, and "env_redacted": true. */
static void redact_env(const gpd__req *r, const gpd__wl *w, json_t *spec) {
    json_t *env = json_object_get(spec, "env");
    if (!json_is_object(env) || r->who.role >= GPD__ROLE_ADMIN || strcmp(w->user, r->who.user) == 0)
        return;
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v) json_object_set_new(env, k, json_null());
    json_object_set_new(spec, "env_redacted", json_true());
}

/* The mode a workload is evicted in, as the scheduler reads its request:
 * one stored before the mode existed has none and is read with the
 * parser's default, which the spec then says, so that no client has to know
 * that default. */
static void spec_mode(json_t *spec) {
    gpd__request q;
    gpd__err e;
    if (json_object_get(spec, "on_preempt") == NULL && gpd__request_parse(spec, &q, &e) == 0)
        json_object_set_new(spec, "on_preempt", json_string(gp_on_preempt_name(q.spec.on_preempt)));
}

int gpd__h_wl_get(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gpd__wl w;
    int rc = visible_wl(r, &w, e);
    if (rc < 0)
        return rc;
    json_t *j = wl_json(r, &w);
    json_t *spec = json_loads(w.spec, 0, NULL);
    if (spec) {
        spec_mode(spec);
        redact_env(r, &w, spec);
        json_object_set_new(j, "spec", spec);
    }
    json_object_set_new(j, "tasks", tasks_json(r, &w));
    json_t *att = json_array();
    gpd__store_attempts(r->d->store, w.id, attempt_one, att, NULL);
    json_object_set_new(j, "attempts", att);
    gpd__wl_free(&w);
    return gpd__reply_json(out, 200, j);
}

int gpd__h_wl_events(gpd__req *r, gpd__resp *out, gpd__err *e) {
    uint64_t id;
    int rc = visible_id(r, &id, e);
    if (rc < 0)
        return rc;
    json_t *ev = json_array(), *att = json_array();
    rc = gpd__store_events(r->d->store, id, event_one, ev, e);
    if (rc == 0)
        rc = gpd__store_attempts(r->d->store, id, attempt_one, att, e);
    if (rc < 0) {
        json_decref(ev);
        json_decref(att);
        return rc;
    }
    return gpd__reply_json(out, 200, json_pack("{s:o, s:o}", "events", ev, "attempts", att));
}

/* DELETE, suspend and resume: r->arg is the scheduler's command (GPD__CMD_*). */
int gpd__h_wl_command(gpd__req *r, gpd__resp *out, gpd__err *e) {
    int op = r->arg;
    gpd__wl w;
    int rc = visible_wl(r, &w, e);
    if (rc < 0)
        return rc;
    if (r->who.role == GPD__ROLE_RESEARCHER && strcmp(w.user, r->who.user) != 0 &&
        op != GPD__CMD_RESUME) {
        rc = gpd__fail(e, GP_EPERM, "id",
                       "workload %llu belongs to %s; researchers may stop only "
                       "their own workloads",
                       (unsigned long long)w.id, w.user);
    } else if (r->who.role == GPD__ROLE_RESEARCHER && op == GPD__CMD_RESUME &&
               strcmp(w.user, r->who.user) != 0) {
        rc = gpd__fail(e, GP_EPERM, "id", "workload %llu belongs to %s", (unsigned long long)w.id,
                       w.user);
    } else {
        rc = gpd__sched_command(r->d->sched, op, w.id, e);
    }
    uint64_t id = w.id;
    gpd__wl_free(&w);
    if (rc < 0)
        return rc;
    if ((rc = gpd__store_wl_get(r->d->store, id, &w, e)) < 0)
        return rc;
    json_t *j = wl_json(r, &w);
    gpd__wl_free(&w);
    return gpd__reply_json(out, 200, j);
}

int gpd__h_wl_logs(gpd__req *r, gpd__resp *out, gpd__err *e) {
    uint64_t id;
    int64_t task = 0, offset = 0;
    int rc;
    if ((rc = visible_id(r, &id, e)) < 0 ||
        (rc = gpd__query_int(r, "task", 0, GPD__MAX_GANG - 1, &task, e)) < 0 ||
        (rc = gpd__query_int(r, "offset", 0, INT64_MAX, &offset, e)) < 0)
        return rc;
    return gpd__log_reply(r->d, id, (int)task, offset, LOG_CHUNK, out, e);
}
