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
 */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

static void host_log(void *ctx, const char *buf, size_t n) {
    (void)ctx, (void)buf, (void)n;
}

static void host_exec(void *ctx, pid_t tpid, int in, int out, int err, int tty, char *const *argv) {
    (void)ctx, (void)tpid, (void)in, (void)out, (void)err, (void)tty, (void)argv;
    _exit(127);
}

/* Waits to be killed. */
static void hold(void) {
    for (;;)
        pause();
}

/* The stand-in task, a session leader on the terminal slave: a process of
 * root's (rootp) leads the terminal's foreground group and one of TASK_UID's
 * (userp) joins it; their pids go to report. Each blocks SIGTERM from its
 * start, so that one sent stays pending, for the test to see. */
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
    pid_t userp = fork();
    if (userp == 0) {
        setpgid(0, rootp);
        if (setgroups(0, NULL) < 0 || setgid(TASK_UID) < 0 || setuid(TASK_UID) < 0)
            _exit(1);
        hold();
    }
    setpgid(userp, rootp);
    signal(SIGTTOU, SIG_IGN);
    if (rootp < 0 || userp < 0 || tcsetpgrp(slave, rootp) < 0)
        _exit(1);
    pid_t pids[2] = {rootp, userp};
    (void)!write(report, pids, sizeof pids);
    for (;;)
        pause();
}

/* Forks the server of a stand-in task on dir/SOCK; *server its pid,
 * pids[] the task's two processes (see task), *tpid the task. */
static void start(const char *dir, pid_t *server, pid_t *tpid, pid_t pids[2]) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    *server = fork();
    ck_assert_int_ge(*server, 0);
    if (*server == 0) {
        close(p[0]);
        int master, slave, lfd;
        if (gpx__sessd_listen(dir, SOCK, TASK_UID, &master, &slave, &lfd) < 0)
            _exit(1);
        pid_t t = fork();
        if (t == 0) {
            close(master);
            close(lfd);
            task(slave, p[1]);
        }
        (void)!write(p[1], &t, sizeof t);
        close(p[1]);
        close(slave);
        gpx__sessd_host h = {host_log, host_exec, NULL, TASK_UID};
        int code, sig;
        gpx__sessd_serve(&h, t, master, lfd, &code, &sig);
        waitpid(t, NULL, 0);
        _exit(0);
    }
    close(p[1]);
    ck_assert_int_eq(read(p[0], tpid, sizeof *tpid), (ssize_t)sizeof *tpid);
    ck_assert_int_eq(read(p[0], pids, 2 * sizeof *pids), (ssize_t)(2 * sizeof *pids));
    close(p[0]);
}

static void stop(pid_t server, pid_t tpid, pid_t group) {
    kill(-group, SIGKILL);
    kill(tpid, SIGKILL);
    ck_assert_int_eq(waitpid(server, NULL, 0), server);
}

/* An attach session to the server on dir, once it answered READY. */
static int open_attach(const char *dir) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, SOCK);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    uint8_t msg[GP_CH_HEAD + 4];
    gp_ch_head(msg, GP_CH_OPEN_ATTACH, 4);
    gp_ch_put16(msg + GP_CH_HEAD, 24);
    gp_ch_put16(msg + GP_CH_HEAD + 2, 80);
    ck_assert_int_eq(send(fd, msg, sizeof msg, MSG_NOSIGNAL), (ssize_t)sizeof msg);
    uint8_t head[GP_CH_HEAD];
    ck_assert_int_eq(recv(fd, head, sizeof head, MSG_WAITALL), (ssize_t)sizeof head);
    ck_assert_int_eq(head[0], GP_CH_READY);
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
    const char *dir = gpt_tmpdir();
    pid_t server, tpid, pids[2];
    start(dir, &server, &tpid, pids);
    int fd = open_attach(dir);
    uint8_t msg[GP_CH_HEAD + 1];
    gp_ch_head(msg, GP_CH_SIGNAL, 1);
    msg[GP_CH_HEAD] = SIGTERM;
    ck_assert_int_eq(send(fd, msg, sizeof msg, MSG_NOSIGNAL), (ssize_t)sizeof msg);
    /* Both processes get the signal from one kill() of their group, if at
     * all: once the user's has it, root's would have it too. */
    int got = 0;
    for (int i = 0; i < GPT_WAIT_MS / 10 && !got; i++) {
        got = pending(pids[1], SIGTERM);
        if (!got) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    ck_assert_msg(got, "the task user's process in the foreground group got no SIGTERM");
    ck_assert_msg(!pending(pids[0], SIGTERM),
                  "root's process in the foreground group got the client's SIGTERM");
    close(fd);
    stop(server, tpid, pids[0]);
    gpt_rmrf(dir);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_signal_is_sent_as_the_task_user);
}

GP_TEST_MAIN("executors/session-server", add_tests)
