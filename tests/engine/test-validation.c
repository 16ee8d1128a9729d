/*
 * test-validation.c — bad input from outside gets a clear error naming the
 * field, and changes nothing: absurd requests, unknown queues, quotas below
 * zero, malformed nodes.
 */
#include "gptest.h"
#include "helpers.h"

#include <string.h>

static gp_engine *pool(void) {
    gp_engine *e = t_engine();
    t_node(e, "n1", 8, "H100", 80, "");
    t_queue(e, "dept", "", 8, -1, 1);
    t_queue(e, "nlp", "dept", 8, -1, 1);
    return e;
}

/* Submits w and asserts it is refused with code and a message that starts
 * with field, and that the engine holds no more workloads than before; the
 * dry run (gp_engine_submit_check) says the same, id checks aside. */
static void refused(gp_engine *e, gp_workload_spec *w, int code, const char *field) {
    char err[GP_ERR_MAX] = "", dry[GP_ERR_MAX] = "";
    if (strcmp(field, "id") != 0) {
        ck_assert_int_eq(gp_engine_submit_check(e, w, dry, sizeof dry), code);
        ck_assert_msg(strncmp(dry, field, strlen(field)) == 0, "dry run '%s' should name %s", dry,
                      field);
    }
    int64_t counts[GP_WAIT_COUNT];
    gp_queue_info before, after;
    ck_assert_int_eq(gp_engine_queue_get(e, "nlp", &before), 0);
    ck_assert_int_eq(gp_engine_submit(e, w, err, sizeof err), code);
    ck_assert_msg(strncmp(err, field, strlen(field)) == 0, "error '%s' should name %s", err, field);
    ck_assert_int_eq(gp_engine_queue_get(e, "nlp", &after), 0);
    ck_assert_int_eq(after.pending, before.pending);
    ck_assert_int_eq(gp_engine_workload_get(e, w->id, &(gp_workload_info){0}), GP_ENOENT);
    gp_engine_pending_by_reason(e, counts);
}

/* A configuration out of range is refused naming its field: never taken for
 * a lack of memory, and nothing is returned. */
START_TEST(test_bad_config_refused) {
    gp_engine_config c;
    char err[GP_ERR_MAX] = "";
    gp_engine *e = (gp_engine *)&c;
    gp_engine_config_init(&c);
    c.placement = GP_PLACE_COUNT;
    ck_assert_int_eq(gp_engine_open(&c, &e, err, sizeof err), GP_EINVAL);
    ck_assert_ptr_null(e);
    ck_assert_msg(strncmp(err, "placement:", 10) == 0, "err: %s", err);
    gp_engine_config_init(&c);
    c.aging_max = -1;
    ck_assert_int_eq(gp_engine_open(&c, &e, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strncmp(err, "aging_max:", 10) == 0, "err: %s", err);
    gp_engine_config_init(&c);
    c.max_evicting_attempts = -5;
    ck_assert_int_eq(gp_engine_open(&c, &e, err, sizeof err), GP_EINVAL);
    ck_assert_msg(strncmp(err, "max_evicting_attempts:", 22) == 0, "err: %s", err);
    ck_assert_int_eq(gp_engine_open(&c, NULL, err, sizeof err), GP_EINVAL);
    ck_assert_int_eq(gp_engine_open(NULL, &e, err, sizeof err), 0); /* the defaults */
    ck_assert_ptr_nonnull(e);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_absurd_requests_refused) {
    gp_engine *e = pool();
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "nlp");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 0;
    refused(e, &w, GP_EINVAL, "req.gpus");
    w.req.gpus = 9; /* more than any node has */
    refused(e, &w, GP_EINVAL, "req.gpus");
    w.req.gpu = GP_GPU_FRACTION;
    w.req.gpu_milli = 1500; /* 1.5 of one GPU */
    refused(e, &w, GP_EINVAL, "req.gpu_milli");
    w.req.gpu_milli = 0;
    refused(e, &w, GP_EINVAL, "req.gpu_milli");
    w.req.gpu = GP_GPU_MEMORY;
    w.req.gpu_mem = 81 * GIB; /* more memory than any GPU has */
    refused(e, &w, GP_EINVAL, "req.gpu_mem");
    w.req.gpu_mem = -1;
    refused(e, &w, GP_EINVAL, "req.gpu_mem");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 1;
    w.req.cpu_milli = -5;
    refused(e, &w, GP_EINVAL, "req.cpu_milli");
    w.req.cpu_milli = 0;
    w.tasks = 0;
    refused(e, &w, GP_EINVAL, "tasks");
    w.tasks = 2;
    w.min_tasks = 3;
    refused(e, &w, GP_EINVAL, "min_tasks");
    w.min_tasks = 0;
    w.kind = (gp_kind)7;
    refused(e, &w, GP_EINVAL, "kind: must be train, interactive or inference");
    w.kind = GP_KIND_TRAIN;
    w.on_preempt = (gp_on_preempt)3;
    refused(e, &w, GP_EINVAL, "on_preempt: must be checkpoint, pause or requeue");
    w.on_preempt = GP_ON_PREEMPT_PAUSE;
    w.id = 0;
    refused(e, &w, GP_EINVAL, "id");
    gp_engine_free(e);
}
END_TEST

/* A selector is a key of 1 to 63 characters and a value of at most 63, each
 * ending within its field: the error names the part that breaks the rule. */
START_TEST(test_bad_selectors_refused) {
    gp_engine *e = pool();
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "nlp");
    w.req.nselectors = 1;
    memset(w.req.selectors[0].key, 'k', sizeof w.req.selectors[0].key); /* no NUL */
    refused(e, &w, GP_EINVAL, "req.selectors[0].key: must be 1 to 63 characters");
    w.req.selectors[0].key[0] = '\0';
    refused(e, &w, GP_EINVAL, "req.selectors[0].key: must be 1 to 63 characters");
    strcpy(w.req.selectors[0].key, "zone");
    memset(w.req.selectors[0].value, 'v', sizeof w.req.selectors[0].value);
    refused(e, &w, GP_EINVAL, "req.selectors[0].value: longer than 63 characters");
    gp_engine_free(e);
}
END_TEST

/* The dry run accepts what gp_engine_submit would, id aside, and changes
 * nothing. */
START_TEST(test_dry_run_changes_nothing) {
    gp_engine *e = pool();
    gp_workload_spec w;
    gp_workload_spec_init(&w, 0, "nlp");
    w.req.gpu = GP_GPU_WHOLE;
    w.req.gpus = 8;
    char err[GP_ERR_MAX] = "";
    gp_queue_info qi;
    ck_assert_int_eq(gp_engine_submit_check(e, &w, err, sizeof err), 0);
    ck_assert_int_eq(gp_engine_queue_get(e, "nlp", &qi), 0);
    ck_assert_int_eq(qi.pending, 0);
    w.id = 1;
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), 0);
    ck_assert_int_eq(gp_engine_submit_check(e, &w, err, sizeof err),
                     0); /* its id is not looked at */
    gp_engine_free(e);
}
END_TEST

START_TEST(test_queue_must_be_an_existing_project) {
    gp_engine *e = pool();
    gp_workload_spec w;
    gp_workload_spec_init(&w, 1, "vision");
    refused(e, &w, GP_ENOENT, "queue: no project named 'vision'");
    gp_workload_spec_init(&w, 1, "dept");
    refused(e, &w, GP_EINVAL, "queue: 'dept' is a department");
    gp_workload_spec_init(&w, 1, "nlp");
    ck_assert_int_eq(gp_engine_submit(e, &w, NULL, 0), 0);
    gp_workload_spec_init(&w, 1, "nlp");
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_submit(e, &w, err, sizeof err), GP_EEXIST);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_bad_quotas_refused_and_nothing_changes) {
    gp_engine *e = pool();
    gp_queue_spec q;
    gp_queue_spec_init(&q, "nlp", "dept");
    q.quota[GP_RES_GPU].deserved = -1000;
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "quota.gpu.deserved: must not be negative");
    gp_queue_spec_init(&q, "nlp", "dept");
    q.quota[GP_RES_CPU].weight = -1;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "quota.cpu.weight: must not be negative");
    gp_queue_spec_init(&q, "nlp", "dept");
    q.quota[GP_RES_GPU].deserved = 4000;
    q.quota[GP_RES_GPU].limit = 2000;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "quota.gpu.limit: below its deserved quota");
    gp_queue_spec_init(&q, "nlp", "dept");
    q.on_preempt = (gp_on_preempt)-1;
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "on_preempt: must be checkpoint, pause or requeue");
    gp_queue_spec_init(&q, "x", "nowhere");
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_ENOENT);
    ck_assert_str_eq(err, "parent: no queue named 'nowhere'");
    gp_queue_spec_init(&q, "dept", "nlp"); /* a cycle */
    ck_assert_int_eq(gp_engine_queue_set(e, &q, err, sizeof err), GP_EINVAL);
    gp_queue_info qi;
    ck_assert_int_eq(gp_engine_queue_get(e, "nlp", &qi), 0);
    ck_assert_int_eq(qi.deserved.v[GP_RES_GPU], 8000);
    ck_assert_str_eq(qi.parent, "dept");
    ck_assert_int_eq(qi.on_preempt, GP_ON_PREEMPT_CHECKPOINT);
    ck_assert_uint_eq(gp_engine_queue_count(e), 2);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_bad_nodes_refused) {
    gp_engine *e = pool();
    gp_node_spec n;
    gp_node_spec_init(&n, "");
    char err[GP_ERR_MAX];
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "name: must be 1 to 63 characters");
    gp_node_spec_init(&n, "n2");
    n.ngpus = 1;
    strcpy(n.gpus[0].model, "H100");
    n.gpus[0].mem_bytes = 0;
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "gpus[0].mem_bytes: must be positive");
    n.ngpus = 17;
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), GP_EINVAL);
    ck_assert_uint_eq(gp_engine_node_count(e), 1);
    gp_engine_free(e);
}
END_TEST

/* Sets node n, which must be refused with GP_EINVAL and the error want, and
 * checks that the pool still holds node n1 alone, as pool() made it. */
static void node_refused(gp_engine *e, const gp_node_spec *n, const char *want) {
    char err[GP_ERR_MAX] = "";
    gp_node_info ni;
    ck_assert_int_eq(gp_engine_node_set(e, n, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, want);
    ck_assert_uint_eq(gp_engine_node_count(e), 1);
    ck_assert_int_eq(gp_engine_node_get(e, "n2", &ni), GP_ENOENT);
    ck_assert_int_eq(gp_engine_node_get(e, "n1", &ni), 0);
    ck_assert_int_eq(ni.cpu_milli, 64000);
    ck_assert_int_eq(ni.ngpus, 8);
}

/* A node's labels follow the rule of a request's selectors: a key of 1 to 63
 * characters and a value of at most 63, each ending within its field. A node
 * whose label breaks it is refused naming the label, and is neither added nor
 * changed. */
START_TEST(test_bad_node_labels_refused) {
    gp_engine *e = pool();
    gp_node_spec n;
    gp_node_spec_init(&n, "n2");
    n.nlabels = 2;
    strcpy(n.labels[0].key, "zone");
    strcpy(n.labels[0].value, "lab");
    memset(n.labels[1].key, 'k', sizeof n.labels[1].key); /* no NUL */
    node_refused(e, &n, "labels[1].key: must be 1 to 63 characters");
    n.labels[1].key[0] = '\0';
    node_refused(e, &n, "labels[1].key: must be 1 to 63 characters");
    strcpy(n.labels[1].key, "rack");
    memset(n.labels[1].value, 'v', sizeof n.labels[1].value); /* no NUL */
    node_refused(e, &n, "labels[1].value: longer than 63 characters");
    strcpy(n.name, "n1"); /* a change of an existing node, refused alike */
    n.cpu_milli = 1000;
    node_refused(e, &n, "labels[1].value: longer than 63 characters");
    strcpy(n.labels[1].value, "r1"); /* the same node with good labels is taken */
    strcpy(n.name, "n2");
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), 0);
    ck_assert_uint_eq(gp_engine_node_count(e), 2);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_queue_removal_rules) {
    gp_engine *e = pool();
    ck_assert_int_eq(gp_engine_queue_remove(e, "dept"), GP_EBUSY);
    t_submit(e, 1, "nlp", GP_KIND_TRAIN, 1, 1, 0, 0);
    ck_assert_int_eq(gp_engine_queue_remove(e, "nlp"), GP_EBUSY);
    ck_assert_int_eq(gp_engine_cancel(e, 1), 0);
    ck_assert_int_eq(gp_engine_queue_remove(e, "nlp"), 0);
    ck_assert_int_eq(gp_engine_queue_remove(e, "dept"), 0);
    ck_assert_uint_eq(gp_engine_queue_count(e), 0);
    ck_assert_int_eq(gp_engine_queue_remove(e, "dept"), GP_ENOENT);
    gp_engine_free(e);
}
END_TEST

START_TEST(test_events_in_wrong_state) {
    gp_engine *e = pool();
    t_submit(e, 1, "nlp", GP_KIND_TRAIN, 1, 1, 0, 0);
    ck_assert_int_eq(gp_engine_started(e, 1, 0), GP_ESTATE);
    ck_assert_int_eq(gp_engine_released(e, 1, 0), GP_ESTATE);
    ck_assert_int_eq(gp_engine_finished(e, 1), GP_ESTATE);
    ck_assert_int_eq(gp_engine_requeue(e, 1), GP_ESTATE);
    ck_assert_int_eq(gp_engine_started(e, 99, 0), GP_ENOENT);
    ck_assert_int_eq(gp_engine_cancel(e, 99), GP_ENOENT);
    gp_engine_free(e);
}
END_TEST

/* A GPU's uuid, handed back as a string (gp_gpu_info.uuid), holds at most 63
 * characters and its NUL: one that fills its field is refused naming it. */
START_TEST(test_bad_gpu_uuid_refused) {
    gp_engine *e = pool();
    gp_node_spec n;
    t_node_spec(&n, "n2", 2, "H100", 80, "");
    memset(n.gpus[1].uuid, 'u', sizeof n.gpus[1].uuid); /* no NUL */
    node_refused(e, &n, "gpus[1].uuid: longer than 63 characters");
    strcpy(n.name, "n1");
    node_refused(e, &n, "gpus[1].uuid: longer than 63 characters");
    n.gpus[1].uuid[0] = '\0'; /* a uuid may be left out */
    char err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gp_engine_node_set(e, &n, err, sizeof err), 0);
    gp_engine_free(e);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_bad_config_refused);
    tcase_add_test(tc, test_absurd_requests_refused);
    tcase_add_test(tc, test_bad_selectors_refused);
    tcase_add_test(tc, test_dry_run_changes_nothing);
    tcase_add_test(tc, test_queue_must_be_an_existing_project);
    tcase_add_test(tc, test_bad_quotas_refused_and_nothing_changes);
    tcase_add_test(tc, test_bad_nodes_refused);
    tcase_add_test(tc, test_bad_node_labels_refused);
    tcase_add_test(tc, test_bad_gpu_uuid_refused);
    tcase_add_test(tc, test_queue_removal_rules);
    tcase_add_test(tc, test_events_in_wrong_state);
}

GP_TEST_MAIN("engine/validation", add_tests)
