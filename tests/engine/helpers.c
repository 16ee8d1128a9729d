/*
 * helpers.c — see helpers.h. Every helper asserts its own success, so a test
 * reads as the scenario it checks.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gptest.h"

gp_engine *t_engine(void) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.check_invariants = 1;
    c.aging_interval = 0;
    gp_engine *e = gp_engine_new(&c);
    ck_assert_ptr_nonnull(e);
    return e;
}

void t_node(gp_engine *e, const char *name, int ngpus, const char *model, int64_t gib,
            const char *domain) {
    gp_node_spec n;
    gp_node_spec_init(&n, name);
    snprintf(n.domain, sizeof n.domain, "%s", domain ? domain : "");
    n.cpu_milli = 64000;
    n.mem_bytes = 512 * GIB;
    n.ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        snprintf(n.gpus[i].uuid, sizeof n.gpus[i].uuid, "GPU-%s-%d", name, i);
        snprintf(n.gpus[i].model, sizeof n.gpus[i].model, "%s", model);
        n.gpus[i].mem_bytes = gib * GIB;
        n.gpus[i].index = i;
    }
    char err[GP_ERR_MAX] = "";
    int rc = gp_engine_node_set(e, &n, err, sizeof err);
    ck_assert_msg(rc == 0, "node_set %s: %s", name, err);
}

void t_queue(gp_engine *e, const char *name, const char *parent, double deserved_gpus,
             double limit_gpus, int weight) {
    gp_queue_spec q;
    gp_queue_spec_init(&q, name, parent);
    q.quota[GP_RES_GPU].deserved = llround(deserved_gpus * GP_MILLI);
    if (limit_gpus >= 0)
        q.quota[GP_RES_GPU].limit = llround(limit_gpus * GP_MILLI);
    q.quota[GP_RES_GPU].weight = weight;
    char err[GP_ERR_MAX] = "";
    int rc = gp_engine_queue_set(e, &q, err, sizeof err);
    ck_assert_msg(rc == 0, "queue_set %s: %s", name, err);
}

int t_submit(gp_engine *e, uint64_t id, const char *queue, gp_kind kind, double gpus, int tasks,
             int priority, gp_time_ms now) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, queue);
    w.kind = kind;
    w.tasks = tasks;
    w.priority = priority;
    w.submitted = now;
    if (gpus >= 1) {
        w.req.gpu = GP_GPU_WHOLE;
        w.req.gpus = (int32_t)gpus;
    } else if (gpus > 0) {
        w.req.gpu = GP_GPU_FRACTION;
        w.req.gpu_milli = (int32_t)llround(gpus * GP_MILLI);
    }
    char err[GP_ERR_MAX] = "";
    return gp_engine_submit(e, &w, err, sizeof err);
}

size_t t_cycle(gp_engine *e, gp_time_ms now, int auto_start, int auto_release,
               const gp_decision **out) {
    const gp_decision *d;
    size_t n;
    int rc = gp_engine_cycle(e, now, &d, &n, NULL);
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "invariants: %s", err);
    ck_assert_msg(rc == 0, "cycle: %s", gp_strerror(rc));
    for (size_t i = 0; i < n; i++) {
        if (d[i].type == GP_DECISION_BIND && auto_start)
            ck_assert_int_eq(gp_engine_started(e, d[i].workload, now), 0);
        if (d[i].type == GP_DECISION_EVICT && auto_release &&
            d[i].reason != GP_EVICT_NODE_GONE)
            ck_assert_int_eq(gp_engine_released(e, d[i].workload, now), 0);
    }
    ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "invariants: %s", err);
    if (out)
        *out = d;
    return n;
}

size_t t_count(const gp_decision *d, size_t n, gp_decision_type type, gp_evict_reason reason) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += d[i].type == type && (reason == 0 || d[i].reason == reason);
    return c;
}

int t_state(const gp_engine *e, uint64_t id) {
    gp_workload_info wi;
    return gp_engine_workload_get(e, id, &wi) == 0 ? (int)wi.state : -1;
}

int64_t t_alloc(const gp_engine *e, const char *queue) {
    gp_queue_info qi;
    ck_assert_int_eq(gp_engine_queue_get(e, queue, &qi), 0);
    return qi.allocated.v[GP_RES_GPU];
}

int64_t t_fair(const gp_engine *e, const char *queue) {
    gp_queue_info qi;
    ck_assert_int_eq(gp_engine_queue_get(e, queue, &qi), 0);
    return qi.fair_share.v[GP_RES_GPU];
}
