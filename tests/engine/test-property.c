/*
 * test-property.c — thousands of random event sequences with the invariant
 * checker after every cycle: the books always balance, no gang is ever left
 * partly placed, only preemptible work is evicted, and every decision names
 * a workload in the state it says.
 */
#include "gptest.h"
#include "helpers.h"

START_TEST(test_random_sequences_keep_the_books) {
    /* 4 loop iterations x 500 sequences: 2,000 sequences of 150 events. */
    for (uint64_t seed = (uint64_t)_i * 500 + 1; seed <= (uint64_t)_i * 500 + 500; seed++)
        t_random_run(seed, 150, (gp_placement)(seed % GP_PLACE_COUNT));
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_loop_test(tc, test_random_sequences_keep_the_books, 0, 4);
}

GP_TEST_MAIN("engine/property", add_tests)
