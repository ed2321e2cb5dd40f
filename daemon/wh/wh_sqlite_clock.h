/*
 * wh_sqlite_clock.h - the wall clock of an SQLite warehouse connection
 * (wh_sqlite.c).
 *
 * date(), time(), datetime(), julianday(), unixepoch() and strftime()
 * are replaced on the connection by functions that refuse a call that
 * would read the clock (no time value, or 'now') unless the run allows it
 * (watch()'s allow_wall_clock), and otherwise evaluate the very same call
 * on a private in-memory connection, so their results are SQLite's own.
 * CURRENT_DATE and friends are keywords, not functions, and cannot be
 * replaced: config.c's static check refuses them.
 */
#ifndef BACKFILLD_WH_SQLITE_CLOCK_H
#define BACKFILLD_WH_SQLITE_CLOCK_H

#include <stdbool.h>

#include <sqlite3.h>

/* date, time, datetime, julianday, unixepoch, strftime */
#define WHSQL_NCLOCK 6
#define WHSQL_CLOCK_ARGS 8        /* helper statements cached up to this */

/* Embedded in its connection, zeroed before whsql_clock_install. */
struct whsql_clock {
	bool allow;             /* the run may read the clock (watch()) */
	sqlite3 *helper;        /* in-memory: evaluates the real functions */
	struct whsql_clockfn {
		struct whsql_clock *k;
		int fn;             /* index into whsql_clock_fns */
	} fn[WHSQL_NCLOCK];
	sqlite3_stmt *st[WHSQL_NCLOCK][WHSQL_CLOCK_ARGS];
};

/* Open k's helper connection and replace db's date and time functions by
 * k's.  Returns an SQLite result code; on failure the message is the
 * helper's (when it opened) or db's.  whsql_clock_free frees k either
 * way. */
int whsql_clock_install(struct whsql_clock *k, sqlite3 *db);
/* Finalize k's statements and close its helper connection; db's
 * functions go with db. */
void whsql_clock_free(struct whsql_clock *k);

#endif
