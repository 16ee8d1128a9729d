/*
 * test-session-open.c — how long the daemon's side of the local executor
 * (gpx__sess_open) waits for a task's supervisor, against a stand-in
 * supervisor listening on a task directory's session socket. The supervisor
 * answers opens one after another, so under 200 opens at once on a loaded
 * machine a few waited more than 5 s and were refused: an open now waits up
 * to GPX__SESS_OPEN_S (15 s) and one answered after 7 s succeeds, while a
 * notice, which the scheduling loop sends, still gives up after about
 * GPX__SESS_NOTICE_S (5 s) so that the loop is never held long.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_channel.h"
#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"

#define LATE_S 7 /* the stand-in supervisor's answer comes this late */

typedef struct standin {
    char dir[512];
    int lfd;
    int answer; /* 1: READY after LATE_S; 0: never (held until closed) */
    pthread_t th;
} standin;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Takes one connection and its open message; answers READY LATE_S seconds
 * after the connection, or holds it unanswered until the caller gave up. */
static void *serve(void *arg) {
    standin *s = arg;
    int c = accept(s->lfd, NULL, NULL);
    if (c < 0)
        return NULL;
    double t0 = now_s();
    uint8_t buf[4096];
    (void)!recv(c, buf, sizeof buf, 0);
    if (s->answer) {
        struct timespec ts = {LATE_S, 0};
        nanosleep(&ts, NULL);
        uint8_t head[GP_CH_HEAD];
        gp_ch_head(head, GP_CH_READY, 0);
        (void)!send(c, head, sizeof head, MSG_NOSIGNAL);
    } else {
        /* Until the caller closes its end (it gave up), at most 60 s. */
        while (now_s() - t0 < 60 && recv(c, buf, sizeof buf, 0) > 0) {
        }
    }
    close(c);
    return NULL;
}

static void standin_start(standin *s, const char *name, int answer) {
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s/%s", gpt_tmpdir(), name);
    ck_assert_int_eq(mkdir(s->dir, 0700), 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    int n = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", s->dir, GPX__SESS_SOCK);
    ck_assert_int_lt(n, (int)sizeof sa.sun_path);
    s->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(s->lfd, 0);
    ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(s->lfd, 4), 0);
    s->answer = answer;
    ck_assert_int_eq(pthread_create(&s->th, NULL, serve, s), 0);
}

static void standin_stop(standin *s) {
    pthread_join(s->th, NULL);
    close(s->lfd);
}

START_TEST(test_open_waits_for_a_late_supervisor) {
    standin s;
    standin_start(&s, "late", 1);
    const char *const argv[] = {"true", NULL};
    gp_session_req req = {GP_SESSION_EXEC, 24, 80, 0, argv, 0, NULL};
    int fd = -1;
    char err[256] = "";
    double t0 = now_s();
    int rc = gpx__sess_open(s.dir, &req, &fd, err, sizeof err);
    double took = now_s() - t0;
    printf("# an open answered %d s late: rc %d after %.1f s (%s)\n", LATE_S, rc, took, err);
    ck_assert_msg(rc == 0, "an open answered after %d s was refused after %.1f s: %s", LATE_S, took,
                  err);
    ck_assert_int_ge(fd, 0);
    close(fd);
    standin_stop(&s);
}
END_TEST

START_TEST(test_notice_keeps_its_short_limit) {
    standin s;
    standin_start(&s, "mute", 0);
    gp_session_req req = {GP_SESSION_NOTICE, 0, 0, 0, NULL, 0, "idle: suspended"};
    int fd = -1;
    char err[256] = "";
    double t0 = now_s();
    int rc = gpx__sess_open(s.dir, &req, &fd, err, sizeof err);
    double took = now_s() - t0;
    printf("# a notice to a supervisor that never answers: rc %d after %.1f s (%s)\n", rc, took,
           err);
    ck_assert_int_lt(rc, 0);
    ck_assert_msg(took >= GPX__SESS_NOTICE_S - 1 && took < GPX__SESS_OPEN_S - 2,
                  "a notice gave up after %.1f s, not about %d s", took, GPX__SESS_NOTICE_S);
    standin_stop(&s);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_open_waits_for_a_late_supervisor);
    tcase_add_test(tc, test_notice_keeps_its_short_limit);
}

GP_TEST_MAIN("executors/session-open", add_tests)
