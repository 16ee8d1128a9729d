/*
 * bench-api.c — gpupoold's API under load on loopback: submissions per second
 * with durable (group) commits, from concurrent keep-alive clients; the p99
 * latency of listing 100 workloads out of many; the daemon's resident memory
 * with that many workloads stored. Prints figures (medians of runs), not
 * pass/fail. GP_BENCH_WORKLOADS sets the store size (default 100000).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-daemon.h"
#include "common/httpc.h"

#define CLIENTS 16

static char server[128], token[128];

static int call(gp_http_conn *c, const char *m, const char *p, const char *body) {
    gp_http_resp r;
    char err[256];
    int rc = gp_http_send(c, m, p, token, body, body ? strlen(body) : 0, &r, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "bench-api: %s\n", err);
        exit(1);
    }
    int st = r.status;
    gp_http_resp_free(&r);
    return st;
}

typedef struct worker {
    int n;
} worker;

static void *submitter(void *arg) {
    worker *w = arg;
    gp_http_conn *c;
    char err[256];
    if (gp_http_connect(server, 0, &c, err, sizeof err) < 0) {
        fprintf(stderr, "bench-api: %s\n", err);
        exit(1);
    }
    /* The project's limit is 0 GPUs: workloads stay pending, as a queue does. */
    const char *body = "{\"project\":\"bench\",\"gpu\":1,\"command\":[\"true\"]}";
    for (int i = 0; i < w->n; i++)
        if (call(c, "POST", "/api/v1/workloads", body) != 201) {
            fprintf(stderr, "bench-api: a submission failed\n");
            exit(1);
        }
    gp_http_close(c);
    return NULL;
}

static double submit_rate(int total) {
    pthread_t th[CLIENTS];
    worker w[CLIENTS];
    double t0 = bench_now_s();
    for (int i = 0; i < CLIENTS; i++) {
        w[i].n = total / CLIENTS;
        pthread_create(&th[i], NULL, submitter, &w[i]);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(th[i], NULL);
    return (total / CLIENTS) * CLIENTS / (bench_now_s() - t0);
}

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
    char dir[] = "/tmp/gpupool-bench.XXXXXX", path[300];
    if (!mkdtemp(dir))
        return 1;
    pid_t pid = bench_start_daemon(build, dir, server, token);
    if (pid < 0)
        return 1;
    gp_http_conn *c;
    char err[256];
    if (gp_http_connect(server, 0, &c, err, sizeof err) < 0)
        return 1;
    call(c, "POST", "/api/v1/queues", "{\"name\":\"dept\"}");
    call(c, "POST", "/api/v1/queues",
         "{\"name\":\"bench\",\"parent\":\"dept\",\"limit\":{\"gpu\":0}}");

    /* Submissions: five runs of a fifth each; the median rate. */
    double rates[5];
    for (int r = 0; r < 5; r++)
        rates[r] = submit_rate(total / 5);
    qsort(rates, 5, sizeof rates[0], bench_cmp_double);
    printf(
        "api: submissions/s (durable, group commit, %d clients): %.0f (median of 5 runs of %d)\n",
        CLIENTS, rates[2], total / 5);

    /* Listing 100 out of all of them: p99 of 500 requests at spread offsets,
     * on a fresh connection (the daemon closes connections idle for long, as
     * the first one was during the submissions). */
    gp_http_close(c);
    if (gp_http_connect(server, 0, &c, err, sizeof err) < 0)
        return 1;
    double lat[500];
    for (int i = 0; i < 500; i++) {
        char p[128];
        snprintf(p, sizeof p, "/api/v1/workloads?limit=100&after=%d", (i * 197) % (total - 100));
        double t0 = bench_now_s();
        call(c, "GET", p, NULL);
        lat[i] = (bench_now_s() - t0) * 1000;
    }
    qsort(lat, 500, sizeof lat[0], bench_cmp_double);
    printf("api: list 100 of %d workloads: p50 %.2f ms, p99 %.2f ms\n", total, lat[250], lat[494]);
    printf("api: daemon resident memory with %d workloads stored (all pending): %.1f MiB\n", total,
           rss_kb(pid) / 1024.0);
    gp_http_close(c);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    if (system(path) != 0)
        return 1;
    return 0;
}
