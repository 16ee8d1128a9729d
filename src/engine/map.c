/*
 * map.c — open-addressing hash maps for the engine (see map.h).
 *
 * Both maps share one shape: a power-of-two table kept at most 70% full,
 * linear probing, and backward-shift deletion. The two differ only in how a
 * key is hashed, compared and marked empty, which the macros below supply.
 */
#include "engine/map.h"

#include "engine/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/gp_error.h"

static size_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return (size_t)x;
}

static size_t hash_str(const char *s) {
    return hash_u64(gp_fnv1a(s));
}

/*
 * MAP_IMPL generates get / put / del / grow / free for one map type.
 * EMPTY(k) tests a slot, HASH(k) hashes, EQ(a,b) compares, ZERO is the empty key.
 */
#define MAP_IMPL(NAME, T, KEY_T, EMPTY, HASH, EQ, ZERO)                                            \
    void gp__##NAME##_free(T *m) {                                                                 \
        const gp_allocator *a = m->alloc;                                                          \
        gp__free(a, (void *)m->keys);                                                              \
        gp__free(a, m->vals);                                                                      \
        memset(m, 0, sizeof *m);                                                                   \
        m->alloc = a;                                                                              \
    }                                                                                              \
    static size_t NAME##_slot(const T *m, KEY_T key) {                                             \
        size_t mask = m->cap - 1, i = HASH(key) & mask;                                            \
        while (!EMPTY(m->keys[i]) && !EQ(m->keys[i], key))                                         \
            i = (i + 1) & mask;                                                                    \
        return i;                                                                                  \
    }                                                                                              \
    void *gp__##NAME##_get(const T *m, KEY_T key) {                                                \
        if (m->cap == 0)                                                                           \
            return NULL;                                                                           \
        size_t i = NAME##_slot(m, key);                                                            \
        return EMPTY(m->keys[i]) ? NULL : m->vals[i];                                              \
    }                                                                                              \
    static int NAME##_grow(T *m) {                                                                 \
        size_t ncap = m->cap ? m->cap * 2 : 16;                                                    \
        T nm = {gp__calloc(m->alloc, ncap, sizeof *m->keys),                                       \
                gp__calloc(m->alloc, ncap, sizeof *m->vals), ncap, 0, m->alloc};                   \
        if (!nm.keys || !nm.vals) {                                                                \
            gp__free(m->alloc, (void *)nm.keys);                                                   \
            gp__free(m->alloc, nm.vals);                                                           \
            return GP_ENOMEM;                                                                      \
        }                                                                                          \
        for (size_t i = 0; i < m->cap; i++) {                                                      \
            if (EMPTY(m->keys[i]))                                                                 \
                continue;                                                                          \
            size_t j = NAME##_slot(&nm, m->keys[i]);                                               \
            nm.keys[j] = m->keys[i];                                                               \
            nm.vals[j] = m->vals[i];                                                               \
            nm.n++;                                                                                \
        }                                                                                          \
        gp__##NAME##_free(m);                                                                      \
        *m = nm;                                                                                   \
        return 0;                                                                                  \
    }                                                                                              \
    int gp__##NAME##_put(T *m, KEY_T key, void *val) {                                             \
        if ((m->n + 1) * 10 > m->cap * 7 && NAME##_grow(m) != 0)                                   \
            return GP_ENOMEM;                                                                      \
        size_t i = NAME##_slot(m, key);                                                            \
        if (EMPTY(m->keys[i]))                                                                     \
            m->n++;                                                                                \
        m->keys[i] = key;                                                                          \
        m->vals[i] = val;                                                                          \
        return 0;                                                                                  \
    }                                                                                              \
    void *gp__##NAME##_del(T *m, KEY_T key) {                                                      \
        if (m->cap == 0)                                                                           \
            return NULL;                                                                           \
        size_t mask = m->cap - 1, i = NAME##_slot(m, key);                                         \
        if (EMPTY(m->keys[i]))                                                                     \
            return NULL;                                                                           \
        void *val = m->vals[i];                                                                    \
        /* Backward shift: pull later entries of the probe run into the hole. */                   \
        for (size_t j = (i + 1) & mask; !EMPTY(m->keys[j]); j = (j + 1) & mask) {                  \
            size_t home = HASH(m->keys[j]) & mask;                                                 \
            if (((j - home) & mask) >= ((j - i) & mask)) {                                         \
                m->keys[i] = m->keys[j];                                                           \
                m->vals[i] = m->vals[j];                                                           \
                i = j;                                                                             \
            }                                                                                      \
        }                                                                                          \
        m->keys[i] = ZERO;                                                                         \
        m->vals[i] = NULL;                                                                         \
        m->n--;                                                                                    \
        return val;                                                                                \
    }

#define U64_EMPTY(k) ((k) == 0)
#define U64_EQ(a, b) ((a) == (b))
#define STR_EMPTY(k) ((k) == NULL)
#define STR_EQ(a, b) (strcmp((a), (b)) == 0)

MAP_IMPL(u64map, gp__u64map, uint64_t, U64_EMPTY, hash_u64, U64_EQ, 0)
MAP_IMPL(strmap, gp__strmap, const char *, STR_EMPTY, hash_str, STR_EQ, NULL)

void gp__u64map_clear(gp__u64map *m) {
    if (m->cap) {
        memset(m->keys, 0, m->cap * sizeof *m->keys);
        memset(m->vals, 0, m->cap * sizeof *m->vals);
    }
    m->n = 0;
}

int gp__strmap_reserve(gp__strmap *m, size_t n) {
    while (n * 10 > m->cap * 7)
        if (strmap_grow(m) != 0)
            return GP_ENOMEM;
    return 0;
}
