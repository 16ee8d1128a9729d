/*
 * http-guard.c — deadlines for the API's connections that bytes do not
 * restart.
 *
 * libmicrohttpd's own connection timeout is an idle timeout: every byte that
 * arrives restarts it, so a client sending one header line every few seconds
 * holds its connection for ever, and enough such clients hold them all (the
 * "slowloris" attack). The guard keeps, for every open connection, the phase
 * it is in and a deadline fixed when that phase began:
 *
 *   HEAD     from the accept (or the end of the previous answer on a
 *            keep-alive connection) until the request head is complete:
 *            header_ms;
 *   REQUEST  reading the body, and later sending the answer: request_ms;
 *   HANDLER  a handler is running (for example waiting for the durable
 *            commit of a submission): no deadline, the daemon itself is busy.
 *
 * A thread wakes every GUARD_TICK_MS (the deadline of its wait on a
 * mailbox, mailbox.h, that no one posts to; closing it stops the thread) and
 * shuts down (shutdown(2)) the socket of every connection past its deadline;
 * libmicrohttpd's event loop then sees the end of the stream and closes the
 * connection as usual. A phase's deadline is always the moment the phase
 * began plus that phase's fixed length, so each phase keeps its connections
 * in one list in the order they entered it, which is the order of their
 * deadlines: a tick looks only at the connections it cuts, and at one more
 * per list, never at all of them (with 10,000 connections held open by an
 * attacker, a scan of all of them five times a second, under the mutex
 * every request takes, was the guard's cost). Connections in HANDLER, and
 * those already cut, wait in a third list that no tick reads. The registry
 * is filled and emptied by libmicrohttpd's connection notifications, under
 * the guard's mutex: the CLOSED notification comes before libmicrohttpd
 * closes the socket, so a descriptor the guard shuts down is always still
 * that connection's, never a number reused by a later accept.
 *
 * The guard also rate-limits libmicrohttpd's log, which writes a line for
 * every connection it refuses or sees cut: under attack that would be
 * hundreds of lines a second into the daemon's log (and its disk).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/api.h"
#include "daemon/mailbox.h"

#define GUARD_TICK_MS 200

typedef struct track {
    struct track *prev, *next; /* in the list of its phase (or the unwatched list) */
    int fd;
    gpd__phase phase;
    int64_t deadline_ms; /* monotonic; meaningless in GPD__PHASE_HANDLER */
    int shut;
} track;

/* The guard's lists: connections in HEAD, in REQUEST (each in deadline
 * order), and the unwatched ones (in HANDLER, or already cut). */
enum { LIST_HEAD, LIST_REQUEST, LIST_UNWATCHED, NLISTS };

/* libmicrohttpd's log: at most LOG_BURST lines per LOG_WINDOW_MS. */
#define LOG_BURST     10
#define LOG_WINDOW_MS 60000

struct gpd__guard {
    pthread_mutex_t mu;
    int64_t log_window_start;
    int log_lines;
    uint64_t log_dropped;
    pthread_t thread;
    gpd__mailbox box; /* the reaper's ticks and stop */
    int64_t header_ms, request_ms;
    track lists[NLISTS]; /* circular, each headed by a sentinel */
    uint64_t expired;
};

static void unlink_track(track *t) {
    t->prev->next = t->next;
    t->next->prev = t->prev;
}

/* Appends t to list l (its last element). */
static void append(gpd__guard *g, int l, track *t) {
    track *h = &g->lists[l];
    t->prev = h->prev;
    t->next = h;
    h->prev->next = t;
    h->prev = t;
}

/* Moves t (linked in some list) into phase p, its deadline starting now;
 * a connection already cut stays unwatched. Under g->mu. */
static void set_phase(gpd__guard *g, track *t, gpd__phase p) {
    t->phase = p;
    t->deadline_ms = gpd__mono_ms() + (p == GPD__PHASE_HEAD ? g->header_ms : g->request_ms);
    unlink_track(t);
    append(g,
           t->shut || p == GPD__PHASE_HANDLER ? LIST_UNWATCHED
           : p == GPD__PHASE_HEAD             ? LIST_HEAD
                                              : LIST_REQUEST,
           t);
}

/* Cuts off the connections of list l past their deadline at now: they are
 * its first ones. Under g->mu. */
static void expire(gpd__guard *g, int l, int64_t now) {
    track *h = &g->lists[l];
    while (h->next != h && now >= h->next->deadline_ms) {
        track *t = h->next;
        shutdown(t->fd, SHUT_RDWR);
        t->shut = 1;
        g->expired++;
        unlink_track(t);
        append(g, LIST_UNWATCHED, t);
    }
}

static void *reaper(void *arg) {
    gpd__guard *g = arg;
    gpd__letter *none;
    while (gpd__mailbox_take(&g->box, gpd__mono_ms() + GUARD_TICK_MS, 0, &none) !=
           GPD__MAIL_CLOSED) {
        pthread_mutex_lock(&g->mu);
        int64_t now = gpd__mono_ms();
        expire(g, LIST_HEAD, now);
        expire(g, LIST_REQUEST, now);
        pthread_mutex_unlock(&g->mu);
    }
    return NULL;
}

int gpd__guard_start(int64_t header_ms, int64_t request_ms, gpd__guard **out) {
    gpd__guard *g = calloc(1, sizeof *g);
    if (!g)
        return GP_ENOMEM;
    g->header_ms = header_ms;
    g->request_ms = request_ms;
    for (int l = 0; l < NLISTS; l++)
        g->lists[l].next = g->lists[l].prev = &g->lists[l];
    pthread_mutex_init(&g->mu, NULL);
    if (gpd__mailbox_start(&g->box, &g->thread, reaper, g) < 0) {
        pthread_mutex_destroy(&g->mu);
        free(g);
        return GP_ESYS;
    }
    *out = g;
    return 0;
}

void gpd__guard_stop(gpd__guard *g) {
    if (!g)
        return;
    gpd__mailbox_stop(&g->box, g->thread);
    /* libmicrohttpd has been stopped first and has reported every
     * connection closed; anything left is freed all the same. */
    for (int l = 0; l < NLISTS; l++)
        while (g->lists[l].next != &g->lists[l]) {
            track *t = g->lists[l].next;
            unlink_track(t);
            free(t);
        }
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void gpd__guard_log(void *cls, const char *fmt, va_list ap) {
    gpd__guard *g = cls;
    pthread_mutex_lock(&g->mu);
    int64_t now = gpd__mono_ms();
    uint64_t dropped = 0;
    if (now - g->log_window_start >= LOG_WINDOW_MS) {
        dropped = g->log_dropped;
        g->log_window_start = now;
        g->log_lines = 0;
        g->log_dropped = 0;
    }
    int print = g->log_lines < LOG_BURST;
    if (print)
        g->log_lines++;
    else
        g->log_dropped++;
    pthread_mutex_unlock(&g->mu);
    if (dropped)
        gpd__log("http: %llu more messages in the last minute not shown",
                 (unsigned long long)dropped);
    if (print) {
        /* Formatted only when it is written: under attack most are not. */
        char line[512];
        vsnprintf(line, sizeof line, fmt, ap);
        line[strcspn(line, "\r\n")] = '\0';
        gpd__log("http: %s", line);
    }
}

uint64_t gpd__guard_expired(gpd__guard *g) {
    pthread_mutex_lock(&g->mu);
    uint64_t n = g->expired;
    pthread_mutex_unlock(&g->mu);
    return n;
}

void gpd__guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code) {
    gpd__guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        track *t = ci ? calloc(1, sizeof *t) : NULL;
        *socket_context = t;
        if (!t) {
            /* Without a record the connection has no deadline; refuse it
             * rather than serve it unguarded. */
            if (ci)
                shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        t->fd = ci->connect_fd;
        pthread_mutex_lock(&g->mu);
        append(g, LIST_UNWATCHED, t);
        set_phase(g, t, GPD__PHASE_HEAD);
        pthread_mutex_unlock(&g->mu);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        track *t = *socket_context;
        if (!t)
            return;
        pthread_mutex_lock(&g->mu);
        unlink_track(t);
        pthread_mutex_unlock(&g->mu);
        free(t);
        *socket_context = NULL;
    }
}

void gpd__guard_phase(gpd__guard *g, struct MHD_Connection *conn, gpd__phase p) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    track *t = ci ? ci->socket_context : NULL;
    if (!t)
        return;
    pthread_mutex_lock(&g->mu);
    set_phase(g, t, p);
    pthread_mutex_unlock(&g->mu);
}
