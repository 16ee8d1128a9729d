/*
 * auth.h — API tokens and roles.
 *
 * A token is "gp_" and 48 hex digits of randomness; the store keeps only its
 * SHA-256. Roles: admin (everything), dept-admin (the projects and quotas of
 * one department, and the workloads in them), researcher (submits to and sees
 * the projects of its scope, stops only its own workloads). Tokens are cached
 * in memory (there are few) and the cache changes with the store.
 */
#ifndef GP_DAEMON_AUTH_H
#define GP_DAEMON_AUTH_H

#include "common/gp_names.h"
#include "daemon/daemon.h"
#include "daemon/store.h"

/* The roles, least first: X(SYMBOL, "name"). Routes that need no token
 * ask for GPD__ROLE_NONE, which no token has and none can be given. */
#define GPD__ROLES(X)                                                                              \
    X(GPD__ROLE_NONE, "none")                                                                      \
    X(GPD__ROLE_RESEARCHER, "researcher")                                                          \
    X(GPD__ROLE_DEPT_ADMIN, "dept-admin")                                                          \
    X(GPD__ROLE_ADMIN, "admin")
GP_NAMED_ENUM_DECLARE(gpd__role, GPD__ROLES, GPD__ROLE_COUNT);

/* Who is calling: the token's user, role and scope. */
typedef struct gpd__principal {
    int64_t token_id;
    char user[GP_NAME_MAX + 1];
    gpd__role role;
    char scope[512]; /* dept-admin: a department; researcher: projects, comma-separated */
    char unix_user[GP_NAME_MAX + 1]; /* whom its workloads run as */
    char session[65];                /* a console session's SHA-256 (hex) when the caller
                                        came with one instead of its token; "" otherwise */
} gpd__principal;

/* Loads the tokens. If there are none, creates an admin token and writes it
 * to token_file (mode 0600, replacing an old file); *created is set then.
 * That first admin token's workloads run as the daemon's own Unix user. */
int gpd__auth_open(gp_store *st, const char *token_file, gpd__auth **out, int *created,
                   gpd__err *e);
void gpd__auth_close(gpd__auth *a);

/* Finds the principal of a bearer token, or of a console session's secret
 * (below); GP_EAUTH if unknown, revoked or expired (the message says which,
 * and an expired session is forgotten). */
int gpd__auth_check(gpd__auth *a, const char *token, gpd__principal *out, gpd__err *e);

/* 1 while who's token is held (not revoked) and, for a principal that came
 * with a console session, that session too (not signed out, nor ended by
 * its timeouts); 0 after. What a principal opened that outlives its request
 * (a session's WebSocket, session.c) asks this, so that a revocation ends
 * it. It does not count as a use of the console session. */
int gpd__auth_held(gpd__auth *a, const gpd__principal *who);

/*
 * Creates a token whose workloads run as the Unix user unix_user (NULL or
 * "": user); writes the secret (only ever shown here) into secret (at least
 * 64 bytes) and the stored record into *out.
 */
int gpd__auth_create(gpd__auth *a, const char *name, const char *user, const char *unix_user,
                     gpd__role role, const char *scope, char *secret, gpd__token *out, gpd__err *e);

int gpd__auth_delete(gpd__auth *a, int64_t id, gpd__err *e);
/* Forgets the tokens whose scope names queue (but the admins') and their
 * console sessions, as gpd__store_queue_delete revoked them. */
void gpd__auth_forget_scope(gpd__auth *a, const char *queue);

/*
 * Console sessions. The web console exchanges its token for a session: a
 * secret "gpc_" and 48 hex digits of randomness, held only as its SHA-256 in
 * memory (a restart of the daemon ends every session), that stands for the
 * token until it is revoked, idle for idle_ms, or life_ms old, whichever
 * comes first. A session carries its token's principal as the token is now
 * (a changed scope follows; a deleted token ends its sessions).
 */

/* Sets how long a session may stay idle and live in all (milliseconds);
 * until then, GPD__SESSION_IDLE_MS and GPD__SESSION_LIFE_MS. */
#define GPD__SESSION_IDLE_MS (INT64_C(30) * 60 * 1000)
#define GPD__SESSION_LIFE_MS (INT64_C(12) * 3600 * 1000)
void gpd__auth_session_limits(gpd__auth *a, int64_t idle_ms, int64_t life_ms);

/*
 * Opens a session for who, which must have come with its token (GP_EPERM
 * naming Authorization otherwise: a session never makes another, so its
 * lifetime cannot be stretched); writes the secret (at least 64 bytes) and
 * when the session ends at the latest (*expires_ms). At most
 * GPD__SESSIONS_PER_TOKEN per token (the oldest of them ends to make room)
 * and GPD__SESSIONS_MAX in all (GP_ETOOMANY beyond).
 */
#define GPD__SESSIONS_PER_TOKEN 64
#define GPD__SESSIONS_MAX       16384
int gpd__auth_session_open(gpd__auth *a, const gpd__principal *who, char *secret,
                           int64_t *expires_ms, gpd__err *e);

/* Revokes the session who came with (GP_EINVAL naming Authorization when
 * who came with a token: sign-out revokes a session, never a token). */
int gpd__auth_session_close(gpd__auth *a, const gpd__principal *who, gpd__err *e);

/* 1 if project is in a researcher's comma-separated scope. */
int gpd__scope_has(const char *scope, const char *project);

#endif /* GP_DAEMON_AUTH_H */
