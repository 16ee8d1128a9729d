/*
 * auth.c — tokens (auth.h): generation with the kernel's random source,
 * SHA-256 through libcrypto, the in-memory cache of hashed tokens and the
 * first-start admin token written to a file only its owner can read, and
 * the console's sessions (hashed secrets with their idle and absolute
 * deadlines, in memory only).
 */
#include "common/gp_array.h"
#include "common/gp_clock.h"
#include "common/gp_names.h"
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
#include <time.h>
#include <unistd.h>

/* A console session: the hash of its secret, whose token it stands for,
 * when it was made and last used. */
typedef struct csession {
    char hash[65];
    int64_t token_id;
    int64_t created_ms, used_ms;
} csession;

struct gpd__auth {
    gp_store *st;
    pthread_mutex_t mu; /* guards everything below */
    gpd__token *tokens;
    size_t n;
    csession *sess;
    size_t nsess, capsess;
    int64_t idle_ms, life_ms;
};

GP_NAMED_ENUM_DEFINE(gpd__role, GPD__ROLES, GPD__ROLE_COUNT, "none")

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

/* Writes prefix and 48 hex digits of the kernel's randomness (192 bits) into
 * secret (at least 64 bytes). */
static int random_secret(const char *prefix, char *secret, gpd__err *e) {
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
    size_t n = strlen(prefix);
    memcpy(secret, prefix, n);
    for (size_t i = 0; i < sizeof rnd; i++)
        sprintf(secret + n + 2 * i, "%02x", rnd[i]);
    return 0;
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
    return add_cached(arg, t);
}

int gpd__auth_create(gpd__auth *a, const char *name, const char *user, const char *unix_user,
                     gpd__role role, const char *scope, char *secret, gpd__token *out,
                     gpd__err *e) {
    int rc = random_secret("gp_", secret, e);
    if (rc < 0)
        return rc;
    gpd__token t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    snprintf(t.user, sizeof t.user, "%s", user);
    snprintf(t.unix_user, sizeof t.unix_user, "%s", unix_user && unix_user[0] ? unix_user : user);
    snprintf(t.role, sizeof t.role, "%s", gpd__role_name(role));
    snprintf(t.scope, sizeof t.scope, "%s", scope ? scope : "");
    sha256_hex(secret, t.hash);
    t.created_ms = gpd__now_ms();
    rc = gpd__store_token_put(a->st, &t, e);
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

/* Forgets the cached token at i and its sessions (a caller holds a->mu). */
static void forget(gpd__auth *a, size_t i) {
    int64_t id = a->tokens[i].id;
    a->tokens[i] = a->tokens[--a->n];
    for (size_t k = a->nsess; k-- > 0;)
        if (a->sess[k].token_id == id)
            a->sess[k] = a->sess[--a->nsess];
}

int gpd__auth_delete(gpd__auth *a, int64_t id, gpd__err *e) {
    int rc = gpd__store_token_delete(a->st, id, e);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++)
        if (a->tokens[i].id == id) {
            forget(a, i);
            break;
        }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

void gpd__auth_forget_scope(gpd__auth *a, const char *queue) {
    pthread_mutex_lock(&a->mu);
    for (size_t i = a->n; i-- > 0;) {
        gpd__role role = GPD__ROLE_ADMIN;
        gpd__role_parse(a->tokens[i].role, &role);
        if (role != GPD__ROLE_ADMIN && gpd__scope_has(a->tokens[i].scope, queue))
            forget(a, i);
    }
    pthread_mutex_unlock(&a->mu);
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
    a->idle_ms = GPD__SESSION_IDLE_MS;
    a->life_ms = GPD__SESSION_LIFE_MS;
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
        *created = rc == 0;
    }
    if (rc == 0)
        *out = a;
    else
        gpd__auth_close(a);
    return rc;
}

void gpd__auth_close(gpd__auth *a) {
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    free(a->tokens);
    free(a->sess);
    free(a);
}

/* Fills out from the cached token t (a caller holds a->mu). */
static void principal_of(const gpd__token *t, gpd__principal *out) {
    memset(out, 0, sizeof *out);
    out->token_id = t->id;
    snprintf(out->user, sizeof out->user, "%s", t->user);
    gpd__role_parse(t->role, &out->role);
    snprintf(out->scope, sizeof out->scope, "%s", t->scope);
    snprintf(out->unix_user, sizeof out->unix_user, "%s", t->unix_user);
}

/* The cached token of id, or NULL (a caller holds a->mu). */
static const gpd__token *token_of(gpd__auth *a, int64_t id) {
    for (size_t i = 0; i < a->n; i++)
        if (a->tokens[i].id == id)
            return &a->tokens[i];
    return NULL;
}

/* Sessions are timed on the monotonic clock: setting the wall clock neither
 * ends nor stretches them. */
static int64_t mono_ms(void) {
    return gp_clock_ms(CLOCK_MONOTONIC);
}

/* Whether session s has ended at now: idle too long or too old. */
static int ended(const gpd__auth *a, const csession *s, int64_t now) {
    return now - s->used_ms > a->idle_ms || now - s->created_ms > a->life_ms;
}

/* Forgets every session that has ended (a caller holds a->mu). */
static void sweep(gpd__auth *a, int64_t now) {
    for (size_t i = a->nsess; i-- > 0;)
        if (ended(a, &a->sess[i], now) || token_of(a, a->sess[i].token_id) == NULL)
            a->sess[i] = a->sess[--a->nsess];
}

/* Checks a console session's secret (hash: its SHA-256) and marks it used. */
static int check_session(gpd__auth *a, const char *hash, gpd__principal *out, gpd__err *e) {
    int64_t now = mono_ms();
    pthread_mutex_lock(&a->mu);
    size_t i = 0;
    while (i < a->nsess && strcmp(a->sess[i].hash, hash) != 0)
        i++;
    if (i == a->nsess) {
        pthread_mutex_unlock(&a->mu);
        return gpd__fail(e, GP_EAUTH, "Authorization",
                         "Authorization: unknown or revoked console session; sign in again");
    }
    csession *s = &a->sess[i];
    const gpd__token *t = token_of(a, s->token_id);
    if (t == NULL || ended(a, s, now)) {
        int idle = t != NULL && now - s->used_ms > a->idle_ms;
        a->sess[i] = a->sess[--a->nsess];
        pthread_mutex_unlock(&a->mu);
        if (t == NULL)
            return gpd__fail(e, GP_EAUTH, "Authorization",
                             "Authorization: the console session's token was revoked");
        return gpd__fail(e, GP_EAUTH, "Authorization",
                         "Authorization: the console session has expired (%s %llds); sign in "
                         "again",
                         idle ? "idle for more than" : "older than",
                         (long long)((idle ? a->idle_ms : a->life_ms) / 1000));
    }
    s->used_ms = now;
    principal_of(t, out);
    snprintf(out->session, sizeof out->session, "%s", hash);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

int gpd__auth_check(gpd__auth *a, const char *token, gpd__principal *out, gpd__err *e) {
    if (!token || !*token)
        return gpd__fail(e, GP_EAUTH, "Authorization",
                         "Authorization: a token is required (\"Authorization: Bearer TOKEN\")");
    char hash[65];
    sha256_hex(token, hash);
    if (strncmp(token, "gpc_", 4) == 0)
        return check_session(a, hash, out, e);
    int rc = GP_EAUTH;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->tokens[i].hash, hash) == 0) {
            principal_of(&a->tokens[i], out);
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&a->mu);
    if (rc < 0)
        return gpd__fail(e, GP_EAUTH, "Authorization", "Authorization: unknown token");
    return 0;
}

int gpd__auth_held(gpd__auth *a, const gpd__principal *who) {
    int64_t now = mono_ms();
    pthread_mutex_lock(&a->mu);
    int held = token_of(a, who->token_id) != NULL, found = 0;
    for (size_t i = 0; held && who->session[0] && i < a->nsess && !found; i++)
        if (strcmp(a->sess[i].hash, who->session) == 0)
            found = !ended(a, &a->sess[i], now) ? 1 : -1;
    pthread_mutex_unlock(&a->mu);
    return held && (!who->session[0] || found == 1);
}

void gpd__auth_session_limits(gpd__auth *a, int64_t idle_ms, int64_t life_ms) {
    pthread_mutex_lock(&a->mu);
    a->idle_ms = idle_ms;
    a->life_ms = life_ms;
    pthread_mutex_unlock(&a->mu);
}

int gpd__auth_session_open(gpd__auth *a, const gpd__principal *who, char *secret,
                           int64_t *expires_ms, gpd__err *e) {
    if (who->session[0])
        return gpd__fail(e, GP_EPERM, "Authorization",
                         "Authorization: a console session cannot open another; sign in with "
                         "the token");
    csession s;
    memset(&s, 0, sizeof s);
    int rc = random_secret("gpc_", secret, e);
    if (rc < 0)
        return rc;
    sha256_hex(secret, s.hash);
    s.token_id = who->token_id;
    s.created_ms = s.used_ms = mono_ms();
    pthread_mutex_lock(&a->mu);
    sweep(a, s.created_ms);
    size_t mine = 0, oldest = 0;
    for (size_t i = 0; i < a->nsess; i++)
        if (a->sess[i].token_id == s.token_id &&
            (mine++ == 0 || a->sess[i].created_ms < a->sess[oldest].created_ms))
            oldest = i;
    if (mine >= GPD__SESSIONS_PER_TOKEN) {
        a->sess[oldest] = s;
    } else if (a->nsess >= GPD__SESSIONS_MAX) {
        rc = gpd__fail(e, GP_ETOOMANY, "", "%d console sessions are open, the most there may be",
                       GPD__SESSIONS_MAX);
    } else if (GP_ARRAY_ROOM(a->sess, a->nsess, a->capsess, 16) < 0) {
        rc = gpd__fail(e, GP_ENOMEM, "", "out of memory");
    } else {
        a->sess[a->nsess++] = s;
    }
    *expires_ms = gpd__now_ms() + a->life_ms;
    pthread_mutex_unlock(&a->mu);
    if (rc < 0)
        memset(secret, 0, 64);
    return rc;
}

int gpd__auth_session_close(gpd__auth *a, const gpd__principal *who, gpd__err *e) {
    if (!who->session[0])
        return gpd__fail(e, GP_EINVAL, "Authorization",
                         "Authorization: this is a token, not a console session (revoke a token "
                         "with gpupool token delete)");
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->nsess; i++)
        if (strcmp(a->sess[i].hash, who->session) == 0) {
            a->sess[i] = a->sess[--a->nsess];
            break;
        }
    pthread_mutex_unlock(&a->mu);
    return 0;
}
