/*
 * httpc.c — the HTTP/1.1 client of httpc.h. It reads responses through a
 * small buffer with a line reader for the head and exact-length reads for the
 * body, so that a keep-alive connection is left positioned at the start of
 * the next response.
 */
#include "common/httpc.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/files.h"
#include "common/gp_error.h"
#include "common/units.h"

struct gp_http_conn {
    int fd;          /* -1: reading from src instead (gp_http_parse_response) */
    const char *src; /* the rest of an in-memory response */
    size_t src_len;
    char host[300];
    char rbuf[16384];
    size_t rpos, rlen;
};

/* Splits server into host and port; the default port is gpupoold's 8642. */
static int split_server(const char *server, char *host, size_t hostlen, char *port, size_t portlen,
                        char *err, size_t errlen) {
    if (strncmp(server, "https://", 8) == 0) {
        snprintf(err, errlen, "server %s: https is not supported by this client", server);
        return GP_ENOTSUP;
    }
    if (strncmp(server, "http://", 7) == 0)
        server += 7;
    size_t n = strcspn(server, "/");
    char hp[256];
    if (n == 0 || n >= sizeof hp) {
        snprintf(err, errlen, "server \"%s\" is not HOST:PORT", server);
        return GP_EINVAL;
    }
    memcpy(hp, server, n);
    hp[n] = '\0';
    char *colon = strrchr(hp, ':');
    if (hp[0] == '[') { /* [::1]:8642 */
        char *close = strchr(hp, ']');
        if (!close) {
            snprintf(err, errlen, "server \"%s\" has an unclosed [", server);
            return GP_EINVAL;
        }
        *close = '\0';
        snprintf(host, hostlen, "%s", hp + 1);
        snprintf(port, portlen, "%s", close[1] == ':' ? close + 2 : "8642");
        return 0;
    }
    if (colon) {
        *colon = '\0';
        snprintf(port, portlen, "%s", colon + 1);
    } else {
        snprintf(port, portlen, "8642");
    }
    snprintf(host, hostlen, "%s", hp);
    return 0;
}

int gp_http_connect(const char *server, int timeout_ms, gp_http_conn **out, char *err,
                    size_t errlen) {
    char host[256], port[32];
    int rc = split_server(server, host, sizeof host, port, sizeof port, err, errlen);
    if (rc < 0)
        return rc;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "server %s: %s", server, gai_strerror(gai));
        return GP_EIO;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to %s: %s (is gpupoold running?)", server,
                 strerror(saved));
        return GP_EIO;
    }
    if (timeout_ms <= 0)
        timeout_ms = 60000;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    gp_http_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return GP_ENOMEM;
    }
    c->fd = fd;
    snprintf(c->host, sizeof c->host, "%s:%s", host, port);
    *out = c;
    return 0;
}

void gp_http_close(gp_http_conn *c) {
    if (!c)
        return;
    close(c->fd);
    free(c);
}

/* Ensures at least one unread byte in the buffer; -1 on EOF or error. */
static int fill(gp_http_conn *c) {
    if (c->rpos < c->rlen)
        return 0;
    if (c->fd < 0) {
        size_t n = c->src_len < sizeof c->rbuf ? c->src_len : sizeof c->rbuf;
        if (n == 0)
            return -1;
        memcpy(c->rbuf, c->src, n);
        c->src += n;
        c->src_len -= n;
        c->rpos = 0;
        c->rlen = n;
        return 0;
    }
    for (;;) {
        ssize_t r = recv(c->fd, c->rbuf, sizeof c->rbuf, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c->rpos = 0;
        c->rlen = (size_t)r;
        return 0;
    }
}

/* Reads one CRLF-terminated line (without the CRLF); -1 on error or overlong. */
static int read_line(gp_http_conn *c, char *line, size_t len) {
    size_t n = 0;
    for (;;) {
        if (fill(c) < 0)
            return -1;
        char ch = c->rbuf[c->rpos++];
        if (ch == '\n')
            break;
        if (n + 1 >= len)
            return -1;
        line[n++] = ch;
    }
    if (n > 0 && line[n - 1] == '\r')
        n--;
    line[n] = '\0';
    return 0;
}

/* Appends exactly n bytes from the connection to body; -1 on a short read or
 * when the body would pass GP_HTTP_BODY_MAX. The bound is checked before any
 * arithmetic on n, which comes from the server and may be anything up to
 * SIZE_MAX. */
static int read_exact(gp_http_conn *c, char **body, size_t *blen, size_t n) {
    if (n > GP_HTTP_BODY_MAX || *blen > GP_HTTP_BODY_MAX - n) {
        errno = EMSGSIZE;
        return -1;
    }
    char *nb = realloc(*body, *blen + n + 1);
    if (!nb)
        return -1;
    *body = nb;
    while (n > 0) {
        if (fill(c) < 0)
            return -1;
        size_t take = c->rlen - c->rpos;
        if (take > n)
            take = n;
        memcpy(*body + *blen, c->rbuf + c->rpos, take);
        c->rpos += take;
        *blen += take;
        n -= take;
    }
    (*body)[*blen] = '\0';
    return 0;
}

/* Parses a header's decimal (base 10) or chunk-size (base 16) number with
 * gp_parse_uint: digits only, optional surrounding blanks (and, for chunks,
 * extensions after ';'), at most GP_HTTP_BODY_MAX. Returns 0, or -1 for
 * anything else. */
static int parse_count(const char *s, int base, size_t *out) {
    s += strspn(s, " \t");
    uint64_t v;
    if (gp_parse_uint(s, &s, base, GP_HTTP_BODY_MAX, &v) < 0)
        return -1;
    s += strspn(s, " \t");
    if (*s && !(base == 16 && *s == ';'))
        return -1;
    *out = (size_t)v;
    return 0;
}

static int read_response(gp_http_conn *c, gp_http_resp *resp) {
    char line[8192];
    if (read_line(c, line, sizeof line) < 0)
        return -1;
    int status = 0;
    if (sscanf(line, "HTTP/%*d.%*d %d", &status) != 1)
        return -1;
    size_t clen = 0;
    int have_clen = 0, chunked = 0;
    long long log_offset = -1;
    for (;;) {
        if (read_line(c, line, sizeof line) < 0)
            return -1;
        if (line[0] == '\0')
            break;
        if (strncasecmp(line, "Content-Length:", 15) == 0) {
            size_t v;
            if (parse_count(line + 15, 10, &v) < 0 || (have_clen && v != clen))
                return -1;
            clen = v;
            have_clen = 1;
        }
        if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strcasestr(line, "chunked"))
            chunked = 1;
        if (strncasecmp(line, "X-Log-Offset:", 13) == 0) {
            const char *s = line + 13 + strspn(line + 13, " \t");
            uint64_t v;
            if (gp_parse_uint(s, &s, 10, INT64_MAX, &v) < 0 || s[strspn(s, " \t")] != '\0')
                return -1;
            log_offset = (long long)v;
        }
    }
    char *body = malloc(1);
    size_t blen = 0;
    if (!body)
        return -1;
    body[0] = '\0';
    int rc = 0;
    if (chunked) {
        for (;;) {
            if (read_line(c, line, sizeof line) < 0) {
                rc = -1;
                break;
            }
            size_t n;
            if (parse_count(line, 16, &n) < 0) {
                rc = -1;
                break;
            }
            if (n == 0) {
                /* Trailers end with an empty line. */
                do {
                    if (read_line(c, line, sizeof line) < 0) {
                        rc = -1;
                        break;
                    }
                } while (line[0] != '\0');
                break;
            }
            if (read_exact(c, &body, &blen, n) < 0 || read_line(c, line, sizeof line) < 0) {
                rc = -1;
                break;
            }
        }
    } else if (have_clen) {
        rc = clen > 0 ? read_exact(c, &body, &blen, clen) : 0;
    } else if (status != 204 && status != 304) {
        /* No framing: the body runs to the end of the connection. */
        while (fill(c) == 0) {
            size_t n = c->rlen - c->rpos;
            if (read_exact(c, &body, &blen, n) < 0) {
                rc = -1;
                break;
            }
        }
    }
    if (rc < 0) {
        free(body);
        return -1;
    }
    resp->status = status;
    resp->body = body;
    resp->len = blen;
    resp->log_offset = log_offset;
    return 0;
}

int gp_http_parse_response(const char *data, size_t len, gp_http_resp *resp) {
    memset(resp, 0, sizeof *resp);
    gp_http_conn *c = calloc(1, sizeof *c);
    if (!c)
        return GP_ENOMEM;
    c->fd = -1;
    c->src = data;
    c->src_len = len;
    int rc = read_response(c, resp) < 0 ? GP_EPARSE : 0;
    free(c);
    return rc;
}

int gp_http_send(gp_http_conn *c, const char *method, const char *path, const char *token,
                 const char *body, size_t body_len, gp_http_resp *resp, char *err, size_t errlen) {
    memset(resp, 0, sizeof *resp);
    char head[4096];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: gpupool\r\n"
                     "Accept: application/json\r\n",
                     method, path, c->host);
    if (token && *token)
        n += snprintf(head + n, sizeof head - (size_t)n, "Authorization: Bearer %s\r\n", token);
    if (body)
        n += snprintf(head + n, sizeof head - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n", body_len);
    else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
             strcmp(method, "PATCH") == 0)
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: 0\r\n");
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    if (n >= (int)sizeof head) {
        snprintf(err, errlen, "request head too long (path %s)", path);
        return GP_EINVAL;
    }
    if (gp_send_all(c->fd, head, (size_t)n) < 0 ||
        (body && gp_send_all(c->fd, body, body_len) < 0)) {
        snprintf(err, errlen, "sending to %s failed: %s", c->host, strerror(errno));
        return GP_EIO;
    }
    if (read_response(c, resp) < 0) {
        snprintf(err, errlen, "no complete answer from %s: %s", c->host,
                 errno ? strerror(errno) : "connection closed");
        return GP_EIO;
    }
    return 0;
}

int gp_http_request(const char *server, const char *method, const char *path, const char *token,
                    const char *body, gp_http_resp *resp, char *err, size_t errlen) {
    gp_http_conn *c;
    memset(resp, 0, sizeof *resp);
    int rc = gp_http_connect(server, 0, &c, err, errlen);
    if (rc < 0)
        return rc;
    rc = gp_http_send(c, method, path, token, body, body ? strlen(body) : 0, resp, err, errlen);
    gp_http_close(c);
    return rc;
}

void gp_http_resp_free(gp_http_resp *resp) {
    free(resp->body);
    resp->body = NULL;
    resp->len = 0;
}
