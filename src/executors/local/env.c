/*
 * env.c — how the local executor delivers a task's environment: the list
 * that contract.c builds for every executor (docs/workload-contract.md),
 * turned into execve's envp, with a sentence for the log header on the GPUs
 * and whether the slice is enforced.
 *
 * What is local here is only what the builder is told: the instance id
 * (two daemons on one host never share a slice's ledger), whether the
 * interposer file exists on this host, and the rendezvous address of a
 * gang, whose tasks all run on this host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gp_env.h"
#include "common/gp_error.h"
#include "common/units.h"
#include "executors/contract.h"
#include "executors/local/local.h"
#include "executors/registry.h"

const char *gpx__env_get(char *const *env, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

void gpx__env_free(char **env) {
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

/* The sentence on the task's GPUs and its slice for the log header. */
static void describe(const gpx__local *lx, const gpx__contract *c, int found, char *note,
                     size_t notelen) {
    const char *uuids = gpx__contract_get(c, GP_ENV_VISIBLE_DEVICES);
    int any = uuids != NULL && uuids[0] != '\0';
    gpx__exec_fmt(note, notelen, "GPUs: %s%s", any ? uuids : "none",
                  lx->emulated && any ? " (EMULATED: no real GPU behind them)" : "");
    const gp_slice *s = c->frac;
    if (s == NULL)
        return;
    size_t l = strlen(note);
    /* The cap as a request writes it (20G), not in bytes. */
    char cap[32];
    gp_format_size(s->mem, cap, sizeof cap);
    if (found) {
        gpx__exec_fmt(note + l, notelen - l, "; slice %d milli-GPU, memory cap %s, enforced by %s",
                      s->milli, cap, lx->interposer);
    } else {
        gpx__exec_fmt(note + l, notelen - l,
                      "; slice %d milli-GPU, memory cap %s, NOT ENFORCED: interposer %s not "
                      "found (the cap is only announced in GPUPOOL_MEMORY_LIMIT)",
                      s->milli, cap, lx->interposer[0] ? lx->interposer : "(none)");
    }
}

int gpx__env_build(const gpx__local *lx, const gp_task_launch *t, const gpx__exec_user *u,
                   const char *ckpt_dir, char ***out, char *note, size_t notelen, char *err,
                   size_t errlen) {
    *out = NULL;
    int found = lx->interposer[0] != '\0' && access(lx->interposer, R_OK) == 0;
    gpx__contract_in in = {
        .t = t,
        .user = u,
        .instance = lx->instance,
        .node_name = lx->node_name,
        .ckpt_dir = ckpt_dir,
        .interposer = lx->interposer,
        .interposer_found = found,
        .engine_devices = 0,
        .emulated = lx->emulated,
        .master_addr = "127.0.0.1", /* every task of a gang runs on this host */
    };
    gpx__contract c;
    int rc = gpx__contract_build(&in, &c, err, errlen);
    if (rc < 0)
        return rc;
    char **env = calloc(c.n + 1, sizeof *env);
    if (env == NULL) {
        gpx__contract_free(&c);
        gp_errf(err, errlen, "env: out of memory");
        return GP_ENOMEM;
    }
    describe(lx, &c, found, note, notelen);
    /* The strings move into envp; the list keeps none of them. */
    for (size_t i = 0; i < c.n; i++) {
        env[i] = c.v[i].kv;
        c.v[i].kv = NULL;
    }
    gpx__contract_free(&c);
    *out = env;
    return 0;
}
