/*
 * request.h — the validation of a workload submission: the JSON body of
 * POST /api/v1/workloads turned into the engine's gp_workload_spec plus what
 * the executor needs (command, environment, working directory, grace period,
 * checkpoint signal). The same parser reads a stored request back after a
 * restart, so what was accepted once is accepted again.
 */
#ifndef GP_DAEMON_REQUEST_H
#define GP_DAEMON_REQUEST_H

#include <jansson.h>

#include "common/gp_submit.h"
#include "daemon/daemon.h"
#include "engine/gp_engine.h"

#define GPD__DEFAULT_GRACE_MS (GP_SUBMIT_GRACE_DEFAULT_S * 1000)
#define GPD__MAX_GANG         GP_SUBMIT_MAX_GANG
#define GPD__MAX_ARGS         1024
/* A workload's environment (docs/security.md): at most GPD__ENV_MAX_VARS
 * variables, names of at most GPD__ENV_MAX_NAME bytes, values of at most
 * GPD__ENV_MAX_VALUE bytes, and GPD__ENV_MAX_TOTAL bytes of "NAME=VALUE\0"
 * in all. 60,000 variables once held the scheduling loop for 25 s. */
#define GPD__ENV_MAX_VARS  1024
#define GPD__ENV_MAX_NAME  256
#define GPD__ENV_MAX_VALUE (32 * 1024)
#define GPD__ENV_MAX_TOTAL (128 * 1024)

typedef struct gpd__request {
    gp_workload_spec spec; /* id and user are the caller's to set */
    char name[GP_NAME_MAX + 1];
    int64_t grace_ms;
    int32_t ckpt_signal;
    int32_t compute_pct;    /* gpu_compute in percent of the GPU's time; 0: not limited */
    int tty;                /* 1: a terminal and sessions (attach, exec, port-forward) */
    json_t *command;        /* borrowed from the body: array of strings */
    json_t *env;            /* borrowed: object of strings, or NULL */
    const char *workdir;    /* borrowed, or NULL */
    const char *run_as;     /* borrowed: the Unix user (set from the token at
                               submit, never by the caller), or NULL */
    const char *client_key; /* borrowed, or NULL */
    char summary[64];       /* "0.5 GPU", "2 GPUs x4", "20G GPU memory" */
} gpd__request;

/*
 * Validates body and fills *r. Unknown fields, wrong types and absurd values
 * fail with GP_EINVAL, e->field naming the field and e->msg saying why.
 * Does not look at the pool: gpd__sched_check_request asks the engine.
 */
int gpd__request_parse(json_t *body, gpd__request *r, gpd__err *e);

/*
 * The engine's spec of request r for the workload stored as id, submitted by
 * user at submitted_ms: the one place where a request becomes a spec.
 */
void gpd__request_spec(const gpd__request *r, uint64_t id, const char *user, int64_t submitted_ms,
                       gp_workload_spec *out);

/*
 * Turns an error of the engine about a request (rc, and msg naming a field of
 * gp_workload_spec, as gp_engine_submit_check() gives it) into e, naming the
 * field as the request's JSON does ("req.gpu_mem" is "gpu_memory"). Returns
 * the code: GP_EINVAL for a request the engine refuses, whatever it said.
 */
int gpd__request_engine_error(int rc, const char *msg, gpd__err *e);

/*
 * The canonical form to store: body without client_key, keys sorted.
 * Returns a malloc'ed string or NULL if out of memory.
 */
char *gpd__request_canonical(json_t *body);

/*
 * Fills q from the body of a queue creation (create: name and parent are
 * read, q is initialised first) or change (on top of what q holds). GP_EINVAL
 * naming the field for unknown fields, wrong types, negative quantities and a
 * limit below the deserved quota.
 */
int gpd__queue_parse(json_t *body, int create, gp_queue_spec *q, gpd__err *e);

/* Checks that every key of obj is in the NULL-terminated list known. */
int gpd__json_known(json_t *obj, const char *const *known, const char *where, gpd__err *e);

/* Parses JSON the daemon stored itself into *j: 0, GP_ENOMEM or
 * GP_ECORRUPT. jansson reports an allocation that failed as a syntax error,
 * or as nothing, so a failure is tried again: a text that parses then, or
 * fails elsewhere, was short of memory; one that fails the same way twice
 * is corrupt. A caller must never take GP_ENOMEM for a corrupt record. */
int gpd__json_stored(const char *text, json_t **j);

#endif /* GP_DAEMON_REQUEST_H */
