/*
 * config.h — gpupoold's settings: one list in config.c gives each its name
 * (the flags and the config file's keys share the names, with '-' or '_'),
 * its reader, its bounds, its default and its help, from which the defaults,
 * --help and docs/daemon.md's table all come; and the config file, "key =
 * value" lines with '#' comments.
 *
 * Every value is checked: a number out of range, a duration that is not
 * one, a value too long for its field, an unknown key, a line without '=',
 * an overlong line or a NUL byte is an error naming the key (and the file's
 * line), and the settings already read are then not to be used.
 */
#ifndef GP_DAEMON_CONFIG_H
#define GP_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "daemon/daemon.h"

/* Fills c with the embedded defaults (127.0.0.1:8642, ./gpupool-data, ...),
 * each read as a value given would be; an error says which default the
 * reader refused (a fault of the list, caught by every test that starts a
 * daemon). */
int gpd__config_defaults(gpd__config *c, char *err, size_t errlen);

/* Applies one setting; GP_EINVAL with err naming key on a bad key or value. */
int gpd__config_set(gpd__config *c, const char *key, const char *val, char *err, size_t errlen);

/* Whether key is a switch: yes or no in a file, and on the command line a
 * flag alone that says yes (--allow-root-workloads). */
int gpd__config_switch(const char *key);

/* Writes the settings' lines of gpupoold --help: each flag, its value, what
 * it does, its default and its range. */
void gpd__config_help(FILE *f);

/* Writes one line of gpupoold --help as the settings' are: flag (with its
 * value, e.g. "--config FILE") and then text, wrapped beside it. */
void gpd__config_help_line(FILE *f, const char *flag, const char *text);

/* Writes the settings as the Markdown table of docs/daemon.md ("Settings"),
 * which test-doc-tables.sh holds to it. */
void gpd__config_print_table(FILE *f);

/* Applies the len bytes of a config file's text (name is used in messages). */
int gpd__config_parse(gpd__config *c, const char *name, const char *text, size_t len, char *err,
                      size_t errlen);

/* Reads the config file at path (at most 1 MiB) and applies it. */
int gpd__config_read(gpd__config *c, const char *path, char *err, size_t errlen);

#endif /* GP_DAEMON_CONFIG_H */
