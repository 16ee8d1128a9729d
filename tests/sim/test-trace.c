/*
 * test-trace.c — the node and pod list readers (src/sim/trace.c) on the
 * fixtures in tests/sim/fixtures and on bad input: every rejected value is
 * named by file, line and field, and nothing is returned.
 */
#include <stdio.h>
#include <string.h>

#include "gptest.h"
#include "sim/trace.h"

static int pods_str(const char *text, sim_pod **p, size_t *n, char *err) {
    return sim_read_pods_mem("p.csv", text, strlen(text), p, n, err, 256);
}

START_TEST(test_fixture_nodes) {
    sim_node *n;
    size_t cnt;
    char err[256];
    ck_assert_int_eq(sim_read_nodes("tests/sim/fixtures/nodes.csv", &n, &cnt, err, sizeof err), 0);
    ck_assert_int_eq(cnt, 2);
    ck_assert_str_eq(n[0].name, "n0");
    ck_assert_int_eq(n[0].cpu_milli, 32000);
    ck_assert_int_eq(n[0].mem_bytes, INT64_C(131072) << 20);
    ck_assert_int_eq(n[0].ngpus, 2);
    ck_assert_str_eq(n[1].model, "V100");
    free(n);
}
END_TEST

START_TEST(test_fixture_pods) {
    sim_pod *p;
    size_t cnt;
    char err[256];
    ck_assert_int_eq(sim_read_pods("tests/sim/fixtures/pods.csv", &p, &cnt, err, sizeof err), 0);
    ck_assert_int_eq(cnt, 4);
    ck_assert_str_eq(p[0].name, "p3");
    ck_assert_int_eq(p[0].gpu_milli, 500);
    ck_assert_int_eq(p[0].creation, 0);
    ck_assert_int_eq(p[0].deletion, 100);
    ck_assert_str_eq(p[2].spec, "T4");
    ck_assert_int_eq(sim_pod_milli(&p[2]), 1000);
    ck_assert_int_eq(sim_pod_milli(&p[3]), 0);
    free(p);
}
END_TEST

START_TEST(test_generic_columns) {
    sim_pod *p;
    size_t cnt;
    char err[256];
    ck_assert_int_eq(pods_str("name,cpu_milli,memory_mib,num_gpu,gpu_milli,project,kind,tasks\n"
                              "a,1,1,2,1000,nlp,interactive,4\n",
                              &p, &cnt, err),
                     0);
    ck_assert_str_eq(p[0].project, "nlp");
    ck_assert_int_eq(p[0].kind, GP_KIND_INTERACTIVE);
    ck_assert_int_eq(p[0].tasks, 4);
    ck_assert_int_eq(sim_pod_milli(&p[0]), 8000);
    free(p);
}
END_TEST

START_TEST(test_bad_values_are_named) {
    static const struct {
        const char *row, *msg;
    } cases[] = {
        {"a,1,1,2,500,",
         "p.csv:2: field gpu_milli: 500 with num_gpu 2 (a share is of one GPU only)"},
        {"a,1,1,0,300,", "p.csv:2: field gpu_milli: 300 for a pod with num_gpu 0 (must be 0)"},
        {"a,-5,1,1,100,", "p.csv:2: field cpu_milli: -5 is out of range [0, 100000000]"},
        {"a,1,1,99,1000,", "p.csv:2: field num_gpu: 99 is out of range [0, 16]"},
        {"a,1,1,1,1001,", "p.csv:2: field gpu_milli: 1001 is out of range [0, 1000]"},
        {"a,1,1,1,100,T4|", "p.csv:2: field gpu_spec: trailing '|'"},
        {",1,1,1,100,", "p.csv:2: field name: empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[256], err[256] = "";
        snprintf(text, sizeof text, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n%s\n",
                 cases[i].row);
        sim_pod *p = (sim_pod *)1;
        size_t cnt = 7;
        ck_assert_int_lt(pods_str(text, &p, &cnt, err), 0);
        ck_assert_str_eq(err, cases[i].msg);
        ck_assert_ptr_null(p);
        ck_assert_int_eq(cnt, 0);
    }
}
END_TEST

START_TEST(test_times_checked) {
    sim_pod *p;
    size_t cnt;
    char err[256];
    ck_assert_int_lt(pods_str("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,"
                              "deletion_time\na,1,1,0,0,50,40\n",
                              &p, &cnt, err),
                     0);
    ck_assert_str_eq(err, "p.csv:2: field deletion_time: 40 is before creation_time 50");
}
END_TEST

START_TEST(test_node_needs_model_with_gpus) {
    sim_node *n;
    size_t cnt;
    char err[256];
    const char *t = "sn,cpu_milli,memory_mib,gpu,model\nx,1000,10,2,\n";
    ck_assert_int_lt(sim_read_nodes_mem("n.csv", t, strlen(t), &n, &cnt, err, sizeof err), 0);
    ck_assert_str_eq(err, "n.csv:2: field model: empty for a node with GPUs");
}
END_TEST

START_TEST(test_spec_models) {
    gp_task_req r;
    memset(&r, 0, sizeof r);
    sim_spec_models("V100M16|V100M32", &r);
    ck_assert_int_eq(r.nmodels, 2);
    ck_assert_str_eq(r.models[1], "V100M32");
    sim_spec_models("", &r);
    ck_assert_int_eq(r.nmodels, 0);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_fixture_nodes);
    tcase_add_test(tc, test_fixture_pods);
    tcase_add_test(tc, test_generic_columns);
    tcase_add_test(tc, test_bad_values_are_named);
    tcase_add_test(tc, test_times_checked);
    tcase_add_test(tc, test_node_needs_model_with_gpus);
    tcase_add_test(tc, test_spec_models);
}

GP_TEST_MAIN("sim/trace", add_tests)
