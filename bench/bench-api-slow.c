/*
 * bench-api-slow.c — gpupoold's front door under a slow-client attack, on
 * loopback: with GP_BENCH_CONNS (default 10,000) connections held open by
 * an attacker (half of them idle, half trickling a request head one header
 * line every 2 s, each reopened whenever the daemon cuts it off), how fast
 * do /api/v1/health and an authenticated list answer (p50, p99, every
 * request on a fresh connection, as a monitoring probe or a CLI makes them),
 * and how many durable submissions per second does the API still take,
 * against the same figures without the attack, measured in the same run.
 *
 * The attacker's connections come from 200 loopback addresses (127.1.x.y),
 * 50 from each, below the daemon's per-client cap (128), as from 200 hosts;
 * the measuring clients come from 127.0.0.1. The targets (issue: a front door
 * that slow clients cannot hold): p99 under 100 ms for both requests, and a
 * submission rate of at least 80% of the idle figure.
 *
 * The machine is shared and its load moves, so the runs alternate: idle,
 * attack, attack, idle, idle, attack, ... (RUNS in all; the store grows with
 * every run and this order gives both conditions the same mean size), and
 * the figures are medians, with a second ratio that sets each attack run
 * against the idle runs next to it. The attacker is one thread that lives through
 * every run, holding no connection in idle runs; it paces its bytes (one
 * line per trickling connection every 2 s, on a fixed schedule) with one
 * epoll set, so that its own CPU stays small, and that CPU is measured and
 * printed beside the daemon's: on a real network the attacker's CPU is not
 * the server's, here the two share the cores. Each attack block begins with
 * the connections opened evenly over GP_BENCH_WARMUP seconds (default 11,
 * longer than the daemon's 10 s header deadline), so that the daemon cuts
 * connections off, and the attacker reopens them, at a steady rate while the
 * figures are taken. Prints figures and whether the targets are met; it is
 * not a pass/fail test. GP_BENCH_CONNS, GP_BENCH_SUBMISSIONS (per run,
 * default 3200) and GP_BENCH_WARMUP change the sizes; GP_BENCH_CONNS=0 runs
 * the same schedule with no attacking connection, and the ratio it prints
 * is then the machine's noise alone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench-daemon.h"

#define CLIENTS    16
#define PER_ADDR   50
#define PROBES     250
#define SLOW_EVERY 2.0
#define RUNS       16

static bench_daemon d;
static int port;

/* ---- The attacker ------------------------------------------------------ */

typedef struct attacker {
    int n;              /* connections to hold while attacking */
    int *fd;            /* -1: not open */
    int ep;             /* epoll set of the open connections */
    double open_over;   /* seconds over which an attack opens its connections */
    pthread_mutex_t mu; /* guards want and the counters below */
    pthread_cond_t cv;
    int want; /* 1: attack; 0: hold nothing (and sleep); -1: exit */
    int open; /* connections open now */
    long cut, refused, lines;
    pthread_t th;
} attacker;

/* Opens connection i: from address i % naddr of 127.1.0.1, 127.1.0.2, ...
 * (naddr = n / PER_ADDR), so that each address's connections are opened,
 * and cut off, spread over the attack's opening time, not all at once (the
 * daemon counts a connection against its address's cap until it has cleaned
 * it up, so 50 connections cut and reopened at the same moment met the
 * cap of 64, its default then). Odd ones trickle a request head (its first
 * line now). Returns 0 or -1. */
static int attack_connect(attacker *a, int i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    char src[32];
    int naddr = (a->n + PER_ADDR - 1) / PER_ADDR, k = i % naddr;
    snprintf(src, sizeof src, "127.1.%d.%d", k / 250, 1 + k % 250);
    inet_pton(AF_INET, src, &sa.sin_addr);
    int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    /* On loopback a non-blocking connect completes at once, or is refused. */
    ok = ok && (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 || errno == EINPROGRESS);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = (uint32_t)i};
    ok = ok && epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev) == 0;
    if (!ok) {
        close(fd);
        return -1;
    }
    if (i % 2 == 1)
        send(fd, "GET /api/v1/health HTTP/1.1\r\n", 29, MSG_NOSIGNAL);
    a->fd[i] = fd;
    return 0;
}

/* Connection i was cut off by the daemon (or answered): reopen it at once. */
static void attack_reopen(attacker *a, int i) {
    close(a->fd[i]);
    a->fd[i] = -1;
    int rc = attack_connect(a, i);
    pthread_mutex_lock(&a->mu);
    a->cut++;
    if (rc < 0) {
        a->refused++;
        a->open--;
    }
    pthread_mutex_unlock(&a->mu);
}

static void attack_close_all(attacker *a) {
    for (int i = 0; i < a->n; i++)
        if (a->fd[i] >= 0) {
            close(a->fd[i]);
            a->fd[i] = -1;
        }
    pthread_mutex_lock(&a->mu);
    a->open = 0;
    pthread_mutex_unlock(&a->mu);
}

/* One attack, until want leaves 1: opens connection k at t0 + k * open_over
 * / n; trickling connection j (the j-th odd one, m in all) sends its next
 * line at t0 + (s + j / m) * SLOW_EVERY for s = 1, 2, ...; a connection the
 * daemon closes (or answers) is reopened at once. */
static void attack_run(attacker *a) {
    int m = a->n / 2;
    long opened = 0, sent = 0;
    double t0 = bench_now_s();
    struct epoll_event ev[256];
    for (;;) {
        pthread_mutex_lock(&a->mu);
        int want = a->want;
        pthread_mutex_unlock(&a->mu);
        if (want != 1)
            break;
        double now = bench_now_s();
        for (; opened < a->n && now >= t0 + opened * a->open_over / a->n; opened++) {
            int rc = attack_connect(a, (int)opened);
            pthread_mutex_lock(&a->mu);
            if (rc == 0)
                a->open++;
            else
                a->refused++;
            pthread_mutex_unlock(&a->mu);
        }
        for (; m > 0 && now >= t0 + SLOW_EVERY * (1 + (double)sent / m); sent++) {
            int i = 2 * (int)(sent % m) + 1;
            if (a->fd[i] < 0) {
                if (i < opened && attack_connect(a, i) == 0) {
                    pthread_mutex_lock(&a->mu);
                    a->open++;
                    pthread_mutex_unlock(&a->mu);
                }
                continue;
            }
            if (send(a->fd[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) == 11) {
                pthread_mutex_lock(&a->mu);
                a->lines++;
                pthread_mutex_unlock(&a->mu);
            }
        }
        /* The next connection to open, or line to send (none: wait). */
        double next = opened < a->n ? t0 + opened * a->open_over / a->n
                      : m > 0       ? t0 + SLOW_EVERY * (1 + (double)sent / m)
                                    : bench_now_s() + 1;
        int wait_ms = (int)((next - bench_now_s()) * 1000) + 1;
        int k = epoll_wait(a->ep, ev, 256, wait_ms < 1 ? 0 : wait_ms > 100 ? 100 : wait_ms);
        for (int e = 0; e < k; e++) {
            int i = (int)ev[e].data.u32;
            char b[512];
            ssize_t r = recv(a->fd[i], b, sizeof b, MSG_DONTWAIT);
            if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                attack_reopen(a, i);
        }
    }
    attack_close_all(a);
}

static void *attack_thread(void *arg) {
    attacker *a = arg;
    pthread_mutex_lock(&a->mu);
    while (a->want >= 0) {
        if (a->want == 0) {
            pthread_cond_wait(&a->cv, &a->mu);
            continue;
        }
        pthread_mutex_unlock(&a->mu);
        attack_run(a);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Tells the attacker what to do (1 attack, 0 hold nothing, -1 exit); with
 * 0, waits until it holds nothing. */
static void attack_set(attacker *a, int want) {
    pthread_mutex_lock(&a->mu);
    a->want = want;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    for (int held = 1; want == 0 && held;) {
        usleep(10000);
        pthread_mutex_lock(&a->mu);
        held = a->open > 0;
        pthread_mutex_unlock(&a->mu);
    }
}

/* The attacker thread's CPU time so far, in seconds. */
static double attack_cpu_s(attacker *a) {
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(a->th, &id) != 0 || clock_gettime(id, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- CPU counters ------------------------------------------------------- */

/* CPU seconds so far: of the daemon, of the attacker thread, of this whole
 * program (attacker and measuring clients), and of the machine, busy in all
 * and busy at a nice above 0 (the background fuzzers, for example). */
typedef struct cpu {
    double daemon, attacker, self, busy, niced, wall;
} cpu;

static double ticks_s(unsigned long long t) {
    return (double)t / (double)sysconf(_SC_CLK_TCK);
}

static cpu cpu_now(attacker *a) {
    cpu c = {0};
    c.wall = bench_now_s();
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)d.pid);
    FILE *f = fopen(path, "r");
    if (f && fgets(buf, sizeof buf, f)) {
        /* Fields 14 and 15 (utime, stime) follow the ")" that ends comm. */
        unsigned long long ut = 0, st = 0;
        const char *p = strrchr(buf, ')');
        if (p &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
            c.daemon = ticks_s(ut + st);
    }
    if (f)
        fclose(f);
    f = fopen("/proc/stat", "r");
    unsigned long long us, ni, sy, idle, io, irq, sirq, steal;
    if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &us, &ni, &sy, &idle, &io,
                    &irq, &sirq, &steal) == 8) {
        c.busy = ticks_s(us + ni + sy + irq + sirq);
        c.niced = ticks_s(ni);
    }
    if (f)
        fclose(f);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    c.self = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
             (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    c.attacker = attack_cpu_s(a);
    return c;
}

/* ---- The measurements ---------------------------------------------------- */

/* Latencies in ms of PROBES requests of path, each on a fresh connection,
 * into lat; -1 if one failed. */
static int probe(const char *path, double *lat) {
    for (int i = 0; i < PROBES; i++) {
        double t0 = bench_now_s();
        gp_http_conn *c = bench_connect(&d, 10000);
        if (!c)
            return -1;
        int st = bench_call(&d, c, "GET", path, NULL, NULL, 0);
        gp_http_close(c);
        if (st != 200)
            return -1;
        lat[i] = (bench_now_s() - t0) * 1000;
    }
    return 0;
}

/* The figures of one condition (idle, or under attack) over its runs; CPU
 * as a share of one core during the submissions. */
typedef struct figures {
    double health[RUNS * PROBES], list[RUNS * PROBES];
    double rate[RUNS], daemon[RUNS], attacker[RUNS], clients[RUNS], others[RUNS], niced[RUNS];
    double cost[RUNS]; /* the daemon's CPU ms per submission, beyond its quiet share */
    double quiet[RUNS], quiet_attacker[RUNS]; /* with no request at all, per block */
    int nprobe, nrate, nquiet;
} figures;

/* The daemon's and the attacker's CPU (% of one core) over QUIET_S seconds
 * without any request from the measuring clients: the cost of the attack
 * alone (or, idle, of the daemon's own loops), which the load of the rest
 * of the machine changes far less than it changes the submission rate. */
#define QUIET_S 2
static void measure_quiet(figures *f, attacker *a) {
    cpu c0 = cpu_now(a);
    sleep(QUIET_S);
    cpu c1 = cpu_now(a);
    double w = c1.wall - c0.wall;
    f->quiet[f->nquiet] = 100 * (c1.daemon - c0.daemon) / w;
    f->quiet_attacker[f->nquiet++] = 100 * (c1.attacker - c0.attacker) / w;
}

/* One run: PROBES health and list requests, then a submission run; adds to
 * f and prints the run's line. Returns -1 if a request failed. */
static int measure(figures *f, attacker *a, int run, const char *label) {
    int per_run = getenv("GP_BENCH_SUBMISSIONS") ? atoi(getenv("GP_BENCH_SUBMISSIONS")) : 3200;
    if (probe("/api/v1/health", f->health + f->nprobe) < 0 ||
        probe("/api/v1/workloads?limit=100", f->list + f->nprobe) < 0)
        return -1;
    f->nprobe += PROBES;
    cpu c0 = cpu_now(a);
    double r = bench_submit_rate(&d, CLIENTS, per_run);
    if (r < 0)
        return -1;
    cpu c1 = cpu_now(a);
    double w = c1.wall - c0.wall, dm = c1.daemon - c0.daemon, at = c1.attacker - c0.attacker;
    double self = c1.self - c0.self, busy = c1.busy - c0.busy;
    int k = f->nrate++;
    f->rate[k] = r;
    f->daemon[k] = 100 * dm / w;
    f->attacker[k] = 100 * at / w;
    f->clients[k] = 100 * (self - at) / w;
    f->others[k] = 100 * (busy - dm - self) / w;
    f->niced[k] = 100 * (c1.niced - c0.niced) / w;
    printf("api-slow: run %2d (%-6s): %5.0f submissions/s | CPU, %% of one core: daemon %3.0f, "
           "attacker %3.0f, clients %3.0f, rest of the machine %3.0f (niced %3.0f)\n",
           run, label, r, f->daemon[k], f->attacker[k], f->clients[k], f->others[k], f->niced[k]);
    fflush(stdout);
    return 0;
}

/* Prints p50 and p99 of the probes, the medians of the submission rate and
 * of the CPU shares. */
static void report(const char *label, figures *f, double *h99, double *l99, double *rate,
                   double *capacity) {
    qsort(f->health, (size_t)f->nprobe, sizeof(double), bench_cmp_double);
    qsort(f->list, (size_t)f->nprobe, sizeof(double), bench_cmp_double);
    *h99 = f->health[f->nprobe * 99 / 100 - 1];
    *l99 = f->list[f->nprobe * 99 / 100 - 1];
    double lo = f->rate[0], hi = f->rate[0], quiet = bench_median(f->quiet, f->nquiet);
    for (int i = 0; i < f->nrate; i++) {
        lo = f->rate[i] < lo ? f->rate[i] : lo;
        hi = f->rate[i] > hi ? f->rate[i] : hi;
        /* The daemon spends its quiet share whether or not it is asked
         * anything: what is left is the submissions' own CPU. */
        f->cost[i] = 10 * (f->daemon[i] - quiet) / f->rate[i];
    }
    *rate = bench_median(f->rate, f->nrate);
    printf("api-slow: %-32s health p50 %5.2f ms p99 %6.2f ms | list p50 %5.2f ms p99 %6.2f ms "
           "(%d of each)\n",
           label, f->health[f->nprobe / 2], *h99, f->list[f->nprobe / 2], *l99, f->nprobe);
    printf("api-slow: %-32s %5.0f submissions/s (median of %d runs, %.0f to %.0f); CPU medians, "
           "%% of one core: daemon %.0f, attacker %.0f, clients %.0f, rest %.0f (niced %.0f)\n",
           "", *rate, f->nrate, lo, hi, bench_median(f->daemon, f->nrate),
           bench_median(f->attacker, f->nrate), bench_median(f->clients, f->nrate),
           bench_median(f->others, f->nrate), bench_median(f->niced, f->nrate));
    double cost = bench_median(f->cost, f->nrate);
    printf("api-slow: %-32s with no request, CPU %% of one core (median of %d): daemon %.1f, "
           "attacker %.1f; daemon CPU per submission beyond that: %.3f ms\n",
           "", f->nquiet, quiet, bench_median(f->quiet_attacker, f->nquiet), cost);
    /* What one core left to the daemon would take: the share it does not
     * spend without requests, over its CPU per submission. */
    *capacity = (100 - quiet) / 100 / cost * 1000;
}

/* The median over the attack runs of each one's rate against the idle runs
 * next to it in time (the mean of the one before and the one after): the
 * machine's load drifts over a run of the benchmark, and neighbours share
 * more of it than the medians of whole conditions do. rate and attack are
 * in run order. */
static double paired_ratio(const double *rate, const int *attack, int n) {
    double ratio[RUNS];
    int m = 0;
    for (int k = 0; k < n; k++) {
        if (!attack[k])
            continue;
        double sum = 0;
        int c = 0;
        for (int j = k - 1; j >= 0; j--)
            if (!attack[j]) {
                sum += rate[j];
                c++;
                break;
            }
        for (int j = k + 1; j < n; j++)
            if (!attack[j]) {
                sum += rate[j];
                c++;
                break;
            }
        if (c)
            ratio[m++] = rate[k] / (sum / c);
    }
    return bench_median(ratio, m);
}

/* The daemon's count of connections cut by its deadlines (/metrics), or -1. */
static long daemon_cuts(void) {
    static char m[1 << 16];
    gp_http_conn *c = bench_connect(&d, 0);
    int st = c ? bench_call(&d, c, "GET", "/metrics", NULL, m, sizeof m) : -1;
    if (c)
        gp_http_close(c);
    const char *line = st == 200 ? strstr(m, "\ngpupool_http_connections_cut_total ") : NULL;
    return line ? atol(line + 36) : -1;
}

/* Raises the descriptor limit for nconns attacking connections; returns how
 * many the limit allows. */
static int fit_descriptors(int nconns) {
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
    return nconns;
}

int main(void) {
    int nconns = fit_descriptors(getenv("GP_BENCH_CONNS") ? atoi(getenv("GP_BENCH_CONNS")) : 10000);
    const char *build = getenv("GP_BUILD") ? getenv("GP_BUILD") : "build";
    double warmup = getenv("GP_BENCH_WARMUP") ? atof(getenv("GP_BENCH_WARMUP")) : 11;
    if (nconns < 0 || bench_make_dir(&d, "bench-api-slow") < 0)
        return 1;
    if (bench_start_daemon(&d, build) < 0 || bench_pending_project(&d) < 0) {
        bench_stop_daemon(&d, 1);
        bench_remove_dir(&d);
        return 1;
    }
    port = atoi(strrchr(d.server, ':') + 1);
    double load[3] = {0};
    if (getloadavg(load, 3) < 0)
        load[0] = -1;
    printf("api-slow: %ld cores; load average %.2f at the start\n", sysconf(_SC_NPROCESSORS_ONLN),
           load[0]);

    static attacker a;
    a.n = nconns;
    a.fd = malloc(sizeof *a.fd * (size_t)nconns);
    a.ep = epoll_create1(EPOLL_CLOEXEC);
    a.open_over = warmup > 1 ? warmup - 1 : warmup;
    for (int i = 0; i < nconns; i++)
        a.fd[i] = -1;
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    pthread_create(&a.th, NULL, attack_thread, &a);

    static figures fig[2];
    double seq_rate[RUNS];
    int seq_attack[RUNS], rc = 0, attacking = 0, min_open = nconns;
    for (int k = 0; k < RUNS && rc == 0; k++) {
        int attack = (k + 1) / 2 % 2; /* idle, attack, attack, idle, idle, ... */
        if (attack && !attacking) {
            attack_set(&a, 1);
            usleep((useconds_t)(warmup * 1e6));
        } else if (!attack && attacking) {
            attack_set(&a, 0);
            sleep(1);
        }
        if (k == 0 || attack != attacking)
            measure_quiet(&fig[attack], &a);
        attacking = attack;
        if (measure(&fig[attack], &a, k + 1, attack ? "attack" : "idle") < 0) {
            fprintf(stderr, "bench-api-slow: a request failed (%s)\n", attack ? "attack" : "idle");
            rc = 1;
        }
        seq_attack[k] = attack;
        seq_rate[k] = rc == 0 ? fig[attack].rate[fig[attack].nrate - 1] : 0;
        pthread_mutex_lock(&a.mu);
        if (attacking && a.open < min_open)
            min_open = a.open;
        pthread_mutex_unlock(&a.mu);
    }
    attack_set(&a, 0);
    attack_set(&a, -1);
    pthread_join(a.th, NULL);
    long deadline_cuts = daemon_cuts();
    if (rc == 0) {
        double h0, l0, rate0, h1, l1, rate1, cap0, cap1;
        char label[64];
        snprintf(label, sizeof label, "with %d slow/idle connections:", nconns);
        report("idle:", &fig[0], &h0, &l0, &rate0, &cap0);
        report(label, &fig[1], &h1, &l1, &rate1, &cap1);
        printf("api-slow: attacking connections open when measured: at least %d; closed by the "
               "daemon and reopened: %ld (%ld of them cut by its deadlines); refused: %ld; header "
               "lines sent: %ld\n",
               min_open, a.cut, deadline_cuts, a.refused, a.lines);
        double paired = paired_ratio(seq_rate, seq_attack, RUNS);
        printf("api-slow: submissions under attack against idle: %.0f%% (medians), %.0f%% (median "
               "of each attack run against its idle neighbours)\n",
               100 * rate1 / rate0, 100 * paired);
        printf("api-slow: by the daemon's CPU (the bound when one core is all it gets): %.0f "
               "submissions/s idle, %.0f under attack, %.0f%%; the attacker's own CPU, on the "
               "same cores here, is not counted\n",
               cap0, cap1, 100 * cap1 / cap0);
        printf("api-slow: targets (p99 < 100 ms, submissions >= 80%% of idle): health %s, list "
               "%s, submissions: %s\n",
               h1 < 100 ? "met" : "MISSED", l1 < 100 ? "met" : "MISSED",
               rate1 >= 0.8 * rate0 && paired >= 0.8 ? "met"
               : rate1 >= 0.8 * rate0 || paired >= 0.8
                   ? "met by one figure of two (the machine's load moved too much to say)"
                   : "MISSED");
    }
    close(a.ep);
    free(a.fd);
    bench_stop_daemon(&d, 1);
    return bench_remove_dir(&d) < 0 ? 1 : rc;
}
