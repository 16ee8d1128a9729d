/*
 * test-error.c — the one list of error codes (src/common/gp_error.h): every
 * code has a name and a message, an unknown code still gets text, and
 * gp_errf fills a caller's buffer within its size, always terminated, and
 * never writes through NULL.
 */
#include <string.h>

#include "common/gp_error.h"
#include "gptest.h"

START_TEST(test_names_and_messages) {
    ck_assert_str_eq(gp_err_name(GP_EINVAL), "GP_EINVAL");
    ck_assert_str_eq(gp_err_name(GP_ENOMEM), "GP_ENOMEM");
    ck_assert_ptr_nonnull(gp_strerror(GP_EINVAL));
    ck_assert_int_gt(strlen(gp_strerror(GP_EINVAL)), 0);
    /* Unknown codes are answered, never NULL. */
    ck_assert_ptr_nonnull(gp_strerror(-99999));
    ck_assert_ptr_nonnull(gp_err_name(-99999));
    ck_assert_ptr_nonnull(gp_strerror(12345));
}
END_TEST

START_TEST(test_errf) {
    char err[8];
    memset(err, 'x', sizeof err);
    gp_errf(err, sizeof err, "field: %s", "much too long");
    ck_assert_str_eq(err, "field: ");
    gp_errf(err, sizeof err, "%d", 42);
    ck_assert_str_eq(err, "42");
    gp_errf(NULL, 10, "ignored %d", 1);
    memset(err, 'x', sizeof err);
    gp_errf(err, 0, "ignored");
    ck_assert_int_eq(err[0], 'x');
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, test_names_and_messages);
    tcase_add_test(tc, test_errf);
}

GP_TEST_MAIN("common/error", add_tests)
