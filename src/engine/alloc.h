/*
 * alloc.h — internal to the engine: how every part of the engine allocates.
 *
 * Every allocation and every free in src/engine goes through the allocator of
 * the engine's configuration (gp_engine_config.alloc), so that a caller can
 * count, limit or fail allocations (tests/engine/test-alloc-fail.c makes each
 * one fail in turn). Parts without an engine pointer (the hash maps, the
 * placer) keep a pointer to the engine's copy of the allocator.
 */
#ifndef GP_ENGINE_ALLOC_H
#define GP_ENGINE_ALLOC_H

#include <stddef.h>

#include "engine/gp_engine.h"

/* The C library's malloc, calloc, realloc and free, the default. */
extern const gp_allocator gp__libc_alloc;

/* The C library's functions with the allocator's contract: NULL on failure. */
static inline void *gp__malloc(const gp_allocator *a, size_t n) {
    return a->malloc(a->user, n);
}
static inline void *gp__calloc(const gp_allocator *a, size_t n, size_t size) {
    return a->calloc(a->user, n, size);
}
static inline void *gp__realloc(const gp_allocator *a, void *p, size_t n) {
    return a->realloc(a->user, p, n);
}
static inline void gp__free(const gp_allocator *a, void *p) {
    a->free(a->user, p);
}

/* A copy of s from allocator a; NULL if there is no memory. */
char *gp__strdup(const gp_allocator *a, const char *s);

#endif /* GP_ENGINE_ALLOC_H */
