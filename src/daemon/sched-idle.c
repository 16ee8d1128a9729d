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
 *
 * Where its node can pause (a workload of a single task, the executor able
 * to pause and room left under the node's --paused-memory-max), the workload
 * is paused instead (sched-pause.c's worker: GPU state to host memory, the
 * task frozen): state paused, its processes kept, and the engine forgets
 * it, so that it is resumed only when its owner asks (a->held), never by
 * the engine when a GPU comes free. The owner's resume (or attach) puts it back
 * in the engine paused on its node (gp_engine_restore_paused), which
 * resumes it there as any paused workload, where it was. Elsewhere the
 * command starts again from the beginning when it is resumed, and the
 * event says why it was not paused. While the idle policy holds it paused,
 * the engine does not count the host memory it holds (it checks only that
 * the node has room when it pauses). A restart of gpupoold finds it held
 * again by its row of returned GPUs, which the store keeps until its owner
 * resumes or deletes it (gpd__loop_idle_was_held) and which is written as
 * the pause begins (its GPUs not yet counted as returned), so that a kill
 * anywhere in the pause finds it held. Its task lost meanwhile,
 * found so by the loop or by that restart, it is suspended
 * (gpd__loop_lost_state): its owner's resume starts it again from the
 * beginning.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "daemon/sched-int.h"

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

/* Tells a's terminal note (its process sees nothing of the NOTICE). */
static void tell(gpd__sched *s, active *a, const char *note) {
    char err[256] = "";
    gp_session_req req = {.kind = GP_SESSION_NOTICE, .text = note};
    int fd = -1;
    if (a->ntasks > 0 && a->tasks[0].handle[0] &&
        gp_exec_session(s->ex, a->tasks[0].handle, &req, &fd, err, sizeof err) < 0)
        gpd__log("workload %llu: its terminal could not be told why it stops (%s)",
                 (unsigned long long)a->id, err);
}

/* Tells a's terminal that it is being put aside (done: "suspended",
 * "paused") for why, what is kept of it, and how it comes back. */
static void tell_aside(gpd__sched *s, active *a, const char *done, const char *why,
                       const char *kept, const char *back) {
    char note[GP_SESSION_NOTICE_MAX];
    unsigned long long id = (unsigned long long)a->id;
    snprintf(note, sizeof note,
             "\r\n[gpupool] workload %llu is being %s: %s. Its GPUs go back to the pool%s. "
             "'gpupool attach %llu' or 'gpupool resume %llu' brings it back%s.\r\n",
             id, done, why, kept, id, id, back);
    tell(s, a, note);
}

/* The store's row of the GPUs a gave back, for usage, back in the pool
 * from a->deadline on (INT64_MAX: not yet, a pause under way). */
static void count_returned(gpd__sched *s, active *a) {
    gpd__idle_return r = {.workload = a->id, .gpu_milli = gpu_milli(a), .since_ms = a->deadline};
    snprintf(r.project, sizeof r.project, "%s", a->project);
    snprintf(r.user, sizeof r.user, "%s", a->user);
    gpd__err e = {0};
    if (gpd__store_idle_put(s->d->store, &r, &e) < 0)
        gpd__log("workload %llu: its returned GPUs are not counted (%s)", (unsigned long long)a->id,
                 e.msg);
    else
        a->returned = 1;
}

/* Suspends a with the checkpoint contract; its command restarts when it is
 * resumed. nopause: why it was not paused. */
static void suspend(gpd__sched *s, active *a, const char *why, const char *nopause) {
    tell_aside(s, a, "suspended", why, "", "; its command then starts again from the beginning");
    snprintf(a->stop_note, sizeof a->stop_note,
             "suspended: %s; 'gpupool resume %llu' (or attach) brings it back, and its command "
             "restarts from the beginning (not paused: %s)",
             why, (unsigned long long)a->id, nopause);
    gpd__loop_begin_stop(s, a, GPD__STOP_SUSPEND, a->grace_ms, a->stop_note);
    count_returned(s, a);
}

/* Host memory a's task holds paused, as the engine counts a pause: the
 * GPU memory of its slices and what its request asks of the node's memory
 * (which the engine no longer charges once it forgets the workload), as
 * the loop keeps them: nothing to read that could fail and leave a figure
 * too small. */
static int64_t held_of(const active *a) {
    int64_t need = a->mem_bytes;
    for (int k = 0; k < a->tasks[0].binding.nslices; k++)
        need += a->tasks[0].binding.slices[k].mem;
    return need;
}

void gpd__loop_idle_books(gpd__sched *s, const char *node) {
    int64_t sum = 0;
    pthread_mutex_lock(&s->eng_mu);
    for (size_t i = 0; i < s->nact; i++) {
        const active *x = s->act[i];
        if (x->held_mem > 0 && x->ntasks > 0 && strcmp(x->tasks[0].node, node) == 0)
            sum += x->held_mem;
    }
    int rc = gp_engine_node_paused_outside(s->eng, node, sum);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc < 0 && rc != GP_ENOENT)
        gpd__log("node %s: the engine refused the host memory idle sessions hold paused: %s", node,
                 gp_strerror(rc));
}

/* Why a cannot be paused here, or NULL if it can: a workload of a single
 * task (not a gang running one: the engine resumes no gang) on a node that
 * can pause, with room for what it holds paused under the node's bound
 * (which counts the sessions paused so before it). */
static const char *no_pause(gpd__sched *s, const active *a) {
    if (a->gang != 1 || a->ntasks != 1 || !a->tasks[0].handle[0])
        return gp_mode_why_text(GP_MODE_GANG);
    if (a->pausing != GPD__PAUSE_NONE)
        return "a pause or a resume is under way";
    int64_t max = 0;
    gp_node_info ni;
    pthread_mutex_lock(&s->eng_mu);
    int rc = gp_engine_node_get(s->eng, a->tasks[0].node, &ni);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc < 0)
        return "its node is gone";
    if (!gpd__sched_pause_of(s, ni.mem_bytes, &max))
        return s->can_pause ? "--paused-memory-max is 0" : s->pause_note;
    int64_t need = held_of(a);
    if (ni.paused_mem + need > max)
        return "the host memory paused tasks hold on its node would pass --paused-memory-max";
    return NULL;
}

/* Pauses a where its node can, else suspends it; why says which bound it
 * crossed. */
static void idle_stop(gpd__sched *s, active *a, const char *why) {
    const char *nopause = no_pause(s, a);
    if (nopause) {
        suspend(s, a, why, nopause);
        return;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "paused: %s", why);
    a->held = 1;
    /* Its row first, its GPUs not yet counted as returned: the row is what
     * tells a restart that the policy holds it (gpd__loop_idle_was_held),
     * and a kill -9 may land anywhere from the pause's first step to the
     * storing of its outcome, after which the task is found paused. */
    a->deadline = INT64_MAX;
    count_returned(s, a);
    if (gpd__loop_pause_begin(s, a, msg, -1) < 0) {
        a->held = 0;
        a->stop_note[0] = '\0';
        suspend(s, a, why, "out of memory");
        return;
    }
    tell_aside(s, a, "paused", why, "; its processes are kept as they are", " where it was");
}

void gpd__loop_idle_paused(gpd__sched *s, active *a, int rc, const char *detail) {
    if (rc < 0) {
        /* The task runs on, as it was: suspended the old way. */
        a->held = 0;
        char why[sizeof a->stop_note];
        snprintf(why, sizeof why, "%s", a->stop_note + strlen("paused: "));
        a->stop_note[0] = '\0';
        char nopause[300];
        snprintf(nopause, sizeof nopause, "the pause failed: %s", detail);
        suspend(s, a, why, nopause);
        return;
    }
    /* Its GPUs back to the pool: the engine forgets it until its owner
     * resumes it. */
    pthread_mutex_lock(&s->eng_mu);
    gp_engine_cancel(s->eng, a->id);
    pthread_mutex_unlock(&s->eng_mu);
    a->in_engine = 0;
    /* What it holds paused stays in the node's books. */
    a->held_mem = held_of(a);
    gpd__loop_idle_books(s, a->tasks[0].node);
    a->deadline = gpd__now_ms();
    count_returned(s, a);
}

int gpd__loop_idle_resume(gpd__sched *s, active *a, gpd__err *e) {
    gpd__wl w;
    int rc = gpd__store_wl_get(s->d->store, a->id, &w, e);
    if (rc < 0)
        return rc;
    gp_workload_spec spec;
    rc = gpd__sched_stored_spec(&w, &spec, e);
    if (rc == 0) {
        /* The engine holds its host memory from now on, as its own paused
         * task's: out of the books of those paused outside it first. */
        int64_t held = a->held_mem;
        a->held_mem = 0;
        gpd__loop_idle_books(s, a->tasks[0].node);
        char err[GP_ERR_MAX] = "";
        pthread_mutex_lock(&s->eng_mu);
        rc = gp_engine_restore_paused(s->eng, &spec, &a->tasks[0].binding, err, sizeof err);
        pthread_mutex_unlock(&s->eng_mu);
        if (rc < 0) {
            a->held_mem = held;
            gpd__loop_idle_books(s, a->tasks[0].node);
            rc = rc == GP_ENOMEM ? gpd__fail(e, rc, "", "out of memory")
                                 : gpd__fail(e, GP_ESTATE, "", "cannot resume: %s", err);
        }
    }
    gpd__wl_free(&w);
    if (rc < 0)
        return rc;
    a->held = 0;
    a->in_engine = 1;
    a->stop_note[0] = '\0';
    char msg[300];
    snprintf(msg, sizeof msg,
             "resumed by its owner: back in the queue, paused on node %s until a GPU is free "
             "there, where it goes on from where it was",
             a->tasks[0].node);
    gpd__wl_change c;
    gpd__wl_change_event(&c, a->id, (int)GP_WL_PAUSED, msg, GPD__EV_RESUME_ASKED, msg);
    gpd__sched_record(s, &c);
    gpd__loop_idle_forget(s, a->id);
    a->returned = 0;
    return 0;
}

int gpd__loop_idle_was_held(gpd__sched *s, uint64_t id) {
    int yes = 0;
    gpd__err e = {0};
    if (gpd__store_idle_has(s->d->store, id, &yes, &e) < 0)
        gpd__log("workload %llu: cannot tell whether the idle policy paused it (%s)",
                 (unsigned long long)id, e.msg);
    return yes;
}

void gpd__loop_idle_rehold(gpd__sched *s, active *a) {
    a->held = 1;
    a->in_engine = 0;
    a->held_mem = held_of(a);
    gpd__loop_idle_books(s, a->tasks[0].node);
    /* Its GPUs are back in the pool from now on at the latest (its row was
     * stored before its pause, which a restart may have finished). */
    a->deadline = gpd__now_ms();
    count_returned(s, a);
}

void gpd__loop_idle_tick(gpd__sched *s, const gp_gpu_usage *gpus, size_t ngpus, int64_t now) {
    int any = 0;
    for (size_t i = 0; i < s->nact && !any; i++)
        any = s->act[i]->interactive && s->act[i]->state == GP_WL_RUNNING;
    if (!any)
        return;
    gpd__queue_specs l;
    gpd__err e = {0};
    if (gpd__store_queue_specs(s->d->store, &l, &e) < 0) {
        gpd__log("idle policy: cannot read the queues (%s)", e.msg);
        return;
    }
    /* idle_stop() changes a's state, never the array: an index walk holds. */
    for (size_t i = 0; i < s->nact; i++) {
        active *a = s->act[i];
        if (!a->interactive || a->state != GP_WL_RUNNING || a->pausing != GPD__PAUSE_NONE)
            continue;
        if (!all_idle(a, gpus, ngpus))
            a->busy_ms = now;
        const gp_queue_spec *b = gpd__queue_spec_find(&l, a->project);
        char why[200], d[32];
        if (b && b->max_session_length > 0 && now - a->running_ms >= b->max_session_length) {
            gp_format_duration(now - a->running_ms, d, sizeof d);
            snprintf(why, sizeof why, "it ran for %s, its project %s's max_session_length", d,
                     a->project);
            idle_stop(s, a, why);
        } else if (b && b->idle_gpu_timeout > 0 && now - a->busy_ms >= b->idle_gpu_timeout) {
            gp_format_duration(now - a->busy_ms, d, sizeof d);
            snprintf(why, sizeof why,
                     "its GPUs were idle for %s (no use reported by NVML), its project %s's "
                     "idle_gpu_timeout",
                     d, a->project);
            idle_stop(s, a, why);
        }
    }
    free(l.q);
}

void gpd__loop_idle_forget(gpd__sched *s, uint64_t id) {
    gpd__err e = {0};
    if (gpd__store_idle_drop(s->d->store, id, &e) < 0)
        gpd__log("workload %llu: %s", (unsigned long long)id, e.msg);
}

void gpd__loop_idle_drop(gpd__sched *s, active *a) {
    if (!a->returned)
        return;
    a->returned = 0;
    gpd__loop_idle_forget(s, a->id);
}
