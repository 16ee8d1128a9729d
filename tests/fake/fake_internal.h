/*
 * fake_internal.h — TEST DOUBLE: what the files of the fake libcuda share
 * (fake_state.c keeps the books, fake_cuda.c implements the API over them).
 */
#ifndef GP_TESTS_FAKE_INTERNAL_H
#define GP_TESTS_FAKE_INTERNAL_H

#include "fake.h"

#include "common/gp_cuckpt.h"

struct fake_config {
    int ngpus;
    uint64_t total;
    int driver_version;
    int64_t kernel_ns;
    uint64_t ctx_memory;
    uint64_t alloc_delay_us;
    uint64_t fail_restores; /* GPUPOOL_FAKE_FAIL_RESTORES: this process's first */
    int no_backing;         /* GPUPOOL_FAKE_NO_BACKING=1: addresses only, no host memory */
};

extern struct fake_config fake_cfg;

/* Reads the configuration and maps the shared state, once per process. */
void fake_init(void);

int64_t fake_now(void);              /* CLOCK_REALTIME, ns */
void fake_sleep_until(int64_t t_ns); /* CLOCK_REALTIME, absolute */

/* Books `bytes` on gpu for this process: 0, or -1 when the GPU is full. */
int fake_charge(int gpu, uint64_t bytes);
void fake_uncharge(int gpu, uint64_t bytes);

/* Puts one kernel on gpu's timeline; blocks while the queue is long. */
void fake_launch(int gpu);

/* Waits until gpu's timeline is idle. */
void fake_sync(int gpu);

/* The checkpoint API the fake exports (fake_ckpt.c). */
#define FAKE_CKPT_PROTO_(sym, params) int sym params;
GP_CU_CKPT_ENTRIES(FAKE_CKPT_PROTO_)

/* The shared state's lock, for what fake_ckpt.c does under it. */
void fake_lock(void);
void fake_unlock(void);

/* 1 if process pid has ended (or is a zombie). */
int fake_dead(int pid);

/* One process's part of the checkpoint API, in its row of the shared state
 * (fake_ckpt.c). The two sequence numbers are futex words: a caller of
 * cuCheckpointProcess* writes the request and bumps req_seq; the process's
 * own checkpoint thread carries it out and sets done_seq to it. */
struct fake_ckpt {
    int32_t state;                  /* gp_cu_process_state */
    int32_t tid;                    /* its checkpoint thread; 0: no CUDA in it */
    uint32_t req_seq, done_seq;     /* futex words */
    uint32_t taken_seq;             /* the request its thread has taken up */
    int32_t busy;                   /* a request is under way */
    int32_t op, result;             /* the request and its CUresult */
    uint32_t timeout_ms;            /* Lock's */
    int32_t map[GPFAKE_MAX_GPUS];   /* Restore's: the new GPU of each old one */
    uint32_t gpus;                  /* checkpointed: bit g for each GPU it had */
    uint64_t host[GPFAKE_MAX_GPUS]; /* checkpointed bytes, by the GPU they left */
    int32_t fail_restores;          /* tests: restores still to fail */
};

/* The checkpoint part of process pid's row (created for this process), or
 * NULL; called under fake_lock(). */
struct fake_ckpt *fake_ckpt_row_locked(int pid);

/* Starts this process's checkpoint thread (once per process; at cuInit and
 * at the first context). */
void fake_ckpt_attach(void);

/* Every API call that the checkpoint lock must block runs between these. */
void fake_gate_enter(void);
void fake_gate_leave(void);

/* fake_cuda.c: moves this process's device memory to host memory (its
 * contents kept, its books given back: bytes by GPU into host[], the GPUs
 * into *gpus), or back onto the GPUs map[] names. CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY with nothing changed. */
int fake_ckpt_move_out(uint64_t host[GPFAKE_MAX_GPUS], uint32_t *gpus);
int fake_ckpt_move_in(const int32_t map[GPFAKE_MAX_GPUS], const uint64_t host[GPFAKE_MAX_GPUS],
                      uint32_t gpus);

#endif /* GP_TESTS_FAKE_INTERNAL_H */
