/*
 * test-slurm-relay.c — the relay of gpupool-slurm-session (`connect NAME`),
 * without a cluster: its standard input and output are one non-blocking
 * socket, as srun's are, whose other end this test holds as gpupoold's
 * executor would; a stand-in session server listens on NAME's socket and
 * passes the relay a socketpair as a port's connection, whose other end
 * this test holds as the port.
 *
 *   - A read of its standard input that fails with EAGAIN (a non-blocking
 *     socket after a wake-up with nothing to read; stdin-eagain.so makes
 *     every other read fail so) is not the input's end: the upload reaches
 *     the port whole, then its end. It ended the upload at the first.
 *   - An input that ended before the server passed the port (the relay
 *     shut its write side to the server) ends the port's upload once the
 *     port is passed: the port was never half-closed, and a port waiting
 *     for its input's end never answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_channel.h"
#include "gptest.h"
#include "helpers.h"

typedef struct relay {
    char sock[108];
    int lfd;   /* the stand-in server's listening socket */
    int ours;  /* our end of the relay's standard input and output */
    pid_t pid; /* the relay */
} relay;

static char build[PATH_MAX / 2];

static void find_build(void) {
    ssize_t n = readlink("/proc/self/exe", build, sizeof build - 1);
    ck_assert_int_gt(n, 0);
    build[n] = '\0';
    *strrchr(build, '/') = '\0'; /* build/tests/executors */
}

/* Waits up to GPT_WAIT_MS for fd to be readable: 1 if it is. */
static int readable(int fd) {
    struct pollfd pf = {fd, POLLIN, 0};
    int r;
    do {
        r = poll(&pf, 1, GPT_WAIT_MS);
    } while (r < 0 && errno == EINTR);
    return r == 1;
}

/* Reads exactly n bytes from fd (each wait bounded): 0, or -1 if they did
 * not come (fd ended or went quiet). */
static int read_n(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        if (!readable(fd))
            return -1;
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* 1 once fd reads its end (what came before it is appended to buf, which
 * has room for len), 0 if it did not end within GPT_WAIT_MS of quiet. */
static int read_to_end(int fd, char *buf, size_t len) {
    size_t have = strlen(buf);
    while (readable(fd)) {
        ssize_t r = read(fd, buf + have, len - 1 - have);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return r == 0;
        have += (size_t)r;
        buf[have] = '\0';
    }
    return 0;
}

/* Starts the relay on a fresh name, with GPX_TEST_STDIN_EAGAIN=eagain_from
 * and stdin-eagain.so preloaded when eagain_from > 0. */
static void relay_start(relay *rl, int eagain_from) {
    static int seq;
    char dir[40], name[40];
    find_build();
    snprintf(dir, sizeof dir, "/tmp/gpupool-session.%u", (unsigned)getuid());
    ck_assert(mkdir(dir, 0700) == 0 || errno == EEXIST);
    snprintf(name, sizeof name, "gp-relaytest-%d-%d", (int)getpid(), seq++);
    snprintf(rl->sock, sizeof rl->sock, "%s/%s.sock", dir, name);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", rl->sock);
    unlink(rl->sock);
    rl->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(rl->lfd, 0);
    ck_assert_int_eq(bind(rl->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(rl->lfd, 4), 0);
    int sp[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
    char prog[PATH_MAX], lib[PATH_MAX], from[16];
    snprintf(prog, sizeof prog, "%s/../../gpupool-slurm-session", build);
    snprintf(lib, sizeof lib, "%s/stdin-eagain.so", build);
    snprintf(from, sizeof from, "%d", eagain_from);
    rl->pid = fork();
    ck_assert_int_ge(rl->pid, 0);
    if (rl->pid == 0) {
        dup2(sp[1], 0);
        dup2(sp[1], 1);
        fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK); /* srun's are */
        if (eagain_from > 0) {
            setenv("GPX_TEST_STDIN_EAGAIN", from, 1);
            setenv("LD_PRELOAD", lib, 1);
        }
        execl(prog, prog, "connect", name, (char *)NULL);
        _exit(127);
    }
    close(sp[1]);
    rl->ours = sp[0];
}

/* The stand-in server: takes the relay's connection and the open message
 * the test sent through it; returns the connection. */
static int server_accept(relay *rl) {
    ck_assert_msg(readable(rl->lfd), "the relay did not connect to the server");
    int c = accept4(rl->lfd, NULL, NULL, SOCK_CLOEXEC);
    ck_assert_int_ge(c, 0);
    uint8_t open[GP_CH_HEAD + 2];
    ck_assert_msg(read_n(c, open, sizeof open) == 0, "the open message did not reach the server");
    ck_assert_int_eq(open[0], GP_CH_OPEN_PORT);
    return c;
}

/* The server passes the port's connection with a READY and closes; the
 * test, as gpupoold, reads the READY. Returns the port's end. */
static int server_pass_port(relay *rl, int c) {
    int port[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, port), 0);
    uint8_t head[GP_CH_HEAD];
    gp_ch_head(head, GP_CH_READY, 0);
    struct iovec iov = {head, sizeof head};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = u.buf;
    mh.msg_controllen = sizeof u.buf;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &port[1], sizeof(int));
    ck_assert_int_eq(sendmsg(c, &mh, MSG_NOSIGNAL), (ssize_t)sizeof head);
    close(port[1]);
    close(c);
    uint8_t ready[GP_CH_HEAD];
    ck_assert_msg(read_n(rl->ours, ready, sizeof ready) == 0, "no READY came through the relay");
    ck_assert_int_eq(ready[0], GP_CH_READY);
    return port[0];
}

static void send_open(relay *rl) {
    uint8_t open[GP_CH_HEAD + 2];
    gp_ch_head(open, GP_CH_OPEN_PORT, 2);
    gp_ch_put16(open + GP_CH_HEAD, 8888);
    ck_assert_int_eq(send(rl->ours, open, sizeof open, MSG_NOSIGNAL), (ssize_t)sizeof open);
}

/* The port answers and ends; the test, as gpupoold, reads the answer as a
 * DATA message, then the port's EOF, and the relay ends with status 0. */
static void port_answers(relay *rl, int port) {
    ck_assert_int_eq(send(port, "bye", 3, MSG_NOSIGNAL), 3);
    close(port);
    uint8_t msg[GP_CH_HEAD + 3];
    ck_assert_msg(read_n(rl->ours, msg, sizeof msg) == 0, "the port's answer did not come");
    ck_assert_int_eq(msg[0], GP_CH_DATA);
    ck_assert_int_eq(memcmp(msg + GP_CH_HEAD, "bye", 3), 0);
    ck_assert_msg(read_n(rl->ours, msg, GP_CH_HEAD) == 0, "the port's end did not come");
    ck_assert_int_eq(msg[0], GP_CH_EOF);
    close(rl->ours);
    int st = 0;
    for (int i = 0; i < GPT_WAIT_MS / 10 && waitpid(rl->pid, &st, WNOHANG) == 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the relay did not end well (%d)", st);
    close(rl->lfd);
    unlink(rl->sock);
}

START_TEST(test_eagain_is_not_the_end) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GP_TEST_SKIP("a sanitizer build's relay cannot take a preloaded library");
#endif
    relay rl;
    /* The open message is the first read; every read of the upload and of
     * its end comes after one that fails with EAGAIN. */
    relay_start(&rl, 2);
    send_open(&rl);
    int port = server_pass_port(&rl, server_accept(&rl));
    char got[256] = "";
    static const char *const parts[] = {"one ", "two ", "three"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(send(rl.ours, parts[i], strlen(parts[i]), MSG_NOSIGNAL),
                         (ssize_t)strlen(parts[i]));
        /* Each part is through before the next is sent: one read each. */
        size_t want = strlen(got) + strlen(parts[i]);
        while (strlen(got) < want) {
            ck_assert_msg(readable(port), "the port got '%s' of the upload, then nothing", got);
            size_t have = strlen(got);
            ssize_t r = read(port, got + have, sizeof got - 1 - have);
            ck_assert_msg(r > 0, "the upload ended after '%s' (%s)", got,
                          r == 0 ? "its end" : strerror(errno));
            got[have + (size_t)r] = '\0';
        }
    }
    shutdown(rl.ours, SHUT_WR);
    ck_assert_msg(read_to_end(port, got, sizeof got), "the upload did not end");
    ck_assert_str_eq(got, "one two three");
    port_answers(&rl, port);
}
END_TEST

START_TEST(test_input_ended_before_the_port) {
    relay rl;
    relay_start(&rl, 0);
    send_open(&rl);
    shutdown(rl.ours, SHUT_WR);
    int c = server_accept(&rl);
    /* The relay has shut its write side to the server... */
    char none[8] = "";
    ck_assert_msg(read_to_end(c, none, sizeof none), "the relay did not end its input");
    /* ...before the server passes it the port. */
    int port = server_pass_port(&rl, c);
    char got[64] = "";
    ck_assert_msg(read_to_end(port, got, sizeof got), "the port's upload never ended");
    ck_assert_str_eq(got, "");
    port_answers(&rl, port);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_eagain_is_not_the_end);
    tcase_add_test(tc, test_input_ended_before_the_port);
}

GP_TEST_MAIN("executors/slurm-relay", add_tests)
