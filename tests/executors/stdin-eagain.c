/*
 * stdin-eagain.c — preloaded into gpupool-slurm-session's relay by
 * test-slurm-relay.c: makes reads of standard input fail with EAGAIN, as a
 * read of a non-blocking socket may after poll called it readable (another
 * reader took the bytes, a spurious wake-up). By environment:
 *
 *   GPX_TEST_STDIN_EAGAIN=N   from the Nth read of descriptor 0 on, every
 *                             other one (the Nth, the N+2th...) fails with
 *                             EAGAIN without reading; the others read.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

ssize_t read(int fd, void *buf, size_t n) {
    static ssize_t (*real_read)(int, void *, size_t);
    static long calls;
    if (real_read == NULL)
        real_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    const char *from = getenv("GPX_TEST_STDIN_EAGAIN");
    if (fd == 0 && from != NULL) {
        long first = atol(from);
        if (++calls >= first && first > 0 && (calls - first) % 2 == 0) {
            errno = EAGAIN;
            return -1;
        }
    }
    return real_read(fd, buf, n);
}
