/*
 * http-head.c — the request head's lines and names, checked before anything
 * else reads the head.
 *
 * A proxy in front of the daemon and the daemon must read a request the same
 * way, or a request one of them refuses (or frames differently) reaches the
 * other. libmicrohttpd 0.9.75 (Debian 12's) is lenient where proxies differ:
 * it accepts lines ending in a bare LF, keeps a space before a header's colon
 * in the header's name (so "Transfer-Encoding : chunked" is not a framing
 * header to it), and lets the first of two Authorization headers win. Each is
 * refused here, with 400: the head's lines must end in CR LF, every header
 * name must be a token, values hold no control character but HTAB, the body
 * is framed by one Content-Length or by chunked coding, never both, and a
 * request carries at most one Authorization header. The fuzz target
 * fuzz/http-head.c compares what this accepts with a reading of the raw
 * bytes.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "daemon/api.h"

/* What gpd__head_check learns from the head's header lines, in their order. */
typedef struct head_scan {
    int content_length, transfer_encoding, authorization;
    const char *bad_name; /* the first header name that is not a token */
    size_t bad_name_len;
    int bad_line;           /* a line did not end in CR LF, or held a control character */
    char bad_line_name[64]; /* the header of that line ("" for the request line) */
    const char *next;       /* where the next header line must begin */
} head_scan;

/* A header name is a token (RFC 9110, 5.1 and 5.6.2): no space, no
 * control, no separator. "Transfer-Encoding : chunked" has the name
 * "Transfer-Encoding " (libmicrohttpd keeps the space), which no framing
 * check recognised while a proxy in front may read it as chunked coding. */
static int is_token(const char *s, size_t n) {
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              strchr("!#$%&'*+-.^_`|~", c) != NULL) ||
            c == '\0')
            return 0;
    }
    return 1;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size) {
    head_scan *hs = cls;
    (void)kind;
    if (!hs->bad_name && !is_token(key, key_size)) {
        hs->bad_name = key;
        hs->bad_name_len = key_size;
    }
    /* A field value holds no control character but HTAB (RFC 9110, 5.5): a
     * lone CR inside one ("Host: x\rX-A: 1") is a line end to some readers. */
    int bad = 0;
    for (size_t i = 0; value != NULL && i < value_size; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            bad = 1;
    }
    if (strcasecmp(key, "Content-Length") == 0)
        hs->content_length++;
    else if (strcasecmp(key, "Transfer-Encoding") == 0)
        hs->transfer_encoding++;
    else if (strcasecmp(key, "Authorization") == 0)
        hs->authorization++;
#if MHD_VERSION <= 0x00097500
    /* Each line must begin where the previous one's CR LF ended, and end in
     * CR LF itself (see header() below for the buffer's layout): a bare LF
     * or CR leaves one NUL where CR LF leave two, a folded line is copied
     * elsewhere, and a NUL of the client's ends the value early. */
    if (key != hs->next || value == NULL || value[value_size] != '\0' ||
        value[value_size + 1] != '\0')
        bad = 1;
    else
        hs->next = value + value_size + 2;
#else
#endif
    if (bad && !hs->bad_line) {
        hs->bad_line = 1;
        snprintf(hs->bad_line_name, sizeof hs->bad_line_name, "%.*s",
                 is_token(key, key_size) ? (int)key_size : 0, key);
    }
    return MHD_YES;
}

/* Checks the head's lines and names, and counts the headers that frame the
 * body or carry the token. Returns 0 or GP_EPARSE (e filled).
 *
 * libmicrohttpd 0.9.75 (Debian 12's) accepts lines ending in a bare LF and
 * ignores a second Authorization header; it leaves the head in place in the
 * connection's read buffer, each line's CR LF overwritten by two NULs (a
 * bare LF or CR by one). The request line's version is its last field, and
 * the head ends with an empty line, whose end is the head's size away from
 * the method (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE): so every line end
 * can be checked there. Later versions refuse bare line ends themselves. */
void gpd__head_uri(gpd__head_raw *raw, const char *uri) {
    raw->uri = uri;
    raw->uri_len = strlen(uri);
    raw->uri_ok = raw->uri_len > 0;
    for (size_t i = 0; i < raw->uri_len; i++)
        if ((unsigned char)uri[i] <= 0x20 || (unsigned char)uri[i] >= 0x7f)
            raw->uri_ok = 0;
}

/* The request line: a token, one space, the URI as it came (visible ASCII
 * only, RFC 3986; libmicrohttpd takes the line's last space as the one
 * before the version, so a URI holding spaces, controls or a NUL would
 * pass), one space, HTTP/1.0 or HTTP/1.1, CR LF. */
static int request_line_ok(const char *method, const gpd__head_raw *raw, const char *version) {
    size_t mn = strlen(method);
    if (!is_token(method, mn) || raw == NULL || raw->uri == NULL || !raw->uri_ok ||
        (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0))
        return 0;
#if MHD_VERSION <= 0x00097500
    size_t vn = strlen(version);
    if (raw->uri != method + mn + 1 || raw->uri + raw->uri_len + 1 != version ||
        version[vn + 1] != '\0')
        return 0;
#endif
    return 1;
}

int gpd__head_check(struct MHD_Connection *conn, const char *method, const gpd__head_raw *raw,
                    const char *version, gpd__err *e) {
    head_scan scan, *hs = &scan;
    memset(hs, 0, sizeof *hs);
    if (!request_line_ok(method, raw, version))
        return gpd__fail(e, GP_EPARSE, "",
                         "the request line is not METHOD, one space, a URI of visible ASCII "
                         "characters, one space, HTTP/1.0 or HTTP/1.1, CR LF");
#if MHD_VERSION <= 0x00097500
    hs->next = version + strlen(version) + 2;
#endif
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, scan_header, hs);
#if MHD_VERSION <= 0x00097500
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (!hs->bad_line && (ci == NULL || hs->next[0] != '\0' || hs->next[1] != '\0' ||
                          hs->next + 2 != method + ci->header_size))
        hs->bad_line = 1;
#endif
    if (hs->bad_line)
        return gpd__fail(e, GP_EPARSE, hs->bad_line_name,
                         "%s%sa line of the request head does not end in CR LF, or holds a "
                         "control character",
                         hs->bad_line_name, hs->bad_line_name[0] ? ": " : "");
    if (hs->bad_name)
        return gpd__fail(e, GP_EPARSE, "",
                         "the header name \"%.*s\" is not a token (a space before the colon?)",
                         (int)(hs->bad_name_len > 64 ? 64 : hs->bad_name_len), hs->bad_name);
    if (hs->content_length > 1 || (hs->content_length && hs->transfer_encoding))
        return gpd__fail(e, GP_EPARSE, "", "the request has %s: its body's length is ambiguous",
                         hs->transfer_encoding ? "both Content-Length and Transfer-Encoding"
                                               : "more than one Content-Length");
    if (hs->authorization > 1)
        return gpd__fail(e, GP_EPARSE, "Authorization",
                         "Authorization: the request has more than one");
    return 0;
}
