/*
 * alloc.c — the engine's default allocator (the C library) and the string
 * copy that goes through an engine allocator (see alloc.h).
 */
#include "engine/alloc.h"

#include <stdlib.h>
#include <string.h>

/* Each wrapper ignores the user pointer and calls the C library. */
static void *libc_malloc(void *user, size_t n) {
    (void)user;
    return malloc(n);
}

static void *libc_calloc(void *user, size_t n, size_t size) {
    (void)user;
    return calloc(n, size);
}

static void *libc_realloc(void *user, void *p, size_t n) {
    (void)user;
    return realloc(p, n);
}

static void libc_free(void *user, void *p) {
    (void)user;
    free(p);
}

const gp_allocator gp__libc_alloc = {libc_malloc, libc_calloc, libc_realloc, libc_free, NULL};

char *gp__strdup(const gp_allocator *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = gp__malloc(a, n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}
