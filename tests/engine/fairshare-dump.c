/*
 * fairshare-dump.c — reads queue trees as text, builds each in a fresh
 * engine (allocation off, so that what the queues ask for is exactly what the
 * text submits), runs one cycle and prints every queue's fair share. The
 * reference implementation in fairshare_ref.py compares its own division
 * with these figures (tests/engine/test-fairshare-ref.sh).
 *
 * Input, one tree after another, each line one of:
 *   node NAME GPUS                       a node with GPUS whole GPUs
 *   queue NAME PARENT|- DESERVED LIMIT|- WEIGHT PRIORITY    (GPU in milli-GPU)
 *   work QUEUE MILLI TASKS               a workload: MILLI per task (a
 *                                        fraction below 1000, else whole GPUs)
 *   end                                  run the cycle and print
 * Output, per tree: "refused I" for each work line (counted from 0 in the
 * tree) the engine refused, "share NAME FAIR" per queue, then "end".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gp_engine.h"

static gp_engine *fresh(void) {
    gp_engine_config c;
    gp_engine_config_init(&c);
    c.allocate = 0;
    c.check_invariants = 1;
    gp_engine *e = NULL;
    char err[GP_ERR_MAX] = "";
    if (gp_engine_open(&c, &e, err, sizeof err) < 0)
        fprintf(stderr, "fairshare-dump: %s\n", err);
    return e;
}

static int add_node(gp_engine *e, const char *name, int gpus) {
    gp_node_spec n;
    gp_node_spec_init(&n, name);
    n.cpu_milli = 1000000;
    n.mem_bytes = INT64_C(1) << 42;
    n.ngpus = gpus;
    for (int i = 0; i < gpus; i++) {
        snprintf(n.gpus[i].model, sizeof n.gpus[i].model, "H100");
        n.gpus[i].mem_bytes = INT64_C(80) << 30;
        n.gpus[i].index = i;
    }
    return gp_engine_node_set(e, &n, NULL, 0);
}

static int add_queue(gp_engine *e, const char *name, const char *parent, int64_t des,
                     const char *limit, int weight, int prio, char *err, size_t errlen) {
    gp_queue_spec q;
    gp_queue_spec_init(&q, name, strcmp(parent, "-") == 0 ? "" : parent);
    q.quota[GP_RES_GPU].deserved = des;
    if (strcmp(limit, "-") != 0)
        q.quota[GP_RES_GPU].limit = strtoll(limit, NULL, 10);
    q.quota[GP_RES_GPU].weight = weight;
    q.priority = prio;
    return gp_engine_queue_set(e, &q, err, errlen);
}

static int add_work(gp_engine *e, uint64_t id, const char *queue, int milli, int tasks) {
    gp_workload_spec w;
    gp_workload_spec_init(&w, id, queue);
    w.tasks = tasks;
    if (milli < 1000) {
        w.req.gpu = GP_GPU_FRACTION;
        w.req.gpu_milli = milli;
    } else {
        w.req.gpu = GP_GPU_WHOLE;
        w.req.gpus = milli / 1000;
    }
    return gp_engine_submit(e, &w, NULL, 0);
}

int main(void) {
    char line[512], a[128], b[128], c[128];
    gp_engine *e = fresh();
    int nwork = 0;
    uint64_t id = 1;
    while (e && fgets(line, sizeof line, stdin)) {
        long long x, y, z;
        char err[GP_ERR_MAX] = "";
        if (sscanf(line, "node %127s %lld", a, &x) == 2) {
            if (add_node(e, a, (int)x) != 0) {
                fprintf(stderr, "fairshare-dump: node %s refused\n", a);
                return 1;
            }
        } else if (sscanf(line, "queue %127s %127s %lld %127s %lld %lld", a, b, &x, c, &y, &z) ==
                   6) {
            if (add_queue(e, a, b, x, c, (int)y, (int)z, err, sizeof err) != 0) {
                fprintf(stderr, "fairshare-dump: queue %s: %s\n", a, err);
                return 1;
            }
        } else if (sscanf(line, "work %127s %lld %lld", a, &x, &y) == 3) {
            if (add_work(e, id++, a, (int)x, (int)y) != 0)
                printf("refused %d\n", nwork);
            nwork++;
        } else if (strncmp(line, "end", 3) == 0) {
            const gp_decision *d;
            size_t n;
            if (gp_engine_cycle(e, 0, &d, &n, NULL) != 0) {
                fprintf(stderr, "fairshare-dump: cycle failed\n");
                return 1;
            }
            for (size_t i = 0; i < gp_engine_queue_count(e); i++) {
                gp_queue_info qi;
                gp_engine_queue_at(e, i, &qi);
                printf("share %s %" PRId64 "\n", qi.name, qi.fair_share.v[GP_RES_GPU]);
            }
            printf("end\n");
            gp_engine_free(e);
            e = fresh();
            nwork = 0;
        }
    }
    int ok = e != NULL;
    gp_engine_free(e);
    return ok ? 0 : 1;
}
