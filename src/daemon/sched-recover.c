/*
 * sched-recover.c — rebuilding the engine when gpupoold starts, from the
 * executor's inventory and the store, and reconciling the workloads that had
 * tasks with what the executor still knows about them:
 *
 *   - PENDING workloads are submitted again, in id order.
 *   - STARTING ones get the launches that never reached the store repeated,
 *     with the same (workload, task, attempt) key: the executor answers with
 *     the task it already started, if it did, so nothing runs twice.
 *   - STARTING, RUNNING and STOPPING ones whose tasks the executor still knows
 *     are restored into the engine on the slices they hold; the next poll
 *     judges those that ended meanwhile, and a STOPPING one finishes its stop.
 *   - Those with a lost task are stopped, their attempt recorded as lost, and
 *     requeued, or suspended where the idle policy held them paused, as the
 *     loop's poll does (gpd__loop_lost_state); if a stop for suspend or
 *     delete was under way, it is finished as such. A session the idle
 *     policy holds paused whose GPUs are gone from the pool is lost too.
 *   - Tasks the executor holds that no workload refers to (an attempt that
 *     ended but was not reaped) are stopped and reaped, where the executor
 *     can list its tasks.
 *
 * Where the GPUs come from is the executor's business (the local one
 * emulates GPUs on its embedded defaults when it finds none); the daemon only
 * says loudly when they are emulated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_array.h"
#include "daemon/sched-int.h"

#define MAX_NODES 1024

static int count_gpus(const gp_node_spec *n, size_t nn) {
    int g = 0;
    for (size_t i = 0; i < nn; i++)
        g += n[i].ngpus;
    return g;
}

/* Sets what a node's spec says about pause from the executor's answer and
 * --paused-memory-max: the executor reports nodes, the daemon decides how
 * much host memory paused tasks may hold on each. */
static void pause_fields(gpd__sched *s, gp_node_spec *n) {
    n->can_pause = gpd__sched_pause_of(s, n->mem_bytes, &n->paused_mem_max);
}

int gpd__sched_pause_of(gpd__sched *s, int64_t mem_bytes, int64_t *max) {
    const gpd__config *c = &s->d->cfg;
    *max = c->paused_mem_max >= 0 ? c->paused_mem_max : mem_bytes / 100 * c->paused_mem_pct;
    return s->can_pause && *max > 0;
}

/* Asks the executor once whether its nodes can pause tasks. */
static void ask_pause_support(gpd__sched *s) {
    gp_exec_pause p;
    memset(&p, 0, sizeof p);
    int rc = gp_exec_control(s->ex, GP_EXEC_CTL_PAUSE_SUPPORT, &p);
    s->can_pause = rc == 0;
    if (p.detail[0])
        snprintf(s->pause_note, sizeof s->pause_note, "%s", p.detail);
    else
        snprintf(s->pause_note, sizeof s->pause_note, "%s",
                 rc == 0 ? "pause: supported" : "pause is not supported by this executor");
}

/* Asks the executor for its description into *info (all empty if it has
 * none) and keeps a copy for API threads (gpd__sched_describe). Loop thread
 * only. */
static void keep_description(gpd__sched *s, gp_executor_info *info) {
    if (gp_exec_describe(s->ex, info) < 0)
        memset(info, 0, sizeof *info);
    pthread_mutex_lock(&s->eng_mu);
    s->info = *info;
    pthread_mutex_unlock(&s->eng_mu);
}

static int load_nodes(gpd__sched *s, gpd__err *e) {
    char err[GP_ERR_MAX] = "";
    s->nodes = calloc(MAX_NODES, sizeof *s->nodes);
    if (!s->nodes)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    int rc =
        gp_exec_inventory(s->ex, s->nodes, MAX_NODES, &s->nnodes, &s->emulated, err, sizeof err);
    if (rc < 0)
        return gpd__fail(e, rc, "executor", "inventory: %s", err);
    ask_pause_support(s);
    for (size_t i = 0; i < s->nnodes; i++)
        pause_fields(s, &s->nodes[i]);
    for (size_t i = 0; i < s->nnodes; i++)
        if ((rc = gp_engine_node_set(s->eng, &s->nodes[i], err, sizeof err)) < 0)
            return gpd__fail(e, rc, "", "node %s: %s", s->nodes[i].name, err);
    gp_executor_info info;
    keep_description(s, &info);
    gpd__log("inventory: %zu node(s), %d GPU(s)%s", s->nnodes, count_gpus(s->nodes, s->nnodes),
             s->emulated ? " -- EMULATED" : "");
    const char *lines[] = {info.gpus,     info.limits,  info.slices,    info.state,
                           info.identity, info.devices, info.gpu_memory};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (lines[i][0])
            gpd__log("executor %s: %s", gp_executor_name(s->ex), lines[i]);
    gpd__log("executor %s: %s", gp_executor_name(s->ex), s->pause_note);
    if (s->emulated) {
        gpd__log("*** %d EMULATED GPUs (%s) ***", count_gpus(s->nodes, s->nnodes),
                 info.gpus[0] ? info.gpus : "said the executor");
        gpd__log("*** Workloads run as real processes; their GPUs are not real. ***");
    }
    return 0;
}

/* The node of list named name, or NULL. */
static gp_node_spec *find_node(gp_node_spec *list, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return &list[i];
    return NULL;
}

/* Hands one node's new spec to the engine and keeps it if accepted. */
static int update_node(gpd__sched *s, gp_node_spec *old, const gp_node_spec *spec) {
    if (memcmp(old, spec, sizeof *spec) == 0)
        return 0;
    char err[GP_ERR_MAX];
    pthread_mutex_lock(&s->eng_mu);
    int rc = gp_engine_node_set(s->eng, spec, err, sizeof err);
    pthread_mutex_unlock(&s->eng_mu);
    if (rc < 0) {
        gpd__log("node %s: the executor's new inventory was refused: %s", spec->name, err);
        return 0;
    }
    if (old->schedulable != spec->schedulable)
        gpd__log("node %s: %s", spec->name,
                 spec->schedulable ? "back in the pool"
                                   : "takes no new work (the executor "
                                     "reports it unusable or no longer)");
    *old = *spec;
    return 1;
}

int gpd__loop_refresh_nodes(gpd__sched *s) {
    gp_node_spec *fresh = calloc(MAX_NODES, sizeof *fresh);
    if (!fresh)
        return 0;
    size_t n = 0;
    int emulated = 0, changed = 0;
    char err[GP_ERR_MAX] = "";
    int rc = gp_exec_inventory(s->ex, fresh, MAX_NODES, &n, &emulated, err, sizeof err);
    if (rc < 0) {
        /* The cluster may be restarting: keep the pool as it was. */
        if (!s->inventory_failing)
            gpd__log("inventory: %s (the pool is kept as it was)", err);
        s->inventory_failing = 1;
        free(fresh);
        return 0;
    }
    s->inventory_failing = 0;
    for (size_t j = 0; j < n; j++)
        pause_fields(s, &fresh[j]);
    gp_executor_info info;
    keep_description(s, &info);
    for (size_t i = 0; i < s->nnodes; i++) {
        gp_node_spec *now = find_node(fresh, n, s->nodes[i].name);
        gp_node_spec gone;
        if (!now) {
            gone = s->nodes[i];
            gone.schedulable = 0;
            now = &gone;
        }
        changed |= update_node(s, &s->nodes[i], now);
    }
    for (size_t j = 0; j < n && s->nnodes < MAX_NODES; j++)
        if (!find_node(s->nodes, s->nnodes, fresh[j].name)) {
            gp_node_spec *slot = &s->nodes[s->nnodes];
            memset(slot, 0, sizeof *slot);
            if (update_node(s, slot, &fresh[j])) {
                s->nnodes++;
                changed = 1;
                gpd__log("node %s: joined the pool with %d GPU(s)", fresh[j].name, fresh[j].ngpus);
            }
        }
    free(fresh);
    return changed;
}

typedef struct queue_load {
    gpd__sched *s;
    char oom[GP_NAME_MAX + 1]; /* the queue the engine had no memory for */
} queue_load;

/* A queue the engine refuses is logged and left out (its workloads are
 * refused in turn, with the reason); one it had no memory for stops the
 * listing, and the recovery fails: leaving it out would stop the running
 * tasks of its workloads, which a later start could have kept. */
static int add_queue(const gp_queue_spec *q, void *arg) {
    queue_load *ql = arg;
    char err[GP_ERR_MAX] = "";
    int rc = gp_engine_queue_set(ql->s->eng, q, err, sizeof err);
    if (rc == GP_ENOMEM) {
        snprintf(ql->oom, sizeof ql->oom, "%s", q->name);
        return 1;
    }
    if (rc < 0)
        gpd__log("queue %s from the store was refused by the engine: %s", q->name, err);
    return 0;
}

/* Ids of workloads that had tasks, and pending ones the engine refused. */
typedef struct idlist {
    uint64_t *ids;
    size_t n, cap;
    uint64_t last;
    size_t seen;
} idlist;

/* Appends id: 0, or GP_ENOMEM with l unchanged. A workload left off these
 * lists would be lost to the restart (its tasks reaped as orphans), so the
 * caller fails the recovery instead. */
static int push(idlist *l, uint64_t id) {
    if (GP_ARRAY_ROOM(l->ids, l->n, l->cap, 64) < 0)
        return GP_ENOMEM;
    l->ids[l->n++] = id;
    return 0;
}

typedef struct scan {
    gpd__sched *s;
    idlist had_tasks, refused;
    int oom; /* a list could not grow: the scan stopped */
    char last_err[GP_ERR_MAX];
} scan;

/* Hands a pending workload back to the engine: 0, GP_ENOMEM, or another
 * error with err saying why the workload is refused. */
static int submit_spec(gpd__sched *s, const gpd__wl *w, char *err, size_t errlen) {
    gp_workload_spec spec;
    gpd__err e = {0};
    int rc = gpd__sched_stored_spec(w, &spec, &e);
    if (rc == 0)
        rc = gp_engine_submit(s->eng, &spec, err, errlen);
    else
        snprintf(err, errlen, "the stored request cannot be read: %.200s", e.msg);
    return rc;
}

/* Out of memory, a workload is neither refused nor left out: the scan
 * stops and the recovery fails, changing nothing. */
static int scan_one(const gpd__wl *w, void *arg) {
    scan *sc = arg;
    sc->had_tasks.last = w->id;
    sc->had_tasks.seen++;
    int rc = 0;
    if (w->state != GP_WL_PENDING)
        rc = push(&sc->had_tasks, w->id);
    else if ((rc = submit_spec(sc->s, w, sc->last_err, sizeof sc->last_err)) < 0 && rc != GP_ENOMEM)
        rc = push(&sc->refused, w->id);
    sc->oom = rc == GP_ENOMEM;
    return sc->oom;
}

/* Stops what is left of a workload's tasks and puts it back in the queue,
 * or suspends it where the idle policy holds it, as the loop does with a
 * lost task (gpd__loop_lost_state); or finishes the suspend or delete that
 * was under way. a is in no list and not in the engine. 0, or GP_ENOMEM
 * where the engine could not take it back: nothing is stored then, and the
 * caller fails the recovery, which a later start does again (taken for a
 * refusal, the shortage failed the workload for good). */
static int requeue_lost(gpd__sched *s, active *a, const gpd__wl *w, const char *why) {
    for (int t = 0; t < a->ntasks; t++)
        if (a->tasks[t].handle[0]) {
            gp_exec_stop(s->ex, a->tasks[t].handle);
            gpd__loop_reap(s, a->tasks[t].handle);
        }
    /* (A delete or a suspend taken during a pause step is stored with the
     * workload's state unchanged.) */
    int stopping = w->stop_kind[0] && strcmp(w->stop_kind, GPD__STOP_EVICT) != 0;
    int del = stopping && strcmp(w->stop_kind, GPD__STOP_DELETE) == 0;
    /* Paused by the idle policy (its row of returned GPUs), it was held out
     * of the engine for its owner, as gpd__loop_idle_rehold holds it. */
    a->in_engine = 0;
    a->held = a->returned && w->state == GP_WL_PAUSED;
    const char *note = "";
    gp_wl_state st =
        stopping ? (del ? GP_WL_DELETED : GP_WL_SUSPENDED) : gpd__loop_lost_state(a, &note);
    /* Back in the queue: handed to the engine before anything is stored. */
    char err[GP_ERR_MAX] = "";
    int src = st == GP_WL_PENDING ? submit_spec(s, w, err, sizeof err) : 0;
    if (src == GP_ENOMEM)
        return src;
    /* Suspended by the idle policy (STOPPING), or held by it and lost, it
     * keeps its row of returned GPUs, as finish_stop and the loop's poll do;
     * by its owner (a stop stored while a step ran, its state unchanged), the
     * row goes, as gpd__loop_owner_stop's. */
    if (stopping ? del || w->state != GP_WL_STOPPING : st != GP_WL_SUSPENDED)
        gpd__loop_idle_drop(s, a);
    char msg[600];
    snprintf(msg, sizeof msg, "%s%s", why, note);
    gpd__wl_change c;
    gpd__wl_change_init(&c, w->id);
    c.state = (int)st;
    c.stop_kind = "";
    c.reason = why;
    c.attempt_end =
        stopping ? (del ? GPD__OUTCOME_DELETED : GPD__OUTCOME_SUSPENDED) : GPD__OUTCOME_LOST;
    c.event = stopping                ? (del ? GPD__EV_DELETED : GPD__EV_SUSPENDED)
              : st == GP_WL_SUSPENDED ? GPD__EV_LOST
                                      : GPD__EV_REQUEUED;
    c.event_msg = msg;
    gpd__sched_record(s, &c);
    if (src < 0) {
        gpd__wl_change_event(&c, w->id, GP_WL_FAILED, err, GPD__EV_FAILED, err);
        gpd__sched_record(s, &c);
    }
    return 0;
}

/* Records a recovered workload's new state with an event. */
static void set_state(gpd__sched *s, uint64_t id, gp_wl_state st, gpd__event_kind kind,
                      const char *msg) {
    gpd__wl_change c;
    gpd__wl_change_event(&c, id, (int)st, NULL, kind, msg);
    gpd__sched_record(s, &c);
}

/* Carries out a delete or a suspend that a's owner asked for while a pause
 * or a resume step was under way (stored with the workload, its state
 * unchanged), now that the step is finished or undone; a is one of the
 * loop's workloads, and is gone if so. */
static void stop_after(gpd__sched *s, active *a, const gpd__wl *w) {
    if (w->state == GP_WL_STOPPING || !w->stop_kind[0] ||
        strcmp(w->stop_kind, GPD__STOP_EVICT) == 0)
        return;
    int del = strcmp(w->stop_kind, GPD__STOP_DELETE) == 0;
    gpd__loop_owner_stop(s, a, w->stop_kind,
                         del ? "deleted by its owner" : "suspended by its owner");
}

/* A workload found paused after a restart (its pause, under way then, is
 * finished) joins the loop's workloads, held for its owner where the idle
 * policy paused it; a stop its owner asked for meanwhile then applies. 0, or
 * the error of its joining (a is then still the caller's). */
static int recover_paused(gpd__sched *s, active *a, const gpd__wl *w, int held) {
    a->state = GP_WL_PAUSED;
    a->pausing = GPD__PAUSE_PAUSED;
    if (w->state != GP_WL_PAUSED)
        set_state(s, a->id, GP_WL_PAUSED, GPD__EV_PAUSED,
                  "paused: the pause under way when gpupoold stopped was finished");
    int rc = gpd__loop_act_add(s, a);
    if (rc == 0) {
        if (held)
            gpd__loop_idle_rehold(s, a);
        stop_after(s, a, w);
    }
    return rc;
}

/* Rebuilds one workload that had tasks: its active record, its place in the
 * engine, or its requeue when its tasks are gone. GP_ENOMEM if its record
 * could not be made or the engine could not take it back (nothing is
 * stored; the caller stops the recovery, as a workload left out would have
 * its tasks reaped as orphans); 0 otherwise. */
static int recover_one(gpd__sched *s, uint64_t id) {
    gpd__wl w;
    json_t *j = NULL;
    gpd__request r;
    gpd__err e = {0};
    int lrc = gpd__sched_load_request(s, id, &w, &j, &r, &e);
    if (lrc == GP_ENOMEM)
        return lrc;
    if (lrc < 0) {
        gpd__log("workload %llu: cannot be read back (%s)", (unsigned long long)id, e.msg);
        return 0;
    }
    /* Out of memory anywhere below, the recovery fails and changes nothing
     * (a later start does it again): taking the shortage for lost or
     * incomplete tasks would stop a task that runs, and run it again. */
    gpd__task_rec *recs = NULL;
    int n = 0;
    active *a = calloc(1, sizeof *a);
    int rc = a ? gpd__store_tasks_get(s->d->store, id, &recs, &n, &e) : GP_ENOMEM;
    if (rc == 0 && n > 0 && !(a->tasks = calloc((size_t)n, sizeof *a->tasks)))
        rc = GP_ENOMEM;
    char why[400] = "";
    if (rc < 0) {
        gpd__log("workload %llu: %s recovering it", (unsigned long long)id,
                 rc == GP_ENOMEM ? "out of memory" : e.msg);
        n = n > 0 && recs ? n : 0;
        goto out;
    }
    gpd__active_init(a, &w, &r, w.attempt, n);
    a->returned = gpd__loop_idle_was_held(s, id);
    /* Running since its last change at the latest; its GPUs' idle time is
     * measured afresh. */
    a->running_ms = w.updated_ms;
    a->busy_ms = gpd__now_ms();
    /* An elastic gang may have been bound with fewer tasks than it asked
     * for: any count the engine restores (min_tasks to tasks) is whole. */
    int32_t min = r.spec.min_tasks ? r.spec.min_tasks : r.spec.tasks;
    int bad = n == 0 || n < min || n > r.spec.tasks;
    gp_task_binding resuming; /* task 0's, where a resume onto other GPUs was under way */
    resuming.nslices = -1;
    for (int t = 0; t < n; t++) {
        snprintf(a->tasks[t].handle, sizeof a->tasks[t].handle, "%s", recs[t].handle);
        a->tasks[t].mem_used = -1;
        int brc = gpd__binding_from_json(recs[t].binding, &a->tasks[t], t == 0 ? &resuming : NULL);
        if (brc == GP_ENOMEM) {
            rc = brc;
            goto out;
        }
        if (brc < 0 || recs[t].task != t || recs[t].attempt != w.attempt ||
            recs[t].master_port != recs[0].master_port)
            bad = 1;
    }
    /* A gang's port as it was launched with, taken for the gangs bound
     * after: a row from before ports were stored holds 0, the preferred. */
    if (n > 1)
        a->master_port = recs[0].master_port > 0 ? recs[0].master_port : GP_MASTER_PORT_OF(id);
    if (bad) {
        snprintf(why, sizeof why, "its task records were incomplete after a restart");
        rc = requeue_lost(s, a, &w, why);
        goto out;
    }
    /* Launches that may not have happened: the same key again. */
    char err[256] = "";
    int lerr = w.state == GP_WL_STARTING ? gpd__loop_launch_all(s, a, &w, &r, err, sizeof err) : 0;
    if (lerr == GP_ENOMEM) {
        rc = lerr;
        goto out;
    }
    if (lerr == GP_EAGAIN) {
        /* To be tried again by the loop, the same key, as a launch that
         * had to wait before the restart. */
        a->relaunch_at = gpd__now_ms() + 1000;
        a->launch_fails = 1;
        a->launch_failing_ms = gpd__now_ms();
        gpd__log("workload %llu: launch to be tried again (%s)", (unsigned long long)id, err);
    } else if (lerr < 0) {
        snprintf(why, sizeof why, "could not be launched after a restart: %s", err);
        rc = requeue_lost(s, a, &w, why);
        goto out;
    }
    gp_task_status st[GPD__MAX_GANG];
    memset(st, 0, sizeof st);
    for (int t = 0; t < n; t++)
        snprintf(st[t].handle, sizeof st[t].handle, "%s", a->tasks[t].handle);
    int prc = gpd__loop_exec_poll(s, st, (size_t)n);
    if (prc == GP_ENOMEM) {
        rc = prc;
        goto out;
    }
    for (int t = 0; prc == 0 && t < n; t++)
        if (st[t].state == GP_TASK_LOST || st[t].state == GP_TASK_FAILED) {
            snprintf(why, sizeof why, "task %d was gone after a restart of gpupoold (%s)", t,
                     st[t].detail);
            break;
        }
    if (prc < 0)
        snprintf(why, sizeof why, "its tasks could not be polled after a restart");
    gp_task_binding b[GPD__MAX_GANG];
    for (int t = 0; t < n; t++)
        b[t] = a->tasks[t].binding;
    gp_workload_spec spec;
    gpd__request_spec(&r, id, w.user, w.submitted_ms, &spec);
    /* A pause or a resume under way when gpupoold stopped is finished or
     * undone first (the executor's journal says which): then the task is
     * paused or runs, whatever the store said. */
    int paused = 0;
    if (!why[0] && n == 1 && (w.state == GP_WL_RUNNING || w.state == GP_WL_PAUSED)) {
        gp_exec_pause p;
        memset(&p, 0, sizeof p);
        p.handle = a->tasks[0].handle;
        int rrc = gp_exec_control(s->ex, GP_EXEC_CTL_PAUSE_RECOVER, &p);
        paused = rrc == 0 && p.paused;
        if (rrc == 0 && p.lost)
            snprintf(why, sizeof why, "its task was lost after a restart of gpupoold: %s",
                     p.detail);
        else if (rrc < 0 && rrc != GP_ENOTSUP && w.state == GP_WL_PAUSED)
            snprintf(why, sizeof why, "its pause could not be recovered after a restart: %s",
                     p.detail[0] ? p.detail : gp_strerror(rrc));
        else if (p.detail[0])
            gpd__log("workload %llu: %s", (unsigned long long)id, p.detail);
        /* A resume onto other GPUs was under way: the task is on them if it
         * finished (now, or before the stop: no step left), else still on
         * those it had; the store keeps those from now on. */
        if (!why[0] && rrc == 0 && resuming.nslices >= 0) {
            if (p.recovered == GP_EXEC_CTL_RESUME ? !paused : p.recovered == 0) {
                a->tasks[0].binding = resuming;
                b[0] = resuming;
            }
            int src = gpd__loop_store_binding(s, a, &a->tasks[0].binding, NULL, &e);
            if (src == GP_ENOMEM) {
                rc = src;
                goto out;
            }
            if (src < 0)
                gpd__log("workload %llu: its GPUs after a resume under way could not be stored "
                         "(%s): a restart decides again",
                         (unsigned long long)id, e.msg);
        }
    }
    if (!why[0] && paused && a->returned) {
        /* Paused by the idle policy: it stays out of the engine, until its
         * owner resumes it, where the pool still has the GPUs it would
         * resume on; otherwise it is lost (suspended below), as a frozen
         * task that no resume can take back. */
        if (gp_engine_paused_binding_check(s->eng, &b[0], err, sizeof err) < 0) {
            snprintf(why, sizeof why, "its paused task's GPUs are gone after a restart: %.200s",
                     err);
        } else {
            if ((rc = recover_paused(s, a, &w, 1)) == 0)
                a = NULL;
            goto out;
        }
    }
    if (!why[0] && paused) {
        int rprc = gp_engine_restore_paused(s->eng, &spec, &b[0], err, sizeof err);
        if (rprc == GP_ENOMEM) {
            rc = rprc;
            goto out;
        }
        if (rprc < 0) {
            snprintf(why, sizeof why, "could not be restored paused after a restart: %s", err);
        } else {
            if ((rc = recover_paused(s, a, &w, 0)) == 0)
                a = NULL;
            goto out;
        }
    }
    if (!why[0] && w.state == GP_WL_PAUSED)
        set_state(s, id, GP_WL_RUNNING, GPD__EV_RESUMED,
                  "resumed: the resume under way when gpupoold stopped was finished");
    /* Found running with a row of returned GPUs, stored as the idle policy
     * began a pause: the pause was undone (or never began), and the row
     * goes. (A row of a STOPPING one is the policy's suspend's.) */
    if (!why[0] && a->returned && w.state != GP_WL_STOPPING)
        gpd__loop_idle_drop(s, a);
    int erc = why[0] ? 0 : gp_engine_restore(s->eng, &spec, n, b, gpd__now_ms(), err, sizeof err);
    if (erc == GP_ENOMEM) {
        rc = erc;
        goto out;
    }
    if (erc < 0)
        snprintf(why, sizeof why, "could not be restored on its GPUs after a restart: %s", err);
    if (why[0]) {
        rc = requeue_lost(s, a, &w, why);
        goto out;
    }
    a->state = w.state == GP_WL_STOPPING   ? GP_WL_STOPPING
               : w.state == GP_WL_STARTING ? GP_WL_STARTING
                                           : GP_WL_RUNNING;
    snprintf(a->stop_kind, sizeof a->stop_kind, "%s", w.stop_kind);
    a->deadline = w.stop_deadline_ms;
    a->launched_ms = gpd__now_ms();
    if (w.state == GP_WL_STARTING) {
        char msg[400];
        if (a->relaunch_at) {
            snprintf(msg, sizeof msg,
                     "launch to be tried again after a restart of gpupoold (%.300s)", err);
            gpd__loop_record_starting(s, a, n, GPD__EV_LAUNCH_DEFERRED, msg);
        } else {
            gpd__loop_record_starting(s, a, n, GPD__EV_LAUNCHED,
                                      "launch confirmed after a restart of gpupoold");
        }
    }
    if ((rc = gpd__loop_act_add(s, a)) == 0) {
        stop_after(s, a, &w);
        a = NULL;
    }
out:
    if (a) {
        free(a->tasks);
        free(a);
    }
    gpd__task_recs_free(recs, n);
    json_decref(j);
    gpd__wl_free(&w);
    return rc;
}

/* Stops and reaps the tasks the executor holds that no active workload refers
 * to; nothing to do where the executor cannot list its tasks. */
static void reap_orphans(gpd__sched *s) {
    size_t max = 4096, n = 0;
    char(*handles)[GP_HANDLE_MAX] = calloc(max, sizeof *handles);
    if (!handles || gp_exec_tasks(s->ex, handles, max, &n) < 0) {
        free(handles);
        return;
    }
    for (size_t i = 0; i < n && i < max; i++) {
        int known = 0;
        for (size_t k = 0; k < s->nact && !known; k++)
            for (int t = 0; t < s->act[k]->ntasks; t++)
                if (strcmp(s->act[k]->tasks[t].handle, handles[i]) == 0)
                    known = 1;
        if (!known) {
            gp_exec_stop(s->ex, handles[i]);
            gpd__loop_reap(s, handles[i]);
        }
    }
    free(handles);
}

int gpd__loop_recover(gpd__sched *s, gpd__err *e) {
    int rc = load_nodes(s, e);
    if (rc < 0)
        return rc;
    queue_load ql = {s, ""};
    if ((rc = gpd__store_queues(s->d->store, add_queue, &ql, e)) < 0)
        return rc;
    if (ql.oom[0])
        return gpd__fail(e, GP_ENOMEM, "", "out of memory loading queue %s", ql.oom);
    scan sc;
    memset(&sc, 0, sizeof sc);
    sc.s = s;
    gpd__wl_filter f = {.state = -1, .active_only = 1, .limit = 2000};
    do {
        sc.had_tasks.seen = 0;
        f.after = sc.had_tasks.last;
        if ((rc = gpd__store_wl_list(s->d->store, &f, scan_one, &sc, e)) < 0)
            break;
    } while (!sc.oom && sc.had_tasks.seen == (size_t)f.limit);
    if (rc == 0 && sc.oom)
        rc = gpd__fail(e, GP_ENOMEM, "", "out of memory listing the workloads to recover");
    for (size_t i = 0; rc == 0 && i < sc.refused.n; i++) {
        const char *why = "refused by the engine at restart (its project or the pool changed)";
        gpd__wl_change c;
        gpd__wl_change_event(&c, sc.refused.ids[i], GP_WL_FAILED, why, GPD__EV_FAILED, why);
        gpd__sched_record(s, &c);
    }
    for (size_t i = 0; rc == 0 && i < sc.had_tasks.n; i++)
        if (recover_one(s, sc.had_tasks.ids[i]) < 0)
            rc = gpd__fail(e, GP_ENOMEM, "", "out of memory recovering workload %llu",
                           (unsigned long long)sc.had_tasks.ids[i]);
    if (rc == 0)
        reap_orphans(s);
    if (rc == 0 && (sc.had_tasks.n || sc.refused.n))
        gpd__log("recovered %zu workload(s) with tasks; %zu refused", sc.had_tasks.n, sc.refused.n);
    free(sc.had_tasks.ids);
    free(sc.refused.ids);
    return rc;
}
