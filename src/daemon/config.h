/*
 * config.h — gpupoold's settings: their defaults, one setting by name (the
 * flags and the config file's keys share the names, with '-' or '_'), and
 * the config file, "key = value" lines with '#' comments.
 *
 * Every value is checked: a number out of range, a duration that is not
 * one, a value too long for its field, an unknown key, a line without '=',
 * an overlong line or a NUL byte is an error naming the key (and the file's
 * line), and the settings already read are then not to be used.
 */
#ifndef GP_DAEMON_CONFIG_H
#define GP_DAEMON_CONFIG_H

#include <stddef.h>

#include "daemon/daemon.h"

/* Fills c with the embedded defaults (127.0.0.1:8642, ./gpupool-data, ...). */
void gpd__config_defaults(gpd__config *c);

/* Applies one setting; GP_EINVAL with err naming key on a bad key or value. */
int gpd__config_set(gpd__config *c, const char *key, const char *val, char *err, size_t errlen);

/* Applies the len bytes of a config file's text (name is used in messages). */
int gpd__config_parse(gpd__config *c, const char *name, const char *text, size_t len, char *err,
                      size_t errlen);

/* Reads the config file at path (at most 1 MiB) and applies it. */
int gpd__config_read(gpd__config *c, const char *path, char *err, size_t errlen);

#endif /* GP_DAEMON_CONFIG_H */
