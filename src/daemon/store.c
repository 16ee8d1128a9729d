/*
 * store.c — the SQLite connection layer of store.h: opening the file with the
 * settings durability needs (WAL, synchronous=FULL), the group-commit writer
 * thread (writes are calls into its mailbox, mailbox.h: it commits all those
 * waiting in one transaction), the pool of read connections and the mapping of SQLite results to
 * GP_E* codes with sentences an operator can act on.
 */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/mailbox.h"
#include "daemon/store.h"

#define READERS_MAX 16

typedef struct wreq {
    gpd__letter l;
    gpd__store_op op;
    void *arg;
    gpd__err *e; /* its code in l.rc */
} wreq;

struct gp_store {
    char path[1024];
    sqlite3 *wdb;
    pthread_t writer;
    gpd__mailbox box; /* the writes waiting for the writer */
    /* Idle read connections. */
    pthread_mutex_t rmu;
    sqlite3 *readers[READERS_MAX];
    int nreaders;
};

int gpd__store_fail(sqlite3 *db, int rc, gpd__err *e, const char *what) {
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    /* A write that fails for want of space is sometimes reported as an I/O
     * error (creating the journal, for one); the system's errno says which. */
    if ((rc & 0xff) == SQLITE_IOERR && db && sqlite3_system_errno(db) == ENOSPC)
        rc = SQLITE_FULL;
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return gpd__fail(e, GP_ENOSPC, "", "%s: the store's disk is full (%s); nothing was changed",
                         what, msg);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
        return gpd__fail(e, GP_EROFS, "",
                         "%s: the store cannot be written (%s); nothing was changed", what, msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return gpd__fail(e, GP_ECORRUPT, "", "%s: the store file is corrupt (%s)", what, msg);
    case SQLITE_NOMEM:
        return gpd__fail(e, GP_ENOMEM, "", "%s: out of memory", what);
    case SQLITE_CONSTRAINT:
        return gpd__fail(e, GP_EEXIST, "", "%s: %s", what, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return gpd__fail(e, GP_EBUSY, "", "%s: the store is busy (%s)", what, msg);
    default:
        return gpd__fail(e, GP_EIO, "", "%s: store error: %s", what, msg);
    }
}

int gpd__store_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, gpd__err *e) {
    int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        return gpd__store_fail(db, rc, e, "preparing a query");
    return 0;
}

/* A column's bytes and their count, as stored: read as a blob, never
 * converted, so that reading allocates nothing. sqlite3_column_text makes a
 * text NUL-terminated, which may allocate, and answers NULL when that fails,
 * as for a NULL column: a row read so was taken for one whose text is empty
 * (a task's binding for a broken one, and its running task stopped). */
static const char *column_bytes(sqlite3_stmt *s, int col, size_t *n) {
    const void *t = sqlite3_column_blob(s, col);
    *n = t != NULL ? (size_t)sqlite3_column_bytes(s, col) : 0;
    return t != NULL ? t : "";
}

void gpd__store_text(char *dst, size_t len, sqlite3_stmt *s, int col) {
    size_t n;
    const char *t = column_bytes(s, col, &n);
    snprintf(dst, len, "%.*s", (int)(n < INT32_MAX ? n : INT32_MAX), t);
}

char *gpd__store_dup(sqlite3_stmt *s, int col, const char *null) {
    size_t n = strlen(null);
    const char *t = null;
    if (sqlite3_column_type(s, col) != SQLITE_NULL) /* asked first: reading converts */
        t = column_bytes(s, col, &n);
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, t, n);
        d[n] = '\0';
    }
    return d;
}

/* Binds the int64 / text arguments ap ("i" and "t" in kinds) to s. */
static void bind_args(sqlite3_stmt *s, const char *kinds, va_list ap) {
    for (int i = 0; kinds[i]; i++)
        if (kinds[i] == 'i')
            sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
        else
            sqlite3_bind_text(s, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
}

/* Prepares sql on db into *s and binds the arguments ap as bind_args does. */
static int prepare_args(sqlite3 *db, const char *sql, const char *kinds, va_list ap,
                        sqlite3_stmt **s, gpd__err *e) {
    int rc = gpd__store_prepare(db, sql, s, e);
    if (rc == 0)
        bind_args(*s, kinds, ap);
    return rc;
}

int gpd__store_run(sqlite3 *db, gpd__err *e, const char *what, const char *sql, const char *kinds,
                   ...) {
    sqlite3_stmt *s;
    va_list ap;
    va_start(ap, kinds);
    int rc = prepare_args(db, sql, kinds, ap, &s, e);
    va_end(ap);
    if (rc < 0)
        return rc;
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : gpd__store_fail(db, rc, e, what);
}

int gpd__store_rows(sqlite3 *db, sqlite3_stmt *s, const char *what, gpd__store_row row, void *arg,
                    gpd__err *e) {
    int rc = 0, step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW)
        if ((rc = row(s, arg, e)) != 0)
            break;
    if (rc == 0 && step != SQLITE_DONE)
        rc = gpd__store_fail(db, step, e, what);
    sqlite3_finalize(s);
    return rc < 0 ? rc : 0;
}

int gpd__store_int_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    (void)e;
    *(int64_t *)arg = sqlite3_column_int64(s, 0);
    return 1;
}

static int reader(gp_store *st, sqlite3 **db, gpd__err *e);

/* gpd__store_select with its binds in ap. */
static int select_args(gp_store *st, gpd__err *e, const char *what, gpd__store_row row, void *arg,
                       const char *sql, const char *kinds, va_list ap) {
    sqlite3 *db;
    sqlite3_stmt *s;
    int rc = reader(st, &db, e);
    if (rc < 0)
        return rc;
    rc = prepare_args(db, sql, kinds, ap, &s, e);
    if (rc == 0)
        rc = gpd__store_rows(db, s, what, row, arg, e);
    gpd__store_release(st, db);
    return rc;
}

int gpd__store_select(gp_store *st, gpd__err *e, const char *what, gpd__store_row row, void *arg,
                      const char *sql, const char *kinds, ...) {
    va_list ap;
    va_start(ap, kinds);
    int rc = select_args(st, e, what, row, arg, sql, kinds, ap);
    va_end(ap);
    return rc;
}

/* gpd__store_list's item reader and the caller it hands items to. */
typedef struct list_arg {
    gpd__store_item item;
    const gpd__store_each *each;
    const char *what;
} list_arg;

static int list_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    const list_arg *l = arg;
    return gpd__store_handed(l->item(s, l->each), l->what, e);
}

int gpd__store_handed(int rc, const char *what, gpd__err *e) {
    if (rc < 0)
        return gpd__fail(e, rc, "", "%s %s", gp_strerror(rc), what);
    return rc != 0;
}

int gpd__store_list(gp_store *st, gpd__err *e, const char *what, gpd__store_item item,
                    gpd__store_each each, const char *sql, const char *kinds, ...) {
    list_arg l = {item, &each, what};
    va_list ap;
    va_start(ap, kinds);
    int rc = select_args(st, e, what, list_row, &l, sql, kinds, ap);
    va_end(ap);
    return rc;
}

/* Opens one connection with the settings every connection shares. */
static int open_conn(const char *path, int create, sqlite3 **out, gpd__err *e) {
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &db, flags, NULL);
    if (rc != SQLITE_OK) {
        int code = gpd__store_fail(db, rc, e, "opening the store");
        if (code == GP_EROFS || code == GP_EIO)
            gpd__fail(e, code, "", "cannot open the store %s for writing: %s (errno %d: %s)", path,
                      db ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                      db ? sqlite3_system_errno(db) : 0,
                      strerror(db ? sqlite3_system_errno(db) : 0));
        sqlite3_close(db);
        return code;
    }
    sqlite3_busy_timeout(db, 10000);
    sqlite3_extended_result_codes(db, 1);
    *out = db;
    return 0;
}

static int exec(sqlite3 *db, const char *sql, gpd__err *e, const char *what) {
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : gpd__store_fail(db, rc, e, what);
}

/* Rolls back the transaction the writer has open, if any. One whose rollback
 * fails stays open and is never committed: the next batch tries again before
 * its BEGIN, which fails while it is open, and closing the store ends it. */
static void end_open(sqlite3 *db) {
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

/* Runs one batch: BEGIN, each op in its own savepoint (an op that fails is
 * rolled back to it, alone), COMMIT. If a savepoint statement or the commit
 * fails, the whole transaction is rolled back and every op of the batch
 * fails, those that failed on their own with their error and the others
 * with the store's: no part of the batch is stored, and no caller is told it
 * is (a savepoint that could not be set or rolled back to would have let a
 * failed op's partial changes be committed with the rest). */
static void run_batch(gp_store *st, gpd__letter *batch) {
    gpd__err berr = {0};
    end_open(st->wdb);
    int brc = exec(st->wdb, "BEGIN IMMEDIATE", &berr, "starting a transaction");
    for (gpd__letter *l = batch; l && brc == 0; l = l->next) {
        wreq *r = (wreq *)l;
        brc = gpd__store_run(st->wdb, &berr, "setting a write's savepoint", "SAVEPOINT op", "");
        if (brc < 0)
            break;
        r->l.rc = r->op(st->wdb, r->arg, r->e);
        if (r->l.rc < 0)
            brc =
                gpd__store_run(st->wdb, &berr, "rolling back a failed write", "ROLLBACK TO op", "");
        if (brc == 0)
            brc = gpd__store_run(st->wdb, &berr, "releasing a write's savepoint", "RELEASE op", "");
    }
    if (brc == 0)
        brc = exec(st->wdb, "COMMIT", &berr, "committing");
    if (brc < 0) {
        end_open(st->wdb);
        for (gpd__letter *l = batch; l; l = l->next) {
            wreq *r = (wreq *)l;
            if (r->l.rc >= 0) {
                r->l.rc = brc;
                if (r->e)
                    *r->e = berr;
            }
        }
    }
}

static void *writer_main(void *arg) {
    gp_store *st = arg;
    gpd__letter *batch;
    while (gpd__mailbox_take(&st->box, -1, SIZE_MAX, &batch) != GPD__MAIL_CLOSED) {
        run_batch(st, batch);
        gpd__mailbox_answer_all(&st->box, batch);
    }
    return NULL;
}

int gpd__store_write(gp_store *st, gpd__store_op op, void *arg, gpd__err *e) {
    wreq r = {.op = op, .arg = arg, .e = e};
    return gpd__mailbox_call(&st->box, &r.l, e);
}

/* Borrows a read connection (never NULL unless out of memory: then
 * GP_ENOMEM). */
static int reader(gp_store *st, sqlite3 **db, gpd__err *e) {
    pthread_mutex_lock(&st->rmu);
    if (st->nreaders > 0) {
        *db = st->readers[--st->nreaders];
        pthread_mutex_unlock(&st->rmu);
        return 0;
    }
    pthread_mutex_unlock(&st->rmu);
    return open_conn(st->path, 0, db, e);
}

int gpd__store_query(gp_store *st, const char *sql, sqlite3 **db, sqlite3_stmt **s, gpd__err *e) {
    int rc = reader(st, db, e);
    if (rc < 0)
        return rc;
    if ((rc = gpd__store_prepare(*db, sql, s, e)) < 0) {
        gpd__store_release(st, *db);
        *db = NULL;
    }
    return rc;
}

void gpd__store_release(gp_store *st, sqlite3 *db) {
    if (!db)
        return;
    pthread_mutex_lock(&st->rmu);
    if (st->nreaders < READERS_MAX) {
        st->readers[st->nreaders++] = db;
        db = NULL;
    }
    pthread_mutex_unlock(&st->rmu);
    if (db)
        sqlite3_close(db);
}

int gpd__store_open(const char *path, gp_store **out, gpd__err *e) {
    gp_store *st = calloc(1, sizeof *st);
    if (!st)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory opening the store");
    snprintf(st->path, sizeof st->path, "%s", path);
    int rc = open_conn(path, 1, &st->wdb, e);
    if (rc < 0) {
        free(st);
        return rc;
    }
    /* WAL lets readers run beside the writer; synchronous=FULL makes every
     * COMMIT reach the disk before the callers of its batch are answered. */
    if ((rc = exec(st->wdb, "PRAGMA journal_mode=WAL", e, "switching the store to WAL")) < 0 ||
        (rc = exec(st->wdb, "PRAGMA synchronous=FULL", e, "setting synchronous")) < 0 ||
        (rc = exec(st->wdb, "PRAGMA foreign_keys=ON", e, "enabling foreign keys")) < 0 ||
        (rc = gpd__store_migrate(st->wdb, e)) < 0) {
        sqlite3_close(st->wdb);
        free(st);
        return rc;
    }
    /* Writing must work now, not at the first submission: probe it. */
    if ((rc = exec(st->wdb, "BEGIN IMMEDIATE; UPDATE schema_version SET version=version; COMMIT", e,
                   "writing to the store")) < 0) {
        sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(st->wdb);
        free(st);
        return rc;
    }
    pthread_mutex_init(&st->rmu, NULL);
    if (gpd__mailbox_start(&st->box, &st->writer, writer_main, st) < 0) {
        pthread_mutex_destroy(&st->rmu);
        sqlite3_close(st->wdb);
        free(st);
        return gpd__fail(e, GP_ESYS, "", "cannot start the store's writer thread");
    }
    *out = st;
    return 0;
}

void gpd__store_close(gp_store *st) {
    if (!st)
        return;
    /* Writes not yet taken are refused ("gpupoold is stopping"); those of
     * the batch under way are committed or failed as usual. */
    gpd__mailbox_stop(&st->box, st->writer); /* writes are calls: nothing comes back */
    for (int i = 0; i < st->nreaders; i++)
        sqlite3_close(st->readers[i]);
    sqlite3_close(st->wdb);
    pthread_mutex_destroy(&st->rmu);
    free(st);
}
