/*
 * share.c — kernel launches, and the compute share that may throttle them.
 *
 * Without a compute share a launch costs one flag test on top of the real
 * call. With one (GPUPOOL_COMPUTE_SHARE=50: half of each GPU's time), every
 * process of the slice paces its launches with a token bucket whose rate
 * follows a feedback loop run once per window (GPUPOOL_SHARE_WINDOW_MS,
 * default 100 ms):
 *
 *     u = the slice's measured busy fraction of the GPU over the window
 *         (NVML per-process utilisation, summed over the slice's pids);
 *     n = launches this process made in the window;
 *     rate = (n / window) * (share / u)
 *
 * i.e. the process's launch rate is scaled by how far the slice is from its
 * share. When kernels cost roughly the same from one window to the next
 * this settles in one or two windows; each process scaling by the same
 * factor keeps the processes' proportions while the slice as a whole tracks
 * its share. A slice that is idle (u near 0) is not limited at all. The
 * bucket lets a tenth of a window's launches through as a burst, then
 * makes launches wait (sleep) for their token; the wait is the throttle.
 */
#include "interpose/gpuslice.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define MAX_PIDS    256
#define MAX_SAMPLES 512

int gps__share_on;

struct throttle {
    pthread_mutex_t lock;
    int ready;                   /* the first window started */
    nvmlDevice_t nvdev;          /* the window's GPU; NULL when NVML has no such GPU */
    uint64_t window_start;       /* ns, CLOCK_MONOTONIC */
    unsigned long long since_us; /* NVML timestamp of the last sample */
    uint64_t launches;           /* by this process in the window */
    double rate;                 /* launches per second; 0: unlimited */
    double tokens;               /* may go negative: launches owe waiting time */
    uint64_t last_refill;        /* ns */
};

static struct throttle th[GP_LEDGER_MAX_DEVICES] = {
    [0 ... GP_LEDGER_MAX_DEVICES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static unsigned long long real_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
}

/* The slice's busy fraction of GPU t->nvdev since t->since_us, or -1 when
 * NVML cannot say. */
static double slice_busy(struct throttle *t) {
    static __thread nvmlProcessUtilizationSample_t samples[MAX_SAMPLES];
    int pids[MAX_PIDS];
    unsigned int count = MAX_SAMPLES;
    if (!t->nvdev || GP_NVML(nvmlDeviceGetProcessUtilization, t->nvdev, samples, &count,
                             t->since_us) != NVML_SUCCESS)
        return -1;
    int npids = gps__ledger_pids(gps__ledger(), pids, MAX_PIDS);
    /* NVML may give several samples per process; average each process's,
     * then add the processes of the slice up. */
    double busy = 0;
    for (int p = 0; p < npids; p++) {
        unsigned sum = 0, k = 0;
        for (unsigned s = 0; s < count; s++) {
            if ((int)samples[s].pid != pids[p])
                continue;
            sum += samples[s].smUtil;
            k++;
            if (samples[s].timeStamp > t->since_us)
                t->since_us = samples[s].timeStamp;
        }
        if (k)
            busy += sum / (100.0 * k);
    }
    return busy;
}

/* Ends a window: measures, and sets the rate for the next one. The GPU is
 * looked up again for each window (a resume may have moved the process onto
 * another GPU: truth.c). */
static void end_window(struct throttle *t, int dev, uint64_t now, uint32_t share) {
    double secs = (double)(now - t->window_start) / 1e9;
    t->nvdev = gps__truth_handle(dev);
    double u = slice_busy(t);
    if (u >= 0) {
        if (u < 0.01)
            t->rate = 0; /* idle: no limit */
        else if (t->launches > 0)
            t->rate = (double)t->launches / secs * (share / 100.0) / u;
    }
    t->since_us = t->since_us ? t->since_us : real_us();
    t->window_start = now;
    t->launches = 0;
}

/* Waits, if needed, before a launch on the current context's GPU so that the
 * slice's busy time tracks its share. */
static void throttle(void) {
    int dev;
    CUcontext ctx;
    if (gps__current(&dev, &ctx) != CUDA_SUCCESS || dev < 0)
        return;
    uint32_t share = gps__ledger_share(gps__ledger(), dev);
    if (!share)
        return;
    struct throttle *t = &th[dev];
    uint64_t now = mono_ns(), window = (uint64_t)gps__cfg.share_window_ms * 1000000ULL;
    double wait_s = 0;
    pthread_mutex_lock(&t->lock);
    if (!t->ready) {
        t->ready = 1;
        t->window_start = t->last_refill = now;
        t->since_us = real_us();
    }
    if (now - t->window_start >= window)
        end_window(t, dev, now, share);
    t->launches++;
    if (t->rate > 0) {
        double burst = t->rate * (double)window / 1e10;
        t->tokens += (double)(now - t->last_refill) / 1e9 * t->rate;
        if (t->tokens > (burst > 1 ? burst : 1))
            t->tokens = burst > 1 ? burst : 1;
        t->tokens -= 1;
        if (t->tokens < 0)
            wait_s = -t->tokens / t->rate;
    }
    t->last_refill = now;
    pthread_mutex_unlock(&t->lock);
    if (wait_s > 0) {
        struct timespec ts = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* ---- the launch wrappers, generated from GP_CU_LAUNCH ---------------------- */

#define GP_UNPACK_(...) __VA_ARGS__
#define LAUNCH_WRAPPER_(sym, base, ver, stream, params, args)                                      \
    CUresult sym params {                                                                          \
        gps__init();                                                                               \
        if (__atomic_load_n(&gps__share_on, __ATOMIC_RELAXED))                                     \
            throttle();                                                                            \
        return GP_CU(sym, GP_UNPACK_ args);                                                        \
    }
GP_CU_LAUNCH(LAUNCH_WRAPPER_)
