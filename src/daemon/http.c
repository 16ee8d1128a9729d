/*
 * http.c — libmicrohttpd glue: accepting requests (thread per connection, so
 * that a handler waiting for a group commit blocks only its own client),
 * collecting bodies up to a limit, routing through the table of api.h,
 * checking the token and the route's role, and turning handler errors into
 * JSON error bodies with the status of gpd__http_status(), the one place
 * where GP_E* codes become HTTP status codes.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "daemon/api.h"

#define BODY_MAX (1024 * 1024)

typedef struct route {
    const char *method;
    const char *path;
    gpd__handler fn;
    gpd__role role;
    const char *doc;
} route;

static const route routes[] = {
#define GP__ROUTE_ROW_(m, p, fn, role, doc) {m, p, gpd__##fn, GP__ROLE_##role, doc},
    GP__ROUTES(GP__ROUTE_ROW_)
#undef GP__ROUTE_ROW_
};
#define NROUTES (sizeof routes / sizeof routes[0])

void gpd__http_print_routes(void) {
    printf("| method | path | least role | what it does |\n|---|---|---|---|\n");
    for (size_t i = 0; i < NROUTES; i++)
        printf("| %s | `%s` | %s | %s |\n", routes[i].method, routes[i].path,
               routes[i].role == GP__ROLE_NONE ? "none" : gpd__role_name(routes[i].role),
               routes[i].doc);
}

int gpd__http_status(int code) {
    switch (code) {
    case GP_EINVAL:
    case GP_EPARSE:
    case GP_ERANGE:
        return MHD_HTTP_BAD_REQUEST;
    case GP_EAUTH:
        return MHD_HTTP_UNAUTHORIZED;
    case GP_EPERM:
        return MHD_HTTP_FORBIDDEN;
    case GP_ENOENT:
    case GP_ENOTFOUND:
        return MHD_HTTP_NOT_FOUND;
    case GP_EEXIST:
    case GP_EBUSY:
    case GP_ESTATE:
    case GP_ECONFLICT:
        return MHD_HTTP_CONFLICT;
    case GP_ELIMIT:
        return MHD_HTTP_CONTENT_TOO_LARGE;
    case GP_ENOSPC:
        return MHD_HTTP_INSUFFICIENT_STORAGE;
    case GP_EROFS:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    case GP_ENOTSUP:
        return MHD_HTTP_NOT_IMPLEMENTED;
    case GP_ETIMEDOUT:
        return MHD_HTTP_GATEWAY_TIMEOUT;
    default:
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
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

int gpd__body_json(gpd__req *r, json_t **out, gpd__err *e) {
    if (!r->body || r->body_len == 0)
        return gpd__fail(e, GP_EPARSE, "", "the request needs a JSON body");
    json_error_t je;
    json_t *j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
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
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v == 0)
        return gpd__fail(e, GP_EINVAL, "id", "id: \"%s\" is not a workload number", s);
    *out = v;
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
            if (!pend || n == 0 || np >= GP__MAX_PARAMS || used + n + 1 > buflen)
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

typedef struct conn_ctx {
    char *body;
    size_t len, cap;
    int too_large;
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
        MHD_create_response_from_buffer(out->len, out->body, MHD_RESPMEM_MUST_FREE);
    out->body = NULL;
    MHD_add_response_header(resp, "Content-Type",
                            out->content_type ? out->content_type : "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)out->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void dispatch(gpd__daemon *d, struct MHD_Connection *conn, const char *method,
                     const char *url, conn_ctx *cc, gpd__resp *out) {
    gpd__req r;
    memset(&r, 0, sizeof r);
    r.d = d;
    r.conn = conn;
    r.method = method;
    r.path = url;
    r.body = cc->body;
    r.body_len = cc->len;
    gpd__err e = {0};
    char pbuf[512];
    int rc = 0;
    const route *rt = NULL;
    int path_known = 0;
    for (size_t i = 0; i < NROUTES && !rt; i++) {
        if (!match(routes[i].path, url, &r, pbuf, sizeof pbuf))
            continue;
        path_known = 1;
        if (strcmp(routes[i].method, method) == 0)
            rt = &routes[i];
    }
    if (cc->too_large) {
        rc = gpd__fail(&e, GP_ELIMIT, "", "the request body is larger than %d bytes", BODY_MAX);
    } else if (!rt) {
        rc = gpd__fail(&e, GP_ENOTFOUND, "",
                       path_known ? "%s is not allowed on %s" : "no route %s %s (see /api/v1/...)",
                       method, url);
    } else if (rt->role != GP__ROLE_NONE) {
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        const char *tok = NULL;
        if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
            tok = auth + 7;
        rc = gpd__auth_check(d->auth, tok, &r.who, &e);
        if (rc == 0 && r.who.role < rt->role)
            rc = gpd__fail(&e, GP_EPERM, "", "%s %s needs the %s role; this token is %s", method,
                           rt->path, gpd__role_name(rt->role), gpd__role_name(r.who.role));
    }
    if (rc == 0)
        rc = rt->fn(&r, out, &e);
    if (rc < 0) {
        free(out->body);
        memset(out, 0, sizeof *out);
        if (e.code == 0)
            gpd__fail(&e, rc, "", "%s", gp_strerror(rc));
        int status = gpd__http_status(e.code);
        if (e.code == GP_ENOTFOUND && path_known)
            status = MHD_HTTP_METHOD_NOT_ALLOWED;
        gpd__reply_json(out, status, error_json(&e, status));
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    (void)version;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc)
            return MHD_NO;
        *con_cls = cc;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (cc->too_large || cc->len + n > BODY_MAX) {
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
    gpd__resp out = {0};
    dispatch(cls, conn, method, url, cc, &out);
    if (!out.body)
        return MHD_NO;
    return send_resp(conn, &out);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)conn;
    (void)toe;
    conn_ctx *cc = *con_cls;
    if (cc) {
        free(cc->body);
        free(cc);
    }
    *con_cls = NULL;
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
    char host[128];
    snprintf(host, sizeof host, "%s", d->cfg.listen);
    char *colon = strrchr(host, ':');
    if (!colon)
        return gpd__fail(e, GP_EINVAL, "listen", "listen: \"%s\" is not HOST:PORT", host);
    *colon = '\0';
    int p = atoi(colon + 1);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)p);
    if (p < 0 || p > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return gpd__fail(e, GP_EINVAL, "listen",
                         "listen: \"%s\" is not an IPv4 address and port like 127.0.0.1:8642",
                         d->cfg.listen);
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
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
    struct MHD_Daemon *mhd;
    if (cert)
        mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, d, MHD_OPTION_SOCK_ADDR, &sa,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                               MHD_OPTION_CONNECTION_LIMIT, 512U, MHD_OPTION_CONNECTION_TIMEOUT,
                               120U, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
                               MHD_OPTION_END);
    else
        mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, d, MHD_OPTION_SOCK_ADDR, &sa,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                               MHD_OPTION_CONNECTION_LIMIT, 512U, MHD_OPTION_CONNECTION_TIMEOUT,
                               120U, MHD_OPTION_END);
    /* The certificate and key stay allocated for the daemon's life: the
     * TLS layer may refer to them after start. */
    if (!mhd) {
        free(cert);
        free(key);
    }
    if (!mhd)
        return gpd__fail(e, GP_ESYS, "listen",
                         "listen: cannot serve on %s (address in use, or TLS not usable)",
                         d->cfg.listen);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : p;
    *out = mhd;
    return 0;
}
