/*
 * test-error.c — the one list of error codes (src/common/gp_error.h): every
 * code has a name and a message, an unknown code still gets text, and
 * gp_errf fills a caller's buffer within its size, always terminated, and
 * never writes through NULL. One error space: no GP_E* code is a negated
 * errno, and gp_syserr() is the one way from errno to a code.
 */
#include <errno.h>
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

/* Every GP_E* code lies outside -1 .. -GP_SYSERR_MAX, where the negated
 * errno values are: GP_EINVAL is not -EPERM. */
START_TEST(test_codes_are_not_errno) {
    static const int codes[] = {
#define CODE_(name, num, msg) GP_##name,
        GP_ERRNO_MAP(CODE_)
#undef CODE_
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        ck_assert_int_lt(codes[i], -GP_SYSERR_MAX);
        ck_assert(!gp_is_syserr(codes[i]));
        ck_assert_int_eq(gp_syserr_errno(codes[i]), 0);
    }
    for (int e = 1; e <= GP_SYSERR_MAX; e++)
        ck_assert_str_ne(gp_err_name(-e), "GP_EINVAL");
}
END_TEST

/* gp_syserr maps errno once; gp_strerror and gp_err_name word both kinds. */
START_TEST(test_syserr) {
    ck_assert_int_eq(gp_syserr(ENOENT), -ENOENT);
    ck_assert(gp_is_syserr(gp_syserr(ENOENT)));
    ck_assert_int_eq(gp_syserr_errno(gp_syserr(EACCES)), EACCES);
    ck_assert_int_ne(gp_syserr(ENOENT), GP_ENOENT);
    ck_assert_int_ne(gp_syserr(EPERM), GP_EINVAL);
    /* No errno (0) or one no kernel sets is a system call failure. */
    ck_assert_int_eq(gp_syserr(0), GP_ESYS);
    ck_assert_int_eq(gp_syserr(-3), GP_ESYS);
    ck_assert_int_eq(gp_syserr(GP_SYSERR_MAX + 1), GP_ESYS);
    ck_assert_str_eq(gp_strerror(gp_syserr(ENAMETOOLONG)), strerror(ENAMETOOLONG));
    ck_assert_str_eq(gp_err_name(gp_syserr(ENOENT)), "ENOENT");
    ck_assert_str_eq(gp_err_name(GP_ENOENT), "GP_ENOENT");
    ck_assert_str_eq(gp_strerror(GP_ENOENT), "no such object");
    ck_assert_str_eq(gp_err_name(GP_OK), "GP_OK");
    ck_assert_str_eq(gp_err_name(-4000), "GP_UNKNOWN");
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
    tcase_add_test(tc, test_codes_are_not_errno);
    tcase_add_test(tc, test_syserr);
    tcase_add_test(tc, test_errf);
}

GP_TEST_MAIN("common/error", add_tests)
