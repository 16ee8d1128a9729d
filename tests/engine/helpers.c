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
    return t_open(&c);
}

gp_engine *t_open(const gp_engine_config *c) {
    gp_engine *e = NULL;
    char err[GP_ERR_MAX] = "";
    int rc = gp_engine_open(c, &e, err, sizeof err);
    ck_assert_msg(rc == 0 && e, "gp_engine_open: %d %s", rc, err);
    return e;
}

void t_node_spec(gp_node_spec *n, const char *name, int ngpus, const char *model, int64_t gib,
                 const char *domain) {
    gp_node_spec_init(n, name);
    snprintf(n->domain, sizeof n->domain, "%s", domain ? domain : "");
    n->cpu_milli = 64000;
    n->mem_bytes = 512 * GIB;
    n->ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        snprintf(n->gpus[i].uuid, sizeof n->gpus[i].uuid, "GPU-%s-%d", name, i);
        snprintf(n->gpus[i].model, sizeof n->gpus[i].model, "%s", model);
        n->gpus[i].mem_bytes = gib * GIB;
        n->gpus[i].index = i;
    }
}

void t_node(gp_engine *e, const char *name, int ngpus, const char *model, int64_t gib,
            const char *domain) {
    gp_node_spec n;
    t_node_spec(&n, name, ngpus, model, gib, domain);
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

void t_want(gp_engine *e, uint64_t id, const char *q, int gpus) {
    for (int k = 0; k < gpus; k++)
        ck_assert_int_eq(t_submit(e, id * 1000 + (uint64_t)k, q, GP_KIND_TRAIN, 1, 1, 0, 0), 0);
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
        if (d[i].type == GP_DECISION_EVICT && auto_release && d[i].reason != GP_EVICT_NODE_GONE)
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

int t_state(gp_engine *e, uint64_t id) {
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

/* ---- Random event sequences ---- */

typedef struct rnd {
    uint64_t s;
} rnd;

static uint64_t rnext(rnd *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static int rint_(rnd *r, int lo, int hi) { /* inclusive */
    return lo + (int)(rnext(r) % (uint64_t)(hi - lo + 1));
}

static uint64_t hash_mix(uint64_t h, uint64_t v) {
    return (h ^ v) * UINT64_C(0x100000001b3) + (h >> 29);
}

static void random_node(gp_engine *e, rnd *r, int i) {
    gp_node_spec n;
    char name[16];
    snprintf(name, sizeof name, "n%d", i);
    gp_node_spec_init(&n, name);
    snprintf(n.domain, sizeof n.domain, "rack%d", i % 2);
    n.cpu_milli = rint_(r, 8, 64) * 1000;
    n.mem_bytes = rint_(r, 64, 512) * GIB;
    n.ngpus = rint_(r, 1, 8);
    const char *model = i % 3 == 0 ? "A100" : "H100";
    for (int g = 0; g < n.ngpus; g++) {
        snprintf(n.gpus[g].model, sizeof n.gpus[g].model, "%s", model);
        n.gpus[g].mem_bytes = (i % 3 == 0 ? 40 : 80) * GIB;
        if (g == 0 && i % 4 == 1) {
            n.gpus[g].mig = 1;
            n.gpus[g].nmig = 3;
            snprintf(n.gpus[g].mig_layout[0], 16, "3g.40gb");
            snprintf(n.gpus[g].mig_layout[1], 16, "2g.20gb");
            snprintf(n.gpus[g].mig_layout[2], 16, "1g.10gb");
        }
    }
    /* Half the nodes can pause, with half their memory for paused tasks. */
    n.can_pause = i % 2;
    n.paused_mem_max = n.mem_bytes / 2;
    /* Some GPUs held outside the pool, bound ones or not. */
    if (rint_(r, 0, 2) == 0)
        n.gpus_taken = rint_(r, 0, n.ngpus);
    char err[GP_ERR_MAX];
    ck_assert_msg(gp_engine_node_set(e, &n, err, sizeof err) == 0, "%s", err);
}

static const char *const projects[] = {"p0", "p1", "p2", "p3"};

static void random_queues(gp_engine *e, rnd *r) {
    t_queue(e, "d0", "", rint_(r, 0, 8), -1, rint_(r, 0, 3));
    int des = rint_(r, 0, 8);
    t_queue(e, "d1", "", des, rint_(r, 0, 1) ? -1 : des + rint_(r, 0, 20), rint_(r, 1, 3));
    for (int i = 0; i < 4; i++)
        t_queue(e, projects[i], i < 2 ? "d0" : "d1", rint_(r, 0, 6),
                rint_(r, 0, 3) ? -1 : rint_(r, 6, 20), rint_(r, 0, 3));
}

static void random_submit(gp_engine *e, rnd *r, uint64_t id, gp_time_ms now) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, projects[rint_(r, 0, 3)]);
    w.kind = (gp_kind)rint_(r, 0, 2);
    w.on_preempt = (gp_on_preempt)(id % 3);
    w.priority = rint_(r, 0, 3);
    w.submitted = now;
    w.min_runtime = rint_(r, 0, 1) ? 0 : rint_(r, 0, 5000);
    w.tasks = rint_(r, 0, 3) ? 1 : rint_(r, 2, 4);
    w.min_tasks = w.tasks > 1 && rint_(r, 0, 1) ? rint_(r, 1, w.tasks) : 0;
    w.same_domain = w.tasks > 1 ? rint_(r, 0, 1) : 0;
    w.req.cpu_milli = rint_(r, 0, 4) * 1000;
    w.req.mem_bytes = rint_(r, 0, 16) * GIB;
    switch (rint_(r, 0, 5)) {
    case 0:
    case 1:
        w.req.gpu = GP_GPU_WHOLE;
        w.req.gpus = rint_(r, 1, 2);
        break;
    case 2:
    case 3:
        w.req.gpu = GP_GPU_FRACTION;
        w.req.gpu_milli = rint_(r, 1, 9) * 100;
        break;
    case 4:
        w.req.gpu = GP_GPU_MEMORY;
        w.req.gpu_mem = rint_(r, 1, 39) * GIB;
        break;
    default:
        w.req.gpu = GP_GPU_MIG;
        snprintf(w.req.mig_profile, sizeof w.req.mig_profile, "%s",
                 rint_(r, 0, 1) ? "1g.10gb" : "2g.20gb");
        break;
    }
    if (rint_(r, 0, 5) == 0) {
        w.req.nmodels = 1;
        snprintf(w.req.models[0], sizeof w.req.models[0], "H100");
    }
    gp_engine_submit(e, &w, NULL, 0); /* refusals are fine: nothing changes */
}

/* A random live workload in state s (or any if s < 0), or 0. */
static uint64_t random_in_state(gp_engine *e, rnd *r, uint64_t maxid, int s) {
    for (int tries = 0; tries < 8; tries++) {
        uint64_t id = 1 + rnext(r) % maxid;
        gp_workload_info wi;
        if (gp_engine_workload_get(e, id, &wi) == 0 && (s < 0 || (int)wi.state == s))
            return id;
    }
    return 0;
}

uint64_t t_random_run(uint64_t seed, int steps, gp_placement placement) {
    rnd r = {seed * UINT64_C(0x9e3779b97f4a7c15) | 1};
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.check_invariants = 1;
    c.seed = seed;
    c.placement = placement;
    c.aging_interval = 3000;
    gp_engine *e = t_open(&c);
    ck_assert_ptr_nonnull(e);
    int nnodes = rint_(&r, 1, 5);
    for (int i = 0; i < nnodes; i++)
        random_node(e, &r, i);
    random_queues(e, &r);
    uint64_t h = 0, next_id = 1;
    gp_time_ms now = 0;
    uint64_t held[64];
    int nheld = 0;
    for (int step = 0; step < steps; step++) {
        int a = rint_(&r, 0, 99);
        if (a < 35) {
            random_submit(e, &r, next_id++, now);
        } else if (a < 45) {
            uint64_t id = random_in_state(e, &r, next_id, GP_STATE_RUNNING);
            if (id)
                ck_assert_int_eq(gp_engine_finished(e, id), 0);
        } else if (a < 49) {
            uint64_t id = random_in_state(e, &r, next_id, -1);
            if (id)
                ck_assert_int_eq(gp_engine_cancel(e, id), 0);
        } else if (a < 52) {
            uint64_t id = random_in_state(e, &r, next_id, GP_STATE_RUNNING);
            if (id)
                ck_assert_int_eq(gp_engine_requeue(e, id), 0);
        } else if (a < 54) {
            char name[16];
            int i = rint_(&r, 0, nnodes - 1);
            snprintf(name, sizeof name, "n%d", i);
            if (gp_engine_node_remove(e, name) != 0)
                random_node(e, &r, i);
        } else if (a < 56) {
            random_queues(e, &r);
        } else {
            now += rint_(&r, 1, 2000);
            const gp_decision *d;
            size_t n;
            int rc = gp_engine_cycle(e, now, &d, &n, NULL);
            char err[GP_ERR_MAX] = "";
            ck_assert_msg(rc == 0, "seed %llu step %d: cycle %s: %s", (unsigned long long)seed,
                          step, gp_strerror(rc), gp_engine_check(e, err, sizeof err) ? err : "");
            for (size_t i = 0; i < n; i++) {
                gp_workload_info wi;
                ck_assert_int_eq(gp_engine_workload_get(e, d[i].workload, &wi), 0);
                h = hash_mix(h, d[i].type * 31 + d[i].workload);
                if (d[i].type == GP_DECISION_BIND) {
                    ck_assert_int_eq(wi.state, GP_STATE_BOUND);
                    ck_assert_int_ge(d[i].ntasks, 1);
                    for (int t = 0; t < d[i].ntasks; t++)
                        for (int s = 0; s < d[i].tasks[t].nslices; s++)
                            h = hash_mix(h, (uint64_t)d[i].tasks[t].slices[s].gpu * 7 +
                                                (uint64_t)d[i].tasks[t].slices[s].milli +
                                                (uint64_t)d[i].tasks[t].node[1]);
                    if (d[i].resume && rint_(&r, 0, 3) == 0)
                        ck_assert_int_eq(gp_engine_paused(e, d[i].workload, now), 0); /* failed */
                    else if (rint_(&r, 0, 9))
                        ck_assert_int_eq(gp_engine_started(e, d[i].workload, now), 0);
                } else if (d[i].reason != GP_EVICT_NODE_GONE) {
                    ck_assert_int_eq(wi.state, GP_STATE_EVICTING);
                    ck_assert_int_eq(wi.preemptible, 1);
                    if (d[i].mode == GP_ON_PREEMPT_PAUSE && rint_(&r, 0, 3))
                        ck_assert_int_eq(gp_engine_paused(e, d[i].workload, now), 0);
                    else if (nheld < 64 && rint_(&r, 0, 2) == 0)
                        held[nheld++] = d[i].workload; /* a slow checkpoint */
                    else
                        ck_assert_int_eq(gp_engine_released(e, d[i].workload, now), 0);
                }
            }
            /* Slow checkpoints finish some cycles later. */
            for (int i = 0; i < nheld; i++) {
                if (rint_(&r, 0, 2) == 0) {
                    gp_engine_released(e, held[i], now); /* may be gone: cancelled */
                    held[i--] = held[--nheld];
                }
            }
            /* Bound but not yet started workloads start now. */
            for (int k = 0; k < 4; k++) {
                uint64_t id = random_in_state(e, &r, next_id, GP_STATE_BOUND);
                if (id)
                    ck_assert_int_eq(gp_engine_started(e, id, now), 0);
            }
        }
    }
    char err[GP_ERR_MAX] = "";
    ck_assert_msg(gp_engine_check(e, err, sizeof err) == 0, "seed %llu: %s",
                  (unsigned long long)seed, err);
    gp_engine_free(e);
    return h;
}
