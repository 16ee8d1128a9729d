/*
 * user.c — the Unix identity of a `slurm` executor's jobs, and the files
 * each job needs as that identity.
 *
 * A gpupoold running as root submits each task's job as the Unix user its
 * workload's token names (gp_task_launch.run_as): `sbatch --uid --gid`, so
 * that Slurm runs the job as that user and squeue and sacct show it as
 * theirs. A user the host does not know is refused (the cluster's nodes are
 * expected to share its user database), and so is root unless the daemon
 * allows root workloads (gp_executor_ctx.allow_root_workloads). A gpupoold
 * that is not root cannot submit for others: every job is its own
 * (single-user mode), and describe() says so.
 *
 * A job running as its user must reach a few files and nothing else of the
 * daemon's: its checkpoint directory (given to the user, 0700), its log
 * (created by the executor, then given to the user, because slurmstepd opens
 * it as the job's user; its directory and the one above only let users
 * pass, 0711), and the subdirectory "user" of its task directory, where its
 * script records how the command ended. The task directory itself, with the
 * job id and the script, stays the daemon's (0711), so that a job can never
 * change what the daemon reads to find, signal or cancel jobs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/registry.h"
#include "executors/slurm/slurm.h"

int gpx__slurm_user_resolve(const gpx__slurm *sx, const char *run_as, gpx__exec_user *u, char *err,
                            size_t errlen) {
    memset(u, 0, sizeof *u);
    char buf[16384];
    struct passwd pw, *res = NULL;
    if (geteuid() != 0 || run_as == NULL || run_as[0] == '\0') {
        /* Single-user mode, or no user named (a program driving the
         * executor itself): the job is ours. */
        u->uid = geteuid();
        u->gid = getegid();
        if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res != NULL) {
            gpx__exec_user_from(&pw, u);
        } else {
            gpx__exec_fmt(u->name, sizeof u->name, "%d", (int)u->uid);
            gpx__exec_fmt(u->home, sizeof u->home, "/");
            gpx__exec_fmt(u->shell, sizeof u->shell, "/bin/sh");
        }
        return 0;
    }
    int rc = gpx__exec_lookup_user(run_as, sx->allow_root, "on the host of gpupoold", &pw, buf,
                                   sizeof buf, err, errlen);
    if (rc < 0)
        return rc;
    gpx__exec_user_from(&pw, u);
    u->switch_to = u->uid != geteuid();
    return 0;
}

/* Creates the log (0600, without following a link) and gives it to u. */
static int give_log(const char *log, const gpx__exec_user *u) {
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return gp_syserr(errno);
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        rc = GP_EINVAL;
    else if (fchown(fd, u->uid, u->gid) < 0 || fchmod(fd, 0600) < 0)
        rc = gp_syserr(errno);
    close(fd);
    return rc;
}

int gpx__slurm_user_files(const gpx__exec_user *u, const char *dir, const char *ckpt,
                          const char *log, int slice, char *err, size_t errlen) {
    int rc = gpx__exec_mkdirs(ckpt);
    if (rc == 0 && u->switch_to)
        rc = gpx__exec_give_dir(ckpt, u->uid, u->gid);
    if (rc < 0) {
        gp_errf(err, errlen, "checkpoint_dir: cannot create '%s': %s", ckpt, gp_strerror(rc));
        return GP_EIO;
    }
    if (!u->switch_to)
        return 0;
    char path[PATH_MAX];
    if (log != NULL && log[0] != '\0') {
        /* slurmstepd opens the log as the job's user: the user passes
         * through its directory and the one above (logs/<id>, logs). */
        gpx__exec_fmt(path, sizeof path, "%s", log);
        char *slash = strrchr(path, '/');
        if (slash != NULL && slash != path) {
            *slash = '\0';
            rc = gpx__exec_mkdirs(path);
            gpx__exec_pass_parent(log);
            gpx__exec_pass_parent(path);
        }
        if (rc < 0 || (rc = give_log(log, u)) < 0) {
            gp_errf(err, errlen, "log_path: cannot give '%s' to %s: %s", log, u->name,
                    gp_strerror(rc));
            return GP_EIO;
        }
    }
    if (slice) {
        /* A slice's script runs as root in its holder and records its end in
         * the task directory itself; only its command runs as the user. */
        return 0;
    }
    if (gpx__exec_fmt(path, sizeof path, "%s/user", dir) < 0) {
        gp_errf(err, errlen, "state_dir: path too long");
        return GP_EINVAL;
    }
    if ((mkdir(path, 0700) < 0 && errno != EEXIST) ||
        (rc = gpx__exec_give_dir(path, u->uid, u->gid)) < 0) {
        rc = rc < 0 ? rc : gp_syserr(errno);
        gp_errf(err, errlen, "state_dir: cannot give '%s' to %s: %s", path, u->name,
                gp_strerror(rc));
        return GP_EIO;
    }
    gpx__exec_pass_parent(dir); /* the state directory, for the user to pass */
    return 0;
}

void gpx__slurm_user_mode(const gpx__slurm *sx, char *out, size_t len) {
    char how[160];
    gpx__exec_user u;
    gpx__exec_fmt(how, sizeof how,
                  "sbatch --uid/--gid; a step in gpupoold's GPU holder (a fraction%s) becomes "
                  "that user with setpriv",
                  sx->hold_ms > 0 ? ", or a one-GPU task with gpu_hold" : "");
    gpx__slurm_user_resolve(sx, NULL, &u, NULL, 0);
    gpx__exec_user_mode(out, len, "job", how, sx->allow_root, u.name, u.uid);
}
