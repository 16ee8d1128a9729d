/*
 * files.c — file-system helpers every part shares (files.h).
 */
#include "common/files.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/gp_error.h"

int gp_mkdirs(const char *path, unsigned mode) {
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof buf)
        return GP_ERANGE;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST)
                return gp_syserr(errno);
            *p = c;
            if (c == '\0')
                return 0;
        }
    }
}

/* Writes all n bytes with write(2) (flags < 0) or send(2) with flags. */
static int put_all(int fd, const void *data, size_t n, int flags) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = flags < 0 ? write(fd, p, n) : send(fd, p, n, flags);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int gp_write_all(int fd, const void *data, size_t n) {
    return put_all(fd, data, n, -1);
}

int gp_send_all(int fd, const void *data, size_t n) {
    return put_all(fd, data, n, MSG_NOSIGNAL);
}

ssize_t gp_read_some(int fd, void *buf, size_t n) {
    ssize_t r;
    do
        r = read(fd, buf, n);
    while (r < 0 && errno == EINTR);
    return r;
}
