/*
 * store_sqlite.c - the state store on SQLite (store.h's store_sqlite_ops):
 * the connection, its migrations, transactions and savepoints, the
 * statement helpers every store_sqlite_*.c file steps with, and the ops
 * table.
 *
 * Opened once by the daemon on the loop thread.  WAL with
 * synchronous=NORMAL: a commit is durable against a crash of the daemon
 * (the WAL is written before the commit returns) and against power loss up
 * to the last checkpoint-synchronised commit, which is what the manifest
 * needs: a partition acknowledged as queued is in the WAL.  The busy
 * timeout covers backfillctl-independent readers (sqlite3 CLI, backups).
 * Statements are prepared once, from the table of store_sqlite_sql.c, and
 * reset after use; every error copies sqlite3_errmsg at once.
 *
 * The other files (store_sqlite_int.h declares what they share):
 *   store_sqlite_sql.c       the prepared statements, one table
 *   store_sqlite_ckpt.c      WAL checkpoints off the loop
 *   store_sqlite_manifest.c  requests, items, runs and partitions: the
 *                            scheduler's writes and the loads at start
 *   store_sqlite_query.c     upkeep (probe, stats, prune), job state,
 *                            trends, shards, request reads, audit
 *   store_sqlite_runs.c      the runs, page by page (store_runs.c's
 *                            keyset cursor)
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql_embedded.h"
#include "store_sqlite_int.h"
#include "xalloc.h"

#define STORE_WAL_LIMIT "4194304" /* bytes a reset WAL file is cut back to */

static void store_sqlite_close(struct store *base);

/* The line of a migration that asks for foreign keys off while it runs. */
#define STORE_MIGRATION_FK_OFF "-- backfilld: foreign_keys off"

/* Fill err from the connection's last error, with context. */
int
store_sqlite_fail(struct store_sqlite *st, struct err *err, const char *what)
{
	return err_set(err, EXIT_INTERNAL, "state store: %s: %s", what,
		       sqlite3_errmsg(st->db));
}

/* Run SQL without results. */
int
store_sqlite_exec(struct store_sqlite *st, const char *sql, struct err *err)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		err_set(err, EXIT_INTERNAL, "state store: %s",
			msg ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* No row breaks a foreign key (after a migration that ran without). */
static int
store_sqlite_fk_check(struct store_sqlite *st, struct err *err)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(st->db, "PRAGMA foreign_key_check", -1, &s,
			       NULL) != SQLITE_OK)
		return store_sqlite_fail(st, err, "checking foreign keys");
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc == SQLITE_ROW)
		return err_set(err, EXIT_INTERNAL, "state store: a row breaks a"
			       " foreign key after the migration; restore the"
			       " store from a backup");
	return 0;
}

/* Apply the compiled-in migrations above PRAGMA user_version. */
static int
store_sqlite_migrate(struct store_sqlite *st, const char *path, struct err *err)
{
	sqlite3_stmt *s;
	int version = 0;
	char sql[64];

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return store_sqlite_fail(st, err, "reading the schema version");
	if (sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version > sql_migrations_count)
		return err_set(err, EXIT_BAD_INPUT,
			       "%s: schema version %d is newer than this backfilld "
			       "knows (%d): run the backfilld that wrote it", path,
			       version, sql_migrations_count);
	for (int i = version; i < sql_migrations_count; i++) {
		/* a migration that rebuilds a table others reference (a new
		 * CHECK) runs with foreign keys off, checked before commit */
		bool fk_off = strstr(sql_migrations[i].sql,
				     STORE_MIGRATION_FK_OFF) != NULL;

		if (fk_off && store_sqlite_exec(st, "PRAGMA foreign_keys = OFF",
						err) < 0)
			return -1;
		if (store_sqlite_exec(st, "BEGIN IMMEDIATE", err) < 0)
			return -1;
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d",
			 sql_migrations[i].version);
		if (store_sqlite_exec(st, sql_migrations[i].sql, err) < 0 ||
		    (fk_off && store_sqlite_fk_check(st, err) < 0) ||
		    store_sqlite_exec(st, sql, err) < 0) {
			err_prefix(err, "applying %s", sql_migrations[i].name);
			store_sqlite_exec(st, "ROLLBACK", NULL);
			return -1;
		}
		if (store_sqlite_exec(st, "COMMIT", err) < 0 ||
		    (fk_off && store_sqlite_exec(st, "PRAGMA foreign_keys = ON",
						 err) < 0))
			return -1;
	}
	return 0;
}

static int
store_sqlite_open(const char *path, struct store **out, struct err *err)
{
	struct store_sqlite *st = xcalloc(1, sizeof *st);

	st->base.ops = &store_sqlite_ops;
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		err_set(err, EXIT_BAD_INPUT, "cannot open state store %s: %s; "
			"check state_db and that its folder exists and is writable",
			path, st->db ? sqlite3_errmsg(st->db) : "out of memory");
		sqlite3_close(st->db);
		free(st);
		return -1;
	}
	sqlite3_busy_timeout(st->db, 10000);
	if (store_sqlite_exec(st, "PRAGMA journal_mode = WAL", err) < 0 ||
	    store_sqlite_exec(st, "PRAGMA synchronous = NORMAL", err) < 0 ||
	    store_sqlite_exec(st, "PRAGMA foreign_keys = ON", err) < 0 ||
	    store_sqlite_exec(st, "PRAGMA journal_size_limit = " STORE_WAL_LIMIT,
		       err) < 0 ||
	    store_sqlite_migrate(st, path, err) < 0)
		goto fail;
	for (int i = 0; i < S_COUNT; i++) {
		if (sqlite3_prepare_v3(st->db, store_sqlite_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
				       NULL) != SQLITE_OK) {
			store_sqlite_fail(st, err, "preparing statements");
			goto fail;
		}
	}
	sqlite3_wal_hook(st->db, store_sqlite_wal_hook, st);
	if (store_sqlite_next(st, st->stmt[S_RUNS_COUNT], err, "counting runs") < 0)
		goto fail;
	st->runs_kept = sqlite3_column_int64(st->stmt[S_RUNS_COUNT], 0);
	store_sqlite_done(st->stmt[S_RUNS_COUNT]);
	st->path = xstrdup(path);
	*out = &st->base;
	return 0;
fail:
	err_prefix(err, "%s", path);
	store_sqlite_close(&st->base);
	return -1;
}

static void
store_sqlite_close(struct store *base)
{
	struct store_sqlite *st = store_sqlite_of(base);

	if (st == NULL)
		return;
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->ckpt_db);
	sqlite3_close(st->db); /* the last connection checkpoints the WAL */
	free(st->path);
	free(st);
}

/* Step one of the prepared transaction statements. */
static int
store_sqlite_tx(struct store_sqlite *st, enum stmt_id id, struct err *err)
{
	sqlite3_stmt *s = st->stmt[id];
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_sqlite_fail(st, err, store_sqlite_sql[id]);
	return 0;
}

/*
 * Transactions (store.h).  begin() outside any transaction opens one
 * (BEGIN IMMEDIATE) that its commit() commits.  Inside an open
 * transaction, begin() sets a savepoint instead, so a failure rolls back
 * just that group of changes (rollback) and the rest stands.  defer()
 * opens a transaction that only flush() commits: the daemon defers on its
 * hot paths and flushes once per loop turn, and before any answer to a
 * client, so many state changes share one commit and none is
 * acknowledged before it is committed.
 */
int
store_sqlite_begin(struct store *base, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);

	if (st->tx) {
		if (store_sqlite_tx(st, S_SP_SET, err) < 0)
			return -1;
		st->depth++;
		return 0;
	}
	if (store_sqlite_tx(st, S_TX_BEGIN, err) < 0)
		return -1;
	st->tx = true;
	st->deferred = false;
	return 0;
}

int
store_sqlite_commit(struct store *base, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);

	if (st->depth > 0) {
		st->depth--;
		return store_sqlite_tx(st, S_SP_RELEASE, err);
	}
	if (!st->tx || st->deferred)
		return 0;
	st->tx = false;
	if (store_sqlite_tx(st, S_TX_COMMIT, err) < 0) {
		store_sqlite_tx(st, S_TX_ROLLBACK, NULL);
		return -1;
	}
	return 0;
}

void
store_sqlite_rollback(struct store *base)
{
	struct store_sqlite *st = store_sqlite_of(base);

	if (st->depth > 0) {
		st->depth--;
		store_sqlite_tx(st, S_SP_ROLLBACK, NULL);
		store_sqlite_tx(st, S_SP_RELEASE, NULL);
		return;
	}
	if (!st->tx || st->deferred)
		return;
	st->tx = false;
	store_sqlite_tx(st, S_TX_ROLLBACK, NULL);
}

static int
store_sqlite_defer(struct store *base, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);

	if (st->tx)
		return 0;
	if (store_sqlite_tx(st, S_TX_BEGIN, err) < 0)
		return -1;
	st->tx = true;
	st->deferred = true;
	return 0;
}

static int
store_sqlite_flush(struct store *base, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);

	if (!st->tx || !st->deferred || st->depth > 0)
		return 0;
	st->tx = false;
	st->deferred = false;
	if (store_sqlite_tx(st, S_TX_COMMIT, err) < 0) {
		store_sqlite_tx(st, S_TX_ROLLBACK, NULL);
		return -1;
	}
	return 0;
}

/* Roll back whatever is open, the deferred transaction and its
 * savepoints included (a failed turn: store.h). */
static void
store_sqlite_discard(struct store *base)
{
	struct store_sqlite *st = store_sqlite_of(base);

	if (!st->tx)
		return;
	st->tx = false;
	st->deferred = false;
	st->depth = 0;
	store_sqlite_tx(st, S_TX_ROLLBACK, NULL);
}

/* Bind text or NULL. */
void
store_sqlite_bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
}

/* Step a statement that returns no rows, then reset it. */
int
store_sqlite_step_done(struct store_sqlite *st, sqlite3_stmt *s,
		       struct err *err, const char *what)
{
	int rc = sqlite3_step(s);

	if (rc != SQLITE_DONE) {
		store_sqlite_fail(st, err, what);
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		return -1;
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return 0;
}

/* Reset a statement after reading rows. */
void
store_sqlite_done(sqlite3_stmt *s)
{
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

/*
 * Step a statement that returns rows: 1 with the next row in s; at the
 * end 0, or -1 with err (sqlite's message, after what) on an error, the
 * statement reset either way.  A caller that stops before the end calls
 * store_sqlite_done itself.
 */
int
store_sqlite_next(struct store_sqlite *st, sqlite3_stmt *s, struct err *err,
		  const char *what)
{
	int rc = sqlite3_step(s);

	if (rc == SQLITE_ROW)
		return 1;
	store_sqlite_done(s);
	if (rc != SQLITE_DONE)
		return store_sqlite_fail(st, err, what);
	return 0;
}

/* store_sqlite_step_done with id bound as ?1. */
int
store_sqlite_id_done(struct store_sqlite *st, sqlite3_stmt *s, int64_t id,
		     struct err *err, const char *what)
{
	sqlite3_bind_int64(s, 1, id);
	return store_sqlite_step_done(st, s, err, what);
}

/* store_sqlite_next with id bound as ?1 (the first row of a lookup). */
int
store_sqlite_id_next(struct store_sqlite *st, sqlite3_stmt *s, int64_t id,
		     struct err *err, const char *what)
{
	sqlite3_bind_int64(s, 1, id);
	return store_sqlite_next(st, s, err, what);
}

/* Text column or NULL. */
const char *
store_sqlite_col_text(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

/* Copy a text column into a fixed buffer ("" for NULL). */
void
store_sqlite_col_copy(sqlite3_stmt *s, int i, char *buf, size_t sz)
{
	const char *v = store_sqlite_col_text(s, i);

	snprintf(buf, sz, "%s", v ? v : "");
}

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.open = store_sqlite_open,
	.close = store_sqlite_close,
	.checkpoint_on = store_sqlite_checkpoint_on,
	.begin = store_sqlite_begin,
	.commit = store_sqlite_commit,
	.rollback = store_sqlite_rollback,
	.defer = store_sqlite_defer,
	.flush = store_sqlite_flush,
	.request_add = store_sqlite_request_add,
	.request_finish = store_sqlite_request_finish,
	.item_add = store_sqlite_item_add,
	.item_set = store_sqlite_item_set,
	.run_start = store_sqlite_run_start,
	.run_finish = store_sqlite_run_finish,
	.partition_built = store_sqlite_partition_built,
	.partition_get = store_sqlite_partition_get,
	.newest_build = store_sqlite_newest_build,
	.recover = store_sqlite_recover,
	.load_open = store_sqlite_load_open,
	.load_request = store_sqlite_load_request,
	.request_controls = store_sqlite_request_controls,
	.request_reopen = store_sqlite_request_reopen,
	.last_states = store_sqlite_last_states,
	.keys_built_by = store_sqlite_keys_built_by,
	.keys_changed = store_sqlite_keys_changed,
	.partitions_of = store_sqlite_partitions_of,
	.runs_open = store_sqlite_runs_open,
	.runs_page = store_sqlite_runs_page,
	.runs_max_id = store_runs_newest,
	.runs_close = store_sqlite_runs_close,
	.partition_finished = store_sqlite_partition_finished,
	.latest_counts = store_sqlite_latest_counts,
	.run_proc = store_sqlite_run_proc,
	.run_mark = store_sqlite_run_mark,
	.run_node = store_sqlite_run_node,
	.run_lookup = store_sqlite_run_lookup,
	.marked_keys = store_sqlite_marked_keys,
	.orphans = store_sqlite_orphans,
	.run_unstart = store_sqlite_run_unstart,
	.probe_write = store_sqlite_probe_write,
	.stats = store_sqlite_stats,
	.prune_step = store_sqlite_prune_step,
	.job_get = store_sqlite_job_get,
	.job_put = store_sqlite_job_put,
	.job_calendar = store_sqlite_job_calendar,
	.job_calendar_put = store_sqlite_job_calendar_put,
	.trend_values = store_sqlite_trend_values,
	.trend_put = store_sqlite_trend_put,
	.trend_trim = store_sqlite_trend_trim,
	.trend_series = store_sqlite_trend_series,
	.shard_put = store_sqlite_shard_put,
	.shards_of = store_sqlite_shards_of,
	.shards_partial = store_sqlite_shards_partial,
	.request_problems = store_sqlite_request_problems,
	.audit_add = store_sqlite_audit_add,
	.audit_of = store_sqlite_audit_of,
	.request_counts = store_sqlite_request_counts,
	.durations = store_sqlite_durations,
	.recent_requests = store_sqlite_recent_requests,
	.request_get = store_sqlite_request_get,
	.request_budget = store_sqlite_request_budget,
	.over_budget = store_sqlite_over_budget,
	.discard = store_sqlite_discard,
};
