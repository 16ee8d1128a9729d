/*
 * gp_engine.h — the public API of libgpupool, gpupool's scheduling engine.
 *
 * The engine is a pure library: no I/O, no threads, no clock and no globals.
 * Callers (the daemon, the simulator) feed it events — nodes, queues,
 * workloads, task starts and ends, the passing of time — and ask it to run a
 * scheduling cycle, which returns decisions (bind a workload's tasks to GPU
 * slices, evict a workload) and leaves a pending reason on every workload that
 * still waits. The engine keeps indexed state between cycles, so a cycle works
 * on what changed and on what waits, not on a rebuilt copy of the world.
 *
 * Units are exact integers: milli-GPU (GP_MILLI is one whole GPU), milli-CPU,
 * bytes, and milliseconds of the caller's clock (virtual time in the
 * simulator, wall time in the daemon). Quota arithmetic never uses floating
 * point; only placement scores do.
 *
 * Lifecycle of a workload inside the engine:
 *
 *     submit ──► PENDING ──cycle: BIND──► BOUND ──started()──► RUNNING
 *                   ▲                        │                    │
 *                   │                        └──── cycle: EVICT ──┤
 *                   │                                             ▼
 *                   └────────────── released() ───────────── EVICTING
 *
 *     cancel() removes a workload from any state, finished() one whose
 *     tasks ended; requeue() sends a workload whose tasks were lost back to
 *     PENDING. A paused workload (PENDING, its task frozen on its node) has
 *     a task that can end too: finished() or requeue() drops the pause.
 *
 * An evicted workload keeps its GPUs until the caller reports, with
 * gp_engine_released(), that its tasks have stopped (after the checkpoint
 * signal and grace period); the engine never counts the same GPU twice.
 *
 * All strings passed in are copied. Pointers handed out (decisions, names)
 * stay valid until the next call that changes the engine, unless said
 * otherwise. Functions return 0 or a negative GP_E* code; where a caller can
 * pass an err buffer, a failure also writes a sentence naming the bad field.
 * On error, nothing is changed.
 */
#ifndef GP_ENGINE_H
#define GP_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "common/gp_error.h"
#include "common/gp_names.h"
#include "common/gp_queue.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Units and limits                                                          */
/* ------------------------------------------------------------------------ */

#define GP_MILLI                     1000      /* one whole GPU, in milli-GPU */
#define GP_UNLIMITED                 INT64_MAX /* a limit that is not set */
#define GP_MAX_GPUS_PER_NODE         16
#define GP_MAX_MIG_SLOTS             7   /* MIG instances on one GPU */
#define GP_MAX_LABELS                16  /* labels on a node */
#define GP_MAX_SELECTORS             8   /* node selector terms of a request */
#define GP_MAX_MODELS                8   /* allowed GPU models of a request */
#define GP_MAX_MODEL_QUOTAS          8   /* per-GPU-model quotas of a queue */
#define GP_ERR_MAX                   256 /* a good size for err buffers */
#define GP_MIN_RUNTIME_MAX_DEFAULT   (GP_QUEUE_MIN_RUNTIME_MAX_DEFAULT_M * 60000)   /* in ms */
#define GP_RECLAIM_GRACE_MAX_DEFAULT (GP_QUEUE_RECLAIM_GRACE_MAX_DEFAULT_M * 60000) /* in ms */

typedef int64_t gp_time_ms; /* the caller's clock, in milliseconds */

typedef struct gp_engine gp_engine;

/* The resources that quotas are kept in: GP_RESOURCES (common/gp_queue.h). */
GP_NAMED_ENUM_DECLARE(gp_resource, GP_RESOURCES, GP_RES_COUNT);

typedef struct gp_res {
    int64_t v[GP_RES_COUNT];
} gp_res;

/* ------------------------------------------------------------------------ */
/* Engine                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Placement policies. For whole-GPU and fractional requests alike the engine
 * asks the policy to choose the GPUs on each feasible node and to score the
 * node; the best score wins. The FGD paper's policies and gpupool's break
 * ties by an order of the nodes drawn once from the seed (the same seed, the
 * same order); bin-pack and spread give ties to the node added first. The
 * six from GP_PLACE_RANDOM to GP_PLACE_FGD reproduce the policies of the FGD
 * paper (USENIX ATC'23); GP_PLACE_GPUPOOL is gpupool's own
 * fragmentation-aware policy and the default (docs/placement.md).
 */
#define GP_PLACEMENTS(XX)                                                                          \
    XX(GP_PLACE_GPUPOOL, "gpupool")                                                                \
    XX(GP_PLACE_BINPACK, "binpack") /* fullest node first */                                       \
    XX(GP_PLACE_SPREAD, "spread")   /* emptiest node first */                                      \
    XX(GP_PLACE_RANDOM, "random")                                                                  \
    XX(GP_PLACE_DOTPROD, "dotprod")                                                                \
    XX(GP_PLACE_GPUCLUSTERING, "gpuclustering")                                                    \
    XX(GP_PLACE_GPUPACKING, "gpupacking")                                                          \
    XX(GP_PLACE_BESTFIT, "bestfit")                                                                \
    XX(GP_PLACE_FGD, "fgd")

GP_NAMED_ENUM_DECLARE(gp_placement, GP_PLACEMENTS, GP_PLACE_COUNT);

/*
 * An allocator: the engine makes every allocation through one, so that a
 * caller can account for, limit or fail the engine's memory. Each function
 * has the C library's contract (malloc, calloc and realloc return NULL on
 * failure, free and realloc take NULL) and receives user first; a realloc
 * that fails must leave p as it was. All four must be set.
 */
typedef struct gp_allocator {
    void *(*malloc)(void *user, size_t n);
    void *(*calloc)(void *user, size_t n, size_t size);
    void *(*realloc)(void *user, void *p, size_t n);
    void (*free)(void *user, void *p);
    void *user;
} gp_allocator;

typedef struct gp_engine_config {
    uint64_t seed;          /* for every random choice (default 1) */
    gp_placement placement; /* default GP_PLACE_GPUPOOL */
    /* A pending workload gains one priority level per aging_interval it has
     * waited, up to aging_max levels (0 interval: no aging). Default 10 min,
     * 10 levels. */
    gp_time_ms aging_interval;
    int32_t aging_max;
    /* Time-based fair share: over-quota weights are divided by the queue's
     * share of recent usage, decayed with this half-life (0: off, default). */
    gp_time_ms usage_half_life;
    /* Phases of the cycle; all on by default. */
    int allocate, consolidate, reclaim, preempt;
    /* At most this many workloads are considered for eviction-based phases
     * (reclaim, preempt, consolidate) per cycle (default 64; 0 = no bound).
     * Allocation always considers every pending workload. */
    int32_t max_evicting_attempts;
    /* Run gp_engine_check() after every cycle and fail the cycle with
     * GP_ECORRUPT if the books do not balance (tests turn this on). */
    int check_invariants;
    /* The allocator of every allocation the engine makes (NULL, the
     * default: the C library; GP_EINVAL "alloc" if one of its functions
     * is missing). It is copied at gp_engine_open(); its
     * functions and user pointer must stay usable until gp_engine_free().
     * When it fails an allocation, the call that needed it returns
     * GP_ENOMEM and changes nothing, except gp_engine_cycle(), which keeps
     * the decisions it made before the failure (see there).
     * tests/engine/test-alloc-fail.c fails each allocation in turn. */
    const gp_allocator *alloc;
} gp_engine_config;

/* Fills *c with the defaults described above. */
void gp_engine_config_init(gp_engine_config *c);

/*
 * Creates an engine with config c (NULL: the defaults) into *out. Returns 0,
 * GP_EINVAL with err naming the field of c that is out of range, or
 * GP_ENOMEM. On error *out is NULL and nothing is allocated.
 */
int gp_engine_open(const gp_engine_config *c, gp_engine **out, char *err, size_t errlen);
void gp_engine_free(gp_engine *e);

/*
 * The invariant checker: quota sums per queue equal the sum of the queue's
 * workloads; per GPU the slices never exceed capacity (milli and bytes); no
 * task holds a GPU twice; every index agrees with the primary data. Returns 0,
 * GP_ECORRUPT with the first broken rule described in err, or GP_ENOMEM (it
 * allocates its sums through the engine's allocator).
 */
int gp_engine_check(const gp_engine *e, char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Queue tree                                                                */
/* ------------------------------------------------------------------------ */

typedef struct gp_quota {
    int64_t deserved; /* guaranteed; default 0 */
    int64_t limit;    /* hard cap; default GP_UNLIMITED */
    int32_t weight;   /* over-quota weight; default 1 */
} gp_quota;

typedef struct gp_model_quota {
    char model[GP_NAME_MAX + 1]; /* GPU model, e.g. "H100" */
    gp_quota gpu;                /* in milli-GPU of that model */
} gp_model_quota;

/* How a workload is evicted: GP_ON_PREEMPT_MODES (common/gp_queue.h). */
GP_NAMED_ENUM_DECLARE(gp_on_preempt, GP_ON_PREEMPT_MODES, GP_ON_PREEMPT_COUNT);

typedef struct gp_queue_spec {
    char name[GP_NAME_MAX + 1];
    char parent[GP_NAME_MAX + 1]; /* "" for a top-level queue */
    int32_t priority;             /* higher is served first; default 0 */
    gp_quota quota[GP_RES_COUNT];
    /* The longest minimum runtime a workload of this queue may claim: a
     * workload asking for more is protected only this long (default
     * GP_MIN_RUNTIME_MAX_DEFAULT; 0: no protection). It never protects
     * against a deserved quota's reclaim (docs/fairshare.md). */
    gp_time_ms min_runtime_max;
    /* The longest grace period (checkpoint signal to kill) a workload of this
     * queue keeps when it is evicted to reclaim GPUs for another queue
     * (default GP_RECLAIM_GRACE_MAX_DEFAULT): its own grace, however long,
     * never holds back a deserved quota longer. */
    gp_time_ms reclaim_grace_max;
    /* How the later submissions to this queue's projects are evicted when
     * they give no mode of their own, where on_preempt_set is 1; a queue
     * with on_preempt_set 0 (the default) inherits its parent's, and a
     * top-level one GP_ON_PREEMPT_CHECKPOINT. The engine decides with each
     * workload's own mode; this is its caller's default (gp_queue_info's
     * on_preempt is the one in force). */
    gp_on_preempt on_preempt;
    int32_t on_preempt_set;
    /* Interactive workloads (sessions) of this queue: how long their GPUs
     * may stay idle before they are suspended, and how long one may run
     * (0: no bound; default 0). The engine keeps them with the queue and
     * does not read them: the daemon, which measures GPU use, enforces
     * them (docs/usage.md). */
    gp_time_ms idle_gpu_timeout;
    gp_time_ms max_session_length;
    /* What a submission to this project that asks for no CPU or no memory
     * is given (milli-CPU, bytes per task; 0: nothing, the default). The
     * engine keeps them with the queue; the daemon applies them when a
     * workload is submitted, so a CPU-only workload always counts. */
    int64_t default_cpu_milli;
    int64_t default_mem_bytes;
    int32_t nmodels;
    gp_model_quota models[GP_MAX_MODEL_QUOTAS];
} gp_queue_spec;

/* Fills *q with explicit defaults: deserved 0, unlimited, weight 1. */
void gp_queue_spec_init(gp_queue_spec *q, const char *name, const char *parent);

/*
 * Creates or updates a queue. The parent must exist and must not hold
 * workloads itself (only leaves take workloads). A queue cannot become its
 * own ancestor. GP_EINVAL with err naming the field on bad values.
 */
int gp_engine_queue_set(gp_engine *e, const gp_queue_spec *q, char *err, size_t errlen);

/* Removes a queue; GP_EBUSY if it has children or workloads, GP_ENOENT. */
int gp_engine_queue_remove(gp_engine *e, const char *name);

typedef struct gp_queue_info {
    const char *name;
    const char *parent; /* "" for a top-level queue */
    int32_t depth;      /* 0 for a top-level queue */
    int32_t leaf;       /* 1 if it has no children */
    int32_t priority;
    /* The default eviction mode in force: the queue's own where it set
     * one, else its nearest ancestor's that did, else checkpoint. */
    gp_on_preempt on_preempt;
    int32_t on_preempt_set;      /* whether the queue set its own */
    const char *on_preempt_from; /* the queue that set it; "" for the default */
    int64_t default_cpu_milli;   /* per task, for submissions that give none */
    int64_t default_mem_bytes;
    gp_res deserved, limit;   /* limit GP_UNLIMITED if unset */
    gp_res fair_share;        /* as of the last cycle */
    gp_res guaranteed;        /* of it, the deserved part (docs/fairshare.md) */
    gp_res allocated;         /* held by bound, running, evicting work */
    gp_res requested;         /* allocated + what pending work asks for */
    int64_t pending, running; /* workloads (subtree) */
    int32_t overcommitted;    /* children's deserved exceed this queue's */
} gp_queue_info;

/* Queues in tree pre-order (a parent before its children, siblings by name). */
size_t gp_engine_queue_count(const gp_engine *e);
int gp_engine_queue_at(const gp_engine *e, size_t i, gp_queue_info *out);
int gp_engine_queue_get(const gp_engine *e, const char *name, gp_queue_info *out);

/* Warnings about the configuration (e.g. deserved quotas that add up to more
 * than the pool), as sentences, refreshed every cycle. */
size_t gp_engine_warning_count(const gp_engine *e);
const char *gp_engine_warning(const gp_engine *e, size_t i);

/* ------------------------------------------------------------------------ */
/* Nodes                                                                     */
/* ------------------------------------------------------------------------ */

/* A node's label, or a request's node selector: a key of 1 to GP_NAME_MAX
 * characters and a value of at most GP_NAME_MAX, each ending with its NUL
 * within its field; a node or request with a label that does not is refused
 * (GP_EINVAL, err naming "labels[i].key", "req.selectors[i].value", ...). */
typedef struct gp_label {
    char key[GP_NAME_MAX + 1];
    char value[GP_NAME_MAX + 1];
} gp_label;

typedef struct gp_gpu_spec {
    char uuid[GP_NAME_MAX + 1];  /* at most GP_NAME_MAX characters; may be "" */
    char model[GP_NAME_MAX + 1]; /* e.g. "H200", "A100-80G" */
    int64_t mem_bytes;
    int32_t sm_count;
    int32_t index;                         /* the driver's index on its node */
    int32_t mig;                           /* 1: MIG mode; only MIG requests land here */
    int32_t nmig;                          /* MIG layout: the instances the admin set */
    char mig_layout[GP_MAX_MIG_SLOTS][16]; /* profile of each, e.g. "1g.18gb" */
} gp_gpu_spec;

typedef struct gp_node_spec {
    char name[GP_NAME_MAX + 1];
    char domain[GP_NAME_MAX + 1]; /* topology domain (NVLink island, rack) */
    int64_t cpu_milli;
    int64_t mem_bytes;
    int32_t schedulable; /* 0: cordoned, nothing new lands here */
    int32_t nlabels;
    gp_label labels[GP_MAX_LABELS];
    int32_t ngpus;
    gp_gpu_spec gpus[GP_MAX_GPUS_PER_NODE];
    /* GPUs of this node held outside the pool (e.g. by a cluster engine's
     * own users' jobs), 0..ngpus: that many of its unbound non-MIG GPUs, the
     * highest-numbered, are offered to no task, and are no part of the pool's
     * capacity. Bound slices are never taken away: while fewer GPUs are
     * unbound than are taken, every unbound one is withheld and each GPU
     * freed later is withheld first. Whether a request could ever run is
     * judged on ngpus, as if nothing were taken. */
    int32_t gpus_taken;
    /* Pause (docs/engine.md, "Eviction modes"): 1 if this node can pause
     * tasks (its executor said so), and the most host memory, in bytes, that
     * paused tasks may hold on it (their own memory and the GPU memory moved
     * to host). Past it, or where the node cannot pause, a victim in pause
     * mode is evicted in checkpoint mode. Default 0 and 0: no pause. */
    int32_t can_pause;
    int64_t paused_mem_max;
} gp_node_spec;

/* Fills *n with an empty, schedulable node named name. */
void gp_node_spec_init(gp_node_spec *n, const char *name);

/*
 * Adds a node, or changes one. A change may not take away a GPU, CPU or memory
 * that bound work holds (GP_EBUSY); MIG layouts of GPUs with bound MIG slices
 * cannot change. A GPU held outside the pool is said with gpus_taken, not by
 * leaving it out: a GPU keeps its index whatever others hold.
 */
int gp_engine_node_set(gp_engine *e, const gp_node_spec *n, char *err, size_t errlen);

/*
 * Removes a node. Workloads with tasks on it lose them: they go back to
 * PENDING at once, and the next cycle reports each with an EVICT decision of
 * reason GP_EVICT_NODE_GONE so that the caller can stop their other tasks.
 */
int gp_engine_node_remove(gp_engine *e, const char *name);

typedef struct gp_gpu_info {
    const char *uuid;
    const char *model;
    int64_t mem_bytes;
    int32_t mig;
    int32_t used_milli; /* allocated, in milli-GPU */
    int64_t used_mem;   /* allocated memory caps, bytes */
    int32_t slices;     /* tasks holding a slice of it */
    int32_t taken;      /* 1: withheld, held outside the pool (gpus_taken) */
} gp_gpu_info;

typedef struct gp_node_info {
    const char *name;
    const char *domain;
    int32_t schedulable;
    int64_t cpu_milli, mem_bytes; /* capacity */
    int64_t cpu_used, mem_used;   /* allocated */
    int32_t ngpus;
    gp_gpu_info gpus[GP_MAX_GPUS_PER_NODE];
    int32_t gpus_taken;  /* as the spec says */
    int32_t taken_bound; /* of them, GPUs that stay bound (not withheld) */
    int32_t paused;      /* workloads paused here, or being paused */
    int64_t paused_mem;  /* host memory they hold or will, with what tasks paused outside the
                          * engine hold (gp_engine_node_paused_outside): <= paused_mem_max */
} gp_node_info;

size_t gp_engine_node_count(const gp_engine *e);
int gp_engine_node_at(const gp_engine *e, size_t i, gp_node_info *out);
int gp_engine_node_get(const gp_engine *e, const char *name, gp_node_info *out);

/* ------------------------------------------------------------------------ */
/* Workloads                                                                 */
/* ------------------------------------------------------------------------ */

#define GP_KINDS(XX)                                                                               \
    XX(GP_KIND_TRAIN, "train")             /* preemptible by default */                            \
    XX(GP_KIND_INTERACTIVE, "interactive") /* not preemptible by default */                        \
    XX(GP_KIND_INFERENCE, "inference")     /* not preemptible by default */

GP_NAMED_ENUM_DECLARE(gp_kind, GP_KINDS, GP_KIND_COUNT);

typedef enum gp_gpu_request {
    GP_GPU_NONE = 0, /* CPU only */
    GP_GPU_WHOLE,    /* gpus whole GPUs */
    GP_GPU_FRACTION, /* gpu_milli (1..999) of one GPU */
    GP_GPU_MEMORY,   /* gpu_mem bytes of one GPU */
    GP_GPU_MIG       /* one MIG instance of mig_profile */
} gp_gpu_request;

/* What each task of a workload asks for. */
typedef struct gp_task_req {
    gp_gpu_request gpu;
    int32_t gpus;         /* GP_GPU_WHOLE: 1..GP_MAX_GPUS_PER_NODE */
    int32_t gpu_milli;    /* GP_GPU_FRACTION: 1..999 */
    int64_t gpu_mem;      /* GP_GPU_MEMORY: bytes, > 0 */
    char mig_profile[16]; /* GP_GPU_MIG: e.g. "1g.18gb" */
    int64_t cpu_milli;    /* >= 0 */
    int64_t mem_bytes;    /* >= 0 */
    int32_t nmodels;      /* allowed GPU models; 0: any */
    char models[GP_MAX_MODELS][GP_NAME_MAX + 1];
    int32_t nselectors; /* node labels that must match */
    gp_label selectors[GP_MAX_SELECTORS];
} gp_task_req;

#define GP_DEFAULT (-1)

typedef struct gp_workload_spec {
    uint64_t id;                 /* the caller's id: unique, non-zero */
    char queue[GP_NAME_MAX + 1]; /* a leaf queue (project) */
    char user[GP_NAME_MAX + 1];
    gp_kind kind;
    int32_t priority;         /* within its project; higher first */
    int32_t preemptible;      /* 0, 1, or GP_DEFAULT (by kind) */
    gp_time_ms min_runtime;   /* protected from eviction this long */
    int32_t tasks;            /* gang size: all start or none (>= 1) */
    int32_t min_tasks;        /* elastic gang: at least this many; 0 = tasks */
    int32_t same_domain;      /* 1: all tasks in one topology domain */
    gp_time_ms submitted;     /* for ordering and aging */
    gp_on_preempt on_preempt; /* how it is evicted; default checkpoint */
    gp_task_req req;
} gp_workload_spec;

/* Fills *w with defaults: one training task asking for nothing. */
void gp_workload_spec_init(gp_workload_spec *w, uint64_t id, const char *queue);

/*
 * Adds a PENDING workload. GP_EINVAL (err names the field) for absurd
 * requests: 0 GPUs, a fraction outside 1..999, more GPU memory or more GPUs
 * than any node of the pool has, an unknown MIG profile; GP_ENOENT if the
 * queue does not exist or is not a leaf; GP_EEXIST if the id is taken.
 */
int gp_engine_submit(gp_engine *e, const gp_workload_spec *w, char *err, size_t errlen);

/*
 * Checks w exactly as gp_engine_submit() would, its id aside (a request not
 * yet stored has none), and submits nothing: 0 if it would be accepted now,
 * else the code and err gp_engine_submit() would give. Changes nothing. A
 * caller refuses a request with it before storing the request.
 */
int gp_engine_submit_check(const gp_engine *e, const gp_workload_spec *w, char *err, size_t errlen);

/* Removes a workload in any state; its resources, if any, are freed. */
int gp_engine_cancel(gp_engine *e, uint64_t id);

/* A BOUND workload's tasks have started: it is RUNNING from now. */
int gp_engine_started(gp_engine *e, uint64_t id, gp_time_ms now);

/* A workload has ended (all its tasks): resources freed, workload removed.
 * BOUND, RUNNING, EVICTING (its tasks ended while being evicted or paused) or
 * PENDING paused (its frozen task ended): the host memory a paused task held
 * on its node is freed. GP_ESTATE for a PENDING workload not paused (it has
 * no task to end). */
int gp_engine_finished(gp_engine *e, uint64_t id);

/* An EVICTING workload's tasks have stopped: it frees its resources and goes
 * back to PENDING (keeping its submission time and age). */
int gp_engine_released(gp_engine *e, uint64_t id, gp_time_ms now);

/* A workload whose tasks were lost must run again: back to PENDING, keeping
 * its submission time and age. BOUND, RUNNING, EVICTING (lost while being
 * evicted or paused: its eviction ends with it) or PENDING paused (its frozen
 * task lost): the pause is dropped, its host memory freed on its node, and
 * it waits as any pending workload, to start anew on any node (never
 * resumed). GP_ESTATE for a PENDING workload not paused. */
int gp_engine_requeue(gp_engine *e, uint64_t id);

/*
 * An EVICTING workload evicted in pause mode (gp_decision.mode) is now
 * paused: its GPUs and CPU are freed, the host memory it holds paused stays
 * charged to its node, and it waits PENDING (GP_WAIT_PAUSED) to be resumed
 * there only: a later BIND of it has resume set. GP_ESTATE if it is not
 * EVICTING in pause mode (nothing changes). A pause that failed is reported
 * with gp_engine_released() instead, as any stopped eviction.
 */
int gp_engine_paused(gp_engine *e, uint64_t id, gp_time_ms now);

/*
 * A paused workload (PENDING, paused on a node) is not resumed before `when`:
 * the caller's backoff after a resume that failed, so that a restore that
 * keeps failing (too little GPU memory, held outside the pool) is not tried
 * at every cycle. A later pause of it starts with no such bound. GP_ENOENT
 * for an unknown workload, GP_ESTATE if it is not paused (nothing changes).
 */
int gp_engine_resume_after(gp_engine *e, uint64_t id, gp_time_ms when);

/*
 * Host memory that tasks paused outside the engine's decisions hold on node
 * `name` (sessions the caller paused for being idle, which the engine no
 * longer schedules): counted with the engine's own paused tasks against the
 * node's paused_mem_max, so that a pause never takes the node past it, and
 * charged to the node's memory, so that no placement counts on it. bytes
 * replaces what was set before (0 releases it all); gp_node_info's
 * paused_mem includes it. GP_ENOENT for an unknown node, GP_EINVAL for a
 * negative amount (nothing changes).
 */
int gp_engine_node_paused_outside(gp_engine *e, const char *name, int64_t bytes);

typedef struct gp_slice {
    int32_t gpu;      /* index into the node's gpus[] */
    int32_t milli;    /* milli-GPU charged */
    int64_t mem;      /* memory cap in bytes */
    int32_t mig_slot; /* MIG instance, or -1 */
} gp_slice;

typedef struct gp_task_binding {
    const char *node;
    int32_t nslices;
    gp_slice slices[GP_MAX_GPUS_PER_NODE];
} gp_task_binding;

/*
 * Restores a workload that was already bound before a restart of the caller:
 * submits it and binds it as given, in state RUNNING since `started` (or
 * BOUND if started < 0). GP_EBUSY if the slices are no longer free.
 */
int gp_engine_restore(gp_engine *e, const gp_workload_spec *w, int32_t ntasks,
                      const gp_task_binding *tasks, gp_time_ms started, char *err, size_t errlen);

/*
 * Restores a workload that was paused before a restart of the caller: submits
 * it PENDING, paused on the node of was, the binding its task had when it
 * was paused (the node's host memory is held again as for that binding, and
 * it resumes on GPUs of the model of its first slice). GP_ENOENT if there is
 * no such node, GP_EBUSY if the node lacks the host memory, GP_EINVAL for a
 * gang (never paused) or a binding out of range, the error naming the field:
 * was.nslices not 0 to GP_MAX_GPUS_PER_NODE, a slice's gpu the node does not
 * have, its mig_slot not an instance of a MIG GPU (-1 on any other), its
 * milli not 0 to GP_MILLI, its mem not 0 to the GPU's memory. Any error from
 * gp_engine_submit() for w. On every error nothing changes.
 */
int gp_engine_restore_paused(gp_engine *e, const gp_workload_spec *w, const gp_task_binding *was,
                             char *err, size_t errlen);

/*
 * Whether a task paused with binding was could be restored paused on the
 * pool as it is now (gp_engine_restore_paused's checks of was, nothing
 * else, and nothing changes): 0, GP_ENOENT if there is no such node, or
 * GP_EINVAL for a binding out of range (a GPU the node no longer has), the
 * error naming the field. For a caller that holds a paused task outside the
 * engine, so that it learns that the task can no longer be resumed.
 */
int gp_engine_paused_binding_check(gp_engine *e, const gp_task_binding *was, char *err,
                                   size_t errlen);

/* A workload's state in the engine. */
#define GP_STATES(XX)                                                                              \
    XX(GP_STATE_PENDING, "pending")                                                                \
    XX(GP_STATE_BOUND, "bound")                                                                    \
    XX(GP_STATE_RUNNING, "running")                                                                \
    XX(GP_STATE_EVICTING, "evicting")

GP_NAMED_ENUM_DECLARE(gp_state, GP_STATES, GP_STATE_COUNT);

/* Why a pending workload waits. */
#define GP_WAITS(XX)                                                                               \
    XX(GP_WAIT_NONE, "none")               /* not pending */                                       \
    XX(GP_WAIT_NEW, "new")                 /* not yet considered by a cycle */                     \
    XX(GP_WAIT_QUEUE_LIMIT, "queue_limit") /* its queue or an ancestor is at its limit */          \
    XX(GP_WAIT_DESERVED, "deserved")       /* non-preemptible and over deserved quota */           \
    XX(GP_WAIT_NO_NODE, "no_node")         /* no node could ever hold a task */                    \
    XX(GP_WAIT_NO_FIT, "no_fit")           /* capacity exists but is taken now */                  \
    XX(GP_WAIT_FRAGMENTED, "fragmented")   /* enough in total, but not on one GPU/node */          \
    XX(GP_WAIT_GANG, "gang")               /* fewer than min_tasks fit together */                 \
    XX(GP_WAIT_EVICTING, "evicting")       /* room is being made: victims are stopping */          \
    XX(GP_WAIT_FAIR_SHARE, "fair_share")   /* its queue is at its fair share; others first */      \
    XX(GP_WAIT_PAUSED, "paused") /* paused: resumes on its node once a GPU of its model is free */

/* gp_wait_name: a short stable name for metrics and the API: "queue_limit",
 * "no_fit", ... */
GP_NAMED_ENUM_DECLARE(gp_wait, GP_WAITS, GP_WAIT_COUNT);

typedef struct gp_workload_info {
    uint64_t id;
    const char *queue;
    gp_state state;
    gp_wait wait; /* GP_WAIT_NONE unless PENDING */
    int32_t preemptible;
    int32_t bound_tasks; /* tasks placed (elastic gangs: may be < tasks) */
    gp_time_ms started;  /* RUNNING since, or -1 */
    int32_t evictions;   /* times evicted so far */
    /* PENDING and paused, or EVICTING in pause mode: the node it is paused
     * on (and is resumed on only); else NULL. */
    const char *paused_on;
} gp_workload_info;

/* Fills *out. Like the two functions below, it may first work out a pending
 * reason the last cycle left for later (hence the engine is not const). */
int gp_engine_workload_get(gp_engine *e, uint64_t id, gp_workload_info *out);

/* The binding of task `task` of a BOUND, RUNNING or EVICTING workload. */
int gp_engine_workload_binding(const gp_engine *e, uint64_t id, int32_t task, gp_task_binding *out);

/*
 * Writes the sentence a researcher can act on, e.g. "project nlp is at its
 * limit of 8 GPUs" or "no single GPU has 0.5 free; the largest free slice is
 * 0.25 on node a3". Returns the reason code, or GP_ENOENT.
 */
int gp_engine_pending_reason(gp_engine *e, uint64_t id, char *buf, size_t len);

/*
 * The figures behind a pending reason, for a front end that words its own
 * remedies (a CLI command, a flag, a console button): the sentence of
 * gp_engine_pending_reason says what holds and names none of them.
 */
typedef struct gp_pending_figures {
    gp_wait wait;                  /* as gp_engine_pending_reason returns */
    int32_t resource;              /* QUEUE_LIMIT, DESERVED: the gp_resource that binds; else -1 */
    char queue[GP_NAME_MAX + 1];   /* the queue whose quota binds (the workload's own otherwise) */
    int32_t queue_is_department;   /* queue has children */
    int32_t kind;                  /* gp_kind of the workload */
    int32_t preemptible;           /* the workload's */
    int32_t priority;              /* the workload's */
    int64_t own_preemptible_milli; /* NO_FIT: milli-GPUs that its own project's running
                                      preemptible work of no lower priority holds */
} gp_pending_figures;

/* Fills *out for workload id. Returns the reason code (GP_WAIT_NONE when it is
 * not pending), or GP_ENOENT with *out unchanged. */
int gp_engine_pending_figures(gp_engine *e, uint64_t id, gp_pending_figures *out);

/* Counts of PENDING workloads by reason, indexed by gp_wait. */
void gp_engine_pending_by_reason(gp_engine *e, int64_t counts[GP_WAIT_COUNT]);

/* ------------------------------------------------------------------------ */
/* Scheduling cycle                                                          */
/* ------------------------------------------------------------------------ */

typedef enum gp_decision_type { GP_DECISION_BIND = 1, GP_DECISION_EVICT = 2 } gp_decision_type;

/* Why a workload is evicted; a decision that binds has none (0). */
#define GP_EVICT_REASONS(XX)                                                                       \
    XX(GP_EVICT_RECLAIM, "reclaim")         /* its queue is over fair share; owner wants GPUs */   \
    XX(GP_EVICT_PREEMPT, "preempt")         /* higher-priority work of the same project */         \
    XX(GP_EVICT_CONSOLIDATE, "consolidate") /* moved to defragment; it will be placed again */     \
    XX(GP_EVICT_NODE_GONE, "node_gone")     /* its node was removed */

typedef enum gp_evict_reason {
    GP_EVICT_NONE = 0,
    GP_EVICT_REASONS(GP_ENUM_SYMBOL_OF) GP_EVICT_REASON_COUNT /* one past the last */
} gp_evict_reason;

/* The reason's name, "unknown" for none or one out of range. */
const char *gp_evict_reason_name(gp_evict_reason r);

/* Why an eviction's mode is not the one its workload asked for. */
typedef enum gp_mode_why {
    GP_MODE_ASKED = 0,   /* it is the workload's own on_preempt */
    GP_MODE_NO_PAUSE,    /* its node cannot pause tasks (gp_node_spec.can_pause) */
    GP_MODE_HOST_MEMORY, /* paused tasks would pass the node's paused_mem_max */
    GP_MODE_GANG,        /* a workload of several tasks is not paused */
    GP_MODE_CONSOLIDATE  /* it is moved to another node, where a paused task cannot go */
} gp_mode_why;

/* A sentence for an event: "its node cannot pause tasks", ... ("" for
 * GP_MODE_ASKED). */
const char *gp_mode_why_text(gp_mode_why w);

typedef struct gp_decision {
    gp_decision_type type;
    uint64_t workload;
    /* BIND: the tasks, in task order (elastic gangs may bind fewer). */
    int32_t ntasks;
    const gp_task_binding *tasks;
    /* EVICT: why, and for whom (0 if nobody in particular). */
    gp_evict_reason reason;
    uint64_t for_workload;
    /* EVICT: the longest grace period the workload may keep (its queue's
     * reclaim_grace_max for GP_EVICT_RECLAIM), or -1: its own. */
    gp_time_ms grace_max;
    /* EVICT: how to stop it: its on_preempt, or checkpoint where pause
     * cannot be used (mode_why says why). In pause mode the caller reports
     * the pause with gp_engine_paused(), or a failed one with
     * gp_engine_released() once stopped in checkpoint mode. */
    gp_on_preempt mode;
    gp_mode_why mode_why;
    /* BIND: 1 if the workload is paused on this node: resume it there
     * (its single task's binding is where), do not launch it. */
    int32_t resume;
} gp_decision;

typedef struct gp_cycle_stats {
    int64_t pending_considered; /* pending workloads looked at */
    int64_t bound;              /* BIND decisions */
    int64_t evicted;            /* EVICT decisions */
    int64_t nodes_scored;       /* placement evaluations */
} gp_cycle_stats;

/*
 * Runs one scheduling cycle at time now: allocate, consolidate, reclaim,
 * preempt. Bound workloads move to BOUND, evicted ones to EVICTING. *out
 * points at the decisions, valid until the next gp_engine_cycle() or
 * gp_engine_free(): no other call changes them, so that a caller may carry
 * them out one at a time, calling the engine between them (a binding's node
 * name only while that node is in the pool); stats may be NULL. On GP_ENOMEM the engine's books
 * still balance, and *out and *n hold the decisions made before the failure, which the caller must
 * carry out as after a successful cycle; the next cycle goes on from there. (Fair-share division,
 * shape learning and reason diagnosis that find no memory do without it, and the cycle succeeds.)
 */
int gp_engine_cycle(gp_engine *e, gp_time_ms now, const gp_decision **out, size_t *n,
                    gp_cycle_stats *stats);

/*
 * Typical request shapes for fragmentation-aware placement, with their
 * popularity (any positive scale). Without this, the engine learns the shapes
 * from the workloads it has seen submitted.
 */
typedef struct gp_shape {
    int32_t gpus;      /* whole GPUs (0 if fractional or none) */
    int32_t gpu_milli; /* per GPU: GP_MILLI for whole GPUs */
    int64_t cpu_milli;
    int64_t mem_bytes;
    int32_t nmodels; /* allowed GPU models; 0: any */
    char models[GP_MAX_MODELS][GP_NAME_MAX + 1];
    double popularity;
} gp_shape;

/* Sets the shapes: 0, or GP_EINVAL for a shape out of range (a popularity
 * that is not positive, an amount below zero, a GPU model that is not 1 to
 * GP_NAME_MAX characters and its NUL), GP_ELIMIT if the GPU models the shapes
 * name that the engine does not know yet would take it past its 64 models,
 * GP_ENOMEM. On every error nothing changes: the shapes set before stay, and
 * none of the shapes' models is taken in. */
int gp_engine_set_shapes(gp_engine *e, const gp_shape *shapes, size_t n);

/*
 * The pool's fragmentation against the typical shapes (the FGD paper's
 * measure), in milli-GPU: idle GPU capacity that a typical task could not use
 * where it is, popularity-weighted and summed over nodes. *idle_milli, if not
 * NULL, receives all idle milli-GPU of the pool. Only nodes that changed since
 * the last call are recomputed, so calling it after every decision is cheap.
 * Returns a negative value if out of memory.
 */
double gp_engine_fragmentation(gp_engine *e, double *idle_milli);

#ifdef __cplusplus
}
#endif

#endif /* GP_ENGINE_H */
