/*
 * fuzz_sqlscan.c - libFuzzer target: the SQL scanner and its guards,
 * sqlscan_next(), sqlscan_wall_clock() and sqlscan_txn(), in both
 * dialects.
 *
 * Invariants (FUZZ_CHECK traps when one breaks), for each dialect:
 *  - the tokens cover the text exactly, in order, each at least one byte,
 *    each on the line its offset says; an unterminated quote or comment
 *    is the last token; then END for ever;
 *  - the wall-clock check answers -1 or the offset of a token's first
 *    byte, with a spelling for the message;
 *  - a statement in front ("SELECT 1;\n") moves the answer by its length
 *    and changes nothing else;
 *  - the whole text as one string literal ('' doubled) reads no clock,
 *    unless the text is "now" itself;
 *  - the transaction check answers -1 or the offset of a token's first
 *    byte, with a statement number and a spelling; the statement in front
 *    moves the offset by its length and the number by one; the text as
 *    one string literal controls nothing;
 *  - sqltables (also in ClickHouse's dialect): every table reported lies
 *    at a token's first byte and inside the text, with a name and a
 *    statement number; the statement in front moves each by its length
 *    and its statement by one, names unchanged; the text as one string
 *    literal names no table.
 */
#include "fuzz.h"

#include <strings.h>

#include "sqlscan.h"
#include "sqltables.h"

#define FUZZ_SQLSCAN_PREFIX "SELECT 1;\n"

/* Scan the whole text; mark in `starts` where tokens begin. */
static void
fuzz_sqlscan_tokens(const char *sql, enum sqlscan_dialect d, char *starts)
{
	struct sqlscan s;
	struct sqlscan_tok t;
	size_t len = strlen(sql), off = 0, steps = 0;
	int line = 1, last_unterminated = 0;
	enum sqlscan_kind k;

	sqlscan_init(&s, sql, d);
	while ((k = sqlscan_next(&s, &t)) != SQLSCAN_END) {
		FUZZ_CHECK(!last_unterminated);
		FUZZ_CHECK(k == t.kind && k <= SQLSCAN_UNTERMINATED);
		FUZZ_CHECK(t.off == off && t.len >= 1 && t.off + t.len <= len);
		FUZZ_CHECK(t.line == line);
		FUZZ_CHECK(++steps <= len);
		if (k == SQLSCAN_UNTERMINATED) {
			FUZZ_CHECK(t.open == SQLSCAN_STRING ||
			    t.open == SQLSCAN_QUOTED || t.open == SQLSCAN_DOLLAR ||
			    t.open == SQLSCAN_COMMENT);
			last_unterminated = 1;
		}
		starts[off] = 1;
		for (size_t i = 0; i < t.len; i++)
			if (sql[off + i] == '\n')
				line++;
		off += t.len;
	}
	FUZZ_CHECK(off == len && t.off == len && t.len == 0);
	FUZZ_CHECK(sqlscan_next(&s, &t) == SQLSCAN_END);
}

/* Check sqltables' answers on sql (starts: where its tokens begin), on
 * moved (the prefix, then sql) and on quoted (sql as a literal, or
 * NULL). */
static void
fuzz_sqltables(const char *sql, const char *moved, const char *quoted,
	       enum sqlscan_dialect d, const char *starts)
{
	struct sqltables t, t2;
	size_t len = strlen(sql), i, k = sizeof FUZZ_SQLSCAN_PREFIX - 1;

	sqltables_scan(sql, d, &t);
	for (i = 0; i < t.n; i++)
		FUZZ_CHECK(t.refs[i].off < len && starts[t.refs[i].off] &&
		    t.refs[i].len > 0 && t.refs[i].off + t.refs[i].len <= len &&
		    t.refs[i].name != NULL && t.refs[i].stmt >= 1);
	sqltables_scan(moved, d, &t2);
	FUZZ_CHECK(t2.n == t.n);
	for (i = 0; i < t.n; i++)
		FUZZ_CHECK(t2.refs[i].off == t.refs[i].off + k &&
		    t2.refs[i].stmt == t.refs[i].stmt + 1 &&
		    t2.refs[i].use == t.refs[i].use &&
		    strcmp(t2.refs[i].name, t.refs[i].name) == 0);
	sqltables_free(&t2);
	sqltables_free(&t);
	if (quoted != NULL) {
		sqltables_scan(quoted, d, &t);
		FUZZ_CHECK(t.n == 0);
		sqltables_free(&t);
	}
}

/* ClickHouse's dialect: tokens and sqltables. */
static void
fuzz_sqlscan_ch(const char *sql)
{
	size_t len = strlen(sql);
	char *starts = calloc(len + 1, 1), *moved;

	FUZZ_CHECK(starts != NULL);
	fuzz_sqlscan_tokens(sql, SQLSCAN_CH, starts);
	moved = malloc(sizeof FUZZ_SQLSCAN_PREFIX + len);
	FUZZ_CHECK(moved != NULL);
	memcpy(moved, FUZZ_SQLSCAN_PREFIX, sizeof FUZZ_SQLSCAN_PREFIX - 1);
	memcpy(moved + sizeof FUZZ_SQLSCAN_PREFIX - 1, sql, len + 1);
	fuzz_sqltables(sql, moved, NULL, SQLSCAN_CH, starts);
	free(moved);
	free(starts);
}

/* Check the wall-clock answers for one dialect. */
static void
fuzz_sqlscan_dialect(const char *sql, enum sqlscan_dialect d)
{
	size_t len = strlen(sql), i, n;
	char *starts = calloc(len + 1, 1), *moved, *quoted;
	const char *what = NULL, *what2 = NULL;
	struct sqlscan_txn tx, tx2;
	long at, at2;

	FUZZ_CHECK(starts != NULL);
	fuzz_sqlscan_tokens(sql, d, starts);
	at = sqlscan_wall_clock(sql, d, &what);
	FUZZ_CHECK(at >= -1 && at < (long)len);
	if (at >= 0)
		FUZZ_CHECK(starts[at] && what != NULL && what[0] != '\0');

	moved = malloc(sizeof FUZZ_SQLSCAN_PREFIX + len);
	FUZZ_CHECK(moved != NULL);
	memcpy(moved, FUZZ_SQLSCAN_PREFIX, sizeof FUZZ_SQLSCAN_PREFIX - 1);
	memcpy(moved + sizeof FUZZ_SQLSCAN_PREFIX - 1, sql, len + 1);
	at2 = sqlscan_wall_clock(moved, d, &what2);
	if (at == -1)
		FUZZ_CHECK(at2 == -1);
	else
		FUZZ_CHECK(at2 == at + (long)sizeof FUZZ_SQLSCAN_PREFIX - 1 &&
		    strcmp(what, what2) == 0);
	at = sqlscan_txn(sql, d, 0, &tx);
	FUZZ_CHECK(at >= -1 && at < (long)len && tx.off == at);
	if (at >= 0)
		FUZZ_CHECK(starts[at] && tx.stmt >= 1 && tx.what != NULL &&
		    tx.what[0] != '\0');
	at2 = sqlscan_txn(moved, d, 0, &tx2);
	if (at == -1)
		FUZZ_CHECK(at2 == -1);
	else
		FUZZ_CHECK(at2 == at + (long)sizeof FUZZ_SQLSCAN_PREFIX - 1 &&
		    tx2.stmt == tx.stmt + 1 && strcmp(tx.what, tx2.what) == 0);

	quoted = malloc(2 * len + 3);
	FUZZ_CHECK(quoted != NULL);
	n = 0;
	quoted[n++] = '\'';
	for (i = 0; i < len; i++) {
		if (sql[i] == '\'')
			quoted[n++] = '\'';
		quoted[n++] = sql[i];
	}
	quoted[n++] = '\'';
	quoted[n] = '\0';
	if (strcasecmp(sql, "now") != 0)
		FUZZ_CHECK(sqlscan_wall_clock(quoted, d, &what2) == -1);
	FUZZ_CHECK(sqlscan_txn(quoted, d, 0, &tx) == -1);
	fuzz_sqltables(sql, moved, quoted, d, starts);
	free(moved);
	free(quoted);
	free(starts);
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sql = fuzz_strndup(data, size);

	fuzz_sqlscan_dialect(sql, SQLSCAN_SQLITE);
	fuzz_sqlscan_dialect(sql, SQLSCAN_PG);
	fuzz_sqlscan_ch(sql);
	free(sql);
	return 0;
}
