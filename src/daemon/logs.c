/*
 * logs.c — the tasks' logs on the daemon's side: where they are
 * (--log-dir, by default DATA/logs: LOGDIR/<workload>/task-<n>.log), how the
 * API reads one across its rotations, and how long they are kept.
 *
 * The local executor's supervisor writes each log, capped and rotated
 * (src/executors/local/tasklog.c): task-N.log, the part before it in
 * task-N.log.1, and in task-N.log.start where task-N.log begins in the
 * task's whole output. Offsets the API takes and gives are offsets in that
 * whole output, so a follower (gpupool logs -f, the console) goes on across
 * a rotation; output older than the kept part is gone, and a reader behind
 * it is given what is kept from its oldest byte.
 *
 * A janitor thread removes the logs of a workload that ended (succeeded,
 * failed or deleted) more than --log-retention ago, checking every tenth of
 * that (at least every 500 ms, at most every 10 minutes); the scheduling
 * loop never does this work. The janitor waits on a mailbox (mailbox.h) that
 * no one posts to: its deadline is the period, its close the stop. A log
 * directory whose disk is full costs the tasks their output (counted in the
 * log once writes succeed again), never the store, which may live elsewhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/units.h"
#include "daemon/api.h"
#include "daemon/mailbox.h"
#include "daemon/store.h"

struct gpd__logs {
    gpd__daemon *d;
    pthread_t th;
    gpd__mailbox box;
};

/* Where task-N.log begins in the task's whole output (its .start file). */
static int64_t log_start(const char *path) {
    char p[1300], buf[32];
    snprintf(p, sizeof p, "%s.start", path);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    uint64_t v = 0;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return gp_parse_uint(buf, NULL, 10, INT64_MAX, &v) == 0 ? (int64_t)v : 0;
}

/* Opens file path for its bytes from offset off, at most max: *fd and *n,
 * or *fd = -1 and *n = 0 where there are none (the file missing, or off at
 * its end); -1 on error (errno set). */
static int open_at(const char *path, int64_t off, size_t max, int *fd, size_t *n) {
    struct stat st;
    *n = 0;
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (*fd < 0)
        return errno == ENOENT ? 0 : -1;
    int none = 0;
    if (fstat(*fd, &st) < 0 || (none = off >= (int64_t)st.st_size) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        errno = e;
        return none ? 0 : -1;
    }
    *n = (uint64_t)(st.st_size - off) < max ? (size_t)(st.st_size - off) : max;
    return 0;
}

int gpd__log_reply(const gpd__daemon *d, uint64_t id, int task, int64_t offset, size_t max,
                   gpd__resp *out, gpd__err *e) {
    char path[1200], old[1300];
    snprintf(path, sizeof path, "%s/%llu/task-%d.log", d->cfg.log_dir, (unsigned long long)id,
             task);
    snprintf(old, sizeof old, "%s.1", path);
    int64_t start = log_start(path), at = offset, off = offset - start;
    int rc = 0, fd = -1;
    size_t n = 0;
    if (offset >= start) {
        rc = open_at(path, off, max, &fd, &n);
    } else {
        /* Behind the current part: from the part before it, which ends
         * where the current one begins, or from its first byte when the
         * offset was rotated away. */
        struct stat st;
        int64_t old_start = stat(old, &st) == 0 ? start - (int64_t)st.st_size : start;
        if (offset < old_start)
            at = old_start;
        off = at - old_start;
        if (old_start < start)
            rc = open_at(old, off, max, &fd, &n);
        if (rc == 0 && n == 0) {
            at = start;
            off = 0;
            rc = open_at(path, 0, max, &fd, &n);
        }
    }
    if (rc < 0)
        return gpd__fail(e, GP_EIO, "", "cannot read the log: %s", strerror(errno));
    static const char type[] = "text/plain; charset=utf-8";
    if (n == 0)
        rc = gpd__reply_text(out, 200, "", 0, type);
    else
        *out = (gpd__resp){
            .status = 200, .len = n, .content_type = type, .from_file = 1, .fd = fd, .fd_off = off};
    out->log_offset = at;
    return rc;
}

/* Removes LOGDIR/<id> and the files in it (a flat directory). */
static int remove_dir(const char *dir) {
    DIR *dh = opendir(dir);
    if (dh == NULL)
        return -1;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        unlinkat(dirfd(dh), de->d_name, 0);
    }
    closedir(dh);
    return rmdir(dir);
}

/* One pass: the logs of every workload that ended more than the retention
 * ago are removed. */
static void sweep(gpd__logs *g) {
    const gpd__config *c = &g->d->cfg;
    DIR *dh = opendir(c->log_dir);
    if (dh == NULL)
        return;
    int64_t now = gpd__now_ms();
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        uint64_t id = 0;
        if (gp_parse_uint(de->d_name, NULL, 10, INT64_MAX, &id) < 0 || id == 0)
            continue;
        gpd__wl w;
        gpd__err e = {0};
        if (gpd__store_wl_get(g->d->store, id, &w, &e) < 0)
            continue;
        int ended =
            w.state == GP_WL_SUCCEEDED || w.state == GP_WL_FAILED || w.state == GP_WL_DELETED;
        int64_t at = w.updated_ms;
        gpd__wl_free(&w);
        if (!ended || now - at < c->log_retention_ms)
            continue;
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/%s", c->log_dir, de->d_name);
        if (remove_dir(dir) < 0 && errno != ENOENT)
            gpd__log("logs of workload %llu: cannot remove %s: %s", (unsigned long long)id, dir,
                     strerror(errno));
    }
    closedir(dh);
}

static void *janitor(void *arg) {
    gpd__logs *g = arg;
    int64_t every = g->d->cfg.log_retention_ms / 10;
    if (every < 500)
        every = 500;
    if (every > 600000)
        every = 600000;
    gpd__letter *none;
    do {
        sweep(g);
    } while (gpd__mailbox_take(&g->box, gpd__mono_ms() + every, 0, &none) != GPD__MAIL_CLOSED);
    return NULL;
}

int gpd__logs_start(gpd__daemon *d, gpd__err *e) {
    d->logs = NULL;
    if (d->cfg.log_retention_ms == 0)
        return 0;
    gpd__logs *g = calloc(1, sizeof *g);
    if (g == NULL)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    g->d = d;
    if (gpd__mailbox_start(&g->box, &g->th, janitor, g) < 0) {
        free(g);
        return gpd__fail(e, GP_ESYS, "", "cannot start the log janitor");
    }
    d->logs = g;
    return 0;
}

void gpd__logs_stop(gpd__logs *g) {
    if (g == NULL)
        return;
    gpd__mailbox_stop(&g->box, g->th);
    free(g);
}
