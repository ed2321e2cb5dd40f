/*
 * sqltables.h - the tables an SQL script reads and writes, read from its
 * text (DESIGN.md, "Lineage from the SQL"): the lineage the configuration
 * checks against each job's upstream (config_lineage.c) and `backfillctl
 * jobs` shows.
 *
 * Pure: no I/O, built on sqlscan.h's tokens, so that nothing inside a
 * string, a quoted identifier's quotes, a comment or a parameter is ever
 * taken for a table.  In every dialect (SQLite, PostgreSQL, ClickHouse):
 *
 *   writes  INSERT [OR ...] INTO t, REPLACE INTO t, MERGE INTO t,
 *           DELETE FROM t, UPDATE [OR ...] [ONLY] t, TRUNCATE [TABLE] t,
 *           ALTER TABLE t (a ClickHouse mutation or REPLACE PARTITION),
 *           CREATE TABLE t (its later reads in the same script are the
 *           script's own: not reported);
 *   reads   FROM and JOIN items (comma lists, parenthesised joins and
 *           subqueries at any depth), USING of DELETE and MERGE;
 *   neither CTE names (WITH [RECURSIVE] name [(cols)] AS (...)) within
 *           their statement, CREATE TEMP[ORARY] TABLE names for the rest of
 *           the script, table functions (FROM numbers(10),
 *           generate_series(...)), FROM inside a call (EXTRACT(x FROM d),
 *           substring(s FROM 2)), IS [NOT] DISTINCT FROM, ARRAY JOIN, JOIN
 *           ... USING (cols), UPDATE of ON CONFLICT DO UPDATE and FOR
 *           UPDATE.
 *
 * What the text cannot show is not guessed: the tables a view reads, what
 * dynamic SQL (EXECUTE, a DO block's strings) touches, a name a string
 * holds.
 *
 * A name is its parts joined with '.' (schema.table), each part unquoted;
 * an unquoted part is folded to lower case in SQLite and PostgreSQL
 * (which compare unquoted names so), kept as written in ClickHouse.
 */
#ifndef BACKFILLD_SQLTABLES_H
#define BACKFILLD_SQLTABLES_H

#include <stdbool.h>
#include <stddef.h>

#include "sqlscan.h"

enum sqltables_use { SQLTABLES_READ, SQLTABLES_WRITE };

struct sqltables_ref {
	enum sqltables_use use;
	char *name;      /* "schema.table" or "table", unquoted */
	size_t off, len; /* bytes of the text: the name as written */
	int stmt;        /* its statement, from 1 (';' ends one) */
};

struct sqltables {
	struct sqltables_ref *refs; /* in the order of the text */
	size_t n;
};

/* The tables `sql` (NUL-terminated) reads and writes into *out (free
 * with sqltables_free).  Text that does not scan (an unterminated quote)
 * is read up to there.  Linear in the text. */
void sqltables_scan(const char *sql, enum sqlscan_dialect dialect,
		    struct sqltables *out);
void sqltables_free(struct sqltables *t);

/* True when table names a and b name the same table in `dialect`: equal
 * (in SQLite and PostgreSQL whatever the case), or equal in their last
 * part when one of them has no schema. */
bool sqltables_same(const char *a, const char *b,
		    enum sqlscan_dialect dialect);

#endif
