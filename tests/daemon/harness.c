/*
 * harness.c — see harness.h.
 */
#include "harness.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/httpc.h"

static int read_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return ok && buf[0] ? 0 : -1;
}

void gpd_test_start(gpd_test *t) {
    gpd_test_start_args(t, NULL);
}

void gpd_test_start_args(gpd_test *t, const char *const *extra) {
    memset(t, 0, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "/tmp/gpupool-ctest.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    const char *build = getenv("GP_BUILD") ? getenv("GP_BUILD") : "build";
    char bin[512], log[300];
    snprintf(bin, sizeof bin, "%s/gpupoold", build);
    snprintf(log, sizeof log, "%s.log", t->dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!freopen(log, "w", stderr))
            _exit(126);
        /* Copies: execv wants writable strings (the child exits or execs). */
        /* The tests run as root, and so do the workloads of their admin
         * token. */
        const char *fixed[] = {bin,           "--data-dir", t->dir,  "--listen",
                               "127.0.0.1:0", "--period",   "200ms", "--allow-root-workloads"};
        char *argv[32] = {0};
        int n = 0;
        for (; n < 8; n++)
            argv[n] = strdup(fixed[n]);
        for (int i = 0; extra && extra[i] && i < 24; i++)
            argv[n++] = strdup(extra[i]);
        execv(bin, argv);
        _exit(127);
    }
    t->pid = pid;
    char addr[300];
    snprintf(addr, sizeof addr, "%s/gpupoold.addr", t->dir);
    for (int i = 0; i < 300 && read_line(addr, t->server, sizeof t->server) < 0; i++) {
        ck_assert_msg(waitpid(pid, NULL, WNOHANG) == 0, "gpupoold exited; see %s", log);
        usleep(100 * 1000);
    }
    ck_assert_msg(t->server[0], "gpupoold did not start; see %s", log);
    snprintf(addr, sizeof addr, "%s/admin.token", t->dir);
    ck_assert_int_eq(read_line(addr, t->admin, sizeof t->admin), 0);
}

/* Kills what the stopped daemon of t left running (a stopped gpupoold
 * leaves its tasks for its next start to find): each task's process group
 * and its supervisor, as tests/daemon/lib.sh's cleanup does. */
static void kill_tasks(const gpd_test *t) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "for f in '%s'/tasks/*/task; do [ -f \"$f\" ] || continue; "
             "pid=$(sed -n 's/^pid=//p' \"$f\"); [ -n \"$pid\" ] && kill -9 \"-$pid\" 2>/dev/null; "
             "done; for f in '%s'/tasks/*/handle; do [ -f \"$f\" ] || continue; "
             "spid=$(cut -d: -f3 \"$f\"); [ -n \"$spid\" ] && kill -9 \"$spid\" 2>/dev/null; "
             "done; true",
             t->dir, t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not stop the tasks of %s\n", t->dir);
}

void gpd_test_stop(gpd_test *t) {
    if (t->pid > 0) {
        kill(t->pid, SIGTERM);
        waitpid(t->pid, NULL, 0);
    }
    kill_tasks(t);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.log'", t->dir, t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", t->dir);
}

int gpd_call(gpd_test *t, const char *token, const char *method, const char *path, const char *body,
             json_t **out) {
    gp_http_resp r;
    char err[256];
    int rc = gp_http_request(t->server, method, path, token, body, &r, err, sizeof err);
    ck_assert_msg(rc == 0, "%s %s: %s", method, path, err);
    if (out)
        *out = json_loadb(r.body, r.len, 0, NULL);
    int status = r.status;
    gp_http_resp_free(&r);
    return status;
}

void gpd_token(gpd_test *t, const char *user, const char *role, const char *scope, char *secret,
               size_t len) {
    char body[512];
    json_t *out;
    /* The test users do not exist on this host: their workloads run as the
     * daemon's own user (root, allowed by the harness), as the admin's do.
     * tests/daemon/test-identity.sh covers real Unix users. */
    snprintf(body, sizeof body,
             "{\"user\":\"%s\",\"role\":\"%s\",\"scope\":\"%s\",\"unix_user\":\"root\"}", user,
             role, scope);
    ck_assert_int_eq(gpd_call(t, t->admin, "POST", "/api/v1/tokens", body, &out), 201);
    snprintf(secret, len, "%s", json_string_value(json_object_get(out, "token")));
    json_decref(out);
}
