/*
 * wh_sqlite_clock.c - the date and time functions of an SQLite warehouse
 * connection, which refuse to read the wall clock (wh_sqlite_clock.h).
 */
#include "wh_sqlite_clock.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "err.h"

/* The date and time functions replaced on a warehouse connection. */
static const char *const whsql_clock_fns[WHSQL_NCLOCK] = {
	"date", "time", "datetime", "julianday", "unixepoch", "strftime"
};

/* True when the call would read the wall clock: no time value (for
 * strftime: none after the format), or the time value 'now'. */
static bool
whsql_clock_read(int fn, int argc, sqlite3_value **argv)
{
	int t = strcmp(whsql_clock_fns[fn], "strftime") == 0 ? 1 : 0;
	const unsigned char *v;

	if (argc <= t)
		return true;
	if (sqlite3_value_type(argv[t]) != SQLITE_TEXT)
		return false;
	v = sqlite3_value_text(argv[t]);
	return v != NULL && strcasecmp((const char *)v, "now") == 0;
}

/* "date('now', 'start of day')": the call as written, for messages. */
static void
whsql_clock_call(int fn, int argc, sqlite3_value **argv, char *buf,
		 size_t len)
{
	size_t off;
	int i, w;

	w = snprintf(buf, len, "%s(", whsql_clock_fns[fn]);
	off = w > 0 ? (size_t)w : 0;
	for (i = 0; i < argc && off < len; i++) {
		const char *v = (const char *)sqlite3_value_text(argv[i]);

		if (sqlite3_value_type(argv[i]) == SQLITE_TEXT)
			w = snprintf(buf + off, len - off, "%s'%.40s'",
			    i ? ", " : "", v);
		else
			w = snprintf(buf + off, len - off, "%s%.40s",
			    i ? ", " : "", v != NULL ? v : "NULL");
		off += w > 0 ? (size_t)w : 0;
	}
	if (off < len)
		snprintf(buf + off, len - off, ")");
}

/* The statement evaluating function fn with argc arguments on the helper
 * connection; cached for up to WHSQL_CLOCK_ARGS arguments, else *fresh. */
static sqlite3_stmt *
whsql_clock_stmt(struct whsql_clock *k, int fn, int argc, bool *fresh)
{
	char sql[64 + 3 * 64];
	sqlite3_stmt *st = NULL;
	size_t off;
	int i;

	*fresh = argc >= WHSQL_CLOCK_ARGS;
	if (!*fresh && k->st[fn][argc] != NULL)
		return k->st[fn][argc];
	if (argc > 64)
		return NULL;
	off = (size_t)snprintf(sql, sizeof sql, "SELECT %s(",
	    whsql_clock_fns[fn]);
	for (i = 0; i < argc; i++)
		off += (size_t)snprintf(sql + off, sizeof sql - off, "%s?",
		    i ? "," : "");
	snprintf(sql + off, sizeof sql - off, ")");
	if (sqlite3_prepare_v2(k->helper, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	if (!*fresh)
		k->st[fn][argc] = st;
	return st;
}

/*
 * The replacement of one date and time function: refuse a clock read
 * unless allowed, else evaluate the same call (same arguments, bound) on
 * the helper connection, whose functions are SQLite's own.
 */
static void
whsql_clock_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const struct whsql_clockfn *f = sqlite3_user_data(ctx);
	struct whsql_clock *k = f->k;
	sqlite3_stmt *st;
	char call[200], msg[ERR_MSG_MAX];
	bool fresh;
	int i, rc;

	if (!k->allow && whsql_clock_read(f->fn, argc, argv)) {
		whsql_clock_call(f->fn, argc, argv, call, sizeof call);
		snprintf(msg, sizeof msg, "job reads the wall clock: %s; take "
		    "the date from :partition, or set allow_wall_clock: true",
		    call);
		sqlite3_result_error(ctx, msg, -1);
		return;
	}
	st = whsql_clock_stmt(k, f->fn, argc, &fresh);
	if (st == NULL) {
		sqlite3_result_error(ctx, sqlite3_errmsg(k->helper), -1);
		return;
	}
	for (i = 0; i < argc; i++)
		sqlite3_bind_value(st, i + 1, argv[i]);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
	else
		sqlite3_result_error(ctx, sqlite3_errmsg(k->helper), -1);
	if (fresh) {
		sqlite3_finalize(st);
	} else {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
}

int
whsql_clock_install(struct whsql_clock *k, sqlite3 *db)
{
	int rc;

	rc = sqlite3_open_v2(":memory:", &k->helper, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_MEMORY, NULL);
	if (rc != SQLITE_OK)
		return rc;
	for (int i = 0; i < WHSQL_NCLOCK; i++) {
		k->fn[i].k = k;
		k->fn[i].fn = i;
		rc = sqlite3_create_function_v2(db, whsql_clock_fns[i], -1,
		    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
		    &k->fn[i], whsql_clock_fn, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			return rc;
	}
	return SQLITE_OK;
}

void
whsql_clock_free(struct whsql_clock *k)
{
	for (int i = 0; i < WHSQL_NCLOCK; i++)
		for (int n = 0; n < WHSQL_CLOCK_ARGS; n++)
			sqlite3_finalize(k->st[i][n]);
	sqlite3_close_v2(k->helper);
}
