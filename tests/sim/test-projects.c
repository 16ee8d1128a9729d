/*
 * test-projects.c — the projects file and the rules built on it
 * (src/sim/projects.c): reading and rejecting rows by file, line and field,
 * the default tree, the deterministic pod-to-project rule, the scaling of
 * deserved quotas to the pool, and the static split of the nodes.
 */
#include <stdio.h>
#include <string.h>

#include "common/fnv.h"
#include "gptest.h"
#include "sim/projects.h"

static int proj_str(const char *text, sim_project **p, size_t *n, char *err) {
    return sim_read_projects_mem("q.csv", text, strlen(text), p, n, err, 256);
}

START_TEST(test_fixture_tree) {
    sim_project *p;
    size_t n;
    char err[256];
    ck_assert_int_eq(
        sim_read_projects("tests/sim/fixtures/replay-projects.csv", &p, &n, err, sizeof err), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(p[0].name, "org");
    ck_assert_int_eq(p[0].leaf, 0);
    ck_assert_int_eq(p[0].deserved_milli, -1);
    ck_assert_int_eq(p[1].leaf, 1);
    ck_assert_int_eq(p[1].deserved_milli, 4000);
    ck_assert_int_eq(p[1].limit_milli, GP_UNLIMITED);
    ck_assert_int_eq(p[2].weight, 1);
    free(p);
}
END_TEST

START_TEST(test_fractional_gpus_and_limits) {
    sim_project *p;
    size_t n;
    char err[256];
    ck_assert_int_eq(proj_str("name,deserved_gpus,limit_gpus,weight,priority\n"
                              "a,0.5,2.25,3,7\n",
                              &p, &n, err),
                     0);
    ck_assert_int_eq(p[0].deserved_milli, 500);
    ck_assert_int_eq(p[0].limit_milli, 2250);
    ck_assert_int_eq(p[0].weight, 3);
    ck_assert_int_eq(p[0].priority, 7);
    free(p);
}
END_TEST

START_TEST(test_bad_rows_named) {
    sim_project *p = (sim_project *)1;
    size_t n;
    char err[256];
    ck_assert_int_lt(proj_str("name,parent\na,\nb,zz\n", &p, &n, err), 0);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(err, "q.csv:3: field parent: 'zz' is not listed above this row");
    ck_assert_int_lt(proj_str("name\na\na\n", &p, &n, err), 0);
    ck_assert_str_eq(err, "q.csv:3: field name: 'a' listed twice");
    ck_assert_int_lt(proj_str("name,deserved_gpus\na,-1\n", &p, &n, err), 0);
    ck_assert_ptr_nonnull(strstr(err, "q.csv:2: field deserved_gpus"));
    ck_assert_int_lt(proj_str("name,weight\na,0\n", &p, &n, err), 0);
    ck_assert_ptr_nonnull(strstr(err, "q.csv:2: field weight"));
    ck_assert_int_lt(proj_str("name,colour\na,red\n", &p, &n, err), 0);
    ck_assert_ptr_nonnull(strstr(err, "unknown column 'colour'"));
    ck_assert_int_lt(proj_str("name\n", &p, &n, err), 0);
    ck_assert_int_lt(sim_read_projects("tests/sim/fixtures/none.csv", &p, &n, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "none.csv"));
}
END_TEST

START_TEST(test_default_tree) {
    sim_pod pods[3];
    memset(pods, 0, sizeof pods);
    sim_project *p;
    size_t n;
    ck_assert_int_eq(sim_default_projects(pods, 3, &p, &n), 0);
    ck_assert_int_eq(n, 5);
    ck_assert_str_eq(p[1].name, "team-a");
    ck_assert_str_eq(p[4].parent, "org");
    ck_assert(p[4].leaf && p[4].relative);
    free(p);
    strcpy(pods[0].project, "x");
    strcpy(pods[1].project, "y");
    strcpy(pods[2].project, "x");
    ck_assert_int_eq(sim_default_projects(pods, 3, &p, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(p[1].name, "x");
    ck_assert_str_eq(p[2].name, "y");
    free(p);
}
END_TEST

START_TEST(test_assignment_rule) {
    sim_project *p;
    size_t n;
    char err[256];
    ck_assert_int_eq(proj_str("name,parent,deserved_gpus\nd,,\na,d,3\nb,d,1\n", &p, &n, err), 0);
    enum { NP = 4000 };
    static sim_pod pods[NP];
    int32_t leaf[NP];
    memset(pods, 0, sizeof pods);
    for (int i = 0; i < NP; i++)
        snprintf(pods[i].name, sizeof pods[i].name, "pod-%d", i);
    strcpy(pods[0].project, "b");
    ck_assert_int_eq(sim_assign_projects(p, n, pods, NP, "p.csv", leaf, err, sizeof err), 0);
    ck_assert_int_eq(leaf[0], 2);
    /* The rule itself for one pod: FNV-1a of the name mod 4000 milli. */
    uint64_t h = gp_fnv1a(pods[1].name) % 4000;
    ck_assert_int_eq(leaf[1], h < 3000 ? 1 : 2);
    int na = 0;
    for (int i = 1; i < NP; i++)
        na += leaf[i] == 1;
    /* Shares follow deserved quotas (3:1) within a few percent. */
    ck_assert_int_gt(na, (int)(0.70 * NP));
    ck_assert_int_lt(na, (int)(0.80 * NP));
    ck_assert_uint_eq(gp_fnv1a(""), UINT64_C(14695981039346656037));
    pods[5].line = 7;
    strcpy(pods[5].project, "d");
    ck_assert_int_lt(sim_assign_projects(p, n, pods, NP, "p.csv", leaf, err, sizeof err), 0);
    ck_assert_str_eq(err, "p.csv:7: field project: 'd' is not a project of the projects file");
    free(p);
}
END_TEST

START_TEST(test_scale_quotas) {
    sim_project *p;
    size_t n;
    char err[256];
    int64_t d[3];
    ck_assert_int_eq(proj_str("name,parent,deserved_gpus\nd,,\na,d,3\nb,d,1\n", &p, &n, err), 0);
    sim_scale_quotas(p, n, 8000, d); /* fits: kept */
    ck_assert_int_eq(d[1], 3000);
    ck_assert_int_eq(d[2], 1000);
    ck_assert_int_eq(d[0], 4000);
    sim_scale_quotas(p, n, 2000, d); /* over the pool: scaled by 1/2 */
    ck_assert_int_eq(d[1], 1500);
    ck_assert_int_eq(d[2], 500);
    ck_assert_int_eq(d[0], 2000);
    p[1].relative = 1; /* relative shares fill the pool */
    sim_scale_quotas(p, n, 8000, d);
    ck_assert_int_eq(d[1], 6000);
    ck_assert_int_eq(d[2], 2000);
    free(p);
}
END_TEST

START_TEST(test_static_split) {
    sim_project *p;
    size_t n;
    char err[256];
    ck_assert_int_eq(proj_str("name,parent,deserved_gpus\nd,,\na,d,3\nb,d,1\n", &p, &n, err), 0);
    sim_node nodes[8];
    memset(nodes, 0, sizeof nodes);
    for (int i = 0; i < 8; i++) {
        snprintf(nodes[i].name, sizeof nodes[i].name, "n%d", i);
        nodes[i].ngpus = 2;
        strcpy(nodes[i].model, i < 4 ? "A" : "B");
    }
    int64_t d[3] = {4000, 3000, 1000};
    int32_t owner[8];
    ck_assert_int_eq(sim_static_split(p, n, d, nodes, 8, owner), 0);
    int ga = 0, gb = 0, bmodels = 0;
    for (int i = 0; i < 8; i++) {
        ck_assert(owner[i] == 1 || owner[i] == 2);
        ga += owner[i] == 1 ? 2 : 0;
        gb += owner[i] == 2 ? 2 : 0;
        if (owner[i] == 2)
            bmodels |= nodes[i].model[0] == 'A' ? 1 : 2;
    }
    ck_assert_int_eq(ga, 12);
    ck_assert_int_eq(gb, 4);
    ck_assert_int_eq(bmodels, 3); /* b owns a node of each model */
    free(p);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_fixture_tree);
    tcase_add_test(tc, test_fractional_gpus_and_limits);
    tcase_add_test(tc, test_bad_rows_named);
    tcase_add_test(tc, test_default_tree);
    tcase_add_test(tc, test_assignment_rule);
    tcase_add_test(tc, test_scale_quotas);
    tcase_add_test(tc, test_static_split);
}

GP_TEST_MAIN("sim/projects", add_tests)
