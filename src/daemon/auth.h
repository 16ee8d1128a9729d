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

#include "daemon/daemon.h"
#include "daemon/store.h"

typedef enum gp__role {
    GP__ROLE_NONE = 0,              /* routes that need no token */
    GP__ROLE_RESEARCHER = 1,
    GP__ROLE_DEPT_ADMIN = 2,
    GP__ROLE_ADMIN = 3
} gp__role;

const char *gp__role_name(gp__role r);
int gp__role_parse(const char *s, gp__role *out);

/* Who is calling: the token's user, role and scope. */
typedef struct gp__principal {
    int64_t token_id;
    char user[GP_NAME_MAX + 1];
    gp__role role;
    char scope[512];                /* dept-admin: a department; researcher: projects, comma-separated */
} gp__principal;

/* Loads the tokens. If there are none, creates an admin token and writes it
 * to token_file (mode 0600, replacing an old file); *created is set then. */
int gp__auth_open(gp_store *st, const char *token_file, gp__auth **out, int *created,
                  gp__err *e);
void gp__auth_close(gp__auth *a);

/* Finds the principal of a bearer token; GP_EAUTH if unknown. */
int gp__auth_check(gp__auth *a, const char *token, gp__principal *out, gp__err *e);

/*
 * Creates a token; writes the secret (only ever shown here) into secret
 * (at least 64 bytes) and the stored record into *out.
 */
int gp__auth_create(gp__auth *a, const char *name, const char *user, gp__role role,
                    const char *scope, char *secret, gp__token *out, gp__err *e);

int gp__auth_delete(gp__auth *a, int64_t id, gp__err *e);

/* 1 if project is in a researcher's comma-separated scope. */
int gp__scope_has(const char *scope, const char *project);

#endif /* GP_DAEMON_AUTH_H */
