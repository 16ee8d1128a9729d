/*
 * fake.h — the fake GPU shared by the fake libcuda.so.1 and libnvidia-ml.so.1.
 *
 * TEST DOUBLE. These libraries stand in for NVIDIA's driver so that the
 * interposer can be tested on machines without a GPU; nothing in production
 * loads them. They implement the driver symbols the interposer wraps or
 * calls, over host memory, for a GPU configured from the environment:
 *
 *   GPUPOOL_FAKE_GPUS            number of GPUs (default 1, at most 8)
 *   GPUPOOL_FAKE_GPU_MEMORY      bytes per GPU, K/M/G/T suffix (default 141G)
 *   GPUPOOL_FAKE_DRIVER_VERSION  what cuDriverGetVersion says (default 13000)
 *   GPUPOOL_FAKE_KERNEL_US       busy time of each kernel launch (default 0)
 *   GPUPOOL_FAKE_CONTEXT_MEMORY  device memory a context takes (default 0)
 *   GPUPOOL_FAKE_ALLOC_DELAY_US  time cuMemAlloc_v2 spends inside (default 0)
 *   GPUPOOL_FAKE_FAIL_RESTORES   the first restores of this process that fail,
 *                                as gpfake_fail_restores makes them (default 0)
 *   (GPUPOOL_FAKE_DRIVER_VERSION below 12080 also takes away the checkpoint
 *   API: every cuCheckpointProcess* answers CUDA_ERROR_NOT_SUPPORTED)
 *   GPUPOOL_FAKE_NO_BACKING      1: device pointers are addresses without host
 *                                memory behind them (cheap; for benchmarks)
 *   GPUPOOL_FAKE_LEDGER          name of a POSIX shared-memory object holding
 *                                the fake GPUs' state, so that processes
 *                                started by exec share one GPU (default: a
 *                                mapping shared with forked children only)
 *
 * and for the fake libnvidia-ml.so.1 (read at each call unless said):
 *
 *   GPUPOOL_FAKE_GPU_NAME        what nvmlDeviceGetName says (default
 *                                "NVIDIA H200")
 *   GPUPOOL_FAKE_MIG             index of the one GPU in MIG mode (default
 *                                none); it answers NOT_SUPPORTED to
 *                                nvmlDeviceGetUtilizationRates, as MIG GPUs do
 *   GPUPOOL_FAKE_BUSY            percent busy per GPU for
 *                                nvmlDeviceGetUtilizationRates, comma-separated
 *                                ("50,25"; missing entries repeat the last);
 *                                default: measured on the kernel timeline
 *                                over the last second
 *   GPUPOOL_FAKE_OTHER_MEMORY    bytes NVML counts as in use on every GPU
 *                                beyond what the fake's processes hold (as a
 *                                display or another system would; default 0)
 *   GPUPOOL_FAKE_NVML_INIT_FAIL  if set, nvmlInit_v2 fails with
 *                                DRIVER_NOT_LOADED, as without a driver
 *
 * Each may also be set in a file fake.env beside the fake libcuda.so.1
 * (gpfake_getenv), one NAME=VALUE a line, for programs that do not get the
 * test's environment (the jobs of the Slurm tier's cluster).
 *
 * The fake keeps the authoritative books of what is really allocated on
 * each GPU (used, peak, per process) and a timeline of kernel busy time per
 * GPU, on which launches of all processes are serialised; NVML's
 * per-process memory (nvmlDeviceGetComputeRunningProcesses_v3) comes from
 * those books and its per-process utilisation from that timeline, for
 * every process sharing the state (GPUPOOL_FAKE_LEDGER). Tests read the
 * books through the gpfake_* functions the fake libcuda also exports.
 * The fake NVML implements every entry point of common/gp_nvml.h, and is
 * the one fake NVML of every test (executors, daemon, console, interposer).
 */
#ifndef GP_TESTS_FAKE_H
#define GP_TESTS_FAKE_H

#include "interpose/cuda_abi.h"

#include <stdint.h>

#define GPFAKE_MAX_GPUS 8

#pragma GCC visibility push(default)

/* The fake's setting name: the environment's, else a NAME=VALUE line of
 * the file fake.env beside the fake libcuda.so.1 (for programs whose
 * environment a test cannot set, as the jobs of a Slurm cluster), read at
 * each call; NULL if neither sets it. The answer lasts until the calling
 * thread's next call. */
const char *gpfake_getenv(const char *name);

/* Device memory really allocated on GPU gpu now, and its highest value
 * since the fake state was made (or since gpfake_reset_peak). */
uint64_t gpfake_used(int gpu);
uint64_t gpfake_peak(int gpu);
void gpfake_reset_peak(int gpu);

/* Physical memory of each GPU, and how many there are. */
uint64_t gpfake_total(int gpu);
int gpfake_count(void);

/* Nanoseconds of kernel time process pid ran on GPU gpu between the
 * CLOCK_REALTIME instants from_ns and to_ns. */
uint64_t gpfake_busy_ns(int gpu, int pid, int64_t from_ns, int64_t to_ns);

/* Fills pids[0..max) with the processes that ran kernels on GPU gpu between
 * from_ns and to_ns (CLOCK_REALTIME); returns how many. */
int gpfake_timeline_pids(int gpu, int64_t from_ns, int64_t to_ns, int *pids, int max);

/* The symbol the fake's cuGetProcAddress hands out for (name, version,
 * flags), or NULL, and the function itself in *fn. */
const char *gpfake_proc_symbol(const char *name, int version, cuuint64_t flags, void **fn);

/* The processes holding device memory on GPU gpu, as NVML lists them: fills
 * pids[0..max) and bytes[0..max) with each live process's pid and bytes;
 * returns how many there are (which may exceed max). */
int gpfake_processes(int gpu, int *pids, uint64_t *bytes, int max);

/* TEST DOUBLE for a process the interposer does not see: books bytes of
 * device memory on GPU gpu to the calling process without any cu* name
 * being called, so that no interposer can refuse or count it (as a program
 * with its own copy of the driver, or one that escaped the preload, would
 * allocate). The memory is the process's until it exits (the fake frees a
 * dead process's memory, as the driver does). 0, or -1 when the GPU is full
 * or does not exist. Nothing but tests calls this. */
int gpfake_alloc_unseen(int gpu, uint64_t bytes);

/* The checkpoint API (common/gp_cuckpt.h; fake_ckpt.c): host memory holding
 * process pid's checkpointed device memory (0 unless CHECKPOINTED), and
 * making its next n restores fail as a driver error would
 * (CUDA_ERROR_NOT_SUPPORTED), leaving it CHECKPOINTED: 0, or -1 if the fake
 * does not know pid. */
uint64_t gpfake_host_held(int pid);
int gpfake_fail_restores(int pid, int n);
/* Makes the checkpoint this process asks for after n more that succeed fail,
 * once, as host memory running short would (CUDA_ERROR_OUT_OF_MEMORY), its
 * process left LOCKED; -1 (the start): none fails. */
void gpfake_fail_checkpoint_after(int n);

/* UUID of GPU gpu (the same bytes cuDeviceGetUuid gives). */
void gpfake_uuid(int gpu, uint8_t out[16]);

#pragma GCC visibility pop

#endif /* GP_TESTS_FAKE_H */
