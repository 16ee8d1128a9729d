/*
 * gp_error.h — the one list of gpupool error codes.
 *
 * Every gpupool function that can fail returns 0 (or a non-negative count) on
 * success and one of the negative GP_E* codes below on failure. The list is
 * written once, as the X-macro GP_ERRNO_MAP, and generates the enum, the
 * message table behind gp_strerror() and the name table behind gp_err_name()
 * (the same shape as libuv's UV_ERRNO_MAP). Mapping to HTTP status codes and
 * to process exit codes happens in one place each, in the daemon and the CLI.
 * Codes are only ever appended so that their values stay stable.
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
    XX(ECONFLICT, 20, "conflicting change")

typedef enum gp_errno {
#define GP_ERR_ENUM_(name, num, msg) GP_##name = -(num),
    GP_ERRNO_MAP(GP_ERR_ENUM_)
#undef GP_ERR_ENUM_
        GP_OK = 0
} gp_errno;

/* Returns a static, human-readable message for code (never NULL). */
const char *gp_strerror(int code);

/* Returns the symbolic name of code, e.g. "GP_EINVAL" (never NULL). */
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
