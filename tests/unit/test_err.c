/*
 * test_err.c - the error value (daemon/lib/util/err.h): a kind beside
 * the exit code, which callers branch on instead of the message's text.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* err_interrupted fills the message people read and the kind. */
START_TEST(test_interrupted)
{
	struct err err = { 0 };

	ck_assert_int_eq(err_interrupted(&err), -1);
	ck_assert_str_eq(err.msg, "interrupted");
	ck_assert_int_eq(err.code, EXIT_WORK_FAILED);
	ck_assert(err_is(&err, ERR_INTERRUPTED));
	ck_assert_int_eq(err_interrupted(NULL), -1);
}
END_TEST

/* The text alone is no interruption: err_set leaves no kind, even over
 * an interrupted error. */
START_TEST(test_text_is_not_a_kind)
{
	struct err err = { 0 };

	err_set(&err, EXIT_WORK_FAILED, "interrupted");
	ck_assert(err_is(&err, ERR_NONE));
	err_interrupted(&err);
	err_set(&err, EXIT_BAD_INPUT, "bad %s", "input");
	ck_assert(err_is(&err, ERR_NONE));
	ck_assert_str_eq(err.msg, "bad input");
}
END_TEST

/* Context added: the message grows, the exit code stays, the kind goes
 * (a caller branches on the error as its callee filled it). */
START_TEST(test_prefix_clears_the_kind)
{
	struct err err = { 0 };

	err_interrupted(&err);
	err_prefix(&err, "shard %d", 2);
	ck_assert_str_eq(err.msg, "shard 2: interrupted");
	ck_assert_int_eq(err.code, EXIT_WORK_FAILED);
	ck_assert(err_is(&err, ERR_NONE));
	err_interrupted(&err);
	err_clear(&err);
	ck_assert(err_is(&err, ERR_NONE));
	ck_assert_str_eq(err.msg, "");
	ck_assert_int_eq(err.code, 0);
}
END_TEST

static Suite *
err_suite(void)
{
	Suite *s = suite_create("err");
	TCase *tc = tcase_create("err");

	tcase_add_test(tc, test_interrupted);
	tcase_add_test(tc, test_text_is_not_a_kind);
	tcase_add_test(tc, test_prefix_clears_the_kind);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(err_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
