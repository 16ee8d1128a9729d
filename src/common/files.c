/*
 * files.c — file-system helpers every part shares (files.h).
 */
#include "common/files.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

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
