/*
 * daemon-config.c — fuzz target for gpupoold's --config file: the input is
 * the file's text, parsed on top of the defaults.
 */
#include <stdint.h>
#include <string.h>

#include "daemon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpd__config c;
    char err[1024] = "";
    if (gpd__config_defaults(&c, err, sizeof err) < 0)
        __builtin_trap();
    if (gpd__config_parse(&c, "fuzz", (const char *)data, size, err, sizeof err) == 0) {
        if (c.http_threads < 1 || c.max_connections < 1 || c.header_timeout_ms < 100 ||
            memchr(c.listen, '\0', sizeof c.listen) == NULL)
            __builtin_trap();
    } else if (!err[0]) {
        __builtin_trap();
    }
    return 0;
}
