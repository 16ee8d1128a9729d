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
#include <stdio.h>
#include <string.h>

#include "common/gp_error.h"

/* A name gpupool takes from people and hosts (a queue or project, a node, a
 * GPU model, a label's key and value, a Unix user): 1 to GP_NAME_MAX
 * letters, digits, '.', '_' and '-', not starting with '.' or '-' (a name
 * may become part of a file name or a command's argument). */
#define GP_NAME_MAX 63
/* The rule in words, for a message. */
#define GP_NAME_RULE                                                                               \
    "1 to " GP_STR(GP_NAME_MAX) " letters, digits, '.', '_' and '-', not starting with '.' or '-'"

/* Whether c may stand in a name. */
static inline int gp_name_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

/* Whether s is a name (above). */
static inline int gp_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > GP_NAME_MAX || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!gp_name_char((unsigned char)s[i]))
            return 0;
    return 1;
}

/* A macro's value as a string literal, for a message or help text that
 * names a bound or a default: "at most " GP_STR(GP_X_MAX) "h". */
#define GP_STR_(x) #x
#define GP_STR(x)  GP_STR_(x)

/* The index of name in names[0..n-1], or -1 (also for a NULL name). */
static inline int gp_name_index(const char *const *names, int n, const char *name) {
    for (int i = 0; name != NULL && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* Writes names[0..n) to buf as a sentence's list, "a, b or c" (cut short
 * to fit len bytes); returns buf. */
static inline const char *gp_names_or(char *buf, size_t len, const char *const *names, int n) {
    size_t at = 0;
    if (len > 0)
        buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s",
                               i == 0      ? ""
                               : i + 1 < n ? ", "
                                           : " or ",
                               names[i]);
    return buf;
}

/* A row's symbol and its name, for the list's two uses below. */
#define GP_ENUM_SYMBOL_OF(sym, name) sym,
#define GP_ENUM_NAME_OF(sym, name)   name,

/*
 * Declares, for an X-macro list of (SYMBOL, "name") rows:
 *   typedef enum type { SYMBOL..., count } type;   values from 0, in order
 *   const char *type_name(type v);                 v's name
 *   int type_parse(const char *name, type *out);   0, or GP_EINVAL
 * GP_NAMED_ENUM_DEFINE, in one .c file, defines the two functions.
 */
#define GP_NAMED_ENUM_DECLARE(type, list, count)                                                   \
    typedef enum type { list(GP_ENUM_SYMBOL_OF) count } type;                                      \
    const char *type##_name(type v);                                                               \
    int type##_parse(const char *name, type *out)

/* type_name (unknown out of range; NULL is refused by parse too) and
 * type_parse for an enum declared with GP_NAMED_ENUM_DECLARE. */
#define GP_NAMED_ENUM_DEFINE(type, list, count, unknown)                                           \
    static const char *const type##_names[] = {list(GP_ENUM_NAME_OF)};                             \
    _Static_assert(sizeof type##_names / sizeof type##_names[0] == (size_t)(count),                \
                   "a name for every value of " #type);                                            \
    const char *type##_name(type v) {                                                              \
        return (unsigned)v < (unsigned)(count) ? type##_names[v] : (unknown);                      \
    }                                                                                              \
    int type##_parse(const char *name, type *out) {                                                \
        int i = gp_name_index(type##_names, (int)(count), name);                                   \
        if (i < 0)                                                                                 \
            return GP_EINVAL;                                                                      \
        *out = (type)i;                                                                            \
        return 0;                                                                                  \
    }

#endif /* GP_NAMES_H */
