/*
 * test_pgsql.c - the PostgreSQL statement splitter and parameter
 * translator (pgsql.c): what it must leave alone (strings, E-strings,
 * quoted identifiers, dollar quotes, comments, casts), how :names become
 * $n, where scripts split, and the errors for text it cannot read.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgsql.h"

/* One script and what it must become: up to four statements, each with
 * its parameter names joined by ','. */
struct pgsql_case {
	const char *in;
	size_t n;
	const char *sql[4];
	const char *names[4];
};

static const struct pgsql_case cases[] = {
	/* parameters */
	{ "SELECT :partition", 1, { "SELECT $1" }, { "partition" } },
	{ "SELECT :partition, :partition_start, :partition", 1,
	  { "SELECT $1, $2, $1" }, { "partition,partition_start" } },
	{ "SELECT :partition_end, :partition", 1, { "SELECT $1, $2" },
	  { "partition_end,partition" } },
	/* a UTC bound is a timestamptz whatever the session's TimeZone */
	{ "DELETE FROM t WHERE ts >= :partition_start_utc AND ts < "
	  ":partition_end_utc AND d = :partition_start", 1,
	  { "DELETE FROM t WHERE ts >= ($1::timestamp AT TIME ZONE 'UTC') AND "
	    "ts < ($2::timestamp AT TIME ZONE 'UTC') AND d = $3" },
	  { "partition_start_utc,partition_end_utc,partition_start" } },
	{ "SELECT x:partition_end_utc::date", 1,
	  { "SELECT x ($1::timestamp AT TIME ZONE 'UTC')::date" },
	  { "partition_end_utc" } },
	{ "SELECT x FROM t WHERE ts > :since", 1,
	  { "SELECT x FROM t WHERE ts > $1" }, { "since" } },
	{ "SELECT 1 WHERE a=:partition)", 1,
	  { "SELECT 1 WHERE a=$1)" }, { "partition" } },
	/* a parameter glued to a word stays a token of its own: "x$1"
	 * would be one identifier to PostgreSQL (found by fuzz_pgsql) */
	{ "SELECT x:partition, 1:partition_end, \"q\":since, é:partition", 1,
	  { "SELECT x $1, 1 $2, \"q\"$3, é $1" },
	  { "partition,partition_end,since" } },
	/* string literals */
	{ "SELECT ':partition', :partition", 1,
	  { "SELECT ':partition', $1" }, { "partition" } },
	{ "SELECT 'it''s :x; ok', :partition_start", 1,
	  { "SELECT 'it''s :x; ok', $1" }, { "partition_start" } },
	{ "SELECT 'a\\', :partition", 1,
	  { "SELECT 'a\\', $1" }, { "partition" } },
	{ "SELECT 'two' 'parts :x', :partition", 1,
	  { "SELECT 'two' 'parts :x', $1" }, { "partition" } },
	{ "SELECT '', :partition", 1, { "SELECT '', $1" }, { "partition" } },
	/* E-strings: backslash escapes the quote */
	{ "SELECT E'\\' :x ;', :partition", 1,
	  { "SELECT E'\\' :x ;', $1" }, { "partition" } },
	{ "SELECT e'a\\\\', :partition", 1,
	  { "SELECT e'a\\\\', $1" }, { "partition" } },
	{ "SELECT E'it''s \\n:x', :partition", 1,
	  { "SELECT E'it''s \\n:x', $1" }, { "partition" } },
	{ "SELECT some'\\', :partition", 1,
	  { "SELECT some'\\', $1" }, { "partition" } },
	{ "SELECT U&'d\\0061t:x', B'101', X'1f', N':x', :since", 1,
	  { "SELECT U&'d\\0061t:x', B'101', X'1f', N':x', $1" }, { "since" } },
	/* quoted identifiers */
	{ "SELECT \"a:b;c\", \"x\"\":y\" FROM t WHERE d = :partition", 1,
	  { "SELECT \"a:b;c\", \"x\"\":y\" FROM t WHERE d = $1" },
	  { "partition" } },
	{ "SELECT \"it's\" FROM t WHERE d = :partition", 1,
	  { "SELECT \"it's\" FROM t WHERE d = $1" }, { "partition" } },
	/* comments */
	{ "SELECT 1 -- :x; 'q\n, :partition", 1,
	  { "SELECT 1 -- :x; 'q\n, $1" }, { "partition" } },
	{ "SELECT /* a /* :x ; ' */ still ; \" */ :partition", 1,
	  { "SELECT /* a /* :x ; ' */ still ; \" */ $1" }, { "partition" } },
	{ "SELECT 4 /* */ / 2 * :partition", 1,
	  { "SELECT 4 /* */ / 2 * $1" }, { "partition" } },
	{ "SELECT 3 - -1 - :partition", 1,
	  { "SELECT 3 - -1 - $1" }, { "partition" } },
	/* casts and other colons */
	{ "SELECT :partition::date, x::text, :partition_end::timestamp", 1,
	  { "SELECT $1::date, x::text, $2::timestamp" },
	  { "partition,partition_end" } },
	{ "SELECT CAST(:partition AS date)::text", 1,
	  { "SELECT CAST($1 AS date)::text" }, { "partition" } },
	{ "SELECT f(a := 1), arr[1 : 2], arr[1:2], '1'::int", 1,
	  { "SELECT f(a := 1), arr[1 : 2], arr[1:2], '1'::int" }, { "" } },
	/* dollar quotes */
	{ "SELECT $$ :x ; 'q \" $$, :partition", 1,
	  { "SELECT $$ :x ; 'q \" $$, $1" }, { "partition" } },
	{ "SELECT $fn$ $$ ; :y $f$ $fn$, :partition", 1,
	  { "SELECT $fn$ $$ ; :y $f$ $fn$, $1" }, { "partition" } },
	{ "SELECT $a_1$:x;$a_1$||:partition", 1,
	  { "SELECT $a_1$:x;$a_1$||$1" }, { "partition" } },
	{ "SELECT a$b$, c$ FROM t WHERE d = :partition", 1,
	  { "SELECT a$b$, c$ FROM t WHERE d = $1" }, { "partition" } },
	/* splitting */
	{ "DELETE FROM t WHERE dt = :partition;\n"
	  "INSERT INTO t SELECT :partition_start, 'a;b', :partition;", 2,
	  { "DELETE FROM t WHERE dt = $1",
	    "\nINSERT INTO t SELECT $1, 'a;b', $2" },
	  { "partition", "partition_start,partition" } },
	{ "SELECT 1;SELECT 2", 2, { "SELECT 1", "SELECT 2" }, { "", "" } },
	{ " ;; -- only a comment\n; /* and another */ ;\t\n", 0, { NULL },
	  { NULL } },
	{ "", 0, { NULL }, { NULL } },
	{ "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO a VALUES (1); "
	  "INSERT INTO b VALUES (:partition));SELECT 2", 2,
	  { "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO a VALUES "
	    "(1); INSERT INTO b VALUES ($1))", "SELECT 2" },
	  { "partition", "" } },
	{ "CREATE FUNCTION f() RETURNS int AS $body$\nBEGIN\n  RETURN 1;\n"
	  "END;\n$body$ LANGUAGE plpgsql;\nSELECT f(), :partition;", 2,
	  { "CREATE FUNCTION f() RETURNS int AS $body$\nBEGIN\n  RETURN 1;\n"
	    "END;\n$body$ LANGUAGE plpgsql", "\nSELECT f(), $1" },
	  { "", "partition" } },
	{ "SELECT ';' ; SELECT \";\" ; SELECT $$;$$ ; SELECT 1 -- ;\n", 4,
	  { "SELECT ';'", " SELECT \";\"", " SELECT $$;$$",
	    " SELECT 1 -- ;" }, { "", "", "", "" } },
};

/* The statement's names joined by ','. */
static void
join_names(const struct pgsql_stmt *st, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < st->nnames; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
		    i > 0 ? "," : "", st->names[i]);
}

/* Each script of `cases` splits and translates as the table says. */
START_TEST(test_cases)
{
	const struct pgsql_case *c = &cases[_i];
	struct pgsql_script s;
	struct err err;
	char names[256];
	size_t k;

	err_clear(&err);
	ck_assert_msg(pgsql_parse(c->in, &s, &err) == 0, "%s: %s", c->in,
	    err.msg);
	ck_assert_msg(s.n == c->n, "%s: %zu statements, expected %zu", c->in,
	    s.n, c->n);
	for (k = 0; k < s.n; k++) {
		ck_assert_str_eq(s.stmts[k].sql, c->sql[k]);
		join_names(&s.stmts[k], names, sizeof names);
		ck_assert_str_eq(names, c->names[k]);
	}
	pgsql_script_free(&s);
}
END_TEST

/* One script that must not parse: the message and the statement number. */
struct pgsql_bad {
	const char *in;
	size_t stmt;
	const char *msg;
};

static const struct pgsql_bad bad[] = {
	{ "SELECT 'abc", 1, "unterminated quoted string starting at line 1" },
	{ "SELECT 1;\nSELECT \"abc", 2,
	  "unterminated quoted identifier starting at line 2" },
	{ "SELECT 1; SELECT 2;\n\n/* a /* b */", 3,
	  "unterminated /* comment starting at line 3" },
	{ "SELECT $x$ abc $y$", 1,
	  "unterminated dollar-quoted string $x$ starting at line 1" },
	{ "SELECT $$ abc", 1,
	  "unterminated dollar-quoted string $$ starting at line 1" },
	{ "SELECT E'abc\\'", 1,
	  "unterminated quoted string starting at line 1" },
	{ "SELECT 1;;\nSELECT 'a''", 2,
	  "unterminated quoted string starting at line 2" },
	{ "SELECT $1", 1, "positional parameter $1 at line 1: name the value "
	  "instead (:partition, :partition_start, :partition_end)" },
};

/* Each script of `bad` is refused with its message and statement. */
START_TEST(test_bad)
{
	const struct pgsql_bad *b = &bad[_i];
	struct pgsql_script s;
	struct err err;

	err_clear(&err);
	ck_assert_msg(pgsql_parse(b->in, &s, &err) == -1, "%s parsed", b->in);
	ck_assert_str_eq(err.msg, b->msg);
	ck_assert_msg(s.n == b->stmt, "%s: statement %zu, expected %zu",
	    b->in, s.n, b->stmt);
	ck_assert_ptr_null(s.stmts);
	pgsql_script_free(&s);
}
END_TEST

/* A statement's line is that of its first token, comments skipped. */
START_TEST(test_line_numbers)
{
	struct pgsql_script s;
	struct err err;

	ck_assert_int_eq(pgsql_parse("-- head\n\nSELECT 'a\nb';\n"
	    "/* x\n */ SELECT 2", &s, &err), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(s.stmts[0].line, 3);
	ck_assert_int_eq(s.stmts[1].line, 6);
	pgsql_script_free(&s);
}
END_TEST

/* Values by name; a name the caller did not pass is an error. */
START_TEST(test_values)
{
	const struct wh_param params[] = {
		{ "partition", "2026-02-09" },
		{ "partition_start", "2026-02-09" },
		{ "partition_end", NULL },
	};
	const char *values[3];
	struct pgsql_script s;
	struct err err;

	ck_assert_int_eq(pgsql_parse("SELECT :partition_end, :partition",
	    &s, &err), 0);
	ck_assert_int_eq(pgsql_values(&s.stmts[0], params, 3, values, &err),
	    0);
	ck_assert_ptr_null(values[0]);
	ck_assert_str_eq(values[1], "2026-02-09");
	pgsql_script_free(&s);

	ck_assert_int_eq(pgsql_parse("SELECT :partition, :nope", &s, &err),
	    0);
	ck_assert_int_eq(pgsql_values(&s.stmts[0], params, 3, values, &err),
	    -1);
	ck_assert_str_eq(err.msg, "parameter :nope has no value (known: "
	    ":partition, :partition_start, :partition_end)");
	ck_assert_int_eq(pgsql_values(&s.stmts[0], NULL, 0, values, &err),
	    -1);
	ck_assert_str_eq(err.msg, "parameter :partition has no value (known: "
	    "none)");
	pgsql_script_free(&s);

	/* The batch binds no :partition: the driver says so by name. */
	ck_assert_int_eq(pgsql_parse("DELETE FROM t WHERE dt >= "
	    ":partition_start; INSERT INTO t SELECT :partition", &s, &err), 0);
	ck_assert_int_eq(pgsql_values(&s.stmts[0], params + 1, 2, values,
	    &err), 0);
	ck_assert_int_eq(pgsql_values(&s.stmts[1], params + 1, 2, values,
	    &err), -1);
	ck_assert_str_eq(err.msg, "parameter :partition has no value (known: "
	    ":partition_start, :partition_end)");
	pgsql_script_free(&s);
}
END_TEST

/* $10 and up, with repeats mapped to their first number. */
START_TEST(test_many_names)
{
	char sql[4096], want[4096];
	size_t off = 0, woff = 0;
	struct pgsql_script s;
	struct err err;
	int i;

	/* Ten distinct names and their repeats: $10 and up are two digits. */
	off += (size_t)snprintf(sql, sizeof sql, "SELECT 0");
	woff += (size_t)snprintf(want, sizeof want, "SELECT 0");
	for (i = 0; i < 12; i++) {
		off += (size_t)snprintf(sql + off, sizeof sql - off,
		    ", :p%d, :p%d", i, i / 2);
		woff += (size_t)snprintf(want + woff, sizeof want - woff,
		    ", $%d, $%d", i + 1, i / 2 + 1);
	}
	ck_assert_int_eq(pgsql_parse(sql, &s, &err), 0);
	ck_assert_str_eq(s.stmts[0].sql, want);
	ck_assert_uint_eq(s.stmts[0].nnames, 12);
	ck_assert_str_eq(s.stmts[0].names[11], "p11");
	pgsql_script_free(&s);
}
END_TEST

/* Array literals: text always quoted ("NULL" a string, NULL the SQL
 * NULL), quotes and backslashes escaped, separators, empty arrays. */
START_TEST(test_arrays)
{
	struct pgsql_array t = { 0 }, i = { 0 }, b = { 0 }, e = { 0 };

	pgsql_array_text(&t, "a");
	pgsql_array_text(&t, NULL);
	pgsql_array_text(&t, "NULL");
	pgsql_array_text(&t, "say \"hi\", {x} \\ y");
	pgsql_array_text(&t, "");
	ck_assert_str_eq(pgsql_array_end(&t),
			 "{\"a\",NULL,\"NULL\",\"say \\\"hi\\\", {x} \\\\ y\",\"\"}");
	ck_assert_uint_eq(t.n, 5);
	pgsql_array_int(&i, 7);
	pgsql_array_int(&i, -1);
	pgsql_array_int(&i, INT64_MAX);
	ck_assert_str_eq(pgsql_array_end(&i), "{7,-1,9223372036854775807}");
	pgsql_array_bool(&b, true);
	pgsql_array_bool(&b, false);
	ck_assert_str_eq(pgsql_array_end(&b), "{t,f}");
	ck_assert_str_eq(pgsql_array_end(&e), "{}");
	pgsql_array_free(&t);
	pgsql_array_free(&i);
	pgsql_array_free(&b);
	pgsql_array_free(&e);
	ck_assert_ptr_null(t.b.p);
	ck_assert_uint_eq(t.n, 0);
	{
		static const char *const parts[] = { "a", "", "b,c" };
		struct pgsql_buf j = { 0 }, none = { 0 };

		pgsql_buf_join(&j, parts, 3, '\x1f');
		ck_assert_str_eq(j.p, "a\x1f\x1f" "b,c");
		pgsql_buf_join(&none, parts, 0, '\x1f');
		ck_assert_str_eq(none.p, "");
		free(j.p);
		free(none.p);
	}
}
END_TEST

/* The database a connection string names, without its secrets. */
static const struct { const char *in, *name; } names[] = {
	{ "host=db1 dbname=backfilld user=backfilld",
	  "host=db1 dbname=backfilld" },
	{ "dbname=x password=secret host=/run/pg port=5433 user=u",
	  "host=/run/pg port=5433 dbname=x" },
	{ "  host = db1   dbname='my db' password='it''s' ",
	  "host=db1 dbname=my db" },
	{ "dbname='a\\'b' host=h", "host=h dbname=a\\'b" },
	{ "user=u password=p", "" },
	{ "", "" },
	{ "postgresql://u:s3cr@t@db1:5432/backfilld?sslmode=require",
	  "host=db1:5432 dbname=backfilld" },
	{ "postgres://db1,db2:5433/x", "host=db1,db2:5433 dbname=x" },
	{ "postgresql://", "" },
	{ "postgresql:///only_db", "dbname=only_db" },
};

START_TEST(test_conninfo_name)
{
	char out[128];

	pgsql_conninfo_name(names[_i].in, out, sizeof out);
	ck_assert_str_eq(out, names[_i].name);
	ck_assert(strstr(out, "secret") == NULL && strstr(out, "s3cr") == NULL);
}
END_TEST

/* Cut to the buffer, never past it. */
START_TEST(test_conninfo_name_short)
{
	char out[8];

	memset(out, 'z', sizeof out);
	pgsql_conninfo_name("host=averylonghostname dbname=x", out, sizeof out);
	ck_assert_str_eq(out, "host=av");
	pgsql_conninfo_name(NULL, out, sizeof out);
	ck_assert_str_eq(out, "");
}
END_TEST

/* The suite: every test above. */
static Suite *
pgsql_suite(void)
{
	Suite *s = suite_create("pgsql");
	TCase *tc = tcase_create("pgsql");

	tcase_add_loop_test(tc, test_cases, 0,
	    (int)(sizeof cases / sizeof cases[0]));
	tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, test_line_numbers);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_many_names);
	tcase_add_test(tc, test_arrays);
	tcase_add_loop_test(tc, test_conninfo_name, 0,
	    (int)(sizeof names / sizeof names[0]));
	tcase_add_test(tc, test_conninfo_name_short);
	suite_add_tcase(s, tc);
	return s;
}

/* Run the suite; exit 0 when every test passed. */
int
main(void)
{
	SRunner *sr = srunner_create(pgsql_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
