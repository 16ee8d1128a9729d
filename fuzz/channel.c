/*
 * channel.c — fuzz target for the session channel (common/gp_channel.h):
 * the stream framing that gpupoold reads from an executor's session
 * endpoint and a task's supervisor reads from gpupoold, and the judgement of
 * what a client sent. The input is read as a stream of frames, each frame
 * also judged as a client's message; a frame that parses must lie within the
 * input and announce its own length.
 */
#include <stdint.h>
#include <stdlib.h>

#include "common/gp_channel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t off = 0;
    while (off < size) {
        gp_ch_msg m;
        long n = gp_ch_parse(data + off, size - off, &m);
        if (n <= 0)
            break;
        if ((size_t)n > size - off || m.len + GP_CH_HEAD != (size_t)n ||
            m.payload != data + off + GP_CH_HEAD || !gp_ch_type_known(m.type))
            abort();
        char why[128];
        if (gp_ch_client_check(m.type, m.payload, m.len, why, sizeof why) < 0 && why[0] == '\0')
            abort();
        off += (size_t)n;
    }
    /* The whole input as one WebSocket message: a type byte and a payload. */
    if (size > 0) {
        char why[128];
        gp_ch_client_check(data[0], data + 1, size - 1, why, sizeof why);
    }
    return 0;
}
