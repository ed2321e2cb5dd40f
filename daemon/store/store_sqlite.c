/*
 * store_sqlite.c - the state store on SQLite (store.h's store_sqlite_ops).
 *
 * Opened once by the daemon on the loop thread.  WAL with
 * synchronous=NORMAL: a commit is durable against a crash of the daemon
 * (the WAL is written before the commit returns) and against power loss up
 * to the last checkpoint-synchronised commit, which is what the manifest
 * needs: a partition acknowledged as queued is in the WAL.  The busy
 * timeout covers backfillctl-independent readers (sqlite3 CLI, backups).
 * Statements are prepared once, from the table below, and reset after use;
 * every error copies sqlite3_errmsg at once.
 */
#include "store.h"

#include <sqlite3.h>
#include <uv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "log.h"
#include "sql_embedded.h"
#include "xalloc.h"

/* WAL checkpoints (see "Checkpoints off the loop" below) */
#define STORE_CKPT_PAGES 1000
#define STORE_CKPT_LOOP_PAGES 4096
#define STORE_CKPT_HARD_PAGES 5120 /* the loop waits for a checkpoint */
#define STORE_WAL_LIMIT "4194304" /* bytes a reset WAL file is cut back to */

enum stmt_id {
	S_REQUEST_ADD,
	S_REQUEST_FINISH,
	S_ITEM_ADD,
	S_ITEM_SET,
	S_RUN_START,
	S_RUN_FINISH,
	S_PART_BUILT,
	S_PART_GET,
	S_LOAD_OPEN,
	S_LOAD_ONE,
	S_REQUEST_REOPEN,
	S_REQUEST_CONTROLS,
	S_LAST_STATES,
	S_LATEST_GET,
	S_LATEST_PUT,
	S_LATEST_COUNTS,
	S_RUNS_COUNT,
	S_RUN_PROC,
	S_RUN_MARK,
	S_RUN_LOOKUP,
	S_MARKED_KEYS,
	S_ORPHANS,
	S_RUN_UNSTART,
	S_PRUNE_RUNS,
	S_PRUNE_AUDIT_DEL,
	S_PRUNE_RUN_DEL,
	S_PRUNE_REQUESTS,
	S_PRUNE_MANIFEST_DEL,
	S_PRUNE_REQUEST_DEL,
	S_BUILT_BY,
	S_KEYS_CHANGED,
	S_PARTS_OF,
	S_JOB_GET,
	S_JOB_PUT,
	S_TREND_VALUES,
	S_TREND_PUT,
	S_TREND_TRIM,
	S_TREND_SERIES,
	S_REQUEST_GET,
	S_RECENT_REQUESTS,
	S_PROBLEMS,
	S_AUDIT_ADD,
	S_AUDIT_OF,
	S_REQUEST_COUNTS,
	S_NEWEST_BUILD,
	S_DURATIONS,
	S_REQUEST_BUDGET,
	S_OVER_BUDGET,
	S_TX_BEGIN,
	S_TX_COMMIT,
	S_TX_ROLLBACK,
	S_SP_SET,
	S_SP_RELEASE,
	S_SP_ROLLBACK,
	S_COUNT
};

static const char *const store_sql[S_COUNT] = {
	[S_REQUEST_ADD] =
	"INSERT INTO requests (job, kind, reason, from_key, to_key, reprocess,"
	" reverse, no_downstream, created_at, concurrency, fail_fast,"
	" downstream, budget_ms, no_cutoff) VALUES"
	" (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_REQUEST_FINISH] =
	"UPDATE requests SET finished_at = ?2, cancelled = ?3 WHERE id = ?1",
	[S_ITEM_ADD] =
	"INSERT INTO manifest (request_id, job, partition_key, seq, downstream,"
	" state, created_at, updated_at) VALUES (?,?,?,?,?,?,?8,?8)",
	[S_ITEM_SET] =
	"UPDATE manifest SET state = ?2, attempts = ?3, not_before = ?4,"
	" error = ?5, blocked_on = ?6, updated_at = ?7, changed = ?8"
	" WHERE id = ?1",
	[S_RUN_START] =
	"INSERT INTO runs (manifest_id, request_id, job, partition_key, attempt,"
	" state, started_at, code_version, config_hash, shared_run)"
	" VALUES (?,?,?,?,?,'running',?,?,?,?)",
	[S_RUN_FINISH] =
	"UPDATE runs SET state = ?2, finished_at = ?3, error = ?4,"
	" rows_changed = ?5 WHERE id = ?1",
	[S_PART_BUILT] =
	"INSERT INTO partitions (job, partition_key, built_at, inputs_at, run_id,"
	" code_version) VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT (job, partition_key)"
	" DO UPDATE SET built_at = ?3, inputs_at = ?4, run_id = ?5,"
	" code_version = ?6",
	[S_PART_GET] =
	"SELECT built_at, inputs_at, code_version FROM partitions WHERE job = ?"
	" AND partition_key = ?",
	[S_LOAD_OPEN] =
	"SELECT m.id, m.request_id, m.job, m.partition_key, m.seq, m.downstream,"
	" m.state, m.attempts, m.not_before, m.blocked_on, r.job, r.kind,"
	" r.reverse, r.created_at, r.concurrency, r.fail_fast, r.budget_ms,"
	" r.spent_ms, r.over_budget_at IS NOT NULL, r.no_cutoff, m.changed"
	" FROM manifest m"
	" JOIN requests r ON r.id = m.request_id WHERE r.finished_at IS NULL"
	" ORDER BY m.request_id, m.seq",
	[S_LOAD_ONE] =
	"SELECT m.id, m.request_id, m.job, m.partition_key, m.seq, m.downstream,"
	" m.state, m.attempts, m.not_before, m.blocked_on, r.job, r.kind,"
	" r.reverse, r.created_at, r.concurrency, r.fail_fast, r.budget_ms,"
	" r.spent_ms, r.over_budget_at IS NOT NULL, r.no_cutoff, m.changed"
	" FROM manifest m"
	" JOIN requests r ON r.id = m.request_id WHERE r.id = ?1"
	" ORDER BY m.seq",
	[S_REQUEST_REOPEN] =
	"UPDATE requests SET finished_at = NULL, cancelled = 0 WHERE id = ?1",
	[S_REQUEST_CONTROLS] =
	"SELECT concurrency, fail_fast, downstream FROM requests WHERE id = ?1",
	[S_LAST_STATES] =
	"SELECT partition_key, state FROM partition_latest WHERE job = ?1 AND"
	" partition_key BETWEEN ?2 AND ?3",
	[S_LATEST_GET] =
	"SELECT state FROM partition_latest WHERE job = ? AND partition_key = ?",
	[S_LATEST_PUT] =
	"INSERT INTO partition_latest (job, partition_key, run_id, state)"
	" VALUES (?1,?2,?3,?4) ON CONFLICT (job, partition_key) DO UPDATE SET"
	" run_id = ?3, state = ?4",
	[S_LATEST_COUNTS] =
	"SELECT job, state, COUNT(*) FROM partition_latest GROUP BY job, state",
	[S_RUNS_COUNT] = "SELECT COUNT(*) FROM runs",
	[S_RUN_PROC] = "UPDATE runs SET pgid = ?2, proc_start = ?3 WHERE id = ?1",
	[S_RUN_MARK] = "UPDATE runs SET marked_by = ?2 WHERE id = ?1",
	[S_RUN_LOOKUP] =
	"SELECT r.id, r.request_id, r.attempt, r.state, r.error, NULL FROM"
	" partition_latest l JOIN runs x ON x.id = l.run_id JOIN runs r"
	" ON r.manifest_id = x.manifest_id WHERE l.job = ?1 AND"
	" l.partition_key = ?2 AND (?3 = 0 OR r.attempt = ?3)"
	" ORDER BY r.id DESC LIMIT 1",
	[S_MARKED_KEYS] =
	"SELECT l.partition_key FROM partition_latest l JOIN runs r ON"
	" r.id = l.run_id WHERE l.job = ?1 AND l.partition_key BETWEEN ?2 AND"
	" ?3 AND r.marked_by IS NOT NULL",
	[S_ORPHANS] =
	"SELECT id, job, partition_key, pgid, proc_start FROM runs"
	" WHERE state = 'running' AND pgid IS NOT NULL AND proc_start >= 0",
	[S_RUN_UNSTART] = "DELETE FROM runs WHERE id = ?1 AND NOT EXISTS"
	" (SELECT 1 FROM run_audit WHERE run_id = ?1)",
	/* pruning: the next runs by id, with whether each must stay (the
	 * newest run or newest success of its partition, still running, or
	 * of a request still open) */
	[S_PRUNE_RUNS] =
	"SELECT r.id, r.job, r.started_at, r.finished_at, r.state = 'running'"
	" OR EXISTS (SELECT 1 FROM partition_latest l WHERE l.job = r.job AND"
	" l.partition_key = r.partition_key AND l.run_id = r.id)"
	" OR EXISTS (SELECT 1 FROM partitions p WHERE p.job = r.job AND"
	" p.partition_key = r.partition_key AND p.run_id = r.id)"
	" OR EXISTS (SELECT 1 FROM requests q WHERE q.id = r.request_id AND"
	" q.finished_at IS NULL)"
	" FROM runs r WHERE r.id > ?1 ORDER BY r.id LIMIT ?2",
	[S_PRUNE_AUDIT_DEL] = "DELETE FROM run_audit WHERE run_id = ?",
	[S_PRUNE_RUN_DEL] = "DELETE FROM runs WHERE id = ?",
	[S_PRUNE_REQUESTS] =
	"SELECT id, job, created_at, finished_at FROM requests WHERE id > ?1"
	" ORDER BY id LIMIT ?2",
	[S_PRUNE_MANIFEST_DEL] =
	"DELETE FROM manifest WHERE request_id = ?1 AND NOT EXISTS"
	" (SELECT 1 FROM runs WHERE runs.manifest_id = manifest.id)",
	[S_PRUNE_REQUEST_DEL] =
	"DELETE FROM requests WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM"
	" manifest WHERE request_id = ?1) AND NOT EXISTS (SELECT 1 FROM runs"
	" WHERE request_id = ?1)",
	[S_BUILT_BY] =
	"SELECT partition_key FROM partitions WHERE job = ? AND code_version = ?"
	" ORDER BY partition_key",
	[S_KEYS_CHANGED] =
	"SELECT partition_key FROM partitions WHERE job = ?1 AND"
	" code_version IS NOT ?2 AND partition_key BETWEEN ?3 AND ?4"
	" ORDER BY partition_key",
	[S_PARTS_OF] =
	"SELECT partition_key, built_at, inputs_at FROM partitions WHERE job = ?"
	" ORDER BY partition_key",
	[S_JOB_GET] =
	"SELECT watermark, catchup, gap_from, gap_to, paused, paused_at,"
	" late_since, late_checked_at, late_found, late_error,"
	" reconciled_through FROM jobs WHERE job = ?",
	[S_JOB_PUT] =
	"INSERT INTO jobs (job, watermark, catchup, gap_from, gap_to, paused,"
	" paused_at, updated_at, late_since, late_checked_at, late_found,"
	" late_error, reconciled_through) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,"
	"?10,?11,?12,?13) ON CONFLICT (job) DO UPDATE SET watermark = ?2,"
	" catchup = ?3, gap_from = ?4, gap_to = ?5, paused = ?6,"
	" paused_at = ?7, updated_at = ?8, late_since = ?9,"
	" late_checked_at = ?10, late_found = ?11, late_error = ?12,"
	" reconciled_through = ?13",
	/* trend checks' history (sql/008_trends.sql) */
	[S_TREND_VALUES] =
	"SELECT partition_key, value FROM trend_values WHERE job = ?1 AND"
	" metric = ?2 ORDER BY run_id DESC, partition_key DESC LIMIT ?3",
	[S_TREND_PUT] =
	"INSERT INTO trend_values (job, metric, partition_key, value, run_id)"
	" VALUES (?1,?2,?3,?4,?5) ON CONFLICT (job, metric, partition_key)"
	" DO UPDATE SET value = ?4, run_id = ?5",
	[S_TREND_TRIM] =
	"DELETE FROM trend_values WHERE job = ?1 AND metric = ?2 AND"
	" partition_key NOT IN (SELECT partition_key FROM trend_values"
	" WHERE job = ?1 AND metric = ?2 ORDER BY run_id DESC,"
	" partition_key DESC LIMIT ?3)",
	[S_TREND_SERIES] =
	"SELECT DISTINCT job, metric FROM trend_values ORDER BY job, metric",
	[S_REQUEST_GET] =
	"SELECT job, finished_at IS NOT NULL FROM requests WHERE id = ?",
	[S_RECENT_REQUESTS] =
	"SELECT id, job, kind, reason, created_at, finished_at, cancelled"
	" FROM requests ORDER BY id DESC LIMIT ?",
	[S_PROBLEMS] =
	"SELECT job, partition_key, state, error, blocked_on FROM manifest"
	" WHERE request_id = ? AND state IN ('failed', 'blocked') ORDER BY seq",
	[S_AUDIT_ADD] =
	"INSERT OR REPLACE INTO run_audit (run_id, partition_key, rows_before,"
	" rows_after, metrics, checks, passed, metrics_text, checks_text,"
	" sum_before, sum_after) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	[S_AUDIT_OF] =
	"SELECT m.job, m.partition_key, m.downstream, m.state,"
	" COALESCE(r.shared_run, r.id),"
	" r.code_version, r.config_hash, r.state, r.error, a.rows_before,"
	" a.rows_after, a.metrics, a.checks, a.passed, a.metrics_text,"
	" a.checks_text, m.error, a.sum_before, a.sum_after FROM manifest m"
	" LEFT JOIN runs r ON r.id = (SELECT MAX(id) FROM runs"
	" WHERE manifest_id = m.id)"
	" LEFT JOIN run_audit a ON a.run_id = r.id"
	" AND a.partition_key = m.partition_key"
	" WHERE m.request_id = ? ORDER BY m.seq",
	[S_REQUEST_COUNTS] =
	"SELECT m.state, COUNT(*), MAX(r.created_at),"
	" MAX(COALESCE(r.finished_at, r.created_at)) FROM manifest m"
	" JOIN requests r ON r.id = m.request_id WHERE m.request_id = ?"
	" GROUP BY m.state",
	[S_NEWEST_BUILD] =
	"SELECT MAX(built_at) FROM partitions WHERE job = ?1 AND"
	" partition_key BETWEEN ?2 AND ?3",
	/* the newest successful runs' durations (runs_job_succeeded) */
	[S_DURATIONS] =
	"SELECT finished_at - started_at FROM runs WHERE job = ?1 AND"
	" state = 'succeeded' AND finished_at IS NOT NULL ORDER BY id DESC"
	" LIMIT ?2",
	/* transactions and savepoints, stepped on every state change */
	[S_REQUEST_BUDGET] =
	"UPDATE requests SET spent_ms = ?2, over_budget_at = CASE WHEN ?3 IS"
	" NULL THEN NULL ELSE COALESCE(over_budget_at, ?3) END WHERE id = ?1",
	/* requests_over_budget: the newest first, at most ?1 */
	[S_OVER_BUDGET] =
	"SELECT r.id, r.job, r.budget_ms, r.spent_ms, r.over_budget_at,"
	" (SELECT COUNT(*) FROM manifest m WHERE m.request_id = r.id AND"
	" m.state = 'cancelled') FROM requests r WHERE r.over_budget_at IS NOT"
	" NULL ORDER BY r.id DESC LIMIT ?1",
	[S_TX_BEGIN] = "BEGIN IMMEDIATE",
	[S_TX_COMMIT] = "COMMIT",
	[S_TX_ROLLBACK] = "ROLLBACK",
	[S_SP_SET] = "SAVEPOINT store_sp",
	[S_SP_RELEASE] = "RELEASE store_sp",
	[S_SP_ROLLBACK] = "ROLLBACK TO store_sp",
};

struct store_sqlite {
	struct store base; /* first: store.c sees this */
	sqlite3 *db;
	sqlite3_stmt *stmt[S_COUNT];
	/* checkpoints off the loop (store_sqlite_checkpoint_on) */
	char *path;
	uv_loop_t *loop;
	uv_work_t ckpt_work;
	bool ckpt_busy;
	sqlite3 *ckpt_db; /* the thread pool's connection, opened on use */
	int ckpt_log;     /* the pool's last checkpoint: WAL frames seen */
	char ckpt_err[256];
	int64_t ckpt_loop; /* checkpoints the loop had to run itself */
	bool ckpt_failing; /* the last checkpoint failed (logged once) */
	int64_t runs_kept; /* rows in runs, counted at open */
	bool tx;       /* a transaction is open */
	bool deferred; /* ... opened by defer: flush commits it */
	int depth;     /* savepoints inside it */
};

/* The implementation's struct from the seam's head. */
static struct store_sqlite *
store_sqlite_of(struct store *base)
{
	return (struct store_sqlite *)base;
}

static void store_sqlite_close(struct store *base);
static int store_sqlite_next(struct store_sqlite *st, sqlite3_stmt *s,
			     struct err *err, const char *what);
static void store_sqlite_done(sqlite3_stmt *s);
static int store_sqlite_wal_hook(void *arg, sqlite3 *db, const char *name,
				 int pages);

/* Fill err from the connection's last error, with context. */
static int
store_sqlite_fail(struct store_sqlite *st, struct err *err, const char *what)
{
	return err_set(err, EXIT_INTERNAL, "state store: %s: %s", what,
		       sqlite3_errmsg(st->db));
}

/* Run SQL without results. */
static int
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

/* The line of a migration that asks for foreign keys off while it runs. */
#define STORE_MIGRATION_FK_OFF "-- backfilld: foreign_keys off"

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
		if (sqlite3_prepare_v3(st->db, store_sql[i], -1,
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

/*
 * Checkpoints, mostly off the loop.  With synchronous=NORMAL a commit
 * writes the WAL without fsync; the checkpoint that copies the WAL back
 * into the database fsyncs both, which takes milliseconds on a busy disk.
 * SQLite would run it inside whichever commit crossed 1000 WAL pages, on
 * the loop thread; instead, once a commit leaves STORE_CKPT_PAGES pages in
 * the WAL, a PASSIVE checkpoint runs on libuv's thread pool, on a
 * connection of its own (one at a time).
 *
 * The bound.  A checkpoint copies frames back but does not shrink the WAL:
 * the next write transaction starts the WAL over from its beginning only
 * if, when it starts, every frame has been copied.  A PASSIVE checkpoint
 * on another connection never waits for the loop's writer, so under a
 * steady stream of commits with no quiet moment it keeps finishing just
 * behind the newest frame, and the WAL grows without end (measured: 600
 * MB for 40,000 small commits in a tight loop).  So once a commit leaves
 * STORE_CKPT_LOOP_PAGES pages, the loop's own connection runs a PASSIVE
 * checkpoint right after that commit: no transaction is open then and the
 * loop is the only writer, so it copies every frame that is left (the
 * pool's checkpoints copied the rest: this is the tail plus the fsyncs)
 * and the next write starts the WAL over; journal_size_limit cuts the
 * file back.  The WAL file therefore never holds much more than
 * STORE_CKPT_LOOP_PAGES pages (16 MiB), and the loop pays for a checkpoint
 * only when the pool could not keep up.  When the pool's checkpoint still
 * holds the lock (a slow fsync on a loaded host), the loop's PASSIVE one
 * gives up, and commits go on growing the WAL; past STORE_CKPT_HARD_PAGES
 * (20 MiB) the loop waits for the pool's to end (SQLite never waits for
 * the checkpoint lock: it retries each millisecond, 2 s at most) and then
 * runs its own: the writer is held back for the length of one checkpoint,
 * and the WAL stays bounded.
 *
 * The pool's connection must read the database once before it can
 * checkpoint: a connection that has not read the schema does not know the
 * database is in WAL mode, and its checkpoint does nothing (that was the
 * WAL that grew to gigabytes).  A checkpoint that fails is logged, once
 * per streak, with SQLite's reason.
 */

/* Thread pool: checkpoint on the pool's own connection. */
static void
store_sqlite_ckpt_work(uv_work_t *w)
{
	struct store_sqlite *st = w->data;
	int rc;

	st->ckpt_err[0] = '\0';
	if (st->ckpt_db == NULL) {
		if (sqlite3_open_v2(st->path, &st->ckpt_db, SQLITE_OPEN_READWRITE |
				    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
		    sqlite3_exec(st->ckpt_db, "SELECT COUNT(*) FROM"
				 " sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
			snprintf(st->ckpt_err, sizeof st->ckpt_err, "opening a"
				 " connection for checkpoints: %s", st->ckpt_db ?
				 sqlite3_errmsg(st->ckpt_db) : "out of memory");
			sqlite3_close(st->ckpt_db);
			st->ckpt_db = NULL;
			return;
		}
	}
	st->ckpt_log = -1;
	rc = sqlite3_wal_checkpoint_v2(st->ckpt_db, NULL,
				       SQLITE_CHECKPOINT_PASSIVE, &st->ckpt_log,
				       NULL);
	/* busy: the loop's own checkpoint holds the lock; that is no failure */
	if (rc == SQLITE_BUSY)
		st->ckpt_log = 0;
	else if (rc != SQLITE_OK)
		snprintf(st->ckpt_err, sizeof st->ckpt_err, "%s",
			 sqlite3_errmsg(st->ckpt_db));
	else if (st->ckpt_log < 0)
		snprintf(st->ckpt_err, sizeof st->ckpt_err, "the checkpoint"
			 " connection does not see the WAL");
}

/* Say once that checkpoints fail, and once that they work again. */
static void
store_sqlite_ckpt_report(struct store_sqlite *st, bool failed, const char *why)
{
	if (failed && !st->ckpt_failing)
		log_warn("state store %s: WAL checkpoint failed: %s; the WAL"
			 " keeps growing until one succeeds", st->path, why);
	else if (!failed && st->ckpt_failing)
		log_notice("state store %s: WAL checkpoints work again",
			   st->path);
	st->ckpt_failing = failed;
}

/* Loop: the pool's checkpoint is over. */
static void
store_sqlite_ckpt_done(uv_work_t *w, int status)
{
	struct store_sqlite *st = w->data;

	st->ckpt_busy = false;
	store_sqlite_ckpt_report(st, status != 0 || st->ckpt_err[0] != '\0',
			  status != 0 ? "cancelled" : st->ckpt_err);
}

/* After each commit: checkpoint on the pool when the WAL has grown, on
 * the loop when the pool could not keep up. */
static int
store_sqlite_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct store_sqlite *st = arg;
	int rc;

	(void)name;
	if (pages >= STORE_CKPT_LOOP_PAGES) {
		rc = sqlite3_wal_checkpoint_v2(db, NULL,
					       SQLITE_CHECKPOINT_PASSIVE, NULL,
					       NULL);
		/* past the hard bound, wait out the pool's checkpoint (its
		 * lock is never waited for by SQLite itself): 1 ms at a time,
		 * 2 s at most */
		for (int i = 0; rc == SQLITE_BUSY &&
		     pages >= STORE_CKPT_HARD_PAGES && i < 2000; i++) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			rc = sqlite3_wal_checkpoint_v2(db, NULL,
						       SQLITE_CHECKPOINT_PASSIVE,
						       NULL, NULL);
		}
		/* busy: the pool's checkpoint holds the lock; next commit */
		if (rc != SQLITE_BUSY)
			store_sqlite_ckpt_report(st, rc != SQLITE_OK, sqlite3_errmsg(db));
		st->ckpt_loop++;
		return SQLITE_OK;
	}
	if (pages >= STORE_CKPT_PAGES && !st->ckpt_busy && st->loop != NULL) {
		st->ckpt_busy = true;
		st->ckpt_work.data = st;
		if (uv_queue_work(st->loop, &st->ckpt_work, store_sqlite_ckpt_work,
				  store_sqlite_ckpt_done) != 0)
			st->ckpt_busy = false;
	}
	return SQLITE_OK;
}

static void
store_sqlite_checkpoint_on(struct store *base, uv_loop_t *loop)
{
	struct store_sqlite *st = store_sqlite_of(base);

	st->loop = loop;
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
		return store_sqlite_fail(st, err, store_sql[id]);
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
static int
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

static int
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

static void
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
static void
bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
}

/* Step a statement that returns no rows, then reset it. */
static int
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
static void
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
static int
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
static int
store_sqlite_id_done(struct store_sqlite *st, sqlite3_stmt *s, int64_t id,
		     struct err *err, const char *what)
{
	sqlite3_bind_int64(s, 1, id);
	return store_sqlite_step_done(st, s, err, what);
}

/* store_sqlite_next with id bound as ?1 (the first row of a lookup). */
static int
store_sqlite_id_next(struct store_sqlite *st, sqlite3_stmt *s, int64_t id,
		     struct err *err, const char *what)
{
	sqlite3_bind_int64(s, 1, id);
	return store_sqlite_next(st, s, err, what);
}

static int
store_sqlite_request_add(struct store *base, const struct store_request *rq,
			 int64_t *id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_ADD];

	bind_text(s, 1, rq->job);
	bind_text(s, 2, rq->kind);
	bind_text(s, 3, rq->reason);
	bind_text(s, 4, rq->from_key);
	bind_text(s, 5, rq->to_key);
	bind_text(s, 6, rq->reprocess ? rq->reprocess : "all");
	sqlite3_bind_int(s, 7, rq->reverse);
	sqlite3_bind_int(s, 8, rq->no_downstream);
	sqlite3_bind_int64(s, 9, rq->created_at);
	if (rq->concurrency > 0)
		sqlite3_bind_int(s, 10, rq->concurrency);
	else
		sqlite3_bind_null(s, 10);
	sqlite3_bind_int(s, 11, rq->fail_fast);
	bind_text(s, 12, rq->downstream);
	if (rq->budget_ms > 0)
		sqlite3_bind_int64(s, 13, rq->budget_ms);
	else
		sqlite3_bind_null(s, 13);
	sqlite3_bind_int(s, 14, rq->no_cutoff);
	if (store_sqlite_step_done(st, s, err, "adding a request") < 0)
		return -1;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

static int
store_sqlite_request_finish(struct store *base, int64_t id, int64_t at,
			    bool cancelled, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_FINISH];

	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, at);
	sqlite3_bind_int(s, 3, cancelled);
	return store_sqlite_step_done(st, s, err, "finishing a request");
}

static int
store_sqlite_item_add(struct store *base, const struct store_item *it,
		      int64_t *id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_ITEM_ADD];

	sqlite3_bind_int64(s, 1, it->request_id);
	bind_text(s, 2, it->job);
	bind_text(s, 3, it->key);
	sqlite3_bind_int(s, 4, it->seq);
	sqlite3_bind_int(s, 5, it->downstream);
	bind_text(s, 6, mstate_name(it->state));
	sqlite3_bind_int64(s, 8, it->at);
	if (store_sqlite_step_done(st, s, err, "adding to the manifest") < 0)
		return -1;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

static int
store_sqlite_item_set(struct store *base, int64_t id, enum mstate state,
		      int attempts, int64_t not_before, const char *error,
		      const char *blocked_on, int changed, int64_t at,
		      struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_ITEM_SET];

	sqlite3_bind_int64(s, 1, id);
	bind_text(s, 2, mstate_name(state));
	sqlite3_bind_int(s, 3, attempts);
	sqlite3_bind_int64(s, 4, not_before);
	bind_text(s, 5, error);
	bind_text(s, 6, blocked_on);
	sqlite3_bind_int64(s, 7, at);
	if (changed >= 0)
		sqlite3_bind_int(s, 8, changed);
	else
		sqlite3_bind_null(s, 8);
	return store_sqlite_step_done(st, s, err, "updating the manifest");
}

static int
store_sqlite_run_start(struct store *base, int64_t manifest_id,
		       int64_t request_id, const char *job, const char *key,
		       int attempt, int64_t started_at,
		       const char *code_version, const char *config_hash,
		       int64_t shared_run, int64_t *run_id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_START];

	sqlite3_bind_int64(s, 1, manifest_id);
	sqlite3_bind_int64(s, 2, request_id);
	bind_text(s, 3, job);
	bind_text(s, 4, key);
	sqlite3_bind_int(s, 5, attempt);
	sqlite3_bind_int64(s, 6, started_at);
	bind_text(s, 7, code_version);
	bind_text(s, 8, config_hash);
	if (shared_run > 0)
		sqlite3_bind_int64(s, 9, shared_run);
	else
		sqlite3_bind_null(s, 9);
	if (store_sqlite_step_done(st, s, err, "recording a run") < 0)
		return -1;
	*run_id = sqlite3_last_insert_rowid(st->db);
	st->runs_kept++;
	return 0;
}

static int
store_sqlite_run_finish(struct store *base, int64_t run_id, enum mstate state,
			int64_t finished_at, const char *error,
			int64_t rows_changed, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_FINISH];

	sqlite3_bind_int64(s, 1, run_id);
	bind_text(s, 2, mstate_name(state));
	sqlite3_bind_int64(s, 3, finished_at);
	bind_text(s, 4, error);
	if (rows_changed >= 0)
		sqlite3_bind_int64(s, 5, rows_changed);
	else
		sqlite3_bind_null(s, 5);
	return store_sqlite_step_done(st, s, err, "finishing a run");
}

static int
store_sqlite_partition_built(struct store *base, const char *job,
			     const char *key, int64_t built_at,
			     int64_t inputs_at, int64_t run_id,
			     const char *code_version, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PART_BUILT];

	bind_text(s, 1, job);
	bind_text(s, 2, key);
	sqlite3_bind_int64(s, 3, built_at);
	if (inputs_at >= 0)
		sqlite3_bind_int64(s, 4, inputs_at);
	else
		sqlite3_bind_null(s, 4);
	sqlite3_bind_int64(s, 5, run_id);
	bind_text(s, 6, code_version);
	return store_sqlite_step_done(st, s, err, "recording a build");
}

static int
store_sqlite_partition_get(struct store *base, const char *job, const char *key,
			   int64_t *built_at, int64_t *inputs_at,
			   char *code_version, size_t cvsz, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PART_GET];
	int rc;

	bind_text(s, 1, job);
	bind_text(s, 2, key);
	rc = store_sqlite_next(st, s, err, "reading a build");
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	*built_at = sqlite3_column_int64(s, 0);
	*inputs_at = sqlite3_column_type(s, 1) == SQLITE_NULL ? -1 :
		sqlite3_column_int64(s, 1);
	if (code_version != NULL)
		snprintf(code_version, cvsz, "%s",
			 sqlite3_column_text(s, 2) ?
			 (const char *)sqlite3_column_text(s, 2) : "");
	store_sqlite_done(s);
	return 0;
}

static int
store_sqlite_recover(struct store *base, int64_t at, const int64_t *keep,
		     size_t nkeep, int *count, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	char sql[512];

	(void)keep;
	if (nkeep > 0)
		return err_set(err, EXIT_INTERNAL, "state store: one host"
			       " adopts no runs");
	if (store_sqlite_begin(base, err) < 0)
		return -1;
	snprintf(sql, sizeof sql,
		 "UPDATE runs SET state = 'failed', finished_at = %lld, error ="
		 " 'interrupted: the daemon stopped during the run; queued again'"
		 " WHERE state = 'running' AND request_id IN (SELECT id FROM"
		 " requests WHERE finished_at IS NULL)", (long long)at);
	if (store_sqlite_exec(st, sql, err) < 0)
		goto fail;
	*count = sqlite3_changes(st->db);
	snprintf(sql, sizeof sql,
		 "UPDATE manifest SET state = 'queued', updated_at = %lld,"
		 " attempts = MAX(attempts - 1, 0)"
		 " WHERE state = 'running' AND request_id IN (SELECT id FROM"
		 " requests WHERE finished_at IS NULL)", (long long)at);
	if (store_sqlite_exec(st, sql, err) < 0)
		goto fail;
	return store_sqlite_commit(base, err);
fail:
	store_sqlite_rollback(base);
	return -1;
}

/* Text column or NULL. */
static const char *
col_text(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

/* Call cb for each row of a manifest query (S_LOAD_OPEN, S_LOAD_ONE). */
static int
store_sqlite_load_rows(struct store_sqlite *st, sqlite3_stmt *s,
		       store_open_cb cb, void *data, struct err *err)
{
	struct store_open_row row;
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "loading the manifest")) > 0) {
		memset(&row, 0, sizeof row);
		row.id = sqlite3_column_int64(s, 0);
		row.request_id = sqlite3_column_int64(s, 1);
		row.job = col_text(s, 2);
		row.key = col_text(s, 3);
		row.seq = sqlite3_column_int(s, 4);
		row.downstream = sqlite3_column_int(s, 5);
		if (mstate_parse(col_text(s, 6), &row.state) < 0)
			row.state = MS_QUEUED;
		row.attempts = sqlite3_column_int(s, 7);
		row.not_before = sqlite3_column_int64(s, 8);
		row.blocked_on = col_text(s, 9);
		row.rq_job = col_text(s, 10);
		row.rq_kind = col_text(s, 11);
		row.rq_reverse = sqlite3_column_int(s, 12);
		row.rq_created_at = sqlite3_column_int64(s, 13);
		row.rq_concurrency = sqlite3_column_int(s, 14);
		row.rq_fail_fast = sqlite3_column_int(s, 15);
		row.rq_budget_ms = sqlite3_column_int64(s, 16);
		row.rq_spent_ms = sqlite3_column_int64(s, 17);
		row.rq_over_budget = sqlite3_column_int(s, 18);
		row.rq_no_cutoff = sqlite3_column_int(s, 19);
		row.changed = sqlite3_column_type(s, 20) == SQLITE_NULL ? -1 :
			      sqlite3_column_int(s, 20);
		if (cb(&row, data, err) < 0) {
			store_sqlite_done(s);
			return -1;
		}
	}
	return rc;
}

static int
store_sqlite_load_open(struct store *base, store_open_cb cb, void *data,
		       struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);

	return store_sqlite_load_rows(st, st->stmt[S_LOAD_OPEN], cb, data, err);
}

static int
store_sqlite_load_request(struct store *base, int64_t request_id,
			  store_open_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LOAD_ONE];

	sqlite3_bind_int64(s, 1, request_id);
	return store_sqlite_load_rows(st, s, cb, data, err);
}

static int
store_sqlite_request_reopen(struct store *base, int64_t id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_REOPEN];

	return store_sqlite_id_done(st, s, id, err, "reopening a request");
}

static int
store_sqlite_last_states(struct store *base, const char *job,
			 const char *first_key, const char *last_key,
			 store_last_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LAST_STATES];
	enum mstate state;
	int rc;

	bind_text(s, 1, job);
	bind_text(s, 2, first_key);
	bind_text(s, 3, last_key);
	while ((rc = store_sqlite_next(st, s, err, "reading the last runs")) > 0) {
		if (mstate_parse(col_text(s, 1), &state) == 0)
			cb(col_text(s, 0), state, data);
	}
	return rc;
}

/* Hand each key of a builds query (first column) to cb. */
static int
store_sqlite_key_rows(struct store_sqlite *st, sqlite3_stmt *s,
		      store_key_cb cb, void *data, struct err *err)
{
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "reading builds")) > 0) {
		if (cb(col_text(s, 0), data, err) < 0) {
			store_sqlite_done(s);
			return -1;
		}
	}
	return rc;
}

static int
store_sqlite_keys_built_by(struct store *base, const char *job,
			   const char *code_version, store_key_cb cb,
			   void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_BUILT_BY];

	bind_text(s, 1, job);
	bind_text(s, 2, code_version);
	return store_sqlite_key_rows(st, s, cb, data, err);
}

static int
store_sqlite_keys_changed(struct store *base, const char *job,
			  const char *code_version, const char *first_key,
			  const char *last_key, store_key_cb cb, void *data,
			  struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_KEYS_CHANGED];

	bind_text(s, 1, job);
	bind_text(s, 2, code_version);
	bind_text(s, 3, first_key);
	bind_text(s, 4, last_key);
	return store_sqlite_key_rows(st, s, cb, data, err);
}

static int
store_sqlite_partitions_of(struct store *base, const char *job,
			   store_built_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PARTS_OF];
	int rc;

	bind_text(s, 1, job);
	while ((rc = store_sqlite_next(st, s, err, "reading builds")) > 0) {
		bool has = sqlite3_column_type(s, 2) != SQLITE_NULL;

		if (cb(col_text(s, 0), sqlite3_column_int64(s, 1), has,
		       has ? sqlite3_column_int64(s, 2) : 0, data, err) < 0) {
			store_sqlite_done(s);
			return -1;
		}
	}
	return rc;
}

static int
store_sqlite_partition_finished(struct store *base, const char *job,
				const char *key, int64_t run_id,
				enum mstate state, store_prev_cb cb,
				void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LATEST_GET];
	enum mstate prev = MS_COUNT;
	int rc;

	bind_text(s, 1, job);
	bind_text(s, 2, key);
	rc = store_sqlite_next(st, s, err, "reading a partition's last run");
	if (rc < 0)
		return -1;
	if (rc > 0) {
		if (mstate_parse(col_text(s, 0), &prev) < 0)
			prev = MS_COUNT;
		store_sqlite_done(s);
	}
	s = st->stmt[S_LATEST_PUT];
	bind_text(s, 1, job);
	bind_text(s, 2, key);
	sqlite3_bind_int64(s, 3, run_id);
	bind_text(s, 4, mstate_name(state));
	if (store_sqlite_step_done(st, s, err,
				   "recording a partition's last run") < 0)
		return -1;
	if (cb != NULL)
		cb(job, prev, state, data);
	return 0;
}

static int
store_sqlite_latest_counts(struct store *base, store_count_cb cb, void *data,
			   struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LATEST_COUNTS];
	enum mstate state;
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "counting partitions")) > 0) {
		if (mstate_parse(col_text(s, 1), &state) == 0)
			cb(col_text(s, 0), state, sqlite3_column_int64(s, 2),
			   data);
	}
	return rc;
}

static int
store_sqlite_run_proc(struct store *base, int64_t run_id, int64_t pgid,
		      int64_t proc_start, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_PROC];

	sqlite3_bind_int64(s, 1, run_id);
	sqlite3_bind_int64(s, 2, pgid);
	sqlite3_bind_int64(s, 3, proc_start);
	return store_sqlite_step_done(st, s, err, "recording a run's process");
}

static int
store_sqlite_run_lookup(struct store *base, const char *job, const char *key,
			int attempt, struct store_run_info *out,
			struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_LOOKUP];
	int rc;

	bind_text(s, 1, job);
	bind_text(s, 2, key);
	sqlite3_bind_int(s, 3, attempt);
	rc = store_sqlite_next(st, s, err, "reading a run");
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	out->id = sqlite3_column_int64(s, 0);
	out->request_id = sqlite3_column_int64(s, 1);
	out->attempt = sqlite3_column_int(s, 2);
	if (mstate_parse(col_text(s, 3), &out->state) < 0)
		out->state = MS_FAILED;
	snprintf(out->error, sizeof out->error, "%s",
		 col_text(s, 4) ? col_text(s, 4) : "");
	store_sqlite_done(s);
	return 0;
}

/* One host: every log is this host's. */
static int
store_sqlite_run_node(struct store *base, int64_t run_id, const char *node,
		      struct err *err)
{
	(void)base;
	(void)run_id;
	(void)node;
	(void)err;
	return 0;
}

static int
store_sqlite_run_mark(struct store *base, int64_t run_id, const char *by,
		      struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_MARK];

	sqlite3_bind_int64(s, 1, run_id);
	bind_text(s, 2, by);
	return store_sqlite_step_done(st, s, err, "recording a mark");
}

static int
store_sqlite_marked_keys(struct store *base, const char *job,
			 const char *first_key, const char *last_key,
			 store_last_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_MARKED_KEYS];
	int rc;

	bind_text(s, 1, job);
	bind_text(s, 2, first_key);
	bind_text(s, 3, last_key);
	while ((rc = store_sqlite_next(st, s, err, "reading the marks")) > 0)
		cb(col_text(s, 0), MS_SUCCEEDED, data);
	return rc;
}

static int
store_sqlite_orphans(struct store *base, store_orphan_cb cb, void *data,
		     struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_ORPHANS];
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "reading runs left running")) > 0)
		cb(sqlite3_column_int64(s, 0), col_text(s, 1), col_text(s, 2),
		   sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4), data);
	return rc;
}

static int
store_sqlite_run_unstart(struct store *base, int64_t run_id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_UNSTART];

	if (store_sqlite_id_done(st, s, run_id, err,
				 "forgetting a run that never started") < 0)
		return -1;
	st->runs_kept -= sqlite3_changes(st->db);
	return 0;
}

static int
store_sqlite_probe_write(struct store *base, int64_t min_free, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	char dir[4096], *slash;
	struct statvfs vfs;
	char sql[64];

	if (st->tx)
		return err_set(err, EXIT_INTERNAL, "a transaction is open");
	snprintf(dir, sizeof dir, "%s", st->path);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	if (statvfs(dir, &vfs) == 0 &&
	    (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize < min_free)
		return err_set(err, EXIT_INTERNAL, "%s has %lld bytes free, less"
			       " than %lld", dir, (long long)vfs.f_bavail *
			       (long long)vfs.f_frsize, (long long)min_free);
	/* rewrite page 1 (the schema version, unchanged): a real commit */
	snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; PRAGMA user_version = %d;"
		 " COMMIT", sql_migrations_count);
	if (store_sqlite_exec(st, sql, err) < 0) {
		store_sqlite_exec(st, "ROLLBACK", NULL);
		return -1;
	}
	return 0;
}

static void
store_sqlite_stats(struct store *base, struct store_stats *out)
{
	struct store_sqlite *st = store_sqlite_of(base);
	struct stat sb;
	char wal[4096];
	sqlite3_stmt *s;

	memset(out, 0, sizeof *out);
	out->runs_kept = st->runs_kept;
	out->loop_checkpoints = st->ckpt_loop;
	if (sqlite3_prepare_v2(st->db, "SELECT page_count * page_size FROM"
			       " pragma_page_count(), pragma_page_size()", -1,
			       &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			out->db_bytes = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	snprintf(wal, sizeof wal, "%s-wal", st->path);
	if (stat(wal, &sb) == 0)
		out->wal_bytes = sb.st_size;
}

/*
 * Pruning, one slice at a time.  Phase 1 walks runs by id and deletes
 * each finished run older than its job's keep_runs with its audit rows,
 * unless it is its partition's newest run or newest successful run (in
 * partition_latest and partitions), still running, or of a request still
 * open.  Phase 2 walks requests by id and, for each finished one older
 * than its job's keep_runs, deletes the manifest rows no run refers to
 * any more and then the request if nothing is left of it.  A walk stops
 * at the first row younger than every job's keep_runs (ids grow with
 * time), so a pass reads the old history that is kept (one run or two per
 * partition) and nothing newer.
 */
static int
store_sqlite_prune_step(struct store *base, struct store_prune *pr, int limit,
			struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s;
	int64_t *ids, nids = 0, seen = 0;
	bool end = false;
	int rc;

	if (pr->phase >= 2)
		return 0;
	ids = xcalloc((size_t)limit, sizeof *ids);
	s = st->stmt[pr->phase == 0 ? S_PRUNE_RUNS : S_PRUNE_REQUESTS];
	sqlite3_bind_int64(s, 1, pr->cursor);
	sqlite3_bind_int(s, 2, limit);
	while ((rc = store_sqlite_next(st, s, err, "reading history to prune")) > 0) {
		int64_t id = sqlite3_column_int64(s, 0);
		const char *job = col_text(s, 1);
		int64_t started = sqlite3_column_int64(s, 2);
		bool finished = sqlite3_column_type(s, 3) != SQLITE_NULL;
		int64_t finished_at = sqlite3_column_int64(s, 3);
		bool keep = pr->phase == 0 && sqlite3_column_int(s, 4);

		seen++;
		if (started >= pr->newest_cutoff) {
			end = true; /* younger than any keep_runs: done */
			store_sqlite_done(s);
			break;
		}
		pr->cursor = id;
		if (!keep && finished &&
		    finished_at < pr->cutoff(job, pr->data))
			ids[nids++] = id;
	}
	if (rc < 0)
		goto fail;
	for (int64_t i = 0; i < nids; i++) {
		if (pr->phase == 0) {
			s = st->stmt[S_PRUNE_AUDIT_DEL];
			if (store_sqlite_id_done(st, s, ids[i], err,
						 "pruning audit rows") < 0)
				goto fail;
			s = st->stmt[S_PRUNE_RUN_DEL];
			if (store_sqlite_id_done(st, s, ids[i], err,
						 "pruning runs") < 0)
				goto fail;
			pr->runs += sqlite3_changes(st->db);
			st->runs_kept -= sqlite3_changes(st->db);
		} else {
			s = st->stmt[S_PRUNE_MANIFEST_DEL];
			if (store_sqlite_id_done(st, s, ids[i], err,
						 "pruning the manifest") < 0)
				goto fail;
			s = st->stmt[S_PRUNE_REQUEST_DEL];
			if (store_sqlite_id_done(st, s, ids[i], err,
						 "pruning requests") < 0)
				goto fail;
			pr->requests += sqlite3_changes(st->db);
		}
	}
	free(ids);
	if (end || seen < limit) { /* the walk reached the end or a young row */
		pr->phase++;
		pr->cursor = 0;
	}
	return pr->phase < 2 ? 1 : 0;
fail:
	free(ids);
	return -1;
}

/* Copy a text column into a fixed buffer ("" for NULL). */
static void
col_copy(sqlite3_stmt *s, int i, char *buf, size_t sz)
{
	const char *v = col_text(s, i);

	snprintf(buf, sz, "%s", v ? v : "");
}

static int
store_sqlite_job_get(struct store *base, const char *job,
		     struct store_job_state *js, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_JOB_GET];
	int rc;

	memset(js, 0, sizeof *js);
	strcpy(js->catchup, "ok");
	bind_text(s, 1, job);
	rc = store_sqlite_next(st, s, err, "reading job state");
	if (rc < 0)
		return -1;
	if (rc > 0) {
		js->has_watermark = sqlite3_column_type(s, 0) != SQLITE_NULL;
		col_copy(s, 0, js->watermark, sizeof js->watermark);
		col_copy(s, 1, js->catchup, sizeof js->catchup);
		col_copy(s, 2, js->gap_from, sizeof js->gap_from);
		col_copy(s, 3, js->gap_to, sizeof js->gap_to);
		js->paused = sqlite3_column_int(s, 4);
		js->paused_at = sqlite3_column_int64(s, 5);
		js->has_late_since = sqlite3_column_type(s, 6) != SQLITE_NULL;
		js->late_since = sqlite3_column_int64(s, 6);
		js->has_late_checked = sqlite3_column_type(s, 7) != SQLITE_NULL;
		js->late_checked_at = sqlite3_column_int64(s, 7);
		js->late_found = sqlite3_column_int64(s, 8);
		col_copy(s, 9, js->late_error, sizeof js->late_error);
		js->has_reconciled = sqlite3_column_type(s, 10) != SQLITE_NULL;
		col_copy(s, 10, js->reconciled, sizeof js->reconciled);
		store_sqlite_done(s);
	}
	return 0;
}

static int
store_sqlite_job_put(struct store *base, const char *job,
		     const struct store_job_state *js, int64_t at,
		     struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_JOB_PUT];

	bind_text(s, 1, job);
	bind_text(s, 2, js->has_watermark ? js->watermark : NULL);
	bind_text(s, 3, js->catchup[0] ? js->catchup : "ok");
	bind_text(s, 4, js->gap_from[0] ? js->gap_from : NULL);
	bind_text(s, 5, js->gap_to[0] ? js->gap_to : NULL);
	sqlite3_bind_int(s, 6, js->paused);
	if (js->paused)
		sqlite3_bind_int64(s, 7, js->paused_at);
	else
		sqlite3_bind_null(s, 7);
	sqlite3_bind_int64(s, 8, at);
	if (js->has_late_since)
		sqlite3_bind_int64(s, 9, js->late_since);
	if (js->has_late_checked) {
		sqlite3_bind_int64(s, 10, js->late_checked_at);
		sqlite3_bind_int64(s, 11, js->late_found);
	}
	bind_text(s, 12, js->late_error[0] ? js->late_error : NULL);
	bind_text(s, 13, js->has_reconciled ? js->reconciled : NULL);
	return store_sqlite_step_done(st, s, err, "saving job state");
}

static int
store_sqlite_trend_values(struct store *base, const char *job,
			  const char *metric, size_t max, store_trend_cb cb,
			  void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_VALUES];
	int rc;

	bind_text(s, 1, job);
	bind_text(s, 2, metric);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)max);
	while ((rc = store_sqlite_next(st, s, err, "reading trend values")) > 0)
		cb(col_text(s, 0), sqlite3_column_double(s, 1), data);
	return rc < 0 ? -1 : 0;
}

static int
store_sqlite_trend_put(struct store *base, const char *job,
		       const char *metric, const char *key, double value,
		       int64_t run_id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_PUT];

	bind_text(s, 1, job);
	bind_text(s, 2, metric);
	bind_text(s, 3, key);
	sqlite3_bind_double(s, 4, value);
	sqlite3_bind_int64(s, 5, run_id);
	return store_sqlite_step_done(st, s, err, "recording a trend value");
}

static int
store_sqlite_trend_trim(struct store *base, const char *job,
			const char *metric, size_t keep, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_TRIM];

	bind_text(s, 1, job);
	bind_text(s, 2, metric);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)keep);
	return store_sqlite_step_done(st, s, err, "trimming trend values");
}

static int
store_sqlite_trend_series(struct store *base, store_series_cb cb, void *data,
			  struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_SERIES];
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "reading trend series")) > 0)
		cb(col_text(s, 0), col_text(s, 1), data);
	return rc < 0 ? -1 : 0;
}

static int
store_sqlite_request_get(struct store *base, int64_t id, char *job,
			 size_t jobsz, bool *finished, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_GET];
	int rc;

	rc = store_sqlite_id_next(st, s, id, err, "reading a request");
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	col_copy(s, 0, job, jobsz);
	*finished = sqlite3_column_int(s, 1);
	store_sqlite_done(s);
	return 0;
}

static int
store_sqlite_request_controls(struct store *base, int64_t id, int *concurrency,
			      bool *fail_fast, char *downstream, size_t dsz,
			      struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_CONTROLS];
	int rc;

	rc = store_sqlite_id_next(st, s, id, err, "reading a request's controls");
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	*concurrency = sqlite3_column_int(s, 0);
	*fail_fast = sqlite3_column_int(s, 1);
	col_copy(s, 2, downstream, dsz);
	store_sqlite_done(s);
	return 0;
}

static int
store_sqlite_request_budget(struct store *base, int64_t id, int64_t spent_ms,
			    int64_t over_at, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_BUDGET];

	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, spent_ms);
	if (over_at > 0)
		sqlite3_bind_int64(s, 3, over_at);
	else
		sqlite3_bind_null(s, 3);
	return store_sqlite_step_done(st, s, err, "writing a request's"
				      " measured time");
}

static int
store_sqlite_over_budget(struct store *base, int limit, store_budget_cb cb,
			 void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_OVER_BUDGET];
	struct store_budget_row row;
	int rc;

	sqlite3_bind_int(s, 1, limit);
	while ((rc = store_sqlite_next(st, s, err, "reading the requests"
				       " stopped over budget")) > 0) {
		row.id = sqlite3_column_int64(s, 0);
		row.job = col_text(s, 1);
		row.budget_ms = sqlite3_column_int64(s, 2);
		row.spent_ms = sqlite3_column_int64(s, 3);
		row.over_at = sqlite3_column_int64(s, 4);
		row.cancelled = sqlite3_column_int64(s, 5);
		cb(&row, data);
	}
	return rc;
}

static int
store_sqlite_recent_requests(struct store *base, int limit, store_recent_cb cb,
			     void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RECENT_REQUESTS];
	int rc;

	sqlite3_bind_int(s, 1, limit);
	while ((rc = store_sqlite_next(st, s, err, "reading the recent requests")) > 0)
		cb(sqlite3_column_int64(s, 0), col_text(s, 1), col_text(s, 2),
		   sqlite3_column_type(s, 3) == SQLITE_NULL ? NULL : col_text(s, 3),
		   sqlite3_column_int64(s, 4),
		   sqlite3_column_type(s, 5) != SQLITE_NULL,
		   sqlite3_column_int64(s, 5), sqlite3_column_int(s, 6) != 0,
		   data);
	return rc;
}

static int
store_sqlite_request_problems(struct store *base, int64_t request_id,
			      store_problem_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PROBLEMS];
	int rc;

	sqlite3_bind_int64(s, 1, request_id);
	while ((rc = store_sqlite_next(st, s, err,
				"reading a request's failures")) > 0)
		cb(col_text(s, 0), col_text(s, 1), col_text(s, 2), col_text(s, 3),
		   col_text(s, 4), data);
	return rc;
}

static int
store_sqlite_audit_add(struct store *base, int64_t run_id, const char *key,
		       bool has_before, int64_t rows_before, bool has_after,
		       int64_t rows_after, const char *metrics,
		       const char *checks, const char *metrics_text,
		       const char *checks_text, bool passed,
		       const char *sum_before, const char *sum_after,
		       struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_AUDIT_ADD];

	sqlite3_bind_int64(s, 1, run_id);
	bind_text(s, 2, key);
	if (has_before)
		sqlite3_bind_int64(s, 3, rows_before);
	if (has_after)
		sqlite3_bind_int64(s, 4, rows_after);
	bind_text(s, 5, metrics ? metrics : "{}");
	bind_text(s, 6, checks ? checks : "[]");
	sqlite3_bind_int(s, 7, passed);
	bind_text(s, 8, metrics_text);
	bind_text(s, 9, checks_text);
	bind_text(s, 10, sum_before);
	bind_text(s, 11, sum_after);
	return store_sqlite_step_done(st, s, err, "recording an audit");
}

static int
store_sqlite_audit_of(struct store *base, int64_t request_id, store_audit_cb cb,
		      void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_AUDIT_OF];
	struct store_audit_row row;
	int rc;

	sqlite3_bind_int64(s, 1, request_id);
	while ((rc = store_sqlite_next(st, s, err, "reading the audit")) > 0) {
		memset(&row, 0, sizeof row);
		row.job = col_text(s, 0);
		row.key = col_text(s, 1);
		row.downstream = sqlite3_column_int(s, 2);
		row.item_state = col_text(s, 3);
		row.has_run = sqlite3_column_type(s, 4) != SQLITE_NULL;
		row.run_id = sqlite3_column_int64(s, 4);
		row.code_version = col_text(s, 5);
		row.config_hash = col_text(s, 6);
		row.run_state = col_text(s, 7);
		row.error = col_text(s, 8);
		row.has_rows_before = sqlite3_column_type(s, 9) != SQLITE_NULL;
		row.rows_before = sqlite3_column_int64(s, 9);
		row.has_rows_after = sqlite3_column_type(s, 10) != SQLITE_NULL;
		row.rows_after = sqlite3_column_int64(s, 10);
		row.metrics = col_text(s, 11);
		row.checks = col_text(s, 12);
		row.has_audit = sqlite3_column_type(s, 13) != SQLITE_NULL;
		row.passed = sqlite3_column_int(s, 13);
		row.metrics_text = col_text(s, 14);
		row.checks_text = col_text(s, 15);
		row.item_error = col_text(s, 16);
		row.sum_before = col_text(s, 17);
		row.sum_after = col_text(s, 18);
		cb(&row, data);
	}
	return rc;
}

static int
store_sqlite_request_counts(struct store *base, int64_t request_id,
			    int64_t counts[MS_COUNT], int64_t *elapsed_ms,
			    struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_COUNTS];
	enum mstate state;
	int rc;

	for (int i = 0; i < MS_COUNT; i++)
		counts[i] = 0;
	*elapsed_ms = 0;
	sqlite3_bind_int64(s, 1, request_id);
	while ((rc = store_sqlite_next(st, s, err, "counting a request")) > 0) {
		if (mstate_parse(col_text(s, 0), &state) == 0)
			counts[state] += sqlite3_column_int64(s, 1);
		*elapsed_ms = sqlite3_column_int64(s, 3) -
			sqlite3_column_int64(s, 2);
	}
	return rc;
}

static int
store_sqlite_durations(struct store *base, const char *job, int64_t *ms,
		       size_t max, size_t *n, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_DURATIONS];
	int rc;

	*n = 0;
	bind_text(s, 1, job);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
	while ((rc = store_sqlite_next(st, s, err, "reading run durations")) > 0) {
		if (*n < max)
			ms[(*n)++] = sqlite3_column_int64(s, 0);
	}
	return rc < 0 ? -1 : 0;
}

static int
store_sqlite_newest_build(struct store *base, const char *job,
			  const char *first_key, const char *last_key,
			  int64_t *built_at, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_NEWEST_BUILD];
	int rc, found = 1;

	bind_text(s, 1, job);
	bind_text(s, 2, first_key);
	bind_text(s, 3, last_key);
	while ((rc = store_sqlite_next(st, s, err, "reading builds")) > 0) {
		if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
			*built_at = sqlite3_column_int64(s, 0);
			found = 0;
		}
	}
	return rc < 0 ? -1 : found;
}

/* ---- runs, page by page (store_runs.c: the keyset cursor) ----------- */

/* Statements are prepared per window and finalized before returning: a
 * cursor holds no SQLite resource between pages (no read transaction,
 * nothing to finalize before the store closes). */
struct store_sqlite_cursor {
	struct store_runs_cursor base; /* first: store.c sees this */
	struct store_sqlite *st;
};

static void store_sqlite_runs_close(struct store_runs_cursor *base);

/* The bounds min(id) and max(id)+1 of table; empty: lo = hi = 0. */
static int
store_sqlite_runs_bounds(struct store_sqlite *st, const char *table,
			 int64_t *lo, int64_t *hi, struct err *err)
{
	sqlite3_stmt *s;
	char sql[96];
	int rc;

	snprintf(sql, sizeof sql, "SELECT min(id), max(id) FROM %s", table);
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return store_sqlite_fail(st, err, "listing runs");
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(s);
		return store_sqlite_fail(st, err, "listing runs");
	}
	*lo = *hi = 0;
	if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
		*lo = sqlite3_column_int64(s, 0);
		*hi = sqlite3_column_int64(s, 1) + 1;
	}
	sqlite3_finalize(s);
	return 0;
}

static int
store_sqlite_runs_open(struct store *base, const char *job, int64_t request_id,
		       const char *state, struct store_runs_cursor **out,
		       struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	struct store_sqlite_cursor *c = xcalloc(1, sizeof *c);

	store_runs_init(&c->base, base, job, request_id, state);
	c->st = st;
	if (store_sqlite_runs_bounds(st, "manifest", &c->base.lo[0],
				     &c->base.hi[0], err) < 0 ||
	    store_sqlite_runs_bounds(st, "runs", &c->base.lo[1],
				     &c->base.hi[1], err) < 0) {
		store_sqlite_runs_close(&c->base);
		return -1;
	}
	store_runs_clip(&c->base);
	*out = &c->base;
	return 0;
}

/* One row of a window query as a struct store_run_row. */
static void
store_sqlite_run_row(sqlite3_stmt *s, struct store_run_row *row)
{
	memset(row, 0, sizeof *row);
	row->has_id = sqlite3_column_type(s, 0) != SQLITE_NULL;
	row->id = sqlite3_column_int64(s, 0);
	row->request_id = sqlite3_column_int64(s, 1);
	row->job = col_text(s, 2);
	row->key = col_text(s, 3);
	row->attempt = sqlite3_column_int(s, 4);
	row->state = col_text(s, 5);
	row->has_started_at = sqlite3_column_type(s, 6) != SQLITE_NULL;
	row->started_at = sqlite3_column_int64(s, 6);
	row->has_finished_at = sqlite3_column_type(s, 7) != SQLITE_NULL;
	row->finished_at = sqlite3_column_int64(s, 7);
	row->error = col_text(s, 8);
	row->has_rows = sqlite3_column_type(s, 9) != SQLITE_NULL;
	row->rows_changed = sqlite3_column_int64(s, 9);
	row->code_version = col_text(s, 10);
	row->marked_by = col_text(s, 11);
}

/* One window query of the current phase (store_runs_window_fn). */
static int
store_sqlite_runs_window(struct store_runs_cursor *base, int64_t lo,
			 struct store_runs_page *pg, struct err *err)
{
	struct store_sqlite_cursor *c = (struct store_sqlite_cursor *)base;
	struct store_run_row row;
	sqlite3_stmt *s;
	char sql[768];
	int rc = SQLITE_DONE;

	store_runs_sql(base, '?', sql, sizeof sql);
	if (sqlite3_prepare_v2(c->st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return store_sqlite_fail(c->st, err, "listing runs");
	sqlite3_bind_int64(s, 1, base->hi[base->phase]);
	sqlite3_bind_int64(s, 2, lo);
	if (base->job)
		sqlite3_bind_text(s, 3, base->job, -1, SQLITE_STATIC);
	if (base->request_id)
		sqlite3_bind_int64(s, 4, base->request_id);
	if (base->state)
		sqlite3_bind_text(s, 5, base->state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, pg->max_rows);
	while (!pg->stop && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		store_sqlite_run_row(s, &row);
		if (store_runs_row(base, &row, sqlite3_column_int64(s, 12), pg,
				   err) < 0) {
			sqlite3_finalize(s);
			return -1;
		}
	}
	if (!pg->stop && rc != SQLITE_DONE) {
		store_sqlite_fail(c->st, err, "listing runs");
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

static int
store_sqlite_runs_page(struct store_runs_cursor *base, int max_rows,
		       store_run_cb cb, void *data, struct err *err)
{
	return store_runs_walk(base, max_rows, store_sqlite_runs_window, cb,
			       data, err);
}

static void
store_sqlite_runs_close(struct store_runs_cursor *base)
{
	if (base == NULL)
		return;
	store_runs_free(base);
	free(base);
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
	.trend_values = store_sqlite_trend_values,
	.trend_put = store_sqlite_trend_put,
	.trend_trim = store_sqlite_trend_trim,
	.trend_series = store_sqlite_trend_series,
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
