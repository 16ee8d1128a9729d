/*
 * session.c — sessions: a terminal, an exec'd command or a forwarded port of
 * a workload, carried over a WebSocket (RFC 6455, framed by libwslay) on the
 * API's own front door, relayed to the executor's session endpoint.
 *
 * A session starts as an ordinary request on GET /api/v1/workloads/{id}/
 * attach, /exec or /port-forward (h_wl_session below, the route's argument
 * its kind): the head is judged as every request's is, and the handler checks
 * the caller (only the workload's own user; 403 for anyone else, admins
 * included), the workload (running, started with a terminal) and the
 * caller's caps, then answers 101 and libmicrohttpd hands the socket over.
 * A browser, which cannot set an Authorization header on a WebSocket, sends
 * no header: its token comes in the first message (HELLO), and the same
 * checks are made then. Without an Upgrade header the route only makes the
 * checks and answers 200 (port-forward uses that to refuse at once).
 *
 * Threads: one relay thread (epoll) carries every open session; it never
 * blocks. Opening the executor's side (gp_exec_session, thread-safe by the
 * executor contract, may take a few seconds) runs on a short-lived thread
 * per opening, which posts the result back. Neither the scheduling loop nor
 * the HTTP threads ever wait on a session.
 *
 * Bounds: toward the client, at most FLIGHT bytes are written beyond what
 * it has read (its pongs say), then WS_QUEUE_MAX bytes are queued in wslay
 * before the executor's side is no longer read (its own ring then fills
 * and the program's output waits: a slow reader's output is throttled,
 * never dropped), and the client's socket is not read past WS_PONGS_MAX
 * (wslay queues a pong for each of its pings); toward the executor at most
 * BE_OUT_MAX bytes wait before the WebSocket is no longer read. A client
 * that takes nothing for STALL_MS while it holds its session up (its queue
 * is full, a ping to it is unanswered, or the session closes and it has
 * not taken everything yet), or sends no HELLO within HELLO_MS, is cut off;
 * it takes something when it answers a ping, a write to it goes out or its
 * kernel acknowledges more than before (client_progress). An open
 * session's client is pinged every PING_EVERY bytes, and PING_MS after it
 * last answered when nothing else is sent: a client that reads nothing is
 * cut off however little the task prints, and one that reads slowly but
 * steadily answers pings. A session whose token is revoked, or whose
 * console session is signed out or ended, is ended (ERROR) within a second.
 * A frame over GP_CH_PAYLOAD_MAX + 1 bytes is refused by wslay (close
 * 1009), a message of several frames that adds up to more by on_chunk
 * (ERROR).
 *
 * wslay does not gather messages (no buffering): the frame callbacks take
 * each piece as wslay unmasks it, and a forwarded port's DATA goes to the
 * executor's side as it comes, not copied whole twice by wslay first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "common/gp_channel.h"
#include "common/gp_ws.h"
#include "daemon/api.h"
#include "daemon/sched.h"
#include "daemon/store.h"

#define WS_QUEUE_MAX (256 * 1024)
#define BE_OUT_MAX   (256 * 1024)
/* The most bout needs: BE_OUT_MAX, then what one read of the socket brought
 * (it is served whatever bout holds; a message's head there, 5 bytes, is
 * shorter than its frame's, a client's frames being masked). */
#define BOUT_ROOM (BE_OUT_MAX + GP_WS_IO)
#define BE_IN     (GP_CH_HEAD + GP_CH_PAYLOAD_MAX)
/* Past this, what is queued for the client is its own pings' pongs. */
#define WS_PONGS_MAX (WS_QUEUE_MAX + BE_IN + 64 * 1024)
#define STALL_MS     30000
/* An open session's client is sent a ping after each PING_EVERY bytes sent
 * to it, and PING_MS after its last pong (or the session's start) when
 * nothing else is; while a ping is unanswered the client holds its session
 * up (held_up), so that one that reads nothing, or is gone, is cut off
 * STALL_MS later however little the task prints. A pong answers the pings
 * up to the one whose payload it carries (PING_LEN random bytes: only a
 * client that read the ping can answer it), and says that the client has
 * read everything sent before that ping. At most FLIGHT bytes are sent
 * beyond what a pong said was read: so the pings a client reads slowly
 * come PING_EVERY bytes apart, however much its socket's buffer holds (its
 * kernel, which opens its window only once it has read a large part of
 * the buffer, shows the sender far less), and the kernel's memory for it
 * in gpupoold is bounded. FLIGHT leaves room for a ping queued behind a
 * whole message (GP_CH_PAYLOAD_MAX) to go out. */
#define PING_MS    10000
#define PING_LEN   8
#define PING_EVERY (16 * 1024)
#define FLIGHT     (4 * 1024 * 1024)
#define PINGS      (FLIGHT / PING_EVERY + 4)
/* A closing session: what its client still sends is read and dropped until
 * the client has taken everything sent to it, the close frame included (the
 * socket's queue toward it is empty), then for CLOSING_MS at the most; one
 * that takes nothing for STALL_MS meanwhile is cut off, however slowly the
 * rest take the session's last output. Closed any earlier, the connection
 * would be reset by the next bytes the client sends (a key typed), and what
 * the kernel still held for it lost. CLOSING_ROUND bytes a round
 * of events at the most (nothing else bounds a read that is dropped, and
 * one client must not hold the relay thread: epoll, level-triggered,
 * brings the rest in the next round), and only while the client takes
 * what is queued for it. */
#define CLOSING_MS    5000
#define CLOSING_ROUND BE_OUT_MAX
#define HELLO_MS      10000
#define MAX_ARGV      256

typedef enum { S_HELLO, S_OPENING, S_OPEN, S_CLOSING } sstate;

typedef struct sess sess;
typedef struct tag {
    sess *s;
    int be;
} tag;

struct sess {
    gpd__sessions *all;
    int fd;
    struct MHD_UpgradeResponseHandle *urh;
    wslay_event_context_ptr ctx;
    gp_ws_rbuf rb; /* read from the socket, not yet taken by wslay */
    int authed;
    gpd__principal who;
    uint64_t id;
    gp_session_kind kind;
    int32_t port;
    uint16_t rows, cols;
    int tty;
    char **argv;
    sstate st;
    int opening; /* its open_thread runs: it is freed only once that ends */
    int be;
    /* The message being received, piece by piece as wslay unmasks it (it
     * is set not to buffer messages): a forwarded port's DATA goes to
     * bout as it comes; any other message is gathered first (on_msg). */
    gp_ws_in in;
    uint8_t *bin;
    size_t binlen;
    uint8_t *bout;
    size_t boutlen, boutoff, boutcap;
    int be_eof;     /* the client's EOF, passed on once bout is written */
    int be_rd_eof;  /* a forwarded port's own EOF, passed to the client */
    int be_wr_gone; /* a terminal's task side takes no more (it closed) */
    int be_parked;  /* the executor's side hung up, out of the epoll set */
    int counted;
    int64_t born_ms;
    int64_t took_ms;  /* when the client last took something, or last held
                         nothing up (client_progress) */
    uint64_t acked;   /* the bytes its kernel had acknowledged then, of
                         those sent (0: not looked at since it held
                         nothing up) */
    int64_t close_ms; /* when the client had taken everything, the close frame
                         included (0: not yet) */
    int64_t pong_ms;  /* when the last ping was answered, or the session opened */
    uint64_t sent;    /* bytes written to the client's socket */
    uint64_t read;    /* of which a pong said the client read them */
    /* The unanswered pings, oldest first from ping0 (a ring): each one's
     * payload and the bytes sent before it was queued. */
    uint8_t ping[PINGS][PING_LEN];
    uint64_t ping_at[PINGS];
    int ping0, pings;
    uint64_t mark;          /* an open session: where the next ping is owed */
    uint8_t pong[PING_LEN]; /* the pong being received */
    int pong_len;           /* its bytes so far (-1: none is) */
    size_t round_in;        /* bytes read from the client in this round of events */
    int dead;
    int gone;         /* destroyed: freed after the current batch of events */
    int close_queued; /* the close frame is queued (after every message:
                         wslay sends control frames ahead of data) */
    uint32_t ev_ws, ev_be;
    tag tws, tbe;
    sess *prev, *next;
};

typedef struct opened {
    sess *s;
    int fd, rc;
    char err[256];
    struct opened *next;
} opened;

typedef struct ucount {
    char user[GP_NAME_MAX + 1];
    int sessions, forwards;
} ucount;

struct gpd__sessions {
    gpd__daemon *d;
    int ep, wake;
    pthread_t th;
    int started, stop;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int openers;
    sess *inbox;
    opened *done;
    sess *live;  /* relay thread only */
    sess *grave; /* destroyed during a batch of events, freed after it */
    ucount *uc;
    size_t nuc;
};

/* ---- Per-user caps ------------------------------------------------------ */

/* Takes one of user's sessions (or forwards); GP_EBUSY naming the cap. */
static int cap_take(gpd__sessions *g, const char *user, int forward, gpd__err *e) {
    pthread_mutex_lock(&g->mu);
    ucount *u = NULL;
    for (size_t i = 0; i < g->nuc && u == NULL; i++)
        if (strcmp(g->uc[i].user, user) == 0)
            u = &g->uc[i];
    if (u == NULL) {
        ucount *n = realloc(g->uc, (g->nuc + 1) * sizeof *n);
        if (n == NULL) {
            pthread_mutex_unlock(&g->mu);
            return gpd__fail(e, GP_ENOMEM, "", "out of memory");
        }
        g->uc = n;
        u = &g->uc[g->nuc++];
        memset(u, 0, sizeof *u);
        snprintf(u->user, sizeof u->user, "%s", user);
    }
    int *have = forward ? &u->forwards : &u->sessions;
    int max = forward ? g->d->cfg.max_user_forwards : g->d->cfg.max_user_sessions;
    int rc = 0;
    if (*have >= max)
        rc = gpd__fail(e, GP_EBUSY, "", "%s holds %d %s, the most a user may (%s)", user, *have,
                       forward ? "forwarded connections" : "sessions",
                       forward ? "--max-user-forwards" : "--max-user-sessions");
    else
        (*have)++;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static void cap_give(gpd__sessions *g, const char *user, int forward) {
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nuc; i++) {
        if (strcmp(g->uc[i].user, user) == 0) {
            int *have = forward ? &g->uc[i].forwards : &g->uc[i].sessions;
            if (*have > 0)
                (*have)--;
        }
    }
    pthread_mutex_unlock(&g->mu);
}

/* ---- Who may open what ---------------------------------------------------- */

/* Checks that who may open a session of kind on workload id: visible (404),
 * the caller's own (403), running (409) and started with a terminal (409). */
static int check_access(gpd__daemon *d, const gpd__principal *who, uint64_t id,
                        gp_session_kind kind, gpd__err *e) {
    gpd__wl w;
    int rc = gpd__store_wl_get(d->store, id, &w, e);
    if (rc < 0)
        return rc;
    gpd__req fr;
    memset(&fr, 0, sizeof fr);
    fr.d = d;
    fr.who = *who;
    const char *what = kind == GP_SESSION_ATTACH ? "attach to"
                       : kind == GP_SESSION_EXEC ? "run commands in"
                                                 : "forward ports of";
    int seen = 0;
    if ((rc = gpd__can_see_wl(&fr, &w, &seen, e)) < 0) {
        /* the store failed: rc says so */
    } else if (!seen) {
        rc = gpd__fail(e, GP_ENOENT, "id", "id: no workload %llu", (unsigned long long)id);
    } else if (strcmp(w.user, who->user) != 0) {
        rc = gpd__fail(e, GP_EPERM, "id",
                       "workload %llu belongs to %s: only its own user may %s it (an admin may "
                       "stop it, not type into it)",
                       (unsigned long long)id, w.user, what);
    } else if (w.state != GP_WL_RUNNING) {
        rc = gpd__fail(e, GP_ESTATE, "id",
                       "workload %llu is %s: only a running workload has sessions",
                       (unsigned long long)id, gp_wl_state_name(w.state));
    } else {
        json_t *spec = json_loads(w.spec ? w.spec : "{}", 0, NULL);
        if (!json_is_true(json_object_get(spec, "tty")))
            rc = gpd__fail(e, GP_ESTATE, "id",
                           "workload %llu is not interactive: it was started without a terminal "
                           "(gpupool run -it)",
                           (unsigned long long)id);
        json_decref(spec);
    }
    gpd__wl_free(&w);
    return rc;
}

/* ---- The route handlers --------------------------------------------------- */

/* 1 if the header name holds token (comma-separated, any case). */
static int header_has(struct MHD_Connection *conn, const char *name, const char *token) {
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
    size_t tl = strlen(token);
    while (v != NULL && *v != '\0') {
        while (*v == ' ' || *v == ',' || *v == '\t')
            v++;
        size_t n = strcspn(v, ",");
        size_t m = n;
        while (m > 0 && (v[m - 1] == ' ' || v[m - 1] == '\t'))
            m--;
        if (m == tl && strncasecmp(v, token, tl) == 0)
            return 1;
        v += n;
    }
    return 0;
}

/* attach, exec and port-forward: r->arg is the session's kind (GP_SESSION_*). */
int gpd__h_wl_session(gpd__req *r, gpd__resp *out, gpd__err *e) {
    gp_session_kind kind = (gp_session_kind)r->arg;
    uint64_t id;
    int rc = gpd__param_id(r, 0, &id, e);
    if (rc < 0)
        return rc;
    int64_t port = 0;
    if (kind == GP_SESSION_PORT) {
        if (gpd__query(r, "port") == NULL)
            return gpd__fail(e, GP_EINVAL, "port",
                             "port: the port inside the task is needed (?port=)");
        if ((rc = gpd__query_int(r, "port", 1, 65535, &port, e)) < 0)
            return rc;
    }
    int upgrade = header_has(r->conn, "Upgrade", "websocket");
    if (!r->deferred_auth && (rc = check_access(r->d, &r->who, id, kind, e)) < 0)
        return rc;
    if (!upgrade) {
        if (r->deferred_auth)
            return gpd__fail(e, GP_EAUTH, "", "a token is needed (Authorization: Bearer)");
        return gpd__reply_json(out, 200, json_pack("{s:b, s:I}", "ok", 1, "id", (json_int_t)id));
    }
    const char *key = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    const char *ver =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    if (!header_has(r->conn, "Connection", "upgrade") || ver == NULL || strcmp(ver, "13") != 0)
        return gpd__fail(e, GP_EINVAL, "Upgrade",
                         "Upgrade: a WebSocket handshake needs Connection: Upgrade and "
                         "Sec-WebSocket-Version: 13");
    if (gp_ws_accept(key, out->ws_accept) < 0)
        return gpd__fail(e, GP_EINVAL, "Sec-WebSocket-Key",
                         "Sec-WebSocket-Key: must be 16 bytes in base64 (24 characters)");
    sess *s = calloc(1, sizeof *s);
    if (s == NULL)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    s->all = r->d->sessions;
    s->fd = s->be = -1;
    s->id = id;
    s->kind = kind;
    s->port = (int32_t)port;
    s->authed = !r->deferred_auth;
    if (s->authed) {
        s->who = r->who;
        if ((rc = cap_take(r->d->sessions, s->who.user, kind == GP_SESSION_PORT, e)) < 0) {
            free(s);
            return rc;
        }
        s->counted = 1;
    }
    out->upgrade = s;
    out->status = 101;
    return 0;
}

/* ---- The relay thread ----------------------------------------------------- */

static void wake(gpd__sessions *g) {
    uint64_t one = 1;
    (void)!write(g->wake, &one, sizeof one);
}

static void free_argv(char **argv) {
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++)
        free(argv[i]);
    free(argv);
}

static void sess_free(sess *s) {
    if (s->counted)
        cap_give(s->all, s->who.user, s->kind == GP_SESSION_PORT);
    free_argv(s->argv);
    free(s->rb.buf);
    gp_ws_in_free(&s->in);
    free(s->bin);
    free(s->bout);
    free(s);
}

/* Ends a session for good: the executor's side is closed, the connection
 * handed back to libmicrohttpd to close. */
static void sess_destroy(sess *s) {
    gpd__sessions *g = s->all;
    if (s->fd >= 0)
        epoll_ctl(g->ep, EPOLL_CTL_DEL, s->fd, NULL);
    if (s->be >= 0) {
        epoll_ctl(g->ep, EPOLL_CTL_DEL, s->be, NULL);
        close(s->be);
        s->be = -1;
    }
    if (s->ctx != NULL)
        wslay_event_context_free(s->ctx);
    s->ctx = NULL;
    if (s->urh != NULL)
        MHD_upgrade_action(s->urh, MHD_UPGRADE_ACTION_CLOSE);
    s->urh = NULL;
    s->fd = -1;
    if (s->prev != NULL)
        s->prev->next = s->next;
    else if (g->live == s)
        g->live = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    if (s->opening) {
        s->dead = 1; /* freed when its opening comes back */
        return;
    }
    /* Another event of the same batch may still name it. */
    s->gone = 1;
    s->next = s->all->grave;
    s->all->grave = s;
}

/* Queues a message for the client: the type byte and the payload. */
static void ws_send(sess *s, int type, const void *payload, size_t len) {
    if (s->ctx == NULL || s->st == S_CLOSING)
        return;
    gp_ws_queue(s->ctx, type, payload, len);
}

/* Closes the WebSocket: after what is queued, the close frame
 * (sess_arm), and the client's last bytes drained (reads_on). */
static void sess_end(sess *s) {
    s->st = S_CLOSING;
}

/* Sends ERROR (text) and closes the WebSocket. */
static void sess_fail(sess *s, const char *text) {
    ws_send(s, GP_CH_ERROR, text, strlen(text));
    sess_end(s);
    if (s->be >= 0) {
        epoll_ctl(s->all->ep, EPOLL_CTL_DEL, s->be, NULL);
        close(s->be);
        s->be = -1;
    }
}

/* Appends bytes for the executor's side (framed unless the session is a
 * forwarded port). */
static void be_put(sess *s, int type, const uint8_t *p, size_t len) {
    if (s->be_wr_gone)
        return;
    size_t need = s->boutlen + len + GP_CH_HEAD;
    if (need > s->boutcap && s->boutoff > 0) {
        memmove(s->bout, s->bout + s->boutoff, s->boutlen - s->boutoff);
        s->boutlen -= s->boutoff;
        need -= s->boutoff;
        s->boutoff = 0;
    }
    if (need > s->boutcap) {
        /* Doubled: a port's DATA comes in wslay's pieces of 4 KiB, and a
         * realloc for each was a system call each once bout was large
         * enough to be mmap'd. */
        size_t cap = s->boutcap ? s->boutcap : 4096;
        while (cap < need)
            cap *= 2;
        if (cap > BOUT_ROOM)
            cap = need > BOUT_ROOM ? need : BOUT_ROOM;
        uint8_t *nb = realloc(s->bout, cap);
        if (nb == NULL) {
            sess_fail(s, "out of memory");
            return;
        }
        s->bout = nb;
        s->boutcap = cap;
    }
    if (s->kind != GP_SESSION_PORT) {
        gp_ch_head(s->bout + s->boutlen, type, len);
        s->boutlen += GP_CH_HEAD;
    }
    if (len > 0) /* p is NULL for a message without payload */
        memcpy(s->bout + s->boutlen, p, len);
    s->boutlen += len;
}

static void *open_thread(void *arg);
static void pong_got(sess *s);
static void be_write(sess *s);
static void port_done(sess *s);

/* The first message: HELLO, JSON. */
static void on_hello(sess *s, const uint8_t *p, size_t len) {
    gpd__sessions *g = s->all;
    json_error_t je;
    json_t *j = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
    static const char *const known[] = {"token", "rows", "cols", "command", "tty", NULL};
    gpd__err e = {0};
    char msg[400];
    int rc = 0;
    if (!json_is_object(j)) {
        rc = gpd__fail(&e, GP_EPARSE, "", "HELLO: must be a JSON object");
    } else if ((rc = gpd__json_known(j, known, "HELLO", &e)) == 0) {
        json_t *v;
        const char *sizes[2] = {"rows", "cols"};
        for (int i = 0; i < 2 && rc == 0; i++) {
            v = json_object_get(j, sizes[i]);
            if (v != NULL &&
                (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535))
                rc = gpd__fail(&e, GP_EINVAL, sizes[i],
                               "%s: must be a whole number from 1 to 65535", sizes[i]);
            else if (v != NULL)
                *(i == 0 ? &s->rows : &s->cols) = (uint16_t)json_integer_value(v);
        }
        v = json_object_get(j, "tty");
        if (rc == 0 && v != NULL && !json_is_boolean(v))
            rc = gpd__fail(&e, GP_EINVAL, "tty", "tty: must be true or false");
        s->tty = json_is_true(v);
        v = json_object_get(j, "command");
        if (rc == 0 && s->kind == GP_SESSION_EXEC) {
            size_t n = json_array_size(v);
            if (!json_is_array(v) || n == 0 || n > MAX_ARGV) {
                rc = gpd__fail(&e, GP_EINVAL, "command",
                               "command: an array of 1 to %d strings is needed", MAX_ARGV);
            } else if ((s->argv = calloc(n + 1, sizeof *s->argv)) == NULL) {
                rc = gpd__fail(&e, GP_ENOMEM, "", "out of memory");
            }
            for (size_t i = 0; rc == 0 && i < n; i++) {
                const char *a = json_string_value(json_array_get(v, i));
                if (a == NULL || (i == 0 && a[0] == '\0'))
                    rc = gpd__fail(&e, GP_EINVAL, "command",
                                   "command: element %zu is not a (non-empty) string", i);
                else if ((s->argv[i] = strdup(a)) == NULL)
                    rc = gpd__fail(&e, GP_ENOMEM, "", "out of memory");
            }
        } else if (rc == 0 && v != NULL) {
            rc = gpd__fail(&e, GP_EINVAL, "command", "command: only an exec session runs one");
        }
        v = json_object_get(j, "token");
        if (rc == 0 && !s->authed) {
            const char *tok = json_string_value(v);
            if ((rc = gpd__auth_check(g->d->auth, tok, &s->who, &e)) == 0 &&
                (rc = check_access(g->d, &s->who, s->id, s->kind, &e)) == 0 &&
                (rc = cap_take(g, s->who.user, s->kind == GP_SESSION_PORT, &e)) == 0) {
                s->counted = 1;
                s->authed = 1;
            }
        }
    } else {
        rc = e.code;
    }
    json_decref(j);
    if (rc < 0) {
        snprintf(msg, sizeof msg, "%s", e.msg[0] ? e.msg : gp_strerror(rc));
        sess_fail(s, msg);
        return;
    }
    s->st = S_OPENING;
    s->opening = 1;
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&g->mu);
    g->openers++;
    pthread_mutex_unlock(&g->mu);
    if (pthread_create(&th, &at, open_thread, s) != 0) {
        pthread_mutex_lock(&g->mu);
        g->openers--;
        pthread_mutex_unlock(&g->mu);
        s->st = S_HELLO;
        s->opening = 0;
        sess_fail(s, "cannot start the session: out of threads");
    }
    pthread_attr_destroy(&at);
}

/* Opens the executor's side (may block a few seconds): its own thread. */
static void *open_thread(void *arg) {
    sess *s = arg;
    gpd__sessions *g = s->all;
    opened *o = calloc(1, sizeof *o);
    gpd__task_rec *t = NULL;
    int n = 0;
    gpd__err e = {0};
    if (o != NULL) {
        o->s = s;
        o->fd = -1;
        if (gpd__store_tasks_get(g->d->store, s->id, &t, &n, &e) < 0 || n < 1 || !t[0].handle[0]) {
            o->rc = GP_ESTATE;
            snprintf(o->err, sizeof o->err, "workload %llu has no running task",
                     (unsigned long long)s->id);
        } else {
            gp_session_req req = {s->kind, s->rows, s->cols, s->tty, (const char *const *)s->argv,
                                  s->port, NULL};
            o->rc =
                gpd__sched_session(g->d->sched, t[0].handle, &req, &o->fd, o->err, sizeof o->err);
        }
        gpd__task_recs_free(t, n);
    }
    pthread_mutex_lock(&g->mu);
    if (o != NULL) {
        o->next = g->done;
        g->done = o;
    }
    g->openers--;
    pthread_cond_broadcast(&g->idle);
    pthread_mutex_unlock(&g->mu);
    wake(g);
    return NULL;
}

/* A whole message from the client (a port's DATA is passed on as it comes
 * instead: on_chunk). */
static void on_msg(sess *s, int type, const uint8_t *p, size_t len) {
    if (s->st == S_CLOSING)
        return;
    char why[128];
    if (gp_ch_client_check(type, p, len, why, sizeof why) < 0) {
        sess_fail(s, why);
        return;
    }
    if (s->st == S_HELLO) {
        if (type != GP_CH_HELLO)
            sess_fail(s, "message: the first message must be HELLO");
        else
            on_hello(s, p, len);
        return;
    }
    /* Messages sent right after HELLO (a browser need not wait for READY)
     * may come in the same read as HELLO, while the session is opening:
     * they wait in bout like any other and go to the executor's side once
     * it is open (got_opened). No more is read meanwhile (on_recv). */
    if (type == GP_CH_HELLO) {
        sess_fail(s, "message: HELLO was sent already");
        return;
    }
    if (s->kind == GP_SESSION_PORT) {
        if (type == GP_CH_DATA && s->be_eof == 0)
            be_put(s, type, p, len);
        else if (type == GP_CH_EOF && s->be_eof == 0) {
            /* Half-closed only after what came before it: be_write. */
            s->be_eof = 1;
            if (s->be >= 0 && s->boutoff == s->boutlen)
                be_write(s);
        } else if (type == GP_CH_DATA || type == GP_CH_EOF)
            sess_fail(s, "message: DATA or EOF after the EOF");
        else
            sess_fail(s, "message: a forwarded port takes DATA and EOF only");
        return;
    }
    if (type == GP_CH_DATA)
        sess_fail(s, "message: DATA belongs to a forwarded port; a terminal takes STDIN");
    else
        be_put(s, type, p, len);
}

/* A port's DATA that is not after its EOF, once the session is past
 * HELLO, is passed on as it comes (in_piece); on_msg judges the rest. */
static int in_stream(void *ud, int type) {
    sess *s = ud;
    return s->kind == GP_SESSION_PORT && type == GP_CH_DATA && s->st != S_HELLO && s->be_eof == 0;
}

static void in_piece(void *ud, const uint8_t *p, size_t n) {
    be_put(ud, GP_CH_DATA, p, n);
}

static void in_whole(void *ud, int type, const uint8_t *p, size_t n) {
    on_msg(ud, type, p, n);
}

static void on_start(wslay_event_context_ptr ctx,
                     const struct wslay_event_on_frame_recv_start_arg *arg, void *ud) {
    sess *s = ud;
    (void)ctx;
    s->pong_len = arg->opcode == WSLAY_PONG && arg->payload_length == PING_LEN ? 0 : -1;
    int rc = gp_ws_in_start(&s->in, arg->opcode, arg->fin);
    if (rc < 0 && s->st != S_CLOSING)
        sess_fail(s, gp_ws_in_why(rc));
}

static void on_chunk(wslay_event_context_ptr ctx,
                     const struct wslay_event_on_frame_recv_chunk_arg *arg, void *ud) {
    sess *s = ud;
    (void)ctx;
    int rc;
    if (s->pong_len >= 0 && s->pong_len + arg->data_length <= PING_LEN) {
        memcpy(s->pong + s->pong_len, arg->data, arg->data_length);
        s->pong_len += (int)arg->data_length;
    }
    if (s->st != S_CLOSING && (rc = gp_ws_in_chunk(&s->in, arg->data, arg->data_length)) < 0)
        sess_fail(s, gp_ws_in_why(rc));
}

static void on_end(wslay_event_context_ptr ctx, void *ud) {
    sess *s = ud;
    (void)ctx;
    if (s->pong_len == PING_LEN)
        pong_got(s);
    s->pong_len = -1;
    int rc = gp_ws_in_end(&s->in); /* on_msg passes over a closing session's */
    if (rc < 0 && s->st != S_CLOSING)
        sess_fail(s, gp_ws_in_why(rc));
}

/* Whether the client holds its session up: while the session is open, its
 * queue is full (the executor's side is no longer read) or a ping to it is
 * unanswered; once it closes, until the client has taken everything, the
 * close frame included. */
static int held_up(const sess *s) {
    if (s->st == S_CLOSING)
        return s->close_ms == 0;
    return s->ctx != NULL &&
           (s->pings > 0 || wslay_event_get_queued_msg_length(s->ctx) >= WS_QUEUE_MAX);
}

/* Queues a ping to the client (none if PINGS are unanswered already: the
 * bytes sent wait for an answer then). */
static void ping_queue(sess *s) {
    if (s->pings == PINGS)
        return;
    int i = (s->ping0 + s->pings) % PINGS;
    if (getrandom(s->ping[i], PING_LEN, GRND_NONBLOCK) != PING_LEN)
        memcpy(s->ping[i], &s->sent, PING_LEN);
    struct wslay_event_msg m = {WSLAY_PING, s->ping[i], PING_LEN};
    if (wslay_event_queue_msg(s->ctx, &m) == 0) {
        s->ping_at[i] = s->sent;
        s->pings++;
    }
}

/* Pings an open session's client PING_MS after it last answered one, when
 * none is unanswered. */
static void ping_due(sess *s, int64_t now) {
    if (s->st == S_OPEN && s->ctx != NULL && s->pings == 0 && now - s->pong_ms >= PING_MS)
        ping_queue(s);
}

/* A pong (s->pong): the ping it names and those before it are answered. */
static void pong_got(sess *s) {
    for (int k = 0; k < s->pings; k++) {
        int i = (s->ping0 + k) % PINGS;
        if (memcmp(s->ping[i], s->pong, PING_LEN) != 0)
            continue;
        s->read = s->ping_at[i];
        s->ping0 = (i + 1) % PINGS;
        s->pings -= k + 1;
        s->pong_ms = s->took_ms = gpd__now_ms();
        return;
    }
}

/* Whether what the client was sent and has not read yet, by its pongs,
 * holds back what is queued for it (FLIGHT; an open session only). */
static int in_flight_full(const sess *s) {
    return s->st == S_OPEN && s->sent - s->read >= FLIGHT;
}

/* Whether the session is over: its client held it up and took nothing for
 * STALL_MS (the close frame could not reach it either), or it is closing
 * and CLOSING_MS went by after the client took the close frame with no
 * close of its own. */
static int sess_over(const sess *s, int64_t now) {
    if (s->st == S_CLOSING && s->close_ms != 0)
        return now - s->close_ms >= CLOSING_MS;
    return held_up(s) && now - s->took_ms >= STALL_MS;
}

/* Watches whether the client takes what is sent to it, one rule for an open
 * session and a closing one (sess_over): the clock runs only while it holds
 * its session up, and it took something when it answered a ping (pong_got),
 * when a write to it went out (on_send), or when its kernel acknowledged
 * more bytes than at the last look (those written less those its socket
 * still holds, SIOCOUTQ: what is written between two looks does not hide
 * what it took).
 * Once the client's receive buffer is full, its kernel takes more only
 * after the client has read a large part of it, which a client reading
 * slowly but steadily may take longer than STALL_MS to do: its pongs,
 * PING_EVERY bytes apart, show it reads. A closing session's client has
 * taken everything once the close frame went out and the socket holds
 * nothing more. */
static void client_progress(sess *s, int64_t now) {
    if (!held_up(s)) {
        s->took_ms = now;
        s->acked = 0;
        return;
    }
    int q = 0;
    if (ioctl(s->fd, SIOCOUTQ, &q) < 0 || q < 0)
        q = 0;
    uint64_t acked = s->sent - (uint64_t)q;
    if (acked > s->acked)
        s->took_ms = now;
    s->acked = acked;
    if (s->st == S_CLOSING && q == 0 && wslay_event_get_close_sent(s->ctx))
        s->close_ms = now;
}

/* Whether the client's socket is read: not while the session opens, nor
 * while the executor's side has not taken what came before (back-pressure),
 * nor while what is queued for the client reaches WS_PONGS_MAX: wslay
 * answers each ping by queuing a pong, whatever the queue holds, and a
 * client sending pings and reading nothing grew it without bound (1.9 GB in
 * 8 s, before its HELLO); such a client holds its session up and is cut off
 * after STALL_MS. What the executor's side brings stays below WS_QUEUE_MAX
 * and one read (BE_IN), so the output a client has not taken yet never
 * holds up its input (a Ctrl-C). Once it closes, while the client takes
 * what is queued for it, where what it still sends is read and dropped
 * (CLOSING_ROUND a round) until its close frame or its end (sess_over). A
 * connection closed with bytes unread is reset: the client, cut off in the
 * middle of a write, would lose what was queued for it (the port's EOF, an
 * ERROR, the close frame) and see only the reset. */
static int reads_on(const sess *s) {
    size_t queued = wslay_event_get_queued_msg_length(s->ctx);
    if (s->st == S_CLOSING)
        return queued < WS_QUEUE_MAX;
    return queued < WS_PONGS_MAX && s->st != S_OPENING && s->boutlen - s->boutoff < BE_OUT_MAX;
}

/*
 * wslay asks for at most 4 KiB at a time: the socket is read GP_WS_IO bytes per
 * system call into the session's own buffer (gp_ws_recv_buffered; the bytes
 * that came with the handshake are its first contents), and wslay is served
 * from it. The buffer is freed once taken (or when nothing came), so an idle
 * session holds none. What is already read is served whatever the state (a
 * message sent in the same read as HELLO is kept: on_msg); only the socket
 * is no longer read while the session is opening or the executor's side has
 * not taken what came before (back-pressure).
 */
static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud) {
    sess *s = ud;
    (void)flags;
    if (!gp_ws_rbuf_held(&s->rb) &&
        (!reads_on(s) || (s->st == S_CLOSING && s->round_in >= CLOSING_ROUND))) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    ssize_t r = gp_ws_recv_buffered(ctx, s->fd, &s->rb, buf, len);
    if (r > 0)
        s->round_in += (size_t)r;
    return r;
}

/* An open session's bytes go out up to the next ping's mark (ws_out then
 * queues the ping) and while in_flight_full allows. The client takes
 * something when a write to it goes out (client_progress). */
static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *ud) {
    sess *s = ud;
    if (s->st == S_OPEN && (s->sent >= s->mark || in_flight_full(s))) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (s->st == S_OPEN && len > s->mark - s->sent)
        len = (size_t)(s->mark - s->sent);
    ssize_t r = gp_ws_send(ctx, s->fd, data, len, flags);
    if (r < 0)
        return -1;
    s->sent += (uint64_t)r;
    s->took_ms = gpd__now_ms();
    return r;
}

/* Sends what is queued for the client as far as it goes, with a ping at
 * each PING_EVERY bytes of an open session (on_send stops at the mark);
 * wslay's result (non-zero: the connection failed). */
static int ws_out(sess *s) {
    for (;;) {
        int rc = wslay_event_send(s->ctx);
        if (rc != 0 || s->st != S_OPEN || s->sent < s->mark || s->pings == PINGS)
            return rc;
        ping_queue(s);
        s->mark = s->sent + PING_EVERY;
    }
}

/* Reads the executor's side while the client's queue has room. */
static void be_read(sess *s) {
    if (s->bin == NULL && (s->bin = malloc(BE_IN)) == NULL) {
        sess_fail(s, "out of memory");
        return;
    }
    if (s->kind == GP_SESSION_PORT) {
        /* One DATA message of at most GP_CH_PAYLOAD_MAX bytes: a client
         * refuses a longer one (1009). */
        ssize_t r = read(s->be, s->bin + 1, GP_CH_PAYLOAD_MAX);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (r <= 0) {
            /* The port's half-close: the client may still send (its
             * upload is not cut short); the session ends once both sides
             * have ended theirs. */
            ws_send(s, GP_CH_EOF, NULL, 0);
            s->be_rd_eof = 1;
            if (s->be_eof == 2 || r < 0)
                port_done(s);
            return;
        }
        s->bin[0] = GP_CH_DATA;
        struct wslay_event_msg m = {WSLAY_BINARY_FRAME, s->bin, (size_t)r + 1};
        wslay_event_queue_msg(s->ctx, &m);
        return;
    }
    ssize_t r = read(s->be, s->bin + s->binlen, BE_IN - s->binlen);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (r <= 0) {
        sess_fail(s, "the session ended (the task's side closed it)");
        return;
    }
    s->binlen += (size_t)r;
    size_t off = 0;
    for (;;) {
        gp_ch_msg m;
        long n = gp_ch_parse(s->bin + off, s->binlen - off, &m);
        if (n == 0)
            break;
        if (n < 0) {
            sess_fail(s, "the task's side sent a malformed message");
            return;
        }
        if (m.type != GP_CH_STDOUT && m.type != GP_CH_STDERR && m.type != GP_CH_EXIT &&
            m.type != GP_CH_ERROR && m.type != GP_CH_READY) {
            sess_fail(s, "the task's side sent a message a client may not get");
            return;
        }
        /* [type][payload] in place: the type byte over the length's last. */
        uint8_t *msg = s->bin + off + GP_CH_HEAD - 1;
        msg[0] = (uint8_t)m.type;
        struct wslay_event_msg wm = {WSLAY_BINARY_FRAME, msg, m.len + 1};
        wslay_event_queue_msg(s->ctx, &wm);
        off += (size_t)n;
        if (m.type == GP_CH_EXIT || m.type == GP_CH_ERROR) {
            sess_end(s);
            break;
        }
    }
    memmove(s->bin, s->bin + off, s->binlen - off);
    s->binlen -= off;
}

/* Both sides of a forwarded port have ended theirs (or the port is gone):
 * the port is closed and the WebSocket with it, after what is queued. */
static void port_done(sess *s) {
    if (s->be >= 0) {
        epoll_ctl(s->all->ep, EPOLL_CTL_DEL, s->be, NULL);
        close(s->be);
        s->be = -1;
    }
    sess_end(s);
}

static void be_write(sess *s) {
    while (s->boutoff < s->boutlen) {
        ssize_t w = send(s->be, s->bout + s->boutoff, s->boutlen - s->boutoff, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w <= 0 && s->kind == GP_SESSION_PORT && s->be_rd_eof) {
            /* The port closed for good after its EOF: what the client
             * still sends has nowhere to go. */
            port_done(s);
            return;
        }
        if (w <= 0 && s->kind != GP_SESSION_PORT) {
            /* The task's side closed after its last message (a command's
             * EXIT), which is still to be read: be_read ends the session
             * with it. What was for the task is dropped. */
            s->be_wr_gone = 1;
            s->boutoff = s->boutlen = 0;
            return;
        }
        if (w <= 0) {
            sess_fail(s, "the session ended (the task's side closed it)");
            return;
        }
        s->boutoff += (size_t)w;
    }
    s->boutoff = s->boutlen = 0;
    if (s->be_eof == 1) {
        shutdown(s->be, SHUT_WR);
        s->be_eof = 2;
        if (s->be_rd_eof)
            port_done(s);
    }
}

/* Sets what epoll watches for the session; destroys it once the WebSocket
 * is done with. Returns 0, or -1 if it was destroyed. */
static int sess_arm(sess *s, int64_t now) {
    gpd__sessions *g = s->all;
    if (s->ctx == NULL || (!wslay_event_want_read(s->ctx) && !wslay_event_want_write(s->ctx))) {
        sess_destroy(s);
        return -1;
    }
    if (s->st == S_CLOSING && !s->close_queued && wslay_event_get_queued_msg_count(s->ctx) == 0) {
        wslay_event_queue_close(s->ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
        s->close_queued = 1;
        if (ws_out(s) != 0) {
            sess_destroy(s);
            return -1;
        }
    }
    client_progress(s, now);
    size_t queued = wslay_event_get_queued_msg_length(s->ctx);
    uint32_t ws = 0;
    if (wslay_event_want_read(s->ctx) && reads_on(s))
        ws |= EPOLLIN;
    if (wslay_event_want_write(s->ctx) && !in_flight_full(s))
        ws |= EPOLLOUT;
    if (ws != s->ev_ws) {
        struct epoll_event ev = {ws, {.ptr = &s->tws}};
        epoll_ctl(g->ep, EPOLL_CTL_MOD, s->fd, &ev);
        s->ev_ws = ws;
    }
    if (s->be >= 0) {
        uint32_t be = 0;
        if (queued < WS_QUEUE_MAX && s->st == S_OPEN && !s->be_rd_eof)
            be |= EPOLLIN;
        if (s->boutoff < s->boutlen)
            be |= EPOLLOUT;
        if (s->be_parked ? be != 0 : be != s->ev_be) {
            struct epoll_event ev = {be, {.ptr = &s->tbe}};
            epoll_ctl(g->ep, s->be_parked ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, s->be, &ev);
            s->ev_be = be;
            s->be_parked = 0;
        }
    }
    return 0;
}

static void on_ws(sess *s, uint32_t ev) {
    if (s->gone)
        return;
    if (sess_over(s, gpd__now_ms())) {
        /* A client past its time (one that kept sending past the end
         * without its close). */
        sess_destroy(s);
        return;
    }
    /* epoll reports a hang-up or an error whatever it watches, and again
     * at once while the socket stays in its set: one that comes while the
     * socket is not read (the session opens, or the executor's side has not
     * taken what came before) is the client gone, which no read sees. The
     * session ends as at a failed read. */
    if ((ev & (EPOLLHUP | EPOLLERR)) && !(s->ev_ws & EPOLLIN)) {
        sess_destroy(s);
        return;
    }
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        s->round_in = 0;
        gp_ws_rbuf_ready(&s->rb);
        if (wslay_event_recv(s->ctx) != 0) {
            sess_destroy(s);
            return;
        }
    }
    if (s->be >= 0 && s->boutoff < s->boutlen)
        be_write(s);
    if ((ev & EPOLLOUT) || wslay_event_want_write(s->ctx)) {
        if (ws_out(s) != 0) {
            sess_destroy(s);
            return;
        }
    }
    sess_arm(s, gpd__now_ms());
}

static void on_be(sess *s, uint32_t ev) {
    if (s->gone)
        return;
    if (ev & EPOLLOUT)
        be_write(s);
    /* epoll reports a hang-up whatever it watches: once the port's EOF was
     * read, it means the port is gone. */
    if (s->be >= 0 && s->be_rd_eof && (ev & (EPOLLHUP | EPOLLERR)))
        port_done(s);
    if (s->be >= 0 && !s->be_rd_eof && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        if (wslay_event_get_queued_msg_length(s->ctx) < WS_QUEUE_MAX) {
            be_read(s);
        } else if (ev & (EPOLLHUP | EPOLLERR)) {
            /* Its end while the client's queue is full: what it still
             * holds is read once the queue has room, and until then the
             * hang-up, which epoll would report again at once, is out of
             * the set (sess_arm puts it back). */
            epoll_ctl(s->all->ep, EPOLL_CTL_DEL, s->be, NULL);
            s->be_parked = 1;
        }
    }
    if (s->ctx != NULL && wslay_event_want_write(s->ctx) && ws_out(s) != 0) {
        sess_destroy(s);
        return;
    }
    sess_arm(s, gpd__now_ms());
}

static void adopt(gpd__sessions *g, sess *s) {
    static const struct wslay_event_callbacks cb = {on_recv,  on_send, NULL, on_start,
                                                    on_chunk, on_end,  NULL};
    s->tws = (tag){s, 0};
    s->tbe = (tag){s, 1};
    s->in =
        (gp_ws_in){.stream = in_stream, .piece = in_piece, .whole = in_whole, .ud = s, .type = -1};
    s->born_ms = s->took_ms = s->pong_ms = gpd__now_ms();
    s->mark = PING_EVERY;
    s->pong_len = -1;
    int fl = fcntl(s->fd, F_GETFL);
    fcntl(s->fd, F_SETFL, fl | O_NONBLOCK);
    struct epoll_event ev = {EPOLLIN, {.ptr = &s->tws}};
    s->ev_ws = EPOLLIN;
    if (wslay_event_context_server_init(&s->ctx, &cb, s) != 0 ||
        epoll_ctl(g->ep, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
        sess_destroy(s);
        return;
    }
    wslay_event_config_set_max_recv_msg_length(s->ctx, GP_CH_PAYLOAD_MAX + 1);
    wslay_event_config_set_no_buffering(s->ctx, 1);
    s->next = g->live;
    if (g->live != NULL)
        g->live->prev = s;
    g->live = s;
    /* Bytes that came with the handshake. */
    if (gp_ws_rbuf_held(&s->rb))
        on_ws(s, EPOLLIN);
}

static void got_opened(gpd__sessions *g, opened *o) {
    sess *s = o->s;
    if (s->dead) {
        if (o->fd >= 0)
            close(o->fd);
        sess_free(s);
        return;
    }
    s->opening = 0;
    if (s->st == S_CLOSING) {
        /* Failed while it opened (a malformed message after HELLO). */
        if (o->fd >= 0)
            close(o->fd);
        on_ws(s, 0);
        return;
    }
    s->st = S_OPEN;
    if (o->rc < 0) {
        sess_fail(s, o->err[0] ? o->err : gp_strerror(o->rc));
    } else {
        s->be = o->fd;
        int fl = fcntl(s->be, F_GETFL);
        fcntl(s->be, F_SETFL, fl | O_NONBLOCK);
        struct epoll_event ev = {EPOLLIN, {.ptr = &s->tbe}};
        s->ev_be = EPOLLIN;
        epoll_ctl(g->ep, EPOLL_CTL_ADD, s->be, &ev);
        ws_send(s, GP_CH_READY, NULL, 0);
        /* What came while it opened, and a client's EOF among it. */
        if (s->boutoff < s->boutlen || s->be_eof == 1)
            be_write(s);
    }
    on_ws(s, 0);
}

/* Frees the sessions destroyed since the last call. */
static void bury(gpd__sessions *g) {
    while (g->grave != NULL) {
        sess *s = g->grave;
        g->grave = s->next;
        sess_free(s);
    }
}

static void *relay(void *arg) {
    gpd__sessions *g = arg;
    struct epoll_event evs[64];
    int64_t last_tick = 0;
    for (;;) {
        int n = epoll_wait(g->ep, evs, 64, 1000);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t v;
                (void)!read(g->wake, &v, sizeof v);
                continue;
            }
            tag *t = evs[i].data.ptr;
            if (t->be)
                on_be(t->s, evs[i].events);
            else
                on_ws(t->s, evs[i].events);
        }
        pthread_mutex_lock(&g->mu);
        sess *in = g->inbox;
        opened *done = g->done;
        g->inbox = NULL;
        g->done = NULL;
        int stop = g->stop;
        pthread_mutex_unlock(&g->mu);
        while (in != NULL) {
            sess *next = in->next;
            in->next = NULL;
            adopt(g, in);
            in = next;
        }
        while (done != NULL) {
            opened *next = done->next;
            got_opened(g, done);
            free(done);
            done = next;
        }
        if (stop)
            break;
        bury(g);
        int64_t now = gpd__now_ms();
        if (now - last_tick < 1000)
            continue;
        last_tick = now;
        for (sess *s = g->live, *next; s != NULL; s = next) {
            next = s->next;
            if (s->st == S_HELLO && now - s->born_ms > HELLO_MS) {
                sess_fail(s, "HELLO: not sent within 10 s of the connection");
            } else if (s->authed && s->st != S_CLOSING && !gpd__auth_held(g->d->auth, &s->who)) {
                /* Revoking a token, or signing out of a console session,
                 * ends what it opened, not only what it would open next: a
                 * shell or a forwarded port once outlived both. */
                sess_fail(s, "Authorization: the token or console session that opened this "
                             "session was revoked or has ended");
            } else if (sess_over(s, now)) {
                sess_destroy(s);
                continue;
            }
            ping_due(s, now);
            /* What the client took is refilled each second at least: epoll
             * reports room only once a third of the socket's buffer is
             * free, which a slow client may take minutes to make, its queue
             * and the task's side behind it held up meanwhile. */
            if (s->ctx != NULL && held_up(s) && wslay_event_want_write(s->ctx) && ws_out(s) != 0) {
                sess_destroy(s);
                continue;
            }
            sess_arm(s, now);
        }
    }
    while (g->live != NULL)
        sess_destroy(g->live);
    bury(g);
    return NULL;
}

/* ---- Start, stop, adoption ----------------------------------------------- */

int gpd__sessions_start(gpd__daemon *d, gpd__err *e) {
    gpd__sessions *g = calloc(1, sizeof *g);
    if (g == NULL)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    g->d = d;
    g->ep = epoll_create1(EPOLL_CLOEXEC);
    g->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->idle, NULL);
    struct epoll_event ev = {EPOLLIN, {.ptr = NULL}};
    if (g->ep < 0 || g->wake < 0 || epoll_ctl(g->ep, EPOLL_CTL_ADD, g->wake, &ev) < 0 ||
        pthread_create(&g->th, NULL, relay, g) != 0) {
        if (g->ep >= 0)
            close(g->ep);
        if (g->wake >= 0)
            close(g->wake);
        free(g);
        return gpd__fail(e, GP_ESYS, "", "cannot start the session relay");
    }
    g->started = 1;
    d->sessions = g;
    return 0;
}

void gpd__sessions_stop(gpd__sessions *g) {
    if (g == NULL || !g->started)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_mutex_unlock(&g->mu);
    wake(g);
    pthread_join(g->th, NULL);
    g->started = 0;
    /* Openings still under way finish (a few seconds at most); what they
     * opened is closed. */
    pthread_mutex_lock(&g->mu);
    while (g->openers > 0)
        pthread_cond_wait(&g->idle, &g->mu);
    opened *done = g->done;
    g->done = NULL;
    sess *in = g->inbox;
    g->inbox = NULL;
    pthread_mutex_unlock(&g->mu);
    while (done != NULL) {
        opened *next = done->next;
        if (done->fd >= 0)
            close(done->fd);
        sess_free(done->s);
        free(done);
        done = next;
    }
    while (in != NULL) {
        sess *next = in->next;
        MHD_upgrade_action(in->urh, MHD_UPGRADE_ACTION_CLOSE);
        sess_free(in);
        in = next;
    }
}

void gpd__sessions_free(gpd__sessions *g) {
    if (g == NULL)
        return;
    gpd__sessions_stop(g);
    close(g->ep);
    close(g->wake);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->idle);
    free(g->uc);
    free(g);
}

void gpd__session_adopt(gpd__sessions *g, void *pending, int fd, const char *extra, size_t nextra,
                        struct MHD_UpgradeResponseHandle *urh) {
    sess *s = pending;
    s->all = g;
    s->fd = fd;
    s->urh = urh;
    if (nextra > 0 && (s->rb.buf = malloc(nextra > GP_WS_IO ? nextra : GP_WS_IO)) != NULL) {
        memcpy(s->rb.buf, extra, nextra);
        s->rb.len = nextra;
    }
    pthread_mutex_lock(&g->mu);
    int stopped = g->stop;
    if (!stopped) {
        s->next = g->inbox;
        g->inbox = s;
    }
    pthread_mutex_unlock(&g->mu);
    if (stopped) {
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        sess_free(s);
        return;
    }
    wake(g);
}

void gpd__session_drop(gpd__sessions *g, void *pending) {
    sess *s = pending;
    s->all = g;
    sess_free(s);
}
