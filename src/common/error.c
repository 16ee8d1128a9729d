/*
 * error.c — messages and names for the codes of gp_error.h, generated from the
 * same X-macro list so that the three can never disagree, and for the codes
 * gp_syserr() makes of errno, the system's own message and name.
 */
#include "common/gp_error.h"

#include <stdio.h>
#include <string.h>

const char *gp_strerror(int code) {
    switch (code) {
    case GP_OK:
        return "success";
#define GP_ERR_MSG_(name, num, msg)                                                                \
    case GP_##name:                                                                                \
        return msg;
        GP_ERRNO_MAP(GP_ERR_MSG_)
#undef GP_ERR_MSG_
    }
    /* strerrordesc_np, unlike strerror, never writes a shared buffer. */
    const char *sys = gp_is_syserr(code) ? strerrordesc_np(-code) : NULL;
    return sys != NULL ? sys : "unknown error";
}

const char *gp_err_name(int code) {
    switch (code) {
    case GP_OK:
        return "GP_OK";
#define GP_ERR_NAME_(name, num, msg)                                                               \
    case GP_##name:                                                                                \
        return "GP_" #name;
        GP_ERRNO_MAP(GP_ERR_NAME_)
#undef GP_ERR_NAME_
    }
    const char *sys = gp_is_syserr(code) ? strerrorname_np(-code) : NULL;
    return sys != NULL ? sys : "GP_UNKNOWN";
}

void gp_verrf(char *err, size_t errlen, const char *fmt, va_list ap) {
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
}

void gp_errf(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gp_verrf(err, errlen, fmt, ap);
    va_end(ap);
}
