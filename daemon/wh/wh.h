/*
 * wh.h - the warehouse driver seam: where job SQL and checks run.
 *
 * exec.c drives every warehouse through struct wh_driver; each driver
 * (wh_sqlite.c now, a libpq one later) hides its client library behind
 * it.  A connection is opened by one worker thread, used only by that
 * thread, and kept open across runs; the one operation another thread may
 * call is interrupt().
 *
 * A run is one transaction:
 *
 *	begin -> [manifest_fill] -> exec_script... -> query_value... ->
 *	[manifest_drop] -> commit          (or rollback on any failure)
 *
 * Parameters are bound by name, never spliced into SQL text: the SQL says
 * :partition, the caller passes {"partition", "2026-02-08"}.  A statement
 * naming a parameter the caller did not pass is an error, not a NULL.
 *
 * Error messages are one line and carry the server's own message, copied
 * at once: exec_script() says "statement 2 failed: no such table: x"
 * (statements counted from 1, empty ones skipped); the others give the
 * server's message alone.  An interrupted call fails with "interrupted".
 *
 * Rejected alternatives: a generic "run this statement" primitive with the
 * transaction verbs as SQL text (BEGIN IMMEDIATE is SQLite's, and libpq
 * wants its own for COPY and pipelining); a shared struct wh_conn layout
 * across drivers (each driver embeds struct wh_conn first instead, so the
 * caller needs no per-driver table).
 */
#ifndef BACKFILLD_WH_H
#define BACKFILLD_WH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "sqlparam.h"

struct wh_driver;

/* err.code of a driver's error that no retry cures: the warehouse
 * refused the user (wrong password, unknown user) or a privilege.  The
 * run fails at once, not retried (its message says what to do); never
 * an exit code as such. */
#define WH_ERR_DENIED 5

/* The head of every driver's connection: conn->drv->op(conn, ...). */
struct wh_conn {
	const struct wh_driver *drv;
};


/* One row of the batch manifest (backfilld.yaml(5), *batch*). */
struct wh_manifest_row {
	const char *key;
	const char *start;
	const char *end;
	const char *start_utc; /* YYYY-MM-DD HH:MM:SS, UTC */
	const char *end_utc;
};

struct wh_driver {
	const char *name; /* "sqlite" */

	/* Connect to `wh` (never creating it).  Errors read
	 * `warehouse "NAME": cannot open WHERE: reason`. */
	int (*open)(const struct warehouse_def *wh, struct wh_conn **out,
		    struct err *err);
	/* Disconnect; an open transaction is rolled back.  NULL is a no-op. */
	void (*close)(struct wh_conn *conn);

	/* Start the run's transaction (SQLite: BEGIN IMMEDIATE, waiting up
	 * to the busy timeout for other writers; PostgreSQL: BEGIN).  Clears
	 * an interrupt left over from an earlier run. */
	int (*begin)(struct wh_conn *conn, struct err *err);
	/* Run every ;-separated statement of `sql` in order, each with the
	 * parameters it names bound from `params`; rows are discarded.  A
	 * statement that would end or reshape the transaction
	 * (sqlscan_txn: COMMIT, ROLLBACK, ...) is an error, before it runs;
	 * so in query_value() and query_column(). */
	int (*exec_script)(struct wh_conn *conn, const char *sql,
			   const struct wh_param *params, size_t nparams,
			   struct err *err);
	/* Optional (NULL: the statements one after another, exec_script).
	 * The one statement `sql` (no ';' list) for n sets of parameters
	 * (params[k], nparams each) at once, on connections of its own
	 * beside conn, as one call: it returns once every one has ended; the
	 * first failure ends the others (their queries stopped on the server,
	 * as by interrupt) and is the error; interrupt() and watch()'s stop
	 * and timeout end all of them. */
	int (*exec_many)(struct wh_conn *conn, const char *sql,
			 const struct wh_param *const *params, size_t nparams,
			 size_t n, struct err *err);
	/* Run one statement and return the first column of its first row as
	 * text in *value (malloc'd; NULL for SQL NULL), with *has_row false
	 * when it returned no row. */
	int (*query_value)(struct wh_conn *conn, const char *sql,
			   const struct wh_param *params, size_t nparams,
			   bool *has_row, char **value, struct err *err);
	/* Run one read-only statement outside any transaction and return
	 * the first column of every row as text (NULLs left out) in
	 * *values (malloc'd array of malloc'd strings), *nvalues of them,
	 * at most max_values (more is an error).  Used by late_data
	 * sensors.  NULL in a driver that cannot do it. */
	int (*query_column)(struct wh_conn *conn, const char *sql,
			    const struct wh_param *params, size_t nparams,
			    size_t max_values, char ***values, size_t *nvalues,
			    struct err *err);
	/* Create (replacing any) the temporary table
	 * backfill_manifest(partition_key, partition_start, partition_end,
	 * partition_start_utc, partition_end_utc) inside the transaction
	 * and fill it with `rows`. */
	int (*manifest_fill)(struct wh_conn *conn,
			     const struct wh_manifest_row *rows, size_t nrows,
			     struct err *err);
	/* Drop the manifest before commit so no later run sees it. */
	int (*manifest_drop)(struct wh_conn *conn, struct err *err);
	/* Commit; a failure leaves the transaction rolled back. */
	int (*commit)(struct wh_conn *conn, struct err *err);
	/* Roll back whatever is open; never fails loudly (a connection that
	 * cannot roll back reports !usable()). */
	void (*rollback)(struct wh_conn *conn);

	/* Make the call running on `conn` now, and every later one until the
	 * next begin(), fail with "interrupted".  The only thread-safe
	 * operation: callable from any thread while the connection is open. */
	void (*interrupt)(struct wh_conn *conn);
	/* Rows changed since the connection opened (a counter: callers take
	 * differences). */
	int64_t (*changes)(struct wh_conn *conn);
	/* False once the connection is no use (I/O error, corruption, lost
	 * server, a transaction it could not end): close it and reopen. */
	bool (*usable)(const struct wh_conn *conn);

	/* Optional (NULL: nothing to do).  Before a run: serve it.  A wait
	 * on a lock gives up once *stop is non-zero (the executor's stop
	 * flag: timeout, cancel, shutdown) or timeout_ms (0: none) has
	 * passed; a date or time function that reads the wall clock fails
	 * the statement unless allow_wall_clock. */
	void (*watch)(struct wh_conn *conn, const atomic_int *stop,
		      int64_t timeout_ms, bool allow_wall_clock);
	/* Optional.  Before a cached connection is reused: -1 (err filled)
	 * when it no longer reaches the warehouse configured, e.g. its
	 * SQLite file was deleted or replaced. */
	int (*check)(struct wh_conn *conn, struct err *err);
	/* Optional (NULL: --verify cannot run here).  The content of one
	 * partition of `table` (rows whose `column` equals `partition`,
	 * bound), inside the open transaction: its row count and an
	 * order-independent checksum as text (the sum of a 64-bit hash of
	 * each row's text), equal for equal multisets of rows. */
	int (*digest)(struct wh_conn *conn, const char *table,
		      const char *column, const char *partition, int64_t *rows,
		      char *sum, size_t sumsz, struct err *err);
	/* Optional.  Before a run: the run it serves, for the server's own
	 * view of it (ClickHouse: every query's query_id is
	 * backfilld-INSTANCE-RUN-N, N counted from 1 per run). */
	void (*tag)(struct wh_conn *conn, int64_t run_id);
	/* Optional.  After a run: one line about the statement this
	 * connection stopped on the server (ClickHouse: its KILL QUERY, and
	 * how long the server took to end it, or that it still ran when the
	 * driver stopped waiting), taken (cleared) by the call; false when
	 * there is none. */
	bool (*stopped)(struct wh_conn *conn, char *buf, size_t size);
};

/* The embedded SQLite driver (wh_sqlite.c). */
extern const struct wh_driver wh_sqlite_driver;

#endif
