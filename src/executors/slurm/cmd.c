/*
 * cmd.c — running Slurm's commands for the `slurm` executor.
 *
 * Every conversation with Slurm goes through one of its commands (sinfo,
 * squeue, sbatch, scancel, scontrol), started with fork and exec, with the
 * executor's SLURM_CONF in its environment; its standard output is
 * collected whole (JSON or sbatch's job id) and the first line of its
 * standard error becomes the error sentence. The environment is prepared
 * before fork, so that the child only makes async-signal-safe calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/registry.h"
#include "executors/slurm/slurm.h"

typedef struct buf {
    char *p;
    size_t n, cap;
    int oom;
} buf;

/* Appends len bytes to b, keeping it NUL-terminated. */
static void buf_add(buf *b, const char *s, size_t len) {
    if (b->oom) {
        return;
    }
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + len + 1) {
            cap *= 2;
        }
        char *np = realloc(b->p, cap);
        if (np == NULL) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

/* Reads the child's two pipes until both are closed. */
static void drain(int ofd, int efd, buf *out, buf *errb) {
    struct pollfd pf[2] = {{.fd = ofd, .events = POLLIN}, {.fd = efd, .events = POLLIN}};
    int open_fds = 2;
    char chunk[8192];
    while (open_fds > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || pf[i].revents == 0) {
                continue;
            }
            ssize_t r = read(pf[i].fd, chunk, sizeof chunk);
            if (r > 0) {
                buf_add(i == 0 ? out : errb, chunk, (size_t)r);
            } else if (r == 0 || errno != EINTR) {
                pf[i].fd = -1;
                open_fds--;
            }
        }
    }
}

int gpx__slurm_run(const gpx__slurm *sx, const char *const *argv, char **out, char *err,
                   size_t errlen) {
    char path[PATH_MAX];
    if (sx->bin[0] != '\0') {
        if (gpx__exec_fmt(path, sizeof path, "%s/%s", sx->bin, argv[0]) < 0) {
            gpx__exec_errf(err, errlen, "%s: path too long", argv[0]);
            return GP_EINVAL;
        }
    } else {
        gpx__exec_fmt(path, sizeof path, "%s", argv[0]);
    }
    int op[2], ep[2];
    if (pipe2(op, O_CLOEXEC) < 0) {
        gpx__exec_errf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
        return GP_ESYS;
    }
    if (pipe2(ep, O_CLOEXEC) < 0) {
        gpx__exec_errf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
        close(op[0]);
        close(op[1]);
        return GP_ESYS;
    }
    pid_t pid = fork();
    if (pid < 0) {
        gpx__exec_errf(err, errlen, "%s: fork: %s", argv[0], strerror(errno));
        close(op[0]);
        close(op[1]);
        close(ep[0]);
        close(ep[1]);
        return GP_ESYS;
    }
    if (pid == 0) {
        dup2(op[1], 1);
        dup2(ep[1], 2);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) {
            dup2(nul, 0);
        }
        /* exec takes char *const[]: the strings are not written to. */
        char *const *av;
        memcpy(&av, &argv, sizeof av);
        if (strchr(path, '/') != NULL) {
            execve(path, av, sx->envp);
        } else {
            execvpe(path, av, sx->envp);
        }
        _exit(127);
    }
    close(op[1]);
    close(ep[1]);
    buf o = {0}, e = {0};
    drain(op[0], ep[0], &o, &e);
    close(op[0]);
    close(ep[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int rc = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *msg = e.p != NULL ? e.p : "";
        size_t len = strcspn(msg, "\n");
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && len == 0) {
            gpx__exec_errf(err, errlen, "%s: cannot be executed (is Slurm installed?)", path);
        } else {
            gpx__exec_errf(err, errlen, "%s failed: %.*s", argv[0], (int)(len > 200 ? 200 : len),
                           msg);
        }
        rc = GP_EIO;
    } else if (o.oom || e.oom) {
        gpx__exec_errf(err, errlen, "%s: out of memory reading its output", argv[0]);
        rc = GP_ENOMEM;
    }
    free(e.p);
    if (rc == 0 && out != NULL) {
        *out = o.p != NULL ? o.p : strdup("");
        if (*out == NULL) {
            rc = GP_ENOMEM;
        }
    } else {
        free(o.p);
    }
    return rc;
}
