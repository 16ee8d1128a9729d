/*
 * gp_queue.h — the bounds and defaults of a queue's settings, which the
 * engine applies, the daemon enforces (daemon/request.c), gpupool queue
 * checks before it sends them and its help names, so that they cannot
 * disagree.
 */
#ifndef GP_QUEUE_H
#define GP_QUEUE_H

/* A queue's priority among its siblings is -max..max. */
#define GP_QUEUE_PRIORITY_MAX 1000
/* A queue's weight, one for every resource or one each, is 0..max. */
#define GP_QUEUE_WEIGHT_MAX 1000000

/* min_runtime_max, the longest min_runtime its workloads may claim: its
 * default in minutes (the engine's GP_MIN_RUNTIME_MAX_DEFAULT) and its
 * longest in days. */
#define GP_QUEUE_MIN_RUNTIME_MAX_DEFAULT_M 10
#define GP_QUEUE_MIN_RUNTIME_MAX_MAX_D     7
/* reclaim_grace_max, the longest grace its workloads keep when evicted to
 * reclaim: its default in minutes (GP_RECLAIM_GRACE_MAX_DEFAULT) and its
 * longest in hours. */
#define GP_QUEUE_RECLAIM_GRACE_MAX_DEFAULT_M 1
#define GP_QUEUE_RECLAIM_GRACE_MAX_MAX_H     24
/* idle_gpu_timeout and max_session_length: the shortest in seconds (GPU use
 * is sampled every usage period, so a shorter bound would judge a session on
 * one or two samples) and the longest in days. */
#define GP_QUEUE_SESSION_BOUND_MIN_S 10
#define GP_QUEUE_SESSION_BOUND_MAX_D 365

/* The resources that quotas are kept in, as requests and the API name them
 * (the engine declares gp_resource from it). */
#define GP_RESOURCES(XX)                                                                           \
    XX(GP_RES_GPU, "gpu")    /* milli-GPU */                                                       \
    XX(GP_RES_CPU, "cpu")    /* milli-CPU */                                                       \
    XX(GP_RES_MEM, "memory") /* bytes of host memory */

/* How a workload is evicted (docs/engine.md, "Eviction modes"): a
 * submission's on_preempt and a queue's default (the engine declares
 * gp_on_preempt from it; gpupool queue takes these and inherit). */
#define GP_ON_PREEMPT_MODES(XX)                                                                    \
    XX(GP_ON_PREEMPT_CHECKPOINT,                                                                   \
       "checkpoint")                     /* the checkpoint signal, a grace period, then stop */    \
    XX(GP_ON_PREEMPT_PAUSE, "pause")     /* GPU state to host memory, frozen, resumed in place */  \
    XX(GP_ON_PREEMPT_REQUEUE, "requeue") /* stopped at once, queued again */

#endif /* GP_QUEUE_H */
