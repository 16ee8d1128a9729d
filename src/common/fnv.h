/*
 * fnv.h — FNV-1a, 64 bits, of a string: the one hash of names in gpupool
 * (the engine's string maps, the simulator's assignment of pods to projects,
 * whose published rule is "FNV-1a 64 of the pod's name"). Inline, so that
 * every part may use it without linking anything.
 */
#ifndef GP_FNV_H
#define GP_FNV_H

#include <stdint.h>

#define GP_FNV1A_BASIS UINT64_C(14695981039346656037)
#define GP_FNV1A_PRIME UINT64_C(1099511628211)

/* FNV-1a 64 of the bytes of s up to its terminating NUL. */
static inline uint64_t gp_fnv1a(const char *s) {
    uint64_t h = GP_FNV1A_BASIS;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= GP_FNV1A_PRIME;
    }
    return h;
}

#endif /* GP_FNV_H */
