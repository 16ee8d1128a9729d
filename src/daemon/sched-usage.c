/*
 * sched-usage.c — the usage sampler, run by the scheduling loop's thread
 * (the only one that calls the executor) every usage period: it asks the
 * executor how busy each GPU was (GP_EXEC_CTL_GPU_USAGE), takes the running
 * tasks and the queue tree, turns them into rates (usage.h) and adds the
 * GPU-seconds since the previous sample to the store. API threads read the
 * last sample through gpd__sched_usage_now().
 *
 * Time between samples is charged at the rates of the newer sample, so a
 * change is off by at most one usage period. A gap longer than four periods
 * (the daemon was stopped, or the machine slept) is not charged at all
 * beyond one period: nobody knows what ran then.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/sched-int.h"

#define MAX_GPUS  4096
#define MAX_NODES 4096
#define PRUNE_MS  (3600 * 1000)

/* Builds the sample's input from the active workloads and the engine; the
 * arrays are malloc'ed (caller frees tasks, queues and names). */
static int build_input(gpd__sched *s, gpd__usage_input *in, gpd__usage_task **tasks,
                       gpd__usage_queue **queues, gp_queue_info **qinfo) {
    size_t nt = 0;
    for (size_t i = 0; i < s->nact; i++)
        nt += (size_t)s->act[i]->ntasks;
    size_t nq = gp_engine_queue_count(s->eng);
    *tasks = calloc(nt ? nt : 1, sizeof **tasks);
    *queues = calloc(nq ? nq : 1, sizeof **queues);
    *qinfo = calloc(nq ? nq : 1, sizeof **qinfo);
    if (!*tasks || !*queues || !*qinfo)
        return GP_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < s->nact; i++) {
        const active *a = s->act[i];
        /* Only what holds GPUs now: not yet launched, or stopped, holds none. */
        if (a->state != GP_WL_RUNNING && a->state != GP_WL_STOPPING)
            continue;
        for (int t = 0; t < a->ntasks; t++) {
            if (a->tasks[t].state != GP_TASK_RUNNING)
                continue;
            gpd__usage_task *x = &(*tasks)[k++];
            x->project = a->project;
            x->user = a->user;
            x->node = a->tasks[t].node;
            x->nslices = a->tasks[t].binding.nslices;
            x->slices = a->tasks[t].binding.slices;
        }
    }
    size_t kq = 0;
    for (size_t i = 0; i < nq; i++) {
        if (gp_engine_queue_at(s->eng, i, &(*qinfo)[kq]) < 0)
            continue;
        (*queues)[kq].name = (*qinfo)[kq].name;
        (*queues)[kq].parent = (*qinfo)[kq].parent;
        (*queues)[kq].deserved_milli = (*qinfo)[kq].deserved.v[GP_RES_GPU];
        kq++;
    }
    in->tasks = *tasks;
    in->ntasks = k;
    in->queues = *queues;
    in->nqueues = kq;
    return 0;
}

/* The sessions the idle policy suspended, whose GPUs were back in the pool
 * by now: rows[] is malloc'ed (caller frees), out[] points into it. */
typedef struct returns {
    gpd__idle_return *rows;
    gpd__usage_return *out;
    size_t n;
} returns;

static void load_returns(gpd__sched *s, returns *x, int64_t now) {
    gpd__err e = {0};
    memset(x, 0, sizeof *x);
    if (gpd__store_idle_returned(s->d->store, now, &x->rows, &x->n, &e) < 0)
        gpd__log("usage sample: the returned GPUs are not counted (%s)", e.msg);
    x->out = calloc(x->n ? x->n : 1, sizeof *x->out);
    for (size_t i = 0; x->out && i < x->n; i++)
        x->out[i] = (gpd__usage_return){x->rows[i].project, x->rows[i].user, x->rows[i].gpu_milli};
    if (!x->out)
        x->n = 0;
}

void gpd__loop_usage_tick(gpd__sched *s, int64_t now) {
    int64_t period = s->d->cfg.usage_ms;
    if (period <= 0 || now < s->usage_next_ms)
        return;
    s->usage_next_ms = now + period;
    gp_gpu_usage *gpus = calloc(MAX_GPUS, sizeof *gpus);
    if (!gpus)
        return;
    gp_exec_gpu_usage gu = {.gpus = gpus, .max = MAX_GPUS};
    int rc = gp_exec_control(s->ex, GP_EXEC_CTL_GPU_USAGE, &gu);
    if (rc < 0) {
        gu.n = 0;
        if (rc == GP_ENOTSUP && !gu.note[0])
            snprintf(gu.note, sizeof gu.note,
                     "the %s executor cannot measure GPU use, so used is unknown",
                     gp_executor_name(s->ex));
    }
    gpd__loop_idle_tick(s, gpus, gu.n, now);
    /* What each node really uses, besides what its tasks asked for. */
    gp_node_usage *nodes = calloc(MAX_NODES, sizeof *nodes);
    gp_exec_node_usage nu = {.nodes = nodes, .max = nodes ? MAX_NODES : 0};
    if (gp_exec_control(s->ex, GP_EXEC_CTL_NODE_USAGE, &nu) < 0)
        nu.n = 0;
    returns ret;
    load_returns(s, &ret, now);
    gpd__usage_input in = {.gpus = gpus, .ngpus = gu.n, .returns = ret.out, .nreturns = ret.n};
    gpd__usage_task *tasks = NULL;
    gpd__usage_queue *queues = NULL;
    gp_queue_info *qinfo = NULL;
    gpd__usage_rate *rates = NULL;
    size_t nrates = 0;
    /* The engine's queue names live only while eng_mu is held. */
    pthread_mutex_lock(&s->eng_mu);
    rc = build_input(s, &in, &tasks, &queues, &qinfo);
    if (rc == 0)
        rc = gpd__usage_rates(&in, &rates, &nrates);
    pthread_mutex_unlock(&s->eng_mu);
    free(tasks);
    free(queues);
    free(qinfo);
    free(ret.out);
    free(ret.rows);
    if (rc < 0) {
        gpd__log("usage sample: %s", gp_strerror(rc));
        free(gpus);
        free(nodes);
        return;
    }
    int64_t from = s->usage.at_ms;
    if (from > 0 && now - from > 4 * period)
        from = now - period;
    if (from > 0 && now > from) {
        gpd__usage_row *rows = NULL;
        size_t nrows = 0;
        gpd__err e = {0};
        if (gpd__usage_account(rates, nrates, from, now, &rows, &nrows) < 0 ||
            gpd__store_usage_add(s->d->store, rows, nrows, &e) < 0)
            gpd__log("usage sample: not recorded (%s)", e.msg[0] ? e.msg : "out of memory");
        free(rows);
    }
    if (now >= s->usage_prune_ms) {
        gpd__err e = {0};
        if (gpd__store_usage_prune(s->d->store, now / 1000, &e) < 0)
            gpd__log("usage: pruning old buckets failed (%s)", e.msg);
        s->usage_prune_ms = now + PRUNE_MS;
    }
    pthread_mutex_lock(&s->usage_mu);
    gpd__usage_now_free(&s->usage);
    s->usage = (gpd__usage_now){
        .at_ms = now, .rates = rates, .nrates = nrates, .gpus = gpus, .ngpus = gu.n};
    snprintf(s->usage.note, sizeof s->usage.note, "%s", gu.note);
    free(s->usage_nodes);
    s->usage_nodes = nodes;
    s->usage_nnodes = nu.n;
    pthread_mutex_unlock(&s->usage_mu);
}

void gpd__sched_node_usage(gpd__sched *s, const char *node, int64_t *cpu_milli,
                           int64_t *mem_bytes) {
    *cpu_milli = *mem_bytes = -1;
    pthread_mutex_lock(&s->usage_mu);
    for (size_t i = 0; i < s->usage_nnodes; i++)
        if (strcmp(s->usage_nodes[i].node, node) == 0) {
            *cpu_milli = s->usage_nodes[i].cpu_milli;
            *mem_bytes = s->usage_nodes[i].mem_bytes;
            break;
        }
    pthread_mutex_unlock(&s->usage_mu);
}

void gpd__sched_usage_free(gpd__sched *s) {
    gpd__usage_now_free(&s->usage);
    free(s->usage_nodes);
    s->usage_nodes = NULL;
}

int gpd__sched_usage_now(gpd__sched *s, gpd__usage_now *out) {
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->usage_mu);
    const gpd__usage_now *u = &s->usage;
    out->at_ms = u->at_ms;
    out->rates = malloc((u->nrates ? u->nrates : 1) * sizeof *out->rates);
    out->gpus = malloc((u->ngpus ? u->ngpus : 1) * sizeof *out->gpus);
    if (out->rates && out->gpus) {
        if (u->nrates)
            memcpy(out->rates, u->rates, u->nrates * sizeof *out->rates);
        if (u->ngpus)
            memcpy(out->gpus, u->gpus, u->ngpus * sizeof *out->gpus);
        out->nrates = u->nrates;
        out->ngpus = u->ngpus;
    }
    snprintf(out->note, sizeof out->note, "%s", u->note);
    pthread_mutex_unlock(&s->usage_mu);
    if (!out->rates || !out->gpus) {
        gpd__usage_now_free(out);
        return GP_ENOMEM;
    }
    return 0;
}

void gpd__usage_now_free(gpd__usage_now *u) {
    free(u->rates);
    free(u->gpus);
    u->rates = NULL;
    u->gpus = NULL;
    u->nrates = u->ngpus = 0;
}

const gpd__usage_rate *gpd__usage_find(const gpd__usage_now *u, gpd__usage_kind kind,
                                       const char *key) {
    for (size_t i = 0; i < u->nrates; i++)
        if (u->rates[i].kind == kind && strcmp(u->rates[i].key, key) == 0)
            return &u->rates[i];
    return NULL;
}
