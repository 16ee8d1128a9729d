/*
 * test-units.c — the one parser of sizes, durations, milli-amounts and
 * signals that every part uses (src/common/units.h): exact decimals, binary
 * multiples, refusals of what is not a quantity, overflow as GP_ERANGE, the
 * output left unchanged on error, and printing that reads back the same.
 */
#include <signal.h>
#include <stdio.h>
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

/* Single units, a bare number (seconds), and compound durations: each unit
 * once, largest first, every part a number with a unit. Refusals change
 * nothing. */
START_TEST(test_durations) {
    static const struct {
        const char *text;
        int64_t ms;
    } good[] = {
        {"500ms", 500},    {"60s", 60000}, {"2m", 120000},
        {"1h", 3600000},   {"30", 30000},  {"1h30m", 5400000},
        {"1s500ms", 1500}, {"1.5s", 1500}, {"1d1h1m1.5s", 90061500},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t ms = -1;
        ck_assert_msg(gp_parse_duration_ms(good[i].text, &ms) == 0 && ms == good[i].ms,
                      "%s read as %lld", good[i].text, (long long)ms);
    }
    const char *bad[] = {"soon",  "",      "-1s", "1m1h", "1s1s",  "1h30",
                         "1m 1s", "1ms1s", "m",   "1mss", "1h-1m", "1d1x"};
    int64_t ms = 7;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(gp_parse_duration_ms(bad[i], &ms) == GP_EINVAL, "%s accepted", bad[i]);
    char big[64];
    snprintf(big, sizeof big, "%lldd23h", (long long)(INT64_MAX / 86400000));
    ck_assert_int_eq(gp_parse_duration_ms(big, &ms), GP_ERANGE);
    ck_assert_int_eq(ms, 7);
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
    /* Below 0, a sign and the magnitude ("0.-01" for -1 before). */
    gp_format_milli(-1, buf, sizeof buf);
    ck_assert_str_eq(buf, "-0.001");
    gp_format_milli(-1500, buf, sizeof buf);
    ck_assert_str_eq(buf, "-1.5");
    /* Durations print for people ("1m1s") and read back. */
    gp_format_duration(61000, buf, sizeof buf);
    ck_assert_str_eq(buf, "1m1s");
    gp_format_duration(90061500, buf, sizeof buf);
    ck_assert_str_eq(buf, "1d1h1m1.5s");
    gp_format_duration(-1500, buf, sizeof buf);
    ck_assert_str_eq(buf, "-1.5s");
}
END_TEST

/* Every printed duration reads back as the same number of milliseconds: each
 * unit alone and in every combination, a walk over many values and
 * magnitudes, and the largest. (gp_format_duration printed "1m1s", which the
 * parser refused, and dropped the milliseconds of "1.5s".) */
START_TEST(test_duration_round_trips) {
    const int64_t unit[] = {86400000, 3600000, 60000, 1000, 1};
    int64_t vals[4096];
    size_t n = 0;
    for (int mask = 0; mask < 32; mask++) { /* every combination of units */
        int64_t v = 0;
        for (int k = 0; k < 5; k++)
            if (mask & (1 << k))
                v += unit[k] * (k + 1);
        vals[n++] = v;
    }
    for (int64_t v = 1; n < 3000 && v < INT64_MAX / 7; v = v * 7 + 3) /* magnitudes */
        for (int64_t d = -2; d <= 2; d++)
            vals[n++] = v + d;
    for (int64_t v = 0; v < 1000; v += 1) /* the small ones, each */
        vals[n++] = v * 997 % 200000;
    vals[n++] = INT64_MAX;
    ck_assert_uint_le(n, sizeof vals / sizeof vals[0]);
    for (size_t i = 0; i < n; i++) {
        char buf[64];
        int64_t back = -1;
        if (vals[i] < 0)
            continue;
        gp_format_duration(vals[i], buf, sizeof buf);
        ck_assert_msg(gp_parse_duration_ms(buf, &back) == 0 && back == vals[i],
                      "%lld -> '%s' -> %lld", (long long)vals[i], buf, (long long)back);
    }
}
END_TEST

/* gp_parse_uint: digits only in base 10 or 16, the bound exact, what follows
 * left to the caller with end, nothing changed on error. */
START_TEST(test_uint) {
    uint64_t v = 7;
    const char *end = NULL;
    ck_assert_int_eq(gp_parse_uint("0", NULL, 10, 10, &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(gp_parse_uint("18446744073709551615", NULL, 10, UINT64_MAX, &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert_int_eq(gp_parse_uint("fFfF", NULL, 16, 65535, &v), 0);
    ck_assert_uint_eq(v, 65535);
    ck_assert_int_eq(gp_parse_uint("1a;ext", &end, 16, 100, &v), 0);
    ck_assert_uint_eq(v, 26);
    ck_assert_str_eq(end, ";ext");
    v = 7;
    end = NULL;
    ck_assert_int_eq(gp_parse_uint("10", NULL, 10, 9, &v), GP_ERANGE);
    ck_assert_int_eq(gp_parse_uint("18446744073709551616", &end, 10, UINT64_MAX, &v), GP_ERANGE);
    ck_assert_int_eq(gp_parse_uint("10000000000000000", NULL, 16, UINT64_MAX, &v), GP_ERANGE);
    const char *bad[] = {"", " 1", "+1", "-1", "0x10", "1 ", "1a", "12.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(gp_parse_uint(bad[i], NULL, 10, UINT64_MAX, &v) == GP_EINVAL, "'%s' read",
                      bad[i]);
    ck_assert_int_eq(gp_parse_uint(";", &end, 16, 10, &v), GP_EINVAL);
    ck_assert_int_eq(gp_parse_uint("1", NULL, 8, 10, &v), GP_EINVAL);
    ck_assert_uint_eq(v, 7);
    ck_assert_ptr_null(end);
    ck_assert_int_eq(gp_hex_digit('a'), 10);
    ck_assert_int_eq(gp_hex_digit('F'), 15);
    ck_assert_int_eq(gp_hex_digit('9'), 9);
    ck_assert_int_eq(gp_hex_digit('g'), -1);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_bad_sizes_change_nothing);
    tcase_add_test(tc, test_durations);
    tcase_add_test(tc, test_milli);
    tcase_add_test(tc, test_signals);
    tcase_add_test(tc, test_round_trips);
    tcase_add_test(tc, test_duration_round_trips);
    tcase_add_test(tc, test_uint);
}

GP_TEST_MAIN("common/units", add_tests)
