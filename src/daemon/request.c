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
#include "common/gp_queue.h"
#include "common/gp_submit.h"
#include "common/units.h"

int gpd__json_stored(const char *text, json_t **j) {
    json_error_t a, b;
    if ((*j = json_loads(text, 0, &a)) != NULL || (*j = json_loads(text, 0, &b)) != NULL)
        return 0;
    if (json_error_code(&a) == json_error_out_of_memory ||
        json_error_code(&b) == json_error_out_of_memory || a.position != b.position ||
        strcmp(a.text, b.text) != 0)
        return GP_ENOMEM;
    return GP_ECORRUPT;
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
    {"on_preempt", "on_preempt"},
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
    /* A negative amount is its field's range to refuse (parse_typed). */
    if (!isfinite(x) || fabs(x) > 9e15)
        return gpd__fail(e, GP_EINVAL, field, "%s: %g is out of range", field,
                         json_number_value(v));
    double r = nearbyint(x);
    if (fabs(x - r) > 1e-6)
        return gpd__fail(e, GP_EINVAL, field, "%s: %g has more than 3 decimals", field,
                         json_number_value(v));
    *out = (int64_t)r;
    return 0;
}

/* A unit of an amount: a value is a whole number of it, scale of what is
 * held, or a string in its own form that parse reads; words say what the
 * value must be. */
typedef struct amount_unit {
    int64_t scale;
    int (*parse)(const char *, int64_t *);
    const char *words;
} amount_unit;

/* A size, held in bytes ("32G"); a duration, given in seconds and held in
 * milliseconds ("60s"); a bound, a duration where 0 or "none" is none. */
static const amount_unit size_unit = {1, gp_parse_size,
                                      "a number of bytes or a size like \"32G\" or \"512M\""};
static const amount_unit duration_unit = {1000, gp_parse_duration_ms,
                                          "a number of seconds or a duration like \"60s\", \"5m\""};
static const amount_unit bound_unit = {
    1000, gp_parse_duration_ms,
    "a number of seconds, a duration like \"60s\", \"5m\", or 0, "
    "null or \"none\" for no bound"};

/* An amount of unit u. Its range is its field's (parse_typed), a negative
 * number's too. */
static int json_amount(json_t *v, const char *field, const amount_unit *u, int64_t *out,
                       gpd__err *e) {
    if (json_is_integer(v) && json_integer_value(v) >= -(INT64_MAX / u->scale) &&
        json_integer_value(v) <= INT64_MAX / u->scale) {
        *out = json_integer_value(v) * u->scale;
        return 0;
    }
    if (json_is_string(v) && u->parse(json_string_value(v), out) == 0)
        return 0;
    return gpd__fail(e, GP_EINVAL, field, "%s: must be %s", field, u->words);
}

/* A whole number; its range is its field's (parse_typed). */
static int json_int(json_t *v, const char *field, int64_t *out, gpd__err *e) {
    if (!json_is_integer(v))
        return gpd__fail(e, GP_EINVAL, field, "%s: must be a whole number", field);
    *out = json_integer_value(v);
    return 0;
}

/* ---- Submissions: one parser per field of GP_SUBMIT_FIELDS ---------------
 *
 * gpd__request_parse walks the list in its order: a field's value is first
 * read as its type says (numbers in range, booleans), then handed to the
 * field's own parser, which checks what only it knows and stores it. A
 * required field's parser is called without a value too, to say so.
 */

/* The known fields, for the error about an unknown one. */
static const char *const submit_fields[] = {
#define SUBMIT_NAME_(name, req, flag, type, lo, hi, arg, unit, help) #name,
    GP_SUBMIT_FIELDS(SUBMIT_NAME_)
#undef SUBMIT_NAME_
        NULL};

/* What a field's parser is given: its field, its value (NULL only for a
 * required field that is absent), the number or boolean read from it, and
 * the whole request. */
typedef struct field_in {
    const gp_field *f;
    json_t *v;
    int64_t x;
    json_t *body;
} field_in;

typedef int (*field_parser)(const field_in *in, gpd__request *r, gpd__err *e);

#define SUBMIT_DECL_(name, req, flag, type, lo, hi, arg, unit, help)                               \
    static int parse_##name(const field_in *in, gpd__request *r, gpd__err *e);
GP_SUBMIT_FIELDS(SUBMIT_DECL_)
#undef SUBMIT_DECL_

static const field_parser field_parsers[GP_SUBMIT_NFIELDS] = {
#define SUBMIT_FN_(name, req, flag, type, lo, hi, arg, unit, help) parse_##name,
    GP_SUBMIT_FIELDS(SUBMIT_FN_)
#undef SUBMIT_FN_
};

/* Reads v as f's type says into *x: a number within f's range, a bound (0
 * for none), a boolean (other types, and a weight given per resource, are
 * left to the field's parser). name is f's in messages ("deserved.gpu" for
 * a part of a quota). */
static int parse_typed(const gp_field *f, const char *name, json_t *v, int64_t *x, gpd__err *e) {
    int rc;
    switch (f->type) {
    case GP_SUBMIT_WEIGHT:
        if (!json_is_integer(v))
            return 0;
        /* fall through */
    case GP_SUBMIT_INT:
        rc = json_int(v, name, x, e);
        break;
    case GP_SUBMIT_MILLI:
        rc = json_milli(v, name, x, e);
        break;
    case GP_SUBMIT_SIZE:
        rc = json_amount(v, name, &size_unit, x, e);
        break;
    case GP_SUBMIT_BOUND:
        /* 0, null or "none": no bound. */
        *x = 0;
        if (json_is_null(v) || (json_is_string(v) && (strcmp(json_string_value(v), "none") == 0 ||
                                                      strcmp(json_string_value(v), "0") == 0))) {
            rc = 0;
            break;
        }
        rc = json_amount(v, name, &bound_unit, x, e);
        break;
    case GP_SUBMIT_DURATION:
        rc = json_amount(v, name, &duration_unit, x, e);
        break;
    case GP_SUBMIT_TRUE:
    case GP_SUBMIT_FALSE:
        if (!json_is_boolean(v))
            return gpd__fail(e, GP_EINVAL, name, "%s: must be true or false", name);
        *x = json_is_true(v);
        return 0;
    default:
        return 0;
    }
    char why[128];
    if (rc == 0 && gp_field_out_of_range(f, *x, why, sizeof why))
        return gpd__fail(e, GP_EINVAL, name, "%s: %s", name, why);
    return rc;
}

/* A field stored as parse_typed read it (its range checked there). */
#define STORED_FIELD_(name, member, type)                                                          \
    static int parse_##name(const field_in *in, gpd__request *r, gpd__err *e) {                    \
        (void)e;                                                                                   \
        r->member = (type)in->x;                                                                   \
        return 0;                                                                                  \
    }

static int parse_project(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *v = in->v;
    if (!v)
        return gpd__fail(e, GP_EINVAL, "project", "project: is required");
    if (!json_is_string(v) || !gp_name_ok(json_string_value(v)))
        return gpd__fail(e, GP_EINVAL, "project", "project: must be a project name");
    gp_workload_spec_init(&r->spec, 1, json_string_value(v));
    return 0;
}

static int parse_name(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *v = in->v;
    if (!json_is_string(v) || strlen(json_string_value(v)) >= sizeof r->name)
        return gpd__fail(e, GP_EINVAL, "name", "name: must be a string of at most %zu bytes",
                         sizeof r->name - 1);
    snprintf(r->name, sizeof r->name, "%s", json_string_value(v));
    return 0;
}

static int parse_command(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *cmd = in->v;
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
    return 0;
}

static int parse_env(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *env = in->v;
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
            return gpd__fail(e, GP_EINVAL, "env", "env: %s is set by gpupool and cannot be given",
                             k);
    }
    r->env = env;
    return 0;
}

static int parse_workdir(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *wd = in->v;
    if (!json_is_string(wd) || json_string_value(wd)[0] != '/')
        return gpd__fail(e, GP_EINVAL, "workdir", "workdir: must be an absolute path");
    r->workdir = json_string_value(wd);
    return 0;
}

static int parse_run_as(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *ra = in->v;
    if (!json_is_string(ra) || !gp_name_ok(json_string_value(ra)))
        return gpd__fail(e, GP_EINVAL, "run_as", "run_as: must be a Unix user name");
    r->run_as = json_string_value(ra);
    return 0;
}

/* gpu, gpu_memory and mig are three ways of one request: at most one,
 * checked before the value of the first of them is read. */
static int one_gpu_request(json_t *body, gpd__err *e) {
    json_t *gpu = json_object_get(body, "gpu"), *mem = json_object_get(body, "gpu_memory"),
           *mig = json_object_get(body, "mig");
    if (!!gpu + !!mem + !!mig > 1)
        return gpd__fail(e, GP_EINVAL, gpu ? "gpu" : "gpu_memory",
                         "gpu, gpu_memory and mig exclude each other: give only one");
    return 0;
}

/* The list's bound on whole GPUs, which parse_typed checked, is the
 * engine's. */
_Static_assert(GP_SUBMIT_GPUS_MAX <= GP_MAX_GPUS_PER_NODE,
               "a task may not ask for more GPUs than a node can have");

static int parse_gpu(const field_in *in, gpd__request *r, gpd__err *e) {
    int64_t m = in->x;
    gp_task_req *q = &r->spec.req;
    char b[32];
    gp_format_milli(m, b, sizeof b);
    if (m < GP_MILLI) {
        q->gpu = GP_GPU_FRACTION;
        q->gpu_milli = (int32_t)m;
        snprintf(r->summary, sizeof r->summary, "%s GPU", b);
    } else if (m % GP_MILLI != 0) {
        return gpd__fail(e, GP_EINVAL, "gpu",
                         "gpu: %s is neither a whole number of GPUs nor a fraction below 1", b);
    } else {
        q->gpu = GP_GPU_WHOLE;
        q->gpus = (int32_t)(m / GP_MILLI);
        snprintf(r->summary, sizeof r->summary, "%d GPU%s", q->gpus, q->gpus > 1 ? "s" : "");
    }
    return 0;
}

static int parse_gpu_memory(const field_in *in, gpd__request *r, gpd__err *e) {
    gp_task_req *q = &r->spec.req;
    (void)e;
    q->gpu_mem = in->x;
    q->gpu = GP_GPU_MEMORY;
    char b[32];
    gp_format_size(q->gpu_mem, b, sizeof b);
    snprintf(r->summary, sizeof r->summary, "%s GPU memory", b);
    return 0;
}

static int parse_mig(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *mig = in->v;
    gp_task_req *q = &r->spec.req;
    const char *p = json_string_value(mig);
    if (!p || !*p || strlen(p) >= sizeof q->mig_profile)
        return gpd__fail(e, GP_EINVAL, "mig", "mig: must be a MIG profile like \"1g.18gb\"");
    q->gpu = GP_GPU_MIG;
    snprintf(q->mig_profile, sizeof q->mig_profile, "%s", p);
    snprintf(r->summary, sizeof r->summary, "MIG %s", p);
    return 0;
}

static int parse_models(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *v = in->v;
    gp_task_req *q = &r->spec.req;
    if (!json_is_array(v) || json_array_size(v) > GP_MAX_MODELS)
        return gpd__fail(e, GP_EINVAL, "models", "models: must be a list of at most %d names",
                         GP_MAX_MODELS);
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m) {
        if (!json_is_string(m) || !gp_name_ok(json_string_value(m)))
            return gpd__fail(e, GP_EINVAL, "models", "models: item %zu is not a model name", i);
        snprintf(q->models[i], sizeof q->models[i], "%s", json_string_value(m));
    }
    q->nmodels = (int32_t)json_array_size(v);
    return 0;
}

static int parse_selectors(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *v = in->v;
    gp_task_req *q = &r->spec.req;
    if (!json_is_object(v) || json_object_size(v) > GP_MAX_SELECTORS)
        return gpd__fail(e, GP_EINVAL, "selectors",
                         "selectors: must be an object of at most %d label: value pairs",
                         GP_MAX_SELECTORS);
    const char *k;
    json_t *s;
    json_object_foreach(v, k, s) {
        if (!gp_name_ok(k) || !json_is_string(s) || !gp_name_ok(json_string_value(s)))
            return gpd__fail(e, GP_EINVAL, "selectors",
                             "selectors: \"%s\" must be a label name with a string value", k);
        gp_label *l = &q->selectors[q->nselectors++];
        snprintf(l->key, sizeof l->key, "%s", k);
        snprintf(l->value, sizeof l->value, "%s", json_string_value(s));
    }
    return 0;
}

/* gpu_compute: a slice's share of its GPU's time (after gpu, which says
 * whether the request is a slice). */
static int parse_gpu_compute(const field_in *in, gpd__request *r, gpd__err *e) {
    int64_t m = in->x;
    if (r->spec.req.gpu != GP_GPU_FRACTION && r->spec.req.gpu != GP_GPU_MEMORY)
        return gpd__fail(e, GP_EINVAL, "gpu_compute",
                         "gpu_compute: only a slice of a GPU (gpu below 1, or gpu_memory) "
                         "shares the GPU's time");
    r->compute_pct = (int32_t)((m + 9) / 10);
    return 0;
}

STORED_FIELD_(cpu, spec.req.cpu_milli, int64_t)

STORED_FIELD_(memory, spec.req.mem_bytes, int64_t)

STORED_FIELD_(gang, spec.tasks, int32_t)

static int parse_min_gang(const field_in *in, gpd__request *r, gpd__err *e) {
    int64_t n = in->x;
    const gp_field *f = in->f;
    if (n > r->spec.tasks)
        return gpd__fail(e, GP_EINVAL, "min_gang", "min_gang: %lld is outside %lld to %d (gang)",
                         (long long)n, (long long)f->lo, r->spec.tasks);
    r->spec.min_tasks = (int32_t)n;
    return 0;
}

static int parse_kind(const field_in *in, gpd__request *r, gpd__err *e) {
    static const char *const kinds[] = {GP_KINDS(GP_ENUM_NAME_OF)};
    json_t *v = in->v;
    gp_kind k;
    char list[128];
    if (!json_is_string(v) || gp_kind_parse(json_string_value(v), &k) < 0)
        return gpd__fail(e, GP_EINVAL, "kind", "kind: must be %s",
                         gp_names_or(list, sizeof list, kinds, GP_KIND_COUNT));
    r->spec.kind = k;
    return 0;
}

static int parse_interactive(const field_in *in, gpd__request *r, gpd__err *e) {
    int64_t on = in->x;
    (void)e;
    if (on)
        r->spec.kind = GP_KIND_INTERACTIVE;
    return 0;
}

/* tty: a terminal (`gpupool run -it`), for one interactive task (after
 * kind, interactive and gang). */
static int parse_tty(const field_in *in, gpd__request *r, gpd__err *e) {
    r->tty = (int)in->x;
    if (r->tty && json_object_get(in->body, "kind") && r->spec.kind != GP_KIND_INTERACTIVE)
        return gpd__fail(e, GP_EINVAL, "tty", "tty: a terminal is for kind interactive only");
    if (r->tty && r->spec.tasks > 1)
        return gpd__fail(e, GP_EINVAL, "tty", "tty: a terminal needs a workload of one task");
    if (r->tty)
        r->spec.kind = GP_KIND_INTERACTIVE;
    return 0;
}

STORED_FIELD_(priority, spec.priority, int32_t)

STORED_FIELD_(preemptible, spec.preemptible, int)

STORED_FIELD_(same_domain, spec.same_domain, int)

STORED_FIELD_(grace, grace_ms, int64_t)

STORED_FIELD_(min_runtime, spec.min_runtime, int64_t)

static int parse_checkpoint_signal(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *v = in->v;
    int sig = 0;
    char b[16];
    const char *str = json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v));
        str = b;
    }
    if (!str || gp_parse_signal(str, &sig) < 0 || sig == SIGKILL || sig == SIGSTOP)
        return gpd__fail(e, GP_EINVAL, "checkpoint_signal",
                         "checkpoint_signal: must be a catchable signal like \"TERM\" or \"USR1\"");
    r->ckpt_signal = sig;
    return 0;
}

/* The eviction modes, as a sentence's list ("pause, checkpoint or requeue"). */
static const char *modes_or(char *buf, size_t len) {
    static const char *const modes[] = {GP_ON_PREEMPT_MODES(GP_ENUM_NAME_OF)};
    return gp_names_or(buf, len, modes, GP_ON_PREEMPT_COUNT);
}

static int parse_on_preempt(const field_in *in, gpd__request *r, gpd__err *e) {
    gp_on_preempt m;
    char list[64];
    if (!json_is_string(in->v) || gp_on_preempt_parse(json_string_value(in->v), &m) < 0)
        return gpd__fail(e, GP_EINVAL, "on_preempt", "on_preempt: must be %s",
                         modes_or(list, sizeof list));
    r->spec.on_preempt = m;
    return 0;
}

static int parse_client_key(const field_in *in, gpd__request *r, gpd__err *e) {
    json_t *v = in->v;
    if (!json_is_string(v) || !json_string_value(v)[0] || strlen(json_string_value(v)) > 128)
        return gpd__fail(e, GP_EINVAL, "client_key",
                         "client_key: must be a string of 1 to 128 bytes");
    r->client_key = json_string_value(v);
    return 0;
}

int gpd__request_parse(json_t *body, gpd__request *r, gpd__err *e) {
    memset(r, 0, sizeof *r);
    if (!json_is_object(body))
        return gpd__fail(e, GP_EINVAL, "", "the body must be a JSON object");
    int rc = gpd__json_known(body, submit_fields, "a workload", e);
    if (rc < 0)
        return rc;
    r->grace_ms = GPD__DEFAULT_GRACE_MS;
    r->ckpt_signal = SIGTERM;
    snprintf(r->summary, sizeof r->summary, "no GPU");
    for (int i = 0; i < GP_SUBMIT_NFIELDS; i++) {
        const gp_field *f = &gp_submit_fields[i];
        field_in in = {f, json_object_get(body, f->name), 0, body};
        if (in.v == NULL && !f->required)
            continue;
        if ((i == GP_SUBMIT_F_gpu || i == GP_SUBMIT_F_gpu_memory || i == GP_SUBMIT_F_mig) &&
            (rc = one_gpu_request(body, e)) < 0)
            return rc;
        if (in.v != NULL && (rc = parse_typed(f, f->name, in.v, &in.x, e)) < 0)
            return rc;
        if ((rc = field_parsers[i](&in, r, e)) < 0)
            return rc;
    }
    if (r->spec.tasks > 1) {
        size_t n = strlen(r->summary);
        snprintf(r->summary + n, sizeof r->summary - n, " x%d", r->spec.tasks);
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

/* ---- Queue bodies: one parser per field of GP_QUEUE_FIELDS --------------
 *
 * gpd__queue_parse reads the fields in the list's order as
 * gpd__request_parse reads a submission's: each value first as its type says
 * (parse_typed: numbers and bounds in range), then by the field's parser,
 * which checks what only it knows and stores it in the queue's spec.
 */

_Static_assert(GP_QUEUE_NRES == GP_RES_COUNT, "a queue's quota has every resource");

typedef int (*queue_parser)(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e);

#define QUEUE_DECL_(name, create, flag, type, lo, hi, arg, unit, help)                             \
    static int queue_##name(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e);
GP_QUEUE_FIELDS(QUEUE_DECL_)
#undef QUEUE_DECL_

static const queue_parser queue_parsers[GP_QUEUE_NFIELDS] = {
#define QUEUE_FN_(name, create, flag, type, lo, hi, arg, unit, help) queue_##name,
    GP_QUEUE_FIELDS(QUEUE_FN_)
#undef QUEUE_FN_
};

/* A field of the spec stored as parse_typed read it (its range checked
 * there). */
#define QUEUE_STORED_(name, member)                                                                \
    static int queue_##name(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q,             \
                            gpd__err *e) {                                                         \
        (void)f, (void)v, (void)e;                                                                 \
        q->member = x;                                                                             \
        return 0;                                                                                  \
    }

/* Set before any other field (the spec is initialised with them). */
static int queue_name(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e) {
    (void)f, (void)x;
    if (!json_is_string(v) || !gp_name_ok(json_string_value(v)))
        return gpd__fail(e, GP_EINVAL, "name", "name: required; " GP_NAME_RULE);
    snprintf(q->name, sizeof q->name, "%s", json_string_value(v));
    return 0;
}

static int queue_parent(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e) {
    (void)f, (void)x;
    if (json_is_null(v))
        return 0;
    if (!json_is_string(v) || !gp_name_ok(json_string_value(v)))
        return gpd__fail(e, GP_EINVAL, "parent", "parent: must be a queue name");
    snprintf(q->parent, sizeof q->parent, "%s", json_string_value(v));
    return 0;
}

static int queue_priority(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e) {
    (void)f, (void)v, (void)e;
    q->priority = (int32_t)x;
    return 0;
}

/* A quota or a weight given per resource, {"gpu":..,"cpu":..,"memory":..}:
 * each part read as its own field (gp_queue_part_of); a limit's null is
 * unlimited. */
static int parse_quota_obj(const gp_field *f, json_t *obj, gp_queue_spec *q, gpd__err *e) {
    static const char *const known[] = {GP_RESOURCES(GP_ENUM_NAME_OF) NULL};
    const char *what = f->name;
    char field[64];
    if (!json_is_object(obj))
        return gpd__fail(e, GP_EINVAL, what, "%s: must be an object with gpu, cpu, memory", what);
    int rc = gpd__json_known(obj, known, what, e);
    if (rc < 0)
        return rc;
    for (gp_resource r = 0; r < GP_RES_COUNT; r++) {
        json_t *v = json_object_get(obj, gp_resource_name(r));
        if (!v)
            continue;
        snprintf(field, sizeof field, "%s.%s", what, gp_resource_name(r));
        gp_quota *qu = &q->quota[r];
        if (f == &gp_queue_fields[GP_QUEUE_F_limit] && json_is_null(v)) {
            qu->limit = GP_UNLIMITED;
            continue;
        }
        gp_queue_part p;
        int64_t x;
        gp_queue_part_of(f, (int)r, &p);
        if ((rc = parse_typed(&p.f, field, v, &x, e)) < 0)
            return rc;
        if (f->type == GP_SUBMIT_WEIGHT)
            qu->weight = (int32_t)x;
        else if (f == &gp_queue_fields[GP_QUEUE_F_deserved])
            qu->deserved = x;
        else
            qu->limit = x;
    }
    return 0;
}

static int queue_deserved(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e) {
    (void)x;
    return parse_quota_obj(f, v, q, e);
}

static int queue_limit(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e) {
    (void)x;
    return parse_quota_obj(f, v, q, e);
}

/* One number for every resource, or one each. */
static int queue_weight(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q, gpd__err *e) {
    if (!json_is_integer(v))
        return parse_quota_obj(f, v, q, e);
    for (gp_resource r = 0; r < GP_RES_COUNT; r++)
        q->quota[r].weight = (int32_t)x;
    return 0;
}

QUEUE_STORED_(min_runtime_max, min_runtime_max)

QUEUE_STORED_(reclaim_grace_max, reclaim_grace_max)

/* null: the queue sets none and inherits its parent's. */
static int queue_on_preempt(const gp_field *f, json_t *v, int64_t x, gp_queue_spec *q,
                            gpd__err *e) {
    char list[64];
    (void)f, (void)x;
    if (json_is_null(v)) {
        q->on_preempt = GP_ON_PREEMPT_CHECKPOINT;
        q->on_preempt_set = 0;
        return 0;
    }
    if (!json_is_string(v) || gp_on_preempt_parse(json_string_value(v), &q->on_preempt) < 0)
        return gpd__fail(e, GP_EINVAL, "on_preempt",
                         "on_preempt: must be %s, or null (its parent's)",
                         modes_or(list, sizeof list));
    q->on_preempt_set = 1;
    return 0;
}

QUEUE_STORED_(idle_gpu_timeout, idle_gpu_timeout)

QUEUE_STORED_(max_session_length, max_session_length)

/* Per task, as a submission's cpu and memory are; 0: none. */
QUEUE_STORED_(default_cpu, default_cpu_milli)

QUEUE_STORED_(default_memory, default_mem_bytes)

int gpd__queue_parse(json_t *body, int create, gp_queue_spec *q, gpd__err *e) {
    /* An update may change all but the fields of the queue's place. */
    const char *known[GP_QUEUE_NFIELDS + 1];
    int n = 0;
    for (int i = 0; i < GP_QUEUE_NFIELDS; i++)
        if (create || !gp_queue_fields[i].required)
            known[n++] = gp_queue_fields[i].name;
    known[n] = NULL;
    int rc = gpd__json_known(body, known, "a queue", e);
    if (rc < 0)
        return rc;
    if (create)
        gp_queue_spec_init(q, "", "");
    for (int i = 0; i < GP_QUEUE_NFIELDS; i++) {
        const gp_field *f = &gp_queue_fields[i];
        json_t *v = json_object_get(body, f->name);
        int64_t x = 0;
        if ((f->required && !create) || (v == NULL && i != GP_QUEUE_F_name))
            continue;
        if (v != NULL && (rc = parse_typed(f, f->name, v, &x, e)) < 0)
            return rc;
        if ((rc = queue_parsers[i](f, v, x, q, e)) < 0)
            return rc;
    }
    for (gp_resource r = 0; r < GP_RES_COUNT; r++)
        if (q->quota[r].limit != GP_UNLIMITED && q->quota[r].limit < q->quota[r].deserved)
            return gpd__fail(e, GP_EINVAL, "limit", "limit.%s: is below deserved.%s",
                             gp_resource_name(r), gp_resource_name(r));
    return 0;
}
