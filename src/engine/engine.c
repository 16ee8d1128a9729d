/*
 * engine.c — creating and freeing an engine, its configuration, the name
 * tables of the public enums, and the small utilities every engine file uses
 * (interning of GPU models and topology domains, error sentences, growable
 * arrays).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gp_names.h"
#include "engine/internal.h"

void gp_engine_config_init(gp_engine_config *c) {
    memset(c, 0, sizeof *c);
    c->seed = 1;
    c->placement = GP_PLACE_GPUPOOL;
    c->aging_interval = 10 * 60 * 1000;
    c->aging_max = 10;
    c->usage_half_life = 0;
    c->allocate = c->consolidate = c->reclaim = c->preempt = 1;
    c->max_evicting_attempts = 64;
    c->check_invariants = 0;
}

/* Checks c; GP_EINVAL with err naming the first field out of range. */
static int config_valid(const gp_engine_config *c, char *err, size_t errlen) {
    const char *field = NULL;
    if (c->placement < 0 || c->placement >= GP_PLACE_COUNT)
        field = "placement";
    else if (c->aging_interval < 0)
        field = "aging_interval";
    else if (c->aging_max < 0)
        field = "aging_max";
    else if (c->usage_half_life < 0)
        field = "usage_half_life";
    else if (c->max_evicting_attempts < 0)
        field = "max_evicting_attempts";
    if (field) {
        gp_errf(err, errlen, "%s: out of range (negative or unknown)", field);
        return GP_EINVAL;
    }
    const gp_allocator *a = c->alloc;
    if (a && (!a->malloc || !a->calloc || !a->realloc || !a->free)) {
        gp_errf(err, errlen, "alloc: every function must be set");
        return GP_EINVAL;
    }
    return 0;
}

int gp_engine_open(const gp_engine_config *c, gp_engine **out, char *err, size_t errlen) {
    gp_engine_config def;
    if (!out)
        return GP_EINVAL;
    *out = NULL;
    if (!c) {
        gp_engine_config_init(&def);
        c = &def;
    }
    int rc = config_valid(c, err, errlen);
    if (rc < 0)
        return rc;
    const gp_allocator *a = c->alloc ? c->alloc : &gp__libc_alloc;
    gp_engine *e = gp__calloc(a, 1, sizeof *e);
    if (e) {
        e->cfg = *c;
        e->alloc = *a;
        e->cfg.alloc = &e->alloc;
        e->node_by_name.alloc = &e->alloc;
        e->queue_by_name.alloc = &e->alloc;
        e->wl_by_id.alloc = &e->alloc;
        e->memo.alloc = &e->alloc;
        e->evict_memo.alloc = &e->alloc;
        e->shape_hist.alloc = &e->alloc;
        e->placer = gp__placer_new(&e->alloc, c->placement, c->seed);
    }
    if (!e || !e->placer) {
        gp_engine_free(e);
        gp_errf(err, errlen, "out of memory");
        return GP_ENOMEM;
    }
    *out = e;
    return 0;
}

void gp_engine_free(gp_engine *e) {
    if (!e)
        return;
    for (size_t i = 0; i < e->wl_by_id.cap; i++) {
        gp__wl *w = e->wl_by_id.vals[i];
        if (w)
            gp__wl_dispose(e, w);
    }
    gp__u64map_free(&e->wl_by_id);
    for (uint32_t i = 0; i < e->nnodes; i++) {
        if (e->nodes[i]) {
            gp__free(&e->alloc, e->nodes[i]->tasks);
            gp__free(&e->alloc, e->nodes[i]);
        }
    }
    gp__free(&e->alloc, e->nodes);
    gp__free(&e->alloc, e->free_ids);
    gp__strmap_free(&e->node_by_name);
    for (uint32_t i = 0; i < e->nqueues; i++) {
        gp__free(&e->alloc, e->queues[i]->children);
        gp__free(&e->alloc, e->queues[i]->pending);
        gp__free(&e->alloc, e->queues[i]->holding);
        gp__free(&e->alloc, e->queues[i]);
    }
    gp__free(&e->alloc, e->queues);
    gp__free(&e->alloc, e->roots);
    gp__strmap_free(&e->queue_by_name);
    for (int32_t i = 0; i < e->ndomains; i++)
        gp__free(&e->alloc, e->domains[i]);
    gp__free(&e->alloc, e->domains);
    for (size_t i = 0; i < e->nwarnings; i++)
        gp__free(&e->alloc, e->warnings[i]);
    gp__free(&e->alloc, e->warnings);
    gp__free(&e->alloc, e->frag);
    gp__free(&e->alloc, e->idle);
    gp__free(&e->alloc, e->frag_dirty);
    gp__free(&e->alloc, e->dirty_ids);
    gp__free(&e->alloc, e->dec);
    gp__free(&e->alloc, e->bindbuf);
    gp__free(&e->alloc, e->order);
    gp__u64map_free(&e->memo);
    gp__u64map_free(&e->evict_memo);
    gp__free(&e->alloc, e->gone);
    for (size_t i = 0; i < e->shape_hist.cap; i++)
        gp__free(&e->alloc, e->shape_hist.vals[i]);
    gp__u64map_free(&e->shape_hist);
    if (e->placer)
        gp__placer_free(e->placer);
    gp__free(&e->alloc, e);
}

/* ---- Name tables ---- */

GP_NAMED_ENUM_DEFINE(gp_resource, GP_RESOURCES, GP_RES_COUNT, "unknown")
GP_NAMED_ENUM_DEFINE(gp_placement, GP_PLACEMENTS, GP_PLACE_COUNT, "unknown")
GP_NAMED_ENUM_DEFINE(gp_kind, GP_KINDS, GP_KIND_COUNT, "unknown")
GP_NAMED_ENUM_DEFINE(gp_on_preempt, GP_ON_PREEMPT_MODES, GP_ON_PREEMPT_COUNT, "unknown")

GP_NAMED_ENUM_DEFINE(gp_state, GP_STATES, GP_STATE_COUNT, "unknown")

GP_NAMED_ENUM_DEFINE(gp_wait, GP_WAITS, GP_WAIT_COUNT, "unknown")

const char *gp_evict_reason_name(gp_evict_reason r) {
    static const char *const names[] = {"unknown", GP_EVICT_REASONS(GP_ENUM_NAME_OF)};
    _Static_assert(sizeof names / sizeof names[0] == GP_EVICT_REASON_COUNT,
                   "a name for every reason");
    return (unsigned)r < GP_EVICT_REASON_COUNT ? names[r] : "unknown";
}

/* ---- Utilities ---- */

int gp__model_find(const gp_engine *e, const char *model) {
    for (int32_t i = 0; i < e->nmodels; i++)
        if (strcmp(e->models[i], model) == 0)
            return i;
    return -1;
}

/* Returns the model's id, interning it; GP_ELIMIT past GP__MAX_MODELS. */
int gp__model_intern(gp_engine *e, const char *model) {
    int id = gp__model_find(e, model);
    if (id >= 0)
        return id;
    if (e->nmodels >= GP__MAX_MODELS)
        return GP_ELIMIT;
    snprintf(e->models[e->nmodels], sizeof e->models[0], "%s", model);
    return e->nmodels++;
}

int gp__domain_intern(gp_engine *e, const char *domain) {
    for (int32_t i = 0; i < e->ndomains; i++)
        if (strcmp(e->domains[i], domain) == 0)
            return i;
    char *copy = gp__strdup(&e->alloc, domain);
    if (!copy)
        return GP_ENOMEM;
    uint32_t n = (uint32_t)e->ndomains, cap = (uint32_t)e->cap_domains;
    if (gp__push(&e->alloc, (void **)&e->domains, &n, &cap, sizeof copy, &copy) != 0) {
        gp__free(&e->alloc, copy);
        return GP_ENOMEM;
    }
    e->ndomains = (int32_t)n;
    e->cap_domains = (int32_t)cap;
    return e->ndomains - 1;
}

int gp__too_long(const char *s, size_t size, const char *field, char *err, size_t errlen) {
    if (strnlen(s, size) < size)
        return 0;
    if (field != NULL)
        gp_errf(err, errlen, "%s: longer than %d characters", field, GP_NAME_MAX);
    return 1;
}

int gp__bad_name(const char *s, size_t size, const char *field, char *err, size_t errlen) {
    if (s[0] != '\0' && strnlen(s, size) < size)
        return 0;
    if (field != NULL)
        gp_errf(err, errlen, "%s: must be 1 to %d characters", field, GP_NAME_MAX);
    return 1;
}

int gp__bad_labels(const gp_label *l, int32_t n, const char *field, char *err, size_t errlen) {
    char what[48];
    for (int32_t i = 0; i < n; i++) {
        snprintf(what, sizeof what, "%s[%d].key", field, i);
        if (gp__bad_name(l[i].key, sizeof l[i].key, what, err, errlen))
            return 1;
        snprintf(what, sizeof what, "%s[%d].value", field, i);
        if (gp__too_long(l[i].value, sizeof l[i].value, what, err, errlen))
            return 1;
    }
    return 0;
}

int gp__negative(int64_t v, const char *field, char *err, size_t errlen) {
    if (v >= 0)
        return 0;
    gp_errf(err, errlen, "%s: must not be negative", field);
    return 1;
}

int gp__not_count(int32_t v, int32_t max, const char *field, char *err, size_t errlen) {
    if (v >= 0 && v <= max)
        return 0;
    gp_errf(err, errlen, "%s: must be 0 to %d", field, max);
    return 1;
}

/* True if v is not below n, filling err with "<field>: must be " and
 * names[0..n) as "A, B or C". */
static int bad_enum(unsigned v, const char *const *names, unsigned n, const char *field, char *err,
                    size_t errlen) {
    if (v < n)
        return 0;
    char list[256];
    gp_errf(err, errlen, "%s: must be %s", field, gp_names_or(list, sizeof list, names, (int)n));
    return 1;
}

int gp__bad_kind(gp_kind v, const char *field, char *err, size_t errlen) {
    return bad_enum((unsigned)v, gp_kind_names, GP_KIND_COUNT, field, err, errlen);
}

int gp__bad_on_preempt(gp_on_preempt v, const char *field, char *err, size_t errlen) {
    return bad_enum((unsigned)v, gp_on_preempt_names, GP_ON_PREEMPT_COUNT, field, err, errlen);
}

/* Grows an array of size-byte items to hold at least need of them, so that
 * the pushes that follow cannot fail; GP_ENOMEM leaves it as is. */
int gp__reserve(const gp_allocator *a, void **arr, uint32_t need, uint32_t *cap, size_t size) {
    if (need <= *cap)
        return 0;
    uint32_t ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = gp__realloc(a, *arr, (size_t)ncap * size);
    if (!p)
        return GP_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* Appends item (size bytes) to a growable array; GP_ENOMEM leaves it as is. */
int gp__push(const gp_allocator *a, void **arr, uint32_t *n, uint32_t *cap, size_t size,
             const void *item) {
    if (*n == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 8;
        void *p = gp__realloc(a, *arr, (size_t)ncap * size);
        if (!p)
            return GP_ENOMEM;
        *arr = p;
        *cap = ncap;
    }
    memcpy((char *)*arr + (size_t)*n * size, item, size);
    (*n)++;
    return 0;
}
