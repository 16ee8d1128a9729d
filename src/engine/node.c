/*
 * node.c — the pool model: nodes and their GPUs, what is free on each, the
 * index of tasks bound to each node, and the views that placement policies
 * read.
 *
 * Every change of a node's free capacity goes through gp__node_charge() or
 * gp__node_cpu() followed by gp__node_refresh(), which keeps the node's
 * summary fields (largest free slice, fully free GPUs) and the placer's
 * caches current.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

void gp_node_spec_init(gp_node_spec *n, const char *name) {
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name ? name : "");
    n->schedulable = 1;
}

/* Validates a node spec; fills err naming the field. */
static int validate(const gp_engine *e, const gp_node_spec *n, char *err, size_t errlen) {
    if (gp__bad_name(n->name, sizeof n->name, "name", err, errlen) ||
        gp__too_long(n->domain, sizeof n->domain, "domain", err, errlen) ||
        gp__negative(n->cpu_milli, "cpu_milli", err, errlen) ||
        gp__negative(n->mem_bytes, "mem_bytes", err, errlen) ||
        gp__not_count(n->ngpus, GP_MAX_GPUS_PER_NODE, "ngpus", err, errlen))
        return GP_EINVAL;
    if (n->can_pause != 0 && n->can_pause != 1) {
        gp_errf(err, errlen, "can_pause: must be 0 or 1");
        return GP_EINVAL;
    }
    if (gp__negative(n->paused_mem_max, "paused_mem_max", err, errlen))
        return GP_EINVAL;
    if (n->gpus_taken < 0 || n->gpus_taken > n->ngpus) {
        gp_errf(err, errlen, "gpus_taken: must be 0 to ngpus (%d)", n->ngpus);
        return GP_EINVAL;
    }
    if (gp__not_count(n->nlabels, GP_MAX_LABELS, "nlabels", err, errlen) ||
        gp__bad_labels(n->labels, n->nlabels, "labels", err, errlen))
        return GP_EINVAL;
    int new_models = 0;
    for (int32_t i = 0; i < n->ngpus; i++) {
        const gp_gpu_spec *g = &n->gpus[i];
        char uuid[32], model[32];
        snprintf(uuid, sizeof uuid, "gpus[%d].uuid", i);
        snprintf(model, sizeof model, "gpus[%d].model", i);
        if (gp__too_long(g->uuid, sizeof g->uuid, uuid, err, errlen) ||
            gp__bad_name(g->model, sizeof g->model, model, err, errlen))
            return GP_EINVAL;
        if (g->mem_bytes <= 0) {
            gp_errf(err, errlen, "gpus[%d].mem_bytes: must be positive", i);
            return GP_EINVAL;
        }
        if (g->nmig < 0 || g->nmig > GP_MAX_MIG_SLOTS || (!g->mig && g->nmig)) {
            gp_errf(err, errlen, "gpus[%d].nmig: must be 0 to %d, and 0 unless mig is set", i,
                    GP_MAX_MIG_SLOTS);
            return GP_EINVAL;
        }
        int32_t slices = 0;
        for (int32_t k = 0; k < g->nmig; k++) {
            int p = gp__mig_profile_find(g->mig_layout[k]);
            if (p < 0) {
                gp_errf(err, errlen, "gpus[%d].mig_layout[%d]: unknown MIG profile '%.16s'", i, k,
                        g->mig_layout[k]);
                return GP_EINVAL;
            }
            slices += gp__mig_milli(p);
            if (gp__mig_mem(p) > g->mem_bytes) {
                gp_errf(err, errlen,
                        "gpus[%d].mig_layout[%d]: profile %.16s needs more memory than the GPU has",
                        i, k, g->mig_layout[k]);
                return GP_EINVAL;
            }
        }
        if (slices > GP_MILLI) {
            gp_errf(err, errlen, "gpus[%d].mig_layout: instances use more than 7 compute slices",
                    i);
            return GP_EINVAL;
        }
        int known = gp__model_find(e, g->model) >= 0;
        for (int32_t k = 0; !known && k < i; k++)
            known = strcmp(n->gpus[k].model, g->model) == 0;
        new_models += !known;
    }
    if (e->nmodels + new_models > GP__MAX_MODELS) {
        gp_errf(err, errlen, "gpus: more than %d GPU models in the pool", GP__MAX_MODELS);
        return GP_ELIMIT;
    }
    return 0;
}

/* Whether an existing node can take the new spec without losing what is
 * bound on it. */
static int check_shrink(const gp__node *n, const gp_node_spec *s, char *err, size_t errlen) {
    int64_t cpu_used = n->spec.cpu_milli - n->cpu_free, mem_used = n->spec.mem_bytes - n->mem_free;
    if (s->cpu_milli < cpu_used || s->mem_bytes < mem_used) {
        gp_errf(err, errlen, "%s: less than bound tasks hold",
                s->cpu_milli < cpu_used ? "cpu_milli" : "mem_bytes");
        return GP_EBUSY;
    }
    for (int32_t i = 0; i < n->spec.ngpus; i++) {
        if (n->nslices[i] == 0)
            continue;
        const gp_gpu_spec *o = &n->spec.gpus[i], *g = &s->gpus[i];
        if (i >= s->ngpus || g->mig != o->mig || g->mem_bytes != o->mem_bytes ||
            strcmp(g->model, o->model) != 0 ||
            (o->mig && (g->nmig != o->nmig ||
                        memcmp(g->mig_layout, o->mig_layout, sizeof g->mig_layout) != 0))) {
            gp_errf(err, errlen, "gpus[%d]: holds bound slices and cannot change", i);
            return GP_EBUSY;
        }
    }
    return 0;
}

static void capacity_add(gp_engine *e, const gp__node *n, int sign) {
    if (!n->spec.schedulable)
        return;
    e->capacity.v[GP_RES_CPU] += sign * n->spec.cpu_milli;
    e->capacity.v[GP_RES_MEM] += sign * n->spec.mem_bytes;
    e->capacity.v[GP_RES_GPU] += sign * (int64_t)(n->spec.ngpus - n->spec.gpus_taken) * GP_MILLI;
}

/* Node n's part in the pool-wide maxima: its largest GPU memory and its
 * number of non-MIG GPUs. */
static void node_maxima(const gp__node *n, int64_t *mem, int32_t *whole) {
    *mem = 0;
    *whole = 0;
    for (int32_t g = 0; g < n->spec.ngpus; g++) {
        if (n->spec.gpus[g].mem_bytes > *mem)
            *mem = n->spec.gpus[g].mem_bytes;
        *whole += !n->spec.gpus[g].mig;
    }
}

/* Counts one node at (mem, whole) in (sign > 0) or out of the maxima. A node
 * leaving a maximum it alone reached makes the maxima stale; maxima_settle
 * recounts them once the pool is whole again. Constant time otherwise, so that
 * adding N nodes is O(N) and not O(N^2). */
static void maxima_count(gp_engine *e, int64_t mem, int32_t whole, int sign) {
    if (sign > 0) {
        if (mem > e->max_gpu_mem || e->nat_max_gpu_mem == 0) {
            e->max_gpu_mem = mem;
            e->nat_max_gpu_mem = 0;
        }
        e->nat_max_gpu_mem += mem == e->max_gpu_mem;
        if (whole > e->max_gpus || e->nat_max_gpus == 0) {
            e->max_gpus = whole;
            e->nat_max_gpus = 0;
        }
        e->nat_max_gpus += whole == e->max_gpus;
        return;
    }
    if (mem == e->max_gpu_mem && --e->nat_max_gpu_mem == 0)
        e->maxima_stale = 1;
    if (whole == e->max_gpus && --e->nat_max_gpus == 0)
        e->maxima_stale = 1;
}

static void maxima_add(gp_engine *e, const gp__node *n, int sign) {
    int64_t mem;
    int32_t whole;
    node_maxima(n, &mem, &whole);
    maxima_count(e, mem, whole, sign);
}

/* Recounts the maxima over every node if the last node at one has left. */
static void maxima_settle(gp_engine *e) {
    if (!e->maxima_stale)
        return;
    e->maxima_stale = 0;
    e->max_gpu_mem = e->max_gpus = 0;
    e->nat_max_gpu_mem = e->nat_max_gpus = 0;
    for (uint32_t i = 0; i < e->nnodes; i++)
        if (e->nodes[i])
            maxima_add(e, e->nodes[i], +1);
}

int gp_engine_node_set(gp_engine *e, const gp_node_spec *s, char *err, size_t errlen) {
    int rc = validate(e, s, err, errlen);
    if (rc)
        return rc;
    gp__node *n = gp__strmap_get(&e->node_by_name, s->name);
    if (n && (rc = check_shrink(n, s, err, errlen)) != 0)
        return rc;
    int fresh = n == NULL;
    /* Room for a new node's name first, so that nothing fails once it is
     * being added (a node set again takes back the entry it gives up). */
    if (fresh && gp__strmap_reserve(&e->node_by_name, e->node_by_name.n + 1) != 0)
        return GP_ENOMEM;
    int domain = gp__domain_intern(e, s->domain);
    if (domain < 0)
        return domain;
    if (fresh) {
        n = gp__calloc(&e->alloc, 1, sizeof *n);
        if (!n)
            return GP_ENOMEM;
        uint32_t id;
        if (e->nfree_ids) {
            id = e->free_ids[--e->nfree_ids];
        } else {
            gp__node *none = NULL;
            if (gp__push(&e->alloc, (void **)&e->nodes, &e->nnodes, &e->cap_nodes, sizeof none,
                         &none)) {
                gp__free(&e->alloc, n);
                return GP_ENOMEM;
            }
            id = e->nnodes - 1;
        }
        n->id = id;
        n->in_whole = n->in_frac = -1;
        e->nodes[id] = n;
    } else {
        capacity_add(e, n, -1);
        maxima_add(e, n, -1);
    }
    /* Free = new capacity - what is in use (nothing for a fresh node). */
    int64_t cpu_used = fresh ? 0 : n->spec.cpu_milli - n->cpu_free;
    int64_t mem_used = fresh ? 0 : n->spec.mem_bytes - n->mem_free;
    int32_t used_milli[GP_MAX_GPUS_PER_NODE] = {0};
    int64_t used_mem[GP_MAX_GPUS_PER_NODE] = {0};
    for (int32_t g = 0; !fresh && g < n->spec.ngpus; g++) {
        if (!n->spec.gpus[g].mig && !n->withheld[g]) {
            used_milli[g] = GP_MILLI - n->free_milli[g];
            used_mem[g] = n->cap_mem[g] - n->free_mem[g];
        }
    }
    if (!fresh)
        gp__strmap_del(&e->node_by_name, n->spec.name);
    n->spec = *s;
    n->alive = 1;
    n->domain = domain;
    n->cpu_free = s->cpu_milli - cpu_used;
    n->mem_free = s->mem_bytes - mem_used;
    memset(n->withheld, 0, sizeof n->withheld); /* gp__node_refresh withholds again */
    for (int32_t g = 0; g < s->ngpus; g++) {
        const gp_gpu_spec *gs = &s->gpus[g];
        n->gpu_model[g] = gp__model_intern(e, gs->model); /* checked in validate() */
        n->cap_mem[g] = gs->mem_bytes;
        n->free_milli[g] = gs->mig ? 0 : GP_MILLI - used_milli[g];
        n->free_mem[g] = gs->mig ? 0 : gs->mem_bytes - used_mem[g];
        if (n->nslices[g] == 0)
            memset(n->mig_owner[g], 0, sizeof n->mig_owner[g]);
    }
    n->view.id = n->id;
    n->view.ngpus = s->ngpus;
    n->view.cpu_cap = s->cpu_milli;
    n->view.mem_cap = s->mem_bytes;
    n->view.free_milli = n->free_milli;
    n->view.free_mem = n->free_mem;
    n->view.cap_mem = n->cap_mem;
    n->view.gpu_model = n->gpu_model;
    if (gp__strmap_put(&e->node_by_name, n->spec.name, n) != 0)
        abort(); /* cannot fail: room reserved above, or this node's own entry */
    if (fresh)
        e->live_nodes++;
    capacity_add(e, n, +1);
    maxima_add(e, n, +1);
    maxima_settle(e);
    gp__node_refresh(e, n);
    return 0;
}

static void node_index(gp_engine *e, gp__node *n, int present);

int gp_engine_node_remove(gp_engine *e, const char *name) {
    gp__node *n = name ? gp__strmap_get(&e->node_by_name, name) : NULL;
    if (!n)
        return GP_ENOENT;
    /* Make room for everything below first (the id's reuse, a report per
     * lost workload, each queue's pending list), so that nothing can fail
     * once workloads start losing their tasks. */
    if (gp__reserve(&e->alloc, (void **)&e->free_ids, e->nfree_ids + 1, &e->cap_free_ids,
                    sizeof *e->free_ids) ||
        gp__reserve(&e->alloc, (void **)&e->gone, e->ngone + n->ntasks + (uint32_t)n->npaused,
                    &e->cap_gone, sizeof *e->gone))
        return GP_ENOMEM;
    for (uint32_t k = 0; k < n->ntasks; k++)
        if (gp__queue_reserve(n->tasks[k].wl->queue) != 0)
            return GP_ENOMEM;
    while (n->ntasks > 0)
        gp__wl_lost(e, n->tasks[0].wl);
    gp__pause_node_gone(e, n);
    if (gp__push(&e->alloc, (void **)&e->free_ids, &e->nfree_ids, &e->cap_free_ids, sizeof n->id,
                 &n->id))
        abort(); /* room reserved above */
    capacity_add(e, n, -1);
    maxima_add(e, n, -1);
    node_index(e, n, 0);
    gp__strmap_del(&e->node_by_name, n->spec.name);
    gp__placer_node_removed(e->placer, n->id);
    e->nodes[n->id] = NULL;
    gp__frag_dirty(e, n->id);
    e->live_nodes--;
    gp__free(&e->alloc, n->tasks);
    gp__free(&e->alloc, n);
    maxima_settle(e);
    return 0;
}

/* Links of node id + 1 (nonzero) in family f (0: whole, 1: fraction). */
static uint32_t *links(gp_engine *e, uint32_t id1, int f) {
    return e->nodes[id1 - 1]->link[f];
}

/* Takes n out of list l; the list's last node takes its place. */
static void bucket_unlink(gp_engine *e, gp__idlist *l, gp__node *n, int f) {
    uint32_t me = n->id + 1, tail = l->last;
    uint32_t *t = links(e, tail, f);
    /* Detach the tail. */
    l->last = t[0];
    if (t[0])
        links(e, t[0], f)[1] = 0;
    else
        l->first = 0;
    if (tail != me) {
        /* The tail takes n's place. */
        uint32_t *m = n->link[f];
        t[0] = m[0];
        t[1] = m[1];
        if (m[0])
            links(e, m[0], f)[1] = tail;
        else
            l->first = tail;
        if (m[1])
            links(e, m[1], f)[0] = tail;
        else
            l->last = tail;
    }
    n->link[f][0] = n->link[f][1] = 0;
}

/* Moves node n from bucket *in of lists to bucket to (-1: none), in family
 * f. Cannot fail. */
static void bucket_move(gp_engine *e, gp__idlist *lists, int32_t *in, gp__node *n, int32_t to,
                        int f) {
    if (*in == to)
        return;
    if (*in >= 0)
        bucket_unlink(e, &lists[*in], n, f);
    *in = to;
    if (to < 0)
        return;
    gp__idlist *l = &lists[to];
    uint32_t me = n->id + 1;
    n->link[f][0] = l->last;
    n->link[f][1] = 0;
    if (l->last)
        links(e, l->last, f)[1] = me;
    else
        l->first = me;
    l->last = me;
}

/* Puts n in (present) or takes it out of the capacity buckets. */
static void node_index(gp_engine *e, gp__node *n, int present) {
    bucket_move(e, e->by_whole, &n->in_whole, n, present ? n->free_whole : -1, 0);
    bucket_move(e, e->by_frac, &n->in_frac, n, present ? n->best_free_milli : -1, 1);
}

/* Withholds the spec's gpus_taken GPUs: the highest-numbered non-MIG GPUs
 * without slices. A function of the bindings alone, so that taking a task off
 * and putting it back (eviction trials) leaves the same books. */
static void withhold(gp__node *n) {
    int32_t want = n->spec.gpus_taken;
    for (int32_t g = n->spec.ngpus - 1; g >= 0; g--) {
        int32_t w = want > 0 && !n->spec.gpus[g].mig && n->nslices[g] == 0;
        want -= w;
        if (w == n->withheld[g])
            continue;
        n->withheld[g] = w;
        n->free_milli[g] = w ? 0 : GP_MILLI;
        n->free_mem[g] = w ? 0 : n->cap_mem[g];
    }
    n->taken_short = want;
}

void gp__node_refresh(gp_engine *e, gp__node *n) {
    int32_t best = 0, whole = 0;
    withhold(n);
    for (int32_t g = 0; g < n->spec.ngpus; g++) {
        if (n->spec.gpus[g].mig)
            continue;
        if (n->free_milli[g] > best)
            best = n->free_milli[g];
        whole += n->free_milli[g] == GP_MILLI && n->free_mem[g] == n->cap_mem[g];
    }
    n->best_free_milli = best;
    n->free_whole = whole;
    node_index(e, n, 1);
    n->view.cpu_free = n->cpu_free;
    n->view.mem_free = n->mem_free;
    gp__placer_node_changed(e->placer, &n->view);
    gp__frag_dirty(e, n->id);
}

void gp__node_charge(gp_engine *e, gp__node *n, const gp_slice *s, uint64_t owner, int sign) {
    (void)e;
    int32_t g = s->gpu;
    if (sign > 0 && n->withheld[g]) {
        /* A restored or put-back task on a withheld GPU: the GPU is its
         * again, and gp__node_refresh withholds another. */
        n->withheld[g] = 0;
        n->free_milli[g] = GP_MILLI;
        n->free_mem[g] = n->cap_mem[g];
    }
    n->nslices[g] += sign;
    if (s->mig_slot >= 0) {
        n->mig_owner[g][s->mig_slot] = sign > 0 ? owner : 0;
        return;
    }
    n->free_milli[g] -= sign * s->milli;
    n->free_mem[g] -= sign * s->mem;
}

void gp__node_cpu(gp_engine *e, gp__node *n, int64_t cpu, int64_t mem, int sign) {
    (void)e;
    n->cpu_free -= sign * cpu;
    n->mem_free -= sign * mem;
}

/* Whether node n may take tasks of w at all: schedulable and its labels
 * match every selector of the request. */
int gp__node_matches(const gp__node *n, const gp__wl *w) {
    if (!n || !n->alive || !n->spec.schedulable)
        return 0;
    return gp__node_matches_labels(n, w);
}

int gp__node_matches_labels(const gp__node *n, const gp__wl *w) {
    for (int32_t i = 0; i < w->spec.req.nselectors; i++) {
        const gp_label *sel = &w->spec.req.selectors[i];
        int found = 0;
        for (int32_t k = 0; k < n->spec.nlabels && !found; k++)
            found = strcmp(n->spec.labels[k].key, sel->key) == 0 &&
                    strcmp(n->spec.labels[k].value, sel->value) == 0;
        if (!found)
            return 0;
    }
    return 1;
}

/* ---- Reading nodes ---- */

static void fill_info(const gp_engine *e, const gp__node *n, gp_node_info *out) {
    memset(out, 0, sizeof *out);
    out->name = n->spec.name;
    out->domain = n->spec.domain;
    out->schedulable = n->spec.schedulable;
    out->cpu_milli = n->spec.cpu_milli;
    out->mem_bytes = n->spec.mem_bytes;
    out->cpu_used = n->spec.cpu_milli - n->cpu_free;
    out->mem_used = n->spec.mem_bytes - n->mem_free;
    out->ngpus = n->spec.ngpus;
    out->gpus_taken = n->spec.gpus_taken;
    out->taken_bound = n->taken_short;
    out->paused = n->npaused;
    out->paused_mem = n->paused_mem + n->paused_outside;
    for (int32_t g = 0; g < n->spec.ngpus; g++) {
        const gp_gpu_spec *gs = &n->spec.gpus[g];
        gp_gpu_info *gi = &out->gpus[g];
        gi->uuid = gs->uuid;
        gi->model = gs->model;
        gi->mem_bytes = gs->mem_bytes;
        gi->mig = gs->mig;
        gi->slices = n->nslices[g];
        gi->taken = n->withheld[g];
        if (gi->taken)
            continue;
        if (gs->mig) {
            for (int32_t k = 0; k < gs->nmig; k++) {
                if (n->mig_owner[g][k]) {
                    int p = gp__mig_profile_find(gs->mig_layout[k]);
                    gi->used_milli += gp__mig_milli(p);
                    gi->used_mem += gp__mig_mem(p);
                }
            }
        } else {
            gi->used_milli = GP_MILLI - n->free_milli[g];
            gi->used_mem = n->cap_mem[g] - n->free_mem[g];
        }
    }
    (void)e;
}

size_t gp_engine_node_count(const gp_engine *e) {
    return e->live_nodes;
}

int gp_engine_node_at(const gp_engine *e, size_t i, gp_node_info *out) {
    if (e->nfree_ids == 0) { /* no holes: direct */
        if (i >= e->nnodes)
            return GP_ENOENT;
        fill_info(e, e->nodes[i], out);
        return 0;
    }
    for (uint32_t k = 0; k < e->nnodes; k++) {
        if (!e->nodes[k])
            continue;
        if (i-- == 0) {
            fill_info(e, e->nodes[k], out);
            return 0;
        }
    }
    return GP_ENOENT;
}

int gp_engine_node_get(const gp_engine *e, const char *name, gp_node_info *out) {
    const gp__node *n = name ? gp__strmap_get(&e->node_by_name, name) : NULL;
    if (!n)
        return GP_ENOENT;
    fill_info(e, n, out);
    return 0;
}
