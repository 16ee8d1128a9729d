/*
 * gp_channel.h — the session channel: the messages that carry a terminal,
 * an exec'd command and a forwarded port between the CLI (or a browser),
 * gpupoold and the executor that owns the session inside the task.
 *
 * One message is a type byte and a payload of at most GP_CH_PAYLOAD_MAX
 * bytes. Over the WebSocket (RFC 6455) between a client and gpupoold, each
 * message is one binary WebSocket message: the type byte, then the payload.
 * Over a byte stream (gpupoold to an executor's session socket) each message
 * is framed as the type byte, the payload's length in 4 bytes (big-endian)
 * and the payload. docs/api.md describes the messages for clients; the
 * types at 0x10 and above pass only between gpupoold and an executor and are
 * refused from a client.
 *
 * Every function here is pure (no I/O, no allocation): the daemon, the
 * executors, the CLI and the fuzz target share it.
 */
#ifndef GP_CHANNEL_H
#define GP_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

/* The largest payload of one message (a larger one is malformed), and the
 * sentence that refuses a larger one, wherever it is found. */
#define GP_CH_PAYLOAD_MAX 65536
#define GP_CH_TOO_LONG    "message: the payload is longer than 65536 bytes"
/* Bytes in front of a payload on a byte stream. */
#define GP_CH_HEAD 5

#define GP_CH_TYPES(XX)                                                                            \
    XX(STDIN, 0x01, "client: bytes for the terminal or the command's standard input")              \
    XX(STDOUT, 0x02, "server: output of the terminal or of the command")                           \
    XX(STDERR, 0x03, "server: standard error of a command run without a terminal")                 \
    XX(RESIZE, 0x04, "client: the terminal's size, rows and columns, 2 bytes each")                \
    XX(SIGNAL, 0x05, "client: a signal number (1 byte) for the terminal's foreground processes")   \
    XX(EXIT, 0x06, "server: exit code and terminating signal, 4 bytes each; the end")              \
    XX(DATA, 0x07, "both: bytes of a forwarded connection")                                        \
    XX(ERROR, 0x08, "server: why the session ended or was refused, as text; the end")              \
    XX(READY, 0x09, "server: the session is open (payload: a note, may be empty)")                 \
    XX(HELLO, 0x0a, "client: the first message, JSON (token, rows, cols, command, tty)")           \
    XX(EOF, 0x0b, "both: no more DATA or STDIN will come from this side")                          \
    XX(OPEN_ATTACH, 0x10, "daemon to executor: attach to the terminal (rows, cols)")               \
    XX(OPEN_EXEC, 0x11, "daemon to executor: rows, cols, tty (1 byte), then argv, NUL-separated")  \
    XX(OPEN_PORT, 0x12, "daemon to executor: connect to a port (2 bytes) of the task")             \
    XX(NOTICE, 0x13, "daemon to executor: text for the terminal to show (a word from the pool)")

typedef enum gp_ch_type {
#define GP_CH_ENUM_(name, num, doc) GP_CH_##name = num,
    GP_CH_TYPES(GP_CH_ENUM_)
#undef GP_CH_ENUM_
} gp_ch_type;

/* One message: a view into the bytes it was read from. */
typedef struct gp_ch_msg {
    int type;
    const uint8_t *payload;
    size_t len;
} gp_ch_msg;

/*
 * Judges a message a client sent (its type and payload, as one WebSocket
 * message carries them): 0 if a client may send it, else GP_EPARSE with why
 * filled (types the client may not send, a RESIZE that is not 4 bytes or
 * gives a zero size, a SIGNAL that is not 1 byte of 1..64, an oversized
 * payload).
 */
int gp_ch_client_check(int type, const uint8_t *payload, size_t len, char *why, size_t whylen);

/* Big-endian helpers for the fixed fields. */
static inline void gp_ch_put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void gp_ch_put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline uint32_t gp_ch_get16(const uint8_t *p) {
    return (uint32_t)p[0] << 8 | p[1];
}
static inline uint32_t gp_ch_get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* 1 if type is one of GP_CH_TYPES. */
static inline int gp_ch_type_known(int type) {
    switch (type) {
#define GP_CH_CASE_(name, num, doc) case num:
        GP_CH_TYPES(GP_CH_CASE_)
#undef GP_CH_CASE_
        return 1;
    default:
        return 0;
    }
}

/* Writes the stream head of a message of type with len payload bytes. */
static inline void gp_ch_head(uint8_t head[GP_CH_HEAD], int type, size_t len) {
    head[0] = (uint8_t)type;
    gp_ch_put32(head + 1, (uint32_t)len);
}

/*
 * Reads one stream-framed message from the n bytes at buf. Returns the bytes
 * it took (GP_CH_HEAD + payload) with *m filled, 0 when buf holds only part
 * of a message, or -1 for an unknown type or a payload longer than
 * GP_CH_PAYLOAD_MAX (the stream cannot be read further). Inline, with no
 * call out, so that a task's supervisor (system calls only) can use it.
 */
static inline long gp_ch_parse(const uint8_t *buf, size_t n, gp_ch_msg *m) {
    if (n < 1)
        return 0;
    if (!gp_ch_type_known(buf[0]))
        return -1;
    if (n < GP_CH_HEAD)
        return 0;
    uint32_t len = gp_ch_get32(buf + 1);
    if (len > GP_CH_PAYLOAD_MAX)
        return -1;
    if (n - GP_CH_HEAD < len)
        return 0;
    m->type = buf[0];
    m->payload = buf + GP_CH_HEAD;
    m->len = len;
    return (long)(GP_CH_HEAD + len);
}

#endif /* GP_CHANNEL_H */
