/*
 * test-ledger.c — several processes, one slice: the shared-memory ledger.
 *
 * Processes of one workload share the cap through the slice's ledger; a
 * process that dies (even by SIGKILL inside an allocation or while it
 * holds the ledger's lock) gives its memory back; fork and exec are
 * handled; and the node side reads the real use through libgpledger. The
 * stress test runs 64 processes of 10,000 random allocations and frees
 * each and checks, in the fake driver's own books, that the real total
 * never went over the cap. A ledger someone else made first (with a larger
 * cap) does not raise a process's own cap; the executor's ledger files
 * replace whatever was at their path, and only those are opened by path.
 * Each test uses its own slice and fake GPU (named after its pid), and
 * removes them at the end.
 */
#include "harness.h"

#include "common/gp_error.h"
#include "gptest.h"
#include "interpose/ledger-int.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CAP (256 * MiB)

static char slice[64], fake_ledger[64];

/* A named slice and a named fake GPU, so that processes started by exec
 * share them too. */
static void shared_env(void) {
    snprintf(slice, sizeof slice, "%s", h_unique("slice"));
    snprintf(fake_ledger, sizeof fake_ledger, "%s", h_unique("fake"));
    setenv("GPUPOOL_SLICE", slice, 1);
    setenv("GPUPOOL_FAKE_LEDGER", fake_ledger, 1);
    setenv("GPUPOOL_MEMORY_LIMIT", "256M", 1);
    h_env();
}

static void cleanup(void) {
    gp_ledger_unlink(slice);
    char path[80];
    snprintf(path, sizeof path, "/%s", fake_ledger);
    shm_unlink(path);
}

/* Slice use on its first GPU, as the node side reads it. */
static uint64_t ledger_used(int flags) {
    gp_ledger *l;
    gp_ledger_device_usage u[GP_LEDGER_MAX_DEVICES];
    if (gp_ledger_open(slice, flags, &l, NULL) != 0)
        return 0;
    int n = gp_ledger_usage(l, u, GP_LEDGER_MAX_DEVICES);
    gp_ledger_close(l);
    return n > 0 ? u[0].used : 0;
}

/* Starts slice-child with args; returns its pid and, with `hold`, waits for
 * its "allocations done" byte. */
static pid_t child(const char *const *args, int hold) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        char path[512];
        snprintf(path, sizeof path, "%s/tests/interpose/slice-child", h_build());
        char *argv[16];
        int n = 0;
        for (; args[n] && n < 15; n++)
            argv[n] = strdup(args[n]);
        argv[n] = NULL;
        execv(path, argv);
        _exit(1);
    }
    close(fds[1]);
    char c;
    if (hold)
        ck_assert_int_eq(read(fds[0], &c, 1), 1);
    close(fds[0]);
    return pid;
}

static int wait_status(pid_t pid) {
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

START_TEST(test_processes_share_the_cap) {
    shared_env();
    pid_t a = child((const char *[]){"slice-child", "alloc", "100", "hold", NULL}, 1);
    ck_assert_uint_eq(ledger_used(GP_LEDGER_READ), 100 * MiB);
    /* A second process gets only what the first left. */
    pid_t b = child((const char *[]){"slice-child", "alloc", "100", "57", NULL}, 0);
    ck_assert_int_eq(wait_status(b), 2);
    b = child((const char *[]){"slice-child", "alloc", "100", "56", NULL}, 0);
    ck_assert_int_eq(wait_status(b), 0);
    kill(a, SIGKILL);
    wait_status(a);
    cleanup();
}
END_TEST

START_TEST(test_reader_api) {
    shared_env();
    gp_ledger *l;
    char err[256];
    ck_assert_int_eq(gp_ledger_open(slice, GP_LEDGER_READ, &l, err), GP_ENOENT);
    ck_assert_int_eq(gp_ledger_open("a/b", GP_LEDGER_READ, &l, err), GP_EINVAL);
    pid_t a = child((const char *[]){"slice-child", "alloc", "30", "hold", NULL}, 1);
    ck_assert_int_eq(gp_ledger_open(slice, GP_LEDGER_READ, &l, err), 0);
    gp_ledger_device_usage u[4];
    ck_assert_int_eq(gp_ledger_usage(l, u, 4), 1);
    ck_assert_uint_eq(u[0].cap, CAP);
    ck_assert_uint_eq(u[0].used, 30 * MiB);
    ck_assert_uint_eq(u[0].peak, 30 * MiB);
    ck_assert_uint_eq(u[0].processes, 1);
    gp_ledger_close(l);
    /* Owner-only permissions. */
    struct stat st;
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/gpupool-slice-%s", slice);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    kill(a, SIGKILL);
    wait_status(a);
    /* A writable reader reaps the dead process at once. */
    ck_assert_uint_eq(ledger_used(GP_LEDGER_WRITE), 0);
    cleanup();
    ck_assert_int_eq(gp_ledger_unlink(slice), GP_ENOENT);
}
END_TEST

START_TEST(test_corrupt_ledger_refused) {
    shared_env();
    char path[128];
    snprintf(path, sizeof path, "/gpupool-slice-%s", slice);
    int fd = shm_open(path, O_RDWR | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 4096), 0);
    close(fd);
    gp_ledger *l;
    ck_assert_int_eq(gp_ledger_open(slice, GP_LEDGER_READ, &l, NULL), GP_ECORRUPT);
    h_capture_stderr();
    h_open_noctx(12080);
    CUcontext ctx;
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_NOT_PERMITTED);
    ck_assert_ptr_nonnull(strstr(h_captured(), "another version or size"));
    cleanup();
}
END_TEST

START_TEST(test_sigkill_mid_allocation) {
    shared_env();
    setenv("GPUPOOL_FAKE_ALLOC_DELAY_US", "30000000", 1);
    pid_t a = child((const char *[]){"slice-child", "alloc", "200", NULL}, 0);
    /* Wait until the child is inside the driver with its charge taken. */
    for (int i = 0; i < 1000 && ledger_used(GP_LEDGER_READ) != 200 * MiB; i++)
        usleep(10000);
    ck_assert_uint_eq(ledger_used(GP_LEDGER_READ), 200 * MiB);
    kill(a, SIGKILL);
    ck_assert_int_eq(wait_status(a), 128 + SIGKILL);
    unsetenv("GPUPOOL_FAKE_ALLOC_DELAY_US");
    /* The next allocation finds the memory given back. */
    h_open(12080);
    CUdeviceptr p;
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, 200 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemFree_v2(p), CUDA_SUCCESS);
    cleanup();
}
END_TEST

START_TEST(test_dead_process_reaped_within_a_second) {
    shared_env();
    h_open(12080);
    pid_t a = child((const char *[]){"slice-child", "alloc", "100", "hold", NULL}, 1);
    size_t f, t;
    ck_assert_int_eq(D.cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(f, CAP - 100 * MiB);
    kill(a, SIGKILL);
    wait_status(a);
    usleep(1100000);
    ck_assert_int_eq(D.cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(f, CAP);
    cleanup();
}
END_TEST

START_TEST(test_sigkill_holding_the_lock) {
    shared_env();
    pid_t a = child((const char *[]){"slice-child", "alloc", "100", "hold", NULL}, 1);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t locker = fork();
    if (locker == 0) {
        gp_ledger *l;
        if (gp_ledger_open(slice, GP_LEDGER_WRITE, &l, NULL) != 0 || gps__ledger_lock(l) != 0)
            _exit(1);
        if (write(fds[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char c;
    ck_assert_int_eq(read(fds[0], &c, 1), 1);
    kill(locker, SIGKILL);
    kill(a, SIGKILL);
    wait_status(locker);
    wait_status(a);
    h_open(12080);
    CUdeviceptr p;
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, CAP), CUDA_SUCCESS);
    cleanup();
}
END_TEST

START_TEST(test_fork_shares_private_ledger) {
    unsetenv("GPUPOOL_SLICE");
    setenv("GPUPOOL_MEMORY_LIMIT", "256M", 1);
    h_open(12080);
    CUdeviceptr p;
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, 100 * MiB), CUDA_SUCCESS);
    pid_t pid = fork();
    if (pid == 0) {
        /* The child charges its own row of the same (inherited) ledger. */
        CUdeviceptr q;
        int ok = D.cuMemAlloc_v2(&q, 150 * MiB) == CUDA_SUCCESS &&
                 D.cuMemAlloc_v2(&q, 10 * MiB) == CUDA_ERROR_OUT_OF_MEMORY;
        _exit(ok ? 0 : 1);
    }
    ck_assert_int_eq(wait_status(pid), 0);
    /* The child is gone: its 150 MiB come back at the next allocation. */
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, 156 * MiB), CUDA_SUCCESS);
}
END_TEST

START_TEST(test_exec_reclaims_own_row) {
    shared_env();
    /* 100 MiB, then exec (the driver frees the old image's memory), then
     * 200 MiB in the new image: fits only if the old row was dropped. */
    pid_t a = child((const char *[]){"slice-child", "alloc", "100", "exec", "200", NULL}, 0);
    ck_assert_int_eq(wait_status(a), 0);
    cleanup();
}
END_TEST

/* One stress worker: random allocations and frees; every failure must be
 * an out-of-memory, and only when the ledger says the cap is reached.
 * First it takes its context and two 1 MiB blocks, says so on `ready` and
 * waits for `go` to close: the 64 workers then start their random phase
 * together, all holding memory, so that they contend for the cap however
 * slowly a loaded machine or a sanitizer runs them. */
static int stress_worker(unsigned seed, int ops, int ready, int go) {
    /* The context's own memory may not fit while the others hold it all. */
    CUcontext ctx;
    CUresult r;
    CUdeviceptr held[8];
    int n = 0, rc = 0;
    while ((r = D.cuDevicePrimaryCtxRetain(&ctx, 0)) == CUDA_ERROR_OUT_OF_MEMORY)
        usleep(1000);
    if (r != CUDA_SUCCESS || D.ctxSetCurrent(ctx) != 0)
        rc = 3;
    /* 64 x (1 MiB of context + 2 MiB) is 192 MiB: it fits under the cap. */
    for (; rc == 0 && n < 2; n++)
        if (D.cuMemAlloc_v2(&held[n], MiB) != CUDA_SUCCESS)
            rc = 7;
    char c = 0, b;
    if (write(ready, &c, 1) != 1 && rc == 0)
        rc = 8;
    while (read(go, &b, 1) > 0)
        ;
    for (int i = 0; rc == 0 && i < ops; i++) {
        if (n == 8 || (n > 0 && rand_r(&seed) % 2)) {
            int k = (int)(rand_r(&seed) % (unsigned)n);
            if (D.cuMemFree_v2(held[k]) != CUDA_SUCCESS)
                return 4;
            held[k] = held[--n];
        } else {
            size_t sz = (size_t)(rand_r(&seed) % (2 * MiB)) + 1;
            r = (rand_r(&seed) % 2) ? D.cuMemAlloc_v2(&held[n], sz)
                                    : D.cuMemAllocAsync(&held[n], sz, NULL);
            if (r == CUDA_SUCCESS)
                n++;
            else if (r != CUDA_ERROR_OUT_OF_MEMORY)
                return 5;
        }
    }
    if (rc != 0)
        return rc;
    while (n > 0)
        if (D.cuMemFree_v2(held[--n]) != CUDA_SUCCESS)
            return 4;
    /* Release the context too, so that the fake's books (which, unlike the
     * real driver, free a dead process's memory only when short) are exact. */
    return D.cuDevicePrimaryCtxRelease_v2(0) == CUDA_SUCCESS ? 0 : 6;
}

START_TEST(test_64_processes_never_exceed_cap) {
    shared_env();
    setenv("GPUPOOL_CONTEXT_MEMORY", "1M", 1);
    setenv("GPUPOOL_FAKE_CONTEXT_MEMORY", "1M", 1);
    h_open_noctx(12080);
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pids[64];
    for (int i = 0; i < 64; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(ready[0]);
            close(go[1]);
            _exit(stress_worker((unsigned)i * 7919u + 1, h_scaled(10000), ready[1], go[0]));
        }
    }
    close(ready[1]);
    close(go[0]);
    /* Every worker writes its byte, even one that failed. */
    char buf[64];
    size_t got = 0;
    ssize_t k;
    while (got < sizeof buf && (k = read(ready[0], buf, sizeof buf - got)) > 0)
        got += (size_t)k;
    ck_assert_uint_eq(got, 64);
    close(go[1]);
    close(ready[0]);
    int failed = 0;
    for (int i = 0; i < 64; i++)
        failed += wait_status(pids[i]) != 0;
    ck_assert_int_eq(failed, 0);
    ck_assert_uint_le(D.fake_peak(0), CAP);
    ck_assert_uint_gt(D.fake_peak(0), CAP / 2);
    ck_assert_uint_eq(ledger_used(GP_LEDGER_WRITE), 0);
    cleanup();
}
END_TEST

START_TEST(test_ledger_made_first_does_not_raise_the_cap) {
    /* Another process of the user made this slice's ledger first, with the
     * whole GPU as the cap; this process was given 256M. */
    shared_env();
    h_open_noctx(12080);
    CUuuid uuid;
    CUresult (*get_uuid)(CUuuid *, CUdevice) =
        (CUresult(*)(CUuuid *, CUdevice))dlsym(D.lib, "cuDeviceGetUuid");
    ck_assert_int_eq(get_uuid(&uuid, 0), CUDA_SUCCESS);
    gp_ledger *l;
    ck_assert_int_eq(gp_ledger_open(slice, GP_LEDGER_WRITE, &l, NULL), 0);
    ck_assert_int_eq(gps__ledger_device(l, (const uint8_t *)uuid.bytes, 1024 * MiB, 0), 0);
    gp_ledger_close(l);
    CUcontext ctx;
    CUdeviceptr p;
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    ck_assert_int_eq(D.ctxSetCurrent(ctx), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, CAP), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
    size_t free_b, total_b;
    ck_assert_int_eq(D.cuMemGetInfo_v2(&free_b, &total_b), CUDA_SUCCESS);
    ck_assert_uint_eq(total_b, CAP);
    ck_assert_uint_eq(D.fake_used(0), CAP);
    cleanup();
}
END_TEST

/* Reads the file at path into buf (NUL-terminated); its length. */
static ssize_t slurp(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

START_TEST(test_executor_ledger_files) {
    char path[64], target[80], buf[64];
    snprintf(path, sizeof path, "/tmp/gptest-eledger-%d", (int)getpid());
    snprintf(target, sizeof target, "%s.target", path);
    /* Someone made a file there first, or a link to another file. */
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("made first", f);
    fclose(f);
    ck_assert_int_eq(gp_ledger_create_file(path, getuid(), getgid(), NULL), 0);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_gt(st.st_size, 4096);
    gp_ledger *l = NULL;
    ck_assert_int_eq(gp_ledger_open_file(path, GP_LEDGER_WRITE, &l, NULL), 0);
    gp_ledger_device_usage u[1];
    ck_assert_int_eq(gp_ledger_usage(l, u, 1), 0);
    gp_ledger_close(l);
    f = fopen(target, "w");
    ck_assert_ptr_nonnull(f);
    fputs("keep", f);
    fclose(f);
    unlink(path);
    ck_assert_int_eq(symlink(target, path), 0);
    ck_assert_int_eq(gp_ledger_create_file(path, getuid(), getgid(), NULL), 0);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(slurp(target, buf, sizeof buf), 4);
    ck_assert_str_eq(buf, "keep");
    /* As root, the file is the task's user's. */
    if (geteuid() == 0) {
        ck_assert_int_eq(gp_ledger_create_file(path, 65534, 65534, NULL), 0);
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert_int_eq(st.st_uid, 65534);
    }
    /* Only a ledger the executor made is opened by path: not a file of
     * another kind, not a ledger a workload made. */
    char err[256];
    ck_assert_int_eq(gp_ledger_open_file(target, GP_LEDGER_WRITE, &l, err), GP_ECORRUPT);
    char name[64], shm[96];
    snprintf(name, sizeof name, "%s", h_unique("made-by-workload"));
    ck_assert_int_eq(gp_ledger_open(name, GP_LEDGER_CREATE, &l, NULL), 0);
    gp_ledger_close(l);
    snprintf(shm, sizeof shm, "/dev/shm/gpupool-slice-%s", name);
    ck_assert_int_eq(gp_ledger_open_file(shm, GP_LEDGER_WRITE, &l, err), GP_EPERM);
    ck_assert_msg(strstr(err, "not made by the executor") != NULL, "%s", err);
    ck_assert_int_eq(gp_ledger_open_file("/nonexistent/ledger", GP_LEDGER_READ, &l, NULL),
                     GP_ENOENT);
    gp_ledger_unlink(name);
    unlink(path);
    unlink(target);
}
END_TEST

/* The node side reads a ledger its workload can change underneath it: the
 * file shrunk after the open (an ftruncate loop killed the daemon with
 * SIGBUS while it read a mapping), a FIFO where a ledger should be (an open
 * that would block), or a file of another size. The reader never maps the
 * file: it reads a copy, checks the size at every read, and says
 * GP_ECORRUPT. */
START_TEST(test_reader_survives_a_shrunk_ledger) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/gptest-shrink-%d", (int)getpid());
    ck_assert_int_eq(gp_ledger_create_file(path, getuid(), getgid(), NULL), 0);
    gp_ledger *w = NULL, *r = NULL;
    ck_assert_int_eq(gp_ledger_open_file(path, GP_LEDGER_WRITE, &w, NULL), 0);
    uint8_t uuid[16] = {1, 2, 3};
    ck_assert_int_ge(gps__ledger_device(w, uuid, CAP, 0), 0);
    ck_assert_int_eq(gps__ledger_charge(w, 0, MiB, CAP), 0);
    ck_assert_int_eq(gp_ledger_open_file(path, GP_LEDGER_READ, &r, NULL), 0);
    gp_ledger_device_usage u[GP_LEDGER_MAX_DEVICES];
    ck_assert_int_eq(gp_ledger_usage(r, u, GP_LEDGER_MAX_DEVICES), 1);
    ck_assert_uint_eq(u[0].used, MiB);
    /* The workload keeps the header and drops the rest. */
    ck_assert_int_eq(truncate(path, 4096), 0);
    ck_assert_int_eq(gp_ledger_usage(r, u, GP_LEDGER_MAX_DEVICES), GP_ECORRUPT);
    gp_ledger_close(r);
    ck_assert_int_eq(gp_ledger_open_file(path, GP_LEDGER_READ, &r, NULL), GP_ECORRUPT);
    gp_ledger_close(w);
    unlink(path);
    /* A FIFO under a slice's shared-memory name: refused, not waited on. */
    char name[64], shm[96];
    snprintf(name, sizeof name, "%s", h_unique("fifo"));
    snprintf(shm, sizeof shm, "/dev/shm/gpupool-slice-%s", name);
    ck_assert_int_eq(mkfifo(shm, 0600), 0);
    alarm(10);
    ck_assert_int_eq(gp_ledger_open(name, GP_LEDGER_READ, &r, NULL), GP_ECORRUPT);
    ck_assert_int_eq(gp_ledger_open_file(shm, GP_LEDGER_READ, &r, NULL), GP_ECORRUPT);
    alarm(0);
    unlink(shm);
}
END_TEST

/* A slice moved onto other GPUs (a paused task resumed elsewhere) keeps
 * its books under the new GPUs' UUIDs: a swap of two GPUs comes out right,
 * writing the same rows again changes nothing, each row keeps its cap and
 * use and a process's holding, and a process that opens the ledger after
 * the move books into the moved row under its cap. A row added since the
 * rows were read, a file that is no ledger or is missing: refused. */
START_TEST(test_rows_moved_to_other_gpus) {
    char path[64], other[80];
    snprintf(path, sizeof path, "/tmp/gptest-moved-%d", (int)getpid());
    ck_assert_int_eq(gp_ledger_create_file(path, getuid(), getgid(), NULL), 0);
    gp_ledger *w = NULL;
    ck_assert_int_eq(gp_ledger_open_file(path, GP_LEDGER_WRITE, &w, NULL), 0);
    const uint8_t a[16] = {0xa}, b[16] = {0xb}, c[16] = {0xc};
    ck_assert_int_eq(gps__ledger_device(w, a, CAP, 0), 0);
    ck_assert_int_eq(gps__ledger_device(w, b, 2 * CAP, 0), 1);
    ck_assert_int_eq(gps__ledger_charge(w, 0, MiB, CAP), 0);

    uint8_t rows[GP_LEDGER_MAX_DEVICES][16];
    ck_assert_int_eq(gp_ledger_file_gpus(path, rows, GP_LEDGER_MAX_DEVICES, NULL), 2);
    ck_assert(memcmp(rows[0], a, 16) == 0 && memcmp(rows[1], b, 16) == 0);
    const uint8_t swapped[2][16] = {{0xb}, {0xa}};
    for (int again = 0; again < 2; again++)
        ck_assert_int_eq(gp_ledger_file_set_gpus(path, swapped, 2, NULL), 0);
    gp_ledger_device_usage u[GP_LEDGER_MAX_DEVICES];
    ck_assert_int_eq(gp_ledger_usage(w, u, GP_LEDGER_MAX_DEVICES), 2);
    ck_assert(memcmp(u[0].uuid, b, 16) == 0 && memcmp(u[1].uuid, a, 16) == 0);
    ck_assert_uint_eq(u[0].cap, CAP);
    ck_assert_uint_eq(u[0].used, MiB);
    ck_assert_uint_eq(u[1].cap, 2 * CAP);
    /* The row of the GPU now called b is the one this process holds on. */
    ck_assert_int_eq(gps__ledger_find(w, b), 0);
    gps__ledger_release(w, 0, MiB);
    ck_assert_int_eq(gp_ledger_usage(w, u, GP_LEDGER_MAX_DEVICES), 2);
    ck_assert_uint_eq(u[0].used, 0);

    /* Rows read before a third was added are not written over it. */
    ck_assert_int_eq(gps__ledger_device(w, c, CAP, 0), 2);
    char err[256] = "";
    ck_assert_int_eq(gp_ledger_file_set_gpus(path, swapped, 2, err), GP_ESTATE);
    ck_assert_msg(strstr(err, "3 GPU rows") != NULL, "%s", err);
    ck_assert_int_eq(gp_ledger_file_set_gpus(path, swapped, GP_LEDGER_MAX_DEVICES + 1, NULL),
                     GP_EINVAL);
    gp_ledger_close(w);

    snprintf(other, sizeof other, "%s.other", path);
    FILE *f = fopen(other, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a ledger", f);
    fclose(f);
    ck_assert_int_eq(gp_ledger_file_gpus(other, rows, 1, NULL), GP_ECORRUPT);
    ck_assert_int_eq(gp_ledger_file_set_gpus(other, swapped, 2, NULL), GP_ECORRUPT);
    unlink(other);
    ck_assert_int_eq(gp_ledger_file_gpus(other, rows, 1, NULL), GP_ENOENT);
    unlink(path);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_processes_share_the_cap);
    tcase_add_test(tc, test_reader_api);
    tcase_add_test(tc, test_corrupt_ledger_refused);
    tcase_add_test(tc, test_sigkill_mid_allocation);
    tcase_add_test(tc, test_dead_process_reaped_within_a_second);
    tcase_add_test(tc, test_sigkill_holding_the_lock);
    tcase_add_test(tc, test_fork_shares_private_ledger);
    tcase_add_test(tc, test_exec_reclaims_own_row);
    tcase_add_test(tc, test_64_processes_never_exceed_cap);
    tcase_add_test(tc, test_ledger_made_first_does_not_raise_the_cap);
    tcase_add_test(tc, test_executor_ledger_files);
    tcase_add_test(tc, test_reader_survives_a_shrunk_ledger);
    tcase_add_test(tc, test_rows_moved_to_other_gpus);
}

GP_TEST_MAIN("interpose/ledger", add_tests)
