/*
 * store-usage.c — the usage table: GPU-seconds per bucket (a minute or an
 * hour) and per queue, user or node, added to by every usage sample, pruned
 * to a bounded size, and summed into the steps a query asks for.
 *
 * Size: one row per key and bucket in which the key held something. Minute
 * rows are kept GPD__USAGE_FINE_DAYS days, hour rows GPD__USAGE_COARSE_DAYS
 * days, so a key costs at most 14 * 1440 + 400 * 24 = 29,760 rows, under
 * 2 MB at about 60 bytes a row, whatever the age of the pool.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/store.h"
#include "daemon/usage.h"

typedef struct add_arg {
    const gpd__usage_row *rows;
    size_t n;
} add_arg;

/* A sample adds to its key's bucket, which the first sample makes. */
static const char usage_upsert[] =
    "INSERT INTO usage(res, kind, ts, key, alloc, used, measured, borrowed, lent, returned)"
    " VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT(res, kind, ts, key) DO UPDATE SET"
    " alloc = alloc + excluded.alloc, used = used + excluded.used,"
    " measured = measured + excluded.measured, borrowed = borrowed + excluded.borrowed,"
    " lent = lent + excluded.lent, returned = returned + excluded.returned";

static int add_op(sqlite3 *db, void *arg, gpd__err *e) {
    const add_arg *a = arg;
    sqlite3_stmt *s;
    int rc = gpd__store_prepare(db, usage_upsert, &s, e);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < a->n && rc == 0; i++) {
        const gpd__usage_row *r = &a->rows[i];
        sqlite3_bind_int(s, 1, r->res);
        sqlite3_bind_int(s, 2, (int)r->kind);
        sqlite3_bind_int64(s, 3, r->ts);
        sqlite3_bind_text(s, 4, r->key, -1, SQLITE_STATIC);
        sqlite3_bind_double(s, 5, r->alloc);
        sqlite3_bind_double(s, 6, r->used);
        sqlite3_bind_double(s, 7, r->measured);
        sqlite3_bind_double(s, 8, r->borrowed);
        sqlite3_bind_double(s, 9, r->lent);
        sqlite3_bind_double(s, 10, r->returned);
        int step = sqlite3_step(s);
        if (step != SQLITE_DONE)
            rc = gpd__store_fail(db, step, e, "recording usage");
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return rc;
}

int gpd__store_usage_add(gp_store *st, const gpd__usage_row *rows, size_t n, gpd__err *e) {
    if (n == 0)
        return 0;
    add_arg a = {rows, n};
    return gpd__store_write(st, add_op, &a, e);
}

static int prune_op(sqlite3 *db, void *arg, gpd__err *e) {
    int64_t now = *(const int64_t *)arg;
    int rc =
        gpd__store_run(db, e, "pruning minute usage", "DELETE FROM usage WHERE res=? AND ts<?",
                       "ii", (int64_t)GPD__USAGE_FINE, now - (int64_t)GPD__USAGE_FINE_DAYS * 86400);
    if (rc == 0)
        rc = gpd__store_run(db, e, "pruning hourly usage", "DELETE FROM usage WHERE res=? AND ts<?",
                            "ii", (int64_t)GPD__USAGE_COARSE,
                            now - (int64_t)GPD__USAGE_COARSE_DAYS * 86400);
    return rc;
}

int gpd__store_usage_prune(gp_store *st, int64_t now_s, gpd__err *e) {
    return gpd__store_write(st, prune_op, &now_s, e);
}

static int query_row(sqlite3_stmt *s, const gpd__store_each *each) {
    char key[GP_NAME_MAX + 1];
    gpd__store_text(key, sizeof key, s, 0);
    gpd__usage_point p = {
        .key = key,
        .ts = sqlite3_column_int64(s, 1),
        .alloc = sqlite3_column_double(s, 2),
        .used = sqlite3_column_double(s, 3),
        .measured = sqlite3_column_double(s, 4),
        .borrowed = sqlite3_column_double(s, 5),
        .lent = sqlite3_column_double(s, 6),
        .returned = sqlite3_column_double(s, 7),
    };
    return each->fn.usage(&p, each->arg);
}

int gpd__store_usage_query(gp_store *st, int32_t res, int kind, int64_t from_s, int64_t to_s,
                           int64_t step, int (*fn)(const gpd__usage_point *p, void *arg), void *arg,
                           gpd__err *e) {
    gpd__store_each each = {.fn.usage = fn, .arg = arg};
    /* Steps of one bucket come straight off the primary key (res, kind, ts,
     * key) in its order: no grouping and no sort, which a year of hours
     * (tens of thousands of rows) would make slow. */
    if (step == res)
        return gpd__store_list(st, e, "reading usage", query_row, each,
                               "SELECT key, ts, alloc, used, measured, borrowed, lent, returned"
                               " FROM usage"
                               " WHERE res=?1 AND kind=?2 AND ts<?3 AND ts>=?4 ORDER BY ts, key",
                               "iiii", (int64_t)res, (int64_t)kind, to_s, from_s);
    return gpd__store_list(
        st, e, "reading usage", query_row, each,
        "SELECT key, ?4 + ((ts - ?4) / ?5) * ?5 AS step_ts, sum(alloc), sum(used), sum(measured),"
        " sum(borrowed), sum(lent), sum(returned) FROM usage WHERE res=?1 AND kind=?2 AND ts>=?4 "
        "AND ts<?3"
        " GROUP BY step_ts, key ORDER BY step_ts, key",
        "iiiii", (int64_t)res, (int64_t)kind, to_s, from_s, step);
}
