/*
 * units.c — fuzz target for libgpcommon's unit parsers, which read what
 * people type and what JSON strings hold: sizes, durations, milli-units and
 * signals. The input is one string; every parser reads it, and whatever a
 * parser accepts must print and parse back to the same value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "common/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_text(data, size);
    if (s == NULL)
        return 0;
    int64_t v, back;
    int sig;
    char buf[64];
    if (gp_parse_size(s, &v) == 0) {
        gp_format_size(v, buf, sizeof buf);
        if (gp_parse_size(buf, &back) != 0 || back != v)
            abort();
    }
    if (gp_parse_duration_ms(s, &v) == 0)
        gp_format_duration(v, buf, sizeof buf);
    if (gp_parse_milli(s, &v) == 0) {
        gp_format_milli(v, buf, sizeof buf);
        if (gp_parse_milli(buf, &back) != 0 || back != v)
            abort();
    }
    if (gp_parse_signal(s, &sig) == 0 && (sig < 1 || sig > 64))
        abort();
    free(s);
    return 0;
}
