/*
 * bench-api.c — gpupoold's API under load on loopback: submissions per second
 * with durable (group) commits, from concurrent keep-alive clients; the p99
 * latency of listing 100 workloads out of many; the daemon's resident memory
 * with that many workloads stored. Prints figures (medians of runs), not
 * pass/fail. GP_BENCH_WORKLOADS sets the store size (default 100000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-daemon.h"

#define CLIENTS 16

static long rss_kb(int pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

int main(void) {
    int total = getenv("GP_BENCH_WORKLOADS") ? atoi(getenv("GP_BENCH_WORKLOADS")) : 100000;
    const char *build = getenv("GP_BUILD") ? getenv("GP_BUILD") : "build";
    bench_daemon d;
    if (bench_make_dir(&d, "bench-api") < 0)
        return 1;
    if (bench_start_daemon(&d, build) < 0 || bench_pending_project(&d) < 0) {
        bench_stop_daemon(&d, 1);
        bench_remove_dir(&d);
        return 1;
    }

    /* Submissions: five runs of a fifth each; the median rate. */
    double rates[5];
    int rc = 0;
    for (int r = 0; r < 5 && rc == 0; r++)
        rc = (rates[r] = bench_submit_rate(&d, CLIENTS, total / 5)) < 0;
    if (rc == 0)
        printf("api: submissions/s (durable, group commit, %d clients): %.0f (median of 5 runs of "
               "%d)\n",
               CLIENTS, bench_median(rates, 5), total / 5);

    /* Listing 100 out of all of them: p99 of 500 requests at spread offsets,
     * on a fresh connection (the daemon closes connections idle for long). */
    gp_http_conn *c = rc == 0 ? bench_connect(&d, 0) : NULL;
    double lat[500];
    for (int i = 0; c && i < 500 && rc == 0; i++) {
        char p[128];
        snprintf(p, sizeof p, "/api/v1/workloads?limit=100&after=%d", (i * 197) % (total - 100));
        double t0 = bench_now_s();
        rc = bench_call(&d, c, "GET", p, NULL, NULL, 0) != 200;
        lat[i] = (bench_now_s() - t0) * 1000;
    }
    if (c && rc == 0) {
        qsort(lat, 500, sizeof lat[0], bench_cmp_double);
        printf("api: list 100 of %d workloads: p50 %.2f ms, p99 %.2f ms\n", total, lat[250],
               lat[494]);
        printf("api: daemon resident memory with %d workloads stored (all pending): %.1f MiB\n",
               total, rss_kb(d.pid) / 1024.0);
    }
    if (c)
        gp_http_close(c);
    else
        rc = 1;
    bench_stop_daemon(&d, 1);
    return bench_remove_dir(&d) < 0 || rc ? 1 : 0;
}
