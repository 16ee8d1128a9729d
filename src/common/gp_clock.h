/*
 * gp_clock.h — a clock read in milliseconds: the one conversion of a
 * clock_gettime reading to whole milliseconds in gpupool. Each caller names
 * its clock (and says why it reads that one): the wall clock for times kept
 * across a restart, the monotonic clock for deadlines and ages, boot time
 * where a suspend must count. Inline, so that every part may use it without
 * linking anything (the executors' session server, in a fork of a threaded
 * program, calls nothing but system calls).
 */
#ifndef GP_CLOCK_H
#define GP_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Clock id's time in milliseconds (CLOCK_REALTIME: since the epoch). */
static inline int64_t gp_clock_ms(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif /* GP_CLOCK_H */
