/*
 * test-pause.c — eviction modes in the engine: a victim asking for pause is
 * paused where its node can pause and has host memory for it, and evicted in
 * checkpoint mode otherwise, with the reason in the decision; a paused
 * workload frees its GPUs and CPU, holds host memory on its node, waits in
 * its queue and is resumed only there; a failed pause or resume, a cancel, a
 * lost node and a restart each leave the books balanced (the invariant
 * checker runs after every cycle); a queue's default mode is inherited down
 * the queue tree.
 */
#include "gptest.h"
#include "helpers.h"

/* Submits a one-task workload of gpus whole GPUs in mode m. */
static void submit_mode(gp_engine *e, uint64_t id, const char *q, int gpus, int tasks,
                        gp_on_preempt m, gp_time_ms now) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, q);
    w.tasks = tasks;
    w.submitted = now;
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = gpus;
    w.req.mem_bytes = 4 * GIB;
    w.on_preempt = m;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_submit(e, &w, err, sizeof err) == 0, "submit: %s", err);
}

/* Node name with 4 H100 of 80 GiB that can pause (paused_mem_max GiB). */
static void pause_node(gp_engine *e, const char *name, int can_pause, int64_t max_gib) {
    gp_node_spec n;
    t_node_spec(&n, name, 4, "H100", 80, "");
    n.can_pause = can_pause;
    n.paused_mem_max = max_gib * GIB;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_node_set(e, &n, err, sizeof err) == 0, "node: %s", err);
}

/* Project b borrows node n1's 4 GPUs with 4 one-GPU workloads (ids 1-4) in
 * mode m; then project a, which deserves them, asks for 2. Returns the
 * decisions of the cycle that evicts for a (not released). */
static size_t borrow_then_reclaim(gp_engine *e, gp_on_preempt m, const gp_decision **d) {
    t_queue(e, "a", "", 4, -1, 1);
    t_queue(e, "b", "", 0, -1, 1);
    for (uint64_t id = 1; id <= 4; id++)
        submit_mode(e, id, "b", 1, 1, m, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "b"), 4000);
    submit_mode(e, 100, "a", 1, 1, GP_ON_PREEMPT_CHECKPOINT, 2000);
    submit_mode(e, 101, "a", 1, 1, GP_ON_PREEMPT_CHECKPOINT, 2000);
    size_t n = t_cycle(e, 3000, 1, 0, d);
    ck_assert_uint_eq(t_count(*d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 2);
    return n;
}

static gp_node_info node_info(gp_engine *e, const char *name) {
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, name, &ni), 0);
    return ni;
}

/* An engine with node n1 (can_pause, max_gib) after borrow_then_reclaim in
 * mode m, that cycle's decisions, and its two victims. */
typedef struct reclaim {
    gp_engine *e;
    const gp_decision *d;
    size_t n;
    uint64_t v[2];
} reclaim;

static reclaim reclaimed(gp_on_preempt m, int can_pause, int64_t max_gib) {
    reclaim r = {t_engine(), NULL, 0, {0, 0}};
    pause_node(r.e, "n1", can_pause, max_gib);
    r.n = borrow_then_reclaim(r.e, m, &r.d);
    for (size_t i = 0, k = 0; i < r.n; i++)
        if (r.d[i].type == GP_DECISION_EVICT)
            r.v[k++] = r.d[i].workload;
    return r;
}

/* Every eviction of d[0..n) is in mode m, for the reason why. */
static void evicted_in(const gp_decision *d, size_t n, gp_on_preempt m, gp_mode_why why) {
    for (size_t i = 0; i < n; i++) {
        if (d[i].type != GP_DECISION_EVICT)
            continue;
        ck_assert_int_eq(d[i].mode, m);
        ck_assert_int_eq(d[i].mode_why, why);
    }
}

START_TEST(test_reclaim_pauses_and_resumes_in_place) {
    reclaim r = reclaimed(GP_ON_PREEMPT_PAUSE, 1, 400);
    gp_engine *e = r.e;
    const gp_decision *d = r.d;
    size_t n = r.n;
    uint64_t *v = r.v;
    evicted_in(d, n, GP_ON_PREEMPT_PAUSE, GP_MODE_ASKED);
    /* Being paused: the GPU memory to be moved to host is reserved. */
    gp_node_info ni = node_info(e, "n1");
    ck_assert_int_eq(ni.paused, 2);
    ck_assert_int_eq(ni.paused_mem, 2 * (80 + 4) * GIB);
    ck_assert_int_eq(ni.mem_used, 4 * 4 * GIB + 2 * 80 * GIB);
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(gp_engine_paused(e, v[k], 3500), 0);
    gp_workload_info wi;
    ck_assert_int_eq(gp_engine_workload_get(e, v[0], &wi), 0);
    ck_assert_int_eq(wi.state, GP_STATE_PENDING);
    ck_assert_str_eq(wi.paused_on, "n1");
    /* Paused: GPUs and CPU free, host memory held. */
    ni = node_info(e, "n1");
    ck_assert_int_eq(ni.mem_used, 2 * 4 * GIB + 2 * (80 + 4) * GIB);
    ck_assert_int_eq(ni.cpu_used, 0);
    t_cycle(e, 4000, 1, 0, NULL);
    ck_assert_int_eq(t_state(e, 100), GP_STATE_RUNNING);
    ck_assert_int_eq(t_state(e, 101), GP_STATE_RUNNING);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, v[0], why, sizeof why), GP_WAIT_PAUSED);
    ck_assert_msg(strstr(why, "paused on node n1") != NULL, "%s", why);
    /* The owner leaves: the paused ones are resumed there. */
    ck_assert_int_eq(gp_engine_finished(e, 100), 0);
    ck_assert_int_eq(gp_engine_finished(e, 101), 0);
    n = t_cycle(e, 5000, 0, 0, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 2);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(d[i].resume, 1);
        ck_assert_str_eq(d[i].tasks[0].node, "n1");
        ck_assert_int_eq(gp_engine_started(e, d[i].workload, 5000), 0);
    }
    ni = node_info(e, "n1");
    ck_assert_int_eq(ni.paused, 0);
    ck_assert_int_eq(ni.paused_mem, 0);
    ck_assert_int_eq(ni.mem_used, 4 * 4 * GIB);
    gp_engine_free(e);
}
END_TEST

/* Room for one paused task (84 GiB) of 100: the second victim is evicted in
 * checkpoint mode, saying why. */
START_TEST(test_host_memory_bound) {
    reclaim r = reclaimed(GP_ON_PREEMPT_PAUSE, 1, 100);
    int paused = 0, bounded = 0;
    for (size_t i = 0; i < r.n; i++) {
        const gp_decision *x = &r.d[i];
        paused += x->type == GP_DECISION_EVICT && x->mode == GP_ON_PREEMPT_PAUSE;
        bounded += x->type == GP_DECISION_EVICT && x->mode_why == GP_MODE_HOST_MEMORY &&
                   x->mode == GP_ON_PREEMPT_CHECKPOINT;
    }
    ck_assert_int_eq(paused, 1);
    ck_assert_int_eq(bounded, 1);
    ck_assert_str_eq(gp_mode_why_text(GP_MODE_HOST_MEMORY),
                     "paused tasks would hold more host memory than its node allows");
    gp_engine_free(r.e);
}
END_TEST

/* Host memory held by tasks paused outside the engine (idle sessions the
 * caller paused) counts against the node's bound and is charged to its
 * memory: with 100 of 200 GiB held so, there is room for one paused task
 * (84 GiB), not two; released, the room is back. */
START_TEST(test_paused_outside_counts) {
    gp_engine *e = t_engine();
    pause_node(e, "n1", 1, 200);
    ck_assert_int_eq(gp_engine_node_paused_outside(e, "n1", 100 * GIB), 0);
    gp_node_info ni = node_info(e, "n1");
    ck_assert_int_eq(ni.paused_mem, 100 * GIB);
    ck_assert_int_eq(ni.mem_used, 100 * GIB);
    ck_assert_int_eq(gp_engine_node_paused_outside(e, "n1", -1), GP_EINVAL);
    ck_assert_int_eq(gp_engine_node_paused_outside(e, "n9", GIB), GP_ENOENT);
    ck_assert_int_eq(gp_engine_node_paused_outside(e, NULL, GIB), GP_ENOENT);
    const gp_decision *d;
    size_t n = borrow_then_reclaim(e, GP_ON_PREEMPT_PAUSE, &d);
    int paused = 0, bounded = 0;
    for (size_t i = 0; i < n; i++) {
        paused += d[i].type == GP_DECISION_EVICT && d[i].mode == GP_ON_PREEMPT_PAUSE;
        bounded += d[i].type == GP_DECISION_EVICT && d[i].mode_why == GP_MODE_HOST_MEMORY;
    }
    ck_assert_int_eq(paused, 1);
    ck_assert_int_eq(bounded, 1);
    ni = node_info(e, "n1");
    ck_assert_int_eq(ni.paused_mem, 100 * GIB + (80 + 4) * GIB);
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(gp_engine_node_paused_outside(e, "n1", 0), 0);
    ni = node_info(e, "n1");
    ck_assert_int_eq(ni.paused_mem, (80 + 4) * GIB);
    ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "%s", err);
    gp_engine_free(e);
}
END_TEST

/* A node that cannot pause: checkpoint mode, saying why; a workload asking
 * for requeue keeps it; neither holds host memory. */
START_TEST(test_no_pause_without_node_or_mode) {
    static const struct {
        gp_on_preempt asked;
        int can_pause;
        gp_on_preempt mode;
        gp_mode_why why;
    } cases[] = {{GP_ON_PREEMPT_PAUSE, 0, GP_ON_PREEMPT_CHECKPOINT, GP_MODE_NO_PAUSE},
                 {GP_ON_PREEMPT_REQUEUE, 1, GP_ON_PREEMPT_REQUEUE, GP_MODE_ASKED}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        reclaim r = reclaimed(cases[c].asked, cases[c].can_pause, 400);
        evicted_in(r.d, r.n, cases[c].mode, cases[c].why);
        ck_assert_int_eq(gp_engine_paused(r.e, r.v[0], 3500), GP_ESTATE);
        ck_assert_int_eq(node_info(r.e, "n1").paused, 0);
        gp_engine_free(r.e);
    }
}
END_TEST

START_TEST(test_gang_is_not_paused) {
    gp_engine *e = t_engine();
    pause_node(e, "n1", 1, 400);
    t_queue(e, "a", "", 4, -1, 1);
    t_queue(e, "b", "", 0, -1, 1);
    submit_mode(e, 1, "b", 2, 2, GP_ON_PREEMPT_PAUSE, 0);
    t_cycle(e, 1000, 1, 1, NULL);
    submit_mode(e, 100, "a", 1, 1, GP_ON_PREEMPT_CHECKPOINT, 2000);
    const gp_decision *d;
    size_t n = t_cycle(e, 3000, 1, 0, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 1);
    evicted_in(d, n, GP_ON_PREEMPT_CHECKPOINT, GP_MODE_GANG);
    gp_engine_free(e);
}
END_TEST

/* A pause that failed (a lock timeout) is stopped in checkpoint mode and
 * released: nothing stays held for it. Paused on n1, the other is not started
 * on the idle n2; a resume that fails leaves it paused again; a lost node
 * reports it so that its task is ended. The caller's backoff after a failed
 * resume (gp_engine_resume_after) holds the next one off until its time. */
START_TEST(test_resumes_only_on_its_node) {
    reclaim r = reclaimed(GP_ON_PREEMPT_PAUSE, 1, 400);
    gp_engine *e = r.e;
    const gp_decision *d = r.d;
    size_t n = r.n;
    uint64_t *vs = r.v;
    uint64_t v = vs[0];
    ck_assert_int_eq(gp_engine_released(e, vs[1], 3500), 0);
    ck_assert_int_eq(gp_engine_paused(e, v, 3500), 0);
    gp_workload_info wi;
    ck_assert_int_eq(gp_engine_workload_get(e, vs[1], &wi), 0);
    ck_assert_ptr_null(wi.paused_on);
    ck_assert_int_eq(node_info(e, "n1").paused, 1);
    ck_assert_int_eq(node_info(e, "n1").mem_used, 2 * 4 * GIB + (80 + 4) * GIB);
    t_cycle(e, 4000, 1, 1, NULL); /* a's two run; no room for the released one */
    t_node(e, "n2", 4, "H100", 80, "");
    t_cycle(e, 5000, 1, 1, NULL);
    ck_assert_int_eq(t_state(e, v), GP_STATE_PENDING);
    ck_assert_int_eq(gp_engine_finished(e, 100), 0);
    n = t_cycle(e, 6000, 0, 0, &d);
    int resumed = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i].type == GP_DECISION_BIND && d[i].workload == v) {
            resumed = d[i].resume;
            ck_assert_str_eq(d[i].tasks[0].node, "n1");
        }
    ck_assert_int_eq(resumed, 1);
    /* The restore found too little GPU memory: paused again. */
    ck_assert_int_eq(gp_engine_paused(e, v, 6500), 0);
    ck_assert_int_eq(gp_engine_workload_get(e, v, &wi), 0);
    ck_assert_str_eq(wi.paused_on, "n1");
    ck_assert_int_eq(node_info(e, "n1").paused, 1);
    /* Its next resume waits for the caller's backoff, then comes. */
    ck_assert_int_eq(gp_engine_resume_after(e, v, 6900), 0);
    ck_assert_int_eq(gp_engine_resume_after(e, 12345, 6900), GP_ENOENT);
    n = t_cycle(e, 6600, 0, 0, &d);
    for (size_t i = 0; i < n; i++)
        ck_assert(!(d[i].type == GP_DECISION_BIND && d[i].workload == v));
    ck_assert_int_eq(t_state(e, v), GP_STATE_PENDING);
    n = t_cycle(e, 6900, 0, 0, &d);
    resumed = 0;
    for (size_t i = 0; i < n; i++)
        resumed += d[i].type == GP_DECISION_BIND && d[i].workload == v && d[i].resume;
    ck_assert_int_eq(resumed, 1);
    ck_assert_int_eq(gp_engine_resume_after(e, v, 9000), GP_ESTATE);
    ck_assert_int_eq(gp_engine_paused(e, v, 6950), 0);
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_check(e, err, sizeof err), 0);
    ck_assert_int_eq(gp_engine_node_remove(e, "n1"), 0);
    n = t_cycle(e, 7000, 0, 0, &d);
    int gone = 0;
    for (size_t i = 0; i < n; i++)
        gone += d[i].type == GP_DECISION_EVICT && d[i].workload == v &&
                d[i].reason == GP_EVICT_NODE_GONE;
    ck_assert_int_eq(gone, 1);
    ck_assert_int_eq(gp_engine_workload_get(e, v, &wi), 0);
    ck_assert_ptr_null(wi.paused_on);
    gp_engine_free(e);
}
END_TEST

/* The task of a paused workload, or of one being paused, ends there (killed,
 * lost with its node's executor): lost, it is requeued, its pause dropped
 * (the node's host memory freed, never resumed: it runs anew, on any node);
 * ended, it is finished and gone, its host memory freed too. */
START_TEST(test_paused_task_ends) {
    for (int finish = 0; finish < 2; finish++) {
        reclaim r = reclaimed(GP_ON_PREEMPT_PAUSE, 1, 400);
        gp_engine *e = r.e;
        /* v[0] paused; v[1] still being paused (EVICTING). */
        ck_assert_int_eq(gp_engine_paused(e, r.v[0], 3500), 0);
        for (int k = 0; k < 2; k++) {
            if (finish) {
                ck_assert_int_eq(gp_engine_finished(e, r.v[k]), 0);
                ck_assert_int_eq(t_state(e, r.v[k]), -1);
                continue;
            }
            ck_assert_int_eq(gp_engine_requeue(e, r.v[k]), 0);
            gp_workload_info wi;
            ck_assert_int_eq(gp_engine_workload_get(e, r.v[k], &wi), 0);
            ck_assert_int_eq(wi.state, GP_STATE_PENDING);
            ck_assert_ptr_null(wi.paused_on);
            ck_assert_int_ne(wi.wait, GP_WAIT_PAUSED);
        }
        gp_node_info ni = node_info(e, "n1");
        ck_assert_int_eq(ni.paused, 0);
        ck_assert_int_eq(ni.paused_mem, 0);
        ck_assert_int_eq(ni.mem_used, 2 * 4 * GIB);
        char err[GP_ERR_MAX] = "";
        ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "%s", err);
        if (!finish) {
            /* Plain pending again: it starts anew where there is room. */
            t_node(e, "n2", 4, "H100", 80, "");
            const gp_decision *d;
            size_t n = t_cycle(e, 4000, 1, 1, &d);
            int bound = 0;
            for (size_t i = 0; i < n; i++)
                if (d[i].type == GP_DECISION_BIND &&
                    (d[i].workload == r.v[0] || d[i].workload == r.v[1])) {
                    ck_assert_int_eq(d[i].resume, 0);
                    bound++;
                }
            ck_assert_int_eq(bound, 2);
        }
        /* A workload never bound has no task to end. */
        submit_mode(e, 50, "b", 1, 1, GP_ON_PREEMPT_PAUSE, 4500);
        ck_assert_int_eq(gp_engine_finished(e, 50), GP_ESTATE);
        ck_assert_int_eq(gp_engine_requeue(e, 50), GP_ESTATE);
        gp_engine_free(e);
    }
}
END_TEST

/* An engine with node n1 that can pause and project b; *w a one-GPU
 * workload 7 of b in pause mode, with 4 GiB of host memory. */
static gp_engine *restore_pool(gp_workload_spec *w) {
    gp_engine *e = t_engine();
    pause_node(e, "n1", 1, 400);
    t_queue(e, "b", "", 0, -1, 1);
    gp_workload_spec_init(w, 7, "b");
    w->req.gpu = GP_GPU_WHOLE;
    w->req.gpus = 1;
    w->req.mem_bytes = 4 * GIB;
    w->on_preempt = GP_ON_PREEMPT_PAUSE;
    return e;
}

/* After a restart, a paused workload is restored paused, holding its host
 * memory again; a binding on a GPU the node lacks is refused; cancelled, it
 * frees its host memory. */
START_TEST(test_restore_paused) {
    gp_workload_spec w;
    gp_engine *e = restore_pool(&w);
    gp_task_binding b = {.node = "n1", .nslices = 1};
    b.slices[0] = (gp_slice){.gpu = 9, .milli = 1000, .mem = 80 * GIB, .mig_slot = -1};
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_engine_restore_paused(e, &w, &b, err, sizeof err), GP_EINVAL);
    ck_assert_int_eq(t_state(e, 7), -1);
    b.slices[0].gpu = 2;
    ck_assert_msg(gp_engine_restore_paused(e, &w, &b, err, sizeof err) == 0, "%s", err);
    gp_node_info ni = node_info(e, "n1");
    ck_assert_int_eq(ni.paused, 1);
    ck_assert_int_eq(ni.mem_used, 84 * GIB);
    ck_assert_int_eq(gp_engine_cancel(e, 7), 0);
    ck_assert_int_eq(node_info(e, "n1").mem_used, 0);
    ck_assert_int_eq(gp_engine_restore_paused(e, &w, &b, err, sizeof err), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 1000, 1, 1, &d);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(d[0].resume, 1);
    ck_assert_int_eq(node_info(e, "n1").mem_used, 4 * GIB);
    gp_engine_free(e);
}
END_TEST

/* Restoring w paused with binding b is refused with GP_EINVAL, the error
 * naming field, as is its check alone, and nothing changes: no workload,
 * node n1 holds nothing. */
static void restore_refused(gp_engine *e, const gp_workload_spec *w, const gp_task_binding *b,
                            const char *field) {
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_engine_paused_binding_check(e, b, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strncmp(err, field, strlen(field)) == 0 && err[strlen(field)] == ':', "%s: %s",
                  field, err);
    ck_assert_int_eq(gp_engine_restore_paused(e, w, b, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strncmp(err, field, strlen(field)) == 0 && err[strlen(field)] == ':', "%s: %s",
                  field, err);
    ck_assert_int_eq(t_state(e, w->id), -1);
    gp_node_info ni = node_info(e, "n1");
    ck_assert_int_eq(ni.paused, 0);
    ck_assert_int_eq(ni.paused_mem, 0);
    ck_assert_int_eq(ni.mem_used, 0);
    ck_assert_int_eq(gp_engine_check(e, err, sizeof err), 0);
}

/* Every count, index and amount of the binding a paused workload is
 * restored with is checked before anything changes: a negative count of
 * slices was taken (the task then held only its own memory and resumed on
 * any model), and a slice's memory past what its GPU has overflowed the sum
 * of what the node holds. */
START_TEST(test_restore_paused_bad_binding) {
    gp_workload_spec w;
    gp_engine *e = restore_pool(&w);
    const gp_slice good = {.gpu = 2, .milli = 1000, .mem = 80 * GIB, .mig_slot = -1};
    gp_task_binding b = {.node = "n1", .nslices = -1};
    b.slices[0] = good;
    restore_refused(e, &w, &b, "was.nslices");
    b.nslices = GP_MAX_GPUS_PER_NODE + 1;
    restore_refused(e, &w, &b, "was.nslices");
    b.nslices = 1;
    b.slices[0].gpu = -1;
    restore_refused(e, &w, &b, "was.slices[0].gpu");
    b.slices[0].gpu = 4;
    restore_refused(e, &w, &b, "was.slices[0].gpu");
    b.slices[0] = good;
    b.slices[0].mig_slot = 0;
    restore_refused(e, &w, &b, "was.slices[0].mig_slot");
    b.slices[0] = good;
    b.slices[0].milli = -1;
    restore_refused(e, &w, &b, "was.slices[0].milli");
    b.slices[0].milli = GP_MILLI + 1;
    restore_refused(e, &w, &b, "was.slices[0].milli");
    b.slices[0] = good;
    b.slices[0].mem = -1;
    restore_refused(e, &w, &b, "was.slices[0].mem");
    b.slices[0].mem = 80 * GIB + 1;
    restore_refused(e, &w, &b, "was.slices[0].mem");
    b.slices[0].mem = INT64_MAX;
    restore_refused(e, &w, &b, "was.slices[0].mem");
    b.slices[0] = good;
    char err[GP_ERR_MAX] = "";
    b.node = "n9";
    ck_assert_int_eq(gp_engine_paused_binding_check(e, &b, err, sizeof err), GP_ENOENT);
    ck_assert_int_eq(gp_engine_restore_paused(e, &w, &b, err, sizeof err), GP_ENOENT);
    b.node = "n1";
    ck_assert_msg(gp_engine_paused_binding_check(e, &b, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(node_info(e, "n1").mem_used, 0);
    ck_assert_msg(gp_engine_restore_paused(e, &w, &b, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(node_info(e, "n1").mem_used, 84 * GIB);
    gp_engine_free(e);
}
END_TEST

/* The queue's mode in force, its own flag and where the mode comes from. */
static void mode_is(gp_engine *e, const char *q, gp_on_preempt m, int own, const char *from) {
    gp_queue_info qi;
    ck_assert_int_eq(gp_engine_queue_get(e, q, &qi), 0);
    ck_assert_int_eq(qi.on_preempt, m);
    ck_assert_int_eq(qi.on_preempt_set, own);
    ck_assert_str_eq(qi.on_preempt_from, from);
}

/* Sets queue q's own mode (set 1) or makes it inherit (set 0). */
static void set_mode(gp_engine *e, const char *q, const char *parent, gp_on_preempt m, int set) {
    gp_queue_spec s;
    gp_queue_spec_init(&s, q, parent);
    s.on_preempt = m;
    s.on_preempt_set = set;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_queue_set(e, &s, err, sizeof err) == 0, "%s", err);
}

/* A queue's default mode is its own where it set one, else its nearest
 * ancestor's that did, else checkpoint; unsetting goes back to that. */
START_TEST(test_on_preempt_inherited) {
    gp_engine *e = t_engine();
    set_mode(e, "dept", "", GP_ON_PREEMPT_CHECKPOINT, 0);
    set_mode(e, "team", "dept", GP_ON_PREEMPT_CHECKPOINT, 0);
    set_mode(e, "proj", "team", GP_ON_PREEMPT_CHECKPOINT, 0);
    mode_is(e, "proj", GP_ON_PREEMPT_CHECKPOINT, 0, "");
    set_mode(e, "dept", "", GP_ON_PREEMPT_PAUSE, 1);
    mode_is(e, "dept", GP_ON_PREEMPT_PAUSE, 1, "dept");
    mode_is(e, "proj", GP_ON_PREEMPT_PAUSE, 0, "dept");
    set_mode(e, "team", "dept", GP_ON_PREEMPT_REQUEUE, 1);
    mode_is(e, "proj", GP_ON_PREEMPT_REQUEUE, 0, "team");
    set_mode(e, "proj", "team", GP_ON_PREEMPT_CHECKPOINT, 1);
    mode_is(e, "proj", GP_ON_PREEMPT_CHECKPOINT, 1, "proj");
    set_mode(e, "proj", "team", GP_ON_PREEMPT_CHECKPOINT, 0);
    set_mode(e, "team", "dept", GP_ON_PREEMPT_CHECKPOINT, 0);
    mode_is(e, "proj", GP_ON_PREEMPT_PAUSE, 0, "dept");
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_reclaim_pauses_and_resumes_in_place);
    tcase_add_test(tc, test_host_memory_bound);
    tcase_add_test(tc, test_paused_outside_counts);
    tcase_add_test(tc, test_no_pause_without_node_or_mode);
    tcase_add_test(tc, test_gang_is_not_paused);
    tcase_add_test(tc, test_resumes_only_on_its_node);
    tcase_add_test(tc, test_paused_task_ends);
    tcase_add_test(tc, test_restore_paused);
    tcase_add_test(tc, test_restore_paused_bad_binding);
    tcase_add_test(tc, test_on_preempt_inherited);
}

GP_TEST_MAIN("engine/pause", add_tests)
