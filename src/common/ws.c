/*
 * ws.c — the socket side of a libwslay WebSocket (gp_ws.h): the handshake's
 * Sec-WebSocket-Accept (with libcrypto's SHA-1 and base64); reads and
 * writes in the shape wslay's callbacks want, and the read buffer that
 * makes each recv() take up to GP_WS_IO bytes instead of wslay's 4 KiB;
 * a client's messages taken in pieces as wslay unmasks them; and the one
 * frame gpupool writes itself, the CLI's bulk data.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/gp_error.h"
#include "common/gp_ws.h"

int gp_ws_accept(const char *key, char out[GP_WS_ACCEPT_LEN + 1]) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char buf[128];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (key == NULL || strlen(key) != 24)
        return GP_EINVAL;
    snprintf(buf, sizeof buf, "%s%s", key, guid);
    if (EVP_Digest(buf, strlen(buf), md, &len, EVP_sha1(), NULL) != 1 || len != 20)
        return GP_ESYS;
    EVP_EncodeBlock((unsigned char *)out, md, 20);
    return 0;
}

ssize_t gp_ws_recv(wslay_event_context_ptr ctx, int fd, uint8_t *buf, size_t len) {
    ssize_t r;
    do
        r = recv(fd, buf, len, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (r <= 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}

ssize_t gp_ws_send(wslay_event_context_ptr ctx, int fd, const uint8_t *data, size_t len,
                   int flags) {
    ssize_t r;
    do
        r = send(fd, data, len, MSG_NOSIGNAL | (flags & WSLAY_MSG_MORE ? MSG_MORE : 0));
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (r < 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}

void gp_ws_queue(wslay_event_context_ptr ctx, int type, const void *p, size_t n) {
    uint8_t small[512];
    uint8_t *buf = n + 1 <= sizeof small ? small : malloc(n + 1);
    if (buf == NULL)
        return;
    buf[0] = (uint8_t)type;
    if (n > 0)
        memcpy(buf + 1, p, n);
    struct wslay_event_msg m = {WSLAY_BINARY_FRAME, buf, n + 1};
    wslay_event_queue_msg(ctx, &m);
    if (buf != small)
        free(buf);
}

static void rbuf_drop(gp_ws_rbuf *rb) {
    rb->len = rb->off = 0;
    if (!rb->keep) {
        free(rb->buf);
        rb->buf = NULL;
    }
}

ssize_t gp_ws_recv_buffered(wslay_event_context_ptr ctx, int fd, gp_ws_rbuf *rb, uint8_t *buf,
                            size_t len) {
    if (!gp_ws_rbuf_held(rb)) {
        if (rb->drained) {
            /* Most likely EAGAIN: a system call saved each round. */
            wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
            return -1;
        }
        if (rb->buf == NULL && (rb->buf = malloc(GP_WS_IO)) == NULL) {
            wslay_event_set_error(ctx, WSLAY_ERR_NOMEM);
            return -1;
        }
        ssize_t r = gp_ws_recv(ctx, fd, rb->buf, GP_WS_IO);
        if (r < 0) {
            rbuf_drop(rb);
            return -1;
        }
        rb->len = (size_t)r;
        rb->off = 0;
        rb->drained = (size_t)r < GP_WS_IO;
    }
    size_t n = rb->len - rb->off < len ? rb->len - rb->off : len;
    memcpy(buf, rb->buf + rb->off, n);
    rb->off += n;
    if (rb->off == rb->len)
        rbuf_drop(rb);
    return (ssize_t)n;
}

/* ---- A client's messages in pieces --------------------------------------- */

int gp_ws_in_start(gp_ws_in *in, int opcode, int fin) {
    in->ctrl = (opcode & 0x8) != 0;
    if (in->ctrl)
        return 0;
    in->fin = fin;
    if (opcode == WSLAY_CONTINUATION_FRAME)
        return 0; /* wslay checks that a message was begun */
    free(in->msg);
    in->msg = NULL;
    in->type = -1;
    in->streaming = 0;
    in->len = 0;
    return opcode == WSLAY_BINARY_FRAME ? 0 : GP_WS_IN_NOT_BINARY;
}

int gp_ws_in_chunk(gp_ws_in *in, const uint8_t *p, size_t n) {
    if (in->ctrl || n == 0)
        return 0;
    if (in->type < 0) {
        in->type = *p++;
        n--;
        in->streaming = in->stream(in->ud, in->type);
    }
    if (in->len + n > GP_CH_PAYLOAD_MAX)
        return GP_WS_IN_TOO_LONG;
    if (n == 0)
        return 0;
    if (in->streaming) {
        in->piece(in->ud, p, n);
    } else {
        uint8_t *m = realloc(in->msg, in->len + n);
        if (m == NULL)
            return GP_WS_IN_NOMEM;
        in->msg = m;
        memcpy(in->msg + in->len, p, n);
    }
    in->len += n;
    return 0;
}

int gp_ws_in_end(gp_ws_in *in) {
    if (in->ctrl || !in->fin)
        return 0;
    int rc = in->type < 0 ? GP_WS_IN_NOT_BINARY : 0;
    if (rc == 0 && !in->streaming)
        in->whole(in->ud, in->type, in->msg, in->len);
    gp_ws_in_free(in);
    in->type = -1;
    in->len = 0;
    return rc;
}

const char *gp_ws_in_why(int rc) {
    switch (rc) {
    case GP_WS_IN_NOT_BINARY:
        return "message: every message is binary: a type byte, then its payload";
    case GP_WS_IN_TOO_LONG:
        return GP_CH_TOO_LONG;
    case GP_WS_IN_NOMEM:
        return "out of memory";
    default:
        return "message: malformed";
    }
}

void gp_ws_in_free(gp_ws_in *in) {
    free(in->msg);
    in->msg = NULL;
}

/* ---- A client's frame of one whole binary message ------------------------- */

size_t gp_ws_client_frame(uint8_t *out, const uint8_t key[4], const uint8_t *msg, size_t len) {
    size_t h = 0;
    out[h++] = 0x80 | WSLAY_BINARY_FRAME; /* FIN */
    if (len < 126) {
        out[h++] = 0x80 | (uint8_t)len; /* MASK */
    } else if (len <= UINT16_MAX) {
        out[h++] = 0x80 | 126;
        out[h++] = (uint8_t)(len >> 8);
        out[h++] = (uint8_t)len;
    } else {
        out[h++] = 0x80 | 127;
        for (int shift = 56; shift >= 0; shift -= 8)
            out[h++] = (uint8_t)((uint64_t)len >> shift);
    }
    memcpy(out + h, key, 4);
    h += 4;
    /* Byte i is masked with key[i % 4]: eight bytes at a time against the
     * key twice over, whatever the machine's byte order. */
    uint8_t *dst = out + h;
    uint8_t key8[8];
    uint64_t k;
    memcpy(key8, key, 4);
    memcpy(key8 + 4, key, 4);
    memcpy(&k, key8, 8);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, msg + i, 8);
        v ^= k;
        memcpy(dst + i, &v, 8);
    }
    for (; i < len; i++)
        dst[i] = msg[i] ^ key[i & 3];
    return h + len;
}
