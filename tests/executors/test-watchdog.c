/*
 * test-watchdog.c — the local executor's GPU memory watchdog (watchdog.c) in
 * parts: which task a process belongs to from its /proc/PID/cgroup text,
 * the tolerance and the judgement of a task's memory against its slice,
 * what a launch records of its GPUs, what it reads (the fake NVML's memory
 * per process, whoever booked it), and, on a real task, that a recorded
 * decision ends in SIGKILL once its grace is over and that poll() then
 * reports the watchdog's sentence. The whole chain through NVML and the
 * daemon is tests/daemon/test-watchdog.sh.
 */
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gp_error.h"
#include "executors/executor.h"
#include "executors/local/local.h"
#include "gptest.h"
#include "helpers.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)

/* ---- pid -> task ---------------------------------------------------------- */

START_TEST(test_task_of_v1_hybrid) {
    /* cgroup v1 with a v2 tree beside it, as Debian 12 mounts it. */
    const char *text = "12:devices:/gpupool/ab12cd34/w17.t2.a3\n"
                       "11:memory:/gpupool/ab12cd34/w17.t2.a3\n"
                       "4:cpu,cpuacct:/gpupool/ab12cd34/w17.t2.a3\n"
                       "1:name=systemd:/user.slice/user-0.slice/session-1.scope\n"
                       "0::/user.slice/user-0.slice/session-1.scope\n";
    char key[GPX__KEY_MAX] = "";
    ck_assert_int_eq(gpx__wd_task_of(text, "ab12cd34", key, sizeof key), 1);
    ck_assert_str_eq(key, "w17.t2.a3");
}
END_TEST

START_TEST(test_task_of_v2_nested) {
    /* cgroup v2, the daemon's tree below a systemd service. */
    const char *text = "0::/system.slice/gpupoold.service/gpupool/inst-1/w5.t0.a1\n";
    char key[GPX__KEY_MAX] = "";
    ck_assert_int_eq(gpx__wd_task_of(text, "inst-1", key, sizeof key), 1);
    ck_assert_str_eq(key, "w5.t0.a1");
}
END_TEST

START_TEST(test_task_of_not_ours) {
    char key[GPX__KEY_MAX] = "unchanged";
    /* Another daemon's instance. */
    ck_assert_int_eq(gpx__wd_task_of("0::/gpupool/other/w5.t0.a1\n", "inst-1", key, sizeof key), 0);
    /* The instance's own cgroup, not a task's. */
    ck_assert_int_eq(gpx__wd_task_of("0::/gpupool/inst-1\n", "inst-1", key, sizeof key), 0);
    /* A name below the instance that is not a task key. */
    ck_assert_int_eq(gpx__wd_task_of("0::/gpupool/inst-1/..\n", "inst-1", key, sizeof key), 0);
    ck_assert_int_eq(gpx__wd_task_of("0::/gpupool/inst-1/evil\n", "inst-1", key, sizeof key), 0);
    /* A process in no cgroup of ours, and empty or malformed text. */
    ck_assert_int_eq(gpx__wd_task_of("0::/user.slice\n", "inst-1", key, sizeof key), 0);
    ck_assert_int_eq(gpx__wd_task_of("", "inst-1", key, sizeof key), 0);
    ck_assert_int_eq(gpx__wd_task_of("garbage without colons", "inst-1", key, sizeof key), 0);
    ck_assert_str_eq(key, "unchanged");
}
END_TEST

START_TEST(test_task_of_own_process) {
    /* The test process itself belongs to no task of an instance made up here. */
    char *text = gpt_slurp("/proc/self/cgroup");
    char key[GPX__KEY_MAX];
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(gpx__wd_task_of(text, "no-such-instance", key, sizeof key), 0);
    free(text);
}
END_TEST

/* ---- the judgement --------------------------------------------------------- */

START_TEST(test_tolerance) {
    ck_assert_int_eq(gpx__wd_tolerance(20 * GIB, 0), 20 * GIB / 50);
    ck_assert_int_eq(gpx__wd_tolerance(1 * GIB, 0), 64 * MIB);
    ck_assert_int_eq(gpx__wd_tolerance(0, 0), 64 * MIB);
    /* Each process may hold a context of its own beyond the interposer's books. */
    ck_assert_int_eq(gpx__wd_tolerance(1 * GIB, 3), 64 * MIB + 3 * GPX__WD_CONTEXT);
    /* For four processes at most: the allowance of a slice is bounded
     * however many processes its workload starts (100 processes once held
     * 68.4 GiB in a 20 GiB slice). */
    ck_assert_int_eq(gpx__wd_tolerance(20 * GIB, 4), 20 * GIB / 50 + 2 * GIB);
    ck_assert_int_eq(gpx__wd_tolerance(20 * GIB, 100), 20 * GIB / 50 + 2 * GIB);
    ck_assert_int_eq(gpx__wd_tolerance(20 * GIB, -1), 20 * GIB / 50);
}
END_TEST

/* Over a slice (beyond the tolerance), and on a GPU not given. */
START_TEST(test_judge) {
    gpx__wd_limits lim = {.sig = SIGTERM};
    lim.mem[0] = 20 * GIB;
    gpx__wd_use use = {.procs = {[0] = 1}};
    char why[160] = "untouched";
    use.bytes[0] = 20 * GIB + gpx__wd_tolerance(20 * GIB, 1);
    ck_assert_int_eq(gpx__wd_judge(&lim, &use, why, sizeof why), 0);
    ck_assert_str_eq(why, "untouched");
    use.bytes[0]++;
    ck_assert_int_eq(gpx__wd_judge(&lim, &use, why, sizeof why), 1);
    use.bytes[0] = 30 * GIB;
    ck_assert_int_eq(gpx__wd_judge(&lim, &use, why, sizeof why), 1);
    ck_assert_str_eq(why, "stopped by the watchdog: 30.0 GiB on GPU 0, its slice is 20 GiB");
    /* A small slice: 64 MiB of tolerance, and a context's worth for each
     * of its processes (two here). */
    lim.mem[0] = 512 * MIB;
    use.procs[0] = 2;
    use.bytes[0] = 512 * MIB + 64 * MIB + 2 * GPX__WD_CONTEXT;
    ck_assert_int_eq(gpx__wd_judge(&lim, &use, why, sizeof why), 0);
    use.bytes[0] = 1700 * MIB;
    ck_assert_int_eq(gpx__wd_judge(&lim, &use, why, sizeof why), 1);
    ck_assert_str_eq(why, "stopped by the watchdog: 1.7 GiB on GPU 0, its slice is 512 MiB");

    /* A whole GPU, index 2. */
    lim.mem[0] = 0;
    use.bytes[0] = 0;
    lim.mem[2] = 80 * GIB;
    use.bytes[2] = 79 * GIB;
    use.procs[2] = 1;
    ck_assert_int_eq(gpx__wd_judge(&lim, &use, why, sizeof why), 0);
    /* Any memory at all on another GPU: no tolerance there. */
    use.bytes[5] = 1 * MIB;
    use.procs[5] = 1;
    ck_assert_int_eq(gpx__wd_judge(&lim, &use, why, sizeof why), 1);
    ck_assert_str_eq(why, "stopped by the watchdog: 1 MiB on GPU 5, which it was not given");
    /* A task without GPUs may use none. */
    gpx__wd_limits none = {.sig = SIGTERM};
    gpx__wd_use some = {.bytes = {[0] = 3 * GIB / 2}, .procs = {[0] = 1}};
    ck_assert_int_eq(gpx__wd_judge(&none, &some, why, sizeof why), 1);
    ck_assert_str_eq(why, "stopped by the watchdog: 1.5 GiB on GPU 0, which it was not given");
}
END_TEST

/* ---- what a launch records -------------------------------------------------- */

START_TEST(test_record_and_read) {
    const char *dir = gpt_tmpdir();
    gp_node_spec node;
    memset(&node, 0, sizeof node);
    node.ngpus = 3;
    for (int i = 0; i < 3; i++) {
        node.gpus[i].index = 10 + i; /* NVML's index, not the position */
        node.gpus[i].mem_bytes = 80 * GIB;
    }
    gp_task_binding b = {.node = "n", .nslices = 2};
    b.slices[0] = (gp_slice){.gpu = 1, .milli = 250, .mem = 20 * GIB, .mig_slot = -1};
    b.slices[1] = (gp_slice){.gpu = 2, .milli = 1000, .mem = 0, .mig_slot = -1};
    gp_task_launch t;
    memset(&t, 0, sizeof t);
    t.node = &node;
    t.binding = &b;
    t.checkpoint_signal = SIGUSR1;
    ck_assert_int_eq(gpx__wd_record(dir, &t), 0);
    gpx__wd_limits lim;
    ck_assert_int_eq(gpx__wd_limits_read(dir, &lim), 0);
    ck_assert_int_eq(lim.sig, SIGUSR1);
    ck_assert_int_eq(lim.mem[11], 20 * GIB);
    ck_assert_int_eq(lim.mem[12], 80 * GIB); /* a whole GPU: all of its memory */
    ck_assert_int_eq(lim.mem[0] + lim.mem[1] + lim.mem[10], 0);
    ck_assert_int_eq(lim.share, 0); /* no compute share: none recorded */
    /* A compute share is recorded for the outer throttle. */
    t.compute_share = 25;
    ck_assert_int_eq(gpx__wd_record(dir, &t), 0);
    ck_assert_int_eq(gpx__wd_limits_read(dir, &lim), 0);
    ck_assert_int_eq(lim.share, 25);
    gpt_spit(gpt_path(dir, "gpus"), "signal=15\nshare=101\ngpu=0 5\n");
    ck_assert_int_eq(gpx__wd_limits_read(dir, &lim), GP_ECORRUPT);
    /* A damaged record is refused, not read as "nothing given". */
    gpt_spit(gpt_path(dir, "gpus"), "signal=15\ngpu=99 5\n");
    ck_assert_int_eq(gpx__wd_limits_read(dir, &lim), GP_ECORRUPT);
    gpt_spit(gpt_path(dir, "gpus"), "gpu=0 5\n");
    ck_assert_int_eq(gpx__wd_limits_read(dir, &lim), GP_ECORRUPT);
    unlink(gpt_path(dir, "gpus"));
    ck_assert_int_eq(gpx__wd_limits_read(dir, &lim), GP_ENOENT);
    gpt_rmrf(dir);
}
END_TEST

/* ---- what the watchdog reads: the fake NVML's per-process memory -------------- */

START_TEST(test_fake_nvml_processes) {
    char lib[PATH_MAX], cuda[PATH_MAX];
    gpt_fake_nvml(lib, sizeof lib);
    snprintf(cuda, sizeof cuda, "%.*s/libcuda.so.1", (int)(strrchr(lib, '/') - lib), lib);
    setenv("GPUPOOL_FAKE_GPUS", "2", 1);
    void *nv = dlopen(lib, RTLD_NOW), *cu = dlopen(cuda, RTLD_NOW);
    ck_assert_ptr_nonnull(nv);
    ck_assert_ptr_nonnull(cu);
    int (*unseen)(int, uint64_t) = (int (*)(int, uint64_t))dlsym(cu, "gpfake_alloc_unseen");
    gp_nvml_pfn_nvmlDeviceGetHandleByIndex_v2 get =
        (gp_nvml_pfn_nvmlDeviceGetHandleByIndex_v2)dlsym(nv, "nvmlDeviceGetHandleByIndex_v2");
    gp_nvml_pfn_nvmlDeviceGetComputeRunningProcesses_v3 procs =
        (gp_nvml_pfn_nvmlDeviceGetComputeRunningProcesses_v3)dlsym(
            nv, "nvmlDeviceGetComputeRunningProcesses_v3");
    ck_assert(unseen && get && procs);
    nvmlDevice_t dev;
    ck_assert_int_eq(get(1, &dev), NVML_SUCCESS);
    nvmlProcessInfo_t info[4];
    unsigned n = 4;
    ck_assert_int_eq(procs(dev, &n, info), NVML_SUCCESS);
    ck_assert_uint_eq(n, 0);
    /* This process and a child each book memory on GPU 1 (the fake's state
     * is shared with forked children), unseen by any interposer. */
    ck_assert_int_eq(unseen(1, GIB), 0);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
        char ok = unseen(1, 2 * GIB) == 0 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) == 1)
            pause();
        _exit(0);
    }
    char ok = 0;
    ck_assert_int_eq(read(ready[0], &ok, 1), 1);
    ck_assert_int_eq(ok, 'y');
    /* Too little room: NVML says how much it needs. */
    n = 1;
    ck_assert_int_eq(procs(dev, &n, info), NVML_ERROR_INSUFFICIENT_SIZE);
    ck_assert_uint_eq(n, 2);
    n = 4;
    ck_assert_int_eq(procs(dev, &n, info), NVML_SUCCESS);
    ck_assert_uint_eq(n, 2);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_uint_eq(info[i].usedGpuMemory, info[i].pid == (unsigned)getpid()
                                                     ? (unsigned long long)GIB
                                                     : 2ULL * (unsigned long long)GIB);
        ck_assert(info[i].pid == (unsigned)getpid() || info[i].pid == (unsigned)child);
    }
    /* GPU 0 holds nothing of either. */
    ck_assert_int_eq(get(0, &dev), NVML_SUCCESS);
    n = 4;
    ck_assert_int_eq(procs(dev, &n, info), NVML_SUCCESS);
    ck_assert_uint_eq(n, 0);
    /* A process that has ended holds nothing any more, as with the driver. */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_int_eq(get(1, &dev), NVML_SUCCESS);
    n = 4;
    ck_assert_int_eq(procs(dev, &n, info), NVML_SUCCESS);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(info[0].pid, (unsigned)getpid());
}
END_TEST

/* ---- a decision on a real task ------------------------------------------------ */

START_TEST(test_decision_kills_and_reports) {
    const char *dir = gpt_tmpdir();
    gp_executor *ex = gpt_open(dir, NULL);
    char quiet[GP_HANDLE_MAX], judged[GP_HANDLE_MAX];
    /* Without a decision, an ended task has no detail. */
    gpt_launch_sh(ex, 8, "exit 0", dir, quiet);
    ck_assert_str_eq(gpt_exited(ex, quiet).detail, "");
    /* This one ignores its checkpoint signal: only SIGKILL ends it. */
    gpt_launch_sh(ex, 7, "trap '' TERM; while :; do sleep 1; done", dir, judged);
    ck_assert_int_eq(gpt_wait(ex, judged, GP_TASK_RUNNING).state, GP_TASK_RUNNING);
    /* A decision as the scan writes it, whose grace is long over (it was
     * taken at boot time 0). */
    gpt_spit(gpt_path(dir, "state/w7.t0.a1/watchdog"),
             "since=0\nwhy=stopped by the watchdog: 30.0 GiB on GPU 0, its slice is 20 GiB\n");
    gp_task_status st = gpt_exited(ex, judged);
    ck_assert_int_eq(st.term_signal, SIGKILL);
    ck_assert_str_eq(st.detail, "stopped by the watchdog: 30.0 GiB on GPU 0, its slice is 20 GiB");
    gpt_done(ex, dir);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_task_of_v1_hybrid);
    tcase_add_test(tc, test_task_of_v2_nested);
    tcase_add_test(tc, test_task_of_not_ours);
    tcase_add_test(tc, test_task_of_own_process);
    tcase_add_test(tc, test_tolerance);
    tcase_add_test(tc, test_judge);
    tcase_add_test(tc, test_record_and_read);
    tcase_add_test(tc, test_fake_nvml_processes);
    tcase_add_test(tc, test_decision_kills_and_reports);
}

GP_TEST_MAIN("executors/watchdog", add_tests)
