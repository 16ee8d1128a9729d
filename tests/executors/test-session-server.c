/*
 * test-session-server.c — the session server of an interactive task
 * (session-server.c), run directly as root over a stand-in task whose user
 * is TASK_UID, as the local executor's supervisor runs it.
 *
 * A SIGNAL from an attached client goes to the terminal's foreground process
 * group, which the task chooses. The kernel keeps that group's number after
 * its last member has ended, and the number may by then be another user's
 * group: the server sends the signal with the task user's credentials, so it
 * reaches only what that user could signal. The stand-in task puts a process
 * of its user and one of root's in one foreground group: the first gets the
 * signal, root's does not (it did when the server sent it as root).
 *
 * A command exec'd into the task whose client goes away is killed and
 * reaped, and so are more of them than a task has sessions, each ending a
 * while after its kill (the test holds the server's kills back). A poll of the server's that fails
 * (no memory) does not end its service: it went on to report an exit status it had never read. One
 * that fails for good (any other error) ends the service, not the task: the server says why in the
 * task's log, closes its clients and reads the terminal on until the task ends (it retried the poll
 * for ever, every session hanging meanwhile).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_channel.h"
#include "executors/session-server.h"
#include "gptest.h"
#include "helpers.h"

#define TASK_UID 65534
#define SOCK     "s.sock"

/* The task's log: written to the descriptor ctx points to, if any. */
static void host_log(void *ctx, const char *buf, size_t n) {
    if (ctx != NULL)
        (void)!write(*(int *)ctx, buf, n);
}

/* Runs argv on in, out and err in a session of its own (the task's
 * namespaces and user are the executors' business, not the server's). */
static void host_exec(void *ctx, pid_t tpid, int in, int out, int err, int tty, char *const *argv) {
    (void)ctx, (void)tpid, (void)tty;
    setsid();
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(127);
    execvp(argv[0], argv);
    _exit(127);
}

/* The server's polls fail with fail_errno (ENOMEM unless set) while this
 * count is above 0, or for ever while it is -1: this poll stands in for the
 * C library's in the whole test program. */
static int fail_polls, fail_errno;

int poll(struct pollfd *fds, nfds_t n, int timeout) {
    if (fail_polls != 0) {
        if (fail_polls > 0)
            fail_polls--;
        errno = fail_errno != 0 ? fail_errno : ENOMEM;
        return -1;
    }
    struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000};
    return ppoll(fds, n, timeout < 0 ? NULL : &ts, NULL);
}

/* While set, the server's kills are not sent: its commands end only when
 * they end by themselves, as ones stuck in the kernel do some time after
 * their SIGKILL. This kill stands in for the C library's in the whole test
 * program. */
static int hold_kills;

int kill(pid_t pid, int sig) {
    if (hold_kills)
        return 0;
    return (int)syscall(SYS_kill, pid, sig);
}

/* Waits to be killed. */
static void hold(void) {
    for (;;)
        pause();
}

/* The stand-in task, a session leader on the terminal slave: a process of
 * root's (rootp) leads the terminal's foreground group and one of TASK_UID's
 * (userp) joins it; once userp is TASK_UID's, the pids of the task, rootp
 * and userp go to report. Each blocks SIGTERM from its start, so that one
 * sent stays pending, for the test to see. */
static void task(int slave, int report) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    setsid();
    if (ioctl(slave, TIOCSCTTY, 0) < 0)
        _exit(1);
    pid_t rootp = fork();
    if (rootp == 0) {
        setpgid(0, 0);
        hold();
    }
    setpgid(rootp, rootp);
    signal(SIGTTOU, SIG_IGN);
    if (rootp < 0 || tcsetpgrp(slave, rootp) < 0)
        _exit(1);
    pid_t userp = fork();
    if (userp == 0) {
        if (setpgid(0, rootp) < 0 || setgroups(0, NULL) < 0 || setgid(TASK_UID) < 0 ||
            setuid(TASK_UID) < 0)
            _exit(1);
        pid_t pids[3] = {getppid(), rootp, getpid()};
        (void)!write(report, pids, sizeof pids);
        hold();
    }
    for (;;)
        pause();
}

/* A stand-in task and its server. */
typedef struct stand {
    const char *dir; /* where the server listens, on SOCK */
    int fail_polls;  /* how many of the server's polls fail first (-1: all) */
    int fail_errno;  /* and with which error (0: ENOMEM) */
    int log;         /* where the task's log goes (0: nowhere) */
    int hold_kills;  /* the server's kills are not sent */
    pid_t server, tpid;
    pid_t pids[2]; /* the task's two processes (see task) */
} stand;

/* Forks the server of a stand-in task; its exit status is 100 + the signal
 * that ended the task, or the task's exit code. */
static void start(stand *st) {
    st->dir = gpt_tmpdir();
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    st->server = fork();
    ck_assert_int_ge(st->server, 0);
    if (st->server == 0) {
        close(p[0]);
        int master, slave, lfd;
        if (gpx__sessd_listen(st->dir, SOCK, TASK_UID, &master, &slave, &lfd) < 0)
            _exit(1);
        pid_t t = fork();
        if (t == 0) {
            close(master);
            close(lfd);
            task(slave, p[1]);
        }
        close(p[1]);
        close(slave);
        gpx__sessd_host h = {host_log, host_exec, st->log > 0 ? &st->log : NULL, TASK_UID, 0};
        int code, sig;
        fail_polls = st->fail_polls;
        fail_errno = st->fail_errno;
        hold_kills = st->hold_kills;
        gpx__sessd_serve(&h, t, master, lfd, &code, &sig);
        waitpid(t, NULL, 0);
        _exit(sig != 0 ? 100 + sig : code);
    }
    close(p[1]);
    pid_t pids[3];
    ck_assert_int_eq(read(p[0], pids, sizeof pids), (ssize_t)sizeof pids);
    st->tpid = pids[0];
    st->pids[0] = pids[1];
    st->pids[1] = pids[2];
    close(p[0]);
}

/* Kills the task; the server's exit status. */
static int stop(stand *st) {
    kill(-st->pids[0], SIGKILL);
    kill(st->tpid, SIGKILL);
    int status;
    ck_assert_int_eq(waitpid(st->server, &status, 0), st->server);
    gpt_rmrf(st->dir);
    return status;
}

/* A step of a wait on a condition. */
static void nap(void) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* A connection to the server's socket in dir, or -1 if none is made. */
static int dial(const char *dir) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, SOCK);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        return fd;
    close(fd);
    return -1;
}

/* Opens a session on fd, connected to a server, with req: 0 once it
 * answered READY, or the error with its reason in err. */
static int handshake(int fd, const gp_session_req *req, char *err, size_t errlen) {
    static uint8_t msg[GP_CH_HEAD + GP_CH_PAYLOAD_MAX];
    size_t len = 0;
    ck_assert_int_eq(gpx__sessd_request(req, msg, &len, err, errlen), 0);
    int passed = -1;
    return gpx__sessd_handshake(fd, msg, len, &passed, err, errlen);
}

/* A session to the server on dir opened with req: its descriptor once it
 * answered READY, or -1 if it was refused because the task has too many
 * sessions (any other error fails the test). */
static int try_session(const char *dir, const gp_session_req *req) {
    int fd = dial(dir);
    ck_assert_int_ge(fd, 0);
    char err[256];
    int rc = handshake(fd, req, err, sizeof err);
    if (rc < 0) {
        ck_assert_msg(rc == GP_ELIMIT && strcmp(err, "too many sessions in this task") == 0,
                      "a session was refused with %d: %s", rc, err);
        close(fd);
        return -1;
    }
    return fd;
}

/* A session to the server on dir, opened with req, once it answered READY. */
static int open_session(const char *dir, const gp_session_req *req) {
    int fd = try_session(dir, req);
    ck_assert_msg(fd >= 0, "the session was refused");
    return fd;
}

/* Whether signal sig is pending for process pid (its own or its group's). */
static int pending(pid_t pid, int sig) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int found = 0;
    while (fgets(buf, sizeof buf, f) != NULL) {
        unsigned long long mask;
        if ((sscanf(buf, "SigPnd: %llx", &mask) == 1 || sscanf(buf, "ShdPnd: %llx", &mask) == 1) &&
            (mask & (1ULL << (sig - 1))) != 0)
            found = 1;
    }
    fclose(f);
    return found;
}

START_TEST(test_signal_is_sent_as_the_task_user) {
    if (geteuid() != 0)
        GP_TEST_SKIP("not root: the server runs as root only in a root daemon's supervisor");
    stand st = {0};
    start(&st);
    gp_session_req req = {GP_SESSION_ATTACH, 24, 80, 0, NULL, 0, NULL};
    int fd = open_session(st.dir, &req);
    uint8_t msg[GP_CH_HEAD + 1];
    gp_ch_head(msg, GP_CH_SIGNAL, 1);
    msg[GP_CH_HEAD] = SIGTERM;
    ck_assert_int_eq(send(fd, msg, sizeof msg, MSG_NOSIGNAL), (ssize_t)sizeof msg);
    /* Both processes get the signal from one kill() of their group, if at
     * all: once the user's has it, root's would have it too. */
    int got = 0;
    for (int i = 0; i < GPT_WAIT_MS / 10 && !(got = pending(st.pids[1], SIGTERM)); i++)
        nap();
    ck_assert_msg(got, "the task user's process in the foreground group got no SIGTERM");
    ck_assert_msg(!pending(st.pids[0], SIGTERM),
                  "root's process in the foreground group got the client's SIGTERM");
    close(fd);
    stop(&st);
}
END_TEST

/* The server's children other than the task tpid: its commands, running
 * or zombies. */
static int others(pid_t server, pid_t tpid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)server, (int)server);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0, pid;
    while (fscanf(f, "%d", &pid) == 1)
        n += pid != tpid;
    fclose(f);
    return n;
}

/* The server's children other than the task once none is left, or at the
 * end of the wait: how many are left. */
static int others_left(const stand *st) {
    int n = -1;
    for (int i = 0; i < GPT_WAIT_MS / 10 && (n = others(st->server, st->tpid)) != 0; i++)
        nap();
    return n;
}

/* A command whose client went away while it ran is killed, and reaped once
 * it ends, on a server that reaps only its exec'd commands (the Slurm
 * executor's): it was reaped only if it had ended at once, and otherwise
 * stayed a zombie until the task ended; one whose client went away before
 * its setsid was not even killed. */
START_TEST(test_a_dropped_command_is_reaped) {
    if (geteuid() != 0)
        GP_TEST_SKIP("not root: the stand-in task has a process of another user's");
    stand st = {0};
    start(&st);
    const char *const argv[] = {"sleep", "300", NULL};
    gp_session_req req = {GP_SESSION_EXEC, 0, 0, 0, argv, 0, NULL};
    for (int i = 0; i < 8; i++)
        close(open_session(st.dir, &req));
    int n = others_left(&st);
    ck_assert_msg(n == 0, "%d of 8 dropped commands were left (running or zombies)", n);
    stop(&st);
}
END_TEST

/* More commands whose clients went away than a task has sessions, each
 * ending only a while after its kill: every one is reaped once it ends, on
 * a server that reaps only its exec'd commands. Those dropped while the
 * list of dropped commands was full were waited for once, at their kill,
 * and stayed zombies. */
START_TEST(test_more_dropped_commands_than_sessions_are_reaped) {
    if (geteuid() != 0)
        GP_TEST_SKIP("not root: the stand-in task has a process of another user's");
    stand st = {0};
    st.hold_kills = 1;
    start(&st);
    const char *const argv[] = {"sleep", "1", NULL};
    gp_session_req req = {GP_SESSION_EXEC, 0, 0, 0, argv, 0, NULL};
    int dropped = 0;
    for (int i = 0; i < GPT_WAIT_MS / 10 && dropped < GPX__SESSD_CLIENTS + 16; i++) {
        int fd = try_session(st.dir, &req);
        if (fd < 0) {
            nap(); /* the task holds as many as it may: until some end */
            continue;
        }
        close(fd);
        dropped++;
    }
    ck_assert_int_eq(dropped, GPX__SESSD_CLIENTS + 16);
    int n = others_left(&st);
    ck_assert_msg(n == 0, "%d of %d dropped commands were left (running or zombies)", n, dropped);
    stop(&st);
}
END_TEST

/* A task that has as many sessions as it may refuses one more with its
 * reason, GP_ELIMIT, even to an opener whose request comes only after the
 * server has answered and closed: the opener's send then failed (EPIPE),
 * and it said that the endpoint did not answer. */
START_TEST(test_a_refused_session_gets_its_reason) {
    if (geteuid() != 0)
        GP_TEST_SKIP("not root: the stand-in task has a process of another user's");
    stand st = {0};
    start(&st);
    gp_session_req req = {GP_SESSION_ATTACH, 24, 80, 0, NULL, 0, NULL};
    int held[GPX__SESSD_CLIENTS];
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++)
        held[i] = open_session(st.dir, &req);
    int fd = dial(st.dir);
    ck_assert_int_ge(fd, 0);
    /* The server's refusal, then its close, before the request is sent. */
    struct pollfd pf = {fd, POLLRDHUP, 0};
    ck_assert_int_eq(poll(&pf, 1, GPT_WAIT_MS), 1);
    char err[256];
    int rc = handshake(fd, &req, err, sizeof err);
    ck_assert_msg(rc == GP_ELIMIT && strcmp(err, "too many sessions in this task") == 0,
                  "the session was refused with %d: %s", rc, err);
    close(fd);
    for (int i = 0; i < GPX__SESSD_CLIENTS; i++)
        close(held[i]);
    stop(&st);
}
END_TEST

START_TEST(test_a_failed_poll_does_not_end_the_service) {
    if (geteuid() != 0)
        GP_TEST_SKIP("not root: the stand-in task has a process of another user's");
    stand st = {0};
    st.fail_polls = 3;
    start(&st);
    gp_session_req req = {GP_SESSION_ATTACH, 24, 80, 0, NULL, 0, NULL};
    close(open_session(st.dir, &req));
    int status = stop(&st);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 100 + SIGKILL,
                  "the server reported wait status %#x, not the task's end by SIGKILL", status);
}
END_TEST

START_TEST(test_a_poll_that_fails_for_good_ends_the_service) {
    if (geteuid() != 0)
        GP_TEST_SKIP("not root: the stand-in task has a process of another user's");
    int logp[2];
    ck_assert_int_eq(pipe2(logp, O_NONBLOCK), 0);
    stand st = {0};
    st.fail_polls = -1;
    st.fail_errno = EINVAL;
    st.log = logp[1];
    start(&st);
    close(logp[1]);
    char log[512];
    size_t len = 0;
    log[0] = '\0';
    for (int i = 0; i < GPT_WAIT_MS / 10 && strstr(log, "argument\r\n") == NULL; i++) {
        ssize_t n = read(logp[0], log + len, sizeof log - 1 - len);
        if (n > 0)
            log[len += (size_t)n] = '\0';
        else
            nap();
    }
    ck_assert_msg(strstr(log, "sessions stopped: poll: invalid argument\r\n") != NULL,
                  "the task's log does not say that its sessions stopped: \"%s\"", log);
    /* The service is over: the socket is no longer served, the task runs. */
    ck_assert_int_lt(dial(st.dir), 0);
    ck_assert_int_eq(kill(st.tpid, 0), 0);
    int status = stop(&st);
    close(logp[0]);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 100 + SIGKILL,
                  "the server reported wait status %#x, not the task's end by SIGKILL", status);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_signal_is_sent_as_the_task_user);
    tcase_add_test(tc, test_a_dropped_command_is_reaped);
    tcase_add_test(tc, test_more_dropped_commands_than_sessions_are_reaped);
    tcase_add_test(tc, test_a_refused_session_gets_its_reason);
    tcase_add_test(tc, test_a_failed_poll_does_not_end_the_service);
    tcase_add_test(tc, test_a_poll_that_fails_for_good_ends_the_service);
}

GP_TEST_MAIN("executors/session-server", add_tests)
