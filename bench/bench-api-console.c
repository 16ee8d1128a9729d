/*
 * bench-api-console.c — the API calls behind each page of the web console,
 * timed on a store the size of a busy year: GP_BENCH_WORKLOADS workloads
 * (default 100,000; one in a hundred pending, the rest finished) and a year
 * of hourly usage history (two days of minute buckets) written by
 * bench/seed-history.sh. Prints p50 and p99 of each call over 50 requests
 * on one keep-alive connection, and whether each page's slowest call answers
 * under 200 ms. Figures, not pass/fail: docs/console.md keeps them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-daemon.h"

#define RUNS 50

static bench_daemon d;

/* One call; exits on a transport error or an unexpected status. */
static void call(gp_http_conn *c, const char *m, const char *p, const char *body) {
    char ans[512];
    int st = bench_call(&d, c, m, p, body, ans, sizeof ans);
    if (st < 0 || st >= 300) {
        if (st >= 300)
            fprintf(stderr, "bench-api-console: %s %s: status %d: %s\n", m, p, st, ans);
        exit(1);
    }
}

static void start(const char *build) {
    if (bench_start_daemon(&d, build) < 0)
        exit(1);
}

static void run(const char *cmd) {
    if (system(cmd) != 0) {
        fprintf(stderr, "bench-api-console: failed: %s\n", cmd);
        exit(1);
    }
}

int main(void) {
    int total = getenv("GP_BENCH_WORKLOADS") ? atoi(getenv("GP_BENCH_WORKLOADS")) : 100000;
    const char *build = getenv("GP_BUILD") ? getenv("GP_BUILD") : "build";
    char cmd[1024];
    if (total < 200 || bench_make_dir(&d, "bench-api-console") < 0)
        return 1;

    /* The queue tree of seed-history.sh, a project whose limit (one GPU,
     * held by a workload that runs throughout) keeps work pending, and one
     * real submission whose row the others copy. */
    start(build);
    gp_http_conn *c = bench_connect(&d, 0);
    if (!c)
        return 1;
    static const char *const queues[] = {
        "{\"name\":\"research\",\"deserved\":{\"gpu\":4}}",
        "{\"name\":\"nlp\",\"parent\":\"research\",\"deserved\":{\"gpu\":2}}",
        "{\"name\":\"vision\",\"parent\":\"research\",\"deserved\":{\"gpu\":2}}",
        "{\"name\":\"ops\",\"deserved\":{\"gpu\":4}}",
        "{\"name\":\"infra\",\"parent\":\"ops\",\"limit\":{\"gpu\":1}}",
    };
    for (size_t i = 0; i < sizeof queues / sizeof queues[0]; i++)
        call(c, "POST", "/api/v1/queues", queues[i]);
    if (bench_hold_project(&d, "infra") < 0)
        return 1;
    call(c, "POST", "/api/v1/workloads",
         "{\"project\":\"infra\",\"command\":[\"sleep\",\"1\"],\"gpu\":1,\"name\":\"job\"}");
    gp_http_close(c);
    bench_stop_daemon(&d, 0);

    double t0 = bench_now_s();
    snprintf(cmd, sizeof cmd,
             "sqlite3 %s/gpupool.db >/dev/null <<'SQL'\n"
             "PRAGMA busy_timeout = 10000;\n"
             "WITH RECURSIVE n(i) AS (SELECT 3 UNION ALL SELECT i + 1 FROM n WHERE i < %d)\n"
             "INSERT INTO workloads(name, project, user, state, attempt, submitted_ms,"
             " updated_ms, request, spec, reason, exit_code)\n"
             "SELECT 'job-' || i, project, 'user-' || (i %% 50),"
             " CASE WHEN i %% 100 = 0 THEN 0 ELSE 5 END, CASE WHEN i %% 100 = 0 THEN 0 ELSE 1 END,"
             " submitted_ms - (%d - i) * 300000, updated_ms, request, spec,"
             " CASE WHEN i %% 100 = 0 THEN '' ELSE 'every task exited with status 0' END,"
             " CASE WHEN i %% 100 = 0 THEN -1 ELSE 0 END FROM n, workloads WHERE id = 2;\n"
             "SQL",
             d.dir, total, total);
    run(cmd);
    snprintf(cmd, sizeof cmd, "sh bench/seed-history.sh %s/gpupool.db 365", d.dir);
    run(cmd);
    double seeded = bench_now_s() - t0;

    t0 = bench_now_s();
    start(build);
    double restart = bench_now_s() - t0;
    if (!(c = bench_connect(&d, 0)))
        return 1;
    printf("console: store with %d workloads (%d pending) and a year of hourly usage, written in "
           "%.1f s; gpupoold restarted on it in %.1f s\n",
           total, total / 100, seeded, restart);

    /* What each page asks, as console.js asks it. */
    static const struct {
        const char *page, *path;
    } calls[] = {
        {"overview", "/api/v1/nodes"},
        {"overview", "/api/v1/queues"},
        {"overview", "/api/v1/workloads?state=pending&limit=10"},
        {"overview", "/api/v1/usage?by=queue&from=1d&step=15m"},
        {"overview", "/api/v1/usage?by=queue&from=7d&step=2h"},
        {"workloads", "/api/v1/workloads?limit=100&state=active"},
        {"workloads", "/api/v1/workloads?limit=100&after=50000"},
        {"workloads", "/api/v1/workloads?limit=100&project=nlp&user=user-7"},
        {"workload", "/api/v1/workloads/1"},
        {"workload", "/api/v1/workloads/1/events"},
        {"plan", "/api/v1/usage?by=queue&step=1h&from=7d"},
        {"plan", "/api/v1/usage?by=queue&step=1h&from=365d"},
        {"usage", "/api/v1/usage?by=user&from=365d&step=1d"},
        {"usage", "/api/v1/usage?by=node&from=30d"},
    };
    double worst = 0;
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
        double lat[RUNS];
        for (int i = 0; i < RUNS; i++) {
            double s = bench_now_s();
            call(c, "GET", calls[k].path, NULL);
            lat[i] = (bench_now_s() - s) * 1000;
        }
        qsort(lat, RUNS, sizeof lat[0], bench_cmp_double);
        double p99 = lat[RUNS * 99 / 100];
        if (p99 > worst)
            worst = p99;
        printf("console: %-9s GET %-52s p50 %7.2f ms  p99 %7.2f ms\n", calls[k].page, calls[k].path,
               lat[RUNS / 2], p99);
    }
    printf("console: slowest call p99 %.2f ms: %s 200 ms\n", worst, worst < 200 ? "under" : "OVER");
    gp_http_close(c);
    bench_stop_daemon(&d, 1);
    return bench_remove_dir(&d) < 0 ? 1 : 0;
}
