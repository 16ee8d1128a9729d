/*
 * store-migrate.c — the store's schema as an ordered list of migrations.
 *
 * The table schema_version holds one row: the number of migrations applied.
 * At open, every later migration runs in its own transaction together with
 * the bump of that number, so a crash in the middle leaves the store at the
 * previous version, never half-way. Migrations are only ever appended.
 */
#include <stdio.h>

#include "daemon/store.h"

static const char *const migrations[] = {
    /* 1: the first schema. */
    "CREATE TABLE queues("
    "  name TEXT PRIMARY KEY, parent TEXT NOT NULL DEFAULT '',"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  gpu_deserved INTEGER NOT NULL, gpu_limit INTEGER, gpu_weight INTEGER NOT NULL,"
    "  cpu_deserved INTEGER NOT NULL, cpu_limit INTEGER, cpu_weight INTEGER NOT NULL,"
    "  mem_deserved INTEGER NOT NULL, mem_limit INTEGER, mem_weight INTEGER NOT NULL,"
    "  created_ms INTEGER NOT NULL);"
    "CREATE TABLE workloads("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL DEFAULT '', project TEXT NOT NULL, user TEXT NOT NULL,"
    "  state INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,"
    "  submitted_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    "  request TEXT NOT NULL, spec TEXT NOT NULL,"
    "  reason TEXT NOT NULL DEFAULT '', exit_code INTEGER NOT NULL DEFAULT -1,"
    "  stop_kind TEXT NOT NULL DEFAULT '', stop_deadline_ms INTEGER NOT NULL DEFAULT 0,"
    "  client_key TEXT UNIQUE);"
    "CREATE INDEX workloads_project ON workloads(project, id);"
    "CREATE INDEX workloads_state ON workloads(state, id);"
    "CREATE TABLE tasks("
    "  workload INTEGER NOT NULL REFERENCES workloads(id), task INTEGER NOT NULL,"
    "  attempt INTEGER NOT NULL, node TEXT NOT NULL, binding TEXT NOT NULL,"
    "  handle TEXT NOT NULL DEFAULT '', PRIMARY KEY(workload, task));"
    "CREATE TABLE attempts("
    "  workload INTEGER NOT NULL REFERENCES workloads(id), attempt INTEGER NOT NULL,"
    "  node TEXT NOT NULL DEFAULT '', started_ms INTEGER NOT NULL DEFAULT -1,"
    "  ended_ms INTEGER NOT NULL DEFAULT -1, outcome TEXT NOT NULL DEFAULT 'starting',"
    "  reason TEXT NOT NULL DEFAULT '', exit_code INTEGER NOT NULL DEFAULT -1,"
    "  PRIMARY KEY(workload, attempt));"
    "CREATE TABLE events("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT, workload INTEGER NOT NULL,"
    "  ts_ms INTEGER NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);"
    "CREATE INDEX events_workload ON events(workload, id);"
    "CREATE TABLE tokens("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, user TEXT NOT NULL,"
    "  role TEXT NOT NULL, scope TEXT NOT NULL DEFAULT '', hash TEXT NOT NULL UNIQUE,"
    "  created_ms INTEGER NOT NULL);",
    /* 2: usage accounting (usage.h): GPU-seconds per bucket of res seconds
     * starting at ts, per queue, user or node. */
    "CREATE TABLE usage("
    "  res INTEGER NOT NULL, kind INTEGER NOT NULL, ts INTEGER NOT NULL, key TEXT NOT NULL,"
    "  alloc REAL NOT NULL, used REAL NOT NULL, measured REAL NOT NULL,"
    "  borrowed REAL NOT NULL, lent REAL NOT NULL,"
    "  PRIMARY KEY(res, kind, ts, key)) WITHOUT ROWID;",
    /* 3: the longest minimum runtime a queue's workloads may claim
     * (gp_queue_spec.min_runtime_max), ten minutes unless an admin set it. */
    "ALTER TABLE queues ADD COLUMN min_runtime_max_ms INTEGER NOT NULL DEFAULT 600000;",
    /* 4: the Unix user a token's workloads run as ('': the token's user). */
    "ALTER TABLE tokens ADD COLUMN unix_user TEXT NOT NULL DEFAULT '';",
    /* 5: indexes for the workload list's orders (gpd__wl_order): keyset
     * paging by (key, id) reads them in either direction. */
    "CREATE INDEX workloads_submitted ON workloads(submitted_ms, id);"
    "CREATE INDEX workloads_user ON workloads(user, id);"
    "CREATE INDEX workloads_name ON workloads(name, id);",
    /* 6: the longest grace period a queue's workloads keep when evicted to
     * reclaim GPUs (gp_queue_spec.reclaim_grace_max), one minute unless an
     * admin set it. */
    "ALTER TABLE queues ADD COLUMN reclaim_grace_max_ms INTEGER NOT NULL DEFAULT 60000;",
    /* 7: how a project's later submissions that name no mode are evicted
     * (gp_queue_spec.on_preempt, by its name), checkpoint unless an admin
     * set it. */
    "ALTER TABLE queues ADD COLUMN on_preempt TEXT NOT NULL DEFAULT 'checkpoint';",
    /* 8: bounds on a queue's interactive workloads (gp_queue_spec's
     * idle_gpu_timeout and max_session_length, 0: none); the sessions the
     * idle policy suspended, while they stay suspended (store-idle.c); and
     * per usage bucket the GPU-seconds that policy returned to the pool. */
    "ALTER TABLE queues ADD COLUMN idle_gpu_timeout_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE queues ADD COLUMN max_session_length_ms INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE idle_returns("
    "  workload INTEGER PRIMARY KEY, project TEXT NOT NULL, user TEXT NOT NULL,"
    "  gpu_milli INTEGER NOT NULL, since_ms INTEGER NOT NULL);"
    "ALTER TABLE usage ADD COLUMN returned REAL NOT NULL DEFAULT 0;",
    /* 9: what a project gives a submission that asks for no CPU or no
     * memory (gp_queue_spec's default_cpu_milli and default_mem_bytes, per
     * task; 0: nothing). */
    "ALTER TABLE queues ADD COLUMN default_cpu_milli INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE queues ADD COLUMN default_mem_bytes INTEGER NOT NULL DEFAULT 0;",
    /* 10: the state paused (gp_wl_state) comes after stopping, with the
     * active states: the final ones move up by one. */
    "UPDATE workloads SET state = state + 1 WHERE state >= 4;",
    /* 11: a queue's on_preempt may be unset, '': it then inherits its
     * parent's, and a top-level queue's default is checkpoint. A queue at
     * checkpoint, the default of migration 7, whose ancestors are all at
     * checkpoint too, is unset: its mode in force stays checkpoint, and a
     * department's later setting reaches it. Every other queue keeps its
     * own, so that no project's mode in force changes. */
    "WITH RECURSIVE up(q, p) AS (SELECT name, parent FROM queues"
    "  UNION SELECT up.q, queues.parent FROM up JOIN queues ON queues.name = up.p)"
    " UPDATE queues SET on_preempt = '' WHERE on_preempt = 'checkpoint' AND name NOT IN"
    "  (SELECT up.q FROM up JOIN queues ON queues.name = up.p"
    "   WHERE queues.on_preempt <> 'checkpoint');",
    /* 12: a project's workloads are those with ids above its queue's
     * workloads_after, the last workload id given when it was created, so
     * that a deleted namesake's are not (store-workloads.c, WL_CURRENT).
     * On a store from before, the creation time tells it, once. */
    "ALTER TABLE queues ADD COLUMN workloads_after INTEGER NOT NULL DEFAULT 0;"
    "UPDATE queues SET workloads_after = COALESCE((SELECT MAX(id) FROM workloads"
    "  WHERE workloads.project = queues.name AND workloads.submitted_ms < queues.created_ms), 0);",
    /* 13: a gang's rendezvous port (MASTER_PORT), chosen when its attempt
     * is bound and kept with its tasks, so that a restart launches them
     * again with it and knows it taken (sched-tasks.c, gang_port); 0 on a
     * row from before: the workload's preferred port, which it was
     * launched with. */
    "ALTER TABLE tasks ADD COLUMN master_port INTEGER NOT NULL DEFAULT 0;",
};

#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

static int version_of(sqlite3 *db, int *v, gpd__err *e) {
    int rc = sqlite3_exec(db,
                          "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);"
                          "INSERT INTO schema_version SELECT 0 WHERE NOT EXISTS"
                          " (SELECT 1 FROM schema_version);",
                          NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return gpd__store_fail(db, rc, e, "creating the schema_version table");
    sqlite3_stmt *st;
    int64_t version = 0;
    /* A read that failed is an error: as version 0 it re-ran the first
     * migration on a store that had it. */
    if ((rc = gpd__store_prepare(db, "SELECT version FROM schema_version", &st, e)) < 0 ||
        (rc = gpd__store_rows(db, st, "reading the schema version", gpd__store_int_row, &version,
                              e)) < 0)
        return rc;
    *v = (int)version;
    return 0;
}

int gpd__store_migrate(sqlite3 *db, gpd__err *e) {
    int v = 0, rc;
    if ((rc = version_of(db, &v, e)) < 0)
        return rc;
    if (v > NMIGRATIONS)
        return gpd__fail(e, GP_ENOTSUP, "",
                         "the store has schema version %d, newer than this gpupoold knows (%d); "
                         "run a newer gpupoold",
                         v, NMIGRATIONS);
    for (; v < NMIGRATIONS; v++) {
        char bump[96];
        snprintf(bump, sizeof bump, "UPDATE schema_version SET version=%d;", v + 1);
        if ((rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) != SQLITE_OK)
            return gpd__store_fail(db, rc, e, "starting a migration");
        if ((rc = sqlite3_exec(db, migrations[v], NULL, NULL, NULL)) != SQLITE_OK ||
            (rc = sqlite3_exec(db, bump, NULL, NULL, NULL)) != SQLITE_OK ||
            (rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL)) != SQLITE_OK) {
            int code = gpd__store_fail(db, rc, e, "migrating the store");
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return code;
        }
    }
    return v;
}
