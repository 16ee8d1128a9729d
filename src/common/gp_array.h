/*
 * gp_array.h — the one growable array of gpupool: items in one malloc'd
 * block that doubles when it is full, as every part keeps its lists (the
 * daemon's workloads and usage rows, the slurm executor's jobs, the
 * simulator's events). Inline, so that every part may use it without
 * linking anything; the engine keeps its own, whose allocations its
 * out-of-memory tests fail one by one.
 *
 *     item *v = NULL;
 *     size_t n = 0, cap = 0;
 *     if (GP_ARRAY_ROOM(v, n, cap, 16) < 0)
 *         return GP_ENOMEM;
 *     v[n++] = x;
 */
#ifndef GP_ARRAY_H
#define GP_ARRAY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_error.h"

/* Makes room for one more item in the array at *items (a pointer to the
 * array's pointer), of *cap items of size bytes, n of them in use: at
 * least first items at the first call, then twice as many. 0, or GP_ENOMEM
 * with the array and *cap unchanged. Through GP_ARRAY_ROOM. */
static inline int gp_array_room(void *items, size_t n, size_t *cap, size_t size, size_t first) {
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : first;
    if (ncap <= n || ncap > SIZE_MAX / size)
        return GP_ENOMEM;
    void *old, *grown;
    memcpy(&old, items, sizeof old);
    if ((grown = realloc(old, ncap * size)) == NULL)
        return GP_ENOMEM;
    memcpy(items, &grown, sizeof grown);
    *cap = ncap;
    return 0;
}

/* gp_array_room for the array v (a pointer variable of the item's type),
 * n items in use, cap (a size_t) items of room. */
#define GP_ARRAY_ROOM(v, n, cap, first) gp_array_room(&(v), (n), &(cap), sizeof *(v), (first))

#endif /* GP_ARRAY_H */
