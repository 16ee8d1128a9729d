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
#include "common/gp_names.h"
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

void gpx__config_unknown(const char *key, const char *const *names, int n, char *err,
                         size_t errlen) {
    char list[512];
    gp_errf(err, errlen, "executor-config: unknown key '%.40s' (expected %s)", key,
            gp_names_or(list, sizeof list, names, n));
}

int gpx__config_string(void *arg, const char *key, const char *value, char *err, size_t errlen) {
    const gpx__config_key *keys = arg;
    const char *names[GPX__CONFIG_KEYS_MAX];
    int n = 0;
    for (int i = 0; keys[i].key != NULL; i++) {
        if (n < GPX__CONFIG_KEYS_MAX)
            names[n++] = keys[i].key;
        if (strcmp(keys[i].key, key) != 0)
            continue;
        size_t len = strlen(value);
        if (len >= keys[i].len) {
            gp_errf(err, errlen, "executor-config: %s: value is longer than %zu characters", key,
                    keys[i].len - 1);
            return GP_EINVAL;
        }
        memcpy(keys[i].field, value, len + 1);
        return 0;
    }
    gpx__config_unknown(key, names, n, err, errlen);
    return GP_EINVAL;
}

int gpx__id_ok(const char *id, size_t max) {
    size_t n = strlen(id);
    return n >= 1 && n <= max &&
           strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}
