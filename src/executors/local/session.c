/*
 * session.c — sessions of the local executor: the terminal of an interactive
 * task, commands exec'd into it and connections to its ports.
 *
 * The supervisor of a task launched with tty (proc.c) makes a pseudo-terminal
 * and a listening unix socket, <task dir>/session.sock (mode 0600, the
 * daemon's user's; a peer of any other user is refused by SO_PEERCRED),
 * before it forks the task, then serves the socket with the session server
 * of ../session-server.c (the ring of recent output, exec, port forwarding,
 * notices), which the Slurm executor's gpupool-slurm-session runs too. What
 * is the local executor's own is here: the terminal's output goes to the
 * task's log (tasklog.c), and an exec'd command enters the task through
 * proc.c's gpx__exec_in_task (the task's cgroups, mount namespace, user and
 * environment). The supervisor is a fork of the threaded daemon, so both
 * use system calls only. gpx__sess_open, at the end, is the daemon's side
 * and may use anything.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/local/local.h"
#include "executors/registry.h"
#include "executors/session-server.h"

/* The supervisor's host for the session server. */
typedef struct host_ctx {
    const gpx__spawn *s;
    gpx__tasklog *log;
} host_ctx;

static void host_log(void *ctx, const char *buf, size_t n) {
    gpx__tasklog_write(((host_ctx *)ctx)->log, buf, n);
}

static void host_exec(void *ctx, pid_t tpid, int in, int out, int err, int tty, char *const *argv) {
    gpx__exec_in_task(((host_ctx *)ctx)->s, tpid, in, out, err, tty, argv);
}

static int task_uid(const gpx__spawn *s) {
    return s->user != NULL && s->user->switch_to ? (int)s->user->uid : -1;
}

int gpx__sess_prepare(const gpx__spawn *s, int *master, int *slave, int *lfd) {
    return gpx__sessd_listen(s->dir, GPX__SESS_SOCK, task_uid(s), master, slave, lfd);
}

int gpx__sess_serve(const gpx__spawn *s, pid_t tpid, int master, int lfd, gpx__tasklog *log,
                    int *code, int *sig) {
    host_ctx hc = {s, log};
    gpx__sessd_host h = {host_log, host_exec, &hc, task_uid(s), 1};
    return gpx__sessd_serve(&h, tpid, master, lfd, code, sig);
}

int gpx__sess_open(const char *dir, const gp_session_req *req, int *out, char *err, size_t errlen) {
    *out = -1;
    uint8_t msg[GP_CH_HEAD + GP_CH_PAYLOAD_MAX];
    size_t len = 0;
    int rc = gpx__sessd_request(req, msg, &len, err, errlen);
    if (rc < 0)
        return rc;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (gpx__exec_fmt(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, GPX__SESS_SOCK) < 0) {
        gp_errf(err, errlen, "the task's session socket path is too long");
        return GP_EIO;
    }
    struct stat st;
    if (stat(sa.sun_path, &st) < 0) {
        gp_errf(err, errlen, "the task has no terminal (it was not started interactive)");
        return GP_ESTATE;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    /* The supervisor answers opens one after another: 200 at once on a
     * loaded machine took more than 5 s for a few. An open (on a thread of
     * its own in the daemon) waits up to GPX__SESS_OPEN_S; a notice, sent
     * from the scheduling loop, keeps GPX__SESS_NOTICE_S so that the loop
     * is never held long. */
    struct timeval tv = {req->kind == GP_SESSION_NOTICE ? GPX__SESS_NOTICE_S : GPX__SESS_OPEN_S, 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        gp_errf(err, errlen, "the task's session endpoint does not answer: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return GP_ESTATE;
    }
    int passed = -1;
    rc = gpx__sessd_handshake(fd, msg, len, &passed, err, errlen);
    if (rc == 0 && req->kind == GP_SESSION_PORT && passed < 0) {
        gp_errf(err, errlen, "the task's session endpoint answered a malformed message");
        rc = GP_EIO;
    }
    if (rc < 0) {
        close(fd);
        return rc;
    }
    if (req->kind == GP_SESSION_PORT || req->kind == GP_SESSION_NOTICE) {
        close(fd);
        *out = passed;
        return 0;
    }
    if (passed >= 0)
        close(passed);
    struct timeval none = {0, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
    *out = fd;
    return 0;
}
