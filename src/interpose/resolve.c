/*
 * resolve.c — how calls reach the interposer and how it reaches the driver.
 *
 * A workload finds driver functions in four ways, and each must land on
 * the wrapper of exactly the variant it asked for:
 *  - direct links (-lcuda): the library is preloaded, so the dynamic linker
 *    binds the workload's references to the exported wrappers;
 *  - dlsym(handle, "cuMemAlloc_v2") or dlvsym(handle, name, any version) on
 *    any handle (the CUDA runtime and NVML users do this): when the dynamic
 *    linker finds a symbol of a wrapped name there, whatever object defines
 *    it (libcuda.so.1, a renamed copy, a library linked against either), our
 *    dlsym returns the wrapper of that exact symbol. A driver is known by
 *    what it exports, never by its file name;
 *  - cuGetProcAddress / cuGetProcAddress_v2 (the CUDA runtime since 11.3,
 *    PyTorch, Triton): the real driver is asked first, so the status, the
 *    errors and the version rules stay the driver's, and when it found the
 *    symbol and the (base name, version, stream flag) names a wrapped
 *    variant per the list in entries.h, the wrapper is returned instead;
 *  - the dynamic linker's functions themselves: "dlsym", "dlvsym", "dlopen"
 *    and "dlmopen" looked up through dlsym or dlvsym, on any handle, are
 *    ours, so that the libc functions cannot be reached around the wrapping;
 *  - libraries that would bind the driver inside themselves: dlopen drops
 *    RTLD_DEEPBIND and dlmopen opens in the base namespace, so that their
 *    direct references reach the wrappers as the program's do.
 *
 * A second copy of the driver in one process (a renamed file, another path)
 * is the first driver under another name: every other cu* name found in an
 * object that exports cuInit, other than the driver this library opened,
 * answers with that driver's own function, so a program that uses the copy
 * throughout keeps one consistent driver state and its memory stays within
 * the slice (docs/interposer.md, "How calls reach it"). NVML copies
 * (objects exporting nvmlInit_v2) are treated the same way.
 *
 * The real functions are found with libc's dlsym on our own handle of the
 * driver. Calling "dlsym" or "dlvsym" from here reaches ourselves, so
 * libc's are found by libcdl.c. Forwarding a name we do not touch is a
 * sibling call, so that RTLD_NEXT still sees the real caller.
 */
#include "interpose/gpuslice.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* The sanitizers' runtimes call dlsym and dlvsym while they initialise,
 * before their shadow memory exists, and intercept the string functions:
 * the code on this path is not instrumented and calls no string function. */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

NO_SANITIZE static int starts(const char *s, const char *prefix) {
    while (*prefix && *s == *prefix) {
        s++;
        prefix++;
    }
    return *prefix == '\0';
}

/* libc's dlsym and dlvsym (libcdl.c); NULL only if libc has none. */
NO_SANITIZE static void *libc_dlsym(void *handle, const char *name) {
    gps__dlsym_fn f = gps__libc_dlsym();
    return f ? f(handle, name) : NULL;
}

NO_SANITIZE static void *libc_dlvsym(void *handle, const char *name, const char *version) {
    gps__dlvsym_fn f = gps__libc_dlvsym();
    return f ? f(handle, name, version) : NULL;
}

/* ---- finding the real driver ---------------------------------------------- */

/* Our handles of the real driver and NVML (link maps), set once opened. */
static void *cuda_handle, *nvml_handle;

/* Opens the library at path and fills table[i] with its symbol names[i]. */
static int resolve(const char *path, const char *const *names, void **table, int n, void **keep) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return -1;
    for (int i = 0; i < n; i++)
        __atomic_store_n(&table[i], libc_dlsym(h, names[i]), __ATOMIC_RELEASE);
    __atomic_store_n(keep, h, __ATOMIC_RELEASE);
    return 0;
}

int gps__resolve_cuda(const char *path) {
    return resolve(path, cu_name, gps__cu_real, GP_CU_COUNT, &cuda_handle);
}

int gps__resolve_nvml(const char *path) {
    return resolve(path, nvml_name, gps__nvml_real, GP_NVML_COUNT, &nvml_handle);
}

/* ---- dlsym and dlvsym ------------------------------------------------------ */

/* What a looked-up name is to us. */
enum { N_OTHER, N_CU_WRAPPED, N_NVML_WRAPPED, N_DL, N_CU, N_NVML };

/* The dynamic linker's functions this library answers for itself. */
static const char *const dl_name[] = {"dlsym", "dlvsym", "dlopen", "dlmopen"};
#define N_DL_NAMES ((int)(sizeof dl_name / sizeof dl_name[0]))

/* The index of name in names[0..n-1], or -1. */
NO_SANITIZE static int find(const char *const *names, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (gps__streq(names[i], name))
            return i;
    return -1;
}

/* Classifies name; *id is the index of a wrapped one. Cheap for the names
 * the sanitizers and most programs look up (first letter). */
NO_SANITIZE static int classify(const char *name, int *id) {
    if (!name)
        return N_OTHER;
    if (name[0] == 'c' && name[1] == 'u') {
        *id = find(cu_name, GP_CU_NWRAPPED, name);
        return *id >= 0 ? N_CU_WRAPPED : N_CU;
    }
    if (name[0] == 'n' && starts(name, "nvml")) {
        *id = find(nvml_wrap_name, GP_NVML_NWRAPPED, name);
        return *id >= 0 ? N_NVML_WRAPPED : N_NVML;
    }
    if (name[0] == 'd' && name[1] == 'l') {
        *id = find(dl_name, N_DL_NAMES, name);
        if (*id >= 0)
            return N_DL;
    }
    return N_OTHER;
}

/* The object (link map) that defines the symbol at addr, or NULL. */
static struct link_map *definer(void *addr) {
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

/* True when lm itself defines init: then it is a driver (or NVML) library,
 * whatever its file is called. */
static int defines(struct link_map *lm, const char *init) {
    void *f = libc_dlsym(lm, init);
    return f && definer(f) == lm;
}

/* ---- a driver ahead of this library --------------------------------------
 *
 * The dynamic linker searches a program's objects in load order: the
 * program, LD_PRELOAD's libraries, then /etc/ld.so.preload's (where a task's
 * mount namespace names this library), then the dependencies. A driver named
 * in LD_PRELOAD thus comes ahead of this library, and a program linked with
 * -lcuda is bound to the driver's own functions, none of the wrappers, before
 * any of its code runs. So when this library is loaded (its constructors run
 * before the program's main), it looks at every object loaded ahead of it
 * but the program itself, and one that defines cuInit (a driver, whatever
 * its name) ends the process with one message: a program that would run
 * around the slice does not run at all. Objects loaded later (dependencies,
 * dlopen) come after the wrappers in the search order and need no check. */
__attribute__((constructor)) static void refuse_driver_ahead(void) {
    struct link_map *self = definer((void *)refuse_driver_ahead);
    for (struct link_map *lm = self != NULL ? self->l_prev : NULL; lm != NULL && lm->l_prev != NULL;
         lm = lm->l_prev) {
        if (gps__elf_find(lm, "cuInit") != NULL) {
            fprintf(stderr,
                    "gpuslice: a CUDA driver (%s) is loaded ahead of the slice's library "
                    "(LD_PRELOAD names it first), so this program would reach the GPU around its "
                    "slice; it is not run\n",
                    lm->l_name);
            _exit(126);
        }
    }
}

/* The answer for an unwrapped driver name found at `found`: the function of
 * the same name in the driver this library opened when `found` lies in
 * another copy of the driver; otherwise found itself. Looking a driver name
 * up initialises the library (or NVML), as a first wrapped call would. */
static void *alias(int kind, const char *name, void *found) {
    struct link_map *lm = definer(found);
    if (gps__initialising || !lm || !defines(lm, kind == N_CU ? "cuInit" : "nvmlInit_v2"))
        return found;
    if (kind == N_CU)
        gps__init();
    else
        gps__nvml_ready();
    void *h = __atomic_load_n(kind == N_CU ? &cuda_handle : &nvml_handle, __ATOMIC_ACQUIRE);
    if (!h || h == (void *)lm)
        return found;
    return libc_dlsym(h, name);
}

/* This library's dynamic-linker function number id (dl_name). */
NO_SANITIZE static void *dl_ours(int id);

/* What dlsym or dlvsym hands out for name when the dynamic linker found
 * `found` (NULL: nothing, and nothing is invented). */
NO_SANITIZE static void *handout(int kind, int id, const char *name, void *found) {
    if (!found)
        return NULL;
    switch (kind) {
    case N_CU_WRAPPED:
        return cu_wrap[id];
    case N_NVML_WRAPPED:
        return nvml_wrap[id];
    case N_DL:
        return dl_ours(id);
    default:
        return alias(kind, name, found);
    }
}

/* The lookup of a name we answer. With RTLD_NEXT the next object depends on
 * the caller, which a call from here would hide: a wrapped or dynamic-linker
 * name is ours whatever follows the caller (a wrapper without a real
 * function answers CUDA_ERROR_NOT_FOUND), and other driver names are the
 * dynamic linker's answer. Not inlined: its locals would keep dlsym and
 * dlvsym from ending in a sibling call. */
NO_SANITIZE __attribute__((noinline)) static void *
lookup(void *handle, const char *name, int versioned, const char *version, int kind, int id) {
    if (handle == RTLD_NEXT)
        return handout(kind, id, name, (void *)1);
    void *found = versioned ? libc_dlvsym(handle, name, version) : libc_dlsym(handle, name);
    return handout(kind, id, name, found);
}

/* The exported dlsym. Forwarding is a sibling call (forced even at -O1 and
 * under the sanitizers) so that RTLD_NEXT is resolved from our caller. */
NO_SANITIZE __attribute__((optimize("optimize-sibling-calls"))) GP_EXPORT void *
dlsym(void *handle, const char *name) {
    int id = -1, kind = classify(name, &id);
    if (kind == N_OTHER || (kind >= N_CU && handle == RTLD_NEXT))
        return libc_dlsym(handle, name);
    return lookup(handle, name, 0, NULL, kind, id);
}

/* The exported dlvsym: the same answers as dlsym, whatever the version. */
NO_SANITIZE __attribute__((optimize("optimize-sibling-calls"))) GP_EXPORT void *
dlvsym(void *handle, const char *name, const char *version) {
    int id = -1, kind = classify(name, &id);
    if (kind == N_OTHER || (kind >= N_CU && handle == RTLD_NEXT))
        return libc_dlvsym(handle, name, version);
    return lookup(handle, name, 1, version, kind, id);
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

/* ---- dlopen and dlmopen ---------------------------------------------------- */

/* The exported dlopen: libc's, without RTLD_DEEPBIND, which would bind the
 * opened library's references to the driver inside its own dependencies,
 * before this library's wrappers (the sanitizers refuse the flag too). A
 * sibling call, so that libc sees the real caller (its namespace, its
 * RUNPATH, $ORIGIN). */
NO_SANITIZE __attribute__((optimize("optimize-sibling-calls"))) GP_EXPORT void *
dlopen(const char *file, int mode) {
    gps__dlopen_fn f = gps__libc_dlopen();
    return f ? f(file, mode & ~RTLD_DEEPBIND) : NULL;
}

/* The exported dlmopen: every library is opened in the base namespace,
 * where this library is, never in a new one, where the driver would be
 * loaded again without it; and without RTLD_DEEPBIND. */
NO_SANITIZE __attribute__((optimize("optimize-sibling-calls"))) GP_EXPORT void *
dlmopen(Lmid_t lmid, const char *file, int mode) {
    (void)lmid;
    gps__dlmopen_fn f = gps__libc_dlmopen();
    return f ? f(LM_ID_BASE, file, mode & ~RTLD_DEEPBIND) : NULL;
}

NO_SANITIZE static void *dl_ours(int id) {
    switch (id) {
    case 0:
        return (void *)dlsym;
    case 1:
        return (void *)dlvsym;
    case 2:
        return (void *)dlopen;
    default:
        return (void *)dlmopen;
    }
}
