/*
 * test-hardening.c — black-box tests of gpupoold's front door against hostile
 * clients: slow and idle connections do not take the API down, a request is
 * judged (framing, token, declared size) before its body is read, NUL bytes
 * and ambiguous framing are refused, numbers in query strings are read
 * strictly, and idempotency keys belong to the user who sent them.
 *
 * Clients speak raw bytes over their own sockets here (the HTTP client of
 * libgpcommon only writes well-formed requests). Many connections come from
 * several loopback addresses (127.0.0.2, ...), as from several hosts, since
 * each address may hold only a bounded number of connections.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/httpc.h"
#include "gptest.h"
#include "harness.h"

static int port_of(const gpd_test *t) {
    const char *colon = strrchr(t->server, ':');
    return colon ? atoi(colon + 1) : 0;
}

/* A TCP connection from loopback address src (NULL: any) to the daemon;
 * -1 if the connect fails. */
static int raw_connect(const gpd_test *t, const char *src) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    if (src) {
        inet_pton(AF_INET, src, &sa.sin_addr);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    }
    sa.sin_port = htons((uint16_t)port_of(t));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads until the head of an answer is complete (or timeout_s passes, or the
 * connection ends); returns its status, or -1. The head is left in buf. */
static int raw_status(int fd, int timeout_s, char *buf, size_t len) {
    struct timeval tv = {timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t n = 0;
    buf[0] = '\0';
    while (n + 1 < len && !strstr(buf, "\r\n\r\n")) {
        ssize_t r = recv(fd, buf + n, len - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
    }
    int status = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    return status;
}

/* Sends len bytes of req on a fresh connection; returns the answer's status
 * (the whole answer is left in buf). */
static int raw_request(const gpd_test *t, const char *req, size_t len, char *buf, size_t buflen) {
    int fd = raw_connect(t, NULL);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
    int st = raw_status(fd, 30, buf, buflen);
    close(fd);
    return st;
}

/* Reads what is left of an answer on fd until the server closes it (or
 * timeout_s passes), appending to the text in buf. */
static void raw_rest(int fd, int timeout_s, char *buf, size_t len) {
    struct timeval tv = {timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t n = strlen(buf);
    ssize_t r;
    while (n + 1 < len && (r = recv(fd, buf + n, len - 1 - n, 0)) > 0) {
        n += (size_t)r;
        buf[n] = '\0';
    }
}

static int raw_text(const gpd_test *t, const char *req) {
    char buf[4096];
    return raw_request(t, req, strlen(req), buf, sizeof buf);
}

/* POST /api/v1/queues as the admin, with these framing headers (CR LF
 * between them) and this body, on a fresh connection; the answer's status. */
static int post_queue(const gpd_test *t, const char *framing, const char *body) {
    char req[1024];
    snprintf(req, sizeof req,
             "POST /api/v1/queues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n\r\n%s",
             t->admin, framing, body);
    return raw_text(t, req);
}

/* A department D with one project p. */
static void mk_project(gpd_test *t) {
    ck_assert_int_eq(gpd_call(t, t->admin, "POST", "/api/v1/queues", "{\"name\":\"D\"}", NULL),
                     201);
    ck_assert_int_eq(
        gpd_call(t, t->admin, "POST", "/api/v1/queues", "{\"name\":\"p\",\"parent\":\"D\"}", NULL),
        201);
}

START_TEST(test_laxities_refused) {
    gpd_test t;
    gpd_test_start(&t);
    char req[1024], buf[4096];
    /* A NUL inside Authorization: the daemon saw only the part before it. */
    int n =
        snprintf(req, sizeof req,
                 "GET /api/v1/workloads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s", t.admin);
    memcpy(req + n, "\0junk\r\n\r\n", 9);
    ck_assert_int_eq(raw_request(&t, req, (size_t)n + 9, buf, sizeof buf), 400);
    ck_assert_ptr_nonnull(strstr(buf, "Authorization"));
    /* The same request without the NUL is fine. */
    snprintf(req, sizeof req,
             "GET /api/v1/workloads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n",
             t.admin);
    ck_assert_int_eq(raw_text(&t, req), 200);
    /* "%00" in a path ended it early: /api/v1/queues/%00 listed the queues. */
    char path[64];
    json_t *out = NULL;
    snprintf(path, sizeof path, "/api/v1/queues/%%00");
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", path, NULL, &out), 404);
    ck_assert_ptr_null(json_object_get(out, "queues"));
    json_decref(out);
    /* Ambiguous framing. */
    ck_assert_int_eq(post_queue(&t, "Content-Length: 13\r\nContent-Length: 13", "{\"name\":\"q\"}"),
                     400);
    ck_assert_int_eq(post_queue(&t, "Content-Length: 13\r\nTransfer-Encoding: chunked",
                                "d\r\n{\"name\":\"q\"}\r\n0\r\n\r\n"),
                     400);
    /* A space before the colon hid Transfer-Encoding from the framing check:
     * the body was framed by Content-Length, which a proxy reading the
     * chunked coding would not do. */
    ck_assert_int_eq(
        post_queue(&t, "Content-Length: 12\r\nTransfer-Encoding : chunked", "{\"name\":\"q\"}"),
        400);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/queues/q", NULL, NULL), 404);
    /* Two Authorization headers: the first won; a proxy may check the other. */
    snprintf(req, sizeof req,
             "GET /api/v1/workloads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Authorization: Bearer nothing\r\n\r\n",
             t.admin);
    int fd = raw_connect(&t, NULL);
    send(fd, req, strlen(req), MSG_NOSIGNAL);
    ck_assert_int_eq(raw_status(fd, 30, buf, sizeof buf), 400);
    raw_rest(fd, 30, buf, sizeof buf);
    close(fd);
    ck_assert_ptr_nonnull(strstr(buf, "more than one"));
    /* Lines ending in a bare LF (or a bare CR): in the request line, in any
     * header, or ending the head. */
    static const char *const bare[] = {
        "GET /api/v1/health HTTP/1.1\nHost: x\r\n\r\n",
        "GET /api/v1/health HTTP/1.1\r\nHost: x\nX-A: 1\r\n\r\n",
        "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-A: 1\n\r\n",
        "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\n",
        "GET /api/v1/health HTTP/1.1\nHost: x\n\n",
        "GET /api/v1/health HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++)
        ck_assert_msg(raw_text(&t, bare[i]) == 400, "bare line end %zu not refused", i);
    ck_assert_int_eq(raw_text(&t, "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
    /* Numbers in query strings: strict, and too large is 400, not 500. */
    mk_project(&t);
    const char *job = "{\"project\":\"p\",\"command\":[\"true\"]}";
    ck_assert_int_eq(gpd_call(&t, t.admin, "POST", "/api/v1/workloads", job, &out), 201);
    long long id = (long long)json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    static const char *const bad[] = {"offset=99999999999999999999",
                                      "offset=18446744073709551617",
                                      "offset=-1",
                                      "offset=1x",
                                      "task=100000",
                                      "task=-0",
                                      "offset="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "/api/v1/workloads/%lld/logs?%s", id, bad[i]);
        ck_assert_msg(gpd_call(&t, t.admin, "GET", path, NULL, NULL) == 400, "%s not 400", path);
    }
    snprintf(path, sizeof path, "/api/v1/workloads/%lld/logs?offset=0", id);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", path, NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/workloads?limit=5x", NULL, NULL), 400);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/workloads?after=-1", NULL, NULL), 400);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/workloads/-1", NULL, NULL), 400);
    /* Times past 9999: to=2^63-1 overflowed when rounded to a whole bucket
     * (answered with a negative "to"), and in milliseconds for the export. */
    static const char *const times[] = {
        "/api/v1/usage?to=9223372036854775807",
        "/api/v1/usage?from=0&to=99999999999999999",
        "/api/v1/usage?from=253402300800",
        "/api/v1/export/workloads?to=9223372036854775807",
        "/api/v1/export/workloads?from=9300000000000000",
    };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        ck_assert_msg(gpd_call(&t, t.admin, "GET", times[i], NULL, NULL) == 400, "%s not 400",
                      times[i]);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET",
                              "/api/v1/usage?from=0&to=253402300799&step=3650000d", NULL, NULL),
                     200);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/usage?from=100000000d", NULL, NULL),
                     200);
    gpd_test_stop(&t);
}
END_TEST

/* The token and the declared size are judged from the head alone: the
 * answer comes while the client has not sent (and will never send) its
 * body. Before, a megabyte per connection was buffered first. */
START_TEST(test_head_judged_before_body) {
    gpd_test t;
    gpd_test_start(&t);
    char buf[4096], req[512];
    int fd = raw_connect(&t, NULL);
    const char *head = "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       "application/json\r\nContent-Length: 1000000\r\n\r\n{";
    send(fd, head, strlen(head), MSG_NOSIGNAL);
    ck_assert_int_eq(raw_status(fd, 30, buf, sizeof buf), 401);
    close(fd);
    fd = raw_connect(&t, NULL);
    snprintf(req, sizeof req,
             "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Length: 5000000\r\n\r\n{",
             t.admin);
    send(fd, req, strlen(req), MSG_NOSIGNAL);
    ck_assert_int_eq(raw_status(fd, 30, buf, sizeof buf), 413);
    close(fd);
    /* A chunked body has no declared size: it is dropped past 1 MiB. */
    fd = raw_connect(&t, NULL);
    snprintf(req, sizeof req,
             "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Transfer-Encoding: chunked\r\n\r\n",
             t.admin);
    send(fd, req, strlen(req), MSG_NOSIGNAL);
    static char chunk[65536 + 16];
    int hn = snprintf(chunk, sizeof chunk, "10000\r\n");
    memset(chunk + hn, ' ', 65536);
    memcpy(chunk + hn + 65536, "\r\n", 2);
    for (int i = 0; i < 20; i++)
        send(fd, chunk, (size_t)hn + 65538, MSG_NOSIGNAL);
    send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
    ck_assert_int_eq(raw_status(fd, 30, buf, sizeof buf), 413);
    close(fd);
    gpd_test_stop(&t);
}
END_TEST

/* Sends piece on fd every 300 ms until the daemon closes it (up to 60 s);
 * returns 1 if it did. */
static int trickle_until_cut(int fd, const char *piece) {
    for (int i = 0; i < 200; i++) {
        usleep(300 * 1000);
        if (send(fd, piece, strlen(piece), MSG_NOSIGNAL) < 0)
            return 1;
        char b[512];
        ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return 1;
    }
    return 0;
}

/* The daemon's count of connections cut by its deadlines (/metrics). */
static long cuts_counted(const gpd_test *t) {
    gp_http_resp m;
    char err[256];
    ck_assert_int_eq(
        gp_http_request(t->server, "GET", "/metrics", t->admin, NULL, &m, err, sizeof err), 0);
    const char *line = strstr(m.body, "\ngpupool_http_connections_cut_total ");
    long n = line ? atol(line + 36) : -1;
    gp_http_resp_free(&m);
    return n;
}

/* 600 connections that trickle a request head (more than the old server's
 * 512 slots), 160 more from one address (past its cap of 128): health and an
 * authenticated list still answer. One trickling client is cut off by the
 * header deadline although it keeps sending bytes. */
START_TEST(test_slow_clients_do_not_hold_the_api) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 2000 && rl.rlim_max >= 2000) {
        rl.rlim_cur = 2000;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    gpd_test t;
    const char *const args[] = {"--header-timeout", "2s", NULL};
    gpd_test_start_args(&t, args);
    enum { NSLOW = 600, PER_ADDR = 50, NCAPPED = 160 };
    static int fds[NSLOW + NCAPPED];
    int opened = 0;
    for (int i = 0; i < NSLOW; i++) {
        char src[32];
        snprintf(src, sizeof src, "127.0.1.%d", 1 + i / PER_ADDR);
        fds[opened] = raw_connect(&t, src);
        ck_assert_int_ge(fds[opened], 0);
        send(fds[opened], "GET /api/v1/health HTTP/1.1\r\n", 29, MSG_NOSIGNAL);
        opened++;
    }
    for (int i = 0; i < NCAPPED; i++) {
        int fd = raw_connect(&t, "127.0.2.1");
        if (fd >= 0)
            fds[opened++] = fd;
    }
    json_t *out = NULL;
    ck_assert_int_eq(gpd_call(&t, NULL, "GET", "/api/v1/health", NULL, NULL), 200);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/workloads", NULL, &out), 200);
    ck_assert_ptr_nonnull(json_object_get(out, "workloads"));
    json_decref(out);
    /* Bytes do not restart the deadline: one header line every 300 ms. */
    int slow = raw_connect(&t, "127.0.3.1");
    ck_assert_int_ge(slow, 0);
    send(slow, "GET /api/v1/health HTTP/1.1\r\n", 29, MSG_NOSIGNAL);
    ck_assert_msg(trickle_until_cut(slow, "X-Slow: 1\r\n"),
                  "a client trickling header lines kept its connection for 60 s");
    close(slow);
    /* The cut is counted for the operator. */
    ck_assert_msg(cuts_counted(&t) >= 1, "no cut counted in /metrics");
    ck_assert_int_eq(gpd_call(&t, NULL, "GET", "/api/v1/health", NULL, NULL), 200);
    for (int i = 0; i < opened; i++)
        close(fds[i]);
    /* Every refused or cut connection used to write a line to the daemon's
     * log: an attacker could fill its disk. The lines are now rate-limited. */
    char log[300], text[512];
    snprintf(log, sizeof log, "%s.log", t.dir);
    FILE *f = fopen(log, "r");
    ck_assert_ptr_nonnull(f);
    int lines = 0;
    while (fgets(text, sizeof text, f))
        lines++;
    fclose(f);
    ck_assert_msg(lines < 60, "the daemon's log has %d lines after the slow clients", lines);
    gpd_test_stop(&t);
}
END_TEST

/* Each phase of a connection has its own deadline, kept in its own list by
 * the guard: a body trickled after a complete head is cut by the request
 * deadline, and a keep-alive connection that has had its answer is cut by
 * the header deadline counted from that answer, while connections that
 * entered the same phases later (and hold later deadlines) are not cut
 * with them. */
START_TEST(test_every_phase_has_its_deadline) {
    gpd_test t;
    const char *const args[] = {"--header-timeout", "1s", "--request-timeout", "3s", NULL};
    gpd_test_start_args(&t, args);
    mk_project(&t);
    char req[512], buf[4096];
    /* A body that never ends. */
    int body = raw_connect(&t, NULL);
    ck_assert_int_ge(body, 0);
    snprintf(req, sizeof req,
             "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
             t.admin);
    send(body, req, strlen(req), MSG_NOSIGNAL);
    /* A keep-alive connection after its answer. */
    int kept = raw_connect(&t, NULL);
    ck_assert_int_ge(kept, 0);
    const char *health = "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n";
    send(kept, health, strlen(health), MSG_NOSIGNAL);
    ck_assert_int_eq(raw_status(kept, 30, buf, sizeof buf), 200);
    send(kept, "GET /api/v1/health HTTP/1.1\r\n", 29, MSG_NOSIGNAL);
    ck_assert_msg(trickle_until_cut(body, "x"), "a body trickled for 60 s was not cut off");
    ck_assert_msg(trickle_until_cut(kept, "X-Slow: 1\r\n"),
                  "a keep-alive connection trickling its next head was not cut off");
    close(body);
    close(kept);
    /* A connection that answers in time is served, however many were cut
     * before it; the cuts are counted. */
    ck_assert_int_eq(gpd_call(&t, NULL, "GET", "/api/v1/health", NULL, NULL), 200);
    ck_assert_msg(cuts_counted(&t) >= 2, "fewer than 2 cuts counted in /metrics");
    gpd_test_stop(&t);
}
END_TEST

/* carol sending alice's client_key got alice's workload id back and nothing
 * was created: keys were global. */
START_TEST(test_idempotency_keys_are_per_user) {
    gpd_test t;
    gpd_test_start(&t);
    mk_project(&t);
    char alice[128], carol[128];
    gpd_token(&t, "alice", "researcher", "p", alice, sizeof alice);
    gpd_token(&t, "carol", "researcher", "p", carol, sizeof carol);
    const char *job = "{\"project\":\"p\",\"command\":[\"true\"],\"client_key\":\"k1\"}";
    json_t *out;
    ck_assert_int_eq(gpd_call(&t, alice, "POST", "/api/v1/workloads", job, &out), 201);
    json_int_t a = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    int st = gpd_call(&t, carol, "POST", "/api/v1/workloads", job, &out);
    ck_assert_int_eq(st, 201);
    json_int_t c = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    ck_assert_int_ne(a, c);
    /* alice's own retry still finds her workload. */
    st = gpd_call(&t, alice, "POST", "/api/v1/workloads", job, &out);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "id")), a);
    json_decref(out);
    ck_assert_int_eq(gpd_call(&t, t.admin, "GET", "/api/v1/workloads", NULL, &out), 200);
    ck_assert_int_eq(json_array_size(json_object_get(out, "workloads")), 2);
    json_decref(out);
    gpd_test_stop(&t);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_laxities_refused);
    tcase_add_test(tc, test_head_judged_before_body);
    tcase_add_test(tc, test_slow_clients_do_not_hold_the_api);
    tcase_add_test(tc, test_every_phase_has_its_deadline);
    tcase_add_test(tc, test_idempotency_keys_are_per_user);
}

GP_TEST_MAIN("daemon/hardening", add_tests)
