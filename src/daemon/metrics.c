/*
 * metrics.c — GET /metrics in Prometheus text format (version 0.0.4): per
 * queue the deserved quota, fair share, allocated and really used GPUs;
 * pending workloads by reason; workloads by state; per GPU the allocated
 * share, slices, allocated and used memory; busy ratios per GPU and queue
 * and borrowed / lent GPUs from the last usage sample (usage.h); the
 * scheduling-cycle latency histogram; the time attempts waited in the
 * executor before running.
 *
 * "Really used" GPUs of a queue are the GPU memory its running tasks report
 * in use, counted in GPUs' worth of memory, since memory is what the
 * executors can measure on every GPU kind (emulated ones report nothing).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api.h"
#include "daemon/sched.h"
#include "daemon/store.h"

/* A family of metrics: its name and its help text. */
typedef struct family {
    const char *name, *text;
} family;

static void help(gpd__text *b, const char *name, const char *type, const char *text) {
    gpd__text_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* GPUs' worth of memory in use per queue, from the live tasks. */
static double used_gpus(gp_engine *eng, const gpd__live_task *lt, size_t n, const char *queue) {
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        /* The queue counts its own projects' tasks and its subtree's. */
        char cur[GP_NAME_MAX + 1];
        snprintf(cur, sizeof cur, "%s", lt[i].project);
        int in = 0;
        for (int d = 0; cur[0] && d < 64 && !in; d++) {
            gp_queue_info qi;
            if (strcmp(cur, queue) == 0)
                in = 1;
            else if (gp_engine_queue_get(eng, cur, &qi) == 0)
                snprintf(cur, sizeof cur, "%s", qi.parent);
            else
                break;
        }
        if (!in || lt[i].gpu_mem_used <= 0 || lt[i].binding.nslices == 0)
            continue;
        gp_node_info ni;
        if (gp_engine_node_get(eng, lt[i].node, &ni) < 0)
            continue;
        int g = lt[i].binding.slices[0].gpu;
        if (g >= 0 && g < ni.ngpus && ni.gpus[g].mem_bytes > 0)
            total += (double)lt[i].gpu_mem_used / (double)ni.gpus[g].mem_bytes;
    }
    return total;
}

static void queues(gpd__text *b, gp_engine *eng, const gpd__live_task *lt, size_t nlt) {
    static const family m[] = {
        {"gpupool_queue_deserved_gpus", "Deserved (guaranteed) GPUs of the queue."},
        {"gpupool_queue_fair_share_gpus", "Fair share of GPUs as of the last cycle."},
        {"gpupool_queue_allocated_gpus", "GPUs allocated to the queue's workloads."},
        {"gpupool_queue_used_gpus", "GPU memory really in use, in GPUs' worth."},
    };
    size_t nq = gp_engine_queue_count(eng);
    for (size_t k = 0; k < 4; k++) {
        help(b, m[k].name, "gauge", m[k].text);
        for (size_t i = 0; i < nq; i++) {
            gp_queue_info qi;
            if (gp_engine_queue_at(eng, i, &qi) < 0)
                continue;
            double v = k == 0   ? qi.deserved.v[GP_RES_GPU] / 1000.0
                       : k == 1 ? qi.fair_share.v[GP_RES_GPU] / 1000.0
                       : k == 2 ? qi.allocated.v[GP_RES_GPU] / 1000.0
                                : used_gpus(eng, lt, nlt, qi.name);
            gpd__text_printf(b, "%s{queue=\"%s\",parent=\"%s\"} %g\n", m[k].name, qi.name,
                             qi.parent, v);
        }
    }
}

static void gpus(gpd__text *b, gp_engine *eng, const gpd__live_task *lt, size_t nlt) {
    static const char *const names[] = {"gpupool_gpu_allocated_gpus", "gpupool_gpu_slices",
                                        "gpupool_gpu_allocated_memory_bytes",
                                        "gpupool_gpu_used_memory_bytes"};
    static const char *const texts[] = {"Share of the GPU allocated (1 = whole GPU).",
                                        "Tasks holding a slice of the GPU.",
                                        "Sum of the memory caps of the GPU's slices.",
                                        "GPU memory really in use by the GPU's slices."};
    size_t nn = gp_engine_node_count(eng);
    for (int k = 0; k < 4; k++) {
        help(b, names[k], "gauge", texts[k]);
        for (size_t i = 0; i < nn; i++) {
            gp_node_info ni;
            if (gp_engine_node_at(eng, i, &ni) < 0)
                continue;
            for (int g = 0; g < ni.ngpus; g++) {
                double v = 0;
                if (k == 0)
                    v = ni.gpus[g].used_milli / 1000.0;
                else if (k == 1)
                    v = ni.gpus[g].slices;
                else if (k == 2)
                    v = (double)ni.gpus[g].used_mem;
                else
                    for (size_t t = 0; t < nlt; t++)
                        for (int s = 0; s < lt[t].binding.nslices; s++)
                            if (strcmp(lt[t].node, ni.name) == 0 &&
                                lt[t].binding.slices[s].gpu == g && lt[t].gpu_mem_used > 0)
                                v += (double)lt[t].gpu_mem_used / lt[t].binding.nslices;
                gpd__text_printf(b, "%s{node=\"%s\",gpu=\"%d\",uuid=\"%s\",model=\"%s\"} %.17g\n",
                                 names[k], ni.name, g, ni.gpus[g].uuid, ni.gpus[g].model, v);
            }
        }
    }
}

/* Busy ratios from the last usage sample: per GPU as the executor measured
 * it, per queue as the share of its measured GPUs that was busy. GPUs and
 * queues whose busy time is unknown (emulated GPUs, MIG) are left out. */
static void busy(gpd__text *b, gp_engine *eng, const gpd__usage_now *un) {
    help(b, "gpupool_gpu_busy_ratio", "gauge",
         "Share of recent time a kernel ran on the GPU (NVML), 0 to 1.");
    for (size_t i = 0; i < un->ngpus; i++) {
        const gp_gpu_usage *g = &un->gpus[i];
        gp_node_info ni;
        int k = g->index;
        if (g->busy_permille < 0 || gp_engine_node_get(eng, g->node, &ni) < 0 || k < 0 ||
            k >= ni.ngpus)
            continue;
        gpd__text_printf(
            b, "gpupool_gpu_busy_ratio{node=\"%s\",gpu=\"%d\",uuid=\"%s\",model=\"%s\"} %g\n",
            g->node, k, ni.gpus[k].uuid, ni.gpus[k].model, g->busy_permille / 1000.0);
    }
    static const family m[] = {
        {"gpupool_queue_busy_gpus",
         "GPUs' worth of kernel time the queue's tasks really ran (busy ratio times share)."},
        {"gpupool_queue_busy_ratio",
         "Busy GPUs over allocated GPUs of the queue whose busy time is known, 0 to 1."},
        {"gpupool_queue_borrowed_gpus", "GPUs the queue holds beyond its deserved quota."},
        {"gpupool_queue_lent_gpus", "Idle deserved GPUs of the queue that its siblings borrow."},
    };
    for (int k = 0; k < 4; k++) {
        help(b, m[k].name, "gauge", m[k].text);
        for (size_t i = 0; i < un->nrates; i++) {
            const gpd__usage_rate *x = &un->rates[i];
            /* Busy figures only where busy time is known. */
            if (x->kind != GPD__USAGE_QUEUE || (k < 2 && x->measured <= 0))
                continue;
            double v = k == 0   ? x->used
                       : k == 1 ? x->used / x->measured
                       : k == 2 ? x->borrowed
                                : x->lent;
            gpd__text_printf(b, "%s{queue=\"%s\"} %g\n", m[k].name, x->key, v);
        }
    }
}

int gpd__h_metrics(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gpd__text b = {0};
    gpd__live_task *lt = NULL;
    size_t nlt = 0;
    if (gpd__sched_live_tasks(r->d->sched, &lt, &nlt) < 0)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    int64_t pend[GP_WAIT_COUNT];
    gpd__usage_now un;
    int have = gpd__sched_usage_now(r->d->sched, &un) == 0;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    queues(&b, eng, lt, nlt);
    gpus(&b, eng, lt, nlt);
    if (have)
        busy(&b, eng, &un);
    gp_engine_pending_by_reason(eng, pend);
    gpd__sched_unlock(r->d->sched);
    if (have)
        gpd__usage_now_free(&un);
    free(lt);
    help(&b, "gpupool_pending_workloads", "gauge", "Pending workloads by the reason they wait.");
    for (int w = 1; w < GP_WAIT_COUNT; w++)
        gpd__text_printf(&b, "gpupool_pending_workloads{reason=\"%s\"} %lld\n",
                         gp_wait_name((gp_wait)w), (long long)pend[w]);
    if (r->d->guard) {
        help(&b, "gpupool_http_connections_cut_total", "counter",
             "API connections closed because a request head or body was not sent in time.");
        gpd__text_printf(&b, "gpupool_http_connections_cut_total %llu\n",
                         (unsigned long long)gpd__guard_expired(r->d->guard));
    }
    int64_t counts[GP_WL_NSTATES];
    if (gpd__store_wl_counts(r->d->store, counts, NULL) == 0) {
        help(&b, "gpupool_workloads", "gauge", "Workloads in the store by state.");
        for (int s = 0; s < GP_WL_NSTATES; s++)
            gpd__text_printf(&b, "gpupool_workloads{state=\"%s\"} %lld\n",
                             gp_wl_state_name((gp_wl_state)s), (long long)counts[s]);
    }
    gpd__cycle_hist h;
    gpd__sched_cycle_hist(r->d->sched, &h);
    help(&b, "gpupool_scheduling_cycle_seconds", "histogram", "Latency of a scheduling cycle.");
    for (int i = 0; i < GPD__CYCLE_BUCKETS; i++)
        gpd__text_printf(&b, "gpupool_scheduling_cycle_seconds_bucket{le=\"%g\"} %llu\n",
                         gpd__cycle_bounds[i], (unsigned long long)h.counts[i]);
    gpd__text_printf(&b, "gpupool_scheduling_cycle_seconds_bucket{le=\"+Inf\"} %llu\n",
                     (unsigned long long)h.count);
    gpd__text_printf(&b, "gpupool_scheduling_cycle_seconds_sum %.9f\n", h.sum);
    gpd__text_printf(&b, "gpupool_scheduling_cycle_seconds_count %llu\n",
                     (unsigned long long)h.count);
    help(&b, "gpupool_start_wait_seconds", "summary",
         "Time attempts waited in the executor between launch and running (a Slurm job "
         "PENDING).");
    gpd__text_printf(&b, "gpupool_start_wait_seconds_sum %.3f\n", h.start_wait);
    gpd__text_printf(&b, "gpupool_start_wait_seconds_count %llu\n", (unsigned long long)h.starts);
    return gpd__text_reply(&b, out, "text/plain; version=0.0.4", e);
}
