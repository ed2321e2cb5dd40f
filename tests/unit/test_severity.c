/*
 * test_severity.c - a check's severity (daemon/lib/checks/severity.h): the
 * words, the outcome names, which outcomes fail a run, the note.
 */
#include <check.h>
#include <stdlib.h>

#include "severity.h"

START_TEST(test_parse)
{
	bool warn = true;

	ck_assert_int_eq(severity_parse("error", &warn), 0);
	ck_assert(!warn);
	ck_assert_int_eq(severity_parse("warn", &warn), 0);
	ck_assert(warn);
	ck_assert_int_eq(severity_parse("warning", &warn), -1);
	ck_assert_int_eq(severity_parse("WARN", &warn), -1);
	ck_assert_int_eq(severity_parse("", &warn), -1);
	ck_assert(warn); /* unchanged by a refusal */
}
END_TEST

START_TEST(test_outcomes)
{
	ck_assert_str_eq(severity_result(true, false), "passed");
	ck_assert_str_eq(severity_result(true, true), "passed");
	ck_assert_str_eq(severity_result(false, false), "failed");
	ck_assert_str_eq(severity_result(false, true), "warned");
	ck_assert(!severity_fails_run(true, false));
	ck_assert(!severity_fails_run(true, true));
	ck_assert(severity_fails_run(false, false));
	ck_assert(!severity_fails_run(false, true));
}
END_TEST

START_TEST(test_note)
{
	ck_assert(severity_is_note("warning: check c failed for 2026-03-01"));
	ck_assert(!severity_is_note("check c failed for 2026-03-01"));
	ck_assert(!severity_is_note("warning"));
	ck_assert(!severity_is_note(NULL));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("severity");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_outcomes);
	tcase_add_test(tc, test_note);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
