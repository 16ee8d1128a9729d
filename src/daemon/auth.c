/*
 * auth.c — tokens (auth.h): generation with the kernel's random source,
 * SHA-256 through libcrypto, the in-memory cache of hashed tokens and the
 * first-start admin token written to a file only its owner can read.
 */
#include "daemon/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct gpd__auth {
    gp_store *st;
    pthread_mutex_t mu;
    gpd__token *tokens;
    size_t n;
};

static const char *const role_names[] = {"none", "researcher", "dept-admin", "admin"};

const char *gpd__role_name(gpd__role r) {
    return (unsigned)r <= GPD__ROLE_ADMIN ? role_names[r] : "none";
}

int gpd__role_parse(const char *s, gpd__role *out) {
    for (int i = 1; i <= GPD__ROLE_ADMIN; i++)
        if (strcmp(s, role_names[i]) == 0) {
            *out = (gpd__role)i;
            return 0;
        }
    return GP_EINVAL;
}

int gpd__scope_has(const char *scope, const char *project) {
    size_t n = strlen(project);
    for (const char *p = scope; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, project, n) == 0)
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

static void sha256_hex(const char *s, char out[65]) {
    unsigned char md[32];
    unsigned int len = 0;
    EVP_Digest(s, strlen(s), md, &len, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
    out[64] = '\0';
}

static int add_cached(gpd__auth *a, const gpd__token *t) {
    gpd__token *nt = realloc(a->tokens, sizeof *nt * (a->n + 1));
    if (!nt)
        return GP_ENOMEM;
    a->tokens = nt;
    a->tokens[a->n++] = *t;
    return 0;
}

static int load_one(const gpd__token *t, void *arg) {
    return add_cached(arg, t) < 0;
}

int gpd__auth_create(gpd__auth *a, const char *name, const char *user, const char *unix_user,
                     gpd__role role, const char *scope, char *secret, gpd__token *out,
                     gpd__err *e) {
    unsigned char rnd[24];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t r = getrandom(rnd + got, sizeof rnd - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return gpd__fail(e, GP_ESYS, "", "getrandom failed: %s", strerror(errno));
        got += (size_t)r;
    }
    strcpy(secret, "gp_");
    for (size_t i = 0; i < sizeof rnd; i++)
        sprintf(secret + 3 + 2 * i, "%02x", rnd[i]);
    gpd__token t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    snprintf(t.user, sizeof t.user, "%s", user);
    snprintf(t.unix_user, sizeof t.unix_user, "%s", unix_user && unix_user[0] ? unix_user : user);
    snprintf(t.role, sizeof t.role, "%s", gpd__role_name(role));
    snprintf(t.scope, sizeof t.scope, "%s", scope ? scope : "");
    sha256_hex(secret, t.hash);
    t.created_ms = gpd__now_ms();
    int rc = gpd__store_token_put(a->st, &t, e);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&a->mu);
    rc = add_cached(a, &t);
    pthread_mutex_unlock(&a->mu);
    if (rc < 0)
        return gpd__fail(e, rc, "", "out of memory caching the token");
    if (out)
        *out = t;
    return 0;
}

int gpd__auth_delete(gpd__auth *a, int64_t id, gpd__err *e) {
    int rc = gpd__store_token_delete(a->st, id, e);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++)
        if (a->tokens[i].id == id) {
            a->tokens[i] = a->tokens[--a->n];
            break;
        }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

/* Writes the secret to path with mode 0600, atomically (temp file + rename). */
static int write_token_file(const char *path, const char *secret, gpd__err *e) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return gpd__fail(e, GP_ESYS, "", "cannot write the admin token to %s: %s", tmp,
                         strerror(errno));
    size_t n = strlen(secret);
    int ok = write(fd, secret, n) == (ssize_t)n && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return gpd__fail(e, GP_ESYS, "", "cannot write the admin token to %s: %s", path,
                         strerror(errno));
    }
    return 0;
}

int gpd__auth_open(gp_store *st, const char *token_file, gpd__auth **out, int *created,
                   gpd__err *e) {
    gpd__auth *a = calloc(1, sizeof *a);
    if (!a)
        return gpd__fail(e, GP_ENOMEM, "", "out of memory");
    a->st = st;
    pthread_mutex_init(&a->mu, NULL);
    *created = 0;
    int rc = gpd__store_tokens(st, load_one, a, e);
    if (rc == 0 && a->n == 0) {
        char secret[64];
        char buf[4096];
        struct passwd pw, *me = NULL;
        const char *self = getpwuid_r(geteuid(), &pw, buf, sizeof buf, &me) == 0 && me != NULL
                               ? pw.pw_name
                               : "admin";
        rc = gpd__auth_create(a, "admin", "admin", self, GPD__ROLE_ADMIN, "", secret, NULL, e);
        if (rc == 0)
            rc = write_token_file(token_file, secret, e);
        if (rc == 0)
            *created = 1;
    }
    if (rc < 0) {
        gpd__auth_close(a);
        return rc;
    }
    *out = a;
    return 0;
}

void gpd__auth_close(gpd__auth *a) {
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    free(a->tokens);
    free(a);
}

int gpd__auth_check(gpd__auth *a, const char *token, gpd__principal *out, gpd__err *e) {
    if (!token || !*token)
        return gpd__fail(e, GP_EAUTH, "Authorization",
                         "Authorization: a token is required (\"Authorization: Bearer TOKEN\")");
    char hash[65];
    sha256_hex(token, hash);
    int rc = GP_EAUTH;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->tokens[i].hash, hash) == 0) {
            const gpd__token *t = &a->tokens[i];
            out->token_id = t->id;
            snprintf(out->user, sizeof out->user, "%s", t->user);
            gpd__role_parse(t->role, &out->role);
            snprintf(out->scope, sizeof out->scope, "%s", t->scope);
            snprintf(out->unix_user, sizeof out->unix_user, "%s", t->unix_user);
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&a->mu);
    if (rc < 0)
        return gpd__fail(e, GP_EAUTH, "Authorization", "Authorization: unknown token");
    return 0;
}
