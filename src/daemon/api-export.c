/*
 * api-export.c — the pool's own history in the files gpupool-sim reads
 * (docs/simulator.md, "Generic format"), so that `gpupool-sim plan` answers
 * "how many GPUs do we need" from what this pool really ran:
 *
 *   GET /api/v1/export/workloads  finished workloads as a pod list: what each
 *                                 asked for, when it was submitted, when its
 *                                 first attempt started and its last ended
 *   GET /api/v1/export/nodes      the nodes as a node list
 *   GET /api/v1/export/projects   the queue tree as a projects file
 *
 * All CSV, for administrators. A workload asking for GPU memory is exported
 * as the share of the pool's largest GPU that memory is; a MIG instance as a
 * whole GPU (the simulator has no MIG). Workload names are left out (they
 * are free text; the simulator needs none): rows are named w<id>.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api.h"
#include "daemon/request.h"
#include "daemon/sched.h"
#include "daemon/store.h"

/* A CSV answer from a memory stream. */
typedef struct csv {
    char *buf;
    size_t len;
    FILE *f;
} csv;

/* Opens c and writes the header line head (with its newline). */
static int csv_open(csv *c, const char *head, gpd__err *e) {
    memset(c, 0, sizeof *c);
    c->f = open_memstream(&c->buf, &c->len);
    if (!c->f)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    fputs(head, c->f);
    return 0;
}

static int csv_reply(csv *c, gpd__resp *out, gpd__err *e) {
    if (fclose(c->f) != 0 || !c->buf) {
        free(c->buf);
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    }
    out->status = 200;
    out->body = c->buf;
    out->len = c->len;
    out->content_type = "text/csv; charset=utf-8";
    return 0;
}

typedef struct wl_arg {
    FILE *f;
    int64_t max_gpu_mem; /* the pool's largest GPU, for memory requests */
} wl_arg;

static int wl_row(sqlite3_stmt *s, void *arg, gpd__err *e) {
    const wl_arg *a = arg;
    char *spec = gpd__store_dup(s, 4, "");
    if (spec == NULL)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory reading a workload");
    json_t *j = NULL;
    int rc = gpd__json_stored(spec, &j);
    free(spec);
    gpd__request rq;
    gpd__err pe = {0};
    if (rc == 0)
        rc = gpd__request_parse(j, &rq, &pe);
    if (rc == GP_ENOMEM) {
        json_decref(j);
        return gpd__fail(e, GP_ENOMEM, "", "out of memory reading a workload");
    }
    if (rc < 0) {
        json_decref(j);
        return 0; /* a row that no longer parses is not worth failing for */
    }
    const gp_task_req *q = &rq.spec.req;
    int num = 0, milli = 0;
    switch (q->gpu) {
    case GP_GPU_WHOLE:
        num = q->gpus, milli = 1000;
        break;
    case GP_GPU_FRACTION:
        num = 1, milli = q->gpu_milli;
        break;
    case GP_GPU_MEMORY:
        num = 1;
        milli = a->max_gpu_mem > 0
                    ? (int)((q->gpu_mem * 1000 + a->max_gpu_mem - 1) / a->max_gpu_mem)
                    : 1000;
        milli = milli < 1 ? 1 : milli > 1000 ? 1000 : milli;
        break;
    case GP_GPU_MIG:
        num = 1, milli = 1000;
        break;
    default:
        break;
    }
    char project[GP_NAME_MAX + 1], user[GP_NAME_MAX + 1];
    gpd__store_text(project, sizeof project, s, 1);
    gpd__store_text(user, sizeof user, s, 2);
    fprintf(a->f, "w%lld,%lld,%lld,%d,%d,%lld,%lld,%lld,%s,%s,%s,%d,%d\n",
            (long long)sqlite3_column_int64(s, 0), (long long)q->cpu_milli,
            (long long)(q->mem_bytes >> 20), num, milli,
            (long long)(sqlite3_column_int64(s, 3) / 1000),
            (long long)(sqlite3_column_int64(s, 6) / 1000),
            (long long)(sqlite3_column_int64(s, 5) / 1000), project, user,
            gp_kind_name(rq.spec.kind), rq.spec.priority, rq.spec.tasks);
    json_decref(j);
    return 0;
}

int gpd__h_export_workloads(gpd__req *r, gpd__resp *out, gpd__err *e) {
    int64_t now = gpd__now_ms() / 1000, from = 0, to = now + 1;
    const char *s;
    int rc;
    if ((s = gpd__query(r, "from")) && (rc = gpd__parse_time("from", s, now, &from, e)) < 0)
        return rc;
    if ((s = gpd__query(r, "to")) && (rc = gpd__parse_time("to", s, now, &to, e)) < 0)
        return rc;
    wl_arg a = {0};
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    for (size_t i = 0; i < gp_engine_node_count(eng); i++) {
        gp_node_info ni;
        for (int g = 0; gp_engine_node_at(eng, i, &ni) == 0 && g < ni.ngpus; g++)
            if (ni.gpus[g].mem_bytes > a.max_gpu_mem)
                a.max_gpu_mem = ni.gpus[g].mem_bytes;
    }
    gpd__sched_unlock(r->d->sched);
    csv c;
    if ((rc = csv_open(&c,
                       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,"
                       "scheduled_time,project,user,kind,priority,tasks\n",
                       e)) < 0)
        return rc;
    a.f = c.f;
    rc = gpd__store_select(
        r->d->store, e, "exporting workloads", wl_row, &a,
        "SELECT w.id, w.project, w.user, w.submitted_ms, w.spec, min(a.started_ms),"
        " max(a.ended_ms) FROM workloads w JOIN attempts a ON a.workload = w.id"
        " WHERE w.state IN (?1, ?2, ?3) AND w.submitted_ms >= ?4 AND w.submitted_ms < ?5"
        " AND a.started_ms >= 0 AND a.ended_ms >= 0 GROUP BY w.id ORDER BY w.id",
        "iiiii", (int64_t)GP_WL_SUCCEEDED, (int64_t)GP_WL_FAILED, (int64_t)GP_WL_DELETED,
        from * 1000, to * 1000);
    if (rc < 0) {
        fclose(c.f);
        free(c.buf);
        return rc;
    }
    return csv_reply(&c, out, e);
}

int gpd__h_export_nodes(gpd__req *r, gpd__resp *out, gpd__err *e) {
    csv c;
    int rc = csv_open(&c, "sn,cpu_milli,memory_mib,gpu,model\n", e);
    if (rc < 0)
        return rc;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    for (size_t i = 0; i < gp_engine_node_count(eng); i++) {
        gp_node_info ni;
        if (gp_engine_node_at(eng, i, &ni) < 0)
            continue;
        /* The simulator's nodes have one model each: the first GPU's. */
        fprintf(c.f, "%s,%lld,%lld,%d,%s\n", ni.name, (long long)ni.cpu_milli,
                (long long)(ni.mem_bytes >> 20), ni.ngpus, ni.ngpus ? ni.gpus[0].model : "");
    }
    gpd__sched_unlock(r->d->sched);
    return csv_reply(&c, out, e);
}

static int project_row(const gp_queue_spec *q, void *arg) {
    FILE *f = arg;
    const gp_quota *g = &q->quota[GP_RES_GPU];
    fprintf(f, "%s,%s,%g,%d,", q->name, q->parent, g->deserved / 1000.0, g->weight);
    if (g->limit != GP_UNLIMITED)
        fprintf(f, "%g", g->limit / 1000.0);
    fprintf(f, ",%d\n", q->priority);
    return 0;
}

int gpd__h_export_projects(gpd__req *r, gpd__resp *out, gpd__err *e) {
    csv c;
    int rc = csv_open(&c, "name,parent,deserved_gpus,weight,limit_gpus,priority\n", e);
    if (rc < 0)
        return rc;
    if ((rc = gpd__store_queues(r->d->store, project_row, c.f, e)) < 0) {
        fclose(c.f);
        free(c.buf);
        return rc;
    }
    return csv_reply(&c, out, e);
}
