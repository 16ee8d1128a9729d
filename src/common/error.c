/*
 * error.c — messages and names for the codes of gp_error.h, generated from the
 * same X-macro list so that the three can never disagree, and for the codes
 * gp_syserr() makes of errno, the system's own message and name.
 */
#include "common/gp_error.h"

#include <stdio.h>
#include <string.h>

/* What a code is, in words: its message (gp_strerror) or its name
 * (gp_err_name). */
enum { MSG, NAME };

/* Every code of GP_ERRNO_MAP, with its message and its name. */
static const struct {
    int code;
    const char *text[2];
} codes[] = {
#define GP_ERR_ROW_(name, num, msg) {GP_##name, {msg, "GP_" #name}},
    GP_ERRNO_MAP(GP_ERR_ROW_)
#undef GP_ERR_ROW_
};

/* The words (MSG or NAME) of code: GP_OK's, the table's, the system's for a
 * code made of errno, else those of an unknown code. */
static const char *words(int code, int which) {
    static const char *const ok[2] = {"success", "GP_OK"};
    static const char *const unknown[2] = {"unknown error", "GP_UNKNOWN"};
    if (code == GP_OK)
        return ok[which];
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (codes[i].code == code)
            return codes[i].text[which];
    /* strerrordesc_np and strerrorname_np, unlike strerror, never write a
     * shared buffer. */
    const char *sys = NULL;
    if (gp_is_syserr(code))
        sys = which == MSG ? strerrordesc_np(-code) : strerrorname_np(-code);
    return sys != NULL ? sys : unknown[which];
}

const char *gp_strerror(int code) {
    return words(code, MSG);
}

const char *gp_err_name(int code) {
    return words(code, NAME);
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
