/*
 * gpuslice.h — what the files of the interposer (libgpuslice.so) share.
 *
 * The interposer is split by concern: config.c reads the environment,
 * resolve.c finds the real driver functions and answers dlsym and
 * cuGetProcAddress, slice.c holds the process's view of its slice (ledger,
 * GPU indices, charging), track.c remembers what this process allocated,
 * memory.c and context.c wrap the allocation and context entry points,
 * report.c the memory queries of CUDA and NVML, and share.c the kernel
 * launches. Everything here is internal (hidden visibility, gps__ prefix);
 * the library exports only the wrapped entry points and dlsym, dlvsym,
 * dlopen and dlmopen.
 */
#ifndef GP_INTERPOSE_GPUSLICE_H
#define GP_INTERPOSE_GPUSLICE_H

#include "interpose/entries.h"
#include "interpose/ledger-int.h"

#include <limits.h>
#include <stdint.h>

/* ---- config.c ----------------------------------------------------------- */

/* The slice's settings, read once from the environment (docs/interposer.md). */
struct gps__config {
    uint64_t mem_limit;                 /* GPUPOOL_MEMORY_LIMIT, bytes per GPU; 0: none */
    uint32_t compute_share;             /* GPUPOOL_COMPUTE_SHARE, percent; 0: none */
    uint64_t ctx_memory;                /* GPUPOOL_CONTEXT_MEMORY, charged per context */
    int managed_charge;                 /* GPUPOOL_MANAGED_MEMORY: 1 charge, 0 ignore */
    uint32_t share_window_ms;           /* GPUPOOL_SHARE_WINDOW_MS, throttle period */
    char slice[GP_LEDGER_NAME_MAX + 1]; /* GPUPOOL_SLICE; "" for private */
    char ledger[PATH_MAX];              /* the executor's ledger file, from the
                                           slice file; "" when it made none */
    char mem_limit_text[32];            /* the limit as written, for messages */
    char cuda_lib[PATH_MAX];            /* GPUPOOL_CUDA_LIBRARY */
    char nvml_lib[PATH_MAX];            /* GPUPOOL_NVML_LIBRARY */
};

/* Fills c from the environment, then narrows it by the executor's slice
 * file when this process's task has one. Returns 0, or GP_EINVAL with err
 * (256 bytes) naming the first bad variable; c then holds defaults. */
int gps__config_load(struct gps__config *c, char *err);

/* ---- resolve.c ---------------------------------------------------------- */

/* Opens the real driver (or NVML) and fills gps__cu_real (gps__nvml_real).
 * Returns 0, or -1 when the library cannot be opened (every wrapper then
 * answers CUDA_ERROR_NOT_FOUND / NVML_ERROR_FUNCTION_NOT_FOUND). */
int gps__resolve_cuda(const char *path);
int gps__resolve_nvml(const char *path);

/* ---- libcdl.c ----------------------------------------------------------- */

/* libc's dlsym, dlvsym, dlopen and dlmopen (the library exports its own
 * under those names), or NULL if libc has none. Safe before the sanitizers' runtimes are up. */
typedef void *(*gps__dlsym_fn)(void *handle, const char *name);
typedef void *(*gps__dlvsym_fn)(void *handle, const char *name, const char *version);
gps__dlsym_fn gps__libc_dlsym(void);
gps__dlvsym_fn gps__libc_dlvsym(void);
typedef void *(*gps__dlopen_fn)(const char *file, int mode);
typedef void *(*gps__dlmopen_fn)(long lmid, const char *file, int mode);
gps__dlopen_fn gps__libc_dlopen(void);
gps__dlmopen_fn gps__libc_dlmopen(void);

/* The default-version definition of name in the object lm itself (not its
 * dependencies), read from its own GNU hash table, or NULL. Needs nothing
 * of the dynamic linker: usable from a constructor, before the object's
 * scope is set up. */
struct link_map;
void *gps__elf_find(const struct link_map *lm, const char *name);

/* strcmp(a, b) == 0 without the sanitizers' interceptors (which are not
 * ready when their runtimes look symbols up through this library). */
int gps__streq(const char *a, const char *b);

/* ---- slice.c ------------------------------------------------------------ */

extern struct gps__config gps__cfg;

/* Initialises the library once per process (cheap after the first call). */
void gps__init(void);

/* Non-zero while this thread initialises the library or NVML (opening the
 * driver runs its constructors, which may look symbols up: resolve.c must
 * not start the initialisation again from there). */
extern __thread int gps__initialising;

/* Opens NVML once (for NVML wrappers and the compute-share throttle).
 * Returns 0 when NVML is usable. */
int gps__nvml_ready(void);

/* The ledger index of CUDA device `ordinal`; GPS__DEV_INVALID when the
 * driver says there is no such device; GPS__DEV_UNKNOWN when settings are
 * bad, or the GPU's UUID or memory cannot be read, or the slice already
 * spans GP_LEDGER_MAX_DEVICES GPUs (allocations there are refused). */
#define GPS__DEV_UNKNOWN (-1)
#define GPS__DEV_INVALID (-5)
int gps__device_index(CUdevice ordinal);

/* The UUID the driver gives CUDA device `ordinal` now (cuDeviceGetUuid_v2,
 * else cuDeviceGetUuid): CUDA_SUCCESS, or the driver's error. */
CUresult gps__device_uuid(CUdevice ordinal, CUuuid *uuid);

/* The ledger index (or -1) and the context of the calling thread's current
 * context. Returns CUDA_SUCCESS, or the driver's error when there is no
 * current context (the caller then forwards the call, which fails). */
CUresult gps__current(int *dev, CUcontext *ctx);

/* Charges bytes on ledger GPU dev before a real allocation. Returns
 * CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY over the cap,
 * CUDA_ERROR_INVALID_DEVICE for GPS__DEV_INVALID, or CUDA_ERROR_NOT_PERMITTED
 * when settings are bad or dev is otherwise negative. */
CUresult gps__charge(int dev, uint64_t bytes);

/* Gives back a charge (after a failed allocation or a free). */
void gps__release(int dev, uint64_t bytes);

/* Cap and use of ledger GPU dev, for reporting. */
void gps__usage(int dev, uint64_t *cap, uint64_t *used);

/* The slice's ledger, or NULL when settings are bad. */
gp_ledger *gps__ledger(void);

/* ---- truth.c ------------------------------------------------------------ */

/* Records the UUID of ledger GPU dev as the driver gave it for CUDA device
 * `ordinal` (not as the ledger, which the workload can write, says). */
void gps__truth_device(int dev, CUdevice ordinal, const uint8_t uuid[16]);

/* NVML's handle of ledger GPU dev, found by the UUID the driver gives its
 * ordinal now (a restore onto other GPUs moves the ordinal: the handle
 * follows), or NULL when NVML cannot say. One driver call each time: for
 * a charge's check and the compute share's window, not for every call. */
nvmlDevice_t gps__truth_handle(int dev);

/* Bytes that the other processes of this task (same user, same cgroups)
 * hold on ledger GPU dev as NVML counts them (on the GPU its ordinal is now,
 * as gps__truth_handle), or -1 when NVML cannot say. */
int64_t gps__truth_others(int dev);

/* Bumped whenever a context is destroyed, so that per-thread caches of
 * context -> GPU are dropped (a context pointer can be reused). */
extern unsigned gps__ctx_generation;

/* ---- track.c ------------------------------------------------------------ */

/* What the process allocated, by kind of handle. */
enum gps__kind { GP_K_MEM = 1, GP_K_VMM, GP_K_ARRAY, GP_K_MIPMAP, GP_K_POOL, GP_K_CTX };

struct gps__track {
    uint64_t bytes; /* charged bytes (for GP_K_POOL/GP_K_CTX: see context.c) */
    int dev;        /* ledger index, -1 for a host pool */
    CUcontext ctx;  /* the context the memory belongs to */
};

/* Records key of kind. Returns 0, or GP_ENOMEM when out of host memory. */
int gps__track_put(int kind, uint64_t key, const struct gps__track *t);

/* Removes key and copies its record to *out. Returns 1, or 0 if unknown. */
int gps__track_take(int kind, uint64_t key, struct gps__track *out);

/* Copies the record of key to *out without removing it. Returns 1 or 0. */
int gps__track_get(int kind, uint64_t key, struct gps__track *out);

/* Removes every GP_K_MEM/VMM/ARRAY/MIPMAP record of ctx and adds their
 * bytes into per_dev[GP_LEDGER_MAX_DEVICES]. */
void gps__track_drop_ctx(CUcontext ctx, uint64_t *per_dev);

/* Forgets everything (in a forked child, whose parent's memory is not its). */
void gps__track_reset(void);

/* fork() protection of the table's lock. */
void gps__track_lock(void);
void gps__track_unlock(void);

/* ---- context.c ---------------------------------------------------------- */

/* In a forked child: the parent's contexts are not the child's. */
void gps__ctx_after_fork(void);

/* ---- share.c ------------------------------------------------------------ */

/* Non-zero when some GPU of the slice has a compute share (checked on every
 * launch, so it is a plain flag). */
extern int gps__share_on;

#endif /* GP_INTERPOSE_GPUSLICE_H */
