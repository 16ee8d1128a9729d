/*
 * registry.h — internal to the executors and their tests: what registry.c
 * offers beyond the public gp_executor_* / gp_exec_* functions of executor.h,
 * and the helpers every executor shares (formatting, directories, and the
 * reader of configuration strings in config.c).
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
 * snprintf that says whether everything fit: 0, or GP_ERANGE if the result
 * was cut (it is still terminated). Notes and messages may be cut; paths are
 * checked by the callers that would otherwise act on a shortened one.
 */
int gpx__exec_fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * mkdir -p with mode 0755: creates path and every missing parent. Returns 0
 * (also if it exists) or the system code (gp_syserr) of the first mkdir that
 * failed, GP_ERANGE for a path too long. Shared by the
 * executors, which all keep per-task directories.
 */
int gpx__exec_mkdirs(const char *path);

/*
 * Gives the directory dir to a task's Unix user (owner uid:gid, mode 0700,
 * without following a link) and lets that user pass through the directory
 * above it (gpx__exec_pass_parent). 0 or a system code; on error the parent is left
 * as it was.
 */
int gpx__exec_give_dir(const char *dir, uid_t uid, gid_t gid);

/*
 * Lets every user pass through (never list) the directory that holds path:
 * adds 0711 to its mode if it is a directory of this process's user (never
 * one of someone else's, never through a link). Best effort: nothing is
 * reported.
 */
void gpx__exec_pass_parent(const char *path);

/*
 * Looks up run_as, the Unix user a task is to run as, into *pw (its strings
 * in buf). GP_EINVAL if there is no such user ("run_as: there is no Unix
 * user 'x' <where>"), GP_EPERM if it is root and allow_root is 0; err says
 * which.
 */
struct passwd;
int gpx__exec_lookup_user(const char *run_as, int allow_root, const char *where, struct passwd *pw,
                          char *buf, size_t buflen, char *err, size_t errlen);

/* Copies a user's name, home (default "/") and shell (default /bin/sh). */
void gpx__exec_user_strings(const struct passwd *pw, char *name, size_t nlen, char *home,
                            size_t hlen, char *shell, size_t slen);

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

/*
 * Copies value into the field of key in keys, a table ended by an entry
 * whose key is NULL. GP_ENOENT (err
 * untouched) if no entry has that key, so that the caller may try its other
 * keys; GP_EINVAL, naming the key, if the value does not fit (the field is
 * then unchanged).
 */
int gpx__config_string(const gpx__config_key *keys, const char *key, const char *value, char *err,
                       size_t errlen);

#endif /* GP_EXECUTORS_REGISTRY_H */
