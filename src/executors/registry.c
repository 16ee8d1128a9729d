/*
 * registry.c — the table of executors gpupoold knows, and the thin wrappers
 * through which the daemon calls them.
 *
 * Executors register by appearing in the static table below; a cluster
 * engine is added by writing its methods table and one line here, with no
 * change to the daemon. The wrappers are the only place that touches a
 * methods table: they check that the table is recent enough to have the
 * method at all (methods are only ever appended, and `version` says how many
 * a table has) and that the pointer is set, so that an executor that does not
 * implement something answers GP_ENOTSUP instead of crashing the daemon.
 */
#include <stdlib.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/registry.h"

struct gp_executor {
    const gp_executor_methods *m;
    void *state;
};

static const gp_executor_methods *const registry[] = {
    &gpx__local_methods,
    &gpx__slurm_methods,
};

/* The version of the methods table in which each method first appeared. */
#define SINCE_V1 1
#define SINCE_V2 2
#define SINCE_V3 3

/* True if table m has method `field` (it is recent enough and set). */
#define HAS(m, field, since) ((m)->version >= (since) && (m)->field != NULL)

/* Calls ex's method `field` with the arguments after its state where ex is
 * set and the arguments pass the check `ok`, or is GP_EINVAL where they do
 * not, GP_ENOTSUP where ex's table has no such method. */
#define CALL(ex, ok, field, since, ...)                                                            \
    ((ex) == NULL || !(ok)        ? GP_EINVAL                                                      \
     : HAS((ex)->m, field, since) ? (ex)->m->field((ex)->state, __VA_ARGS__)                       \
                                  : GP_ENOTSUP)

const gp_executor_methods *gp_executor_find(const char *name) {
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (registry[i]->name != NULL && strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

int gpx__executor_open_methods(const gp_executor_methods *m, const gp_executor_ctx *ctx,
                               const char *config, gp_executor **out, char *err, size_t errlen) {
    if (out == NULL)
        return GP_EINVAL;
    *out = NULL;
    if (m == NULL)
        return GP_EINVAL;
    const char *name = m->name != NULL ? m->name : "(unnamed)";
    if (m->version < 1) {
        gp_errf(err, errlen, "executor '%s': methods table has version < 1", name);
        return GP_ENOTSUP;
    }
    if ((!HAS(m, open, SINCE_V1) && !HAS(m, open_ctx, SINCE_V2)) || !HAS(m, close, SINCE_V1)) {
        gp_errf(err, errlen, "executor '%s': methods table lacks open or close", name);
        return GP_ENOTSUP;
    }
    gp_executor *ex = calloc(1, sizeof *ex);
    if (ex == NULL) {
        gp_errf(err, errlen, "executor '%s': out of memory", name);
        return GP_ENOMEM;
    }
    ex->m = m;
    const gp_executor_ctx none = {0};
    const char *cfg = config != NULL ? config : "";
    int rc = HAS(m, open_ctx, SINCE_V2)
                 ? m->open_ctx(ctx != NULL ? ctx : &none, cfg, &ex->state, err, errlen)
                 : m->open(cfg, &ex->state, err, errlen);
    if (rc < 0) {
        free(ex);
        return rc;
    }
    *out = ex;
    return 0;
}

int gp_executor_open(const char *name, const char *config, gp_executor **out, char *err,
                     size_t errlen) {
    return gp_executor_open_ctx(name, NULL, config, out, err, errlen);
}

int gp_executor_open_ctx(const char *name, const gp_executor_ctx *ctx, const char *config,
                         gp_executor **out, char *err, size_t errlen) {
    if (out != NULL)
        *out = NULL;
    const gp_executor_methods *m = gp_executor_find(name);
    if (m == NULL) {
        gp_errf(err, errlen, "executor: no executor named '%s'", name ? name : "(null)");
        return GP_ENOENT;
    }
    return gpx__executor_open_methods(m, ctx, config, out, err, errlen);
}

void gp_executor_close(gp_executor *ex) {
    if (ex == NULL)
        return;
    ex->m->close(ex->state);
    free(ex);
}

const char *gp_executor_name(const gp_executor *ex) {
    return ex != NULL && ex->m->name != NULL ? ex->m->name : "";
}

int gp_exec_inventory(gp_executor *ex, gp_node_spec *nodes, size_t max, size_t *n, int *emulated,
                      char *err, size_t errlen) {
    if (ex == NULL || n == NULL || emulated == NULL || (nodes == NULL && max > 0))
        return GP_EINVAL;
    if (!HAS(ex->m, inventory, SINCE_V1)) {
        gp_errf(err, errlen, "executor '%s' does not report an inventory", gp_executor_name(ex));
        return GP_ENOTSUP;
    }
    *n = 0;
    *emulated = 0;
    return ex->m->inventory(ex->state, nodes, max, n, emulated, err, errlen);
}

int gp_exec_launch(gp_executor *ex, const gp_task_launch *t, char handle[GP_HANDLE_MAX], char *err,
                   size_t errlen) {
    if (ex == NULL || t == NULL || handle == NULL)
        return GP_EINVAL;
    if (!HAS(ex->m, launch, SINCE_V1)) {
        gp_errf(err, errlen, "executor '%s' cannot launch tasks", gp_executor_name(ex));
        return GP_ENOTSUP;
    }
    handle[0] = '\0';
    return ex->m->launch(ex->state, t, handle, err, errlen);
}

int gp_exec_signal(gp_executor *ex, const char *handle, int sig) {
    return CALL(ex, handle != NULL, signal, SINCE_V1, handle, sig);
}

int gp_exec_stop(gp_executor *ex, const char *handle) {
    return CALL(ex, handle != NULL, stop, SINCE_V1, handle);
}

int gp_exec_poll(gp_executor *ex, gp_task_status *tasks, size_t n) {
    return CALL(ex, tasks != NULL || n == 0, poll, SINCE_V1, tasks, n);
}

int gp_exec_reap(gp_executor *ex, const char *handle) {
    return CALL(ex, handle != NULL, reap, SINCE_V1, handle);
}

int gp_exec_control(gp_executor *ex, int op, void *arg) {
    return CALL(ex, 1, control, SINCE_V1, op, arg);
}

int gp_exec_tasks(gp_executor *ex, char (*handles)[GP_HANDLE_MAX], size_t max, size_t *n) {
    if (ex == NULL || n == NULL || (handles == NULL && max > 0))
        return GP_EINVAL;
    *n = 0;
    return CALL(ex, 1, tasks, SINCE_V2, handles, max, n);
}

int gp_exec_describe(gp_executor *ex, gp_executor_info *info) {
    if (ex == NULL || info == NULL)
        return GP_EINVAL;
    memset(info, 0, sizeof *info);
    return CALL(ex, 1, describe, SINCE_V2, info);
}

int gp_exec_session(gp_executor *ex, const char *handle, const gp_session_req *req, int *fd,
                    char *err, size_t errlen) {
    if (fd != NULL)
        *fd = -1;
    if (ex == NULL || handle == NULL || req == NULL || fd == NULL)
        return GP_EINVAL;
    if (!HAS(ex->m, session, SINCE_V3)) {
        gp_errf(err, errlen, "executor '%s' has no sessions (attach, exec, port forwarding)",
                gp_executor_name(ex));
        return GP_ENOTSUP;
    }
    return ex->m->session(ex->state, handle, req, fd, err, errlen);
}
