/*
 * store.h — gpupoold's durable state in one SQLite file (WAL mode).
 *
 * Writes go through one writer thread that commits whatever arrived while the
 * previous commit was syncing in a single transaction (group commit): each
 * write still runs inside its own SAVEPOINT, so one failing write rolls back
 * alone, and its caller is answered only after the batch's COMMIT reached the
 * disk. Reads use a small pool of separate connections, which WAL lets run
 * beside the writer.
 *
 * Every function returns 0 or a negative GP_E* code and fills a gpd__err:
 * GP_ENOSPC for a full disk, GP_EROFS for a read-only store, GP_EIO for other
 * I/O errors, GP_ENOENT for a missing row. A failed write changes nothing.
 */
#ifndef GP_STORE_H
#define GP_STORE_H

#include <sqlite3.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "engine/gp_engine.h"

/* ---- Connection, group commit, reads (store.c) ---- */

int gpd__store_open(const char *path, gp_store **out, gpd__err *e);
void gpd__store_close(gp_store *st);

/* A write: runs on the writer thread inside a savepoint; returns 0 or a
 * negative code (then its changes are rolled back). */
typedef int (*gpd__store_op)(sqlite3 *db, void *arg, gpd__err *e);

/* Runs op durably: returns 0 after the transaction holding it committed, or
 * op's error with nothing of op stored. If a savepoint statement of its batch
 * or the batch's COMMIT fails, the whole batch is rolled back and every write
 * of it fails, with the store's error where op itself did not fail. */
int gpd__store_write(gp_store *st, gpd__store_op op, void *arg, gpd__err *e);

/* Borrows a read connection and prepares sql on it: 0 with *db and *s set
 * (the caller binds, steps, finalizes s and gives db back with
 * gpd__store_release), or a negative code with nothing borrowed. */
int gpd__store_query(gp_store *st, const char *sql, sqlite3 **db, sqlite3_stmt **s, gpd__err *e);
void gpd__store_release(gp_store *st, sqlite3 *db);

/* Maps an SQLite result to a GP_E* code and fills e with a sentence. */
int gpd__store_fail(sqlite3 *db, int rc, gpd__err *e, const char *what);

/* Prepares sql on db (cached per connection by SQLite's own prepare cache is
 * not available, so statements are prepared per call; they are small). */
int gpd__store_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, gpd__err *e);

/* Copies the text of column col of s's row into dst (len bytes), cut to fit
 * (at a NUL it holds, too); "" where the column is NULL. Reading a column so
 * allocates nothing, where sqlite3_column_text may, and then answers as for
 * a NULL column. */
void gpd__store_text(char *dst, size_t len, sqlite3_stmt *s, int col);

/* The text of column col as a new string (null's copy where the column is
 * NULL), or NULL when memory runs out. */
char *gpd__store_dup(sqlite3_stmt *s, int col, const char *null);

/* Runs one statement on db with its binds, given by kinds: 'i' an int64_t,
 * 't' a string; what names the action in the error. */
int gpd__store_run(sqlite3 *db, gpd__err *e, const char *what, const char *sql, const char *kinds,
                   ...);

/* One row of a read query: returns 0 to go on, 1 to stop early, or a negative
 * code with e filled. */
typedef int (*gpd__store_row)(sqlite3_stmt *s, void *arg, gpd__err *e);

/* Steps s (prepared on db and bound) to its end, calling row on each row, and
 * finalizes it. Returns 0, row's negative code, or the store error of a step
 * that failed (what names the action). */
int gpd__store_rows(sqlite3 *db, sqlite3_stmt *s, const char *what, gpd__store_row row, void *arg,
                    gpd__err *e);

/* A gpd__store_row that keeps column 0 of the first row, a whole number, in
 * *(int64_t *)arg and stops there: arg keeps its value when there is no row,
 * and a step that failed is an error, not "no row". */
int gpd__store_int_row(sqlite3_stmt *s, void *arg, gpd__err *e);

/* A read query on a borrowed read connection: sql with its binds as for
 * gpd__store_run, row called on each row as for gpd__store_rows. */
int gpd__store_select(gp_store *st, gpd__err *e, const char *what, gpd__store_row row, void *arg,
                      const char *sql, const char *kinds, ...);

/* ---- Schema and migrations (store-migrate.c) ---- */

/* Brings the schema up to the newest version, one transaction per step.
 * Returns the version reached, or a negative code. */
int gpd__store_migrate(sqlite3 *db, gpd__err *e);

/* ---- Workloads, tasks, attempts, events (store-workloads.c) ---- */

typedef struct gpd__wl {
    uint64_t id;
    char name[64];
    char project[GP_NAME_MAX + 1];
    char user[GP_NAME_MAX + 1];
    gp_wl_state state;
    int32_t attempt; /* current or last attempt; 0 before the first */
    int64_t submitted_ms, updated_ms;
    char request[64];         /* what it asks for, for people: "0.5 GPU" */
    char *spec;               /* the validated request as JSON (malloc'ed) */
    char reason[256];         /* the last outcome, or why it stops */
    int32_t exit_code;        /* -1 if none */
    char stop_kind[16];       /* while STOPPING: evict, suspend, delete; a delete or suspend
                                 asked for while a pause step ran, with the state unchanged
                                 (recovery carries it out) */
    int64_t stop_deadline_ms; /* while STOPPING: when the grace period ends */
} gpd__wl;

void gpd__wl_free(gpd__wl *w); /* frees spec only; w itself is the caller's */

/* Inserts a PENDING workload (w->id is set) with its "submitted" event. If
 * client_key is given and already used, *existed is set and w->id is the
 * existing workload's; nothing is written. */
int gpd__store_wl_insert(gp_store *st, gpd__wl *w, const char *client_key, int *existed,
                         gpd__err *e);

int gpd__store_wl_get(gp_store *st, uint64_t id, gpd__wl *out, gpd__err *e);

/* The keys the workload list sorts by (each has an index on (key, id)), as
 * ?order= names them. */
#define GPD__WL_ORDERS(XX)                                                                         \
    XX(GPD__ORDER_ID, "id")                                                                        \
    XX(GPD__ORDER_SUBMITTED, "submitted")                                                          \
    XX(GPD__ORDER_STATE, "state")                                                                  \
    XX(GPD__ORDER_PROJECT, "project")                                                              \
    XX(GPD__ORDER_USER, "user")                                                                    \
    XX(GPD__ORDER_NAME, "name")

typedef enum gpd__wl_order { GPD__WL_ORDERS(GP_ENUM_SYMBOL_OF) GPD__NORDERS } gpd__wl_order;

/* Reads an order as ?order= gives it, a name with a leading '-' for
 * descending: 0, or GP_EINVAL if unknown. */
int gpd__wl_order_read(const char *s, gpd__wl_order *order, int *desc);

/* Writes w's key in order as text into buf (a number for numeric keys). */
void gpd__wl_order_key(const gpd__wl *w, gpd__wl_order order, char *buf, size_t len);

typedef struct gpd__wl_filter {
    const char *project; /* NULL: any */
    const char *user;
    int state; /* -1: any */
    /* NULL: any; else one of these (NULL-ended), as they stand: submitted
     * since the queue of that name was made, not a deleted namesake's. */
    const char *const *projects;
    uint64_t after;      /* ids above this (paging) */
    int limit;           /* rows */
    int active_only;     /* only PENDING..STOPPING */
    gpd__wl_order order; /* the sort key (GPD__ORDER_ID: paging by after) */
    int desc;            /* descending by (key, id) */
    int has_cursor;      /* rows after (cur_key, cur_id) in this order */
    const char *cur_key; /* the last row's key as text (a number for int keys) */
    uint64_t cur_id;
} gpd__wl_filter;

/* Calls fn for each matching workload in the filter's order, ties broken by
 * id in the same direction (a total order, so keyset paging by (key, id)
 * neither misses nor repeats a row); fn returns as gpd__store_each's
 * callbacks do. */
int gpd__store_wl_list(gp_store *st, const gpd__wl_filter *f,
                       int (*fn)(const gpd__wl *w, void *arg), void *arg, gpd__err *e);

/* Counts the workloads of user in state st into *n. */
int gpd__store_wl_count_user(gp_store *st, const char *user, gp_wl_state state, int64_t *n,
                             gpd__err *e);

/* *yes: 1 if workload id is of its project as it stands, submitted no
 * earlier than the queue of that name was made; 0 if of a deleted project
 * (whose name another may have taken since) or if there is none. */
int gpd__store_wl_current(gp_store *st, uint64_t id, int *yes, gpd__err *e);

/* Calls fn with each user who has submitted a workload to project as it
 * stands (not to a deleted namesake), once each; fn returns 0 to go on or a
 * negative code, which the read returns. */
int gpd__store_project_users(gp_store *st, const char *project,
                             int (*fn)(const char *user, void *arg), void *arg, gpd__err *e);

/* Counts workloads per state (counts[GP_WL_NSTATES]). */
int gpd__store_wl_counts(gp_store *st, int64_t *counts, gpd__err *e);

/* One task of the current attempt: where it was placed and its handle. */
typedef struct gpd__task_rec {
    int32_t task;
    int32_t attempt;
    char node[GP_NAME_MAX + 1];
    char *binding;       /* JSON of its slices (malloc'ed) */
    char handle[128];    /* "" until launched */
    int32_t master_port; /* a gang's MASTER_PORT, the same in each of its rows; 0: none
                            (not a gang, or stored before ports were: the
                            workload's preferred one) */
} gpd__task_rec;

/* Reads the task rows of workload id (*tasks malloc'ed; free with
 * gpd__task_recs_free). */
int gpd__store_tasks_get(gp_store *st, uint64_t id, gpd__task_rec **tasks, int *n, gpd__err *e);
void gpd__task_recs_free(gpd__task_rec *tasks, int n);

/* An event in a workload's history. */
typedef struct gpd__event {
    int64_t ts_ms;
    char kind[32];
    char message[512];
} gpd__event;

int gpd__store_events(gp_store *st, uint64_t id, int (*fn)(const gpd__event *ev, void *arg),
                      void *arg, gpd__err *e);

typedef struct gpd__attempt {
    int32_t attempt;
    char node[GP_NAME_MAX + 1];
    int64_t started_ms, ended_ms; /* -1 if not (yet) */
    char outcome[32];             /* a gpd__outcome's name */
    char reason[256];
    int32_t exit_code; /* -1 if none */
} gpd__attempt;

int gpd__store_attempts(gp_store *st, uint64_t id, int (*fn)(const gpd__attempt *a, void *arg),
                        void *arg, gpd__err *e);

/*
 * A batch of changes to workloads, written in one transaction: what the
 * scheduling loop decided in one step. Each change names a workload and sets
 * what its fields say (NULL or -1 leave a column alone).
 */
typedef struct gpd__wl_change {
    uint64_t id;
    int state;                /* gp_wl_state or -1 */
    int32_t attempt;          /* new attempt number, or -1 */
    const char *reason;       /* NULL: keep */
    int32_t exit_code;        /* -2: keep */
    const char *stop_kind;    /* NULL: keep ("" clears) */
    int64_t stop_deadline_ms; /* -1: keep */
    /* Task rows of a new attempt (replacing the old ones), or handles. */
    int ntasks;
    const gpd__task_rec *tasks; /* with ntasks: rows to write */
    int set_handles;            /* 1: only update the handles of these rows */
    /* Attempt bookkeeping. */
    int attempt_begin; /* 1: insert attempt row (attempt, node) */
    const char *attempt_node;
    int attempt_started; /* 1: set started_ms of the current attempt */
    int attempt_end;     /* gpd__outcome that closes the current attempt, or -1 */
    /* An event to add. */
    int event; /* gpd__event_kind, or -1: none */
    const char *event_msg;
} gpd__wl_change;

void gpd__wl_change_init(gpd__wl_change *c, uint64_t id);
/* Fills c as gpd__wl_change_init does, for workload id moving to state st
 * (-1: keeping its state) with the event kind and msg; reason is its new
 * reason (NULL: keep). The caller sets any other field. */
void gpd__wl_change_event(gpd__wl_change *c, uint64_t id, int st, const char *reason,
                          gpd__event_kind kind, const char *msg);

int gpd__store_wl_apply(gp_store *st, const gpd__wl_change *c, int n, gpd__err *e);

/* ---- Queues and tokens (store-admin.c) ---- */

/* Queues in creation order (parents before children). Stores q[0..n), all
 * in one transaction or none. */
int gpd__store_queue_put(gp_store *st, const gp_queue_spec *q, size_t n, gpd__err *e);
/* Deletes the queue and, with it, the tokens whose scope names it (but the
 * admins'): a queue made again with its name is not theirs. */
int gpd__store_queue_delete(gp_store *st, const char *name, gpd__err *e);
int gpd__store_queues(gp_store *st, int (*fn)(const gp_queue_spec *q, void *arg), void *arg,
                      gpd__err *e);

/* Every queue's spec, in creation order: q[0..n), which the caller frees. */
typedef struct gpd__queue_specs {
    gp_queue_spec *q;
    size_t n;
} gpd__queue_specs;

/* Reads every queue's spec into *out; a list that cannot hold them all is
 * GP_ENOMEM, never a shorter list. On an error *out is empty. */
int gpd__store_queue_specs(gp_store *st, gpd__queue_specs *out, gpd__err *e);
/* The spec of the queue named name in l, or NULL. */
const gp_queue_spec *gpd__queue_spec_find(const gpd__queue_specs *l, const char *name);

/* ---- Sessions the idle policy suspended (store-idle.c) ---- */

/* One session the idle policy suspended, while it stays suspended: its
 * GPUs (milli-GPU, every task's slices), back in the pool from since_ms. */
typedef struct gpd__idle_return {
    uint64_t workload;
    char project[GP_NAME_MAX + 1];
    char user[GP_NAME_MAX + 1];
    int64_t gpu_milli;
    int64_t since_ms;
} gpd__idle_return;

int gpd__store_idle_put(gp_store *st, const gpd__idle_return *r, gpd__err *e);
/* Removes workload's row, if it has one (resumed, deleted). */
int gpd__store_idle_drop(gp_store *st, uint64_t workload, gpd__err *e);
/* *yes: 1 if workload has a row (the policy suspended it, and it stays so). */
int gpd__store_idle_has(gp_store *st, uint64_t workload, int *yes, gpd__err *e);
/* The rows whose GPUs were back in the pool by time by (since_ms <= by), in
 * workload order: *rows malloc'ed (the caller frees it), *n of them; none
 * (NULL, 0) where it fails. */
int gpd__store_idle_returned(gp_store *st, int64_t by, gpd__idle_return **rows, size_t *n,
                             gpd__err *e);

typedef struct gpd__token {
    int64_t id;
    char name[64];
    char user[GP_NAME_MAX + 1];
    char role[16];                   /* admin, dept-admin, researcher */
    char scope[512];                 /* department, or comma-separated projects */
    char unix_user[GP_NAME_MAX + 1]; /* whom its workloads run as (never empty) */
    char hash[65];                   /* SHA-256, hex */
    int64_t created_ms;
} gpd__token;

int gpd__store_token_put(gp_store *st, gpd__token *t, gpd__err *e); /* sets t->id */
int gpd__store_token_delete(gp_store *st, int64_t id, gpd__err *e);
int gpd__store_tokens(gp_store *st, int (*fn)(const gpd__token *t, void *arg), void *arg,
                      gpd__err *e);

/* ---- Usage accounting (store-usage.c) ---- */

struct gpd__usage_row;

/* Adds rows to the buckets they name (creating them), in one transaction. */
int gpd__store_usage_add(gp_store *st, const struct gpd__usage_row *rows, size_t n, gpd__err *e);

/* Forgets minute buckets older than GPD__USAGE_FINE_DAYS and hour buckets
 * older than GPD__USAGE_COARSE_DAYS before now_s. */
int gpd__store_usage_prune(gp_store *st, int64_t now_s, gpd__err *e);

/* One bucket of a usage query: GPU-seconds of key in [ts, ts + step). */
typedef struct gpd__usage_point {
    const char *key;
    int64_t ts;
    double alloc, used, measured, borrowed, lent, returned;
} gpd__usage_point;

/*
 * Sums the buckets of resolution res and kind whose start lies in
 * [from_s, to_s) into steps of step seconds counted from from_s; calls fn per
 * (step, key) in time then key order; fn returns as gpd__store_each's callbacks do.
 */
int gpd__store_usage_query(gp_store *st, int32_t res, int kind, int64_t from_s, int64_t to_s,
                           int64_t step, int (*fn)(const gpd__usage_point *p, void *arg), void *arg,
                           gpd__err *e);

/* ---- The caller of a list read (the store's files) ---- */

/* What a list read's row function hands each item to: the caller's callback,
 * in the member for the item's type, and its argument. The callback returns
 * 0 to go on, a positive number to stop, or a negative GP_E* code to fail
 * the read (out of memory for what it keeps, say): the read then returns that
 * code, never a shorter list, its error naming what it was reading
 * (gpd__store_handed). */
typedef struct gpd__store_each {
    union {
        int (*wl)(const gpd__wl *w, void *arg);
        int (*event)(const gpd__event *ev, void *arg);
        int (*attempt)(const gpd__attempt *a, void *arg);
        int (*queue)(const gp_queue_spec *q, void *arg);
        int (*token)(const gpd__token *t, void *arg);
        int (*usage)(const gpd__usage_point *p, void *arg);
    } fn;
    void *arg;
} gpd__store_each;

/* One row of a list read: reads s's row into an item and returns what each's
 * callback returns for it. */
typedef int (*gpd__store_item)(sqlite3_stmt *s, const gpd__store_each *each);

/* What a list read makes of what the callback returned for an item: 0 (go
 * on), 1 (stop), or the callback's negative code, e filled as "out of
 * memory listing tokens" (what: "listing tokens"). */
int gpd__store_handed(int rc, const char *what, gpd__err *e);

/* A list read: gpd__store_select with item called on each row, which stops
 * where the callback returned a positive number and fails where it returned
 * a negative code (gpd__store_handed). */
int gpd__store_list(gp_store *st, gpd__err *e, const char *what, gpd__store_item item,
                    gpd__store_each each, const char *sql, const char *kinds, ...);

#endif /* GP_STORE_H */
