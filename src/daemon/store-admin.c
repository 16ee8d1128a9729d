/*
 * store-admin.c — the administrative tables of the store: the queue tree
 * (departments and projects with their quotas) and the API tokens, of which
 * only the SHA-256 hash is ever written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_array.h"
#include "daemon/store.h"

/* ---- Queues ---------------------------------------------------------- */

static void bind_limit(sqlite3_stmt *s, int col, int64_t v) {
    if (v == GP_UNLIMITED)
        sqlite3_bind_null(s, col);
    else
        sqlite3_bind_int64(s, col, v);
}

static int queue_put_op(sqlite3 *db, void *arg, gpd__err *e) {
    const gp_queue_spec *q = arg;
    sqlite3_stmt *s;
    /* An upsert keeps created_ms, which orders parents before children, and
     * workloads_after, the last workload id given before the queue was made
     * (what a deleted namesake's workloads are at most: WL_CURRENT). */
    int rc = gpd__store_prepare(
        db,
        "INSERT INTO queues(name, parent, priority, gpu_deserved, gpu_limit, gpu_weight,"
        " cpu_deserved, cpu_limit, cpu_weight, mem_deserved, mem_limit, mem_weight, created_ms,"
        " min_runtime_max_ms, reclaim_grace_max_ms, on_preempt, idle_gpu_timeout_ms,"
        " max_session_length_ms, default_cpu_milli, default_mem_bytes, workloads_after)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
        " (SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'workloads'))"
        " ON CONFLICT(name) DO UPDATE SET"
        " parent=excluded.parent, priority=excluded.priority,"
        " gpu_deserved=excluded.gpu_deserved, gpu_limit=excluded.gpu_limit,"
        " gpu_weight=excluded.gpu_weight, cpu_deserved=excluded.cpu_deserved,"
        " cpu_limit=excluded.cpu_limit, cpu_weight=excluded.cpu_weight,"
        " mem_deserved=excluded.mem_deserved, mem_limit=excluded.mem_limit,"
        " mem_weight=excluded.mem_weight, min_runtime_max_ms=excluded.min_runtime_max_ms,"
        " reclaim_grace_max_ms=excluded.reclaim_grace_max_ms, on_preempt=excluded.on_preempt,"
        " idle_gpu_timeout_ms=excluded.idle_gpu_timeout_ms,"
        " max_session_length_ms=excluded.max_session_length_ms,"
        " default_cpu_milli=excluded.default_cpu_milli,"
        " default_mem_bytes=excluded.default_mem_bytes",
        &s, e);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(s, 1, q->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, q->parent, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, q->priority);
    for (int r = 0; r < GP_RES_COUNT; r++) {
        sqlite3_bind_int64(s, 4 + 3 * r, q->quota[r].deserved);
        bind_limit(s, 5 + 3 * r, q->quota[r].limit);
        sqlite3_bind_int(s, 6 + 3 * r, q->quota[r].weight);
    }
    sqlite3_bind_int64(s, 13, gpd__now_ms());
    sqlite3_bind_int64(s, 14, q->min_runtime_max);
    sqlite3_bind_int64(s, 15, q->reclaim_grace_max);
    sqlite3_bind_text(s, 16, q->on_preempt_set ? gp_on_preempt_name(q->on_preempt) : "", -1,
                      SQLITE_STATIC);
    sqlite3_bind_int64(s, 17, q->idle_gpu_timeout);
    sqlite3_bind_int64(s, 18, q->max_session_length);
    sqlite3_bind_int64(s, 19, q->default_cpu_milli);
    sqlite3_bind_int64(s, 20, q->default_mem_bytes);
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : gpd__store_fail(db, rc, e, "storing the queue");
}

typedef struct queues_put {
    const gp_queue_spec *q;
    size_t n;
} queues_put;

static int queues_put_op(sqlite3 *db, void *arg, gpd__err *e) {
    const queues_put *p = arg;
    int rc = 0;
    for (size_t i = 0; i < p->n && rc == 0; i++)
        rc = queue_put_op(db, (void *)(uintptr_t)&p->q[i], e);
    return rc;
}

int gpd__store_queue_put(gp_store *st, const gp_queue_spec *q, size_t n, gpd__err *e) {
    queues_put p = {q, n};
    return gpd__store_write(st, queues_put_op, &p, e);
}

static int queue_delete_op(sqlite3 *db, void *arg, gpd__err *e) {
    int rc = gpd__store_run(db, e, "deleting the queue", "DELETE FROM queues WHERE name=?", "t",
                            (const char *)arg);
    /* A scope is a department, or projects separated by commas. */
    if (rc == 0)
        rc = gpd__store_run(db, e, "revoking the queue's tokens",
                            "DELETE FROM tokens WHERE role != 'admin'"
                            " AND instr(',' || scope || ',', ',' || ? || ',') > 0",
                            "t", (const char *)arg);
    return rc;
}

int gpd__store_queue_delete(gp_store *st, const char *name, gpd__err *e) {
    return gpd__store_write(st, queue_delete_op, (void *)(uintptr_t)name, e);
}

static int queue_row(sqlite3_stmt *s, const gpd__store_each *each) {
    gp_queue_spec q;
    char name[GP_NAME_MAX + 1], parent[GP_NAME_MAX + 1], mode[32];
    gpd__store_text(name, sizeof name, s, 0);
    gpd__store_text(parent, sizeof parent, s, 1);
    gp_queue_spec_init(&q, name, parent);
    q.priority = sqlite3_column_int(s, 2);
    for (int r = 0; r < GP_RES_COUNT; r++) {
        q.quota[r].deserved = sqlite3_column_int64(s, 3 + 3 * r);
        q.quota[r].limit = sqlite3_column_type(s, 4 + 3 * r) == SQLITE_NULL
                               ? GP_UNLIMITED
                               : sqlite3_column_int64(s, 4 + 3 * r);
        q.quota[r].weight = sqlite3_column_int(s, 5 + 3 * r);
    }
    q.min_runtime_max = sqlite3_column_int64(s, 12);
    q.reclaim_grace_max = sqlite3_column_int64(s, 13);
    /* '' (none set: the parent's), or a name this gpupoold does not know
     * (a newer one wrote it), reads as none set. */
    gpd__store_text(mode, sizeof mode, s, 14);
    q.on_preempt_set = gp_on_preempt_parse(mode, &q.on_preempt) == 0;
    if (!q.on_preempt_set)
        q.on_preempt = GP_ON_PREEMPT_CHECKPOINT;
    q.idle_gpu_timeout = sqlite3_column_int64(s, 15);
    q.max_session_length = sqlite3_column_int64(s, 16);
    q.default_cpu_milli = sqlite3_column_int64(s, 17);
    q.default_mem_bytes = sqlite3_column_int64(s, 18);
    return each->fn.queue(&q, each->arg);
}

int gpd__store_queues(gp_store *st, int (*fn)(const gp_queue_spec *q, void *arg), void *arg,
                      gpd__err *e) {
    return gpd__store_list(st, e, "listing queues", queue_row,
                           (gpd__store_each){.fn.queue = fn, .arg = arg},
                           "SELECT name, parent, priority, gpu_deserved, gpu_limit,"
                           " gpu_weight, cpu_deserved, cpu_limit, cpu_weight, mem_deserved,"
                           " mem_limit, mem_weight, min_runtime_max_ms, reclaim_grace_max_ms,"
                           " on_preempt, idle_gpu_timeout_ms, max_session_length_ms,"
                           " default_cpu_milli, default_mem_bytes"
                           " FROM queues"
                           " ORDER BY created_ms, rowid",
                           "");
}

/* gpd__store_queue_specs's list and its room. */
typedef struct spec_list {
    gpd__queue_specs *l;
    size_t cap;
} spec_list;

static int add_spec(const gp_queue_spec *q, void *arg) {
    spec_list *sl = arg;
    if (GP_ARRAY_ROOM(sl->l->q, sl->l->n, sl->cap, 8) < 0)
        return GP_ENOMEM;
    sl->l->q[sl->l->n++] = *q;
    return 0;
}

int gpd__store_queue_specs(gp_store *st, gpd__queue_specs *out, gpd__err *e) {
    *out = (gpd__queue_specs){0};
    spec_list sl = {out, 0};
    int rc = gpd__store_queues(st, add_spec, &sl, e);
    if (rc < 0) {
        free(out->q);
        *out = (gpd__queue_specs){0};
    }
    return rc;
}

const gp_queue_spec *gpd__queue_spec_find(const gpd__queue_specs *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->q[i].name, name) == 0)
            return &l->q[i];
    return NULL;
}

/* ---- Tokens ---------------------------------------------------------- */

static int token_put_op(sqlite3 *db, void *arg, gpd__err *e) {
    gpd__token *t = arg;
    int rc = gpd__store_run(db, e, "storing the token",
                            "INSERT INTO tokens(name, user, role, scope, hash, created_ms,"
                            " unix_user) VALUES(?,?,?,?,?,?,?)",
                            "tttttit", t->name, t->user, t->role, t->scope, t->hash, t->created_ms,
                            t->unix_user);
    if (rc == 0)
        t->id = sqlite3_last_insert_rowid(db);
    return rc;
}

int gpd__store_token_put(gp_store *st, gpd__token *t, gpd__err *e) {
    return gpd__store_write(st, token_put_op, t, e);
}

static int token_delete_op(sqlite3 *db, void *arg, gpd__err *e) {
    int64_t id = *(int64_t *)arg;
    int rc = gpd__store_run(db, e, "deleting the token", "DELETE FROM tokens WHERE id=?", "i", id);
    if (rc == 0 && sqlite3_changes(db) == 0)
        return gpd__fail(e, GP_ENOENT, "id", "id: no token %lld", (long long)id);
    return rc;
}

int gpd__store_token_delete(gp_store *st, int64_t id, gpd__err *e) {
    return gpd__store_write(st, token_delete_op, &id, e);
}

static int token_row(sqlite3_stmt *s, const gpd__store_each *each) {
    gpd__token t;
    memset(&t, 0, sizeof t);
    t.id = sqlite3_column_int64(s, 0);
    gpd__store_text(t.name, sizeof t.name, s, 1);
    gpd__store_text(t.user, sizeof t.user, s, 2);
    gpd__store_text(t.role, sizeof t.role, s, 3);
    gpd__store_text(t.scope, sizeof t.scope, s, 4);
    gpd__store_text(t.hash, sizeof t.hash, s, 5);
    t.created_ms = sqlite3_column_int64(s, 6);
    gpd__store_text(t.unix_user, sizeof t.unix_user, s, 7);
    if (t.unix_user[0] == '\0')
        snprintf(t.unix_user, sizeof t.unix_user, "%s", t.user);
    return each->fn.token(&t, each->arg);
}

int gpd__store_tokens(gp_store *st, int (*fn)(const gpd__token *t, void *arg), void *arg,
                      gpd__err *e) {
    return gpd__store_list(
        st, e, "listing tokens", token_row, (gpd__store_each){.fn.token = fn, .arg = arg},
        "SELECT id, name, user, role, scope, hash, created_ms, unix_user FROM tokens"
        " ORDER BY id",
        "");
}
