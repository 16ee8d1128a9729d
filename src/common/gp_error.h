/*
 * gp_error.h — the one list of gpupool error codes.
 *
 * Every gpupool function that can fail returns 0 (or a non-negative count) on
 * success and one of the negative GP_E* codes below on failure. The list is
 * written once, as the X-macro GP_ERRNO_MAP, and generates the enum and the
 * table of messages and names behind gp_strerror() and gp_err_name() (the
 * same shape as libuv's UV_ERRNO_MAP). Mapping to HTTP status codes and
 * to process exit codes happens in one place each, in the daemon and the CLI.
 * Codes are only ever appended so that their values stay stable.
 *
 * One error space (libuv's, where UV__ERR turns errno into a code): a GP_E*
 * code is -(GP_ERR_BASE + n), below every negated errno, and a failed system
 * call's errno becomes a code through gp_syserr() and nowhere else, as -errno
 * in -1 .. -GP_SYSERR_MAX. So GP_EINVAL is never -EPERM, gp_strerror() and
 * gp_err_name() answer for both kinds, and a caller tells them apart with
 * gp_is_syserr(). No file outside this one writes -errno or -E<NAME>; the
 * architecture test (tests/style/test-architecture.sh) checks that.
 */
#ifndef GP_ERROR_H
#define GP_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#define GP_ERRNO_MAP(XX)                                                                           \
    XX(EINVAL, 1, "invalid argument")                                                              \
    XX(ENOMEM, 2, "out of memory")                                                                 \
    XX(ENOENT, 3, "no such object")                                                                \
    XX(EEXIST, 4, "object already exists")                                                         \
    XX(EBUSY, 5, "object is in use")                                                               \
    XX(ERANGE, 6, "value out of range")                                                            \
    XX(EPERM, 7, "permission denied")                                                              \
    XX(EAUTH, 8, "authentication required")                                                        \
    XX(EIO, 9, "input/output error")                                                               \
    XX(ENOSPC, 10, "no space left on device")                                                      \
    XX(EROFS, 11, "store is read-only")                                                            \
    XX(EPARSE, 12, "malformed input")                                                              \
    XX(ESTATE, 13, "not allowed in the object's current state")                                    \
    XX(ENOTSUP, 14, "operation not supported")                                                     \
    XX(ECORRUPT, 15, "corrupt data")                                                               \
    XX(ETIMEDOUT, 16, "timed out")                                                                 \
    XX(ELIMIT, 17, "limit exceeded")                                                               \
    XX(ESYS, 18, "system call failed")                                                             \
    XX(ENOTFOUND, 19, "route not found")                                                           \
    XX(ECONFLICT, 20, "conflicting change")                                                        \
    XX(ETOOMANY, 21, "too many")                                                                   \
    XX(EAGAIN, 22, "temporarily unavailable; try again")

/* The largest errno the kernel returns (its MAX_ERRNO): -1 .. -4095 are
 * system codes, and every GP_E* code lies below them. */
#define GP_SYSERR_MAX 4095
#define GP_ERR_BASE   5000

typedef enum gp_errno {
#define GP_ERR_ENUM_(name, num, msg) GP_##name = -(GP_ERR_BASE + (num)),
    GP_ERRNO_MAP(GP_ERR_ENUM_)
#undef GP_ERR_ENUM_
        GP_OK = 0
} gp_errno;

/*
 * The one mapping from errno to a code: -e for a system error e (1 ..
 * GP_SYSERR_MAX), GP_ESYS for anything else (0 or a value no kernel sets).
 * Call it where the failure happens, before errno changes again.
 */
static inline int gp_syserr(int e) {
    return e > 0 && e <= GP_SYSERR_MAX ? -e : GP_ESYS;
}

/* True if code came from gp_syserr() (a negated errno), false for GP_E* codes,
 * 0 and anything else. gp_syserr_errno() gives the errno back (0 if none). */
static inline int gp_is_syserr(int code) {
    return code < 0 && code >= -GP_SYSERR_MAX;
}
static inline int gp_syserr_errno(int code) {
    return gp_is_syserr(code) ? -code : 0;
}

/* Returns a static, human-readable message for code (never NULL): the list's
 * message for a GP_E* code, the system's for a code from gp_syserr(). */
const char *gp_strerror(int code);

/* Returns the symbolic name of code, e.g. "GP_EINVAL", or the errno's name
 * ("ENOENT") for a code from gp_syserr() (never NULL). */
const char *gp_err_name(int code);

/*
 * Fills a caller's error buffer (Redis's anet style): a printf-style message
 * into err, at most errlen bytes, always terminated; does nothing if err is
 * NULL or errlen is 0. The one helper every part fills err buffers with.
 */
void gp_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void gp_verrf(char *err, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif /* GP_ERROR_H */
