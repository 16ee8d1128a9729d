/*
 * files.h — file helpers every part shares: mkdir -p, and writing a whole
 * buffer to a file or a socket. One copy, so that every caller reports a directory it could not
 * make the same way.
 */
#ifndef GP_FILES_H
#define GP_FILES_H

#include <stddef.h>
#include <sys/types.h>

/*
 * mkdir -p: creates path and every missing parent with mode (less the
 * umask). Returns 0 (also if path already exists), GP_ERANGE for a path
 * longer than PATH_MAX, or the system code (gp_syserr) of the first mkdir
 * that failed; the parents made before it stay.
 */
int gp_mkdirs(const char *path, unsigned mode);

/*
 * Writes all n bytes of data to fd, again after a short write or EINTR.
 * Returns 0, or -1 with errno set (a write that wrote nothing counts as
 * failed). Only calls write(2): safe between fork and exec, and in a signal
 * handler.
 */
int gp_write_all(int fd, const void *data, size_t n);

/* gp_write_all for a socket: send(2) with MSG_NOSIGNAL, so that a peer
 * gone is -1 with EPIPE, never SIGPIPE. */
int gp_send_all(int fd, const void *data, size_t n);

/* read(2) of at most n bytes, again after EINTR: what read returns
 * otherwise (0 at the end, -1 with errno set). Only calls read(2), as
 * gp_write_all only write(2). */
ssize_t gp_read_some(int fd, void *buf, size_t n);

#endif /* GP_FILES_H */
