/*
 * track.c — what this process allocated: a hash table from (kind, handle)
 * to the bytes charged, the ledger GPU and the owning context.
 *
 * A free must give back exactly what its allocation charged, and only for
 * memory this library charged: pointers it never saw (allocated before it
 * was loaded, or by a path it does not charge) are forwarded to the driver
 * untouched. The table is open addressing with linear probing and
 * backward-shift deletion (no tombstones, so a workload that allocates and
 * frees forever does not degrade it), under one mutex: an allocation
 * costs the driver microseconds, and the lock tens of nanoseconds.
 */
#include "interpose/gpuslice.h"

#include "common/gp_error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    uint64_t key;
    int kind; /* 0: empty */
    struct gps__track t;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots;
static size_t cap_slots; /* a power of two, or 0 */
static size_t count;

static size_t hash(int kind, uint64_t key) {
    uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h ^ (h >> 29));
}

/* Index of (kind, key), or of the empty slot where it would go. */
static size_t find(int kind, uint64_t key) {
    size_t mask = cap_slots - 1, i = hash(kind, key) & mask;
    while (slots[i].kind && !(slots[i].kind == kind && slots[i].key == key))
        i = (i + 1) & mask;
    return i;
}

static int grow(void) {
    size_t ncap = cap_slots ? cap_slots * 2 : 1024;
    struct slot *old = slots, *n = calloc(ncap, sizeof *n);
    size_t ocap = cap_slots;
    if (!n)
        return GP_ENOMEM;
    slots = n;
    cap_slots = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].kind)
            slots[find(old[i].kind, old[i].key)] = old[i];
    free(old);
    return 0;
}

/* Removes slot i and shifts later members of its probe run back, so that
 * every remaining key stays reachable from its home slot. */
static void remove_at(size_t i) {
    size_t mask = cap_slots - 1, j = i;
    slots[i].kind = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!slots[j].kind)
            break;
        size_t home = hash(slots[j].kind, slots[j].key) & mask;
        /* Move j into the hole i unless its home lies cyclically in (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            slots[i] = slots[j];
            slots[j].kind = 0;
            i = j;
        }
    }
    count--;
}

int gps__track_put(int kind, uint64_t key, const struct gps__track *t) {
    int rc = 0;
    pthread_mutex_lock(&lock);
    if ((count + 1) * 2 > cap_slots)
        rc = grow();
    if (rc == 0) {
        size_t i = find(kind, key);
        if (!slots[i].kind)
            count++;
        slots[i].kind = kind;
        slots[i].key = key;
        slots[i].t = *t;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int lookup(int kind, uint64_t key, struct gps__track *out, int take) {
    int found = 0;
    pthread_mutex_lock(&lock);
    if (cap_slots) {
        size_t i = find(kind, key);
        if (slots[i].kind) {
            found = 1;
            *out = slots[i].t;
            if (take)
                remove_at(i);
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

int gps__track_take(int kind, uint64_t key, struct gps__track *out) {
    return lookup(kind, key, out, 1);
}

int gps__track_get(int kind, uint64_t key, struct gps__track *out) {
    return lookup(kind, key, out, 0);
}

void gps__track_drop_ctx(CUcontext ctx, uint64_t *per_dev) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < cap_slots;) {
        struct slot *s = &slots[i];
        if (s->kind && s->kind != GP_K_POOL && s->kind != GP_K_CTX && s->t.ctx == ctx) {
            if (s->t.dev >= 0 && s->t.dev < GP_LEDGER_MAX_DEVICES)
                per_dev[s->t.dev] += s->t.bytes;
            remove_at(i); /* may shift another entry into i: look at i again */
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&lock);
}

void gps__track_reset(void) {
    free(slots);
    slots = NULL;
    cap_slots = count = 0;
}

void gps__track_lock(void) {
    pthread_mutex_lock(&lock);
}

void gps__track_unlock(void) {
    pthread_mutex_unlock(&lock);
}
