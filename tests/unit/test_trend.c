/*
 * test_trend.c - the statistics of trend checks (daemon/lib/checks/trend.h):
 * mean and sample standard deviation against values worked by hand,
 * the verdict at and past max_sigma, too little history, a NULL value,
 * zero variance, the window that leaves the partition itself out, and
 * how many values the store keeps.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trend.h"

static const struct trend_def T28 = { true, 28, 3.0, 7 };

START_TEST(test_stats)
{
	/* 2 4 4 4 5 5 7 9: mean 5, sum of squares 32, sample sd sqrt(32/7) */
	static const double v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct trend_stats s;

	trend_stats(v, 8, &s);
	ck_assert_uint_eq(s.n, 8);
	ck_assert_double_eq_tol(s.mean, 5.0, 1e-12);
	ck_assert_double_eq_tol(s.sd, sqrt(32.0 / 7.0), 1e-12);
	trend_stats(v, 1, &s);
	ck_assert_double_eq(s.mean, 2.0);
	ck_assert_double_eq(s.sd, 0.0);
	trend_stats(v, 0, &s);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_double_eq(s.mean, 0.0);
	ck_assert_double_eq(s.sd, 0.0);
}
END_TEST

/* Large values close together: Welford's method keeps the small spread
 * that a sum of squares would lose. */
START_TEST(test_stats_precise)
{
	double v[4] = { 1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16 };
	struct trend_stats s;

	trend_stats(v, 4, &s);
	ck_assert_double_eq_tol(s.mean, 1e9 + 10, 1e-6);
	ck_assert_double_eq_tol(s.sd, sqrt(90.0 / 3.0), 1e-6);
}
END_TEST

START_TEST(test_judge)
{
	/* mean 100, sd 10 (values 90 and 110 alternating, n = 10: sample sd
	 * sqrt(1000 / 9)) */
	double h[10];
	struct trend_result r;
	double sd;

	for (int i = 0; i < 10; i++)
		h[i] = i % 2 ? 110 : 90;
	sd = sqrt(1000.0 / 9.0);
	ck_assert_int_eq(trend_judge(h, 10, true, 100 + 2.999 * sd, &T28, &r),
			 TREND_WITHIN);
	ck_assert(r.has_sigma);
	ck_assert_double_eq_tol(r.sigma, 2.999, 1e-9);
	ck_assert_int_eq(trend_judge(h, 10, true, 100 + 3.01 * sd, &T28, &r),
			 TREND_OUTSIDE);
	ck_assert_int_eq(trend_judge(h, 10, true, 100 - 3.01 * sd, &T28, &r),
			 TREND_OUTSIDE);
	/* ten times the neighbours */
	ck_assert_int_eq(trend_judge(h, 10, true, 1000, &T28, &r),
			 TREND_OUTSIDE);
	ck_assert(!trend_passed(r.verdict));
	ck_assert_double_eq_tol(r.st.mean, 100, 1e-9);
	ck_assert_double_eq_tol(r.sigma, 900 / sd, 1e-9);
}
END_TEST

START_TEST(test_too_little)
{
	static const double h[] = { 10, 12, 11, 13, 9, 10 };
	struct trend_result r;
	struct trend_def t = T28;
	char d[200];

	/* six values, min_history 7: passes whatever the value */
	ck_assert_int_eq(trend_judge(h, 6, true, 1e6, &t, &r),
			 TREND_TOO_LITTLE);
	ck_assert(trend_passed(r.verdict));
	ck_assert(!r.has_sigma);
	trend_detail(&r, true, 1e6, &t, d, sizeof d);
	ck_assert_str_eq(d, "value 1000000; not enough history: 6 partitions,"
			 " min_history 7");
	/* min_history 6: judged */
	t.min_history = 6;
	ck_assert_int_eq(trend_judge(h, 6, true, 1e6, &t, &r), TREND_OUTSIDE);
	ck_assert_int_eq(trend_judge(h, 0, true, 5, &t, &r), TREND_TOO_LITTLE);
	trend_detail(&r, true, 5, &t, d, sizeof d);
	ck_assert_str_eq(d, "value 5; not enough history: 0 partitions,"
			 " min_history 6");
}
END_TEST

START_TEST(test_no_value)
{
	static const double h[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct trend_result r;
	char d[200];

	ck_assert_int_eq(trend_judge(h, 8, false, 0, &T28, &r), TREND_NO_VALUE);
	ck_assert(trend_passed(r.verdict));
	trend_detail(&r, false, 0, &T28, d, sizeof d);
	ck_assert_str_eq(d, "no value (NULL) to hold against 8 partitions");
}
END_TEST

START_TEST(test_zero_variance)
{
	double h[8];
	struct trend_result r;
	char d[200];

	for (int i = 0; i < 8; i++)
		h[i] = 42.5;
	ck_assert_int_eq(trend_judge(h, 8, true, 42.5, &T28, &r), TREND_WITHIN);
	ck_assert_double_eq(r.sigma, 0);
	trend_detail(&r, true, 42.5, &T28, d, sizeof d);
	ck_assert_str_eq(d, "value 42.5, mean 42.5, sd 0 over 8 partitions:"
			 " 0.00 sigma, within max_sigma 3");
	/* the same value summed in another order still passes */
	ck_assert_int_eq(trend_judge(h, 8, true, 42.5 + 1e-12, &T28, &r),
			 TREND_WITHIN);
	/* any real move fails */
	ck_assert_int_eq(trend_judge(h, 8, true, 42.6, &T28, &r), TREND_OUTSIDE);
	ck_assert(isinf(r.sigma));
	trend_detail(&r, true, 42.6, &T28, d, sizeof d);
	ck_assert_str_eq(d, "value 42.6, history constant at 42.5 over 8"
			 " partitions: above max_sigma 3");
}
END_TEST

START_TEST(test_detail)
{
	static const double h[] = { 90, 110, 90, 110, 90, 110, 90, 110 };
	struct trend_result r;
	char d[200];

	trend_judge(h, 8, true, 1000, &T28, &r);
	trend_detail(&r, true, 1000, &T28, d, sizeof d);
	ck_assert_str_eq(d, "value 1000, mean 100, sd 10.69 over 8 partitions:"
			 " 84.19 sigma, above max_sigma 3");
}
END_TEST

START_TEST(test_window)
{
	static const char *const keys[] = { "2026-02-09", "2026-02-08",
		"2026-02-07", "2026-02-06", "2026-02-05" };
	static const double vals[] = { 9, 8, 7, 6, 5 };
	struct trend_def t = { true, 3, 3.0, 2 };
	double out[3];

	/* newest first, the partition itself left out */
	ck_assert_uint_eq(trend_window(keys, vals, 5, "2026-02-08", &t, out), 3);
	ck_assert_double_eq(out[0], 9);
	ck_assert_double_eq(out[1], 7);
	ck_assert_double_eq(out[2], 6);
	/* a partition not in the history: the newest three */
	ck_assert_uint_eq(trend_window(keys, vals, 5, "2026-03-01", &t, out), 3);
	ck_assert_double_eq(out[0], 9);
	ck_assert_double_eq(out[2], 7);
	/* fewer than last */
	ck_assert_uint_eq(trend_window(keys, vals, 2, "2026-02-09", &t, out), 1);
	ck_assert_double_eq(out[0], 8);
	ck_assert_uint_eq(trend_window(keys, vals, 0, "2026-02-09", &t, out), 0);
}
END_TEST

/* The store keeps last + 1 values: with the partition itself among them,
 * the window still holds last others. */
START_TEST(test_keep)
{
	struct trend_def t = { true, 28, 3.0, 7 };
	struct trend_def none = { 0 };
	const char *keys[29];
	double vals[29], out[28];
	char buf[29][16];

	ck_assert_uint_eq(trend_keep(&t), 29);
	ck_assert_uint_eq(trend_keep(&none), 0);
	for (int i = 0; i < 29; i++) {
		snprintf(buf[i], sizeof buf[i], "2026-02-%02d", 28 - i + 1);
		keys[i] = buf[i];
		vals[i] = i;
	}
	for (int i = 0; i < 29; i++)
		ck_assert_uint_eq(trend_window(keys, vals, 29, keys[i], &t, out),
				  28);
}
END_TEST

static Suite *
trend_suite(void)
{
	Suite *s = suite_create("trend");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_stats);
	tcase_add_test(tc, test_stats_precise);
	tcase_add_test(tc, test_judge);
	tcase_add_test(tc, test_too_little);
	tcase_add_test(tc, test_no_value);
	tcase_add_test(tc, test_zero_variance);
	tcase_add_test(tc, test_detail);
	tcase_add_test(tc, test_window);
	tcase_add_test(tc, test_keep);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(trend_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
