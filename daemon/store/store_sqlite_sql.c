/*
 * store_sqlite_sql.c - every statement of the SQLite state store, prepared
 * once at open (store_sqlite_open) and reset after use.
 */
#include "store_sqlite_int.h"

const char *const store_sqlite_sql[S_COUNT] = {
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
	STORE_LOAD_ITEMS "r.finished_at IS NULL"
	" ORDER BY m.request_id, m.seq",
	[S_LOAD_ONE] =
	STORE_LOAD_ITEMS "r.id = ?1"
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
	"SELECT COALESCE(r.shared_run, r.id), r.request_id, r.attempt, r.state,"
	" r.error, NULL FROM partition_latest l JOIN runs x ON x.id = l.run_id JOIN runs r"
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
	" q.finished_at IS NULL), r.partition_key"
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
	/* the calendar a job's keys were built in (sql/013_job_calendar.sql)
	 * and whether any of them was */
	[S_JOB_CAL_GET] =
	"SELECT (SELECT calendar FROM jobs WHERE job = ?1),"
	" EXISTS (SELECT 1 FROM partitions WHERE job = ?1)",
	[S_JOB_CAL_PUT] =
	"INSERT INTO jobs (job, calendar, updated_at) VALUES (?1, ?2, ?3)"
	" ON CONFLICT (job) DO UPDATE SET calendar = ?2",
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
	/* shards' publishes (sql/009_shard_publishes.sql) */
	[S_SHARD_PUT] =
	"INSERT INTO shard_publishes (request, job, partition_key, shard,"
	" nshards, run_id, rows_before, rows_after, published_at) VALUES"
	" (?1,?2,?3,?4,?5,?6,?7,?8,?9) ON CONFLICT (request, job,"
	" partition_key, shard) DO UPDATE SET nshards = ?5, run_id = ?6,"
	" rows_before = ?7, rows_after = ?8, published_at = ?9",
	[S_SHARDS_OF] =
	"SELECT request, job, partition_key, shard, nshards, run_id, rows_before, rows_after, published_at"
	" FROM shard_publishes WHERE request = ?1 AND job = ?2 AND"
	" partition_key = ?3 ORDER BY shard",
	[S_SHARDS_PARTIAL] = STORE_SHARDS_PARTIAL,
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
	" sum_before, sum_after, changes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_AUDIT_OF] = STORE_AUDIT_OF("?"),
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
