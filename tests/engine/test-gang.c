/*
 * test-gang.c — gangs start all together or not at all, elastic gangs take
 * what fits between min and max, "same domain" keeps a gang in one topology
 * domain, and a gang prefers the fewest nodes.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

static gp_workload_spec gang(uint64_t id, int tasks, int min_tasks, int gpus, int same_domain) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, "p");
    w.tasks = tasks;
    w.min_tasks = min_tasks;
    w.same_domain = same_domain;
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = gpus;
    return w;
}

START_TEST(test_all_or_nothing) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 4, "H100", 80, "");
    t_node(e, "n2", 4, "H100", 80, "");
    t_queue(e, "p", "", 8, -1, 1);
    t_submit(e, 1, "p", GP_KIND_INTERACTIVE, 2, 1, 0, 0); /* 2 GPUs taken */
    t_cycle(e, 0, 1, 1, NULL);
    gp_workload_spec w = gang(2, 4, 0, 2, 0); /* 4 x 2 GPUs: needs all 8 */
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 1, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 0);
    gp_workload_info wi;
    ck_assert_int_eq(gp_engine_workload_get(e, 2, &wi), 0);
    ck_assert_int_eq(wi.bound_tasks, 0);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 2, why, sizeof why), GP_WAIT_GANG);
    ck_assert_ptr_nonnull(strstr(why, "3 of the 4 tasks"));
    ck_assert_int_eq(gp_engine_finished(e, 1), 0);
    n = t_cycle(e, 2, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 1);
    ck_assert_int_eq(d[0].ntasks, 4);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_elastic_takes_what_fits) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 4, "H100", 80, "");
    t_queue(e, "p", "", 4, -1, 1);
    gp_workload_spec w = gang(1, 8, 2, 1, 0);
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(d[0].ntasks, 4);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_same_domain_required) {
    gp_engine *e = t_engine();
    t_node(e, "a1", 2, "H100", 80, "rackA");
    t_node(e, "b1", 2, "H100", 80, "rackB");
    t_node(e, "b2", 2, "H100", 80, "rackB");
    t_queue(e, "p", "", 6, -1, 1);
    gp_workload_spec w = gang(1, 4, 0, 1, 1);
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    const gp_decision *d;
    size_t n = t_cycle(e, 0, 1, 1, &d);
    ck_assert_uint_eq(n, 1);
    for (int t = 0; t < 4; t++)
        ck_assert_msg(d[0].tasks[t].node[0] == 'b', "task %d on %s", t, d[0].tasks[t].node);
    /* Another 4 in one domain cannot fit now (rackA has 2). */
    w = gang(2, 4, 0, 1, 1);
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    n = t_cycle(e, 1, 1, 1, &d);
    ck_assert_uint_eq(t_count(d, n, GP_DECISION_BIND, 0), 0);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_gang_prefers_fewest_nodes) {
    gp_engine *e = t_engine();
    for (int i = 0; i < 4; i++) {
        char name[8] = "n0";
        name[1] = (char)('0' + i);
        t_node(e, name, 8, "H100", 80, "");
    }
    t_queue(e, "p", "", 32, -1, 1);
    gp_workload_spec w = gang(1, 8, 0, 1, 0);
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    const gp_decision *d;
    t_cycle(e, 0, 1, 1, &d);
    for (int t = 1; t < 8; t++)
        ck_assert_str_eq(d[0].tasks[t].node, d[0].tasks[0].node);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_all_or_nothing);
    tcase_add_test(tc, test_elastic_takes_what_fits);
    tcase_add_test(tc, test_same_domain_required);
    tcase_add_test(tc, test_gang_prefers_fewest_nodes);
}

GP_TEST_MAIN("engine/gang", add_tests)
