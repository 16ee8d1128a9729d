/*
 * slice.c — this process's view of its slice: settings, ledger, GPUs and
 * the charge / release primitives every allocation wrapper uses.
 *
 * Initialisation is lazy (the first wrapped call, from any thread, runs it
 * once) because a constructor would run before the workload had a chance to
 * set the environment and inside the dynamic linker's lock. It reads the
 * settings, opens the real driver and attaches to the slice's ledger (a
 * named one when GPUPOOL_SLICE is set, otherwise one private to the process
 * and its forked children). Any bad setting puts the library in "refuse"
 * mode: one message on stderr, and every allocation and context creation
 * answers CUDA_ERROR_NOT_PERMITTED; neighbours are never put at risk by a
 * typo.
 *
 * GPUs are identified in the ledger by UUID; a CUDA ordinal is mapped to its
 * ledger index once and cached. The current context's GPU is cached per
 * thread, keyed by the context and a generation number that every context
 * destruction bumps.
 */
#include "interpose/gpuslice.h"

#include "common/gp_error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_ORDINALS   64
#define DEV_UNRESOLVED (-2)

struct gps__config gps__cfg;
unsigned gps__ctx_generation;
__thread int gps__initialising;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int initialised; /* set (release) when init_once has completed */
static int refused;     /* bad settings: refuse allocations */
static gp_ledger *ledger;
static int dev_index[MAX_ORDINALS];
static uint64_t dev_cap[GP_LEDGER_MAX_DEVICES]; /* this process's cap per ledger GPU */
/* What this process holds per ledger GPU by its own count, which no other
 * process can write (its row in the ledger can be). */
static uint64_t dev_held[GP_LEDGER_MAX_DEVICES];

static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
static int nvml_ok;

static int warned_refused, warned_nodriver, warned_table_full;

/* Prints "gpuslice: <message>" on stderr once per distinct `once` flag. */
static void warn_once(int *once, const char *fmt, ...) {
    if (once && __atomic_exchange_n(once, 1, __ATOMIC_RELAXED))
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpuslice: %s\n", msg);
}

/* fork(): the child starts with no device memory of its own (CUDA contexts
 * do not survive fork), so it forgets the parent's records and takes its
 * own ledger row on its first charge. */
static void before_fork(void) {
    gps__track_lock();
}
static void after_fork_parent(void) {
    gps__track_unlock();
}
static void after_fork_child(void) {
    gps__track_unlock();
    gps__track_reset();
    gps__ctx_after_fork();
    memset(dev_held, 0, sizeof dev_held);
    if (ledger)
        gps__ledger_after_fork(ledger);
    __atomic_add_fetch(&gps__ctx_generation, 1, __ATOMIC_RELAXED);
}

static void init(void) {
    gps__initialising++;
    char err[256] = "";
    for (int i = 0; i < MAX_ORDINALS; i++)
        dev_index[i] = DEV_UNRESOLVED;
    if (gps__config_load(&gps__cfg, err) != 0) {
        refused = 1;
        warn_once(&warned_refused, "%s; every GPU allocation is refused", err);
    }
    if (gps__resolve_cuda(gps__cfg.cuda_lib) != 0)
        warn_once(&warned_nodriver, "cannot open the CUDA driver '%s'", gps__cfg.cuda_lib);
    if (!refused && gps__cfg.ledger[0]) {
        /* The executor made this task's ledger: use it, never make one. */
        if (gp_ledger_open_file(gps__cfg.ledger, GP_LEDGER_WRITE, &ledger, err) != 0) {
            refused = 1;
            warn_once(&warned_refused, "the slice's ledger: %s; every GPU allocation is refused",
                      err);
        }
    } else if (!refused) {
        int rc = gps__cfg.slice[0] ? gp_ledger_open(gps__cfg.slice, GP_LEDGER_CREATE, &ledger, err)
                                   : gps__ledger_open_private(&ledger, err);
        if (rc != 0) {
            refused = 1;
            warn_once(&warned_refused, "GPUPOOL_SLICE='%s': %s; every GPU allocation is refused",
                      gps__cfg.slice, err);
        }
    }
    __atomic_store_n(&gps__share_on, gps__cfg.compute_share != 0 && !refused, __ATOMIC_RELAXED);
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    __atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
    gps__initialising--;
}

void gps__init(void) {
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE))
        pthread_once(&init_once, init);
}

static void nvml_init(void) {
    gps__init();
    gps__initialising++;
    nvml_ok = gps__resolve_nvml(gps__cfg.nvml_lib) == 0 && GP_NVML(nvmlInit_v2) == NVML_SUCCESS;
    gps__initialising--;
}

int gps__nvml_ready(void) {
    pthread_once(&nvml_once, nvml_init);
    return nvml_ok;
}

gp_ledger *gps__ledger(void) {
    return refused ? NULL : ledger;
}

/* ---- GPUs ---------------------------------------------------------------- */

static int warned_dev[MAX_ORDINALS], warned_cap[MAX_ORDINALS];

CUresult gps__device_uuid(CUdevice ordinal, CUuuid *uuid) {
    CUresult r = GP_CU(cuDeviceGetUuid_v2, uuid, ordinal);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_DEVICE)
        r = GP_CU(cuDeviceGetUuid, uuid, ordinal);
    return r;
}

static int resolve_device(CUdevice ordinal) {
    CUuuid uuid;
    size_t phys = 0;
    CUresult r = gps__device_uuid(ordinal, &uuid);
    if (r == CUDA_ERROR_INVALID_DEVICE)
        return GPS__DEV_INVALID; /* not a device at all: the driver's error */
    if (r != CUDA_SUCCESS) {
        warn_once(&warned_dev[ordinal],
                  "device %d: its UUID cannot be read; allocations on it are refused", ordinal);
        return GPS__DEV_UNKNOWN;
    }
    if (GP_CU(cuDeviceTotalMem_v2, &phys, ordinal) != CUDA_SUCCESS || phys == 0) {
        warn_once(&warned_dev[ordinal],
                  "device %d: its memory size cannot be read; allocations on it are refused",
                  ordinal);
        return GPS__DEV_UNKNOWN;
    }
    uint64_t cap = phys;
    if (gps__cfg.mem_limit && gps__cfg.mem_limit > phys)
        warn_once(&warned_cap[ordinal],
                  "GPUPOOL_MEMORY_LIMIT=%s is above the %zu bytes of device %d; "
                  "the cap there is the device's memory",
                  gps__cfg.mem_limit_text, phys, ordinal);
    else if (gps__cfg.mem_limit)
        cap = gps__cfg.mem_limit;
    int idx = gps__ledger_device(ledger, (const uint8_t *)uuid.bytes, cap, gps__cfg.compute_share);
    if (idx >= 0) {
        __atomic_store_n(&dev_cap[idx], cap, __ATOMIC_RELAXED);
        gps__truth_device(idx, ordinal, (const uint8_t *)uuid.bytes);
    }
    if (idx < 0)
        warn_once(&warned_dev[ordinal],
                  "device %d: the slice already spans %d GPUs; allocations on it are refused",
                  ordinal, GP_LEDGER_MAX_DEVICES);
    return idx < 0 ? GPS__DEV_UNKNOWN : idx;
}

int gps__device_index(CUdevice ordinal) {
    gps__init();
    if (refused)
        return GPS__DEV_UNKNOWN;
    if (ordinal < 0 || ordinal >= MAX_ORDINALS)
        return GPS__DEV_INVALID;
    int v = __atomic_load_n(&dev_index[ordinal], __ATOMIC_ACQUIRE);
    if (v == DEV_UNRESOLVED) {
        /* Two threads may resolve together; both get the same answer. */
        v = resolve_device(ordinal);
        __atomic_store_n(&dev_index[ordinal], v, __ATOMIC_RELEASE);
    }
    return v;
}

static __thread struct {
    CUcontext ctx;
    unsigned gen;
    int dev;
} current_cache;

CUresult gps__current(int *dev, CUcontext *pctx) {
    CUcontext ctx = NULL;
    CUresult r = GP_CU(cuCtxGetCurrent, &ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    unsigned gen = __atomic_load_n(&gps__ctx_generation, __ATOMIC_RELAXED);
    if (ctx != current_cache.ctx || gen != current_cache.gen) {
        CUdevice ordinal;
        r = GP_CU(cuCtxGetDevice, &ordinal);
        if (r != CUDA_SUCCESS)
            return r;
        current_cache.dev = gps__device_index(ordinal);
        current_cache.ctx = ctx;
        current_cache.gen = gen;
    }
    *dev = current_cache.dev;
    *pctx = ctx;
    return CUDA_SUCCESS;
}

/* ---- charging ------------------------------------------------------------ */

CUresult gps__charge(int dev, uint64_t bytes) {
    if (dev == GPS__DEV_INVALID)
        return CUDA_ERROR_INVALID_DEVICE;
    if (refused || dev < 0)
        return CUDA_ERROR_NOT_PERMITTED;
    uint64_t cap = __atomic_load_n(&dev_cap[dev], __ATOMIC_RELAXED);
    int rc = gps__ledger_charge(ledger, dev, bytes, cap);
    if (rc == 0 && gps__cfg.ledger[0]) {
        /* The executor's slice: the ledger is the workload's file, so the
         * charge must also fit what the task's other processes really hold
         * (truth.c). */
        int64_t others = gps__truth_others(dev);
        uint64_t own = __atomic_add_fetch(&dev_held[dev], bytes, __ATOMIC_RELAXED);
        if (others >= 0 && (own > cap || (uint64_t)others > cap - own)) {
            __atomic_sub_fetch(&dev_held[dev], bytes, __ATOMIC_RELAXED);
            gps__ledger_release(ledger, dev, bytes);
            rc = GP_ENOMEM;
        }
    }
    if (rc == 0)
        return CUDA_SUCCESS;
    if (rc == GP_ENOSPC)
        warn_once(&warned_table_full,
                  "slice '%s' has more than %d processes; "
                  "allocations of further processes are refused",
                  gps__cfg.slice, GP_LEDGER_MAX_PROCS);
    return rc == GP_ECORRUPT ? CUDA_ERROR_NOT_PERMITTED : CUDA_ERROR_OUT_OF_MEMORY;
}

void gps__release(int dev, uint64_t bytes) {
    if (refused || dev < 0 || !bytes)
        return;
    gps__ledger_release(ledger, dev, bytes);
    if (gps__cfg.ledger[0]) {
        uint64_t held = __atomic_load_n(&dev_held[dev], __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&dev_held[dev], &held, held > bytes ? held - bytes : 0,
                                            0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    }
}

void gps__usage(int dev, uint64_t *cap, uint64_t *used) {
    gps__ledger_get(ledger, dev, cap, used);
    /* A ledger's cap may have been written by another process; ours holds. */
    uint64_t own = __atomic_load_n(&dev_cap[dev], __ATOMIC_RELAXED);
    if (own && own < *cap)
        *cap = own;
}
