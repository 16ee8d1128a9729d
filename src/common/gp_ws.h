/*
 * gp_ws.h — the socket side of a libwslay WebSocket, shared by gpupoold's
 * session relay and the CLI: reading and writing a non-blocking socket in
 * the shape wslay's callbacks want (EAGAIN becomes WSLAY_ERR_WOULDBLOCK, the
 * peer's end or an error WSLAY_ERR_CALLBACK_FAILURE). Framing is wslay's.
 */
#ifndef GP_WS_H
#define GP_WS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <wslay/wslay.h>

/* recv() on fd for wslay's recv callback: the bytes read, or -1 with the
 * context's error set. */
ssize_t gp_ws_recv(wslay_event_context_ptr ctx, int fd, uint8_t *buf, size_t len);

/* send() on fd for wslay's send callback (flags: wslay's, WSLAY_MSG_MORE
 * becomes MSG_MORE; never SIGPIPE): the bytes sent, or -1 with the
 * context's error set. */
ssize_t gp_ws_send(wslay_event_context_ptr ctx, int fd, const uint8_t *data, size_t len, int flags);

#endif /* GP_WS_H */
