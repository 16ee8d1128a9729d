/*
 * map.h — the engine's two hash maps: 64-bit id -> pointer and string ->
 * pointer. Open addressing with linear probing and backward-shift deletion
 * (no tombstones), so lookups stay short however many removals happen.
 * Keys of the string map are not copied: they must live as long as the entry
 * (the engine keys by names stored inside the mapped objects).
 */
#ifndef GP_ENGINE_MAP_H
#define GP_ENGINE_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "engine/gp_engine.h"

typedef struct gp__u64map {
    uint64_t *keys; /* 0 marks an empty slot; key 0 is not allowed */
    void **vals;
    size_t cap, n;             /* cap is 0 or a power of two */
    const gp_allocator *alloc; /* set by the owner before the first put */
} gp__u64map;

typedef struct gp__strmap {
    const char **keys; /* NULL marks an empty slot */
    void **vals;
    size_t cap, n;
    const gp_allocator *alloc; /* set by the owner before the first put */
} gp__strmap;

/* Frees the table; the map is empty after, and keeps its allocator. */
void gp__u64map_free(gp__u64map *m);
/* Empties the map, keeping its table. */
void gp__u64map_clear(gp__u64map *m);
void *gp__u64map_get(const gp__u64map *m, uint64_t key);
/* Inserts or replaces. GP_ENOMEM (map unchanged) or 0. */
int gp__u64map_put(gp__u64map *m, uint64_t key, void *val);
/* Removes key; returns its value or NULL. */
void *gp__u64map_del(gp__u64map *m, uint64_t key);

void gp__strmap_free(gp__strmap *m);
void *gp__strmap_get(const gp__strmap *m, const char *key);
int gp__strmap_put(gp__strmap *m, const char *key, void *val);
/* Makes room for n entries in all, so that puts up to them cannot fail.
 * GP_ENOMEM (map unchanged) or 0. */
int gp__strmap_reserve(gp__strmap *m, size_t n);
void *gp__strmap_del(gp__strmap *m, const char *key);

#endif /* GP_ENGINE_MAP_H */
