/*
 * api-admin.c — the routes about the pool itself and who may use it: health,
 * whoami, nodes (GPUs with each slice and its real memory use) and tokens.
 */
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/api.h"
#include "daemon/request.h"
#include "daemon/sched.h"
#include "daemon/store.h"

int gpd__h_health(gpd__req *r, gpd__resp *out, gpd__err *e) {
    (void)r;
    (void)e;
    return gpd__reply_json(out, 200, json_pack("{s:b}", "ok", 1));
}

/* The home directory the caller's tasks would start from by default in the
 * console's form: its Unix user's, or the daemon's own user's in single-user
 * mode (where every task runs as the daemon); "" if this host does not know. */
static void home_of(const char *unix_user, char *out, size_t len) {
    char buf[4096];
    struct passwd pw, *res = NULL;
    out[0] = '\0';
    if (geteuid() != 0)
        getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res);
    else if (unix_user[0] != '\0')
        getpwnam_r(unix_user, &pw, buf, sizeof buf, &res);
    if (res != NULL && res->pw_dir != NULL && res->pw_dir[0] == '/')
        snprintf(out, len, "%s", res->pw_dir);
}

/* 1 if the caller's tasks would run as root: never in single-user mode (they
 * run as the daemon's own user, who is not root there), else when its Unix
 * user is root here. Programs that refuse root unless told (Jupyter's
 * --allow-root) are told only then. */
static int runs_as_root(const char *unix_user) {
    char buf[4096];
    struct passwd pw, *res = NULL;
    if (geteuid() != 0 || unix_user[0] == '\0')
        return 0;
    return getpwnam_r(unix_user, &pw, buf, sizeof buf, &res) == 0 && res != NULL && pw.pw_uid == 0;
}

int gpd__h_whoami(gpd__req *r, gpd__resp *out, gpd__err *e) {
    (void)e;
    char home[PATH_MAX];
    home_of(r->who.unix_user, home, sizeof home);
    return gpd__reply_json(out, 200,
                           json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b}", "user", r->who.user,
                                     "role", gpd__role_name(r->who.role), "scope", r->who.scope,
                                     "unix_user", r->who.unix_user, "token_id",
                                     (json_int_t)r->who.token_id, "home", home, "runs_as_root",
                                     runs_as_root(r->who.unix_user)));
}

/* ---- Nodes ---------------------------------------------------------------- */

static json_t *slices_of(const gpd__live_task *lt, size_t n, const char *node, int gpu,
                         int64_t *mem_used) {
    json_t *arr = json_array();
    *mem_used = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(lt[i].node, node) != 0)
            continue;
        for (int s = 0; s < lt[i].binding.nslices; s++) {
            const gp_slice *sl = &lt[i].binding.slices[s];
            if (sl->gpu != gpu)
                continue;
            /* A task's memory use is reported for the task; split it evenly
             * over its GPUs, which is exact for the usual single-GPU slice. */
            int64_t used =
                lt[i].gpu_mem_used >= 0 ? lt[i].gpu_mem_used / lt[i].binding.nslices : -1;
            if (used > 0)
                *mem_used += used;
            json_t *one =
                json_pack("{s:I, s:i, s:s, s:f, s:I, s:I}", "workload", (json_int_t)lt[i].workload,
                          "task", lt[i].task, "project", lt[i].project, "gpu", sl->milli / 1000.0,
                          "memory_cap", (json_int_t)sl->mem, "memory_used", (json_int_t)used);
            if (lt[i].compute_pct > 0 && sl->milli < 1000)
                json_object_set_new(one, "gpu_compute", json_real(lt[i].compute_pct / 100.0));
            json_array_append_new(arr, one);
        }
    }
    return arr;
}

int gpd__h_nodes(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gpd__live_task *lt = NULL;
    size_t nlt = 0;
    if (gpd__sched_live_tasks(r->d->sched, &lt, &nlt) < 0)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    json_t *arr = json_array();
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    size_t n = gp_engine_node_count(eng);
    for (size_t i = 0; i < n; i++) {
        gp_node_info ni;
        if (gp_engine_node_at(eng, i, &ni) < 0)
            continue;
        json_t *gpus = json_array();
        for (int g = 0; g < ni.ngpus; g++) {
            const gp_gpu_info *gi = &ni.gpus[g];
            int64_t used = 0;
            json_t *sl = slices_of(lt, nlt, ni.name, g, &used);
            json_array_append_new(
                gpus,
                json_pack("{s:i, s:s, s:s, s:I, s:b, s:f, s:I, s:i, s:I, s:o, s:b}", "index", g,
                          "uuid", gi->uuid, "model", gi->model, "memory", (json_int_t)gi->mem_bytes,
                          "mig", gi->mig, "allocated", gi->used_milli / 1000.0, "allocated_memory",
                          (json_int_t)gi->used_mem, "slices_count", gi->slices, "memory_used",
                          (json_int_t)used, "slices", sl, "taken", gi->taken));
        }
        /* What the node really uses (null: not known), beside what its
         * tasks asked for (cpu_used, memory_used). */
        int64_t cpu_in = -1, mem_in = -1;
        gpd__sched_node_usage(r->d->sched, ni.name, &cpu_in, &mem_in);
        json_t *node = json_pack(
            "{s:s, s:s, s:b, s:f, s:I, s:f, s:I, s:o, s:i}", "name", ni.name, "domain", ni.domain,
            "schedulable", ni.schedulable, "cpu", ni.cpu_milli / 1000.0, "memory",
            (json_int_t)ni.mem_bytes, "cpu_used", ni.cpu_used / 1000.0, "memory_used",
            (json_int_t)ni.mem_used, "gpus", gpus, "gpus_taken", ni.gpus_taken);
        json_object_set_new(node, "cpu_in_use",
                            cpu_in >= 0 ? json_real(cpu_in / 1000.0) : json_null());
        json_object_set_new(node, "memory_in_use",
                            mem_in >= 0 ? json_integer(mem_in) : json_null());
        /* Pause: whether tasks here can be paused, the host memory paused
         * tasks may hold, and what they hold now. */
        int64_t pmax = 0;
        int can = gpd__sched_pause_of(r->d->sched, ni.mem_bytes, &pmax);
        json_object_set_new(node, "can_pause", json_boolean(can));
        json_object_set_new(node, "paused_memory_max", json_integer(pmax));
        json_object_set_new(node, "paused_memory", json_integer(ni.paused_mem));
        json_object_set_new(node, "paused", json_integer(ni.paused));
        json_array_append_new(arr, node);
    }
    gpd__sched_unlock(r->d->sched);
    free(lt);
    /* How the executor keeps tasks to their GPUs, in its own sentences. */
    gp_executor_info info;
    gpd__sched_describe(r->d->sched, &info);
    return gpd__reply_json(out, 200,
                           json_pack("{s:o, s:b, s:s, s:s, s:s}", "nodes", arr, "emulated",
                                     gpd__sched_emulated(r->d->sched), "executor",
                                     gpd__sched_executor_name(r->d->sched), "gpu_devices",
                                     info.devices, "gpu_memory_limits", info.gpu_memory));
}

/* ---- Tokens ---------------------------------------------------------------- */

static json_t *token_json(const gpd__token *t) {
    return json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:I}", "id", (json_int_t)t->id, "name",
                     t->name, "user", t->user, "unix_user", t->unix_user, "role", t->role, "scope",
                     t->scope, "created_ms", (json_int_t)t->created_ms);
}

static int token_one(const gpd__token *t, void *arg) {
    json_array_append_new(arg, token_json(t));
    return 0;
}

int gpd__h_tok_list(gpd__req *r, gpd__resp *out, gpd__err *e) {
    json_t *arr = json_array();
    int rc = gpd__store_tokens(r->d->store, token_one, arr, e);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    return gpd__reply_json(out, 200, json_pack("{s:o}", "tokens", arr));
}

/* A scope must name queues that exist: a department for a department admin,
 * projects for a researcher. */
static int check_scope(gpd__req *r, gpd__role role, const char *scope, gpd__err *e) {
    if (role == GPD__ROLE_ADMIN)
        return 0;
    if (!scope[0])
        return gpd__fail(e, GP_EINVAL, "scope", "scope: required for role %s",
                         gpd__role_name(role));
    char buf[512];
    snprintf(buf, sizeof buf, "%s", scope);
    int rc = 0;
    gp_engine *eng = gpd__sched_lock(r->d->sched);
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p && rc == 0;
         p = strtok_r(NULL, ",", &save)) {
        gp_queue_info qi;
        if (gp_engine_queue_get(eng, p, &qi) < 0)
            rc = gpd__fail(e, GP_EINVAL, "scope", "scope: there is no queue named %s", p);
        else if (role == GPD__ROLE_DEPT_ADMIN && (qi.depth != 0 || strchr(scope, ',')))
            rc = gpd__fail(e, GP_EINVAL, "scope",
                           "scope: a department admin's scope is one department");
        else if (role == GPD__ROLE_RESEARCHER && !qi.leaf)
            rc = gpd__fail(e, GP_EINVAL, "scope", "scope: %s is a department, not a project", p);
    }
    gpd__sched_unlock(r->d->sched);
    return rc;
}

int gpd__unix_user_check(const gpd__daemon *d, const char *name, gpd__err *e) {
    if (!name || !gp_name_ok(name))
        return gpd__fail(e, GP_EINVAL, "unix_user", "unix_user: must be a Unix user name");
    if (geteuid() != 0)
        return 0; /* single-user mode: every workload runs as the daemon's user */
    /* A user unknown here may exist on the nodes: each node refuses, at
     * launch, a user it does not have. Root is refused here already. */
    char buf[4096];
    struct passwd pw, *res = NULL;
    if (getpwnam_r(name, &pw, buf, sizeof buf, &res) == 0 && res && pw.pw_uid == 0 &&
        !d->cfg.allow_root_workloads)
        return gpd__fail(e, GP_EPERM, "unix_user",
                         "unix_user: %s is root, and this daemon refuses root workloads: use a "
                         "token of a real user (gpupool token create --user NAME --role "
                         "researcher --scope PROJECT), or start gpupoold with "
                         "--allow-root-workloads",
                         name);
    return 0;
}

int gpd__h_tok_create(gpd__req *r, gpd__resp *out, gpd__err *e) {
    static const char *const known[] = {"name", "user", "role", "scope", "unix_user", NULL};
    json_t *body = r->json;
    const char *name = json_string_value(json_object_get(body, "name"));
    const char *user = json_string_value(json_object_get(body, "user"));
    const char *role_s = json_string_value(json_object_get(body, "role"));
    const char *scope = json_string_value(json_object_get(body, "scope"));
    json_t *ux = json_object_get(body, "unix_user");
    gpd__role role = GPD__ROLE_NONE;
    char secret[64];
    gpd__token t;
    int rc = gpd__json_known(body, known, "a token", e);
    if (rc < 0)
        return rc;
    if (!user || !gp_name_ok(user)) {
        rc = gpd__fail(e, GP_EINVAL, "user", "user: required, a user name");
    } else if (!role_s || gpd__role_parse(role_s, &role) < 0 || role == GPD__ROLE_NONE) {
        /* The roles a token may be given: all but the first, none. */
        static const char *const roles[] = {GPD__ROLES(GP_ENUM_NAME_OF)};
        char list[64];
        rc = gpd__fail(e, GP_EINVAL, "role", "role: must be %s",
                       gp_names_or(list, sizeof list, roles + 1, GPD__ROLE_COUNT - 1));
    } else if (json_object_get(body, "scope") && !scope) {
        rc = gpd__fail(e, GP_EINVAL, "scope", "scope: must be a string");
    } else if ((rc = gpd__unix_user_check(r->d, ux ? json_string_value(ux) : user, e)) == 0 &&
               (rc = check_scope(r, role, scope ? scope : "", e)) == 0) {
        rc = gpd__auth_create(r->d->auth, name ? name : user, user,
                              ux ? json_string_value(ux) : user, role, scope ? scope : "", secret,
                              &t, e);
    }
    if (rc == 0) {
        json_t *j = token_json(&t);
        json_object_set_new(j, "token", json_string(secret));
        rc = gpd__reply_json(out, 201, j);
    }
    return rc;
}

int gpd__h_tok_delete(gpd__req *r, gpd__resp *out, gpd__err *e) {
    uint64_t id;
    int rc = gpd__param_id(r, 0, &id, e);
    if (rc < 0)
        return rc;
    if ((int64_t)id == r->who.token_id)
        return gpd__fail(e, GP_EBUSY, "id", "id: a token cannot revoke itself");
    if ((rc = gpd__auth_delete(r->d->auth, (int64_t)id, e)) < 0)
        return rc;
    return gpd__reply_json(out, 200, json_pack("{s:I}", "deleted", (json_int_t)id));
}
