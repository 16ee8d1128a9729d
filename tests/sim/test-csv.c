/*
 * test-csv.c — the simulator's CSV reader (src/sim/csv.c): quoting, field
 * counts, strict integers and the error messages that name file, line and
 * field.
 */
#include <string.h>

#include "gptest.h"
#include "sim/csv.h"

static int open_str(sim_csv *c, const char *text, char *err) {
    return sim_csv_open_mem(c, "t.csv", text, strlen(text), err, 256);
}

START_TEST(test_quoted_fields_and_blank_lines) {
    sim_csv c;
    char err[256];
    ck_assert_int_eq(open_str(&c, "a,b\r\n\n\"x,1\",\"say \"\"hi\"\"\"\n", err), 0);
    ck_assert_int_eq(sim_csv_next(&c, err, sizeof err), 1);
    ck_assert_str_eq(sim_csv_get(&c, 0), "x,1");
    ck_assert_str_eq(sim_csv_get(&c, 1), "say \"hi\"");
    ck_assert_int_eq(c.line, 3);
    ck_assert_int_eq(sim_csv_next(&c, err, sizeof err), 0);
    sim_csv_close(&c);
}
END_TEST

START_TEST(test_field_count_mismatch_names_line) {
    sim_csv c;
    char err[256];
    ck_assert_int_eq(open_str(&c, "a,b\n1,2\n3\n", err), 0);
    ck_assert_int_eq(sim_csv_next(&c, err, sizeof err), 1);
    ck_assert_int_lt(sim_csv_next(&c, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.csv:3: 1 fields, the header has 2");
    sim_csv_close(&c);
}
END_TEST

START_TEST(test_int_parsing_names_field) {
    sim_csv c;
    char err[256];
    int64_t v;
    ck_assert_int_eq(open_str(&c, "n,m\n12.0,-3\nx1,\n", err), 0);
    ck_assert_int_eq(sim_csv_next(&c, err, sizeof err), 1);
    ck_assert_int_eq(sim_csv_int(&c, 0, 0, 100, SIM_CSV_REQUIRED, &v, err, sizeof err), 0);
    ck_assert_int_eq(v, 12);
    ck_assert_int_lt(sim_csv_int(&c, 1, 0, 100, SIM_CSV_REQUIRED, &v, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.csv:2: field m: -3 is out of range [0, 100]");
    ck_assert_int_eq(sim_csv_next(&c, err, sizeof err), 1);
    ck_assert_int_lt(sim_csv_int(&c, 0, 0, 100, SIM_CSV_REQUIRED, &v, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.csv:3: field n: 'x1' is not an integer");
    ck_assert_int_eq(sim_csv_int(&c, 1, 0, 100, -1, &v, err, sizeof err), 0);
    ck_assert_int_eq(v, -1);
    ck_assert_int_lt(sim_csv_int(&c, 1, 0, 100, SIM_CSV_REQUIRED, &v, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.csv:3: field m: empty");
    sim_csv_close(&c);
}
END_TEST

START_TEST(test_header_checks) {
    sim_csv c;
    char err[256];
    static const char *const known[] = {"a", "b", NULL}, *const req[] = {"b", NULL};
    ck_assert_int_eq(open_str(&c, "a,z\n", err), 0);
    ck_assert_int_lt(sim_csv_check_header(&c, known, req, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.csv:1: unknown column 'z'");
    sim_csv_close(&c);
    ck_assert_int_eq(open_str(&c, "a\n", err), 0);
    ck_assert_int_lt(sim_csv_check_header(&c, known, req, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.csv:1: missing column 'b'");
    sim_csv_close(&c);
    ck_assert_int_lt(open_str(&c, "a,a\n", err), 0);
    ck_assert_int_lt(open_str(&c, "", err), 0);
}
END_TEST

START_TEST(test_bad_quotes_and_missing_file) {
    sim_csv c;
    char err[256];
    ck_assert_int_eq(open_str(&c, "a\n\"open\n", err), 0);
    ck_assert_int_lt(sim_csv_next(&c, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.csv:2: unterminated quoted field");
    sim_csv_close(&c);
    ck_assert_int_lt(sim_csv_open(&c, "/nonexistent/x.csv", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.csv: cannot open"));
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_quoted_fields_and_blank_lines);
    tcase_add_test(tc, test_field_count_mismatch_names_line);
    tcase_add_test(tc, test_int_parsing_names_field);
    tcase_add_test(tc, test_header_checks);
    tcase_add_test(tc, test_bad_quotes_and_missing_file);
}

GP_TEST_MAIN("sim/csv", add_tests)
