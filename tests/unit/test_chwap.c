/*
 * test_chwap.c - write-audit-publish statements over several partitions
 * (chwap.c): the state and figures read, its answer parsed (a partition no
 * row equals takes the figures of no row), refused keys and answers, the
 * drops and the marks' INSERT.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "chwap.h"

static const char *const keys[] = { "2025-03-05", "2025-03-06" };

START_TEST(test_sql)
{
	const char *ms[] = { "sum(revenue_cents)" };
	struct chwap_spec s = { .table = "fct", .column = "dt", .metrics = ms,
				.nmetrics = 1, .digest = true,
				.stage = "_backfilld_stage_fct",
				.mark = "_backfilld_audited_fct" };
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_sql(&s, keys, 2, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "FROM system.columns WHERE database ="
				     " currentDatabase() AND table ="
				     " '_backfilld_stage_fct' AND name = 'dt'"));
	ck_assert_ptr_nonnull(strstr(sql, "multiIf(`dt` = toDate('2025-03-05'),"
				     " 1, `dt` = toDate('2025-03-06'), 2, 0)"));
	ck_assert_ptr_nonnull(strstr(sql, "WHERE `dt` = toDate('2025-03-05') OR"
				     " `dt` = toDate('2025-03-06') GROUP BY"));
	ck_assert_ptr_nonnull(strstr(sql, "partition = toString(toDate("
				     "'2025-03-06')), 2"));
	ck_assert_ptr_nonnull(strstr(sql, "ifNull(toString((sum(revenue_cents)))"));
	ck_assert_ptr_nonnull(strstr(sql, "FROM `fct` WHERE `dt` ="
				     " toDate('2025-03-05') AND 0"));
	free(sql);
	s.stage = NULL;
	ck_assert_int_eq(chwap_sql(&s, keys, 2, &sql, &e), 0);
	ck_assert_ptr_null(strstr(sql, "system."));
	free(sql);
	{
		const char *bad[] = { "2025-03-05') OR 1 --" };

		ck_assert_int_eq(chwap_sql(&s, bad, 1, &sql, &e), -1);
		ck_assert_ptr_null(sql);
		ck_assert_int_eq(chwap_drop_sql("t", false, bad, 1, &sql, &e), -1);
	}
}
END_TEST

START_TEST(test_parse)
{
	const char *ms[] = { "sum(x)" };
	struct chwap_spec s = { .table = "fct", .column = "dt", .metrics = ms,
				.nmetrics = 1, .digest = true, .stage = "st",
				.mark = "mk" };
	char *v[] = { "e", "s\t2", "m\t2\t7", "m\t2\t9", "f\t1\t3\t123\t4.5",
		      "f\t0\t0\t0\t" };
	struct chwap_result r;
	struct err e;

	ck_assert_int_eq(chwap_parse(&s, v, 6, 2, &r, &e), 0);
	ck_assert(r.stage_exists);
	ck_assert(!r.parts[0].staged);
	ck_assert(r.parts[1].staged);
	ck_assert_uint_eq(r.parts[0].nmarks, 0);
	ck_assert_uint_eq(r.parts[1].nmarks, 2);
	ck_assert_int_eq(r.parts[1].marks[1], 9);
	ck_assert_int_eq(r.parts[0].rows, 3);
	ck_assert_str_eq(r.parts[0].sum, "123");
	ck_assert_str_eq(r.parts[0].metric[0], "4.5");
	/* no row equals part 2: the figures of no row */
	ck_assert_int_eq(r.parts[1].rows, 0);
	ck_assert_str_eq(r.parts[1].sum, "0");
	ck_assert_str_eq(r.parts[1].metric[0], "");
	chwap_result_free(&r);
	/* without the row of no row; a part out of range; too few fields */
	ck_assert_int_eq(chwap_parse(&s, v, 5, 2, &r, &e), -1);
	{
		char *w[] = { "f\t3\t1\t1\t1", "f\t0\t0\t0\t" };
		char *x[] = { "f\t1\t1\t1", "f\t0\t0\t0\t" };
		char *y[] = { "m\t1\tseven", "f\t0\t0\t0\t" };

		ck_assert_int_eq(chwap_parse(&s, w, 2, 2, &r, &e), -1);
		ck_assert_int_eq(chwap_parse(&s, x, 2, 2, &r, &e), -1);
		ck_assert_int_eq(chwap_parse(&s, y, 2, 2, &r, &e), -1);
	}
}
END_TEST

START_TEST(test_drop_mark)
{
	const int64_t req[] = { 3, 4 };
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_drop_sql("st", false, keys, 2, &sql, &e), 0);
	ck_assert_str_eq(sql, "ALTER TABLE `st` DROP PARTITION toDate('2025-03-05'),"
			 " DROP PARTITION toDate('2025-03-06')");
	free(sql);
	ck_assert_int_eq(chwap_drop_sql("mk", true, keys, 1, &sql, &e), 0);
	ck_assert_str_eq(sql, "ALTER TABLE `mk` DROP PARTITION"
			 " toString(toDate('2025-03-05'))");
	free(sql);
	ck_assert_int_eq(chwap_mark_sql("mk", keys, req, 2, 12, &sql, &e), 0);
	ck_assert_str_eq(sql, "INSERT INTO `mk` SELECT toString(toDate("
			 "'2025-03-05')), 3, 12 UNION ALL SELECT toString(toDate("
			 "'2025-03-06')), 4, 12");
	free(sql);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("chwap");
	TCase *tc = tcase_create("chwap");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_sql);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_drop_mark);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
