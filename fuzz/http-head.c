/*
 * http-head.c — fuzz target for the request head as gpupoold reads it:
 * libmicrohttpd's parser followed by gpd__head_check (src/daemon/http-head.c).
 *
 * One libmicrohttpd server runs in this process without a listening socket;
 * each input is written into one end of a socket pair whose other end is
 * handed to the server, the writing side is then closed, and the answer is
 * read to its end. The access handler answers 400 when gpd__head_check
 * refuses the head and 200 when it accepts it. A head that was accepted is
 * read again here, from the raw bytes, by the rules the daemon promises
 * (docs/security.md): every line ends in CR LF, header names are tokens,
 * values hold no control character but HTAB, no second Authorization, no
 * Content-Length twice or together with Transfer-Encoding. An accepted head
 * that breaks one of them is a finding (a trap).
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "daemon/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first verdict of the handler for the current input: 0 none yet, 1
 * accepted, 2 refused. Written by libmicrohttpd's thread before it answers,
 * read here after the answer has been read to its end. */
static int verdict;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    (void)cls;
    (void)url;
    (void)upload_data;
    gpd__head_raw *raw = *con_cls;
    if (raw == NULL)
        return MHD_NO;
    if (raw->uri != NULL) {
        gpd__err e = {0};
        int rc = gpd__head_check(conn, method, raw, version, &e);
        raw->uri = NULL; /* judged */
        int expected = 0;
        __atomic_compare_exchange_n(&verdict, &expected, rc == 0 ? 1 : 2, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        if (rc < 0) {
            struct MHD_Response *r =
                MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
            enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_BAD_REQUEST, r);
            MHD_destroy_response(r);
            return ret;
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
    (void)cls;
    (void)conn;
    gpd__head_raw *raw = calloc(1, sizeof *raw);
    if (raw != NULL)
        gpd__head_uri(raw, uri);
    return raw;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)conn;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static void quiet(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    (void)fmt;
    (void)ap;
}

static struct MHD_Daemon *server(void) {
    static struct MHD_Daemon *d;
    if (d == NULL)
        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_NO_LISTEN_SOCKET |
                                 MHD_USE_ITC | MHD_USE_ERROR_LOG,
                             0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, quiet,
                             NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
                             MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16 * 1024,
                             MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_END);
    if (d == NULL)
        abort();
    return d;
}

static int is_tchar(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Whether the first head in data keeps the rules above; 1 if it does, or
 * if the input holds no complete head (then nothing was accepted from it). */
static int head_is_strict(const uint8_t *data, size_t size) {
    size_t p = 0;
    /* Empty lines before the request line may be ignored (RFC 9112, 2.2). */
    while (p < size && (data[p] == '\r' || data[p] == '\n'))
        p++;
    int line = 0, auth = 0, cl = 0, te = 0;
    while (p < size) {
        size_t eol = p;
        while (eol < size && data[eol] != '\r' && data[eol] != '\n')
            eol++;
        if (eol < size && data[eol] == '\n') {
            /* A bare LF; one right after a NUL byte looks like CR LF in
             * libmicrohttpd 0.9.75's buffer, the gap docs/security.md states. */
            if (eol == p || data[eol - 1] != '\0')
                return 0;
            eol--;
            if (eol == p)
                return line > 0;
        } else if (eol + 1 >= size) {
            return 1; /* no complete line: not a complete head */
        } else if (data[eol + 1] != '\n') {
            return 0; /* a bare CR */
        }
        if (eol == p)
            return line > 0; /* the empty line ending the head */
        if (line == 0) {
            /* METHOD SP URI SP HTTP/1.x, with no control or non-ASCII byte */
            int spaces = 0;
            for (size_t i = p; i < eol; i++)
                if (data[i] == ' ')
                    spaces++;
                else if (data[i] < 0x21 || data[i] >= 0x7f)
                    return 0;
            if (spaces != 2)
                return 0;
        } else {
            size_t n = 0;
            while (p + n < eol && is_tchar(data[p + n]))
                n++;
            if (n == 0 || p + n == eol || data[p + n] != ':')
                return 0;
            for (size_t i = p + n + 1; i < eol; i++)
                if ((data[i] < 0x20 && data[i] != '\t') || data[i] == 0x7f)
                    return 0;
            const char *name = (const char *)data + p;
            if (n == 13 && strncasecmp(name, "Authorization", n) == 0)
                auth++;
            if (n == 14 && strncasecmp(name, "Content-Length", n) == 0)
                cl++;
            if (n == 17 && strncasecmp(name, "Transfer-Encoding", n) == 0)
                te++;
            if (auth > 1 || cl > 1 || (cl && te))
                return 0;
        }
        line++;
        p = eol + 2;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 12 * 1024)
        return 0; /* the head must fit the connection's memory */
    struct MHD_Daemon *d = server();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    __atomic_store_n(&verdict, 0, __ATOMIC_SEQ_CST);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    if (MHD_add_connection(d, sv[0], (struct sockaddr *)&sa, sizeof sa) != MHD_YES)
        abort();
    struct timeval tv = {5, 0};
    setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(sv[1], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t off = 0;
    while (off < size) {
        ssize_t w = send(sv[1], data + off, size - off, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    shutdown(sv[1], SHUT_WR);
    char buf[4096];
    while (recv(sv[1], buf, sizeof buf, 0) > 0)
        ;
    close(sv[1]);
    if (__atomic_load_n(&verdict, __ATOMIC_SEQ_CST) == 1 && !head_is_strict(data, size))
        __builtin_trap();
    return 0;
}
