/*
 * test-alloc-fail.c — the allocation-failure sweep: every allocation the
 * engine makes during a public operation fails once, in turn.
 *
 * For each operation the test builds the same representative engine (nodes in
 * two domains, a queue tree, whole-GPU gangs, fractions, running and evicting
 * workloads, pending ones with reasons), then for k = 1, 2, ... makes the k-th
 * allocation of the operation fail through the allocator hook of
 * gp_engine_config. After each failure the invariant checker must pass; an
 * operation that promises "on error, nothing is changed" must return
 * GP_ENOMEM and leave a canonical dump of the engine as it was (or, where it
 * needed the memory only for something it can do without, succeed with the
 * result it gives without failures); and the same
 * operation retried without failures must give the answer it gives on an
 * engine that never saw one. The sweep ends when the operation completes
 * with no failure injected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gptest.h"
#include "helpers.h"

/* An allocator that counts allocations and fails the fail_at-th one. */
typedef struct failer {
    long count;   /* allocations so far */
    long fail_at; /* 0: none fails */
    int failed;   /* an allocation failed since this was last cleared */
} failer;

static int should_fail(failer *f) {
    f->count++;
    if (f->fail_at != 0 && f->count == f->fail_at) {
        f->failed = 1;
        return 1;
    }
    return 0;
}

static void *f_malloc(void *user, size_t n) {
    return should_fail(user) ? NULL : malloc(n);
}

static void *f_calloc(void *user, size_t n, size_t size) {
    return should_fail(user) ? NULL : calloc(n, size);
}

static void *f_realloc(void *user, void *p, size_t n) {
    return should_fail(user) ? NULL : realloc(p, n);
}

static void f_free(void *user, void *p) {
    (void)user;
    free(p);
}

static failer fl;
static const gp_allocator failing = {f_malloc, f_calloc, f_realloc, f_free, &fl};

#define MAX_ID 64

/* Writes everything the public API shows of e into a new string (caller
 * frees): nodes, queues, workloads with bindings and pending reasons,
 * warnings. Two engines in the same state give the same text. */
static char *dump(gp_engine *e) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < gp_engine_node_count(e); i++) {
        gp_node_info n;
        ck_assert_int_eq(gp_engine_node_at(e, i, &n), 0);
        fprintf(f, "node %s %s %d %ld %ld %ld %ld\n", n.name, n.domain, n.schedulable,
                (long)n.cpu_milli, (long)n.mem_bytes, (long)n.cpu_used, (long)n.mem_used);
        for (int g = 0; g < n.ngpus; g++)
            fprintf(f, " gpu %s %s %d %d %ld %d %d\n", n.gpus[g].uuid, n.gpus[g].model,
                    n.gpus[g].mig, n.gpus[g].used_milli, (long)n.gpus[g].used_mem, n.gpus[g].slices,
                    n.gpus[g].taken);
    }
    for (size_t i = 0; i < gp_engine_queue_count(e); i++) {
        gp_queue_info q;
        ck_assert_int_eq(gp_engine_queue_at(e, i, &q), 0);
        fprintf(f, "queue %s %s %d %d %d %ld %ld %d\n", q.name, q.parent, q.depth, q.leaf,
                q.priority, (long)q.pending, (long)q.running, q.overcommitted);
        for (int r = 0; r < GP_RES_COUNT; r++)
            fprintf(f, " %ld %ld %ld %ld %ld %ld\n", (long)q.deserved.v[r], (long)q.limit.v[r],
                    (long)q.fair_share.v[r], (long)q.guaranteed.v[r], (long)q.allocated.v[r],
                    (long)q.requested.v[r]);
    }
    for (uint64_t id = 1; id <= MAX_ID; id++) {
        gp_workload_info w;
        if (gp_engine_workload_get(e, id, &w) != 0)
            continue;
        fprintf(f, "wl %lu %s %d %d %d %d %ld %d\n", (unsigned long)id, w.queue, (int)w.state,
                (int)w.wait, w.preemptible, w.bound_tasks, (long)w.started, w.evictions);
        for (int32_t t = 0; t < w.bound_tasks; t++) {
            gp_task_binding b;
            if (gp_engine_workload_binding(e, id, t, &b) != 0)
                continue;
            fprintf(f, " task %d %s", t, b.node);
            for (int32_t s = 0; s < b.nslices; s++)
                fprintf(f, " %d/%d/%ld/%d", b.slices[s].gpu, b.slices[s].milli,
                        (long)b.slices[s].mem, b.slices[s].mig_slot);
            fputc('\n', f);
        }
        char why[320] = "";
        int rc = gp_engine_pending_reason(e, id, why, sizeof why);
        fprintf(f, " reason %d %s\n", rc, why);
    }
    for (size_t i = 0; i < gp_engine_warning_count(e); i++)
        fprintf(f, "warning %s\n", gp_engine_warning(e, i));
    /* The shapes in use, through the figure measured against them, and
     * whether the engine knows GPU model B200, which no node has. */
    double idle = 0, frag = gp_engine_fragmentation(e, &idle);
    fprintf(f, "fragmentation %.6f %.0f\n", frag, idle);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 0, "a");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    w.req.nmodels = 1;
    snprintf(w.req.models[0], sizeof w.req.models[0], "B200");
    char err[GP_ERR_MAX] = "";
    int rc = gp_engine_submit_check(e, &w, err, sizeof err);
    fprintf(f, "B200 %d %s\n", rc, err);
    fclose(f);
    return buf;
}

static void check_books(gp_engine *e, const char *op, long k) {
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "%s, allocation %ld fails: %s", op, k,
                  err);
}

static gp_workload_spec whole(uint64_t id, const char *queue, int gpus, int tasks) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, queue);
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = gpus;
    w.tasks = tasks;
    return w;
}

static gp_workload_spec fraction(uint64_t id, const char *queue, int milli) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, queue);
    w.req.gpu = GP_GPU_FRACTION;
    w.req.gpu_milli = milli;
    return w;
}

static void submit(gp_engine *e, gp_workload_spec w) {
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_submit(e, &w, err, sizeof err) == 0, "submit %lu: %s",
                  (unsigned long)w.id, err);
}

/*
 * The representative state: three nodes of 4 GPUs in two domains; queues
 * org/{a,b} and c; in b, one-GPU training that fills most of the pool and a
 * gang; in c, fractions; then a gang of a's that reclaims b's GPUs, whose
 * victims stay EVICTING, and work that waits with a reason.
 */
static gp_engine *build(void) {
    fl.fail_at = 0;
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.check_invariants = 1;
    c.aging_interval = 0;
    c.alloc = &failing;
    gp_engine *e = t_open(&c);
    t_node(e, "n1", 4, "H100", 80, "d1");
    t_node(e, "n2", 4, "H100", 80, "d1");
    t_node(e, "n3", 4, "A100", 40, "d2");
    t_queue(e, "org", "", 8, -1, 1);
    t_queue(e, "a", "org", 6, -1, 1);
    t_queue(e, "b", "org", 2, -1, 1);
    t_queue(e, "c", "", 4, -1, 1);
    t_queue(e, "spare", "", 0, -1, 1);
    for (uint64_t id = 1; id <= 6; id++)
        submit(e, whole(id, "b", 1, 1));
    submit(e, whole(7, "b", 1, 2));
    submit(e, fraction(8, "c", 500));
    submit(e, fraction(9, "c", 250));
    t_cycle(e, 1000, 1, 1, NULL);
    submit(e, whole(10, "a", 2, 2));
    submit(e, whole(11, "a", 1, 1));
    t_cycle(e, 2000, 1, 0, NULL);    /* evictions stay EVICTING */
    submit(e, whole(12, "c", 4, 3)); /* three free nodes: waits */
    submit(e, fraction(13, "c", 750));
    t_cycle(e, 3000, 1, 0, NULL);
    return e;
}

/* One operation under test; returns its code. */
typedef int (*op_fn)(gp_engine *e);

static int op_submit_gang(gp_engine *e) {
    gp_workload_spec w = whole(20, "a", 1, 3);
    w.same_domain = 1;
    return gp_engine_submit(e, &w, NULL, 0);
}

static int op_submit_fraction(gp_engine *e) {
    gp_workload_spec w = fraction(21, "c", 300);
    return gp_engine_submit(e, &w, NULL, 0);
}

static int op_cycle(gp_engine *e) {
    const gp_decision *d;
    size_t n;
    return gp_engine_cycle(e, 4000, &d, &n, NULL);
}

static int op_node_add(gp_engine *e) {
    gp_node_spec n;
    t_node_spec(&n, "n4", 2, "L40S", 48, "d3");
    return gp_engine_node_set(e, &n, NULL, 0);
}

/* The twelfth node, which makes the name map grow (it aborted when that
 * failed, as the daemon's recovery adding an engine's first node did). The
 * eight after the three of build() are added with no failure counted. Not
 * atomic: they stay. */
static int op_node_add_grows(gp_engine *e) {
    long fail_at = fl.fail_at, before = fl.count;
    fl.fail_at = 0;
    char name[16];
    gp_node_spec n;
    for (int i = 4; i <= 11; i++) {
        snprintf(name, sizeof name, "n%d", i);
        t_node(e, name, 1, "L40S", 48, "d3");
    }
    if (fail_at)
        fl.fail_at = fail_at + (fl.count - before);
    t_node_spec(&n, "n12", 1, "L40S", 48, "d3");
    return gp_engine_node_set(e, &n, NULL, 0);
}

/* GPUs of n1 taken outside the pool while its GPUs are bound. */
static int op_node_taken(gp_engine *e) {
    gp_node_spec n;
    t_node_spec(&n, "n1", 4, "H100", 80, "d1");
    n.gpus_taken = 3;
    return gp_engine_node_set(e, &n, NULL, 0);
}

static int op_node_remove(gp_engine *e) {
    return gp_engine_node_remove(e, "n1");
}

static int op_queue_add(gp_engine *e) {
    gp_queue_spec q;
    gp_queue_spec_init(&q, "d", "org");
    q.quota[GP_RES_GPU].deserved = 1000;
    return gp_engine_queue_set(e, &q, NULL, 0);
}

/* The twelfth queue, which makes the name map grow (it once aborted when
 * that failed; so did an engine's first queue). The eleven before it are
 * added with no failure counted. Not atomic: they stay. */
static int op_queue_add_grows(gp_engine *e) {
    long fail_at = fl.fail_at, before = fl.count;
    fl.fail_at = 0;
    char name[16];
    for (int i = 1; i <= 6; i++) {
        snprintf(name, sizeof name, "g%d", i);
        t_queue(e, name, "org", 0, -1, 1);
    }
    if (fail_at)
        fl.fail_at = fail_at + (fl.count - before);
    gp_queue_spec q;
    gp_queue_spec_init(&q, "g7", "org");
    return gp_engine_queue_set(e, &q, NULL, 0);
}

static int op_queue_move(gp_engine *e) {
    gp_queue_spec q;
    gp_queue_spec_init(&q, "c", "org");
    q.quota[GP_RES_GPU].deserved = 2000;
    return gp_engine_queue_set(e, &q, NULL, 0);
}

static int op_queue_remove(gp_engine *e) {
    return gp_engine_queue_remove(e, "spare");
}

static int op_cancel(gp_engine *e) {
    return gp_engine_cancel(e, 10);
}

static int op_requeue(gp_engine *e) {
    return gp_engine_requeue(e, 8);
}

static int op_released(gp_engine *e) {
    for (uint64_t id = 1; id <= 7; id++) {
        gp_workload_info w;
        if (gp_engine_workload_get(e, id, &w) == 0 && w.state == GP_STATE_EVICTING)
            return gp_engine_released(e, id, 5000);
    }
    return GP_ENOENT;
}

static int op_finished(gp_engine *e) {
    return gp_engine_finished(e, 9);
}

static int op_reason(gp_engine *e) {
    char why[320];
    return gp_engine_pending_reason(e, 12, why, sizeof why);
}

static int op_by_reason(gp_engine *e) {
    int64_t counts[GP_WAIT_COUNT];
    gp_engine_pending_by_reason(e, counts);
    return 0;
}

static int op_info(gp_engine *e) {
    gp_workload_info w;
    return gp_engine_workload_get(e, 13, &w);
}

/* Shapes that name a GPU model the engine knows and one it does not: a
 * failure takes in neither the shapes nor the model. */
static int op_shapes(gp_engine *e) {
    gp_shape s[2] = {{.gpus = 1, .gpu_milli = GP_MILLI, .popularity = 3, .nmodels = 2},
                     {.gpus = 0, .gpu_milli = 500, .popularity = 1}};
    snprintf(s[0].models[0], sizeof s[0].models[0], "H100");
    snprintf(s[0].models[1], sizeof s[0].models[1], "B200");
    return gp_engine_set_shapes(e, s, 2);
}

/*
 * Sweeps op: for k = 1, 2, ... the k-th allocation of op fails. atomic: the
 * API promises that a failure changes nothing.
 */
static void sweep(const char *name, op_fn op, int atomic) {
    gp_engine *e = build();
    char *before = dump(e);
    long start = fl.count;
    int want = op(e);
    char *after_ok = dump(e);
    gp_engine_free(e);
    for (long k = 1;; k++) {
        e = build();
        char *base = dump(e);
        ck_assert_str_eq(base, before);
        free(base);
        fl.failed = 0;
        start = fl.count;
        fl.fail_at = start + k;
        int rc = op(e);
        fl.fail_at = 0;
        if (!fl.failed) {
            ck_assert_msg(rc == want, "%s: %d without failures, %d before", name, rc, want);
            gp_engine_free(e);
            break;
        }
        check_books(e, name, k);
        if (atomic && rc == want) {
            /* It needed that allocation only for something it can do
             * without (learning request shapes): the result is the same. */
            char *after = dump(e);
            ck_assert_msg(strcmp(after, after_ok) == 0,
                          "%s, allocation %ld fails: succeeds with another result", name, k);
            free(after);
        } else if (atomic) {
            ck_assert_msg(rc == GP_ENOMEM, "%s, allocation %ld fails: returned %d", name, k, rc);
            char *after = dump(e);
            ck_assert_msg(strcmp(after, before) == 0, "%s, allocation %ld fails: state changed",
                          name, k);
            free(after);
            /* The engine still works: the operation now succeeds as before. */
            ck_assert_int_eq(op(e), want);
            char *again = dump(e);
            ck_assert_msg(strcmp(again, after_ok) == 0, "%s, allocation %ld fails: retry differs",
                          name, k);
            free(again);
            check_books(e, name, k);
        } else {
            ck_assert_msg(rc == 0 || rc == GP_ENOMEM, "%s, allocation %ld fails: returned %d", name,
                          k, rc);
        }
        gp_engine_free(e);
    }
    free(before);
    free(after_ok);
}

/* Every operation swept; atomic: it promises to change nothing on error. */
static const struct {
    const char *name;
    op_fn op;
    int atomic;
} ops[] = {
    {"submit gang", op_submit_gang, 1},
    {"submit fraction", op_submit_fraction, 1},
    {"cycle", op_cycle, 0},
    {"node add", op_node_add, 1},
    {"node add, map grows", op_node_add_grows, 0},
    {"node taken", op_node_taken, 1},
    {"node remove", op_node_remove, 1},
    {"queue add", op_queue_add, 1},
    {"queue add, map grows", op_queue_add_grows, 0},
    {"queue move", op_queue_move, 1},
    {"queue remove", op_queue_remove, 1},
    {"cancel", op_cancel, 1},
    {"requeue", op_requeue, 1},
    {"released", op_released, 1},
    {"finished", op_finished, 1},
    {"pending reason", op_reason, 0},
    {"pending by reason", op_by_reason, 0},
    {"workload info", op_info, 0},
    {"set shapes", op_shapes, 1},
};

START_TEST(test_sweep) {
    sweep(ops[_i].name, ops[_i].op, ops[_i].atomic);
}
END_TEST

/* Adds the workloads of d[0..n) evicted because their node went to seen[]. */
static void count_lost(const gp_decision *d, size_t n, int seen[MAX_ID + 1]) {
    for (size_t i = 0; i < n; i++)
        if (d[i].type == GP_DECISION_EVICT && d[i].reason == GP_EVICT_NODE_GONE)
            seen[d[i].workload]++;
}

/* A cycle that runs out of memory still hands out the decisions it made, and
 * the next cycle reports each workload that lost its node exactly once. */
START_TEST(test_cycle_reports_lost_node_once) {
    int want[MAX_ID + 1] = {0};
    gp_engine *e = build();
    ck_assert_int_eq(gp_engine_node_remove(e, "n1"), 0);
    const gp_decision *d;
    size_t n;
    ck_assert_int_eq(gp_engine_cycle(e, 4000, &d, &n, NULL), 0);
    count_lost(d, n, want);
    gp_engine_free(e);
    int lost = 0;
    for (int id = 0; id <= MAX_ID; id++)
        lost += want[id];
    ck_assert_int_ge(lost, 2);
    for (long k = 1;; k++) {
        int seen[MAX_ID + 1] = {0};
        e = build();
        ck_assert_int_eq(gp_engine_node_remove(e, "n1"), 0);
        fl.failed = 0;
        fl.fail_at = fl.count + k;
        int rc = gp_engine_cycle(e, 4000, &d, &n, NULL);
        fl.fail_at = 0;
        count_lost(d, n, seen);
        int failed = fl.failed;
        check_books(e, "cycle after a node removal", k);
        if (failed) {
            ck_assert(rc == 0 || rc == GP_ENOMEM);
            ck_assert_int_eq(gp_engine_cycle(e, 5000, &d, &n, NULL), 0);
            count_lost(d, n, seen);
        }
        for (int id = 0; id <= MAX_ID; id++)
            ck_assert_msg(seen[id] == want[id],
                          "allocation %ld fails: workload %d reported %d times", k, id, seen[id]);
        gp_engine_free(e);
        if (!failed)
            break;
    }
}
END_TEST

/* An allocator with a function missing is refused, naming the field. */
START_TEST(test_allocator_incomplete) {
    gp_allocator a = failing;
    a.realloc = NULL;
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.alloc = &a;
    gp_engine *e = NULL;
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_engine_open(&c, &e, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_null(e);
    ck_assert_msg(strstr(err, "alloc"), "%s", err);
}
END_TEST

/* Opening the engine sweeps too: each failure gives GP_ENOMEM and no engine. */
START_TEST(test_open) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.alloc = &failing;
    for (long k = 1;; k++) {
        gp_engine *e = NULL;
        fl.failed = 0;
        fl.fail_at = fl.count + k;
        int rc = gp_engine_open(&c, &e, NULL, 0);
        fl.fail_at = 0;
        if (!fl.failed) {
            ck_assert_int_eq(rc, 0);
            gp_engine_free(e);
            break;
        }
        ck_assert_int_eq(rc, GP_ENOMEM);
        ck_assert_ptr_null(e);
    }
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_allocator_incomplete);
    tcase_add_test(tc, test_open);
    tcase_add_loop_test(tc, test_sweep, 0, (int)(sizeof ops / sizeof ops[0]));
    tcase_add_test(tc, test_cycle_reports_lost_node_once);
}

GP_TEST_MAIN("engine/alloc-fail", add_tests)
