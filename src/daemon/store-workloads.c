/*
 * store-workloads.c — the workload tables of the store: workloads, the task
 * rows of each workload's current attempt (where it runs, its executor
 * handle), the attempts with their outcomes, and the event history.
 *
 * The scheduling loop changes workloads only through gpd__store_wl_apply(), a
 * batch of changes written in one transaction, so that what it decided in one
 * step (a bind, its attempt row, its task rows, its event) is on disk
 * together or not at all.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store.h"

#define WL_COLS                                                                                    \
    "id, name, project, user, state, attempt, submitted_ms, updated_ms, request, "                 \
    "spec, reason, exit_code, stop_kind, stop_deadline_ms"

/* Reads the JSON of column col of s's row ("{}" where NULL) into *out,
 * malloc'ed; fails only when out of memory, naming what it was reading. */
static int json_col(sqlite3_stmt *s, int col, char **out, const char *what, gpd__err *e) {
    *out = gpd__store_dup(s, col, "{}");
    return *out != NULL ? 0 : gpd__fail(e, GP_ENOMEM, "", "out of memory reading %s", what);
}

static int row_to_wl(sqlite3_stmt *st, gpd__wl *w, gpd__err *e) {
    memset(w, 0, sizeof *w);
    w->id = (uint64_t)sqlite3_column_int64(st, 0);
    gpd__store_text(w->name, sizeof w->name, st, 1);
    gpd__store_text(w->project, sizeof w->project, st, 2);
    gpd__store_text(w->user, sizeof w->user, st, 3);
    w->state = (gp_wl_state)sqlite3_column_int(st, 4);
    w->attempt = sqlite3_column_int(st, 5);
    w->submitted_ms = sqlite3_column_int64(st, 6);
    w->updated_ms = sqlite3_column_int64(st, 7);
    gpd__store_text(w->request, sizeof w->request, st, 8);
    gpd__store_text(w->reason, sizeof w->reason, st, 10);
    w->exit_code = sqlite3_column_int(st, 11);
    gpd__store_text(w->stop_kind, sizeof w->stop_kind, st, 12);
    w->stop_deadline_ms = sqlite3_column_int64(st, 13);
    return json_col(st, 9, &w->spec, "a workload", e);
}

void gpd__wl_free(gpd__wl *w) {
    free(w->spec);
    w->spec = NULL;
}

/* Keeps workload id's first row of table (events, attempts), in the order
 * of its column key, and its GPD__HISTORY_KEPT - 1 latest: the one that
 * falls out of them goes (the check walks at most that many of the
 * workload's own rows, on the index of (workload, key)). */
static int keep_history(sqlite3 *db, gpd__err *e, const char *what, const char *table,
                        const char *key, uint64_t id) {
    char sql[320];
    snprintf(sql, sizeof sql,
             "DELETE FROM %1$s WHERE workload=?1 AND %2$s < (SELECT %2$s FROM %1$s"
             " WHERE workload=?1 ORDER BY %2$s DESC LIMIT 1 OFFSET ?2) AND %2$s >"
             " (SELECT min(%2$s) FROM %1$s WHERE workload=?1)",
             table, key);
    return gpd__store_run(db, e, what, sql, "ii", (int64_t)id, (int64_t)(GPD__HISTORY_KEPT - 2));
}

/* Adds an event to workload id's history (keep_history). */
static int add_event(sqlite3 *db, uint64_t id, int64_t now, gpd__event_kind kind, const char *msg,
                     gpd__err *e) {
    int rc = gpd__store_run(db, e, "recording an event",
                            "INSERT INTO events(workload, ts_ms, kind, message) VALUES(?,?,?,?)",
                            "iitt", (int64_t)id, now, gpd__event_name(kind), msg);
    if (rc < 0)
        return rc;
    return keep_history(db, e, "recording an event", "events", "id", id);
}

/* ---- Insert ---------------------------------------------------------- */

typedef struct insert_arg {
    gpd__wl *w;
    const char *client_key;
    int *existed;
} insert_arg;

/* The stored form of an idempotency key: the submitting user and project
 * with their lengths, then the client's key, so that the same key sent by
 * another user or into another project names another workload. (A key alone
 * was global: anyone who knew or guessed it got another user's workload id
 * back and nothing created.) The lengths make the joined form unambiguous. */
static void scoped_key(const gpd__wl *w, const char *key, char *out, size_t len) {
    snprintf(out, len, "%zu:%s/%zu:%s/%s", strlen(w->user), w->user, strlen(w->project), w->project,
             key);
}

static int insert_op(sqlite3 *db, void *arg, gpd__err *e) {
    insert_arg *a = arg;
    sqlite3_stmt *st;
    int rc;
    char key[sizeof a->w->user + sizeof a->w->project + 192];
    if (a->client_key) {
        int64_t id = 0; /* ids start at 1 */
        scoped_key(a->w, a->client_key, key, sizeof key);
        if ((rc = gpd__store_prepare(db, "SELECT id FROM workloads WHERE client_key=?", &st, e)) <
            0)
            return rc;
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        /* Only the end of the rows says the key is unused: a lookup that
         * failed (busy, I/O, out of memory) fails the submission, which
         * stores nothing, rather than insert without knowing. */
        if ((rc = gpd__store_rows(db, st, "looking up the client key", gpd__store_int_row, &id,
                                  e)) < 0)
            return rc;
        if (id > 0) {
            a->w->id = (uint64_t)id;
            *a->existed = 1;
            return 0;
        }
    }
    rc = gpd__store_prepare(db,
                            "INSERT INTO workloads(name, project, user, state, attempt, "
                            "submitted_ms, updated_ms, request, spec, client_key) "
                            "VALUES(?,?,?,?,0,?,?,?,?,?)",
                            &st, e);
    if (rc < 0)
        return rc;
    gpd__wl *w = a->w;
    sqlite3_bind_text(st, 1, w->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, w->project, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, w->user, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, GP_WL_PENDING);
    sqlite3_bind_int64(st, 5, w->submitted_ms);
    sqlite3_bind_int64(st, 6, w->submitted_ms);
    sqlite3_bind_text(st, 7, w->request, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, w->spec, -1, SQLITE_STATIC);
    if (a->client_key)
        sqlite3_bind_text(st, 9, key, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 9);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return gpd__store_fail(db, rc, e, "storing the workload");
    w->id = (uint64_t)sqlite3_last_insert_rowid(db);
    char msg[320];
    snprintf(msg, sizeof msg, "submitted by %s to project %s, asking for %s", w->user, w->project,
             w->request);
    return add_event(db, w->id, w->submitted_ms, GPD__EV_SUBMITTED, msg, e);
}

int gpd__store_wl_insert(gp_store *st, gpd__wl *w, const char *client_key, int *existed,
                         gpd__err *e) {
    *existed = 0;
    insert_arg a = {w, client_key, existed};
    return gpd__store_write(st, insert_op, &a, e);
}

/* ---- Reads ----------------------------------------------------------- */

/* gpd__store_wl_get: the one row, if any, into arg. */
static int wl_one_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    int rc = row_to_wl(s, arg, e);
    return rc < 0 ? rc : 1;
}

int gpd__store_wl_get(gp_store *st, uint64_t id, gpd__wl *out, gpd__err *e) {
    memset(out, 0, sizeof *out);
    int rc = gpd__store_select(st, e, "reading a workload", wl_one_row, out,
                               "SELECT " WL_COLS " FROM workloads WHERE id=?", "i", (int64_t)id);
    /* Ids start at 1: out's is 0 where no row was read. */
    if (rc == 0 && out->id == 0)
        rc = gpd__fail(e, GP_ENOENT, "id", "id: no workload %llu", (unsigned long long)id);
    return rc;
}

static int wl_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    const gpd__store_each *each = arg;
    gpd__wl w;
    int rc = row_to_wl(s, &w, e);
    if (rc < 0)
        return rc;
    rc = each->fn.wl(&w, each->arg);
    gpd__wl_free(&w);
    return gpd__store_handed(rc, "listing workloads", e);
}

/* The column of each order and whether it holds text. */
static const struct {
    const char *column;
    int text;
} orders[GPD__NORDERS] = {
    [GPD__ORDER_ID] = {"id", 0},       [GPD__ORDER_SUBMITTED] = {"submitted_ms", 0},
    [GPD__ORDER_STATE] = {"state", 0}, [GPD__ORDER_PROJECT] = {"project", 1},
    [GPD__ORDER_USER] = {"user", 1},   [GPD__ORDER_NAME] = {"name", 1},
};

int gpd__wl_order_read(const char *s, gpd__wl_order *order, int *desc) {
    static const char *const names[] = {GPD__WL_ORDERS(GP_ENUM_NAME_OF)};
    *desc = s[0] == '-';
    int i = gp_name_index(names, GPD__NORDERS, s + *desc);
    if (i < 0)
        return GP_EINVAL;
    *order = (gpd__wl_order)i;
    return 0;
}

void gpd__wl_order_key(const gpd__wl *w, gpd__wl_order order, char *buf, size_t len) {
    switch (order) {
    case GPD__ORDER_SUBMITTED:
        snprintf(buf, len, "%lld", (long long)w->submitted_ms);
        break;
    case GPD__ORDER_STATE:
        snprintf(buf, len, "%d", (int)w->state);
        break;
    case GPD__ORDER_PROJECT:
        snprintf(buf, len, "%s", w->project);
        break;
    case GPD__ORDER_USER:
        snprintf(buf, len, "%s", w->user);
        break;
    case GPD__ORDER_NAME:
        snprintf(buf, len, "%s", w->name);
        break;
    default:
        snprintf(buf, len, "%llu", (unsigned long long)w->id);
        break;
    }
}

/* A workload of its project as it stands: submitted after the queue of
 * that name was created (its id above the last one given then), so not of
 * a deleted namesake's (the one rule of gpd__store_wl_current, the lists by
 * projects and the users of a project). Ids, not times: a clock set back
 * would hide a project's own workloads. */
#define WL_CURRENT "id > (SELECT workloads_after FROM queues WHERE queues.name = workloads.project)"

int gpd__store_wl_current(gp_store *st, uint64_t id, int *yes, gpd__err *e) {
    int64_t n = 0;
    int rc = gpd__store_select(st, e, "reading a workload's project", gpd__store_int_row, &n,
                               "SELECT count(*) FROM workloads WHERE id=? AND " WL_CURRENT, "i",
                               (int64_t)id);
    *yes = n > 0;
    return rc;
}

/* names (NULL-ended) as the text of a JSON array; NULL: out of memory. */
static char *names_json(const char *const *names) {
    json_t *a = json_array();
    for (size_t i = 0; a && names[i]; i++)
        if (json_array_append_new(a, json_string(names[i])) < 0) {
            json_decref(a);
            a = NULL;
        }
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return text;
}

int gpd__store_wl_list(gp_store *st, const gpd__wl_filter *f,
                       int (*fn)(const gpd__wl *w, void *arg), void *arg, gpd__err *e) {
    char sql[2048];
    const char *col = orders[f->order].column, *dir = f->desc ? "DESC" : "ASC";
    const char *cmp = f->desc ? "<" : ">";
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT " WL_COLS " FROM workloads WHERE 1");
    /* Keyset paging: the rows after the cursor's (key, id) in this order, a
     * row-value comparison that SQLite answers from the (key, id) index. */
    if (f->has_cursor && f->order != GPD__ORDER_ID)
        n += (size_t)snprintf(sql + n, sizeof sql - n, " AND (%s, id) %s (?, ?)", col, cmp);
    else if (f->has_cursor || f->after)
        n += (size_t)snprintf(sql + n, sizeof sql - n, " AND id %s ?", cmp);
    if (f->project)
        n += (size_t)snprintf(sql + n, sizeof sql - n, " AND project = ?");
    if (f->user)
        n += (size_t)snprintf(sql + n, sizeof sql - n, " AND user = ?");
    if (f->state >= 0)
        n += (size_t)snprintf(sql + n, sizeof sql - n, " AND state = ?");
    if (f->active_only)
        n += (size_t)snprintf(sql + n, sizeof sql - n, " AND state <= %d", GP_WL_PAUSED);
    /* The projects as one JSON array bound to one parameter, however many. */
    char *projects = NULL;
    if (f->projects) {
        if (!(projects = names_json(f->projects)))
            return gpd__fail(e, GP_ENOMEM, "", "out of memory listing workloads");
        n += (size_t)snprintf(sql + n, sizeof sql - n,
                              " AND project IN (SELECT value FROM json_each(?)) AND " WL_CURRENT);
    }
    if (f->order == GPD__ORDER_ID)
        snprintf(sql + n, sizeof sql - n, " ORDER BY id %s LIMIT ?", dir);
    else
        snprintf(sql + n, sizeof sql - n, " ORDER BY %s %s, id %s LIMIT ?", col, dir, dir);

    sqlite3 *db;
    sqlite3_stmt *s;
    int rc = gpd__store_query(st, sql, &db, &s, e);
    if (rc < 0) {
        free(projects);
        return rc;
    }
    int k = 1;
    if (f->has_cursor && f->order != GPD__ORDER_ID) {
        if (orders[f->order].text)
            sqlite3_bind_text(s, k++, f->cur_key, -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(s, k++, strtoll(f->cur_key, NULL, 10));
        sqlite3_bind_int64(s, k++, (sqlite3_int64)f->cur_id);
    } else if (f->has_cursor)
        sqlite3_bind_int64(s, k++, (sqlite3_int64)f->cur_id);
    else if (f->after)
        sqlite3_bind_int64(s, k++, (sqlite3_int64)f->after);
    if (f->project)
        sqlite3_bind_text(s, k++, f->project, -1, SQLITE_STATIC);
    if (f->user)
        sqlite3_bind_text(s, k++, f->user, -1, SQLITE_STATIC);
    if (f->state >= 0)
        sqlite3_bind_int(s, k++, f->state);
    if (projects)
        sqlite3_bind_text(s, k++, projects, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, k++, f->limit > 0 ? f->limit : -1);
    gpd__store_each each = {.fn.wl = fn, .arg = arg};
    rc = gpd__store_rows(db, s, "listing workloads", wl_row, &each, e);
    gpd__store_release(st, db);
    free(projects);
    return rc;
}

static int count_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    (void)e;
    int64_t *counts = arg;
    int state = sqlite3_column_int(s, 0);
    if (state >= 0 && state < GP_WL_NSTATES)
        counts[state] = sqlite3_column_int64(s, 1);
    return 0;
}

int gpd__store_wl_count_user(gp_store *st, const char *user, gp_wl_state state, int64_t *n,
                             gpd__err *e) {
    *n = 0;
    return gpd__store_select(st, e, "counting a user's workloads", gpd__store_int_row, n,
                             "SELECT count(*) FROM workloads WHERE user=? AND state=?", "ti", user,
                             (int64_t)state);
}

typedef struct users_arg {
    int (*fn)(const char *user, void *arg);
    void *arg;
} users_arg;

static int user_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    const users_arg *a = arg;
    const char *u = (const char *)sqlite3_column_text(s, 0);
    return gpd__store_handed(a->fn(u != NULL ? u : "", a->arg), "listing a project's users", e);
}

int gpd__store_project_users(gp_store *st, const char *project,
                             int (*fn)(const char *user, void *arg), void *arg, gpd__err *e) {
    users_arg a = {fn, arg};
    return gpd__store_select(st, e, "listing a project's users", user_row, &a,
                             "SELECT DISTINCT user FROM workloads WHERE project=? AND " WL_CURRENT,
                             "t", project);
}

int gpd__store_wl_counts(gp_store *st, int64_t *counts, gpd__err *e) {
    memset(counts, 0, sizeof(int64_t) * GP_WL_NSTATES);
    return gpd__store_select(st, e, "counting workloads", count_row, counts,
                             "SELECT state, count(*) FROM workloads GROUP BY state", "");
}

typedef struct task_rows {
    gpd__task_rec *tasks;
    int n;
} task_rows;

static int task_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    task_rows *tr = arg;
    gpd__task_rec *nt = realloc(tr->tasks, sizeof *nt * (size_t)(tr->n + 1));
    if (!nt)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory reading tasks");
    tr->tasks = nt;
    gpd__task_rec *t = &nt[tr->n++];
    memset(t, 0, sizeof *t);
    t->task = sqlite3_column_int(s, 0);
    t->attempt = sqlite3_column_int(s, 1);
    gpd__store_text(t->node, sizeof t->node, s, 2);
    gpd__store_text(t->handle, sizeof t->handle, s, 4);
    t->master_port = sqlite3_column_int(s, 5);
    return json_col(s, 3, &t->binding, "tasks", e);
}

int gpd__store_tasks_get(gp_store *st, uint64_t id, gpd__task_rec **tasks, int *n, gpd__err *e) {
    task_rows tr = {NULL, 0};
    int rc =
        gpd__store_select(st, e, "reading tasks", task_row, &tr,
                          "SELECT task, attempt, node, binding, handle, master_port FROM tasks "
                          "WHERE workload=? ORDER BY task",
                          "i", (int64_t)id);
    if (rc < 0) {
        gpd__task_recs_free(tr.tasks, tr.n);
        tr.tasks = NULL;
        tr.n = 0;
    }
    *tasks = tr.tasks;
    *n = tr.n;
    return rc;
}

void gpd__task_recs_free(gpd__task_rec *tasks, int n) {
    for (int i = 0; i < n; i++)
        free(tasks[i].binding);
    free(tasks);
}

static int event_row(sqlite3_stmt *s, const gpd__store_each *each) {
    gpd__event ev;
    ev.ts_ms = sqlite3_column_int64(s, 0);
    gpd__store_text(ev.kind, sizeof ev.kind, s, 1);
    gpd__store_text(ev.message, sizeof ev.message, s, 2);
    return each->fn.event(&ev, each->arg);
}

int gpd__store_events(gp_store *st, uint64_t id, int (*fn)(const gpd__event *ev, void *arg),
                      void *arg, gpd__err *e) {
    return gpd__store_list(
        st, e, "reading events", event_row, (gpd__store_each){.fn.event = fn, .arg = arg},
        "SELECT ts_ms, kind, message FROM events WHERE workload=? ORDER BY id", "i", (int64_t)id);
}

static int attempt_row(sqlite3_stmt *s, const gpd__store_each *each) {
    gpd__attempt a;
    a.attempt = sqlite3_column_int(s, 0);
    gpd__store_text(a.node, sizeof a.node, s, 1);
    a.started_ms = sqlite3_column_int64(s, 2);
    a.ended_ms = sqlite3_column_int64(s, 3);
    gpd__store_text(a.outcome, sizeof a.outcome, s, 4);
    gpd__store_text(a.reason, sizeof a.reason, s, 5);
    a.exit_code = sqlite3_column_int(s, 6);
    return each->fn.attempt(&a, each->arg);
}

int gpd__store_attempts(gp_store *st, uint64_t id, int (*fn)(const gpd__attempt *a, void *arg),
                        void *arg, gpd__err *e) {
    return gpd__store_list(st, e, "reading attempts", attempt_row,
                           (gpd__store_each){.fn.attempt = fn, .arg = arg},
                           "SELECT attempt, node, started_ms, ended_ms, outcome, reason, "
                           "exit_code FROM attempts WHERE workload=? ORDER BY attempt",
                           "i", (int64_t)id);
}

/* ---- Changes from the scheduling loop -------------------------------- */

void gpd__wl_change_init(gpd__wl_change *c, uint64_t id) {
    memset(c, 0, sizeof *c);
    c->id = id;
    c->state = -1;
    c->attempt = -1;
    c->exit_code = -2;
    c->stop_deadline_ms = -1;
    c->attempt_end = -1;
    c->event = -1;
}

void gpd__wl_change_event(gpd__wl_change *c, uint64_t id, int st, const char *reason,
                          gpd__event_kind kind, const char *msg) {
    gpd__wl_change_init(c, id);
    c->state = st;
    c->reason = reason;
    c->event = (int)kind;
    c->event_msg = msg;
}

typedef struct apply_arg {
    const gpd__wl_change *c;
    int n;
} apply_arg;

static int apply_one(sqlite3 *db, const gpd__wl_change *c, int64_t now, gpd__err *e) {
    int64_t id = (int64_t)c->id;
    int rc = gpd__store_run(db, e, "updating a workload",
                            "UPDATE workloads SET updated_ms=?,"
                            " state=CASE WHEN ?>=0 THEN ? ELSE state END,"
                            " attempt=CASE WHEN ?>=0 THEN ? ELSE attempt END,"
                            " exit_code=CASE WHEN ?>=-1 THEN ? ELSE exit_code END,"
                            " stop_deadline_ms=CASE WHEN ?>=0 THEN ? ELSE stop_deadline_ms END"
                            " WHERE id=?",
                            "iiiiiiiiii", now, (int64_t)c->state, (int64_t)c->state,
                            (int64_t)c->attempt, (int64_t)c->attempt, (int64_t)c->exit_code,
                            (int64_t)c->exit_code, c->stop_deadline_ms, c->stop_deadline_ms, id);
    if (rc == 0 && c->reason)
        rc = gpd__store_run(db, e, "updating a workload",
                            "UPDATE workloads SET reason=? WHERE id=?", "ti", c->reason, id);
    if (rc == 0 && c->stop_kind)
        rc = gpd__store_run(db, e, "updating a workload",
                            "UPDATE workloads SET stop_kind=? WHERE id=?", "ti", c->stop_kind, id);
    if (rc == 0 && c->attempt_begin)
        rc = gpd__store_run(db, e, "recording an attempt",
                            "INSERT OR REPLACE INTO attempts(workload, attempt, node, outcome)"
                            " VALUES(?, (SELECT attempt FROM workloads WHERE id=?), ?, ?)",
                            "iitt", id, id, c->attempt_node ? c->attempt_node : "",
                            gpd__outcome_name(GPD__OUTCOME_STARTING));
    if (rc == 0 && c->attempt_begin)
        rc = keep_history(db, e, "recording an attempt", "attempts", "attempt", c->id);
    if (rc == 0 && c->ntasks > 0 && !c->set_handles)
        rc =
            gpd__store_run(db, e, "replacing tasks", "DELETE FROM tasks WHERE workload=?", "i", id);
    for (int i = 0; rc == 0 && i < c->ntasks; i++) {
        const gpd__task_rec *t = &c->tasks[i];
        if (c->set_handles)
            rc = gpd__store_run(db, e, "recording a task handle",
                                "UPDATE tasks SET handle=? WHERE workload=? AND task=?", "tii",
                                t->handle, id, (int64_t)t->task);
        else
            rc = gpd__store_run(db, e, "recording a task",
                                "INSERT INTO tasks(workload, task, attempt, node, binding, handle,"
                                " master_port) VALUES(?,?,?,?,?,?,?)",
                                "iiitt"
                                "ti",
                                id, (int64_t)t->task, (int64_t)t->attempt, t->node,
                                t->binding ? t->binding : "{}", t->handle, (int64_t)t->master_port);
    }
    if (rc == 0 && c->attempt_started)
        rc = gpd__store_run(db, e, "recording an attempt",
                            "UPDATE attempts SET started_ms=?, outcome=? WHERE workload=? AND "
                            "attempt=(SELECT attempt FROM workloads WHERE id=?)",
                            "itii", now, gpd__outcome_name(GPD__OUTCOME_RUNNING), id, id);
    if (rc == 0 && c->attempt_end >= 0)
        rc = gpd__store_run(
            db, e, "recording an attempt",
            "UPDATE attempts SET ended_ms=?, outcome=?, reason=?,"
            " exit_code=(SELECT exit_code FROM workloads WHERE id=?)"
            " WHERE workload=? AND attempt=(SELECT attempt FROM workloads WHERE id=?)"
            " AND ended_ms<0",
            "ittiii", now, gpd__outcome_name((gpd__outcome)c->attempt_end),
            c->reason ? c->reason : "", id, id, id);
    if (rc == 0 && c->event >= 0)
        rc = add_event(db, c->id, now, (gpd__event_kind)c->event, c->event_msg ? c->event_msg : "",
                       e);
    return rc;
}

static int apply_op(sqlite3 *db, void *arg, gpd__err *e) {
    apply_arg *a = arg;
    int64_t now = gpd__now_ms();
    for (int i = 0; i < a->n; i++) {
        int rc = apply_one(db, &a->c[i], now, e);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int gpd__store_wl_apply(gp_store *st, const gpd__wl_change *c, int n, gpd__err *e) {
    if (n == 0)
        return 0;
    apply_arg a = {c, n};
    return gpd__store_write(st, apply_op, &a, e);
}
