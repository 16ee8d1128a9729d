/*
 * registry.h — internal to the executors and their tests: what registry.c
 * offers beyond the public gp_executor_* / gp_exec_* functions of executor.h,
 * the reader of configuration strings in config.c, and (through util.h) the
 * helpers every executor shares.
 *
 * The daemon never includes this file. It exists so that the tests can open
 * an executor from a table of their own (one with missing methods, one of an
 * old or future version) and check that the wrappers refuse to call through
 * NULL and report GP_ENOTSUP instead.
 */
#ifndef GP_EXECUTORS_REGISTRY_H
#define GP_EXECUTORS_REGISTRY_H

#include <stddef.h>
#include <sys/types.h>

#include "executors/executor.h"
#include "executors/util.h"

/* The local executor's table (src/executors/local/local.c). */
extern const gp_executor_methods gpx__local_methods;

/* The slurm executor's table (src/executors/slurm/slurm.c). */
extern const gp_executor_methods gpx__slurm_methods;

/*
 * Opens an executor from the table m, which need not be registered. Same
 * contract as gp_executor_open(): GP_ENOTSUP (err says why) for a table of
 * version 0 or without open/close; otherwise open's own result (open_ctx's,
 * with ctx or an all-NULL context, when the table has it). On error,
 * *out is left NULL and nothing is allocated.
 */
int gpx__executor_open_methods(const gp_executor_methods *m, const gp_executor_ctx *ctx,
                               const char *config, gp_executor **out, char *err, size_t errlen);

/*
 * One key=value pair of an executor's configuration, for gpx__config_parse:
 * 0 if taken, else a negative code with err naming the key.
 */
typedef int (*gpx__config_set)(void *arg, const char *key, const char *value, char *err,
                               size_t errlen);

/*
 * Reads text, "key=value" items separated by commas (empty items are
 * skipped; a value may hold '='), and calls set(arg, key, value, ...) for each
 * in order, stopping at the first error. An item without '=' is GP_EINVAL
 * ("executor-config: 'x' is not key=value"); GP_ENOMEM if a copy of text
 * cannot be made, before any call. Returns 0 or the first error.
 */
int gpx__config_parse(const char *text, gpx__config_set set, void *arg, char *err, size_t errlen);

/* A key whose value is copied into a string field of len bytes. */
typedef struct gpx__config_key {
    const char *key;
    char *field;
    size_t len;
} gpx__config_key;

/* The most keys an unknown key's error lists (a table may have more). */
#define GPX__CONFIG_KEYS_MAX 32

/*
 * A gpx__config_set whose arg is a table of gpx__config_key, ended by an
 * entry whose key is NULL: copies value into the field of key. GP_EINVAL,
 * naming the key, if the value does not fit (the field is then unchanged)
 * or if no entry has that key (the error then lists the table's keys, as
 * gpx__config_unknown does).
 */
int gpx__config_string(void *arg, const char *key, const char *value, char *err, size_t errlen);

/* Writes to err that key is none of an executor's keys, names[0..n): the
 * one wording of it ("executor-config: unknown key 'x' (expected a, b or
 * c)"), whose list docs/executors.md's tables are held to. */
void gpx__config_unknown(const char *key, const char *const *names, int n, char *err,
                         size_t errlen);

/* Whether id, a value that becomes part of the names an executor gives its
 * things (an instance's cgroups, a pool's Slurm jobs), is 1 to max letters,
 * digits, '_' or '-'; GPX__ID_RULE says so in a message. */
int gpx__id_ok(const char *id, size_t max);
#define GPX__ID_RULE "letters, digits, '_' or '-'"

#endif /* GP_EXECUTORS_REGISTRY_H */
