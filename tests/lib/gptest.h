/*
 * gptest.h — the small layer every gpupool C test program shares, over the
 * Check unit-test framework (Debian package "check").
 *
 * Check runs each test in its own forked process, so a crash fails one test
 * and not the run, and its ck_assert_* macros print both sides of a failed
 * comparison. A test program lists its tests in one function and lets
 * GP_TEST_MAIN build the suite:
 *
 *     START_TEST(test_something) { ck_assert_int_eq(f(2), 4); } END_TEST
 *     static void add_tests(TCase *tc) { tcase_add_test(tc, test_something); }
 *     GP_TEST_MAIN("engine/fairshare", add_tests)
 *
 * tests/run.sh asks Check for TAP on standard output and adds the results of
 * every program up into the closing "N passed, N failed, N skipped" line.
 */
#ifndef GP_TEST_H
#define GP_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* Per-test time limit in seconds; a test program may define its own first. */
#ifndef GP_TEST_TIMEOUT
#define GP_TEST_TIMEOUT 120
#endif

/*
 * A test that cannot run here (no cgroup, no python3) says why with
 * GP_TEST_SKIP("reason %s", ...) and returns: tests/run.sh counts it as
 * skipped, not passed. The line is TAP's "# SKIP" directive.
 */
#define GP_TEST_SKIP(...)                                                                          \
    do {                                                                                           \
        printf("# SKIP ");                                                                         \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        return;                                                                                    \
    } while (0)

#define GP_TEST_MAIN(suite_name, add_tests_fn)                                                     \
    int main(void) {                                                                               \
        Suite *s_ = suite_create(suite_name);                                                      \
        TCase *tc_ = tcase_create("main");                                                         \
        tcase_set_timeout(tc_, GP_TEST_TIMEOUT);                                                   \
        add_tests_fn(tc_);                                                                         \
        suite_add_tcase(s_, tc_);                                                                  \
        SRunner *sr_ = srunner_create(s_);                                                         \
        srunner_run_all(sr_, CK_ENV);                                                              \
        int failed_ = srunner_ntests_failed(sr_);                                                  \
        srunner_free(sr_);                                                                         \
        return failed_ == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                         \
    }

#endif /* GP_TEST_H */
