/*
 * http-response.c — fuzz target for the HTTP client's response reader (what
 * the CLI runs on every answer of a server, or of anyone on the path): the
 * input is the whole byte stream of one answer.
 */
#include <stdint.h>
#include <string.h>

#include "common/httpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gp_http_resp r;
    if (gp_http_parse_response((const char *)data, size, &r) == 0) {
        /* The body is NUL-terminated at its length. */
        if (r.body[r.len] != '\0')
            __builtin_trap();
        gp_http_resp_free(&r);
    }
    return 0;
}
