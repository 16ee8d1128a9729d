/*
 * gp_env.h — the environment variables of gpupool, named once: those a
 * workload receives from its executor (and the interposer reads), and those
 * the CLI reads. Every part that sets, reads or filters one uses these names,
 * and the one rule of which variables gpupool manages.
 *
 * A task's environment is its launcher's without the managed variables, then
 * the workload's own (without the reserved ones), then gpupool's, which win
 * (docs/executors.md, docs/workload-contract.md).
 */
#ifndef GP_ENV_H
#define GP_ENV_H

#include <stddef.h>
#include <string.h>

/* ---- What every task receives ---- */
#define GP_ENV_PREFIX            "GPUPOOL_"
#define GP_ENV_WORKLOAD_ID       "GPUPOOL_WORKLOAD_ID"
#define GP_ENV_TASK_INDEX        "GPUPOOL_TASK_INDEX"
#define GP_ENV_ATTEMPT           "GPUPOOL_ATTEMPT"
#define GP_ENV_PROJECT           "GPUPOOL_PROJECT"
#define GP_ENV_USER              "GPUPOOL_USER"
#define GP_ENV_NODE              "GPUPOOL_NODE"
#define GP_ENV_CHECKPOINT_DIR    "GPUPOOL_CHECKPOINT_DIR"
#define GP_ENV_CHECKPOINT_SIGNAL "GPUPOOL_CHECKPOINT_SIGNAL"
#define GP_ENV_EMULATED          "GPUPOOL_EMULATED"
#define GP_ENV_VISIBLE_DEVICES   "CUDA_VISIBLE_DEVICES"
#define GP_ENV_MIG_PROFILE       "GPUPOOL_MIG_PROFILE"

/* ---- A fractional slice, read by the interposer (docs/interposer.md) ---- */
#define GP_ENV_PRELOAD         "LD_PRELOAD"
#define GP_ENV_MEMORY_LIMIT    "GPUPOOL_MEMORY_LIMIT"
#define GP_ENV_COMPUTE_SHARE   "GPUPOOL_COMPUTE_SHARE"
#define GP_ENV_SLICE           "GPUPOOL_SLICE"
#define GP_ENV_CONTEXT_MEMORY  "GPUPOOL_CONTEXT_MEMORY"
#define GP_ENV_MANAGED_MEMORY  "GPUPOOL_MANAGED_MEMORY"
#define GP_ENV_SHARE_WINDOW_MS "GPUPOOL_SHARE_WINDOW_MS"
#define GP_ENV_CUDA_LIBRARY    "GPUPOOL_CUDA_LIBRARY"
#define GP_ENV_NVML_LIBRARY    "GPUPOOL_NVML_LIBRARY"

/* ---- The CLI's ---- */
#define GP_ENV_SERVER     "GPUPOOL_SERVER"
#define GP_ENV_TOKEN      "GPUPOOL_TOKEN"
#define GP_ENV_TOKEN_FILE "GPUPOOL_TOKEN_FILE"

/* 1 if the first n bytes of name are exactly the name want. */
static inline int gp_env_is(const char *name, size_t n, const char *want) {
    return strlen(want) == n && strncmp(name, want, n) == 0;
}

/*
 * 1 if the variable whose name is the first n bytes of name is managed by
 * gpupool: every GPUPOOL_ name, CUDA_VISIBLE_DEVICES and LD_PRELOAD. A task
 * never inherits these from whoever launched it.
 */
static inline int gp_env_managed(const char *name, size_t n) {
    return (n >= sizeof GP_ENV_PREFIX - 1 &&
            strncmp(name, GP_ENV_PREFIX, sizeof GP_ENV_PREFIX - 1) == 0) ||
           gp_env_is(name, n, GP_ENV_VISIBLE_DEVICES) || gp_env_is(name, n, GP_ENV_PRELOAD);
}

/*
 * 1 if a workload may not give the variable itself: the managed ones, except
 * LD_PRELOAD, which is the workload's own preload and is kept behind the
 * interposer.
 */
static inline int gp_env_reserved(const char *name, size_t n) {
    return gp_env_managed(name, n) && !gp_env_is(name, n, GP_ENV_PRELOAD);
}

#endif /* GP_ENV_H */
