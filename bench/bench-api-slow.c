/*
 * bench-api-slow.c — gpupoold's front door under a slow-client attack, on
 * loopback: with GP_BENCH_CONNS (default 10,000) connections held open by
 * an attacker (half of them idle, half trickling a request head one header
 * line every 2 s, and reconnecting whenever the daemon cuts one off), how
 * fast do /api/v1/health and an authenticated list answer (p50, p99 over 1000
 * requests each, every one on a fresh connection, as a monitoring probe or a
 * CLI makes them), and how many durable submissions per second does the API
 * still take, against the same figures without the attack.
 *
 * The attacker's connections come from 200 loopback addresses (127.1.0.x),
 * 50 from each, below the daemon's per-client cap of 64, as from 200 hosts;
 * the measuring clients come from 127.0.0.1. The targets (issue: a front door
 * that slow clients cannot hold): p99 under 100 ms for both requests, and a
 * submission rate of at least 80% of the idle figure. Prints figures and
 * whether the targets are met; it is not a pass/fail test. GP_BENCH_CONNS,
 * GP_BENCH_SUBMISSIONS (per run, default 3200) and GP_BENCH_WARMUP change
 * the sizes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-daemon.h"
#include "common/httpc.h"

#define CLIENTS    16
#define PER_ADDR   50
#define PROBES     250
#define SLOW_EVERY 2.0

static char server[128], token[128];
static int port;

/* ---- The attacker ------------------------------------------------------ */

typedef struct attacker {
    int n;
    int *fd;
    double *next_send;
    volatile int stop;
    long reconnects, failed;
    pthread_t th;
} attacker;

/* Connection i: from 127.1.0.(1 + i / PER_ADDR); odd ones trickle a head. */
static int attack_connect(attacker *a, int i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    char src[32];
    snprintf(src, sizeof src, "127.1.%d.%d", (i / PER_ADDR) / 250, 1 + (i / PER_ADDR) % 250);
    inet_pton(AF_INET, src, &sa.sin_addr);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    if (i % 2 == 1)
        send(fd, "GET /api/v1/health HTTP/1.1\r\n", 29, MSG_NOSIGNAL);
    a->next_send[i] = bench_now_s() + SLOW_EVERY;
    return fd;
}

static void *attack_loop(void *arg) {
    attacker *a = arg;
    struct pollfd *p = calloc((size_t)a->n, sizeof *p);
    while (!a->stop) {
        for (int i = 0; i < a->n; i++) {
            p[i].fd = a->fd[i];
            p[i].events = POLLIN | POLLRDHUP;
            p[i].revents = 0;
        }
        poll(p, (nfds_t)a->n, 200);
        double t = bench_now_s();
        for (int i = 0; i < a->n && !a->stop; i++) {
            int cut = a->fd[i] < 0;
            if (!cut && (p[i].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) {
                char b[512];
                ssize_t r = recv(a->fd[i], b, sizeof b, MSG_DONTWAIT);
                cut = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || r > 0;
            }
            if (!cut && i % 2 == 1 && t >= a->next_send[i]) {
                if (send(a->fd[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
                    errno != EAGAIN)
                    cut = 1;
                a->next_send[i] = t + SLOW_EVERY;
            }
            if (cut) {
                if (a->fd[i] >= 0)
                    close(a->fd[i]);
                a->fd[i] = attack_connect(a, i);
                if (a->fd[i] >= 0)
                    a->reconnects++;
                else
                    a->failed++;
            }
        }
    }
    free(p);
    return NULL;
}

static int attack_open(attacker *a) {
    int open = 0;
    for (int i = 0; i < a->n; i++)
        open += a->fd[i] >= 0;
    return open;
}

/* ---- The measurements ---------------------------------------------------- */

static int call(gp_http_conn *c, const char *m, const char *p, const char *body) {
    gp_http_resp r;
    char err[256];
    int rc = gp_http_send(c, m, p, token, body, body ? strlen(body) : 0, &r, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "bench-api-slow: %s %s: %s\n", m, p, err);
        return -1;
    }
    int st = r.status;
    gp_http_resp_free(&r);
    return st;
}

/* Latencies in ms of PROBES requests of path, each on a fresh connection,
 * into lat; -1 if one failed. */
static int probe(const char *path, double *lat) {
    for (int i = 0; i < PROBES; i++) {
        double t0 = bench_now_s();
        gp_http_conn *c;
        char err[256];
        if (gp_http_connect(server, 10000, &c, err, sizeof err) < 0) {
            fprintf(stderr, "bench-api-slow: %s\n", err);
            return -1;
        }
        int st = call(c, "GET", path, NULL);
        gp_http_close(c);
        if (st != 200)
            return -1;
        lat[i] = (bench_now_s() - t0) * 1000;
    }
    return 0;
}

typedef struct worker {
    int n, failed;
} worker;

static void *submitter(void *arg) {
    worker *w = arg;
    gp_http_conn *c;
    char err[256];
    if (gp_http_connect(server, 30000, &c, err, sizeof err) < 0) {
        w->failed = 1;
        return NULL;
    }
    const char *body = "{\"project\":\"bench\",\"gpu\":1,\"command\":[\"true\"]}";
    for (int i = 0; i < w->n && !w->failed; i++)
        if (call(c, "POST", "/api/v1/workloads", body) != 201)
            w->failed = 1;
    gp_http_close(c);
    return NULL;
}

/* Durable submissions per second from CLIENTS keep-alive clients, total in
 * all; -1 if one failed. */
static double submit_rate(int total) {
    pthread_t th[CLIENTS];
    worker w[CLIENTS];
    double t0 = bench_now_s();
    for (int i = 0; i < CLIENTS; i++) {
        w[i].n = total / CLIENTS;
        w[i].failed = 0;
        pthread_create(&th[i], NULL, submitter, &w[i]);
    }
    int failed = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        failed |= w[i].failed;
    }
    return failed ? -1 : (total / CLIENTS) * CLIENTS / (bench_now_s() - t0);
}

/* The figures of one condition (idle, or under attack) over its runs. */
typedef struct figures {
    double health[4 * PROBES], list[4 * PROBES], rate[4];
    int nprobe, nrate;
} figures;

/* One run: PROBES health and list requests, then a submission run; adds to
 * f. Returns -1 if a request failed. */
static int measure(figures *f) {
    int per_run = getenv("GP_BENCH_SUBMISSIONS") ? atoi(getenv("GP_BENCH_SUBMISSIONS")) : 3200;
    double r;
    if (probe("/api/v1/health", f->health + f->nprobe) < 0 ||
        probe("/api/v1/workloads?limit=100", f->list + f->nprobe) < 0 ||
        (r = submit_rate(per_run)) < 0)
        return -1;
    f->nprobe += PROBES;
    f->rate[f->nrate++] = r;
    return 0;
}

/* Prints p50 and p99 of the probes and the median submission rate. */
static void report(const char *label, figures *f, double *h99, double *l99, double *rate) {
    qsort(f->health, (size_t)f->nprobe, sizeof(double), bench_cmp_double);
    qsort(f->list, (size_t)f->nprobe, sizeof(double), bench_cmp_double);
    qsort(f->rate, (size_t)f->nrate, sizeof(double), bench_cmp_double);
    *h99 = f->health[f->nprobe * 99 / 100 - 1];
    *l99 = f->list[f->nprobe * 99 / 100 - 1];
    *rate = (f->rate[(f->nrate - 1) / 2] + f->rate[f->nrate / 2]) / 2;
    printf("api-slow: %-34s health p50 %6.2f ms p99 %6.2f ms | list p50 %6.2f ms p99 %6.2f ms | "
           "%6.0f submissions/s (median of %d runs)\n",
           label, f->health[f->nprobe / 2], *h99, f->list[f->nprobe / 2], *l99, *rate, f->nrate);
}

int main(void) {
    int nconns = getenv("GP_BENCH_CONNS") ? atoi(getenv("GP_BENCH_CONNS")) : 10000;
    const char *build = getenv("GP_BUILD") ? getenv("GP_BUILD") : "build";
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t want = (rlim_t)nconns + 512;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want) {
        nconns = (int)rl.rlim_cur - 512;
        printf("api-slow: the descriptor limit (%llu) allows only %d attacking connections\n",
               (unsigned long long)rl.rlim_cur, nconns);
    }
    char dir[] = "/tmp/gpupool-bench.XXXXXX", path[300];
    if (!mkdtemp(dir))
        return 1;
    pid_t pid = bench_start_daemon(build, dir, server, token);
    if (pid < 0)
        return 1;
    port = atoi(strrchr(server, ':') + 1);
    gp_http_conn *c;
    char err[256];
    if (gp_http_connect(server, 0, &c, err, sizeof err) < 0)
        return 1;
    call(c, "POST", "/api/v1/queues", "{\"name\":\"dept\"}");
    call(c, "POST", "/api/v1/queues",
         "{\"name\":\"bench\",\"parent\":\"dept\",\"limit\":{\"gpu\":0}}");
    gp_http_close(c);

    /* Runs in the order idle, attack, attack, idle, idle, attack, attack,
     * idle: the store grows with every run, and this order gives both
     * conditions the same mean store size. Each attack block starts with
     * the attacker's connections open for longer than the header deadline
     * (GP_BENCH_WARMUP seconds, default 12), so that the daemon is cutting
     * trickling connections off and the attacker reopening them while the
     * figures are taken. */
    static const int order[] = {0, 1, 1, 0, 0, 1, 1, 0};
    int warmup = getenv("GP_BENCH_WARMUP") ? atoi(getenv("GP_BENCH_WARMUP")) : 12;
    static figures fig[2];
    attacker a;
    memset(&a, 0, sizeof a);
    a.n = nconns;
    a.fd = malloc(sizeof *a.fd * (size_t)nconns);
    a.next_send = calloc((size_t)nconns, sizeof *a.next_send);
    int rc = 0, attacking = 0, min_open = nconns;
    for (size_t k = 0; k < sizeof order / sizeof order[0] && rc == 0; k++) {
        if (order[k] && !attacking) {
            double t0 = bench_now_s();
            for (int i = 0; i < nconns; i++)
                a.fd[i] = attack_connect(&a, i);
            printf("api-slow: %d of %d attacking connections open after %.1f s\n", attack_open(&a),
                   nconns, bench_now_s() - t0);
            a.stop = 0;
            pthread_create(&a.th, NULL, attack_loop, &a);
            attacking = 1;
            sleep((unsigned)warmup);
        } else if (!order[k] && attacking) {
            a.stop = 1;
            pthread_join(a.th, NULL);
            for (int i = 0; i < nconns; i++)
                if (a.fd[i] >= 0)
                    close(a.fd[i]);
            attacking = 0;
            sleep(1);
        }
        if (measure(&fig[order[k]]) < 0) {
            fprintf(stderr, "bench-api-slow: a request failed (%s)\n",
                    order[k] ? "under attack" : "idle");
            rc = 1;
        }
        if (rc == 0)
            printf("api-slow: run %zu (%s): %.0f submissions/s\n", k + 1,
                   order[k] ? "attack" : "idle", fig[order[k]].rate[fig[order[k]].nrate - 1]);
        if (attacking && attack_open(&a) < min_open)
            min_open = attack_open(&a);
    }
    if (attacking) {
        a.stop = 1;
        pthread_join(a.th, NULL);
        for (int i = 0; i < nconns; i++)
            if (a.fd[i] >= 0)
                close(a.fd[i]);
    }
    if (rc == 0) {
        double h0, l0, rate0, h1, l1, rate1;
        char label[64];
        snprintf(label, sizeof label, "with %d slow/idle connections:", nconns);
        report("idle:", &fig[0], &h0, &l0, &rate0);
        report(label, &fig[1], &h1, &l1, &rate1);
        printf("api-slow: attacking connections open when measured: at least %d; cut off by the "
               "daemon's deadlines and reopened: %ld; refused: %ld\n",
               min_open, a.reconnects, a.failed);
        printf("api-slow: targets (p99 < 100 ms, submissions >= 80%% of idle): health %s, list "
               "%s, submissions %.0f%% of idle: %s\n",
               h1 < 100 ? "met" : "MISSED", l1 < 100 ? "met" : "MISSED", 100 * rate1 / rate0,
               rate1 >= 0.8 * rate0 ? "met" : "MISSED");
    }
    free(a.fd);
    free(a.next_send);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    if (system(path) != 0)
        return 1;
    return rc;
}
