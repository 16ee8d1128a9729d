/*
 * console.c — GET / and GET /console/NAME: the web console's page, style
 * and script, built into the binary (console.h); and the console's sessions
 * (POST and DELETE /api/v1/console/session). The page needs no token: it
 * asks for one, exchanges it at once for a console session (auth.h: short
 * lived, revoked by sign-out and by its timeouts) and forgets the token; it
 * keeps only the session's secret, in the browser's sessionStorage, and sends
 * it as a bearer header with each API call, never in a URL and never in a
 * cookie, so that another site cannot make a browser call the API (no
 * CSRF). The Content-Security-Policy of every answer (http.c) lets the page
 * run only these scripts, and the script writes every string from the API
 * as text (textContent), never as HTML.
 */
#include <string.h>

#include <jansson.h>

#include "daemon/api.h"
#include "daemon/console.h"

static int serve(const char *name, gpd__resp *out, gpd__err *e) {
    for (size_t i = 0; i < gpd__nassets; i++)
        if (strcmp(gpd__assets[i].name, name) == 0)
            return gpd__reply_text(out, 200, (const char *)gpd__assets[i].data, gpd__assets[i].len,
                                   gpd__assets[i].content_type);
    return gpd__fail(e, GP_ENOENT, "file", "the console has no file %s", name);
}

int gpd__h_console(gpd__req *r, gpd__resp *out, gpd__err *e) {
    (void)r;
    return serve("index.html", out, e);
}

int gpd__h_console_file(gpd__req *r, gpd__resp *out, gpd__err *e) {
    return serve(r->params[0], out, e);
}

int gpd__h_console_session_open(gpd__req *r, gpd__resp *out, gpd__err *e) {
    char secret[64];
    int64_t expires_ms = 0;
    int rc = gpd__auth_session_open(r->d->auth, &r->who, secret, &expires_ms, e);
    if (rc < 0)
        return rc;
    json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "session", secret, "user", r->who.user,
                          "role", gpd__role_name(r->who.role), "idle_timeout_s",
                          (json_int_t)(r->d->cfg.console_idle_ms / 1000), "lifetime_s",
                          (json_int_t)(r->d->cfg.console_life_ms / 1000), "expires_ms",
                          (json_int_t)expires_ms);
    memset(secret, 0, sizeof secret);
    return gpd__reply_json(out, 201, j);
}

int gpd__h_console_session_close(gpd__req *r, gpd__resp *out, gpd__err *e) {
    int rc = gpd__auth_session_close(r->d->auth, &r->who, e);
    if (rc < 0)
        return rc;
    return gpd__reply_json(out, 200, json_pack("{s:b}", "revoked", 1));
}
