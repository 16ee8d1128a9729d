/*
 * session-server.c — the session server of an interactive task: its
 * terminal, commands exec'd into it and connections to its ports
 * (session-server.h says who runs it and how).
 *
 * The task's terminal and a listening unix socket are made before the task
 * is forked (gpx__sessd_listen); the task gets the terminal's other side as
 * its controlling terminal and standard streams. The server then serves the
 * socket instead of only waiting for the task:
 *
 *   - everything the terminal prints goes into a ring of GPX__SESSD_RING
 *     bytes (and the host's log); an ATTACH client is sent the ring first,
 *     then what follows. While a client lags a whole ring behind, the
 *     terminal is not read (the program's writes block, as on a terminal
 *     nobody reads); a client that takes nothing for GPX__SESSD_STUCK_S
 *     seconds meanwhile is cut off. With no client, old output is
 *     overwritten.
 *   - an EXEC client runs a command in the task through the host's exec
 *     (the local executor: the task's cgroups, mount namespace, user and
 *     environment; inside a Slurm job: the job's), on a terminal of its own
 *     or on pipes.
 *   - a PORT client gets a TCP connection to 127.0.0.1:port made in the
 *     task's network namespace, with a socket of the task's user, passed to
 *     it with SCM_RIGHTS; only if what took the connection is the task
 *     user's too (tasks may share a network with other users').
 *   - a NOTICE is shown on the terminal as if the task had printed it.
 *
 * The server side may run in a fork of a threaded program, so it uses
 * system calls only (no malloc, no stdio): its memory is one mmap'ed arena
 * of fixed size. gpx__sessd_request and gpx__sessd_handshake, at the end,
 * are the opening side's and may use anything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/files.h"
#include "common/gp_channel.h"
#include "common/gp_clock.h"
#include "common/gp_error.h"
#include "executors/session-server.h"

#define OBUF  (GP_CH_HEAD + 16384 + 1024) /* one data chunk and a few control messages */
#define IBUF  (GP_CH_HEAD + GP_CH_PAYLOAD_MAX)
#define CHUNK 16384
#define NPOLL (3 + GPX__SESSD_CLIENTS * 4)

/* C_DROPPED: a closed EXEC client whose command was killed but has not
 * ended yet; the place is held, a session of the task's, until the command
 * is reaped (reap). */
enum { C_FREE = 0, C_NEW, C_ATTACH, C_EXEC, C_DROPPED };

typedef struct client {
    int state;
    int fd;
    uint64_t cursor;          /* ATTACH: the next ring byte it is sent */
    int64_t took_ms;          /* finish: when it last took something */
    size_t ilen, ioff, ipart; /* ibuf: bytes held, processed, of the current STDIN written */
    size_t olen, ooff;
    int closing; /* send what obuf holds, then close */
    /* EXEC */
    pid_t pid;
    int in, out, err; /* the command's stdin, stdout, stderr (a terminal: in == out, err -1) */
    int tty;
    int exited, code, sig;
    uint8_t ibuf[IBUF];
    uint8_t obuf[OBUF];
} client;

typedef struct arena {
    uint64_t head; /* bytes ever written into the ring */
    uint8_t ring[GPX__SESSD_RING];
    uint8_t tmp[CHUNK];
    client c[GPX__SESSD_CLIENTS];
} arena;

/* ======================================================================== */
/* The supervisor's side (system calls only)                                 */
/* ======================================================================== */

static size_t cstrlen(const char *s) {
    size_t n = 0;
    while (s[n] != '\0')
        n++;
    return n;
}

/* A few errno values in words (strerror is not async-signal-safe). */
static const char *errtext(int e) {
    switch (e) {
    case ECONNREFUSED:
        return "connection refused (nothing listens there yet)";
    case ETIMEDOUT:
        return "timed out";
    case ENOENT:
        return "no such file";
    case EMFILE:
    case ENFILE:
        return "too many open files";
    case EAGAIN:
    case ENOMEM:
        return "out of resources";
    case EINVAL:
        return "invalid argument";
    case EFAULT:
        return "bad address";
    default:
        return "system call failed";
    }
}

static void set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Appends a message to a client's output; dropped if it does not fit (only
 * control messages come here while data is pending, and OBUF leaves room). */
static void put_msg(client *c, int type, const void *payload, size_t len) {
    if (c->olen + GP_CH_HEAD + len > OBUF)
        return;
    gp_ch_head(c->obuf + c->olen, type, len);
    if (len > 0)
        memcpy(c->obuf + c->olen + GP_CH_HEAD, payload, len);
    c->olen += GP_CH_HEAD + len;
}

static void put_text(client *c, int type, const char *a, const char *b) {
    char buf[256];
    size_t n = 0;
    for (const char *s = a; s != NULL && *s != '\0' && n < sizeof buf; s++)
        buf[n++] = *s;
    for (const char *s = b; s != NULL && *s != '\0' && n < sizeof buf; s++)
        buf[n++] = *s;
    put_msg(c, type, buf, n);
}

static void put_exit(client *c, int code, int sig) {
    uint8_t p[8];
    gp_ch_put32(p, (uint32_t)code);
    gp_ch_put32(p + 4, (uint32_t)sig);
    put_msg(c, GP_CH_EXIT, p, sizeof p);
}

static void set_size(int fd, uint32_t rows, uint32_t cols) {
    if (rows == 0 || cols == 0)
        return;
    struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
    ioctl(fd, TIOCSWINSZ, &ws);
}

/* A new pseudo-terminal: the side we keep in *m, the other side in *s;
 * 0 or -1 with errno set. */
static int open_pty(int *m, int *s) {
    *m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*m < 0)
        return -1;
    int unlock = 0;
    if (ioctl(*m, TIOCSPTLCK, &unlock) < 0 ||
        (*s = ioctl(*m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
        int e = errno;
        close(*m);
        errno = e;
        return -1;
    }
    return 0;
}

int gpx__sessd_listen(const char *dir, const char *name, int uid, int *master, int *slave,
                      int *lfd) {
    *master = *slave = *lfd = -1;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t dl = cstrlen(dir), nl = cstrlen(name);
    if (dl + 1 + nl >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, dir, dl);
    sa.sun_path[dl] = '/';
    memcpy(sa.sun_path + dl + 1, name, nl);
    if (open_pty(master, slave) < 0)
        return -1;
    /* The terminal is the task user's, as login(1) makes it: a session
     * whose terminal cannot be given to its user is not started. */
    if ((uid >= 0 && fchown(*slave, (uid_t)uid, (gid_t)-1) < 0) || fchmod(*slave, 0620) < 0) {
        int e = errno;
        close(*master);
        close(*slave);
        *master = *slave = -1;
        errno = e;
        return -1;
    }
    set_size(*master, 24, 80);
    unlink(sa.sun_path);
    *lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    mode_t old = umask(077);
    int rc = *lfd < 0 ? -1 : bind(*lfd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc == 0)
        rc = listen(*lfd, 64);
    if (rc < 0) {
        int e = errno;
        close(*master);
        close(*slave);
        if (*lfd >= 0)
            close(*lfd);
        *master = *slave = *lfd = -1;
        errno = e;
        return -1;
    }
    return 0;
}

static size_t ring_room(const arena *a, uint64_t *lagging);

/* Ring output: what the terminal printed, copied at absolute offset pos. */
static void ring_copy(const arena *a, uint64_t pos, uint8_t *out, size_t n) {
    size_t at = (size_t)(pos % GPX__SESSD_RING);
    size_t first = n < GPX__SESSD_RING - at ? n : GPX__SESSD_RING - at;
    memcpy(out, a->ring + at, first);
    if (n > first)
        memcpy(out + first, a->ring, n - first);
}

static void ring_put(arena *a, const uint8_t *data, size_t n) {
    size_t at = (size_t)(a->head % GPX__SESSD_RING);
    size_t first = n < GPX__SESSD_RING - at ? n : GPX__SESSD_RING - at;
    memcpy(a->ring + at, data, first);
    if (n > first)
        memcpy(a->ring, data + first, n - first);
    a->head += n;
}

/* A NOTICE from the daemon: its text goes into the ring (which attached
 * clients are sent, and a later attach replays) and the log, as if the
 * terminal had printed it; cut to what the ring has room for, so that no
 * attached client loses output it has not been sent. */
static void show_notice(arena *a, const gpx__sessd_host *h, const gp_ch_msg *m) {
    uint64_t lag;
    size_t n = m->len < GP_SESSION_NOTICE_MAX ? m->len : GP_SESSION_NOTICE_MAX;
    size_t room = ring_room(a, &lag);
    if (n > room)
        n = room;
    ring_put(a, m->payload, n);
    h->log(h->ctx, (const char *)m->payload, n);
}

/* Whether a client is connected (neither a free place nor a dropped
 * command's). */
static int connected(const client *c) {
    return c->state != C_FREE && c->state != C_DROPPED;
}

static void client_close(client *c) {
    if (!connected(c))
        return;
    int dropped = 0;
    if (c->state == C_EXEC) {
        if (c->pid > 0 && !c->exited)
            kill(-c->pid, SIGHUP);
        if (c->in >= 0)
            close(c->in);
        if (c->out >= 0 && c->out != c->in)
            close(c->out);
        if (c->err >= 0)
            close(c->err);
        if (c->pid > 0 && !c->exited) {
            /* Reaped once it ends (reap), which may take a while (a
             * process stuck in the kernel): its place is held until then,
             * so that no command is left a zombie for want of one. */
            kill(-c->pid, SIGKILL);
            /* The command itself too: until its setsid it leads no group
             * (a client gone at once missed it, and it ran on). */
            kill(c->pid, SIGKILL);
            dropped = 1;
        }
    }
    if (c->fd >= 0)
        close(c->fd);
    c->state = dropped ? C_DROPPED : C_FREE;
    c->fd = -1;
}

/* Writes what a client's obuf holds; -1 if the client is gone. */
static int client_flush(client *c) {
    while (c->ooff < c->olen) {
        ssize_t w = send(c->fd, c->obuf + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (w <= 0)
            return -1;
        c->ooff += (size_t)w;
    }
    c->olen = c->ooff = 0;
    return 0;
}

/* Room for one descriptor passed with SCM_RIGHTS. */
typedef union fdbuf {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
} fdbuf;

/* A message header over one buffer, with room for one passed descriptor. */
static void fd_msghdr(struct msghdr *mh, struct iovec *iov, fdbuf *u) {
    memset(u, 0, sizeof *u);
    memset(mh, 0, sizeof *mh);
    mh->msg_iov = iov;
    mh->msg_iovlen = 1;
    mh->msg_control = u->buf;
    mh->msg_controllen = sizeof u->buf;
}

/* Writes "/proc/<pid><tail>" into path (64 bytes; tail of at most 16). */
static void proc_path(char path[64], pid_t pid, const char *tail) {
    char num[16];
    size_t n = 0, p = 6;
    memcpy(path, "/proc/", 6);
    for (unsigned v = (unsigned)pid; n == 0 || v != 0; v /= 10)
        num[n++] = (char)('0' + v % 10);
    while (n > 0)
        path[p++] = num[--n];
    memcpy(path + p, tail, cstrlen(tail) + 1);
}

/* Connects to 127.0.0.1:port in the network namespace of process tpid,
 * with a socket of user uid's (< 0: the server's own). */
static int connect_port(pid_t tpid, int port, int uid) {
    char path[64];
    proc_path(path, tpid, "/ns/net");
    struct stat mine, theirs;
    int own = -1, tns = -1;
    if (stat("/proc/self/ns/net", &mine) == 0 && stat(path, &theirs) == 0 &&
        (mine.st_ino != theirs.st_ino || mine.st_dev != theirs.st_dev)) {
        own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        tns = open(path, O_RDONLY | O_CLOEXEC);
        if (own < 0 || tns < 0 || setns(tns, CLONE_NEWNET) < 0) {
            if (own >= 0)
                close(own);
            if (tns >= 0)
                close(tns);
            return -1;
        }
    }
    /* A socket's owner is the file system id of whoever makes it: made by a
     * root server, the task's connection was root's, and a service on the
     * loopback that admits only root's sockets (iptables' owner match)
     * admitted the task's user. Only that id changes, and only here: the
     * user can signal or trace the server no more than before. */
    int fsuid = uid >= 0 ? setfsuid((uid_t)uid) : -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int e = errno;
    if (uid >= 0)
        setfsuid((uid_t)fsuid);
    if (own >= 0) {
        setns(own, CLONE_NEWNET);
        close(own);
        close(tns);
    }
    if (fd < 0) {
        errno = e;
        return -1;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd pf = {fd, POLLOUT, 0};
        int soerr = ETIMEDOUT;
        socklen_t sl = sizeof soerr;
        if (poll(&pf, 1, 1000) == 1)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        errno = soerr;
        rc = soerr == 0 ? 0 : -1;
    }
    if (rc < 0) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The port of an address of /proc/net/tcp or tcp6 ("0100007F:1F90"), or -1. */
static long hex_port(const char *a, size_t n) {
    size_t i = n;
    while (i > 0 && a[i - 1] != ':')
        i--;
    long v = i > 0 && i < n ? 0 : -1;
    for (; v >= 0 && i < n; i++) {
        int d = a[i] >= '0' && a[i] <= '9'   ? a[i] - '0'
                : a[i] >= 'A' && a[i] <= 'F' ? a[i] - 'A' + 10
                                             : -1;
        v = d < 0 ? -1 : v * 16 + d;
    }
    return v;
}

/* Reads one line of /proc/net/tcp: the owner's uid if its local port is
 * port and its remote one from, else -1. */
static long tcp_line_uid(const char *l, size_t n, int port, int from) {
    const char *f[8];
    size_t len[8];
    int k = 0;
    for (size_t i = 0; i < n && k < 8;) {
        while (i < n && l[i] == ' ')
            i++;
        size_t b = i;
        while (i < n && l[i] != ' ')
            i++;
        if (i > b) {
            f[k] = l + b;
            len[k++] = i - b;
        }
    }
    if (k < 8 || hex_port(f[1], len[1]) != port || hex_port(f[2], len[2]) != from)
        return -1;
    long uid = 0;
    for (size_t i = 0; i < len[7]; i++) {
        if (f[7][i] < '0' || f[7][i] > '9')
            return -1;
        uid = uid * 10 + (f[7][i] - '0');
    }
    return uid;
}

/* The uid owning the socket that took connection fd (made to port) in the
 * network namespace of tpid: the accepted socket is its listener's. -1 if
 * it cannot be told. */
static long peer_uid(pid_t tpid, int fd, int port) {
    struct sockaddr_in me;
    socklen_t ml = sizeof me;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0)
        return -1;
    int from = ntohs(me.sin_port);
    long uid = -1;
    static const char *const tables[] = {"/net/tcp", "/net/tcp6"};
    for (int t = 0; t < 2 && uid < 0; t++) {
        char path[64];
        proc_path(path, tpid, tables[t]);
        int tf = open(path, O_RDONLY | O_CLOEXEC);
        char buf[4096];
        size_t have = 0;
        for (;;) {
            ssize_t r = tf < 0 ? 0 : gp_read_some(tf, buf + have, sizeof buf - have);
            if (r <= 0)
                break;
            have += (size_t)r;
            size_t start = 0;
            for (size_t i = 0; i < have && uid < 0; i++)
                if (buf[i] == '\n') {
                    uid = tcp_line_uid(buf + start, i - start, port, from);
                    start = i + 1;
                }
            memmove(buf, buf + start, have - start);
            have = have - start == sizeof buf ? 0 : have - start; /* a line too long */
        }
        if (tf >= 0)
            close(tf);
    }
    return uid;
}

/* Answers a PORT client: READY with the connection, or ERROR. */
static void open_port(client *c, pid_t tpid, int uid, const gp_ch_msg *m) {
    int port = m->len == 2 ? (int)gp_ch_get16(m->payload) : 0;
    if (port < 1) {
        put_text(c, GP_CH_ERROR, "port: must be from 1 to 65535", NULL);
        c->closing = 1;
        return;
    }
    int fd = connect_port(tpid, port, uid);
    if (fd < 0) {
        put_text(c, GP_CH_ERROR, "port: cannot connect to it inside the task: ", errtext(errno));
        c->closing = 1;
        return;
    }
    /* The task may share the node's network with other users' tasks: what
     * listens on the port must be its user's. Another user's process that
     * took the port first answered the forward in its place (and was sent,
     * say, a notebook's token). */
    if (peer_uid(tpid, fd, port) != (long)(uid >= 0 ? (uid_t)uid : geteuid())) {
        close(fd);
        put_text(c, GP_CH_ERROR,
                 "port: what listens on it is not the task's (another user's process holds it)",
                 NULL);
        c->closing = 1;
        return;
    }
    uint8_t head[GP_CH_HEAD];
    gp_ch_head(head, GP_CH_READY, 0);
    struct iovec iov = {head, sizeof head};
    fdbuf u;
    struct msghdr mh;
    fd_msghdr(&mh, &iov, &u);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    sendmsg(c->fd, &mh, MSG_NOSIGNAL);
    close(fd);
    c->closing = 1;
}

/* Starts an EXEC client's command. */
static void open_exec(const gpx__sessd_host *h, pid_t tpid, client *c, const gp_ch_msg *m) {
    if (m->len < 6 || m->payload[m->len - 1] != '\0') {
        put_text(c, GP_CH_ERROR, "command: malformed request", NULL);
        c->closing = 1;
        return;
    }
    uint32_t rows = gp_ch_get16(m->payload), cols = gp_ch_get16(m->payload + 2);
    int tty = m->payload[4] != 0;
    char *argv[GPX__SESSD_MAX_ARGS + 1];
    int argc = 0;
    /* The payload lies in the client's own ibuf: the strings are used in
     * place (the child gets its copy of them at fork). */
    char *base = (char *)c->ibuf + c->ioff + GP_CH_HEAD;
    char *p = base + 5, *end = base + m->len;
    while (p < end && argc < GPX__SESSD_MAX_ARGS) {
        argv[argc++] = p;
        p += cstrlen(p) + 1;
    }
    argv[argc] = NULL;
    if (p < end || argc == 0 || argv[0][0] == '\0') {
        put_text(c, GP_CH_ERROR, "command: empty, or more than 256 arguments", NULL);
        c->closing = 1;
        return;
    }
    int fds[3] = {-1, -1, -1}, mine[3] = {-1, -1, -1};
    int ok;
    if (tty) {
        ok = open_pty(&mine[0], &fds[0]) == 0;
        if (ok) {
            fds[1] = fds[2] = fds[0];
            set_size(mine[0], rows ? rows : 24, cols ? cols : 80);
            if (h->uid >= 0 && fchown(fds[0], (uid_t)h->uid, (gid_t)-1) < 0) {
                int e = errno;
                close(mine[0]);
                close(fds[0]);
                mine[0] = fds[0] = fds[1] = fds[2] = -1;
                errno = e;
                ok = 0;
            }
        }
    } else {
        int a[2] = {-1, -1}, b[2] = {-1, -1}, d[2] = {-1, -1};
        ok = pipe2(a, O_CLOEXEC) == 0 && pipe2(b, O_CLOEXEC) == 0 && pipe2(d, O_CLOEXEC) == 0;
        fds[0] = a[0], mine[0] = a[1];
        fds[1] = b[1], mine[1] = b[0];
        fds[2] = d[1], mine[2] = d[0];
        for (int i = 0; !ok && i < 2; i++) {
            int *pp = i == 0 ? a : i == 1 ? b : d;
            if (pp[0] >= 0)
                close(pp[0]);
            if (pp[1] >= 0)
                close(pp[1]);
        }
    }
    pid_t pid = ok ? fork() : -1;
    if (pid == 0)
        h->exec(h->ctx, tpid, fds[0], fds[1], fds[2], tty, argv);
    int e = errno;
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0 && (i == 0 || fds[i] != fds[0]))
            close(fds[i]);
    if (pid < 0) {
        for (int i = 0; i < 3; i++)
            if (mine[i] >= 0)
                close(mine[i]);
        put_text(c, GP_CH_ERROR, "exec: cannot start the command: ", errtext(e));
        c->closing = 1;
        return;
    }
    c->state = C_EXEC;
    c->pid = pid;
    c->tty = tty;
    c->in = mine[0];
    c->out = tty ? mine[0] : mine[1];
    c->err = tty ? -1 : mine[2];
    c->exited = 0;
    set_nonblock(c->in);
    set_nonblock(c->out);
    if (c->err >= 0)
        set_nonblock(c->err);
    put_msg(c, GP_CH_READY, NULL, 0);
}

/* Sends sig to the process group pg, the one the task made its terminal's
 * foreground, as the task's user uid (< 0: as the server's own). The kernel
 * keeps that group's number after its last member ended, and by then the
 * number may be another user's group: sent as the task's user, the signal
 * reaches only what the task could signal itself. A root server sends it
 * from a child that takes the user's ids, so that its own never change (with
 * the user's real id, the user could signal it); if that fails, nothing is
 * sent. */
static void signal_as(int uid, pid_t pg, int sig) {
    if (uid < 0 || geteuid() == (uid_t)uid) {
        kill(-pg, sig);
        return;
    }
    pid_t c = fork();
    if (c == 0) {
        if (setgroups(0, NULL) == 0 && setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) == 0)
            kill(-pg, sig);
        _exit(0);
    }
    while (c > 0 && waitpid(c, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Carries out the messages a client sent, as far as their targets take
 * them; stops at a STDIN its target cannot take yet (back-pressure: the
 * client is not read until it can). */
static void client_input(const gpx__sessd_host *h, arena *a, pid_t tpid, int master, client *c) {
    while (!c->closing) {
        gp_ch_msg m;
        long n = gp_ch_parse(c->ibuf + c->ioff, c->ilen - c->ioff, &m);
        if (n == 0)
            break;
        if (n < 0) {
            put_text(c, GP_CH_ERROR, "message: malformed frame", NULL);
            c->closing = 1;
            break;
        }
        int target = c->state == C_ATTACH ? master : c->state == C_EXEC ? c->in : -1;
        if (c->state == C_NEW && m.type == GP_CH_OPEN_ATTACH && m.len == 4) {
            c->state = C_ATTACH;
            set_size(master, gp_ch_get16(m.payload), gp_ch_get16(m.payload + 2));
            c->cursor = a->head > GPX__SESSD_RING ? a->head - GPX__SESSD_RING : 0;
            put_msg(c, GP_CH_READY, NULL, 0);
        } else if (c->state == C_NEW && m.type == GP_CH_OPEN_EXEC) {
            open_exec(h, tpid, c, &m);
        } else if (c->state == C_NEW && m.type == GP_CH_OPEN_PORT) {
            open_port(c, tpid, h->uid, &m);
        } else if (c->state == C_NEW && m.type == GP_CH_NOTICE) {
            show_notice(a, h, &m);
            put_msg(c, GP_CH_READY, NULL, 0);
            c->closing = 1;
        } else if (c->state != C_NEW && m.type == GP_CH_STDIN && target >= 0) {
            while (c->ipart < m.len) {
                ssize_t w = write(target, m.payload + c->ipart, m.len - c->ipart);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0)
                    break;
                c->ipart += (size_t)w;
            }
            if (c->ipart < m.len && (errno == EAGAIN || errno == EWOULDBLOCK))
                return; /* the rest when the target can take it */
        } else if (c->state != C_NEW && m.type == GP_CH_RESIZE && m.len == 4) {
            if (c->state == C_ATTACH || c->tty)
                set_size(target, gp_ch_get16(m.payload), gp_ch_get16(m.payload + 2));
        } else if (c->state != C_NEW && m.type == GP_CH_SIGNAL && m.len == 1) {
            pid_t pg = 0;
            if (c->state == C_EXEC && !c->exited)
                kill(-c->pid, m.payload[0]);
            else if (c->state == C_ATTACH && ioctl(master, TIOCGPGRP, &pg) == 0 && pg > 0)
                signal_as(h->uid, pg, m.payload[0]);
        } else if (c->state != C_NEW && m.type == GP_CH_EOF) {
            if (c->state == C_EXEC && !c->tty && c->in >= 0) {
                close(c->in);
                c->in = -1;
            }
        } else {
            put_text(c, GP_CH_ERROR, "message: not expected here", NULL);
            c->closing = 1;
            break;
        }
        c->ioff += (size_t)n;
        c->ipart = 0;
    }
    if (c->ioff > 0) {
        memmove(c->ibuf, c->ibuf + c->ioff, c->ilen - c->ioff);
        c->ilen -= c->ioff;
        c->ioff = 0;
    }
}

/* Fills an idle client's obuf: ring output for ATTACH, the command's output
 * for EXEC (read here only when the client can take it). */
static void client_fill(arena *a, client *c, int can_out, int can_err) {
    if (c->olen != 0 || c->closing)
        return;
    if (c->state == C_ATTACH && c->cursor < a->head) {
        if (a->head - c->cursor > GPX__SESSD_RING)
            c->cursor = a->head - GPX__SESSD_RING;
        size_t n = (size_t)(a->head - c->cursor);
        if (n > CHUNK)
            n = CHUNK;
        gp_ch_head(c->obuf, GP_CH_STDOUT, n);
        ring_copy(a, c->cursor, c->obuf + GP_CH_HEAD, n);
        c->olen = GP_CH_HEAD + n;
        c->cursor += n;
        return;
    }
    if (c->state != C_EXEC)
        return;
    for (int which = 0; which < 2 && c->olen == 0; which++) {
        int *fd = which == 0 ? &c->out : &c->err;
        if (*fd < 0 || (which == 0 ? !can_out : !can_err))
            continue;
        ssize_t r = read(*fd, c->obuf + GP_CH_HEAD, CHUNK);
        if (r > 0) {
            gp_ch_head(c->obuf, which == 0 ? GP_CH_STDOUT : GP_CH_STDERR, (size_t)r);
            c->olen = GP_CH_HEAD + (size_t)r;
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            /* The end of that stream (a terminal says EIO once its other
             * side is closed). */
            if (*fd != c->in)
                close(*fd);
            *fd = -1;
        }
    }
    if (c->exited && c->out < 0 && c->err < 0) {
        put_exit(c, c->code, c->sig);
        c->closing = 1;
    }
}

/* An EXEC client's command has ended, not reaped yet: a terminal's group
 * is hung up (what the terminal still holds is read once more, then it
 * ends: background processes keep no session) while the command's zombie
 * still holds the group's number, which once it is reaped may become
 * another user's group, signalled as root. Then the command is reaped and
 * how it ended kept for its client. */
static void exec_ended(client *c) {
    if (c->tty)
        kill(-c->pid, SIGHUP);
    int st = 0;
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
        ;
    c->exited = 1;
    c->code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    c->sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

/* Whether child pid has ended (left a zombie, which is not reaped). */
static int has_ended(pid_t pid) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* Reaps the server's children that ended, never the task: EXEC commands
 * (how each ended is kept for its client), those of closed clients, and on
 * a subreaper's host every other child, an orphan of the task's (left by a
 * double fork, or by an exec'd command) that would otherwise stay a zombie
 * until the task ends, counted against the task's pids and its user's
 * processes. */
static void reap(arena *a, const gpx__sessd_host *h, pid_t tpid) {
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++) {
        client *c = &a->c[i];
        if (c->state == C_EXEC && !c->exited && has_ended(c->pid))
            exec_ended(c);
        if (c->state == C_DROPPED && waitpid(c->pid, NULL, WNOHANG) != 0)
            c->state = C_FREE;
    }
    while (h->subreaper) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0 ||
            si.si_pid == tpid)
            break;
        client *cmd = NULL, *gone = NULL;
        for (int i = 0; i < GPX__SESSD_CLIENTS; i++) {
            client *c = &a->c[i];
            if (c->state == C_EXEC && !c->exited && c->pid == si.si_pid)
                cmd = c;
            if (c->state == C_DROPPED && c->pid == si.si_pid)
                gone = c;
        }
        if (cmd != NULL) {
            exec_ended(cmd);
            continue;
        }
        if (waitpid(si.si_pid, NULL, 0) != si.si_pid)
            break;
        if (gone != NULL)
            gone->state = C_FREE;
    }
}

/* Accepts a connection of the daemon's user; refuses the rest. */
static void accept_one(arena *a, int lfd) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid()) {
        close(fd);
        return;
    }
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++) {
        client *c = &a->c[i];
        if (c->state != C_FREE)
            continue;
        memset(c, 0, offsetof(client, ibuf));
        c->state = C_NEW;
        c->fd = fd;
        c->in = c->out = c->err = -1;
        return;
    }
    uint8_t msg[64];
    static const char text[] = "too many sessions in this task";
    gp_ch_head(msg, GP_CH_ERROR, sizeof text - 1);
    memcpy(msg + GP_CH_HEAD, text, sizeof text - 1);
    send(fd, msg, GP_CH_HEAD + sizeof text - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
}

/* Reads the terminal into the ring (and the log) as far as no attached
 * client would lose output: 1 if it read something, 0 if there was nothing
 * to read, -1 once the terminal has ended. */
static int read_terminal(arena *a, int master, const gpx__sessd_host *h, size_t room) {
    if (room > CHUNK)
        room = CHUNK;
    ssize_t r = read(master, a->tmp, room);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (r <= 0)
        return -1;
    ring_put(a, a->tmp, (size_t)r);
    h->log(h->ctx, (const char *)a->tmp, (size_t)r);
    return 1;
}

/* What the terminal may take into the ring now without overwriting output an
 * attached client has not been sent; *lagging gets the most behind cursor. */
static size_t ring_room(const arena *a, uint64_t *lagging) {
    uint64_t minc = a->head;
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++)
        if (a->c[i].state == C_ATTACH && !a->c[i].closing && a->c[i].cursor < minc)
            minc = a->c[i].cursor;
    *lagging = minc;
    return GPX__SESSD_RING - (size_t)(a->head - minc);
}

/* The end: what the terminal still holds goes to the attached clients with
 * the task's exit status, at each client's own pace; a client that takes
 * nothing for GPX__SESSD_STUCK_S is cut off, as while the task ran. Then
 * every client closes. */
static void finish(arena *a, int master, const gpx__sessd_host *h, int code, int sig) {
    int drained = 0;
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++)
        a->c[i].took_ms = gp_clock_ms(CLOCK_MONOTONIC);
    for (;;) {
        int64_t now = gp_clock_ms(CLOCK_MONOTONIC);
        uint64_t lag;
        size_t room = ring_room(a, &lag);
        while (!drained && room > 0) {
            int r = read_terminal(a, master, h, room);
            if (r <= 0)
                drained = 1;
            room = ring_room(a, &lag);
        }
        struct pollfd pf[GPX__SESSD_CLIENTS];
        int np = 0;
        for (int i = 0; i < GPX__SESSD_CLIENTS; i++) {
            client *c = &a->c[i];
            if (!connected(c))
                continue;
            if (c->state != C_ATTACH && !c->closing) {
                put_text(c, GP_CH_ERROR, "the task has ended", NULL);
                c->closing = 1;
            }
            if (c->state == C_ATTACH && !c->closing) {
                client_fill(a, c, 0, 0);
                if (drained && c->olen == 0 && c->cursor >= a->head) {
                    put_exit(c, code, sig);
                    c->closing = 1;
                }
            }
            size_t held = c->olen - c->ooff;
            int r = client_flush(c);
            if (c->olen - c->ooff < held)
                c->took_ms = now;
            if (r < 0 || (c->closing && c->olen == 0) ||
                now - c->took_ms > GPX__SESSD_STUCK_S * 1000) {
                client_close(c);
                continue;
            }
            pf[np++] = (struct pollfd){c->fd, POLLOUT, 0};
        }
        if (np == 0)
            break;
        poll(pf, (nfds_t)np, 1000);
    }
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++)
        if (connected(&a->c[i]))
            client_close(&a->c[i]);
}

/* Whether the task tpid has ended (left a zombie): how, in *code / *sig. */
static int task_ended(pid_t tpid, int *code, int *sig) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)tpid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != tpid)
        return 0;
    *code = si.si_code == CLD_EXITED ? si.si_status : 0;
    *sig = si.si_code == CLD_EXITED ? 0 : si.si_status;
    return 1;
}

/* The service cannot go on (its poll failed with error e, which no retry
 * mends): why goes to the task's log and to every client, which is closed
 * (a command exec'd for one is killed), and the socket is no longer served.
 * The task runs on: its terminal is read into the log, so that its output
 * never blocks, until it ends. */
static void unserved(arena *a, const gpx__sessd_host *h, pid_t tpid, int master, int e, int *code,
                     int *sig) {
    static const char mark[] = "\r\n[gpupool] ", why[] = "the task's sessions stopped: poll: ";
    const char *what = errtext(e);
    h->log(h->ctx, mark, sizeof mark - 1);
    h->log(h->ctx, why, sizeof why - 1);
    h->log(h->ctx, what, cstrlen(what));
    h->log(h->ctx, "\r\n", 2);
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++) {
        client *c = &a->c[i];
        if (!connected(c))
            continue;
        c->olen = c->ooff = 0;
        put_text(c, GP_CH_ERROR, why, what);
        client_flush(c);
        client_close(c);
    }
    while (!task_ended(tpid, code, sig)) {
        reap(a, h, tpid);
        while (read_terminal(a, master, h, CHUNK) > 0)
            ;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int gpx__sessd_serve(const gpx__sessd_host *h, pid_t tpid, int master, int lfd, int *code,
                     int *sig) {
    arena *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return -1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    set_nonblock(master);
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++)
        a->c[i].fd = -1;
    int term_open = 1;
    int64_t blocked_since = 0;
    for (;;) {
        if (task_ended(tpid, code, sig))
            break;
        reap(a, h, tpid);
        struct pollfd pf[NPOLL];
        int who[NPOLL], what[NPOLL], np = 0;
        pf[np] = (struct pollfd){sfd, POLLIN, 0}, who[np] = -1, what[np++] = 0;
        pf[np] = (struct pollfd){lfd, POLLIN, 0}, who[np] = -1, what[np++] = 1;
        uint64_t lag;
        size_t room = ring_room(a, &lag);
        if (term_open && room > 0)
            pf[np] = (struct pollfd){master, POLLIN, 0}, who[np] = -1, what[np++] = 2;
        int64_t now = gp_clock_ms(CLOCK_MONOTONIC);
        if (room > 0) {
            blocked_since = 0;
        } else if (blocked_since == 0) {
            blocked_since = now;
        } else if (now - blocked_since > GPX__SESSD_STUCK_S * 1000) {
            /* A client that took nothing for that long holds the terminal
             * up for everyone: it is cut off. */
            for (int i = 0; i < GPX__SESSD_CLIENTS; i++)
                if (a->c[i].state == C_ATTACH && a->c[i].cursor == lag)
                    client_close(&a->c[i]);
            blocked_since = 0;
            continue;
        }
        for (int i = 0; i < GPX__SESSD_CLIENTS; i++) {
            client *c = &a->c[i];
            if (!connected(c))
                continue;
            client_fill(a, c, 0, 0);
            if (c->closing && c->olen == 0) {
                client_close(c);
                continue;
            }
            short ev = 0;
            if (!c->closing && c->ilen < IBUF && c->ioff == 0)
                ev |= POLLIN;
            if (c->olen > 0)
                ev |= POLLOUT;
            pf[np] = (struct pollfd){c->fd, ev, 0}, who[np] = i, what[np++] = 3;
            if (c->state == C_EXEC && c->olen == 0 && !c->closing) {
                if (c->out >= 0)
                    pf[np] = (struct pollfd){c->out, POLLIN, 0}, who[np] = i, what[np++] = 4;
                if (c->err >= 0)
                    pf[np] = (struct pollfd){c->err, POLLIN, 0}, who[np] = i, what[np++] = 5;
            }
            /* Input held back until its target can take it. */
            if (c->ilen > 0 && c->state == C_EXEC && c->in >= 0 && c->ipart > 0)
                pf[np] = (struct pollfd){c->in, POLLOUT, 0}, who[np] = i, what[np++] = 6;
            if (c->ilen > 0 && c->state == C_ATTACH && c->ipart > 0)
                pf[np] = (struct pollfd){master, POLLOUT, 0}, who[np] = i, what[np++] = 6;
        }
        int n = poll(pf, (nfds_t)np, 1000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == ENOMEM) {
            /* No memory for now: the service goes on after a pause. */
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (n < 0) {
            int e = errno;
            close(lfd);
            lfd = -1;
            unserved(a, h, tpid, master, e, code, sig);
            break;
        }
        for (int k = 0; n > 0 && k < np; k++) {
            short re = pf[k].revents;
            if (re == 0)
                continue;
            client *c = who[k] >= 0 ? &a->c[who[k]] : NULL;
            switch (what[k]) {
            case 0: {
                struct signalfd_siginfo ssi;
                while (read(sfd, &ssi, sizeof ssi) > 0) {
                }
                break;
            }
            case 1:
                accept_one(a, lfd);
                break;
            case 2:
                if (read_terminal(a, master, h, room) < 0)
                    term_open = 0; /* every holder of its other side closed it */
                break;
            case 3:
                if (!connected(c))
                    break;
                if ((re & POLLOUT) && client_flush(c) < 0) {
                    client_close(c);
                    break;
                }
                if (re & (POLLIN | POLLHUP | POLLERR)) {
                    ssize_t r = read(c->fd, c->ibuf + c->ilen, IBUF - c->ilen);
                    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                        client_close(c);
                        break;
                    }
                    if (r > 0)
                        c->ilen += (size_t)r;
                }
                client_input(h, a, tpid, master, c);
                break;
            case 4:
            case 5:
                if (c->state == C_EXEC)
                    client_fill(a, c, what[k] == 4, what[k] == 5);
                break;
            case 6:
                if (connected(c))
                    client_input(h, a, tpid, master, c);
                break;
            }
        }
    }
    finish(a, master, h, *code, *sig);
    reap(a, h, tpid);
    close(sfd);
    if (lfd >= 0)
        close(lfd);
    close(master);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    munmap(a, sizeof *a);
    return 0;
}

/* ======================================================================== */
/* The opening side                                                          */
/* ======================================================================== */

/* Reads exactly n bytes (and a passed descriptor, if any, into *passed). */
static int recv_exact(int fd, void *buf, size_t n, int *passed) {
    size_t got = 0;
    while (got < n) {
        fdbuf u;
        struct iovec iov = {(char *)buf + got, n - got};
        struct msghdr mh;
        fd_msghdr(&mh, &iov, &u);
        ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                int got_fd;
                memcpy(&got_fd, CMSG_DATA(cm), sizeof got_fd);
                if (passed != NULL && *passed < 0)
                    *passed = got_fd;
                else
                    close(got_fd);
            }
        }
        got += (size_t)r;
    }
    return 0;
}

int gpx__sessd_request(const gp_session_req *req, uint8_t *msg, size_t *len_out, char *err,
                       size_t errlen) {
    size_t len = 0;
    int type;
    if (req->kind == GP_SESSION_ATTACH) {
        type = GP_CH_OPEN_ATTACH;
        gp_ch_put16(msg + GP_CH_HEAD, req->rows);
        gp_ch_put16(msg + GP_CH_HEAD + 2, req->cols);
        len = 4;
    } else if (req->kind == GP_SESSION_EXEC) {
        type = GP_CH_OPEN_EXEC;
        gp_ch_put16(msg + GP_CH_HEAD, req->rows);
        gp_ch_put16(msg + GP_CH_HEAD + 2, req->cols);
        msg[GP_CH_HEAD + 4] = req->tty ? 1 : 0;
        len = 5;
        int argc = 0;
        for (; req->argv != NULL && req->argv[argc] != NULL; argc++) {
            size_t n = strlen(req->argv[argc]) + 1;
            if (argc >= GPX__SESSD_MAX_ARGS || len + n > GP_CH_PAYLOAD_MAX) {
                gp_errf(err, errlen, "command: more than %d arguments or 64 KiB",
                        GPX__SESSD_MAX_ARGS);
                return GP_EINVAL;
            }
            memcpy(msg + GP_CH_HEAD + len, req->argv[argc], n);
            len += n;
        }
        if (argc == 0 || req->argv[0][0] == '\0') {
            gp_errf(err, errlen, "command: a command to run is needed");
            return GP_EINVAL;
        }
    } else if (req->kind == GP_SESSION_PORT) {
        if (req->port < 1 || req->port > 65535) {
            gp_errf(err, errlen, "port: must be from 1 to 65535");
            return GP_EINVAL;
        }
        type = GP_CH_OPEN_PORT;
        gp_ch_put16(msg + GP_CH_HEAD, (uint32_t)req->port);
        len = 2;
    } else if (req->kind == GP_SESSION_NOTICE) {
        len = req->text != NULL ? strlen(req->text) : 0;
        if (len == 0 || len > GP_SESSION_NOTICE_MAX) {
            gp_errf(err, errlen, "text: 1 to %d bytes", GP_SESSION_NOTICE_MAX);
            return GP_EINVAL;
        }
        type = GP_CH_NOTICE;
        memcpy(msg + GP_CH_HEAD, req->text, len);
    } else {
        gp_errf(err, errlen, "kind: not a session kind");
        return GP_EINVAL;
    }
    gp_ch_head(msg, type, len);
    *len_out = GP_CH_HEAD + len;
    return 0;
}

int gpx__sessd_handshake(int fd, const uint8_t *msg, size_t len, int *passed_out, char *err,
                         size_t errlen) {
    int passed = -1;
    uint8_t head[GP_CH_HEAD];
    char text[256];
    uint32_t n = 0;
    int rc = 0;
    *passed_out = -1;
    /* The answer is read even when the request could not be sent: a server
     * that refuses (too many sessions) answers at once and closes without
     * reading it, and a request sent only after that fails (EPIPE), the
     * answer still waiting to be read. */
    int sent = send(fd, msg, len, MSG_NOSIGNAL) == (ssize_t)len;
    if (recv_exact(fd, head, sizeof head, &passed) < 0 || (!sent && head[0] != GP_CH_ERROR)) {
        gp_errf(err, errlen, "the task's session endpoint did not answer");
        rc = GP_EIO;
    } else if ((n = gp_ch_get32(head + 1)) >= sizeof text || recv_exact(fd, text, n, &passed) < 0) {
        gp_errf(err, errlen, "the task's session endpoint answered a malformed message");
        rc = GP_EIO;
    } else if (head[0] == GP_CH_ERROR) {
        text[n] = '\0';
        gp_errf(err, errlen, "%s", text);
        rc = strstr(text, "too many") != NULL ? GP_ELIMIT : GP_EIO;
    } else if (head[0] != GP_CH_READY) {
        gp_errf(err, errlen, "the task's session endpoint answered a malformed message");
        rc = GP_EIO;
    }
    if (rc < 0) {
        if (passed >= 0)
            close(passed);
        return rc;
    }
    *passed_out = passed;
    return 0;
}
