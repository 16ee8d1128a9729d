/*
 * test-share.c — kernel launches and the compute share.
 *
 * The fake GPU gives every kernel 1 ms of busy time on a timeline shared by
 * all processes; a workload launches batches of kernels and synchronises,
 * as a training loop does. Without a share the launches pass straight
 * through; with a share of 25, 50 or 75 % the workload's busy fraction of
 * the GPU, measured by the fake driver over 2.5 seconds after a settling
 * second, must be no more than the share plus 0.15 of the GPU (the feedback
 * loop overshoots by a few windows when the machine is loaded, and an
 * unthrottled loop is still far above that bound,
 * test_no_share_is_not_throttled) in every round, and no less than 90 % of
 * the share in at least one of three rounds. The lower bound is a property
 * of the machine as much as of the throttle: a process that a loaded machine
 * does not schedule launches too little, which is not the throttle holding
 * it back. So it is checked on the time the process could run: the window
 * less what the kernel says it waited, runnable, for a CPU (schedstat's
 * run_delay); a throttle that holds too hard fails all three rounds. Every
 * launch entry point (both stream forms) goes through the same throttle.
 */
#include "harness.h"

#include "gptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Launches through each launch entry point in turn. */
static void launch(int i) {
    CUlaunchConfig cfg = {.gridDimX = 1,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 1,
                          .blockDimY = 1,
                          .blockDimZ = 1};
    CUresult r;
    switch (i % 8) {
    case 0:
        r = D.cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        break;
    case 1:
        r = D.cuLaunchKernel_ptsz(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        break;
    case 2:
        r = D.cuLaunchKernelEx(&cfg, NULL, NULL, NULL);
        break;
    case 3:
        r = D.cuLaunchKernelEx_ptsz(&cfg, NULL, NULL, NULL);
        break;
    case 4:
        r = D.cuLaunchCooperativeKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL);
        break;
    case 5:
        r = D.cuLaunchCooperativeKernel_ptsz(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL);
        break;
    case 6:
        r = D.cuGraphLaunch(NULL, NULL);
        break;
    default:
        r = D.cuGraphLaunch_ptsz(NULL, NULL);
    }
    ck_assert_int_eq(r, CUDA_SUCCESS);
}

/* Nanoseconds this thread has waited, runnable, for a CPU (the kernel's
 * schedstat run_delay); 0 where the kernel does not say. */
static int64_t run_delay_ns(void) {
    unsigned long long on = 0, waited = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (f != NULL && fscanf(f, "%llu %llu", &on, &waited) != 2)
        waited = 0;
    if (f != NULL)
        fclose(f);
    return (int64_t)waited;
}

/* Runs the loop for `secs` and gives the busy fraction of the GPU this
 * process had after the first second: of the whole window (*busy), and of
 * the part of it the process was not waiting for a CPU (*could). */
static void run_busy(double secs, double *busy, double *could) {
    int64_t start = now_ns(), from = start + 1000000000LL, end = start + (int64_t)(secs * 1e9);
    int64_t waited = 0;
    for (int i = 0; now_ns() < end; i++) {
        if (waited == 0 && now_ns() >= from)
            waited = run_delay_ns();
        launch(i);
        if (i % 8 == 7)
            ck_assert_int_eq(D.ctxSynchronize(), CUDA_SUCCESS);
    }
    D.ctxSynchronize();
    int64_t to = now_ns();
    waited = waited > 0 ? run_delay_ns() - waited : 0;
    double gpu = (double)D.fake_busy_ns(0, (int)getpid(), from, to);
    *busy = gpu / (double)(to - from);
    *could = to - from - waited > 0 ? gpu / (double)(to - from - waited) : *busy;
}

/* Runs rounds of `secs` and checks the busy fraction of each: never above
 * `most` of the window, and at least `least` of the time the process could
 * run in one of three rounds (see the top). */
static void check_busy(const char *what, double secs, double least, double most) {
    double busy = 0, could = 0;
    int reached = 0;
    for (int round = 0; round < 3 && !reached; round++) {
        run_busy(secs, &busy, &could);
        ck_assert_msg(busy < most, "%s: busy %.3f in round %d", what, busy, round + 1);
        reached = could > least;
    }
    ck_assert_msg(reached,
                  "%s: busy %.3f (%.3f of the time it could run), below %.3f in all three rounds",
                  what, busy, could, least);
}

static void check_share(const char *share, double want) {
    setenv("GPUPOOL_COMPUTE_SHARE", share, 1);
    setenv("GPUPOOL_FAKE_KERNEL_US", "1000", 1);
    h_open(12080);
    /* Under ThreadSanitizer (GPTEST_SCALE) the launch loop itself may be too
     * slow to reach the share: only the upper bound is checked there. */
    check_busy(share, 3.5, h_scaled(10) < 10 ? 0.0 : want * 0.9, want + 0.15);
}

START_TEST(test_no_share_is_not_throttled) {
    setenv("GPUPOOL_FAKE_KERNEL_US", "1000", 1);
    h_open(12080);
    check_busy("no share", 2.0, 0.9, 2.0);
}
END_TEST

START_TEST(test_share_25) {
    check_share("25", 0.25);
}
END_TEST

START_TEST(test_share_50) {
    check_share("50", 0.50);
}
END_TEST

START_TEST(test_share_75) {
    check_share("75%", 0.75);
}
END_TEST

START_TEST(test_launch_without_context_is_the_drivers_error) {
    setenv("GPUPOOL_COMPUTE_SHARE", "50", 1);
    h_open_noctx(12080);
    ck_assert_int_eq(D.cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_no_share_is_not_throttled);
    tcase_add_test(tc, test_share_25);
    tcase_add_test(tc, test_share_50);
    tcase_add_test(tc, test_share_75);
    tcase_add_test(tc, test_launch_without_context_is_the_drivers_error);
}

GP_TEST_MAIN("interpose/share", add_tests)
