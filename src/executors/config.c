/*
 * config.c — the one reader of an executor's configuration string, the
 * "key=value,key=value" of gpupoold's --executor-config: it splits the text
 * and hands each pair to the executor, which owns its keys, their defaults
 * and their checks. Every executor thus refuses a malformed item the same
 * way, and the fuzz target over executor configurations covers the split
 * once for all.
 */
#include <stdlib.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/registry.h"

int gpx__config_parse(const char *text, gpx__config_set set, void *arg, char *err, size_t errlen) {
    char *copy = strdup(text != NULL ? text : "");
    if (copy == NULL) {
        gp_errf(err, errlen, "executor-config: out of memory");
        return GP_ENOMEM;
    }
    int rc = 0;
    for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv != NULL && rc == 0;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq == NULL) {
            gp_errf(err, errlen, "executor-config: '%.60s' is not key=value", kv);
            rc = GP_EINVAL;
            break;
        }
        *eq = '\0';
        rc = set(arg, kv, eq + 1, err, errlen);
    }
    free(copy);
    return rc;
}

int gpx__config_string(const gpx__config_key *keys, const char *key, const char *value, char *err,
                       size_t errlen) {
    for (size_t i = 0; keys[i].key != NULL; i++) {
        if (strcmp(keys[i].key, key) != 0)
            continue;
        size_t n = strlen(value);
        if (n >= keys[i].len) {
            gp_errf(err, errlen, "executor-config: %s: value is longer than %zu characters", key,
                    keys[i].len - 1);
            return GP_EINVAL;
        }
        memcpy(keys[i].field, value, n + 1);
        return 0;
    }
    return GP_ENOENT;
}
