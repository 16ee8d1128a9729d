/*
 * internal.h — the engine's own data structures, shared by its files and by
 * nothing outside src/engine.
 *
 * The engine keeps indexed state between cycles:
 * - nodes live in a dense array (ids reused through a free list), each with
 *   the per-GPU free capacity arrays that placement views point into, and an
 *   index of the tasks bound to it (for victim search);
 * - queues form a tree; every queue keeps the sums of what its subtree holds
 *   and asks for, updated on every bind and unbind, so fair share and quota
 *   checks never walk workloads;
 * - leaf queues keep their pending workloads in an array (order is computed
 *   once per cycle);
 * - workloads are found by id through a hash map.
 * Every change of a node's free capacity goes through node_charge() so the
 * placer's caches stay current.
 */
#ifndef GP_ENGINE_INTERNAL_H
#define GP_ENGINE_INTERNAL_H

#include <stdint.h>

#include "engine/gp_engine.h"
#include "engine/alloc.h"
#include "engine/map.h"
#include "engine/placement.h"

#define GP__MAX_MODELS 64 /* interned GPU models (bit masks are 64 wide) */

typedef struct gp__queue gp__queue;

/* A list of nodes linked through the nodes themselves (gp__node.link), so
 * that moving a node between lists never allocates and cannot fail. Ends are
 * node id + 1 (0: empty). It keeps the order an array with swap-removal
 * would: append at the end, and the last node takes a removed one's place. */
typedef struct gp__idlist {
    uint32_t first, last;
} gp__idlist;
typedef struct gp__wl gp__wl;

/* Where one task of a workload sits: its index in its node's task list. */
typedef struct gp__task {
    gp_task_binding b; /* b.node points at the node's name */
    uint32_t node;     /* node id */
    uint32_t node_pos; /* position in the node's tasks[] */
} gp__task;

/* An entry of a node's task index. */
typedef struct gp__tref {
    gp__wl *wl;
    int32_t task;
} gp__tref;

typedef struct gp__node {
    uint32_t id;
    int alive;
    gp_node_spec spec;
    int32_t domain; /* interned domain id */
    int64_t cpu_free, mem_free;
    int32_t free_milli[GP_MAX_GPUS_PER_NODE];
    int64_t free_mem[GP_MAX_GPUS_PER_NODE];
    int64_t cap_mem[GP_MAX_GPUS_PER_NODE];
    int32_t gpu_model[GP_MAX_GPUS_PER_NODE];
    int32_t nslices[GP_MAX_GPUS_PER_NODE];
    /* 1: withheld for spec.gpus_taken: no slices, free 0 (gp__node_refresh) */
    int32_t withheld[GP_MAX_GPUS_PER_NODE];
    int32_t taken_short; /* gpus_taken not withheld: those GPUs are bound */
    uint64_t mig_owner[GP_MAX_GPUS_PER_NODE][GP_MAX_MIG_SLOTS]; /* workload id or 0 */
    /* Pause (pause.c): workloads paused here or being paused, the host
     * memory they will hold paused (held against spec.paused_mem_max), and
     * of it what the node's books charge beyond bound tasks (held_mem). */
    int32_t npaused;
    int64_t paused_mem, held_mem;
    /* Held by tasks paused outside the engine (gp_engine_node_paused_outside):
     * against spec.paused_mem_max with paused_mem, and charged to mem_free. */
    int64_t paused_outside;
    gp__pnode view;            /* points into the arrays above */
    int32_t best_free_milli;   /* largest free_milli of a non-MIG GPU */
    int32_t free_whole;        /* fully free non-MIG GPUs */
    int32_t in_whole, in_frac; /* the capacity buckets it is in, or -1 */
    uint32_t link[2][2];       /* [whole, frac][prev, next] in them: id + 1, 0 at the ends */
    gp__tref *tasks;
    uint32_t ntasks, cap_tasks;
} gp__node;

struct gp__queue {
    const gp_allocator *mem; /* the engine's allocator, for the lists below */
    gp_queue_spec spec;
    gp__queue *parent;
    gp__queue **children;
    uint32_t nchildren, cap_children;
    int32_t depth;
    uint32_t order; /* position in pre-order */
    /* Effective quotas: an unset (0) deserved of a parent is the sum of its
     * children's deserved. */
    int64_t deserved[GP_RES_COUNT];
    int32_t model_id[GP_MAX_MODEL_QUOTAS];
    /* Books, for the subtree. */
    gp_res alloc;                        /* held by bound, running and evicting work */
    gp_res alloc_np;                     /* ... of it, by non-preemptible work */
    gp_res demand;                       /* asked for by pending work */
    int64_t leaving;                     /* milli-GPU held by EVICTING work */
    int64_t arriving;                    /* milli-GPU promised to work its victims make room for */
    int64_t model_alloc[GP__MAX_MODELS]; /* milli-GPU held, per model */
    int64_t npending, nrunning;
    gp_res fair;                /* fair share, as of the last cycle */
    gp_res guaranteed;          /* of it, the deserved part (after scaling) */
    gp_res want;                /* what the subtree can use: asks, capped by limits */
    double usage[GP_RES_COUNT]; /* decayed usage (time-based fair share) */
    int32_t overcommitted;
    /* Leaves: pending workloads, unordered between cycles; and the workloads
     * that hold resources (BOUND, RUNNING, EVICTING), for victim search. */
    gp__wl **pending;
    uint32_t npend, cap_pend;
    gp__wl **holding;
    uint32_t nhold, cap_hold;
    /* Per cycle: the range of e->order still to consider (leaves), and how
     * many children still have candidates (parents). */
    uint32_t cursor, end;
    uint32_t active;
};

/*
 * What the engine keeps of a workload's spec: the public struct less the
 * fixed arrays it does not need after submission (names, allowed models,
 * which become a bit mask), so that hundreds of thousands of workloads stay
 * small. The kept scalars are the two lists below, one X(type, name) row a
 * field named as in gp_task_req and gp_workload_spec: they are the one source
 * of both the members and keep_spec()'s copy (workload.c), which also checks
 * that each row's type is the public field's. A field kept is added there
 * only. The rows are ordered wider types first, which packs the structs
 * tightest.
 */
#define GP__TREQ_KEPT(X)                                                                           \
    X(int64_t, gpu_mem)                                                                            \
    X(int64_t, cpu_milli)                                                                          \
    X(int64_t, mem_bytes)                                                                          \
    X(gp_gpu_request, gpu)                                                                         \
    X(int32_t, gpus)                                                                               \
    X(int32_t, gpu_milli)                                                                          \
    X(int32_t, nmodels)                                                                            \
    X(int32_t, nselectors)

#define GP__WSPEC_KEPT(X)                                                                          \
    X(uint64_t, id)                                                                                \
    X(gp_time_ms, min_runtime)                                                                     \
    X(gp_time_ms, submitted)                                                                       \
    X(gp_kind, kind)                                                                               \
    X(int32_t, priority)                                                                           \
    X(int32_t, preemptible)                                                                        \
    X(int32_t, tasks)                                                                              \
    X(int32_t, min_tasks)                                                                          \
    X(int32_t, same_domain)                                                                        \
    X(gp_on_preempt, on_preempt)

#define GP__KEPT_MEMBER(type, name) type name;

typedef struct gp__treq {
    GP__TREQ_KEPT(GP__KEPT_MEMBER)
    char mig_profile[16];
    gp_label *selectors; /* [nselectors], owned; NULL if none */
} gp__treq;

typedef struct gp__wspec {
    GP__WSPEC_KEPT(GP__KEPT_MEMBER)
    gp__treq req;
} gp__wspec;

/* Why a pending workload waits, with the details its sentence names. A
 * workload failing for the same request as another takes the other's whole
 * reason. */
typedef struct gp__reason {
    gp_wait why;
    int64_t a, b;
    const gp__queue *queue; /* the queue the reason names (an ancestor) */
    int64_t node;           /* the node id the reason names, or -1 */
    /* Placement failed and the reason is not worked out yet: diagnosis costs
     * a pass over the nodes, so it waits until someone asks. */
    uint8_t undiagnosed;
    uint64_t diag_models;
} gp__reason;

struct gp__wl {
    gp__wspec spec;
    gp__queue *queue;
    gp__preq preq;       /* one task's request, in placement terms */
    int32_t mig_profile; /* index in the MIG profile table, or -1 */
    int32_t preemptible; /* resolved from the kind when GP_DEFAULT */
    gp_state state;
    gp_res per_task; /* quota estimate for one pending task */
    gp_res charged;  /* quota charged for the current binding */
    int32_t nbound;
    gp__task *tasks;    /* [spec.tasks] when bound */
    gp_time_ms started; /* -1 unless RUNNING */
    int32_t evictions;
    int32_t victims_left; /* EVICTING victims still holding room for it */
    int64_t promised;     /* milli-GPU its queue counts as arriving */
    uint64_t beneficiary; /* while EVICTING: for whom */
    gp_evict_reason evict_reason;
    uint32_t pend_pos; /* position in queue->pending while PENDING */
    uint32_t hold_pos; /* position in queue->holding otherwise */
    gp__reason wait;   /* while PENDING */
    uint64_t sig;      /* request signature (for the failure memo) */
    /* Pause (pause.c): the node (id + 1; 0: none) it is paused on (PENDING)
     * or being paused on (EVICTING in pause mode), the GPU model it resumes
     * on (-1: any, for a task without GPUs), and the host memory it holds
     * paused. resume: BOUND by resuming, for the decision. resume_after:
     * paused, it is not resumed before then (the caller's backoff after a
     * resume that failed; 0: at once). */
    uint32_t paused_on;
    int32_t paused_model;
    int64_t pause_mem;
    uint8_t resume;
    gp_time_ms resume_after;
    uint64_t mark; /* scratch stamp for de-duplicating victims */
    uint64_t elig; /* stamp of the last search that found it eligible */
};

struct gp_engine {
    gp_engine_config cfg;
    gp_allocator alloc; /* cfg.alloc's copy, or the C library's */
    gp__placer *placer;
    gp_time_ms now;

    gp__node **nodes;
    uint32_t nnodes, cap_nodes; /* array size (including dead slots) */
    uint32_t live_nodes;
    uint32_t *free_ids;
    uint32_t nfree_ids, cap_free_ids;
    gp__strmap node_by_name;
    gp_res capacity; /* of schedulable nodes */
    /* Capacity buckets, so that placement looks only at nodes that could
     * take a request: node ids by fully free GPUs, and by largest free slice. */
    gp__idlist by_whole[GP_MAX_GPUS_PER_NODE + 1];
    gp__idlist by_frac[GP_MILLI + 1];
    /* Pool-wide maxima for request validation, kept as nodes come and go:
     * each with the number of nodes that reach it, so that only the last of
     * those leaving makes node.c look at every node again. */
    int64_t max_gpu_mem; /* largest GPU memory in the pool */
    int32_t max_gpus;    /* most non-MIG GPUs on one node */
    uint32_t nat_max_gpu_mem, nat_max_gpus;
    int maxima_stale; /* the last node at a maximum left: recount */

    char models[GP__MAX_MODELS][GP_NAME_MAX + 1];
    int32_t nmodels;
    char **domains;
    int32_t ndomains, cap_domains;

    gp__queue **queues; /* pre-order, refreshed when tree_dirty */
    uint32_t nqueues, cap_queues;
    gp__queue **roots;
    uint32_t nroots, cap_roots;
    gp__strmap queue_by_name;
    int tree_dirty;

    gp__u64map wl_by_id;
    int64_t nworkloads;

    gp_decision *dec;
    uint32_t ndec, cap_dec;
    gp_task_binding *bindbuf; /* the BIND decisions' tasks, this cycle */
    uint32_t nbind, cap_bind;
    gp__u64map memo;       /* request signature -> first failure, this cycle */
    gp__u64map evict_memo; /* searches that found no victims, this cycle */
    gp__wl **order;        /* pending workloads in cycle order, per leaf */
    uint32_t norder, cap_order;
    uint64_t *gone; /* workloads that lost a node, to report */
    uint32_t ngone, cap_gone;

    char **warnings;
    size_t nwarnings, cap_warnings;

    /* Fragmentation, kept per node and summed, recomputed only for nodes
     * whose free capacity changed since it was last asked for. */
    double *frag, *idle; /* per node id */
    uint8_t *frag_dirty; /* per node id */
    uint32_t *dirty_ids;
    uint32_t ndirty, frag_cap; /* dirty_ids and the arrays hold frag_cap */
    double frag_total, idle_total;
    int frag_all; /* everything must be recomputed */

    int shapes_explicit;   /* set_shapes() called: stop learning */
    gp__u64map shape_hist; /* learned: signature -> count */
    int64_t shape_seen;
    int64_t shapes_at; /* shape_seen at the last refresh */

    gp_time_ms usage_at;   /* last decay of usage */
    uint64_t stamp;        /* for gp__wl.mark and .elig */
    uint32_t evict_cursor; /* where eviction searches start */
};

/* ---- engine.c ---- */
int gp__model_intern(gp_engine *e, const char *model);
int gp__model_find(const gp_engine *e, const char *model);
int gp__domain_intern(gp_engine *e, const char *domain);
int gp__reserve(const gp_allocator *a, void **arr, uint32_t need, uint32_t *cap, size_t size);
int gp__push(const gp_allocator *a, void **arr, uint32_t *n, uint32_t *cap, size_t size,
             const void *item);
/* The rules every spec's fields follow (nodes, queues, workloads). Each
 * function is true for a field that breaks its rule, and then fills err with
 * "<field>: ..." saying the rule; gp__too_long and gp__bad_name fill nothing
 * if field is NULL, for a caller that words its own. A name field holds 1 to
 * GP_NAME_MAX characters and its NUL: gp__bad_name is true for one that is
 * empty or fills its size bytes with no NUL, gp__too_long for one with no NUL
 * (an optional name). A label (a node's, or a request's node selector) has a
 * name for its key and an optional name for its value: gp__bad_labels is true
 * if one of l[0..n) breaks that, naming "<field>[i].key" or "<field>[i].value". */
int gp__too_long(const char *s, size_t size, const char *field, char *err, size_t errlen);
int gp__bad_name(const char *s, size_t size, const char *field, char *err, size_t errlen);
int gp__bad_labels(const gp_label *l, int32_t n, const char *field, char *err, size_t errlen);
int gp__negative(int64_t v, const char *field, char *err, size_t errlen);
int gp__not_count(int32_t v, int32_t max, const char *field, char *err, size_t errlen);
/* True for a value its named enum has no name for, with err
 * "<field>: must be A, B or C" naming every value from the enum's list. */
int gp__bad_kind(gp_kind v, const char *field, char *err, size_t errlen);
int gp__bad_on_preempt(gp_on_preempt v, const char *field, char *err, size_t errlen);

/* ---- node.c ---- */
/* Charges (sign +1) or refunds (sign -1) slice s on node n, keeping the
 * node's summary fields and the placer's caches current. */
void gp__node_charge(gp_engine *e, gp__node *n, const gp_slice *s, uint64_t owner, int sign);
void gp__node_cpu(gp_engine *e, gp__node *n, int64_t cpu, int64_t mem, int sign);
void gp__node_refresh(gp_engine *e, gp__node *n);
int gp__node_matches(const gp__node *n, const gp__wl *w);
/* Whether n carries every label w's node selectors ask for. */
int gp__node_matches_labels(const gp__node *n, const gp__wl *w);
static inline gp__node *gp__node_at(const gp_engine *e, uint32_t id) {
    return e->nodes[id];
}

/* ---- queue.c ---- */
gp__queue *gp__queue_find(const gp_engine *e, const char *name);
void gp__queue_tree_refresh(gp_engine *e);
void gp__queue_account(gp__queue *q, const gp_res *r, const gp_res *np, int sign);
void gp__queue_demand(gp__queue *q, const gp_res *r, int sign);
void gp__queue_model(gp__queue *q, int32_t model, int64_t milli, int sign);
void gp__queue_pending_add(gp__queue *q, gp__wl *w);
void gp__queue_pending_del(gp__queue *q, gp__wl *w);
int gp__queue_reserve(gp__queue *q);
/* The holding list; gp__queue_hold_add fails only with GP_ENOMEM. */
int gp__queue_hold_add(gp__queue *q, gp__wl *w);
void gp__queue_hold_del(gp__queue *q, gp__wl *w);
/* Whether the subtree of q, plus add, stays within every limit up to the
 * root; on failure *at is the queue and *res the resource at its limit. */
int gp__queue_fits_limits(const gp__queue *q, const gp_res *add, const gp__queue **at,
                          gp_resource *res);

/* ---- fairshare.c ---- */
void gp__fairshare(gp_engine *e);

/* ---- workload.c ---- */
gp__wl *gp__wl_find(const gp_engine *e, uint64_t id);
/* Frees a workload the engine no longer references. */
void gp__wl_dispose(gp_engine *e, gp__wl *w);
/* Binds task t of w to slices on node (already checked to fit); GP_ENOMEM
 * changes nothing. */
int gp__wl_bind_task(gp_engine *e, gp__wl *w, int32_t t, uint32_t node, const gp_slice *slices,
                     int32_t nslices);
/* Takes every bound task of w off its node and refunds its queue. */
void gp__wl_unbind(gp_engine *e, gp__wl *w);
void gp__wl_set_state(gp_engine *e, gp__wl *w, gp_state s);
/* w lost its tasks (node removed): unbind, back to PENDING, reported as an
 * EVICT with reason GP_EVICT_NODE_GONE in the next cycle. */
void gp__wl_lost(gp_engine *e, gp__wl *w);
/* Unbinds w (BOUND, RUNNING or EVICTING) and puts it back in its queue's
 * pending list; GP_ENOMEM changes nothing. */
int gp__wl_back_to_pending(gp_engine *e, gp__wl *w);
int gp__mig_profile_find(const char *name);
int32_t gp__mig_milli(int profile);
int64_t gp__mig_mem(int profile);

/* Starts or ends an eviction's books: a victim entering or leaving EVICTING,
 * a beneficiary promised room or no longer waiting for it. */
void gp__wl_leaving(gp__wl *v, int sign);
void gp__wl_promise(gp__wl *w, int64_t milli);

/* ---- place.c ---- */
/* Tries to place every task of w (at least min_tasks) on current free
 * capacity; on success binds them and returns the count, else leaves
 * everything as it was and returns 0 (and sets w's wait reason). */
int gp__place(gp_engine *e, gp__wl *w, uint64_t models, int commit);
uint64_t gp__allowed_models(const gp_engine *e, const gp__wl *w);
int gp__fits_on(gp_engine *e, const gp__wl *w, uint64_t models, gp__node *n);
/* Binds the first task of an unbound w on node n if it fits; 1 if bound. */
int gp__place_on(gp_engine *e, gp__wl *w, uint64_t models, gp__node *n);
/* Whether n, were it empty, could hold one task of w. */
int gp__could_fit_empty(const gp__node *n, const gp__wl *w, uint64_t models);
/* How many tasks of w the pool could hold at once with every node empty
 * (in one domain if w asks for that), counting cordoned nodes if cordoned,
 * or any figure >= enough once that many are found: fewer than min_tasks
 * means w can never run on this pool. */
int64_t gp__pool_could_hold(const gp_engine *e, const gp__wl *w, uint64_t models, int cordoned,
                            int64_t enough);
/* Works out w's deferred reason, if any, on the current state. */
void gp__wl_diagnosed(gp_engine *e, gp__wl *w);
/* Sets a reason that needs no diagnosis. */
static inline void gp__wait_set(gp__wl *w, gp_wait why) {
    w->wait.why = why;
    w->wait.undiagnosed = 0;
}

/* ---- cycle.c / evict.c ---- */
/* A signature of everything that decides whether w fits: equal signatures
 * fit or fail together within one allocation phase. */
uint64_t gp__signature(const gp__wl *w, uint64_t models);
/* The quota checks before placement, on the books as they stand: limits at
 * every level, then deserved quota for non-preemptible work. Returns
 * GP_WAIT_NONE, or the reason with *at the queue and *res the resource. */
int gp__quota_check(const gp__wl *w, const gp__queue **at, int *res);
int gp__decision_evict(gp_engine *e, gp__wl *victim, gp_evict_reason why, uint64_t for_wl);
/* Consolidate, reclaim, then preempt for workloads that allocation could not
 * place, in the order they were considered. */
void gp__evict_phase(gp_engine *e, gp__wl **failed, uint32_t nfailed);

/* ---- pause.c ---- */
/* The mode victim v is evicted in for why, and why it is not its own; a
 * pause mode reserves the node's host memory for it (gp__pause_drop gives it
 * back if the eviction ends otherwise). */
gp_on_preempt gp__pause_mode(gp_engine *e, gp__wl *v, gp_evict_reason why, gp_mode_why *mw);
/* Ends w's pause, or its pause under way, on the node's books (released,
 * cancelled, resumed, node gone). */
void gp__pause_drop(gp_engine *e, gp__wl *w);
/* Tries to resume paused w on its node now (quota already checked): 1 if
 * bound there (w->resume set), else 0 with w waiting GP_WAIT_PAUSED. */
int gp__pause_try_resume(gp_engine *e, gp__wl *w, uint64_t models);
/* Node n is going away: its paused workloads are reported lost (room in
 * e->gone reserved by the caller for n->npaused more) and pause no more. */
void gp__pause_node_gone(gp_engine *e, gp__node *n);

/* ---- reason.c ---- */
/* "2 GPUs", "0.5 GPU", "3 CPUs", "64.0 GiB of memory": an amount of
 * resource r for people. */
void gp__fmt_amount(char *buf, size_t len, int r, int64_t v);

/* ---- shapes.c ---- */
void gp__shapes_learn(gp_engine *e, const gp__wl *w);
void gp__shapes_refresh(gp_engine *e);
/* Node id changed (capacity, free capacity, schedulability) or went away:
 * its fragmentation must be recomputed when next asked for. */
void gp__frag_dirty(gp_engine *e, uint32_t id);

#endif /* GP_ENGINE_INTERNAL_H */
