/*
 * tasklog.c — a task's log, capped and rotated by its supervisor.
 *
 * A task never holds its log file: its output goes into a pipe (or a
 * terminal) that its supervisor reads, and the supervisor writes the log.
 * When the log would grow past its cap (executor key log_max), it becomes
 * LOG.1 (replacing the part before it) and a new LOG starts, so that a task
 * holds at most two caps of disk however much it prints. So that readers
 * can keep their offsets across a rotation, LOG.start says where the
 * current LOG begins in the task's whole output (0 while absent).
 *
 * When the log's disk is full, output is dropped (counted) rather than left
 * in the pipe, so that a task is never held up by the disk; once writes
 * succeed again, a line says how much was lost.
 *
 * These run in the supervisor, a forked child of a threaded process: system
 * calls and the async-signal-safe helpers of local.h only, no malloc, no
 * stdio.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executors/local/local.h"

/* dst = a then b (truncated to len); async-signal-safe. */
static void join2(char *dst, size_t len, const char *a, const char *b) {
    char *p = dst, *end = dst + len;
    gpx__sa_str(&p, end, a);
    gpx__sa_str(&p, end, b);
}

void gpx__tasklog_init(gpx__tasklog *l, int fd, const char *path, int64_t max) {
    memset(l, 0, sizeof *l);
    l->fd = fd;
    l->path = path;
    l->max = max;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0)
        l->size = st.st_size;
    l->start = 0;
    char p[PATH_MAX + 16], buf[32];
    join2(p, sizeof p, path, ".start");
    int sfd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (sfd >= 0) {
        ssize_t n = read(sfd, buf, sizeof buf - 1);
        close(sfd);
        for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
            l->start = l->start * 10 + (buf[i] - '0');
    }
}

/* Writes all of buf at the log's end; 0, or -1 with errno. */
static int put(gpx__tasklog *l, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t w = write(l->fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        l->size += w;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* LOG becomes LOG.1 and a new LOG starts (on the same descriptor number);
 * LOG.start is written first, so that a reader never takes the new LOG for
 * the old one's continuation. On failure the log simply goes on growing
 * past its cap by this write (the disk's own bound then holds). */
static int rotate(gpx__tasklog *l) {
    char one[PATH_MAX + 16], st[PATH_MAX + 16], tmp[PATH_MAX + 16];
    join2(one, sizeof one, l->path, ".1");
    join2(st, sizeof st, l->path, ".start");
    join2(tmp, sizeof tmp, l->path, ".start.tmp");
    char num[32], *p = num;
    gpx__sa_u64(&p, num + sizeof num, (uint64_t)(l->start + l->size));
    gpx__sa_str(&p, num + sizeof num, "\n");
    int sfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (sfd < 0)
        return -1;
    int ok = write(sfd, num, (size_t)(p - num)) == p - num;
    close(sfd);
    if (!ok || rename(l->path, one) < 0) {
        unlink(tmp);
        return -1;
    }
    int nfd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (nfd < 0 || rename(tmp, st) < 0 || dup2(nfd, l->fd) < 0) {
        /* The old part is LOG.1 now; go on appending to it. */
        if (nfd >= 0)
            close(nfd);
        unlink(tmp);
        rename(one, l->path);
        return -1;
    }
    close(nfd);
    l->start += l->size;
    l->size = 0;
    l->rotations++;
    return 0;
}

void gpx__tasklog_write(gpx__tasklog *l, const char *buf, size_t n) {
    if (l->fd < 0)
        return;
    if (l->lost > 0) {
        char note[128], *p = note;
        gpx__sa_str(&p, note + sizeof note, "\n==== gpupool: ");
        gpx__sa_u64(&p, note + sizeof note, l->lost);
        gpx__sa_str(&p, note + sizeof note,
                    " bytes of output lost: the log's disk was full ====\n");
        size_t len = (size_t)(p - note);
        if (l->max > 0 && l->size + (int64_t)len > l->max)
            rotate(l);
        if (put(l, note, len) < 0) {
            l->lost += n;
            return;
        }
        l->lost = 0;
    }
    while (n > 0) {
        if (l->max > 0 && l->size >= l->max && rotate(l) < 0 && l->size >= 2 * l->max) {
            l->lost += n; /* cannot rotate: stop at twice the cap */
            return;
        }
        size_t chunk = n;
        if (l->max > 0 && l->size < l->max && (int64_t)chunk > l->max - l->size)
            chunk = (size_t)(l->max - l->size);
        int64_t before = l->size;
        if (put(l, buf, chunk) < 0) {
            size_t done = (size_t)(l->size - before);
            l->lost += n - done;
            return;
        }
        buf += chunk;
        n -= chunk;
    }
}
