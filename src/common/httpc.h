/*
 * httpc.h — a small HTTP/1.1 client for gpupool's own API, spoken over a
 * plain TCP socket: the CLI, the daemon tests and the API benchmark use it.
 *
 * It knows exactly what gpupoold answers: a status line, headers, and a body
 * framed by Content-Length or chunked transfer coding. A connection may carry
 * many requests (keep-alive), which is what the benchmark needs; the CLI uses
 * gp_http_request(), one request per connection. TLS is not spoken here:
 * scripts that need it reach a TLS-enabled daemon through curl.
 */
#ifndef GP_HTTPC_H
#define GP_HTTPC_H

#include <stddef.h>

typedef struct gp_http_conn gp_http_conn;

/* The largest response body the client accepts (a longer one is an error):
 * it bounds what a hostile server can make the CLI allocate. */
#define GP_HTTP_BODY_MAX ((size_t)256 << 20)

typedef struct gp_http_resp {
    int status; /* e.g. 200; 0 before a response */
    char *body; /* NUL-terminated, malloc'ed; never NULL on success */
    size_t len; /* body bytes, without the NUL */
    /* X-Log-Offset: where a task log's answer begins in the task's whole
     * output (it may be past the offset asked for, when the output before
     * it was rotated away); -1 if the answer has none. */
    long long log_offset;
} gp_http_resp;

/*
 * Connects to server: "HOST:PORT", "http://HOST:PORT" or "http://HOST:PORT/".
 * timeout_ms bounds each send and receive (0: 60 s). Returns 0 or a negative
 * GP_E* code with err describing what failed (GP_ENOTSUP for https).
 */
int gp_http_connect(const char *server, int timeout_ms, gp_http_conn **out, char *err,
                    size_t errlen);
void gp_http_close(gp_http_conn *c);

/*
 * Sends one request and reads the whole response into *resp (which the caller
 * frees with gp_http_resp_free). token (may be NULL) goes in an
 * "Authorization: Bearer" header; body (may be NULL) is sent as JSON. On a
 * transport error returns GP_EIO (the connection is then unusable) and *resp
 * holds nothing to free.
 */
int gp_http_send(gp_http_conn *c, const char *method, const char *path, const char *token,
                 const char *body, size_t body_len, gp_http_resp *resp, char *err, size_t errlen);

/* Connect, send one request, close. */
int gp_http_request(const char *server, const char *method, const char *path, const char *token,
                    const char *body, gp_http_resp *resp, char *err, size_t errlen);

void gp_http_resp_free(gp_http_resp *resp);

/*
 * Reads one response from the len bytes at data, as gp_http_send reads one
 * from a socket (the fuzz target and the tests feed it hostile answers).
 * Returns 0 with *resp to free, or GP_EPARSE (nothing to free) for a response
 * that is truncated, badly framed or larger than GP_HTTP_BODY_MAX.
 */
int gp_http_parse_response(const char *data, size_t len, gp_http_resp *resp);

#endif /* GP_HTTPC_H */
