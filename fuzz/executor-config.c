/*
 * executor-config.c — fuzz target for the local executor's configuration
 * string ("key=value,key=value", from --executor-config). The parser is a
 * static function of local.c, which this file includes so as to reach it
 * without widening the executor's interface; the rest of libgpexec links as
 * usual (local.o itself is then not needed from the archive).
 */
#include "executors/local/local.c"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    if (text == NULL)
        return 0;
    gpx__local *lx = calloc(1, sizeof *lx);
    config c;
    memset(&c, 0, sizeof c);
    char err[512];
    if (lx && parse_config(lx, &c, text, err, sizeof err) == 0 &&
        (memchr(lx->state_dir, '\0', sizeof lx->state_dir) == NULL || lx->state_dir[0] != '/'))
        __builtin_trap();
    free(lx);
    free(text);
    return 0;
}
