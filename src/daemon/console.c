/*
 * console.c — GET / and GET /console/NAME: the web console's page, style
 * and script, built into the binary (console.h). They need no token: the
 * page asks for one and keeps it in the browser's sessionStorage, and sends
 * it as a bearer header with each API call, never in a URL and never in a
 * cookie, so that another site cannot make a browser call the API (no
 * CSRF). The Content-Security-Policy of every answer (http.c) lets the page
 * run only these scripts, and the script writes every string from the API
 * as text (textContent), never as HTML.
 */
#include <string.h>

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
