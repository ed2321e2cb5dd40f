/*
 * pgsql.h - PostgreSQL SQL text for the libpq driver: split a job's script
 * into statements and turn its named parameters into positional ones.
 *
 * Pure (no libpq, no I/O): wh_pg.c uses it and the unit tests drive it.
 *
 * The scanner knows just enough of PostgreSQL's lexer to find the places
 * where `;` ends a statement and `:name` names a parameter, and to leave
 * everything else byte for byte: string literals ('...' with '' escapes;
 * E'...' with backslash escapes too), quoted identifiers ("..."),
 * dollar-quoted bodies ($$...$$, $tag$...$tag$), -- comments and nested
 * C-style comments, and :: casts.  A `;` inside parentheses does not split
 * (CREATE RULE ... DO (a; b)).  `:name` (a letter or _ after the colon)
 * becomes $1, $2, ... in the order names first appear; a name used twice
 * is the same $n.  Positional $1 in the text is refused: it would collide
 * with the numbering.  Assumes standard_conforming_strings = on (the
 * default since PostgreSQL 9.1).  Not understood: SQL-standard function
 * bodies (BEGIN ATOMIC ... END) whose statements end in `;` outside any
 * quote; write those with a dollar-quoted body.
 */
#ifndef BACKFILLD_PGSQL_H
#define BACKFILLD_PGSQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "sqlparam.h"

/* One statement of a script, ready for PQexecParams. */
struct pgsql_stmt {
	char *sql;     /* the statement, :name as $n, without its ';' */
	char **names;  /* names[k] (without ':') is bound to $k+1 */
	size_t nnames;
	int line;      /* line of its first token in the script, from 1 */
};

/* A whole script: its non-empty statements in order. */
struct pgsql_script {
	struct pgsql_stmt *stmts;
	size_t n;
};

/*
 * Split `sql` into statements and translate their parameters.  Statements
 * that hold only blanks and comments are left out.  On error returns -1
 * with a one-line message ("unterminated quoted string starting at line
 * 3"), out->stmts NULL and out->n the number (from 1) of the statement
 * where the error is.
 */
int pgsql_parse(const char *sql, struct pgsql_script *out, struct err *err);

/* Free what pgsql_parse filled (a zeroed or failed script is fine). */
void pgsql_script_free(struct pgsql_script *s);
/* Is name[0..n) (without its ':') one of the two UTC bounds, which
 * pgsql_parse binds as ($N::timestamp AT TIME ZONE 'UTC'), a timestamptz
 * whatever the session's TimeZone? */
bool pgsql_utc_bound(const char *name, size_t n);

/*
 * values[k] = the value of st->names[k] in params (NULL binds NULL).  A
 * name not in params is an error: "parameter :x has no value (known:
 * :partition, ...)".  values holds st->nnames entries.
 */
int pgsql_values(const struct pgsql_stmt *st, const struct wh_param *params,
		 size_t nparams, const char **values, struct err *err);

/*
 * A one-dimensional array literal ("{1,2}", "{\"a\",NULL}") being built
 * as the text of one parameter bound to bigint[], text[], boolean[]...:
 * how the state store sends many rows in one statement (unnest).  Text
 * elements are always quoted, so "NULL" stays a string; NULL (a null
 * pointer) is the SQL NULL.  Zeroed is empty; pgsql_array_end closes it
 * and returns the literal ("{}" when empty), valid until
 * pgsql_array_free.
 */
struct pgsql_buf {
	char *p;
	size_t len, cap;
};

/* Append n bytes to b (kept NUL-terminated). */
void pgsql_buf_add(struct pgsql_buf *b, const char *s, size_t n);
/* Append parts[0..n) with sep between them ("" when n is 0). */
void pgsql_buf_join(struct pgsql_buf *b, const char *const *parts, size_t n,
		    char sep);

struct pgsql_array {
	struct pgsql_buf b;
	size_t n; /* elements */
};

void pgsql_array_text(struct pgsql_array *a, const char *s);
void pgsql_array_int(struct pgsql_array *a, int64_t v);
void pgsql_array_bool(struct pgsql_array *a, bool v);
const char *pgsql_array_end(struct pgsql_array *a);
void pgsql_array_free(struct pgsql_array *a);

/*
 * The database a libpq connection string names, for messages and status:
 * "host=H port=P dbname=D" with the keys it gives (of a key=value string,
 * or of a URI's host, port and path), in that order; nothing else of it,
 * never a user or password.  "" when it names none of the three (libpq's
 * defaults).  Always NUL-terminated; cut to size.
 */
void pgsql_conninfo_name(const char *conninfo, char *out, size_t size);

#endif
