/*
 * test_chsql.c - ClickHouse SQL text (chsql.c): typed literals of the
 * values the daemon generated, substitution of :name outside quotes and
 * comments, refusal of text that does not scan or values that are no key,
 * statement splitting, the partition key against a grain, and exceptions
 * in response bodies.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "chsql.h"

START_TEST(test_distributed)
{
	char c[64], d[64], t[64], u[256];

	ck_assert_int_eq(chsql_distributed("Distributed(two, wh1, fct_local,"
					   " rand())", c, d, t, sizeof c), 0);
	ck_assert_str_eq(c, "two");
	ck_assert_str_eq(d, "wh1");
	ck_assert_str_eq(t, "fct_local");
	ck_assert_int_eq(chsql_distributed("Distributed('two', 'wh1',"
					   " 'fct_local')", c, d, t, sizeof c), 0);
	ck_assert_str_eq(t, "fct_local");
	ck_assert_int_eq(chsql_distributed("MergeTree PARTITION BY dt ORDER BY"
					   " dt", c, d, t, sizeof c), -1);
	ck_assert_int_eq(chsql_distributed("Distributed(two, wh1)", c, d, t,
					   sizeof c), -1);
	ck_assert_int_eq(chsql_distributed("Distributed(two, 'w\\'h', t)", c, d,
					   t, sizeof c), -1);
	ck_assert_int_eq(chsql_distributed("Distributed(two, wh1, currentDatabase())",
					   c, d, t, sizeof c), -1);
	ck_assert_int_eq(chsql_shard_url("http://127.0.0.1:8123/?database=wh",
					 "10.0.0.2", "wh1", u, sizeof u), 0);
	ck_assert_str_eq(u, "http://10.0.0.2:8123/?database=wh1");
	ck_assert_int_eq(chsql_shard_url("https://ch.example:8443/?database=a",
					 "ch2.example", "b", u, sizeof u), 0);
	ck_assert_str_eq(u, "https://ch2.example:8443/?database=b");
	ck_assert_int_eq(chsql_shard_url("http://ch/?database=a", "::1", "b",
					 u, sizeof u), 0);
	ck_assert_str_eq(u, "http://[::1]/?database=b");
	ck_assert_int_eq(chsql_shard_url("http://ch:1/", "h/x", "b", u,
					 sizeof u), -1);
	ck_assert_int_eq(chsql_shard_url("http://ch:1/", "h", "b&x=1", u,
					 sizeof u), -1);
}
END_TEST

START_TEST(test_literal)
{
	static const struct { const char *in, *want; } ok[] = {
		{ "2026-02-08", "toDate('2026-02-08')" },
		{ "2024-02-29", "toDate('2024-02-29')" },
		{ "2026-02-08T05", "toDateTime('2026-02-08 05:00:00')" },
		{ "2026-02-08 23:59:59", "toDateTime('2026-02-08 23:59:59')" },
		{ "2026-12-01T22:22:11.123Z",
		  "toDateTime('2026-12-01 22:22:11', 'UTC')" },
		{ "2026-12-01T22:22:11Z", "toDateTime('2026-12-01 22:22:11', 'UTC')" },
	};
	static const char *const bad[] = {
		"2026-02-08') OR 1=1 --", "2026-13-01", "2026-02-30",
		"2025-02-29", "2026-02-08T24", "2026-2-08", "", "2026-02-08 ",
		"2026-02-08T05:00", "x026-02-08", "2026-02-08 12:60:00",
		"2026-12-01T22:22:11.12xZ", "2026-12-01T22:22:11.123",
		"2026-12-01T22:22:11+01:00",
	};
	char out[CHSQL_LITERAL_MAX];
	struct err err;

	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		ck_assert_int_eq(chsql_literal(ok[i].in, out, &err), 0);
		ck_assert_str_eq(out, ok[i].want);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		ck_assert_int_eq(chsql_literal(bad[i], out, &err), -1);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
		ck_assert_ptr_nonnull(strstr(err.msg, "refused"));
	}
}
END_TEST

static const struct chsql_param params[] = {
	{ "partition", "2026-02-08" },
	{ "partition_start", "2026-02-08" },
	{ "partition_end", "2026-02-09" },
	{ "stage", "_backfilld_stage_t" },
};

START_TEST(test_plain)
{
	char out[CHSQL_LITERAL_MAX];
	struct err e;

	ck_assert_int_eq(chsql_plain("2026-02-09", out, &e), 0);
	ck_assert_str_eq(out, "'2026-02-09'");
	ck_assert_int_eq(chsql_plain("2026-02-09T07", out, &e), 0);
	ck_assert_str_eq(out, "'2026-02-09 07:00:00'");
	/* keys only: no bound with minutes, no instant, nothing else */
	ck_assert_int_eq(chsql_plain("2026-02-09 07:00:00", out, &e), -1);
	ck_assert_int_eq(chsql_plain("2026-02-09T07:00:00Z", out, &e), -1);
	ck_assert_int_eq(chsql_plain("2026-02-3'", out, &e), -1);
	ck_assert_int_eq(chsql_plain("2026-13-09", out, &e), -1);
	ck_assert_int_eq(chsql_plain("2026-02-09T24", out, &e), -1);
}
END_TEST

/* The hours of a zone (issue 42): each key names its UTC hour, so the
 * 23 and 25 hours of Chicago's and Berlin's DST days are distinct UTC
 * hours, a day's first hours fall on the UTC day before, and an offset
 * with minutes (an hour starting off a UTC hour) is refused. */
START_TEST(test_zoned_hour)
{
	static const struct { const char *key, *utc; } ok[] = {
		{ "2026-03-29T01+01:00", "2026-03-29 00:00:00" },
		{ "2026-03-29T03+02:00", "2026-03-29 01:00:00" },
		{ "2026-10-25T02+02:00", "2026-10-25 00:00:00" },
		{ "2026-10-25T02+01:00", "2026-10-25 01:00:00" },
		{ "2026-03-29T00+01:00", "2026-03-28 23:00:00" },
		{ "2021-11-07T01-05:00", "2021-11-07 06:00:00" },
		{ "2021-11-07T01-06:00", "2021-11-07 07:00:00" },
		{ "2021-12-31T22-06:00", "2022-01-01 04:00:00" },
		{ "2024-03-01T00+01:00", "2024-02-29 23:00:00" },
		{ "2023-03-01T00+01:00", "2023-02-28 23:00:00" },
		{ "2026-01-01T00+01:00", "2025-12-31 23:00:00" },
		{ "2026-04-30T23-03:00", "2026-05-01 02:00:00" },
	};
	static const char *const bad[] = {
		"2026-03-29T01+05:30", "2026-03-29T01+01:0", "2026-03-29T24+01:00",
		"2026-02-30T01+01:00", "2026-03-29T01*01:00", "2026-03-29T01+24:00",
		"2026-03-29 01+01:00", "0001-01-01T00+01:00",
		"9999-12-31T23-01:00",
	};
	char out[CHSQL_LITERAL_MAX], lit[CHSQL_LITERAL_MAX + 16];
	struct err e;

	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		ck_assert_int_eq(chsql_zoned_hour(ok[i].key, out), 0);
		ck_assert_str_eq(out, ok[i].utc);
		ck_assert_int_eq(chsql_literal(ok[i].key, out, &e), 0);
		snprintf(lit, sizeof lit, "toDateTime('%s', 'UTC')", ok[i].utc);
		ck_assert_str_eq(out, lit);
		ck_assert_int_eq(chsql_plain(ok[i].key, out, &e), 0);
		snprintf(lit, sizeof lit, "'%s'", ok[i].utc);
		ck_assert_str_eq(out, lit);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		ck_assert_int_eq(chsql_zoned_hour(bad[i], out), -1);
		ck_assert_int_eq(chsql_literal(bad[i], out, &e), -1);
		ck_assert_int_eq(chsql_plain(bad[i], out, &e), -1);
	}
}
END_TEST

START_TEST(test_bind)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "SELECT * FROM t WHERE dt = :partition",
		  "SELECT * FROM t WHERE dt = toDate('2026-02-08')" },
		{ "SELECT count() FROM :stage WHERE dt >= :partition_start AND"
		  " dt < :partition_end",
		  "SELECT count() FROM `_backfilld_stage_t` WHERE dt >="
		  " toDate('2026-02-08') AND dt < toDate('2026-02-09')" },
		/* quoted and commented placeholders are text */
		{ "SELECT ':partition', `:partition` -- :partition\n",
		  "SELECT ':partition', `:partition` -- :partition\n" },
		/* a backslash escapes a quote: the string goes on */
		{ "SELECT 'a\\' :partition' = x",
		  "SELECT 'a\\' :partition' = x" },
		{ "SELECT 'a\\\\', :partition",
		  "SELECT 'a\\\\', toDate('2026-02-08')" },
	};
	struct err err;
	char *out;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		ck_assert_int_eq(chsql_bind(cases[i].in, params, 4, &out, &err), 0);
		ck_assert_str_eq(out, cases[i].want);
		free(out);
	}
}
END_TEST

/* The UTC bounds are DateTime('UTC') whatever the server's zone; a hostile
 * value is refused as any other; describe names their form. */
START_TEST(test_bind_utc)
{
	static const struct chsql_param utc[] = {
		{ "partition_start_utc", "2023-10-28 22:00:00" },
		{ "partition_end_utc", "2023-10-29 23:00:00" },
		{ "partition_start", "2023-10-29" },
	};
	struct chsql_param bad = { "partition_end_utc", "2023-10-29'); DROP" };
	struct err err;
	struct buf b;
	char *out;

	ck_assert_int_eq(chsql_bind("SELECT * FROM t WHERE ts >= "
	    ":partition_start_utc AND ts < :partition_end_utc AND d = "
	    ":partition_start", utc, 3, &out, &err), 0);
	ck_assert_str_eq(out, "SELECT * FROM t WHERE ts >= toDateTime("
	    "'2023-10-28 22:00:00', 'UTC') AND ts < toDateTime("
	    "'2023-10-29 23:00:00', 'UTC') AND d = toDate('2023-10-29')");
	free(out);
	ck_assert_int_eq(chsql_bind("SELECT :partition_end_utc", &bad, 1, &out,
				    &err), -1);
	ck_assert_ptr_null(out);
	buf_init(&b);
	ck_assert_uint_eq(chsql_describe("j", "sql", "SELECT "
	    ":partition_start_utc, :partition_end_utc", GRAIN_DAY, false, "s", &b),
	    2);
	buf_add(&b, "", 1);
	ck_assert_str_eq(b.data, "  job j sql line 1: :partition_start_utc -> "
	    "toDateTime('YYYY-MM-DD HH:MM:SS', 'UTC')\n"
	    "  job j sql line 1: :partition_end_utc -> "
	    "toDateTime('YYYY-MM-DD HH:MM:SS', 'UTC')\n");
	buf_free(&b);
	buf_init(&b);
	ck_assert_uint_eq(chsql_describe("j", "sql", "SELECT :partition",
	    GRAIN_HOUR, true, "s", &b), 1);
	buf_add(&b, "", 1);
	ck_assert_str_eq(b.data, "  job j sql line 1: :partition -> "
	    "toDateTime('YYYY-MM-DD HH:00:00', 'UTC') (the hour's UTC start)\n");
	buf_free(&b);
}
END_TEST

START_TEST(test_bind_refused)
{
	static const char *const bad[] = {
		"SELECT * FROM t WHERE '\\' = :partition",   /* never ends */
		"SELECT `x FROM t",
		"SELECT 1 /* no end",
		"SELECT :nope",
	};
	struct chsql_param hostile = { "partition", "2026-02-08'); DROP" };
	struct err err;
	char *out;

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		ck_assert_int_eq(chsql_bind(bad[i], params, 4, &out, &err), -1);
		ck_assert_ptr_null(out);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	}
	ck_assert_int_eq(chsql_bind("SELECT :partition", &hostile, 1, &out,
				    &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "is not a partition key"));
}
END_TEST

START_TEST(test_split)
{
	char **st;
	size_t n;

	chsql_split(" SELECT 1; ;\n SELECT ';' -- ;\n ; ", &st, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(st[0], "SELECT 1");
	ck_assert_str_eq(st[1], "SELECT ';' -- ;");
	chsql_split_free(st, n);
}
END_TEST

START_TEST(test_key)
{
	char want[128];

	ck_assert(chsql_key_matches("dt", "dt", GRAIN_DAY, want, sizeof want));
	ck_assert(chsql_key_matches("toDate(dt)", "dt", GRAIN_DAY, want,
				    sizeof want));
	ck_assert(chsql_key_matches("toMonday(`week_start`)", "week_start",
				    GRAIN_WEEK, want, sizeof want));
	ck_assert(chsql_key_matches("toStartOfMonth(m)", "m", GRAIN_MONTH,
				    want, sizeof want));
	ck_assert(chsql_key_matches("toStartOfHour(ts)", "ts", GRAIN_HOUR,
				    want, sizeof want));
	/* a Date holding the grain's first day: its own partition key
	 * (the stage then audited: chsql_first_day_sql) */
	ck_assert_int_eq(chsql_key_shape("week_start", "week_start",
					 GRAIN_WEEK, want, sizeof want),
			 CHSQL_KEY_FIRST_DAY);
	ck_assert_str_eq(want, "toMonday(week_start)");
	ck_assert_int_eq(chsql_key_shape("`month_start`", "month_start",
					 GRAIN_MONTH, want, sizeof want),
			 CHSQL_KEY_FIRST_DAY);
	ck_assert_int_eq(chsql_key_shape("q", "q", GRAIN_QUARTER, want,
					 sizeof want), CHSQL_KEY_FIRST_DAY);
	ck_assert_int_eq(chsql_key_shape("dt", "dt", GRAIN_DAY, want,
					 sizeof want), CHSQL_KEY_GRAIN);
	ck_assert_int_eq(chsql_key_shape("toMonday(dt)", "dt", GRAIN_WEEK,
					 want, sizeof want), CHSQL_KEY_GRAIN);
	/* an hour's column alone is an instant, not a partition */
	ck_assert_int_eq(chsql_key_shape("ts", "ts", GRAIN_HOUR, want,
					 sizeof want), CHSQL_KEY_NONE);
	ck_assert(!chsql_key_matches("other", "dt", GRAIN_WEEK, want,
				     sizeof want));
	ck_assert_str_eq(want, "toMonday(dt)");
	ck_assert(!chsql_key_matches("toYYYYMM(dt)", "dt", GRAIN_MONTH, want,
				     sizeof want));
	ck_assert_str_eq(want, "toStartOfMonth(dt)");
	ck_assert(!chsql_key_matches("other", "dt", GRAIN_DAY, want,
				     sizeof want));
	ck_assert(!chsql_key_matches("", "dt", GRAIN_DAY, want, sizeof want));
	/* the function a partition's rows are read through is the one of
	 * the key each grain must have (chsql_grain_fn) */
	ck_assert_str_eq(chsql_grain_fn(GRAIN_HOUR), "toStartOfHour");
	ck_assert_str_eq(chsql_grain_fn(GRAIN_DAY), "toDate");
	ck_assert_str_eq(chsql_grain_fn(GRAIN_WEEK), "toMonday");
	ck_assert_str_eq(chsql_grain_fn(GRAIN_MONTH), "toStartOfMonth");
	ck_assert_str_eq(chsql_grain_fn(GRAIN_QUARTER), "toStartOfQuarter");
	ck_assert_str_eq(chsql_grain_fn(GRAIN_YEAR), "toStartOfYear");
	for (int g = GRAIN_HOUR; g <= GRAIN_YEAR; g++) {
		char fn[128];

		snprintf(fn, sizeof fn, "%s(ts)", chsql_grain_fn((enum grain)g));
		ck_assert(chsql_key_matches(fn, "ts", (enum grain)g, want,
					    sizeof want));
	}
}
END_TEST

START_TEST(test_first_day_sql)
{
	char sql[512];

	ck_assert_int_eq(chsql_first_day_sql("_backfilld_stage_mart",
					     "week_start", GRAIN_WEEK, sql,
					     sizeof sql), 0);
	ck_assert_str_eq(sql, "SELECT toString(`week_start`) FROM"
			 " `_backfilld_stage_mart` WHERE toMonday(`week_start`)"
			 " = :partition AND `week_start` != :partition LIMIT 1");
	ck_assert_int_eq(chsql_first_day_sql("s", "m", GRAIN_MONTH, sql,
					     sizeof sql), 0);
	ck_assert(strstr(sql, "toStartOfMonth(`m`) = :partition") != NULL);
	/* names are plain, never quoted into the text */
	ck_assert_int_eq(chsql_first_day_sql("s", "a`b", GRAIN_WEEK, sql,
					     sizeof sql), -1);
	ck_assert_int_eq(chsql_first_day_sql("s", "m", GRAIN_WEEK, sql, 20),
			 -1);
}
END_TEST

START_TEST(test_body)
{
	const char *mid = "0\t1\n0\t2\nCode: 395, e.displayText() = "
		"DB::Exception: Value passed to 'throwIf' function is non zero,"
		" e.what() = DB::Exception\n";
	char msg[256];
	const char *pw;

	ck_assert(chsql_body_exception(mid, strlen(mid), msg, sizeof msg));
	ck_assert_str_eq(msg, "Code: 395, e.displayText() = DB::Exception:"
			 " Value passed to 'throwIf' function is non zero");
	ck_assert(!chsql_body_exception("1\n", 2, msg, sizeof msg));
	ck_assert(!chsql_body_exception("Code: x\n", 8, msg, sizeof msg));
	pw = "Code: 193, e.displayText() = DB::Exception: Wrong"
		" password for user etl, e.what() = DB::Exception\n";

	chsql_error_text(pw, strlen(pw), msg, sizeof msg);
	ck_assert_str_eq(msg, "Code: 193, e.displayText() = DB::Exception:"
			 " Wrong password for user etl");
	chsql_error_text("  Not found\nmore", 16, msg, sizeof msg);
	ck_assert_str_eq(msg, "Not found");
}
END_TEST

/* A refusal of the user or a privilege: no retry cures it. */
START_TEST(test_denied)
{
	bool priv;

	ck_assert_int_eq(chsql_error_code("Code: 193, e.displayText() = x"),
			 193);
	ck_assert_int_eq(chsql_error_code("Code: 193 x"), 0);
	ck_assert_int_eq(chsql_error_code("Code: , x"), 0);
	ck_assert_int_eq(chsql_error_code("Not found"), 0);
	ck_assert(chsql_denied(401, 193, &priv) && !priv);
	ck_assert(chsql_denied(500, 516, &priv) && !priv);
	ck_assert(chsql_denied(500, 192, &priv) && !priv);
	ck_assert(chsql_denied(500, 497, &priv) && priv);
	ck_assert(chsql_denied(500, 164, &priv) && priv);
	ck_assert(chsql_denied(0, 164, &priv) && priv);
	ck_assert(chsql_denied(401, 0, &priv) && !priv);
	ck_assert(chsql_denied(403, 0, &priv) && priv);
	ck_assert(!chsql_denied(500, 216, &priv));
	ck_assert(!chsql_denied(500, 0, &priv));
	ck_assert(!chsql_denied(0, 159, &priv)); /* timeout: temporary */
}
END_TEST

/* The write-audit-publish statements, built in chsql.c alone. */
START_TEST(test_wap_statements)
{
	static const struct {
		char *(*fn1)(const char *);
		const char *want;
	} one[] = {
		{ chsql_create_marks_sql, "CREATE TABLE IF NOT EXISTS `m` (partition"
		  " String, request Int64, run Int64) ENGINE = MergeTree PARTITION"
		  " BY run ORDER BY partition" },
		{ chsql_drop_table_sql, "DROP TABLE IF EXISTS `m`" },
		{ chsql_drop_part_sql, "ALTER TABLE `m` DROP PARTITION :partition" },
		{ chsql_marks_of_sql, "SELECT toString(request) FROM `m` WHERE"
		  " partition = toString(:partition)" },
		{ chsql_engine_sql, "SELECT engine_full FROM system.tables WHERE"
		  " database = currentDatabase() AND name = 'm'" },
		{ chsql_cluster_hosts_sql, "SELECT host_address FROM system.clusters"
		  " WHERE cluster = 'm' AND replica_num = 1 ORDER BY shard_num" },
	};
	char *sql;

	for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
		sql = one[i].fn1("m");
		ck_assert_str_eq(sql, one[i].want);
		free(sql);
	}
	sql = chsql_create_stage_sql("_backfilld_stage_fct", "fct");
	ck_assert_str_eq(sql, "CREATE TABLE IF NOT EXISTS"
			 " `_backfilld_stage_fct` AS `fct`");
	free(sql);
	sql = chsql_fill_sql("s", "SELECT 1 WHERE dt = :partition");
	ck_assert_str_eq(sql, "INSERT INTO `s` SELECT 1 WHERE dt = :partition");
	free(sql);
}
END_TEST

START_TEST(test_names)
{
	char stage[CHSQL_IDENT_MAX + 32];

	ck_assert(chsql_ident_ok("fct_daily_sales"));
	ck_assert(!chsql_ident_ok("a`b"));
	ck_assert(!chsql_ident_ok("1a"));
	ck_assert(!chsql_ident_ok(""));
	chsql_stage_name("t", stage, sizeof stage);
	ck_assert_str_eq(stage, "_backfilld_stage_t");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("chsql");
	TCase *tc = tcase_create("chsql");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_literal);
	tcase_add_test(tc, test_plain);
	tcase_add_test(tc, test_zoned_hour);
	tcase_add_test(tc, test_bind);
	tcase_add_test(tc, test_bind_utc);
	tcase_add_test(tc, test_bind_refused);
	tcase_add_test(tc, test_split);
	tcase_add_test(tc, test_key);
	tcase_add_test(tc, test_first_day_sql);
	tcase_add_test(tc, test_body);
	tcase_add_test(tc, test_denied);
	tcase_add_test(tc, test_wap_statements);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_distributed);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
