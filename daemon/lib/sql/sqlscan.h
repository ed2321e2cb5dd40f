/*
 * sqlscan.h - the one SQL lexer: tokens of SQLite's and PostgreSQL's SQL,
 * and what is built on them (the wall-clock guard; pgsql.c's statement
 * splitter).
 *
 * Pure: no I/O; the scanner allocates nothing (the wall-clock scan keeps
 * a stack of the calls it is inside).  The scanner cuts text into tokens
 * without judging them, so that a quoted thing (string, quoted identifier,
 * dollar quote, comment) is always one token: what it holds can never end
 * a statement, name a parameter or read the clock.  The dialect decides:
 *
 *                        SQLite                PostgreSQL
 *   'str'                '' escapes            '' escapes; E'..' also \
 *   "ident"              "" escapes            "" escapes
 *   `ident`, [ident]     quoted identifiers    punctuation
 *   $tag$ ... $tag$      ($name: a parameter)  dollar-quoted string
 *   $1                   a parameter           a positional parameter
 *   :name                a parameter           a parameter; :: a cast
 *   @name, ?, ?NNN       parameters            punctuation
 *   C-style comment      ends at its first     nests; must end
 *                        closing, or at the end
 *
 * Words (identifiers and keywords) are letters, digits, '_', '$' and any
 * byte >= 0x80, not starting with a digit or '$', read whole: so `E'` is
 * an escape string only when E is a word of its own, and `$` inside a word
 * (a$b$) never starts a dollar quote, as in PostgreSQL's lexer.
 */
#ifndef BACKFILLD_SQLSCAN_H
#define BACKFILLD_SQLSCAN_H

#include <stdbool.h>
#include <stddef.h>

/* SQLSCAN_CH: ClickHouse's SQL: 'str' with '' and backslash escapes,
 * "ident" and `ident` with backslash escapes too, :name a parameter (the
 * ClickHouse driver substitutes it, chsql.h), no dollar quotes, no ::, a
 * block comment must end; its wall clock is now(), today(), yesterday()
 * and the words both others know. */
enum sqlscan_dialect { SQLSCAN_SQLITE, SQLSCAN_PG, SQLSCAN_CH };

enum sqlscan_kind {
	SQLSCAN_END,        /* no more text */
	SQLSCAN_SPACE,      /* blanks, newlines included */
	SQLSCAN_COMMENT,    /* -- to the end of the line, or a block */
	SQLSCAN_WORD,       /* identifier or keyword */
	SQLSCAN_NUMBER,
	SQLSCAN_STRING,     /* '...', E'...' (its prefix included) */
	SQLSCAN_QUOTED,     /* quoted identifier: "...", `...`, [...] */
	SQLSCAN_DOLLAR,     /* $tag$...$tag$ */
	SQLSCAN_PARAM,      /* a named or numbered parameter */
	SQLSCAN_CAST,       /* :: (PostgreSQL) */
	SQLSCAN_PUNCT,      /* any other single byte */
	SQLSCAN_UNTERMINATED /* a quote or comment that does not end: `open` */
};

struct sqlscan_tok {
	enum sqlscan_kind kind;
	enum sqlscan_kind open; /* UNTERMINATED: what did not end */
	size_t off, len;        /* bytes of the text */
	int line;               /* of its first byte, from 1 */
};

struct sqlscan {
	const char *sql;
	size_t len, pos;
	int line;
	enum sqlscan_dialect dialect;
};

/* Start scanning `sql` (NUL-terminated). */
void sqlscan_init(struct sqlscan *s, const char *sql,
		  enum sqlscan_dialect dialect);
/* The next token into *t; its kind (SQLSCAN_END at the end, for ever).
 * An UNTERMINATED token runs to the end of the text. */
enum sqlscan_kind sqlscan_next(struct sqlscan *s, struct sqlscan_tok *t);
/* The next token that is not blank or a comment. */
enum sqlscan_kind sqlscan_next_solid(struct sqlscan *s, struct sqlscan_tok *t);
/* Statement n (from 1) of a script, statements ending at ';' and blank
 * ones not counted (as the drivers number them in "statement N
 * failed"): its first and last solid byte in *off and *len, and the line
 * of its first byte.  False when the script has fewer. */
bool sqlscan_statement(const char *sql, enum sqlscan_dialect dialect, int n,
		       size_t *off, size_t *len, int *line);
/* True when the token is the word `w` (any case). */
bool sqlscan_is_word(const struct sqlscan *s, const struct sqlscan_tok *t,
		     const char *w);
/* True when the token is the punctuation byte c. */
bool sqlscan_is_punct(const struct sqlscan *s, const struct sqlscan_tok *t,
		      char c);

/*
 * The first read of the wall clock in `sql`: its byte offset, or -1.
 * *what gets how it is spelled in messages ("'now'", "CURRENT_DATE",
 * "date()", "now()").  Found, outside strings, identifiers and comments:
 *  - both dialects: the literal 'now' (any case); CURRENT_DATE,
 *    CURRENT_TIMESTAMP, CURRENT_TIME;
 *  - SQLite: date(), time(), datetime(), julianday(), unixepoch() with no
 *    argument, strftime(FORMAT) with none after the format, and any of
 *    them given "now" (a double-quoted identifier SQLite takes for a
 *    string when no column has the name);
 *  - PostgreSQL: now(), clock_timestamp(), statement_timestamp(),
 *    transaction_timestamp(), timeofday(), LOCALTIMESTAMP, LOCALTIME, and
 *    'today', 'tomorrow', 'yesterday' (and ' now ' with blanks) as a date
 *    or timestamp literal: 'today'::date, date 'today',
 *    CAST('today' AS timestamp).  'epoch' is a fixed instant: allowed.
 * Text that does not scan (an unterminated quote) is searched up to there.
 * Linear in the text, however deep calls nest.
 */
long sqlscan_wall_clock(const char *sql, enum sqlscan_dialect dialect,
			const char **what);

/*
 * Transaction control.  A run is one transaction that the daemon begins
 * and commits (wh.h); SQL the daemon runs inside it must not end, split
 * or reshape it.  sqlscan_txn() finds the first statement of `sql` that
 * would, by its leading words, outside strings, identifiers and comments:
 *
 *  - both dialects: BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK
 *    (ROLLBACK TO [SAVEPOINT] x is allowed), ABORT, COMMIT AND CHAIN,
 *    ROLLBACK AND CHAIN, PREPARE TRANSACTION, COMMIT PREPARED,
 *    ROLLBACK PREPARED;
 *  - SQLite: ATTACH, DETACH, VACUUM, and PRAGMA (any form, any schema)
 *    of the names sqlscan_txn_pragma() lists; EXPLAIN [QUERY PLAN] in
 *    front is looked through;
 *  - PostgreSQL: SET [SESSION | LOCAL] TRANSACTION, SET SESSION
 *    CHARACTERISTICS, and a DO block whose body holds the word COMMIT or
 *    ROLLBACK.
 *
 * SAVEPOINT, RELEASE and ROLLBACK TO nest inside the run's transaction
 * and are allowed; so is CALL (PostgreSQL refuses a procedure's COMMIT
 * inside a transaction block: "invalid transaction termination").
 *
 * Statements are cut as the drivers cut them: SQLite at every ';' but
 * those of a CREATE TRIGGER body (BEGIN ... END, CASE ... END counted);
 * PostgreSQL at a ';' outside parentheses (pgsql.c) and outside a
 * BEGIN ATOMIC ... END body.  With SQLSCAN_TXN_EXPR the text is an
 * expression the daemon puts in a SELECT of its own (a metric): its first
 * statement is that SELECT and only those after a ';' are judged.  Text
 * that does not scan (an unterminated quote) is judged up to there.
 *
 * Returns the byte offset of the statement's first token, or -1; *out
 * gets it, the statement's number (from 1, empty ones skipped) and how
 * it is spelled in messages ("COMMIT", "PRAGMA journal_mode").
 */
#define SQLSCAN_TXN_EXPR 0x1

struct sqlscan_txn {
	long off;         /* the statement's first byte; -1: none */
	int stmt;         /* its number, from 1 */
	const char *what; /* "COMMIT", "ATTACH", "PRAGMA journal_mode" */
};

long sqlscan_txn(const char *sql, enum sqlscan_dialect dialect, int flags,
		 struct sqlscan_txn *out);

/*
 * The SQLite PRAGMAs that change how the run's transaction works or that
 * write outside it ("PRAGMA journal_mode" for "journal_mode", any case),
 * or NULL: auto_vacuum, busy_timeout, journal_mode, locking_mode,
 * page_size, query_only, read_uncommitted, schema_version, synchronous,
 * temp_store, temp_store_directory, wal_autocheckpoint, wal_checkpoint,
 * writable_schema.  Also used by wh_sqlite.c's authorizer.
 */
const char *sqlscan_txn_pragma(const char *name, size_t len);

/* What to do instead, after "WHAT controls the run's transaction: ". */
#define SQLSCAN_TXN_ADVICE "backfilld begins and commits each " \
	"partition's transaction itself; remove it (to nest one, use " \
	"SAVEPOINT name ... RELEASE name)"

/* Append identifier `name` to the text in buf (len bytes in all),
 * double-quoted with its quotes doubled: the form both dialects read as
 * one identifier whatever it holds.  Truncated to fit. */
void sqlscan_quote_ident(char *buf, size_t len, const char *name);

#endif
