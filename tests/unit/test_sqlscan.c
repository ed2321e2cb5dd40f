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

/* ---------------------------------------------------------------- */
/* The wall-clock scan as it was before it was made linear (it read each
 * SQLite call's arguments ahead: quadratic in the nesting), kept as the
 * reference the linear one must agree with. */

/* A word among the NULL-terminated list, or NULL. */
static const char *
ref_word_in(const struct sqlscan *s, const struct sqlscan_tok *t,
		const char *const *list)
{
	for (size_t i = 0; list[i] != NULL; i++)
		if (sqlscan_is_word(s, t, list[i]))
			return list[i];
	return NULL;
}

/* True when a string or quoted token holds `want` (any case), ignoring
 * blanks around it when `trim` (PostgreSQL's date input does). */
static bool
ref_holds(const struct sqlscan *s, const struct sqlscan_tok *t,
	      const char *want, bool trim)
{
	const char *p = s->sql + t->off;
	size_t n = t->len;

	if (t->kind != SQLSCAN_STRING && t->kind != SQLSCAN_QUOTED)
		return false;
	if (p[0] == 'E' || p[0] == 'e') {
		p++;
		n--;
	}
	if (n < 2)
		return false;
	p++;
	n -= 2;
	while (trim && n > 0 && strchr(" \t\n\r", p[0]) != NULL) {
		p++;
		n--;
	}
	while (trim && n > 0 && strchr(" \t\n\r", p[n - 1]) != NULL)
		n--;
	return n == strlen(want) && strncasecmp(p, want, n) == 0;
}

/* The PostgreSQL special date inputs that read the clock, or NULL. */
static const char *
ref_pg_special(const struct sqlscan *s, const struct sqlscan_tok *t)
{
	static const char *const specials[] = {
		"now", "today", "tomorrow", "yesterday", NULL
	};
	static const char *const spelled[] = {
		"'now'", "'today'", "'tomorrow'", "'yesterday'"
	};

	if (t->kind != SQLSCAN_STRING)
		return NULL;
	for (size_t i = 0; specials[i] != NULL; i++)
		if (ref_holds(s, t, specials[i], true))
			return spelled[i];
	return NULL;
}

/* True for a date or time type name (the word after :: or AS, or
 * before a literal). */
static bool
ref_is_datetype(const struct sqlscan *s, const struct sqlscan_tok *t)
{
	static const char *const types[] = {
		"date", "timestamp", "timestamptz", "time", "timetz", "zone",
		"abstime", NULL
	};

	return ref_word_in(s, t, types) != NULL;
}

static long
ref_wall_clock(const char *sql, enum sqlscan_dialect dialect,
		   const char **what)
{
	static const char *const words[] = {
		"CURRENT_DATE", "CURRENT_TIMESTAMP", "CURRENT_TIME", NULL
	};
	static const char *const pg_words[] = {
		"LOCALTIMESTAMP", "LOCALTIME", NULL
	};
	static const char *const pg_fns[] = {
		"now", "clock_timestamp", "statement_timestamp",
		"transaction_timestamp", "timeofday", NULL
	};
	static const char *const pg_calls[] = {
		"now()", "clock_timestamp()", "statement_timestamp()",
		"transaction_timestamp()", "timeofday()", NULL
	};
	static const char *const lite_fns[] = {
		"date", "time", "datetime", "julianday", "unixepoch", "strftime",
		NULL
	};
	static const char *const lite_calls[] = {
		"date()", "time()", "datetime()", "julianday()", "unixepoch()",
		"strftime() without a time value", NULL
	};
	struct sqlscan s, look;
	struct sqlscan_tok t, n, prev = { SQLSCAN_END, SQLSCAN_END, 0, 0, 0 };
	struct sqlscan_tok prev2 = prev;
	const char *w;
	bool pg = dialect == SQLSCAN_PG;
	size_t i;

	sqlscan_init(&s, sql, dialect);
	for (;; prev2 = prev, prev = t) {
		switch (sqlscan_next_solid(&s, &t)) {
		case SQLSCAN_END:
		case SQLSCAN_UNTERMINATED:
			return -1;
		default:
			break;
		}
		if ((w = ref_word_in(&s, &t, words)) != NULL ||
		    (pg && (w = ref_word_in(&s, &t, pg_words)) != NULL)) {
			*what = w;
			return (long)t.off;
		}
		if (t.kind == SQLSCAN_STRING && ref_holds(&s, &t, "now",
		    false)) {
			*what = "'now'";
			return (long)t.off;
		}
		if (pg && (w = ref_pg_special(&s, &t)) != NULL) {
			/* date 'today', 'today'::date, CAST('today' AS date) */
			look = s;
			sqlscan_next_solid(&look, &n);
			if (ref_is_datetype(&s, &prev) ||
			    (n.kind == SQLSCAN_CAST &&
			     sqlscan_next_solid(&look, &n) == SQLSCAN_WORD &&
			     ref_is_datetype(&s, &n)) ||
			    (sqlscan_is_word(&s, &n, "as") &&
			     sqlscan_is_punct(&s, &prev, '(') &&
			     sqlscan_is_word(&s, &prev2, "cast") &&
			     sqlscan_next_solid(&look, &n) == SQLSCAN_WORD &&
			     ref_is_datetype(&s, &n))) {
				*what = w;
				return (long)t.off;
			}
			continue;
		}
		if (t.kind != SQLSCAN_WORD)
			continue;
		look = s;
		sqlscan_next_solid(&look, &n);
		if (!sqlscan_is_punct(&s, &n, '('))
			continue;
		if (pg) {
			for (i = 0; pg_fns[i] != NULL; i++)
				if (sqlscan_is_word(&s, &t, pg_fns[i])) {
					*what = pg_calls[i];
					return (long)t.off;
				}
			continue;
		}
		for (i = 0; lite_fns[i] != NULL; i++)
			if (sqlscan_is_word(&s, &t, lite_fns[i]))
				break;
		if (lite_fns[i] == NULL)
			continue;
		{
			/* Count the call's arguments up to the time value
			 * (strftime's second, the others' first). */
			size_t want = strcmp(lite_fns[i], "strftime") == 0 ? 1 : 0;
			size_t arg = 0;
			int depth = 0;
			bool empty = true;

			for (;;) {
				enum sqlscan_kind k = sqlscan_next_solid(&look, &n);

				if (k == SQLSCAN_END || k == SQLSCAN_UNTERMINATED)
					return -1;
				if (sqlscan_is_punct(&look, &n, '(')) {
					depth++;
				} else if (sqlscan_is_punct(&look, &n, ')')) {
					if (depth-- == 0)
						break;
				} else if (depth == 0 &&
				    sqlscan_is_punct(&look, &n, ',')) {
					if (arg == want)
						break;
					arg++;
					empty = true;
					continue;
				}
				if (arg == want && depth == 0 && empty &&
				    n.kind == SQLSCAN_QUOTED &&
				    ref_holds(&look, &n, "now", false)) {
					*what = "\"now\"";
					return (long)n.off;
				}
				empty = false;
			}
			if (arg < want || (arg == want && empty)) {
				*what = lite_calls[i];
				return (long)t.off;
			}
		}
	}
}

/* A random SQL-like text of n tokens, biased towards what the scan looks
 * at: the SQLite time functions, parentheses, commas, "now", 'now'. */
static void
random_sql(unsigned *seed, char *out, size_t size, int n)
{
	static const char *const toks[] = {
		"date", "strftime", "time", "datetime", "julianday", "unixepoch",
		"(", "(", "(", ")", ")", ")", ",", ",", "\"now\"", "\"now\"",
		"'now'", "'%s'", "x", "1", "CURRENT_DATE", "-- c\n", "/* c */",
		":partition", "\"d\"", "now", "'today'", "::", "date", "AS",
		"CAST", "timestamp",
	};
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		const char *t = toks[rand_r(seed) % (sizeof toks / sizeof toks[0])];

		if (len + strlen(t) + 2 >= size)
			break;
		len += (size_t)snprintf(out + len, size - len, "%s%s",
					rand_r(seed) % 3 == 0 ? " " : "", t);
	}
}

/* The linear scan finds what the reference finds, where it finds it, on
 * many random texts in both dialects. */
START_TEST(test_wall_clock_same)
{
	unsigned seed = 20261130;
	char sql[512];
	int found = 0;

	for (int i = 0; i < 50000; i++) {
		enum sqlscan_dialect d = i % 2 ? SQLSCAN_PG : SQLSCAN_SQLITE;
		const char *w1 = NULL, *w2 = NULL;
		long a, b;

		random_sql(&seed, sql, sizeof sql, 1 + i % 24);
		a = ref_wall_clock(sql, d, &w1);
		b = sqlscan_wall_clock(sql, d, &w2);
		ck_assert_msg(a == b && (a < 0 || strcmp(w1, w2) == 0),
			      "%s [%s]: reference %ld %s, linear %ld %s", sql,
			      d == SQLSCAN_PG ? "pg" : "sqlite", a, a < 0 ? "" : w1,
			      b, b < 0 ? "" : w2);
		found += a >= 0;
	}
	/* the texts exercise both answers */
	ck_assert_int_gt(found, 5000);
	ck_assert_int_lt(found, 45000);
}
END_TEST

/* Deep nesting: 16,000 calls inside each other (the reference took 3.6 s
 * on them, the scan now reads each token once): none reads the clock when
 * the innermost has a value; the innermost does when it has none; "now"
 * given to the innermost is found where it is. */
START_TEST(test_wall_clock_deep)
{
	enum { N = 16000 };
	static const char *const inner[] = { ":partition", "", "\"now\"" };
	const long innermost = 7 + 5 * (N - 1); /* "SELECT " then "date(" */
	static const long want_off[] = { -1, 0, 5 }; /* from the innermost */
	static const char *const want_what[] = { NULL, "date()", "\"now\"" };
	size_t size = 7 + 15 * N + 64; /* room for the strftime text, the longer */
	char *sql = malloc(size);
	const char *what;

	for (size_t k = 0; k < 3; k++) {
		size_t len = 0;
		long off;

		len += (size_t)snprintf(sql + len, size - len, "SELECT ");
		for (int i = 0; i < N; i++)
			len += (size_t)snprintf(sql + len, size - len, "date(");
		len += (size_t)snprintf(sql + len, size - len, "%s", inner[k]);
		for (int i = 0; i < N; i++)
			sql[len++] = ')';
		sql[len] = '\0';
		what = NULL;
		off = sqlscan_wall_clock(sql, SQLSCAN_SQLITE, &what);
		ck_assert_int_eq(off, want_off[k] < 0 ? -1 : innermost + want_off[k]);
		if (want_what[k] != NULL)
			ck_assert_str_eq(what, want_what[k]);
	}
	/* strftime inside strftime: each outer one has its time value (the
	 * next call), the innermost has none */
	{
		size_t len = (size_t)snprintf(sql, size, "SELECT ");

		for (int i = 0; i < N / 2 - 1; i++)
			len += (size_t)snprintf(sql + len, size - len,
						"strftime('%%s',");
		len += (size_t)snprintf(sql + len, size - len, "strftime('%%s')");
		for (int i = 0; i < N / 2 - 1; i++)
			sql[len++] = ')';
		sql[len] = '\0';
		ck_assert_int_eq(sqlscan_wall_clock(sql, SQLSCAN_SQLITE, &what),
				 7 + 14 * (N / 2 - 1));
		ck_assert_str_eq(what, "strftime() without a time value");
	}
	free(sql);
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
	tcase_add_test(tc, test_wall_clock_same);
	tcase_add_test(tc, test_wall_clock_deep);
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
