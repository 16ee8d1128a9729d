/*
 * request.c — validation of what clients send as JSON: submissions
 * (request.h), queue bodies, and the quantity helpers both share. Every rejection names the field
 * and says what would have been accepted, since the message goes straight to a researcher's
 * terminal.
 */
#include "daemon/request.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/gp_env.h"
#include "common/units.h"

int gpd__name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > GP_NAME_MAX || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return 0;
    return 1;
}

int gpd__json_known(json_t *obj, const char *const *known, const char *where, gpd__err *e) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0;
        for (int i = 0; known[i]; i++)
            if (strcmp(key, known[i]) == 0)
                ok = 1;
        if (!ok) {
            char list[512];
            size_t n = 0;
            list[0] = '\0';
            for (int i = 0; known[i] && n < sizeof list; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", known[i]);
            return gpd__fail(e, GP_EINVAL, key, "%s: unknown field in %s (known: %s)", key, where,
                             list);
        }
    }
    return 0;
}

/* Fields of gp_workload_spec as the engine names them in its errors, and as
 * a request names them. */
static const struct {
    const char *engine, *api;
} engine_fields[] = {
    {"req.gpus", "gpu"},
    {"req.gpu_milli", "gpu"},
    {"req.gpu_mem", "gpu_memory"},
    {"req.gpu", "gpu"},
    {"req.mig_profile", "mig"},
    {"req.cpu_milli", "cpu"},
    {"req.mem_bytes", "memory"},
    {"req.nmodels", "models"},
    {"req.models", "models"},
    {"req.nselectors", "selectors"},
    {"req.selectors", "selectors"},
    {"queue", "project"},
    {"tasks", "gang"},
    {"min_tasks", "min_gang"},
    {"kind", "kind"},
    {"preemptible", "preemptible"},
    {"min_runtime", "min_runtime"},
    {"same_domain", "same_domain"},
};

void gpd__request_spec(const gpd__request *r, uint64_t id, const char *user, int64_t submitted_ms,
                       gp_workload_spec *out) {
    *out = r->spec;
    out->id = id;
    snprintf(out->user, sizeof out->user, "%s", user);
    out->submitted = submitted_ms;
}

int gpd__request_engine_error(int rc, const char *msg, gpd__err *e) {
    size_t n = strcspn(msg, ":[");
    for (size_t i = 0; i < sizeof engine_fields / sizeof engine_fields[0]; i++)
        if (strlen(engine_fields[i].engine) == n && strncmp(msg, engine_fields[i].engine, n) == 0)
            return gpd__fail(e, GP_EINVAL, engine_fields[i].api, "%s%s", engine_fields[i].api,
                             msg + n);
    return gpd__fail(e, rc == GP_ENOMEM ? rc : GP_EINVAL, "", "%s", msg);
}

/* Quantities in JSON: a number, or a string with a unit. Each fails with
 * GP_EINVAL naming field. */
static int json_milli(json_t *v, const char *field, int64_t *out, gpd__err *e) {
    if (json_is_string(v)) {
        int64_t m;
        if (gp_parse_milli(json_string_value(v), &m) < 0)
            return gpd__fail(e, GP_EINVAL, field,
                             "%s: \"%s\" is not a number with at most 3 decimals", field,
                             json_string_value(v));
        *out = m;
        return 0;
    }
    if (!json_is_number(v))
        return gpd__fail(e, GP_EINVAL, field, "%s: must be a number", field);
    double x = json_number_value(v) * 1000.0;
    if (!isfinite(x) || x < 0 || x > 9e15)
        return gpd__fail(e, GP_EINVAL, field, "%s: %g is out of range", field,
                         json_number_value(v));
    double r = nearbyint(x);
    if (fabs(x - r) > 1e-6)
        return gpd__fail(e, GP_EINVAL, field, "%s: %g has more than 3 decimals", field,
                         json_number_value(v));
    *out = (int64_t)r;
    return 0;
}

static int json_size(json_t *v, const char *field, int64_t *out, gpd__err *e) {
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return gpd__fail(e, GP_EINVAL, field, "%s: must not be negative", field);
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_string(v) && gp_parse_size(json_string_value(v), out) == 0)
        return 0;
    return gpd__fail(e, GP_EINVAL, field,
                     "%s: must be a number of bytes or a size like \"32G\" or \"512M\"", field);
}

static int json_duration(json_t *v, const char *field, int64_t *out, gpd__err *e) {
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) < INT64_MAX / 1000) {
        *out = json_integer_value(v) * 1000;
        return 0;
    }
    if (json_is_string(v) && gp_parse_duration_ms(json_string_value(v), out) == 0)
        return 0;
    return gpd__fail(e, GP_EINVAL, field,
                     "%s: must be a number of seconds or a duration like \"60s\", \"5m\"", field);
}

static int json_int(json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out,
                    gpd__err *e) {
    if (!json_is_integer(v))
        return gpd__fail(e, GP_EINVAL, field, "%s: must be a whole number", field);
    int64_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return gpd__fail(e, GP_EINVAL, field, "%s: %lld is outside %lld..%lld", field, (long long)x,
                         (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

static const char *const submit_fields[] = {"name",
                                            "project",
                                            "command",
                                            "env",
                                            "workdir",
                                            "gpu",
                                            "gpu_memory",
                                            "mig",
                                            "cpu",
                                            "memory",
                                            "gang",
                                            "min_gang",
                                            "kind",
                                            "interactive",
                                            "tty",
                                            "priority",
                                            "preemptible",
                                            "grace",
                                            "checkpoint_signal",
                                            "min_runtime",
                                            "models",
                                            "selectors",
                                            "same_domain",
                                            "client_key",
                                            "run_as",
                                            "gpu_compute",
                                            NULL};

static int parse_gpu(json_t *body, gpd__request *r, gpd__err *e) {
    gp_task_req *q = &r->spec.req;
    json_t *gpu = json_object_get(body, "gpu"), *mem = json_object_get(body, "gpu_memory"),
           *mig = json_object_get(body, "mig");
    int n = !!gpu + !!mem + !!mig;
    if (n > 1)
        return gpd__fail(e, GP_EINVAL, gpu ? "gpu" : "gpu_memory",
                         "gpu, gpu_memory and mig exclude each other: give only one");
    int rc;
    if (gpu) {
        int64_t m;
        if ((rc = json_milli(gpu, "gpu", &m, e)) < 0)
            return rc;
        if (m == 0)
            return gpd__fail(e, GP_EINVAL, "gpu", "gpu: must be above 0");
        if (m < GP_MILLI) {
            q->gpu = GP_GPU_FRACTION;
            q->gpu_milli = (int32_t)m;
            char b[32];
            gp_format_milli(m, b, sizeof b);
            snprintf(r->summary, sizeof r->summary, "%s GPU", b);
        } else if (m % GP_MILLI != 0) {
            char b[32];
            gp_format_milli(m, b, sizeof b);
            return gpd__fail(e, GP_EINVAL, "gpu",
                             "gpu: %s is neither a whole number of GPUs nor a fraction below 1", b);
        } else if (m / GP_MILLI > GP_MAX_GPUS_PER_NODE) {
            return gpd__fail(e, GP_EINVAL, "gpu",
                             "gpu: %lld GPUs per task is more than any node can have (%d); use "
                             "gang for more tasks",
                             (long long)(m / GP_MILLI), GP_MAX_GPUS_PER_NODE);
        } else {
            q->gpu = GP_GPU_WHOLE;
            q->gpus = (int32_t)(m / GP_MILLI);
            snprintf(r->summary, sizeof r->summary, "%d GPU%s", q->gpus, q->gpus > 1 ? "s" : "");
        }
    } else if (mem) {
        if ((rc = json_size(mem, "gpu_memory", &q->gpu_mem, e)) < 0)
            return rc;
        if (q->gpu_mem == 0)
            return gpd__fail(e, GP_EINVAL, "gpu_memory", "gpu_memory: must be above 0");
        q->gpu = GP_GPU_MEMORY;
        char b[32];
        gp_format_size(q->gpu_mem, b, sizeof b);
        snprintf(r->summary, sizeof r->summary, "%s GPU memory", b);
    } else if (mig) {
        const char *p = json_string_value(mig);
        if (!p || !*p || strlen(p) >= sizeof q->mig_profile)
            return gpd__fail(e, GP_EINVAL, "mig", "mig: must be a MIG profile like \"1g.18gb\"");
        q->gpu = GP_GPU_MIG;
        snprintf(q->mig_profile, sizeof q->mig_profile, "%s", p);
        snprintf(r->summary, sizeof r->summary, "MIG %s", p);
    } else {
        snprintf(r->summary, sizeof r->summary, "no GPU");
    }
    return 0;
}

static int parse_lists(json_t *body, gpd__request *r, gpd__err *e) {
    gp_task_req *q = &r->spec.req;
    json_t *v;
    if ((v = json_object_get(body, "models"))) {
        if (!json_is_array(v) || json_array_size(v) > GP_MAX_MODELS)
            return gpd__fail(e, GP_EINVAL, "models", "models: must be a list of at most %d names",
                             GP_MAX_MODELS);
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) {
            if (!json_is_string(m) || !gpd__name_ok(json_string_value(m)))
                return gpd__fail(e, GP_EINVAL, "models", "models: item %zu is not a model name", i);
            snprintf(q->models[i], sizeof q->models[i], "%s", json_string_value(m));
        }
        q->nmodels = (int32_t)json_array_size(v);
    }
    if ((v = json_object_get(body, "selectors"))) {
        if (!json_is_object(v) || json_object_size(v) > GP_MAX_SELECTORS)
            return gpd__fail(e, GP_EINVAL, "selectors",
                             "selectors: must be an object of at most %d label: value pairs",
                             GP_MAX_SELECTORS);
        const char *k;
        json_t *s;
        json_object_foreach(v, k, s) {
            if (!gpd__name_ok(k) || !json_is_string(s) || !gpd__name_ok(json_string_value(s)))
                return gpd__fail(e, GP_EINVAL, "selectors",
                                 "selectors: \"%s\" must be a label name with a string value", k);
            gp_label *l = &q->selectors[q->nselectors++];
            snprintf(l->key, sizeof l->key, "%s", k);
            snprintf(l->value, sizeof l->value, "%s", json_string_value(s));
        }
    }
    return 0;
}

/* gpu_compute: a slice's share of its GPU's time, 0.01 to 1 (after
 * parse_gpu, which says whether the request is a slice). */
static int parse_compute(json_t *body, gpd__request *r, gpd__err *e) {
    json_t *gc = json_object_get(body, "gpu_compute");
    if (gc) {
        int64_t m;
        int rc = json_milli(gc, "gpu_compute", &m, e);
        if (rc < 0)
            return rc;
        if (m < 10 || m > 1000)
            return gpd__fail(e, GP_EINVAL, "gpu_compute",
                             "gpu_compute: a share of the GPU's time from 0.01 to 1");
        if (r->spec.req.gpu != GP_GPU_FRACTION && r->spec.req.gpu != GP_GPU_MEMORY)
            return gpd__fail(e, GP_EINVAL, "gpu_compute",
                             "gpu_compute: only a slice of a GPU (gpu below 1, or gpu_memory) "
                             "shares the GPU's time");
        r->compute_pct = (int32_t)((m + 9) / 10);
    }
    return 0;
}

static int parse_command(json_t *body, gpd__request *r, gpd__err *e) {
    json_t *cmd = json_object_get(body, "command");
    if (!cmd)
        return gpd__fail(e, GP_EINVAL, "command",
                         "command: is required (the program and its arguments)");
    if (!json_is_array(cmd) || json_array_size(cmd) == 0 || json_array_size(cmd) > GPD__MAX_ARGS)
        return gpd__fail(e, GP_EINVAL, "command",
                         "command: must be a non-empty list of strings (program, arguments)");
    size_t i;
    json_t *a;
    json_array_foreach(cmd, i, a) {
        if (!json_is_string(a))
            return gpd__fail(e, GP_EINVAL, "command", "command: item %zu is not a string", i);
    }
    if (json_string_value(json_array_get(cmd, 0))[0] == '\0')
        return gpd__fail(e, GP_EINVAL, "command", "command: the program name is empty");
    r->command = cmd;
    json_t *env = json_object_get(body, "env");
    if (env) {
        if (!json_is_object(env))
            return gpd__fail(e, GP_EINVAL, "env", "env: must be an object of NAME: value strings");
        if (json_object_size(env) > GPD__ENV_MAX_VARS)
            return gpd__fail(e, GP_EINVAL, "env", "env: %zu variables; at most %d",
                             json_object_size(env), GPD__ENV_MAX_VARS);
        const char *k;
        json_t *v;
        size_t total = 0;
        json_object_foreach(env, k, v) {
            int ok = json_is_string(v) && k[0] && !isdigit((unsigned char)k[0]);
            for (const char *p = k; ok && *p; p++)
                if (!isalnum((unsigned char)*p) && *p != '_')
                    ok = 0;
            if (!ok)
                return gpd__fail(e, GP_EINVAL, "env",
                                 "env: \"%.64s\" must be a variable name with a string value", k);
            size_t kn = strlen(k), vn = json_string_length(v);
            if (kn > GPD__ENV_MAX_NAME)
                return gpd__fail(e, GP_EINVAL, "env",
                                 "env: the name \"%.32s...\" is %zu bytes; at most %d", k, kn,
                                 GPD__ENV_MAX_NAME);
            if (vn > GPD__ENV_MAX_VALUE)
                return gpd__fail(e, GP_EINVAL, "env",
                                 "env: the value of %.64s is %zu bytes; at most %d", k, vn,
                                 GPD__ENV_MAX_VALUE);
            total += kn + vn + 2;
            if (total > GPD__ENV_MAX_TOTAL)
                return gpd__fail(e, GP_EINVAL, "env",
                                 "env: more than %d bytes in all (NAME=VALUE, each with its end)",
                                 GPD__ENV_MAX_TOTAL);
            if (gp_env_reserved(k, kn))
                return gpd__fail(e, GP_EINVAL, "env",
                                 "env: %s is set by gpupool and cannot be given", k);
        }
        r->env = env;
    }
    json_t *wd = json_object_get(body, "workdir");
    if (wd) {
        if (!json_is_string(wd) || json_string_value(wd)[0] != '/')
            return gpd__fail(e, GP_EINVAL, "workdir", "workdir: must be an absolute path");
        r->workdir = json_string_value(wd);
    }
    json_t *ra = json_object_get(body, "run_as");
    if (ra) {
        if (!json_is_string(ra) || !gpd__name_ok(json_string_value(ra)))
            return gpd__fail(e, GP_EINVAL, "run_as", "run_as: must be a Unix user name");
        r->run_as = json_string_value(ra);
    }
    return 0;
}

int gpd__request_parse(json_t *body, gpd__request *r, gpd__err *e) {
    memset(r, 0, sizeof *r);
    if (!json_is_object(body))
        return gpd__fail(e, GP_EINVAL, "", "the body must be a JSON object");
    int rc = gpd__json_known(body, submit_fields, "a workload", e);
    if (rc < 0)
        return rc;
    json_t *v = json_object_get(body, "project");
    if (!v)
        return gpd__fail(e, GP_EINVAL, "project", "project: is required");
    if (!json_is_string(v) || !gpd__name_ok(json_string_value(v)))
        return gpd__fail(e, GP_EINVAL, "project", "project: must be a project name");
    gp_workload_spec_init(&r->spec, 1, json_string_value(v));
    r->grace_ms = GPD__DEFAULT_GRACE_MS;
    r->ckpt_signal = SIGTERM;
    if ((v = json_object_get(body, "name"))) {
        if (!json_is_string(v) || strlen(json_string_value(v)) >= sizeof r->name)
            return gpd__fail(e, GP_EINVAL, "name", "name: must be a string of at most 63 bytes");
        snprintf(r->name, sizeof r->name, "%s", json_string_value(v));
    }
    if ((rc = parse_command(body, r, e)) < 0 || (rc = parse_gpu(body, r, e)) < 0 ||
        (rc = parse_lists(body, r, e)) < 0 || (rc = parse_compute(body, r, e)) < 0)
        return rc;
    int64_t x;
    gp_workload_spec *s = &r->spec;
    if ((v = json_object_get(body, "cpu"))) {
        if ((rc = json_milli(v, "cpu", &s->req.cpu_milli, e)) < 0)
            return rc;
    }
    if ((v = json_object_get(body, "memory")) &&
        (rc = json_size(v, "memory", &s->req.mem_bytes, e)) < 0)
        return rc;
    if ((v = json_object_get(body, "gang"))) {
        if ((rc = json_int(v, "gang", 1, GPD__MAX_GANG, &x, e)) < 0)
            return rc;
        s->tasks = (int32_t)x;
    }
    if ((v = json_object_get(body, "min_gang"))) {
        if ((rc = json_int(v, "min_gang", 1, s->tasks, &x, e)) < 0)
            return rc;
        s->min_tasks = (int32_t)x;
    }
    if ((v = json_object_get(body, "kind"))) {
        gp_kind k;
        if (!json_is_string(v) || gp_kind_parse(json_string_value(v), &k) < 0)
            return gpd__fail(e, GP_EINVAL, "kind", "kind: must be train, interactive or inference");
        s->kind = k;
    }
    if ((v = json_object_get(body, "interactive"))) {
        if (!json_is_boolean(v))
            return gpd__fail(e, GP_EINVAL, "interactive", "interactive: must be true or false");
        if (json_is_true(v))
            s->kind = GP_KIND_INTERACTIVE;
    }
    if ((v = json_object_get(body, "tty"))) {
        if (!json_is_boolean(v))
            return gpd__fail(e, GP_EINVAL, "tty", "tty: must be true or false");
        r->tty = json_is_true(v);
        if (r->tty && json_object_get(body, "kind") && s->kind != GP_KIND_INTERACTIVE)
            return gpd__fail(e, GP_EINVAL, "tty", "tty: a terminal is for kind interactive only");
        if (r->tty && s->tasks > 1)
            return gpd__fail(e, GP_EINVAL, "tty", "tty: a terminal needs a workload of one task");
        if (r->tty)
            s->kind = GP_KIND_INTERACTIVE;
    }
    if ((v = json_object_get(body, "priority"))) {
        if ((rc = json_int(v, "priority", -1000, 1000, &x, e)) < 0)
            return rc;
        s->priority = (int32_t)x;
    }
    if ((v = json_object_get(body, "preemptible"))) {
        if (!json_is_boolean(v))
            return gpd__fail(e, GP_EINVAL, "preemptible", "preemptible: must be true or false");
        s->preemptible = json_is_true(v);
    }
    if ((v = json_object_get(body, "same_domain"))) {
        if (!json_is_boolean(v))
            return gpd__fail(e, GP_EINVAL, "same_domain", "same_domain: must be true or false");
        s->same_domain = json_is_true(v);
    }
    if ((v = json_object_get(body, "grace"))) {
        if ((rc = json_duration(v, "grace", &r->grace_ms, e)) < 0)
            return rc;
        if (r->grace_ms > 24 * 3600 * 1000)
            return gpd__fail(e, GP_EINVAL, "grace", "grace: must be at most 24h");
    }
    if ((v = json_object_get(body, "min_runtime")) &&
        (rc = json_duration(v, "min_runtime", &s->min_runtime, e)) < 0)
        return rc;
    if ((v = json_object_get(body, "checkpoint_signal"))) {
        int sig = 0;
        char b[16];
        const char *str = json_string_value(v);
        if (json_is_integer(v)) {
            snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v));
            str = b;
        }
        if (!str || gp_parse_signal(str, &sig) < 0 || sig == SIGKILL || sig == SIGSTOP)
            return gpd__fail(
                e, GP_EINVAL, "checkpoint_signal",
                "checkpoint_signal: must be a catchable signal like \"TERM\" or \"USR1\"");
        r->ckpt_signal = sig;
    }
    if ((v = json_object_get(body, "client_key"))) {
        if (!json_is_string(v) || !json_string_value(v)[0] || strlen(json_string_value(v)) > 128)
            return gpd__fail(e, GP_EINVAL, "client_key",
                             "client_key: must be a string of 1 to 128 bytes");
        r->client_key = json_string_value(v);
    }
    if (s->tasks > 1) {
        size_t n = strlen(r->summary);
        snprintf(r->summary + n, sizeof r->summary - n, " x%d", s->tasks);
    }
    return 0;
}

char *gpd__request_canonical(json_t *body) {
    json_t *copy = json_copy(body);
    if (!copy)
        return NULL;
    json_object_del(copy, "client_key");
    char *s = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(copy);
    return s;
}

/* ---- Queue bodies (POST and PATCH /api/v1/queues) ------------------------ */

static const char *const queue_res_names[GP_RES_COUNT] = {"gpu", "cpu", "memory"};

static int parse_res(json_t *v, int r, const char *field, int64_t *out, gpd__err *e) {
    int rc = r == GP_RES_MEM ? json_size(v, field, out, e) : json_milli(v, field, out, e);
    if (rc < 0 && (json_is_number(v) && json_number_value(v) < 0))
        return gpd__fail(e, GP_EINVAL, field, "%s: must not be negative", field);
    return rc;
}

/* Applies {"gpu":..,"cpu":..,"memory":..} to one part of every quota. */
static int parse_quota_obj(json_t *obj, const char *what, gp_queue_spec *q, gpd__err *e) {
    static const char *const known[] = {"gpu", "cpu", "memory", NULL};
    char field[64];
    if (!json_is_object(obj))
        return gpd__fail(e, GP_EINVAL, what, "%s: must be an object with gpu, cpu, memory", what);
    int rc = gpd__json_known(obj, known, what, e);
    if (rc < 0)
        return rc;
    for (int r = 0; r < GP_RES_COUNT; r++) {
        json_t *v = json_object_get(obj, queue_res_names[r]);
        if (!v)
            continue;
        snprintf(field, sizeof field, "%s.%s", what, queue_res_names[r]);
        gp_quota *qu = &q->quota[r];
        if (strcmp(what, "limit") == 0 && json_is_null(v)) {
            qu->limit = GP_UNLIMITED;
        } else if (strcmp(what, "weight") == 0) {
            int64_t w;
            if ((rc = json_int(v, field, 0, 1000000, &w, e)) < 0)
                return rc;
            qu->weight = (int32_t)w;
        } else {
            int64_t x;
            if ((rc = parse_res(v, r, field, &x, e)) < 0)
                return rc;
            if (strcmp(what, "deserved") == 0)
                qu->deserved = x;
            else
                qu->limit = x;
        }
    }
    return 0;
}

int gpd__queue_parse(json_t *body, int create, gp_queue_spec *q, gpd__err *e) {
    static const char *const known_create[] = {
        "name",   "parent",          "priority",          "deserved", "limit",
        "weight", "min_runtime_max", "reclaim_grace_max", NULL};
    static const char *const known_update[] = {
        "priority", "deserved", "limit", "weight", "min_runtime_max", "reclaim_grace_max", NULL};
    int rc = gpd__json_known(body, create ? known_create : known_update, "a queue", e);
    if (rc < 0)
        return rc;
    json_t *v;
    if (create) {
        v = json_object_get(body, "name");
        if (!json_is_string(v) || !gpd__name_ok(json_string_value(v)))
            return gpd__fail(e, GP_EINVAL, "name",
                             "name: required; 1 to 63 letters, digits, '.', '_' or '-'");
        const char *parent = "";
        if ((v = json_object_get(body, "parent")) && !json_is_null(v)) {
            if (!json_is_string(v) || !gpd__name_ok(json_string_value(v)))
                return gpd__fail(e, GP_EINVAL, "parent", "parent: must be a queue name");
            parent = json_string_value(v);
        }
        gp_queue_spec_init(q, json_string_value(json_object_get(body, "name")), parent);
    }
    if ((v = json_object_get(body, "priority"))) {
        int64_t p;
        if ((rc = json_int(v, "priority", -1000, 1000, &p, e)) < 0)
            return rc;
        q->priority = (int32_t)p;
    }
    if ((v = json_object_get(body, "weight")) && json_is_integer(v)) {
        int64_t w;
        if ((rc = json_int(v, "weight", 0, 1000000, &w, e)) < 0)
            return rc;
        for (int r = 0; r < GP_RES_COUNT; r++)
            q->quota[r].weight = (int32_t)w;
    } else if (v && (rc = parse_quota_obj(v, "weight", q, e)) < 0) {
        return rc;
    }
    if ((v = json_object_get(body, "min_runtime_max"))) {
        if ((rc = json_duration(v, "min_runtime_max", &q->min_runtime_max, e)) < 0)
            return rc;
        if (q->min_runtime_max > INT64_C(7) * 24 * 3600 * 1000)
            return gpd__fail(e, GP_EINVAL, "min_runtime_max", "min_runtime_max: at most 7d");
    }
    if ((v = json_object_get(body, "reclaim_grace_max"))) {
        if ((rc = json_duration(v, "reclaim_grace_max", &q->reclaim_grace_max, e)) < 0)
            return rc;
        if (q->reclaim_grace_max > INT64_C(24) * 3600 * 1000)
            return gpd__fail(e, GP_EINVAL, "reclaim_grace_max", "reclaim_grace_max: at most 24h");
    }
    if ((v = json_object_get(body, "deserved")) && (rc = parse_quota_obj(v, "deserved", q, e)) < 0)
        return rc;
    if ((v = json_object_get(body, "limit")) && (rc = parse_quota_obj(v, "limit", q, e)) < 0)
        return rc;
    for (int r = 0; r < GP_RES_COUNT; r++)
        if (q->quota[r].limit != GP_UNLIMITED && q->quota[r].limit < q->quota[r].deserved)
            return gpd__fail(e, GP_EINVAL, "limit", "limit.%s: is below deserved.%s",
                             queue_res_names[r], queue_res_names[r]);
    return 0;
}
