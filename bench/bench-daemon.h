/*
 * bench-daemon.h — what the daemon's benchmark programs share: a monotonic
 * clock, reading the one-line files gpupoold writes (its address, the admin
 * token), starting a gpupoold of the build on a data directory, and sorting
 * latencies. Header-only: each bench program is one file linked on its own.
 */
#ifndef GP_BENCH_DAEMON_H
#define GP_BENCH_DAEMON_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first line of path into buf, without its newline; -1 if unreadable. */
static inline int bench_read_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return ok ? 0 : -1;
}

/* Starts build/gpupoold on dir (stderr to /dev/null, killed with its
 * parent) and waits until it serves: fills server and token (128 bytes
 * each). Returns its pid, or -1 if it did not come up in a minute. */
static inline pid_t bench_start_daemon(const char *build, const char *dir, char *server,
                                       char *token) {
    char bin[512], path[600];
    snprintf(bin, sizeof bin, "%s/gpupoold", build);
    snprintf(path, sizeof path, "%s/gpupoold.addr", dir);
    unlink(path);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!freopen("/dev/null", "w", stderr))
            _exit(126);
        execl(bin, bin, "--data-dir", dir, "--listen", "127.0.0.1:0", "--period", "2s",
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600 && bench_read_line(path, server, 128) < 0; i++)
        usleep(100000);
    snprintf(path, sizeof path, "%s/admin.token", dir);
    return bench_read_line(path, token, 128) < 0 ? -1 : pid;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif /* GP_BENCH_DAEMON_H */
