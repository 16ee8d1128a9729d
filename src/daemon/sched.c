/*
 * sched.c — the scheduling loop's thread and the entry points API handlers
 * use (sched.h): engine locking, checking a request against the pool,
 * handing durable submissions to the engine, commands (delete, suspend,
 * resume) carried out on the loop's thread, queue changes kept in step
 * between engine and store, and the cycle itself with its latency histogram.
 *
 * The loop wakes on events (a submission, a command, a task that ended) and
 * on its period; it polls tasks every poll period. Commands and the pause
 * worker's outcomes reach it as letters of its inbox (mailbox.h), carried out
 * in the order they came; the recovery at start is its first command.
 * Event-driven cycles are spaced at least MIN_GAP_MS apart, so that a burst
 * of submissions costs a few cycles and not one each.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "daemon/sched-int.h"

#define MIN_GAP_MS 50

const double gpd__cycle_bounds[GPD__CYCLE_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1.0,  2.5};

gp_engine *gpd__sched_lock(gpd__sched *s) {
    pthread_mutex_lock(&s->eng_mu);
    return s->eng;
}

void gpd__sched_unlock(gpd__sched *s) {
    pthread_mutex_unlock(&s->eng_mu);
}

int gpd__sched_emulated(gpd__sched *s) {
    return s->emulated;
}

const char *gpd__sched_executor_name(gpd__sched *s) {
    return gp_executor_name(s->ex);
}

void gpd__sched_describe(gpd__sched *s, gp_executor_info *info) {
    /* Any thread: a copy of what the loop last read (executor.h's rule). */
    pthread_mutex_lock(&s->eng_mu);
    *info = s->info;
    pthread_mutex_unlock(&s->eng_mu);
}

const gp_node_spec *gpd__sched_node(gpd__sched *s, const char *name) {
    for (size_t i = 0; i < s->nnodes; i++)
        if (strcmp(s->nodes[i].name, name) == 0)
            return &s->nodes[i];
    return NULL;
}

static void wake(gpd__sched *s) {
    gpd__mailbox_nudge(&s->inbox);
}

int gpd__sched_check_request(gpd__sched *s, const gpd__request *r, gpd__err *e) {
    char err[GP_ERR_MAX] = "";
    pthread_mutex_lock(&s->eng_mu);
    int rc = gp_engine_submit_check(s->eng, &r->spec, err, sizeof err);
    pthread_mutex_unlock(&s->eng_mu);
    return rc < 0 ? gpd__request_engine_error(rc, err, e) : 0;
}

/* The commands of the loop's own (sched.h's are 1 and up): the rebuild of
 * the engine at start, and a stored submission's hand-off to the engine. */
#define CMD_RECOVER 0
#define CMD_SUBMIT  (-1)

void gpd__sched_submitted(gpd__sched *s, uint64_t id) {
    gpd__err e = {0};
    cmd c = {.l.kind = GPD__LETTER_CMD, .op = CMD_SUBMIT, .id = id, .e = &e};
    /* Refused when gpupoold is stopping: the workload is stored pending,
     * and the next start's recovery hands it over. One the loop could not
     * hand over for now (the store unreadable, out of memory; it says so)
     * it hands over before a later cycle. */
    gpd__mailbox_call(&s->inbox, &c.l, &e);
}

/* Hands pending stored workload w to the engine on the loop's thread: 0
 * (the engine holds it, or it was refused and is stored failed with the
 * engine's reason: checked before the commit, only a race with a queue
 * change gets there), or GP_ENOMEM, the workload left pending for the loop
 * to hand over again (s->resubmit). */
static int give(gpd__sched *s, const gpd__wl *w, gpd__err *e) {
    gp_workload_spec spec;
    char err[GP_ERR_MAX] = "";
    int rc = gpd__sched_stored_spec(w, &spec, e);
    if (rc == 0) {
        pthread_mutex_lock(&s->eng_mu);
        rc = gp_engine_submit(s->eng, &spec, err, sizeof err);
        pthread_mutex_unlock(&s->eng_mu);
        if (rc == GP_ENOMEM)
            gpd__fail(e, rc, "", "out of memory");
    } else if (rc != GP_ENOMEM) {
        snprintf(err, sizeof err, "the stored request cannot be read: %.200s", e->msg);
    }
    if (rc == GP_ENOMEM) {
        s->resubmit = 1;
        return rc;
    }
    if (rc < 0 && rc != GP_EEXIST) {
        gpd__wl_change c;
        gpd__wl_change_event(&c, w->id, GP_WL_FAILED, err, GPD__EV_FAILED, err);
        gpd__sched_record(s, &c);
    }
    return 0;
}

/* Hands stored workload id to the engine, if it is still pending: a command
 * taken between its commit and this (a delete, a suspend), which found
 * nothing to stop in the engine, stored it as it left it, and it stays so.
 * One that cannot be read or handed over for now stays pending, and the
 * loop hands it over before a later cycle. */
static int hand_over(gpd__sched *s, uint64_t id, gpd__err *e) {
    gpd__wl w;
    memset(&w, 0, sizeof w);
    int rc = gpd__store_wl_get(s->d->store, id, &w, e);
    if (rc < 0)
        s->resubmit = 1;
    else if (w.state == GP_WL_PENDING)
        rc = give(s, &w, e);
    if (rc < 0)
        gpd__log("workload %llu: cannot hand it to the scheduler for now (%s); the loop will try "
                 "again",
                 (unsigned long long)id, e->msg);
    gpd__wl_free(&w);
    return rc;
}

typedef struct resubmit_pass {
    gpd__sched *s;
    uint64_t last;
    size_t seen;
} resubmit_pass;

static int resubmit_one(const gpd__wl *w, void *arg) {
    resubmit_pass *p = arg;
    p->last = w->id;
    p->seen++;
    gpd__err e = {0};
    return give(p->s, w, &e);
}

/* Hands every pending workload of the store to the engine again (those it
 * holds answer GP_EEXIST), in id order, after a hand-over failed for now;
 * s->resubmit is cleared by a pass that went through, and one that did not
 * is tried again before the next cycle. */
static void resubmit_pending(gpd__sched *s) {
    s->resubmit = 0;
    resubmit_pass p = {.s = s};
    gpd__wl_filter f = {.state = GP_WL_PENDING, .limit = 500};
    gpd__err e = {0};
    int rc;
    do {
        p.seen = 0;
        f.after = p.last;
        rc = gpd__store_wl_list(s->d->store, &f, resubmit_one, &p, &e);
    } while (rc == 0 && p.seen == (size_t)f.limit);
    if (rc < 0) {
        s->resubmit = 1;
        gpd__log("pending workloads: cannot hand them to the scheduler for now (%s); the loop will "
                 "try again",
                 e.msg);
    }
}

/* ---- Queues ----------------------------------------------------------- */

int gpd__sched_queue_set(gpd__sched *s, const gp_queue_spec *q, size_t n, gpd__err *e) {
    char err[GP_ERR_MAX] = "";
    gp_queue_info old;
    pthread_mutex_lock(&s->eng_mu);
    int existed = gp_engine_queue_get(s->eng, q->name, &old) == 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = gp_engine_queue_set(s->eng, &q[i], err, sizeof err);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc < 0)
        return gpd__fail(e, rc == GP_ENOENT ? GP_EINVAL : rc, "", "%s", err);
    rc = gpd__store_queue_put(s->d->store, q, n, e);
    if (rc < 0) {
        /* Undo in the engine so that both say the same. */
        pthread_mutex_lock(&s->eng_mu);
        if (!existed)
            gp_engine_queue_remove(s->eng, q->name);
        pthread_mutex_unlock(&s->eng_mu);
        if (existed)
            gpd__log("queue %s: the store refused a change the engine took", q->name);
        return rc;
    }
    wake(s);
    return 0;
}

int gpd__sched_queue_remove(gpd__sched *s, const char *name, gpd__err *e) {
    pthread_mutex_lock(&s->eng_mu);
    int rc = gp_engine_queue_remove(s->eng, name);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc == GP_EBUSY)
        return gpd__fail(e, rc, "name", "queue %s still has queues or workloads under it", name);
    if (rc < 0)
        return gpd__fail(e, rc, "name", "no queue named %s", name);
    return gpd__store_queue_delete(s->d->store, name, e);
}

/* ---- Commands --------------------------------------------------------- */

int gpd__sched_session(gpd__sched *s, const char *handle, const gp_session_req *req, int *fd,
                       char *err, size_t errlen) {
    return gp_exec_session(s->ex, handle, req, fd, err, errlen);
}

int gpd__sched_command(gpd__sched *s, int op, uint64_t id, gpd__err *e) {
    cmd c = {.l.kind = GPD__LETTER_CMD, .op = op, .id = id, .e = e};
    return gpd__mailbox_call(&s->inbox, &c.l, e);
}

static int set_final(gpd__sched *s, uint64_t id, gp_wl_state st, gpd__event_kind kind,
                     const char *msg, gpd__err *e) {
    gpd__wl_change c;
    gpd__wl_change_event(&c, id, (int)st, msg, kind, msg);
    return gpd__store_wl_apply(s->d->store, &c, 1, e);
}

/* Hands stored workload w to the engine, storing nothing: 0, or an error
 * (e says why). */
static int engine_take(gpd__sched *s, const gpd__wl *w, gpd__err *e) {
    gp_workload_spec spec;
    int rc = gpd__sched_stored_spec(w, &spec, e);
    if (rc == 0) {
        char err[GP_ERR_MAX] = "";
        pthread_mutex_lock(&s->eng_mu);
        rc = gp_engine_submit(s->eng, &spec, err, sizeof err);
        pthread_mutex_unlock(&s->eng_mu);
        if (rc == GP_ENOMEM)
            gpd__fail(e, rc, "", "out of memory");
        else if (rc < 0)
            rc = gpd__fail(e, GP_ESTATE, "", "cannot resume: %s", err);
    }
    return rc;
}

static int resume(gpd__sched *s, const gpd__wl *w, gpd__err *e) {
    int rc = engine_take(s, w, e);
    if (rc < 0)
        return rc;
    rc = set_final(s, w->id, GP_WL_PENDING, GPD__EV_RESUMED, "resumed: back in the queue", e);
    if (rc == 0)
        gpd__loop_idle_forget(s, w->id);
    if (rc < 0) {
        pthread_mutex_lock(&s->eng_mu);
        gp_engine_cancel(s->eng, w->id);
        pthread_mutex_unlock(&s->eng_mu);
    }
    return rc;
}

/* Stores the stop a command asked for (kind) when the loop takes it, its
 * state unchanged: a restart of gpupoold carries out that stop, not the one
 * it replaced or none (sched-recover.c). */
static void store_stop_kind(gpd__sched *s, uint64_t id, const char *kind) {
    gpd__wl_change c;
    gpd__wl_change_init(&c, id);
    c.stop_kind = kind;
    gpd__sched_record(s, &c);
}

static int carry_out(gpd__sched *s, cmd *c) {
    gpd__err *e = c->e;
    if (c->op == CMD_RECOVER)
        return gpd__loop_recover(s, e);
    if (c->op == CMD_SUBMIT)
        return hand_over(s, c->id, e);
    active *a = gpd__loop_act_find(s, c->id);
    const char *kind = c->op == GPD__CMD_DELETE ? GPD__STOP_DELETE : GPD__STOP_SUSPEND;
    if (a && c->op == GPD__CMD_RESUME && a->held && a->pausing == GPD__PAUSE_PAUSED)
        return gpd__loop_idle_resume(s, a, e); /* paused by the idle policy */
    if (a && c->op != GPD__CMD_RESUME &&
        (a->pausing == GPD__PAUSE_PAUSING || a->pausing == GPD__PAUSE_RESUMING)) {
        /* A pause or a resume is under way on the pause worker: the task is
         * stopped once it ends (sched-pause.c); a delete outranks a suspend. */
        if (a->stop_after != GPD__CMD_DELETE)
            a->stop_after = c->op;
        store_stop_kind(s, a->id,
                        a->stop_after == GPD__CMD_DELETE ? GPD__STOP_DELETE : GPD__STOP_SUSPEND);
        return 0;
    }
    if (a && c->op != GPD__CMD_RESUME) {
        if (c->op == GPD__CMD_DELETE || a->pausing == GPD__PAUSE_PAUSED) {
            /* A paused task is thawed and stopped at once (the executor's
             * stop thaws it): frozen, it could not act on a signal. */
            gpd__loop_owner_stop(s, a, kind,
                                 c->op == GPD__CMD_DELETE ? "deleted by its owner"
                                                          : "suspended by its owner while paused");
        } else if (a->state == GP_WL_STOPPING) {
            snprintf(a->stop_kind, sizeof a->stop_kind, "%s", kind);
            store_stop_kind(s, a->id, kind);
        } else {
            gpd__loop_begin_stop(s, a, kind, a->grace_ms, "suspended by its owner");
        }
        return 0;
    }
    gpd__wl w;
    int rc = gpd__store_wl_get(s->d->store, c->id, &w, e);
    if (rc < 0)
        return rc;
    if (c->op == GPD__CMD_RESUME) {
        if (w.state == GP_WL_SUSPENDED)
            rc = resume(s, &w, e);
        else if (w.state == GP_WL_PAUSED)
            rc = gpd__fail(e, GP_ESTATE, "",
                           "workload %llu is paused to give its GPUs to other work: it resumes "
                           "by itself on its node once a GPU is free there",
                           (unsigned long long)w.id);
        else
            rc = gpd__fail(e, GP_ESTATE, "", "workload %llu is %s, not suspended",
                           (unsigned long long)w.id, gp_wl_state_name(w.state));
    } else if (w.state == GP_WL_PENDING) {
        pthread_mutex_lock(&s->eng_mu);
        gp_engine_cancel(s->eng, w.id);
        pthread_mutex_unlock(&s->eng_mu);
        int del = c->op == GPD__CMD_DELETE;
        rc = set_final(s, w.id, del ? GP_WL_DELETED : GP_WL_SUSPENDED,
                       del ? GPD__EV_DELETED : GPD__EV_SUSPENDED,
                       del ? "deleted by its owner while pending" : "suspended while pending", e);
        if (rc < 0 && engine_take(s, &w, NULL) < 0) /* back into the engine: nothing changed */
            gpd__log("workload %llu: the engine refused it back after a failed %s; a restart "
                     "hands it over",
                     (unsigned long long)w.id, del ? "delete" : "suspend");
    } else if (w.state == GP_WL_SUSPENDED && c->op == GPD__CMD_DELETE) {
        rc = set_final(s, w.id, GP_WL_DELETED, GPD__EV_DELETED,
                       "deleted by its owner while suspended", e);
        if (rc == 0)
            gpd__loop_idle_forget(s, w.id);
    } else {
        rc = gpd__fail(e, GP_ESTATE, "", "workload %llu is already %s", (unsigned long long)w.id,
                       gp_wl_state_name(w.state));
    }
    gpd__wl_free(&w);
    return rc;
}

static int run_command(gpd__sched *s, cmd *c) {
    int rc = carry_out(s, c);
    if (rc == GP_ENOMEM && c->op == GPD__CMD_RESUME && c->e != NULL) {
        /* Nothing changed: the owner is told to try again (503), as for
         * any shortage that may pass, never that it cannot be resumed. */
        char why[sizeof c->e->msg];
        snprintf(why, sizeof why, "%s", c->e->msg);
        rc = gpd__fail(c->e, GP_EAGAIN, "",
                       "workload %llu cannot be resumed for now (%s); try again",
                       (unsigned long long)c->id, why);
    }
    return rc;
}

/* ---- The cycle -------------------------------------------------------- */

/* One of the cycle's decisions, as the loop carries it out: copied from the
 * engine's under eng_mu, without allocating (its tasks are s->bind_tasks). */
typedef struct decision_copy {
    gp_decision_type type;
    uint64_t id;
    gp_evict_reason reason;
    uint64_t for_workload;
    int64_t grace_max;  /* EVICT: the longest grace period, or -1 */
    gp_on_preempt mode; /* EVICT: how, as the engine decided */
    gp_mode_why mode_why;
    int32_t resume; /* BIND: resume the paused workload there */
    int ntasks;
    task_rt *tasks;
} decision_copy;

/* Copies decision d into *dc (its tasks into s->bind_tasks): 0, or
 * GP_EINVAL for a BIND of more tasks than a gang may have (never made). */
static int copy_decision(gpd__sched *s, const gp_decision *d, decision_copy *dc) {
    *dc = (decision_copy){.type = d->type,
                          .id = d->workload,
                          .reason = d->reason,
                          .for_workload = d->for_workload,
                          .grace_max = d->type == GP_DECISION_EVICT ? d->grace_max : -1,
                          .mode = d->mode,
                          .mode_why = d->mode_why};
    if (d->type != GP_DECISION_BIND)
        return 0;
    if (d->ntasks < 1 || d->ntasks > GPD__MAX_GANG)
        return GP_EINVAL;
    dc->resume = d->resume;
    dc->ntasks = d->ntasks;
    dc->tasks = s->bind_tasks;
    for (int t = 0; t < d->ntasks; t++) {
        task_rt *tr = &dc->tasks[t];
        *tr = (task_rt){.binding = d->tasks[t]};
        snprintf(tr->node, sizeof tr->node, "%s", d->tasks[t].node);
        tr->binding.node = tr->node;
    }
    return 0;
}

/* Runs a cycle and carries out its decisions. They are read from the engine
 * one at a time, under eng_mu, as each is carried out: the engine keeps them
 * until its next cycle, which only this thread runs, and copying one needs
 * no memory. A workload the engine bound is so always launched (or, where
 * its launch fails, handed back to the engine by gpd__loop_bind), and one it
 * evicted always stopped: none is held by the engine with nothing done. */
static void run_cycle(gpd__sched *s, int64_t now) {
    struct timespec t0, t1;
    const gp_decision *dec = NULL;
    size_t n = 0;
    pthread_mutex_lock(&s->eng_mu);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = gp_engine_cycle(s->eng, now, &dec, &n, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc == GP_ENOMEM)
        gpd__log("scheduling cycle cut short: out of memory after %zu decisions", n);
    else if (rc < 0)
        gpd__log("scheduling cycle failed: %s", gp_strerror(rc));
    if (rc < 0 && rc != GP_ENOMEM)
        n = 0;
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    pthread_mutex_lock(&s->hist_mu);
    for (int b = 0; b < GPD__CYCLE_BUCKETS; b++)
        if (secs <= gpd__cycle_bounds[b])
            s->hist.counts[b]++;
    s->hist.count++;
    s->hist.sum += secs;
    pthread_mutex_unlock(&s->hist_mu);
    for (size_t i = 0; i < n; i++) {
        decision_copy one, *dc = &one;
        pthread_mutex_lock(&s->eng_mu);
        int bad = copy_decision(s, &dec[i], dc);
        if (bad < 0) /* never made: gp_engine_submit_check bounds a gang */
            gp_engine_requeue(s->eng, dc->id);
        pthread_mutex_unlock(&s->eng_mu);
        if (bad < 0) {
            gpd__log("workload %llu: bound with %d tasks, more than a gang may have; back to the "
                     "queue",
                     (unsigned long long)dc->id, (int)dec[i].ntasks);
            continue;
        }
        if (dc->type == GP_DECISION_BIND && dc->resume) {
            gpd__loop_resume(s, dc->id, &dc->tasks[0].binding, now);
        } else if (dc->type == GP_DECISION_BIND) {
            gpd__loop_bind(s, dc->id, dc->ntasks, dc->tasks);
        } else if (dc->type == GP_DECISION_EVICT) {
            active *a = gpd__loop_act_find(s, dc->id);
            char why[512];
            snprintf(why, sizeof why, "evicted (%s)%s", gp_evict_reason_name(dc->reason),
                     dc->for_workload ? " to make room for workload " : "");
            if (dc->for_workload) {
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, "%llu", (unsigned long long)dc->for_workload);
            }
            if (!a) {
                gpd__log("workload %llu: eviction of a workload without tasks",
                         (unsigned long long)dc->id);
            } else if (dc->reason == GP_EVICT_NODE_GONE) {
                a->in_engine = 0;
                snprintf(a->stop_kind, sizeof a->stop_kind, "%s", GPD__STOP_EVICT);
                gpd__loop_finish_stop(s, a, why);
            } else if (a->held) {
                /* The idle policy's pause under way frees its GPUs (and the
                 * engine forgets it then, sched-idle.c). */
            } else if (a->state == GP_WL_RUNNING && dc->mode == GP_ON_PREEMPT_PAUSE &&
                       a->pausing == GPD__PAUSE_NONE &&
                       gpd__loop_pause_begin(s, a, why, dc->grace_max) == 0) {
                /* Pause mode: the pause worker pauses the task; the loop
                 * learns the outcome (gpd__loop_pause_result). */
            } else if (a->state != GP_WL_STOPPING && dc->mode == GP_ON_PREEMPT_REQUEUE) {
                /* Requeue mode: no signal, no grace period. */
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, "; stopped at once (on_preempt requeue)");
                snprintf(a->stop_kind, sizeof a->stop_kind, "%s", GPD__STOP_EVICT);
                gpd__loop_finish_stop(s, a, why);
            } else if (a->state != GP_WL_STOPPING) {
                /* A workload asking for pause is evicted in checkpoint mode
                 * where the engine says it cannot be paused (a node that
                 * cannot pause has the executor's sentence on why), and
                 * always until the daemon pauses tasks itself; the event
                 * says which. */
                if (a->on_preempt == GP_ON_PREEMPT_PAUSE) {
                    size_t l = strlen(why);
                    int no = dc->mode_why == GP_MODE_NO_PAUSE;
                    snprintf(why + l, sizeof why - l,
                             "; in checkpoint mode (on_preempt pause: %s%s%.200s)",
                             dc->mode_why == GP_MODE_ASKED ? "its task was not running"
                                                           : gp_mode_why_text(dc->mode_why),
                             no ? ": " : "",
                             !no            ? ""
                             : s->can_pause ? "--paused-memory-max is 0"
                                            : s->pause_note);
                }
                gpd__loop_begin_evict(s, a, dc->grace_max, why, sizeof why);
            }
        }
    }
}

void gpd__sched_cycle_hist(gpd__sched *s, gpd__cycle_hist *out) {
    pthread_mutex_lock(&s->hist_mu);
    *out = s->hist;
    pthread_mutex_unlock(&s->hist_mu);
}

static void *loop_main(void *arg) {
    gpd__sched *s = arg;
    /* Named, so that ps, a debugger and the tests' allocation-failure
     * sweep (tests/daemon/failalloc.c) can tell the loop from the rest. */
    pthread_setname_np(pthread_self(), "gpd-loop");
    /* The recovery first, on this thread like every other executor call:
     * the opening thread called it before anyone else could. */
    gpd__letter *l;
    if (gpd__mailbox_take(&s->inbox, -1, 1, &l) == GPD__MAIL_CLOSED || !l)
        return NULL;
    int rrc = run_command(s, (cmd *)l);
    gpd__mailbox_answer(&s->inbox, l, rrc);
    if (rrc < 0)
        return NULL;
    int64_t period = s->d->cfg.period_ms, poll = s->d->cfg.poll_ms;
    int64_t inv = s->d->cfg.inventory_ms > 0 ? s->d->cfg.inventory_ms : 10000;
    int64_t next_cycle = 0, next_poll = 0, last_cycle = 0, next_inv = gpd__now_ms() + inv;
    int want_cycle = 1;
    int64_t until = 0; /* wall clock (the engine's); the inbox waits on the monotonic */
    for (;;) {
        int64_t wait = until - gpd__now_ms();
        int got =
            gpd__mailbox_take(&s->inbox, gpd__mono_ms() + (wait > 0 ? wait : 0), SIZE_MAX, &l);
        if (got == GPD__MAIL_CLOSED)
            break;
        if (got == GPD__MAIL_WOKEN)
            want_cycle = 1;
        while (l) {
            gpd__letter *next = l->next; /* a command's caller owns it once answered */
            if (l->kind == GPD__LETTER_CMD)
                gpd__mailbox_answer(&s->inbox, l, run_command(s, (cmd *)l));
            else
                gpd__loop_pause_result(s, l);
            l = next;
        }
        int64_t now = gpd__now_ms();
        if (now >= next_poll) {
            size_t before = s->nact;
            gpd__loop_poll(s, now);
            if (s->nact != before || s->cycle_soon)
                want_cycle = 1;
            s->cycle_soon = 0;
            next_poll = now + poll;
        }
        if (now >= next_inv) {
            if (gpd__loop_refresh_nodes(s))
                want_cycle = 1;
            next_inv = now + inv;
        }
        gpd__loop_usage_tick(s, now);
        if ((want_cycle && now - last_cycle >= MIN_GAP_MS) || now >= next_cycle) {
            if (s->resubmit)
                resubmit_pending(s);
            run_cycle(s, now);
            last_cycle = now;
            next_cycle = now + period;
            want_cycle = 0;
        }
        until = next_poll < next_cycle ? next_poll : next_cycle;
        if (want_cycle && last_cycle + MIN_GAP_MS < until)
            until = last_cycle + MIN_GAP_MS;
    }
    return NULL;
}

/* ---- Open and close --------------------------------------------------- */

int gpd__sched_open(gpd__daemon *d, gpd__err *e) {
    gpd__sched *s = calloc(1, sizeof *s);
    if (!s)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    s->d = d;
    if (gpd__mailbox_init(&s->inbox) < 0) {
        free(s);
        return gpd__fail(e, GP_ESYS, "", "cannot set up the scheduling loop's inbox");
    }
    pthread_mutex_init(&s->eng_mu, NULL);
    pthread_mutex_init(&s->hist_mu, NULL);
    pthread_mutex_init(&s->usage_mu, NULL);
    d->sched = s;
    gp_engine_config ec;
    gp_engine_config_init(&ec);
    ec.usage_half_life = d->cfg.half_life_ms;
    char err[GP_ERR_MAX] = "";
    int rc = gp_engine_open(&ec, &s->eng, err, sizeof err);
    if (rc < 0)
        gpd__fail(e, rc, "", "engine: %s", err);
    gp_executor_ctx ctx = {.data_dir = d->cfg.data_dir,
                           .lib_dir = d->cfg.lib_dir,
                           .allow_root_workloads = d->cfg.allow_root_workloads};
    if (rc == 0 && (rc = gp_executor_open_ctx(d->cfg.executor, &ctx, d->cfg.executor_config, &s->ex,
                                              err, sizeof err)) < 0)
        gpd__fail(e, rc, "executor", "executor %s: %s", d->cfg.executor, err);
    if (rc == 0 && gpd__pause_start(s) < 0)
        rc = gpd__fail(e, GP_ESYS, "", "cannot start the pause thread");
    if (rc == 0 && pthread_create(&s->th, NULL, loop_main, s) != 0)
        rc = gpd__fail(e, GP_ESYS, "", "cannot start the scheduling thread");
    if (rc == 0) {
        s->started = 1;
        cmd recover = {.l.kind = GPD__LETTER_CMD, .op = CMD_RECOVER, .e = e};
        rc = gpd__mailbox_call(&s->inbox, &recover.l, e);
    }
    if (rc < 0) {
        gpd__sched_close(s);
        d->sched = NULL;
        return rc;
    }
    return 0;
}

void gpd__sched_close(gpd__sched *s) {
    if (!s)
        return;
    /* Commands not yet taken are refused ("gpupoold is stopping"). */
    gpd__mailbox_close(&s->inbox);
    if (s->started)
        pthread_join(s->th, NULL);
    gpd__pause_stop(s);
    gpd__pause_free_letters(gpd__mailbox_destroy(&s->inbox));
    /* Tasks keep running: a restarted daemon finds them again. */
    for (size_t i = 0; i < s->nact; i++) {
        free(s->act[i]->tasks);
        free(s->act[i]);
    }
    free(s->act);
    free(s->reap_later);
    if (s->ex)
        gp_executor_close(s->ex);
    if (s->eng)
        gp_engine_free(s->eng);
    free(s->nodes);
    pthread_mutex_destroy(&s->eng_mu);
    pthread_mutex_destroy(&s->hist_mu);
    pthread_mutex_destroy(&s->usage_mu);
    gpd__sched_usage_free(s);
    free(s);
}

int gpd__sched_live_tasks(gpd__sched *s, gpd__live_task **out, size_t *n) {
    pthread_mutex_lock(&s->eng_mu);
    size_t total = 0;
    for (size_t i = 0; i < s->nact; i++)
        total += (size_t)s->act[i]->ntasks;
    gpd__live_task *lt = calloc(total ? total : 1, sizeof *lt);
    size_t k = 0;
    for (size_t i = 0; lt && i < s->nact; i++)
        for (int t = 0; t < s->act[i]->ntasks; t++) {
            const active *a = s->act[i];
            gpd__live_task *x = &lt[k++];
            x->workload = a->id;
            x->task = t;
            snprintf(x->project, sizeof x->project, "%s", a->project);
            snprintf(x->node, sizeof x->node, "%s", a->tasks[t].node);
            x->binding = a->tasks[t].binding;
            x->binding.node = x->node;
            x->gpu_mem_used = a->tasks[t].mem_used;
            x->compute_pct = a->compute_pct;
        }
    pthread_mutex_unlock(&s->eng_mu);
    if (!lt)
        return GP_ENOMEM;
    *out = lt;
    *n = k;
    return 0;
}
