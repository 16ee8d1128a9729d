/*
 * util.c — helpers every executor shares: formatting that says whether it
 * fit, per-task directories (mkdir -p, handing a directory to a task's Unix
 * user, letting that user pass through the one above) and the lookup of the
 * Unix user a task runs as. Declared in util.h; system failures come back as
 * codes from gp_syserr().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/files.h"
#include "common/gp_error.h"
#include "executors/util.h"

int gpx__exec_fmt(char *buf, size_t len, const char *fmt, ...) {
    if (buf == NULL || len == 0)
        return GP_ERANGE;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= len ? GP_ERANGE : 0;
}

int gpx__exec_mkdirs(const char *path) {
    return gp_mkdirs(path, 0755);
}

int gpx__exec_give_dir(const char *dir, uid_t uid, gid_t gid) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return gp_syserr(errno);
    int rc = fchown(fd, uid, gid) == 0 && fchmod(fd, 0700) == 0 ? 0 : gp_syserr(errno);
    close(fd);
    if (rc == 0)
        gpx__exec_pass_parent(dir);
    return rc;
}

void gpx__exec_pass_parent(const char *path) {
    char parent[PATH_MAX];
    struct stat st;
    if (gpx__exec_fmt(parent, sizeof parent, "%s", path) < 0)
        return;
    char *slash = strrchr(parent, '/');
    if (slash == NULL || slash == parent)
        return;
    *slash = '\0';
    /* Only a directory of ours is opened up, and only for passing. */
    if (lstat(parent, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
        (st.st_mode & 0711) != 0711)
        chmod(parent, (st.st_mode & 07777) | 0711);
}

void gpx__exec_user_from(const struct passwd *pw, gpx__exec_user *u) {
    u->uid = pw->pw_uid;
    u->gid = pw->pw_gid;
    gpx__exec_fmt(u->name, sizeof u->name, "%s", pw->pw_name);
    gpx__exec_fmt(u->home, sizeof u->home, "%s", pw->pw_dir && pw->pw_dir[0] ? pw->pw_dir : "/");
    gpx__exec_fmt(u->shell, sizeof u->shell, "%s",
                  pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh");
}

int gpx__exec_lookup_user(const char *run_as, int allow_root, const char *where, struct passwd *pw,
                          char *buf, size_t buflen, char *err, size_t errlen) {
    struct passwd *res = NULL;
    int rc = getpwnam_r(run_as, pw, buf, buflen, &res);
    if (rc == ENOMEM) {
        gp_errf(err, errlen, "run_as: out of memory looking up Unix user '%.64s' %s", run_as,
                where);
        return GP_ENOMEM;
    }
    if (rc != 0 || res == NULL) {
        gp_errf(err, errlen, "run_as: there is no Unix user '%.64s' %s", run_as, where);
        return GP_EINVAL;
    }
    if (pw->pw_uid == 0 && !allow_root) {
        gp_errf(err, errlen,
                "run_as: '%.64s' is root, and root workloads are refused (start gpupoold "
                "with --allow-root-workloads to allow them)",
                run_as);
        return GP_EPERM;
    }
    return 0;
}

void gpx__exec_user_mode(char *out, size_t len, const char *unit, const char *how, int allow_root,
                         const char *self, uid_t uid) {
    if (geteuid() == 0)
        gpx__exec_fmt(out, len, "each %s runs as its token's Unix user (%s); root workloads %s",
                      unit, how, allow_root ? "ALLOWED" : "refused");
    else
        gpx__exec_fmt(out, len,
                      "single-user mode: gpupoold is not root, so every %s runs as %s (uid %d)",
                      unit, self, (int)uid);
}
