/*
 * bench-pause.c — what a pause and a resume cost against the GPU memory a
 * task holds, through the local executor (pause.c) on the fake driver, whose
 * checkpoint copies device memory to host memory and back at memcpy speed
 * (so these are the executor's and the freezer's costs plus one host copy
 * each way, not a real GPU's; tests/gpu/pause.sh measures those). For each
 * size a CUDA workload that never checkpoints (tests/executors/cuda-holder)
 * is paused and resumed, and the step it had reached is compared with the
 * step it goes on from: with pause no work is lost (with checkpoint mode it
 * would start again from step 1).
 *
 *   build/bench/bench-pause [MIB...]      (default 64 256 1024; root, cgroups)
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"

static char dir[] = "/tmp/bench-pause-XXXXXX";

static long step_of(const char *state) {
    FILE *f = fopen(state, "r");
    long s = -1;
    if (f != NULL) {
        if (fscanf(f, "%ld", &s) != 1)
            s = -1;
        fclose(f);
    }
    return s;
}

/* Waits (up to 60 s) until the holder's step passes after. */
static long wait_step(const char *state, long after) {
    for (int i = 0; i < 6000; i++) {
        long s = step_of(state);
        if (s > after)
            return s;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

int main(int argc, char **argv) {
    char self[PATH_MAX / 2], lib[PATH_MAX], holder[PATH_MAX], config[2 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || mkdtemp(dir) == NULL)
        return 1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0'; /* build/bench */
    snprintf(lib, sizeof lib, "%s/../fake/libcuda.so.1", self);
    snprintf(holder, sizeof holder, "%s/../tests/executors/cuda-holder", self);
    char ledger[64];
    snprintf(ledger, sizeof ledger, "gpfake-bench-pause-%d", (int)getpid());
    setenv("GPUPOOL_FAKE_LEDGER", ledger, 1);
    setenv("GPUPOOL_FAKE_GPU_MEMORY", "8G", 1);
    snprintf(config, sizeof config,
             "state_dir=%s/state,nvml=off,cgroup=auto,interposer=%s/none.so,cuda=%s", dir, dir,
             lib);
    gp_executor *ex;
    char err[GP_ERR_MAX] = "";
    if (gp_executor_open("local", config, &ex, err, sizeof err) != 0) {
        fprintf(stderr, "bench-pause: %s\n", err);
        return 1;
    }
    gp_exec_pause p = {0};
    if (gp_exec_control(ex, GP_EXEC_CTL_PAUSE_SUPPORT, &p) != 0) {
        printf("bench-pause: skipped: %s\n", p.detail);
        return 0;
    }
    static const char *const defaults[] = {"64", "256", "1024"};
    int nsizes = argc > 1 ? argc - 1 : 3;
    printf("| GPU memory held | lock | checkpoint | freeze | pause total | thaw | restore | unlock "
           "| resume total | step at pause | first step after |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nsizes; i++) {
        char state[PATH_MAX], log[PATH_MAX], handle[GP_HANDLE_MAX];
        snprintf(state, sizeof state, "%s/state-%d", dir, i);
        snprintf(log, sizeof log, "%s/log-%d", dir, i);
        const char *size = argc > 1 ? argv[i + 1] : defaults[i];
        const char *targv[] = {holder, ledger, "1", "8G", size, state, NULL};
        gp_task_launch t = {0};
        t.workload = (uint64_t)i + 1;
        t.attempt = 1;
        t.project = "bench";
        t.user = "bench";
        t.argv = targv;
        t.workdir = dir;
        t.log_path = log;
        t.checkpoint_dir = dir;
        if (gp_exec_launch(ex, &t, handle, err, sizeof err) != 0 || wait_step(state, 3) < 0) {
            fprintf(stderr, "bench-pause: the holder did not start: %s\n", err);
            return 1;
        }
        gp_exec_pause pp = {.handle = handle}, rp = {.handle = handle};
        int rc = gp_exec_control(ex, GP_EXEC_CTL_PAUSE, &pp);
        long at = step_of(state);
        rc = rc == 0 ? gp_exec_control(ex, GP_EXEC_CTL_RESUME, &rp) : rc;
        long next = wait_step(state, at);
        if (rc != 0) {
            fprintf(stderr, "bench-pause: %s: %s %s\n", gp_err_name(rc), pp.detail, rp.detail);
            return 1;
        }
        printf("| %s MiB | %lld ms | %lld ms | %lld ms | %lld ms | %lld ms | %lld ms | %lld ms | "
               "%lld ms | %ld | %ld |\n",
               size, (long long)pp.step_ms[0], (long long)pp.step_ms[1], (long long)pp.step_ms[2],
               (long long)(pp.step_ms[0] + pp.step_ms[1] + pp.step_ms[2]), (long long)rp.step_ms[0],
               (long long)rp.step_ms[1], (long long)rp.step_ms[2],
               (long long)(rp.step_ms[0] + rp.step_ms[1] + rp.step_ms[2]), at, next);
        gp_exec_stop(ex, handle);
        for (gp_task_status st = {.state = GP_TASK_RUNNING}; st.state == GP_TASK_RUNNING;) {
            snprintf(st.handle, sizeof st.handle, "%s", handle);
            gp_exec_poll(ex, &st, 1);
        }
        gp_exec_reap(ex, handle);
    }
    gp_executor_close(ex);
    char shm[96];
    snprintf(shm, sizeof shm, "/dev/shm/%s", ledger);
    unlink(shm);
    return 0;
}
