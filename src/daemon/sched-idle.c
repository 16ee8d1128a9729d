/*
 * sched-idle.c — idle GPUs handed back: the per-project bounds on
 * interactive workloads (gp_queue_spec's idle_gpu_timeout and
 * max_session_length), enforced by the scheduling loop's thread after each
 * usage sample.
 *
 * Idle means that every GPU the workload holds a slice of was sampled with
 * no busy time (NVML's utilisation, as usage accounting reads it) at every
 * sample over the whole timeout. A GPU whose use is unknown (emulated, MIG)
 * or that is busy counts as busy, so that the policy never suspends what it
 * cannot see; a slice shares its GPU's figure with the other slices on it.
 *
 * A workload found idle, or running longer than its project's
 * max_session_length, is first told so on its terminal (a NOTICE through
 * the executor's session endpoint, which attached clients see and a later
 * attach replays), then suspended as its owner's suspend would be: the
 * checkpoint signal, its grace period, stop. Its GPUs go back to the pool;
 * the store keeps a row of them (store-idle.c) until its owner resumes or
 * deletes it, from which usage counts the GPU-hours the policy returned.
 * Transparent pause is not used for this yet: the command starts again from
 * the beginning when the workload is resumed, and the event says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "daemon/sched-int.h"

typedef struct bounds {
    char name[GP_NAME_MAX + 1];
    int64_t idle_ms, max_ms;
} bounds;

typedef struct bounds_list {
    bounds *b;
    size_t n;
} bounds_list;

static int collect(const gp_queue_spec *q, void *arg) {
    bounds_list *l = arg;
    if (!q->idle_gpu_timeout && !q->max_session_length)
        return 0;
    bounds *nb = realloc(l->b, (l->n + 1) * sizeof *nb);
    if (!nb)
        return 1;
    l->b = nb;
    snprintf(nb[l->n].name, sizeof nb[l->n].name, "%s", q->name);
    nb[l->n].idle_ms = q->idle_gpu_timeout;
    nb[l->n].max_ms = q->max_session_length;
    l->n++;
    return 0;
}

static const bounds *bounds_of(const bounds_list *l, const char *project) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->b[i].name, project) == 0)
            return &l->b[i];
    return NULL;
}

/* 1 if every GPU a holds a slice of was sampled idle, 0 if any was busy or
 * is unknown (not in the sample, or its busy time unknown). */
static int all_idle(const active *a, const gp_gpu_usage *gpus, size_t ngpus) {
    int slices = 0;
    for (int t = 0; t < a->ntasks; t++) {
        const task_rt *tk = &a->tasks[t];
        for (int k = 0; k < tk->binding.nslices; k++) {
            const gp_gpu_usage *g = NULL;
            for (size_t i = 0; i < ngpus && !g; i++)
                if (gpus[i].index == tk->binding.slices[k].gpu &&
                    strcmp(gpus[i].node, tk->node) == 0)
                    g = &gpus[i];
            if (!g || g->busy_permille != 0)
                return 0;
            slices++;
        }
    }
    return slices > 0;
}

static int64_t gpu_milli(const active *a) {
    int64_t m = 0;
    for (int t = 0; t < a->ntasks; t++)
        for (int k = 0; k < a->tasks[t].binding.nslices; k++)
            m += a->tasks[t].binding.slices[k].milli;
    return m;
}

/* Tells the terminal, then suspends a; why says which bound it crossed. */
static void suspend(gpd__sched *s, active *a, const char *why) {
    char note[GP_SESSION_NOTICE_MAX], err[256] = "";
    snprintf(note, sizeof note,
             "\r\n[gpupool] workload %llu is being suspended: %s. Its GPUs go back to the pool. "
             "'gpupool attach %llu' or 'gpupool resume %llu' brings it back; its command then "
             "starts again from the beginning.\r\n",
             (unsigned long long)a->id, why, (unsigned long long)a->id, (unsigned long long)a->id);
    gp_session_req req = {.kind = GP_SESSION_NOTICE, .text = note};
    int fd = -1;
    if (a->ntasks > 0 && a->tasks[0].handle[0] &&
        gp_exec_session(s->ex, a->tasks[0].handle, &req, &fd, err, sizeof err) < 0)
        gpd__log("workload %llu: its terminal could not be told why it stops (%s)",
                 (unsigned long long)a->id, err);
    snprintf(a->stop_note, sizeof a->stop_note,
             "suspended: %s; 'gpupool resume %llu' (or attach) brings it back, and its command "
             "restarts from the beginning (transparent pause is not used for this yet)",
             why, (unsigned long long)a->id);
    gpd__loop_begin_stop(s, a, GPD__STOP_SUSPEND, a->grace_ms, a->stop_note);
    gpd__idle_return r = {.workload = a->id, .gpu_milli = gpu_milli(a), .since_ms = a->deadline};
    snprintf(r.project, sizeof r.project, "%s", a->project);
    snprintf(r.user, sizeof r.user, "%s", a->user);
    gpd__err e = {0};
    if (gpd__store_idle_put(s->d->store, &r, &e) < 0)
        gpd__log("workload %llu: its returned GPUs are not counted (%s)", (unsigned long long)a->id,
                 e.msg);
}

void gpd__loop_idle_tick(gpd__sched *s, const gp_gpu_usage *gpus, size_t ngpus, int64_t now) {
    int any = 0;
    for (size_t i = 0; i < s->nact && !any; i++)
        any = s->act[i]->interactive && s->act[i]->state == GPD__WL_RUNNING;
    if (!any)
        return;
    bounds_list l = {0};
    gpd__err e = {0};
    if (gpd__store_queues(s->d->store, collect, &l, &e) < 0) {
        gpd__log("idle policy: cannot read the queues (%s)", e.msg);
        free(l.b);
        return;
    }
    /* suspend() changes a's state, never the array: an index walk holds. */
    for (size_t i = 0; i < s->nact; i++) {
        active *a = s->act[i];
        if (!a->interactive || a->state != GPD__WL_RUNNING)
            continue;
        if (!all_idle(a, gpus, ngpus))
            a->busy_ms = now;
        const bounds *b = bounds_of(&l, a->project);
        char why[200], d[32];
        if (b && b->max_ms > 0 && now - a->running_ms >= b->max_ms) {
            gp_format_duration(now - a->running_ms, d, sizeof d);
            snprintf(why, sizeof why, "it ran for %s, its project %s's max_session_length", d,
                     a->project);
            suspend(s, a, why);
        } else if (b && b->idle_ms > 0 && now - a->busy_ms >= b->idle_ms) {
            gp_format_duration(now - a->busy_ms, d, sizeof d);
            snprintf(why, sizeof why,
                     "its GPUs were idle for %s (no use reported by NVML), its project %s's "
                     "idle_gpu_timeout",
                     d, a->project);
            suspend(s, a, why);
        }
    }
    free(l.b);
}

void gpd__loop_idle_forget(gpd__sched *s, uint64_t id) {
    gpd__err e = {0};
    if (gpd__store_idle_drop(s->d->store, id, &e) < 0)
        gpd__log("workload %llu: %s", (unsigned long long)id, e.msg);
}
