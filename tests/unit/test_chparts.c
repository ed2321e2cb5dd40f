/*
 * test_chparts.c - compound partition keys (chparts.c): the first element
 * of a tuple key, the read of the partition ids of the stage and the live
 * table by their first element, its answer parsed (ids that are not plain
 * refused), the publish of the exact set (every stage id replaced, each
 * live id the stage lacks dropped, one ALTER) and the drop of a stage's
 * ids; and the key-check statements of chsql.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "chparts.h"
#include "chsql.h"
#include "chwap.h"

START_TEST(test_first)
{
	char f[64];

	ck_assert(chparts_first("(dt, store_id)", f, sizeof f));
	ck_assert_str_eq(f, "dt");
	ck_assert(chparts_first("tuple(toDate(ts), s)", f, sizeof f));
	ck_assert_str_eq(f, "toDate(ts)");
	ck_assert(chparts_first(" ( toMonday(`ws`) , s % 4, x ) ", f, sizeof f));
	ck_assert_str_eq(f, "toMonday(`ws`)");
	/* a comma inside the first element's call or a string */
	ck_assert(chparts_first("(toStartOfInterval(ts, toIntervalDay(1)), s)",
				f, sizeof f));
	ck_assert_str_eq(f, "toStartOfInterval(ts, toIntervalDay(1))");
	ck_assert(chparts_first("(concat(s, ','), dt)", f, sizeof f));
	ck_assert_str_eq(f, "concat(s, ',')");
	/* no tuple */
	ck_assert(!chparts_first("dt", f, sizeof f));
	ck_assert(!chparts_first("toDate(ts)", f, sizeof f));
	ck_assert(!chparts_first("(dt)", f, sizeof f));
	ck_assert(!chparts_first("(dt, s) % 2", f, sizeof f));
	ck_assert(!chparts_first("(dt, s", f, sizeof f));
	ck_assert(!chparts_first("(, s)", f, sizeof f));
	ck_assert(!chparts_first("", f, sizeof f));
	ck_assert(!chparts_first("(a_long_column_name, s)", f, 4));
}
END_TEST

static const char *const days[] = { "2026-02-09", "2026-02-10" };

START_TEST(test_ids_sql)
{
	const char *hours[] = { "2026-02-09T07" };
	const char *mixed[] = { "2026-02-09", "2026-02-09T07" };
	const char *bad[] = { "2026-02-09'; DROP TABLE x" };
	struct err e;
	char *sql;

	ck_assert_int_eq(chparts_ids_sql("st", "fct", days, 2, &sql, &e), 0);
	ck_assert_str_eq(sql, "SELECT DISTINCT concat(substring(partition, 3,"
			 " 10), '\\t', if(table = 'st', 's', 'l'), '\\t',"
			 " partition_id) AS v FROM system.parts WHERE database ="
			 " currentDatabase() AND active AND table IN ('st',"
			 " 'fct') AND substring(partition, 13, 2) = ''',' AND"
			 " substring(partition, 3, 10) IN ('2026-02-09',"
			 " '2026-02-10')");
	free(sql);
	ck_assert_int_eq(chparts_ids_sql("st", NULL, hours, 1, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "table IN ('st') AND"
				     " substring(partition, 22, 2) = ''',' AND"
				     " substring(partition, 3, 19) IN"
				     " ('2026-02-09 07:00:00')"));
	free(sql);
	ck_assert_int_eq(chparts_ids_sql("st", "fct", mixed, 2, &sql, &e), -1);
	ck_assert_ptr_null(sql);
	ck_assert_ptr_nonnull(strstr(e.msg, "two grains"));
	ck_assert_int_eq(chparts_ids_sql("st", "fct", bad, 1, &sql, &e), -1);
	ck_assert_ptr_null(sql);
	ck_assert_int_eq(chparts_ids_sql("st", "fct", days, 0, &sql, &e), -1);
}
END_TEST

START_TEST(test_parse_publish)
{
	char *v[] = { "2026-02-09\ts\t20260209-1", "2026-02-09\ts\t20260209-3",
		      "2026-02-09\tl\t20260209-1", "2026-02-09\tl\t20260209-2",
		      "2026-02-10\tl\t20260210-1",
		      "2026-02-09\ts\t20260209-3" /* twice: once */ };
	struct chparts p[2];
	struct err e;
	char *sql;

	ck_assert_int_eq(chparts_parse(days, 2, v, 6, p, &e), 0);
	ck_assert_uint_eq(p[0].nstage, 2);
	ck_assert_uint_eq(p[0].nlive, 2);
	ck_assert_uint_eq(p[1].nstage, 0);
	ck_assert_uint_eq(p[1].nlive, 1);
	/* the day's stores replaced, the one gone from the stage dropped,
	 * the next day (emptied: nothing staged) dropped too */
	chparts_publish_sql("fct", "st", p, 2, &sql);
	ck_assert_str_eq(sql, "ALTER TABLE `fct` REPLACE PARTITION ID"
			 " '20260209-1' FROM `st`, REPLACE PARTITION ID"
			 " '20260209-3' FROM `st`, DROP PARTITION ID"
			 " '20260209-2', DROP PARTITION ID '20260210-1'");
	free(sql);
	chparts_drop_sql("st", p, 2, &sql);
	ck_assert_str_eq(sql, "ALTER TABLE `st` DROP PARTITION ID '20260209-1',"
			 " DROP PARTITION ID '20260209-3'");
	free(sql);
	/* nothing of the second day staged: no statement */
	chparts_drop_sql("st", p + 1, 1, &sql);
	ck_assert_ptr_null(sql);
	chparts_free(p, 2);
	chparts_publish_sql("fct", "st", p, 2, &sql);
	ck_assert_ptr_null(sql);
}
END_TEST

START_TEST(test_parse_refused)
{
	char *quote[] = { "2026-02-09\ts\t2026'-1" };
	char *other[] = { "2026-02-11\ts\t20260211-1" };
	char *who[] = { "2026-02-09\tx\t20260209-1" };
	char *form[] = { "2026-02-09 s 20260209-1" };
	char *hash[] = { "2026-02-09\tl\ta793b4ac25b0448b30fd0749b46e31fe" };
	struct chparts p[2];
	struct err e;

	ck_assert_int_eq(chparts_parse(days, 2, quote, 1, p, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "unexpected partition"));
	ck_assert_ptr_null(p[0].stage);
	ck_assert_int_eq(chparts_parse(days, 2, other, 1, p, &e), -1);
	ck_assert_int_eq(chparts_parse(days, 2, who, 1, p, &e), -1);
	ck_assert_int_eq(chparts_parse(days, 2, form, 1, p, &e), -1);
	ck_assert_int_eq(chparts_parse(days, 2, hash, 1, p, &e), 0);
	ck_assert_str_eq(p[0].live[0], "a793b4ac25b0448b30fd0749b46e31fe");
	chparts_free(p, 2);
}
END_TEST

/* The state read of a compound key's stage finds its parts by their
 * first element (chwap.c). */
START_TEST(test_state_compound)
{
	struct chwap_spec s = { .table = "fct", .column = "dt",
				.stage = "st", .mark = "mk", .compound = true };
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_sql(&s, days, 2, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "concat('s\\t', substring(partition,"
				     " 3, 10)) AS v FROM system.parts WHERE"
				     " database = currentDatabase() AND table ="
				     " 'st' AND active AND substring(partition,"
				     " 3, 10) IN ('2026-02-09', '2026-02-10')"));
	free(sql);
	s.compound = false;
	ck_assert_int_eq(chwap_sql(&s, days, 2, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, "AND active AND partition IN"
				     " ('2026-02-09', '2026-02-10')"));
	ck_assert_ptr_null(strstr(sql, "'q\\t'"));
	free(sql);
}
END_TEST

/* The after figures of a compound key's stage read its partition ids
 * and the live table's too, for the publish (chwap.c). */
START_TEST(test_after_ids)
{
	struct chwap_spec s = { .table = "st", .column = "dt",
				.part_fn = "toDate", .ids_live = "fct" };
	char *v[] = { "f\t2026-02-09\t3", "n\t-\t0",
		      "q\t2026-02-09\ts\t20260209-1",
		      "q\t2026-02-09\tl\t20260209-1",
		      "q\t2026-02-09\tl\t20260209-9",
		      "q\t2026-02-10\tl\t20260210-1" };
	char *bad[] = { "n\t-\t0", "q\t2026-02-09\ts\t2026') x" };
	struct chwap_result r;
	struct err e;
	char *sql;

	ck_assert_int_eq(chwap_sql(&s, days, 2, &sql, &e), 0);
	ck_assert_ptr_nonnull(strstr(sql, " UNION ALL SELECT concat('q\\t', v)"
				     " AS v FROM (SELECT DISTINCT concat("
				     "substring(partition, 3, 10), '\\t',"
				     " if(table = 'st', 's', 'l'), '\\t',"
				     " partition_id) AS v FROM system.parts"));
	ck_assert_ptr_nonnull(strstr(sql, "table IN ('st', 'fct')"));
	free(sql);
	ck_assert_int_eq(chwap_parse(&s, days, v, 6, 2, &r, &e), 0);
	ck_assert_int_eq(r.parts[0].rows, 3);
	ck_assert_uint_eq(r.parts[0].ids.nstage, 1);
	ck_assert_str_eq(r.parts[0].ids.stage[0], "20260209-1");
	ck_assert_uint_eq(r.parts[0].ids.nlive, 2);
	ck_assert_str_eq(r.parts[0].ids.live[1], "20260209-9");
	ck_assert_uint_eq(r.parts[1].ids.nstage, 0);
	ck_assert_uint_eq(r.parts[1].ids.nlive, 1);
	chwap_result_free(&r);
	/* an id that is not plain, or ids not asked for: refused */
	ck_assert_int_eq(chwap_parse(&s, days, bad, 2, 2, &r, &e), -1);
	s.ids_live = NULL;
	ck_assert_int_eq(chwap_parse(&s, days, v, 6, 2, &r, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "unexpected answer"));
}
END_TEST

/* The key check's statements (exec_wap_key.c) and the compound key's
 * stray-day audit. */
START_TEST(test_key_sql)
{
	char *sql;

	sql = chsql_table_key_sql(NULL, "fct");
	ck_assert_str_eq(sql, "SELECT concat(engine, ' ', partition_key) FROM"
			 " system.tables WHERE database = currentDatabase() AND"
			 " name = 'fct'");
	free(sql);
	sql = chsql_table_key_sql("sales", "fct_local");
	ck_assert_str_eq(sql, "SELECT concat(engine, ' ', partition_key) FROM"
			 " system.tables WHERE database = 'sales' AND name ="
			 " 'fct_local'");
	free(sql);
	sql = chsql_engine_sql("fct");
	ck_assert_str_eq(sql, "SELECT engine_full FROM system.tables WHERE"
			 " database = currentDatabase() AND name = 'fct'");
	free(sql);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("chparts");
	TCase *tc = tcase_create("chparts");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_first);
	tcase_add_test(tc, test_ids_sql);
	tcase_add_test(tc, test_parse_publish);
	tcase_add_test(tc, test_parse_refused);
	tcase_add_test(tc, test_state_compound);
	tcase_add_test(tc, test_after_ids);
	tcase_add_test(tc, test_key_sql);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
