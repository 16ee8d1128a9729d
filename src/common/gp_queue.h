/*
 * gp_queue.h — a queue's settings, described once: the body of POST
 * /api/v1/queues and PATCH /api/v1/queues/{name}, their bounds and defaults,
 * and the names they are given in (the quota resources, the eviction modes).
 *
 * GP_QUEUE_FIELDS lists every field as GP_SUBMIT_FIELDS lists a
 * submission's (gp_submit.h; the same columns, where "required" is "given
 * only when the queue is created"). From it come the daemon's list of known
 * fields, the order and typing of its parse and its range checks
 * (daemon/request.c, through gp_field_out_of_range), gpupool queue's flags
 * and their checks before sending (cli/cmd-admin.c) and the field table of
 * docs/api.md ("Queues"; gp_fields_doc_table). tests/common/test-queue-fields.sh
 * holds that table, the console's queue editing, gpupool help queue, the
 * shell completion, the man page and docs/cli.md to it, and each of the
 * CLI's range checks to the daemon's. The engine applies the defaults named
 * here, and declares its enums from the lists; this header includes nothing
 * of the fields' machinery (gp_field, the tables made from the list), which
 * gp_submit.h declares.
 */
#ifndef GP_QUEUE_H
#define GP_QUEUE_H

#include <stdint.h>

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

/* How many resources GP_RESOURCES lists. */
#define GP_QUEUE_RES_ONE_(sym, name) +1
#define GP_QUEUE_NRES                (0 GP_RESOURCES(GP_QUEUE_RES_ONE_))

/* How a workload is evicted (docs/engine.md, "Eviction modes"): a
 * submission's on_preempt and a queue's default (the engine declares
 * gp_on_preempt from it; gpupool queue takes these and inherit). */
#define GP_ON_PREEMPT_MODES(XX)                                                                    \
    XX(GP_ON_PREEMPT_CHECKPOINT,                                                                   \
       "checkpoint")                     /* the checkpoint signal, a grace period, then stop */    \
    XX(GP_ON_PREEMPT_PAUSE, "pause")     /* GPU state to host memory, frozen, resumed in place */  \
    XX(GP_ON_PREEMPT_REQUEUE, "requeue") /* stopped at once, queued again */

/* The most GPUs or CPUs a deserved quota or a limit may name, in milli. */
#define GP_QUEUE_QUOTA_MAX INT64_C(1000000000000)

/* The bounds above in milliseconds, as the list holds them. */
#define GP_QUEUE_MIN_RUNTIME_MAX_MAX_MS   (GP_QUEUE_MIN_RUNTIME_MAX_MAX_D * INT64_C(86400000))
#define GP_QUEUE_RECLAIM_GRACE_MAX_MAX_MS (GP_QUEUE_RECLAIM_GRACE_MAX_MAX_H * INT64_C(3600000))
#define GP_QUEUE_SESSION_BOUND_MIN_MS     (GP_QUEUE_SESSION_BOUND_MIN_S * INT64_C(1000))
#define GP_QUEUE_SESSION_BOUND_MAX_MS     (GP_QUEUE_SESSION_BOUND_MAX_D * INT64_C(86400000))

/* X(name, only at creation, flag, type, lo, hi, arg, unit, help), in the
 * order the daemon reads them. A quota's flag sets its GPUs; the flag with
 * a resource's name before its own ("--cpu-deserved", "--memory-deserved")
 * sets that resource (gp_queue_part). */
#define GP_QUEUE_FIELDS(X)                                                                         \
    X(name, 1, NULL, GP_SUBMIT_STRING, 0, 0, "NAME", "",                                           \
      "required: " GP_NAME_RULE " (the CLI: `gpupool queue create NAME`)")                         \
    X(parent, 1, "--parent", GP_SUBMIT_STRING, 0, 0, "DEPT", "",                                   \
      "the department a project is under; not given or `null`: the queue is a department "         \
      "(top-level)")                                                                               \
    X(priority, 0, "--priority", GP_SUBMIT_INT, -GP_QUEUE_PRIORITY_MAX, GP_QUEUE_PRIORITY_MAX,     \
      "N", "", "among its siblings, higher first (default 0)")                                     \
    X(deserved, 0, "--deserved", GP_SUBMIT_QUOTA, 0, GP_QUEUE_QUOTA_MAX, "N", "",                  \
      "the quota it is guaranteed (default 0); a resource not given keeps its own")                \
    X(limit, 0, "--limit", GP_SUBMIT_QUOTA, 0, GP_QUEUE_QUOTA_MAX, "N|none", "",                   \
      "the most it may hold, not below `deserved`; `null` (the CLI: `none`): unlimited, the "      \
      "default")                                                                                   \
    X(weight, 0, "--weight", GP_SUBMIT_WEIGHT, 0, GP_QUEUE_WEIGHT_MAX, "W", "",                    \
      "its share, among its siblings, of what the deserved quotas leave (default 1; the CLI: "     \
      "one for every resource)")                                                                   \
    X(min_runtime_max, 0, "--min-runtime-max", GP_SUBMIT_DURATION, 0,                              \
      GP_QUEUE_MIN_RUNTIME_MAX_MAX_MS, "DURATION", "",                                             \
      "the longest `min_runtime` its workloads may claim (default " GP_STR(                        \
          GP_QUEUE_MIN_RUNTIME_MAX_DEFAULT_M) "m)")                                                \
    X(reclaim_grace_max, 0, "--reclaim-grace-max", GP_SUBMIT_DURATION, 0,                          \
      GP_QUEUE_RECLAIM_GRACE_MAX_MAX_MS, "DURATION", "",                                           \
      "the longest `grace` its workloads keep when evicted to reclaim GPUs for another queue "     \
      "(default " GP_STR(GP_QUEUE_RECLAIM_GRACE_MAX_DEFAULT_M) "m)")                               \
    X(on_preempt, 0, "--on-preempt", GP_SUBMIT_MODE, 0, 0, "MODE|inherit", "",                     \
      "how the later submissions below it that give none are evicted; `null` (the CLI: "           \
      "`inherit`): its parent's, the default")                                                     \
    X(idle_gpu_timeout, 0, "--idle-gpu-timeout", GP_SUBMIT_BOUND, GP_QUEUE_SESSION_BOUND_MIN_MS,   \
      GP_QUEUE_SESSION_BOUND_MAX_MS, "DURATION|none", "",                                          \
      "an interactive workload of its projects whose GPUs stay idle this long is paused, or "      \
      "suspended where its node cannot pause (default none)")                                      \
    X(max_session_length, 0, "--max-session-length", GP_SUBMIT_BOUND,                              \
      GP_QUEUE_SESSION_BOUND_MIN_MS, GP_QUEUE_SESSION_BOUND_MAX_MS, "DURATION|none", "",           \
      "an interactive workload of its projects running this long is paused or suspended the same " \
      "way (default none)")                                                                        \
    X(default_cpu, 0, "--default-cpu", GP_SUBMIT_MILLI, 0, GP_SUBMIT_CPU_MAX, "N", "CPUs",         \
      "cores given to each task of a submission to its projects that asks for none (default 0: "   \
      "none)")                                                                                     \
    X(default_memory, 0, "--default-memory", GP_SUBMIT_SIZE, 0, GP_SUBMIT_NO_MAX, "SIZE", "",      \
      "host memory given the same way, e.g. `\"4G\"` (default 0: none)")

#endif /* GP_QUEUE_H */
