/*
 * libcdl.c — libc's own dlsym, dlvsym, dlopen and dlmopen, found without
 * calling them.
 *
 * The library exports these four (resolve.c), so every call it makes
 * to those names, from any of its files, reaches itself: the dynamic linker
 * binds its references to the preloaded definitions first (and -Bsymbolic
 * binds them at link time). A versioned reference (dlsym@GLIBC_2.34) does
 * not help either: an unversioned definition satisfies it, both for the
 * static linker, which then refuses the link, and for the dynamic one.
 *
 * So the functions are looked up in the object that defines dladdr1
 * (libc.so.6 since glibc 2.34, libdl.so.2 before), which we never export,
 * by reading its dynamic symbol table through its GNU hash table, as the
 * dynamic linker itself does, and taking the default version of each name
 * (the one an unversioned dlsym would give). This is plain reading of
 * mapped, immutable tables: no allocation, no lock, no string function, so
 * it is safe while the sanitizers' runtimes initialise (they call dlsym and
 * dlvsym before their interceptors work).
 */
#include "interpose/gpuslice.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

/* An address from the dynamic section: glibc relocates the entries used
 * here in place on most targets, but not where the section is read-only. */
NO_SANITIZE static const void *dyn_ptr(const struct link_map *lm, ElfW(Addr) p) {
    return (const void *)(p < lm->l_addr ? p + lm->l_addr : p);
}

NO_SANITIZE int gps__streq(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

NO_SANITIZE void *gps__elf_find(const struct link_map *lm, const char *name) {
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL;
    const ElfW(Versym) *versym = NULL;
    for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_SYMTAB)
            symtab = dyn_ptr(lm, d->d_un.d_ptr);
        else if (d->d_tag == DT_STRTAB)
            strtab = dyn_ptr(lm, d->d_un.d_ptr);
        else if (d->d_tag == DT_GNU_HASH)
            gnu = dyn_ptr(lm, d->d_un.d_ptr);
        else if (d->d_tag == DT_VERSYM)
            versym = dyn_ptr(lm, d->d_un.d_ptr);
    if (!symtab || !strtab || !gnu)
        return NULL;
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = h * 33 + *c;
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
    if (nbuckets == 0)
        return NULL;
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&gnu[4] + bloom_words);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        const ElfW(Sym) *s = &symtab[i];
        if ((h | 1) == (h2 | 1) && s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
            !(versym && (versym[i] & 0x8000)) && gps__streq(strtab + s->st_name, name))
            return (void *)(lm->l_addr + s->st_value);
        if (h2 & 1)
            return NULL;
    }
}

static const char *const names[4] = {"dlsym", "dlvsym", "dlopen", "dlmopen"};
static void *found[4];

/* Looks each function up once; NULL stays NULL (and is looked up again). */
NO_SANITIZE static void *libc_dl(int which) {
    void *f = __atomic_load_n(&found[which], __ATOMIC_ACQUIRE);
    if (f)
        return f;
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)dladdr1, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return NULL;
    f = gps__elf_find(lm, names[which]);
    __atomic_store_n(&found[which], f, __ATOMIC_RELEASE);
    return f;
}

NO_SANITIZE gps__dlsym_fn gps__libc_dlsym(void) {
    return (gps__dlsym_fn)libc_dl(0);
}

NO_SANITIZE gps__dlvsym_fn gps__libc_dlvsym(void) {
    return (gps__dlvsym_fn)libc_dl(1);
}

NO_SANITIZE gps__dlopen_fn gps__libc_dlopen(void) {
    return (gps__dlopen_fn)libc_dl(2);
}

NO_SANITIZE gps__dlmopen_fn gps__libc_dlmopen(void) {
    return (gps__dlmopen_fn)libc_dl(3);
}
