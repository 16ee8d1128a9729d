/*
 * bench-engine.c — how long one scheduling cycle takes on a large, nearly
 * full pool, and how much memory the engine needs for it.
 *
 *   build/bench-engine [--scenario NAME] [--cycles N]
 *   build/bench-engine --nodes N --running R --pending P --projects Q
 *
 * Scenarios (mixed whole, fractional and gang requests over 20 departments):
 *   small    100 nodes x 8 GPUs,   2,000 running,  1,000 pending,   20 projects
 *   medium 1,000 nodes x 8 GPUs,  20,000 running, 10,000 pending,  200 projects
 *   large 10,000 nodes x 8 GPUs, 200,000 running, 50,000 pending, 2,000 projects
 * The running tasks are restored onto the pool first-fit (as after a daemon
 * restart), so the pool is nearly full and the cycles really exercise the
 * "does not fit anywhere" path, reclaim and preemption. Between measured
 * cycles every BIND is started and every EVICT released, untimed, as a
 * daemon with instant checkpoints would. Each scenario runs in its own
 * process so that its peak RSS is its own; one JSON line per scenario.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/gp_engine.h"

#define GIB (INT64_C(1) << 30)

typedef struct scenario {
    const char *name;
    int nodes, running, pending, projects, cycles;
} scenario;

static const scenario named[] = {
    {"small", 100, 2000, 1000, 20, 7},
    {"medium", 1000, 20000, 10000, 200, 7},
    {"large", 10000, 200000, 50000, 2000, 5},
};

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, int rc, const char *err) {
    fprintf(stderr, "bench-engine: %s: %s %s\n", what, gp_strerror(rc), err ? err : "");
    exit(1);
}

/* A request shape: gpus whole GPUs per task, or milli of one GPU; tasks. */
typedef struct shape {
    int gpus, milli, tasks;
} shape;

static shape running_shape(void) {
    int r = (int)(rnd() % 100);
    if (r < 55)
        return (shape){0, 250, 1};
    if (r < 80)
        return (shape){0, 500, 1};
    if (r < 95)
        return (shape){1, 0, 1};
    return (shape){1, 0, 2}; /* a small gang */
}

static shape pending_shape(void) {
    int r = (int)(rnd() % 100);
    if (r < 25)
        return (shape){1, 0, 1};
    if (r < 40)
        return (shape){2, 0, 1};
    if (r < 50)
        return (shape){4, 0, 1};
    if (r < 55)
        return (shape){8, 0, 1};
    if (r < 75)
        return (shape){0, 500, 1};
    if (r < 85)
        return (shape){0, 250, 1};
    return (shape){(int)(1 + rnd() % 4), 0, (int)(2 + rnd() % 3)};
}

static void fill_spec(gp_workload_spec *w, uint64_t id, const char *project, shape s) {
    gp_workload_spec_init(w, id, project);
    w->tasks = s.tasks;
    w->kind = rnd() % 100 < 85 ? GP_KIND_TRAIN : GP_KIND_INTERACTIVE;
    w->priority = (int32_t)(rnd() % 4);
    w->req.cpu_milli = 1000;
    w->req.mem_bytes = 4 * GIB;
    if (s.gpus) {
        w->req.gpu = GP_GPU_WHOLE;
        w->req.gpus = s.gpus;
    } else {
        w->req.gpu = GP_GPU_FRACTION;
        w->req.gpu_milli = s.milli;
    }
}

/* First-fit placement by the bench itself, to restore running work. */
typedef struct pool {
    int nodes;
    int32_t (*free)[8];
    char (*names)[16];
} pool;

static int first_fit(pool *p, int *cursor, shape s, gp_task_binding *b) {
    for (int k = 0; k < p->nodes; k++) {
        int n = (*cursor + k) % p->nodes;
        int found = 0;
        b->nslices = 0;
        for (int g = 0; g < 8 && found < (s.gpus ? s.gpus : 1); g++) {
            int need = s.gpus ? 1000 : s.milli;
            if (p->free[n][g] >= need && (!s.gpus || p->free[n][g] == 1000)) {
                b->slices[found] = (gp_slice){g, need, (int64_t)80 * GIB * need / 1000, -1};
                found++;
            }
        }
        if (found == (s.gpus ? s.gpus : 1)) {
            for (int i = 0; i < found; i++)
                p->free[n][b->slices[i].gpu] -= b->slices[i].milli;
            b->node = p->names[n];
            b->nslices = found;
            *cursor = n;
            return 1;
        }
    }
    return 0;
}

static void run(const scenario *sc) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    if (getenv("GP_BENCH_ATTEMPTS"))
        c.max_evicting_attempts = atoi(getenv("GP_BENCH_ATTEMPTS"));
    gp_engine *e = NULL;
    char err[GP_ERR_MAX] = "";
    if (gp_engine_open(&c, &e, err, sizeof err) < 0) {
        fprintf(stderr, "bench-engine: %s\n", err);
        exit(1);
    }
    pool p = {sc->nodes, calloc((size_t)sc->nodes, sizeof *p.free),
              calloc((size_t)sc->nodes, sizeof *p.names)};
    for (int i = 0; i < sc->nodes; i++) {
        gp_node_spec n;
        snprintf(p.names[i], sizeof p.names[i], "node%05d", i);
        gp_node_spec_init(&n, p.names[i]);
        snprintf(n.domain, sizeof n.domain, "rack%d", i / 32);
        n.cpu_milli = 256000;
        n.mem_bytes = 2048 * GIB;
        n.ngpus = 8;
        for (int g = 0; g < 8; g++) {
            snprintf(n.gpus[g].uuid, sizeof n.gpus[g].uuid, "GPU-%d-%d", i, g);
            snprintf(n.gpus[g].model, sizeof n.gpus[g].model, "%s", i % 4 ? "H100" : "A100");
            n.gpus[g].mem_bytes = 80 * GIB;
            p.free[i][g] = 1000;
        }
        int rc = gp_engine_node_set(e, &n, err, sizeof err);
        if (rc)
            die("node_set", rc, err);
    }
    int64_t per_project = (int64_t)sc->nodes * 8 * 1000 / sc->projects;
    for (int d = 0; d < 20; d++) {
        gp_queue_spec q;
        char name[32];
        snprintf(name, sizeof name, "dept%02d", d);
        gp_queue_spec_init(&q, name, "");
        int rc = gp_engine_queue_set(e, &q, err, sizeof err);
        if (rc)
            die("queue_set", rc, err);
    }
    for (int i = 0; i < sc->projects; i++) {
        gp_queue_spec q;
        char name[32], parent[32];
        snprintf(name, sizeof name, "proj%04d", i);
        snprintf(parent, sizeof parent, "dept%02d", i % 20);
        gp_queue_spec_init(&q, name, parent);
        q.quota[GP_RES_GPU].deserved = per_project;
        q.quota[GP_RES_GPU].weight = 1 + (int32_t)(rnd() % 3);
        int rc = gp_engine_queue_set(e, &q, err, sizeof err);
        if (rc)
            die("queue_set", rc, err);
    }
    /* Running work: restored first-fit. Projects are skewed so that some run
     * far over their fair share and reclaim has victims to choose. */
    uint64_t id = 1;
    int cursor = 0, restored = 0;
    for (int t = 0; t < sc->running;) {
        shape s = running_shape();
        gp_task_binding b[4];
        int ok = 1;
        for (int k = 0; k < s.tasks && ok; k++)
            ok = first_fit(&p, &cursor, s, &b[k]);
        if (!ok)
            break; /* the pool is full */
        gp_workload_spec w;
        char project[32];
        snprintf(project, sizeof project, "proj%04d", (int)(rnd() % (uint64_t)(sc->projects / 2)));
        fill_spec(&w, id++, project, s);
        w.kind = GP_KIND_TRAIN;
        int rc =
            gp_engine_restore(e, &w, s.tasks, b, (gp_time_ms)(rnd() % 3600000), err, sizeof err);
        if (rc)
            die("restore", rc, err);
        t += s.tasks;
        restored += s.tasks;
    }
    for (int i = 0; i < sc->pending; i++) {
        gp_workload_spec w;
        char project[32];
        snprintf(project, sizeof project, "proj%04d", (int)(rnd() % (uint64_t)sc->projects));
        fill_spec(&w, id++, project, pending_shape());
        w.submitted = (gp_time_ms)(rnd() % 3600000);
        int rc = gp_engine_submit(e, &w, err, sizeof err);
        if (rc)
            die("submit", rc, err);
    }
    double *ms = calloc((size_t)sc->cycles, sizeof *ms);
    int64_t bound = 0, evicted = 0, considered = 0;
    gp_time_ms clock = 3600000;
    for (int i = 0; i < sc->cycles; i++) {
        const gp_decision *d;
        size_t n;
        gp_cycle_stats st;
        clock += 10000;
        double t0 = now_ms();
        int rc = gp_engine_cycle(e, clock, &d, &n, &st);
        ms[i] = now_ms() - t0;
        if (rc)
            die("cycle", rc, NULL);
        bound += st.bound;
        evicted += st.evicted;
        considered += st.pending_considered;
        for (size_t k = 0; k < n; k++)
            if (d[k].type == GP_DECISION_BIND)
                gp_engine_started(e, d[k].workload, clock);
            else if (d[k].reason != GP_EVICT_NODE_GONE)
                gp_engine_released(e, d[k].workload, clock);
    }
    for (int i = 1; i < sc->cycles; i++) /* insertion sort for the median */
        for (int k = i; k > 0 && ms[k] < ms[k - 1]; k--) {
            double t = ms[k];
            ms[k] = ms[k - 1];
            ms[k - 1] = t;
        }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"scenario\":\"%s\",\"nodes\":%d,\"gpus\":%d,\"running\":%d,\"pending\":%d,"
           "\"projects\":%d,\"cycles\":%d,\"cycle_ms_median\":%.2f,\"cycle_ms_min\":%.2f,"
           "\"cycle_ms_max\":%.2f,\"considered_per_cycle\":%" PRId64 ",\"bound\":%" PRId64
           ",\"evicted\":%" PRId64 ",\"peak_rss_mb\":%.1f}\n",
           sc->name, sc->nodes, sc->nodes * 8, restored, sc->pending, sc->projects, sc->cycles,
           ms[sc->cycles / 2], ms[0], ms[sc->cycles - 1], considered / sc->cycles, bound, evicted,
           (double)ru.ru_maxrss / 1024.0);
    fflush(stdout);
    free(ms);
    free(p.free);
    free(p.names);
    gp_engine_free(e);
}

static int run_in_child(const scenario *sc) {
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        run(sc);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
    const char *only = NULL;
    scenario custom = {"custom", 0, 0, 0, 20, 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench-engine: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(a, "--scenario") == 0)
            only = v;
        else if (strcmp(a, "--nodes") == 0)
            custom.nodes = atoi(v);
        else if (strcmp(a, "--running") == 0)
            custom.running = atoi(v);
        else if (strcmp(a, "--pending") == 0)
            custom.pending = atoi(v);
        else if (strcmp(a, "--projects") == 0)
            custom.projects = atoi(v);
        else if (strcmp(a, "--cycles") == 0)
            custom.cycles = atoi(v);
        else {
            fprintf(stderr, "usage: bench-engine [--scenario small|medium|large] [--cycles N]\n"
                            "       bench-engine --nodes N --running R --pending P --projects Q\n");
            return 2;
        }
        i++;
    }
    if (custom.nodes > 0) {
        if (custom.projects < 20 || custom.cycles < 1) {
            fprintf(stderr, "bench-engine: --projects must be >= 20 and --cycles >= 1\n");
            return 2;
        }
        return run_in_child(&custom);
    }
    int failed = 0, found = 0;
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (only && strcmp(only, named[i].name) != 0)
            continue;
        found = 1;
        scenario sc = named[i];
        if (custom.cycles != 5)
            sc.cycles = custom.cycles;
        failed |= run_in_child(&sc);
    }
    if (!found) {
        fprintf(stderr, "bench-engine: no scenario named '%s'\n", only);
        return 2;
    }
    return failed;
}
