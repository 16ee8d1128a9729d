/*
 * test-nodes.c — the pool model under change: a removed node's workloads go
 * back to the queue and are reported; a node change cannot take away what is
 * bound; a cordoned node takes nothing new.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

START_TEST(test_removed_node_requeues_and_reports) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_node(e, "n2", 2, "H100", 80, "");
    t_queue(e, "p", "", 4, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 2, 0, 0); /* a gang of 2 x 1 GPU */
    const gp_decision *d;
    t_cycle(e, 0, 1, 1, &d);
    const char *node = d[0].tasks[0].node;
    char gone[64];
    strcpy(gone, node);
    ck_assert_int_eq(gp_engine_node_remove(e, gone), 0);
    ck_assert_int_eq(t_state(e, 1), GP_STATE_PENDING);
    ck_assert_int_eq(t_alloc(e, "p"), 0);
    size_t n = t_cycle(e, 1, 0, 0, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_EVICT, GP_EVICT_NODE_GONE), 1);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1); /* on the other node */
    ck_assert_int_eq(gp_engine_node_remove(e, "nope"), GP_ENOENT);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_change_cannot_take_bound_gpus) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    const gp_decision *d;
    t_cycle(e, 0, 1, 1, &d);
    gp_node_spec n;
    gp_node_spec_init(&n, "n1");
    n.cpu_milli = 64000;
    n.mem_bytes = 512 * GIB;
    n.ngpus = 0;
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), GP_EBUSY);
    ck_assert_ptr_nonnull(strstr(err, "gpus["));
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.ngpus, 2);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_cordoned_node_takes_nothing) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    gp_node_spec n;
    gp_node_spec_init(&n, "n1");
    n.cpu_milli = 64000;
    n.mem_bytes = 512 * GIB;
    n.ngpus = 2;
    for (int i = 0; i < 2; i++) {
        strcpy(n.gpus[i].model, "H100");
        n.gpus[i].mem_bytes = 80 * GIB;
    }
    n.schedulable = 0;
    ck_assert_int_eq(gp_engine_node_set(e, &n, NULL, 0), 0);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    const gp_decision *d;
    size_t cnt = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(cnt, 0);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_removed_node_requeues_and_reports);
    tcase_add_test(tc, test_change_cannot_take_bound_gpus);
    tcase_add_test(tc, test_cordoned_node_takes_nothing);
}

GP_TEST_MAIN("engine/nodes", add_tests)
