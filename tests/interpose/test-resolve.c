/*
 * test-resolve.c — how calls reach the interposer: the exported symbols,
 * dlsym on driver handles (and only on them), and the cuGetProcAddress
 * resolution table for every wrapped symbol, at every CUDA version from
 * 11.3 to 13.0, with and without the per-thread default stream, through
 * both cuGetProcAddress and cuGetProcAddress_v2, against fake drivers
 * reporting 12080 and 13000. A driver without a symbol gives a CUDA error,
 * never a call through NULL.
 */
#include "harness.h"

#include "gptest.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_(sym, ...) #sym,
#define NVML_NAME_(sym) #sym,
static const char *const wrapped[] = {GP_CU_WRAPPED(NAME_) GP_NVML_WRAPPED(NVML_NAME_) "dlsym"};
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
    for (size_t i = 0; i < NWRAPPED - 1; i++) {
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
    /* Other handles are left alone, RTLD_NEXT included. */
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

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_exports_only_wrapped_symbols);
    tcase_add_test(tc, test_dlsym_on_driver_handles);
    tcase_add_test(tc, test_proc_address_table_driver_13000);
    tcase_add_test(tc, test_proc_address_table_driver_12080);
    tcase_add_test(tc, test_runtime_style_use_at_11030);
    tcase_add_test(tc, test_missing_driver_symbols_are_errors);
}

GP_TEST_MAIN("interpose/resolve", add_tests)
