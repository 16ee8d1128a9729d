/*
 * ws.c — the socket side of a libwslay WebSocket (gp_ws.h).
 */
#include <errno.h>
#include <sys/socket.h>

#include "common/gp_ws.h"

ssize_t gp_ws_recv(wslay_event_context_ptr ctx, int fd, uint8_t *buf, size_t len) {
    ssize_t r;
    do
        r = recv(fd, buf, len, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (r <= 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}

ssize_t gp_ws_send(wslay_event_context_ptr ctx, int fd, const uint8_t *data, size_t len,
                   int flags) {
    ssize_t r;
    do
        r = send(fd, data, len, MSG_NOSIGNAL | (flags & WSLAY_MSG_MORE ? MSG_MORE : 0));
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (r < 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}
