/*
 * ledger.c — the shared-memory ledger of a GPU slice (see ledger.h).
 *
 * The ledger is one fixed-size struct in POSIX shared memory: a header
 * (magic, version, size), a robust process-shared mutex, a table of the
 * slice's GPUs (UUID, cap, bytes used, peak) and a table of processes (pid,
 * start time, bytes held per GPU). Every charge and release changes the
 * process's row and the GPU's total together under the mutex, so the GPU's
 * total is always the sum of the rows; a process killed while holding the
 * mutex leaves that sum possibly half-updated, which the next locker sees as
 * EOWNERDEAD and repairs by adding the rows up again.
 *
 * A process that dies without releasing its memory (the driver frees it
 * when the process goes) still has a row. Rows of dead processes are
 * reaped: at most once a second by whoever charges or reports, at once when
 * a charge would go over the cap (a quick check of which pids still exist,
 * with the full /proc check at most once per 10 ms so that a workload
 * spinning on out-of-memory does not spend its time in /proc), and by the
 * node-side reader. A process is alive when /proc/<pid>/stat exists,
 * is not a zombie and shows the start time recorded in its row (a reused
 * pid has another start time).
 */
#include "interpose/ledger-int.h"

#include "common/gp_error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LEDGER_MAGIC            0x3165636973706700ULL /* "\0gpsice1" read little-endian */
#define LEDGER_VERSION          1u
#define REAP_PERIOD_NS          1000000000ULL
#define OVERFLOW_REAP_PERIOD_NS 10000000ULL
#define LEDGER_BY_EXECUTOR      1u

struct ledger_dev {
    uint8_t uuid[16];
    uint32_t in_use; /* published last, with release order */
    uint32_t share;  /* compute share in percent; 0: none */
    uint64_t cap;
    uint64_t used;
    uint64_t peak;
};

struct ledger_proc {
    int32_t pid; /* 0: free row */
    uint32_t reserved;
    uint64_t start_time; /* clock ticks since boot, /proc/<pid>/stat field 22 */
    uint64_t used[GP_LEDGER_MAX_DEVICES];
};

struct ledger_shm {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    pthread_mutex_t lock;
    uint64_t last_reap_ns;
    uint64_t last_overflow_reap_ns;
    uint32_t ndevices;
    uint32_t flags; /* LEDGER_BY_EXECUTOR; 0 in ledgers made by a workload */
    struct ledger_dev dev[GP_LEDGER_MAX_DEVICES];
    struct ledger_proc proc[GP_LEDGER_MAX_PROCS];
};

struct gp_ledger {
    struct ledger_shm *shm; /* the mapping; a read-only handle's own copy */
    int writable;
    int slot; /* this process's row, or -1 until its first charge */
    int pid;  /* the pid `slot` belongs to; differs after fork */
    int fd;   /* a read-only handle's file, read again at each usage; else -1 */
};

#define LOAD(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void set_err(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(char *err, const char *fmt, ...) {
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, 256, fmt, ap);
    va_end(ap);
}

/* ---- process liveness ---------------------------------------------------- */

/* Reads the state letter and start time of pid from /proc. Returns 0, or -1
 * when the process does not exist (or /proc cannot say). */
static int proc_stat(int pid, char *state, uint64_t *start) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: skip to the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return -1;
    *state = p[2];
    p += 3;
    /* p is at the blank before field 4; the start time is field 22. */
    for (int field = 4; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return -1;
    *start = strtoull(p + 1, NULL, 10);
    return 0;
}

static uint64_t self_start_time(void) {
    char state;
    uint64_t start = 0;
    if (proc_stat(getpid(), &state, &start) != 0)
        return 0;
    return start;
}

/* True when the process of a row still runs. Without /proc (start time 0
 * recorded) only the pid's existence can be checked. */
static int row_alive(const struct ledger_proc *p) {
    int pid = LOAD(&p->pid);
    uint64_t start = LOAD(&p->start_time);
    if (start == 0)
        return kill(pid, 0) == 0 || errno == EPERM;
    char state;
    uint64_t now_start;
    if (proc_stat(pid, &state, &now_start) != 0)
        return 0;
    return state != 'Z' && state != 'X' && now_start == start;
}

/* ---- books, all with the lock held -------------------------------------- */

/* Gives back everything row i holds and frees the row. */
static void drop_row_locked(struct ledger_shm *s, int i) {
    struct ledger_proc *p = &s->proc[i];
    for (int d = 0; d < GP_LEDGER_MAX_DEVICES; d++) {
        uint64_t held = LOAD(&p->used[d]), total = LOAD(&s->dev[d].used);
        STORE(&s->dev[d].used, total > held ? total - held : 0);
        STORE(&p->used[d], 0);
    }
    STORE(&p->start_time, 0);
    STORE(&p->pid, 0);
}

/* Reaps the rows of processes that died; returns how many. The thorough
 * reap reads /proc (zombies, reused pids); the quick one only asks whether
 * the pid still exists, which is cheap enough for every over-cap charge. */
static int reap_locked(struct ledger_shm *s, uint64_t now, int thorough) {
    int reaped = 0, self = getpid();
    for (int i = 0; i < GP_LEDGER_MAX_PROCS; i++) {
        int pid = LOAD(&s->proc[i].pid);
        if (pid == 0 || pid == self)
            continue;
        int dead = thorough ? !row_alive(&s->proc[i]) : kill(pid, 0) != 0 && errno == ESRCH;
        if (dead) {
            drop_row_locked(s, i);
            reaped++;
        }
    }
    if (thorough)
        STORE(&s->last_reap_ns, now);
    return reaped;
}

/* After a holder died inside the lock: make each GPU's total the sum of
 * the rows again, whatever the holder had half-done. */
static void repair_locked(struct ledger_shm *s) {
    for (int d = 0; d < GP_LEDGER_MAX_DEVICES; d++) {
        uint64_t sum = 0;
        for (int i = 0; i < GP_LEDGER_MAX_PROCS; i++)
            if (LOAD(&s->proc[i].pid) != 0)
                sum += LOAD(&s->proc[i].used[d]);
        STORE(&s->dev[d].used, sum);
    }
}

int gps__ledger_lock(gp_ledger *l) {
    int rc = pthread_mutex_lock(&l->shm->lock);
    if (rc == EOWNERDEAD) {
        pthread_mutex_consistent(&l->shm->lock);
        repair_locked(l->shm);
        reap_locked(l->shm, now_ns(), 1);
        return 0;
    }
    return rc == 0 ? 0 : GP_ECORRUPT;
}

static void ledger_unlock(gp_ledger *l) {
    pthread_mutex_unlock(&l->shm->lock);
}

/* Returns this process's row, taking one on first use. A row that already
 * carries our pid is ours from before an exec (same pid, same start time):
 * the driver freed that image's memory, so its charges are dropped. */
static int own_row_locked(gp_ledger *l) {
    struct ledger_shm *s = l->shm;
    /* The fast path makes no system call (getpid costs microseconds on some
     * virtual machines): after a fork, gps__ledger_after_fork() clears slot. */
    if (l->slot >= 0 && LOAD(&s->proc[l->slot].pid) == l->pid)
        return l->slot;
    int self = getpid();
    int free_row = -1;
    for (int pass = 0; pass < 2 && free_row < 0; pass++) {
        for (int i = 0; i < GP_LEDGER_MAX_PROCS; i++) {
            int pid = LOAD(&s->proc[i].pid);
            if (pid == self)
                drop_row_locked(s, i);
            if (LOAD(&s->proc[i].pid) == 0 && free_row < 0)
                free_row = i;
        }
        if (free_row < 0)
            reap_locked(s, now_ns(), 1);
    }
    if (free_row < 0)
        return -1;
    STORE(&s->proc[free_row].start_time, self_start_time());
    STORE(&s->proc[free_row].pid, self);
    l->slot = free_row;
    l->pid = self;
    return free_row;
}

/* ---- the interposer's side ---------------------------------------------- */

static int fits(uint64_t used, uint64_t bytes, uint64_t cap) {
    return bytes <= cap && used <= cap - bytes;
}

int gps__ledger_charge(gp_ledger *l, int dev, uint64_t bytes, uint64_t bound) {
    struct ledger_shm *s = l->shm;
    if (gps__ledger_lock(l) != 0)
        return GP_ECORRUPT;
    int row = own_row_locked(l);
    if (row < 0) {
        ledger_unlock(l);
        return GP_ENOSPC;
    }
    struct ledger_dev *d = &s->dev[dev];
    uint64_t now = now_ns();
    if (now - LOAD(&s->last_reap_ns) >= REAP_PERIOD_NS)
        reap_locked(s, now, 1);
    uint64_t used = LOAD(&d->used), cap = LOAD(&d->cap);
    if (bound < cap)
        cap = bound;
    if (!fits(used, bytes, cap)) {
        /* Memory of a dead process may be what stands in the way. */
        int thorough = now - LOAD(&s->last_overflow_reap_ns) >= OVERFLOW_REAP_PERIOD_NS;
        if (thorough)
            STORE(&s->last_overflow_reap_ns, now);
        int reaped = reap_locked(s, now, thorough);
        used = LOAD(&d->used);
        if (!reaped || !fits(used, bytes, cap)) {
            ledger_unlock(l);
            return GP_ENOMEM;
        }
    }
    STORE(&s->proc[row].used[dev], LOAD(&s->proc[row].used[dev]) + bytes);
    STORE(&d->used, used + bytes);
    if (used + bytes > LOAD(&d->peak))
        STORE(&d->peak, used + bytes);
    ledger_unlock(l);
    return 0;
}

void gps__ledger_release(gp_ledger *l, int dev, uint64_t bytes) {
    struct ledger_shm *s = l->shm;
    if (gps__ledger_lock(l) != 0)
        return;
    int row = own_row_locked(l);
    if (row >= 0) {
        uint64_t held = LOAD(&s->proc[row].used[dev]);
        /* Never give back more than this process holds: a release of memory
         * charged before a fork belongs to the parent's row. */
        if (bytes > held)
            bytes = held;
        uint64_t total = LOAD(&s->dev[dev].used);
        STORE(&s->proc[row].used[dev], held - bytes);
        STORE(&s->dev[dev].used, total > bytes ? total - bytes : 0);
    }
    ledger_unlock(l);
}

void gps__ledger_get(gp_ledger *l, int dev, uint64_t *cap, uint64_t *used) {
    struct ledger_shm *s = l->shm;
    uint64_t now = now_ns();
    if (now - LOAD(&s->last_reap_ns) >= REAP_PERIOD_NS && gps__ledger_lock(l) == 0) {
        reap_locked(s, now, 1);
        ledger_unlock(l);
    }
    *cap = LOAD(&s->dev[dev].cap);
    *used = LOAD(&s->dev[dev].used);
}

int gps__ledger_find(gp_ledger *l, const uint8_t uuid[16]) {
    struct ledger_shm *s = l->shm;
    for (int d = 0; d < GP_LEDGER_MAX_DEVICES; d++)
        if (__atomic_load_n(&s->dev[d].in_use, __ATOMIC_ACQUIRE) &&
            memcmp(s->dev[d].uuid, uuid, 16) == 0)
            return d;
    return GP_ENOENT;
}

int gps__ledger_device(gp_ledger *l, const uint8_t uuid[16], uint64_t cap, uint32_t share) {
    int d = gps__ledger_find(l, uuid);
    if (d >= 0)
        return d;
    if (gps__ledger_lock(l) != 0)
        return GP_ECORRUPT;
    struct ledger_shm *s = l->shm;
    d = gps__ledger_find(l, uuid);
    if (d < 0 && s->ndevices < GP_LEDGER_MAX_DEVICES) {
        d = (int)s->ndevices;
        memcpy(s->dev[d].uuid, uuid, 16);
        STORE(&s->dev[d].cap, cap);
        STORE(&s->dev[d].share, share);
        __atomic_store_n(&s->dev[d].in_use, 1, __ATOMIC_RELEASE);
        STORE(&s->ndevices, s->ndevices + 1);
    }
    ledger_unlock(l);
    return d >= 0 ? d : GP_ENOSPC;
}

uint32_t gps__ledger_share(gp_ledger *l, int dev) {
    return LOAD(&l->shm->dev[dev].share);
}

int gps__ledger_pids(gp_ledger *l, int *pids, int max) {
    int n = 0;
    for (int i = 0; i < GP_LEDGER_MAX_PROCS && n < max; i++) {
        int pid = LOAD(&l->shm->proc[i].pid);
        if (pid != 0)
            pids[n++] = pid;
    }
    return n;
}

void gps__ledger_after_fork(gp_ledger *l) {
    l->slot = -1;
    l->pid = 0;
}

/* ---- opening ------------------------------------------------------------- */

static int init_shm(struct ledger_shm *s) {
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0)
        return GP_ESYS;
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(&s->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (rc != 0)
        return GP_ESYS;
    s->version = LEDGER_VERSION;
    s->size = (uint32_t)sizeof *s;
    __atomic_store_n(&s->magic, LEDGER_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

static int check_shm(const struct ledger_shm *s, char *err) {
    if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != LEDGER_MAGIC) {
        set_err(err, "not a gpupool slice ledger (bad magic)");
        return GP_ECORRUPT;
    }
    if (s->version != LEDGER_VERSION || s->size != sizeof *s) {
        set_err(err, "ledger of another version or size");
        return GP_ECORRUPT;
    }
    return 0;
}

static int valid_name(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > GP_LEDGER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return name[0] != '.';
}

static int wrap_handle(struct ledger_shm *s, int writable, gp_ledger **out) {
    gp_ledger *l = calloc(1, sizeof *l);
    if (!l) {
        munmap(s, sizeof *s);
        return GP_ENOMEM;
    }
    l->shm = s;
    l->writable = writable;
    l->slot = -1;
    l->fd = -1;
    *out = l;
    return 0;
}

/* ---- reading without a mapping -------------------------------------------
 *
 * The node side (a daemon running as root) reads ledgers that the workload
 * owns and may change at any time: shrink under a mapping (a read of the
 * missing part is SIGBUS), replace by a FIFO (an open would block), grow.
 * So a read-only handle never maps the file: it keeps the file open and
 * reads a private copy with pread, checking the file's type and size and
 * the copy's magic, version and size at every read. What it reports is
 * then whatever the workload wrote, as numbers (see gp_ledger_usage). */

/* Reads the whole ledger from fd into copy: 0, or GP_ECORRUPT (err says
 * why) when fd is not a regular file of the ledger's size, or shrank while
 * it was read, or the copy is not a ledger of this version. */
static int read_copy(int fd, struct ledger_shm *copy, char *err) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t)sizeof *copy) {
        set_err(err, "ledger: not a regular file of %zu bytes", sizeof *copy);
        return GP_ECORRUPT;
    }
    size_t got = 0;
    while (got < sizeof *copy) {
        ssize_t n = pread(fd, (char *)copy + got, sizeof *copy - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            set_err(err, "ledger: shorter than %zu bytes", sizeof *copy);
            return GP_ECORRUPT;
        }
        got += (size_t)n;
    }
    return check_shm(copy, err);
}

/* Opens a read-only handle on fd (which it takes, closing it on error). A
 * process that is not root reads only ledgers of its own that are closed to
 * others, as map_fd() does. */
static int open_copy(int fd, gp_ledger **out, char *err) {
    struct stat st;
    struct ledger_shm *copy = malloc(sizeof *copy);
    gp_ledger *l = calloc(1, sizeof *l);
    int rc = copy != NULL && l != NULL ? 0 : GP_ENOMEM;
    if (rc == 0 && fstat(fd, &st) != 0) {
        set_err(err, "ledger: %s", strerror(errno));
        rc = GP_ESYS;
    } else if (rc == 0 && geteuid() != 0 && (st.st_uid != geteuid() || (st.st_mode & 077))) {
        set_err(err, "ledger is not owned by this user or is open to others");
        rc = GP_EPERM;
    }
    if (rc == 0)
        rc = read_copy(fd, copy, err);
    if (rc != 0) {
        free(copy);
        free(l);
        close(fd);
        return rc;
    }
    l->shm = copy;
    l->slot = -1;
    l->fd = fd;
    *out = l;
    return 0;
}

/* Maps the opened ledger fd, creating the contents when asked and empty.
 * The creator holds flock() while it initialises, so two processes starting
 * together never both initialise; the lock dies with its holder. */
static int map_fd(int fd, int flags, struct ledger_shm **out, char *err) {
    int writable = flags & (GP_LEDGER_WRITE | GP_LEDGER_CREATE);
    struct stat st;
    if ((flags & GP_LEDGER_CREATE) && flock(fd, LOCK_EX) != 0)
        return GP_ESYS;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = GP_ESYS;
    } else if (geteuid() != 0 && (st.st_uid != geteuid() || (st.st_mode & 077))) {
        set_err(err, "ledger is not owned by this user or is open to others");
        rc = GP_EPERM;
    } else if (st.st_size == 0 && (flags & GP_LEDGER_CREATE)) {
        if (ftruncate(fd, (off_t)sizeof(struct ledger_shm)) != 0)
            rc = GP_ESYS;
    } else if (st.st_size != (off_t)sizeof(struct ledger_shm)) {
        set_err(err, "ledger of another version or size");
        rc = GP_ECORRUPT;
    }
    void *p = MAP_FAILED;
    if (rc == 0) {
        p = mmap(NULL, sizeof(struct ledger_shm), writable ? PROT_READ | PROT_WRITE : PROT_READ,
                 MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            rc = GP_ESYS;
    }
    if (rc == 0 && (flags & GP_LEDGER_CREATE) && st.st_size == 0)
        rc = init_shm(p);
    if (rc == 0)
        rc = check_shm(p, err);
    if (flags & GP_LEDGER_CREATE)
        flock(fd, LOCK_UN);
    if (rc != 0 && p != MAP_FAILED)
        munmap(p, sizeof(struct ledger_shm));
    if (rc == GP_ESYS)
        set_err(err, "ledger: %s", strerror(errno));
    if (rc == 0)
        *out = p;
    return rc;
}

int gp_ledger_open(const char *name, int flags, gp_ledger **out, char *err) {
    if (!valid_name(name)) {
        set_err(err, "invalid slice name '%s' (letters, digits, '.', '_', '-')", name ? name : "");
        return GP_EINVAL;
    }
    char path[GP_LEDGER_NAME_MAX + 32];
    snprintf(path, sizeof path, "/gpupool-slice-%s", name);
    int writable = (flags & (GP_LEDGER_WRITE | GP_LEDGER_CREATE)) != 0;
    /* O_NONBLOCK: a FIFO put under the name must not hold the reader. */
    int oflag =
        writable ? O_RDWR | ((flags & GP_LEDGER_CREATE) ? O_CREAT : 0) : O_RDONLY | O_NONBLOCK;
    mode_t old = umask(077);
    int fd = shm_open(path, oflag | O_CLOEXEC, 0600);
    umask(old);
    if (fd < 0) {
        int e = errno;
        set_err(err, "ledger %s: cannot open", path);
        return e == ENOENT ? GP_ENOENT : e == EACCES ? GP_EPERM : GP_ESYS;
    }
    if (!writable)
        return open_copy(fd, out, err);
    struct ledger_shm *s;
    int rc = map_fd(fd, flags, &s, err);
    close(fd);
    return rc == 0 ? wrap_handle(s, writable, out) : rc;
}

int gp_ledger_create_file(const char *path, unsigned uid, unsigned gid, char *err) {
    if (unlink(path) != 0 && errno != ENOENT) {
        set_err(err, "ledger %s: cannot remove what is there: %s", path, strerror(errno));
        return GP_ESYS;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        set_err(err, "ledger %s: %s", path, strerror(errno));
        return GP_ESYS;
    }
    int rc = GP_ESYS;
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)sizeof(struct ledger_shm)) == 0)
        p = mmap(NULL, sizeof(struct ledger_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED && init_shm(p) == 0) {
        ((struct ledger_shm *)p)->flags = LEDGER_BY_EXECUTOR;
        rc = 0;
    }
    if (rc == 0 && (fchown(fd, (uid_t)uid, (gid_t)gid) != 0 || fchmod(fd, 0600) != 0))
        rc = GP_ESYS;
    if (rc != 0)
        set_err(err, "ledger %s: %s", path, strerror(errno));
    if (p != MAP_FAILED)
        munmap(p, sizeof(struct ledger_shm));
    close(fd);
    if (rc != 0)
        unlink(path);
    return rc;
}

int gp_ledger_open_file(const char *path, int flags, gp_ledger **out, char *err) {
    int writable = (flags & GP_LEDGER_WRITE) != 0;
    int fd = open(path, (writable ? O_RDWR : O_RDONLY | O_NONBLOCK) | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        set_err(err, "ledger %s: cannot open: %s", path, strerror(e));
        return e == ENOENT ? GP_ENOENT : e == EACCES ? GP_EPERM : GP_ESYS;
    }
    if (!writable) {
        int rc = open_copy(fd, out, err);
        if (rc == 0 && !((*out)->shm->flags & LEDGER_BY_EXECUTOR)) {
            set_err(err, "ledger %s was not made by the executor", path);
            gp_ledger_close(*out);
            rc = GP_EPERM;
        }
        return rc;
    }
    struct stat st;
    struct ledger_shm *s;
    int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? 0 : GP_ECORRUPT;
    if (rc != 0)
        set_err(err, "ledger %s: not a regular file", path);
    else
        rc = map_fd(fd, flags & GP_LEDGER_WRITE, &s, err);
    close(fd);
    if (rc == 0 && !(LOAD(&s->flags) & LEDGER_BY_EXECUTOR)) {
        set_err(err, "ledger %s was not made by the executor", path);
        munmap(s, sizeof *s);
        rc = GP_EPERM;
    }
    return rc == 0 ? wrap_handle(s, writable, out) : rc;
}

int gps__ledger_open_private(gp_ledger **out, char *err) {
    void *p = mmap(NULL, sizeof(struct ledger_shm), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        set_err(err, "ledger: %s", strerror(errno));
        return GP_ESYS;
    }
    int rc = init_shm(p);
    if (rc != 0) {
        munmap(p, sizeof(struct ledger_shm));
        return rc;
    }
    return wrap_handle(p, 1, out);
}

void gp_ledger_close(gp_ledger *l) {
    if (!l)
        return;
    if (l->fd >= 0) {
        close(l->fd);
        free(l->shm);
    } else {
        munmap(l->shm, sizeof *l->shm);
    }
    free(l);
}

int gp_ledger_unlink(const char *name) {
    if (!valid_name(name))
        return GP_EINVAL;
    char path[GP_LEDGER_NAME_MAX + 32];
    snprintf(path, sizeof path, "/gpupool-slice-%s", name);
    return shm_unlink(path) == 0 ? 0 : errno == ENOENT ? GP_ENOENT : GP_ESYS;
}

/* ---- the node side's reader ---------------------------------------------- */

/* Opens the ledger file at path and reads it into *copy: the open fd, or a
 * negative GP_E* code with err set. */
static int open_rows(const char *path, int flags, struct ledger_shm *copy, char *err) {
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        set_err(err, "ledger %s: cannot open: %s", path, strerror(e));
        return e == ENOENT ? GP_ENOENT : GP_ESYS;
    }
    /* As gp_ledger_open(): not root, only a ledger of its own closed to others. */
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? 0 : GP_ESYS;
    if (rc == 0 && geteuid() != 0 && (st.st_uid != geteuid() || (st.st_mode & 077))) {
        set_err(err, "ledger %s is not owned by this user or is open to others", path);
        rc = GP_EPERM;
    }
    if (rc == 0)
        rc = read_copy(fd, copy, err);
    if (rc == 0 && copy->ndevices > GP_LEDGER_MAX_DEVICES) {
        set_err(err, "ledger %s: %u GPU rows", path, copy->ndevices);
        rc = GP_ECORRUPT;
    }
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int gp_ledger_file_gpus(const char *path, uint8_t (*out)[16], int max, char *err) {
    if (max < 0)
        return GP_EINVAL;
    struct ledger_shm *copy = malloc(sizeof *copy);
    if (copy == NULL)
        return GP_ENOMEM;
    int fd = open_rows(path, O_RDONLY | O_NONBLOCK, copy, err), n = fd;
    if (fd >= 0) {
        n = (int)copy->ndevices;
        for (int d = 0; d < n && d < max; d++)
            memcpy(out[d], copy->dev[d].uuid, 16);
        close(fd);
    }
    free(copy);
    return n;
}

int gp_ledger_file_set_gpus(const char *path, const uint8_t (*uuids)[16], int n, char *err) {
    if (n < 0 || n > GP_LEDGER_MAX_DEVICES)
        return GP_EINVAL;
    struct ledger_shm *copy = malloc(sizeof *copy);
    if (copy == NULL)
        return GP_ENOMEM;
    int fd = open_rows(path, O_RDWR, copy, err), rc = fd < 0 ? fd : 0;
    if (rc == 0 && copy->ndevices != (uint32_t)n) {
        set_err(err, "ledger %s has %u GPU rows, not %d", path, copy->ndevices, n);
        rc = GP_ESTATE;
    }
    for (int d = 0; rc == 0 && d < n; d++) {
        off_t at = (off_t)(offsetof(struct ledger_shm, dev) + (size_t)d * sizeof copy->dev[0] +
                           offsetof(struct ledger_dev, uuid));
        if (pwrite(fd, uuids[d], 16, at) != 16) {
            set_err(err, "ledger %s: %s", path, strerror(errno));
            rc = GP_ESYS;
        }
    }
    if (fd >= 0)
        close(fd);
    free(copy);
    return rc;
}

int gp_ledger_usage(gp_ledger *l, gp_ledger_device_usage *out, int max) {
    struct ledger_shm *s = l->shm;
    if (l->fd >= 0 && read_copy(l->fd, s, NULL) != 0)
        return GP_ECORRUPT;
    if (l->writable && gps__ledger_lock(l) == 0) {
        reap_locked(s, now_ns(), 1);
        ledger_unlock(l);
    }
    int n = 0;
    for (int d = 0; d < GP_LEDGER_MAX_DEVICES; d++) {
        if (!__atomic_load_n(&s->dev[d].in_use, __ATOMIC_ACQUIRE))
            continue;
        if (n < max) {
            gp_ledger_device_usage *u = &out[n];
            memcpy(u->uuid, s->dev[d].uuid, 16);
            u->cap = LOAD(&s->dev[d].cap);
            u->used = LOAD(&s->dev[d].used);
            u->peak = LOAD(&s->dev[d].peak);
            u->compute_share = LOAD(&s->dev[d].share);
            u->processes = 0;
            for (int i = 0; i < GP_LEDGER_MAX_PROCS; i++)
                if (LOAD(&s->proc[i].pid) != 0 && LOAD(&s->proc[i].used[d]) != 0)
                    u->processes++;
        }
        n++;
    }
    return n;
}
