/*
 * pause.c — eviction in pause mode: the mode each victim is evicted in, the
 * node's books of host memory held by paused tasks, and resuming a paused
 * workload on its node only.
 *
 * A victim whose on_preempt is pause is paused where it can be: a workload of
 * one task (a gang's tasks would each be frozen on their own node, which
 * nothing resumes together), evicted for reclaim or preemption (a
 * consolidation moves it elsewhere, where a paused task cannot go), on a node
 * that can pause (gp_node_spec.can_pause) and whose paused tasks would stay
 * within its paused_mem_max. Otherwise it is evicted in checkpoint mode, and
 * the decision says why.
 *
 * What a paused task holds is its own host memory (req.mem_bytes) and the GPU
 * memory its slices may hold, moved to host: pause_mem. From the decision on,
 * the node counts pause_mem against paused_mem_max, and its books charge what
 * exceeds the task's own memory (held_mem), so that nothing placed meanwhile
 * takes the host memory the pause will need. Paused, the workload is PENDING:
 * its GPUs and CPU are free, pause_mem stays charged to the node, and it is
 * tried in its queue's order like any pending workload but placed only on
 * its node, on GPUs of the model it had; it makes no room for itself by
 * evicting others (it waits GP_WAIT_PAUSED until room is there). After a
 * resume that failed, the caller may hold the next try off until a time of
 * its choosing (gp_engine_resume_after: its backoff).
 */
#include <stdio.h>
#include <string.h>

#include "engine/internal.h"

const char *gp_mode_why_text(gp_mode_why w) {
    switch (w) {
    case GP_MODE_ASKED:
        return "";
    case GP_MODE_NO_PAUSE:
        return "its node cannot pause tasks";
    case GP_MODE_HOST_MEMORY:
        return "paused tasks would hold more host memory than its node allows";
    case GP_MODE_GANG:
        return "a workload of several tasks is not paused";
    case GP_MODE_CONSOLIDATE:
        return "it is moved to another node, where a paused task cannot be resumed";
    }
    return "";
}

/* What the single task of v would hold paused: its own memory and the GPU
 * memory of its slices; *model the GPU model of its first slice (-1: none). */
static int64_t pause_cost(const gp__node *n, const gp_task_binding *b, int64_t own,
                          int32_t *model) {
    int64_t cost = own;
    *model = -1;
    for (int32_t i = 0; i < b->nslices; i++) {
        cost += b->slices[i].mem;
        if (i == 0)
            *model = n->gpu_model[b->slices[0].gpu];
    }
    return cost;
}

/* Charges (sign +1) or refunds (-1) host memory mem held outside bound tasks
 * to node n. */
static void hold(gp_engine *e, gp__node *n, int64_t mem, int sign) {
    gp__node_cpu(e, n, 0, mem, sign);
    n->held_mem += sign * mem;
    gp__node_refresh(e, n);
}

gp_on_preempt gp__pause_mode(gp_engine *e, gp__wl *v, gp_evict_reason why, gp_mode_why *mw) {
    *mw = GP_MODE_ASKED;
    if (v->spec.on_preempt != GP_ON_PREEMPT_PAUSE || why == GP_EVICT_NODE_GONE)
        return v->spec.on_preempt;
    if (why == GP_EVICT_CONSOLIDATE) {
        *mw = GP_MODE_CONSOLIDATE;
        return GP_ON_PREEMPT_CHECKPOINT;
    }
    if (v->spec.tasks != 1 || v->nbound != 1) {
        *mw = GP_MODE_GANG;
        return GP_ON_PREEMPT_CHECKPOINT;
    }
    gp__node *n = gp__node_at(e, v->tasks[0].node);
    if (!n->spec.can_pause) {
        *mw = GP_MODE_NO_PAUSE;
        return GP_ON_PREEMPT_CHECKPOINT;
    }
    int32_t model;
    int64_t cost = pause_cost(n, &v->tasks[0].b, v->spec.req.mem_bytes, &model);
    int64_t extra = cost - v->spec.req.mem_bytes;
    if (n->paused_mem + n->paused_outside + cost > n->spec.paused_mem_max || n->mem_free < extra) {
        *mw = GP_MODE_HOST_MEMORY;
        return GP_ON_PREEMPT_CHECKPOINT;
    }
    n->npaused++;
    n->paused_mem += cost;
    hold(e, n, extra, +1);
    v->paused_on = n->id + 1;
    v->pause_mem = cost;
    v->paused_model = model;
    v->resume_after = 0;
    return GP_ON_PREEMPT_PAUSE;
}

void gp__pause_drop(gp_engine *e, gp__wl *w) {
    w->resume = 0;
    if (!w->paused_on)
        return;
    gp__node *n = gp__node_at(e, w->paused_on - 1);
    /* Paused, the node holds all of it; being paused, the task's own memory
     * is still the bound task's. */
    hold(e, n, w->state == GP_STATE_PENDING ? w->pause_mem : w->pause_mem - w->spec.req.mem_bytes,
         -1);
    n->npaused--;
    n->paused_mem -= w->pause_mem;
    w->paused_on = 0;
    w->pause_mem = 0;
    if (w->state == GP_STATE_PENDING && w->wait.why == GP_WAIT_PAUSED)
        gp__wait_set(w, GP_WAIT_NEW);
}

int gp__pause_try_resume(gp_engine *e, gp__wl *w, uint64_t models) {
    gp__node *n = gp__node_at(e, w->paused_on - 1);
    if (e->now < w->resume_after) {
        gp__wait_set(w, GP_WAIT_PAUSED);
        w->wait.node = n->id;
        return 0;
    }
    if (w->paused_model >= 0)
        models &= UINT64_C(1) << w->paused_model;
    /* The binding charges the task's own memory again. */
    hold(e, n, w->pause_mem, -1);
    if ((models != 0 || w->spec.req.gpu == GP_GPU_NONE) && gp__place_on(e, w, models, n)) {
        n->npaused--;
        n->paused_mem -= w->pause_mem;
        w->paused_on = 0;
        w->pause_mem = 0;
        w->resume = 1;
        w->resume_after = 0;
        return 1;
    }
    hold(e, n, w->pause_mem, +1);
    gp__wait_set(w, GP_WAIT_PAUSED);
    w->wait.node = n->id;
    return 0;
}

void gp__pause_node_gone(gp_engine *e, gp__node *n) {
    for (uint32_t i = 0; i < e->nqueues && n->npaused > 0; i++) {
        gp__queue *q = e->queues[i];
        for (uint32_t k = 0; k < q->npend; k++) {
            gp__wl *w = q->pending[k];
            if (w->paused_on != n->id + 1)
                continue;
            /* Reported as lost, so that its caller ends the frozen task. */
            e->gone[e->ngone++] = w->spec.id;
            gp__pause_drop(e, w);
            w->evictions++;
        }
    }
}

/* Marks w, PENDING, paused on n with pause_mem cost (charged by the caller's
 * hold) and GPUs of model. */
static void set_paused(gp__wl *w, const gp__node *n, int64_t cost, int32_t model) {
    w->paused_on = n->id + 1;
    w->pause_mem = cost;
    w->paused_model = model;
    w->resume = 0;
    gp__wait_set(w, GP_WAIT_PAUSED);
    w->wait.node = n->id;
}

int gp_engine_paused(gp_engine *e, uint64_t id, gp_time_ms now) {
    (void)now;
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    int pausing = w->state == GP_STATE_EVICTING && w->paused_on;
    /* A resume that failed leaves it paused again. */
    int resumed = w->state == GP_STATE_BOUND && w->resume && w->nbound == 1;
    if (!pausing && !resumed)
        return GP_ESTATE;
    gp__node *n = gp__node_at(e, w->tasks[0].node);
    int32_t model = w->paused_model;
    int64_t cost =
        pausing ? w->pause_mem : pause_cost(n, &w->tasks[0].b, w->spec.req.mem_bytes, &model);
    int rc = gp__wl_back_to_pending(e, w);
    if (rc != 0)
        return rc;
    if (pausing) {
        /* The bound task's own memory now held paused, beside the rest. */
        hold(e, n, w->spec.req.mem_bytes, +1);
    } else {
        n->npaused++;
        n->paused_mem += cost;
        hold(e, n, cost, +1);
    }
    set_paused(w, n, cost, model);
    return 0;
}

int gp_engine_resume_after(gp_engine *e, uint64_t id, gp_time_ms when) {
    gp__wl *w = gp__wl_find(e, id);
    if (!w)
        return GP_ENOENT;
    if (w->state != GP_STATE_PENDING || !w->paused_on)
        return GP_ESTATE;
    w->resume_after = when;
    return 0;
}

int gp_engine_node_paused_outside(gp_engine *e, const char *name, int64_t bytes) {
    gp__node *n = name ? gp__strmap_get(&e->node_by_name, name) : NULL;
    if (!n)
        return GP_ENOENT;
    if (bytes < 0)
        return GP_EINVAL;
    gp__node_cpu(e, n, 0, bytes - n->paused_outside, +1);
    n->paused_outside = bytes;
    gp__node_refresh(e, n);
    return 0;
}

/* Checks was, the binding a task paused on node n had, field by field: 0, or
 * GP_EINVAL naming the field. */
static int bad_binding(const gp__node *n, const gp_task_binding *was, char *err, size_t errlen) {
    if (gp__not_count(was->nslices, GP_MAX_GPUS_PER_NODE, "was.nslices", err, errlen))
        return GP_EINVAL;
    char what[48];
    for (int32_t i = 0; i < was->nslices; i++) {
        const gp_slice *s = &was->slices[i];
        if (s->gpu < 0 || s->gpu >= n->spec.ngpus) {
            gp_errf(err, errlen, "was.slices[%d].gpu: node %s has no GPU %d", i, n->spec.name,
                    s->gpu);
            return GP_EINVAL;
        }
        const gp_gpu_spec *g = &n->spec.gpus[s->gpu];
        snprintf(what, sizeof what, "was.slices[%d].mig_slot", i);
        if (g->mig) {
            if (gp__not_count(s->mig_slot, g->nmig - 1, what, err, errlen))
                return GP_EINVAL;
        } else if (s->mig_slot != -1) {
            gp_errf(err, errlen, "%s: must be -1 on GPU %d of node %s, not in MIG mode", what,
                    s->gpu, n->spec.name);
            return GP_EINVAL;
        }
        snprintf(what, sizeof what, "was.slices[%d].milli", i);
        if (gp__not_count(s->milli, GP_MILLI, what, err, errlen))
            return GP_EINVAL;
        if (s->mem < 0 || s->mem > n->cap_mem[s->gpu]) {
            gp_errf(err, errlen,
                    "was.slices[%d].mem: must be 0 to %lld bytes, the memory of GPU %d", i,
                    (long long)n->cap_mem[s->gpu], s->gpu);
            return GP_EINVAL;
        }
    }
    return 0;
}

/* Whether node n has the host memory a task paused with binding was and own
 * memory holds, summed so that no amount overflows. */
static int room_for(const gp__node *n, const gp_task_binding *was, int64_t own) {
    int64_t left = n->mem_free;
    for (int32_t i = 0; i < was->nslices; i++) {
        if (was->slices[i].mem > left)
            return 0;
        left -= was->slices[i].mem;
    }
    return own <= left;
}

int gp_engine_paused_binding_check(gp_engine *e, const gp_task_binding *was, char *err,
                                   size_t errlen) {
    gp__node *n = was && was->node ? gp__strmap_get(&e->node_by_name, was->node) : NULL;
    if (!n) {
        gp_errf(err, errlen, "was.node: no node named '%s'", was && was->node ? was->node : "");
        return GP_ENOENT;
    }
    return bad_binding(n, was, err, errlen);
}

int gp_engine_restore_paused(gp_engine *e, const gp_workload_spec *spec, const gp_task_binding *was,
                             char *err, size_t errlen) {
    if (spec->tasks != 1) {
        gp_errf(err, errlen, "tasks: a workload of several tasks is never paused");
        return GP_EINVAL;
    }
    int rc = gp_engine_paused_binding_check(e, was, err, errlen);
    if (rc != 0)
        return rc;
    gp__node *n = gp__strmap_get(&e->node_by_name, was->node);
    if (!room_for(n, was, spec->req.mem_bytes)) {
        gp_errf(err, errlen, "was.node: node %s lacks the host memory its paused task holds",
                n->spec.name);
        return GP_EBUSY;
    }
    rc = gp_engine_submit(e, spec, err, errlen);
    if (rc != 0)
        return rc;
    int32_t model;
    int64_t cost = pause_cost(n, was, spec->req.mem_bytes, &model);
    gp__wl *w = gp__wl_find(e, spec->id);
    n->npaused++;
    n->paused_mem += cost;
    hold(e, n, cost, +1);
    set_paused(w, n, cost, model);
    return 0;
}
