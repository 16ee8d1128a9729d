/*
 * test-api.c — black-box tests of gpupoold's API: bad input gets a 4xx that
 * names the field and changes nothing; roles and scopes hold (a researcher
 * cannot see or stop another project's workloads, a department admin manages
 * only its department); tokens are stored hashed; a workload can be deleted at
 * any moment of its life.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_clock.h"
#include "common/httpc.h"
#include "daemon/daemon.h"
#include "gptest.h"
#include "harness.h"

static void setup_tree(gpd_test *t) {
    static const char *const q[] = {
        "{\"name\":\"A\",\"deserved\":{\"gpu\":4}}", "{\"name\":\"a1\",\"parent\":\"A\"}",
        "{\"name\":\"a2\",\"parent\":\"A\"}", "{\"name\":\"B\",\"deserved\":{\"gpu\":4}}",
        "{\"name\":\"b1\",\"parent\":\"B\"}"};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        ck_assert_int_eq(gpd_call(t, t->admin, "POST", "/api/v1/queues", q[i], NULL), 201);
}

static int count_workloads(gpd_test *t) {
    json_t *out;
    ck_assert_int_eq(gpd_call(t, t->admin, "GET", "/api/v1/workloads?limit=1000", NULL, &out), 200);
    int n = (int)json_array_size(json_object_get(out, "workloads"));
    json_decref(out);
    return n;
}

/* Calls method path as token and expects a 2xx answer, which it returns
 * (the caller decrefs). A refusal fails the test with the server's own
 * message, so that it says which state the workload was in: a DELETE once
 * answered 409 under ThreadSanitizer and nothing told why. */
static json_t *call_ok(gpd_test *t, const char *token, const char *method, const char *path) {
    json_t *out = NULL;
    int st = gpd_call(t, token, method, path, NULL, &out);
    const char *msg = json_string_value(json_object_get(json_object_get(out, "error"), "message"));
    ck_assert_msg(st / 100 == 2, "%s %s: status %d: %s", method, path, st, msg ? msg : "");
    return out;
}

/* Expects status and an error naming field ("" for none). */
static void expect_error(gpd_test *t, const char *method, const char *path, const char *body,
                         int status, const char *field) {
    json_t *out = NULL;
    int st = gpd_call(t, t->admin, method, path, body, &out);
    ck_assert_msg(st == status, "%s %s %s: status %d, expected %d", method, path, body, st, status);
    json_t *err = json_object_get(out, "error");
    ck_assert_ptr_nonnull(err);
    const char *msg = json_string_value(json_object_get(err, "message"));
    ck_assert_ptr_nonnull(msg);
    if (field[0]) {
        ck_assert_str_eq(json_string_value(json_object_get(err, "field")), field);
        ck_assert_msg(strstr(msg, field) != NULL, "message \"%s\" does not name %s", msg, field);
    }
    json_decref(out);
}

START_TEST(test_bad_input_changes_nothing) {
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    const char *W = "/api/v1/workloads";
    expect_error(&t, "POST", W, "{\"project\":\"a1\",", 400, "");
    expect_error(&t, "POST", W, "[1,2]", 400, "");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"gpus\":1}", 400,
                 "gpus");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"gpu\":0}", 400,
                 "gpu");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"gpu\":1.5}", 400,
                 "gpu");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"gpu\":-1}", 400,
                 "gpu");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"gpu_memory\":\"1T\"}",
                 400, "gpu_memory");
    /* The list's bound (99 GPUs), then the engine's own checks (no V100 in the
     * pool, no such project, a department), each named by the request's field. */
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"gpu\":99}", 400,
                 "gpu");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"models\":[\"V100\"]}",
                 400, "models");
    expect_error(&t, "POST", W, "{\"project\":\"nope\",\"command\":[\"true\"],\"gpu\":1}", 400,
                 "project");
    expect_error(&t, "POST", W, "{\"project\":\"A\",\"command\":[\"true\"]}", 400, "project");
    expect_error(&t, "POST", W, "{\"project\":\"a1\"}", 400, "command");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"gang\":0}", 400,
                 "gang");
    expect_error(&t, "POST", W, "{\"project\":\"a1\",\"command\":[\"true\"],\"grace\":\"soon\"}",
                 400, "grace");
    expect_error(&t, "POST", "/api/v1/queues", "{\"name\":\"q\",\"deserved\":{\"gpu\":-1}}", 400,
                 "deserved.gpu");
    expect_error(&t, "PATCH", "/api/v1/queues/a1", "{\"limit\":{\"gpu\":-2}}", 400, "limit.gpu");
    expect_error(&t, "PATCH", "/api/v1/queues/a1", "{\"colour\":1}", 400, "colour");
    /* A route whose body is JSON refuses one that is not a JSON object: an
     * array, broken JSON, none. */
    expect_error(&t, "POST", "/api/v1/queues", "[1]", 400, "");
    expect_error(&t, "PATCH", "/api/v1/queues/a1", "{\"limit\":", 400, "");
    expect_error(&t, "POST", "/api/v1/tokens", NULL, 400, "");
    /* "none" names the role of routes that need no token: no token has it. */
    expect_error(&t, "POST", "/api/v1/tokens", "{\"user\":\"u\",\"role\":\"none\"}", 400, "role");
    expect_error(&t, "POST", "/api/v1/tokens", "{\"user\":\"u\",\"role\":\"root\"}", 400, "role");
    expect_error(&t, "GET", "/api/v1/workloads/999", NULL, 404, "id");
    expect_error(&t, "GET", "/api/v1/nothing", NULL, 404, "");
    ck_assert_int_eq(count_workloads(&t), 0);
    json_t *out;
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/queues/a1", NULL, &out), 200);
    ck_assert(json_is_null(json_object_get(json_object_get(out, "limit"), "gpu")));
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

/* A number field's range is its list's (GP_SUBMIT_FIELDS, GP_QUEUE_FIELDS),
 * checked by its type and said in the words of docs/api.md's tables, in the
 * field's unit: each field checked its own bounds in words of its own. A
 * queue's weight is a share, in no unit. A size or a duration that is not
 * one is refused in its type's words, a bound's in a duration's. */
#define SUBMIT_WITH(fields) "{\"project\":\"a1\",\"command\":[\"true\"]," fields "}"
START_TEST(test_number_ranges) {
    static const struct {
        const char *method, *path, *body, *message;
    } cases[] = {
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"gpu\":0"), "gpu: must be above 0"},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"gpu\":17"),
         "gpu: 17 GPUs is outside 0.001 to 16"},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"gpu_memory\":\"0G\""),
         "gpu_memory: must be above 0"},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"gpu\":0.5,\"gpu_compute\":1.5"),
         "gpu_compute: 1.5 of the GPU's time is outside 0.01 to 1"},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"cpu\":1000001"),
         "cpu: 1000001 CPUs is outside 0 to 1000000"},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"gang\":257"), "gang: 257 is outside 1 to 256"},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"grace\":\"25h\""),
         "grace: 1d1h is outside 0s to 1d"},
        {"PATCH", "/api/v1/queues/a1", "{\"weight\":{\"gpu\":1000001}}",
         "weight.gpu: 1000001 is outside 0 to 1000000"},
        {"PATCH", "/api/v1/queues/a1", "{\"weight\":{\"cpu\":-1}}",
         "weight.cpu: -1 is outside 0 to 1000000"},
        {"PATCH", "/api/v1/queues/a1", "{\"deserved\":{\"gpu\":-1}}",
         "deserved.gpu: -1 GPUs is outside 0 to 1000000000"},
        {"PATCH", "/api/v1/queues/a1", "{\"idle_gpu_timeout\":\"5s\"}",
         "idle_gpu_timeout: 5s is outside 10s to 365d (or 0 or none: no bound)"},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"memory\":\"lots\""),
         "memory: must be a number of bytes or a size like \"32G\" or \"512M\""},
        {"POST", "/api/v1/workloads", SUBMIT_WITH("\"grace\":\"soon\""),
         "grace: must be a number of seconds or a duration like \"60s\", \"5m\""},
        {"PATCH", "/api/v1/queues/a1", "{\"idle_gpu_timeout\":\"never\"}",
         "idle_gpu_timeout: must be a number of seconds, a duration like \"60s\", \"5m\", or 0, "
         "null or \"none\" for no bound"},
    };
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *out = NULL;
        ck_assert_int_eq(gpd_call(&t, t.admin, cases[i].method, cases[i].path, cases[i].body, &out),
                         400);
        json_t *err = json_object_get(out, "error");
        ck_assert_str_eq(json_string_value(json_object_get(err, "message")), cases[i].message);
        json_decref(out);
    }
    ck_assert_int_eq(count_workloads(&t), 0);
    gpd_test_stop(&t);
}
END_TEST
#undef SUBMIT_WITH

/* The variables gpupool sets are one list (common/gp_env.h): a request may
 * not give GPUPOOL_* or CUDA_VISIBLE_DEVICES, and may give its own
 * LD_PRELOAD, which the executor keeps behind the interposer (the daemon once
 * refused it while the executor documented it). */
START_TEST(test_reserved_environment) {
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    const char *W = "/api/v1/workloads";
    expect_error(&t, "POST", W,
                 "{\"project\":\"a1\",\"command\":[\"true\"],\"env\":{\"GPUPOOL_SLICE\":\"x\"}}",
                 400, "env");
    expect_error(
        &t, "POST", W,
        "{\"project\":\"a1\",\"command\":[\"true\"],\"env\":{\"CUDA_VISIBLE_DEVICES\":\"0\"}}", 400,
        "env");
    ck_assert_int_eq(count_workloads(&t), 0);
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", W,
                              "{\"project\":\"a1\",\"command\":[\"true\"],\"env\":{\"LD_PRELOAD\":"
                              "\"/usr/lib/libmine.so\"}}",
                              NULL),
                     201);
    gpd_test_stop(&t);
}
END_TEST

/* Submits body with token (201 expected); its path /api/v1/workloads/ID. */
static void submit_path(gpd_test *t, const char *token, const char *body, char *path, size_t len) {
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(t, token, "POST", "/api/v1/workloads", body, &out), 201);
    snprintf(path, len, "/api/v1/workloads/%lld",
             (long long)json_integer_value(json_object_get(out, "id")));
    json_decref(out);
}

/* The tokens of setup_tree's people: researchers alice and dave of project
 * a1, bob of b1, and carol, admin of department A. */
typedef struct people {
    char alice[128], dave[128], bob[128], carol[128];
} people;

static void mk_people(gpd_test *t, people *u) {
    gpd_token(t, "alice", "researcher", "a1", u->alice, sizeof u->alice);
    gpd_token(t, "dave", "researcher", "a1", u->dave, sizeof u->dave);
    gpd_token(t, "bob", "researcher", "b1", u->bob, sizeof u->bob);
    gpd_token(t, "carol", "dept-admin", "A", u->carol, sizeof u->carol);
}

/* Starts the daemon with setup_tree's queues and its people's tokens. */
static void start_with_people(gpd_test *t, people *u) {
    gpd_test_start(t);
    setup_tree(t);
    mk_people(t, u);
}

/* The value of a variable in spec.env of the workload with this path as the
 * token sees it: NULL if the name is missing, "(null)" for a JSON null. */
static const char *env_seen(gpd_test *t, const char *token, const char *path, const char *name,
                            char *buf, size_t len) {
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(t, token, "GET", path, NULL, &out), 200);
    json_t *v = json_object_get(json_object_get(json_object_get(out, "spec"), "env"), name);
    const char *r = NULL;
    if (v) {
        snprintf(buf, len, "%s", json_is_null(v) ? "(null)" : json_string_value(v));
        r = buf;
    }
    json_decref(out);
    return r;
}

/* A researcher of the same project read another user's secrets in
 * spec.env: only the submitter and administrators see the values, others
 * the names. */
START_TEST(test_env_values_only_for_submitter) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    const char *alice = u.alice, *dave = u.dave, *carol = u.carol;
    char buf[64];
    char path[64];
    submit_path(&t, alice,
                "{\"project\":\"a1\",\"command\":[\"true\"],\"env\":{\"DB_PASSWORD\":"
                "\"s3cret\",\"MODE\":\"fast\"}}",
                path, sizeof path);
    ck_assert_str_eq(env_seen(&t, alice, path, "DB_PASSWORD", buf, sizeof buf), "s3cret");
    ck_assert_str_eq(env_seen(&t, t.admin, path, "DB_PASSWORD", buf, sizeof buf), "s3cret");
    ck_assert_str_eq(env_seen(&t, dave, path, "DB_PASSWORD", buf, sizeof buf), "(null)");
    ck_assert_str_eq(env_seen(&t, dave, path, "MODE", buf, sizeof buf), "(null)");
    ck_assert_str_eq(env_seen(&t, carol, path, "DB_PASSWORD", buf, sizeof buf), "(null)");
    /* Nowhere in what the others get. */
    gp_http_resp r;
    char err[256];
    ck_assert_int_eq(gp_http_request(t.server, "GET", path, dave, NULL, &r, err, sizeof err), 0);
    ck_assert_ptr_null(memmem(r.body, r.len, "s3cret", 6));
    ck_assert_ptr_nonnull(memmem(r.body, r.len, "env_redacted", 12));
    gp_http_resp_free(&r);
    gpd_test_stop(&t);
}
END_TEST

/* A body with an env of n variables V<i> whose values are vlen bytes of
 * 'x', and one more variable of name nlen bytes if nlen > 0 (malloc'ed). */
static char *env_body(int n, size_t vlen, size_t nlen) {
    size_t cap = 128 + (size_t)n * (vlen + 24) + nlen;
    char *b = malloc(cap), *val = malloc(vlen + 1);
    ck_assert(b != NULL && val != NULL);
    memset(val, 'x', vlen);
    val[vlen] = '\0';
    size_t k = (size_t)snprintf(b, cap, "{\"project\":\"a1\",\"command\":[\"true\"],\"env\":{");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(b + k, cap - k, "%s\"V%d\":\"%s\"", i ? "," : "", i, val);
    if (nlen > 0) {
        k += (size_t)snprintf(b + k, cap - k, "%s\"", n ? "," : "");
        for (size_t i = 0; i < nlen; i++)
            b[k++] = 'N';
        k += (size_t)snprintf(b + k, cap - k, "\":\"1\"");
    }
    snprintf(b + k, cap - k, "}}");
    free(val);
    return b;
}

/* One workload with 60,000 variables (0.9 MB) held the scheduling loop for
 * 25 s: the environment is bounded (docs/security.md), and a refusal names
 * env and stores nothing. */
START_TEST(test_environment_bounded) {
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    const char *W = "/api/v1/workloads";
    struct {
        int n;
        size_t vlen, nlen;
    } bad[] = {{60000, 1, 0}, {1025, 1, 0}, {0, 0, 257}, {1, 32 * 1024 + 1, 0}, {5, 30000, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *b = env_body(bad[i].n, bad[i].vlen, bad[i].nlen);
        expect_error(&t, "POST", W, b, 400, "env");
        free(b);
    }
    ck_assert_int_eq(count_workloads(&t), 0);
    /* At the limits: 1,024 variables, a 256-byte name, a 32 KiB value. */
    char *b = env_body(1023, 64, 256);
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", W, b, NULL), 201);
    free(b);
    b = env_body(1, 32 * 1024, 0);
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", W, b, NULL), 201);
    free(b);
    gpd_test_stop(&t);
}
END_TEST

START_TEST(test_roles_and_scopes) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    const char *alice = u.alice, *dave = u.dave, *bob = u.bob, *carol = u.carol;
    const char *job = "{\"project\":\"a1\",\"command\":[\"sleep\",\"30\"],\"gpu\":1}";
    json_t *out;
    ck_assert_int_eq(gpd_call(&t, alice, "POST", "/api/v1/workloads", job, &out), 201);
    char path[64];
    snprintf(path, sizeof path, "/api/v1/workloads/%lld",
             (long long)json_integer_value(json_object_get(out, "id")));
    json_decref(out);

    ck_assert_int_eq(gpd_call(&t, NULL, "GET", "/api/v1/workloads", NULL, NULL), 401);
    ck_assert_int_eq(gpd_call(&t, "gp_wrong", "GET", "/api/v1/workloads", NULL, NULL), 401);
    /* Another project's researcher: cannot see, stop or submit there. */
    ck_assert_int_eq(gpd_call(&t, bob, "GET", path, NULL, NULL), 404);
    ck_assert_int_eq(gpd_call(&t, bob, "DELETE", path, NULL, NULL), 404);
    ck_assert_int_eq(gpd_call(&t, bob, "POST", "/api/v1/workloads", job, NULL), 403);
    ck_assert_int_eq(gpd_call(&t, bob, "GET", "/api/v1/workloads", NULL, &out), 200);
    ck_assert_int_eq(json_array_size(json_object_get(out, "workloads")), 0);
    json_decref(out);
    /* Same project, another user: sees it, cannot stop it. */
    ck_assert_int_eq(gpd_call(&t, dave, "GET", path, NULL, NULL), 200);
    char susp[80];
    snprintf(susp, sizeof susp, "%s/suspend", path);
    ck_assert_int_eq(gpd_call(&t, dave, "POST", susp, NULL, NULL), 403);
    ck_assert_int_eq(gpd_call(&t, dave, "DELETE", path, NULL, NULL), 403);
    /* Researchers do not administer. */
    ck_assert_int_eq(
        gpd_call(&t, alice, "POST", "/api/v1/queues", "{\"name\":\"x\",\"parent\":\"A\"}", NULL),
        403);
    ck_assert_int_eq(gpd_call(&t, alice, "GET", "/api/v1/tokens", NULL, NULL), 403);
    /* The department admin: its department's projects and quotas only. */
    ck_assert_int_eq(gpd_call(&t, carol, "GET", path, NULL, NULL), 200);
    ck_assert_int_eq(
        gpd_call(&t, carol, "POST", "/api/v1/queues", "{\"name\":\"a3\",\"parent\":\"A\"}", NULL),
        201);
    ck_assert_int_eq(
        gpd_call(&t, carol, "PATCH", "/api/v1/queues/a1", "{\"deserved\":{\"gpu\":2}}", NULL), 200);
    ck_assert_int_eq(
        gpd_call(&t, carol, "POST", "/api/v1/queues", "{\"name\":\"b2\",\"parent\":\"B\"}", NULL),
        403);
    ck_assert_int_eq(
        gpd_call(&t, carol, "PATCH", "/api/v1/queues/B", "{\"deserved\":{\"gpu\":8}}", NULL), 403);
    ck_assert_int_eq(
        gpd_call(&t, carol, "PATCH", "/api/v1/queues/A", "{\"deserved\":{\"gpu\":8}}", NULL), 403);
    /* The owner stops its own workload. */
    out = call_ok(&t, alice, "DELETE", path);
    ck_assert_str_eq(json_string_value(json_object_get(out, "state")), "deleted");
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

/* Expects token's call refused with 403 naming field and the limit. */
static void expect_bound(gpd_test *t, const char *token, const char *method, const char *path,
                         const char *body, const char *field, const char *limit) {
    json_t *out = NULL;
    int st = gpd_call(t, token, method, path, body, &out);
    ck_assert_msg(st == 403, "%s %s %s: status %d, expected 403", method, path, body, st);
    json_t *err = json_object_get(out, "error");
    const char *msg = json_string_value(json_object_get(err, "message"));
    ck_assert_str_eq(json_string_value(json_object_get(err, "field")), field);
    ck_assert_msg(msg != NULL && strstr(msg, field) != NULL && strstr(msg, limit) != NULL,
                  "message \"%s\" does not name %s and %s", msg ? msg : "", field, limit);
    json_decref(out);
}

/* The bounds that protect the lenders of GPUs, reclaim_grace_max and
 * min_runtime_max, are not the borrower's to raise: a department admin sets
 * them below its department at most to what applies above (a project once
 * kept other departments' GPUs a day after they reclaimed them). */
START_TEST(test_dept_admin_cannot_raise_lenders_bounds) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    const char *carol = u.carol;
    expect_bound(&t, carol, "PATCH", "/api/v1/queues/a1", "{\"reclaim_grace_max\":86400}",
                 "reclaim_grace_max", "1m");
    expect_bound(&t, carol, "PATCH", "/api/v1/queues/a1", "{\"min_runtime_max\":\"7d\"}",
                 "min_runtime_max", "10m");
    expect_bound(&t, carol, "POST", "/api/v1/queues",
                 "{\"name\":\"a3\",\"parent\":\"A\",\"reclaim_grace_max\":\"1d\"}",
                 "reclaim_grace_max", "1m");
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/queues/a1", NULL, &out), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "reclaim_grace_max")), 60);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "min_runtime_max")), 600);
    json_decref(out);
    /* At or below the department's own: allowed. */
    ck_assert_int_eq(gpd_call(&t, carol, "PATCH", "/api/v1/queues/a1",
                              "{\"reclaim_grace_max\":30,\"min_runtime_max\":\"10m\"}", NULL),
                     200);
    ck_assert_int_eq(
        gpd_call(&t, t.admin, "PATCH", "/api/v1/queues/A", "{\"reclaim_grace_max\":\"1h\"}", NULL),
        200);
    ck_assert_int_eq(
        gpd_call(&t, carol, "PATCH", "/api/v1/queues/a1", "{\"reclaim_grace_max\":\"1h\"}", NULL),
        200);
    expect_bound(&t, carol, "PATCH", "/api/v1/queues/a1", "{\"reclaim_grace_max\":\"2h\"}",
                 "reclaim_grace_max", "1h");
    /* The pool's admin sets anything. */
    ck_assert_int_eq(
        gpd_call(&t, t.admin, "PATCH", "/api/v1/queues/a1", "{\"reclaim_grace_max\":\"1d\"}", NULL),
        200);
    gpd_test_stop(&t);
}
END_TEST

/* A project created without naming the lenders' bounds takes the defaults
 * only up to what applies above it: a department at 5 s and 1 m had its
 * new projects at 1 m and 10 m, the defaults, before. */
START_TEST(test_unnamed_bounds_stay_under_department) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    ck_assert_int_eq(gpd_call(&t, t.admin, "PATCH", "/api/v1/queues/A",
                              "{\"reclaim_grace_max\":\"5s\",\"min_runtime_max\":\"1m\"}", NULL),
                     200);
    ck_assert_int_eq(
        gpd_call(&t, u.carol, "POST", "/api/v1/queues", "{\"name\":\"a3\",\"parent\":\"A\"}", NULL),
        201);
    ck_assert_int_eq(
        gpd_call(&t, t.admin, "POST", "/api/v1/queues", "{\"name\":\"a4\",\"parent\":\"A\"}", NULL),
        201);
    static const char *const made[] = {"/api/v1/queues/a3", "/api/v1/queues/a4"};
    for (size_t i = 0; i < 2; i++) {
        json_t *out = call_ok(&t, t.admin, "GET", made[i]);
        ck_assert_int_eq(json_integer_value(json_object_get(out, "reclaim_grace_max")), 5);
        ck_assert_int_eq(json_integer_value(json_object_get(out, "min_runtime_max")), 60);
        json_decref(out);
    }
    /* A department takes the defaults: nothing above it. */
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/queues", "{\"name\":\"C\"}", NULL),
                     201);
    json_t *out = call_ok(&t, t.admin, "GET", "/api/v1/queues/C");
    ck_assert_int_eq(json_integer_value(json_object_get(out, "reclaim_grace_max")), 60);
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

/* Changes queue with token's PATCH of body, which must succeed. */
static void patch_queue(gpd_test *t, const char *token, const char *queue, const char *body) {
    char path[64];
    snprintf(path, sizeof path, "/api/v1/queues/%s", queue);
    ck_assert_int_eq(gpd_call(t, token, "PATCH", path, body, NULL), 200);
}

/* The lenders' bounds queue's GET shows, in seconds. */
static void expect_bounds(gpd_test *t, const char *queue, int grace, int min_runtime) {
    char path[64];
    snprintf(path, sizeof path, "/api/v1/queues/%s", queue);
    json_t *out = call_ok(t, t->admin, "GET", path);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "reclaim_grace_max")), grace);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "min_runtime_max")), min_runtime);
    json_decref(out);
}

/* Lowering a department's lenders' bounds lowers, in the same change, those
 * of the queues below it that held more: its projects' bounds were set under
 * its old ones and kept them, so the department's no longer held (a1 kept
 * 30 s and 5 m under a department lowered to 5 s and 1 m). A change that
 * lowers nothing leaves the queues below alone, the pool admin's own values
 * above the department's included. */
START_TEST(test_lowered_department_lowers_projects) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    patch_queue(&t, u.carol, "a1", "{\"reclaim_grace_max\":30,\"min_runtime_max\":\"5m\"}");
    patch_queue(&t, u.carol, "a2", "{\"reclaim_grace_max\":3}");
    patch_queue(&t, t.admin, "A", "{\"reclaim_grace_max\":\"5s\",\"min_runtime_max\":\"1m\"}");
    expect_bounds(&t, "A", 5, 60);
    expect_bounds(&t, "a1", 5, 60);
    expect_bounds(&t, "a2", 3, 60); /* already under the new bound */
    expect_bounds(&t, "b1", 60, 600);
    /* A department admin can no longer raise its project to the old value. */
    expect_bound(&t, u.carol, "PATCH", "/api/v1/queues/a1", "{\"reclaim_grace_max\":30}",
                 "reclaim_grace_max", "5s");
    /* The pool's admin sets a project above its department; a change of the
     * department that lowers no bound keeps it. */
    patch_queue(&t, t.admin, "a1", "{\"reclaim_grace_max\":\"1h\"}");
    patch_queue(&t, t.admin, "A", "{\"priority\":5,\"reclaim_grace_max\":\"5s\"}");
    expect_bounds(&t, "a1", 3600, 60);
    gpd_test_stop(&t);
}
END_TEST

/* Deleting a queue ends the tokens scoped to it: a queue made again with
 * the same name, perhaps in another department, is not theirs (researcher
 * tokens of a deleted project once reached its namesake). */
START_TEST(test_deleted_queue_ends_its_tokens) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    char both[128];
    gpd_token(&t, "erin", "researcher", "a2,b1", both, sizeof both);
    const char *job = "{\"project\":\"a1\",\"command\":[\"true\"]}";
    ck_assert_int_eq(gpd_call(&t, u.alice, "GET", "/api/v1/whoami", NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, t.admin, "DELETE", "/api/v1/queues/a1", NULL, NULL), 200);
    ck_assert_int_eq(
        gpd_call(&t, t.admin, "POST", "/api/v1/queues", "{\"name\":\"a1\",\"parent\":\"B\"}", NULL),
        201);
    ck_assert_int_eq(gpd_call(&t, u.alice, "POST", "/api/v1/workloads", job, NULL), 401);
    ck_assert_int_eq(gpd_call(&t, u.dave, "GET", "/api/v1/whoami", NULL, NULL), 401);
    /* Tokens of other queues go on. */
    ck_assert_int_eq(gpd_call(&t, u.bob, "GET", "/api/v1/whoami", NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, both, "GET", "/api/v1/whoami", NULL, NULL), 200);
    /* A department's admin, and a token naming the project among others. */
    ck_assert_int_eq(gpd_call(&t, t.admin, "DELETE", "/api/v1/queues/a2", NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, both, "GET", "/api/v1/whoami", NULL, NULL), 401);
    ck_assert_int_eq(gpd_call(&t, t.admin, "DELETE", "/api/v1/queues/A", NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/queues", "{\"name\":\"A\"}", NULL),
                     201);
    ck_assert_int_eq(gpd_call(&t, u.carol, "GET", "/api/v1/whoami", NULL, NULL), 401);
    ck_assert_int_eq(gpd_call(&t, u.bob, "GET", "/api/v1/whoami", NULL, NULL), 200);
    gpd_test_stop(&t);
}
END_TEST

/* A department admin sees every project of its department, however many:
 * the list of its projects once stopped at 64 and a workload of the 70th
 * was missing from its admin's list, with no error. */
START_TEST(test_dept_admin_sees_all_its_projects) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    char body[128], name[32];
    for (int i = 0; i < 70; i++) {
        snprintf(name, sizeof name, "many-project-%02d", i);
        snprintf(body, sizeof body, "{\"name\":\"%s\",\"parent\":\"A\"}", name);
        ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/queues", body, NULL), 201);
    }
    snprintf(body, sizeof body, "{\"project\":\"%s\",\"command\":[\"true\"]}", name);
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/workloads", body, NULL), 201);
    json_t *out = call_ok(&t, u.carol, "GET", "/api/v1/workloads?limit=1000");
    json_t *list = json_object_get(out, "workloads");
    ck_assert_int_eq(json_array_size(list), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "project")), name);
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

/* Waits (up to a minute) until count workloads are in state. */
static void wait_in_state(gpd_test *t, const char *state, int count) {
    char path[128];
    snprintf(path, sizeof path, "/api/v1/workloads?limit=1000&state=%s", state);
    int got = -1;
    for (int i = 0; i < 600 && got != count; i++) {
        json_t *out;
        ck_assert_int_eq(gpd_call(t, t->admin, "GET", path, NULL, &out), 200);
        got = (int)json_array_size(json_object_get(out, "workloads"));
        json_decref(out);
        if (got != count)
            usleep(100 * 1000);
    }
    ck_assert_msg(got == count, "%d workloads %s, expected %d", got, state, count);
}

/* A project deleted and made again is a new project: its members and its
 * department's admin do not see the old one's workloads, their logs or
 * events (the new project's researcher listed and read them before). */
START_TEST(test_namesake_project_sees_not_the_old) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(&t, u.alice, "POST", "/api/v1/workloads",
                              "{\"project\":\"a1\",\"command\":[\"echo\",\"old\"]}", &out),
                     201);
    char wl[64];
    snprintf(wl, sizeof wl, "/api/v1/workloads/%lld",
             (long long)json_integer_value(json_object_get(out, "id")));
    json_decref(out);
    wait_in_state(&t, "succeeded", 1);
    ck_assert_int_eq(gpd_call(&t, t.admin, "DELETE", "/api/v1/queues/a1", NULL, NULL), 200);
    ck_assert_int_eq(
        gpd_call(&t, t.admin, "POST", "/api/v1/queues", "{\"name\":\"a1\",\"parent\":\"B\"}", NULL),
        201);
    char frank[128], bea[128], path[128];
    gpd_token(&t, "frank", "researcher", "a1", frank, sizeof frank);
    gpd_token(&t, "bea", "dept-admin", "B", bea, sizeof bea);
    const char *const who[] = {frank, bea};
    for (size_t i = 0; i < 2; i++) {
        out = call_ok(&t, who[i], "GET", "/api/v1/workloads?limit=1000");
        ck_assert_int_eq(json_array_size(json_object_get(out, "workloads")), 0);
        json_decref(out);
        ck_assert_int_eq(gpd_call(&t, who[i], "GET", wl, NULL, NULL), 404);
        snprintf(path, sizeof path, "%s/logs", wl);
        ck_assert_int_eq(gpd_call(&t, who[i], "GET", path, NULL, NULL), 404);
        snprintf(path, sizeof path, "%s/events", wl);
        ck_assert_int_eq(gpd_call(&t, who[i], "GET", path, NULL, NULL), 404);
    }
    /* The pool's admin still sees it; the new project's own are seen. */
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", wl, NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, frank, "POST", "/api/v1/workloads",
                              "{\"project\":\"a1\",\"command\":[\"true\"]}", NULL),
                     201);
    out = call_ok(&t, bea, "GET", "/api/v1/workloads?limit=1000");
    ck_assert_int_eq(json_array_size(json_object_get(out, "workloads")), 1);
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

START_TEST(test_tokens_stored_hashed) {
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    char secret[128];
    gpd_token(&t, "alice", "researcher", "a1", secret, sizeof secret);
    ck_assert_int_eq(gpd_call(&t, secret, "GET", "/api/v1/whoami", NULL, NULL), 200);
    /* Neither secret appears anywhere in the store's files. */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cat '%s'/gpupool.db* | grep -a -q -e '%s' -e '%s'", t.dir, secret,
             t.admin);
    ck_assert_int_ne(system(cmd), 0);
    json_t *out;
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/tokens", NULL, &out), 200);
    char *text = json_dumps(out, 0);
    ck_assert_ptr_null(strstr(text, secret));
    free(text);
    json_decref(out);
    /* The admin token file is readable by its owner only. */
    snprintf(cmd, sizeof cmd, "test \"$(stat -c %%a '%s/admin.token')\" = 600", t.dir);
    ck_assert_int_eq(system(cmd), 0);
    gpd_test_stop(&t);
}
END_TEST

/* Where a listed workload stands in order (its key as a number or text). */
static int compare_key(json_t *a, json_t *b, const char *order) {
    static const char *const states[] = {"pending",   "starting",  "running", "stopping",
                                         "suspended", "succeeded", "failed",  "deleted"};
    const char *field = order[0] == '-' ? order + 1 : order;
    if (strcmp(field, "id") == 0 || strcmp(field, "submitted") == 0) {
        const char *f = field[0] == 'i' ? "id" : "submitted_ms";
        json_int_t x = json_integer_value(json_object_get(a, f));
        json_int_t y = json_integer_value(json_object_get(b, f));
        return (x > y) - (x < y);
    }
    if (strcmp(field, "state") == 0) {
        int x = -1, y = -1;
        for (int i = 0; i < 8; i++) {
            if (strcmp(json_string_value(json_object_get(a, "state")), states[i]) == 0)
                x = i;
            if (strcmp(json_string_value(json_object_get(b, "state")), states[i]) == 0)
                y = i;
        }
        return (x > y) - (x < y);
    }
    return strcmp(json_string_value(json_object_get(a, field)),
                  json_string_value(json_object_get(b, field)));
}

/* One user had 33,000 pending workloads accepted: a user holds at most
 * --max-pending-per-user (here 3) pending, beyond which a submit is 429
 * naming the limit and stores nothing; other users and the repeat of an
 * idempotent submit are not held back. */
/* A workload asking for all 8 GPUs of the test pool. */
static const char *const all_gpus =
    "{\"project\":\"a1\",\"command\":[\"sleep\",\"600\"],\"gpu\":8}";

/* The tree and its people, alice's workload running on every GPU: another
 * asking for them stays pending. */
static void pool_taken(gpd_test *t, people *u) {
    setup_tree(t);
    mk_people(t, u);
    ck_assert_int_eq(gpd_call(t, u->alice, "POST", "/api/v1/workloads", all_gpus, NULL), 201);
    wait_in_state(t, "running", 1);
}

START_TEST(test_pending_per_user_bounded) {
    gpd_test t;
    const char *const args[] = {"--max-pending-per-user", "3", NULL};
    gpd_test_start_args(&t, args);
    people u;
    pool_taken(&t, &u);
    const char *W = "/api/v1/workloads", *all = all_gpus;
    const char *keyed =
        "{\"project\":\"a1\",\"command\":[\"true\"],\"gpu\":8,\"client_key\":\"k1\"}";
    ck_assert_int_eq(gpd_call(&t, u.alice, "POST", W, keyed, NULL), 201);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(gpd_call(&t, u.alice, "POST", W, all, NULL), 201);
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(&t, u.alice, "POST", W, all, &out), 429);
    json_t *err = json_object_get(out, "error");
    ck_assert_str_eq(json_string_value(json_object_get(err, "field")), "max_pending_per_user");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(err, "message")), "(3)"));
    json_decref(out);
    wait_in_state(&t, "pending", 3);
    ck_assert_int_eq(gpd_call(&t, u.alice, "POST", W, keyed, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, u.dave, "POST", W, all, NULL), 201);
    wait_in_state(&t, "pending", 4);
    gpd_test_stop(&t);
}
END_TEST

/* A workload's history is bounded: its owner suspending and resuming it in
 * a loop (about a thousand events a second) grew it without end, in the
 * store and in the answer of /events, built whole in the daemon's memory.
 * Its first event and the latest ones are kept. */
START_TEST(test_events_bounded) {
    gpd_test t;
    gpd_test_start(&t);
    people u;
    pool_taken(&t, &u);
    const char *W = "/api/v1/workloads";
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(&t, u.alice, "POST", W, all_gpus, &out), 201);
    long long id = (long long)json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    char path[128];
    for (int i = 0; i < GPD__HISTORY_KEPT / 2 + 50; i++) {
        static const char *const verbs[] = {"suspend", "resume"};
        for (int v = 0; v < 2; v++) {
            snprintf(path, sizeof path, "%s/%lld/%s", W, id, verbs[v]);
            ck_assert_int_eq(gpd_call(&t, u.alice, "POST", path, NULL, NULL), 200);
        }
    }
    snprintf(path, sizeof path, "%s/%lld/events", W, id);
    ck_assert_int_eq(gpd_call(&t, u.alice, "GET", path, NULL, &out), 200);
    json_t *ev = json_object_get(out, "events");
    size_t n = json_array_size(ev);
    ck_assert_msg(n <= GPD__HISTORY_KEPT, "%zu events kept", n);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, 0), "kind")),
                     "submitted");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, n - 1), "kind")),
                     "resumed");
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

/* Walks every page of the list in order, 4 rows a page, and checks the
 * rows come in a strict (key, id) order, all n of them, none twice. */
static void walk_order(gpd_test *t, const char *order, int n) {
    char path[512], cursor[256] = "";
    json_t *prev = NULL;
    int seen = 0, pages = 0, desc = order[0] == '-';
    for (;;) {
        snprintf(path, sizeof path, "/api/v1/workloads?limit=4&order=%s%s%s", order,
                 cursor[0] ? "&cursor=" : "", cursor);
        json_t *out;
        ck_assert_int_eq(gpd_call(t, t->admin, "GET", path, NULL, &out), 200);
        json_t *arr = json_object_get(out, "workloads"), *w;
        size_t i;
        json_array_foreach(arr, i, w) {
            if (prev) {
                int c = compare_key(prev, w, order);
                if (c == 0)
                    c = compare_key(prev, w, "id");
                ck_assert_msg(desc ? c > 0 : c < 0, "order %s: workload %lld before %lld", order,
                              (long long)json_integer_value(json_object_get(prev, "id")),
                              (long long)json_integer_value(json_object_get(w, "id")));
                json_decref(prev);
            }
            prev = json_incref(w);
            seen++;
        }
        pages++;
        json_t *next = json_object_get(out, "next_cursor");
        if (next)
            snprintf(cursor, sizeof cursor, "%s", json_string_value(next));
        json_decref(out);
        if (!next)
            break;
        ck_assert_int_le(pages, n);
    }
    json_decref(prev);
    /* Strictly ordered rows cannot repeat; so seeing n of them is all. */
    ck_assert_msg(seen == n, "order %s: %d workloads seen of %d", order, seen, n);
}

START_TEST(test_list_orders) {
    gpd_test t;
    gpd_test_start(&t);
    /* A limit of one GPU lets at most one workload start before all are
     * suspended (and a third deleted), so no state moves while the pages
     * are walked. */
    static const char *const q[] = {
        "{\"name\":\"S\",\"limit\":{\"gpu\":1}}", "{\"name\":\"s1\",\"parent\":\"S\"}",
        "{\"name\":\"s2\",\"parent\":\"S\"}", "{\"name\":\"s3\",\"parent\":\"S\"}"};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/queues", q[i], NULL), 201);
    char bob[128];
    gpd_token(&t, "bob", "researcher", "s1", bob, sizeof bob);
    /* Ties in every key: three projects, two users, three names, and
     * submissions within the same millisecond. */
    static const char *const projects[] = {"s1", "s2", "s3"}, *const names[] = {"x", "y", "z"};
    const int n = 23;
    for (int i = 0; i < n; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"project\":\"%s\",\"name\":\"%s\",\"command\":[\"sleep\",\"600\"],\"gpu\":1}",
                 projects[i % 3], names[(i / 2) % 3]);
        const char *who = i % 3 == 0 && i % 2 ? bob : t.admin;
        ck_assert_int_eq(gpd_call(&t, who, "POST", "/api/v1/workloads", body, NULL), 201);
    }
    for (int id = 1; id <= n; id++) {
        char path[64];
        snprintf(path, sizeof path, "/api/v1/workloads/%d/suspend", id);
        json_decref(call_ok(&t, t.admin, "POST", path));
    }
    wait_in_state(&t, "suspended", n);
    for (int id = 1; id <= n; id += 3) {
        char path[64];
        snprintf(path, sizeof path, "/api/v1/workloads/%d", id);
        json_decref(call_ok(&t, t.admin, "DELETE", path));
    }
    wait_in_state(&t, "deleted", (n + 2) / 3);
    static const char *const orders[] = {"id",    "-id",    "submitted", "-submitted",
                                         "state", "-state", "project",   "-project",
                                         "user",  "-user",  "name",      "-name"};
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++)
        walk_order(&t, orders[i], n);
    expect_error(&t, "GET", "/api/v1/workloads?order=size", NULL, 400, "order");
    expect_error(&t, "GET", "/api/v1/workloads?order=name&cursor=zz", NULL, 400, "cursor");
    expect_error(&t, "GET", "/api/v1/workloads?order=-id&after=3", NULL, 400, "after");
    /* The states a list may be filtered by are every state and "active",
     * and the refusal of another names each of them. */
    static const char *const states[] = {"active", GP_WL_STATES(GP_ENUM_NAME_OF)};
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/workloads?state=done", NULL, &out), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(out, "error"), "message"));
    ck_assert_ptr_nonnull(msg);
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        char path[96], word[32];
        snprintf(word, sizeof word, " %s", states[i]);
        ck_assert_msg(strstr(msg, word) != NULL, "\"%s\" does not name %s", msg, states[i]);
        snprintf(path, sizeof path, "/api/v1/workloads?state=%s", states[i]);
        ck_assert_int_eq(gpd_call(&t, t.admin, "GET", path, NULL, NULL), 200);
    }
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

/* A workload may be deleted at any moment of its life: just submitted,
 * while the loop binds and launches it, running. Each DELETE is answered
 * 2xx with the workload deleted, never 409 (under ThreadSanitizer a delete
 * was once refused; the deletes here race the loop's launches on purpose),
 * and every workload ends deleted. */
START_TEST(test_delete_at_any_moment) {
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    const int n = 24;
    for (int i = 0; i < n; i++) {
        char path[64];
        submit_path(&t, t.admin, "{\"project\":\"a1\",\"command\":[\"sleep\",\"600\"],\"gpu\":1}",
                    path, sizeof path);
        /* Now, or after 0 to 350 ms: before, during or after the launch. */
        if (i % 8)
            usleep((useconds_t)(i % 8) * 50 * 1000);
        json_t *out = call_ok(&t, t.admin, "DELETE", path);
        ck_assert_str_eq(json_string_value(json_object_get(out, "state")), "deleted");
        json_decref(out);
    }
    wait_in_state(&t, "deleted", n);
    gpd_test_stop(&t);
}
END_TEST

/* Waits (up to a minute) until workload id waits for reason wait; returns
 * its pending_reason (the caller frees it). */
static char *pending_reason(gpd_test *t, int id, const char *wait) {
    char path[64];
    snprintf(path, sizeof path, "/api/v1/workloads/%d", id);
    char *why = NULL;
    const char *got = "";
    for (int i = 0; i < 600 && why == NULL; i++) {
        json_t *out;
        ck_assert_int_eq(gpd_call(t, t->admin, "GET", path, NULL, &out), 200);
        const char *w = json_string_value(json_object_get(out, "wait"));
        got = w != NULL && strcmp(w, wait) == 0 ? wait : "";
        if (got[0])
            why = strdup(json_string_value(json_object_get(out, "pending_reason")));
        json_decref(out);
        if (why == NULL)
            usleep(100 * 1000);
    }
    ck_assert_msg(why != NULL, "workload %d never waited for %s", id, wait);
    return why;
}

/* The engine says what holds; the daemon adds the remedy in the CLI's words
 * (the command that raises a limit, the flag a workload was submitted with). */
START_TEST(test_pending_reasons_name_the_cli) {
    gpd_test t;
    gpd_test_start(&t);
    static const char *const q[] = {"{\"name\":\"lim\",\"limit\":{\"gpu\":1}}",
                                    "{\"name\":\"own\",\"deserved\":{\"gpu\":1}}"};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/queues", q[i], NULL), 201);
    static const char *const w[] = {
        "{\"project\":\"lim\",\"command\":[\"sleep\",\"600\"],\"gpu\":1}",
        "{\"project\":\"lim\",\"command\":[\"sleep\",\"600\"],\"gpu\":1}",
        "{\"project\":\"own\",\"command\":[\"sleep\",\"600\"],\"gpu\":2,"
        "\"kind\":\"train\",\"preemptible\":false}"};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/workloads", w[i], NULL), 201);
    char *why = pending_reason(&t, 2, "queue_limit");
    ck_assert_str_eq(why, "project lim is at its limit of 1 GPU (it holds 1 GPU); an administrator "
                          "can raise it: gpupool queue set lim --limit N");
    free(why);
    why = pending_reason(&t, 3, "deserved");
    ck_assert_msg(strstr(why, "non-preemptible workloads run only inside deserved quota") != NULL &&
                      strstr(why, "; it was submitted with --no-preempt, without which training "
                                  "may borrow idle GPUs") != NULL,
                  "%s", why);
    free(why);
    gpd_test_stop(&t);
}
END_TEST

/* Opens a console session with token; copies its secret into secret. */
static json_t *console_session(gpd_test *t, const char *token, char *secret, size_t len) {
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(t, token, "POST", "/api/v1/console/session", NULL, &out), 201);
    const char *s = json_string_value(json_object_get(out, "session"));
    ck_assert_ptr_nonnull(s);
    snprintf(secret, len, "%s", s);
    return out;
}

/* The console's sign-out revoked nothing (the token went on working): the
 * console exchanges its token for a session that stands for the token, that
 * sign-out revokes, that never makes another, and that ends with its token. */
START_TEST(test_console_session_revoked) {
    gpd_test t;
    people u;
    start_with_people(&t, &u);
    char s1[128], s2[128];
    json_t *out = console_session(&t, u.alice, s1, sizeof s1);
    ck_assert_int_eq(strncmp(s1, "gpc_", 4), 0);
    ck_assert_int_eq(strlen(s1), 52);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "idle_timeout_s")), 1800);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "lifetime_s")), 43200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "user")), "alice");
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, s1, "GET", "/api/v1/whoami", NULL, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "user")), "alice");
    ck_assert_str_eq(json_string_value(json_object_get(out, "scope")), "a1");
    json_decref(out);
    /* A session has its token's rights, no more. */
    ck_assert_int_eq(gpd_call(&t, s1, "GET", "/api/v1/tokens", NULL, NULL), 403);
    /* A session cannot make another (which would stretch its lifetime). */
    ck_assert_int_eq(gpd_call(&t, s1, "POST", "/api/v1/console/session", NULL, &out), 403);
    json_decref(out);
    /* Sign-out with a token is refused: it revokes sessions, not tokens. */
    ck_assert_int_eq(gpd_call(&t, u.alice, "DELETE", "/api/v1/console/session", NULL, NULL), 400);
    /* Sign-out revokes the session, and only it. */
    json_decref(console_session(&t, u.alice, s2, sizeof s2));
    ck_assert_int_eq(gpd_call(&t, s1, "DELETE", "/api/v1/console/session", NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, s1, "GET", "/api/v1/whoami", NULL, &out), 401);
    const char *msg = json_string_value(json_object_get(json_object_get(out, "error"), "message"));
    ck_assert_ptr_nonnull(strstr(msg, "revoked"));
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, s1, "DELETE", "/api/v1/console/session", NULL, NULL), 401);
    ck_assert_int_eq(gpd_call(&t, s2, "GET", "/api/v1/whoami", NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, u.alice, "GET", "/api/v1/whoami", NULL, NULL), 200);
    /* Revoking the token ends its sessions. */
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/whoami", NULL, &out), 200);
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, u.alice, "GET", "/api/v1/whoami", NULL, &out), 200);
    char del[64];
    snprintf(del, sizeof del, "/api/v1/tokens/%lld",
             (long long)json_integer_value(json_object_get(out, "token_id")));
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, t.admin, "DELETE", del, NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, s2, "GET", "/api/v1/whoami", NULL, NULL), 401);
    /* Neither secret is kept in the store's files (sessions are in memory,
     * hashed). */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cat '%s'/gpupool.db* | grep -a -q -e '%s' -e '%s'", t.dir, s1, s2);
    ck_assert_int_ne(system(cmd), 0);
    gpd_test_stop(&t);
}
END_TEST

/* A session ends once unused for --console-idle-timeout, used or not once
 * --console-lifetime old; the answer says which and to sign in again. */
START_TEST(test_console_session_times_out) {
    gpd_test t;
    const char *const args[] = {"--console-idle-timeout", "2s", "--console-lifetime", "4s", NULL};
    gpd_test_start_args(&t, args);
    char idle[128], old[128];
    json_t *out = console_session(&t, t.admin, idle, sizeof idle);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "idle_timeout_s")), 2);
    json_decref(out);
    int64_t used = gp_clock_ms(CLOCK_MONOTONIC);
    ck_assert_int_eq(gpd_call(&t, idle, "GET", "/api/v1/whoami", NULL, NULL), 200);
    /* Unused for more than the idle timeout (the test waits out the very
     * timeout it checks, with margin for a loaded machine). */
    while (gp_clock_ms(CLOCK_MONOTONIC) - used < 2500)
        usleep(50 * 1000);
    ck_assert_int_eq(gpd_call(&t, idle, "GET", "/api/v1/whoami", NULL, &out), 401);
    const char *msg = json_string_value(json_object_get(json_object_get(out, "error"), "message"));
    ck_assert_msg(strstr(msg, "idle") && strstr(msg, "sign in again"), "%s", msg);
    json_decref(out);
    /* Used all the time, a session still ends at its lifetime. */
    json_decref(console_session(&t, t.admin, old, sizeof old));
    int64_t born = gp_clock_ms(CLOCK_MONOTONIC);
    int code = 200;
    while (code == 200 && gp_clock_ms(CLOCK_MONOTONIC) - born < 30000) {
        out = NULL;
        code = gpd_call(&t, old, "GET", "/api/v1/whoami", NULL, &out);
        if (code == 200)
            json_decref(out);
        usleep(200 * 1000);
    }
    ck_assert_int_eq(code, 401);
    ck_assert_int_ge(gp_clock_ms(CLOCK_MONOTONIC) - born, 4000);
    msg = json_string_value(json_object_get(json_object_get(out, "error"), "message"));
    ck_assert_msg(strstr(msg, "older than 4s") != NULL, "%s", msg);
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/whoami", NULL, NULL), 200);
    gpd_test_stop(&t);
}
END_TEST

/* 30 CPU-only workloads ran on a 2-core node counting 0: a project's
 * default_cpu and default_memory are given to each task of a submission
 * that asks for none (written into its request, and counted on its node),
 * never to one that asks; a bad default is refused, naming it, and changes
 * nothing. */
START_TEST(test_project_default_resources) {
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    ck_assert_int_eq(gpd_call(&t, t.admin, "PATCH", "/api/v1/queues/a1",
                              "{\"default_cpu\":\"1.5\",\"default_memory\":\"2G\"}", NULL),
                     200);
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(&t, t.admin, "PATCH", "/api/v1/queues/a1",
                              "{\"default_cpu\":\"lots\",\"default_memory\":\"1G\"}", &out),
                     400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(out, "error"), "field")),
                     "default_cpu");
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/queues/a1", NULL, &out), 200);
    ck_assert(json_real_value(json_object_get(out, "default_cpu")) == 1.5);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "default_memory")), 2LL << 30);
    json_decref(out);
    char bare[128], own[128];
    submit_path(&t, t.admin, "{\"project\":\"a1\",\"command\":[\"sleep\",\"600\"],\"gpu\":1}", bare,
                sizeof bare);
    submit_path(&t, t.admin,
                "{\"project\":\"a1\",\"command\":[\"sleep\",\"600\"],\"gpu\":1,\"cpu\":0.25,"
                "\"memory\":\"1G\"}",
                own, sizeof own);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", bare, NULL, &out), 200);
    json_t *spec = json_object_get(out, "spec");
    ck_assert_str_eq(json_string_value(json_object_get(spec, "cpu")), "1.5");
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "memory")), 2LL << 30);
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", own, NULL, &out), 200);
    spec = json_object_get(out, "spec");
    ck_assert(json_number_value(json_object_get(spec, "cpu")) == 0.25);
    json_decref(out);
    /* Both run; the node counts 1.75 CPUs for them. */
    wait_in_state(&t, "running", 2);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/nodes", NULL, &out), 200);
    double cpu = 0;
    json_t *n;
    size_t i;
    json_array_foreach(json_object_get(out, "nodes"), i, n) cpu +=
        json_number_value(json_object_get(n, "cpu_used"));
    ck_assert_msg(cpu == 1.75, "cpu_used %g", cpu);
    json_decref(out);
    /* Another project has no defaults. */
    submit_path(&t, t.admin, "{\"project\":\"b1\",\"command\":[\"true\"],\"gpu\":1}", bare,
                sizeof bare);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", bare, NULL, &out), 200);
    ck_assert_ptr_null(json_object_get(json_object_get(out, "spec"), "cpu"));
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

/* Whether process pid still runs (a zombie not yet reaped does not). */
static int runs(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z';
}

/* A stopped gpupoold leaves its tasks running for its next start, so the
 * harness kills them when a test stops its daemon: every test of this file
 * that ran a "sleep 600" left it running for ten minutes. */
START_TEST(test_stop_leaves_no_task) {
    gpd_test t;
    gpd_test_start(&t);
    setup_tree(&t);
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/workloads",
                              "{\"project\":\"a1\",\"command\":[\"sleep\",\"600\"],\"gpu\":1}",
                              NULL),
                     201);
    wait_in_state(&t, "running", 1);
    char cmd[600], line[32] = "";
    snprintf(cmd, sizeof cmd, "sed -n 's/^pid=//p' '%s'/tasks/*/task | head -1", t.dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
    pclose(p);
    int pid = atoi(line);
    ck_assert_int_gt(pid, 1);
    ck_assert(runs(pid));
    gpd_test_stop(&t);
    int alive = 1;
    for (int i = 0; i < 300 && alive; i++) {
        alive = runs(pid);
        if (alive)
            usleep(100 * 1000);
    }
    ck_assert_msg(!alive, "task %d still runs 30 s after its daemon's test stopped", pid);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_bad_input_changes_nothing);
    tcase_add_test(tc, test_number_ranges);
    tcase_add_test(tc, test_reserved_environment);
    tcase_add_test(tc, test_environment_bounded);
    tcase_add_test(tc, test_pending_per_user_bounded);
    tcase_add_test(tc, test_events_bounded);
    tcase_add_test(tc, test_roles_and_scopes);
    tcase_add_test(tc, test_dept_admin_cannot_raise_lenders_bounds);
    tcase_add_test(tc, test_unnamed_bounds_stay_under_department);
    tcase_add_test(tc, test_lowered_department_lowers_projects);
    tcase_add_test(tc, test_deleted_queue_ends_its_tokens);
    tcase_add_test(tc, test_dept_admin_sees_all_its_projects);
    tcase_add_test(tc, test_env_values_only_for_submitter);
    tcase_add_test(tc, test_namesake_project_sees_not_the_old);
    tcase_add_test(tc, test_tokens_stored_hashed);
    tcase_add_test(tc, test_console_session_revoked);
    tcase_add_test(tc, test_project_default_resources);
    tcase_add_test(tc, test_console_session_times_out);
    tcase_add_test(tc, test_list_orders);
    tcase_add_test(tc, test_delete_at_any_moment);
    tcase_add_test(tc, test_pending_reasons_name_the_cli);
    tcase_add_test(tc, test_stop_leaves_no_task);
}

GP_TEST_MAIN("daemon/api", add_tests)
