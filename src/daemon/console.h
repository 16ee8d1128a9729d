/*
 * console.h — the web console's files, built into gpupoold: embed.sh turns
 * every file of src/daemon/console/ into an array of console-assets.c (made
 * at build time), and console.c serves them at / and /console/NAME.
 */
#ifndef GP_DAEMON_CONSOLE_H
#define GP_DAEMON_CONSOLE_H

#include <stddef.h>

typedef struct gpd__asset {
    const char *name;         /* file name, e.g. "console.js" */
    const char *content_type; /* e.g. "text/javascript; charset=utf-8" */
    const unsigned char *data;
    size_t len;
} gpd__asset;

extern const gpd__asset gpd__assets[];
extern const size_t gpd__nassets;

#endif /* GP_DAEMON_CONSOLE_H */
