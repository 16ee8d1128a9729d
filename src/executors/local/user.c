/*
 * user.c — the Unix identity a task of the local executor runs as.
 *
 * A daemon running as root starts each task as the Unix user its workload's
 * token names (gp_task_launch.run_as): that user's uid, primary group and
 * supplementary groups, decided here before the fork, so that the forked
 * processes only make system calls (proc.c switches to it between fork and
 * exec, after the task has joined its cgroups). A user that does not exist on
 * this node is refused, and so is root unless the daemon was started with
 * --allow-root-workloads (gp_executor_ctx.allow_root_workloads).
 *
 * A daemon that is not root cannot switch users: it runs every task as
 * itself (single-user mode), whatever run_as says, and says so in its
 * description and in every task's log.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/local/local.h"
#include "executors/registry.h"

/* Fills u from a passwd entry; the groups are the user's supplementary ones.
 * GP_EINVAL for a user in too many groups, GP_ENOMEM where the C library ran
 * out of memory reading them (getgrouplist fails then with the count it was
 * given unchanged), which a later launch may not. */
static int from_passwd(const struct passwd *pw, gpx__exec_user *u, char *err, size_t errlen) {
    gpx__exec_user_from(pw, u);
    int n = GPX__USER_GROUPS;
    if (getgrouplist(pw->pw_name, pw->pw_gid, u->groups, &n) < 0) {
        if (n > GPX__USER_GROUPS) {
            gp_errf(err, errlen, "run_as: user '%s' is in more than %d groups", pw->pw_name,
                    GPX__USER_GROUPS);
            return GP_EINVAL;
        }
        gp_errf(err, errlen, "run_as: out of memory reading the groups of user '%s'", pw->pw_name);
        return GP_ENOMEM;
    }
    u->ngroups = n;
    return 0;
}

int gpx__user_resolve(const gpx__local *lx, const char *run_as, gpx__exec_user *u, char *err,
                      size_t errlen) {
    memset(u, 0, sizeof *u);
    char buf[16384];
    struct passwd pw, *res = NULL;
    if (geteuid() != 0) {
        /* Single-user mode: the task runs as we do. */
        int rc = getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res);
        if (rc != 0 || res == NULL) {
            u->uid = geteuid();
            u->gid = getegid();
            gpx__exec_fmt(u->name, sizeof u->name, "%d", (int)u->uid);
            gpx__exec_fmt(u->home, sizeof u->home, "/");
            gpx__exec_fmt(u->shell, sizeof u->shell, "/bin/sh");
            return 0;
        }
        if (from_passwd(&pw, u, err, errlen) < 0)
            u->ngroups = 0; /* not used: nothing is switched */
        return 0;
    }
    if (run_as == NULL || run_as[0] == '\0') {
        /* No user given (a program driving the executor itself, not the
         * daemon, which always names one): the task runs as we do. */
        int rc = getpwuid_r(0, &pw, buf, sizeof buf, &res);
        gpx__exec_fmt(u->name, sizeof u->name, "%s", rc == 0 && res != NULL ? pw.pw_name : "root");
        gpx__exec_fmt(u->home, sizeof u->home, "%s", rc == 0 && res != NULL ? pw.pw_dir : "/");
        gpx__exec_fmt(u->shell, sizeof u->shell, "/bin/sh");
        return 0;
    }
    char where[GP_NAME_MAX + 16];
    gpx__exec_fmt(where, sizeof where, "on node %s", lx->node_name);
    int rc =
        gpx__exec_lookup_user(run_as, lx->allow_root, where, &pw, buf, sizeof buf, err, errlen);
    if (rc < 0 || (rc = from_passwd(&pw, u, err, errlen)) < 0)
        return rc;
    u->switch_to = 1;
    return 0;
}

void gpx__user_mode(const gpx__local *lx, char *out, size_t len) {
    char buf[4096];
    struct passwd pw, *res = NULL;
    const char *name =
        getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res != NULL ? pw.pw_name : "?";
    gpx__exec_user_mode(out, len, "task", "own session, no new privileges", lx->allow_root, name,
                        geteuid());
}
