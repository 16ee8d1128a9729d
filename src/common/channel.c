/*
 * channel.c — reading and judging the session channel's messages
 * (gp_channel.h) for the daemon and the CLI; the stream framing itself is
 * inline in the header, which a task's supervisor uses too.
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_channel.h"
#include "common/gp_error.h"

/* Fills why with a fixed sentence and returns GP_EPARSE. */
static int refuse(char *why, size_t whylen, const char *text) {
    if (why != NULL && whylen > 0)
        snprintf(why, whylen, "%s", text);
    return GP_EPARSE;
}

int gp_ch_client_check(int type, const uint8_t *payload, size_t len, char *why, size_t whylen) {
    if (len > GP_CH_PAYLOAD_MAX)
        return refuse(why, whylen, GP_CH_TOO_LONG);
    switch (type) {
    case GP_CH_STDIN:
    case GP_CH_DATA:
    case GP_CH_HELLO:
        return 0;
    case GP_CH_EOF:
        return len == 0 ? 0 : refuse(why, whylen, "EOF: carries no payload");
    case GP_CH_RESIZE:
        if (len != 4)
            return refuse(why, whylen, "RESIZE: must be 4 bytes (rows, cols)");
        if (gp_ch_get16(payload) == 0 || gp_ch_get16(payload + 2) == 0)
            return refuse(why, whylen, "RESIZE: rows and cols must be at least 1");
        return 0;
    case GP_CH_SIGNAL:
        if (len != 1 || payload[0] < 1 || payload[0] > 64)
            return refuse(why, whylen, "SIGNAL: must be 1 byte, a signal number from 1 to 64");
        return 0;
    default:
        return refuse(why, whylen, "type: not a message a client may send");
    }
}
