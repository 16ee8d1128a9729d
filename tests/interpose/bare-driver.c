/*
 * bare-driver.c — a "driver" whose symbols carry no versions at all (linked
 * without libc), for test-resolve: glibc's dlvsym finds an unversioned
 * symbol of such an object whatever version is asked for, so dlvsym on a
 * driver name must give the wrapper there too. It is never called.
 */
int cuInit(unsigned int flags);
int cuMemAlloc_v2(void *dptr, unsigned long bytes);

int cuInit(unsigned int flags) {
    return (int)flags;
}

int cuMemAlloc_v2(void *dptr, unsigned long bytes) {
    return dptr == 0 || bytes == 0;
}
