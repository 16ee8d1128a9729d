/*
 * bench-watchdog.c — what the local executor's GPU memory watchdog adds to
 * a poll of the daemon.
 *
 * Over the fake driver's NVML (tests/fake), with P processes each holding
 * 1 GiB on one of 8 fake GPUs (booked through the fake's gpfake_alloc_unseen,
 * in state shared by a GPUPOOL_FAKE_LEDGER), it times poll() of no task, so
 * that the figure is the scan alone: one NVML process list per GPU, one read
 * of /proc/PID/cgroup per process, the sums. It prints microseconds per poll
 * for P = 0, 16, 64 and 256, and of that what the fake NVML's process lists
 * alone take (the same 8 calls, timed directly): the fake reads
 * /proc/PID/stat of each process it lists, to forget the dead as the driver
 * does, which a real driver does not. The rest is the watchdog's own part,
 * the figure that carries over to a real node. Each figure is the best of
 * ROUNDS rounds of POLLS polls, as the machine may be busy.
 */
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "common/gp_nvml.h"
#include "executors/executor.h"

#define POLLS  50
#define ROUNDS 5
#define MAXP   256

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Starts a process that books 1 GiB on GPU gpu and waits to be killed; it
 * writes one byte to ready once booked. */
static pid_t holder(const char *libcuda, int gpu, int ready) {
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    void *h = dlopen(libcuda, RTLD_NOW);
    int (*alloc)(int, uint64_t) = h ? (int (*)(int, uint64_t))dlsym(h, "gpfake_alloc_unseen") : 0;
    char ok = alloc && alloc(gpu, 1ULL << 30) == 0 ? 'y' : 'n';
    if (write(ready, &ok, 1) != 1)
        _exit(1);
    for (;;)
        pause();
}

/* Microseconds one scan's worth of the fake NVML's process lists (8 calls)
 * takes, the best of ROUNDS rounds of POLLS. */
static double nvml_alone(void *lib) {
    gp_nvml_pfn_nvmlDeviceGetHandleByIndex_v2 get =
        (gp_nvml_pfn_nvmlDeviceGetHandleByIndex_v2)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    gp_nvml_pfn_nvmlDeviceGetComputeRunningProcesses_v3 procs =
        (gp_nvml_pfn_nvmlDeviceGetComputeRunningProcesses_v3)dlsym(
            lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    static nvmlProcessInfo_t infos[MAXP];
    double best = 1e30;
    for (int r = 0; get && procs && r < ROUNDS; r++) {
        double t = now_us();
        for (int i = 0; i < POLLS; i++) {
            for (unsigned g = 0; g < 8; g++) {
                nvmlDevice_t dev;
                unsigned count = MAXP;
                if (get(g, &dev) == NVML_SUCCESS)
                    procs(dev, &count, infos);
            }
        }
        t = (now_us() - t) / POLLS;
        best = t < best ? t : best;
    }
    return best;
}

/* Microseconds one poll of no task takes (the scan), the best of ROUNDS
 * rounds of POLLS; -1 if a poll fails. */
static double poll_alone(gp_executor *ex) {
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t = now_us();
        for (int i = 0; i < POLLS; i++)
            if (gp_exec_poll(ex, NULL, 0) < 0)
                return -1;
        t = (now_us() - t) / POLLS;
        best = t < best ? t : best;
    }
    return best;
}

int main(void) {
    char exe[PATH_MAX], nvml[PATH_MAX + 32], libcuda[PATH_MAX + 32], config[3 * PATH_MAX];
    char dir[] = "/tmp/gpupool-bench-wd.XXXXXX", ledger[64], err[GP_ERR_MAX] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || mkdtemp(dir) == NULL) {
        fprintf(stderr, "bench-watchdog: no executable path or temporary directory\n");
        return 1;
    }
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0'; /* <build>/bench */
    snprintf(nvml, sizeof nvml, "%s/../fake/libnvidia-ml.so.1", exe);
    snprintf(libcuda, sizeof libcuda, "%s/../fake/libcuda.so.1", exe);
    snprintf(ledger, sizeof ledger, "gpupool-bench-wd-%d", (int)getpid());
    setenv("GPUPOOL_FAKE_LEDGER", ledger, 1);
    setenv("GPUPOOL_FAKE_GPUS", "8", 1);
    snprintf(config, sizeof config, "state_dir=%s/state,nvml=%s,cgroup=off,interposer=%s/none", dir,
             nvml, dir);
    gp_executor *ex = NULL;
    if (gp_executor_open("local", config, &ex, err, sizeof err) < 0) {
        fprintf(stderr, "bench-watchdog: %s\n", err);
        return 1;
    }
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return 1;
    void *lib = dlopen(nvml, RTLD_NOW);
    pid_t kids[MAXP];
    int nkids = 0, rc = 0;
    printf("watchdog scan per poll (fake NVML, 8 GPUs; best of %d rounds of %d polls)\n", ROUNDS,
           POLLS);
    const int steps[] = {0, 16, 64, 256};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0] && rc == 0; s++) {
        while (nkids < steps[s]) {
            char ok;
            kids[nkids] = holder(libcuda, nkids % 8, pipefd[1]);
            nkids++;
            if (read(pipefd[0], &ok, 1) != 1 || ok != 'y') {
                fprintf(stderr, "bench-watchdog: a holder could not book its memory\n");
                rc = 1;
                break;
            }
        }
        double per_poll = rc == 0 ? poll_alone(ex) : -1;
        rc = per_poll < 0;
        if (rc == 0) {
            double fake = nvml_alone(lib);
            printf("  %3d processes: %8.1f us per poll, of which the fake NVML %8.1f, the "
                   "watchdog %6.1f (%.2f per process)\n",
                   nkids, per_poll, fake, per_poll - fake, nkids ? (per_poll - fake) / nkids : 0.0);
        }
    }
    for (int i = 0; i < nkids; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    gp_executor_close(ex);
    if (lib)
        dlclose(lib);
    char path[80];
    snprintf(path, sizeof path, "/%s", ledger);
    shm_unlink(path);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
