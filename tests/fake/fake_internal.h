/*
 * fake_internal.h — TEST DOUBLE: what the files of the fake libcuda share
 * (fake_state.c keeps the books, fake_cuda.c implements the API over them).
 */
#ifndef GP_TESTS_FAKE_INTERNAL_H
#define GP_TESTS_FAKE_INTERNAL_H

#include "fake.h"

struct fake_config {
    int ngpus;
    uint64_t total;
    int driver_version;
    int64_t kernel_ns;
    uint64_t ctx_memory;
    uint64_t alloc_delay_us;
    int no_backing; /* GPUPOOL_FAKE_NO_BACKING=1: addresses only, no host memory */
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

#endif /* GP_TESTS_FAKE_INTERNAL_H */
