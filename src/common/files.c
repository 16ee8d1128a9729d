/*
 * files.c — file-system helpers every part shares (files.h).
 */
#include "common/files.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
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

int gp_write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}
