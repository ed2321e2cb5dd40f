/*
 * test_sqlscan.c - the one SQL lexer (sqlscan.c): the tokens of both
 * dialects, and the wall-clock guard on them: every form that reads the
 * clock, and the look-alikes that must pass.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlscan.h"

#define LITE SQLSCAN_SQLITE
#define PG SQLSCAN_PG

/* ------------------------------------------------------------------ */
/* Tokens                                                              */
/* ------------------------------------------------------------------ */

/* A text and its solid tokens (blanks and comments left out), each as
 * KIND:TEXT joined by '|'; kinds: W word, N number, S string, Q quoted
 * identifier, D dollar quote, P parameter, C cast, . punctuation,
 * U unterminated. */
struct tok_case {
	enum sqlscan_dialect d;
	const char *in;
	const char *want;
};

static const struct tok_case tok_cases[] = {
	{ LITE, "SELECT 'it''s', \"a\"\"b\" FROM t",
	  "W:SELECT|S:'it''s'|.:,|Q:\"a\"\"b\"|W:FROM|W:t" },
	{ PG, "SELECT 'it''s', \"a\"\"b\" FROM t",
	  "W:SELECT|S:'it''s'|.:,|Q:\"a\"\"b\"|W:FROM|W:t" },
	{ LITE, "x = :partition AND y = $p AND z = @q AND w = ?1 AND v = ?",
	  "W:x|.:=|P::partition|W:AND|W:y|.:=|P:$p|W:AND|W:z|.:=|P:@q|W:AND|W:w|.:=|P:?1|W:AND|W:v|.:=|P:?" },
	{ PG, "x = :partition::date AND y = $1",
	  "W:x|.:=|P::partition|C:::|W:date|W:AND|W:y|.:=|P:$1" },
	{ PG, "SELECT $$a;'b'$$, $t$ $$ $t$, a$b$",
	  "W:SELECT|D:$$a;'b'$$|.:,|D:$t$ $$ $t$|.:,|W:a$b$" },
	{ LITE, "SELECT `a b`, [c d] -- x\n/* y */ 1",
	  "W:SELECT|Q:`a b`|.:,|Q:[c d]|N:1" },
	{ PG, "SELECT E'\\'', e'\\\\', some'x'",
	  "W:SELECT|S:E'\\''|.:,|S:e'\\\\'|.:,|W:some|S:'x'" },
	{ LITE, "SELECT E'\\'", "W:SELECT|W:E|S:'\\'" },
	{ PG, "/* a /* nested */ comment */ SELECT 1", "W:SELECT|N:1" },
	{ LITE, "/* a /* flat */ SELECT 1", "W:SELECT|N:1" },
	{ PG, "/* a /* nested */ unterminated", "U:/* a /* nested */ unterminated" },
	{ LITE, "SELECT 'open", "W:SELECT|U:'open" },
	{ PG, "SELECT $x$ open", "W:SELECT|U:$x$ open" },
	{ PG, "SELECT \"open", "W:SELECT|U:\"open" },
	{ LITE, "SELECT 1.5e3, 0x1F;", "W:SELECT|N:1.5e3|.:,|N:0x1F|.:;" },
};

#define NTOK (int)(sizeof tok_cases / sizeof tok_cases[0])

/* The letter of a token kind. */
static char
tok_letter(enum sqlscan_kind k)
{
	switch (k) {
	case SQLSCAN_WORD: return 'W';
	case SQLSCAN_NUMBER: return 'N';
	case SQLSCAN_STRING: return 'S';
	case SQLSCAN_QUOTED: return 'Q';
	case SQLSCAN_DOLLAR: return 'D';
	case SQLSCAN_PARAM: return 'P';
	case SQLSCAN_CAST: return 'C';
	case SQLSCAN_PUNCT: return '.';
	case SQLSCAN_UNTERMINATED: return 'U';
	default: return '?';
	}
}

/* Each text cuts into exactly its tokens; offsets cover the text. */
START_TEST(test_tokens)
{
	const struct tok_case *c = &tok_cases[_i];
	struct sqlscan s;
	struct sqlscan_tok t;
	char got[1024];
	size_t off = 0, end = 0;

	got[0] = '\0';
	sqlscan_init(&s, c->in, c->d);
	while (sqlscan_next(&s, &t) != SQLSCAN_END) {
		ck_assert_uint_eq(t.off, end);
		end = t.off + t.len;
		if (t.kind == SQLSCAN_SPACE || t.kind == SQLSCAN_COMMENT)
			continue;
		off += (size_t)snprintf(got + off, sizeof got - off, "%s%c:%.*s",
		    off ? "|" : "", tok_letter(t.kind), (int)t.len,
		    c->in + t.off);
	}
	ck_assert_uint_eq(end, strlen(c->in));
	ck_assert_str_eq(got, c->want);
}
END_TEST

/* Lines of tokens count from 1, newlines inside tokens included. */
START_TEST(test_lines)
{
	struct sqlscan s;
	struct sqlscan_tok t;
	int lines[8], n = 0;

	sqlscan_init(&s, "a\n'b\nc' /* d\n */ e\n-- f\ng", PG);
	while (sqlscan_next_solid(&s, &t) != SQLSCAN_END && n < 8)
		lines[n++] = t.line;
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(lines[0], 1);
	ck_assert_int_eq(lines[1], 2);
	ck_assert_int_eq(lines[2], 4);
	ck_assert_int_eq(lines[3], 6);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The wall clock                                                      */
/* ------------------------------------------------------------------ */

/* SQL, and where its first clock read is (-1: none) spelled how. */
struct clock_case {
	enum sqlscan_dialect d;
	const char *sql;
	long off;
	const char *what;
};

static const struct clock_case clock_cases[] = {
	/* both dialects */
	{ LITE, "SELECT 'now'", 7, "'now'" },
	{ PG, "SELECT 'NOW'::timestamp", 7, "'now'" },
	{ LITE, "SELECT current_date", 7, "CURRENT_DATE" },
	{ PG, "SELECT x FROM t WHERE d < CURRENT_TIMESTAMP", 26, "CURRENT_TIMESTAMP" },
	{ LITE, "SELECT Current_Time", 7, "CURRENT_TIME" },
	/* SQLite functions without a time value */
	{ LITE, "SELECT date()", 7, "date()" },
	{ LITE, "SELECT time( )", 7, "time()" },
	{ LITE, "SELECT DATETIME()", 7, "datetime()" },
	{ LITE, "SELECT julianday()", 7, "julianday()" },
	{ LITE, "SELECT unixepoch()", 7, "unixepoch()" },
	{ LITE, "SELECT strftime('%s')", 7, "strftime() without a time value" },
	{ LITE, "SELECT strftime ( '%Y-%m-%d' /* fmt */ )", 7,
	  "strftime() without a time value" },
	{ LITE, "SELECT date(\"now\")", 12, "\"now\"" },
	{ LITE, "SELECT strftime('%s', \"Now\")", 22, "\"now\"" },
	{ LITE, "SELECT date('now', 'start of month')", 12, "'now'" },
	{ LITE, "SELECT 1;\nSELECT x FROM t WHERE d = date()", 36, "date()" },
	{ LITE, "SELECT date((SELECT max(d) FROM t)), date()", 37, "date()" },
	/* PostgreSQL */
	{ PG, "SELECT now()", 7, "now()" },
	{ PG, "SELECT pg_catalog.now ( )", 18, "now()" },
	{ PG, "SELECT clock_timestamp()", 7, "clock_timestamp()" },
	{ PG, "SELECT statement_timestamp()", 7, "statement_timestamp()" },
	{ PG, "SELECT transaction_timestamp()", 7, "transaction_timestamp()" },
	{ PG, "SELECT timeofday()", 7, "timeofday()" },
	{ PG, "SELECT LOCALTIMESTAMP", 7, "LOCALTIMESTAMP" },
	{ PG, "SELECT localtime(0)", 7, "LOCALTIME" },
	{ PG, "SELECT 'today'::date", 7, "'today'" },
	{ PG, "SELECT 'Tomorrow' :: timestamptz", 7, "'tomorrow'" },
	{ PG, "SELECT date 'yesterday'", 12, "'yesterday'" },
	{ PG, "SELECT timestamp ' today '", 17, "'today'" },
	{ PG, "SELECT CAST('today' AS date)", 12, "'today'" },
	{ PG, "SELECT E'now'", 7, "'now'" },
	{ PG, "SELECT ' now '::timestamp", 7, "'now'" },

	/* look-alikes that must pass */
	{ LITE, "SELECT now_total, total_now, current_dates FROM t", -1, NULL },
	{ PG, "SELECT now_total, nowish(), my_now() FROM t", -1, NULL },
	{ LITE, "-- 'now' and date()\nSELECT 1", -1, NULL },
	{ PG, "/* now() 'today'::date */ SELECT 1", -1, NULL },
	{ LITE, "SELECT date(:partition)", -1, NULL },
	{ LITE, "SELECT datetime(:partition_start, '+1 day')", -1, NULL },
	{ LITE, "SELECT strftime('%Y', :partition)", -1, NULL },
	{ LITE, "SELECT julianday(:partition) - julianday(:partition_start)", -1, NULL },
	{ LITE, "SELECT unixepoch(d), time(d, 'localtime') FROM t", -1, NULL },
	{ LITE, "SELECT 'nowhere', 'now ', 'today'", -1, NULL },
	{ LITE, "SELECT \"now\" FROM t", -1, NULL },
	{ LITE, "SELECT date(\"d\"), strftime('%s', \"now_col\") FROM t", -1, NULL },
	{ LITE, "SELECT \"current_date\", `current_date`, [current_date] FROM t", -1, NULL },
	{ LITE, "SELECT localtimestamp FROM t", -1, NULL },
	{ LITE, "SELECT $$current_date$$", -1, NULL },
	{ PG, "SELECT $$current_date$$, $b$ now() 'now' $b$", -1, NULL },
	{ PG, "SELECT date(:partition), 'epoch'::timestamp, 'today' AS label", -1, NULL },
	{ PG, "SELECT x FROM t WHERE label = 'today' OR label = 'yesterday'", -1, NULL },
	{ PG, "SELECT 'it''s now()', t.now FROM t", -1, NULL },
	{ PG, "SELECT E'\\'current_date'", -1, NULL },
	{ PG, "SELECT :partition::date + 1", -1, NULL },
	{ LITE, "SELECT 'unterminated current_date", -1, NULL },
	{ LITE, "SELECT 1 -- no newline, current_date", -1, NULL },
};

#define NCLOCK (int)(sizeof clock_cases / sizeof clock_cases[0])

/* Each form is found where it is, and each look-alike passes. */
START_TEST(test_wall_clock)
{
	const struct clock_case *c = &clock_cases[_i];
	const char *what = NULL;
	long off;

	off = sqlscan_wall_clock(c->sql, c->d, &what);
	ck_assert_msg(off == c->off, "%s: at %ld, want %ld", c->sql, off,
		      c->off);
	if (c->what != NULL)
		ck_assert_str_eq(what, c->what);
}
END_TEST

/* Suite: tokens, lines, the wall clock. */
static Suite *
sqlscan_suite(void)
{
	Suite *s = suite_create("sqlscan");
	TCase *tc = tcase_create("scan");

	tcase_add_loop_test(tc, test_tokens, 0, NTOK);
	tcase_add_test(tc, test_lines);
	tcase_add_loop_test(tc, test_wall_clock, 0, NCLOCK);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sqlscan_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
