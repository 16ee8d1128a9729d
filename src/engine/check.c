/*
 * check.c — the invariant checker: recomputes the engine's books from the
 * primary data and compares. Tests run it after every cycle (and the
 * check_invariants option makes every cycle run it).
 *
 * Checked: every GPU's slices sum to what it has in use and never past its
 * capacity, in milli-GPU and in bytes; MIG slots are held by whoever holds a
 * slice naming them; CPU and memory per node likewise; the node task index
 * and the workloads' bindings agree both ways; no task holds a GPU twice;
 * every queue's books (held, held by non-preemptible work, pending demand,
 * counts, per-model use) equal the sums over its subtree's workloads; a
 * pending workload holds nothing and sits in its queue's pending list.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        gp_errf(err, errlen, __VA_ARGS__);                                                         \
        rc = GP_ECORRUPT;                                                                          \
        goto out;                                                                                  \
    } while (0)

typedef struct books {
    gp_res alloc, alloc_np, demand;
    int64_t leaving, arriving;
    int64_t npending, nrunning;
    int64_t model[GP__MAX_MODELS];
} books;

/* Whether node n is in list l of family f: its neighbours, or the list's
 * ends, point back at it. */
static int linked(const gp_engine *e, const gp__idlist *l, const gp__node *n, int f) {
    uint32_t me = n->id + 1, prev = n->link[f][0], next = n->link[f][1];
    int before = prev ? e->nodes[prev - 1] && e->nodes[prev - 1]->link[f][1] == me : l->first == me;
    int after = next ? e->nodes[next - 1] && e->nodes[next - 1]->link[f][0] == me : l->last == me;
    return before && after;
}

/* The pool-wide maxima node.c keeps as nodes come and go, against a count
 * over every node. */
static int check_maxima(const gp_engine *e, char *err, size_t errlen) {
    int rc = 0;
    int64_t mem = 0;
    int32_t whole = 0;
    uint32_t nmem = 0, nwhole = 0;
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const gp__node *n = e->nodes[i];
        if (!n)
            continue;
        int64_t m = 0;
        int32_t w = 0;
        for (int32_t g = 0; g < n->spec.ngpus; g++) {
            m = n->spec.gpus[g].mem_bytes > m ? n->spec.gpus[g].mem_bytes : m;
            w += !n->spec.gpus[g].mig;
        }
        nmem = m > mem ? 1 : nmem + (m == mem);
        mem = m > mem ? m : mem;
        nwhole = w > whole ? 1 : nwhole + (w == whole);
        whole = w > whole ? w : whole;
    }
    if (e->live_nodes == 0)
        nmem = nwhole = 0;
    if (e->max_gpu_mem != mem || e->max_gpus != whole ||
        (e->live_nodes && (e->nat_max_gpu_mem != nmem || e->nat_max_gpus != nwhole)))
        FAIL("pool maxima: %" PRId64 " bytes (%u nodes), %d GPUs (%u nodes); the nodes say %" PRId64
             " (%u), %d (%u)",
             e->max_gpu_mem, e->nat_max_gpu_mem, e->max_gpus, e->nat_max_gpus, mem, nmem, whole,
             nwhole);
out:
    return rc;
}

static int check_nodes(const gp_engine *e, char *err, size_t errlen) {
    int rc = check_maxima(e, err, errlen);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const gp__node *n = e->nodes[i];
        if (!n)
            continue;
        int64_t milli[GP_MAX_GPUS_PER_NODE] = {0}, mem[GP_MAX_GPUS_PER_NODE] = {0};
        int32_t slices[GP_MAX_GPUS_PER_NODE] = {0};
        int32_t withheld = 0;
        int64_t cpu = 0, hmem = 0;
        for (uint32_t k = 0; k < n->ntasks; k++) {
            const gp__wl *w = n->tasks[k].wl;
            int32_t t = n->tasks[k].task;
            if (t < 0 || t >= w->nbound || w->tasks[t].node != n->id || w->tasks[t].node_pos != k)
                FAIL("node %s: task index entry %u does not match workload %" PRIu64, n->spec.name,
                     k, w->spec.id);
            const gp_task_binding *b = &w->tasks[t].b;
            uint32_t seen = 0;
            for (int32_t s = 0; s < b->nslices; s++) {
                const gp_slice *sl = &b->slices[s];
                if (sl->gpu < 0 || sl->gpu >= n->spec.ngpus)
                    FAIL("workload %" PRIu64 ": slice on missing GPU %d of node %s", w->spec.id,
                         sl->gpu, n->spec.name);
                if (seen & (1u << sl->gpu))
                    FAIL("workload %" PRIu64 " task %d holds GPU %d of node %s twice", w->spec.id,
                         t, sl->gpu, n->spec.name);
                seen |= 1u << sl->gpu;
                slices[sl->gpu]++;
                if (sl->mig_slot >= 0) {
                    if (n->mig_owner[sl->gpu][sl->mig_slot] != w->spec.id)
                        FAIL("node %s GPU %d MIG slot %d not owned by workload %" PRIu64,
                             n->spec.name, sl->gpu, sl->mig_slot, w->spec.id);
                    continue;
                }
                milli[sl->gpu] += sl->milli;
                mem[sl->gpu] += sl->mem;
            }
            cpu += w->spec.req.cpu_milli;
            hmem += w->spec.req.mem_bytes;
        }
        for (int32_t g = 0; g < n->spec.ngpus; g++) {
            if (slices[g] != n->nslices[g])
                FAIL("node %s GPU %d: %d slices counted, %d bound", n->spec.name, g, n->nslices[g],
                     slices[g]);
            if (n->spec.gpus[g].mig) {
                int32_t owned = 0;
                for (int32_t k = 0; k < GP_MAX_MIG_SLOTS; k++)
                    owned += n->mig_owner[g][k] != 0;
                if (owned != slices[g] || n->free_milli[g] != 0)
                    FAIL("node %s GPU %d: MIG slots disagree with slices", n->spec.name, g);
                continue;
            }
            if (n->withheld[g]) {
                if (slices[g] != 0 || n->free_milli[g] != 0 || n->free_mem[g] != 0)
                    FAIL("node %s GPU %d: withheld for gpus_taken but holds slices or is free",
                         n->spec.name, g);
                withheld++;
                continue;
            }
            if (milli[g] > GP_MILLI || mem[g] > n->cap_mem[g])
                FAIL("node %s GPU %d: slices sum past capacity (%" PRId64 " milli, %" PRId64
                     " bytes)",
                     n->spec.name, g, milli[g], mem[g]);
            if (GP_MILLI - n->free_milli[g] != milli[g] || n->cap_mem[g] - n->free_mem[g] != mem[g])
                FAIL("node %s GPU %d: free capacity disagrees with its slices", n->spec.name, g);
        }
        if (withheld + n->taken_short != n->spec.gpus_taken)
            FAIL("node %s: %d GPUs withheld and %d short, %d taken", n->spec.name, withheld,
                 n->taken_short, n->spec.gpus_taken);
        if (n->in_whole != n->free_whole || n->in_frac != n->best_free_milli ||
            !linked(e, &e->by_whole[n->in_whole], n, 0) ||
            !linked(e, &e->by_frac[n->in_frac], n, 1))
            FAIL("node %s: not in the capacity buckets its free GPUs say", n->spec.name);
        if (n->spec.cpu_milli - n->cpu_free != cpu ||
            n->spec.mem_bytes - n->mem_free != hmem + n->held_mem + n->paused_outside ||
            n->cpu_free < 0 || n->mem_free < 0)
            FAIL("node %s: CPU or memory books disagree with its tasks", n->spec.name);
    }
out:
    return rc;
}

static void add_res(gp_res *a, const gp_res *b, int64_t times) {
    for (int r = 0; r < GP_RES_COUNT; r++)
        a->v[r] += b->v[r] * times;
}

/* The pause books of every node (pause.c) against its paused workloads. */
static int check_paused(const gp_engine *e, char *err, size_t errlen) {
    int rc = 0;
    int64_t *sums = gp__calloc(&e->alloc, 3 * (size_t)(e->nnodes ? e->nnodes : 1), sizeof *sums);
    if (!sums)
        return GP_ENOMEM;
    for (size_t i = 0; i < e->wl_by_id.cap; i++) {
        const gp__wl *w = e->wl_by_id.vals[i];
        if (!w || !w->paused_on)
            continue;
        uint32_t id = w->paused_on - 1;
        if (id >= e->nnodes || !e->nodes[id] ||
            (w->state != GP_STATE_PENDING && w->state != GP_STATE_EVICTING))
            FAIL("workload %" PRIu64 ": paused on a missing node, or %s", w->spec.id,
                 gp_state_name(w->state));
        sums[3 * id]++;
        sums[3 * id + 1] += w->pause_mem;
        sums[3 * id + 2] +=
            w->state == GP_STATE_PENDING ? w->pause_mem : w->pause_mem - w->spec.req.mem_bytes;
    }
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const gp__node *n = e->nodes[i];
        if (n && (sums[3 * i] != n->npaused || sums[3 * i + 1] != n->paused_mem ||
                  sums[3 * i + 2] != n->held_mem))
            FAIL("node %s: pause books (%d paused, %" PRId64 " bytes, %" PRId64
                 " held) differ from its paused workloads",
                 n->spec.name, n->npaused, n->paused_mem, n->held_mem);
    }
out:
    gp__free(&e->alloc, sums);
    return rc;
}

int gp_engine_check(const gp_engine *e, char *err, size_t errlen) {
    int rc = check_nodes(e, err, errlen);
    if (rc)
        return rc;
    if ((rc = check_paused(e, err, errlen)) != 0)
        return rc;
    books *bk = gp__calloc(&e->alloc, e->nqueues ? e->nqueues : 1, sizeof *bk);
    if (!bk)
        return GP_ENOMEM;
    for (size_t i = 0; i < e->wl_by_id.cap; i++) {
        const gp__wl *w = e->wl_by_id.vals[i];
        if (!w)
            continue;
        const gp__queue *q = w->queue;
        if (w->state == GP_STATE_PENDING) {
            if (w->nbound != 0)
                FAIL("workload %" PRIu64 ": pending but holds %d tasks", w->spec.id, w->nbound);
            if (w->pend_pos >= q->npend || q->pending[w->pend_pos] != w)
                FAIL("workload %" PRIu64 ": pending but not in its queue's list", w->spec.id);
        } else if (w->nbound < w->spec.min_tasks) {
            FAIL("workload %" PRIu64 ": %s with %d of at least %d tasks", w->spec.id,
                 gp_state_name(w->state), w->nbound, w->spec.min_tasks);
        }
        gp_res held = {{0}};
        for (int32_t t = 0; t < w->nbound; t++) {
            const gp__node *n = e->nodes[w->tasks[t].node];
            if (!n || w->tasks[t].node_pos >= n->ntasks || n->tasks[w->tasks[t].node_pos].wl != w)
                FAIL("workload %" PRIu64 " task %d: not in its node's index", w->spec.id, t);
            for (int32_t s = 0; s < w->tasks[t].b.nslices; s++) {
                const gp_slice *sl = &w->tasks[t].b.slices[s];
                held.v[GP_RES_GPU] += sl->milli;
                for (const gp__queue *a = q; a; a = a->parent)
                    bk[a->order].model[n->gpu_model[sl->gpu]] += sl->milli;
            }
            held.v[GP_RES_CPU] += w->spec.req.cpu_milli;
            held.v[GP_RES_MEM] += w->spec.req.mem_bytes;
        }
        if (memcmp(&held, &w->charged, sizeof held) != 0)
            FAIL("workload %" PRIu64 ": charged differs from its slices", w->spec.id);
        for (const gp__queue *a = q; a; a = a->parent) {
            books *b = &bk[a->order];
            add_res(&b->alloc, &held, 1);
            if (!w->preemptible)
                add_res(&b->alloc_np, &held, 1);
            if (w->state == GP_STATE_EVICTING)
                b->leaving += held.v[GP_RES_GPU];
            b->arriving += w->promised;
            if (w->state == GP_STATE_PENDING) {
                add_res(&b->demand, &w->per_task, w->spec.tasks);
                b->npending++;
            } else {
                b->nrunning++;
            }
        }
    }
    for (uint32_t i = 0; i < e->nqueues; i++) {
        const gp__queue *q = e->queues[i];
        const books *b = &bk[q->order];
        if (memcmp(&b->alloc, &q->alloc, sizeof b->alloc) ||
            memcmp(&b->alloc_np, &q->alloc_np, sizeof b->alloc_np) ||
            memcmp(&b->demand, &q->demand, sizeof b->demand))
            FAIL("queue %s: books differ from its workloads (gpu held %" PRId64 " vs %" PRId64 ")",
                 q->spec.name, q->alloc.v[GP_RES_GPU], b->alloc.v[GP_RES_GPU]);
        if (b->npending != q->npending || b->nrunning != q->nrunning)
            FAIL("queue %s: %" PRId64 " pending and %" PRId64 " running counted, %" PRId64
                 " and %" PRId64 " found",
                 q->spec.name, q->npending, q->nrunning, b->npending, b->nrunning);
        if (b->leaving != q->leaving || b->arriving != q->arriving)
            FAIL("queue %s: eviction books differ (leaving %" PRId64 " vs %" PRId64
                 ", arriving %" PRId64 " vs %" PRId64 ")",
                 q->spec.name, q->leaving, b->leaving, q->arriving, b->arriving);
        if (memcmp(b->model, q->model_alloc, sizeof b->model))
            FAIL("queue %s: per-model books differ from its workloads", q->spec.name);
        if (q->nchildren == 0 && q->npend != (uint32_t)q->npending)
            FAIL("queue %s: pending list has %u, books say %" PRId64, q->spec.name, q->npend,
                 q->npending);
    }
out:
    gp__free(&e->alloc, bk);
    return rc;
}
