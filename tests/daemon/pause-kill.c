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
 *
 * GPUPOOL_TEST_SPAWN_HOLD=FILE makes it kill itself the same way right after
 * it forks a task's launch, and holds the supervisor back before it writes
 * its handle until FILE exists (test-launch-crash.sh).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "executors/local/local.h"

static int kill_at;

static void kill_hook(int step) {
    if (step == kill_at)
        kill(getpid(), SIGKILL);
}

static char hold[4096];

/* In the daemon (1) and in the forked supervisor (2): system calls only. */
static void spawn_hook(int step) {
    if (step == 1)
        kill(getpid(), SIGKILL);
    while (step == 2 && access(hold, F_OK) < 0) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

__attribute__((constructor)) static void arm(void) {
    const char *h = getenv("GPUPOOL_TEST_SPAWN_HOLD");
    if (h != NULL && *h != '\0') {
        snprintf(hold, sizeof hold, "%s", h);
        gpx__spawn_step_hook = spawn_hook;
    }
    const char *v = getenv("GPUPOOL_TEST_PAUSE_KILL");
    if (v != NULL && *v != '\0') {
        kill_at = atoi(v);
        gpx__pause_step_hook = kill_hook;
    }
}
