/*
 * replay.c — `replay` and `plan` (see replay.h). Not written yet: both
 * commands say so and exit with status 2.
 */
#include "sim/replay.h"

#include <stdio.h>

int sim_cmd_replay(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "gpupool-sim replay: not implemented yet\n");
    return 2;
}

int sim_cmd_plan(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "gpupool-sim plan: not implemented yet\n");
    return 2;
}
