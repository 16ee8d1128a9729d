/*
 * ws-in.c — fuzz target for a client's WebSocket messages as gpupoold takes
 * them (common/gp_ws.h, gp_ws_in): the input is the byte stream a client
 * sends after the handshake, read by a libwslay server context with its
 * buffering off, as the session relay sets it, whose frame callbacks feed
 * gp_ws_in. Messages whose type byte is odd are streamed, the others
 * gathered. Whatever the frames (fragmented, interleaved with control
 * frames, unmasked, oversized, cut short), no message may pass on more than
 * GP_CH_PAYLOAD_MAX bytes of payload, and a gathered one must come whole
 * with its bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_channel.h"
#include "common/gp_ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fz {
    const uint8_t *data;
    size_t size, off;
    size_t streamed; /* payload bytes streamed of the message now */
    gp_ws_in in;
    int failed; /* the relay would have closed the session */
} fz;

static int fz_stream(void *ud, int type) {
    fz *f = ud;
    f->streamed = 0;
    return type & 1;
}

static void fz_piece(void *ud, const uint8_t *p, size_t n) {
    fz *f = ud;
    if (p == NULL || n == 0 || (f->streamed += n) > GP_CH_PAYLOAD_MAX)
        abort();
}

static void fz_whole(void *ud, int type, const uint8_t *p, size_t n) {
    (void)ud;
    if ((type & 1) || n > GP_CH_PAYLOAD_MAX || (n > 0 && p == NULL))
        abort();
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < n; i++) /* every byte readable (ASan) */
        sum ^= p[i];
    (void)sum;
}

static ssize_t fz_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud) {
    fz *f = ud;
    (void)flags;
    if (f->off == f->size) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    /* In pieces of varying size, as a socket delivers them. */
    size_t n = f->size - f->off;
    size_t most = 1 + f->data[f->off] % 97;
    n = n < len ? n : len;
    n = n < most ? n : most;
    memcpy(buf, f->data + f->off, n);
    f->off += n;
    return (ssize_t)n;
}

static ssize_t fz_send(wslay_event_context_ptr ctx, const uint8_t *d, size_t len, int flags,
                       void *ud) {
    (void)ctx, (void)d, (void)flags, (void)ud;
    return (ssize_t)len;
}

static void fz_start(wslay_event_context_ptr ctx,
                     const struct wslay_event_on_frame_recv_start_arg *arg, void *ud) {
    fz *f = ud;
    (void)ctx;
    if (gp_ws_in_start(&f->in, arg->opcode, arg->fin) < 0)
        f->failed = 1;
}

static void fz_chunk(wslay_event_context_ptr ctx,
                     const struct wslay_event_on_frame_recv_chunk_arg *arg, void *ud) {
    fz *f = ud;
    (void)ctx;
    if (!f->failed && gp_ws_in_chunk(&f->in, arg->data, arg->data_length) < 0)
        f->failed = 1;
}

static void fz_end(wslay_event_context_ptr ctx, void *ud) {
    fz *f = ud;
    (void)ctx;
    int rc = gp_ws_in_end(&f->in);
    if (rc < 0 && gp_ws_in_why(rc)[0] == '\0')
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz f = {data, size, 0, 0, {0}, 0};
    f.in =
        (gp_ws_in){.stream = fz_stream, .piece = fz_piece, .whole = fz_whole, .ud = &f, .type = -1};
    static const struct wslay_event_callbacks cb = {fz_recv,  fz_send, NULL, fz_start,
                                                    fz_chunk, fz_end,  NULL};
    wslay_event_context_ptr ctx;
    if (wslay_event_context_server_init(&ctx, &cb, &f) != 0)
        return 0;
    wslay_event_config_set_max_recv_msg_length(ctx, GP_CH_PAYLOAD_MAX + 1);
    wslay_event_config_set_no_buffering(ctx, 1);
    for (size_t round = 0; round <= size && f.off < f.size && !f.failed &&
                           wslay_event_want_read(ctx) && wslay_event_recv(ctx) == 0;
         round++) {
    }
    gp_ws_in_free(&f.in);
    wslay_event_context_free(ctx);
    return 0;
}
