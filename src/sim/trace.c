/*
 * trace.c — reading and checking node lists and pod lists (see trace.h).
 * Every reader builds its array privately and hands it out only when the
 * whole file was good, so a bad file leaves nothing half-read behind.
 */
#include "common/gp_array.h"
#include "sim/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/csv.h"

#define MIB (INT64_C(1) << 20)
/* Bounds beyond which a value is absurd rather than large: 100,000 cores,
 * 64 TiB of memory, a clock of 10^12 seconds. */
#define MAX_CPU_MILLI INT64_C(100000000)
#define MAX_MEM_MIB   (INT64_C(64) << 20)
#define MAX_TIME      INT64_C(1000000000000)

/* Copies field col into dst[size]; an error if too long (or empty and
 * required). */
static int get_name(const sim_csv *c, int col, char *dst, size_t size, int required, char *err,
                    size_t errlen) {
    const char *s = sim_csv_get(c, col);
    if (required && !*s)
        return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field %s: empty", c->path, c->line,
                        c->header[col]);
    if (strlen(s) >= size)
        return sim_errf(err, errlen, GP_ERANGE, "%s:%ld: field %s: longer than %zu characters",
                        c->path, c->line, c->header[col], size - 1);
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int read_nodes(sim_csv *c, sim_node **out, size_t *n, char *err, size_t errlen) {
    static const char *const known[] = {"sn",  "name",  "cpu_milli", "memory_mib",
                                        "gpu", "model", NULL};
    static const char *const required[] = {"cpu_milli", "memory_mib", "gpu", NULL};
    size_t cap = 0;
    int rc = sim_csv_check_header(c, known, required, err, errlen);
    int cname = sim_csv_col(c, "sn") >= 0 ? sim_csv_col(c, "sn") : sim_csv_col(c, "name");
    if (!rc && cname < 0)
        rc = sim_errf(err, errlen, GP_EPARSE, "%s:1: missing column 'sn' (or 'name')", c->path);
    int ccpu = sim_csv_col(c, "cpu_milli"), cmem = sim_csv_col(c, "memory_mib"),
        cgpu = sim_csv_col(c, "gpu"), cmodel = sim_csv_col(c, "model");
    while (!rc && (rc = sim_csv_next(c, err, errlen)) == 1) {
        sim_node nd;
        memset(&nd, 0, sizeof nd);
        int64_t v;
        rc = get_name(c, cname, nd.name, sizeof nd.name, 1, err, errlen);
        if (!rc)
            rc = sim_csv_int(c, ccpu, 0, MAX_CPU_MILLI, SIM_CSV_REQUIRED, &nd.cpu_milli, err,
                             errlen);
        if (!rc && !(rc = sim_csv_int(c, cmem, 0, MAX_MEM_MIB, SIM_CSV_REQUIRED, &v, err, errlen)))
            nd.mem_bytes = v * MIB;
        if (!rc && !(rc = sim_csv_int(c, cgpu, 0, GP_MAX_GPUS_PER_NODE, SIM_CSV_REQUIRED, &v, err,
                                      errlen)))
            nd.ngpus = (int32_t)v;
        if (!rc && cmodel >= 0)
            rc = get_name(c, cmodel, nd.model, sizeof nd.model, 0, err, errlen);
        if (!rc && nd.ngpus > 0 && !nd.model[0])
            rc = sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field model: empty for a node with GPUs",
                          c->path, c->line);
        if (!rc && GP_ARRAY_ROOM(*out, *n, cap, 256) == 0)
            (*out)[(*n)++] = nd;
        else if (!rc)
            rc = sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
    }
    return rc < 0 ? rc : 0;
}

static int check_spec(const sim_csv *c, const char *spec, char *err, size_t errlen) {
    int n = 0;
    const char *p = spec;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == 0 || len > GP_NAME_MAX)
            return sim_errf(err, errlen, GP_EPARSE,
                            "%s:%ld: field gpu_spec: bad model name in '%s'", c->path, c->line,
                            spec);
        if (++n > GP_MAX_MODELS)
            return sim_errf(err, errlen, GP_ERANGE, "%s:%ld: field gpu_spec: more than %d models",
                            c->path, c->line, GP_MAX_MODELS);
        p += len + (bar != NULL);
        if (bar && !*p)
            return sim_errf(err, errlen, GP_EPARSE, "%s:%ld: field gpu_spec: trailing '|'", c->path,
                            c->line);
    }
    return 0;
}

void sim_spec_models(const char *spec, gp_task_req *req) {
    req->nmodels = 0;
    const char *p = spec;
    while (*p && req->nmodels < GP_MAX_MODELS) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len > GP_NAME_MAX)
            len = GP_NAME_MAX;
        memcpy(req->models[req->nmodels], p, len);
        req->models[req->nmodels][len] = '\0';
        if (len)
            req->nmodels++;
        p += len;
        if (*p == '|')
            p++;
    }
}

/* The GPU part of a pod: num_gpu and gpu_milli must agree (a share only of a
 * single GPU, whole GPUs otherwise, nothing without GPUs). */
static int check_gpu(const sim_csv *c, const sim_pod *p, char *err, size_t errlen) {
    if (p->ngpus == 0 && p->gpu_milli != 0)
        return sim_errf(err, errlen, GP_EPARSE,
                        "%s:%ld: field gpu_milli: %d for a pod with num_gpu 0 (must be 0)", c->path,
                        c->line, p->gpu_milli);
    if (p->ngpus > 0 && p->gpu_milli == 0)
        return sim_errf(err, errlen, GP_EPARSE,
                        "%s:%ld: field gpu_milli: 0 for a pod with num_gpu %d (must be 1..1000)",
                        c->path, c->line, p->ngpus);
    if (p->ngpus > 1 && p->gpu_milli != GP_MILLI)
        return sim_errf(err, errlen, GP_EPARSE,
                        "%s:%ld: field gpu_milli: %d with num_gpu %d (a share is of one GPU only)",
                        c->path, c->line, p->gpu_milli, p->ngpus);
    return 0;
}

static int read_pods(sim_csv *c, sim_pod **out, size_t *n, char *err, size_t errlen) {
    static const char *const known[] = {
        "name",           "cpu_milli", "memory_mib", "num_gpu",       "gpu_milli",
        "gpu_spec",       "qos",       "pod_phase",  "creation_time", "deletion_time",
        "scheduled_time", "project",   "user",       "kind",          "priority",
        "tasks",          NULL};
    static const char *const required[] = {"name",    "cpu_milli", "memory_mib",
                                           "num_gpu", "gpu_milli", NULL};
    size_t cap = 0;
    int rc = sim_csv_check_header(c, known, required, err, errlen);
    int cname = sim_csv_col(c, "name"), ccpu = sim_csv_col(c, "cpu_milli"),
        cmem = sim_csv_col(c, "memory_mib"), cng = sim_csv_col(c, "num_gpu"),
        cgm = sim_csv_col(c, "gpu_milli"), cspec = sim_csv_col(c, "gpu_spec"),
        ccre = sim_csv_col(c, "creation_time"), cdel = sim_csv_col(c, "deletion_time"),
        csch = sim_csv_col(c, "scheduled_time"), cproj = sim_csv_col(c, "project"),
        cuser = sim_csv_col(c, "user"), ckind = sim_csv_col(c, "kind"),
        cqos = sim_csv_col(c, "qos"), cprio = sim_csv_col(c, "priority"),
        ctasks = sim_csv_col(c, "tasks");
    while (!rc && (rc = sim_csv_next(c, err, errlen)) == 1) {
        sim_pod p;
        memset(&p, 0, sizeof p);
        int64_t v;
        p.creation = p.deletion = p.scheduled = -1;
        p.tasks = 1;
        p.line = c->line;
        rc = get_name(c, cname, p.name, sizeof p.name, 1, err, errlen);
        if (!rc)
            rc =
                sim_csv_int(c, ccpu, 0, MAX_CPU_MILLI, SIM_CSV_REQUIRED, &p.cpu_milli, err, errlen);
        if (!rc && !(rc = sim_csv_int(c, cmem, 0, MAX_MEM_MIB, SIM_CSV_REQUIRED, &v, err, errlen)))
            p.mem_bytes = v * MIB;
        if (!rc &&
            !(rc = sim_csv_int(c, cng, 0, GP_MAX_GPUS_PER_NODE, SIM_CSV_REQUIRED, &v, err, errlen)))
            p.ngpus = (int32_t)v;
        if (!rc && !(rc = sim_csv_int(c, cgm, 0, GP_MILLI, SIM_CSV_REQUIRED, &v, err, errlen)))
            p.gpu_milli = (int32_t)v;
        if (!rc)
            rc = check_gpu(c, &p, err, errlen);
        if (!rc && cspec >= 0 && !(rc = get_name(c, cspec, p.spec, sizeof p.spec, 0, err, errlen)))
            rc = check_spec(c, p.spec, err, errlen);
        if (!rc && ccre >= 0)
            rc = sim_csv_int(c, ccre, 0, MAX_TIME, -1, &p.creation, err, errlen);
        if (!rc && cdel >= 0)
            rc = sim_csv_int(c, cdel, 0, MAX_TIME, -1, &p.deletion, err, errlen);
        if (!rc && csch >= 0)
            rc = sim_csv_int(c, csch, 0, MAX_TIME, -1, &p.scheduled, err, errlen);
        if (!rc && p.creation >= 0 && p.deletion >= 0 && p.deletion < p.creation)
            rc = sim_errf(err, errlen, GP_ERANGE,
                          "%s:%ld: field deletion_time: %lld is before creation_time %lld", c->path,
                          c->line, (long long)p.deletion, (long long)p.creation);
        if (!rc && cproj >= 0)
            rc = get_name(c, cproj, p.project, sizeof p.project, 1, err, errlen);
        if (!rc && cuser >= 0)
            rc = get_name(c, cuser, p.user, sizeof p.user, 0, err, errlen);
        if (!rc && ckind >= 0 && *sim_csv_get(c, ckind) &&
            gp_kind_parse(sim_csv_get(c, ckind), &p.kind) < 0)
            rc = sim_errf(err, errlen, GP_EPARSE,
                          "%s:%ld: field kind: '%s' (want train, interactive or inference)",
                          c->path, c->line, sim_csv_get(c, ckind));
        if (!rc && ckind >= 0 && *sim_csv_get(c, ckind))
            p.kind_given = 1;
        if (!rc && cqos >= 0)
            p.latency_sensitive =
                !strcmp(sim_csv_get(c, cqos), "LS") || !strcmp(sim_csv_get(c, cqos), "Guaranteed");
        if (!rc && cprio >= 0 &&
            !(rc = sim_csv_int(c, cprio, -1000000, 1000000, 0, &v, err, errlen)))
            p.priority = (int32_t)v;
        if (!rc && ctasks >= 0 && !(rc = sim_csv_int(c, ctasks, 1, 4096, 1, &v, err, errlen)))
            p.tasks = (int32_t)v;
        if (!rc && GP_ARRAY_ROOM(*out, *n, cap, 256) == 0)
            (*out)[(*n)++] = p;
        else if (!rc)
            rc = sim_errf(err, errlen, GP_ENOMEM, "%s: out of memory", c->path);
    }
    return rc < 0 ? rc : 0;
}

/* Opens a CSV from a path (len == 0 and data == NULL) or from memory, runs
 * one of the readers over it (which appends its rows to *out and *n) and
 * closes it; on an error, nothing is kept. */
typedef int (*reader_fn)(sim_csv *c, void **out, size_t *n, char *err, size_t errlen);

static int with_csv(const char *name, const char *data, size_t len, reader_fn fn, void **out,
                    size_t *n, char *err, size_t errlen) {
    sim_csv c;
    *out = NULL;
    *n = 0;
    int rc = data ? sim_csv_open_mem(&c, name, data, len, err, errlen)
                  : sim_csv_open(&c, name, err, errlen);
    if (rc < 0)
        return rc;
    rc = fn(&c, out, n, err, errlen);
    sim_csv_close(&c);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

static int nodes_fn(sim_csv *c, void **out, size_t *n, char *err, size_t errlen) {
    return read_nodes(c, (sim_node **)out, n, err, errlen);
}

static int pods_fn(sim_csv *c, void **out, size_t *n, char *err, size_t errlen) {
    return read_pods(c, (sim_pod **)out, n, err, errlen);
}

int sim_read_nodes(const char *path, sim_node **out, size_t *n, char *err, size_t errlen) {
    return with_csv(path, NULL, 0, nodes_fn, (void **)out, n, err, errlen);
}

int sim_read_pods(const char *path, sim_pod **out, size_t *n, char *err, size_t errlen) {
    return with_csv(path, NULL, 0, pods_fn, (void **)out, n, err, errlen);
}

int sim_read_nodes_mem(const char *name, const char *data, size_t len, sim_node **out, size_t *n,
                       char *err, size_t errlen) {
    return with_csv(name, data ? data : "", len, nodes_fn, (void **)out, n, err, errlen);
}

int sim_read_pods_mem(const char *name, const char *data, size_t len, sim_pod **out, size_t *n,
                      char *err, size_t errlen) {
    return with_csv(name, data ? data : "", len, pods_fn, (void **)out, n, err, errlen);
}
