/*
 * daemon.h — what the files of gpupoold share: the daemon's context, the
 * error record that every layer fills (a GP_E* code, the field at fault and a
 * sentence), the clock, and the workload states the store records.
 *
 * Threads: libmicrohttpd runs a fixed pool of event-loop threads that call
 * the API handlers (a handler waiting for a commit holds its thread only); the store has one writer
 * thread (group commit); the scheduling loop has one thread that owns the engine and the executor.
 * Handlers reach the engine only through sched.h, under its lock. Each thread that works for others
 * takes its work from a mailbox (mailbox.h), which answers "gpupoold is stopping" once closed.
 */
#ifndef GP_DAEMON_H
#define GP_DAEMON_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "common/gp_error.h"
#include "common/gp_names.h"
#include "common/gp_workload.h"

typedef struct gp_store gp_store;
typedef struct gpd__auth gpd__auth;
typedef struct gpd__sched gpd__sched;
typedef struct gpd__metrics gpd__metrics;
typedef struct gpd__guard gpd__guard;
typedef struct gpd__sessions gpd__sessions;
typedef struct gpd__logs gpd__logs;

/* An error for the caller: code, the field at fault ("" if none), a sentence
 * that names the field. The HTTP layer turns it into a 4xx/5xx JSON body. */
typedef struct gpd__err {
    int code;
    char field[64];
    char msg[320];
} gpd__err;

/* Fills e and returns code, so that a failing path is one line:
 *     return gpd__fail(e, GP_EINVAL, "gpu", "must be above 0, got %s", s); */
int gpd__fail(gpd__err *e, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Wall clock in milliseconds since the epoch (the engine's clock too, so that
 * times stored before a restart stay comparable after it). */
int64_t gpd__now_ms(void);

/* The daemon's log: one line to stderr, "<local time> gpupoold: <message>".
 * Every message of the daemon goes through it (no bare fprintf). */
void gpd__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What an event of a workload's history says happened (events.kind), and
 * what it means: docs/api.md's table is what `gpupoold --events` prints. */
#define GPD__EVENTS(XX)                                                                            \
    XX(GPD__EV_SUBMITTED, "submitted", "accepted, pending in its project's queue")                 \
    XX(GPD__EV_BOUND, "bound",                                                                     \
       "the scheduler gave it nodes and GPUs: a new attempt begins, `starting`")                   \
    XX(GPD__EV_LAUNCHED, "launched", "its tasks were handed to the executor")                      \
    XX(GPD__EV_LAUNCH_DEFERRED, "launch-deferred",                                                 \
       "the executor could not launch it for a reason that may pass: why, and when it is "         \
       "tried again")                                                                              \
    XX(GPD__EV_STARTED, "started",                                                                 \
       "every task runs, `running`: how long it waited in the executor")                           \
    XX(GPD__EV_CHECKPOINT_SIGNAL, "checkpoint-signal",                                             \
       "being stopped, `stopping`: the checkpoint signal was sent and the grace period runs")      \
    XX(GPD__EV_PAUSED, "paused",                                                                   \
       "its task frozen and its GPU state in host memory, `paused`: how long each step took, or "  \
       "that the pause under way when gpupoold stopped was finished")                              \
    XX(GPD__EV_RESUMED, "resumed",                                                                 \
       "a paused workload runs again, or a suspended one is back in the queue")                    \
    XX(GPD__EV_RESUME_FAILED, "resume-failed",                                                     \
       "a resume could not finish: still `paused`, why, and when the next try is")                 \
    XX(GPD__EV_RESUME_ASKED, "resume-asked",                                                       \
       "its owner came back to a session the idle policy paused: it waits for a GPU on its "       \
       "node")                                                                                     \
    XX(GPD__EV_REQUEUED, "requeued",                                                               \
       "evicted, or, after a restart of gpupoold, not found or not relaunched or restored as "     \
       "it was: `pending` again, the message says why")                                            \
    XX(GPD__EV_SUSPENDED, "suspended", "stopped, `suspended`, until its owner resumes it")         \
    XX(GPD__EV_DELETED, "deleted", "stopped for good, `deleted`")                                  \
    XX(GPD__EV_SUCCEEDED, "succeeded", "every task exited with status 0, `succeeded`")             \
    XX(GPD__EV_FAILED, "failed",                                                                   \
       "a task failed, it could not be launched, or the engine refused it, `failed`: why")         \
    XX(GPD__EV_LOST, "lost",                                                                       \
       "the executor lost a task (its node, its process or its Slurm job gone): `pending` "        \
       "again, or `suspended` where the idle policy held it paused")

#define GPD__EVENT_SYMBOL_(sym, name, doc) sym,
typedef enum gpd__event_kind { GPD__EVENTS(GPD__EVENT_SYMBOL_) GPD__NEVENTS } gpd__event_kind;
#undef GPD__EVENT_SYMBOL_

/* The most events, and the most attempts, a workload's history keeps: its
 * first (submitted, the first attempt) and the latest; an older one goes as
 * each new one comes (store-workloads.c). Its owner can add two events a
 * request (suspend, resume), and an attempt with each resume. */
#define GPD__HISTORY_KEPT 1000

/* k's name, and what it means; "?" out of range. */
const char *gpd__event_name(gpd__event_kind k);
const char *gpd__event_doc(gpd__event_kind k);

/* How an attempt of a workload ended, or where it stands
 * (attempts.outcome; docs/api.md, "Workload states"). */
#define GPD__OUTCOMES(XX)                                                                          \
    XX(GPD__OUTCOME_STARTING, "starting")                                                          \
    XX(GPD__OUTCOME_RUNNING, "running")                                                            \
    XX(GPD__OUTCOME_SUCCEEDED, "succeeded")                                                        \
    XX(GPD__OUTCOME_FAILED, "failed")                                                              \
    XX(GPD__OUTCOME_EVICTED, "evicted")                                                            \
    XX(GPD__OUTCOME_SUSPENDED, "suspended")                                                        \
    XX(GPD__OUTCOME_DELETED, "deleted")                                                            \
    XX(GPD__OUTCOME_LOST, "lost")

typedef enum gpd__outcome { GPD__OUTCOMES(GP_ENUM_SYMBOL_OF) GPD__NOUTCOMES } gpd__outcome;

/* o's name; "?" out of range. */
const char *gpd__outcome_name(gpd__outcome o);

/* Why a running workload is being stopped (workloads.stop_kind). */
#define GPD__STOP_EVICT   "evict"
#define GPD__STOP_SUSPEND "suspend"
#define GPD__STOP_DELETE  "delete"

/* The daemon's settings, from flags and the config file. */
typedef struct gpd__config {
    char listen[128]; /* HOST:PORT, as given */
    /* Its parts, read once by gpd__config_set (an IPv4 address, and a port
     * from 0 to 65535; 0 picks a free one): what the server binds and the
     * address file names. */
    char listen_host[64];
    int listen_port;
    char data_dir[512];
    char log_dir[512];        /* the tasks' logs ("": DATA/logs, filled at start) */
    char checkpoint_dir[512]; /* their checkpoints ("": DATA/checkpoints, filled at start) */
    int64_t log_retention_ms; /* logs kept this long after their workload ends (0: always) */
    char executor[32];
    char executor_config[1024];
    int64_t period_ms;    /* scheduling period */
    int64_t poll_ms;      /* task polling period */
    int64_t usage_ms;     /* usage sampling period */
    int64_t inventory_ms; /* how often the executor's inventory is read again */
    int64_t half_life_ms; /* time-based fair share: usage half-life (0: off) */
    char tls_cert[512], tls_key[512];
    char lib_dir[PATH_MAX];   /* where gpupoold is installed, told to the executor */
    int allow_root_workloads; /* --allow-root-workloads: tasks may run as root */
    /* The front door (http.c): pool threads, connections in all and per
     * client address, and the deadlines of http-guard.c. */
    int http_threads;
    int max_connections, max_client_connections;
    int64_t header_timeout_ms, request_timeout_ms;
    /* Sessions (session.c): per user, terminals and exec'd commands open at
     * once, and forwarded connections open at once. */
    int max_user_sessions, max_user_forwards;
    /* The most pending workloads one user may have (0: no bound). */
    int max_pending_per_user;
    /* The console's sessions (auth.h): how long one may stay unused, and
     * how long it lives however much it is used. */
    int64_t console_idle_ms, console_life_ms;
    /* Pause: the most host memory paused tasks may hold on a node, as bytes
     * (paused_mem_max >= 0) or, when paused_mem_max is -1, as a share of the
     * node's memory in percent (paused_mem_pct). */
    int64_t paused_mem_max;
    int paused_mem_pct;
} gpd__config;

/* Whether users other than the daemon's may pass through (search) the data
 * directory and every directory above it and above the checkpoint directory
 * (DATA/checkpoints or --checkpoint-dir, which the daemon and the executor
 * make passable themselves), as a task of another Unix user must to reach
 * its own checkpoint directory: 0, or -1 with why naming the first directory
 * they cannot pass and how to fix it. (One not made yet is not judged.) */
int gpd__dirs_passable(const gpd__config *c, char *why, size_t len);

typedef struct gpd__daemon {
    gpd__config cfg;
    gp_store *store;
    gpd__auth *auth;
    gpd__sched *sched;
    gpd__metrics *metrics;
    gpd__guard *guard;
    gpd__sessions *sessions;
    gpd__logs *logs;
} gpd__daemon;

#endif /* GP_DAEMON_H */
