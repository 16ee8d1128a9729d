/*
 * test-resolve.c — how calls reach the interposer: the exported symbols,
 * dlsym and dlvsym on driver handles, on a renamed copy of the driver and on
 * libc (whose own dlsym and dlvsym are never handed out), and the cuGetProcAddress
 * resolution table for every wrapped symbol, at every CUDA version from
 * 11.3 to 13.0, with and without the per-thread default stream, through
 * both cuGetProcAddress and cuGetProcAddress_v2, against fake drivers
 * reporting 12080 and 13000. A driver without a symbol gives a CUDA error,
 * never a call through NULL.
 */
#include "harness.h"

#include "gptest.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME_(sym, ...) #sym,
#define NVML_NAME_(sym) #sym,
static const char *const wrapped[] = {GP_CU_WRAPPED(NAME_) GP_NVML_WRAPPED(NVML_NAME_) "dlsym",
                                      "dlvsym", "dlopen", "dlmopen"};
#define NDL                      4 /* the dynamic linker's functions close the list */
#define NWRAPPED                 (sizeof wrapped / sizeof wrapped[0])
#define CU_BASE_(sym, base, ...) base,
static const char *const bases[] = {GP_CU_WRAPPED(CU_BASE_)};

static int is_wrapped(const char *name) {
    for (size_t i = 0; i < NWRAPPED; i++)
        if (strcmp(wrapped[i], name) == 0)
            return 1;
    return 0;
}

START_TEST(test_exports_only_wrapped_symbols) {
    char cmd[600], line[256];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only %s/libgpuslice.so", h_build());
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t seen = 0;
    while (fgets(line, sizeof line, p)) {
        char addr[64], type[8], name[128];
        if (sscanf(line, "%63s %7s %127s", addr, type, name) != 3)
            continue;
        ck_assert_msg(is_wrapped(name), "exports %s", name);
        seen++;
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_uint_eq(seen, NWRAPPED);
}
END_TEST

START_TEST(test_dlsym_on_driver_handles) {
    h_open_noctx(12080);
    void *self = dlopen("libgpuslice.so", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(self);
    /* Every wrapped name on a driver handle is the wrapper itself. */
    for (size_t i = 0; i < NWRAPPED - NDL; i++) {
        void *h = wrapped[i][0] == 'n' ? D.nvml : D.lib;
        void *w = dlsym(self, wrapped[i]);
        ck_assert_ptr_nonnull(w);
        ck_assert_msg(dlsym(h, wrapped[i]) == w, "dlsym(driver, %s)", wrapped[i]);
    }
    /* Names it does not wrap come from the driver untouched. */
    void *fake_fn;
    ck_assert_ptr_nonnull(D.fake_symbol("cuCtxSetCurrent", 12080, 0, &fake_fn));
    ck_assert_ptr_eq(dlsym(D.lib, "cuCtxSetCurrent"), fake_fn);
    ck_assert_ptr_nonnull(dlsym(D.lib, "gpfake_used"));
    ck_assert_ptr_null(dlsym(D.lib, "cuNoSuchFunction"));
    /* Other names on other handles are left alone, RTLD_NEXT included. */
    void *libm = dlopen("libm.so.6", RTLD_NOW);
    ck_assert_ptr_nonnull(dlsym(libm, "cos"));
    ck_assert_ptr_nonnull(dlsym(RTLD_NEXT, "malloc"));
    ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), dlsym(self, "cuMemAlloc_v2"));
}
END_TEST

/* Checks one (base, version, flags) through both cuGetProcAddress forms. */
static void check_one(void *self, const char *base, int version, cuuint64_t flags) {
    void *fake_fn = NULL;
    const char *sym = D.fake_symbol(base, version, flags, &fake_fn);
    void *expect = sym && is_wrapped(sym) ? dlsym(self, sym) : fake_fn;
    void *got = (void *)1;
    CUdriverProcAddressQueryResult st = -1;
    CUresult r = D.getProc(base, &got, version, flags, &st);
    ck_assert_msg(got == expect, "%s v%d flags %d: got %p, want %s", base, version, (int)flags, got,
                  sym ? sym : "NULL");
    ck_assert_int_eq(r, sym ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(st, sym ? CU_GET_PROC_ADDRESS_SUCCESS
                             : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    got = (void *)1;
    ck_assert_int_eq(D.cuGetProcAddress(base, &got, version, flags), r);
    ck_assert_ptr_eq(got, expect);
}

static void check_table(void) {
    static const int versions[] = {11030, 11040, 11060, 12000, 12050, 12080, 13000};
    void *self = dlopen("libgpuslice.so", RTLD_NOW | RTLD_NOLOAD);
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
        for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++)
            for (cuuint64_t f = 0; f < 3; f++)
                check_one(self, bases[b], versions[v], f);
    /* An unknown name: the driver's status and error, pfn cleared. */
    void *got = (void *)1;
    CUdriverProcAddressQueryResult st = -1;
    ck_assert_int_eq(D.getProc("cuNoSuchThing", &got, 12080, 0, &st), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_ptr_null(got);
}

START_TEST(test_proc_address_table_driver_13000) {
    setenv("GPUPOOL_FAKE_DRIVER_VERSION", "13000", 1);
    h_open_noctx(13000);
    int v;
    void *fn;
    D.getProc("cuDriverGetVersion", &fn, 13000, 0, NULL);
    ck_assert_int_eq(((CUresult(*)(int *))fn)(&v), CUDA_SUCCESS);
    ck_assert_int_eq(v, 13000);
    check_table();
}
END_TEST

START_TEST(test_proc_address_table_driver_12080) {
    setenv("GPUPOOL_FAKE_DRIVER_VERSION", "12080", 1);
    h_open_noctx(12080);
    check_table();
}
END_TEST

START_TEST(test_runtime_style_use_at_11030) {
    /* A CUDA 11.3 runtime: the entry points of that time, still capped. */
    setenv("GPUPOOL_MEMORY_LIMIT", "64M", 1);
    h_open(11030);
    void *self = dlopen("libgpuslice.so", RTLD_NOW | RTLD_NOLOAD), *fn;
    ck_assert_int_eq(D.getProc("cuCtxCreate", &fn, 11030, 0, NULL), CUDA_SUCCESS);
    ck_assert_ptr_eq(fn, dlsym(self, "cuCtxCreate_v2"));
    CUdeviceptr p;
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, 64 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
}
END_TEST

START_TEST(test_missing_driver_symbols_are_errors) {
    /* A "driver" with none of the symbols: every call is a CUDA error. */
    setenv("GPUPOOL_CUDA_LIBRARY", "libm.so.6", 1);
    void *self = dlopen("libgpuslice.so", RTLD_NOW | RTLD_NOLOAD);
    gp_pfn_cuMemAlloc_v2 alloc = (gp_pfn_cuMemAlloc_v2)dlsym(self, "cuMemAlloc_v2");
    gp_pfn_cuLaunchKernel launch = (gp_pfn_cuLaunchKernel)dlsym(self, "cuLaunchKernel");
    gp_pfn_cuGetProcAddress_v2 gpa = (gp_pfn_cuGetProcAddress_v2)dlsym(self, "cuGetProcAddress_v2");
    gp_pfn_cuMemGetInfo_v2 info = (gp_pfn_cuMemGetInfo_v2)dlsym(self, "cuMemGetInfo_v2");
    CUdeviceptr p;
    ck_assert_int_eq(alloc(&p, 1), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NOT_FOUND);
    size_t f, t;
    ck_assert_int_eq(info(&f, &t), CUDA_ERROR_NOT_FOUND);
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = -1;
    ck_assert_int_eq(gpa("cuMemAlloc", &fn, 12080, 0, &st), CUDA_ERROR_NOT_FOUND);
    ck_assert_ptr_null(fn);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}
END_TEST

/* Copies the fake driver to a file of another name (another inode, so the
 * dynamic linker loads it as a second library) and opens it. */
static void *open_renamed_copy(void) {
    char src[PATH_MAX], dst[64], buf[65536];
    snprintf(src, sizeof src, "%s/fake/libcuda.so.1", h_build());
    snprintf(dst, sizeof dst, "/tmp/gptest-renamed-%d.so", (int)getpid());
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0700);
    ck_assert_int_ge(in, 0);
    ck_assert_int_ge(out, 0);
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        ck_assert_int_eq(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
    void *h = dlopen(dst, RTLD_NOW | RTLD_LOCAL);
    unlink(dst);
    ck_assert_msg(h != NULL, "dlopen %s: %s", dst, dlerror());
    return h;
}

START_TEST(test_renamed_driver_copy_stays_capped) {
    /* A workload copies libcuda to /tmp/x.so and uses only the copy. */
    setenv("GPUPOOL_MEMORY_LIMIT", "64M", 1);
    h_env();
    void *copy = open_renamed_copy();
    void *self = dlopen("libgpuslice.so", RTLD_NOW | RTLD_NOLOAD);
    for (size_t i = 0; wrapped[i][0] == 'c'; i++)
        ck_assert_msg(dlsym(copy, wrapped[i]) == dlsym(self, wrapped[i]), "dlsym(copy, %s)",
                      wrapped[i]);
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(copy, "cuInit");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(copy, "cuCtxSetCurrent");
    gp_pfn_cuDevicePrimaryCtxRetain retain =
        (gp_pfn_cuDevicePrimaryCtxRetain)dlsym(copy, "cuDevicePrimaryCtxRetain");
    gp_pfn_cuMemAlloc_v2 alloc = (gp_pfn_cuMemAlloc_v2)dlsym(copy, "cuMemAlloc_v2");
    gp_pfn_cuGetProcAddress_v2 gpa = (gp_pfn_cuGetProcAddress_v2)dlsym(copy, "cuGetProcAddress_v2");
    CUcontext ctx;
    CUdeviceptr p;
    ck_assert_int_eq(init(0), CUDA_SUCCESS);
    ck_assert_int_eq(retain(&ctx, 0), CUDA_SUCCESS);
    ck_assert_int_eq(set(ctx), CUDA_SUCCESS);
    ck_assert_int_eq(alloc(&p, 64 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(alloc(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
    void *fn = NULL;
    ck_assert_int_eq(gpa("cuMemAlloc", &fn, 12080, 0, NULL), CUDA_SUCCESS);
    ck_assert_ptr_eq(fn, (void *)alloc);
    ck_assert_int_eq(((gp_pfn_cuMemAlloc_v2)fn)(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
    /* The copy is the driver under another name: its own books saw
     * nothing, the driver's hold exactly the cap. */
    uint64_t (*copy_used)(int) = (uint64_t(*)(int))dlsym(copy, "gpfake_used");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/fake/libcuda.so.1", h_build());
    void *drv = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(drv);
    ck_assert_ptr_ne(drv, copy);
    uint64_t (*drv_used)(int) = (uint64_t(*)(int))dlsym(drv, "gpfake_used");
    ck_assert_uint_eq(copy_used(0), 0);
    ck_assert_uint_eq(drv_used(0), 64 * MiB);
}
END_TEST

START_TEST(test_dlvsym_gives_wrappers) {
    h_open_noctx(12080);
    void *self = dlopen("libgpuslice.so", RTLD_NOW | RTLD_NOLOAD);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(libc);
    void *our_dlsym = dlsym(self, "dlsym"), *our_dlvsym = dlsym(self, "dlvsym");
    /* libc's own dlsym and dlvsym, by any route, are ours. */
    ck_assert_ptr_eq(dlvsym(libc, "dlsym", "GLIBC_2.34"), our_dlsym);
    ck_assert_ptr_eq(dlvsym(libc, "dlsym", "GLIBC_2.2.5"), our_dlsym);
    ck_assert_ptr_eq(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), our_dlsym);
    ck_assert_ptr_eq(dlsym(libc, "dlsym"), our_dlsym);
    ck_assert_ptr_eq(dlsym(libc, "dlvsym"), our_dlvsym);
    ck_assert_ptr_eq(dlvsym(libc, "dlvsym", "GLIBC_2.34"), our_dlvsym);
    ck_assert_ptr_eq(dlsym(libc, "dlopen"), dlsym(self, "dlopen"));
    ck_assert_ptr_eq(dlvsym(libc, "dlmopen", "GLIBC_2.34"), dlsym(self, "dlmopen"));
    /* What they give for a driver name is the wrapper. */
    void *(*looked_up)(void *, const char *) =
        (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.34");
    void *w = dlsym(self, "cuMemAlloc_v2");
    ck_assert_ptr_eq(looked_up(D.lib, "cuMemAlloc_v2"), w);
    ck_assert_ptr_eq(dlvsym(RTLD_NEXT, "cuMemAlloc_v2", "GLIBC_2.2.5"), w);
    /* A driver whose symbols carry no versions answers dlvsym for any
     * version: the answer is the wrapper too. */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/interpose/libbare-driver.so", h_build());
    void *bare = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(bare != NULL, "dlopen %s: %s", path, dlerror());
    ck_assert_ptr_eq(dlvsym(bare, "cuMemAlloc_v2", "ANY_1.0"), w);
    ck_assert_ptr_eq(dlsym(bare, "cuMemAlloc_v2"), w);
    /* Versions the driver does not have stay unfound; other names pass. */
    ck_assert_ptr_null(dlvsym(libc, "dlsym", "NO_SUCH_VERSION"));
    ck_assert_ptr_nonnull(dlvsym(libc, "malloc", "GLIBC_2.2.5"));
    ck_assert_ptr_eq(dlvsym(RTLD_DEFAULT, "malloc", "GLIBC_2.2.5"), dlsym(libc, "malloc"));
}
END_TEST

START_TEST(test_deepbind_and_new_namespaces_reach_the_wrappers) {
    /* A library linked against the driver, whose own references would bind
     * to the driver first: the cap holds for its calls too. */
    setenv("GPUPOOL_MEMORY_LIMIT", "64M", 1);
    h_open(12080);
    CUdeviceptr p;
    ck_assert_int_eq(D.cuMemAlloc_v2(&p, 64 * MiB), CUDA_SUCCESS);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/interpose/libdeep.so", h_build());
    int (*deep_alloc)(CUdeviceptr *, size_t);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* (The sanitizers' own dlopen refuses RTLD_DEEPBIND before ours.) */
    void *deep = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    ck_assert_msg(deep != NULL, "dlopen %s: %s", path, dlerror());
    deep_alloc = (int (*)(CUdeviceptr *, size_t))dlsym(deep, "deep_alloc");
    ck_assert_int_eq(deep_alloc(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
#endif
    void *ns = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(ns != NULL, "dlmopen %s: %s", path, dlerror());
    Lmid_t lmid = -1;
    ck_assert_int_eq(dlinfo(ns, RTLD_DI_LMID, &lmid), 0);
    ck_assert_int_eq(lmid, LM_ID_BASE);
    deep_alloc = (int (*)(CUdeviceptr *, size_t))dlsym(ns, "deep_alloc");
    ck_assert_int_eq(deep_alloc(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(D.fake_used(0), 64 * MiB);
}
END_TEST

/* Runs linked-driver MIB with LD_PRELOAD=preload and a 256 MiB cap; returns
 * its exit status and puts what it wrote on stderr in err. */
static int run_linked(const char *preload, const char *mib, char *err, size_t len) {
    char prog[PATH_MAX], out[64];
    snprintf(prog, sizeof prog, "%s/tests/interpose/linked-driver", h_build());
    snprintf(out, sizeof out, "/tmp/gptest-linked-%d", (int)getpid());
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(99);
        setenv("LD_PRELOAD", preload, 1);
        setenv("GPUPOOL_MEMORY_LIMIT", "256M", 1);
        execl(prog, prog, mib, (char *)NULL);
        _exit(98);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    int fd = open(out, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, err, len - 1) : -1;
    err[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
    unlink(out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* LD_PRELOAD naming a driver ahead of this library (which /etc/ld.so.preload
 * loads after LD_PRELOAD's own) bound a program linked with -lcuda to the
 * driver itself, around every wrapper. The library, finding a driver ahead
 * of itself in the search order when it is loaded, ends the process before
 * its first instruction, with one message. */
START_TEST(test_driver_preloaded_ahead_is_refused) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GP_TEST_SKIP("a sanitizer build's interposer is not preloadable");
    return;
#endif
    h_env();
    char slice[PATH_MAX], driver[PATH_MAX], both[2 * PATH_MAX + 2], err[1024];
    snprintf(slice, sizeof slice, "%s/libgpuslice.so", h_build());
    snprintf(driver, sizeof driver, "%s/fake/libcuda.so.1", h_build());
    /* Preloaded alone, the library caps the linked program. */
    ck_assert_int_eq(run_linked(slice, "128", err, sizeof err), 0);
    ck_assert_int_eq(run_linked(slice, "512", err, sizeof err), 2);
    /* With the driver ahead of it, nothing of the program runs. */
    snprintf(both, sizeof both, "%s:%s", driver, slice);
    ck_assert_int_eq(run_linked(both, "512", err, sizeof err), 126);
    ck_assert_msg(strstr(err, "ahead of the slice's library") != NULL, "%s", err);
    /* The driver after it (as a dependency of the program, or preloaded
     * after it) changes nothing. */
    snprintf(both, sizeof both, "%s:%s", slice, driver);
    ck_assert_int_eq(run_linked(both, "512", err, sizeof err), 2);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_exports_only_wrapped_symbols);
    tcase_add_test(tc, test_dlsym_on_driver_handles);
    tcase_add_test(tc, test_renamed_driver_copy_stays_capped);
    tcase_add_test(tc, test_dlvsym_gives_wrappers);
    tcase_add_test(tc, test_deepbind_and_new_namespaces_reach_the_wrappers);
    tcase_add_test(tc, test_proc_address_table_driver_13000);
    tcase_add_test(tc, test_proc_address_table_driver_12080);
    tcase_add_test(tc, test_runtime_style_use_at_11030);
    tcase_add_test(tc, test_missing_driver_symbols_are_errors);
    tcase_add_test(tc, test_driver_preloaded_ahead_is_refused);
}

GP_TEST_MAIN("interpose/resolve", add_tests)
