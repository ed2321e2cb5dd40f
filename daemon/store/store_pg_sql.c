/*
 * store_pg_sql.c - the statements of the PostgreSQL state store
 * (store_pg_int.h; the rules are at the top of store_pg.c): one per
 * enum pgst_stmt, prepared once per connection unless planned at each
 * use, and what each kind of batched write sends.
 */
#include "store_pg_int.h"

const char *const pgst_sql[P_COUNT] = {
	[P_REQUEST_ADD] =
	"INSERT INTO requests (job, kind, reason, from_key, to_key, reprocess,"
	" reverse, no_downstream, created_at, concurrency, fail_fast,"
	" downstream, budget_ms, no_cutoff) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,"
	" $9,$10,$11,$12,$13,$14) RETURNING id",
	[P_REQUEST_FINISH] =
	"UPDATE requests SET finished_at = $2, cancelled = $3 WHERE id = $1",
	[P_ITEM_ADD] =
	"INSERT INTO manifest (request_id, job, partition_key, seq, downstream,"
	" state, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$7)"
	" RETURNING id",
	[P_ITEM_SET] =
	"UPDATE manifest SET state = $2, attempts = $3, not_before = $4,"
	" error = $5, blocked_on = $6, updated_at = $7, changed = $8"
	" WHERE id = $1",
	[P_RUN_START] =
	"INSERT INTO runs (manifest_id, request_id, job, partition_key, attempt,"
	" state, started_at, code_version, config_hash, shared_run)"
	" VALUES ($1,$2,$3,$4,$5,'running',$6,$7,$8,$9) RETURNING id",
	[P_RUN_FINISH] =
	"UPDATE runs SET state = $2, finished_at = $3, error = $4,"
	" rows_changed = $5, node = COALESCE($6, node) WHERE id = $1",
	[P_PART_BUILT] =
	"INSERT INTO partitions (job, partition_key, built_at, inputs_at, run_id,"
	" code_version) VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT (job,"
	" partition_key) DO UPDATE SET built_at = $3, inputs_at = $4,"
	" run_id = $5, code_version = $6",
	[P_PART_GET] =
	"SELECT built_at, inputs_at, code_version FROM partitions WHERE"
	" job = $1 AND partition_key = $2",
	[P_LOAD_OPEN] =
	STORE_LOAD_ITEMS "r.finished_at IS NULL"
	" ORDER BY m.request_id, m.seq",
	[P_LOAD_ONE] =
	STORE_LOAD_ITEMS "r.id = $1"
	" ORDER BY m.seq",
	[P_REQUEST_REOPEN] =
	"UPDATE requests SET finished_at = NULL, cancelled = false WHERE id = $1",
	[P_REQUEST_CONTROLS] =
	"SELECT concurrency, fail_fast, downstream FROM requests WHERE id = $1",
	[P_LAST_STATES] =
	"SELECT partition_key, state FROM partition_latest WHERE job = $1 AND"
	" partition_key BETWEEN $2 AND $3",
	[P_LATEST_PUT] =
	"WITH old AS (SELECT state FROM partition_latest WHERE job = $1 AND"
	" partition_key = $2), up AS (INSERT INTO partition_latest (job,"
	" partition_key, run_id, state) VALUES ($1,$2,$3,$4) ON CONFLICT (job,"
	" partition_key) DO UPDATE SET run_id = $3, state = $4)"
	" SELECT state FROM old",
	[P_LATEST_COUNTS] =
	"SELECT job, state, COUNT(*) FROM partition_latest GROUP BY job, state",
	[P_RUNS_COUNT] = "SELECT COUNT(*) FROM runs",
	[P_RUN_PROC] =
	"UPDATE runs SET pgid = $2, proc_start = $3 WHERE id = $1",
	[P_RUN_MARK] = "UPDATE runs SET marked_by = $2 WHERE id = $1",
	[P_RUN_NODE] = "UPDATE runs SET node = $2 WHERE id = $1",
	[P_RUN_LOOKUP] =
	"SELECT COALESCE(r.shared_run, r.id), r.request_id, r.attempt, r.state,"
	" r.error, r.node FROM partition_latest l JOIN runs x ON x.id = l.run_id JOIN runs r"
	" ON r.manifest_id = x.manifest_id WHERE l.job = $1 AND"
	" l.partition_key = $2 AND ($3::int = 0 OR r.attempt = $3::int)"
	" ORDER BY r.id DESC LIMIT 1",
	[P_MARKED_KEYS] =
	"SELECT l.partition_key FROM partition_latest l JOIN runs r ON"
	" r.id = l.run_id WHERE l.job = $1 AND l.partition_key BETWEEN $2 AND"
	" $3 AND r.marked_by IS NOT NULL",
	[P_ORPHANS] =
	"SELECT id, job, partition_key, pgid, proc_start FROM runs"
	" WHERE state = 'running' AND pgid IS NOT NULL AND proc_start >= 0",
	[P_RUN_UNSTART] =
	"DELETE FROM runs WHERE id = $1 AND NOT EXISTS"
	" (SELECT 1 FROM run_audit WHERE run_id = $1)",
	/* $2: the runs a new planner adopts (adopt.h) and their items */
	[P_RECOVER_RUNS] =
	"UPDATE runs SET state = 'failed', finished_at = $1, error ="
	" 'interrupted: the daemon stopped during the run; queued again'"
	" WHERE state = 'running' AND request_id IN (SELECT id FROM requests"
	" WHERE finished_at IS NULL) AND id <> ALL($2::bigint[])",
	[P_RECOVER_MANIFEST] =
	"UPDATE manifest SET state = 'queued', updated_at = $1,"
	" attempts = GREATEST(attempts - 1, 0)"
	" WHERE state = 'running' AND request_id IN (SELECT id FROM requests"
	" WHERE finished_at IS NULL) AND NOT EXISTS (SELECT 1 FROM runs r"
	" WHERE r.manifest_id = manifest.id AND r.id = ANY($2::bigint[]))",
	[P_RUNNING] =
	"SELECT id, manifest_id, request_id, job, partition_key, attempt,"
	" started_at FROM runs WHERE state = 'running' AND request_id IN"
	" (SELECT id FROM requests WHERE finished_at IS NULL) ORDER BY id",
	/* pruning (store.c): the next runs by id, with whether each must
	 * stay */
	[P_PRUNE_RUNS] =
	"SELECT r.id, r.job, r.started_at, r.finished_at, r.state = 'running'"
	" OR EXISTS (SELECT 1 FROM partition_latest l WHERE l.job = r.job AND"
	" l.partition_key = r.partition_key AND l.run_id = r.id)"
	" OR EXISTS (SELECT 1 FROM partitions p WHERE p.job = r.job AND"
	" p.partition_key = r.partition_key AND p.run_id = r.id)"
	" OR EXISTS (SELECT 1 FROM requests q WHERE q.id = r.request_id AND"
	" q.finished_at IS NULL), r.partition_key"
	" FROM runs r WHERE r.id > $1 ORDER BY r.id LIMIT $2",
	[P_PRUNE_AUDIT_DEL] = "DELETE FROM run_audit WHERE run_id = $1",
	[P_PRUNE_RUN_DEL] = "DELETE FROM runs WHERE id = $1",
	[P_PRUNE_REQUESTS] =
	"SELECT id, job, created_at, finished_at FROM requests WHERE id > $1"
	" ORDER BY id LIMIT $2",
	[P_PRUNE_MANIFEST_DEL] =
	"DELETE FROM manifest WHERE request_id = $1 AND NOT EXISTS"
	" (SELECT 1 FROM runs WHERE runs.manifest_id = manifest.id)",
	[P_PRUNE_REQUEST_DEL] =
	"DELETE FROM requests WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM"
	" manifest WHERE request_id = $1) AND NOT EXISTS (SELECT 1 FROM runs"
	" WHERE request_id = $1)",
	[P_BUILT_BY] =
	"SELECT partition_key FROM partitions WHERE job = $1 AND"
	" code_version = $2 ORDER BY partition_key",
	[P_KEYS_CHANGED] =
	"SELECT partition_key FROM partitions WHERE job = $1 AND"
	" code_version IS DISTINCT FROM $2 AND partition_key BETWEEN $3 AND $4"
	" ORDER BY partition_key",
	[P_PARTS_OF] =
	"SELECT partition_key, built_at, inputs_at FROM partitions WHERE"
	" job = $1 ORDER BY partition_key",
	[P_JOB_GET] =
	"SELECT watermark, catchup, gap_from, gap_to, paused, paused_at,"
	" late_since, late_checked_at, late_found, late_error,"
	" reconciled_through FROM jobs WHERE job = $1",
	[P_JOB_PUT] =
	"INSERT INTO jobs (job, watermark, catchup, gap_from, gap_to, paused,"
	" paused_at, updated_at, late_since, late_checked_at, late_found,"
	" late_error, reconciled_through) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,"
	"$10,$11,$12,$13) ON CONFLICT (job) DO UPDATE SET watermark = $2,"
	" catchup = $3, gap_from = $4, gap_to = $5, paused = $6,"
	" paused_at = $7, updated_at = $8, late_since = $9,"
	" late_checked_at = $10, late_found = $11, late_error = $12,"
	" reconciled_through = $13",
	/* the calendar a job's keys were built in (sql/pg/012_job_calendar.sql)
	 * and whether any of them was */
	[P_JOB_CAL_GET] =
	"SELECT (SELECT calendar FROM jobs WHERE job = $1),"
	" EXISTS (SELECT 1 FROM partitions WHERE job = $1)",
	[P_JOB_CAL_PUT] =
	"INSERT INTO jobs (job, calendar, updated_at) VALUES ($1, $2, $3)"
	" ON CONFLICT (job) DO UPDATE SET calendar = $2",
	/* trend checks' history (sql/pg/006_trends.sql) */
	[P_TREND_VALUES] =
	"SELECT partition_key, value FROM trend_values WHERE job = $1 AND"
	" metric = $2 ORDER BY run_id DESC, partition_key DESC LIMIT $3",
	/* shards' publishes (sql/pg/007_shard_publishes.sql) */
	[P_SHARD_PUT] =
	"INSERT INTO shard_publishes (request, job, partition_key, shard,"
	" nshards, run_id, rows_before, rows_after, published_at) VALUES"
	" ($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT (request, job,"
	" partition_key, shard) DO UPDATE SET nshards = $5, run_id = $6,"
	" rows_before = $7, rows_after = $8, published_at = $9",
	[P_SHARDS_OF] =
	"SELECT request, job, partition_key, shard, nshards, run_id, rows_before, rows_after, published_at"
	" FROM shard_publishes WHERE request = $1 AND job = $2 AND"
	" partition_key = $3 ORDER BY shard",
	[P_SHARDS_PARTIAL] = STORE_SHARDS_PARTIAL,
	[P_TREND_PUT] =
	"INSERT INTO trend_values (job, metric, partition_key, value, run_id)"
	" VALUES ($1,$2,$3,$4,$5) ON CONFLICT (job, metric, partition_key)"
	" DO UPDATE SET value = $4, run_id = $5",
	[P_TREND_TRIM] =
	"DELETE FROM trend_values WHERE job = $1 AND metric = $2 AND"
	" partition_key NOT IN (SELECT partition_key FROM trend_values"
	" WHERE job = $1 AND metric = $2 ORDER BY run_id DESC,"
	" partition_key DESC LIMIT $3)",
	[P_TREND_SERIES] =
	"SELECT DISTINCT job, metric FROM trend_values ORDER BY job, metric",
	[P_REQUEST_GET] =
	"SELECT job, finished_at IS NOT NULL FROM requests WHERE id = $1",
	[P_RECENT_REQUESTS] =
	"SELECT id, job, kind, reason, created_at, finished_at, cancelled"
	" FROM requests ORDER BY id DESC LIMIT $1",
	[P_PROBLEMS] =
	"SELECT job, partition_key, state, error, blocked_on FROM manifest"
	" WHERE request_id = $1 AND state IN ('failed', 'blocked') ORDER BY seq",
	/* INSERT OR REPLACE on SQLite: every column replaced */
	[P_AUDIT_ADD] =
	"INSERT INTO run_audit (run_id, partition_key, rows_before,"
	" rows_after, metrics, checks, passed, metrics_text, checks_text,"
	" sum_before, sum_after, changes) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,"
	"$10,$11,$12)"
	" ON CONFLICT (run_id, partition_key) DO UPDATE SET rows_before = $3,"
	" rows_after = $4, metrics = $5, checks = $6, passed = $7,"
	" metrics_text = $8, checks_text = $9, sum_before = $10,"
	" sum_after = $11, changes = $12",
	[P_AUDIT_OF] = STORE_AUDIT_OF("$1"),
	[P_REQUEST_COUNTS] =
	"SELECT m.state, COUNT(*), MAX(r.created_at),"
	" MAX(COALESCE(r.finished_at, r.created_at)) FROM manifest m"
	" JOIN requests r ON r.id = m.request_id WHERE m.request_id = $1"
	" GROUP BY m.state",
	[P_NEWEST_BUILD] =
	"SELECT MAX(built_at) FROM partitions WHERE job = $1 AND"
	" partition_key BETWEEN $2 AND $3",
	[P_DURATIONS] =
	"SELECT finished_at - started_at FROM runs WHERE job = $1 AND"
	" state = 'succeeded' AND finished_at IS NOT NULL ORDER BY id DESC"
	" LIMIT $2",
	[P_REQUEST_BUDGET] =
	"UPDATE requests SET spent_ms = $2, over_budget_at = CASE WHEN"
	" $3::bigint IS NULL THEN NULL ELSE COALESCE(over_budget_at, $3) END"
	" WHERE id = $1",
	/* requests_over_budget: the newest first, at most $1 */
	[P_OVER_BUDGET] =
	"SELECT r.id, r.job, r.budget_ms, r.spent_ms, r.over_budget_at,"
	" (SELECT count(*) FROM manifest m WHERE m.request_id = r.id AND"
	" m.state = 'cancelled') FROM requests r WHERE r.over_budget_at IS NOT"
	" NULL ORDER BY r.id DESC LIMIT $1",
	[P_FENCE] =
	"SELECT 1 / count(*)::int FROM (SELECT 1 FROM lease WHERE id = 1"
	" AND generation = $1 FOR KEY SHARE) AS l",
	[P_ITEM_ADD_ID] =
	"INSERT INTO manifest (id, request_id, job, partition_key, seq,"
	" downstream, state, created_at, updated_at)"
	" VALUES ($8,$1,$2,$3,$4,$5,$6,$7,$7)",
	[P_RUN_START_ID] =
	"INSERT INTO runs (id, manifest_id, request_id, job, partition_key,"
	" attempt, state, started_at, code_version, config_hash, shared_run)"
	" VALUES ($10,$1,$2,$3,$4,$5,'running',$6,$7,$8,$9)",
	[P_ITEM_IDS] =
	"SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence("
	" 'manifest', 'id')::regclass AS seq OFFSET 0) s, generate_series(1, $1)",
	[P_RUN_IDS] =
	"SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence("
	" 'runs', 'id')::regclass AS seq OFFSET 0) s, generate_series(1, $1)",
	[P_FORGET_ONE] =
	"DELETE FROM work WHERE id = $1 AND state = 'done'",
	/* the batched writes (store_pg_int.h): many rows, one statement,
	 * each column an array, in the order of its kind's single
	 * statement */
	[P_B_ITEM_ADD] =
	"INSERT INTO manifest (id, request_id, job, partition_key, seq,"
	" downstream, state, created_at, updated_at)"
	" SELECT id, request_id, job, k, seq, downstream, state, at, at"
	" FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[],"
	" $5::boolean[], $6::text[], $7::bigint[], $8::bigint[])"
	" AS t(request_id, job, k, seq, downstream, state, at, id)",
	[P_B_RUN_START] =
	"INSERT INTO runs (id, manifest_id, request_id, job, partition_key,"
	" attempt, state, started_at, code_version, config_hash, shared_run)"
	" SELECT id, mid, rid, job, k, attempt, 'running', at, cv, ch, sh"
	" FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[],"
	" $5::int[], $6::bigint[], $7::text[], $8::text[], $9::bigint[],"
	" $10::bigint[]) AS t(mid, rid, job, k, attempt, at, cv, ch, sh, id)",
	[P_B_ITEM_SET] =
	"UPDATE manifest m SET state = t.state, attempts = t.attempts,"
	" not_before = t.not_before, error = t.error,"
	" blocked_on = t.blocked_on, updated_at = t.at, changed = t.changed"
	" FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[],"
	" $5::text[], $6::text[], $7::bigint[], $8::boolean[])"
	" AS t(id, state, attempts, not_before, error, blocked_on, at,"
	" changed)"
	" WHERE m.id = t.id",
	[P_B_RUN_FINISH] =
	"UPDATE runs r SET state = t.state, finished_at = t.at,"
	" error = t.error, rows_changed = t.rows,"
	" node = COALESCE(t.node, r.node)"
	" FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[],"
	" $5::bigint[], $6::text[]) AS t(id, state, at, error, rows, node)"
	" WHERE r.id = t.id",
	/* the rows' states they replace, by ordinal */
	[P_B_LATEST] =
	"WITH t AS (SELECT * FROM unnest($1::text[], $2::text[],"
	" $3::bigint[], $4::text[]) WITH ORDINALITY"
	" AS t(job, k, run_id, state, ord)),"
	" old AS (SELECT t.ord, l.state FROM t JOIN partition_latest l"
	" ON l.job = t.job COLLATE \"C\" AND l.partition_key = t.k COLLATE \"C\"),"
	" up AS (INSERT INTO partition_latest (job, partition_key, run_id,"
	" state) SELECT job, k, run_id, state FROM t ON CONFLICT (job,"
	" partition_key) DO UPDATE SET run_id = excluded.run_id,"
	" state = excluded.state)"
	" SELECT ord, state FROM old",
	[P_B_BUILT] =
	"INSERT INTO partitions (job, partition_key, built_at, inputs_at,"
	" run_id, code_version)"
	" SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[],"
	" $4::bigint[], $5::bigint[], $6::text[])"
	" ON CONFLICT (job, partition_key) DO UPDATE SET"
	" built_at = excluded.built_at, inputs_at = excluded.inputs_at,"
	" run_id = excluded.run_id, code_version = excluded.code_version",
	/* several hosts (store_pg_offer, store_pg_forget): the planner's
	 * offers and the results it recorded, in its turn's transaction */
	[P_B_OFFER] =
	"WITH ins AS (INSERT INTO work (id, request, job, keys, attempt,"
	" generation) SELECT id, nullif(request, 0), job,"
	" string_to_array(k, E'\\x1f'), attempt, gen"
	" FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[],"
	" $5::int[], $6::bigint[]) AS t(id, request, job, k, attempt, gen)"
	" ON CONFLICT (id) DO NOTHING RETURNING 1)"
	" SELECT pg_notify('bf_work', '') WHERE EXISTS (SELECT 1 FROM ins)",
	[P_B_FORGET] =
	"DELETE FROM work WHERE id = ANY($1::bigint[]) AND state = 'done'",
	/* which node ran a run (the planner records it with the run's
	 * result, in the same turn as its finish) */
	[P_B_RUN_NODE] =
	"UPDATE runs r SET node = t.node FROM unnest($1::bigint[],"
	" $2::text[]) AS t(id, node) WHERE r.id = t.id"
	"",
};

const struct pgst_batch_kind_def pgst_batch_kinds[B_COUNT] = {
	[B_ITEM_ADD] = { P_B_ITEM_ADD, 8, P_COUNT, "adding to the manifest" },
	[B_RUN_START] = { P_B_RUN_START, 10, P_COUNT, "recording runs" },
	[B_ITEM_SET] = { P_B_ITEM_SET, 8, P_ITEM_SET,
			 "updating the manifest" },
	[B_RUN_FINISH] = { P_B_RUN_FINISH, 6, P_RUN_FINISH,
			   "finishing runs" },
	[B_RUN_NODE] = { P_B_RUN_NODE, 2, P_RUN_NODE,
			 "recording runs' nodes" },
	[B_LATEST] = { P_B_LATEST, 4, P_LATEST_PUT,
		       "recording partitions' last runs" },
	[B_BUILT] = { P_B_BUILT, 6, P_COUNT, "recording builds" },
	[B_OFFER] = { P_B_OFFER, 6, P_COUNT, "offering runs" },
	[B_FORGET] = { P_B_FORGET, 1, P_FORGET_ONE,
		       "deleting recorded results" },
};
