/*
 * queue-spec-size.c — prints the size of one queue's spec (gp_queue_spec) in
 * bytes, from which test-oom.sh learns the size of a list of them, to make
 * its growth fail (failalloc.so).
 */
#include <stdio.h>

#include "engine/gp_engine.h"

int main(void) {
    printf("%zu\n", sizeof(gp_queue_spec));
    return 0;
}
