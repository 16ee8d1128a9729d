/*
 * shapes.c — the typical request shapes that fragmentation-aware placement
 * measures the pool against, and the fragmentation figure itself.
 *
 * A caller that knows its workload (the simulator replaying a trace) sets the
 * shapes with gp_engine_set_shapes(). Otherwise the engine learns them: it
 * counts every submitted request's shape, and hands the placer the most
 * popular shapes that together make up 95% of submissions (the FGD paper's
 * "typical pods"), refreshed whenever submissions have grown by a tenth.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

typedef struct learned {
    gp__pshape shape;
    int64_t count;
} learned;

static uint64_t shape_key(const gp__preq *r) {
    uint64_t h = UINT64_C(1469598103934665603);
    const uint64_t parts[] = {(uint64_t)r->ngpus, (uint64_t)r->milli, (uint64_t)r->gpu_mem,
                              (uint64_t)r->cpu,   (uint64_t)r->mem,   r->models};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        h ^= parts[i];
        h *= UINT64_C(1099511628211);
        h ^= h >> 29;
    }
    return h ? h : 1;
}

void gp__shapes_learn(gp_engine *e, const gp__wl *w) {
    if (e->shapes_explicit || w->mig_profile >= 0 || w->spec.req.gpu == GP_GPU_NONE)
        return;
    uint64_t key = shape_key(&w->preq);
    learned *l = gp__u64map_get(&e->shape_hist, key);
    if (!l) {
        l = gp__calloc(&e->alloc, 1, sizeof *l);
        if (!l || gp__u64map_put(&e->shape_hist, key, l) != 0) {
            gp__free(&e->alloc, l);
            return; /* learning is best effort */
        }
        l->shape.req = w->preq;
    }
    l->count += w->spec.tasks;
    e->shape_seen += w->spec.tasks;
}

static int by_count(const void *a, const void *b) {
    const learned *x = *(learned *const *)a, *y = *(learned *const *)b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return memcmp(&x->shape.req, &y->shape.req, sizeof x->shape.req);
}

void gp__shapes_refresh(gp_engine *e) {
    if (e->shapes_explicit || e->shape_seen == 0 || e->shape_seen * 10 < e->shapes_at * 11)
        return;
    size_t n = 0;
    learned **all = gp__malloc(&e->alloc, e->shape_hist.n * sizeof *all);
    gp__pshape *out = gp__malloc(&e->alloc, e->shape_hist.n * sizeof *out);
    if (!all || !out)
        goto done;
    for (size_t i = 0; i < e->shape_hist.cap; i++)
        if (e->shape_hist.vals[i])
            all[n++] = e->shape_hist.vals[i];
    if (n > 1)
        qsort(all, n, sizeof *all, by_count);
    int64_t covered = 0;
    size_t k = 0;
    while (k < n && covered * 100 < e->shape_seen * 95)
        covered += all[k++]->count;
    for (size_t i = 0; i < k; i++) {
        out[i] = all[i]->shape;
        out[i].popularity = (double)all[i]->count / (double)covered;
    }
    if (gp__placer_set_shapes(e->placer, out, k) == 0) {
        e->shapes_at = e->shape_seen;
        e->frag_all = 1;
    }
done:
    gp__free(&e->alloc, all);
    gp__free(&e->alloc, out);
}

/* Whether shape s is out of range, its models' names included. */
static int bad_shape(const gp_shape *s) {
    if (s->popularity <= 0 || s->gpus < 0 || s->gpu_milli < 0 || s->gpu_milli > GP_MILLI ||
        s->cpu_milli < 0 || s->mem_bytes < 0 || s->nmodels < 0 || s->nmodels > GP_MAX_MODELS)
        return 1;
    for (int32_t k = 0; k < s->nmodels; k++)
        if (gp__bad_name(s->models[k], sizeof s->models[k], NULL, NULL, 0))
            return 1;
    return 0;
}

/* The models shapes[0..n) allow that the engine has not interned, each once,
 * in the order the shapes name them: *nfresh of them in fresh[]. GP_ELIMIT
 * if the engine has no room for them all. */
static int fresh_models(const gp_engine *e, const gp_shape *shapes, size_t n,
                        const char *fresh[GP__MAX_MODELS], int32_t *nfresh) {
    *nfresh = 0;
    for (size_t i = 0; i < n; i++)
        for (int32_t k = 0; k < shapes[i].nmodels; k++) {
            const char *m = shapes[i].models[k];
            int32_t f = 0;
            while (f < *nfresh && strcmp(fresh[f], m) != 0)
                f++;
            if (f < *nfresh || gp__model_find(e, m) >= 0)
                continue;
            if (e->nmodels + *nfresh >= GP__MAX_MODELS)
                return GP_ELIMIT;
            fresh[(*nfresh)++] = m;
        }
    return 0;
}

/* The id model has, or will have once fresh[0..nfresh) are interned. */
static int model_id(const gp_engine *e, const char *model, const char *const *fresh,
                    int32_t nfresh) {
    int id = gp__model_find(e, model);
    for (int32_t f = 0; id < 0 && f < nfresh; f++)
        if (strcmp(fresh[f], model) == 0)
            id = e->nmodels + f;
    return id;
}

int gp_engine_set_shapes(gp_engine *e, const gp_shape *shapes, size_t n) {
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        if (bad_shape(&shapes[i]))
            return GP_EINVAL;
        total += shapes[i].popularity;
    }
    /* Models are interned only once the shapes are in place, so that an
     * error leaves the engine as it was. */
    const char *fresh[GP__MAX_MODELS];
    int32_t nfresh;
    int rc = fresh_models(e, shapes, n, fresh, &nfresh);
    if (rc != 0)
        return rc;
    gp__pshape *out = gp__malloc(&e->alloc, (n ? n : 1) * sizeof *out);
    if (!out)
        return GP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        gp__pshape *p = &out[i];
        memset(p, 0, sizeof *p);
        p->req.ngpus = shapes[i].gpus;
        p->req.milli = shapes[i].gpus > 0 ? 0 : shapes[i].gpu_milli;
        p->req.cpu = shapes[i].cpu_milli;
        p->req.mem = shapes[i].mem_bytes;
        for (int32_t k = 0; k < shapes[i].nmodels; k++)
            p->req.models |= UINT64_C(1) << model_id(e, shapes[i].models[k], fresh, nfresh);
        p->popularity = shapes[i].popularity / total;
    }
    rc = gp__placer_set_shapes(e->placer, out, n);
    gp__free(&e->alloc, out);
    if (rc != 0)
        return rc;
    for (int32_t f = 0; f < nfresh; f++)
        gp__model_intern(e, fresh[f]); /* room checked above: gets the id used */
    e->shapes_explicit = 1;
    e->frag_all = 1;
    return 0;
}

void gp__frag_dirty(gp_engine *e, uint32_t id) {
    if (e->frag_all)
        return;
    if (id >= e->frag_cap) { /* a node added since: recompute everything */
        e->frag_all = 1;
        return;
    }
    if (!e->frag_dirty[id]) { /* each id once: frag_cap entries suffice */
        e->frag_dirty[id] = 1;
        e->dirty_ids[e->ndirty++] = id;
    }
}

/* Recomputes node id's figures and moves the totals by the difference. */
static void frag_node(gp_engine *e, uint32_t id) {
    double f = 0, idle = 0;
    gp__node *n = id < e->nnodes ? e->nodes[id] : NULL;
    if (n && n->spec.schedulable) {
        f = gp__placer_node_frag(e->placer, &n->view);
        for (int32_t g = 0; g < n->spec.ngpus; g++)
            idle += n->spec.gpus[g].mig ? 0 : n->free_milli[g];
    }
    e->frag_total += f - e->frag[id];
    e->idle_total += idle - e->idle[id];
    e->frag[id] = f;
    e->idle[id] = idle;
    e->frag_dirty[id] = 0;
}

double gp_engine_fragmentation(gp_engine *e, double *idle_milli) {
    if (e->frag_all || e->frag_cap < e->nnodes) {
        uint32_t cap = e->nnodes ? e->nnodes : 1;
        double *f = gp__calloc(&e->alloc, cap, sizeof *f),
               *idle = gp__calloc(&e->alloc, cap, sizeof *idle);
        uint8_t *dirty = gp__calloc(&e->alloc, cap, 1);
        uint32_t *ids = gp__calloc(&e->alloc, cap, sizeof *ids);
        if (f && idle && dirty && ids) {
            gp__free(&e->alloc, e->frag);
            gp__free(&e->alloc, e->idle);
            gp__free(&e->alloc, e->frag_dirty);
            gp__free(&e->alloc, e->dirty_ids);
            e->frag = f;
            e->idle = idle;
            e->frag_dirty = dirty;
            e->dirty_ids = ids;
            e->frag_cap = cap;
            e->frag_total = e->idle_total = 0;
            e->ndirty = 0;
            e->frag_all = 0;
            for (uint32_t i = 0; i < cap; i++)
                frag_node(e, i);
        } else {
            gp__free(&e->alloc, f);
            gp__free(&e->alloc, idle);
            gp__free(&e->alloc, dirty);
            gp__free(&e->alloc, ids);
            return -1.0;
        }
    } else {
        for (uint32_t i = 0; i < e->ndirty; i++)
            frag_node(e, e->dirty_ids[i]);
        e->ndirty = 0;
    }
    if (idle_milli)
        *idle_milli = e->idle_total;
    return e->frag_total;
}
