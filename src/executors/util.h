/*
 * util.h — helpers every executor shares (util.c): formatting that says
 * whether it fit, per-task directories, and the Unix user a task runs as.
 * Internal to the executors and their tests; registry.h includes it. A clock
 * in milliseconds is common/gp_clock.h's.
 */
#ifndef GP_EXECUTORS_UTIL_H
#define GP_EXECUTORS_UTIL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * snprintf that says whether everything fit: 0, or GP_ERANGE if the result
 * was cut (it is still terminated). Notes and messages may be cut; paths are
 * checked by the callers that would otherwise act on a shortened one.
 */
int gpx__exec_fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * gp_mkdirs (common/files.h) with mode 0755: creates path and every missing
 * parent. Returns 0 (also if it exists) or the system code (gp_syserr) of the
 * first mkdir that failed, GP_ERANGE for a path too long. Shared by the
 * executors, which all keep per-task directories.
 */
int gpx__exec_mkdirs(const char *path);

/*
 * Gives the directory dir to a task's Unix user (owner uid:gid, mode 0700,
 * without following a link) and lets that user pass through the directory
 * above it (gpx__exec_pass_parent). 0 or a system code; on error the parent is left
 * as it was.
 */
int gpx__exec_give_dir(const char *dir, uid_t uid, gid_t gid);

/*
 * Lets every user pass through (never list) the directory that holds path:
 * adds 0711 to its mode if it is a directory of this process's user (never
 * one of someone else's, never through a link). Best effort: nothing is
 * reported.
 */
void gpx__exec_pass_parent(const char *path);

/*
 * Looks up run_as, the Unix user a task is to run as, into *pw (its strings
 * in buf). GP_EINVAL if there is no such user ("run_as: there is no Unix
 * user 'x' <where>"), GP_EPERM if it is root and allow_root is 0,
 * GP_ENOMEM if the C library ran out of memory looking (a launch may be
 * tried again); err says which.
 */
struct passwd;
int gpx__exec_lookup_user(const char *run_as, int allow_root, const char *where, struct passwd *pw,
                          char *buf, size_t buflen, char *err, size_t errlen);

#define GPX__USER_GROUPS 64

/*
 * Who a task runs as, for every executor (each one's user.c decides it):
 * the local executor switches its processes to it between fork and exec,
 * the Slurm executor submits its job with sbatch --uid/--gid.
 */
typedef struct gpx__exec_user {
    int switch_to; /* 1: the task runs as this user; 0: as gpupoold does */
    uid_t uid;
    gid_t gid;
    gid_t groups[GPX__USER_GROUPS]; /* supplementary groups (the local executor's) */
    int ngroups;
    char name[64];
    char home[PATH_MAX];
    char shell[256];
} gpx__exec_user;

/* Fills u's uid, gid, name, home (default "/") and shell (default /bin/sh)
 * from pw; its switch_to and groups are left as they are. */
void gpx__exec_user_from(const struct passwd *pw, gpx__exec_user *u);

/*
 * Writes describe's identity sentence, the one wording of who a task runs as
 * for every executor. As root: each unit (a "task", a "job") runs as its
 * token's Unix user, by how ("own session, no new privileges"), and whether
 * root workloads are allowed. Otherwise: single-user mode, every one runs
 * as self (uid).
 */
void gpx__exec_user_mode(char *out, size_t len, const char *unit, const char *how, int allow_root,
                         const char *self, uid_t uid);

#endif /* GP_EXECUTORS_UTIL_H */
