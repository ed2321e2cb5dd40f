/*
 * test_guard.c - the guardrails of a SQL job (daemon/server/exec/guard.c)
 * without a warehouse: a fake driver answers the guard's queries from a
 * table of cases, and each case says what the guard decides (passed,
 * failed, could not run), which checks it records with which detail, and
 * what the run's error says.  Also the SQL it builds (identifiers quoted,
 * the partition bound) and the move of a metric (guard_change).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"

/* The answers of the fake warehouse, before and after the write; NULL is
 * SQL NULL; fail names a query (count, revenue, dupkey) that errs after
 * the write. */
struct answers {
	const char *rows[2];
	const char *revenue[2];
	const char *dupkey;   /* a duplicated key, or NULL: no row */
	const char *fail;
};

struct fake_conn {
	struct wh_conn base;
	const struct answers *a;
	int phase;            /* 0 before the write, 1 after */
};

/* Answer the guard's query from the case's table. */
static int
fake_query_value(struct wh_conn *conn, const char *sql,
		 const struct wh_param *params, size_t nparams, bool *has_row,
		 char **value, struct err *err)
{
	struct fake_conn *c = (struct fake_conn *)conn;
	const char *what, *v;

	ck_assert_uint_eq(nparams, 1);
	ck_assert_str_eq(params[0].name, "partition");
	ck_assert(strstr(sql, ":partition") != NULL);
	if (strstr(sql, "HAVING COUNT(*) > 1") != NULL) {
		what = "dupkey";
		v = c->a->dupkey;
	} else if (strncmp(sql, "SELECT COUNT(*)", 15) == 0) {
		what = "count";
		v = c->a->rows[c->phase];
	} else {
		ck_assert(strncmp(sql, "SELECT (SUM(revenue))", 21) == 0);
		what = "revenue";
		v = c->a->revenue[c->phase];
	}
	if (c->phase == 1 && c->a->fail != NULL && strcmp(c->a->fail, what) == 0)
		return err_set(err, EXIT_WORK_FAILED, "no such column: x");
	*has_row = !(strcmp(what, "dupkey") == 0 && v == NULL);
	*value = v != NULL ? strdup(v) : NULL;
	return 0;
}

static const struct wh_driver fake_driver = {
	.name = "fake",
	.query_value = fake_query_value,
};

static char *job_key[] = { "dt", "store_id" };
static struct metric_def job_metrics[] = {
	{ .name = "revenue", .sql = "SUM(revenue)", .has_max_change = true,
	  .max_change = 50 },
};
static struct job_def job = {
	.name = "fct_sales", .table = "sales", .partition_column = "dt",
	.key = job_key, .nkey = 2, .min_rows = 1, .metrics = job_metrics,
	.nmetrics = 1,
};

#define NCHECKS 3 /* key_unique, min_rows, max_change:revenue */

static const struct {
	const char *name;
	struct answers a;
	bool first_error;
	enum guard_outcome want;
	struct { bool passed; const char *detail; } checks[NCHECKS];
	size_t nchecks;
	const char *err; /* the run's error, "" for none */
} cases[] = {
	{ "all pass", { { "10", "12" }, { "100", "120" }, NULL, NULL }, true,
	  GUARD_PASSED, { { true, "no duplicate key" },
			  { true, "12 rows, at least 1" },
			  { true, "revenue moved +20.0% (100 -> 120), within 50%" } },
	  3, "" },
	{ "a duplicated key", { { "10", "12" }, { "100", "100" }, "dt=2026-01-02, store_id=3 (2 rows)", NULL },
	  true, GUARD_FAILED,
	  { { false, "duplicate key dt=2026-01-02, store_id=3 (2 rows)" },
	    { true, "12 rows, at least 1" },
	    { true, "revenue moved +0.0% (100 -> 100), within 50%" } },
	  3, "check key_unique failed for 2026-01-02: duplicate key dt=2026-01-02, store_id=3 (2 rows)" },
	{ "an emptied partition", { { "10", "0" }, { "100", NULL }, NULL, NULL }, true,
	  GUARD_FAILED, { { true, "no duplicate key" },
			  { false, "0 rows, at least 1" },
			  { true, "no value before to compare with" } },
	  3, "check min_rows failed for 2026-01-02: 0 rows, at least 1" },
	{ "a metric moved too far", { { "10", "10" }, { "100", "40" }, NULL, NULL }, true,
	  GUARD_FAILED, { { true, "no duplicate key" },
			  { true, "10 rows, at least 1" },
			  { false, "revenue moved -60.0% (100 -> 40), above max_change 50%" } },
	  3, "check max_change:revenue failed for 2026-01-02: revenue moved -60.0% (100 -> 40), above max_change 50%" },
	{ "exactly max_change is within", { { "10", "10" }, { "100", "150" }, NULL, NULL }, true,
	  GUARD_PASSED, { { true, "no duplicate key" },
			  { true, "10 rows, at least 1" },
			  { true, "revenue moved +50.0% (100 -> 150), within 50%" } },
	  3, "" },
	{ "a new partition: nothing to move from", { { "0", "5" }, { NULL, "900" }, NULL, NULL }, true,
	  GUARD_PASSED, { { true, "no duplicate key" },
			  { true, "5 rows, at least 1" },
			  { true, "no value before to compare with" } },
	  3, "" },
	{ "one row: singular", { { "3", "1" }, { "100", "100" }, NULL, NULL }, true,
	  GUARD_PASSED, { { true, "no duplicate key" },
			  { true, "1 row, at least 1" },
			  { true, "revenue moved +0.0% (100 -> 100), within 50%" } },
	  3, "" },
	{ "zero before: no base", { { "3", "3" }, { "0", "900" }, NULL, NULL }, true,
	  GUARD_PASSED, { { true, "no duplicate key" },
			  { true, "3 rows, at least 1" },
			  { true, "no value before to compare with" } },
	  3, "" },
	{ "a metric that is no number", { { "3", "3" }, { "abc", "10" }, NULL, NULL }, true,
	  GUARD_PASSED, { { true, "no duplicate key" },
			  { true, "3 rows, at least 1" },
			  { true, "no value before to compare with" } },
	  3, "" },
	{ "the first failure names the error", { { "1", "0" }, { "100", "1" }, "dt=x, store_id=1 (3 rows)", NULL },
	  true, GUARD_FAILED,
	  { { false, "duplicate key dt=x, store_id=1 (3 rows)" },
	    { false, "0 rows, at least 1" },
	    { false, "revenue moved -99.0% (100 -> 1), above max_change 50%" } },
	  3, "check key_unique failed for 2026-01-02: duplicate key dt=x, store_id=1 (3 rows)" },
	{ "an earlier failure keeps the error", { { "1", "0" }, { "100", "100" }, NULL, NULL }, false,
	  GUARD_FAILED, { { true, "no duplicate key" },
			  { false, "0 rows, at least 1" },
			  { true, "revenue moved +0.0% (100 -> 100), within 50%" } },
	  3, "" },
	{ "the key query cannot run", { { "1", "1" }, { "1", "1" }, NULL, "dupkey" }, true,
	  GUARD_BROKEN, { { false, "no such column: x" } },
	  1, "check key_unique failed for 2026-01-02: no such column: x (is key: right for table sales?)" },
	{ "the count cannot run", { { "1", "1" }, { "1", "1" }, NULL, "count" }, true,
	  GUARD_BROKEN, { { false, "" } }, 0,
	  "counting rows of sales: no such column: x" },
	{ "a metric cannot run", { { "1", "1" }, { "1", "1" }, NULL, "revenue" }, true,
	  GUARD_BROKEN, { { false, "" } }, 0,
	  "metric revenue of sales: no such column: x" },
};

START_TEST(test_after)
{
	for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
		struct fake_conn conn = { { &fake_driver }, &cases[t].a, 0 };
		struct exec_part part = { .key = "2026-01-02",
					  .start = "2026-01-02",
					  .end = "2026-01-03" };
		struct exec_run run;
		struct wh_param p = { "partition", part.key };
		struct err err;
		enum guard_outcome got;

		memset(&run, 0, sizeof run);
		run.job = &job;
		run.parts = &part;
		run.nparts = 1;
		run.checks = calloc(NCHECKS, sizeof *run.checks);
		err_clear(&err);
		ck_assert_msg(guard_before(&run, &conn.base, 0, &p, 1, &err) == 0,
			      "%s: before: %s", cases[t].name, err.msg);
		conn.phase = 1;
		got = guard_after(&run, &conn.base, 0, &p, 1, cases[t].first_error,
				  &err);
		ck_assert_msg(got == cases[t].want, "%s: outcome %d, want %d (%s)",
			      cases[t].name, got, cases[t].want, err.msg);
		ck_assert_msg(strcmp(err.msg, cases[t].err) == 0,
			      "%s: error \"%s\", want \"%s\"", cases[t].name,
			      err.msg, cases[t].err);
		ck_assert_msg(run.nchecks == cases[t].nchecks, "%s: %zu checks",
			      cases[t].name, run.nchecks);
		for (size_t k = 0; k < run.nchecks; k++) {
			static const char *const names[NCHECKS] = {
				"key_unique", "min_rows", "max_change:revenue" };

			ck_assert_str_eq(run.checks[k].name, names[k]);
			ck_assert_msg(run.checks[k].passed == cases[t].checks[k].passed &&
				      strcmp(run.checks[k].detail,
					     cases[t].checks[k].detail) == 0,
				      "%s: check %s passed %d \"%s\", want %d \"%s\"",
				      cases[t].name, names[k], run.checks[k].passed,
				      run.checks[k].detail, cases[t].checks[k].passed,
				      cases[t].checks[k].detail);
			ck_assert_uint_eq(run.checks[k].part, 0);
			free(run.checks[k].name);
			free(run.checks[k].detail);
		}
		free(run.checks);
		free(run.guards[0].metrics);
		free(run.guards);
	}
}
END_TEST

/* The figures kept for the report and audit: rows and the metric, before
 * and after. */
START_TEST(test_figures)
{
	static const struct answers a = { { "7", "9" }, { "200", "250" }, NULL, NULL };
	struct fake_conn conn = { { &fake_driver }, &a, 0 };
	struct exec_part part = { .key = "2026-01-02", .start = "2026-01-02",
				  .end = "2026-01-03" };
	struct wh_param p = { "partition", part.key };
	struct exec_check_result checks[NCHECKS];
	struct exec_run run;
	struct err err;

	memset(&run, 0, sizeof run);
	run.job = &job;
	run.parts = &part;
	run.nparts = 1;
	run.checks = checks;
	ck_assert_int_eq(guard_before(&run, &conn.base, 0, &p, 1, &err), 0);
	conn.phase = 1;
	ck_assert_int_eq(guard_after(&run, &conn.base, 0, &p, 1, true, &err),
			 GUARD_PASSED);
	ck_assert(run.guards[0].has_rows_before && run.guards[0].has_rows_after);
	ck_assert_int_eq(run.guards[0].rows_before, 7);
	ck_assert_int_eq(run.guards[0].rows_after, 9);
	ck_assert_str_eq(run.guards[0].metrics[0].name, "revenue");
	ck_assert(run.guards[0].metrics[0].has_change);
	ck_assert_double_eq_tol(run.guards[0].metrics[0].change_pct, 25.0, 1e-9);
	for (size_t k = 0; k < run.nchecks; k++) {
		free(checks[k].name);
		free(checks[k].detail);
	}
	free(run.guards[0].metrics);
	free(run.guards);
}
END_TEST

/* The SQL: identifiers double-quoted (quotes doubled), columns qualified,
 * the partition a parameter, never spliced. */
START_TEST(test_sql)
{
	char *kq[] = { "id\"x" };
	struct metric_def m[] = { { .name = "n", .sql = "COUNT(DISTINCT id)" } };
	struct job_def q = { .table = "my \"t\"", .partition_column = "d",
			     .key = kq, .nkey = 1, .metrics = m, .nmetrics = 1 };
	struct job_def nokey = { .table = "t", .partition_column = "d" };
	char *s;

	s = guard_sql_metric(&q, -1);
	ck_assert_str_eq(s, "SELECT COUNT(*) FROM \"my \"\"t\"\"\" WHERE"
			 " \"my \"\"t\"\"\".\"d\" = :partition");
	free(s);
	s = guard_sql_metric(&q, 0);
	ck_assert_str_eq(s, "SELECT (COUNT(DISTINCT id)) FROM \"my \"\"t\"\"\""
			 " WHERE \"my \"\"t\"\"\".\"d\" = :partition");
	free(s);
	s = guard_sql_dupkey(&q);
	ck_assert_str_eq(s, "SELECT 'id\"x=' || COALESCE(CAST(\"my \"\"t\"\"\"."
			 "\"id\"\"x\" AS TEXT), 'NULL') || ' (' || CAST(COUNT(*)"
			 " AS TEXT) || ' rows)' FROM \"my \"\"t\"\"\" WHERE"
			 " \"my \"\"t\"\"\".\"d\" = :partition GROUP BY"
			 " \"my \"\"t\"\"\".\"id\"\"x\" HAVING COUNT(*) > 1"
			 " LIMIT 1");
	free(s);
	ck_assert_ptr_null(guard_sql_dupkey(&nokey));
}
END_TEST

/* A metric's move in percent of its value before; none from zero or a
 * value that is not finite. */
START_TEST(test_change)
{
	static const struct {
		double before, after;
		bool has;
		double pct;
	} c[] = {
		{ 100, 150, true, 50 },
		{ 100, 40, true, -60 },
		{ -100, -50, true, 50 },  /* relative to |before| */
		{ 100, 100, true, 0 },
		{ 0, 5, false, 0 },
		{ 1.0 / 0.0, 5, false, 0 },
		{ 5, 0.0 / 0.0, false, 0 },
	};

	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		double pct = 0;
		bool has = guard_change(c[i].before, c[i].after, &pct);

		ck_assert_msg(has == c[i].has, "case %zu", i);
		if (has)
			ck_assert_double_eq_tol(pct, c[i].pct, 1e-9);
	}
}
END_TEST

static Suite *
guard_suite(void)
{
	Suite *s = suite_create("guard");
	TCase *tc = tcase_create("guard");

	tcase_add_test(tc, test_after);
	tcase_add_test(tc, test_figures);
	tcase_add_test(tc, test_sql);
	tcase_add_test(tc, test_change);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(guard_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
