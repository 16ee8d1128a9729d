/*
 * sched-tasks.c — how the scheduling loop carries out decisions through the
 * executor, and the order of its writes, which is what makes "nothing runs
 * twice, nothing is forgotten" hold across a crash:
 *
 *   bind:  1. store: state STARTING, attempt n, task rows, attempt row  (commit)
 *          2. executor: launch each task, key (workload, task, attempt n)
 *          3. store: handles, still STARTING ("launched")               (commit)
 *          4. (a poll finds every task running) state RUNNING, attempt started
 *   A crash between 1 and 3 leaves STARTING rows: at restart the launch is
 *   repeated with the same key, which the executor answers with the task it
 *   already started, so the attempt runs once. Running means running in the
 *   executor: a task it has accepted but not started (a Slurm job PENDING)
 *   keeps its workload STARTING, and the wait is in the "started" event.
 *
 *   evict: 1. store: STOPPING, deadline      2. checkpoint signal
 *          3. (grace period or all tasks ended) stop, then store the outcome
 *   A crash anywhere leaves STOPPING: at restart the stop is completed. A
 *   stop at once (requeue mode, a node gone, a delete) stores STOPPING, its
 *   deadline now, before it stops the tasks, for the same reason.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/gp_array.h"
#include "common/files.h"
#include "common/units.h"
#include "daemon/sched-int.h"

/* ---- The active array ------------------------------------------------- */

active *gpd__loop_act_find(gpd__sched *s, uint64_t id) {
    for (size_t i = 0; i < s->nact; i++)
        if (s->act[i]->id == id)
            return s->act[i];
    return NULL;
}

void gpd__active_init(active *a, const gpd__wl *w, const gpd__request *r, int32_t attempt,
                      int ntasks) {
    a->id = w->id;
    snprintf(a->project, sizeof a->project, "%s", w->project);
    snprintf(a->user, sizeof a->user, "%s", w->user);
    a->attempt = attempt;
    a->ntasks = ntasks;
    a->gang = r->spec.tasks;
    a->grace_ms = r->grace_ms;
    a->ckpt_signal = r->ckpt_signal;
    a->compute_pct = r->compute_pct;
    a->mem_bytes = r->spec.req.mem_bytes;
    a->on_preempt = r->spec.on_preempt;
    a->in_engine = 1;
    a->interactive = r->spec.kind == GP_KIND_INTERACTIVE;
}

int gpd__loop_act_add(gpd__sched *s, active *a) {
    pthread_mutex_lock(&s->eng_mu);
    if (GP_ARRAY_ROOM(s->act, s->nact, s->capact, 16) < 0) {
        pthread_mutex_unlock(&s->eng_mu);
        return GP_ENOMEM;
    }
    s->act[s->nact++] = a;
    pthread_mutex_unlock(&s->eng_mu);
    return 0;
}

static void act_remove(gpd__sched *s, active *a) {
    /* Launches not known to have been made (no handle): the executor
     * forgets them, and ends what one began before its answer was lost.
     * Whether one was deferred is not asked of launch_fails, which counts
     * the tries of this run of gpupoold only: a workload recovered stopping
     * tries no launch, but one deferred before the restart may be in flight.
     * A key the executor never saw costs it a look. */
    for (int t = 0; t < a->ntasks; t++) {
        if (a->tasks[t].handle[0])
            continue;
        gp_exec_abandon ab = {.workload = a->id, .task = t, .attempt = a->attempt};
        int rc = gp_exec_control(s->ex, GP_EXEC_CTL_ABANDON, &ab);
        if (rc < 0 && rc != GP_ENOTSUP)
            gpd__log("workload %llu task %d: its deferred launch could not be abandoned yet (%s); "
                     "the executor keeps trying to end what it began",
                     (unsigned long long)a->id, t, gp_strerror(rc));
    }
    pthread_mutex_lock(&s->eng_mu);
    for (size_t i = 0; i < s->nact; i++)
        if (s->act[i] == a) {
            s->act[i] = s->act[--s->nact];
            break;
        }
    pthread_mutex_unlock(&s->eng_mu);
    /* A session the idle policy paused, gone: its host memory is free. */
    if (a->held_mem > 0 && a->ntasks > 0)
        gpd__loop_idle_books(s, a->tasks[0].node);
    free(a->tasks);
    free(a);
}

/* Tells the engine that workload id's tasks ended (requeue 0: finished) or
 * must run again (1: requeued, bound again by a cycle at the loop's next
 * poll: s->cycle_soon); logs its refusal. */
static void engine_end(gpd__sched *s, uint64_t id, int requeue) {
    pthread_mutex_lock(&s->eng_mu);
    int rc = requeue ? gp_engine_requeue(s->eng, id) : gp_engine_finished(s->eng, id);
    pthread_mutex_unlock(&s->eng_mu);
    if (requeue && rc == 0)
        s->cycle_soon = 1;
    if (rc < 0)
        gpd__log("workload %llu: the engine refused to %s it: %s", (unsigned long long)id,
                 requeue ? "requeue" : "finish", gp_strerror(rc));
}

void gpd__sched_record(gpd__sched *s, const gpd__wl_change *c) {
    gpd__err e = {0};
    if (gpd__store_wl_apply(s->d->store, c, 1, &e) < 0)
        gpd__log("workload %llu: could not record a change (%s); a restart will reconcile it",
                 (unsigned long long)c->id, e.msg);
}

/* Records a's task handles with state st and one event. */
static void record_handles(gpd__sched *s, const active *a, int ntasks, gp_wl_state st,
                           gpd__event_kind kind, const char *msg) {
    gpd__task_rec h[GPD__MAX_GANG];
    gpd__wl_change c;
    gpd__wl_change_init(&c, a->id);
    c.ntasks = ntasks < GPD__MAX_GANG ? ntasks : GPD__MAX_GANG;
    memset(h, 0, sizeof(h[0]) * (size_t)c.ntasks);
    for (int t = 0; t < c.ntasks; t++) {
        h[t].task = t;
        snprintf(h[t].handle, sizeof h[t].handle, "%s", a->tasks[t].handle);
    }
    c.state = (int)st;
    c.tasks = h;
    c.set_handles = 1;
    c.attempt_started = st == GP_WL_RUNNING;
    c.event = (int)kind;
    c.event_msg = msg;
    gpd__sched_record(s, &c);
}

static void record_started(gpd__sched *s, const active *a, int ntasks, const char *msg) {
    record_handles(s, a, ntasks, GP_WL_RUNNING, GPD__EV_STARTED, msg);
}

void gpd__loop_record_starting(gpd__sched *s, const active *a, int ntasks, gpd__event_kind kind,
                               const char *msg) {
    record_handles(s, a, ntasks, GP_WL_STARTING, kind, msg);
}

/* ---- Reaping ---------------------------------------------------------- */

void gpd__loop_reap(gpd__sched *s, const char *handle) {
    if (gp_exec_reap(s->ex, handle) != GP_ESTATE)
        return;
    for (size_t i = 0; i < s->nreap; i++)
        if (strcmp(s->reap_later[i], handle) == 0)
            return;
    if (GP_ARRAY_ROOM(s->reap_later, s->nreap, s->capreap, 16) < 0) {
        gpd__log("task %s: no memory to remember its reap; a restart will do it", handle);
        return;
    }
    snprintf(s->reap_later[s->nreap++], GP_HANDLE_MAX, "%s", handle);
}

/* The attempt is over (stopped, concluded, or its launch failed for good):
 * its tasks' handles, stopped by the caller, are reaped, so that the
 * executor frees what they held (their state, cgroups, slice files), and it
 * leaves the active workloads. */
static void reap_and_remove(gpd__sched *s, active *a) {
    for (int t = 0; t < a->ntasks; t++)
        if (a->tasks[t].handle[0])
            gpd__loop_reap(s, a->tasks[t].handle);
    act_remove(s, a);
}

/* Retries the reaps that were refused; keeps those still refused. A task
 * that never ends (stuck in the kernel) is stopped again on every try. */
static void reap_pending(gpd__sched *s) {
    size_t kept = 0;
    for (size_t i = 0; i < s->nreap; i++) {
        gp_exec_stop(s->ex, s->reap_later[i]);
        if (gp_exec_reap(s->ex, s->reap_later[i]) == GP_ESTATE)
            memmove(s->reap_later[kept++], s->reap_later[i], GP_HANDLE_MAX);
    }
    s->nreap = kept;
}

/* ---- Bindings as JSON ------------------------------------------------- */

/* A binding's slices as a JSON array [[gpu,milli,mem,mig],...]. */
static json_t *slices_json(const gp_task_binding *b) {
    json_t *sl = json_array();
    for (int i = 0; i < b->nslices; i++)
        json_array_append_new(sl, json_pack("[i,i,I,i]", b->slices[i].gpu, b->slices[i].milli,
                                            (json_int_t)b->slices[i].mem, b->slices[i].mig_slot));
    return sl;
}

/* Task bindings in the store: {"node":N,"slices":[[gpu,milli,mem,mig],...]},
 * and while a resume onto other GPUs of the node is under way the slices it
 * moves the task to, "resuming":[...] (resuming: NULL where none). */
static char *binding_to_json(const gp_task_binding *b, const gp_task_binding *resuming) {
    json_t *j = json_pack("{s:s, s:o}", "node", b->node, "slices", slices_json(b));
    if (j != NULL && resuming != NULL &&
        json_object_set_new(j, "resuming", slices_json(resuming)) < 0) {
        json_decref(j);
        j = NULL;
    }
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

int gpd__loop_store_binding(gpd__sched *s, const active *a, const gp_task_binding *b,
                            const gp_task_binding *resuming, gpd__err *e) {
    gpd__task_rec r;
    memset(&r, 0, sizeof r);
    r.attempt = a->attempt;
    snprintf(r.node, sizeof r.node, "%s", a->tasks[0].node);
    snprintf(r.handle, sizeof r.handle, "%s", a->tasks[0].handle);
    r.master_port = a->master_port;
    if (!(r.binding = binding_to_json(b, resuming)))
        return GP_ENOMEM;
    gpd__wl_change c;
    gpd__wl_change_init(&c, a->id);
    c.ntasks = 1;
    c.tasks = &r;
    int rc = gpd__store_wl_apply(s->d->store, &c, 1, e);
    free(r.binding);
    return rc;
}

/* Why json_unpack failed: GP_ENOMEM where it ran out of memory (its check
 * of an object's keys allocates), GP_ECORRUPT where the JSON is not what was
 * stored: a shortage taken for a broken record stopped a running task. */
static int unpack_failed(const json_error_t *why) {
    return json_error_code(why) == json_error_out_of_memory ? GP_ENOMEM : GP_ECORRUPT;
}

/* The slices of JSON array sl into b (its node left as it is). */
static int slices_from_json(json_t *sl, gp_task_binding *b) {
    json_error_t why;
    if (!json_is_array(sl) || json_array_size(sl) > GP_MAX_GPUS_PER_NODE)
        return GP_ECORRUPT;
    size_t i;
    json_t *x;
    json_array_foreach(sl, i, x) {
        gp_slice *s = &b->slices[i];
        json_int_t mem = 0;
        if (json_unpack_ex(x, &why, 0, "[i,i,I,i]", &s->gpu, &s->milli, &mem, &s->mig_slot) < 0)
            return unpack_failed(&why);
        s->mem = mem;
    }
    b->nslices = (int32_t)json_array_size(sl);
    return 0;
}

int gpd__binding_from_json(const char *text, task_rt *t, gp_task_binding *resuming) {
    json_t *j, *sl, *to = NULL;
    const char *node;
    json_error_t why;
    int rc = gpd__json_stored(text, &j);
    if (rc < 0)
        return rc;
    if (json_unpack_ex(j, &why, 0, "{s:s, s:o, s?o}", "node", &node, "slices", &sl, "resuming",
                       &to) < 0) {
        json_decref(j);
        return unpack_failed(&why);
    }
    snprintf(t->node, sizeof t->node, "%s", node);
    memset(&t->binding, 0, sizeof t->binding);
    t->binding.node = t->node;
    rc = slices_from_json(sl, &t->binding);
    if (resuming != NULL) {
        memset(resuming, 0, sizeof *resuming);
        resuming->node = t->node;
        resuming->nslices = -1;
        if (rc == 0 && to != NULL)
            rc = slices_from_json(to, resuming);
    }
    json_decref(j);
    return rc;
}

/* ---- Launching -------------------------------------------------------- */

/* Launches task `task` of a (idempotent per key); fills its handle.
 * GP_EAGAIN where it may succeed later: the executor says so, or memory ran
 * short. */
static int launch_task(gpd__sched *s, const gpd__wl *w, const gpd__request *r, const active *a,
                       int task, char *err, size_t errlen) {
    task_rt *t = &a->tasks[task];
    char logdir[1024], logpath[1100], ckpt[1024];
    snprintf(logdir, sizeof logdir, "%s/%llu", s->d->cfg.log_dir, (unsigned long long)w->id);
    snprintf(logpath, sizeof logpath, "%s/task-%d.log", logdir, task);
    snprintf(ckpt, sizeof ckpt, "%s/%llu", s->d->cfg.checkpoint_dir, (unsigned long long)w->id);
    /* The log's directory is ours; the checkpoint directory and the workdir
     * are the executor's to make, as the workload's Unix user. */
    int made = gp_mkdirs(logdir, 0755);
    if (made < 0) {
        gp_errf(err, errlen, "cannot create the log directory %s: %s", logdir, gp_strerror(made));
        return made;
    }

    size_t nargs = json_array_size(r->command), nenv = r->env ? json_object_size(r->env) : 0;
    const char **argv = calloc(nargs + 1, sizeof *argv);
    /* gpupool's own variables (GPUPOOL_*, CUDA_VISIBLE_DEVICES) are the
     * executor's to set: only the workload's are passed. */
    char **env = calloc(nenv + 1, sizeof *env);
    int rc = GP_ENOMEM;
    if (argv && env) {
        for (size_t i = 0; i < nargs; i++)
            argv[i] = json_string_value(json_array_get(r->command, i));
        size_t k = 0;
        int whole = 1; /* every variable of the workload's made */
        const char *key;
        json_t *v;
        if (r->env)
            json_object_foreach(r->env, key, v) {
                if (asprintf(&env[k], "%s=%s", key, json_string_value(v)) < 0) {
                    env[k] = NULL;
                    whole = 0;
                    break;
                }
                k++;
            }
        gp_task_launch l;
        memset(&l, 0, sizeof l);
        l.workload = w->id;
        l.task = task;
        l.attempt = a->attempt;
        l.project = w->project;
        l.user = w->user;
        l.argv = argv;
        l.env = (const char *const *)env;
        l.workdir = r->workdir; /* none: the executor starts it in its checkpoint directory */
        l.log_path = logpath;
        l.checkpoint_dir = ckpt;
        l.cpu_milli = r->spec.req.cpu_milli;
        l.mem_bytes = r->spec.req.mem_bytes;
        l.checkpoint_signal = r->ckpt_signal;
        l.run_as = r->run_as;
        l.compute_share = r->compute_pct;
        l.node = gpd__sched_node(s, t->node);
        l.binding = &t->binding;
        l.gang_size = a->ntasks;
        l.tty = r->tty;
        l.gang_first = gpd__sched_node(s, a->tasks[0].node);
        l.master_port = a->master_port;
        if (!whole) {
            snprintf(err, errlen, "out of memory making the workload's environment");
            rc = GP_ENOMEM;
        } else if (!l.node) {
            snprintf(err, errlen, "node %s is not in the inventory", t->node);
            rc = GP_ENOENT;
        } else {
            rc = gp_exec_launch(s->ex, &l, t->handle, err, errlen);
        }
    }
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
    free(argv);
    if (rc == GP_ENOMEM && !err[0])
        snprintf(err, errlen, "out of memory");
    /* Out of memory, here or in the executor, may pass: the launch is tried
     * again as one the executor asks to try again is. */
    return rc == GP_ENOMEM ? GP_EAGAIN : rc;
}

static int stored_json(const char *spec, json_t **j, gpd__err *e) {
    int rc = gpd__json_stored(spec, j);
    if (rc == GP_ENOMEM)
        return gpd__fail(e, rc, "", "out of memory reading the stored request");
    return rc < 0 ? gpd__fail(e, rc, "", "the stored request is not JSON") : 0;
}

int gpd__sched_load_request(gpd__sched *s, uint64_t id, gpd__wl *w, json_t **j, gpd__request *r,
                            gpd__err *e) {
    int rc = gpd__store_wl_get(s->d->store, id, w, e);
    if (rc < 0)
        return rc;
    rc = stored_json(w->spec, j, e);
    if (rc == 0)
        rc = gpd__request_parse(*j, r, e);
    if (rc < 0) {
        json_decref(*j);
        gpd__wl_free(w);
    }
    return rc;
}

int gpd__sched_stored_spec(const gpd__wl *w, gp_workload_spec *out, gpd__err *e) {
    json_t *j;
    gpd__request r;
    int rc = stored_json(w->spec, &j, e);
    if (rc == 0 && gpd__request_parse(j, &r, e) < 0)
        rc = GP_ECORRUPT;
    if (rc == 0)
        gpd__request_spec(&r, w->id, w->user, w->submitted_ms, out);
    json_decref(j);
    return rc;
}

/* The wait before the next launch after n failures in a row that the
 * executor asked to try again: 1 s, 2 s, 4 s, 8 s, 16 s, then 30 s. */
static int64_t launch_backoff_ms(int n) {
    return n < 6 ? 1000LL << (n - 1) : 30000;
}

int gpd__loop_launch_all(gpd__sched *s, active *a, const gpd__wl *w, const gpd__request *r,
                         char *err, size_t errlen) {
    gpd__launch_hold *own = r->tty ? &s->hold_tty : &s->hold_all;
    for (int t = 0; t < a->ntasks; t++) {
        if (a->tasks[t].handle[0])
            continue;
        int64_t now = gpd__now_ms();
        /* The hold in force over this launch that ends last. */
        const gpd__launch_hold *h = &s->hold_all;
        if (r->tty && s->hold_tty.until > h->until)
            h = &s->hold_tty;
        if (now < h->until) {
            snprintf(err, errlen, "%s", h->why);
            a->held_until = h->until;
            return GP_EAGAIN;
        }
        int rc = launch_task(s, w, r, a, t, err, errlen);
        if (rc == GP_EAGAIN) {
            own->n++;
            own->until = now + launch_backoff_ms(own->n);
            snprintf(own->why, sizeof own->why, "%.200s", err);
            a->held_until = own->until;
        } else if (rc == 0) {
            own->n = 0;
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* What a launch (first, or tried again) came to: launched, waiting for the
 * executor to start it; to be tried again with the same key, the executor
 * having said it may succeed later (its GPUs stay taken, as a launched
 * workload's: it may be evicted meanwhile); or failed, having stopped and
 * reaped any task it launched. */
static void launch_outcome(gpd__sched *s, active *a, int rc, const char *err, int64_t now) {
    char msg[512], d[32];
    gpd__wl_change c;
    if (rc == GP_EAGAIN &&
        (a->launch_fails == 0 || now - a->launch_failing_ms < GPD__LAUNCH_RETRY_MS)) {
        if (a->launch_fails++ == 0)
            a->launch_failing_ms = now;
        int64_t wait = launch_backoff_ms(a->launch_fails);
        /* Not before the hold it met (gpd__loop_launch_all), which a
         * launch that took a while set from a later clock than now: a try
         * made before it ends is refused unmade, a deferral more. */
        if (now + wait < a->held_until)
            wait = a->held_until - now;
        a->relaunch_at = now + wait;
        gp_format_duration(wait, d, sizeof d);
        snprintf(msg, sizeof msg, "attempt %d not launched yet (%s); trying again in %s",
                 a->attempt, err, d);
        gpd__loop_record_starting(s, a, a->ntasks, GPD__EV_LAUNCH_DEFERRED, msg);
        if (a->launch_fails == 1) {
            pthread_mutex_lock(&s->eng_mu);
            gp_engine_started(s->eng, a->id, now);
            pthread_mutex_unlock(&s->eng_mu);
        }
        return;
    }
    if (rc < 0) {
        /* Whatever failed (a launch, or reading the request back before a
         * launch tried again), the tasks launched so far are stopped here,
         * so that the reap below never forgets a running one. */
        for (int k = 0; k < a->ntasks; k++)
            if (a->tasks[k].handle[0])
                gp_exec_stop(s->ex, a->tasks[k].handle);
        if (rc == GP_EAGAIN) {
            gp_format_duration(now - a->launch_failing_ms, d, sizeof d);
            snprintf(msg, sizeof msg, "could not be launched in %s of trying: %s", d, err);
        } else {
            snprintf(msg, sizeof msg, "could not be launched: %s", err);
        }
        gpd__wl_change_event(&c, a->id, GP_WL_FAILED, msg, GPD__EV_FAILED, msg);
        c.attempt_end = GPD__OUTCOME_FAILED;
        gpd__sched_record(s, &c);
        engine_end(s, a->id, 0);
        reap_and_remove(s, a);
        return;
    }
    /* Launched, not yet running: the next poll says when it runs. The
     * engine counts it started (its GPUs are taken, it may be evicted). */
    snprintf(msg, sizeof msg,
             "attempt %d launched (%d task%s); waiting for the executor to "
             "start it",
             a->attempt, a->ntasks, a->ntasks > 1 ? "s" : "");
    gpd__loop_record_starting(s, a, a->ntasks, GPD__EV_LAUNCHED, msg);
    pthread_mutex_lock(&s->eng_mu);
    if (a->launch_fails == 0)
        gp_engine_started(s->eng, a->id, now);
    a->launched_ms = now;
    a->relaunch_at = 0;
    a->launch_fails = 0;
    pthread_mutex_unlock(&s->eng_mu);
}

/* Tries again the launches that are due (launch_outcome). */
static void relaunch_due(gpd__sched *s, int64_t now) {
    /* launch_outcome may remove the workload it looks at: walk from the end. */
    for (size_t i = s->nact; i-- > 0;) {
        if (i >= s->nact)
            continue;
        active *a = s->act[i];
        if (a->state != GP_WL_STARTING || a->relaunch_at == 0 || now < a->relaunch_at)
            continue;
        gpd__wl w;
        json_t *j = NULL;
        gpd__request r;
        gpd__err e = {0};
        char err[256] = "";
        int rc = gpd__sched_load_request(s, a->id, &w, &j, &r, &e);
        if (rc < 0) {
            snprintf(err, sizeof err, "cannot read its request back: %.200s", e.msg);
            rc = rc == GP_ENOMEM ? GP_EAGAIN : rc;
        } else {
            rc = gpd__loop_launch_all(s, a, &w, &r, err, sizeof err);
            json_decref(j);
            gpd__wl_free(&w);
        }
        launch_outcome(s, a, rc, err, now);
    }
}

static void describe_binding(const task_rt *tasks, int n, char *buf, size_t len) {
    size_t k = (size_t)snprintf(buf, len, "on");
    for (int t = 0; t < n && k < len; t++) {
        k += (size_t)snprintf(buf + k, len - k, "%s node %s GPU", t ? ";" : "", tasks[t].node);
        for (int i = 0; i < tasks[t].binding.nslices && k < len; i++) {
            const gp_slice *sl = &tasks[t].binding.slices[i];
            char m[16];
            gp_format_milli(sl->milli, m, sizeof m);
            k += (size_t)snprintf(buf + k, len - k, "%s %d%s%s", i ? "," : "", sl->gpu,
                                  sl->milli < GP_MILLI ? " x" : "", sl->milli < GP_MILLI ? m : "");
        }
    }
}

/* Whether a live gang whose task 0 is on node holds port (only a gang has
 * one). */
static int port_held(const gpd__sched *s, int32_t port, const char *node) {
    for (size_t i = 0; i < s->nact; i++) {
        const active *o = s->act[i];
        if (o->master_port == port && strcmp(o->tasks[0].node, node) == 0)
            return 1;
    }
    return 0;
}

/* The rendezvous port of a new attempt of gang id whose task 0 is on node:
 * its preferred one (GP_MASTER_PORT_OF), which a user can predict, unless a
 * live gang whose task 0 is on that node holds it (two gangs whose ids are
 * equal mod GP_MASTER_PORTS); then the next one of the range that none there
 * holds, wrapping. Every port of the range held there, the preferred one. */
static int32_t gang_port(const gpd__sched *s, uint64_t id, const char *node) {
    for (uint64_t k = 0; k < GP_MASTER_PORTS; k++)
        if (!port_held(s, GP_MASTER_PORT_OF(id + k), node))
            return GP_MASTER_PORT_OF(id + k);
    return GP_MASTER_PORT_OF(id);
}

void gpd__loop_bind(gpd__sched *s, uint64_t id, int ntasks, const task_rt *tasks) {
    gpd__wl w;
    json_t *j = NULL;
    gpd__request r;
    gpd__err e = {0};
    if (gpd__sched_load_request(s, id, &w, &j, &r, &e) < 0) {
        gpd__log("workload %llu: cannot read it to launch (%s); back to the queue",
                 (unsigned long long)id, e.msg);
        engine_end(s, id, 1);
        return;
    }
    active *a = calloc(1, sizeof *a);
    task_rt *tr = calloc((size_t)ntasks, sizeof *tr);
    gpd__task_rec *recs = calloc((size_t)ntasks, sizeof *recs);
    char msg[512];
    int rc = a && tr && recs ? 0 : GP_ENOMEM;
    if (rc == 0) {
        gpd__active_init(a, &w, &r, w.attempt + 1, ntasks);
        a->state = GP_WL_STARTING;
        a->tasks = tr;
        if (ntasks > 1)
            a->master_port = gang_port(s, id, tasks[0].node);
        for (int t = 0; t < ntasks; t++) {
            tr[t] = tasks[t];
            tr[t].binding.node = tr[t].node;
            tr[t].handle[0] = '\0';
            tr[t].mem_used = -1;
            recs[t].task = t;
            recs[t].attempt = a->attempt;
            recs[t].master_port = a->master_port;
            snprintf(recs[t].node, sizeof recs[t].node, "%s", tr[t].node);
            recs[t].binding = binding_to_json(&tr[t].binding, NULL);
            if (!recs[t].binding)
                rc = GP_ENOMEM;
        }
        describe_binding(tr, ntasks, msg, sizeof msg);
    }
    gpd__wl_change c;
    gpd__wl_change_init(&c, id);
    c.state = GP_WL_STARTING;
    c.attempt = a ? a->attempt : -1;
    c.ntasks = ntasks;
    c.tasks = recs;
    c.attempt_begin = 1;
    c.attempt_node = tr ? tr[0].node : "";
    c.event = GPD__EV_BOUND;
    c.event_msg = msg;
    if (rc == 0)
        rc = gpd__store_wl_apply(s->d->store, &c, 1, &e);
    if (rc == 0)
        rc = gpd__loop_act_add(s, a);
    for (int t = 0; recs && t < ntasks; t++)
        free(recs[t].binding);
    free(recs);
    if (rc < 0) {
        /* Nothing was launched: the workload simply waits for the next cycle. */
        gpd__log("workload %llu: not launched (%s); back to the queue", (unsigned long long)id,
                 rc == GP_ENOMEM ? "out of memory" : e.msg);
        engine_end(s, id, 1);
        free(tr);
        free(a);
        json_decref(j);
        gpd__wl_free(&w);
        return;
    }
    char err[256] = "";
    rc = gpd__loop_launch_all(s, a, &w, &r, err, sizeof err);
    launch_outcome(s, a, rc, err, gpd__now_ms());
    json_decref(j);
    gpd__wl_free(&w);
}

/* ---- Stopping --------------------------------------------------------- */

void gpd__loop_begin_stop(gpd__sched *s, active *a, const char *kind, int64_t grace_ms,
                          const char *why) {
    int64_t now = gpd__now_ms();
    snprintf(a->stop_kind, sizeof a->stop_kind, "%s", kind);
    a->deadline = now + grace_ms;
    a->stop_at = now;
    char msg[400], g[32];
    const char *sig = gp_signal_name(a->ckpt_signal);
    gp_format_duration(grace_ms, g, sizeof g);
    /* A promise, not an outcome: when it really stopped is in the event
     * that ends the attempt. */
    snprintf(msg, sizeof msg, "%s: checkpoint signal SIG%s sent; stopped at the latest %s later",
             why, sig ? sig : "?", g);
    gpd__wl_change c;
    gpd__wl_change_event(&c, a->id, GP_WL_STOPPING, why, GPD__EV_CHECKPOINT_SIGNAL, msg);
    c.stop_kind = kind;
    c.stop_deadline_ms = a->deadline;
    gpd__sched_record(s, &c);
    a->state = GP_WL_STOPPING;
    for (int t = 0; t < a->ntasks; t++)
        if (a->tasks[t].handle[0])
            gp_exec_signal(s->ex, a->tasks[t].handle, a->ckpt_signal);
}

void gpd__loop_begin_evict(gpd__sched *s, active *a, int64_t grace_max, char *why, size_t whylen) {
    int64_t grace = a->grace_ms;
    if (grace_max >= 0 && grace > grace_max) {
        grace = grace_max;
        size_t l = strlen(why);
        snprintf(why + l, whylen - l, "; grace bounded by its project's reclaim_grace_max");
    }
    gpd__loop_begin_stop(s, a, GPD__STOP_EVICT, grace, why);
}

void gpd__loop_finish_stop(gpd__sched *s, active *a, const char *why) {
    if (a->state != GP_WL_STOPPING) {
        /* A stop at once (requeue mode, a node gone, its owner's delete or
         * suspend, a step's end): stored first, as a graceful stop is, so
         * that a restart before its outcome is stored finishes it as such,
         * and does not take the task it stopped for one that failed. */
        gpd__wl_change c;
        gpd__wl_change_init(&c, a->id);
        c.state = GP_WL_STOPPING;
        c.stop_kind = a->stop_kind;
        c.stop_deadline_ms = gpd__now_ms();
        gpd__sched_record(s, &c);
        a->state = GP_WL_STOPPING;
    }
    for (int t = 0; t < a->ntasks; t++)
        if (a->tasks[t].handle[0])
            gp_exec_stop(s->ex, a->tasks[t].handle);
    int evict = strcmp(a->stop_kind, GPD__STOP_EVICT) == 0;
    int del = strcmp(a->stop_kind, GPD__STOP_DELETE) == 0;
    gp_wl_state st = evict ? GP_WL_PENDING : del ? GP_WL_DELETED : GP_WL_SUSPENDED;
    char msg[1100], took[80] = "";
    if (a->stop_at > 0) {
        char d[32];
        gp_format_duration(gpd__now_ms() - a->stop_at, d, sizeof d);
        snprintf(took, sizeof took, " %s after the checkpoint signal", d);
    }
    snprintf(msg, sizeof msg, "attempt %d stopped%s: %s%s%s", a->attempt, took, why,
             evict ? "; back in the queue" : "", a->stop_note[0] ? "; " : "");
    if (a->stop_note[0]) {
        size_t l = strlen(msg);
        snprintf(msg + l, sizeof msg - l, "%s", a->stop_note);
    }
    gpd__wl_change c;
    gpd__wl_change_init(&c, a->id);
    c.state = (int)st;
    c.stop_kind = "";
    c.reason = a->stop_note[0] ? a->stop_note : why;
    c.attempt_end = evict ? GPD__OUTCOME_EVICTED
                    : del ? GPD__OUTCOME_DELETED
                          : GPD__OUTCOME_SUSPENDED;
    c.event = evict ? GPD__EV_REQUEUED : del ? GPD__EV_DELETED : GPD__EV_SUSPENDED;
    c.event_msg = msg;
    gpd__sched_record(s, &c);
    pthread_mutex_lock(&s->eng_mu);
    if (evict && a->in_engine) {
        if (gp_engine_released(s->eng, a->id, gpd__now_ms()) < 0) {
            /* Not EVICTING in the engine (a stop of our own): requeue it. */
            if (gp_engine_requeue(s->eng, a->id) < 0)
                gpd__log("workload %llu: the engine refused to requeue it",
                         (unsigned long long)a->id);
        }
    } else if (!evict) {
        gp_engine_cancel(s->eng, a->id);
    }
    pthread_mutex_unlock(&s->eng_mu);
    /* Suspended, it keeps its row of returned GPUs until resumed or
     * deleted (the idle policy's suspend). */
    if (st != GP_WL_SUSPENDED)
        gpd__loop_idle_drop(s, a);
    reap_and_remove(s, a);
}

void gpd__loop_owner_stop(gpd__sched *s, active *a, const char *kind, const char *why) {
    a->stop_note[0] = '\0';
    snprintf(a->stop_kind, sizeof a->stop_kind, "%s", kind);
    gpd__loop_idle_drop(s, a);
    gpd__loop_finish_stop(s, a, why);
}

/* ---- Polling ---------------------------------------------------------- */

gp_wl_state gpd__loop_lost_state(const active *a, const char **note) {
    int held = a->held && !a->in_engine;
    *note = held ? "; suspended: its owner's resume starts it again" : "";
    return held ? GP_WL_SUSPENDED : GP_WL_PENDING;
}

/* Ends an attempt whose tasks stopped on their own (or were lost), paused
 * ones included: the engine finishes it, or requeues it (lost) to run anew,
 * its pause dropped; lost, one the idle policy holds is suspended
 * (gpd__loop_lost_state). */
static void conclude(gpd__sched *s, active *a, gp_wl_state st, gpd__outcome outcome,
                     gpd__event_kind kind, int32_t exit_code, const char *why) {
    for (int t = 0; t < a->ntasks; t++)
        if (a->tasks[t].handle[0])
            gp_exec_stop(s->ex, a->tasks[t].handle);
    const char *note = "";
    if (st == GP_WL_PENDING)
        st = gpd__loop_lost_state(a, &note);
    char msg[400];
    snprintf(msg, sizeof msg, "attempt %d %s: %s%s", a->attempt, gpd__outcome_name(outcome), why,
             note);
    gpd__wl_change c;
    gpd__wl_change_event(&c, a->id, (int)st, why, kind, msg);
    c.exit_code = exit_code;
    c.attempt_end = outcome;
    gpd__sched_record(s, &c);
    if (a->in_engine)
        engine_end(s, a->id, st == GP_WL_PENDING);
    /* Suspended, it keeps its row of returned GPUs, as the policy's
     * suspend does, until resumed or deleted. */
    if (st != GP_WL_SUSPENDED)
        gpd__loop_idle_drop(s, a);
    reap_and_remove(s, a);
}

/* A launched workload whose tasks the executor no longer holds back (each
 * running or already ended) is running: recorded with how long it waited. */
static void maybe_started(gpd__sched *s, active *a, int64_t now) {
    for (int t = 0; t < a->ntasks; t++)
        if (a->tasks[t].state == GP_TASK_STARTING)
            return;
    int64_t waited = a->launched_ms > 0 && now > a->launched_ms ? now - a->launched_ms : 0;
    char msg[256], d[32];
    gp_format_duration(waited, d, sizeof d);
    snprintf(msg, sizeof msg, "attempt %d started (%d task%s) after %s waiting in the executor",
             a->attempt, a->ntasks, a->ntasks > 1 ? "s" : "", d);
    record_started(s, a, a->ntasks, msg);
    pthread_mutex_lock(&s->hist_mu);
    s->hist.starts++;
    s->hist.start_wait += (double)waited / 1000.0;
    pthread_mutex_unlock(&s->hist_mu);
    pthread_mutex_lock(&s->eng_mu);
    a->state = GP_WL_RUNNING;
    a->running_ms = a->busy_ms = now;
    pthread_mutex_unlock(&s->eng_mu);
}

/* Decides what the polled states of a running workload's tasks mean. */
static void judge(gpd__sched *s, active *a, int64_t now) {
    int down = 0, lost = -1, failed = -1, bad = -1;
    /* While the pause worker pauses or resumes it, its outcome decides. */
    if (a->pausing == GPD__PAUSE_PAUSING || a->pausing == GPD__PAUSE_RESUMING)
        return;
    if (a->state == GP_WL_STARTING)
        maybe_started(s, a, now);
    for (int t = 0; t < a->ntasks; t++) {
        const task_rt *tk = &a->tasks[t];
        if (tk->state == GP_TASK_LOST)
            lost = t;
        else if (tk->state == GP_TASK_FAILED)
            failed = t;
        else if (tk->state == GP_TASK_EXITED &&
                 (tk->exit_code != 0 || tk->term_signal || tk->detail[0]))
            bad = t; /* a detail: the executor itself stopped it (executor.h) */
        /* A task never launched (its launch to be tried again) is down
         * for a stop. */
        if (tk->state >= GP_TASK_EXITED || (a->state == GP_WL_STOPPING && !tk->handle[0]))
            down++;
    }
    if (a->state == GP_WL_STOPPING) {
        if (down == a->ntasks || now >= a->deadline)
            gpd__loop_finish_stop(s, a,
                                  down == a->ntasks ? "tasks ended after the checkpoint signal"
                                                    : "grace period over; tasks killed");
        return;
    }
    char why[256];
    if (lost >= 0) {
        snprintf(why, sizeof why, "task %d was lost (%s)", lost, a->tasks[lost].detail);
        conclude(s, a, GP_WL_PENDING, GPD__OUTCOME_LOST, GPD__EV_LOST, -1, why);
    } else if (failed >= 0) {
        snprintf(why, sizeof why, "task %d could not start: %s", failed, a->tasks[failed].detail);
        conclude(s, a, GP_WL_FAILED, GPD__OUTCOME_FAILED, GPD__EV_FAILED, -1, why);
    } else if (bad >= 0) {
        const task_rt *tk = &a->tasks[bad];
        const char *sig = gp_signal_name(tk->term_signal);
        char how[64];
        if (tk->term_signal)
            snprintf(how, sizeof how, "was killed by signal %s%s", sig ? "SIG" : "",
                     sig ? sig : "?");
        else
            snprintf(how, sizeof how, "exited with status %d", tk->exit_code);
        if (tk->detail[0])
            snprintf(why, sizeof why, "task %d %s (%s)", bad, how, tk->detail);
        else
            snprintf(why, sizeof why, "task %d %s", bad, how);
        conclude(s, a, GP_WL_FAILED, GPD__OUTCOME_FAILED, GPD__EV_FAILED,
                 tk->term_signal ? 128 + tk->term_signal : tk->exit_code, why);
    } else if (down == a->ntasks) {
        conclude(s, a, GP_WL_SUCCEEDED, GPD__OUTCOME_SUCCEEDED, GPD__EV_SUCCEEDED, 0,
                 "every task exited with status 0");
    }
}

int gpd__loop_exec_poll(gpd__sched *s, gp_task_status *st, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += st[i].handle[0] != '\0';
    if (k == n)
        return gp_exec_poll(s->ex, st, n);
    gp_task_status *some = k > 0 ? calloc(k, sizeof *some) : NULL;
    if (k > 0 && some == NULL)
        return GP_ENOMEM;
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (st[i].handle[0] != '\0')
            memcpy(some[k++].handle, st[i].handle, sizeof st[i].handle);
    int rc = k > 0 ? gp_exec_poll(s->ex, some, k) : 0;
    k = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (st[i].handle[0] != '\0') {
            st[i] = some[k++];
        } else {
            memset(&st[i], 0, sizeof st[i]);
            st[i].state = GP_TASK_STARTING;
            st[i].gpu_mem_used = -1;
        }
    }
    free(some);
    return rc;
}

void gpd__loop_poll(gpd__sched *s, int64_t now) {
    reap_pending(s);
    relaunch_due(s, now);
    size_t n = 0;
    for (size_t i = 0; i < s->nact; i++)
        n += (size_t)s->act[i]->ntasks;
    if (n == 0)
        return;
    gp_task_status *st = calloc(n, sizeof *st);
    if (!st)
        return;
    size_t k = 0;
    for (size_t i = 0; i < s->nact; i++)
        for (int t = 0; t < s->act[i]->ntasks; t++)
            snprintf(st[k++].handle, sizeof st->handle, "%s", s->act[i]->tasks[t].handle);
    int rc = gpd__loop_exec_poll(s, st, n);
    if (rc < 0) {
        gpd__log("polling %zu tasks failed: %s", n, gp_strerror(rc));
        free(st);
        return;
    }
    pthread_mutex_lock(&s->eng_mu);
    k = 0;
    for (size_t i = 0; i < s->nact; i++)
        for (int t = 0; t < s->act[i]->ntasks; t++, k++) {
            task_rt *tk = &s->act[i]->tasks[t];
            tk->state = st[k].state;
            tk->exit_code = st[k].exit_code;
            tk->term_signal = st[k].term_signal;
            tk->mem_used = st[k].gpu_mem_used;
            snprintf(tk->detail, sizeof tk->detail, "%s", st[k].detail);
        }
    pthread_mutex_unlock(&s->eng_mu);
    free(st);
    /* judge() may remove the workload it looks at: walk from the end. */
    for (size_t i = s->nact; i-- > 0;)
        if (i < s->nact)
            judge(s, s->act[i], now);
}
