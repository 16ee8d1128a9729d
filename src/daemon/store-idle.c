/*
 * store-idle.c — the sessions that the idle policy (sched-idle.c) suspended
 * and that stay suspended: one row each, written when the policy stops one,
 * removed when its owner resumes or deletes it. Usage accounting counts
 * their GPUs, from since_ms on, as GPU time the policy returned to the pool.
 */
#include <stdlib.h>

#include "common/gp_array.h"
#include "daemon/store.h"

static int put_op(sqlite3 *db, void *arg, gpd__err *e) {
    const gpd__idle_return *r = arg;
    return gpd__store_run(db, e, "recording a suspended idle session",
                          "INSERT INTO idle_returns(workload, project, user, gpu_milli, since_ms)"
                          " VALUES(?,?,?,?,?) ON CONFLICT(workload) DO UPDATE SET"
                          " gpu_milli=excluded.gpu_milli, since_ms=excluded.since_ms",
                          "ittii", (int64_t)r->workload, r->project, r->user, r->gpu_milli,
                          r->since_ms);
}

int gpd__store_idle_put(gp_store *st, const gpd__idle_return *r, gpd__err *e) {
    return gpd__store_write(st, put_op, (void *)(uintptr_t)r, e);
}

static int drop_op(sqlite3 *db, void *arg, gpd__err *e) {
    return gpd__store_run(db, e, "forgetting a suspended idle session",
                          "DELETE FROM idle_returns WHERE workload=?", "i",
                          (int64_t) * (const uint64_t *)arg);
}

int gpd__store_idle_drop(gp_store *st, uint64_t workload, gpd__err *e) {
    return gpd__store_write(st, drop_op, &workload, e);
}

int gpd__store_idle_has(gp_store *st, uint64_t workload, int *yes, gpd__err *e) {
    int64_t n = 0;
    int rc = gpd__store_select(st, e, "reading a suspended idle session", gpd__store_int_row, &n,
                               "SELECT count(*) FROM idle_returns WHERE workload=?", "i",
                               (int64_t)workload);
    *yes = n > 0;
    return rc;
}

typedef struct idle_rows {
    gpd__idle_return *v;
    size_t n, cap;
} idle_rows;

static int idle_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    idle_rows *l = arg;
    if (GP_ARRAY_ROOM(l->v, l->n, l->cap, 8) < 0)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory listing suspended idle sessions");
    gpd__idle_return *r = &l->v[l->n++];
    *r = (gpd__idle_return){.workload = (uint64_t)sqlite3_column_int64(s, 0),
                            .gpu_milli = sqlite3_column_int64(s, 3),
                            .since_ms = sqlite3_column_int64(s, 4)};
    gpd__store_text(r->project, sizeof r->project, s, 1);
    gpd__store_text(r->user, sizeof r->user, s, 2);
    return 0;
}

int gpd__store_idle_returned(gp_store *st, int64_t by, gpd__idle_return **rows, size_t *n,
                             gpd__err *e) {
    idle_rows l = {0};
    int rc = gpd__store_select(st, e, "listing suspended idle sessions", idle_row, &l,
                               "SELECT workload, project, user, gpu_milli, since_ms"
                               " FROM idle_returns WHERE since_ms <= ? ORDER BY workload",
                               "i", by);
    if (rc < 0) {
        free(l.v);
        l = (idle_rows){0};
    }
    *rows = l.v;
    *n = l.n;
    return rc;
}
