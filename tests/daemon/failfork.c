/*
 * failfork.c — preloaded into gpupoold by the daemon's test of a launch
 * that cannot fork (test-launch-fork.sh): makes fork() fail, as a host out
 * of process slots or of memory for now would, a black-box way without a
 * hook in the daemon itself. By environment, read when the library loads
 * (a task's supervisor writes its title over the environment):
 *
 *   GPD_TEST_FAIL_FORK=PATH   while PATH holds "N WHERE [ERRNO]" with N > 0,
 *                             a fork made WHERE fails with ERRNO (a number;
 *                             EAGAIN unless given) and PATH is rewritten
 *                             with N - 1 (under a lock: the daemon and its
 *                             children share the count). WHERE is daemon
 *                             (gpupoold itself: the local executor's first
 *                             fork of a launch), intermediate (the process
 *                             that forks a task's supervisor), supervisor
 *                             (a supervisor forking its task) or any.
 *
 *   GPD_TEST_FAIL_PTY=PATH    the same for the opening of a new
 *                             pseudo-terminal (/dev/ptmx), which an
 *                             interactive task's supervisor makes: ENOSPC
 *                             (28) is the host's pty/max in use.
 *
 * A file that is missing, or says 0, lets every fork (or open) through.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

static char fork_path[4096], pty_path[4096];
static pid_t daemon_pid;

__attribute__((constructor)) static void init(void) {
    const char *p = getenv("GPD_TEST_FAIL_FORK");
    if (p != NULL)
        snprintf(fork_path, sizeof fork_path, "%s", p);
    p = getenv("GPD_TEST_FAIL_PTY");
    if (p != NULL)
        snprintf(pty_path, sizeof pty_path, "%s", p);
    daemon_pid = getpid();
}

/* Where this fork is made: "daemon", "supervisor" or "intermediate". */
static const char *here(void) {
    char name[17] = "";
    if (getpid() == daemon_pid)
        return "daemon";
    prctl(PR_GET_NAME, (unsigned long)name, 0, 0, 0);
    return strcmp(name, "gpupool-superv") == 0 ? "supervisor" : "intermediate";
}

/* The errno this call is to fail with (the count in the file at path
 * taken down by one), or 0. */
static int take_one(const char *path) {
    if (path[0] == '\0')
        return 0;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int fail = 0, e = EAGAIN;
    char buf[64], where[32];
    long n = 0;
    flock(fd, LOCK_EX);
    ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
    if (got > 0) {
        buf[got] = '\0';
        const char *h = here();
        if (sscanf(buf, "%ld %31s %d", &n, where, &e) >= 2 && n > 0 &&
            (strcmp(where, "any") == 0 || strcmp(where, h) == 0)) {
            int len = snprintf(buf, sizeof buf, "%ld %s %d\n", n - 1, where, e);
            if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)len, 0) == len)
                fail = e;
        }
    }
    flock(fd, LOCK_UN);
    close(fd);
    return fail;
}

pid_t fork(void) {
    static pid_t (*real_fork)(void);
    if (real_fork == NULL)
        real_fork = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
    int e = take_one(fork_path);
    if (e != 0) {
        errno = e;
        return -1;
    }
    return real_fork();
}

/* open() of /dev/ptmx; open64 is the same function on a 64-bit host. */
int open(const char *file, int flags, ...) {
    static int (*real_open)(const char *, int, ...);
    if (real_open == NULL)
        real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    va_list ap;
    va_start(ap, flags);
    /* A mode is passed only with these (O_TMPFILE includes O_DIRECTORY). */
    mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    int e = strcmp(file, "/dev/ptmx") == 0 ? take_one(pty_path) : 0;
    if (e != 0) {
        errno = e;
        return -1;
    }
    return real_open(file, flags, mode);
}

int open64(const char *file, int flags, ...) __attribute__((alias("open")));
