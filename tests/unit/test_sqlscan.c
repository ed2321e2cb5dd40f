/*
 * test_sqlscan.c - the one SQL lexer (sqlscan.c): the tokens of both
 * dialects, and the guards on them: every form that reads the clock, every
 * statement that controls the transaction, and the look-alikes that must
 * pass.
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

/* ------------------------------------------------------------------ */
/* Transaction control                                                 */
/* ------------------------------------------------------------------ */

#define EXPR SQLSCAN_TXN_EXPR
#define INS "INSERT INTO t VALUES (:partition, 'c');\n"

/* SQL, and the statement that controls the transaction: where it starts
 * (the first occurrence of `at` in the text; NULL: none), its number and
 * its spelling. */
struct txn_case {
	enum sqlscan_dialect d;
	int flags;
	const char *sql;
	const char *at;
	int stmt;
	const char *what;
};

static const struct txn_case txn_cases[] = {
	/* both dialects: what ends or begins a transaction */
	{ LITE, 0, INS "COMMIT;", "COMMIT", 2, "COMMIT" },
	{ PG, 0, INS "COMMIT;", "COMMIT", 2, "COMMIT" },
	{ LITE, 0, "commit transaction", "commit", 1, "COMMIT" },
	{ PG, 0, "COMMIT WORK", "COMMIT", 1, "COMMIT" },
	{ PG, 0, INS "COMMIT AND CHAIN", "COMMIT", 2, "COMMIT AND CHAIN" },
	{ PG, 0, "COMMIT AND NO CHAIN", "COMMIT", 1, "COMMIT" },
	{ PG, 0, "ROLLBACK AND CHAIN", "ROLLBACK", 1, "ROLLBACK AND CHAIN" },
	{ LITE, 0, "ROLLBACK AND CHAIN", "ROLLBACK", 1, "ROLLBACK AND CHAIN" },
	{ LITE, 0, INS "END", "END", 2, "END" },
	{ PG, 0, INS "end transaction;", "end", 2, "END" },
	{ PG, 0, "END AND CHAIN", "END", 1, "END AND CHAIN" },
	{ LITE, 0, INS "ROLLBACK", "ROLLBACK", 2, "ROLLBACK" },
	{ PG, 0, INS "ROLLBACK WORK", "ROLLBACK", 2, "ROLLBACK" },
	{ PG, 0, "ABORT", "ABORT", 1, "ABORT" },
	{ LITE, 0, "ABORT", "ABORT", 1, "ABORT" },
	{ LITE, 0, "BEGIN IMMEDIATE; " INS, "BEGIN", 1, "BEGIN" },
	{ PG, 0, INS "BEGIN ISOLATION LEVEL SERIALIZABLE", "BEGIN", 2, "BEGIN" },
	{ PG, 0, INS "START TRANSACTION", "START", 2, "START TRANSACTION" },
	{ LITE, 0, "START TRANSACTION", "START", 1, "START TRANSACTION" },
	{ PG, 0, INS "PREPARE TRANSACTION 'x'", "PREPARE", 2, "PREPARE TRANSACTION" },
	{ PG, 0, "COMMIT PREPARED 'x'", "COMMIT", 1, "COMMIT PREPARED" },
	{ PG, 0, "ROLLBACK PREPARED 'x'", "ROLLBACK", 1, "ROLLBACK PREPARED" },
	/* comments, blanks and empty statements in front; statements counted
	 * from 1, empty ones skipped */
	{ LITE, 0, ";; -- x\n/* y */ SELECT 1;;\n  /* z */ CoMmIt", "CoMmIt", 2, "COMMIT" },
	{ PG, 0, "/* a /* nested */ */ SELECT 1 ; -- c\nrollback", "rollback", 2, "ROLLBACK" },
	/* SQLite only */
	{ LITE, 0, INS "ATTACH DATABASE 'x.db' AS x", "ATTACH", 2, "ATTACH" },
	{ LITE, 0, "DETACH x", "DETACH", 1, "DETACH" },
	{ LITE, 0, INS "VACUUM", "VACUUM", 2, "VACUUM" },
	{ LITE, 0, "VACUUM INTO 'copy.db'", "VACUUM", 1, "VACUUM" },
	{ LITE, 0, "EXPLAIN COMMIT", "EXPLAIN", 1, "COMMIT" },
	{ LITE, 0, "EXPLAIN QUERY PLAN BEGIN", "EXPLAIN", 1, "BEGIN" },
	{ LITE, 0, INS "PRAGMA journal_mode = WAL", "PRAGMA", 2, "PRAGMA journal_mode" },
	{ LITE, 0, "PRAGMA main.journal_mode=DELETE", "PRAGMA", 1, "PRAGMA journal_mode" },
	{ LITE, 0, "PRAGMA \"main\" . \"Locking_Mode\" = EXCLUSIVE", "PRAGMA", 1, "PRAGMA locking_mode" },
	{ LITE, 0, "PRAGMA 'synchronous' = OFF", "PRAGMA", 1, "PRAGMA synchronous" },
	{ LITE, 0, "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA", 1, "PRAGMA wal_checkpoint" },
	{ LITE, 0, "PRAGMA wal_autocheckpoint = 0", "PRAGMA", 1, "PRAGMA wal_autocheckpoint" },
	{ LITE, 0, "PRAGMA busy_timeout = 10", "PRAGMA", 1, "PRAGMA busy_timeout" },
	{ LITE, 0, "PRAGMA query_only = 1", "PRAGMA", 1, "PRAGMA query_only" },
	{ LITE, 0, "PRAGMA read_uncommitted = 1", "PRAGMA", 1, "PRAGMA read_uncommitted" },
	{ LITE, 0, "PRAGMA writable_schema = ON", "PRAGMA", 1, "PRAGMA writable_schema" },
	{ LITE, 0, "PRAGMA schema_version = 7", "PRAGMA", 1, "PRAGMA schema_version" },
	{ LITE, 0, "PRAGMA auto_vacuum = FULL", "PRAGMA", 1, "PRAGMA auto_vacuum" },
	{ LITE, 0, "PRAGMA page_size = 8192", "PRAGMA", 1, "PRAGMA page_size" },
	{ LITE, 0, "PRAGMA temp_store = MEMORY", "PRAGMA", 1, "PRAGMA temp_store" },
	{ LITE, 0, "PRAGMA temp_store_directory = '/tmp'", "PRAGMA", 1, "PRAGMA temp_store_directory" },
	/* PostgreSQL only */
	{ PG, 0, INS "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET", 2, "SET TRANSACTION" },
	{ PG, 0, "SET LOCAL TRANSACTION READ ONLY", "SET", 1, "SET TRANSACTION" },
	{ PG, 0, "SET SESSION TRANSACTION READ ONLY", "SET", 1, "SET TRANSACTION" },
	{ PG, 0, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "SET", 1, "SET SESSION CHARACTERISTICS" },
	{ PG, 0, INS "DO $$BEGIN INSERT INTO t VALUES (1); COMMIT; END$$", "DO", 2, "COMMIT in a DO block" },
	{ PG, 0, "DO LANGUAGE plpgsql $b$ BEGIN ROLLBACK; END $b$", "DO", 1, "ROLLBACK in a DO block" },
	{ PG, 0, "DO 'BEGIN PERFORM 1; COMMIT; END' LANGUAGE plpgsql", "DO", 1, "COMMIT in a DO block" },
	{ PG, 0, "DO E'BEGIN RAISE NOTICE \\'x\\'; COMMIT; END'", "DO", 1, "COMMIT in a DO block" },
	/* a metric's expression: only what follows its first ';' */
	{ LITE, EXPR, "SUM(x) FROM t; COMMIT; SELECT (1", "COMMIT", 2, "COMMIT" },
	{ PG, EXPR, "count(*) FROM t; ROLLBACK", "ROLLBACK", 2, "ROLLBACK" },
	/* SQLite cuts at every ';', even inside parentheses */
	{ LITE, 0, "SELECT (1; COMMIT)", "COMMIT", 2, "COMMIT" },
	/* after a trigger's body */
	{ LITE, 0, "CREATE TRIGGER tr AFTER INSERT ON t BEGIN\n"
	  "  UPDATE t SET a = CASE WHEN new.a THEN 1 END;\n"
	  "  INSERT INTO log VALUES (1);\nEND;\nCOMMIT", "COMMIT", 2, "COMMIT" },

	/* allowed: savepoints nest inside the run's transaction */
	{ LITE, 0, "SAVEPOINT a; " INS "ROLLBACK TO a; ROLLBACK TRANSACTION TO SAVEPOINT a; RELEASE a", NULL, 0, NULL },
	{ PG, 0, "SAVEPOINT a; " INS "ROLLBACK TO SAVEPOINT a; ROLLBACK WORK TO a; RELEASE SAVEPOINT a", NULL, 0, NULL },
	/* allowed: CALL (PostgreSQL refuses a procedure's COMMIT in a
	 * transaction block), DO without COMMIT or ROLLBACK, plain SET */
	{ PG, 0, "CALL load_sales(:partition)", NULL, 0, NULL },
	{ PG, 0, "DO $$BEGIN RAISE NOTICE 'commit'; END$$", NULL, 0, NULL },
	{ PG, 0, "DO 'BEGIN RAISE NOTICE ''rollback''; END'", NULL, 0, NULL },
	{ PG, 0, "SET LOCAL work_mem = '64MB'; SET search_path TO etl", NULL, 0, NULL },
	/* allowed: other PRAGMAs, and the words elsewhere than in front */
	{ LITE, 0, "PRAGMA defer_foreign_keys = ON; PRAGMA table_info(t); PRAGMA main.user_version", NULL, 0, NULL },
	{ LITE, 0, "SELECT commit, \"end\", [begin] FROM t WHERE rollback = 1", NULL, 0, NULL },
	{ PG, 0, "SELECT commit, \"end\" FROM t; UPDATE t SET abort = 1", NULL, 0, NULL },
	{ LITE, 0, "SELECT 'COMMIT'; -- COMMIT\n/* ROLLBACK */ SELECT 1", NULL, 0, NULL },
	{ PG, 0, "SELECT $$; COMMIT; $$, $t$ROLLBACK$t$", NULL, 0, NULL },
	{ LITE, 0, "SELECT `x; COMMIT`, [y; ROLLBACK]", NULL, 0, NULL },
	{ PG, 0, "PREPARE q AS SELECT 1; START x", NULL, 0, NULL },
	{ PG, 0, "VACUUM t; ATTACH x; PRAGMA journal_mode", NULL, 0, NULL },
	{ LITE, 0, "SET TRANSACTION READ ONLY; DO 'COMMIT'", NULL, 0, NULL },
	/* inside a trigger's body, END closes the body */
	{ LITE, 0, "CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN\n"
	  "  SELECT CASE WHEN 1 THEN RAISE(ABORT, 'x') END;\n"
	  "  DELETE FROM u;\nEND; SELECT 1", NULL, 0, NULL },
	/* PostgreSQL does not cut inside parentheses (pgsql.c) */
	{ PG, 0, "CREATE RULE r AS ON INSERT TO t DO ALSO (NOTIFY a; COMMIT)", NULL, 0, NULL },
	{ PG, 0, "CREATE FUNCTION f() RETURNS int LANGUAGE sql\n"
	  "BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 2 END; END; SELECT f()", NULL, 0, NULL },
	/* a metric's expression itself is not judged */
	{ LITE, EXPR, "commit", NULL, 0, NULL },
	{ PG, EXPR, "sum(x) FILTER (WHERE y)", NULL, 0, NULL },
	/* an unterminated quote: judged up to there */
	{ LITE, 0, "SELECT 'open; COMMIT", NULL, 0, NULL },
	{ PG, 0, "SELECT 1; ROLLBACK; SELECT $x$ open", "ROLLBACK", 2, "ROLLBACK" },
};

#define NTXN (int)(sizeof txn_cases / sizeof txn_cases[0])

/* Each statement that controls the transaction is found, where it starts,
 * with its number and spelling; each allowed text passes. */
START_TEST(test_txn)
{
	const struct txn_case *c = &txn_cases[_i];
	struct sqlscan_txn t;
	long off = sqlscan_txn(c->sql, c->d, c->flags, &t);
	long want = c->at != NULL ? (long)(strstr(c->sql, c->at) - c->sql) : -1;

	ck_assert_msg(off == want && t.off == off,
		      "%s [%s]: offset %ld, want %ld (%s)", c->sql,
		      c->d == PG ? "pg" : "sqlite", off, want,
		      t.what != NULL ? t.what : "none");
	if (c->at == NULL) {
		ck_assert_ptr_null(t.what);
		ck_assert_int_eq(t.stmt, 0);
		return;
	}
	ck_assert_str_eq(t.what, c->what);
	ck_assert_int_eq(t.stmt, c->stmt);
}
END_TEST

/* The PRAGMA table answers any case, by length, and nothing else. */
START_TEST(test_txn_pragma)
{
	ck_assert_str_eq(sqlscan_txn_pragma("JOURNAL_MODE", 12),
			 "PRAGMA journal_mode");
	ck_assert_str_eq(sqlscan_txn_pragma("wal_checkpoint(", 14),
			 "PRAGMA wal_checkpoint");
	ck_assert_ptr_null(sqlscan_txn_pragma("journal_mod", 11));
	ck_assert_ptr_null(sqlscan_txn_pragma("table_info", 10));
	ck_assert_ptr_null(sqlscan_txn_pragma("", 0));
}
END_TEST

/* Suite: tokens, lines, the wall clock, transaction control. */
/* Statement N of a script, as the drivers number them (logs). */
START_TEST(test_statement)
{
	const char *sql = "-- head\nDELETE FROM t WHERE dt = :partition;\n"
			  "\n;  INSERT INTO t SELECT ';' FROM s ; /* c; */\n"
			  "SELECT 1";
	size_t off = 0, len = 0;
	int line = 0;

	ck_assert(sqlscan_statement(sql, SQLSCAN_SQLITE, 1, &off, &len, &line));
	ck_assert_int_eq(line, 2);
	ck_assert(strncmp(sql + off, "DELETE FROM t WHERE dt = :partition",
			  len) == 0 && len == 35);
	ck_assert(sqlscan_statement(sql, SQLSCAN_SQLITE, 2, &off, &len, &line));
	ck_assert_int_eq(line, 4);
	ck_assert(strncmp(sql + off, "INSERT INTO t SELECT ';' FROM s", len)
		  == 0 && len == 31);
	ck_assert(sqlscan_statement(sql, SQLSCAN_SQLITE, 3, &off, &len, &line));
	ck_assert_int_eq(line, 5);
	ck_assert_uint_eq(len, 8);
	ck_assert(!sqlscan_statement(sql, SQLSCAN_SQLITE, 4, &off, &len, &line));
	ck_assert(!sqlscan_statement(sql, SQLSCAN_SQLITE, 0, &off, &len, &line));
	ck_assert(!sqlscan_statement("  ;; ", SQLSCAN_PG, 1, &off, &len, &line));
}
END_TEST

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
	tcase_add_loop_test(tc, test_txn, 0, NTXN);
	tcase_add_test(tc, test_txn_pragma);
	tcase_add_test(tc, test_statement);
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
