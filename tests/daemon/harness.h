/*
 * harness.h — starting a real gpupoold for the daemon's C tests and speaking
 * HTTP to it. Each test starts its own daemon on a free loopback port with a
 * fresh data directory; the daemon dies with the test process.
 */
#ifndef GP_TEST_DAEMON_HARNESS_H
#define GP_TEST_DAEMON_HARNESS_H

#include <jansson.h>

typedef struct gpd_test {
    char dir[256];
    char server[128];
    char admin[128];
    int pid;
} gpd_test;

/* Starts gpupoold (from $GP_BUILD, default build); aborts the test on failure. */
void gpd_test_start(gpd_test *t);
/* The same, with more gpupoold flags (a NULL-terminated list, at most 24). */
void gpd_test_start_args(gpd_test *t, const char *const *extra);
void gpd_test_stop(gpd_test *t);

/* Sends a request with token (NULL: none) and JSON text body (NULL: none);
 * returns the status and stores the parsed answer in *out (may be NULL). */
int gpd_call(gpd_test *t, const char *token, const char *method, const char *path, const char *body,
             json_t **out);

/* Creates a token, returns its secret (static buffer per call site: copy it). */
void gpd_token(gpd_test *t, const char *user, const char *role, const char *scope, char *secret,
               size_t len);

#endif
