/*
 * gp_names.h — an enum's values as text and back, for every part that
 * names its enums (the engine's placement policies, kinds and on-preempt
 * modes; the daemon's workload states, usage kinds and roles; the
 * simulator's modes). Header-only, so that every part may use it without
 * linking anything.
 */
#ifndef GP_NAMES_H
#define GP_NAMES_H

#include <stddef.h>
#include <string.h>

#include "common/gp_error.h"

/* The index of name in names[0..n-1], or -1 (also for a NULL name). */
static inline int gp_name_index(const char *const *names, int n, const char *name) {
    for (int i = 0; name != NULL && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* The names of an X-macro list of (SYMBOL, "name") rows, as
 * GP_NAMED_ENUM's list: GP_NAMED_ENUM(..., MY_LIST(GP_NAME_OF)). */
#define GP_NAME_OF(sym, name) name,

/*
 * Defines, for an enum whose count values run from 0 in the order of the
 * names listed:
 *   const char *fn_name(type v)                 v's name, `unknown` out of range
 *   int fn_parse(const char *name, type *out)   0, or GP_EINVAL (NULL included)
 * A list of the wrong length does not compile.
 */
#define GP_NAMED_ENUM(fn, type, count, unknown, ...)                                               \
    static const char *const fn##_names[] = {__VA_ARGS__};                                         \
    _Static_assert(sizeof fn##_names / sizeof fn##_names[0] == (size_t)(count),                    \
                   "a name for every value of " #type);                                            \
    const char *fn##_name(type v) {                                                                \
        return (unsigned)v < (unsigned)(count) ? fn##_names[v] : (unknown);                        \
    }                                                                                              \
    int fn##_parse(const char *name, type *out) {                                                  \
        int i = gp_name_index(fn##_names, (int)(count), name);                                     \
        if (i < 0)                                                                                 \
            return GP_EINVAL;                                                                      \
        *out = (type)i;                                                                            \
        return 0;                                                                                  \
    }

#endif /* GP_NAMES_H */
