/*
 * session-server.h — the session server that owns an interactive task's
 * pseudo-terminal, shared by the executors that run one (session-server.c).
 *
 * Whoever starts an interactive task (the local executor's supervisor, or
 * gpupool-slurm-session inside a Slurm job) makes a pseudo-terminal and a
 * listening unix socket with gpx__sessd_listen, forks the task onto the
 * terminal, then serves the socket with gpx__sessd_serve until the task
 * ends: a bounded ring of the terminal's recent output (replayed on
 * attach), commands exec'd into the task, connections to its ports, notices
 * shown on its terminal. Every client speaks the stream framing of
 * common/gp_channel.h. The server side makes system calls only (no malloc,
 * no stdio), so that a fork of a threaded program may run it; what differs
 * between executors (where output is logged, how a command enters the task)
 * comes in a gpx__sessd_host. gpx__sessd_request and gpx__sessd_handshake
 * are the other end, for whoever opens a session.
 */
#ifndef GP_EXECUTORS_SESSION_SERVER_H
#define GP_EXECUTORS_SESSION_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/gp_channel.h"
#include "executors/executor.h"

/* Recent terminal output kept per task (replayed on attach). */
#define GPX__SESSD_RING (64 * 1024)
/* Sessions (attached clients and exec'd commands) one task may hold; a
 * command whose client went away counts until it has ended after its kill. */
#define GPX__SESSD_CLIENTS 64
/* How long an attached client may take nothing, while it holds the terminal
 * up or while the ended task's last output waits for it, before it is cut
 * off. The client is gpupoold, whose own rule cuts off a client of its that
 * takes nothing for 30 s; this is the backstop behind it, so it must be
 * longer than gpupoold may go without writing to a client it serves: one
 * that reads 16 KiB each 30 s has its kernel open its window to gpupoold
 * only in steps of half its receive buffer (64 KiB by default, two minutes
 * at that pace), and while gpupoold cannot write, it reads nothing of the
 * task's. At 30 s, a client reading 2 KB/s was cut off here, now and then. */
#define GPX__SESSD_STUCK_S 180
/* Arguments an exec may have. */
#define GPX__SESSD_MAX_ARGS 256

/* What the server asks of the program that runs it. Both callbacks must be
 * async-signal-safe. */
typedef struct gpx__sessd_host {
    /* Copies n bytes the terminal printed (or a notice shown on it) to the
     * task's log. */
    void (*log)(void *ctx, const char *buf, size_t n);
    /* In a forked child: runs argv inside task tpid with in, out and err as
     * its standard streams (tty: in is a terminal to take as its
     * controlling one, out == in, err == in), in a session of its own.
     * Never returns: on failure it writes why to err and exits 127. */
    void (*exec)(void *ctx, pid_t tpid, int in, int out, int err, int tty, char *const *argv);
    void *ctx;
    int uid; /* >= 0: the terminals of exec'd commands are given to this user, a
                client's signal to the task's terminal is sent as this user, and a
                forwarded port's connection is a socket of this user's, which
                only a socket of this user's (< 0: the server's) may take */
    /* 1: the program is a child subreaper, to which the task's orphans come
     * back: the server reaps every child of its own but the task. 0: only
     * the task's exec'd commands (the program keeps other children). */
    int subreaper;
} gpx__sessd_host;

/*
 * Before the task is forked: a pseudo-terminal (the side the server keeps in
 * *master, the task's in *slave, given to uid when uid >= 0, mode 0620,
 * 24x80) and the listening socket <dir>/<name> (mode 0600) in *lfd. 0, or -1
 * with errno set and nothing left open. System calls only.
 */
int gpx__sessd_listen(const char *dir, const char *name, int uid, int *master, int *slave,
                      int *lfd);

/*
 * Serves the session socket until the task tpid ends, sends its last output
 * and its exit status to the attached clients, at their own pace (one that
 * takes nothing for GPX__SESSD_STUCK_S is cut off), and returns it in *code
 * / *sig (the task is left a zombie for the caller to reap). Only peers of
 * this process's own user are accepted. A poll that fails for good (for
 * another reason than a want of memory, which is waited out) ends the
 * service, not the task: why goes to the log and to every client, which is
 * closed, and the terminal is read into the log until the task ends. Closes
 * master and lfd. -1 if it could not start (no memory): the caller then
 * waits for the task itself.
 */
int gpx__sessd_serve(const gpx__sessd_host *h, pid_t tpid, int master, int lfd, int *code,
                     int *sig);

/*
 * The opening message of a session of kind req->kind into msg (room for
 * GP_CH_HEAD + GP_CH_PAYLOAD_MAX bytes); its length in *len. 0, or GP_EINVAL
 * with err naming the field.
 */
int gpx__sessd_request(const gp_session_req *req, uint8_t *msg, size_t *len, char *err,
                       size_t errlen);

/*
 * Sends the opening message msg on fd, connected to a session server (or to
 * a relay in front of one), and reads its answer, within fd's own timeouts.
 * 0 when it answered READY, with *passed the descriptor it passed (-1 if
 * none); GP_ELIMIT or GP_EIO with err holding its reason (a refusal's
 * reason is read even when the request could not be sent: the server
 * answers it at once and closes without reading the request). On error
 * nothing passed is left open; fd stays open either way.
 */
int gpx__sessd_handshake(int fd, const uint8_t *msg, size_t len, int *passed, char *err,
                         size_t errlen);

#endif /* GP_EXECUTORS_SESSION_SERVER_H */
