/*
 * fake_ckpt.c — TEST DOUBLE: the driver's checkpoint API (CUDA 12.8+,
 * common/gp_cuckpt.h) over the fake GPUs.
 *
 * As in the real driver, the work is done inside the process being
 * checkpointed, by a thread of its own driver (the "restore thread" whose id
 * cuCheckpointProcessGetRestoreThreadId gives), started when the process
 * first uses CUDA; the caller, another process with the driver loaded, only
 * asks and waits. The request travels through the process's row of the
 * shared fake state (fake_state.c): the caller writes it and bumps a futex
 * word, the thread carries it out and answers through another.
 *
 * The state machine is the documented one (RUNNING, LOCKED, CHECKPOINTED):
 * a call in the wrong state is CUDA_ERROR_ILLEGAL_STATE and changes nothing;
 * a process without CUDA, or no process at all, is CUDA_ERROR_INVALID_VALUE.
 * Lock stops new API calls and waits for those under way (a kernel being
 * synchronised keeps one under way, or the process is stopped and its thread
 * with it: with a timeout, the lock gives up with CUDA_ERROR_NOT_READY and
 * the process stays RUNNING). Checkpoint copies each
 * allocation's contents to host memory, replaces the device mapping with
 * fresh pages (what was there is gone, as on a GPU given to someone else) and
 * gives the GPU books back. Restore books the memory again, on the GPUs the
 * UUID pairs name or on the same ones (CUDA_ERROR_OUT_OF_MEMORY and still
 * CHECKPOINTED if they lack room), and copies the contents back; after a
 * restore onto other GPUs the process keeps its device ordinals and its
 * contexts (cuCtxGetDevice says the same), but each ordinal moved is now the
 * GPU its pair names, with that GPU's UUID (cuDeviceGetUuid). A driver
 * older than GP_CU_CKPT_MIN_DRIVER (GPUPOOL_FAKE_DRIVER_VERSION) answers
 * CUDA_ERROR_NOT_SUPPORTED to all of it.
 */
#include "fake_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

enum { OP_LOCK = 1, OP_CHECKPOINT, OP_RESTORE, OP_UNLOCK };

/* ---- the gate: the process's own API calls ---------------------------------- */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_locked, gate_inflight;

void fake_gate_enter(void) {
    pthread_mutex_lock(&gate_mu);
    while (gate_locked)
        pthread_cond_wait(&gate_cv, &gate_mu);
    gate_inflight++;
    pthread_mutex_unlock(&gate_mu);
}

void fake_gate_leave(void) {
    pthread_mutex_lock(&gate_mu);
    gate_inflight--;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* Closes the gate and waits for the calls under way, at most timeout_ms
 * (0: for ever). 0, or -1 with the gate open again. */
static int gate_close(unsigned timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&gate_mu);
    gate_locked = 1;
    while (gate_inflight > 0 && rc == 0)
        rc = timeout_ms ? pthread_cond_timedwait(&gate_cv, &gate_mu, &until)
                        : pthread_cond_wait(&gate_cv, &gate_mu);
    if (gate_inflight > 0) {
        gate_locked = 0;
        pthread_cond_broadcast(&gate_cv);
        rc = -1;
    } else
        rc = 0;
    pthread_mutex_unlock(&gate_mu);
    return rc;
}

static void gate_open(void) {
    pthread_mutex_lock(&gate_mu);
    gate_locked = 0;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* ---- futex words in the shared state ---------------------------------------- */

static void futex_wait(uint32_t *word, uint32_t val, long timeout_ms) {
    struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    syscall(SYS_futex, word, FUTEX_WAIT, val, timeout_ms >= 0 ? &ts : NULL, NULL, 0);
}

static void futex_wake(uint32_t *word) {
    syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* ---- the process's checkpoint thread ---------------------------------------- */

/* Carries out request req of c (read under the lock): its CUresult, or 1
 * where its caller withdrew it before it was taken up (nothing done). */
static int serve(struct fake_ckpt *c, uint32_t req) {
    fake_lock();
    if (__atomic_load_n(&c->done_seq, __ATOMIC_ACQUIRE) == req) {
        fake_unlock();
        return 1;
    }
    c->taken_seq = req;
    int op = c->op;
    unsigned timeout = c->timeout_ms;
    int32_t map[GPFAKE_MAX_GPUS];
    memcpy(map, c->map, sizeof map);
    uint64_t host[GPFAKE_MAX_GPUS];
    memcpy(host, c->host, sizeof host);
    uint32_t gpus = c->gpus;
    int fail = op == OP_RESTORE && c->fail_restores > 0;
    if (fail)
        c->fail_restores--;
    fake_unlock();

    int rc = GP_CU_SUCCESS, next = -1;
    switch (op) {
    case OP_LOCK:
        if (gate_close(timeout) == 0)
            next = GP_CU_PROCESS_LOCKED;
        else
            rc = GP_CU_ERROR_NOT_READY;
        break;
    case OP_CHECKPOINT:
        memset(host, 0, sizeof host);
        gpus = 0;
        if ((rc = fake_ckpt_move_out(host, &gpus)) == GP_CU_SUCCESS)
            next = GP_CU_PROCESS_CHECKPOINTED;
        break;
    case OP_RESTORE:
        rc = fail ? GP_CU_ERROR_NOT_SUPPORTED : fake_ckpt_move_in(map, host, gpus);
        if (rc == GP_CU_SUCCESS) {
            next = GP_CU_PROCESS_LOCKED;
            memset(host, 0, sizeof host);
            gpus = 0;
        }
        break;
    case OP_UNLOCK:
        gate_open();
        next = GP_CU_PROCESS_RUNNING;
        break;
    default:
        rc = GP_CU_ERROR_INVALID_VALUE;
    }
    fake_lock();
    if (next >= 0) {
        c->state = next;
        memcpy(c->host, host, sizeof host);
        c->gpus = gpus;
    }
    fake_unlock();
    return rc;
}

static sem_t started;

static void *ckpt_thread(void *arg) {
    struct fake_ckpt *c = arg;
    fake_lock();
    c->tid = (int32_t)syscall(SYS_gettid);
    fake_unlock();
    sem_post(&started);
    for (;;) {
        uint32_t req = __atomic_load_n(&c->req_seq, __ATOMIC_ACQUIRE);
        if (req == __atomic_load_n(&c->done_seq, __ATOMIC_ACQUIRE)) {
            futex_wait(&c->req_seq, req, -1);
            continue;
        }
        int rc = serve(c, req);
        if (rc == 1)
            continue;
        fake_lock();
        c->result = rc;
        fake_unlock();
        __atomic_store_n(&c->done_seq, req, __ATOMIC_RELEASE);
        futex_wake(&c->done_seq);
    }
    return NULL;
}

static pthread_mutex_t attach_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t attached_pid;

void fake_ckpt_attach(void) {
    fake_init();
    pid_t self = getpid();
    if (__atomic_load_n(&attached_pid, __ATOMIC_ACQUIRE) == self)
        return;
    pthread_mutex_lock(&attach_mu);
    if (attached_pid != self) {
        /* A forked child inherits neither the thread nor a closed gate. */
        gate_locked = 0;
        gate_inflight = 0;
        fake_lock();
        struct fake_ckpt *c = fake_ckpt_row_locked(self);
        if (c != NULL) {
            memset(c, 0, sizeof *c);
            c->state = GP_CU_PROCESS_RUNNING;
            c->fail_restores = (int32_t)fake_cfg.fail_restores;
        }
        fake_unlock();
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signal */
        sem_init(&started, 0, 0);
        if (c != NULL && pthread_create(&t, NULL, ckpt_thread, c) == 0) {
            pthread_detach(t);
            /* Known to callers (its tid set) before the first call returns. */
            while (sem_wait(&started) != 0)
                ;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        __atomic_store_n(&attached_pid, self, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&attach_mu);
}

/* ---- the caller's side -------------------------------------------------------- */

static int supported(void) {
    fake_init();
    return fake_cfg.driver_version >= GP_CU_CKPT_MIN_DRIVER;
}

/* Withdraws request seq of c if its process has not taken it up (a stopped
 * process takes up nothing): 1 if withdrawn, the process left as it was. */
static int withdraw(struct fake_ckpt *c, uint32_t seq) {
    fake_lock();
    int untaken = c->taken_seq != seq;
    if (untaken) {
        __atomic_store_n(&c->done_seq, seq, __ATOMIC_RELEASE);
        c->busy = 0;
    }
    fake_unlock();
    return untaken;
}

/* Sends op to process pid if it is in state `want` and waits for the answer.
 * With a timeout (Lock's), a request the process has not taken up within it
 * is withdrawn, CUDA_ERROR_NOT_READY, as the driver answers a lock it could
 * not take in time (the process stopped, say): one taken up answers within
 * the timeout, the process's own wait for its calls under way. */
static int request(int pid, int op, int want, unsigned timeout_ms, const int32_t *map) {
    if (!supported())
        return GP_CU_ERROR_NOT_SUPPORTED;
    if (pid <= 0)
        return GP_CU_ERROR_INVALID_VALUE;
    fake_lock();
    struct fake_ckpt *c = fake_ckpt_row_locked(pid);
    int rc = GP_CU_SUCCESS;
    if (c == NULL || c->tid == 0 || fake_dead(pid))
        rc = GP_CU_ERROR_INVALID_VALUE;
    else if (c->busy || c->state != want)
        rc = GP_CU_ERROR_ILLEGAL_STATE;
    else if (op == OP_RESTORE && map != NULL) {
        for (int g = 0; g < GPFAKE_MAX_GPUS && rc == GP_CU_SUCCESS; g++)
            if ((c->gpus >> g & 1) && map[g] < 0)
                rc = GP_CU_ERROR_INVALID_VALUE; /* the pairs must name every GPU */
    }
    if (rc != GP_CU_SUCCESS) {
        fake_unlock();
        return rc;
    }
    c->busy = 1;
    c->op = op;
    c->timeout_ms = timeout_ms;
    for (int g = 0; g < GPFAKE_MAX_GPUS; g++)
        c->map[g] = map != NULL ? map[g] : g;
    uint32_t seq = ++c->req_seq;
    fake_unlock();
    futex_wake(&c->req_seq);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        uint32_t done = __atomic_load_n(&c->done_seq, __ATOMIC_ACQUIRE);
        if (done == seq)
            break;
        if (fake_dead(pid))
            return GP_CU_ERROR_INVALID_VALUE;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long waited = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (timeout_ms != 0 && waited >= (long)timeout_ms && withdraw(c, seq))
            return GP_CU_ERROR_NOT_READY;
        futex_wait(&c->done_seq, done, 100);
    }
    fake_lock();
    rc = c->result;
    c->busy = 0;
    fake_unlock();
    return rc;
}

/* Reads process pid's state and checkpoint thread id (either may be NULL). */
static int known(int pid, gp_cu_process_state *state, int *tid) {
    if (!supported())
        return GP_CU_ERROR_NOT_SUPPORTED;
    if (pid <= 0 || (state == NULL && tid == NULL))
        return GP_CU_ERROR_INVALID_VALUE;
    fake_lock();
    struct fake_ckpt *c = fake_ckpt_row_locked(pid);
    int ok = c != NULL && c->tid != 0 && !fake_dead(pid);
    if (ok && state != NULL)
        *state = (gp_cu_process_state)c->state;
    if (ok && tid != NULL)
        *tid = c->tid;
    fake_unlock();
    return ok ? GP_CU_SUCCESS : GP_CU_ERROR_INVALID_VALUE;
}

FAKE_EXPORT int cuCheckpointProcessGetState(int pid, gp_cu_process_state *state) {
    return state != NULL ? known(pid, state, NULL) : GP_CU_ERROR_INVALID_VALUE;
}

FAKE_EXPORT int cuCheckpointProcessGetRestoreThreadId(int pid, int *tid) {
    return tid != NULL ? known(pid, NULL, tid) : GP_CU_ERROR_INVALID_VALUE;
}

FAKE_EXPORT int cuCheckpointProcessLock(int pid, gp_cu_lock_args *args) {
    return request(pid, OP_LOCK, GP_CU_PROCESS_RUNNING, args != NULL ? args->timeout_ms : 0, NULL);
}

/* gpfake_fail_checkpoint_after's count: the caller's own, as its calls are. */
static int checkpoints_before_failing = -1;

FAKE_EXPORT int cuCheckpointProcessCheckpoint(int pid, gp_cu_ckpt_args *args) {
    (void)args;
    if (checkpoints_before_failing >= 0 && checkpoints_before_failing-- == 0)
        return GP_CU_ERROR_OUT_OF_MEMORY;
    return request(pid, OP_CHECKPOINT, GP_CU_PROCESS_LOCKED, 0, NULL);
}

FAKE_EXPORT int cuCheckpointProcessRestore(int pid, gp_cu_restore_args *args) {
    if (args == NULL || args->npairs == 0)
        return request(pid, OP_RESTORE, GP_CU_PROCESS_CHECKPOINTED, 0, NULL);
    if (args->pairs == NULL || args->npairs > GPFAKE_MAX_GPUS)
        return GP_CU_ERROR_INVALID_VALUE;
    int32_t map[GPFAKE_MAX_GPUS];
    for (int g = 0; g < GPFAKE_MAX_GPUS; g++)
        map[g] = -1;
    fake_init();
    for (unsigned i = 0; i < args->npairs; i++) {
        int from = -1, to = -1;
        for (int g = 0; g < fake_cfg.ngpus; g++) {
            uint8_t u[16];
            gpfake_uuid(g, u);
            if (memcmp(u, args->pairs[i].old_uuid, 16) == 0)
                from = g;
            if (memcmp(u, args->pairs[i].new_uuid, 16) == 0)
                to = g;
        }
        if (from < 0 || to < 0)
            return GP_CU_ERROR_INVALID_VALUE;
        map[from] = to;
    }
    return request(pid, OP_RESTORE, GP_CU_PROCESS_CHECKPOINTED, 0, map);
}

FAKE_EXPORT int cuCheckpointProcessUnlock(int pid, gp_cu_unlock_args *args) {
    (void)args;
    return request(pid, OP_UNLOCK, GP_CU_PROCESS_LOCKED, 0, NULL);
}

/* ---- what tests read and arm ------------------------------------------------- */

FAKE_EXPORT uint64_t gpfake_host_held(int pid) {
    uint64_t sum = 0;
    fake_lock();
    struct fake_ckpt *c = fake_ckpt_row_locked(pid);
    for (int g = 0; c != NULL && g < GPFAKE_MAX_GPUS; g++)
        sum += c->host[g];
    fake_unlock();
    return sum;
}

FAKE_EXPORT void gpfake_fail_checkpoint_after(int n) {
    checkpoints_before_failing = n;
}

FAKE_EXPORT int gpfake_fail_restores(int pid, int n) {
    fake_lock();
    struct fake_ckpt *c = fake_ckpt_row_locked(pid);
    if (c != NULL)
        c->fail_restores = n;
    fake_unlock();
    return c != NULL ? 0 : -1;
}
