/*
 * fake_state.c — TEST DOUBLE: the state of the fake GPUs (see fake.h).
 *
 * One struct, in shared memory so that every process of a test sees the
 * same GPUs: the authoritative books of device memory (total per GPU, the
 * peak ever reached, and per process, so that the memory of a process that
 * died can be freed the way the real driver frees it) and the kernel
 * timeline of each GPU (a ring of [start, end) intervals tagged with the
 * launching pid). Everything changes under one robust process-shared mutex.
 */
#include "fake_internal.h"

#include "common/units.h"
#include "interpose/gpuslice.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FAKE_MAGIC     0x656b616670677066ULL
#define FAKE_PROCS     512
#define FAKE_RING      16384
#define QUEUE_LIMIT_NS 20000000LL /* launches block beyond 20 ms of queued work */

struct fake_proc {
    int32_t pid;
    uint64_t used[GPFAKE_MAX_GPUS];
    struct fake_ckpt ckpt; /* the checkpoint API's state (fake_ckpt.c) */
};

struct fake_interval {
    int64_t start, end;
    int32_t pid;
};

struct fake_gpu {
    uint64_t used, peak;
    int64_t busy_until;
    uint64_t head;
    struct fake_interval ring[FAKE_RING];
};

struct fake_shared {
    uint64_t magic;
    pthread_mutex_t lock;
    struct fake_proc procs[FAKE_PROCS];
    struct fake_gpu gpu[GPFAKE_MAX_GPUS];
};

struct fake_config fake_cfg;
static struct fake_shared *shared;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* This process's row, cached (and forgotten in a forked child). */
static int my_row = -1, my_pid;

static void forget_row(void) {
    my_row = -1;
}

int64_t fake_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void fake_sleep_until(int64_t t) {
    struct timespec ts = {(time_t)(t / 1000000000LL), (long)(t % 1000000000LL)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

const char *gpfake_getenv(const char *name) {
    const char *v = getenv(name);
    if (v != NULL)
        return v;
    static __thread char line[512];
    char path[4096];
    Dl_info info;
    if (dladdr((void *)gpfake_getenv, &info) == 0 || info.dli_fname == NULL)
        return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    snprintf(path, sizeof path, "%.*s/fake.env", slash ? (int)(slash - info.dli_fname) : 1,
             slash ? info.dli_fname : ".");
    FILE *f = fopen(path, "re");
    size_t n = strlen(name);
    v = NULL;
    while (f != NULL && v == NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, name, n) == 0 && line[n] == '=') {
            line[strcspn(line, "\n")] = '\0';
            v = line + n + 1;
        }
    if (f != NULL)
        fclose(f);
    return v;
}

static uint64_t env_size(const char *name, uint64_t def) {
    const char *v = gpfake_getenv(name);
    int64_t out;
    return v && *v && gp_parse_size(v, &out) == 0 && out >= 0 ? (uint64_t)out : def;
}

static void init_mutex(pthread_mutex_t *m) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

static struct fake_shared *map_named(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "/%s", name);
    int fd = shm_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    flock(fd, LOCK_EX);
    struct stat st;
    fstat(fd, &st);
    int fresh = st.st_size == 0;
    if (fresh && ftruncate(fd, sizeof(struct fake_shared)) != 0) {
        close(fd);
        return NULL;
    }
    struct fake_shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s != MAP_FAILED && fresh) {
        init_mutex(&s->lock);
        s->magic = FAKE_MAGIC;
    }
    flock(fd, LOCK_UN);
    close(fd);
    return s == MAP_FAILED ? NULL : s;
}

static void init(void) {
    fake_cfg.ngpus = (int)env_size("GPUPOOL_FAKE_GPUS", 1);
    if (fake_cfg.ngpus < 1 || fake_cfg.ngpus > GPFAKE_MAX_GPUS)
        fake_cfg.ngpus = 1;
    fake_cfg.total = env_size("GPUPOOL_FAKE_GPU_MEMORY", 141ULL << 30);
    fake_cfg.driver_version = (int)env_size("GPUPOOL_FAKE_DRIVER_VERSION", 13000);
    fake_cfg.kernel_ns = (int64_t)env_size("GPUPOOL_FAKE_KERNEL_US", 0) * 1000;
    fake_cfg.ctx_memory = env_size("GPUPOOL_FAKE_CONTEXT_MEMORY", 0);
    fake_cfg.alloc_delay_us = env_size("GPUPOOL_FAKE_ALLOC_DELAY_US", 0);
    fake_cfg.fail_restores = env_size("GPUPOOL_FAKE_FAIL_RESTORES", 0);
    fake_cfg.no_backing = env_size("GPUPOOL_FAKE_NO_BACKING", 0) != 0;
    const char *name = gpfake_getenv("GPUPOOL_FAKE_LEDGER");
    if (name && *name) {
        shared = map_named(name);
    } else {
        shared =
            mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED)
            shared = NULL;
        else {
            init_mutex(&shared->lock);
            shared->magic = FAKE_MAGIC;
        }
    }
    if (!shared) {
        fprintf(stderr, "fake libcuda: cannot map its state\n");
        abort();
    }
    pthread_atfork(NULL, NULL, forget_row);
}

void fake_init(void) {
    pthread_once(&once, init);
}

void fake_lock(void) {
    fake_init();
    if (pthread_mutex_lock(&shared->lock) == EOWNERDEAD)
        pthread_mutex_consistent(&shared->lock);
}

void fake_unlock(void) {
    pthread_mutex_unlock(&shared->lock);
}

/* ---- memory books ----------------------------------------------------------- */

int fake_dead(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/* The driver frees a dead process's memory; so does the fake, when needed. */
static void reap_locked(void) {
    for (int i = 0; i < FAKE_PROCS; i++) {
        struct fake_proc *p = &shared->procs[i];
        if (p->pid == 0 || !fake_dead(p->pid))
            continue;
        for (int g = 0; g < GPFAKE_MAX_GPUS; g++)
            shared->gpu[g].used -= p->used[g];
        memset(p, 0, sizeof *p);
    }
}

static struct fake_proc *own_row_locked(void) {
    if (my_row >= 0 && shared->procs[my_row].pid == my_pid)
        return &shared->procs[my_row];
    int self = getpid(), free_row = -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < FAKE_PROCS; i++) {
            if (shared->procs[i].pid == self) {
                my_row = i;
                my_pid = self;
                return &shared->procs[i];
            }
            if (shared->procs[i].pid == 0 && free_row < 0)
                free_row = i;
        }
        if (free_row >= 0)
            break;
        reap_locked();
    }
    if (free_row < 0)
        return NULL;
    shared->procs[free_row].pid = self;
    my_row = free_row;
    my_pid = self;
    return &shared->procs[free_row];
}

struct fake_ckpt *fake_ckpt_row_locked(int pid) {
    if (pid == getpid()) {
        struct fake_proc *p = own_row_locked();
        return p ? &p->ckpt : NULL;
    }
    for (int i = 0; i < FAKE_PROCS; i++)
        if (shared->procs[i].pid == pid && pid > 0)
            return &shared->procs[i].ckpt;
    return NULL;
}

int fake_charge(int gpu, uint64_t bytes) {
    fake_lock();
    struct fake_gpu *g = &shared->gpu[gpu];
    if (g->used + bytes > fake_cfg.total)
        reap_locked();
    struct fake_proc *p = own_row_locked();
    int ok = p && g->used + bytes <= fake_cfg.total;
    if (ok) {
        g->used += bytes;
        p->used[gpu] += bytes;
        if (g->used > g->peak)
            g->peak = g->used;
    }
    fake_unlock();
    return ok ? 0 : -1;
}

void fake_uncharge(int gpu, uint64_t bytes) {
    fake_lock();
    struct fake_proc *p = own_row_locked();
    if (p) {
        p->used[gpu] -= bytes;
        shared->gpu[gpu].used -= bytes;
    }
    fake_unlock();
}

/* ---- kernel timeline ---------------------------------------------------------- */

void fake_launch(int gpu) {
    if (fake_cfg.kernel_ns <= 0)
        return;
    int64_t now = fake_now();
    fake_lock();
    struct fake_gpu *g = &shared->gpu[gpu];
    int64_t start = g->busy_until > now ? g->busy_until : now;
    g->busy_until = start + fake_cfg.kernel_ns;
    g->ring[g->head % FAKE_RING] = (struct fake_interval){start, g->busy_until, getpid()};
    g->head++;
    fake_unlock();
    /* A real launch queue is finite: block while it is long. */
    if (start - now > QUEUE_LIMIT_NS)
        fake_sleep_until(start - QUEUE_LIMIT_NS);
}

void fake_sync(int gpu) {
    fake_init();
    fake_sleep_until(__atomic_load_n(&shared->gpu[gpu].busy_until, __ATOMIC_RELAXED));
}

/* ---- what tests read ------------------------------------------------------------ */

uint64_t gpfake_used(int gpu) {
    fake_init();
    return __atomic_load_n(&shared->gpu[gpu].used, __ATOMIC_RELAXED);
}

uint64_t gpfake_peak(int gpu) {
    fake_init();
    return __atomic_load_n(&shared->gpu[gpu].peak, __ATOMIC_RELAXED);
}

void gpfake_reset_peak(int gpu) {
    fake_lock();
    shared->gpu[gpu].peak = shared->gpu[gpu].used;
    fake_unlock();
}

uint64_t gpfake_total(int gpu) {
    (void)gpu;
    fake_init();
    return fake_cfg.total;
}

int gpfake_count(void) {
    fake_init();
    return fake_cfg.ngpus;
}

uint64_t gpfake_busy_ns(int gpu, int pid, int64_t from, int64_t to) {
    uint64_t busy = 0;
    fake_lock();
    struct fake_gpu *g = &shared->gpu[gpu];
    uint64_t n = g->head < FAKE_RING ? g->head : FAKE_RING;
    for (uint64_t k = 0; k < n; k++) {
        const struct fake_interval *iv = &g->ring[(g->head - 1 - k) % FAKE_RING];
        if (iv->end <= from)
            break; /* the ring is in time order: everything older ends earlier */
        int64_t a = iv->start > from ? iv->start : from, b = iv->end < to ? iv->end : to;
        if ((pid == 0 || iv->pid == pid) && b > a)
            busy += (uint64_t)(b - a);
    }
    fake_unlock();
    return busy;
}

int gpfake_timeline_pids(int gpu, int64_t from, int64_t to, int *pids, int max) {
    int n = 0;
    fake_lock();
    struct fake_gpu *g = &shared->gpu[gpu];
    uint64_t depth = g->head < FAKE_RING ? g->head : FAKE_RING;
    for (uint64_t k = 0; k < depth; k++) {
        const struct fake_interval *iv = &g->ring[(g->head - 1 - k) % FAKE_RING];
        if (iv->end <= from)
            break;
        if (iv->start >= to)
            continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = pids[i] == iv->pid;
        if (!seen && n < max)
            pids[n++] = iv->pid;
    }
    fake_unlock();
    return n;
}

int gpfake_processes(int gpu, int *pids, uint64_t *bytes, int max) {
    int n = 0;
    if (gpu < 0 || gpu >= GPFAKE_MAX_GPUS)
        return 0;
    fake_lock();
    for (int i = 0; i < FAKE_PROCS; i++) {
        struct fake_proc *p = &shared->procs[i];
        if (p->pid == 0 || p->used[gpu] == 0)
            continue;
        if (fake_dead(p->pid)) { /* as the driver, NVML lists no process that has ended */
            for (int g = 0; g < GPFAKE_MAX_GPUS; g++)
                shared->gpu[g].used -= p->used[g];
            memset(p, 0, sizeof *p);
            continue;
        }
        if (n < max) {
            pids[n] = p->pid;
            bytes[n] = p->used[gpu];
        }
        n++;
    }
    fake_unlock();
    return n;
}

int gpfake_alloc_unseen(int gpu, uint64_t bytes) {
    fake_init();
    if (gpu < 0 || gpu >= fake_cfg.ngpus)
        return -1;
    return fake_charge(gpu, bytes);
}

void gpfake_uuid(int gpu, uint8_t out[16]) {
    static const uint8_t base[16] = {0x67, 0x70, 0x66, 0x61, 0x6b, 0x65, 0x2d, 0x67,
                                     0x70, 0x75, 0x2d, 0x30, 0x30, 0x30, 0x30, 0x00};
    memcpy(out, base, 16);
    out[15] = (uint8_t)gpu;
}
