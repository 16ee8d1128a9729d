/*
 * failstep.c — preloaded into gpupoold by the daemon's tests of store errors
 * (test-store-*.sh): makes SQLite's sqlite3_step fail for chosen statements,
 * as a store that is out of memory, busy or cannot read its file would, a
 * black-box way without a hook in the daemon itself. Statements run by
 * sqlite3_exec are stepped through it too where SQLite's own calls go
 * through the exported symbol, as Debian's libsqlite3's do. By environment:
 *
 *   GPD_TEST_FAIL_STEP=SQL[|SQL...]  the statements whose text begins with
 *                               one of the SQL prefixes (separated by '|');
 *   GPD_TEST_FAIL_STEP_NTH=N    from the Nth step of those on (1 unless set),
 *                               counted over all the prefixes, each fails,
 *                               without running (only the first M of them
 *                               where GPD_TEST_FAIL_STEP_COUNT=M is set),
 *                               with
 *   GPD_TEST_FAIL_STEP_RC=RC    SQLite's result code RC (SQLITE_NOMEM, 7,
 *                               unless set).
 *
 * And one delay, to widen a window between a write and what follows it:
 *
 *   GPD_TEST_SLOW_COMMIT_AFTER=SQL[|SQL...]  the COMMIT of a transaction
 *                               that stepped one of those statements returns
 *   GPD_TEST_SLOW_COMMIT_MS=MS  MS milliseconds (2000 unless set) after it
 *                               committed: what it wrote can be read, and
 *                               its writers are answered only then.
 *
 * And one wait, to hold gpupoold between what it did and its record of it:
 *
 *   GPD_TEST_SLOW_STEP=SQL[|SQL...]  a step of one of those statements runs
 *   GPD_TEST_SLOW_STEP_MS=MS    MS milliseconds (2000 unless set) late:
 *                               nothing of its transaction is committed
 *                               meanwhile.
 *
 * Every other step goes to SQLite's sqlite3_step.
 */
#include <dlfcn.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long counted; /* steps of the statements named so far */

/* Whether sql begins with one of the '|'-separated prefixes of want. */
static int named(const char *sql, const char *want) {
    for (;;) {
        size_t n = strcspn(want, "|");
        if (n > 0 && strncmp(sql, want, n) == 0)
            return 1;
        if (want[n] == '\0')
            return 0;
        want += n + 1;
    }
}

/* Sleeps the milliseconds environment variable var says (2000 unless set). */
static void wait_ms(const char *var) {
    const char *ms = getenv(var);
    long d = ms != NULL ? strtol(ms, NULL, 10) : 2000;
    struct timespec ts = {d / 1000, d % 1000 * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int sqlite3_step(sqlite3_stmt *s) {
    static int (*real_step)(sqlite3_stmt *);
    static const char *(*real_sql)(sqlite3_stmt *);
    if (real_step == NULL) {
        real_step = (int (*)(sqlite3_stmt *))dlsym(RTLD_NEXT, "sqlite3_step");
        real_sql = (const char *(*)(sqlite3_stmt *))dlsym(RTLD_NEXT, "sqlite3_sql");
    }
    const char *slow = getenv("GPD_TEST_SLOW_COMMIT_AFTER");
    if (slow != NULL && real_sql != NULL) {
        static __thread int stepped; /* one of them, in this thread's transaction */
        const char *sql = real_sql(s);
        if (sql != NULL && strcmp(sql, "COMMIT") == 0 && stepped) {
            stepped = 0;
            int rc = real_step(s);
            wait_ms("GPD_TEST_SLOW_COMMIT_MS");
            return rc;
        }
        if (sql != NULL && named(sql, slow))
            stepped = 1;
    }
    const char *hold = getenv("GPD_TEST_SLOW_STEP");
    const char *hsql = hold != NULL && real_sql != NULL ? real_sql(s) : NULL;
    if (hsql != NULL && named(hsql, hold))
        wait_ms("GPD_TEST_SLOW_STEP_MS");
    const char *want = getenv("GPD_TEST_FAIL_STEP");
    const char *sql = want != NULL && real_sql != NULL ? real_sql(s) : NULL;
    if (sql != NULL && named(sql, want)) {
        const char *nth = getenv("GPD_TEST_FAIL_STEP_NTH");
        const char *rc = getenv("GPD_TEST_FAIL_STEP_RC");
        const char *count = getenv("GPD_TEST_FAIL_STEP_COUNT");
        long k = __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
        long first = nth != NULL ? strtol(nth, NULL, 10) : 1;
        if (k >= first && (count == NULL || k < first + strtol(count, NULL, 10)))
            return rc != NULL ? (int)strtol(rc, NULL, 10) : SQLITE_NOMEM;
    }
    return real_step(s);
}
