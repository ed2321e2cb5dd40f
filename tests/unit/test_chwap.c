/*
 * test_chwap.c - write-audit-publish statements over several partitions
 * (chwap.c): the state and figures read, its answer parsed (a partition no
 * row equals takes the figures of no row), refused keys and answers, the
 * drops, the marks' INSERT and their drop by run.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "chsql.h"
#include "chwap.h"

static const char *const keys[] = { "2025-03-05", "2025-03-06" };

START_TEST(test_sql)
{
	const char *ms[] = { "sum(revenue_cents)" };
	struct chwap_spec s = { .table = "fct", .column = "dt", .metrics = ms,
				.nmetrics = 1, .digest = true,
				.stage = "_backfilld_stage_fct",
				.mark = "_backfilld_marks_fct" };
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_sql(&s, keys, 2, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "FROM system.columns WHERE database ="
				     " currentDatabase() AND table ="
				     " '_backfilld_stage_fct' AND name = 'dt'"));
	ck_assert_ptr_nonnull(strstr(sql, "concat('f\\t', toString(`dt`) AS"
				     " _backfilld_part"));
	ck_assert_ptr_nonnull(strstr(sql, "WHERE `dt` IN ('2025-03-05',"
				     " '2025-03-06') GROUP BY _backfilld_part"));
	ck_assert_ptr_nonnull(strstr(sql, "AND active AND partition IN"
				     " ('2025-03-05', '2025-03-06')"));
	ck_assert_ptr_nonnull(strstr(sql, "FROM `_backfilld_marks_fct` WHERE"
				     " partition IN ('2025-03-05', '2025-03-06')"));
	ck_assert_ptr_nonnull(strstr(sql, "ifNull(toString((sum(revenue_cents)))"));
	ck_assert_ptr_nonnull(strstr(sql, "FROM `fct` WHERE `dt` ="
				     " '2025-03-05' AND 0"));
	ck_assert_ptr_null(strstr(sql, "toDate("));
	free(sql);
	{
		const char *hours[] = { "2025-03-05T07" };

		ck_assert_int_eq(chwap_sql(&s, hours, 1, &sql, &e), 0);
		ck_assert_ptr_nonnull(strstr(sql, "WHERE `dt` IN ('2025-03-05"
					     " 07:00:00') GROUP BY"));
	}
	free(sql);
	s.stage = NULL;
	ck_assert_int_eq(chwap_sql(&s, keys, 2, &sql, &e), 0);
	ck_assert_ptr_null(strstr(sql, "system."));
	ck_assert_ptr_null(strstr(sql, "FINAL"));
	free(sql);
	/* a Replacing or Collapsing engine: its rows read as merged */
	s.final = true;
	ck_assert_int_eq(chwap_sql(&s, keys, 2, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "FROM `fct` FINAL WHERE `dt` IN"
				     " ('2025-03-05', '2025-03-06') GROUP BY"));
	ck_assert_ptr_nonnull(strstr(sql, "FROM `fct` FINAL WHERE `dt` ="
				     " '2025-03-05' AND 0"));
	free(sql);
	s.final = false;
	{
		/* a DateTime column read through the grain's function, as
		 * the table's partition key reads it (issue 40): grouped,
		 * filtered and the figures of no row alike, the state's
		 * partitions by their values as before */
		const char *hours[] = { "2025-03-05T07" };

		s.part_fn = "toDate";
		s.column = "ts";
		s.stage = "_backfilld_stage_fct";
		ck_assert_int_eq(chwap_sql(&s, keys, 2, &sql, &e), 0);
		ck_assert_ptr_nonnull(strstr(sql, "concat('f\\t',"
		    " toString(toDate(`ts`)) AS _backfilld_part"));
		ck_assert_ptr_nonnull(strstr(sql, "WHERE toDate(`ts`) IN"
		    " ('2025-03-05', '2025-03-06') GROUP BY _backfilld_part"));
		ck_assert_ptr_nonnull(strstr(sql, "FROM `fct` WHERE"
		    " toDate(`ts`) = '2025-03-05' AND 0"));
		ck_assert_ptr_nonnull(strstr(sql, "AND active AND partition IN"
		    " ('2025-03-05', '2025-03-06')"));
		ck_assert_ptr_null(strstr(sql, "`ts` IN"));
		free(sql);
		s.part_fn = "toStartOfHour";
		ck_assert_int_eq(chwap_sql(&s, hours, 1, &sql, &e), 0);
		ck_assert_ptr_nonnull(strstr(sql, "WHERE toStartOfHour(`ts`) IN"
		    " ('2025-03-05 07:00:00') GROUP BY"));
		free(sql);
		s.part_fn = NULL;
		s.column = "dt";
		s.stage = NULL;
	}
	{
		const char *bad[] = { "2025-03-05') OR 1 --" };

		ck_assert_int_eq(chwap_sql(&s, bad, 1, &sql, &e), -1);
		ck_assert_ptr_null(sql);
		ck_assert_int_eq(chwap_drop_sql("t", bad, 1, &sql, &e), -1);
		ck_assert_ptr_null(sql);
		ck_assert_int_eq(chwap_replace_sql("t", "st", bad, 1, &sql,
						   &e), -1);
		ck_assert_ptr_null(sql);
		ck_assert_int_eq(chwap_sql(&s, keys, 0, &sql, &e), -1);
	}
}
END_TEST

START_TEST(test_parse)
{
	const char *ms[] = { "sum(x)" };
	struct chwap_spec s = { .table = "fct", .column = "dt", .metrics = ms,
				.nmetrics = 1, .digest = true, .stage = "st",
				.mark = "mk" };
	char *v[] = { "e", "s\t2025-03-06", "m\t2025-03-06\t7",
		      "m\t2025-03-06\t9", "f\t2025-03-05\t3\t123\t4.5",
		      "n\t-\t0\t0\t" };
	struct chwap_result r;
	struct err e;

	ck_assert_int_eq(chwap_parse(&s, keys, v, 6, 2, &r, &e), 0);
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
	/* without the row of no row; a value of no key; too few fields; a
	 * request that is no number */
	ck_assert_int_eq(chwap_parse(&s, keys, v, 5, 2, &r, &e), -1);
	{
		char *w[] = { "f\t2025-03-07\t1\t1\t1", "n\t-\t0\t0\t" };
		char *x[] = { "f\t2025-03-05\t1\t1", "n\t-\t0\t0\t" };
		char *y[] = { "m\t2025-03-05\tseven", "n\t-\t0\t0\t" };
		char *z[] = { "s\t3", "n\t-\t0\t0\t" };

		ck_assert_int_eq(chwap_parse(&s, keys, w, 2, 2, &r, &e), -1);
		ck_assert_int_eq(chwap_parse(&s, keys, x, 2, 2, &r, &e), -1);
		ck_assert_int_eq(chwap_parse(&s, keys, y, 2, 2, &r, &e), -1);
		ck_assert_int_eq(chwap_parse(&s, keys, z, 2, 2, &r, &e), -1);
	}
	{
		/* an hour's value as the server writes a DateTime */
		const char *hours[] = { "2025-03-05T07" };
		char *h[] = { "f\t2025-03-05 07:00:00\t2\t5\t1", "n\t-\t0\t0\t" };

		ck_assert_int_eq(chwap_parse(&s, hours, h, 2, 1, &r, &e), 0);
		ck_assert_int_eq(r.parts[0].rows, 2);
		chwap_result_free(&r);
	}
}
END_TEST

START_TEST(test_drop_mark)
{
	const int64_t req[] = { 3, 4 };
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_drop_sql("st", keys, 2, &sql, &e), 0);
	ck_assert_str_eq(sql, "ALTER TABLE `st` DROP PARTITION '2025-03-05',"
			 " DROP PARTITION '2025-03-06'");
	free(sql);
	/* a batch's publish: one statement, a REPLACE a key */
	ck_assert_int_eq(chwap_replace_sql("fct", "st", keys, 2, &sql, &e), 0);
	ck_assert_str_eq(sql, "ALTER TABLE `fct` REPLACE PARTITION '2025-03-05'"
			 " FROM `st`, REPLACE PARTITION '2025-03-06' FROM `st`");
	free(sql);
	/* the marks go by run: the runs holding a mark of the keys, then
	 * their partitions; an answer that is no run id is refused */
	ck_assert_int_eq(chwap_mark_runs_sql("mk", keys, 2, &sql, &e), 0);
	ck_assert_str_eq(sql, "SELECT DISTINCT toString(run) FROM `mk` WHERE"
			 " partition IN ('2025-03-05', '2025-03-06')");
	free(sql);
	ck_assert_int_eq(chwap_mark_runs_sql("mk", keys, 0, &sql, &e), -1);
	{
		char *runs[] = { "12", "7" };
		char *bad[] = { "12", "7) DROP TABLE x" };
		char *empty[] = { "" };

		ck_assert_int_eq(chwap_drop_runs_sql("mk", runs, 2, &sql, &e), 0);
		ck_assert_str_eq(sql, "ALTER TABLE `mk` DROP PARTITION 12,"
				 " DROP PARTITION 7");
		free(sql);
		ck_assert_int_eq(chwap_drop_runs_sql("mk", bad, 2, &sql, &e), -1);
		ck_assert_ptr_null(sql);
		ck_assert_int_eq(chwap_drop_runs_sql("mk", empty, 1, &sql, &e),
				 -1);
	}
	ck_assert_int_eq(chwap_mark_sql("mk", keys, req, 2, 12, &sql, &e), 0);
	ck_assert_str_eq(sql, "INSERT INTO `mk` VALUES ('2025-03-05', 3, 12),"
			 " ('2025-03-06', 4, 12)");
	free(sql);
}
END_TEST

/* The hours of a zone (issue 42): Berlin's two 02:00 hours of
 * 2026-10-25 are the UTC hours 00 and 01, named as partition values by
 * their UTC text (the state, the drops, REPLACE, the marks) and compared
 * with the column as DateTime('UTC') literals; the server's answers
 * (toString of a DateTime('UTC')) name each key. */
START_TEST(test_zoned_hours)
{
	const char *fold[] = { "2026-10-25T02+02:00", "2026-10-25T02+01:00" };
	struct chwap_spec s = { .table = "h", .column = "hour",
				.part_fn = "toStartOfHour", .stage = "st",
				.mark = "mk" };
	char *v[] = { "s\t2026-10-25 01:00:00", "f\t2026-10-25 00:00:00\t3",
		      "n\t-\t0" };
	struct chwap_result r;
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_sql(&s, fold, 2, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "AND active AND partition IN"
	    " ('2026-10-25 00:00:00', '2026-10-25 01:00:00')"));
	ck_assert_ptr_nonnull(strstr(sql, "WHERE toStartOfHour(`hour`) IN"
	    " (toDateTime('2026-10-25 00:00:00', 'UTC'),"
	    " toDateTime('2026-10-25 01:00:00', 'UTC')) GROUP BY"));
	ck_assert_ptr_nonnull(strstr(sql, "WHERE toStartOfHour(`hour`) ="
	    " toDateTime('2026-10-25 00:00:00', 'UTC') AND 0"));
	free(sql);
	ck_assert_int_eq(chwap_parse(&s, fold, v, 3, 2, &r, &e), 0);
	ck_assert_int_eq(r.parts[0].rows, 3);
	ck_assert(!r.parts[0].staged);
	ck_assert_int_eq(r.parts[1].rows, 0);
	ck_assert(r.parts[1].staged);
	chwap_result_free(&r);
	ck_assert_int_eq(chwap_replace_sql("h", "st", fold, 2, &sql, &e), 0);
	ck_assert_str_eq(sql, "ALTER TABLE `h` REPLACE PARTITION"
	    " '2026-10-25 00:00:00' FROM `st`, REPLACE PARTITION"
	    " '2026-10-25 01:00:00' FROM `st`");
	free(sql);
}
END_TEST

/* The statements of a run known clean (exec_wap_known.c): the stage
 * learned once and the marks read by the sweep at start. */
START_TEST(test_known_pair_marks)
{
	char *sql = chwap_known_sql("st", "mk", "dt");

	ck_assert_str_eq(sql, "SELECT 'e' AS v FROM system.columns WHERE"
	    " database = currentDatabase() AND table = 'st' AND name = 'dt'"
	    " UNION ALL SELECT concat('s\\t', partition) AS v FROM"
	    " system.parts WHERE database = currentDatabase() AND table ="
	    " 'st' AND active UNION ALL SELECT concat('m\\t', partition) AS v"
	    " FROM `mk`");
	free(sql);
	sql = chwap_marks_sql("mk");
	ck_assert_str_eq(sql, "SELECT concat(toString(request), '\\t',"
	    " partition) FROM `mk`");
	free(sql);
}
END_TEST

/* One partition read in the live table and the stage by one statement
 * without GROUP BY (an aggregate answers one row, for no row too); its
 * two rows are each table's figures of the key. */
START_TEST(test_pair)
{
	const char *ms[] = { "sum(revenue_cents)" };
	struct chwap_spec s = { .table = "fct", .column = "dt", .metrics = ms,
				.nmetrics = 1, .digest = true };
	const char *key = "2025-03-05";
	char *v[] = { "n\t-\t3\t42\t300", "n\t-\t0\t0\t" };
	struct chwap_result r;
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_pair_sql(&s, "st", key, &sql, &e), 0);
	ck_assert_str_eq(sql, "SELECT concat('bn\\t-', '\\t',"
	    " toString(count()), '\\t', toString(sum(" CHSQL_ROW_HASH ")),"
	    " '\\t', ifNull(toString((sum(revenue_cents))), '')) AS v FROM"
	    " `fct` WHERE `dt` = '2025-03-05' UNION ALL SELECT"
	    " concat('an\\t-', '\\t', toString(count()), '\\t',"
	    " toString(sum(" CHSQL_ROW_HASH ")), '\\t',"
	    " ifNull(toString((sum(revenue_cents))), '')) AS v FROM `st`"
	    " WHERE `dt` = '2025-03-05'");
	free(sql);
	/* through the grain's function, FINAL, a zone's hour as typed */
	s.part_fn = "toStartOfHour";
	s.final = true;
	s.digest = false;
	s.nmetrics = 0;
	key = "2026-10-25T02+01:00";
	ck_assert_int_eq(chwap_pair_sql(&s, "st", key, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "FROM `fct` FINAL WHERE"
	    " toStartOfHour(`dt`) = toDateTime('2026-10-25 01:00:00', 'UTC')"
	    " UNION ALL"));
	ck_assert_ptr_nonnull(strstr(sql, "FROM `st` FINAL WHERE"
	    " toStartOfHour(`dt`) = toDateTime('2026-10-25 01:00:00', 'UTC')"));
	ck_assert_ptr_null(strstr(sql, "GROUP BY"));
	free(sql);
	ck_assert_int_eq(chwap_pair_sql(&s, "st", "2025-03-05') OR 1 --",
					&sql, &e), -1);
	ck_assert_ptr_null(sql);
	/* each row parsed as the key's figures: rows, sum, metric */
	s.digest = true;
	s.nmetrics = 1;
	key = "2025-03-05";
	ck_assert_int_eq(chwap_parse(&s, &key, v, 1, 1, &r, &e), 0);
	ck_assert_int_eq(r.parts[0].rows, 3);
	ck_assert_str_eq(r.parts[0].sum, "42");
	ck_assert_str_eq(r.parts[0].metric[0], "300");
	chwap_result_free(&r);
	ck_assert_int_eq(chwap_parse(&s, &key, v + 1, 1, 1, &r, &e), 0);
	ck_assert_int_eq(r.parts[0].rows, 0);
	ck_assert_str_eq(r.parts[0].metric[0], "");
	chwap_result_free(&r);
	/* no row at all is no answer */
	ck_assert_int_eq(chwap_parse(&s, &key, v, 0, 1, &r, &e), -1);
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
	tcase_add_test(tc, test_known_pair_marks);
	tcase_add_test(tc, test_pair);
	tcase_add_test(tc, test_zoned_hours);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
