/*
 * type-size.c — prints the size in bytes of a type the daemon keeps in
 * lists (gp_queue_spec, gpd__token), from which test-oom.sh learns the size
 * of such a list, to make its growth fail (failalloc.so).
 */
#include <stdio.h>
#include <string.h>

#include "daemon/store.h"
#include "engine/gp_engine.h"

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "gp_queue_spec") == 0)
        printf("%zu\n", sizeof(gp_queue_spec));
    else if (argc == 2 && strcmp(argv[1], "gpd__token") == 0)
        printf("%zu\n", sizeof(gpd__token));
    else {
        fprintf(stderr, "usage: type-size gp_queue_spec|gpd__token\n");
        return 2;
    }
    return 0;
}
