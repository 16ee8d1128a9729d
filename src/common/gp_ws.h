/*
 * gp_ws.h — the socket side of a libwslay WebSocket, shared by gpupoold's
 * session relay and the CLI: reading and writing a non-blocking socket in
 * the shape wslay's callbacks want (EAGAIN becomes WSLAY_ERR_WOULDBLOCK, the
 * peer's end or an error WSLAY_ERR_CALLBACK_FAILURE), and a read buffer in
 * front of wslay's recv callback: wslay asks for at most 4 KiB at a time,
 * the socket is read GP_WS_IO bytes per system call; and a client's messages
 * taken in pieces as wslay unmasks them (gp_ws_in). The handshake's
 * Sec-WebSocket-Accept is computed here for both sides (gp_ws_accept). Framing is wslay's but
 * for one case: the CLI's bulk data, a client's frame of one whole binary
 * message (gp_ws_client_frame), which wslay masks a byte at a time.
 */
#ifndef GP_WS_H
#define GP_WS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <wslay/wslay.h>

#include "common/gp_channel.h"

/* The length of a Sec-WebSocket-Accept value: SHA-1's 20 bytes in base64. */
#define GP_WS_ACCEPT_LEN 28

/* The Sec-WebSocket-Accept that answers the Sec-WebSocket-Key key (RFC 6455,
 * 4.2.2: the base64 of SHA-1 over key and the protocol's GUID), written to
 * out with its NUL: 0, GP_EINVAL where key is not 24 characters (16 bytes
 * in base64), GP_ESYS where the digest fails. The daemon answers a client's
 * handshake with it, the CLI checks the daemon's answer against it; both
 * link libcrypto. */
int gp_ws_accept(const char *key, char out[GP_WS_ACCEPT_LEN + 1]);

/* recv() on fd for wslay's recv callback: the bytes read, or -1 with the
 * context's error set. */
ssize_t gp_ws_recv(wslay_event_context_ptr ctx, int fd, uint8_t *buf, size_t len);

/* send() on fd for wslay's send callback (flags: wslay's, WSLAY_MSG_MORE
 * becomes MSG_MORE; never SIGPIPE): the bytes sent, or -1 with the
 * context's error set. */
ssize_t gp_ws_send(wslay_event_context_ptr ctx, int fd, const uint8_t *data, size_t len, int flags);

/* Queues one channel message on ctx as one binary WebSocket message: the
 * type byte, then the n bytes at p (none where n is 0). Nothing is queued
 * where memory runs out. */
void gp_ws_queue(wslay_event_context_ptr ctx, int type, const void *p, size_t n);

#define GP_WS_IO 262144

/* Bytes read from a socket and not yet taken by wslay. buf is malloc'd (it
 * may first hold what came with the handshake; then its size is at least
 * len); keep 0 frees it whenever it is emptied, so an idle connection holds
 * none. The owner frees buf at the end. */
typedef struct gp_ws_rbuf {
    uint8_t *buf;
    size_t len, off;
    int keep;
    int drained; /* the last recv() came back short: the socket is taken
                    to be empty until the next readiness (gp_ws_rbuf_ready)
                    instead of asking it with a recv() that fails */
} gp_ws_rbuf;

/* wslay's recv callback through rb: at most len bytes from rb, which is
 * first refilled with one recv() of up to GP_WS_IO bytes on fd when empty
 * (none after a short one until gp_ws_rbuf_ready). The bytes served, or -1
 * with the context's error set (EAGAIN: would block). */
ssize_t gp_ws_recv_buffered(wslay_event_context_ptr ctx, int fd, gp_ws_rbuf *rb, uint8_t *buf,
                            size_t len);

/* The socket was reported readable (poll, epoll; level-triggered): the
 * next refill reads it. */
static inline void gp_ws_rbuf_ready(gp_ws_rbuf *rb) {
    rb->drained = 0;
}

/* 1 while rb holds bytes wslay has not taken. */
static inline int gp_ws_rbuf_held(const gp_ws_rbuf *rb) {
    return rb->off < rb->len;
}

/*
 * A client's messages as wslay hands them over with its buffering off
 * (wslay_event_config_set_no_buffering; the frame callbacks call the three
 * functions below): each message a type byte, then its payload, in pieces
 * as wslay unmasks them. A message the owner streams (stream() says so once
 * its type is known) goes to piece() as it comes; any other is gathered and
 * goes whole to whole(). A message of several frames is bounded here, to
 * GP_CH_PAYLOAD_MAX bytes of payload (wslay bounds each frame only). Control
 * frames, which wslay answers itself, are passed over.
 */
typedef struct gp_ws_in {
    int (*stream)(void *ud, int type);
    void (*piece)(void *ud, const uint8_t *p, size_t n);
    void (*whole)(void *ud, int type, const uint8_t *p, size_t n);
    void *ud;
    int ctrl, fin; /* the frame now: a control frame; the message's last */
    int type;      /* the message's type byte; -1 until it came */
    int streaming; /* stream() said yes */
    size_t len;    /* payload bytes so far */
    uint8_t *msg;  /* a gathered payload (malloc'd; gp_ws_in_free) */
} gp_ws_in;

#define GP_WS_IN_NOT_BINARY (-1)
#define GP_WS_IN_TOO_LONG   (-2)
#define GP_WS_IN_NOMEM      (-3)

/* A frame begins (wslay's on_frame_recv_start). 0, or GP_WS_IN_NOT_BINARY
 * where a message begins that is not binary. */
int gp_ws_in_start(gp_ws_in *in, int opcode, int fin);

/* A piece of the frame (on_frame_recv_chunk). 0, or GP_WS_IN_TOO_LONG,
 * GP_WS_IN_NOMEM: the message is then dropped. */
int gp_ws_in_chunk(gp_ws_in *in, const uint8_t *p, size_t n);

/* The frame is over (on_frame_recv_end): a gathered message that is whole
 * goes to whole(). 0, or GP_WS_IN_NOT_BINARY for a message without its
 * type byte. */
int gp_ws_in_end(gp_ws_in *in);

/* The sentence for a GP_WS_IN_* code, naming what was wrong. */
const char *gp_ws_in_why(int rc);

/* Frees what a message half received holds. */
void gp_ws_in_free(gp_ws_in *in);

/* The most bytes a client's frame header takes: 2, 8 of extended length
 * and 4 of masking key (RFC 6455, 5.2). */
#define GP_WS_CLIENT_HEAD_MAX 14

/*
 * One whole binary message msg[0..len) as a client sends it (RFC 6455, 5.2
 * and 5.3): a frame with FIN set, opcode 2, masked with key, written to
 * out, which has room for GP_WS_CLIENT_HEAD_MAX + len bytes. Returns the
 * frame's length. The CLI writes its bulk data this way, 8 bytes masked at
 * a time, while its wslay context has nothing half sent (nothing of wslay's
 * may stand between a frame's bytes); everything either side receives is
 * still read by wslay, and tests/common/test-ws.c reads these frames with
 * it.
 */
size_t gp_ws_client_frame(uint8_t *out, const uint8_t key[4], const uint8_t *msg, size_t len);

#endif /* GP_WS_H */
