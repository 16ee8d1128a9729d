/*
 * bench-daemon.h — what the daemon's benchmark programs share: a monotonic
 * clock, reading the one-line files gpupoold writes (its address, the admin
 * token), starting and stopping a gpupoold of the build on a data directory,
 * one API call with the admin token, a project whose submissions stay
 * pending, durable submissions per second from keep-alive clients, and
 * sorting latencies and taking medians. Header-only: each bench program is
 * one file linked on its own (with libgpcommon for the HTTP client).
 */
#ifndef GP_BENCH_DAEMON_H
#define GP_BENCH_DAEMON_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/httpc.h"

/* One gpupoold started by a bench program, on a data directory of its own. */
typedef struct bench_daemon {
    const char *prog; /* the bench program's name, for messages */
    char dir[64];     /* the data directory */
    char server[128]; /* "http://127.0.0.1:PORT" */
    char token[128];  /* the admin token */
    pid_t pid;        /* -1 when not running */
    int holder;       /* the workload holding the bench project's limit; 0: none */
} bench_daemon;

static inline double bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first line of path into buf, without its newline; -1 if unreadable. */
static inline int bench_read_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return ok ? 0 : -1;
}

/* Makes a fresh data directory /tmp/gpupool-bench.XXXXXX for d (prog names
 * the program in messages); -1 if it cannot. */
static inline int bench_make_dir(bench_daemon *d, const char *prog) {
    memset(d, 0, sizeof *d);
    d->prog = prog;
    d->pid = -1;
    snprintf(d->dir, sizeof d->dir, "/tmp/gpupool-bench.XXXXXX");
    if (!mkdtemp(d->dir)) {
        fprintf(stderr, "%s: cannot make a data directory in /tmp\n", prog);
        return -1;
    }
    return 0;
}

/* Starts build/gpupoold on d->dir (stderr to /dev/null, killed with its
 * parent) and waits until it serves: fills d->server and d->token. Returns
 * 0, or -1 (said on stderr) if it did not come up in a minute. */
static inline int bench_start_daemon(bench_daemon *d, const char *build) {
    char bin[512], path[600];
    snprintf(bin, sizeof bin, "%s/gpupoold", build);
    snprintf(path, sizeof path, "%s/gpupoold.addr", d->dir);
    unlink(path);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!freopen("/dev/null", "w", stderr))
            _exit(126);
        /* The benchmarks may run as root on a development machine; the one
         * workload that runs (bench_pending_project's holder) is a sleep. */
        /* Every submission is the admin's, pending: the per-user bound on
         * pending workloads (1,000 by default) is lifted. */
        execl(bin, bin, "--data-dir", d->dir, "--listen", "127.0.0.1:0", "--period", "2s",
              "--allow-root-workloads", "--max-pending-per-user", "100000000", (char *)NULL);
        _exit(127);
    }
    d->pid = pid;
    for (int i = 0; i < 600 && bench_read_line(path, d->server, sizeof d->server) < 0; i++)
        usleep(100000);
    snprintf(path, sizeof path, "%s/admin.token", d->dir);
    if (pid < 0 || bench_read_line(path, d->token, sizeof d->token) < 0) {
        fprintf(stderr, "%s: gpupoold (%s) did not start\n", d->prog, bin);
        return -1;
    }
    return 0;
}

/* One request with the admin token on c. Returns the status, or -1 on a
 * transport error (said on stderr). With body_out, the answer's body is
 * copied there (at most len bytes, NUL-terminated). */
static inline int bench_call(const bench_daemon *d, gp_http_conn *c, const char *method,
                             const char *path, const char *body, char *body_out, size_t len) {
    gp_http_resp r;
    char err[256];
    if (gp_http_send(c, method, path, d->token, body, body ? strlen(body) : 0, &r, err,
                     sizeof err) < 0) {
        fprintf(stderr, "%s: %s %s: %s\n", d->prog, method, path, err);
        return -1;
    }
    if (body_out && len)
        snprintf(body_out, len, "%s", r.body);
    int status = r.status;
    gp_http_resp_free(&r);
    return status;
}

/* A connection to d's API, or NULL (said on stderr). */
static inline gp_http_conn *bench_connect(const bench_daemon *d, int timeout_ms) {
    gp_http_conn *c;
    char err[256];
    if (gp_http_connect(d->server, timeout_ms, &c, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", d->prog, err);
        return NULL;
    }
    return c;
}

/* Starts one workload in project (limited to one GPU by the caller) that
 * holds that GPU (a sleep), so that every later submission to the project
 * stays pending with the reason "at its limit", as a busy queue's backlog
 * does (a project limited to 0 GPUs would refuse them: they could never
 * run). Returns 0 once the holder runs, or -1 (said on stderr).
 * bench_stop_daemon deletes the holder. */
static inline int bench_hold_project(bench_daemon *d, const char *project) {
    gp_http_conn *c = bench_connect(d, 0);
    char body[256], ans[4096], path[64];
    if (!c)
        return -1;
    snprintf(body, sizeof body,
             "{\"project\":\"%s\",\"gpu\":1,\"name\":\"holder\",\"command\":[\"sleep\","
             "\"86400\"]}",
             project);
    int ok = bench_call(d, c, "POST", "/api/v1/workloads", body, ans, sizeof ans) == 201;
    const char *id = ok ? strstr(ans, "\"id\":") : NULL;
    d->holder = id ? atoi(id + 5) : 0;
    snprintf(path, sizeof path, "/api/v1/workloads/%d", d->holder);
    ok = d->holder > 0;
    for (int i = 0; ok && i < 600; i++) {
        ok = bench_call(d, c, "GET", path, NULL, ans, sizeof ans) == 200;
        if (ok && strstr(ans, "\"state\":\"running\""))
            break;
        usleep(100000);
    }
    gp_http_close(c);
    if (!ok || !strstr(ans, "\"state\":\"running\"")) {
        fprintf(stderr, "%s: the workload holding project %s's GPU did not start\n", d->prog,
                project);
        return -1;
    }
    return 0;
}

/* The department "dept" and its project "bench", where bench_submit_rate
 * submits: limited to one GPU, held (bench_hold_project). Returns 0 or -1. */
static inline int bench_pending_project(bench_daemon *d) {
    gp_http_conn *c = bench_connect(d, 0);
    int ok = c &&
             bench_call(d, c, "POST", "/api/v1/queues", "{\"name\":\"dept\"}", NULL, 0) == 201 &&
             bench_call(d, c, "POST", "/api/v1/queues",
                        "{\"name\":\"bench\",\"parent\":\"dept\",\"limit\":{\"gpu\":1}}", NULL,
                        0) == 201;
    if (c)
        gp_http_close(c);
    if (!ok)
        fprintf(stderr, "%s: cannot make the bench project\n", d->prog);
    return ok ? bench_hold_project(d, "bench") : -1;
}

/* Stops gpupoold (SIGTERM) and waits for it; with delete_holder, deletes
 * the holder first (otherwise it keeps running, and a gpupoold started
 * again on the directory finds it). Leaves the data directory. */
static inline void bench_stop_daemon(bench_daemon *d, int delete_holder) {
    if (d->pid <= 0)
        return;
    gp_http_conn *c = d->holder && delete_holder ? bench_connect(d, 0) : NULL;
    if (c) {
        char path[64];
        snprintf(path, sizeof path, "/api/v1/workloads/%d", d->holder);
        if (bench_call(d, c, "DELETE", path, NULL, NULL, 0) == 200)
            d->holder = 0;
        gp_http_close(c);
    }
    if (d->holder && delete_holder)
        fprintf(stderr, "%s: could not delete workload %d (a sleep)\n", d->prog, d->holder);
    kill(d->pid, SIGTERM);
    waitpid(d->pid, NULL, 0);
    d->pid = -1;
}

/* Removes d's data directory; -1 if that failed. */
static inline int bench_remove_dir(const bench_daemon *d) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", d->dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- Durable submissions per second ------------------------------------ */

typedef struct bench_submitter {
    const bench_daemon *d;
    int n, failed;
    pthread_t th;
} bench_submitter;

static inline void *bench_submit_loop(void *arg) {
    bench_submitter *w = arg;
    gp_http_conn *c = bench_connect(w->d, 30000);
    w->failed = c == NULL;
    const char *body = "{\"project\":\"bench\",\"gpu\":1,\"command\":[\"true\"]}";
    for (int i = 0; i < w->n && !w->failed; i++)
        if (bench_call(w->d, c, "POST", "/api/v1/workloads", body, NULL, 0) != 201)
            w->failed = 1;
    if (c)
        gp_http_close(c);
    return NULL;
}

/* Submissions per second to bench_pending_project's project from clients
 * keep-alive clients (at most 64), total / clients each: each is durable
 * before it is answered. Returns -1 if one failed (said on stderr). */
static inline double bench_submit_rate(const bench_daemon *d, int clients, int total) {
    bench_submitter w[64];
    if (clients > 64)
        clients = 64;
    double t0 = bench_now_s();
    for (int i = 0; i < clients; i++) {
        w[i] = (bench_submitter){.d = d, .n = total / clients};
        pthread_create(&w[i].th, NULL, bench_submit_loop, &w[i]);
    }
    int failed = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(w[i].th, NULL);
        failed |= w[i].failed;
    }
    if (failed)
        fprintf(stderr, "%s: a submission failed\n", d->prog);
    return failed ? -1 : (total / clients) * clients / (bench_now_s() - t0);
}

/* ---- Figures ------------------------------------------------------------ */

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of the n values at v (sorted in place). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n ? (v[(n - 1) / 2] + v[n / 2]) / 2 : 0;
}

#endif /* GP_BENCH_DAEMON_H */
