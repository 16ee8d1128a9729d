/*
 * truth.c — what the other processes of this task really hold on a GPU, as
 * the driver counts it, so that a charge never rests on the ledger alone.
 *
 * The ledger a slice's processes share is a file its workload can write:
 * a process that rewrites it (zeroes what is used, or puts back a copy of
 * the empty books) would let the next process take the whole cap again. So
 * where the executor made the slice (its slice file names a ledger: a root
 * daemon, with cgroups), a charge must also fit the driver's own books:
 * this process's bookings plus what NVML says every other process of the
 * same task holds on that GPU (nvmlDeviceGetComputeRunningProcesses_v3,
 * contexts included) must stay within this process's cap. A process is of
 * the same task when its cgroups (/proc/PID/cgroup, which a task joins as
 * root before it starts and cannot leave) are this process's; only
 * processes of this process's user are read at all. None of this is data
 * the workload can write: the cap comes from the root-owned slice file, the
 * GPU from the driver (by UUID), the use from the driver, the membership
 * from the kernel. Where NVML gives no per-process memory the check is
 * skipped and the ledger is all there is (docs/interposer.md).
 *
 * A paused task may be resumed on other GPUs: the driver's restore keeps
 * the process's CUDA ordinals and moves each onto its new GPU, whose UUID
 * the ordinal then gives. So the GPU of a ledger row is asked again, by its
 * ordinal, each time its NVML handle is needed (a charge's check, a window
 * of the compute share), and a UUID that changed drops the old handle.
 */
#include "interpose/gpuslice.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CGROUP_MAX 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char self_cg[CGROUP_MAX];
static int self_cg_read; /* 1: read; -1: cannot be read */
static uint8_t uuid_of[GP_LEDGER_MAX_DEVICES][16];
static int uuid_known[GP_LEDGER_MAX_DEVICES];
static CUdevice ordinal_of[GP_LEDGER_MAX_DEVICES];
static nvmlDevice_t nvdev[GP_LEDGER_MAX_DEVICES];
static int nvdev_state[GP_LEDGER_MAX_DEVICES]; /* 0: not looked up; 1: found; -1: none */

/* Sets the UUID of ledger GPU dev; a new one drops the handle of the old.
 * With the lock held. */
static void set_uuid(int dev, const uint8_t uuid[16]) {
    if (!uuid_known[dev] || memcmp(uuid_of[dev], uuid, 16) != 0)
        nvdev_state[dev] = 0;
    memcpy(uuid_of[dev], uuid, 16);
    uuid_known[dev] = 1;
}

void gps__truth_device(int dev, CUdevice ordinal, const uint8_t uuid[16]) {
    if (dev < 0 || dev >= GP_LEDGER_MAX_DEVICES)
        return;
    pthread_mutex_lock(&lock);
    set_uuid(dev, uuid);
    ordinal_of[dev] = ordinal;
    pthread_mutex_unlock(&lock);
}

/* Asks the driver which GPU the ordinal of ledger GPU dev is now (a restore
 * onto other GPUs moves it) and records it. The driver is called without
 * the lock. */
static void follow(int dev) {
    pthread_mutex_lock(&lock);
    int known = uuid_known[dev];
    CUdevice ordinal = ordinal_of[dev];
    pthread_mutex_unlock(&lock);
    CUuuid now;
    if (!known || gps__device_uuid(ordinal, &now) != CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&lock);
    set_uuid(dev, (const uint8_t *)now.bytes);
    pthread_mutex_unlock(&lock);
}

/* Reads a small file whole into buf (NUL-terminated); its length, or -1. */
static int slurp(const char *path, char *buf, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    ssize_t n;
    while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    buf[got] = '\0';
    return (int)got;
}

/* True when process pid is of this process's user and task. */
static int same_task(unsigned pid) {
    char path[64], cg[CGROUP_MAX];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%u", pid);
    if (stat(path, &st) != 0 || st.st_uid != geteuid())
        return 0;
    snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
    return slurp(path, cg, sizeof cg) > 0 && strcmp(cg, self_cg) == 0;
}

/* The NVML handle of ledger GPU dev, or NULL; with the lock held. */
static nvmlDevice_t handle_of(int dev) {
    if (nvdev_state[dev] == 0) {
        nvdev_state[dev] = -1;
        const uint8_t *b = uuid_of[dev];
        char text[64];
        snprintf(text, sizeof text,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        if (uuid_known[dev] && gps__nvml_ready() &&
            GP_NVML(nvmlDeviceGetHandleByUUID, text, &nvdev[dev]) == NVML_SUCCESS)
            nvdev_state[dev] = 1;
    }
    return nvdev_state[dev] == 1 ? nvdev[dev] : NULL;
}

nvmlDevice_t gps__truth_handle(int dev) {
    if (dev < 0 || dev >= GP_LEDGER_MAX_DEVICES)
        return NULL;
    follow(dev);
    pthread_mutex_lock(&lock);
    nvmlDevice_t h = handle_of(dev);
    pthread_mutex_unlock(&lock);
    return h;
}

int64_t gps__truth_others(int dev) {
    if (dev < 0 || dev >= GP_LEDGER_MAX_DEVICES)
        return -1;
    follow(dev);
    pthread_mutex_lock(&lock);
    if (self_cg_read == 0)
        self_cg_read = slurp("/proc/self/cgroup", self_cg, sizeof self_cg) > 0 ? 1 : -1;
    nvmlDevice_t h = self_cg_read == 1 ? handle_of(dev) : NULL;
    int64_t others = -1;
    unsigned room = 64;
    for (int tries = 0; h != NULL && tries < 4 && others < 0; tries++) {
        nvmlProcessInfo_t *p = calloc(room, sizeof *p);
        unsigned count = room;
        nvmlReturn_t r = p != NULL ? GP_NVML(nvmlDeviceGetComputeRunningProcesses_v3, h, &count, p)
                                   : NVML_ERROR_UNKNOWN;
        if (r == NVML_SUCCESS) {
            others = 0;
            unsigned self = (unsigned)getpid();
            for (unsigned i = 0; i < count; i++)
                if (p[i].pid != self && p[i].usedGpuMemory != GP_NVML_VALUE_NOT_AVAILABLE &&
                    same_task(p[i].pid))
                    others += (int64_t)(p[i].usedGpuMemory < (1ULL << 50) ? p[i].usedGpuMemory
                                                                          : (1ULL << 50));
        }
        free(p);
        if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE)
            break;
        room = count > room ? count + 16 : room * 2; /* more may start meanwhile */
    }
    pthread_mutex_unlock(&lock);
    return others;
}
