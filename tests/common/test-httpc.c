/*
 * test-httpc.c — the HTTP client's response reader (gp_http_parse_response,
 * the code the CLI runs on every answer) against well-formed and hostile
 * responses: a server or anyone on the path chooses every byte, so framing
 * numbers are read strictly and bounded before any arithmetic.
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_error.h"
#include "common/httpc.h"
#include "gptest.h"

static int parse(const char *text, gp_http_resp *r) {
    return gp_http_parse_response(text, strlen(text), r);
}

START_TEST(test_framings) {
    gp_http_resp r;
    ck_assert_int_eq(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "hello");
    gp_http_resp_free(&r);
    ck_assert_int_eq(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
                           &r),
                     0);
    ck_assert_str_eq(r.body, "abcde");
    ck_assert_uint_eq(r.len, 5);
    gp_http_resp_free(&r);
    ck_assert_int_eq(parse("HTTP/1.1 204 No Content\r\n\r\n", &r), 0);
    ck_assert_uint_eq(r.len, 0);
    gp_http_resp_free(&r);
    ck_assert_int_eq(parse("HTTP/1.0 200 OK\r\n\r\nto the end", &r), 0);
    ck_assert_str_eq(r.body, "to the end");
    gp_http_resp_free(&r);
}
END_TEST

/* A chunk size near 2^64 wrapped the buffer size computation (*blen + n + 1)
 * and the copy wrote past a small buffer: a heap overflow in the CLI that any
 * server could trigger. */
START_TEST(test_huge_chunk_is_refused) {
    gp_http_resp r;
    char text[20000];
    int n = snprintf(text, sizeof text,
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "2\r\nab\r\nfffffffffffffffe\r\n");
    memset(text + n, 'x', 16007);
    text[n + 16007] = '\0';
    ck_assert_int_eq(parse(text, &r), GP_EPARSE);
    ck_assert_int_eq(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "ffffffffffffffffff\r\nab\r\n0\r\n\r\n",
                           &r),
                     GP_EPARSE);
}
END_TEST

START_TEST(test_bad_framing_is_refused) {
    static const char *bad[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nab",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nab",
        "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nab",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\nab\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        "garbage\r\n\r\n",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_http_resp r;
        ck_assert_msg(parse(bad[i], &r) == GP_EPARSE, "accepted: %s", bad[i]);
    }
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_framings);
    tcase_add_test(tc, test_huge_chunk_is_refused);
    tcase_add_test(tc, test_bad_framing_is_refused);
}

GP_TEST_MAIN("common/httpc", add_tests)
