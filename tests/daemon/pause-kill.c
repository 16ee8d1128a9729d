/*
 * pause-kill.c — TEST ONLY: linked with gpupoold's objects into
 * gpupoold-pausekill (never the shipped daemon), it makes the daemon kill
 * itself with SIGKILL at one step of a pause or a resume in the local
 * executor, as a kill -9 landing there would: GPUPOOL_TEST_PAUSE_KILL=N, N
 * one of the executor's step numbers (pause.c: 1 after journaling
 * "pausing", 2 after the CUDA lock, 3 after the checkpoint, 4 after the
 * freeze; 10 as a resume begins, before anything is done, 11 after
 * journaling "resuming", 12 after the thaw, 13 after the restore). Without the variable the daemon
 * runs as gpupoold does. test-pause-faults.sh restarts the real gpupoold after each kill.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "executors/local/local.h"

static int kill_at;

static void kill_hook(int step) {
    if (step == kill_at)
        kill(getpid(), SIGKILL);
}

__attribute__((constructor)) static void arm(void) {
    const char *v = getenv("GPUPOOL_TEST_PAUSE_KILL");
    if (v != NULL && *v != '\0') {
        kill_at = atoi(v);
        gpx__pause_step_hook = kill_hook;
    }
}
