/*
 * http.c — libmicrohttpd glue: the front door of the API.
 *
 * libmicrohttpd runs event-driven (epoll) in a fixed pool of threads, so an
 * open connection costs a descriptor and a little memory, not a thread; a
 * handler waiting for a group commit holds only its own pool thread. What a
 * client may hold is bounded: connections in all and per client address
 * (libmicrohttpd's limits), the time to send a request head and a request
 * (http-guard.c; bytes do not restart these deadlines), the head's size and
 * the body's size. The request head is judged before any body is read: its
 * framing (one Content-Length, never together with chunked coding), the
 * route, the token and the role, and the declared body size. Only then is the
 * body collected (up to BODY_MAX), parsed if the route's body is JSON, and the
 * handler called. Errors become JSON bodies with the status of http_status(),
 * the one place where GP_E* codes become HTTP status codes.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/units.h"
#include "daemon/api.h"

#define BODY_MAX (1024 * 1024)

/* Memory libmicrohttpd gives each connection for the request head and its
 * buffers; a longer head is answered 431 by libmicrohttpd itself. */
#define CONN_MEMORY (16 * 1024)

/* What a route's body is (GPD__ROUTES' body column). */
typedef enum { BODY_NONE, BODY_JSON } body_kind;

typedef struct route {
    const char *method;
    const char *path;
    gpd__handler fn;
    int arg; /* handed to fn as r->arg */
    gpd__role role;
    body_kind body;
    const char *doc;
} route;

static const route routes[] = {
#define GPD__ROUTE_ROW_(m, p, fn, arg, role, body, doc)                                            \
    {m, p, gpd__##fn, arg, GPD__ROLE_##role, BODY_##body, doc},
    GPD__ROUTES(GPD__ROUTE_ROW_)
#undef GPD__ROUTE_ROW_
};
#define NROUTES (sizeof routes / sizeof routes[0])

void gpd__http_print_routes(void) {
    printf("| method | path | least role | what it does |\n|---|---|---|---|\n");
    for (size_t i = 0; i < NROUTES; i++) {
        printf("| %s | `%s` | %s | ", routes[i].method, routes[i].path,
               gpd__role_name(routes[i].role));
        /* A '|' of the text would end a Markdown table's cell. */
        for (const char *c = routes[i].doc; *c != '\0'; c++)
            if (*c == '|')
                fputs("\\|", stdout);
            else
                putchar(*c);
        printf(" |\n");
    }
}

/* The one map from GP_E* codes to HTTP status: X(code, status, when), in
 * docs/api.md's order ("Errors" is what gpupoold --errors prints); every
 * other code, a failed system call's among them, is 500. */
#define HTTP_STATUSES(X)                                                                           \
    X(GP_EINVAL, 400, "")                                                                          \
    X(GP_EPARSE, 400, "")                                                                          \
    X(GP_ERANGE, 400, "")                                                                          \
    X(GP_EAUTH, 401, "")                                                                           \
    X(GP_EPERM, 403, "")                                                                           \
    X(GP_ENOENT, 404, "")                                                                          \
    X(GP_ENOTFOUND, 404, "405 for a known path with another method")                               \
    X(GP_EEXIST, 409, "")                                                                          \
    X(GP_EBUSY, 409, "")                                                                           \
    X(GP_ESTATE, 409, "")                                                                          \
    X(GP_ECONFLICT, 409, "")                                                                       \
    X(GP_ELIMIT, 413, "a body over 1 MiB")                                                         \
    X(GP_ETOOMANY, 429, "a user's pending workloads past --max-pending-per-user")                  \
    X(GP_EROFS, 503, "the store cannot be written")                                                \
    X(GP_EAGAIN, 503, "try again")                                                                 \
    X(GP_ENOSPC, 507, "the store's disk is full")                                                  \
    X(GP_ENOTSUP, 501, "")                                                                         \
    X(GP_ETIMEDOUT, 504, "")

static const struct {
    int code, status;
    const char *when;
} statuses[] = {
#define STATUS_ROW_(code, status, when) {code, status, when},
    HTTP_STATUSES(STATUS_ROW_)
#undef STATUS_ROW_
};
#define NSTATUSES (sizeof statuses / sizeof statuses[0])

static int http_status(int code) {
    for (size_t i = 0; i < NSTATUSES; i++)
        if (statuses[i].code == code)
            return statuses[i].status;
    return MHD_HTTP_INTERNAL_SERVER_ERROR;
}

void gpd__http_print_errors(void) {
    printf("| code | status |\n|---|---|\n");
    for (size_t i = 0; i < NSTATUSES;) {
        /* One row for the codes of one status, with what they mean. */
        size_t j = i;
        printf("| ");
        for (; j < NSTATUSES && statuses[j].status == statuses[i].status; j++)
            printf("%s%s%s%s%s", j > i ? ", " : "", gp_err_name(statuses[j].code),
                   statuses[j].when[0] ? " (" : "", statuses[j].when,
                   statuses[j].when[0] ? ")" : "");
        printf(" | %d |\n", statuses[i].status);
        i = j;
    }
    printf("| others, among them a failed system call (`code` is its errno's name, e.g. "
           "`EACCES`) | 500 |\n");
}

int gpd__reply_json(gpd__resp *out, int status, json_t *j) {
    out->status = status;
    out->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!out->body)
        return GP_ENOMEM;
    out->len = strlen(out->body);
    out->content_type = "application/json";
    return 0;
}

int gpd__reply_text(gpd__resp *out, int status, const char *text, size_t len,
                    const char *content_type) {
    out->status = status;
    out->body = malloc(len + 1);
    if (!out->body)
        return GP_ENOMEM;
    memcpy(out->body, text, len);
    out->body[len] = '\0';
    out->len = len;
    out->content_type = content_type;
    return 0;
}

const char *gpd__query(gpd__req *r, const char *key) {
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* Parses the body of a route whose body is JSON: an object, or GP_EPARSE
 * naming the line and column. */
static int body_json(const char *body, size_t len, json_t **out, gpd__err *e) {
    if (!body || len == 0)
        return gpd__fail(e, GP_EPARSE, "", "the request needs a JSON body");
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return gpd__fail(e, GP_EPARSE, "", "malformed JSON at line %d, column %d: %s", je.line,
                         je.column, je.text);
    if (!json_is_object(j)) {
        json_decref(j);
        return gpd__fail(e, GP_EPARSE, "", "the body must be a JSON object");
    }
    *out = j;
    return 0;
}

int gpd__param_id(gpd__req *r, int i, uint64_t *out, gpd__err *e) {
    const char *s = i < r->nparams ? r->params[i] : "";
    uint64_t v;
    if (gp_parse_uint(s, NULL, 10, INT64_MAX, &v) < 0 || v == 0)
        return gpd__fail(e, GP_EINVAL, "id", "id: \"%.64s\" is not a workload number", s);
    *out = v;
    return 0;
}

int gpd__query_int(gpd__req *r, const char *key, int64_t min, int64_t max, int64_t *out,
                   gpd__err *e) {
    const char *s = gpd__query(r, key);
    if (!s)
        return 0;
    uint64_t v;
    if (gp_parse_uint(s, NULL, 10, (uint64_t)max, &v) < 0 || (int64_t)v < min)
        return gpd__fail(e, GP_EINVAL, key, "%s: \"%.64s\" is not a whole number from %lld to %lld",
                         key, s, (long long)min, (long long)max);
    *out = (int64_t)v;
    return 0;
}

/* Matches path against pattern; fills params with copies of {…} segments in
 * buf. Returns 1 on a match. */
static int match(const char *pattern, const char *path, gpd__req *r, char *buf, size_t buflen) {
    int np = 0;
    size_t used = 0;
    while (*pattern && *path) {
        if (*pattern == '{') {
            const char *pend = strchr(pattern, '}');
            size_t n = strcspn(path, "/");
            if (!pend || n == 0 || np >= GPD__MAX_PARAMS || used + n + 1 > buflen)
                return 0;
            memcpy(buf + used, path, n);
            buf[used + n] = '\0';
            r->params[np++] = buf + used;
            used += n + 1;
            pattern = pend + 1;
            path += n;
        } else if (*pattern++ != *path++) {
            return 0;
        }
    }
    if (*pattern || (*path && strcmp(path, "/") != 0))
        return 0;
    r->nparams = np;
    return 1;
}

/* What one request carries from its head to its handler. */
typedef struct conn_ctx {
    const route *rt; /* the route, once the head has been accepted */
    gpd__principal who;
    char pbuf[512]; /* the {…} path segments of rt */
    const char *params[GPD__MAX_PARAMS];
    int nparams;
    gpd__head_raw raw; /* the URI as it came (on_uri) */
    int judged;        /* judge_head has run */
    int refused;       /* an error answer is queued: the body is dropped */
    int deferred;      /* a session route upgraded without a token (session.c) */
    int upgraded;      /* answered 101: the connection is a session's now */
    void *pending;     /* the session to adopt on upgrade, until adopted */
    int too_large;     /* a chunked body passed BODY_MAX: dropped, then 413 */
    char *body;
    size_t len, cap;
} conn_ctx;

static json_t *error_json(const gpd__err *e, int status) {
    json_t *err = json_pack("{s:s, s:i, s:s}", "code", gp_err_name(e->code), "status", status,
                            "message", e->msg[0] ? e->msg : gp_strerror(e->code));
    if (e->field[0])
        json_object_set_new(err, "field", json_string(e->field));
    return json_pack("{s:o}", "error", err);
}

static enum MHD_Result send_resp(struct MHD_Connection *conn, gpd__resp *out) {
    struct MHD_Response *resp =
        out->from_file
            ? MHD_create_response_from_fd_at_offset64(out->len, out->fd, (uint64_t)out->fd_off)
            : MHD_create_response_from_buffer(out->len, out->body, MHD_RESPMEM_MUST_FREE);
    if (!resp && out->from_file)
        close(out->fd);
    out->body = NULL;
    out->from_file = 0;
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type",
                            out->content_type ? out->content_type : "application/json");
    /* The console's page may run only its own script and style and talk
     * only to this server; no answer may be framed or sniffed as another
     * type. */
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; "
                            "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                            "form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (out->log_offset > 0) {
        char at[24];
        snprintf(at, sizeof at, "%lld", (long long)out->log_offset);
        MHD_add_response_header(resp, "X-Log-Offset", at);
    }
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)out->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Replaces out with the JSON error of e (rc if e holds no code); status 405
 * instead of 404 when the path exists with other methods. */
static void reply_error(gpd__resp *out, gpd__err *e, int rc, int path_known) {
    free(out->body);
    if (out->from_file)
        close(out->fd);
    memset(out, 0, sizeof *out);
    if (e->code == 0)
        gpd__fail(e, rc, "", "%s", gp_strerror(rc));
    int status = http_status(e->code);
    if (e->code == GP_ENOTFOUND && path_known)
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    gpd__reply_json(out, status, error_json(e, status));
}

/* A request header's value; -1 if it is absent, GP_EPARSE if it holds a NUL
 * byte (what follows the NUL would be invisible to every check made on the
 * string, and seen by anything in front of the daemon that reads the whole
 * line).
 *
 * libmicrohttpd 0.9.75 (Debian 12's) ends a value at its first NUL and gives
 * no length beyond it. The value lies in the connection's read buffer, where
 * the line's CR LF have been overwritten by two NULs: so a value directly
 * followed by two NULs ended at its line's end, and a value followed by
 * anything else was cut short by a NUL of the client's (or its line ended in
 * a bare LF, which strict parsing refuses too). Later libmicrohttpd versions
 * refuse NULs in the head themselves and keep the length. */
static int header(struct MHD_Connection *conn, const char *name, const char **out) {
    const char *v = NULL;
    size_t n = 0;
    if (MHD_lookup_connection_value_n(conn, MHD_HEADER_KIND, name, strlen(name), &v, &n) !=
            MHD_YES ||
        !v)
        return -1;
    if (strlen(v) != n)
        return GP_EPARSE;
#if MHD_VERSION <= 0x00097500
    if (v[n + 1] != '\0')
        return GP_EPARSE;
#endif
    *out = v;
    return 0;
}

/* 1 for the routes that open a session (session.c). */
static int is_session_route(const route *rt) {
    return rt->fn == gpd__h_wl_session;
}

/* Judges a request from its head alone, before any byte of its body is read:
 * framing, route, token, role and declared size. Returns 0 (cc->rt and
 * cc->who set) or an error in e (path_known set as reply_error wants it). */
static int judge_head(gpd__daemon *d, struct MHD_Connection *conn, const char *method,
                      const char *url, const char *version, conn_ctx *cc, gpd__err *e,
                      int *path_known) {
    *path_known = 0;
    int rc = gpd__head_check(conn, method, &cc->raw, version, e);
    if (rc < 0)
        return rc;
    gpd__req r;
    memset(&r, 0, sizeof r);
    const route *rt = NULL;
    for (size_t i = 0; i < NROUTES && !rt; i++) {
        if (!match(routes[i].path, url, &r, cc->pbuf, sizeof cc->pbuf))
            continue;
        *path_known = 1;
        if (strcmp(routes[i].method, method) == 0)
            rt = &routes[i];
    }
    if (!rt)
        return gpd__fail(e, GP_ENOTFOUND, "",
                         *path_known ? "%s is not allowed on %.200s"
                                     : "no route %s %.200s (see /api/v1/...)",
                         method, url);
    memcpy(cc->params, r.params, sizeof cc->params);
    cc->nparams = r.nparams;
    const char *auth = NULL;
    int has_auth = header(conn, "Authorization", &auth);
    if (rt->role != GPD__ROLE_NONE && has_auth == -1 && is_session_route(rt) &&
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Upgrade") != NULL) {
        /* A browser's WebSocket carries no header: its token comes in the
         * session's first message, checked as this header would be. */
        cc->deferred = 1;
    } else if (rt->role != GPD__ROLE_NONE) {
        const char *tok = NULL;
        int hr = has_auth;
        if (hr == GP_EPARSE)
            return gpd__fail(e, GP_EPARSE, "Authorization",
                             "Authorization: the header holds a NUL byte or does not end in CR LF");
        if (hr == 0 && strncasecmp(auth, "Bearer ", 7) == 0)
            tok = auth + 7;
        rc = gpd__auth_check(d->auth, tok, &cc->who, e);
        if (rc < 0)
            return rc;
        if (cc->who.role < rt->role)
            return gpd__fail(e, GP_EPERM, "", "%s %s needs the %s role; this token is %s", method,
                             rt->path, gpd__role_name(rt->role), gpd__role_name(cc->who.role));
    }
    const char *cl = NULL;
    uint64_t n = 0;
    int hr = header(conn, "Content-Length", &cl);
    if (hr == GP_EPARSE || (hr == 0 && gp_parse_uint(cl, NULL, 10, UINT64_MAX, &n) < 0))
        return gpd__fail(e, GP_EPARSE, "Content-Length", "Content-Length: not a decimal number");
    if (hr == 0 && n > BODY_MAX)
        return gpd__fail(e, GP_ELIMIT, "", "the request body is larger than %d bytes", BODY_MAX);
    cc->rt = rt;
    return 0;
}

/* Runs the route's handler on the complete request, its body parsed first
 * if the route's body is JSON. */
static void dispatch(gpd__daemon *d, struct MHD_Connection *conn, const char *method,
                     const char *url, conn_ctx *cc, gpd__resp *out) {
    gpd__req r = {.d = d,
                  .conn = conn,
                  .method = method,
                  .path = url,
                  .nparams = cc->nparams,
                  .arg = cc->rt->arg,
                  .who = cc->who,
                  .deferred_auth = cc->deferred};
    memcpy(r.params, cc->params, sizeof r.params);
    gpd__err e = {0};
    gpd__guard_phase(d->guard, conn, GPD__PHASE_HANDLER);
    int rc = cc->rt->body == BODY_JSON ? body_json(cc->body, cc->len, &r.json, &e) : 0;
    if (rc == 0)
        rc = cc->rt->fn(&r, out, &e);
    json_decref(r.json);
    gpd__guard_phase(d->guard, conn, GPD__PHASE_REQUEST);
    if (rc < 0)
        reply_error(out, &e, rc, 1);
}

/* libmicrohttpd has switched the connection: session.c takes it. */
static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock,
                       struct MHD_UpgradeResponseHandle *urh) {
    gpd__daemon *d = cls;
    conn_ctx *cc = con_cls;
    (void)conn;
    void *pending = cc->pending;
    cc->pending = NULL;
    gpd__session_adopt(d->sessions, pending, sock, extra_in, extra_in_size, urh);
}

/* Answers 101 Switching Protocols for a session route. */
static enum MHD_Result send_upgrade(gpd__daemon *d, struct MHD_Connection *conn, conn_ctx *cc,
                                    gpd__resp *out) {
    free(out->body);
    out->body = NULL;
    struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, d);
    if (resp == NULL) {
        gpd__session_drop(d->sessions, out->upgrade);
        return MHD_NO;
    }
    cc->pending = out->upgrade;
    cc->upgraded = 1;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
    MHD_add_response_header(resp, "Sec-WebSocket-Accept", out->ws_accept);
    /* No deadline from here on: the session's own bounds apply. */
    gpd__guard_phase(d->guard, conn, GPD__PHASE_HANDLER);
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
    MHD_destroy_response(resp);
    if (ret != MHD_YES) {
        cc->pending = NULL;
        gpd__session_drop(d->sessions, out->upgrade);
    }
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    gpd__daemon *d = cls;
    conn_ctx *cc = *con_cls;
    if (cc == NULL)
        return MHD_NO; /* on_uri could not allocate it */
    if (!cc->judged) {
        /* The head is complete; no byte of the body has been read yet. */
        cc->judged = 1;
        gpd__guard_phase(d->guard, conn, GPD__PHASE_REQUEST);
        gpd__err e = {0};
        int path_known = 0;
        int rc = judge_head(d, conn, method, url, version, cc, &e, &path_known);
        if (rc == 0)
            return MHD_YES;
        /* Answered now: libmicrohttpd then closes the connection without
         * reading the body (it cannot be trusted to end where it says). */
        cc->refused = 1;
        gpd__resp out = {0};
        reply_error(&out, &e, rc, path_known);
        return out.body ? send_resp(conn, &out) : MHD_NO;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (cc->refused)
            return MHD_YES;
        if (cc->too_large || cc->len + n > BODY_MAX) {
            /* A chunked body has no declared length: past the limit it is
             * dropped as it arrives (the request deadline bounds how long),
             * and answered 413 at its end. */
            cc->too_large = 1;
            return MHD_YES;
        }
        if (cc->len + n + 1 > cc->cap) {
            size_t cap = (cc->len + n + 1) * 2;
            char *nb = realloc(cc->body, cap);
            if (!nb)
                return MHD_NO;
            cc->body = nb;
            cc->cap = cap;
        }
        memcpy(cc->body + cc->len, upload_data, n);
        cc->len += n;
        cc->body[cc->len] = '\0';
        return MHD_YES;
    }
    if (cc->refused)
        return MHD_YES;
    gpd__resp out = {0};
    if (cc->too_large) {
        gpd__err e = {0};
        gpd__fail(&e, GP_ELIMIT, "", "the request body is larger than %d bytes", BODY_MAX);
        reply_error(&out, &e, GP_ELIMIT, 1);
    } else {
        dispatch(d, conn, method, url, cc, &out);
    }
    if (out.upgrade != NULL)
        return send_upgrade(d, conn, cc, &out);
    if (!out.body && !out.from_file)
        return MHD_NO;
    return send_resp(conn, &out);
}

/* libmicrohttpd's URI log callback: called once the request line is read,
 * before the URI is unescaped in place. Its result is the request's
 * context (*con_cls of on_request), holding the URI as it came; NULL if it
 * cannot be allocated, and the request is then dropped. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
    (void)cls;
    (void)conn;
    conn_ctx *cc = calloc(1, sizeof *cc);
    if (cc != NULL)
        gpd__head_uri(&cc->raw, uri);
    return cc;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    gpd__daemon *d = cls;
    (void)toe;
    conn_ctx *cc = *con_cls;
    int upgraded = cc != NULL && cc->upgraded;
    if (cc) {
        if (cc->pending != NULL)
            gpd__session_drop(d->sessions, cc->pending);
        free(cc->body);
        free(cc);
    }
    *con_cls = NULL;
    /* A keep-alive connection now waits for its next request head; an
     * upgraded one is the session's, without a deadline. */
    gpd__guard_phase(d->guard, conn, upgraded ? GPD__PHASE_HANDLER : GPD__PHASE_HEAD);
}

/* libmicrohttpd's unescaping of paths and query values, except that "%00"
 * is left as it is: a NUL byte inside a path or value would end it early
 * for every later string check ("/api/v1/queues/%00" was routed to the
 * queue list). Returns the new length; never lengthens s. */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s) {
    (void)cls;
    (void)conn;
    char *w = s;
    for (const char *p = s; *p;) {
        int hi, lo;
        if (p[0] == '%' && (hi = gp_hex_digit((unsigned char)p[1])) >= 0 &&
            (lo = gp_hex_digit((unsigned char)p[2])) >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi * 16 + lo);
            p += 3;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        char *nb = realloc(buf, len + n + 1);
        if (!nb)
            break;
        buf = nb;
        memcpy(buf + len, chunk, n);
        len += n;
        buf[len] = '\0';
    }
    fclose(f);
    return buf;
}

int gpd__http_start(gpd__daemon *d, struct MHD_Daemon **out, int *port, gpd__err *e) {
    /* The address was read once, by gpd__config_set. */
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)d->cfg.listen_port);
    if (inet_pton(AF_INET, d->cfg.listen_host, &sa.sin_addr) != 1)
        return gpd__fail(e, GP_EINVAL, "listen",
                         "listen: \"%s\" is not an IPv4 address and port like 127.0.0.1:8642",
                         d->cfg.listen);
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
    char *cert = NULL, *key = NULL;
    if (d->cfg.tls_cert[0] || d->cfg.tls_key[0]) {
        cert = read_file(d->cfg.tls_cert);
        key = read_file(d->cfg.tls_key);
        if (!cert || !key) {
            free(cert);
            free(key);
            return gpd__fail(e, GP_EINVAL, cert ? "tls_key" : "tls_cert", "%s: cannot read %s",
                             cert ? "tls_key" : "tls_cert",
                             cert ? d->cfg.tls_key : d->cfg.tls_cert);
        }
        flags |= MHD_USE_TLS;
    }
    int rc = gpd__guard_start(d->cfg.header_timeout_ms, d->cfg.request_timeout_ms, &d->guard);
    if (rc < 0) {
        free(cert);
        free(key);
        return gpd__fail(e, rc, "", "cannot start the connection guard");
    }
    /* libmicrohttpd's idle timeout stays as a backstop for a connection that
     * stops sending in the middle of a body; the guard's deadlines are the
     * real bounds. */
    unsigned idle_s = (unsigned)((d->cfg.request_timeout_ms + 999) / 1000);
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)gpd__guard_log, d->guard},
        {MHD_OPTION_SOCK_ADDR, 0, &sa},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, d},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, NULL},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)gpd__guard_notify, d->guard},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape, NULL},
        {MHD_OPTION_THREAD_POOL_SIZE, d->cfg.http_threads, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, d->cfg.max_connections, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, d->cfg.max_client_connections, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, idle_s, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL},
        {cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, cert},
        {cert ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, key},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, d, MHD_OPTION_ARRAY,
                                              opts, MHD_OPTION_END);
    /* The certificate and key stay allocated for the daemon's life: the
     * TLS layer may refer to them after start. */
    if (!mhd) {
        free(cert);
        free(key);
        gpd__guard_stop(d->guard);
        d->guard = NULL;
        return gpd__fail(e, GP_ESYS, "listen",
                         "listen: cannot serve on %s (address in use, or TLS not usable)",
                         d->cfg.listen);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : d->cfg.listen_port;
    *out = mhd;
    return 0;
}

void gpd__http_stop(gpd__daemon *d, struct MHD_Daemon *mhd) {
    if (mhd)
        MHD_stop_daemon(mhd);
    gpd__guard_stop(d->guard);
    d->guard = NULL;
}
