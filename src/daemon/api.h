/*
 * api.h — the HTTP API of gpupoold: the route table, described once, and
 * what handlers share.
 *
 * GPD__ROUTES lists every route with its method, path pattern ({name} matches
 * one path segment), handler, the argument the handler receives as r->arg
 * (which of its variants the route is, as GPD__CMD_DELETE for h_wl_command; 0
 * where it has none), the least role that may call it, its body (JSON: a JSON
 * object, parsed before the handler is called and handed to it as r->json;
 * NONE: any body is ignored) and a line of documentation. http.c
 * routes requests with it, and `gpupoold --routes` prints it as the reference
 * table of docs/api.md (tests/daemon/test-doc-tables.sh compares the two).
 */
#ifndef GP_DAEMON_API_H
#define GP_DAEMON_API_H

#include <jansson.h>
#include <stdarg.h>
#include <microhttpd.h>

#include "daemon/auth.h"
#include "daemon/daemon.h"
#include "daemon/sched.h" /* the routes' arguments: GPD__CMD_*, and through it
                            executor.h's GP_SESSION_* */

#define GPD__MAX_PARAMS 4

typedef struct gpd__req {
    gpd__daemon *d;
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    const char *params[GPD__MAX_PARAMS]; /* the {…} segments, in order */
    int nparams;
    json_t *json; /* the body of a route whose body is JSON: an object, freed
                     after the handler (NULL for the other routes) */
    int arg;      /* the route's argument (GPD__ROUTES) */
    gpd__principal who;
    int deferred_auth; /* a session route upgraded without a token: who is
                          empty, the token comes in the first message */
} gpd__req;

typedef struct gpd__resp {
    int status;
    char *body; /* malloc'ed */
    size_t len;
    const char *content_type;
    void *upgrade;      /* a session route: the session to adopt once the
                           connection is upgraded to a WebSocket (status 101) */
    char ws_accept[32]; /* its Sec-WebSocket-Accept */
    int64_t log_offset; /* a log's answer: sent as X-Log-Offset when above 0 */
    /* A log's answer: the body is len bytes of file fd from fd_off, sent
     * from the file (its memory is not the daemon's); fd is the answer's. */
    int from_file, fd;
    int64_t fd_off;
} gpd__resp;

typedef int (*gpd__handler)(gpd__req *r, gpd__resp *out, gpd__err *e);

/*       method  path                               handler    arg   role     body   summary */
#define GPD__ROUTES(XX)                                                                            \
    XX("GET", "/api/v1/health", h_health, 0, NONE, NONE,                                           \
       "Liveness: {\"ok\": true}; needs no token")                                                 \
    XX("GET", "/api/v1/whoami", h_whoami, 0, RESEARCHER, NONE,                                     \
       "The caller's user, role and scope")                                                        \
    XX("POST", "/api/v1/workloads", h_wl_submit, 0, RESEARCHER, JSON, "Submit a workload")         \
    XX("GET", "/api/v1/workloads", h_wl_list, 0, RESEARCHER, NONE,                                 \
       "List workloads (?project= &user= &state= &order= &cursor= &after= &limit=; see "           \
       "[Listing workloads](#listing-workloads))")                                                 \
    XX("GET", "/api/v1/workloads/{id}", h_wl_get, 0, RESEARCHER, NONE,                             \
       "One workload, with its pending reason, tasks and attempts")                                \
    XX("DELETE", "/api/v1/workloads/{id}", h_wl_command, GPD__CMD_DELETE, RESEARCHER, NONE,        \
       "Delete a workload (running tasks are stopped)")                                            \
    XX("POST", "/api/v1/workloads/{id}/suspend", h_wl_command, GPD__CMD_SUSPEND, RESEARCHER, NONE, \
       "Suspend: checkpoint signal, grace period, stop; kept until resumed")                       \
    XX("POST", "/api/v1/workloads/{id}/resume", h_wl_command, GPD__CMD_RESUME, RESEARCHER, NONE,   \
       "Resume a suspended workload (back to the queue)")                                          \
    XX("GET", "/api/v1/workloads/{id}/logs", h_wl_logs, 0, RESEARCHER, NONE,                       \
       "Output of a task (?task= &offset=), as text; see [Logs](#logs)")                           \
    XX("GET", "/api/v1/workloads/{id}/events", h_wl_events, 0, RESEARCHER, NONE,                   \
       "Event history and attempts of a workload")                                                 \
    XX("GET", "/api/v1/workloads/{id}/attach", h_wl_session, GP_SESSION_ATTACH, RESEARCHER, NONE,  \
       "WebSocket: the workload's terminal, its recent output first (see Sessions)")               \
    XX("GET", "/api/v1/workloads/{id}/exec", h_wl_session, GP_SESSION_EXEC, RESEARCHER, NONE,      \
       "WebSocket: run a command in the workload's task (see Sessions)")                           \
    XX("GET", "/api/v1/workloads/{id}/port-forward", h_wl_session, GP_SESSION_PORT, RESEARCHER,    \
       NONE, "WebSocket: one connection to ?port= inside the task (see Sessions)")                 \
    XX("GET", "/api/v1/queues", h_q_list, 0, RESEARCHER, NONE,                                     \
       "The queue tree with quotas, fair share and usage")                                         \
    XX("POST", "/api/v1/queues", h_q_create, 0, DEPT_ADMIN, JSON,                                  \
       "Create a department or project")                                                           \
    XX("GET", "/api/v1/queues/{name}", h_q_get, 0, RESEARCHER, NONE, "One queue")                  \
    XX("PATCH", "/api/v1/queues/{name}", h_q_update, 0, DEPT_ADMIN, JSON,                          \
       "Change a queue's deserved quota, limit, weight or priority")                               \
    XX("DELETE", "/api/v1/queues/{name}", h_q_delete, 0, DEPT_ADMIN, NONE,                         \
       "Remove an empty queue")                                                                    \
    XX("GET", "/api/v1/nodes", h_nodes, 0, RESEARCHER, NONE,                                       \
       "Nodes and GPUs, with each slice and its real memory use; per node `cpu_used` and "         \
       "`memory_used` (what its tasks asked for), `cpu_in_use` and `memory_in_use` (what it "      \
       "really uses at the last usage sample; null where not measured), `gpus_taken` (GPUs "       \
       "held outside the pool, e.g. by a Slurm cluster's direct users) and per GPU `taken` "       \
       "(withheld for them: offered to no task); `can_pause`, `paused_memory_max`, "               \
       "`paused_memory` and `paused` (whether tasks there can be paused, the host memory paused "  \
       "tasks may hold, what they hold and how many there are); `gpu_devices` and "                \
       "`gpu_memory_limits`: the executor's sentences on how a task is kept to its own GPUs' "     \
       "device files and what limits its GPU memory (e.g. `GPU memory limits: dmem cgroup ...`; "  \
       "empty where the executor says nothing)")                                                   \
    XX("GET", "/api/v1/usage", h_usage, 0, RESEARCHER, NONE,                                       \
       "GPU-hours allocated, used, idle, borrowed, lent (?from= &to= &step= &by=queue|user|node)") \
    XX("GET", "/api/v1/export/workloads", h_export_workloads, 0, ADMIN, NONE,                      \
       "Finished workloads as gpupool-sim's pod list, CSV (?from= &to=)")                          \
    XX("GET", "/api/v1/export/nodes", h_export_nodes, 0, ADMIN, NONE,                              \
       "Nodes as gpupool-sim's node list, CSV")                                                    \
    XX("GET", "/api/v1/export/projects", h_export_projects, 0, ADMIN, NONE,                        \
       "The queue tree as gpupool-sim's projects file, CSV")                                       \
    XX("GET", "/api/v1/tokens", h_tok_list, 0, ADMIN, NONE, "API tokens (never their secrets)")    \
    XX("POST", "/api/v1/tokens", h_tok_create, 0, ADMIN, JSON,                                     \
       "Create a token; the answer holds its secret, shown once")                                  \
    XX("DELETE", "/api/v1/tokens/{id}", h_tok_delete, 0, ADMIN, NONE, "Revoke a token")            \
    XX("GET", "/metrics", h_metrics, 0, RESEARCHER, NONE, "Prometheus metrics (text format)")      \
    XX("POST", "/api/v1/console/session", h_console_session_open, 0, RESEARCHER, NONE,             \
       "Exchange the token for a console session (see [Console sessions](#console-sessions))")     \
    XX("DELETE", "/api/v1/console/session", h_console_session_close, 0, RESEARCHER, NONE,          \
       "Revoke the console session that calls (sign-out)")                                         \
    XX("GET", "/", h_console, 0, NONE, NONE,                                                       \
       "The web console (it signs in with a token of its own)")                                    \
    XX("GET", "/console/{file}", h_console_file, 0, NONE, NONE,                                    \
       "The web console's script and style")

#define GPD__HANDLER_DECL_(m, p, fn, arg, role, body, doc)                                         \
    int gpd__##fn(gpd__req *r, gpd__resp *out, gpd__err *e);
GPD__ROUTES(GPD__HANDLER_DECL_)
#undef GPD__HANDLER_DECL_

/* ---- http.c ---- */

/* Starts serving (event-driven, a pool of cfg.http_threads threads, the
 * connection guard below); returns the bound port in *port. */
int gpd__http_start(gpd__daemon *d, struct MHD_Daemon **out, int *port, gpd__err *e);

/* Stops serving: libmicrohttpd first, then the guard. */
void gpd__http_stop(gpd__daemon *d, struct MHD_Daemon *mhd);

/* A query parameter as a decimal integer from min to max (strict: digits
 * only, no sign, no blanks); absent leaves *out unchanged. GP_EINVAL naming
 * key otherwise. */
int gpd__query_int(gpd__req *r, const char *key, int64_t min, int64_t max, int64_t *out,
                   gpd__err *e);

/* *yes: 1 if the caller of r may see workload w (api-workloads.c): of a
 * project it may see (dept-admins: via the tree) and, for a non-admin, of
 * that project as it stands, not of a deleted namesake's
 * (gpd__store_wl_current). Negative: the store failed. */
int gpd__can_see_wl(gpd__req *r, const gpd__wl *w, int *yes, gpd__err *e);
/* The projects a non-admin may see, NULL-terminated (a researcher's scope, a
 * department admin's projects), their names in *buf; free both. NULL: out
 * of memory. */
const char **gpd__visible_projects(gpd__req *r, char **buf);

/* ---- session.c: sessions over WebSocket ---- */

/* Starts the relay thread (d->sessions); GP_ESYS if it cannot. */
int gpd__sessions_start(gpd__daemon *d, gpd__err *e);
/* Closes every session and stops the thread (before libmicrohttpd stops);
 * a connection upgraded after it is closed at once. */
void gpd__sessions_stop(gpd__sessions *g);
/* Frees g (after libmicrohttpd has stopped); NULL is ignored. */
void gpd__sessions_free(gpd__sessions *g);
/* libmicrohttpd upgraded the connection of a session route's answer: the
 * relay thread takes the socket, the bytes that came after the handshake and
 * the handle that closes it. */
void gpd__session_adopt(gpd__sessions *g, void *pending, int fd, const char *extra, size_t nextra,
                        struct MHD_UpgradeResponseHandle *urh);
/* The upgrade could not be answered: frees the pending session. */
void gpd__session_drop(gpd__sessions *g, void *pending);

/* ---- logs.c: the tasks' logs ---- */

/* Answers at most max bytes of task's output of workload id, from offset in
 * its whole output (across rotations: see logs.c), with status 200: from the
 * log file itself (out->from_file), or an empty body at the end or where
 * there is no log. out->log_offset is where the bytes begin: offset, or the
 * oldest byte kept when offset was rotated away. GP_EIO on a read error. */
int gpd__log_reply(const gpd__daemon *d, uint64_t id, int task, int64_t offset, size_t max,
                   gpd__resp *out, gpd__err *e);
/* Starts the thread that removes logs --log-retention after their
 * workload ended (none with a retention of 0); GP_ESYS if it cannot. */
int gpd__logs_start(gpd__daemon *d, gpd__err *e);
/* Stops it (NULL is ignored). */
void gpd__logs_stop(gpd__logs *g);

/* ---- text.c: answers written piece by piece ---- */

/* A growing text buffer, zero-initialised to start; oom is set (and writes
 * stop) when memory runs out. p is NUL-terminated once anything is written. */
typedef struct gpd__text {
    char *p;
    size_t len, cap;
    int oom;
} gpd__text;

/* Appends n bytes of s, the string s, or printf's output. */
void gpd__text_put(gpd__text *t, const char *s, size_t n);
void gpd__text_puts(gpd__text *t, const char *s);
void gpd__text_printf(gpd__text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hands t's text to out as a 200 answer of content_type, leaving t empty; if
 * memory ran out, frees it and returns GP_ENOMEM. */
int gpd__text_reply(gpd__text *t, gpd__resp *out, const char *content_type, gpd__err *e);

/* ---- http-head.c: the head's lines and names ---- */

/* The request's URI as it came, before libmicrohttpd unescapes it in place:
 * recorded by gpd__head_uri from the URI log callback (MHD_OPTION_URI_LOG_CALLBACK). */
typedef struct gpd__head_raw {
    const char *uri; /* in libmicrohttpd's buffer: compared, never read later */
    size_t uri_len;
    int uri_ok; /* only visible ASCII */
} gpd__head_raw;

void gpd__head_uri(gpd__head_raw *raw, const char *uri);

/* Checks a request head as libmicrohttpd left it (method and version as the
 * access handler got them, raw from gpd__head_uri): the request line, every
 * line ending in CR LF, header names that are tokens, values without control
 * characters, at most one Content-Length and never with Transfer-Encoding,
 * at most one Authorization. Returns 0, or GP_EPARSE with e naming the
 * header. Reads only. */
int gpd__head_check(struct MHD_Connection *conn, const char *method, const gpd__head_raw *raw,
                    const char *version, gpd__err *e);

/* ---- http-guard.c: deadlines that bytes do not restart ---- */

typedef enum gpd__phase {
    GPD__PHASE_HEAD,    /* waiting for a complete request head */
    GPD__PHASE_REQUEST, /* reading the body or sending the answer */
    GPD__PHASE_HANDLER, /* a handler runs: no deadline */
} gpd__phase;

/* Starts the guard's thread; GP_ENOMEM or GP_ESYS on failure. */
int gpd__guard_start(int64_t header_ms, int64_t request_ms, gpd__guard **out);

/* Stops the thread and frees the guard (NULL is ignored); call after
 * libmicrohttpd has stopped. */
void gpd__guard_stop(gpd__guard *g);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the guard). */
void gpd__guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);

/* Moves conn into phase p; its deadline starts now. */
void gpd__guard_phase(gpd__guard *g, struct MHD_Connection *conn, gpd__phase p);

/* libmicrohttpd's MHD_OPTION_EXTERNAL_LOGGER (cls: the guard): a line on
 * stderr, at most ten a minute, then a count of those not shown. */
void gpd__guard_log(void *cls, const char *fmt, va_list ap);

/* How many connections the guard has cut off so far (for /metrics). */
uint64_t gpd__guard_expired(gpd__guard *g);

/* Prints the route table as a Markdown table. */
void gpd__http_print_routes(void);

/* Prints the map from error codes to HTTP status as a Markdown table. */
void gpd__http_print_errors(void);

/* Sets out to a JSON answer (takes ownership of j). */
int gpd__reply_json(gpd__resp *out, int status, json_t *j);

/* Sets out to a plain text answer (copies text). */
int gpd__reply_text(gpd__resp *out, int status, const char *text, size_t len,
                    const char *content_type);

/* A query parameter, or NULL. */
const char *gpd__query(gpd__req *r, const char *key);

/* Parses a point in time given as field: seconds since 1970, 2026-12-01,
 * 2026-12-01T08:00:00Z, or a duration before now_s such as 7d (one that
 * reaches before 1970 is 1970), into seconds since 1970, at most
 * GPD__TIME_MAX (the end of 9999) (api-usage.c). GP_EINVAL naming field. */
#define GPD__TIME_MAX INT64_C(253402300799)
int gpd__parse_time(const char *field, const char *s, int64_t now_s, int64_t *out, gpd__err *e);

/* Parses a decimal id path parameter. */
int gpd__param_id(gpd__req *r, int i, uint64_t *out, gpd__err *e);

/* ---- Unix users (api-admin.c) ---- */

/* May workloads run as the Unix user name on this daemon? A valid name; for
 * a daemon running as root, not root unless --allow-root-workloads (whether
 * the user exists is for each node to say when it launches a task); a daemon
 * that is not root runs every workload as itself. GP_EINVAL or GP_EPERM
 * naming unix_user. */
int gpd__unix_user_check(const gpd__daemon *d, const char *name, gpd__err *e);

/* ---- Scopes (api-workloads.c) ---- */

/* May the caller manage queue name (create under, change, remove)? */
int gpd__can_admin_queue(gpd__req *r, const char *name, const char *parent);

#endif /* GP_DAEMON_API_H */
