/*
 * failalloc.c — preloaded into gpupoold by the daemon's tests of allocation
 * failure (test-oom.sh): a black-box way to make the daemon's allocations
 * fail, without a hook in the daemon itself. Two modes, by environment:
 *
 *   GPD_TEST_FAIL_REALLOC=BYTES  every realloc() asked for exactly BYTES
 *                                fails (the growth of a list that doubles
 *                                from a known first size);
 *   GPD_TEST_FAIL_THREAD=NAME    counts the allocations (malloc, calloc,
 *   GPD_TEST_FAIL_NTH=N          realloc, strdup, strndup) made on threads
 *                                named NAME (the daemon names its loop
 *                                thread "gpd-loop"), and fails the Nth with
 *                                ENOMEM; 0 fails none. With
 *   GPD_TEST_FAIL_COUNT=PATH     the count so far is written to PATH at
 *                                each allocation counted, so that a sweep
 *                                learns how many there are to fail.
 *   GPD_TEST_FAIL_ARM=PATH       the count begins once PATH exists, so that
 *                                the Nth is the Nth after the test made it
 *                                (an idle daemon's start counts nothing).
 *
 * And one of the C library's own shortages, which no allocation of ours
 * reaches:
 *
 *   GPD_TEST_FAIL_GROUPS=N       the first N calls of getgrouplist fail as
 *                                glibc's does when its allocation fails:
 *                                -1, errno ENOMEM, the count it was given
 *                                unchanged.
 *   GPD_TEST_FAIL_ASPRINTF=N     the first N calls of asprintf fail (-1,
 *                                errno ENOMEM); the others make their string
 *                                with the malloc above, so that the sweeps
 *                                count it.
 *
 * Other calls go to the C library's. The C library's own calls between its
 * functions (strdup's malloc inside libc) do not come through here, which
 * is why strdup and strndup are wrapped themselves.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);

static long fail_size = -1; /* GPD_TEST_FAIL_REALLOC; -1: not read yet */
static const char *thread_name;
static long fail_nth;
static const char *count_path;
static long counted; /* allocations on the named threads so far */
static const char *arm_path;
static int armed;

/* dlsym may itself call calloc before real_calloc is known: those few
 * early calls are served from this buffer (never freed). */
static char early[4096];
static size_t early_used;

static int initing;

static void init(void) {
    if (fail_size >= 0 || initing)
        return;
    initing = 1;
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    const char *v = getenv("GPD_TEST_FAIL_REALLOC");
    thread_name = getenv("GPD_TEST_FAIL_THREAD");
    const char *n = getenv("GPD_TEST_FAIL_NTH");
    fail_nth = n != NULL ? strtol(n, NULL, 10) : 0;
    count_path = getenv("GPD_TEST_FAIL_COUNT");
    arm_path = getenv("GPD_TEST_FAIL_ARM");
    fail_size = v != NULL ? strtol(v, NULL, 10) : 0;
    initing = 0;
}

/* An allocation made inside dlsym, before init() knows the real ones. */
static void *early_alloc(size_t n) {
    size_t want = (n + 15) & ~(size_t)15;
    if (want < n || early_used + want > sizeof early)
        return NULL;
    void *p = early + early_used;
    early_used += want;
    return p;
}

/* 1 if this allocation is to fail: the Nth counted on the named threads. */
static int fail_this(void) {
    if (thread_name == NULL)
        return 0;
    char name[17] = "";
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0 || strcmp(name, thread_name) != 0)
        return 0;
    if (arm_path != NULL && !__atomic_load_n(&armed, __ATOMIC_RELAXED)) {
        if (access(arm_path, F_OK) != 0)
            return 0;
        __atomic_store_n(&armed, 1, __ATOMIC_RELAXED);
    }
    long k = __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
    if (count_path != NULL) {
        char buf[32];
        int len = snprintf(buf, sizeof buf, "%ld\n", k);
        int fd = open(count_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            (void)!write(fd, buf, (size_t)len);
            close(fd);
        }
    }
    if (k == fail_nth) {
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *malloc(size_t n) {
    init();
    if (real_malloc == NULL)
        return early_alloc(n);
    if (fail_this())
        return NULL;
    return real_malloc(n);
}

void *calloc(size_t n, size_t size) {
    init();
    if (real_calloc == NULL)
        return size != 0 && n > (size_t)-1 / size ? NULL : early_alloc(n * size);
    if (fail_this())
        return NULL;
    return real_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    init();
    if (fail_size > 0 && n == (size_t)fail_size) {
        errno = ENOMEM;
        return NULL;
    }
    if (real_realloc == NULL || fail_this())
        return NULL;
    return real_realloc(p, n);
}

void free(void *p) {
    static void (*real_free)(void *);
    if (p >= (void *)early && p < (void *)(early + sizeof early))
        return;
    if (real_free == NULL)
        real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    real_free(p);
}

char *strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    return d != NULL ? memcpy(d, s, n) : NULL;
}

char *strndup(const char *s, size_t max) {
    size_t n = strnlen(s, max);
    char *d = malloc(n + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

int getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups) {
    static int (*real_getgrouplist)(const char *, gid_t, gid_t *, int *);
    static long failed;
    const char *n = getenv("GPD_TEST_FAIL_GROUPS");
    if (n != NULL && __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED) <= strtol(n, NULL, 10)) {
        errno = ENOMEM;
        return -1;
    }
    if (real_getgrouplist == NULL)
        real_getgrouplist =
            (int (*)(const char *, gid_t, gid_t *, int *))dlsym(RTLD_NEXT, "getgrouplist");
    return real_getgrouplist(user, group, groups, ngroups);
}

int asprintf(char **out, const char *fmt, ...) {
    static long failed;
    const char *n = getenv("GPD_TEST_FAIL_ASPRINTF");
    if (n != NULL && __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED) <= strtol(n, NULL, 10)) {
        errno = ENOMEM;
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = len < 0 ? NULL : malloc((size_t)len + 1);
    if (s == NULL)
        return -1;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    *out = s;
    return len;
}
