/*
 * gp_cuckpt.h — the CUDA driver's checkpoint API (CUDA 12.8 and later), as
 * gpupool uses it to pause a task: the process states, the argument
 * structures and the entry points, for the local executor (which calls them
 * through dlopen) and the fake driver of the tests (which implements them).
 *
 * Every value and layout below is the public driver ABI (cuda.h's
 * CUprocessState, CUcheckpointLockArgs, CUcheckpointCheckpointArgs,
 * CUcheckpointGpuPair, CUcheckpointRestoreArgs, CUcheckpointUnlockArgs and
 * the six cuCheckpointProcess* functions), declared here under gpupool's
 * names so that gpupool builds without NVIDIA's headers and so that this
 * file and the interposer's cuda_abi.h can be included together. The
 * driver's documented state machine:
 *
 *     RUNNING --Lock--> LOCKED --Checkpoint--> CHECKPOINTED
 *        ^                 |  ^                    |
 *        +-----Unlock------+  +------Restore-------+
 *
 * Lock blocks the process's further CUDA calls (with a timeout it gives up,
 * CUDA_ERROR_NOT_READY, and leaves the process RUNNING); Checkpoint moves its
 * device memory to host memory and releases its GPUs; Restore brings it back,
 * onto other GPUs of the same chip if given pairs of UUIDs (all of the
 * checkpointed GPUs then); a call in the wrong state fails with
 * CUDA_ERROR_ILLEGAL_STATE and changes nothing.
 */
#ifndef GP_COMMON_CUCKPT_H
#define GP_COMMON_CUCKPT_H

#include <stdint.h>

/* The driver version (cuDriverGetVersion) from which the API exists. */
#define GP_CU_CKPT_MIN_DRIVER 12080

/* CUresult values the checkpoint API returns (cuda.h's numbers). */
enum {
    GP_CU_SUCCESS = 0,
    GP_CU_ERROR_INVALID_VALUE = 1,
    GP_CU_ERROR_OUT_OF_MEMORY = 2,
    GP_CU_ERROR_NOT_INITIALIZED = 3,
    GP_CU_ERROR_ILLEGAL_STATE = 401,
    GP_CU_ERROR_NOT_READY = 600,
    GP_CU_ERROR_NOT_SUPPORTED = 801
};

/* CUprocessState. */
typedef enum gp_cu_process_state {
    GP_CU_PROCESS_RUNNING = 0,
    GP_CU_PROCESS_LOCKED = 1,
    GP_CU_PROCESS_CHECKPOINTED = 2,
    GP_CU_PROCESS_FAILED = 3
} gp_cu_process_state;

/* CUcheckpointLockArgs: timeout_ms 0 waits for ever. Reserved fields zero. */
typedef struct gp_cu_lock_args {
    unsigned int timeout_ms;
    unsigned int reserved0;
    uint64_t reserved1[7];
} gp_cu_lock_args;

/* CUcheckpointCheckpointArgs and CUcheckpointUnlockArgs. */
typedef struct gp_cu_ckpt_args {
    uint64_t reserved[8];
} gp_cu_ckpt_args;
typedef struct gp_cu_unlock_args {
    uint64_t reserved[8];
} gp_cu_unlock_args;

/* CUcheckpointGpuPair: CUuuid is 16 bytes. */
typedef struct gp_cu_gpu_pair {
    char old_uuid[16];
    char new_uuid[16];
} gp_cu_gpu_pair;

/* CUcheckpointRestoreArgs (64 bytes on LP64). */
typedef struct gp_cu_restore_args {
    gp_cu_gpu_pair *pairs;
    unsigned int npairs;
    char reserved[52 - sizeof(gp_cu_gpu_pair *)];
    uint64_t reserved1;
} gp_cu_restore_args;

_Static_assert(sizeof(gp_cu_lock_args) == 64, "CUcheckpointLockArgs is 64 bytes");
_Static_assert(sizeof(gp_cu_restore_args) == 64, "CUcheckpointRestoreArgs is 64 bytes");

/* The entry points, as X(symbol, (parameters)). */
#define GP_CU_CKPT_ENTRIES(X)                                                                      \
    X(cuCheckpointProcessGetRestoreThreadId, (int pid, int *tid))                                  \
    X(cuCheckpointProcessGetState, (int pid, gp_cu_process_state *state))                          \
    X(cuCheckpointProcessLock, (int pid, gp_cu_lock_args *args))                                   \
    X(cuCheckpointProcessCheckpoint, (int pid, gp_cu_ckpt_args *args))                             \
    X(cuCheckpointProcessRestore, (int pid, gp_cu_restore_args *args))                             \
    X(cuCheckpointProcessUnlock, (int pid, gp_cu_unlock_args *args))

#endif /* GP_COMMON_CUCKPT_H */
