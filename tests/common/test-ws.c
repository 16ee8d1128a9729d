/*
 * test-ws.c — the one WebSocket frame gpupool writes itself, a client's
 * frame of one whole binary message (common/gp_ws.h, gp_ws_client_frame):
 * its bytes against RFC 6455's layout, and every frame, at each length
 * where the header changes shape and with any alignment, read back by a
 * libwslay server context, as gpupoold reads it, to the same message; and
 * the handshake's Sec-WebSocket-Accept (gp_ws_accept) against RFC 6455's
 * example.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "common/files.h"
#include "common/gp_error.h"
#include "common/gp_ws.h"
#include "gptest.h"

/* ---- What a libwslay server reads ------------------------------------------ */

typedef struct reader {
    int fd; /* the server's end of a socket pair */
    int msgs, opcode;
    uint8_t *msg; /* the last message */
    size_t len;
} reader;

static ssize_t rd_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud) {
    (void)flags;
    return gp_ws_recv(ctx, ((reader *)ud)->fd, buf, len);
}

static ssize_t rd_send(wslay_event_context_ptr ctx, const uint8_t *d, size_t len, int flags,
                       void *ud) {
    return gp_ws_send(ctx, ((reader *)ud)->fd, d, len, flags);
}

static void rd_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *ud) {
    reader *r = ud;
    (void)ctx;
    r->msgs++;
    r->opcode = arg->opcode;
    free(r->msg);
    r->msg = malloc(arg->msg_length + 1);
    ck_assert_ptr_nonnull(r->msg);
    if (arg->msg_length > 0)
        memcpy(r->msg, arg->msg, arg->msg_length);
    r->len = arg->msg_length;
}

/* Sends frame[0..size) down a socket pair and reads it at the other end
 * with a wslay server context: 0 once all was read, and the messages in r. */
static int wslay_reads(reader *r, const uint8_t *frame, size_t size) {
    static const struct wslay_event_callbacks cb = {rd_recv, rd_send, NULL,  NULL,
                                                    NULL,    NULL,    rd_msg};
    int sv[2];
    wslay_event_context_ptr ctx;
    memset(r, 0, sizeof *r);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    int sndbuf = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    ck_assert_int_eq(gp_write_all(sv[1], frame, size), 0);
    r->fd = sv[0];
    ck_assert_int_eq(wslay_event_context_server_init(&ctx, &cb, r), 0);
    wslay_event_config_set_max_recv_msg_length(ctx, 1 << 20);
    int rc = wslay_event_recv(ctx);
    char rest;
    if (rc == 0 && recv(sv[0], &rest, 1, 0) != -1)
        rc = -1; /* wslay left bytes unread */
    wslay_event_context_free(ctx);
    close(sv[0]);
    close(sv[1]);
    return rc;
}

/* ---- The tests -------------------------------------------------------------- */

START_TEST(test_bytes_as_rfc6455_lays_them) {
    static const uint8_t key[4] = {0x01, 0x02, 0x03, 0x04};
    uint8_t out[GP_WS_CLIENT_HEAD_MAX + 70000];
    /* FIN and opcode 2; the mask bit and a 7-bit length; the key; each
     * byte masked with key[i % 4]. */
    static const uint8_t abcde[] = {0x82,    0x85,    1,       2,       3,      4,
                                    'a' ^ 1, 'b' ^ 2, 'c' ^ 3, 'd' ^ 4, 'e' ^ 1};
    ck_assert_uint_eq(gp_ws_client_frame(out, key, (const uint8_t *)"abcde", 5), sizeof abcde);
    ck_assert_mem_eq(out, abcde, sizeof abcde);
    /* 126 to 65535 bytes: 126 and 16 bits, big-endian. */
    uint8_t *msg = calloc(1, 70000);
    ck_assert_ptr_nonnull(msg);
    static const uint8_t h126[] = {0x82, 0x80 | 126, 0x00, 126, 1, 2, 3, 4};
    ck_assert_uint_eq(gp_ws_client_frame(out, key, msg, 126), sizeof h126 + 126);
    ck_assert_mem_eq(out, h126, sizeof h126);
    static const uint8_t h65535[] = {0x82, 0x80 | 126, 0xff, 0xff, 1, 2, 3, 4};
    ck_assert_uint_eq(gp_ws_client_frame(out, key, msg, 65535), sizeof h65535 + 65535);
    ck_assert_mem_eq(out, h65535, sizeof h65535);
    /* More: 127 and 64 bits; a DATA message (65,537 bytes) is one. */
    static const uint8_t h65537[] = {0x82, 0x80 | 127, 0, 0, 0, 0, 0, 1, 0, 1, 1, 2, 3, 4};
    ck_assert_uint_eq(gp_ws_client_frame(out, key, msg, 65537), sizeof h65537 + 65537);
    ck_assert_mem_eq(out, h65537, sizeof h65537);
    /* Zero bytes masked are the key itself. */
    ck_assert_uint_eq(out[sizeof h65537 + 65536], 1);
    ck_assert_uint_eq(out[sizeof h65537 + 1], 2);
    free(msg);
}
END_TEST

START_TEST(test_every_length_reads_back_through_wslay) {
    static const size_t lens[] = {0,   1,   2,   3,    7,    8,    9,     15,    16,   17,
                                  125, 126, 127, 4095, 4096, 4097, 65535, 65536, 65537};
    static const uint8_t keys[][4] = {
        {0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff}, {0xde, 0xad, 0xbe, 0xef}, {0x12, 0, 0x80, 0x7f}};
    size_t most = 65537 + 8;
    uint8_t *msg = malloc(most), *out = malloc(GP_WS_CLIENT_HEAD_MAX + most + 8);
    ck_assert_ptr_nonnull(msg);
    ck_assert_ptr_nonnull(out);
    unsigned seed = 12345;
    for (size_t i = 0; i < most; i++)
        msg[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            /* Any alignment of the message and of where it is framed. */
            for (size_t a = 0; a < 8; a += 3) {
                size_t n = gp_ws_client_frame(out + (a ^ 5), keys[k], msg + a, lens[l]);
                reader r;
                ck_assert_int_eq(wslay_reads(&r, out + (a ^ 5), n), 0);
                ck_assert_msg(r.msgs == 1, "length %zu: %d messages", lens[l], r.msgs);
                ck_assert_int_eq(r.opcode, WSLAY_BINARY_FRAME);
                ck_assert_uint_eq(r.len, lens[l]);
                if (lens[l] > 0)
                    ck_assert_msg(memcmp(r.msg, msg + a, lens[l]) == 0,
                                  "length %zu key %zu: the bytes differ", lens[l], k);
                free(r.msg);
            }
    free(msg);
    free(out);
}
END_TEST

START_TEST(test_frames_in_a_row_read_as_messages) {
    /* As the CLI writes them: several frames back to back in one buffer. */
    uint8_t out[3 * (GP_WS_CLIENT_HEAD_MAX + 200)];
    static const uint8_t key[4] = {9, 8, 7, 6};
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        uint8_t m[200];
        memset(m, 'a' + i, sizeof m);
        n += gp_ws_client_frame(out + n, key, m, 100 + 50 * (size_t)i);
    }
    reader r;
    ck_assert_int_eq(wslay_reads(&r, out, n), 0);
    ck_assert_int_eq(r.msgs, 3);
    ck_assert_uint_eq(r.len, 200);
    ck_assert_uint_eq(r.msg[0], 'c');
    ck_assert_uint_eq(r.msg[199], 'c');
    free(r.msg);
}
END_TEST

/* RFC 6455, 1.3: the key "dGhlIHNhbXBsZSBub25jZQ==" is answered with
 * "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=". A key that is not 16 bytes in base64 (24
 * characters) is refused. */
START_TEST(test_accept_as_rfc6455_computes_it) {
    char out[GP_WS_ACCEPT_LEN + 1];
    ck_assert_int_eq(gp_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
    ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    ck_assert_int_eq(gp_ws_accept("dGhlIHNhbXBsZSBub25jZQ=", out), GP_EINVAL);
    ck_assert_int_eq(gp_ws_accept(NULL, out), GP_EINVAL);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_accept_as_rfc6455_computes_it);
    tcase_add_test(tc, test_bytes_as_rfc6455_lays_them);
    tcase_add_test(tc, test_every_length_reads_back_through_wslay);
    tcase_add_test(tc, test_frames_in_a_row_read_as_messages);
}

GP_TEST_MAIN("common/ws", add_tests)
