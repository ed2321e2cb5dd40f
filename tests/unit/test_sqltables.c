/*
 * test_sqltables.c - the tables an SQL script reads and writes
 * (sqltables.c), from a table of scripts in every dialect: writes of each
 * verb, reads of FROM/JOIN/USING at any depth, CTE names, strings,
 * comments, quoted and schema-qualified names, and the look-alikes that
 * name no table.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqltables.h"

#define LITE SQLSCAN_SQLITE
#define PG SQLSCAN_PG
#define CH SQLSCAN_CH

/* A script and what it touches: "r:NAME" or "w:NAME" joined by ' ', in
 * the order of the text. */
struct tab_case {
	enum sqlscan_dialect d;
	const char *in;
	const char *want;
};

static const struct tab_case cases[] = {
	/* the lesson's job: a delete and an insert ... select */
	{ LITE, "DELETE FROM mart WHERE day = :partition;\n"
	  "INSERT INTO mart SELECT day, sum(x) FROM fct_daily_sales\n"
	  " WHERE day = :partition GROUP BY day",
	  "w:mart w:mart r:fct_daily_sales" },
	{ LITE, "SELECT 1", "" },
	{ LITE, "SELECT * FROM a, b AS x, c y WHERE 1", "r:a r:b r:c" },
	{ LITE, "SELECT * FROM a JOIN b ON a.k = b.k LEFT OUTER JOIN c USING (k)",
	  "r:a r:b r:c" },
	/* CTE names shadow tables of that name, within their statement */
	{ LITE, "WITH s AS (SELECT * FROM src), t(a) AS (SELECT 1 FROM s)\n"
	  "INSERT INTO out SELECT * FROM s JOIN t ON 1; SELECT * FROM s",
	  "r:src w:out r:s" },
	{ PG, "WITH RECURSIVE r AS (SELECT 1 UNION ALL SELECT n FROM r)"
	  " SELECT * FROM r", "" },
	{ PG, "WITH m AS MATERIALIZED (SELECT * FROM a) SELECT * FROM m", "r:a" },
	/* nested subqueries */
	{ LITE, "SELECT * FROM (SELECT * FROM (SELECT k FROM deep) d) e"
	  " WHERE k IN (SELECT k FROM inq) AND EXISTS (SELECT 1 FROM ex)",
	  "r:deep r:inq r:ex" },
	{ LITE, "SELECT * FROM (SELECT 1 FROM a) x, b", "r:a r:b" },
	{ LITE, "SELECT * FROM (a JOIN b ON 1)", "r:a r:b" },
	/* strings and comments */
	{ LITE, "SELECT 'x FROM fake' FROM real_t -- FROM c1\n/* JOIN c2 */",
	  "r:real_t" },
	{ PG, "SELECT $$ FROM d $$, E'\\' FROM e' FROM ok", "r:ok" },
	{ CH, "SELECT 'a\\' FROM b' FROM ok", "r:ok" },
	/* quoted and schema-qualified names */
	{ LITE, "SELECT * FROM \"My Table\" JOIN main.[x y] JOIN `b``c`",
	  "r:My Table r:main.x y r:b`c" },
	{ PG, "SELECT * FROM Analytics.\"Sales\" JOIN PUBLIC.t",
	  "r:analytics.Sales r:public.t" },
	{ CH, "SELECT * FROM Db.Tab JOIN `q\\`x`", "r:Db.Tab r:q`x" },
	/* writes */
	{ LITE, "INSERT OR REPLACE INTO a (x) VALUES (1); REPLACE INTO b"
	  " VALUES (1); UPDATE OR IGNORE c SET x = 1", "w:a w:b w:c" },
	{ PG, "UPDATE t SET x = s.x FROM s WHERE t.k = s.k", "w:t r:s" },
	{ PG, "UPDATE ONLY t SET x = 1", "w:t" },
	{ PG, "DELETE FROM t USING s WHERE t.k = s.k", "w:t r:s" },
	{ PG, "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE"
	  " SET x = s.x", "w:t r:s" },
	{ PG, "TRUNCATE TABLE a, b", "w:a w:b" },
	{ PG, "INSERT INTO t SELECT 1 ON CONFLICT (k) DO UPDATE SET x = 1", "w:t" },
	{ PG, "SELECT * FROM t FOR UPDATE", "r:t" },
	{ PG, "WITH d AS (DELETE FROM q RETURNING *) INSERT INTO h SELECT * FROM d",
	  "w:q w:h" },
	/* ClickHouse */
	{ CH, "INSERT INTO t SELECT toDate(:partition) AS d, count() FROM e"
	  " WHERE day = :partition", "w:t r:e" },
	{ CH, "INSERT INTO TABLE db.t (a) SELECT 1", "w:db.t" },
	{ CH, "ALTER TABLE t DELETE WHERE day = :partition", "w:t" },
	{ CH, "ALTER TABLE t UPDATE x = 1 WHERE 1", "w:t" },
	{ CH, "ALTER TABLE t REPLACE PARTITION '2026-01-01' FROM stage",
	  "w:t r:stage" },
	{ CH, "SELECT * FROM a FINAL ARRAY JOIN arr AS x JOIN b USING k", "r:a r:b" },
	{ CH, "SELECT * FROM numbers(10) JOIN remote('h', db.t) USING n", "" },
	{ CH, "WITH 1 AS one SELECT one FROM t", "r:t" },
	{ CH, "INSERT INTO FUNCTION file('x') SELECT 1", "" },
	/* FROM that names no table */
	{ PG, "SELECT EXTRACT(YEAR FROM d), substring(s FROM 2) FROM t", "r:t" },
	{ PG, "SELECT * FROM t WHERE a IS DISTINCT FROM b", "r:t" },
	{ PG, "SELECT * FROM generate_series(1, 3), LATERAL (SELECT 1 FROM u) x",
	  "r:u" },
	/* tables the script creates */
	{ LITE, "CREATE TEMP TABLE tmp AS SELECT * FROM src;"
	  " INSERT INTO tmp SELECT 1; INSERT INTO out SELECT * FROM tmp",
	  "r:src w:out" },
	{ PG, "CREATE TABLE IF NOT EXISTS keep (a int); INSERT INTO keep"
	  " SELECT 1; SELECT * FROM keep", "w:keep w:keep" },
	{ LITE, "SELECT * FROM 'open", "" },
};

#define NCASES (int)(sizeof cases / sizeof cases[0])

/* The refs of a script as the table spells them. */
static void
render(const struct sqltables *t, char *buf, size_t n)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < t->n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%c:%s", i ? " " : "",
				      t->refs[i].use == SQLTABLES_READ ? 'r' : 'w',
				      t->refs[i].name);
}

START_TEST(test_cases)
{
	const struct tab_case *c = &cases[_i];
	struct sqltables t;
	char got[1024];

	sqltables_scan(c->in, c->d, &t);
	render(&t, got, sizeof got);
	ck_assert_msg(strcmp(got, c->want) == 0, "case %d: %s\n got  \"%s\"\n"
		      " want \"%s\"", _i, c->in, got, c->want);
	sqltables_free(&t);
}
END_TEST

/* Each ref's bytes are the name as written; statements count from 1. */
START_TEST(test_offsets)
{
	const char *sql = "SELECT 1;\n  -- c\nINSERT INTO  s.\"T\" SELECT *"
		" FROM  src";
	struct sqltables t;

	sqltables_scan(sql, PG, &t);
	ck_assert_uint_eq(t.n, 2);
	ck_assert_int_eq(t.refs[0].stmt, 2);
	ck_assert_uint_eq(t.refs[0].off, (size_t)(strstr(sql, "s.\"T\"") - sql));
	ck_assert_uint_eq(t.refs[0].len, 5);
	ck_assert_uint_eq(t.refs[1].off, (size_t)(strstr(sql, "src") - sql));
	ck_assert_uint_eq(t.refs[1].len, 3);
	sqltables_free(&t);
}
END_TEST

START_TEST(test_same)
{
	ck_assert(sqltables_same("fct", "FCT", LITE));
	ck_assert(sqltables_same("main.fct", "fct", LITE));
	ck_assert(sqltables_same("fct", "public.fct", PG));
	ck_assert(!sqltables_same("a.fct", "b.fct", PG));
	ck_assert(!sqltables_same("fct", "FCT", CH));
	ck_assert(sqltables_same("db.fct", "fct", CH));
	ck_assert(!sqltables_same("fct", "fct2", LITE));
}
END_TEST

static Suite *
sqltables_suite(void)
{
	Suite *s = suite_create("sqltables");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_cases, 0, NCASES);
	tcase_add_test(tc, test_offsets);
	tcase_add_test(tc, test_same);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sqltables_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
