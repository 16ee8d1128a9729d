/*
 * test-determinism.c — the same events and seed give the same decisions,
 * for every placement policy (the random one included).
 */
#include "gptest.h"
#include "helpers.h"

START_TEST(test_same_events_same_decisions) {
    for (int p = 0; p < GP_PLACE_COUNT; p++) {
        for (uint64_t seed = 1; seed <= 20; seed++) {
            uint64_t a = t_random_run(seed, 120, (gp_placement)p);
            uint64_t b = t_random_run(seed, 120, (gp_placement)p);
            ck_assert_msg(a == b, "policy %s seed %llu: %llx != %llx",
                          gp_placement_name((gp_placement)p), (unsigned long long)seed,
                          (unsigned long long)a, (unsigned long long)b);
        }
    }
}
END_TEST

/* Different seeds of the random policy do give different decisions, so the
 * test above is not comparing constants. */
START_TEST(test_seed_matters_for_random_policy) {
    int differ = 0;
    for (uint64_t seed = 1; seed <= 10; seed++)
        differ += t_random_run(seed, 120, GP_PLACE_RANDOM) !=
                  t_random_run(seed + 100, 120, GP_PLACE_RANDOM);
    ck_assert_int_gt(differ, 5);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_same_events_same_decisions);
    tcase_add_test(tc, test_seed_matters_for_random_policy);
}

GP_TEST_MAIN("engine/determinism", add_tests)
