/*
 * store-idle.c — the sessions that the idle policy (sched-idle.c) suspended
 * and that stay suspended: one row each, written when the policy stops one,
 * removed when its owner resumes or deletes it. Usage accounting counts
 * their GPUs, from since_ms on, as GPU time the policy returned to the pool.
 */
#include <string.h>

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

static int idle_row(sqlite3_stmt *s, const gpd__store_each *each) {
    gpd__idle_return r;
    memset(&r, 0, sizeof r);
    r.workload = (uint64_t)sqlite3_column_int64(s, 0);
    gpd__store_text(r.project, sizeof r.project, s, 1);
    gpd__store_text(r.user, sizeof r.user, s, 2);
    r.gpu_milli = sqlite3_column_int64(s, 3);
    r.since_ms = sqlite3_column_int64(s, 4);
    return each->fn.idle(&r, each->arg);
}

int gpd__store_idle_list(gp_store *st, int (*fn)(const gpd__idle_return *r, void *arg), void *arg,
                         gpd__err *e) {
    return gpd__store_list(st, e, "listing suspended idle sessions", idle_row,
                           (gpd__store_each){.fn.idle = fn, .arg = arg},
                           "SELECT workload, project, user, gpu_milli, since_ms"
                           " FROM idle_returns ORDER BY workload",
                           "");
}
