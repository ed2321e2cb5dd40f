/*
 * fuzz_pgsql.c - libFuzzer target: the PostgreSQL statement splitter and
 * parameter translator, pgsql_parse() and pgsql_values().
 *
 * Invariants (FUZZ_CHECK traps when one breaks):
 *  - a refused script gets no statements, the number of the statement
 *    where the error is, and one line of error;
 *  - an accepted one has non-empty statements without trailing blanks,
 *    each with distinct parameter names that are words ([A-Za-z_]
 *    then [A-Za-z0-9_]);
 *  - the split round-trips: each statement with its $n turned back into
 *    :name, joined by "\n;\n", splits into the same statements (but for
 *    the blanks in front) with the same names.  A $n that is not a token
 *    of its own, say one glued to the word before it, does not come back:
 *    PostgreSQL would not read it as a parameter either;
 *  - pgsql_values() binds every name when given them all, and refuses
 *    with one line when one is missing.
 */
#include "fuzz.h"

#include <ctype.h>

#include "pgsql.h"
#include "sqlscan.h"

/* A growable string. */
struct fuzz_pgsql_str {
	char *p;
	size_t len, cap;
};

/* Append n bytes to b. */
static void
fuzz_pgsql_add(struct fuzz_pgsql_str *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		FUZZ_CHECK(b->p != NULL);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* True when s is a parameter name: a word of ASCII letters, digits, _. */
static int
fuzz_pgsql_name_ok(const char *s)
{
	size_t i;

	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return 0;
	for (i = 1; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* s past its leading blanks (a statement keeps those it began with). */
static const char *
fuzz_pgsql_skip_blanks(const char *s)
{
	return s + strspn(s, " \t\r\n");
}

/* Statement st with each $n token turned back into :name, into b; a UTC
 * bound's ($n::timestamp AT TIME ZONE 'UTC') back into its :name. */
static void
fuzz_pgsql_unbind(const struct pgsql_stmt *st, struct fuzz_pgsql_str *b)
{
	static const char utc_tail[] = "::timestamp AT TIME ZONE 'UTC')";
	struct sqlscan sc;
	struct sqlscan_tok t;
	const char *p, *name;
	unsigned long k;
	bool skip = false;

	sqlscan_init(&sc, st->sql, SQLSCAN_PG);
	while (sqlscan_next(&sc, &t) != SQLSCAN_END) {
		p = st->sql + t.off;
		if (skip) {
			/* the wrapper's tail, up to its ')' */
			skip = !(t.len == 1 && p[0] == ')');
			continue;
		}
		if (t.kind == SQLSCAN_PARAM && p[0] == '$') {
			k = strtoul(p + 1, NULL, 10);
			FUZZ_CHECK(k >= 1 && k <= st->nnames);
			name = st->names[k - 1];
			if (pgsql_utc_bound(name, strlen(name))) {
				/* the '(' in front is the wrapper's */
				FUZZ_CHECK(b->len >= 1 && b->p[b->len - 1] == '(');
				FUZZ_CHECK(strncmp(p + t.len, utc_tail,
				    sizeof utc_tail - 1) == 0);
				b->len--;
				skip = true;
			}
			fuzz_pgsql_add(b, ":", 1);
			fuzz_pgsql_add(b, name, strlen(name));
			continue;
		}
		fuzz_pgsql_add(b, p, t.len);
	}
}

/* Check one accepted statement. */
static void
fuzz_pgsql_stmt(const struct pgsql_stmt *st)
{
	struct wh_param *params;
	const char **values;
	struct err err;
	size_t len = strlen(st->sql), i, k;

	FUZZ_CHECK(len > 0);
	FUZZ_CHECK(strchr(" \t\r\n", st->sql[len - 1]) == NULL);
	FUZZ_CHECK(st->line >= 1);
	params = calloc(st->nnames + 1, sizeof *params);
	values = calloc(st->nnames + 1, sizeof *values);
	FUZZ_CHECK(params != NULL && values != NULL);
	for (k = 0; k < st->nnames; k++) {
		FUZZ_CHECK(fuzz_pgsql_name_ok(st->names[k]));
		for (i = 0; i < k; i++)
			FUZZ_CHECK(strcmp(st->names[i], st->names[k]) != 0);
		/* given in reverse order: lookup is by name */
		params[st->nnames - 1 - k].name = st->names[k];
		params[st->nnames - 1 - k].value = st->names[k];
	}
	FUZZ_CHECK(pgsql_values(st, params, st->nnames, values, &err) == 0);
	for (k = 0; k < st->nnames; k++)
		FUZZ_CHECK(values[k] == st->names[k]);
	if (st->nnames > 0) {
		FUZZ_CHECK(pgsql_values(st, params + 1, st->nnames - 1, values,
		    &err) == -1);
		FUZZ_CHECK(fuzz_one_line(err.msg));
	}
	free(params);
	free(values);
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pgsql_script s, again;
	struct fuzz_pgsql_str joined = { NULL, 0, 0 };
	struct err err;
	char *sql = fuzz_strndup(data, size);
	size_t i, k;

	memset(&err, 0, sizeof err);
	if (pgsql_parse(sql, &s, &err) == -1) {
		FUZZ_CHECK(s.stmts == NULL && s.n >= 1);
		FUZZ_CHECK(err.code == EXIT_BAD_INPUT);
		FUZZ_CHECK(fuzz_one_line(err.msg));
		pgsql_script_free(&s);
		free(sql);
		return 0;
	}
	fuzz_pgsql_add(&joined, "", 0);
	for (i = 0; i < s.n; i++) {
		fuzz_pgsql_stmt(&s.stmts[i]);
		if (i > 0)
			fuzz_pgsql_add(&joined, "\n;\n", 3);
		fuzz_pgsql_unbind(&s.stmts[i], &joined);
	}
	FUZZ_CHECK(pgsql_parse(joined.p, &again, &err) == 0);
	FUZZ_CHECK(again.n == s.n);
	for (i = 0; i < s.n; i++) {
		/* the separator's newline comes in front of each statement */
		FUZZ_CHECK(strcmp(fuzz_pgsql_skip_blanks(again.stmts[i].sql),
		    fuzz_pgsql_skip_blanks(s.stmts[i].sql)) == 0);
		FUZZ_CHECK(again.stmts[i].nnames == s.stmts[i].nnames);
		for (k = 0; k < s.stmts[i].nnames; k++)
			FUZZ_CHECK(strcmp(again.stmts[i].names[k],
			    s.stmts[i].names[k]) == 0);
	}
	pgsql_script_free(&again);
	pgsql_script_free(&s);
	free(joined.p);
	free(sql);
	return 0;
}
