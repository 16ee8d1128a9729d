/*
 * test-config.c — the one reader of executor configuration strings
 * (src/executors/config.c): pairs handed over in order, empty items skipped,
 * a value that holds '=', an item without '=' refused by name, the first
 * error of the executor's own stopping the walk, and string keys that must
 * fit their fields.
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_error.h"
#include "executors/registry.h"
#include "gptest.h"

/* Records every pair as "key:value;" and refuses the key "bad". */
static int record(void *arg, const char *key, const char *value, char *err, size_t errlen) {
    char *seen = arg;
    if (strcmp(key, "bad") == 0) {
        snprintf(err, errlen, "bad: refused");
        return GP_EINVAL;
    }
    size_t n = strlen(seen);
    snprintf(seen + n, 256 - n, "%s:%s;", key, value);
    return 0;
}

START_TEST(test_pairs_in_order) {
    char seen[256] = "", err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gpx__config_parse("a=1,,b=x=y,c=", record, seen, err, sizeof err), 0);
    ck_assert_str_eq(seen, "a:1;b:x=y;c:;");
    seen[0] = '\0';
    ck_assert_int_eq(gpx__config_parse("", record, seen, err, sizeof err), 0);
    ck_assert_int_eq(gpx__config_parse(NULL, record, seen, err, sizeof err), 0);
    ck_assert_str_eq(seen, "");
}
END_TEST

START_TEST(test_errors_stop_the_walk) {
    char seen[256] = "", err[GP_ERR_MAX] = "";
    ck_assert_int_eq(gpx__config_parse("a=1,novalue,b=2", record, seen, err, sizeof err),
                     GP_EINVAL);
    ck_assert_str_eq(seen, "a:1;");
    ck_assert_str_eq(err, "executor-config: 'novalue' is not key=value");
    seen[0] = '\0';
    ck_assert_int_eq(gpx__config_parse("bad=1,a=1", record, seen, err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(seen, "");
    ck_assert_str_eq(err, "bad: refused");
}
END_TEST

START_TEST(test_string_keys) {
    char name[8] = "", dir[64] = "keep", err[GP_ERR_MAX] = "";
    gpx__config_key keys[] = {
        {"name", name, sizeof name}, {"dir", dir, sizeof dir}, {NULL, NULL, 0}};
    ck_assert_int_eq(gpx__config_string(keys, "name", "seven77", err, sizeof err), 0);
    ck_assert_str_eq(name, "seven77");
    ck_assert_int_eq(gpx__config_string(keys, "name", "eight888", err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "executor-config: name: value is longer than 7 characters");
    ck_assert_str_eq(name, "seven77");
    ck_assert_int_eq(gpx__config_string(keys, "other", "x", err, sizeof err), GP_EINVAL);
    ck_assert_str_eq(err, "executor-config: unknown key 'other' (expected name or dir)");
    ck_assert_str_eq(dir, "keep");
}
END_TEST

/* An instance id or a tag: 1 to max of letters, digits, '_' and '-'. */
START_TEST(test_ids) {
    ck_assert(gpx__id_ok("a", 4));
    ck_assert(gpx__id_ok("A_0-", 4));
    ck_assert(!gpx__id_ok("", 4));
    ck_assert(!gpx__id_ok("abcde", 4));
    ck_assert(!gpx__id_ok("a.b", 4));
    ck_assert(!gpx__id_ok("a/b", 4));
    ck_assert(!gpx__id_ok("a b", 4));
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_ids);
    tcase_add_test(tc, test_pairs_in_order);
    tcase_add_test(tc, test_errors_stop_the_walk);
    tcase_add_test(tc, test_string_keys);
}

GP_TEST_MAIN("executors/config", add_tests)
