/*
 * ledgers.c — the slice ledgers the local executor makes for its tasks.
 *
 * A fractional slice's processes share their memory cap through a ledger
 * (src/interpose/ledger.h). Made by the workload itself, under a name any
 * task can compute, it could be made first by another task of the same Unix
 * user (with a cap of its choosing) or opened and rewritten while the slice
 * runs. So an executor running as root, whose tasks get a mount namespace of
 * their own, makes each task's ledger itself before the task starts:
 *
 *   GP_LEDGER_DIR (root's, 0700)/<instance>.<task key>   the ledger, owned by
 *                                                         the task's user, 0600
 *   GP_LEDGER_MOUNT (root's, empty, 0644)                 where the task's own
 *                                                         namespace binds it
 *
 * Whatever was at the ledger's path is removed first, never reused. The
 * slice file names GP_LEDGER_MOUNT in a "ledger=" line, and the interposer
 * then opens that file only, never creating one. Other tasks cannot enter
 * the directory, and their namespaces bind their own ledgers (or nothing)
 * over GP_LEDGER_MOUNT. The limits stay in the root-owned slice file, which
 * the interposer takes as upper bounds whatever a ledger says.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executors/local/local.h"
#include "executors/registry.h"
#include "interpose/ledger.h"

/* Optional, as in local.c: only programs that link the ledger make them. */
#pragma weak gp_ledger_create_file

void gpx__ledger_path(const char *instance, const char *key, char *buf, size_t len) {
    gpx__exec_fmt(buf, len, "%s/%s.%s", GP_LEDGER_DIR, instance, key);
}

/* Makes dir a directory of root's with exactly `mode`, refusing a link or
 * someone else's directory in its place. 0 or -1. */
static int root_dir(const char *dir, mode_t mode) {
    if (gpx__exec_mkdirs(dir) < 0)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    int ok = fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == 0 && fchmod(fd, mode) == 0;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

int gpx__slice_dirs(void) {
    /* The daemon's umask (077) would make them root's alone, and the tasks'
     * users could then read neither their slice files nor their ledgers. */
    char parent[PATH_MAX];
    gpx__exec_fmt(parent, sizeof parent, "%s", GP_SLICE_FILE_DIR);
    char *slash = strrchr(parent, '/');
    if (slash != NULL && slash != parent)
        *slash = '\0';
    return root_dir(parent, 0755) == 0 && root_dir(GP_SLICE_FILE_DIR, 0755) == 0 ? 0 : -1;
}

/* Makes the empty file of root's that tasks' namespaces bind over. 0 or -1. */
static int mount_point(void) {
    int fd = open(GP_LEDGER_MOUNT, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    struct stat st;
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
             st.st_size == 0 && fchmod(fd, 0644) == 0;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

int gpx__ledger_make(const char *instance, const char *key, const gpx__exec_user *u, char *path,
                     size_t len) {
    path[0] = '\0';
    if (gp_ledger_create_file == NULL || geteuid() != 0 || !gpx__private_mounts() ||
        gpx__slice_dirs() < 0 || root_dir(GP_LEDGER_DIR, 0700) < 0 || mount_point() < 0)
        return -1;
    char file[PATH_MAX];
    gpx__ledger_path(instance, key, file, sizeof file);
    unsigned uid = u->switch_to ? (unsigned)u->uid : (unsigned)geteuid();
    unsigned gid = u->switch_to ? (unsigned)u->gid : (unsigned)getegid();
    if (gp_ledger_create_file(file, uid, gid, NULL) != 0)
        return -1;
    gpx__exec_fmt(path, len, "%s", file);
    return 0;
}
