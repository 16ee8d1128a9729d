/*
 * cmd-session.c — interactive work from the command line: `run -it`,
 * `attach`, `exec`, `port-forward` and `notebook`. Each session is one
 * WebSocket (RFC 6455, framed by libwslay, but for a forwarded port's data,
 * which is framed and masked here a word at a time: gp_ws_client_frame) to
 * gpupoold's session routes, carrying the channel messages of
 * common/gp_channel.h (docs/api.md, "Sessions").
 *
 * A terminal session puts the local terminal in raw mode (restored on every
 * way out), sends its size at the start and on SIGWINCH, passes every byte
 * typed (Ctrl-C included: the remote terminal makes it SIGINT) except the
 * detach sequence Ctrl-P Ctrl-Q, and exits with the command's status. A
 * forwarded port listens on loopback only and opens one WebSocket per
 * accepted connection, each relayed by a thread of its own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "cli/cli.h"
#include "common/files.h"
#include "common/gp_channel.h"
#include "common/gp_ws.h"

#define DETACH_1   0x10 /* Ctrl-P */
#define DETACH_2   0x11 /* Ctrl-Q */
#define QUEUE_MAX  (256 * 1024)
#define HEAD_MAX   16384
#define RELAY_MSGS 4 /* DATA messages read from a forwarded connection at a time */
#define RELAY_SLOT (1 + GP_CH_PAYLOAD_MAX)
#define SOCK_IO    GP_WS_IO                             /* bytes per recv() on the WebSocket */
#define FRAME_MAX  (GP_WS_CLIENT_HEAD_MAX + RELAY_SLOT) /* one DATA message framed */
#define WBUF_CAP   (RELAY_MSGS * FRAME_MAX)             /* bytes per send() at most */
#define MASK_KEYS  256

/* ---- One WebSocket ------------------------------------------------------- */

typedef struct wsconn {
    int fd;
    wslay_event_context_ptr ctx;
    /* wslay reads and writes at most 4 KiB at a time: the socket is read
     * SOCK_IO bytes and written up to WBUF_CAP bytes per system call
     * through these (rb first holds what came with the handshake; wbuf
     * also takes the frames a forwarded port's data is written in). */
    gp_ws_rbuf rb;
    uint8_t *wbuf;
    size_t wlen;
    uint8_t keys[MASK_KEYS]; /* random bytes for masking keys, used from the end */
    size_t nkeys;
    /* What the session got: */
    int ready, ended, code; /* code: the exit status, once ended */
    char error[512];
    int out_fd; /* where STDOUT / DATA go (-1: stdout) */
    int peer_eof;
} wsconn;

static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                          void *ud) {
    wsconn *w = ud;
    (void)flags;
    return gp_ws_recv_buffered(ctx, w->fd, &w->rb, buf, len);
}

/* Writes what wbuf holds, as far as the socket takes it: 0, or -1 once
 * the connection is gone. */
static int ws_flush(wsconn *w) {
    size_t done = 0;
    while (done < w->wlen) {
        ssize_t r = send(w->fd, w->wbuf + done, w->wlen - done, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    memmove(w->wbuf, w->wbuf + done, w->wlen - done);
    w->wlen -= done;
    return 0;
}

/* Takes what wslay sends into wbuf, written once full or once wslay is
 * done (ws_pump). */
static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                          void *ud) {
    wsconn *w = ud;
    (void)flags;
    if (w->wlen == WBUF_CAP && ws_flush(w) < 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    if (w->wlen == WBUF_CAP) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t n = WBUF_CAP - w->wlen < len ? WBUF_CAP - w->wlen : len;
    memcpy(w->wbuf + w->wlen, data, n);
    w->wlen += n;
    return (ssize_t)n;
}

/* 1 while something waits to be written to the socket. */
static int ws_want_write(const wsconn *w) {
    return w->wlen > 0 || wslay_event_want_write(w->ctx);
}

/* A frame's masking key: from getrandom, MASK_KEYS bytes per system call
 * instead of one system call per frame. */
static int ws_mask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud) {
    wsconn *w = ud;
    (void)ctx;
    if (len > sizeof w->keys)
        return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
    if (w->nkeys < len) {
        if (getrandom(w->keys, sizeof w->keys, 0) != (ssize_t)sizeof w->keys)
            return -1;
        w->nkeys = sizeof w->keys;
    }
    w->nkeys -= len;
    memcpy(buf, w->keys + w->nkeys, len);
    return 0;
}

static void ws_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                      void *ud) {
    wsconn *w = ud;
    (void)ctx;
    if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
        w->ended = w->ended ? w->ended : 2;
        return;
    }
    if (arg->opcode != WSLAY_BINARY_FRAME || arg->msg_length < 1)
        return;
    const uint8_t *p = arg->msg + 1;
    size_t n = arg->msg_length - 1;
    switch (arg->msg[0]) {
    case GP_CH_READY:
        w->ready = 1;
        break;
    case GP_CH_STDOUT:
    case GP_CH_DATA:
        if (gp_write_all(w->out_fd >= 0 ? w->out_fd : STDOUT_FILENO, p, n) < 0 && w->out_fd >= 0)
            w->ended = 2;
        break;
    case GP_CH_STDERR:
        gp_write_all(STDERR_FILENO, p, n);
        break;
    case GP_CH_EOF:
        w->peer_eof = 1;
        break;
    case GP_CH_EXIT:
        if (n == 8) {
            int32_t code = (int32_t)gp_ch_get32(p), sig = (int32_t)gp_ch_get32(p + 4);
            w->code = sig != 0 ? 128 + sig : code;
            w->ended = 1;
        }
        break;
    case GP_CH_ERROR:
        snprintf(w->error, sizeof w->error, "%.*s", (int)(n < 500 ? n : 500), (const char *)p);
        w->ended = 3;
        break;
    default:
        break;
    }
}

static void ws_close(wsconn *w) {
    if (w->ctx != NULL)
        wslay_event_context_free(w->ctx);
    if (w->fd >= 0)
        close(w->fd);
    free(w->rb.buf);
    free(w->wbuf);
    memset(w, 0, sizeof *w);
    w->fd = -1;
}

/* The host and port of a server address ("http://h:p", "h:p"). */
static int split_server(const char *server, char *host, size_t hl, char *port, size_t pl) {
    const char *s = server;
    if (strncmp(s, "http://", 7) == 0)
        s += 7;
    const char *colon = strrchr(s, ':');
    if (colon == NULL)
        return -1;
    snprintf(host, hl, "%.*s", (int)(colon - s), s);
    snprintf(port, pl, "%.*s", (int)strcspn(colon + 1, "/"), colon + 1);
    return 0;
}

/*
 * Opens a WebSocket on path: EXIT_OK with *w connected (non-blocking), or
 * the CLI's exit code after printing why (the server's refusal as its
 * message says it, with the exit code of its status).
 */
static int ws_open(cli *c, const char *path, wsconn *w) {
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->out_fd = -1;
    char host[256], port[32];
    if (strncmp(c->server, "https://", 8) == 0) {
        fprintf(stderr, "gpupool: sessions over https are not supported by this CLI yet\n");
        return EXIT_ERROR;
    }
    if (split_server(c->server, host, sizeof host, port, sizeof port) < 0) {
        fprintf(stderr, "gpupool: server %s is not HOST:PORT\n", c->server);
        return EXIT_USAGE;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL) {
        fprintf(stderr, "gpupool: cannot resolve %s\n", c->server);
        return EXIT_UNREACHABLE;
    }
    w->fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (w->fd < 0 || connect(w->fd, res->ai_addr, res->ai_addrlen) < 0) {
        fprintf(stderr, "gpupool: cannot connect to %s: %s\n", c->server, strerror(errno));
        freeaddrinfo(res);
        ws_close(w);
        return EXIT_UNREACHABLE;
    }
    freeaddrinfo(res);
    int one = 1;
    setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint8_t raw[16];
    char key[32], want[GP_WS_ACCEPT_LEN + 1], req[2048];
    if (getrandom(raw, sizeof raw, 0) != sizeof raw) {
        ws_close(w);
        return EXIT_ERROR;
    }
    EVP_EncodeBlock((unsigned char *)key, raw, 16);
    if (gp_ws_accept(key, want) < 0) {
        ws_close(w);
        return EXIT_ERROR;
    }
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: "
                     "Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                     path, host, port, key, c->token[0] ? "Authorization: Bearer " : "", c->token,
                     c->token[0] ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof req || gp_write_all(w->fd, (uint8_t *)req, (size_t)n) < 0) {
        fprintf(stderr, "gpupool: cannot send to %s: %s\n", c->server, strerror(errno));
        ws_close(w);
        return EXIT_UNREACHABLE;
    }
    char *buf = malloc(HEAD_MAX + 1);
    size_t got = 0;
    char *end = NULL;
    while (buf != NULL && got < HEAD_MAX && (end = strstr(buf, "\r\n\r\n")) == NULL) {
        ssize_t r = recv(w->fd, buf + got, HEAD_MAX - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
    }
    int status = 0;
    if (end == NULL || sscanf(buf, "HTTP/1.1 %d", &status) != 1) {
        fprintf(stderr, "gpupool: %s did not answer the WebSocket handshake\n", c->server);
        free(buf);
        ws_close(w);
        return EXIT_UNREACHABLE;
    }
    size_t head = (size_t)(end - buf) + 4;
    if (status != 101) {
        /* The refusal: its JSON body says why. */
        long clen = 0;
        for (char *l = strcasestr(buf, "\r\ncontent-length:"); l != NULL && l < end; l = NULL)
            clen = strtol(l + 17, NULL, 10);
        while (clen > 0 && got < head + (size_t)clen && got < HEAD_MAX) {
            ssize_t r = recv(w->fd, buf + got, HEAD_MAX - got, 0);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        buf[got] = '\0';
        json_t *j = json_loads(buf + head, 0, NULL);
        const char *msg =
            json_string_value(json_object_get(json_object_get(j, "error"), "message"));
        char *shown = cli_visible(msg != NULL ? msg : buf + head);
        fprintf(stderr, "gpupool: %s\n", shown != NULL ? shown : "refused");
        free(shown);
        json_decref(j);
        free(buf);
        ws_close(w);
        return cli_exit_for_status(status);
    }
    char line[64];
    snprintf(line, sizeof line, "\r\nSec-WebSocket-Accept: %s\r\n", want);
    if (strcasestr(buf, line) == NULL) {
        fprintf(stderr, "gpupool: %s answered a wrong Sec-WebSocket-Accept\n", c->server);
        free(buf);
        ws_close(w);
        return EXIT_UNREACHABLE;
    }
    w->rb.buf = malloc(got - head > SOCK_IO ? got - head : SOCK_IO);
    w->rb.keep = 1;
    w->wbuf = malloc(WBUF_CAP);
    if (w->rb.buf == NULL || w->wbuf == NULL) {
        free(buf);
        ws_close(w);
        return EXIT_ERROR;
    }
    memcpy(w->rb.buf, buf + head, got - head);
    w->rb.len = got - head;
    free(buf);
    static const struct wslay_event_callbacks cb = {ws_recv_cb, ws_send_cb, ws_mask_cb, NULL,
                                                    NULL,       NULL,       ws_msg_cb};
    if (wslay_event_context_client_init(&w->ctx, &cb, w) != 0) {
        ws_close(w);
        return EXIT_ERROR;
    }
    wslay_event_config_set_max_recv_msg_length(w->ctx, GP_CH_PAYLOAD_MAX + 1);
    fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) | O_NONBLOCK);
    return EXIT_OK;
}

/* One round of reading and writing the WebSocket; -1 once it is gone. */
static int ws_pump(wsconn *w, short revents) {
    if (revents & (POLLIN | POLLHUP | POLLERR))
        gp_ws_rbuf_ready(&w->rb);
    if ((revents & (POLLIN | POLLHUP | POLLERR)) || gp_ws_rbuf_held(&w->rb))
        if (wslay_event_recv(w->ctx) != 0)
            return -1;
    if (wslay_event_want_write(w->ctx) && wslay_event_send(w->ctx) != 0)
        return -1;
    if (ws_flush(w) < 0)
        return -1;
    if (!wslay_event_want_read(w->ctx) && !ws_want_write(w))
        return -1;
    return 0;
}

/* ---- Terminal sessions --------------------------------------------------- */

static struct termios saved;
static int raw_on;
static int winch_pipe[2] = {-1, -1};

static void restore_terminal(void) {
    if (raw_on)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    raw_on = 0;
}

static void on_winch(int sig) {
    (void)sig;
    int e = errno;
    (void)!write(winch_pipe[1], "w", 1);
    errno = e;
}

static void term_size(uint16_t *rows, uint16_t *cols) {
    struct winsize ws;
    *rows = 24;
    *cols = 80;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    }
}

/*
 * Runs a terminal (or exec) session on w until it ends: hello is sent
 * first; with tty the local terminal is raw while it runs. Returns the
 * command's exit status, or the CLI's exit code when it did not start or
 * was cut.
 */
static int terminal_session(wsconn *w, json_t *hello, int tty, uint64_t id, int detachable) {
    uint16_t rows, cols;
    int interactive = tty && isatty(STDIN_FILENO);
    term_size(&rows, &cols);
    if (tty) {
        json_object_set_new(hello, "rows", json_integer(rows));
        json_object_set_new(hello, "cols", json_integer(cols));
    }
    char *text = json_dumps(hello, JSON_COMPACT);
    gp_ws_queue(w->ctx, GP_CH_HELLO, text, strlen(text));
    free(text);
    if (interactive && tcgetattr(STDIN_FILENO, &saved) == 0) {
        struct termios raw = saved;
        cfmakeraw(&raw);
        if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0) {
            raw_on = 1;
            atexit(restore_terminal);
        }
    }
    if (tty && pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_winch;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGWINCH, &sa, NULL);
    }
    int stdin_open = 1, held_p = 0, detached = 0, lost = 0;
    uint8_t buf[16384 + 1];
    while (!w->ended) {
        struct pollfd pf[3] = {{w->fd, POLLIN, 0}, {-1, POLLIN, 0}, {winch_pipe[0], POLLIN, 0}};
        if (ws_want_write(w))
            pf[0].events |= POLLOUT;
        if (stdin_open && w->ready && wslay_event_get_queued_msg_length(w->ctx) < QUEUE_MAX)
            pf[1].fd = STDIN_FILENO;
        if (poll(pf, 3, -1) < 0 && errno != EINTR)
            break;
        if (pf[2].revents & POLLIN) {
            char drain[16];
            while (read(winch_pipe[0], drain, sizeof drain) > 0) {
            }
            uint8_t p[4];
            term_size(&rows, &cols);
            gp_ch_put16(p, rows);
            gp_ch_put16(p + 2, cols);
            gp_ws_queue(w->ctx, GP_CH_RESIZE, p, 4);
        }
        if (pf[1].revents & (POLLIN | POLLHUP)) {
            ssize_t r = read(STDIN_FILENO, buf + 1, sizeof buf - 1);
            if (r <= 0) {
                stdin_open = 0;
                if (!tty)
                    gp_ws_queue(w->ctx, GP_CH_EOF, NULL, 0);
            }
            /* The detach sequence, Ctrl-P Ctrl-Q, may come split over two
             * reads: a Ctrl-P at the end is held back until the next. */
            size_t start = 1, n = r > 0 ? (size_t)r + 1 : 1;
            if (held_p) {
                buf[0] = DETACH_1;
                start = 0;
                held_p = 0;
            }
            for (size_t i = start; detachable && interactive && i + 1 < n; i++) {
                if (buf[i] == DETACH_1 && buf[i + 1] == DETACH_2) {
                    detached = 1;
                    n = i;
                }
            }
            if (!detached && detachable && interactive && n > start && buf[n - 1] == DETACH_1) {
                held_p = 1;
                n--;
            }
            if (n > start)
                gp_ws_queue(w->ctx, GP_CH_STDIN, buf + start, n - start);
        }
        if (ws_pump(w, pf[0].revents) < 0) {
            if (!w->ended)
                lost = 1;
            break;
        }
        if (detached) {
            wslay_event_queue_close(w->ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
            for (int i = 0; i < 100 && ws_want_write(w); i++) {
                struct pollfd p = {w->fd, POLLOUT, 0};
                poll(&p, 1, 10);
                if (wslay_event_send(w->ctx) != 0 || ws_flush(w) < 0)
                    break;
            }
            break;
        }
    }
    restore_terminal();
    if (detached) {
        fprintf(stderr, "\ngpupool: detached; workload %llu keeps running (gpupool attach %llu)\n",
                (unsigned long long)id, (unsigned long long)id);
        return EXIT_OK;
    }
    if (w->ended == 1)
        return w->code;
    if (w->ended == 3) {
        char *shown = cli_visible(w->error);
        fprintf(stderr, "\ngpupool: %s\n", shown != NULL ? shown : w->error);
        free(shown);
        return w->ready ? EXIT_ERROR : EXIT_CONFLICT;
    }
    (void)lost;
    fprintf(stderr,
            "\ngpupool: the connection to gpupoold was lost; workload %llu keeps running "
            "(gpupool attach %llu)\n",
            (unsigned long long)id, (unsigned long long)id);
    return EXIT_UNREACHABLE;
}

static int parse_id(const char *cmd, const char *s, uint64_t *id) {
    int64_t v;
    if (cli_parse_int(cmd, "ID", s, 1, INT64_MAX, &v) != EXIT_OK)
        return EXIT_USAGE;
    *id = (uint64_t)v;
    return EXIT_OK;
}

static int attach_to(cli *c, uint64_t id) {
    char path[128];
    snprintf(path, sizeof path, "/api/v1/workloads/%llu/attach", (unsigned long long)id);
    wsconn w;
    int rc = ws_open(c, path, &w);
    if (rc != EXIT_OK)
        return rc;
    json_t *hello = json_object();
    rc = terminal_session(&w, hello, 1, id, 1);
    json_decref(hello);
    ws_close(&w);
    return rc;
}

static int wait_running(cli *c, uint64_t id);

/* Attach to a session that is not running: one that is suspended (by its
 * owner, or by its project's idle policy) or paused (by the idle policy, or
 * to give its GPUs to other work) is resumed first, and attach waits until
 * it runs again, as run -it does. */
int cmd_attach(cli *c, int argc, char **argv) {
    uint64_t id;
    if (argc != 2)
        return cli_usage("attach", "usage: gpupool attach ID");
    if (parse_id("attach", argv[1], &id) != EXIT_OK)
        return EXIT_USAGE;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/workloads/%llu", (unsigned long long)id);
    json_t *w = NULL;
    int rc = cli_call(c, "GET", path, NULL, &w, NULL, NULL);
    if (rc != EXIT_OK)
        return rc;
    int st = cli_wl_state(w);
    int suspended = st == GP_WL_SUSPENDED, paused = st == GP_WL_PAUSED;
    int waiting = st == GP_WL_PENDING || st == GP_WL_STARTING;
    if (suspended || paused) {
        /* Only its owner brings it back this way: an admin, who may resume
         * it, may still not attach, and must not resume it by trying. */
        json_t *me = NULL;
        rc = cli_call(c, "GET", "/api/v1/whoami", NULL, &me, NULL, NULL);
        const char *owner = json_string_value(json_object_get(w, "user"));
        if (rc == EXIT_OK && (owner == NULL || strcmp(owner, cli_str(me, "user")) != 0)) {
            fprintf(stderr,
                    "gpupool: workload %llu is %s and belongs to %s: only its owner may "
                    "attach to it (and so resume it)\n",
                    (unsigned long long)id, gp_wl_state_name((gp_wl_state)st),
                    owner != NULL ? cli_str(w, "user") : "another user");
            rc = EXIT_AUTH;
        }
        json_decref(me);
        if (rc != EXIT_OK) {
            json_decref(w);
            return rc;
        }
        const char *why = json_string_value(json_object_get(w, "reason"));
        char *shown = why != NULL ? cli_visible(why) : NULL;
        fprintf(stderr, "gpupool: workload %llu was %s%s%s\n%s\n", (unsigned long long)id,
                gp_wl_state_name((gp_wl_state)st), shown != NULL ? ": " : "",
                shown != NULL ? shown : "",
                paused ? "gpupool: resuming it where it was (its processes were kept)"
                       : "gpupool: resuming it; its command starts again from the beginning");
        free(shown);
        snprintf(path, sizeof path, "/api/v1/workloads/%llu/resume", (unsigned long long)id);
        json_t *r = NULL;
        rc = cli_call(c, "POST", path, NULL, &r, NULL, NULL);
        json_decref(r);
        /* One paused to give its GPUs to other work resumes by itself once
         * a GPU is free (the answer said so): attach waits for it. */
        if (paused && rc != EXIT_AUTH)
            rc = EXIT_OK;
    }
    json_decref(w);
    if (rc == EXIT_OK && (suspended || paused || waiting))
        rc = wait_running(c, id);
    if (rc != EXIT_OK)
        return rc;
    return attach_to(c, id);
}

int cmd_exec(cli *c, int argc, char **argv) {
    int tty = 0, i = 1;
    for (; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "-it") == 0 || strcmp(argv[i], "-ti") == 0 ||
            strcmp(argv[i], "-t") == 0 || strcmp(argv[i], "--tty") == 0)
            tty = 1;
        else if (strcmp(argv[i], "-i") != 0)
            return cli_usage("exec", "unknown option %s", argv[i]);
    uint64_t id;
    if (i >= argc || parse_id("exec", argv[i], &id) != EXIT_OK)
        return cli_usage("exec", "usage: gpupool exec [-it] ID -- COMMAND [ARGS...]");
    i++;
    if (i < argc && strcmp(argv[i], "--") == 0)
        i++;
    if (i >= argc)
        return cli_usage("exec", "the command to run goes after --");
    json_t *cmd = json_array();
    for (; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    char path[128];
    snprintf(path, sizeof path, "/api/v1/workloads/%llu/exec", (unsigned long long)id);
    wsconn w;
    int rc = ws_open(c, path, &w);
    if (rc != EXIT_OK) {
        json_decref(cmd);
        return rc;
    }
    json_t *hello = json_pack("{s:o, s:b}", "command", cmd, "tty", tty);
    rc = terminal_session(&w, hello, tty, id, 0);
    json_decref(hello);
    ws_close(&w);
    return rc;
}

/* ---- run -it ------------------------------------------------------------- */

/* Waits until workload id runs: EXIT_OK, or its end as an exit code. */
static int wait_running(cli *c, uint64_t id) {
    char path[96], said[512] = "";
    snprintf(path, sizeof path, "/api/v1/workloads/%llu", (unsigned long long)id);
    for (;;) {
        json_t *w;
        int rc = cli_call(c, "GET", path, NULL, &w, NULL, NULL);
        if (rc != EXIT_OK)
            return rc;
        const char *why = json_string_value(json_object_get(w, "pending_reason"));
        int s = cli_wl_state(w), done = s == GP_WL_RUNNING, over = cli_wl_over(w);
        if (why != NULL && s == GP_WL_PENDING && strncmp(why, "not pending", 11) != 0 &&
            strcmp(why, said) != 0) {
            char *shown = cli_visible(why);
            fprintf(stderr, "gpupool: waiting: %s\n", shown != NULL ? shown : why);
            free(shown);
            snprintf(said, sizeof said, "%s", why);
        }
        if (over) {
            /* The reason may hold what the workload was submitted with. */
            const char *reason = json_object_get(w, "reason") ? cli_str(w, "reason") : NULL;
            fprintf(stderr, "gpupool: workload %llu is %s%s%s\n", (unsigned long long)id,
                    cli_str(w, "state"), reason ? ": " : "", reason ? reason : "");
        }
        json_decref(w);
        if (done)
            return EXIT_OK;
        if (over)
            return EXIT_FAILED;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* The default command: the user's login shell, as the task's environment
 * names it (the task runs as the token's Unix user). */
static const char *const login_shell[] = {"/bin/sh", "-c", "exec \"${SHELL:-/bin/sh}\" -l"};

/* Submits body (a submit command line in argv form) as an interactive
 * session and prints its id; EXIT_OK with *id set. */
static int submit_session(cli *c, const char *cmd, int argc, char **argv, json_t *extra_env,
                          int preemptible, uint64_t *id) {
    json_t *b = json_object(), *out = NULL;
    int rc = cli_submit_body(cmd, argc, argv, b);
    if (rc == EXIT_OK) {
        json_object_set_new(b, "tty", json_true());
        json_object_set_new(b, "kind", json_string("interactive"));
        /* Within the deserved quota it is never evicted; asked to be
         * preemptible it may also borrow beyond it, where it can be. */
        json_object_set_new(b, "preemptible", json_boolean(preemptible));
        if (extra_env != NULL) {
            json_t *env = json_object_get(b, "env");
            if (env == NULL)
                json_object_set_new(b, "env", env = json_object());
            json_object_update(env, extra_env);
        }
        rc = cli_call(c, "POST", "/api/v1/workloads", b, &out, NULL, NULL);
    }
    json_decref(b);
    if (rc != EXIT_OK)
        return rc;
    *id = (uint64_t)json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    fprintf(stderr, "gpupool: workload %llu\n", (unsigned long long)*id);
    return EXIT_OK;
}

/* argv of a submit command line: the flags given, then -- and the command
 * (deflt when none is given); --preemptible becomes its field. Every string
 * is a copy: free with free_argv. */
static char **session_argv(int argc, char **argv, int from, const char *const *deflt, int ndeflt,
                           int *outc, int *preemptible) {
    char **v = calloc((size_t)argc + (size_t)ndeflt + 3, sizeof *v);
    int n = 0, dashes = 0;
    if (v == NULL)
        return NULL;
    v[n++] = strdup(argv[0]);
    for (int i = from; i < argc; i++) {
        if (!dashes && strcmp(argv[i], "--preemptible") == 0) {
            *preemptible = 1;
            continue;
        }
        dashes |= strcmp(argv[i], "--") == 0;
        v[n++] = strdup(argv[i]);
    }
    if (!dashes) {
        v[n++] = strdup("--");
        for (int i = 0; i < ndeflt; i++)
            v[n++] = strdup(deflt[i]);
    }
    *outc = n;
    return v;
}

static void free_argv(char **v) {
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

int cmd_run(cli *c, int argc, char **argv) {
    int i = 1, tty = 0;
    for (; i < argc; i++)
        if (strcmp(argv[i], "-it") == 0 || strcmp(argv[i], "-ti") == 0)
            tty = 1;
        else if (strcmp(argv[i], "-i") != 0 && strcmp(argv[i], "-t") != 0)
            break;
        else
            tty = 1;
    if (!tty)
        return cli_usage("run", "only interactive sessions so far: gpupool run -it "
                                "[--project P] [REQUEST] [-- COMMAND]; batch work: gpupool submit");
    int n, preemptible = 0;
    char **v = session_argv(argc, argv, i, login_shell, 3, &n, &preemptible);
    if (v == NULL)
        return EXIT_ERROR;
    uint64_t id = 0;
    int rc = submit_session(c, "run", n, v, NULL, preemptible, &id);
    free_argv(v);
    if (rc == EXIT_OK)
        rc = wait_running(c, id);
    if (rc != EXIT_OK)
        return rc;
    return attach_to(c, id);
}

/* ---- port-forward -------------------------------------------------------- */

typedef struct fwd {
    cli *c;
    char path[160];
    int local;
} fwd;

/* Relays one accepted connection over its own WebSocket. */
static void *relay_one(void *arg) {
    fwd *f = arg;
    wsconn w;
    if (ws_open(f->c, f->path, &w) != EXIT_OK) {
        close(f->local);
        free(f);
        return NULL;
    }
    w.out_fd = f->local;
    gp_ws_queue(w.ctx, GP_CH_HELLO, "{}", 2);
    /* Each direction ends on its own (a half-close either way): the task's
     * EOF half-closes the local connection, whose upload goes on; the
     * local EOF is passed on after what came before it. gpupoold closes
     * the WebSocket once both have ended. */
    int local_open = 1, local_shut = 0;
    uint8_t *buf = malloc(RELAY_MSGS * RELAY_SLOT);
    while (buf != NULL && !w.ended) {
        if (w.peer_eof && !local_shut) {
            shutdown(f->local, SHUT_WR);
            local_shut = 1;
        }
        struct pollfd pf[2] = {{w.fd, POLLIN, 0}, {-1, POLLIN, 0}};
        if (ws_want_write(&w))
            pf[0].events |= POLLOUT;
        /* While wslay has nothing of its own to send, the data is framed
         * straight into wbuf (as many messages as it has room for);
         * otherwise it is queued to wslay, after what wslay holds. */
        int direct = !wslay_event_want_write(w.ctx);
        int msgs = direct ? (int)((WBUF_CAP - w.wlen) / FRAME_MAX) : RELAY_MSGS;
        if (local_open && w.ready && msgs > 0 &&
            (direct || wslay_event_get_queued_msg_length(w.ctx) < QUEUE_MAX))
            pf[1].fd = f->local;
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            /* One readv into msgs messages of GP_CH_PAYLOAD_MAX bytes,
             * each after its type byte: one system call, and each message
             * is framed or queued from where it was read. */
            struct iovec iov[RELAY_MSGS];
            for (int i = 0; i < msgs; i++)
                iov[i] = (struct iovec){buf + i * RELAY_SLOT + 1, GP_CH_PAYLOAD_MAX};
            ssize_t r = readv(f->local, iov, msgs);
            if (r <= 0) {
                local_open = 0;
                gp_ws_queue(w.ctx, GP_CH_EOF, NULL, 0);
            }
            for (size_t off = 0; r > 0 && off < (size_t)r; off += GP_CH_PAYLOAD_MAX) {
                uint8_t *m = buf + off / GP_CH_PAYLOAD_MAX * RELAY_SLOT;
                size_t n =
                    (size_t)r - off < GP_CH_PAYLOAD_MAX ? (size_t)r - off : GP_CH_PAYLOAD_MAX;
                m[0] = GP_CH_DATA;
                uint8_t key[4];
                if (direct && ws_mask_cb(w.ctx, key, sizeof key, &w) == 0) {
                    w.wlen += gp_ws_client_frame(w.wbuf + w.wlen, key, m, n + 1);
                } else {
                    direct = 0; /* later messages stay behind this one */
                    struct wslay_event_msg msg = {WSLAY_BINARY_FRAME, m, n + 1};
                    wslay_event_queue_msg(w.ctx, &msg);
                }
            }
        }
        if (ws_pump(&w, pf[0].revents) < 0)
            break;
    }
    if (w.ended == 3) {
        char *shown = cli_visible(w.error);
        fprintf(stderr, "gpupool: a connection to the task's port: %s\n",
                shown != NULL ? shown : w.error);
        free(shown);
    }
    free(buf);
    close(f->local);
    ws_close(&w);
    free(f);
    return NULL;
}

/* Listens on 127.0.0.1:local (0: any free port); the socket, or -1. */
static int listen_loopback(int local, int *bound) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)local);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

/* Accepts connections for ever, each relayed by its own thread. */
static int serve_forward(cli *c, int lfd, uint64_t id, int remote) {
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
                continue;
            fprintf(stderr, "gpupool: accept: %s\n", strerror(errno));
            return EXIT_ERROR;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fwd *f = calloc(1, sizeof *f);
        pthread_t th;
        if (f == NULL) {
            close(fd);
            continue;
        }
        f->c = c;
        f->local = fd;
        snprintf(f->path, sizeof f->path, "/api/v1/workloads/%llu/port-forward?port=%d",
                 (unsigned long long)id, remote);
        if (pthread_create(&th, NULL, relay_one, f) != 0) {
            close(fd);
            free(f);
            continue;
        }
        pthread_detach(th);
    }
}

/* The checks of a forward (yours, running, interactive, the port in
 * range), made once before listening: a refusal ends the command at once. */
static int forward_check(cli *c, uint64_t id, int remote) {
    char path[160];
    snprintf(path, sizeof path, "/api/v1/workloads/%llu/port-forward?port=%d",
             (unsigned long long)id, remote);
    json_t *out = NULL;
    int rc = cli_call(c, "GET", path, NULL, &out, NULL, NULL);
    json_decref(out);
    return rc;
}

int cmd_port_forward(cli *c, int argc, char **argv) {
    uint64_t id;
    if (argc != 3 || parse_id("port-forward", argv[1], &id) != EXIT_OK)
        return cli_usage("port-forward", "usage: gpupool port-forward ID [LOCAL:]REMOTE");
    int64_t local = 0, remote;
    const char *colon = strchr(argv[2], ':');
    char lbuf[16];
    if (colon != NULL) {
        snprintf(lbuf, sizeof lbuf, "%.*s", (int)(colon - argv[2]), argv[2]);
        if (cli_parse_int("port-forward", "LOCAL", lbuf, 0, 65535, &local) != EXIT_OK)
            return EXIT_USAGE;
    }
    if (cli_parse_int("port-forward", "REMOTE", colon ? colon + 1 : argv[2], 1, 65535, &remote) !=
        EXIT_OK)
        return EXIT_USAGE;
    if (colon == NULL)
        local = remote;
    int rc = forward_check(c, id, (int)remote);
    if (rc != EXIT_OK)
        return rc;
    int bound = 0;
    int lfd = listen_loopback((int)local, &bound);
    if (lfd < 0) {
        fprintf(stderr, "gpupool: cannot listen on 127.0.0.1:%lld: %s\n", (long long)local,
                strerror(errno));
        return EXIT_ERROR;
    }
    printf("Forwarding 127.0.0.1:%d -> workload %llu port %lld (Ctrl-C to stop)\n", bound,
           (unsigned long long)id, (long long)remote);
    fflush(stdout);
    return serve_forward(c, lfd, id, (int)remote);
}

/* ---- notebook ------------------------------------------------------------ */

/* 1 once the task's port takes a connection; 0 while it does not yet, or
 * the session could not be opened for now (not in time on a busy node, the
 * server busy): the caller asks again while the workload runs; -1 if it is
 * refused for good (not this user's, gone). */
static int port_answers(cli *c, uint64_t id, int remote) {
    char path[160];
    snprintf(path, sizeof path, "/api/v1/workloads/%llu/port-forward?port=%d",
             (unsigned long long)id, remote);
    wsconn w;
    int rc = ws_open(c, path, &w);
    if (rc != EXIT_OK)
        return rc == EXIT_AUTH || rc == EXIT_NOTFOUND || rc == EXIT_USAGE ? -1 : 0;
    gp_ws_queue(w.ctx, GP_CH_HELLO, "{}", 2);
    while (!w.ready && !w.ended) {
        struct pollfd pf = {w.fd, POLLIN, 0};
        if (ws_want_write(&w))
            pf.events |= POLLOUT;
        poll(&pf, 1, 1000);
        if (ws_pump(&w, pf.revents) < 0)
            break;
    }
    int ok = w.ready;
    ws_close(&w);
    return ok;
}

int cmd_notebook(cli *c, int argc, char **argv) {
    uint8_t raw[24], pick[2];
    char token[49], portarg[32], portflag[32];
    int local = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return cli_usage("notebook", "the command is Jupyter's: give no command");
        if (strcmp(argv[i], "--local-port") == 0 && i + 1 < argc) {
            int64_t v;
            if (cli_parse_int("notebook", "--local-port", argv[i + 1], 0, 65535, &v) != EXIT_OK)
                return EXIT_USAGE;
            local = (int)v;
            memmove(argv + i, argv + i + 2, (size_t)(argc - i - 2) * sizeof *argv);
            argc -= 2;
            i--;
        }
    }
    if (getrandom(raw, sizeof raw, 0) != sizeof raw ||
        getrandom(pick, sizeof pick, 0) != sizeof pick)
        return EXIT_ERROR;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    /* A port of its own in the task: tasks may share the host's network.
     * Drawn apart from the token, since the command that names it is seen by
     * the project's members and by everyone on the node (ps). */
    int remote = 20000 + (int)(((unsigned)pick[0] << 8 | pick[1]) % 40000);
    snprintf(portarg, sizeof portarg, "--port=%d", remote);
    snprintf(portflag, sizeof portflag, "--port-retries=0");
    /* Jupyter refuses to run as root without --allow-root: it is given only
     * when the daemon says this token's tasks run as root (whether they may
     * is the daemon's to say: --allow-root-workloads). */
    json_t *who = NULL;
    int rc = cli_call(c, "GET", "/api/v1/whoami", NULL, &who, NULL, NULL);
    if (rc != EXIT_OK)
        return rc;
    int as_root = json_is_true(json_object_get(who, "runs_as_root"));
    json_decref(who);
    const char *const jupyter[] = {"jupyter", "notebook", "--no-browser", "--ip=127.0.0.1",
                                   portarg,   portflag,   "--allow-root"};
    int n, preemptible = 0;
    char **v = session_argv(argc, argv, 1, jupyter, as_root ? 7 : 6, &n, &preemptible);
    if (v == NULL)
        return EXIT_ERROR;
    json_t *env = json_pack("{s:s}", "JUPYTER_TOKEN", token);
    uint64_t id = 0;
    rc = submit_session(c, "notebook", n, v, env, preemptible, &id);
    free_argv(v);
    json_decref(env);
    if (rc == EXIT_OK)
        rc = wait_running(c, id);
    if (rc != EXIT_OK)
        return rc;
    int bound = 0;
    int lfd = listen_loopback(local, &bound);
    if (lfd < 0) {
        fprintf(stderr, "gpupool: cannot listen on 127.0.0.1:%d: %s\n", local, strerror(errno));
        return EXIT_ERROR;
    }
    /* The URL once Jupyter answers (no limit on how long it takes to start;
     * the workload ending ends the wait). */
    for (;;) {
        int a = port_answers(c, id, remote);
        if (a == 1)
            break;
        if (a < 0 || wait_running(c, id) != EXIT_OK) {
            fprintf(stderr, "gpupool: the notebook did not start (gpupool logs %llu)\n",
                    (unsigned long long)id);
            return EXIT_FAILED;
        }
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    printf("Jupyter in workload %llu: http://127.0.0.1:%d/?token=%s\n", (unsigned long long)id,
           bound, token);
    printf("(forwarding 127.0.0.1:%d to its port %d; Ctrl-C stops the forwarding, "
           "gpupool delete %llu the notebook)\n",
           bound, remote, (unsigned long long)id);
    fflush(stdout);
    return serve_forward(c, lfd, id, remote);
}
