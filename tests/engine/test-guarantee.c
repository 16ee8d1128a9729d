/*
 * test-guarantee.c — "a department always gets its deserved GPUs back, and
 * idle GPUs are lent": one regression test per defect once seen on random
 * trees (docs/fairshare.md states the rules these tests hold):
 *   1. the over-commit rule is continuous in deserved quota;
 *   2. a project under its fair share reclaims from a sibling through a
 *      parent at its limit;
 *   3. consolidation never loops (moves only what lets the beneficiary start);
 *   4. a queue within its deserved quota reclaims from one beyond its own,
 *      even below that one's fair share, and past any minimum runtime;
 *   5. a department's fair share is bounded by what its children can use;
 *   6. work no state of the pool could run is refused at submit, and says
 *      "cannot run on this pool" when the pool shrinks under it.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

static gp_engine *engine_with(int gpus, int allocate, gp_placement placement) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.allocate = allocate;
    c.check_invariants = 1;
    c.aging_interval = 0;
    c.placement = placement;
    gp_engine *e = t_open(&c);
    ck_assert_ptr_nonnull(e);
    if (gpus > 0)
        t_node(e, "n1", gpus, "H100", 80, "");
    return e;
}

/* Six more cycles from t0 evict nothing. */
static void assert_settled(gp_engine *e, gp_time_ms t0) {
    for (gp_time_ms t = t0; t < t0 + 6000; t += 1000) {
        const gp_decision *d;
        size_t n = t_cycle(e, t, 1, 1, &d);
        ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    }
}

static void submit_min_runtime(gp_engine *e, uint64_t id, const char *q, gp_time_ms min_runtime,
                               gp_time_ms now) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, q);
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    w.min_runtime = min_runtime;
    w.submitted = now;
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_submit(e, &w, err, sizeof err) == 0, "%s", err);
}

/* Defect 1. Pool 10; A deserves 8 and asks 100; B deserves 12 and is idle; C
 * asks 100. With C deserving 2.000 the deserved quotas in use (8 + 2) fit:
 * A 8, C 2. With 2.001 they are over by one milli-GPU, and the shares must
 * move by about that much, not by whole GPUs (the old rule gave A 6.36). */
static void overcommit_case(int64_t c_deserved, int64_t *a, int64_t *c) {
    gp_engine *e = engine_with(10, 0, GP_PLACE_GPUPOOL);
    t_queue(e, "A", "", 8, -1, 1);
    t_queue(e, "B", "", 12, -1, 1);
    t_queue(e, "C", "", (double)c_deserved / GP_MILLI, -1, 1);
    t_want(e, 1, "A", 100);
    t_want(e, 2, "C", 100);
    t_cycle(e, 0, 0, 0, NULL);
    *a = t_fair(e, "A");
    *c = t_fair(e, "C");
    ck_assert_int_eq(t_fair(e, "B"), 0);
    gp_engine_free(e);
}

START_TEST(test_overcommit_rule_is_continuous) {
    int64_t a0, c0, a1, c1;
    overcommit_case(2000, &a0, &c0);
    overcommit_case(2001, &a1, &c1);
    ck_assert_int_eq(a0, 8000);
    ck_assert_int_eq(c0, 2000);
    ck_assert_int_le(llabs(a1 - a0), 1);
    ck_assert_int_le(llabs(c1 - c0), 1);
    ck_assert_int_eq(a1 + c1, 10000);
}
END_TEST

/* Defect 2. A 4-GPU node; department D limited to 2; P1 (deserves 2) and P2
 * (deserves 0) under it. P2 holds 2, then P1 asks for 1: both fair shares
 * are 1, so P1 takes one back although D is at its limit. */
START_TEST(test_reclaim_through_a_limited_parent) {
    gp_engine *e = engine_with(4, 1, GP_PLACE_GPUPOOL);
    t_queue(e, "D", "", 0, 2, 1);
    t_queue(e, "P1", "D", 2, -1, 1);
    t_queue(e, "P2", "D", 0, -1, 1);
    ck_assert_int_eq(t_submit(e, 1, "P2", GP_KIND_TRAIN, 1, 1, 0, 0), 0);
    ck_assert_int_eq(t_submit(e, 2, "P2", GP_KIND_TRAIN, 1, 1, 0, 0), 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "P2"), 2000);
    ck_assert_int_eq(t_submit(e, 10, "P1", GP_KIND_TRAIN, 1, 1, 0, 1000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 2000, 1, 1, &d);
    ck_assert_int_eq(t_fair(e, "P1"), 1000);
    ck_assert_int_eq(t_fair(e, "P2"), 1000);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 1);
    t_cycle(e, 3000, 1, 1, NULL);
    ck_assert_int_eq(t_state(e, 10), GP_STATE_RUNNING);
    ck_assert_int_eq(t_alloc(e, "P1"), 1000);
    ck_assert_int_eq(t_alloc(e, "P2"), 1000);
    assert_settled(e, 4000); /* no more evictions */
    gp_engine_free(e);
}
END_TEST

/* Defect 3. One 4-GPU node, one project, spread placement: 0.5, a gang of
 * 2 x 0.3, another 0.5, then one whole GPU (2.6 of 4 GPUs asked in all).
 * Consolidation moves one half once; the whole GPU starts; nothing is
 * evicted again. */
START_TEST(test_consolidation_never_loops) {
    gp_engine *e = engine_with(4, 1, GP_PLACE_SPREAD);
    t_queue(e, "p", "", 4, -1, 1);
    ck_assert_int_eq(t_submit(e, 1, "p", GP_KIND_TRAIN, 0.5, 1, 0, 0), 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_submit(e, 2, "p", GP_KIND_TRAIN, 0.3, 2, 0, 1), 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(t_submit(e, 3, "p", GP_KIND_TRAIN, 0.5, 1, 0, 2), 0);
    t_cycle(e, 2000, 1, 1, NULL);
    ck_assert_int_eq(t_submit(e, 4, "p", GP_KIND_TRAIN, 1, 1, 0, 3), 0);
    size_t evictions = 0;
    for (gp_time_ms t = 3000; t < 30000; t += 1000) {
        const gp_decision *d;
        size_t n = t_cycle(e, t, 1, 1, &d);
        evictions += t_count(d, n, GP_DECISION_EVICT, 0);
    }
    ck_assert_int_eq(t_state(e, 4), GP_STATE_RUNNING);
    ck_assert_uint_le(evictions, 1);
    for (uint64_t id = 1; id <= 3; id++)
        ck_assert_int_eq(t_state(e, id), GP_STATE_RUNNING);
    gp_engine_free(e);
}
END_TEST

/* Defect 4. A 4-GPU pool; g6 deserves 0 and holds all of it with one 4-GPU
 * workload; h7 deserves 2 and asks 2. Evicting g6 leaves it below its fair
 * share, but a victim is protected only down to min(deserved, fair share):
 * h7 gets its deserved GPUs. */
START_TEST(test_deserved_quota_is_guaranteed) {
    gp_engine *e = engine_with(4, 1, GP_PLACE_GPUPOOL);
    t_queue(e, "g6", "", 0, -1, 1);
    t_queue(e, "h7", "", 2, -1, 1);
    ck_assert_int_eq(t_submit(e, 1, "g6", GP_KIND_TRAIN, 4, 1, 0, 0), 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "g6"), 4000);
    ck_assert_int_eq(t_submit(e, 2, "h7", GP_KIND_TRAIN, 2, 1, 0, 1000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 2000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 1);
    t_cycle(e, 3000, 1, 1, NULL);
    ck_assert_int_eq(t_state(e, 2), GP_STATE_RUNNING);
    assert_settled(e, 4000); /* g6 cannot take it back: h7 is within deserved */
    gp_engine_free(e);
}
END_TEST

/* Between queues that are both over their deserved quota, fair share still
 * protects the victim: A deserves 1 and holds 1 more than that; B deserves
 * 1 and asks 2 more. Fair shares are 2 and 2 on 4 GPUs; A holds exactly its
 * fair share, so B waits. */
START_TEST(test_rebalancing_over_deserved_keeps_fair_share) {
    gp_engine *e = engine_with(4, 1, GP_PLACE_GPUPOOL);
    t_queue(e, "A", "", 1, -1, 1);
    t_queue(e, "B", "", 1, -1, 1);
    ck_assert_int_eq(t_submit(e, 1, "A", GP_KIND_TRAIN, 1, 2, 0, 0), 0);
    ck_assert_int_eq(t_submit(e, 2, "B", GP_KIND_TRAIN, 1, 2, 0, 0), 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_submit(e, 3, "B", GP_KIND_TRAIN, 1, 1, 0, 1000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 2000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    ck_assert_int_eq(t_state(e, 3), GP_STATE_PENDING);
    gp_engine_free(e);
}
END_TEST

/* A researcher borrows all 8 GPUs with one-GPU jobs asking for a minimum
 * runtime of a billion milliseconds; another department deserves 4 and asks
 * for 4. The minimum runtime never defeats a deserved quota. */
START_TEST(test_min_runtime_never_defeats_deserved_quota) {
    gp_engine *e = engine_with(8, 1, GP_PLACE_GPUPOOL);
    t_queue(e, "research", "", 0, -1, 1);
    t_queue(e, "r1", "research", 0, -1, 1);
    t_queue(e, "prod", "", 4, -1, 1);
    t_queue(e, "p1", "prod", 4, -1, 1);
    for (uint64_t id = 1; id <= 8; id++)
        submit_min_runtime(e, id, "r1", 1000000000, 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "r1"), 8000);
    for (uint64_t id = 11; id <= 14; id++)
        ck_assert_int_eq(t_submit(e, id, "p1", GP_KIND_TRAIN, 1, 1, 0, 1000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 2000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 4);
    t_cycle(e, 3000, 1, 1, NULL);
    ck_assert_int_eq(t_alloc(e, "p1"), 4000);
    gp_engine_free(e);
}
END_TEST

/* The minimum runtime a workload may claim is bounded by its queue's
 * min_runtime_max (ordinary rebalancing between queues over deserved). */
START_TEST(test_min_runtime_bounded_by_queue_max) {
    gp_engine *e = engine_with(4, 1, GP_PLACE_GPUPOOL);
    t_queue(e, "A", "", 0, -1, 1);
    gp_queue_spec q;
    gp_queue_spec_init(&q, "B", "");
    q.min_runtime_max = 60000;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, NULL, 0), 0);
    for (uint64_t id = 1; id <= 4; id++)
        submit_min_runtime(e, id, "B", 1000000000, 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_submit(e, 10, "A", GP_KIND_TRAIN, 1, 2, 0, 1000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 59999, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, 0), 0);
    n = t_cycle(e, 60000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 2);
    gp_engine_free(e);
}
END_TEST

/* Two borrowers with a 24-hour grace period that ignore the checkpoint
 * signal kept another department from its deserved GPU for as long as the
 * daemon waited for them: a reclaim's eviction carries the victim queue's
 * reclaim_grace_max, which the daemon keeps to. Preemption inside a project
 * leaves the workload's own grace. */
START_TEST(test_reclaim_bounds_grace) {
    gp_engine *e = engine_with(2, 1, GP_PLACE_GPUPOOL);
    t_queue(e, "A", "", 2, -1, 1);
    gp_queue_spec q;
    gp_queue_spec_init(&q, "B", "");
    ck_assert_int_eq(q.reclaim_grace_max, GP_RECLAIM_GRACE_MAX_DEFAULT);
    q.reclaim_grace_max = 5000;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, NULL, 0), 0);
    submit_min_runtime(e, 1, "B", 0, 0);
    submit_min_runtime(e, 2, "B", 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_submit(e, 10, "A", GP_KIND_TRAIN, 1, 1, 0, 1000), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 1000, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_RECLAIM), 1);
    for (size_t i = 0; i < n; i++)
        if (d[i].type == GP_DECISION_EVICT)
            ck_assert_int_eq(d[i].grace_max, 5000);
    gp_engine_free(e);
    /* A negative bound is refused, naming the field. */
    e = engine_with(2, 1, GP_PLACE_GPUPOOL);
    q.reclaim_grace_max = -1;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "reclaim_grace_max"));
    gp_engine_free(e);
}
END_TEST

/* A queue keeps its interactive bounds for the daemon (none by default) and
 * refuses negative ones, naming the field. */
START_TEST(test_session_bounds) {
    gp_engine *e = engine_with(1, 1, GP_PLACE_GPUPOOL);
    gp_queue_spec q;
    gp_queue_spec_init(&q, "p", "");
    ck_assert_int_eq(q.idle_gpu_timeout, 0);
    ck_assert_int_eq(q.max_session_length, 0);
    q.idle_gpu_timeout = 30000;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, NULL, 0), 0);
    char err[GP_ERR_MAX] = "";
    q.max_session_length = -1;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "max_session_length"));
    q.max_session_length = 0;
    q.idle_gpu_timeout = -1;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "idle_gpu_timeout"));
    gp_engine_free(e);
}
END_TEST

/* The default bound is ten minutes. */
START_TEST(test_min_runtime_max_defaults_to_ten_minutes) {
    gp_queue_spec q;
    gp_queue_spec_init(&q, "x", "");
    ck_assert_int_eq(q.min_runtime_max, 600000);
}
END_TEST

/* Defect 5. Pool 8; departments A and B deserve 4 each; B's only project
 * deserves nothing and is limited to 2. B can use no more than 2, so its fair share is 2 and A's 6.
 */
START_TEST(test_department_share_bounded_by_children_limits) {
    gp_engine *e = engine_with(8, 0, GP_PLACE_GPUPOOL);
    t_queue(e, "A", "", 4, -1, 1);
    t_queue(e, "a1", "A", 4, -1, 1);
    t_queue(e, "B", "", 4, -1, 1);
    t_queue(e, "b1", "B", 0, 2, 1);
    t_want(e, 1, "a1", 100);
    t_want(e, 2, "b1", 100);
    t_cycle(e, 0, 0, 0, NULL);
    ck_assert_int_eq(t_fair(e, "B"), 2000);
    ck_assert_int_eq(t_fair(e, "b1"), 2000);
    ck_assert_int_eq(t_fair(e, "A"), 6000);
    gp_engine_free(e);
}
END_TEST

/* Defect 6. A gang of 9 whole GPUs on an 8-GPU pool is refused at submit,
 * and so is a request above a limit of its project or department. */
START_TEST(test_never_runnable_refused_at_submit) {
    gp_engine *e = engine_with(0, 1, GP_PLACE_GPUPOOL);
    t_node(e, "n1", 4, "H100", 80, "");
    t_node(e, "n2", 4, "H100", 80, "");
    t_queue(e, "D", "", 0, 3, 1);
    t_queue(e, "p", "D", 0, -1, 1);
    t_queue(e, "q", "", 0, -1, 1);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "q");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    w.tasks = 9;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "cannot run on this pool"), "%s", err);
    w.tasks = 8;
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), 0);
    gp_workload_spec_init(&w, 2, "p");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 2;
    w.tasks = 2;
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strstr(err, "limit") && strstr(err, "D"), "%s", err);
    gp_engine_free(e);
}
END_TEST

/* ... and when the pool shrinks under a waiting gang, it says so. */
START_TEST(test_pool_shrinks_says_cannot_run) {
    gp_engine *e = engine_with(0, 1, GP_PLACE_GPUPOOL);
    t_node(e, "n1", 4, "H100", 80, "");
    t_node(e, "n2", 4, "H100", 80, "");
    t_queue(e, "q", "", 0, -1, 1);
    ck_assert_int_eq(t_submit(e, 1, "q", GP_KIND_TRAIN, 1, 1, 0, 0), 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(t_submit(e, 2, "q", GP_KIND_TRAIN, 1, 8, 0, 0), 0);
    t_cycle(e, 1000, 1, 1, NULL);
    ck_assert_int_eq(gp_engine_node_remove(e, "n2"), 0);
    t_cycle(e, 2000, 1, 1, NULL);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 2, why, sizeof why), GP_WAIT_NO_NODE);
    ck_assert_msg(strstr(why, "cannot run on this pool"), "%s", why);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_overcommit_rule_is_continuous);
    tcase_add_test(tc, test_reclaim_through_a_limited_parent);
    tcase_add_test(tc, test_consolidation_never_loops);
    tcase_add_test(tc, test_deserved_quota_is_guaranteed);
    tcase_add_test(tc, test_rebalancing_over_deserved_keeps_fair_share);
    tcase_add_test(tc, test_min_runtime_never_defeats_deserved_quota);
    tcase_add_test(tc, test_min_runtime_bounded_by_queue_max);
    tcase_add_test(tc, test_min_runtime_max_defaults_to_ten_minutes);
    tcase_add_test(tc, test_reclaim_bounds_grace);
    tcase_add_test(tc, test_session_bounds);
    tcase_add_test(tc, test_department_share_bounded_by_children_limits);
    tcase_add_test(tc, test_never_runnable_refused_at_submit);
    tcase_add_test(tc, test_pool_shrinks_says_cannot_run);
}

GP_TEST_MAIN("engine/guarantee", add_tests)
