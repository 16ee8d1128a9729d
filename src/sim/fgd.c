/*
 * fgd.c — the FGD paper's experiment through the engine's public API (see
 * fgd.h): typical shapes, the arrival protocol, and the replay that measures
 * allocation and fragmentation after every arriving pod.
 */
#include "sim/fgd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GIB (INT64_C(1) << 30)

double sim_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void rng_seed(sim_rng *r, uint64_t seed) {
    r->s = seed * UINT64_C(0x2545F4914F6CDD1D) + UINT64_C(0x9E3779B97F4A7C15);
}

static uint64_t rng_next(sim_rng *r) {
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, n) for n > 0, without modulo bias. */
static uint64_t rng_below(sim_rng *r, uint64_t n) {
    /* Rejection sampling keeps the draw exactly uniform. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do
        v = rng_next(r);
    while (v >= limit);
    return v % n;
}

/* ------------------------------------------------------------------------ */
/* Typical shapes                                                            */
/* ------------------------------------------------------------------------ */

typedef struct shape_count {
    const sim_pod *pod; /* a representative */
    int64_t count;
} shape_count;

/* Orders pods by shape: CPU, per-GPU milli, GPUs, models. */
static int shape_cmp(const sim_pod *a, const sim_pod *b) {
    if (a->cpu_milli != b->cpu_milli)
        return a->cpu_milli < b->cpu_milli ? -1 : 1;
    int32_t ma = a->ngpus ? a->gpu_milli : 0, mb = b->ngpus ? b->gpu_milli : 0;
    if (ma != mb)
        return ma < mb ? -1 : 1;
    if (a->ngpus != b->ngpus)
        return a->ngpus < b->ngpus ? -1 : 1;
    return strcmp(a->spec, b->spec);
}

static int cmp_pod_shape(const void *a, const void *b) {
    const shape_count *x = a, *y = b;
    return shape_cmp(x->pod, y->pod);
}

/* Most frequent first; on equal counts the larger shape first (the FGD
 * simulator sorts by the reverse of (count, shape)). */
static int cmp_count(const void *a, const void *b) {
    const shape_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return -shape_cmp(x->pod, y->pod);
}

int sim_typical_shapes(const sim_pod *pods, size_t n, double cover, gp_shape **out) {
    *out = NULL;
    if (n == 0)
        return 0;
    shape_count *sc = malloc(n * sizeof *sc);
    if (!sc)
        return GP_ENOMEM;
    for (size_t i = 0; i < n; i++)
        sc[i] = (shape_count){&pods[i], 1};
    /* Sorted by shape, the pods of one shape are adjacent: they become one
     * entry with their count. */
    qsort(sc, n, sizeof *sc, cmp_pod_shape);
    size_t ns = 0;
    for (size_t i = 0; i < n; i++)
        if (ns && !shape_cmp(sc[ns - 1].pod, sc[i].pod))
            sc[ns - 1].count++;
        else
            sc[ns++] = sc[i];
    qsort(sc, ns, sizeof *sc, cmp_count);
    size_t k = 0;
    int64_t cum = 0;
    while (k < ns && (double)cum < cover * (double)n)
        cum += sc[k++].count;
    gp_shape *sh = calloc(k ? k : 1, sizeof *sh);
    if (!sh) {
        free(sc);
        return GP_ENOMEM;
    }
    for (size_t i = 0; i < k; i++) {
        const sim_pod *p = sc[i].pod;
        sh[i].gpus = p->gpu_milli == GP_MILLI ? p->ngpus : 0;
        sh[i].gpu_milli = p->ngpus ? p->gpu_milli : 0;
        sh[i].cpu_milli = p->cpu_milli;
        sh[i].mem_bytes = 0; /* FGD's measure ignores host memory */
        /* The pod's allowed models, "A|B|C", one per entry. */
        for (const char *m = p->spec; *m && sh[i].nmodels < GP_MAX_MODELS;) {
            size_t len = strcspn(m, "|");
            if (len > 0 && len <= GP_NAME_MAX)
                snprintf(sh[i].models[sh[i].nmodels++], GP_NAME_MAX + 1, "%.*s", (int)len, m);
            m += len + (m[len] == '|');
        }
        sh[i].popularity = (double)sc[i].count / (double)cum;
    }
    free(sc);
    *out = sh;
    return (int)k;
}

/* ------------------------------------------------------------------------ */
/* Arrivals                                                                  */
/* ------------------------------------------------------------------------ */

static int cmp_name(const void *a, const void *b, void *ctx) {
    const sim_pod *pods = ctx;
    return strcmp(pods[*(const size_t *)a].name, pods[*(const size_t *)b].name);
}

int sim_fgd_arrivals(const sim_pod *pods, size_t n, int64_t capacity_milli, double tune,
                     uint64_t seed, size_t **order) {
    *order = NULL;
    size_t *byname = malloc((n ? n : 1) * sizeof *byname);
    size_t cap = n + 16, cnt = n;
    size_t *o = malloc(cap * sizeof *o);
    if (!byname || !o) {
        free(byname);
        free(o);
        return GP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        byname[i] = i;
    qsort_r(byname, n, sizeof *byname, cmp_name, (void *)(uintptr_t)pods);
    memcpy(o, byname, n * sizeof *o);
    sim_rng r;
    rng_seed(&r, seed);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(&r, i);
        size_t t = o[i - 1];
        o[i - 1] = o[j];
        o[j] = t;
    }
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += sim_pod_milli(&pods[i]);
    double target = tune * (double)capacity_milli;
    if (n && tune > 0 && (double)total < target) {
        for (;;) {
            const sim_pod *p = &pods[byname[rng_below(&r, n)]];
            /* The FGD simulator compares with the per-GPU milli here, not the
             * pod's total: kept as published. */
            if ((double)(total + p->gpu_milli) > target)
                break;
            if (cnt == cap) {
                size_t *no = realloc(o, 2 * cap * sizeof *no);
                if (!no) {
                    free(byname);
                    free(o);
                    return GP_ENOMEM;
                }
                o = no;
                cap *= 2;
            }
            o[cnt++] = (size_t)(p - pods);
            total += sim_pod_milli(p);
        }
    } else if (tune > 0) {
        while ((double)total > target && cnt > 0) {
            size_t j = (size_t)rng_below(&r, cnt);
            total -= sim_pod_milli(&pods[o[j]]);
            memmove(&o[j], &o[j + 1], (cnt - j - 1) * sizeof *o);
            cnt--;
        }
    }
    free(byname);
    *order = o;
    return (int)cnt;
}

/* ------------------------------------------------------------------------ */
/* Replay                                                                    */
/* ------------------------------------------------------------------------ */

void sim_node_spec(const sim_node *n, gp_node_spec *out) {
    gp_node_spec_init(out, n->name);
    out->cpu_milli = n->cpu_milli;
    out->mem_bytes = n->mem_bytes;
    out->ngpus = n->ngpus;
    for (int32_t g = 0; g < n->ngpus; g++) {
        gp_gpu_spec *s = &out->gpus[g];
        memset(s, 0, sizeof *s);
        snprintf(s->uuid, sizeof s->uuid, "%.48s-gpu%d", n->name, (int)g);
        snprintf(s->model, sizeof s->model, "%s", n->model);
        s->mem_bytes = 16 * GIB;
        s->index = g;
    }
}

void sim_pod_workload(const sim_pod *p, uint64_t id, const char *queue, gp_workload_spec *out) {
    gp_workload_spec_init(out, id, queue);
    snprintf(out->user, sizeof out->user, "%s", p->user);
    out->kind = p->kind;
    out->priority = p->priority;
    out->tasks = p->tasks;
    gp_task_req *r = &out->req;
    if (p->ngpus == 0) {
        r->gpu = GP_GPU_NONE;
    } else if (p->gpu_milli < GP_MILLI) {
        r->gpu = GP_GPU_FRACTION;
        r->gpu_milli = p->gpu_milli;
    } else {
        r->gpu = GP_GPU_WHOLE;
        r->gpus = p->ngpus;
    }
    r->cpu_milli = p->cpu_milli;
    r->mem_bytes = p->mem_bytes;
    sim_spec_models(p->spec, r);
}

static int errf(char *err, size_t errlen, int code, const char *what, const char *detail) {
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", what, detail && *detail ? detail : gp_strerror(code));
    return code;
}

/* An engine holding the nodes and one unlimited queue "pool", with the
 * typical shapes set. */
static gp_engine *fgd_engine(const sim_node *nodes, size_t nnodes, const gp_shape *shapes,
                             int nshapes, const sim_fgd_opts *o, char *err, size_t errlen) {
    gp_engine_config cfg;
    gp_engine_config_init(&cfg);
    cfg.seed = o->seed;
    cfg.placement = o->policy;
    /* Pods never leave and are never moved in this experiment. */
    cfg.consolidate = cfg.reclaim = cfg.preempt = 0;
    cfg.aging_interval = 0;
    gp_engine *e = NULL;
    char detail[GP_ERR_MAX] = "";
    int rc = gp_engine_open(&cfg, &e, detail, sizeof detail);
    if (rc < 0) {
        errf(err, errlen, rc, "engine", detail);
        return NULL;
    }
    gp_queue_spec q;
    gp_queue_spec_init(&q, "pool", "");
    rc = gp_engine_queue_set(e, &q, detail, sizeof detail);
    for (size_t i = 0; !rc && i < nnodes; i++) {
        gp_node_spec ns;
        sim_node_spec(&nodes[i], &ns);
        rc = gp_engine_node_set(e, &ns, detail, sizeof detail);
    }
    if (!rc)
        rc = gp_engine_set_shapes(e, shapes, (size_t)nshapes);
    if (rc < 0) {
        errf(err, errlen, rc, "engine setup", detail);
        gp_engine_free(e);
        return NULL;
    }
    return e;
}

int sim_fgd_run(const sim_node *nodes, size_t nnodes, const sim_pod *pods, size_t npods,
                const sim_fgd_opts *o, sim_fgd_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    double t0 = sim_now();
    for (size_t i = 0; i < nnodes; i++)
        res->capacity_milli += (int64_t)nodes[i].ngpus * GP_MILLI;
    if (res->capacity_milli == 0)
        return errf(err, errlen, GP_EINVAL, "nodes", "the node list has no GPU");
    gp_shape *shapes;
    int nshapes = sim_typical_shapes(pods, npods, 0.95, &shapes);
    if (nshapes < 0)
        return errf(err, errlen, nshapes, "typical shapes", NULL);
    size_t *order;
    int narr = sim_fgd_arrivals(pods, npods, res->capacity_milli, o->tune, o->seed, &order);
    if (narr < 0) {
        free(shapes);
        return errf(err, errlen, narr, "arrivals", NULL);
    }
    gp_engine *e = fgd_engine(nodes, nnodes, shapes, nshapes, o, err, errlen);
    free(shapes);
    if (!e) {
        free(order);
        return GP_EINVAL;
    }
    sim_curve curve;
    sim_curve_init(&curve);
    double cap = (double)res->capacity_milli;
    int64_t arrived = 0, used = 0;
    for (int i = 0; i < narr; i++) {
        const sim_pod *p = &pods[order[i]];
        uint64_t id = (uint64_t)i + 1;
        gp_workload_spec w;
        sim_pod_workload(p, id, "pool", &w);
        w.submitted = i;
        arrived += sim_pod_milli(p);
        res->arrived++;
        int placed = 0;
        if (gp_engine_submit(e, &w, NULL, 0) == 0) {
            const gp_decision *d;
            size_t nd;
            if (gp_engine_cycle(e, i, &d, &nd, NULL) == 0)
                for (size_t k = 0; k < nd; k++)
                    if (d[k].type == GP_DECISION_BIND && d[k].workload == id)
                        placed = 1;
            if (!placed)
                gp_engine_cancel(e, id);
        }
        if (placed) {
            used += sim_pod_milli(p);
            res->placed++;
        } else {
            res->failed++;
        }
        double idle = 0, frag = gp_engine_fragmentation(e, &idle);
        double y[SIM_CURVE_VALUES] = {100.0 * (double)used / cap, 100.0 * frag / cap,
                                      idle > 0 ? 100.0 * frag / idle : 0};
        sim_curve_add(&curve, 100.0 * (double)arrived / cap, y);
    }
    sim_curve_rows(&curve, res->rows);
    gp_engine_free(e);
    free(order);
    res->seconds = sim_now() - t0;
    return 0;
}
