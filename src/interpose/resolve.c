/*
 * resolve.c — how calls reach the interposer and how it reaches the driver.
 *
 * A workload finds driver functions in three ways, and each must land on
 * the wrapper of exactly the variant it asked for:
 *  - direct links (-lcuda): the library is preloaded, so the dynamic linker
 *    binds the workload's references to the exported wrappers;
 *  - dlsym(handle, "cuMemAlloc_v2") on a handle of libcuda or libnvidia-ml
 *    (the CUDA runtime and NVML users do this): our dlsym returns the
 *    wrapper of that exact symbol; other handles are left alone;
 *  - cuGetProcAddress / cuGetProcAddress_v2 (the CUDA runtime since 11.3,
 *    PyTorch, Triton): the real driver is asked first, so the status, the
 *    errors and the version rules stay the driver's, and when it found the
 *    symbol and the (base name, version, stream flag) names a wrapped
 *    variant per the list in entries.h, the wrapper is returned instead.
 *
 * The real functions are found with the real dlsym on our own handle of the
 * driver. Our dlsym cannot call "dlsym" by name (that is itself), so it uses
 * dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), the versioned libc symbol of
 * glibc 2.34 and later, falling back to "GLIBC_2.2.5" (x86-64 glibc before
 * 2.34, where dlsym lived in libdl). The forwarding call is a sibling call
 * so that dlsym(RTLD_NEXT, ...) still sees its real caller's address.
 */
#include "interpose/gpuslice.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

void *gps__cu_real[GP_CU_COUNT];
void *gps__nvml_real[GP_NVML_COUNT];

/* ---- the tables generated from entries.h -------------------------------- */

#define NAME_(sym, ...)                      #sym,
#define BASE_(sym, base, ...)                base,
#define VERSION_(sym, base, ver, ...)        ver,
#define STREAM_(sym, base, ver, stream, ...) stream,
#define WRAP_(sym, ...)                      (void *)sym,
#define NVML_NAME_(sym, params, args)        #sym,
#define NVML_WNAME_(sym)                     #sym,
#define NVML_WRAP_(sym)                      (void *)sym,

static const char *const cu_name[GP_CU_COUNT] = {GP_CU_WRAPPED(NAME_) GP_CU_USED(NAME_)};
static const char *const cu_base[GP_CU_NWRAPPED] = {GP_CU_WRAPPED(BASE_)};
static const int cu_version[GP_CU_NWRAPPED] = {GP_CU_WRAPPED(VERSION_)};
static const unsigned char cu_stream[GP_CU_NWRAPPED] = {GP_CU_WRAPPED(STREAM_)};
static void *const cu_wrap[GP_CU_NWRAPPED] = {GP_CU_WRAPPED(WRAP_)};
static const char *const nvml_name[GP_NVML_COUNT] = {GP_NVML_ENTRIES(NVML_NAME_)};
static const char *const nvml_wrap_name[GP_NVML_NWRAPPED] = {GP_NVML_WRAPPED(NVML_WNAME_)};
static void *const nvml_wrap[GP_NVML_NWRAPPED] = {GP_NVML_WRAPPED(NVML_WRAP_)};

/* ---- the real dlsym ------------------------------------------------------- */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym_ptr;

/* The sanitizers' runtimes call dlsym while they initialise, before their
 * shadow memory exists: the code on dlsym's path must not be instrumented. */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

NO_SANITIZE static dlsym_fn real_dlsym(void) {
    dlsym_fn f = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        __atomic_store_n(&real_dlsym_ptr, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* The real dlsym of libc, found with dlvsym (see resolve.c). */
static void *dlsym_in(void *handle, const char *name) {
    dlsym_fn f = real_dlsym();
    return f ? f(handle, name) : NULL;
}

/* Opens the library at path and fills table[i] with its symbol names[i]. */
static int resolve(const char *path, const char *const *names, void **table, int n) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return -1;
    for (int i = 0; i < n; i++)
        __atomic_store_n(&table[i], dlsym_in(h, names[i]), __ATOMIC_RELEASE);
    return 0;
}

int gps__resolve_cuda(const char *path) {
    return resolve(path, cu_name, gps__cu_real, GP_CU_COUNT);
}

int gps__resolve_nvml(const char *path) {
    return resolve(path, nvml_name, gps__nvml_real, GP_NVML_COUNT);
}

/* ---- dlsym ---------------------------------------------------------------- */

enum { LIB_OTHER, LIB_CUDA, LIB_NVML };

/* Which driver library a dlopen handle belongs to, by its file name, so that
 * handles opened by path, by soname or through a symlink all count. */
NO_SANITIZE static int handle_kind(void *handle) {
    struct link_map *lm = NULL;
    if (handle == RTLD_DEFAULT || handle == RTLD_NEXT ||
        dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name)
        return LIB_OTHER;
    const char *base = strrchr(lm->l_name, '/');
    base = base ? base + 1 : lm->l_name;
    if (strncmp(base, "libcuda.so", 10) == 0)
        return LIB_CUDA;
    if (strncmp(base, "libnvidia-ml.so", 15) == 0)
        return LIB_NVML;
    return LIB_OTHER;
}

/* Not inlined: its locals would keep dlsym from ending in a sibling call. */
NO_SANITIZE __attribute__((noinline)) static void *wrapper_by_name(void *handle, const char *name) {
    if (!name || (name[0] != 'c' && name[0] != 'n'))
        return NULL;
    int kind = handle_kind(handle);
    if (kind == LIB_CUDA) {
        for (int i = 0; i < GP_CU_NWRAPPED; i++)
            if (strcmp(cu_name[i], name) == 0)
                return cu_wrap[i];
    } else if (kind == LIB_NVML) {
        for (int i = 0; i < GP_NVML_NWRAPPED; i++)
            if (strcmp(nvml_wrap_name[i], name) == 0)
                return nvml_wrap[i];
    }
    return NULL;
}

/* The exported dlsym. Forwarding is a sibling call (forced even at -O1 and
 * under the sanitizers) so that RTLD_NEXT is resolved from our caller. */
NO_SANITIZE __attribute__((optimize("optimize-sibling-calls"))) GP_EXPORT void *
dlsym(void *handle, const char *name) {
    void *w = wrapper_by_name(handle, name);
    if (w)
        return w;
    return real_dlsym()(handle, name);
}

/* ---- cuGetProcAddress ---------------------------------------------------- */

/* The wrapped variant the driver hands out for (base, version, flags), or
 * -1 when that is not a wrapped symbol. Among the variants of base with a
 * version not above the caller's, the newest wins; a per-thread-stream
 * request takes the _ptsz variant where there is one. */
static int wrapped_variant(const char *base, int version, cuuint64_t flags) {
    int want = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? GP_SP : GP_SL;
    int best[2] = {-1, -1};
    for (int i = 0; i < GP_CU_NWRAPPED; i++) {
        if (cu_version[i] > version || strcmp(cu_base[i], base) != 0)
            continue;
        int s = cu_stream[i];
        if (best[s] < 0 || cu_version[i] > cu_version[best[s]])
            best[s] = i;
    }
    return best[want] >= 0 ? best[want] : best[GP_SL];
}

/* Both public forms end here. The driver answers first; only a found
 * symbol is ever replaced, and symbolStatus is always written. */
static CUresult get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status) {
    gps__init();
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r;
    gp_pfn_cuGetProcAddress_v2 v2 = GP_CU_PTR(cuGetProcAddress_v2);
    gp_pfn_cuGetProcAddress v1 = GP_CU_PTR(cuGetProcAddress);
    if (v2) {
        r = v2(symbol, pfn, version, flags, &st);
    } else if (v1) {
        r = v1(symbol, pfn, version, flags);
        st = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    } else {
        if (pfn)
            *pfn = NULL;
        r = CUDA_ERROR_NOT_FOUND;
    }
    if (r == CUDA_SUCCESS && symbol && pfn && *pfn) {
        int id = wrapped_variant(symbol, version, flags);
        if (id >= 0) {
            /* A driver that hides a symbol from dlsym still gives it here. */
            void *expected = NULL;
            __atomic_compare_exchange_n(&gps__cu_real[id], &expected, *pfn, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED);
            *pfn = cu_wrap[id];
        }
    }
    if (status)
        *status = st;
    return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    return get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
    return get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}
