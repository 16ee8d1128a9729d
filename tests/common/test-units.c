/*
 * test-units.c — the one parser of sizes, durations, milli-amounts and
 * signals that every part uses (src/common/units.h): exact decimals, binary
 * multiples, refusals of what is not a quantity, overflow as GP_ERANGE, the
 * output left unchanged on error, and printing that reads back the same.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "common/gp_error.h"
#include "common/units.h"
#include "gptest.h"

#define GIB (INT64_C(1) << 30)

START_TEST(test_sizes) {
    int64_t v = 0;
    ck_assert_int_eq(gp_parse_size("1024", &v), 0);
    ck_assert_int_eq(v, 1024);
    ck_assert_int_eq(gp_parse_size("20G", &v), 0);
    ck_assert_int_eq(v, 20 * GIB);
    /* The same text means the same bytes in every part. */
    ck_assert_int_eq(gp_parse_size("1.5G", &v), 0);
    ck_assert_int_eq(v, 3 * GIB / 2);
    ck_assert_int_eq(gp_parse_size("512MiB", &v), 0);
    ck_assert_int_eq(v, INT64_C(512) << 20);
    ck_assert_int_eq(gp_parse_size("2tb", &v), 0);
    ck_assert_int_eq(v, INT64_C(2) << 40);
    ck_assert_int_eq(gp_parse_size("1P", &v), 0);
    ck_assert_int_eq(v, INT64_C(1) << 50);
}
END_TEST

START_TEST(test_bad_sizes_change_nothing) {
    const char *bad[] = {"", "G", "12X", "-1", "1.5.5G", " 1G", "1G ", "0.1", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 77;
        ck_assert_msg(gp_parse_size(bad[i], &v) < 0, "'%s' was taken", bad[i]);
        ck_assert_int_eq(v, 77);
    }
    int64_t v = 77;
    ck_assert_int_eq(gp_parse_size("9000P", &v), GP_ERANGE);
    ck_assert_int_eq(gp_parse_size("99999999999999999999", &v), GP_ERANGE);
    ck_assert_int_eq(v, 77);
    ck_assert_int_eq(gp_parse_size(NULL, &v), GP_EINVAL);
}
END_TEST

START_TEST(test_durations) {
    int64_t ms = 0;
    ck_assert_int_eq(gp_parse_duration_ms("500ms", &ms), 0);
    ck_assert_int_eq(ms, 500);
    ck_assert_int_eq(gp_parse_duration_ms("60s", &ms), 0);
    ck_assert_int_eq(ms, 60000);
    ck_assert_int_eq(gp_parse_duration_ms("2m", &ms), 0);
    ck_assert_int_eq(ms, 120000);
    ck_assert_int_eq(gp_parse_duration_ms("1h", &ms), 0);
    ck_assert_int_eq(ms, 3600000);
    ck_assert_int_eq(gp_parse_duration_ms("30", &ms), 0); /* bare: seconds */
    ck_assert_int_eq(ms, 30000);
    ms = 5;
    ck_assert_int_lt(gp_parse_duration_ms("soon", &ms), 0);
    ck_assert_int_lt(gp_parse_duration_ms("", &ms), 0);
    ck_assert_int_lt(gp_parse_duration_ms("-1s", &ms), 0);
    ck_assert_int_eq(ms, 5);
}
END_TEST

START_TEST(test_milli) {
    int64_t m = 0;
    ck_assert_int_eq(gp_parse_milli("0.25", &m), 0);
    ck_assert_int_eq(m, 250);
    ck_assert_int_eq(gp_parse_milli("4", &m), 0);
    ck_assert_int_eq(m, 4000);
    m = 9;
    ck_assert_int_lt(gp_parse_milli("0.0005", &m), 0); /* a fourth decimal */
    ck_assert_int_lt(gp_parse_milli("-1", &m), 0);
    ck_assert_int_lt(gp_parse_milli("half", &m), 0);
    ck_assert_int_eq(m, 9);
}
END_TEST

START_TEST(test_signals) {
    int s = 0;
    ck_assert_int_eq(gp_parse_signal("TERM", &s), 0);
    ck_assert_int_eq(s, SIGTERM);
    ck_assert_int_eq(gp_parse_signal("SIGUSR1", &s), 0);
    ck_assert_int_eq(s, SIGUSR1);
    ck_assert_int_eq(gp_parse_signal("15", &s), 0);
    ck_assert_int_eq(s, 15);
    s = 3;
    ck_assert_int_lt(gp_parse_signal("NOPE", &s), 0);
    ck_assert_int_lt(gp_parse_signal("0", &s), 0);
    ck_assert_int_lt(gp_parse_signal("65", &s), 0);
    ck_assert_int_eq(s, 3);
    ck_assert_str_eq(gp_signal_name(SIGTERM), "TERM");
}
END_TEST

/* What is printed reads back as the same quantity. */
START_TEST(test_round_trips) {
    char buf[64];
    const int64_t sizes[] = {0, 1000, 1024, 3 * GIB / 2, 20 * GIB, INT64_C(123456789)};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int64_t v = -1;
        gp_format_size(sizes[i], buf, sizeof buf);
        ck_assert_msg(gp_parse_size(buf, &v) == 0 && v == sizes[i], "%lld -> '%s' -> %lld",
                      (long long)sizes[i], buf, (long long)v);
    }
    gp_format_size(3 * GIB / 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.5G");
    gp_format_milli(1250, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.25");
    /* Durations print for people ("1m1s"); one unit reads back. */
    gp_format_duration(61000, buf, sizeof buf);
    ck_assert_str_eq(buf, "1m1s");
    gp_format_duration(120000, buf, sizeof buf);
    int64_t ms = 0;
    ck_assert_int_eq(gp_parse_duration_ms(buf, &ms), 0);
    ck_assert_int_eq(ms, 120000);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_bad_sizes_change_nothing);
    tcase_add_test(tc, test_durations);
    tcase_add_test(tc, test_milli);
    tcase_add_test(tc, test_signals);
    tcase_add_test(tc, test_round_trips);
}

GP_TEST_MAIN("common/units", add_tests)
