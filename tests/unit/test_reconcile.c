/*
 * test_reconcile.c - reconciliation arithmetic (daemon/lib/checks/reconcile.h):
 * tolerances parsed and refused, numbers read, the comparison at and past
 * its bounds, NULLs on either side.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"

START_TEST(test_tolerance)
{
	struct reconcile_tolerance t;
	char out[32];
	static const char *const bad[] = { "", "%", "-1", "+1", " 1", "1 %",
		"abc", "1e999", "0.1%%", "nan", NULL };

	ck_assert_int_eq(reconcile_tolerance_parse("0.1%", &t), 0);
	ck_assert(t.pct);
	ck_assert_double_eq(t.value, 0.1);
	reconcile_tolerance_format(&t, out, sizeof out);
	ck_assert_str_eq(out, "0.1%");
	ck_assert_int_eq(reconcile_tolerance_parse("0.01", &t), 0);
	ck_assert(!t.pct);
	ck_assert_double_eq(t.value, 0.01);
	reconcile_tolerance_format(&t, out, sizeof out);
	ck_assert_str_eq(out, "0.01");
	ck_assert_int_eq(reconcile_tolerance_parse("0", &t), 0);
	ck_assert_double_eq(t.value, 0);
	for (size_t i = 0; bad[i] != NULL; i++)
		ck_assert_msg(reconcile_tolerance_parse(bad[i], &t) == -1,
			      "accepted %s", bad[i]);
}
END_TEST

START_TEST(test_number)
{
	bool has;
	double v;

	ck_assert_int_eq(reconcile_number("12.5", &has, &v), 0);
	ck_assert(has);
	ck_assert_double_eq(v, 12.5);
	ck_assert_int_eq(reconcile_number(NULL, &has, &v), 0);
	ck_assert(!has);
	ck_assert_int_eq(reconcile_number("twelve", &has, &v), -1);
	ck_assert_int_eq(reconcile_number("12x", &has, &v), -1);
	ck_assert_int_eq(reconcile_number("", &has, &v), -1);
}
END_TEST

START_TEST(test_within)
{
	struct reconcile_tolerance pct = { true, 0.1 }, abs1 = { false, 1 },
		zero = { false, 0 };
	double d;

	/* 0.1% of 1000 is 1 */
	ck_assert(reconcile_within(true, 1000, true, 1001, &pct, &d));
	ck_assert_double_eq(d, 1);
	ck_assert(reconcile_within(true, 1000, true, 999, &pct, &d));
	ck_assert(!reconcile_within(true, 1000, true, 1001.5, &pct, &d));
	ck_assert_double_eq(d, 1.5);
	ck_assert(!reconcile_within(true, -1000, true, -1002, &pct, &d));
	ck_assert(reconcile_within(true, 5, true, 6, &abs1, &d));
	ck_assert(!reconcile_within(true, 5, true, 6.01, &abs1, &d));
	ck_assert(reconcile_within(true, 0.3, true, 0.1 + 0.2, &zero, &d));
	ck_assert(!reconcile_within(true, 0, true, 0.01, &pct, &d));
	/* NULL on one side fails, on both passes */
	ck_assert(!reconcile_within(false, 0, true, 0, &abs1, &d));
	ck_assert(!reconcile_within(true, 0, false, 0, &abs1, &d));
	ck_assert(reconcile_within(false, 0, false, 0, &abs1, &d));
}
END_TEST

/* The audit's words: a NULL side says so and has no difference (was
 * "difference +0"). */
START_TEST(test_detail)
{
	char out[256];

	reconcile_detail(true, 715.12, true, 834.07, 834.07 - 715.12, false,
			 "0.1%", out, sizeof out);
	ck_assert_str_eq(out, "source 715.12, target 834.07, difference"
			 " +118.95, above tolerance 0.1%");
	reconcile_detail(false, 0, true, 12, 0, false, "0.1%", out,
			 sizeof out);
	ck_assert_str_eq(out, "source NULL, target 12: the source was NULL"
			 " (no value, or no row), so there is no difference"
			 " to compare; a NULL matches only a NULL");
	ck_assert_ptr_null(strstr(out, "difference +"));
	reconcile_detail(true, 12, false, 0, 0, false, "0.1%", out,
			 sizeof out);
	ck_assert_ptr_nonnull(strstr(out, "source 12, target NULL: the target"
				     " was NULL"));
	reconcile_detail(false, 0, false, 0, 0, true, "0.1%", out, sizeof out);
	ck_assert_str_eq(out, "source NULL, target NULL: both were NULL (no"
			 " value on either side), no difference");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("reconcile");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_tolerance);
	tcase_add_test(tc, test_number);
	tcase_add_test(tc, test_within);
	tcase_add_test(tc, test_detail);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
