/*
 * test-reasons.c — every pending workload carries a reason a researcher can
 * act on, as a sentence and as a code that metrics count.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

START_TEST(test_queue_limit_sentence) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 16, "H100", 80, "");
    t_queue(e, "nlp", "", 4, 8, 1);
    for (uint64_t id = 1; id <= 3; id++)
        t_submit(e, id, "nlp", GP_KIND_TRAIN, 4, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 3, why, sizeof why), GP_WAIT_QUEUE_LIMIT);
    ck_assert_str_eq(why,
                     "project nlp is at its limit of 8 GPUs (it holds 8 GPUs); an administrator "
                     "can raise it");
    /* The figures a front end words its remedy from. */
    gp_pending_figures f;
    ck_assert_int_eq(gp_engine_pending_figures(e, 3, &f), GP_WAIT_QUEUE_LIMIT);
    ck_assert_int_eq(f.wait, GP_WAIT_QUEUE_LIMIT);
    ck_assert_int_eq(f.resource, GP_RES_GPU);
    ck_assert_str_eq(f.queue, "nlp");
    ck_assert_int_eq(f.queue_is_department, 0);
    ck_assert_int_eq(gp_engine_pending_figures(e, 99, &f), GP_ENOENT);
    ck_assert_int_eq(gp_engine_pending_figures(e, 1, &f), GP_WAIT_NONE);
    ck_assert_int_eq(f.resource, -1);
    int64_t counts[GP_WAIT_COUNT];
    gp_engine_pending_by_reason(e, counts);
    ck_assert_int_eq(counts[GP_WAIT_QUEUE_LIMIT], 1);
    ck_assert_str_eq(gp_wait_name(GP_WAIT_QUEUE_LIMIT), "queue_limit");
    gp_engine_free(e);
}
END_TEST

START_TEST(test_department_limit_named) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 16, "H100", 80, "");
    t_queue(e, "research", "", 0, 2, 1);
    t_queue(e, "nlp", "research", 0, -1, 1);
    t_submit(e, 1, "nlp", GP_KIND_TRAIN, 2, 1, 0, 0);
    t_submit(e, 2, "nlp", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 2, why, sizeof why), GP_WAIT_QUEUE_LIMIT);
    ck_assert_str_eq(why, "department research is at its limit of 2 GPUs (it holds 2 GPUs); an "
                          "administrator can raise it");
    gp_pending_figures f;
    ck_assert_int_eq(gp_engine_pending_figures(e, 2, &f), GP_WAIT_QUEUE_LIMIT);
    ck_assert_str_eq(f.queue, "research");
    ck_assert_int_eq(f.queue_is_department, 1);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_new_and_no_node_and_not_pending) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    w.req.cpu_milli = 128000; /* more CPU than any node */
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "cannot run on this pool: no node could ever hold one"));
    /* Accepted while a big node is there; when it goes, the reason says so. */
    gp_node_spec big;
    gp_node_spec_init(&big, "big");
    big.cpu_milli = 256000;
    big.mem_bytes = 512 * GIB;
    ck_assert_int_eq(gp_engine_node_set(e, &big, NULL, 0), 0);
    w.req.gpu = GP_GPU_NONE;
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 1, why, sizeof why), GP_WAIT_NEW);
    ck_assert_int_eq(gp_engine_node_remove(e, "big"), 0);
    t_cycle(e, 0, 1, 1, NULL);
    ck_assert_int_eq(gp_engine_pending_reason(e, 1, why, sizeof why), GP_WAIT_NO_NODE);
    ck_assert_ptr_nonnull(strstr(why, "cannot run on this pool: no node could ever hold one"));
    t_submit(e, 2, "p", GP_KIND_TRAIN, 1, 1, 0, 0);
    t_cycle(e, 1, 1, 1, NULL);
    ck_assert_int_eq(gp_engine_pending_reason(e, 2, why, sizeof why), GP_WAIT_NONE);
    ck_assert_str_eq(why, "not pending: running");
    ck_assert_int_eq(gp_engine_pending_reason(e, 99, why, sizeof why), GP_ENOENT);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_whole_gpus_fragmented_across_nodes) {
    gp_engine *e = t_engine();
    t_node(e, "a3", 2, "H100", 80, "");
    t_node(e, "a4", 2, "H100", 80, "");
    t_queue(e, "p", "", 4, -1, 1);
    /* One inference gang holding one GPU on each node. */
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.kind = GP_KIND_INFERENCE;
    w.tasks = 2;
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    gp_task_binding b[2] = {{.node = "a3", .nslices = 1}, {.node = "a4", .nslices = 1}};
    for (int t = 0; t < 2; t++)
        b[t].slices[0] = (gp_slice){.gpu = 0, .milli = 1000, .mem = 80 * GIB, .mig_slot = -1};
    char err[GP_ERR_MAX];
    ck_assert_msg(gp_engine_restore(e, &w, 2, b, 0, err, sizeof err) == 0, "%s", err);
    t_submit(e, 2, "p", GP_KIND_INFERENCE, 2, 1, 0, 1);
    t_cycle(e, 1, 1, 1, NULL);
    char why[256];
    ck_assert_int_eq(gp_engine_pending_reason(e, 2, why, sizeof why), GP_WAIT_FRAGMENTED);
    ck_assert_str_eq(why, "no node has 2 whole GPUs free; the most on one node is 1 on node a3");
    gp_engine_free(e);
}
END_TEST

/* An interactive workload waiting behind its own project's training work
 * is told that a higher priority preempts it. */
START_TEST(test_interactive_behind_own_training_says_priority) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 2, "H100", 80, "");
    t_queue(e, "p", "", 2, -1, 1);
    t_submit(e, 1, "p", GP_KIND_TRAIN, 1, 2, 0, 0);
    t_cycle(e, 0, 1, 1, NULL);
    t_submit(e, 2, "p", GP_KIND_INTERACTIVE, 1, 1, 0, 1);
    t_cycle(e, 1000, 1, 1, NULL);
    char why[320];
    ck_assert_int_eq(gp_engine_pending_reason(e, 2, why, sizeof why), GP_WAIT_NO_FIT);
    ck_assert_msg(strstr(why, "project p's own training workloads hold 2 GPUs") &&
                      strstr(why, "a higher priority than theirs (0) would preempt them"),
                  "%s", why);
    gp_pending_figures f;
    ck_assert_int_eq(gp_engine_pending_figures(e, 2, &f), GP_WAIT_NO_FIT);
    ck_assert_int_eq(f.own_preemptible_milli, 2000);
    ck_assert_int_eq(f.priority, 0);
    gp_engine_free(e);
}
END_TEST

/* A training workload submitted with --no-preempt is not told that "train
 * workloads run only inside deserved quota" (ordinary training borrows). */
START_TEST(test_no_preempt_train_reason_names_the_flag) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 4, "H100", 80, "");
    t_queue(e, "p", "", 1, -1, 1);
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "p");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 2;
    w.preemptible = 0;
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    t_cycle(e, 0, 1, 1, NULL);
    char why[320];
    ck_assert_int_eq(gp_engine_pending_reason(e, 1, why, sizeof why), GP_WAIT_DESERVED);
    ck_assert_msg(!strstr(why, "train workloads"), "%s", why);
    ck_assert_msg(strstr(why, "non-preemptible"), "%s", why);
    gp_pending_figures f;
    ck_assert_int_eq(gp_engine_pending_figures(e, 1, &f), GP_WAIT_DESERVED);
    ck_assert_int_eq(f.kind, GP_KIND_TRAIN);
    ck_assert_int_eq(f.preemptible, 0);
    ck_assert_int_eq(f.resource, GP_RES_GPU);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_interactive_behind_own_training_says_priority);
    tcase_add_test(tc, test_no_preempt_train_reason_names_the_flag);
    tcase_add_test(tc, test_queue_limit_sentence);
    tcase_add_test(tc, test_department_limit_named);
    tcase_add_test(tc, test_new_and_no_node_and_not_pending);
    tcase_add_test(tc, test_whole_gpus_fragmented_across_nodes);
}

GP_TEST_MAIN("engine/reasons", add_tests)
