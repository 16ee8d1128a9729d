/*
 * sched-pause.c — carrying out the engine's pause and resume decisions off
 * the scheduling loop.
 *
 * A pause locks and checkpoints a task's CUDA processes through the driver
 * (seconds for a process holding tens of GiB, up to its lock timeout for one
 * that does not answer), so the loop never runs one itself: it hands the
 * step to the pause worker, a thread of its own that calls the executor's
 * GP_EXEC_CTL_PAUSE or GP_EXEC_CTL_RESUME and nothing else (executor.h says
 * which control operations may run there), and goes on scheduling. A step
 * is one letter (mailbox.h): the loop posts it into the worker's mailbox,
 * the worker runs it and posts it, with its outcome, into the loop's inbox,
 * and the loop tells the engine and the store (gpd__loop_pause_result).
 *
 * The idle policy pauses sessions through the same worker (a->held:
 * sched-idle.c takes the outcome).
 *
 * The worker runs one step at a time, so that two steps of one task never
 * meet; while a workload's step is under way the loop leaves its tasks
 * alone (a->pausing), other than a delete or a suspend, which waits for the
 * step to end (a->stop_after).
 * A resume that fails leaves the workload paused, and the engine holds the
 * next try off for a backoff that doubles at each failure in a row
 * (resume_backoff_ms), which the event states.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_error.h"
#include "daemon/sched-int.h"

/* One step for the worker, and its outcome. */
struct gpd__pause_job {
    /* First: a GPD__LETTER_PAUSE letter, to the worker and back. */
    gpd__letter l;
    int op; /* GP_EXEC_CTL_PAUSE or GP_EXEC_CTL_RESUME */
    uint64_t id;
    char handle[GP_HANDLE_MAX];
    gp_exec_pause p;
    /* RESUME: the GPUs the task had and those it resumes on. */
    char from[GP_MAX_GPUS_PER_NODE][GP_NAME_MAX + 1], to[GP_MAX_GPUS_PER_NODE][GP_NAME_MAX + 1];
    const char *fromp[GP_MAX_GPUS_PER_NODE], *top[GP_MAX_GPUS_PER_NODE];
    gp_task_binding b; /* RESUME: the new binding */
    int moved;         /* RESUME: onto other GPUs than the task had */
    char node[GP_NAME_MAX + 1];
    int rc;
    int64_t queued_ms, took_ms;
    int64_t grace_max; /* PAUSE: the bound on the grace period should it fail */
};

static void *worker_main(void *arg) {
    gpd__sched *s = arg;
    gpd__letter *l;
    while (gpd__mailbox_take(&s->pause_box, -1, 1, &l) != GPD__MAIL_CLOSED) {
        if (!l)
            continue;
        gpd__pause_job *j = (gpd__pause_job *)l;
        int64_t t0 = gpd__now_ms();
        j->p.handle = j->handle;
        j->p.from_uuid = j->fromp;
        j->p.to_uuid = j->top;
        j->rc = gp_exec_control(s->ex, j->op, &j->p);
        j->took_ms = gpd__now_ms() - t0;
        j->l.kind = GPD__LETTER_PAUSE;
        if (gpd__mailbox_post(&s->inbox, &j->l) < 0)
            free(j); /* the loop has stopped */
    }
    return NULL;
}

int gpd__pause_start(gpd__sched *s) {
    if (gpd__mailbox_start(&s->pause_box, &s->pause_th, worker_main, s) < 0)
        return GP_ESYS;
    s->pause_started = 1;
    return 0;
}

void gpd__pause_free_letters(gpd__letter *l) {
    while (l) {
        gpd__letter *n = l->next;
        free(l); /* each opens a gpd__pause_job */
        l = n;
    }
}

void gpd__pause_stop(gpd__sched *s) {
    if (!s->pause_started)
        return;
    s->pause_started = 0;
    gpd__pause_free_letters(gpd__mailbox_stop(&s->pause_box, s->pause_th));
}

/* Queues one step of a's single task for the worker (j: NULL, or a job
 * already filled, which this takes). */
static int queue_step(gpd__sched *s, active *a, int op, gpd__pause_job *j) {
    if (!j)
        j = calloc(1, sizeof *j);
    if (!j)
        return GP_ENOMEM;
    j->op = op;
    j->id = a->id;
    snprintf(j->handle, sizeof j->handle, "%s", a->tasks[0].handle);
    j->queued_ms = gpd__now_ms();
    if (gpd__mailbox_post(&s->pause_box, &j->l) < 0) {
        free(j);
        return GP_ESTATE; /* stopping */
    }
    a->pausing = op == GP_EXEC_CTL_PAUSE ? GPD__PAUSE_PAUSING : GPD__PAUSE_RESUMING;
    return 0;
}

int gpd__loop_pause_begin(gpd__sched *s, active *a, const char *why, int64_t grace_max) {
    if (a->ntasks != 1 || !a->tasks[0].handle[0])
        return GP_EINVAL;
    gpd__pause_job *j = calloc(1, sizeof *j);
    if (!j)
        return GP_ENOMEM;
    j->grace_max = grace_max;
    snprintf(a->stop_note, sizeof a->stop_note, "%s", why);
    return queue_step(s, a, GP_EXEC_CTL_PAUSE, j);
}

/* The UUID of GPU i of node, or "" where unknown. */
static const char *uuid_of(gpd__sched *s, const char *node, int i) {
    const gp_node_spec *n = gpd__sched_node(s, node);
    return n && i >= 0 && i < n->ngpus ? n->gpus[i].uuid : "";
}

static int resume_begin(gpd__sched *s, active *a, const gp_task_binding *b) {
    if (a->pausing != GPD__PAUSE_PAUSED)
        return GP_ESTATE;
    gpd__pause_job *j = calloc(1, sizeof *j);
    if (!j)
        return GP_ENOMEM;
    const gp_task_binding *was = &a->tasks[0].binding;
    int remap = b->nslices != was->nslices;
    for (int i = 0; !remap && i < b->nslices; i++)
        remap = b->slices[i].gpu != was->slices[i].gpu;
    /* Other GPUs of the node than before: the driver remaps them. */
    if (remap && b->nslices == was->nslices) {
        for (int i = 0; i < b->nslices; i++) {
            snprintf(j->from[i], sizeof j->from[i], "%s",
                     uuid_of(s, a->tasks[0].node, was->slices[i].gpu));
            snprintf(j->to[i], sizeof j->to[i], "%s",
                     uuid_of(s, a->tasks[0].node, b->slices[i].gpu));
            j->fromp[i] = j->from[i];
            j->top[i] = j->to[i];
        }
        j->p.ngpus = b->nslices;
    }
    j->b = *b;
    snprintf(j->node, sizeof j->node, "%s", a->tasks[0].node);
    j->b.node = j->node;
    j->moved = remap;
    /* The new GPUs are stored beside the old before the executor moves
     * anything, and in their place once it has: after a kill -9 meanwhile,
     * recovery books the ones the executor's journal says the task is on
     * (the step not begun or failed: the old; finished: the new). */
    gpd__err e = {0};
    int rc = remap ? gpd__loop_store_binding(s, a, was, &j->b, &e) : 0;
    if (rc < 0) {
        gpd__log("workload %llu: not resumed onto other GPUs (%s)", (unsigned long long)a->id,
                 rc == GP_ENOMEM ? "out of memory" : e.msg);
        free(j);
        return rc;
    }
    return queue_step(s, a, GP_EXEC_CTL_RESUME, j);
}

/* The wait before the next resume after `fails` failed in a row: 1 s,
 * doubled at each, at most GPD__RESUME_BACKOFF_MAX_MS. */
#define GPD__RESUME_BACKOFF_MAX_MS 60000
static int64_t resume_backoff_ms(int fails) {
    int64_t ms = 1000;
    for (int i = 1; i < fails && ms < GPD__RESUME_BACKOFF_MAX_MS; i++)
        ms *= 2;
    return ms < GPD__RESUME_BACKOFF_MAX_MS ? ms : GPD__RESUME_BACKOFF_MAX_MS;
}

/* The engine decided to resume workload id, which has no task here (it
 * ended and the engine was not told, or never could be): nothing to resume,
 * and trying again at every cycle would never end. Its stored state
 * decides: over, the engine drops it; active, the engine requeues it, its
 * pause dropped, and it starts again from the beginning. Where the store
 * cannot say, it stays paused for a backoff. */
static void resume_no_task(gpd__sched *s, uint64_t id, int64_t now) {
    gpd__wl w;
    gpd__err e = {0};
    int rc = gpd__store_wl_get(s->d->store, id, &w, &e);
    int known = rc == 0 || rc == GP_ENOENT;
    int again = rc == 0 && gp_wl_state_active(w.state);
    if (rc == 0)
        gpd__wl_free(&w);
    pthread_mutex_lock(&s->eng_mu);
    int erc;
    if (!known) {
        erc = gp_engine_paused(s->eng, id, now);
        if (erc == 0)
            erc = gp_engine_resume_after(s->eng, id, now + resume_backoff_ms(1));
    } else {
        erc = again ? gp_engine_requeue(s->eng, id) : gp_engine_cancel(s->eng, id);
    }
    pthread_mutex_unlock(&s->eng_mu);
    gpd__log("workload %llu: paused without a task: %s%s%s", (unsigned long long)id,
             !known  ? "tried again later, its stored state unknown: "
             : again ? "back in the queue, to start again"
                     : "dropped, it is over",
             known ? "" : e.msg, erc < 0 ? " (the engine refused it)" : "");
    if (!again || erc < 0)
        return;
    const char *msg = "its paused task is gone: back in the queue, to start again from the "
                      "beginning";
    /* Its attempt ends lost, as a lost task's (conclude): where that was
     * stored already, the store keeps the first end. */
    gpd__wl_change c;
    gpd__wl_change_event(&c, id, (int)GP_WL_PENDING, msg, GPD__EV_REQUEUED, msg);
    c.attempt_end = GPD__OUTCOME_LOST;
    gpd__sched_record(s, &c);
}

void gpd__loop_resume(gpd__sched *s, uint64_t id, const gp_task_binding *b, int64_t now) {
    active *a = gpd__loop_act_find(s, id);
    if (a == NULL) {
        resume_no_task(s, id, now);
        return;
    }
    int rc = resume_begin(s, a, b);
    if (rc == 0)
        return;
    /* Paused again, tried after the backoff of a failed resume. */
    int64_t wait = resume_backoff_ms(++a->resume_fails);
    gpd__log("workload %llu: cannot resume it: %s; the next try in %lld s", (unsigned long long)id,
             gp_strerror(rc), (long long)(wait / 1000));
    pthread_mutex_lock(&s->eng_mu);
    rc = gp_engine_paused(s->eng, id, now);
    if (rc == 0)
        rc = gp_engine_resume_after(s->eng, id, now + wait);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc < 0)
        gpd__log("workload %llu: the engine refused its failed resume: %s", (unsigned long long)id,
                 gp_strerror(rc));
}

/* Writes the event of a finished step (and the workload's new state). */
static void record(gpd__sched *s, active *a, gp_wl_state st, gpd__event_kind kind,
                   const char *msg) {
    gpd__wl_change c;
    gpd__wl_change_event(&c, a->id, (int)st, msg, kind, msg);
    gpd__sched_record(s, &c);
}

/* The outcome of one step, on the loop. */
static void step_done(gpd__sched *s, gpd__pause_job *j) {
    active *a = gpd__loop_act_find(s, j->id);
    if (!a)
        return;
    if (a->stop_after) {
        /* Deleted or suspended while the step ran: thawed and stopped now. */
        int del = a->stop_after == GPD__CMD_DELETE;
        a->pausing = GPD__PAUSE_NONE;
        gpd__loop_owner_stop(s, a, del ? GPD__STOP_DELETE : GPD__STOP_SUSPEND,
                             del ? "deleted by its owner" : "suspended by its owner");
        return;
    }
    char msg[1100];
    int64_t now = gpd__now_ms();
    if (j->op == GP_EXEC_CTL_PAUSE) {
        if (j->rc == 0) {
            a->pausing = GPD__PAUSE_PAUSED;
            a->state = GP_WL_PAUSED;
            snprintf(msg, sizeof msg, "%s; %s (lock %lld ms, checkpoint %lld ms, freeze %lld ms)",
                     a->stop_note, j->p.detail[0] ? j->p.detail : "paused",
                     (long long)j->p.step_ms[0], (long long)j->p.step_ms[1],
                     (long long)j->p.step_ms[2]);
            record(s, a, GP_WL_PAUSED, GPD__EV_PAUSED, msg);
            if (a->held) {
                gpd__loop_idle_paused(s, a, 0, "");
                return;
            }
            pthread_mutex_lock(&s->eng_mu);
            int rc = gp_engine_paused(s->eng, a->id, now);
            pthread_mutex_unlock(&s->eng_mu);
            if (rc < 0)
                gpd__log("workload %llu: the engine refused its pause: %s",
                         (unsigned long long)a->id, gp_strerror(rc));
            return;
        }
        /* Nothing changed, the task runs on: checkpoint mode instead. */
        a->pausing = GPD__PAUSE_NONE;
        if (a->held && j->rc != GP_ENOENT) {
            gpd__loop_idle_paused(s, a, j->rc, j->p.detail[0] ? j->p.detail : gp_strerror(j->rc));
            return;
        }
        a->held = 0;
        snprintf(msg, sizeof msg, "%s; in checkpoint mode (the pause failed: %s)", a->stop_note,
                 j->p.detail[0] ? j->p.detail : gp_strerror(j->rc));
        a->stop_note[0] = '\0';
        if (j->rc == GP_ENOENT)
            return; /* it ended: the next poll concludes it */
        gpd__loop_begin_evict(s, a, j->grace_max, msg, sizeof msg);
        return;
    }
    if (j->rc == 0) {
        a->pausing = GPD__PAUSE_NONE;
        a->resume_fails = 0;
        a->state = GP_WL_RUNNING;
        /* An interactive session's idle timer starts again: paused, its
         * GPUs were not its own, and counting that time would suspend it
         * as soon as it is back. */
        a->busy_ms = now;
        a->stop_note[0] = '\0';
        a->tasks[0].binding = j->b;
        a->tasks[0].binding.node = a->tasks[0].node;
        gpd__err e = {0};
        if (j->moved && gpd__loop_store_binding(s, a, &a->tasks[0].binding, NULL, &e) < 0)
            gpd__log("workload %llu: its stored GPUs are still those it had and those of its "
                     "resume: %s",
                     (unsigned long long)a->id, e.msg);
        snprintf(msg, sizeof msg, "%s (after %lld ms)", j->p.detail[0] ? j->p.detail : "resumed",
                 (long long)j->took_ms);
        record(s, a, GP_WL_RUNNING, GPD__EV_RESUMED, msg);
        pthread_mutex_lock(&s->eng_mu);
        gp_engine_started(s->eng, a->id, now);
        pthread_mutex_unlock(&s->eng_mu);
        return;
    }
    /* It stays paused, with the reason, and is tried again after a backoff
     * (1 s, doubled at each failure in a row, at most 60 s): never restarted
     * from the beginning, and not thawed and frozen again at every cycle
     * while what blocks it lasts. */
    a->pausing = GPD__PAUSE_PAUSED;
    if (j->moved) {
        /* The task stays on the GPUs it had: so does its stored row. */
        gpd__err e = {0};
        if (gpd__loop_store_binding(s, a, &a->tasks[0].binding, NULL, &e) < 0)
            gpd__log("workload %llu: its stored GPUs are those of a failed resume: %s",
                     (unsigned long long)a->id, e.msg);
    }
    int64_t wait = resume_backoff_ms(++a->resume_fails);
    const char *why = j->p.detail[0] ? j->p.detail : gp_strerror(j->rc);
    if (strncmp(why, "still paused: ", 14) == 0)
        why += 14;
    snprintf(msg, sizeof msg, "still paused: %s; resume try %d failed, the next in %lld s", why,
             a->resume_fails, (long long)(wait / 1000));
    record(s, a, GP_WL_PAUSED, GPD__EV_RESUME_FAILED, msg);
    pthread_mutex_lock(&s->eng_mu);
    int rc = gp_engine_paused(s->eng, a->id, now);
    if (rc == 0)
        rc = gp_engine_resume_after(s->eng, a->id, now + wait);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc < 0)
        gpd__log("workload %llu: the engine refused its failed resume: %s",
                 (unsigned long long)a->id, gp_strerror(rc));
}

void gpd__loop_pause_result(gpd__sched *s, gpd__letter *l) {
    step_done(s, (gpd__pause_job *)l);
    free(l);
}
