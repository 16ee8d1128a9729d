/*
 * replay.c — the virtual-time replay (see replay.h): the jobs of a trace,
 * one engine per run set up for the mode, an event heap (arrivals,
 * completions, releases after the checkpoint grace, optional ticks), a
 * scheduling cycle after every instant at which something happened, and the
 * measurements: time-weighted allocation, queueing delay and completion
 * time percentiles, preemptions, per-project share against deserved quota.
 */
#include "common/gp_array.h"
#include "common/gp_names.h"
#include "sim/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/csv.h"
#include "sim/fgd.h"
#include "sim/metrics.h"

#define PROJECT_LABEL "gpupool.io/project"

GP_NAMED_ENUM_DEFINE(sim_mode, SIM_MODES, SIM_MODE_COUNT, "?")

void sim_replay_opts_init(sim_replay_opts *o) {
    memset(o, 0, sizeof *o);
    o->mode = SIM_MODE_POOLED;
    o->policy = GP_PLACE_GPUPOOL;
    o->seed = 1;
    o->grace_s = 30;
}

/* ------------------------------------------------------------------------ */
/* Jobs                                                                      */
/* ------------------------------------------------------------------------ */

static int cmp_job(const void *a, const void *b) {
    const sim_job *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return (x->pod > y->pod) - (x->pod < y->pod);
}

int sim_replay_jobs(const sim_pod *pods, size_t npods, const int32_t *leaf_of,
                    const char *pods_path, sim_job **out, size_t *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    sim_job *j = malloc((npods ? npods : 1) * sizeof *j);
    if (!j)
        return sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", pods_path);
    for (size_t i = 0; i < npods; i++) {
        const sim_pod *p = &pods[i];
        if (p->creation < 0 || p->deletion < 0) {
            free(j);
            return sim_errf(err, errlen, GP_EINVAL,
                            "%s:%ld: field %s: empty (replay needs creation_time and "
                            "deletion_time)",
                            pods_path, p->line,
                            p->creation < 0 ? "creation_time" : "deletion_time");
        }
        int64_t from =
            p->scheduled >= p->creation && p->scheduled <= p->deletion ? p->scheduled : p->creation;
        j[i] = (sim_job){i, leaf_of[i], p->creation, p->deletion - from};
    }
    qsort(j, npods, sizeof *j, cmp_job);
    *out = j;
    *n = npods;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

enum { EV_ARRIVE, EV_FINISH, EV_RELEASE, EV_TICK };

typedef struct event {
    int64_t t;
    uint64_t seq; /* FIFO among equal times */
    int32_t type;
    uint32_t epoch; /* FINISH/RELEASE: stale if the job's moved on */
    size_t job;
} event;

typedef struct heap {
    event *v;
    size_t n, cap;
    uint64_t seq;
} heap;

static int ev_less(const event *a, const event *b) {
    return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static int heap_push(heap *h, int64_t t, int type, size_t job, uint32_t epoch) {
    if (GP_ARRAY_ROOM(h->v, h->n, h->cap, 1024) < 0)
        return GP_ENOMEM;
    size_t i = h->n++;
    event e = {t, h->seq++, type, epoch, job};
    while (i > 0 && ev_less(&e, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = e;
    return 0;
}

static event heap_pop(heap *h) {
    event top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && ev_less(&h->v[c + 1], &h->v[c]))
            c++;
        if (!ev_less(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* ------------------------------------------------------------------------ */
/* Engine setup                                                              */
/* ------------------------------------------------------------------------ */

enum { J_FUTURE, J_PENDING, J_RUNNING, J_EVICTING, J_DONE, J_REJECTED };

typedef struct jstate {
    int64_t remaining;   /* seconds of work left */
    int64_t start;       /* current run began */
    int64_t first_start; /* -1 until first bound */
    int64_t end;         /* finished at */
    int64_t milli;       /* milli-GPU held while bound */
    uint32_t epoch;
    int32_t st;
} jstate;

typedef struct run {
    const sim_replay_opts *o;
    const sim_node *nodes;
    size_t nnodes;
    const sim_pod *pods;
    const sim_job *jobs;
    size_t njobs;
    const sim_project *pr;
    size_t npr;
    gp_engine *e;
    int64_t *des[GP_RES_COUNT]; /* deserved per project row and resource */
    int32_t *owner;             /* static: the leaf owning each node */
    sim_node *carved;           /* static on a small pool: the nodes split by GPU */
    jstate *js;
    heap h;
    int64_t alloc;   /* milli-GPU held now */
    int64_t *palloc; /* per project row */
    sim_twmean tw, *ptw;
    sim_replay_result *res;
    size_t cap_series;
    int64_t pending;
} run;

/* Deserved quotas per row and resource. Pooled: GPU as sim_scale_quotas,
 * CPU and memory in the same proportion of the pool. Static: what the
 * project's nodes hold; departments the sum of their children. */
static void set_deserved(run *r, const int64_t pool[GP_RES_COUNT]) {
    if (r->o->mode != SIM_MODE_STATIC) {
        sim_scale_quotas(r->pr, r->npr, pool[GP_RES_GPU], r->des[GP_RES_GPU]);
        for (size_t i = 0; i < r->npr; i++)
            for (int k = GP_RES_CPU; k < GP_RES_COUNT; k++)
                r->des[k][i] =
                    pool[GP_RES_GPU] > 0
                        ? (int64_t)((__int128)pool[k] * r->des[GP_RES_GPU][i] / pool[GP_RES_GPU])
                        : 0;
        return;
    }
    for (size_t i = 0; i < r->npr; i++)
        for (int k = 0; k < GP_RES_COUNT; k++)
            r->des[k][i] = 0;
    for (size_t j = 0; j < r->nnodes; j++) {
        int32_t i = r->owner[j];
        if (i < 0)
            continue;
        r->des[GP_RES_GPU][i] += (int64_t)r->nodes[j].ngpus * GP_MILLI;
        r->des[GP_RES_CPU][i] += r->nodes[j].cpu_milli;
        r->des[GP_RES_MEM][i] += r->nodes[j].mem_bytes;
    }
    for (size_t i = r->npr; i-- > 0;)
        for (size_t c = i + 1; c < r->npr; c++)
            if (!strcmp(r->pr[c].parent, r->pr[i].name))
                for (int k = 0; k < GP_RES_COUNT; k++)
                    r->des[k][i] += r->des[k][c];
}

static int setup_engine(run *r, char *err, size_t errlen) {
    const sim_replay_opts *o = r->o;
    gp_engine_config cfg;
    gp_engine_config_init(&cfg);
    cfg.seed = o->seed;
    cfg.placement = o->policy;
    /* A static share has nothing to lend, so nothing to reclaim. */
    if (o->mode == SIM_MODE_STATIC)
        cfg.reclaim = 0;
    char detail[GP_ERR_MAX] = "";
    int rc = gp_engine_open(&cfg, &r->e, detail, sizeof detail);
    if (rc < 0)
        return sim_errf(err, errlen, rc, "engine: %s", detail);
    int64_t pool[GP_RES_COUNT] = {0};
    for (size_t j = 0; j < r->nnodes; j++) {
        pool[GP_RES_GPU] += (int64_t)r->nodes[j].ngpus * GP_MILLI;
        pool[GP_RES_CPU] += r->nodes[j].cpu_milli;
        pool[GP_RES_MEM] += r->nodes[j].mem_bytes;
    }
    r->res->capacity_milli = pool[GP_RES_GPU];
    if (o->mode == SIM_MODE_STATIC) {
        int64_t *d = r->des[GP_RES_GPU];
        sim_scale_quotas(r->pr, r->npr, pool[GP_RES_GPU], d);
        if (sim_static_split(r->pr, r->npr, d, r->nodes, r->nnodes, r->owner) < 0)
            return sim_errf(err, errlen, GP_ENOMEM, "static split: out of memory");
        /* Fewer GPU nodes than projects: whole nodes would leave a project
         * with nothing and reject all its jobs; projects own GPUs of shared
         * nodes instead. */
        if (sim_static_starves(r->pr, r->npr, d, r->nodes, r->nnodes, r->owner)) {
            int32_t *owner;
            size_t n;
            if (sim_static_carve(r->pr, r->npr, d, r->nodes, r->nnodes, &r->carved, &owner, &n) < 0)
                return sim_errf(err, errlen, GP_ENOMEM, "static split: out of memory");
            free(r->owner);
            r->owner = owner;
            r->nodes = r->carved;
            r->nnodes = n;
            r->res->static_by_gpu = 1;
        }
    }
    set_deserved(r, pool);
    rc = 0;
    for (size_t i = 0; !rc && i < r->npr; i++) {
        const sim_project *p = &r->pr[i];
        gp_queue_spec q;
        gp_queue_spec_init(&q, p->name, p->parent);
        q.priority = p->priority;
        /* The replay's --min-runtime is the admin's choice: the queues allow it. */
        if (o->min_runtime_s * 1000 > q.min_runtime_max)
            q.min_runtime_max = o->min_runtime_s * 1000;
        for (int k = 0; k < GP_RES_COUNT; k++) {
            q.quota[k].deserved = r->des[k][i];
            q.quota[k].weight = p->weight;
        }
        q.quota[GP_RES_GPU].limit =
            o->mode == SIM_MODE_STATIC && p->leaf ? r->des[GP_RES_GPU][i] : p->limit_milli;
        rc = gp_engine_queue_set(r->e, &q, detail, sizeof detail);
    }
    for (size_t j = 0; !rc && j < r->nnodes; j++) {
        gp_node_spec ns;
        sim_node_spec(&r->nodes[j], &ns);
        if (o->mode == SIM_MODE_STATIC && r->owner[j] >= 0) {
            snprintf(ns.labels[0].key, sizeof ns.labels[0].key, "%s", PROJECT_LABEL);
            snprintf(ns.labels[0].value, sizeof ns.labels[0].value, "%s", r->pr[r->owner[j]].name);
            ns.nlabels = 1;
        }
        rc = gp_engine_node_set(r->e, &ns, detail, sizeof detail);
    }
    if (rc < 0)
        return sim_errf(err, errlen, rc, "engine setup: %s", detail);
    return 0;
}

/* The workload of job k in this mode. */
static void job_workload(const run *r, size_t k, gp_workload_spec *w) {
    const sim_job *j = &r->jobs[k];
    const sim_pod *p = &r->pods[j->pod];
    const sim_project *leaf = &r->pr[j->leaf];
    sim_pod_workload(p, (uint64_t)k + 1, leaf->name, w);
    if (!p->kind_given)
        w->kind = p->latency_sensitive ? GP_KIND_INFERENCE : GP_KIND_TRAIN;
    w->submitted = j->submit * 1000;
    w->min_runtime = r->o->min_runtime_s * 1000;
    if (r->o->mode != SIM_MODE_FRACTIONAL && w->req.gpu == GP_GPU_FRACTION) {
        /* Whole GPUs only: a share is rounded up to one GPU. */
        w->req.gpu = GP_GPU_WHOLE;
        w->req.gpus = 1;
        w->req.gpu_milli = 0;
    }
    if (r->o->mode == SIM_MODE_STATIC) {
        gp_label *s = &w->req.selectors[w->req.nselectors++];
        snprintf(s->key, sizeof s->key, "%s", PROJECT_LABEL);
        snprintf(s->value, sizeof s->value, "%s", leaf->name);
    }
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                  */
/* ------------------------------------------------------------------------ */

/* The allocation changed by d milli-GPU at time t for project row i. */
static int alloc_change(run *r, int64_t t, int32_t i, int64_t d) {
    if (d == 0)
        return 0;
    r->alloc += d;
    r->palloc[i] += d;
    sim_twmean_set(&r->tw, t, (double)r->alloc);
    sim_twmean_set(&r->ptw[i], t, (double)r->palloc[i]);
    sim_replay_result *res = r->res;
    if (res->nseries && res->series[res->nseries - 1].t == t) {
        res->series[res->nseries - 1].milli = r->alloc;
        return 0;
    }
    if (GP_ARRAY_ROOM(res->series, res->nseries, r->cap_series, 1024) < 0)
        return GP_ENOMEM;
    res->series[res->nseries++] = (sim_point){t, r->alloc};
    return 0;
}

static int on_event(run *r, const event *ev) {
    jstate *s = &r->js[ev->job];
    uint64_t id = (uint64_t)ev->job + 1;
    int32_t leaf = r->jobs[ev->job].leaf;
    switch (ev->type) {
    case EV_ARRIVE: {
        gp_workload_spec w;
        job_workload(r, ev->job, &w);
        char detail[GP_ERR_MAX];
        if (gp_engine_submit(r->e, &w, detail, sizeof detail) < 0) {
            s->st = J_REJECTED;
            if (r->res->rejected++ == 0)
                snprintf(r->res->first_reject, sizeof r->res->first_reject, "pod %.63s: %.180s",
                         r->pods[r->jobs[ev->job].pod].name, detail);
            return 0;
        }
        s->st = J_PENDING;
        r->pending++;
        return 0;
    }
    case EV_FINISH:
        if (ev->epoch != s->epoch || (s->st != J_RUNNING && s->st != J_EVICTING))
            return 0;
        gp_engine_finished(r->e, id);
        s->st = J_DONE;
        s->end = ev->t;
        r->res->finished++;
        return alloc_change(r, ev->t, leaf, -s->milli);
    case EV_RELEASE:
        if (ev->epoch != s->epoch || s->st != J_EVICTING)
            return 0;
        gp_engine_released(r->e, id, ev->t * 1000);
        s->st = J_PENDING;
        r->pending++;
        return alloc_change(r, ev->t, leaf, -s->milli);
    default:
        return 0;
    }
}

static int on_decision(run *r, int64_t t, const gp_decision *d) {
    size_t k = (size_t)d->workload - 1;
    jstate *s = &r->js[k];
    int32_t leaf = r->jobs[k].leaf;
    if (d->type == GP_DECISION_BIND) {
        int64_t milli = 0;
        for (int32_t i = 0; i < d->ntasks; i++)
            for (int32_t g = 0; g < d->tasks[i].nslices; g++)
                milli += d->tasks[i].slices[g].milli;
        gp_engine_started(r->e, d->workload, t * 1000);
        s->st = J_RUNNING;
        s->start = t;
        s->milli = milli;
        if (s->first_start < 0) {
            s->first_start = t;
            r->res->started++;
        }
        r->pending--;
        s->epoch++;
        int rc = heap_push(&r->h, t + s->remaining, EV_FINISH, k, s->epoch);
        return rc ? rc : alloc_change(r, t, leaf, milli);
    }
    /* EVICT: the checkpoint is taken at the signal, so the work done so far
     * is kept; if what is left ends within the grace period the job simply
     * finishes (its FINISH event stays valid), otherwise it is released
     * when the grace period is over. */
    r->res->evictions++;
    if (d->reason >= 1 && d->reason <= 4)
        r->res->evict_by[d->reason]++;
    if (s->st != J_RUNNING)
        return 0;
    s->remaining -= t - s->start;
    if (s->remaining < 0)
        s->remaining = 0;
    s->st = J_EVICTING;
    if (s->remaining <= r->o->grace_s)
        return 0;
    s->epoch++;
    return heap_push(&r->h, t + r->o->grace_s, EV_RELEASE, k, s->epoch);
}

static void progress(const run *r, size_t arrived, double t0, int *last) {
    if (!r->o->progress || r->njobs == 0)
        return;
    int pct = (int)(100 * arrived / r->njobs);
    if (pct / 10 > *last / 10 && sim_now() - t0 > 2.0) {
        fprintf(stderr, "replay %s: %d%% of %zu jobs arrived, %.1f s\n", sim_mode_name(r->o->mode),
                pct, r->njobs, sim_now() - t0);
        *last = pct;
    }
}

static int loop(run *r, char *err, size_t errlen) {
    double wall0 = sim_now();
    int last_pct = 0, tick_queued = 0;
    size_t arrived = 0;
    for (size_t k = 0; k < r->njobs; k++)
        if (heap_push(&r->h, r->jobs[k].submit, EV_ARRIVE, k, 0) < 0)
            return sim_errf(err, errlen, GP_ENOMEM, "replay: out of memory");
    r->res->t0 = r->njobs ? r->jobs[0].submit : 0;
    int64_t t = r->res->t0;
    while (r->h.n) {
        t = r->h.v[0].t;
        while (r->h.n && r->h.v[0].t == t) {
            event ev = heap_pop(&r->h);
            if (ev.type == EV_ARRIVE)
                arrived++;
            if (ev.type == EV_TICK)
                tick_queued = 0;
            if (on_event(r, &ev) < 0)
                return sim_errf(err, errlen, GP_ENOMEM, "replay: out of memory");
        }
        const gp_decision *d;
        size_t nd;
        int rc = gp_engine_cycle(r->e, t * 1000, &d, &nd, NULL);
        if (rc < 0)
            return sim_errf(err, errlen, rc, "engine cycle at t=%lld s: %s", (long long)t,
                            gp_strerror(rc));
        r->res->cycles++;
        for (size_t i = 0; i < nd; i++)
            if (on_decision(r, t, &d[i]) < 0)
                return sim_errf(err, errlen, GP_ENOMEM, "replay: out of memory");
        progress(r, arrived, wall0, &last_pct);
        /* With nothing left to happen, work that still waits never runs. */
        if (!r->h.n && nd == 0)
            break;
        if (r->o->tick_s > 0 && r->pending > 0 && !tick_queued) {
            if (heap_push(&r->h, t + r->o->tick_s, EV_TICK, 0, 0) < 0)
                return sim_errf(err, errlen, GP_ENOMEM, "replay: out of memory");
            tick_queued = 1;
        }
    }
    r->res->t1 = t;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Results                                                                   */
/* ------------------------------------------------------------------------ */

static int measure(run *r) {
    sim_replay_result *res = r->res;
    int64_t t1 = res->t1;
    double *jct = malloc((r->njobs ? r->njobs : 1) * sizeof *jct);
    double *pd = malloc((r->njobs ? r->njobs : 1) * sizeof *pd);
    res->delays = malloc((r->njobs ? r->njobs : 1) * sizeof *res->delays);
    res->projects = calloc(r->npr ? r->npr : 1, sizeof *res->projects);
    if (!jct || !pd || !res->delays || !res->projects) {
        free(jct);
        free(pd);
        return GP_ENOMEM;
    }
    size_t nd = 0, nj = 0;
    double dsum = 0, jsum = 0;
    for (size_t k = 0; k < r->njobs; k++) {
        const jstate *s = &r->js[k];
        if (s->st == J_REJECTED)
            continue;
        if (s->first_start < 0)
            res->unserved++;
        double delay = (double)((s->first_start >= 0 ? s->first_start : t1) - r->jobs[k].submit);
        res->delays[nd++] = delay;
        dsum += delay;
        if (s->st == J_DONE) {
            jct[nj] = (double)(s->end - r->jobs[k].submit);
            jsum += jct[nj++];
        }
    }
    res->jobs = (int64_t)r->njobs;
    res->delay_mean = nd ? dsum / (double)nd : 0;
    res->delay_p50 = sim_quantile(res->delays, nd, 0.50);
    res->delay_p95 = sim_quantile(res->delays, nd, 0.95);
    res->delay_p99 = sim_quantile(res->delays, nd, 0.99);
    res->jct_mean = nj ? jsum / (double)nj : 0;
    res->jct_p50 = sim_quantile(jct, nj, 0.50);
    res->jct_p95 = sim_quantile(jct, nj, 0.95);
    res->alloc_pct = res->capacity_milli > 0
                         ? 100.0 * sim_twmean_mean(&r->tw, t1) / (double)res->capacity_milli
                         : 0;
    for (size_t i = 0; i < r->npr; i++) {
        if (!r->pr[i].leaf)
            continue;
        sim_project_result *p = &res->projects[res->nprojects++];
        size_t n = 0;
        for (size_t k = 0; k < r->njobs; k++) {
            const jstate *s = &r->js[k];
            if (r->jobs[k].leaf != (int32_t)i || s->st == J_REJECTED)
                continue;
            pd[n++] = (double)((s->first_start >= 0 ? s->first_start : t1) - r->jobs[k].submit);
        }
        p->name = r->pr[i].name;
        p->leaf = (int32_t)i;
        p->jobs = (int64_t)n;
        p->delay_p95 = sim_quantile(pd, n, 0.95);
        p->deserved_gpus = (double)r->des[GP_RES_GPU][i] / GP_MILLI;
        p->mean_gpus = sim_twmean_mean(&r->ptw[i], t1) / GP_MILLI;
        p->share = p->deserved_gpus > 0 ? p->mean_gpus / p->deserved_gpus : 0;
    }
    free(jct);
    free(pd);
    return 0;
}

void sim_replay_result_free(sim_replay_result *r) {
    free(r->delays);
    free(r->series);
    free(r->projects);
    memset(r, 0, sizeof *r);
}

static void run_free(run *r) {
    if (r->e)
        gp_engine_free(r->e);
    for (int k = 0; k < GP_RES_COUNT; k++)
        free(r->des[k]);
    free(r->owner);
    free(r->carved);
    free(r->js);
    free(r->h.v);
    free(r->palloc);
    free(r->ptw);
}

int sim_replay_run(const sim_node *nodes, size_t nnodes, const sim_pod *pods, const sim_job *jobs,
                   size_t njobs, const sim_project *pr, size_t npr, const sim_replay_opts *o,
                   sim_replay_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    double wall0 = sim_now();
    run r = {.o = o,
             .nodes = nodes,
             .nnodes = nnodes,
             .pods = pods,
             .jobs = jobs,
             .njobs = njobs,
             .pr = pr,
             .npr = npr,
             .res = res};
    res->mode = o->mode;
    res->nodes = (int32_t)nnodes;
    int ok = 1;
    for (int k = 0; k < GP_RES_COUNT; k++)
        ok &= (r.des[k] = calloc(npr ? npr : 1, sizeof(int64_t))) != NULL;
    r.owner = malloc((nnodes ? nnodes : 1) * sizeof *r.owner);
    r.js = calloc(njobs ? njobs : 1, sizeof *r.js);
    r.palloc = calloc(npr ? npr : 1, sizeof *r.palloc);
    r.ptw = calloc(npr ? npr : 1, sizeof *r.ptw);
    int rc = ok && r.owner && r.js && r.palloc && r.ptw
                 ? 0
                 : sim_errf(err, errlen, GP_ENOMEM, "replay: out of memory");
    for (size_t j = 0; !rc && j < nnodes; j++)
        r.owner[j] = -1;
    for (size_t k = 0; !rc && k < njobs; k++) {
        r.js[k].remaining = jobs[k].duration;
        r.js[k].first_start = -1;
    }
    sim_twmean_init(&r.tw);
    for (size_t i = 0; !rc && i < npr; i++)
        sim_twmean_init(&r.ptw[i]);
    if (!rc)
        rc = setup_engine(&r, err, errlen);
    if (!rc) {
        sim_twmean_set(&r.tw, njobs ? jobs[0].submit : 0, 0);
        for (size_t i = 0; i < npr; i++)
            sim_twmean_set(&r.ptw[i], njobs ? jobs[0].submit : 0, 0);
        rc = loop(&r, err, errlen);
    }
    if (!rc && measure(&r) < 0)
        rc = sim_errf(err, errlen, GP_ENOMEM, "replay: out of memory");
    run_free(&r);
    if (rc < 0) {
        sim_replay_result_free(res);
        return rc;
    }
    res->seconds = sim_now() - wall0;
    return 0;
}
