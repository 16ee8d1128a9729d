/*
 * reason.c — pending reasons as sentences a researcher can act on.
 *
 * The cycle stores a reason code and its figures on each pending workload
 * (cheap: no formatting for tens of thousands of workloads per cycle); the
 * sentence is written only when someone asks for it. The sentence says what
 * holds in the pool's own words; the remedies a front end offers (a CLI
 * flag, a command) are its own to word from gp_engine_pending_figures(): the
 * engine names no front end's controls.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/internal.h"

/* "1", "0.5", "2.25": milli-GPU as a decimal number of GPUs. */
static void fmt_number(char *buf, size_t len, int64_t milli) {
    int64_t whole = milli / GP_MILLI, frac = milli % GP_MILLI;
    if (frac == 0) {
        snprintf(buf, len, "%" PRId64, whole);
        return;
    }
    char f[8];
    snprintf(f, sizeof f, "%03" PRId64, frac);
    for (int i = 2; i > 0 && f[i] == '0'; i--)
        f[i] = '\0';
    snprintf(buf, len, "%" PRId64 ".%s", whole, f);
}

/* "1 GPU", "0.5 GPU", "2.25 GPUs". */
static void fmt_gpu(char *buf, size_t len, int64_t milli) {
    char num[32];
    fmt_number(num, sizeof num, milli);
    snprintf(buf, len, "%s GPU%s", num, milli > 0 && milli <= GP_MILLI ? "" : "s");
}

void gp__fmt_amount(char *buf, size_t len, int r, int64_t v) {
    if (r == GP_RES_GPU)
        fmt_gpu(buf, len, v);
    else if (r == GP_RES_CPU)
        if (v % 1000 == 0)
            snprintf(buf, len, "%" PRId64 " CPUs", v / 1000);
        else
            snprintf(buf, len, "%.3g CPUs", (double)v / 1000.0);
    else
        snprintf(buf, len, "%.1f GiB of memory", (double)v / (1024.0 * 1024.0 * 1024.0));
}

static const char *queue_word(const gp__queue *q) {
    return q->nchildren ? "department" : "project";
}

static void what_one_task(const gp__wl *w, char *buf, size_t len) {
    const gp__treq *r = &w->spec.req;
    char g[32];
    switch (r->gpu) {
    case GP_GPU_WHOLE:
        fmt_gpu(buf, len, (int64_t)r->gpus * GP_MILLI);
        return;
    case GP_GPU_FRACTION:
        fmt_number(g, sizeof g, r->gpu_milli);
        snprintf(buf, len, "%s", g);
        return;
    case GP_GPU_MEMORY:
        snprintf(buf, len, "%.1f GiB of GPU memory", (double)r->gpu_mem / (1 << 30));
        return;
    case GP_GPU_MIG:
        snprintf(buf, len, "a MIG %.16s instance", r->mig_profile);
        return;
    case GP_GPU_NONE:
        snprintf(buf, len, "no GPU");
        return;
    }
}

/* The GPUs that w's own project's running preemptible work of no lower
 * priority holds: what a higher priority would preempt (preemption is inside
 * a project and by priority only). */
static int64_t own_preemptible(const gp__wl *w) {
    const gp__queue *q = w->queue;
    int64_t held = 0;
    for (uint32_t i = 0; i < q->nhold; i++) {
        const gp__wl *v = q->holding[i];
        if (v->preemptible && v->state == GP_STATE_RUNNING && v->spec.priority >= w->spec.priority)
            held += v->charged.v[GP_RES_GPU];
    }
    return held;
}

/* Appends, if w's own project holds preemptible work of no lower priority,
 * that a higher priority would preempt it. */
static void own_training(const gp__wl *w, char *buf, size_t len) {
    int64_t held = own_preemptible(w);
    size_t n = strlen(buf);
    if (held <= 0 || n >= len)
        return;
    char a[48];
    fmt_gpu(a, sizeof a, held);
    snprintf(buf + n, len - n,
             "; project %s's own training workloads hold %s: a higher priority than theirs (%d) "
             "would preempt them",
             w->queue->spec.name, a, w->spec.priority);
}

int gp_engine_pending_reason(gp_engine *e, uint64_t id, char *buf, size_t len) {
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    gp__wl_diagnosed(e, w);
    if (w->state != GP_STATE_PENDING) {
        snprintf(buf, len, "not pending: %s", gp_state_name(w->state));
        return GP_WAIT_NONE;
    }
    const gp__queue *q = w->wait.queue ? w->wait.queue : w->queue;
    const gp__node *n =
        w->wait.node >= 0 && (uint64_t)w->wait.node < e->nnodes ? e->nodes[w->wait.node] : NULL;
    char a[48], b[48], task[64];
    what_one_task(w, task, sizeof task);
    switch (w->wait.why) {
    case GP_WAIT_NONE:
    case GP_WAIT_NEW:
    case GP_WAIT_COUNT:
        snprintf(buf, len, "waiting for the next scheduling cycle");
        break;
    case GP_WAIT_QUEUE_LIMIT:
        if (w->wait.a < 0) {
            snprintf(buf, len, "%s %s is at its limit for every GPU model this workload may use",
                     queue_word(q), q->spec.name);
        } else {
            gp__fmt_amount(a, sizeof a, (int)w->wait.a, w->wait.b);
            gp__fmt_amount(b, sizeof b, (int)w->wait.a, q->alloc.v[w->wait.a]);
            snprintf(buf, len,
                     "%s %s is at its limit of %s (it holds %s); an administrator can "
                     "raise it",
                     queue_word(q), q->spec.name, a, b);
        }
        break;
    case GP_WAIT_DESERVED:
        gp__fmt_amount(a, sizeof a, (int)w->wait.a, w->wait.b);
        gp__fmt_amount(b, sizeof b, (int)w->wait.a, q->alloc_np.v[w->wait.a]);
        /* Training borrows unless it was made non-preemptible: name that,
         * not the kind. */
        snprintf(buf, len,
                 "%s workloads run only inside deserved quota (they could not give borrowed "
                 "GPUs back): %s %s deserves %s and its non-preemptible workloads hold %s",
                 w->spec.kind == GP_KIND_TRAIN ? "non-preemptible" : gp_kind_name(w->spec.kind),
                 queue_word(q), q->spec.name, a, b);
        break;
    case GP_WAIT_NO_NODE:
        if (w->wait.a > 0)
            snprintf(buf, len,
                     "cannot run on this pool: even with every node empty, only %" PRId64
                     " of its %d tasks would fit at once%s; it waits until nodes are added "
                     "(or cancel it and ask for fewer tasks)",
                     w->wait.a, w->spec.min_tasks,
                     w->spec.same_domain ? " in one topology domain" : "");
        else
            snprintf(buf, len,
                     "cannot run on this pool: no node could ever hold one task (%s, %" PRId64
                     " milli-CPU, %.1f GiB of memory%s%s); it waits until such a node is added",
                     task, w->spec.req.cpu_milli, (double)w->spec.req.mem_bytes / (1 << 30),
                     w->spec.req.nmodels ? ", allowed GPU models" : "",
                     w->spec.req.nselectors ? ", node selectors" : "");
        break;
    case GP_WAIT_NO_FIT:
        fmt_gpu(a, sizeof a, w->wait.a);
        snprintf(buf, len,
                 "every GPU it may use is taken (%s free in total); it starts when GPUs free up",
                 a);
        own_training(w, buf, len);
        break;
    case GP_WAIT_FRAGMENTED:
        if (w->preq.ngpus > 0) {
            snprintf(buf, len,
                     "no node has %d whole GPUs free; the most on one node is %" PRId64 "%s%s",
                     w->preq.ngpus, w->wait.b, n ? " on node " : "", n ? n->spec.name : "");
        } else {
            fmt_number(b, sizeof b, w->wait.b);
            snprintf(buf, len, "no single GPU has %s free; the largest free slice is %s%s%s", task,
                     b, n ? " on node " : "", n ? n->spec.name : "");
        }
        break;
    case GP_WAIT_GANG:
        snprintf(buf, len,
                 "only %" PRId64 " of the %d tasks fit at once, and a gang starts all together "
                 "or not at all",
                 w->wait.a, w->spec.min_tasks);
        break;
    case GP_WAIT_EVICTING:
        snprintf(buf, len,
                 "room is being made: %d workload%s received the checkpoint signal and %s "
                 "stopping",
                 w->victims_left, w->victims_left == 1 ? "" : "s",
                 w->victims_left == 1 ? "is" : "are");
        break;
    case GP_WAIT_PAUSED: {
        const gp__node *pn = w->paused_on ? gp__node_at(e, w->paused_on - 1) : NULL;
        snprintf(buf, len,
                 "paused on node %s, its state kept in host memory: it resumes there, and only "
                 "there, once %s",
                 pn ? pn->spec.name : "?",
                 w->spec.req.gpu == GP_GPU_NONE ? "the node has room"
                                                : "a GPU of the model it had has room");
        break;
    }
    case GP_WAIT_FAIR_SHARE:
        fmt_gpu(a, sizeof a, w->wait.b);
        fmt_gpu(b, sizeof b, q->alloc.v[GP_RES_GPU]);
        snprintf(buf, len,
                 "every GPU it may use is taken, and %s %s already holds %s of its fair share "
                 "of %s; it starts when GPUs free up",
                 queue_word(q), q->spec.name, b, a);
        break;
    }
    return (int)w->wait.why;
}

int gp_engine_pending_figures(gp_engine *e, uint64_t id, gp_pending_figures *out) {
    gp__wl *w = gp__wl_find(e, id);
    if (w == NULL)
        return GP_ENOENT;
    gp__wl_diagnosed(e, w);
    memset(out, 0, sizeof *out);
    out->wait = w->state == GP_STATE_PENDING ? w->wait.why : GP_WAIT_NONE;
    out->resource = -1;
    out->kind = w->spec.kind;
    out->preemptible = w->preemptible;
    out->priority = w->spec.priority;
    const gp__queue *q = w->wait.queue ? w->wait.queue : w->queue;
    snprintf(out->queue, sizeof out->queue, "%s", q->spec.name);
    out->queue_is_department = q->nchildren > 0;
    if (w->state != GP_STATE_PENDING)
        return GP_WAIT_NONE;
    if ((w->wait.why == GP_WAIT_QUEUE_LIMIT || w->wait.why == GP_WAIT_DESERVED) && w->wait.a >= 0 &&
        w->wait.a < GP_RES_COUNT)
        out->resource = (int)w->wait.a;
    if (w->wait.why == GP_WAIT_NO_FIT)
        out->own_preemptible_milli = own_preemptible(w);
    return (int)w->wait.why;
}
