/*
 * store_pg.c - the state store on PostgreSQL (struct store_ops, store.h;
 * store_pg.h), for several nodes sharing one database
 * (docs/several-hosts.md), in the backfilld-pg module.
 *
 * The same operations with the same meaning as the SQLite store
 * (store_sqlite.c), statement for statement, on one libpq connection used
 * synchronously from the loop thread, as the SQLite store is.  Statements
 * are prepared once per connection (PQprepare, names "s0", "s1"...),
 * parameters are bound as text, and every error carries the first line of
 * PQerrorMessage.  The schema is sql/pg/, versioned in schema_version and
 * migrated at open in one transaction under pg_advisory_xact_lock, so
 * that nodes starting together migrate once.
 *
 * Transactions.  begin/commit/rollback and defer/flush mean what they
 * mean on SQLite, with one difference: in PostgreSQL a statement that
 * fails inside a transaction aborts the whole transaction, where SQLite
 * fails only that statement.  So a begin() inside an open transaction
 * sets no savepoint here: it only counts a depth, and a rollback() of
 * such a group marks the whole transaction failed.  Every later
 * statement, a read too, fails ("the transaction failed earlier") and the
 * commit (or flush) fails with the first error, and rolls back: never a
 * silent "ROLLBACK" for a COMMIT.  store.c's policy asks no more than
 * that: a group is only ever rolled back after one of its writes failed,
 * and a failed write fails the loop turn, whose flush discards it all.
 * A savepoint per group would cost two statements and a subtransaction
 * per run start and end, and past 64 subtransactions in one transaction
 * every other session's snapshots overflow to pg_subtrans.

 * Fencing.  store_pg_fence(st, generation) with generation > 0 makes
 * every transaction this store commits (store_begin's, store_defer's,
 * and the one wrapped around a write made outside any) send, in the same
 * round trip as its COMMIT, just before it,
 *     SELECT 1 / count(*) FROM (SELECT 1 FROM lease WHERE id = 1
 *         AND generation = $fence FOR KEY SHARE) l
 * which fails (a division by zero) unless the lease row still holds the
 * store's generation: the transaction is then rolled back, the commit
 * fails with "deposed: another node holds the planner lease", and none
 * of its writes is ever applied.  A node taking the lease over locks the
 * row FOR UPDATE first (cluster_pg.c): a check that comes while it does
 * waits for it and then sees the new generation; a takeover that comes
 * after the check waits for the commit.  Either way a deposed planner's
 * late writes are refused, and a turn costs no round trip of its own for
 * the check.  The planner's own renewals (an UPDATE of no key column) do
 * not conflict with FOR KEY SHARE, so a renewal on the cluster's
 * connection never waits for the same daemon's commit.  The multi-node
 * code sets the generation on the planner's store when it
 * takes the lease and clears it when it gives it up.  The nodes and lease
 * tables are sql/pg/001_init.sql's; recover() and orphans() mean what
 * they mean on one host (every run left running is this daemon's): with
 * several nodes, only the planner may call them.
 *
 * Connections.  PQconnectdbParams with expand_dbname: the conninfo, plus
 * connect_timeout=10 and application_name backfilld unless it says
 * otherwise, plus the contents of password_file (trailing newline
 * stripped, read at each connect and never kept); PGPASSWORD, PGPASSFILE,
 * ~/.pgpass and the other environment variables work as in libpq.  A
 * connection found broken outside a transaction is made again (and its
 * statements prepared again) before the next operation; a read that
 * found it broken is sent once more, a write is not (it may have been
 * applied).  BEGIN is sent without waiting: a transaction first reads
 * what an idle connection has (the goodbye of a server process that
 * ended, pgst_idle_check) and connects again if it was dropped; one that
 * breaks after that fails, as any transaction whose connection breaks.
 *
 * SQLite's own matters: checkpoint_on does nothing (the server
 * checkpoints); probe_write commits a transaction that extends a table
 * of the database by min_free bytes (pgst_probe_write), reconnecting
 * first if need be; stats reports runs_kept (counted at open and again
 * when the node becomes planner, store_pg_fence, then kept by its
 * changes: only the planner writes runs), pg_database_size() as db_bytes
 * and 0 as wal_bytes and loop_checkpoints.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "pg_conn.h"
#include "pgsql.h"
#include "sql_embedded.h"
#include "store_pg.h"
#include "xalloc.h"

extern const struct sql_migration sql_pg_migrations[];
extern const int sql_pg_migrations_count;

#define PGST_MIGRATE_LOCK "7236505386216927537" /* any fixed key */
#define PGST_MAXARGS 16
#define PGST_INT8OID 20
#define PGST_TEXTOID 25

enum pgst_stmt {
	P_REQUEST_ADD,
	P_REQUEST_FINISH,
	P_ITEM_ADD,
	P_ITEM_SET,
	P_RUN_START,
	P_RUN_FINISH,
	P_PART_BUILT,
	P_PART_GET,
	P_LOAD_OPEN,
	P_LOAD_ONE,
	P_REQUEST_REOPEN,
	P_REQUEST_CONTROLS,
	P_LAST_STATES,
	P_LATEST_PUT,
	P_LATEST_COUNTS,
	P_RUNS_COUNT,
	P_RUN_PROC,
	P_RUN_MARK,
	P_RUN_NODE,
	P_RUN_LOOKUP,
	P_MARKED_KEYS,
	P_ORPHANS,
	P_RUN_UNSTART,
	P_RECOVER_RUNS,
	P_RECOVER_MANIFEST,
	P_RUNNING,
	P_PRUNE_RUNS,
	P_PRUNE_AUDIT_DEL,
	P_PRUNE_RUN_DEL,
	P_PRUNE_REQUESTS,
	P_PRUNE_MANIFEST_DEL,
	P_PRUNE_REQUEST_DEL,
	P_BUILT_BY,
	P_KEYS_CHANGED,
	P_PARTS_OF,
	P_JOB_GET,
	P_JOB_PUT,
	P_TREND_VALUES,
	P_TREND_PUT,
	P_TREND_TRIM,
	P_TREND_SERIES,
	P_SHARD_PUT,
	P_SHARDS_OF,
	P_SHARDS_PARTIAL,
	P_REQUEST_GET,
	P_RECENT_REQUESTS,
	P_PROBLEMS,
	P_AUDIT_ADD,
	P_AUDIT_OF,
	P_REQUEST_COUNTS,
	P_NEWEST_BUILD,
	P_DURATIONS,
	P_REQUEST_BUDGET,
	P_OVER_BUDGET,
	P_FENCE,
	P_DB_SIZE,
	P_ITEM_ADD_ID,
	P_RUN_START_ID,
	P_ITEM_IDS,
	P_RUN_IDS,
	P_FORGET_ONE,
	P_B_ITEM_ADD,
	P_B_RUN_START,
	P_B_ITEM_SET,
	P_B_RUN_FINISH,
	P_B_LATEST,
	P_B_BUILT,
	P_B_OFFER,
	P_B_FORGET,
	P_COUNT
};

static const char *const pgst_sql[P_COUNT] = {
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
	" rows_changed = $5 WHERE id = $1",
	[P_PART_BUILT] =
	"INSERT INTO partitions (job, partition_key, built_at, inputs_at, run_id,"
	" code_version) VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT (job,"
	" partition_key) DO UPDATE SET built_at = $3, inputs_at = $4,"
	" run_id = $5, code_version = $6",
	[P_PART_GET] =
	"SELECT built_at, inputs_at, code_version FROM partitions WHERE"
	" job = $1 AND partition_key = $2",
	[P_LOAD_OPEN] =
	"SELECT m.id, m.request_id, m.job, m.partition_key, m.seq, m.downstream,"
	" m.state, m.attempts, m.not_before, m.blocked_on, r.job, r.kind,"
	" r.reverse, r.created_at, r.concurrency, r.fail_fast, r.budget_ms,"
	" r.spent_ms, r.over_budget_at IS NOT NULL, r.no_cutoff, m.changed"
	" FROM manifest m"
	" JOIN requests r ON r.id = m.request_id WHERE r.finished_at IS NULL"
	" ORDER BY m.request_id, m.seq",
	[P_LOAD_ONE] =
	"SELECT m.id, m.request_id, m.job, m.partition_key, m.seq, m.downstream,"
	" m.state, m.attempts, m.not_before, m.blocked_on, r.job, r.kind,"
	" r.reverse, r.created_at, r.concurrency, r.fail_fast, r.budget_ms,"
	" r.spent_ms, r.over_budget_at IS NOT NULL, r.no_cutoff, m.changed"
	" FROM manifest m"
	" JOIN requests r ON r.id = m.request_id WHERE r.id = $1"
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
	"SELECT r.id, r.request_id, r.attempt, r.state, r.error, r.node FROM"
	" partition_latest l JOIN runs x ON x.id = l.run_id JOIN runs r"
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
	" q.finished_at IS NULL)"
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
	" sum_before, sum_after) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"
	" ON CONFLICT (run_id, partition_key) DO UPDATE SET rows_before = $3,"
	" rows_after = $4, metrics = $5, checks = $6, passed = $7,"
	" metrics_text = $8, checks_text = $9, sum_before = $10,"
	" sum_after = $11",
	[P_AUDIT_OF] =
	"SELECT m.job, m.partition_key, m.downstream, m.state,"
	" COALESCE(r.shared_run, r.id),"
	" r.code_version, r.config_hash, r.state, r.error, a.rows_before,"
	" a.rows_after, a.metrics, a.checks, a.passed, a.metrics_text,"
	" a.checks_text, m.error, a.sum_before, a.sum_after FROM manifest m"
	" LEFT JOIN runs r ON r.id = (SELECT MAX(id) FROM runs"
	" WHERE manifest_id = m.id)"
	" LEFT JOIN run_audit a ON a.run_id = r.id"
	" AND a.partition_key = m.partition_key"
	" WHERE m.request_id = $1 ORDER BY m.seq",
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
	[P_DB_SIZE] = "SELECT pg_database_size(current_database())",
	[P_ITEM_ADD_ID] =
	"INSERT INTO manifest (id, request_id, job, partition_key, seq,"
	" downstream, state, created_at, updated_at)"
	" VALUES ($8,$1,$2,$3,$4,$5,$6,$7,$7)",
	[P_RUN_START_ID] =
	"INSERT INTO runs (id, manifest_id, request_id, job, partition_key,"
	" attempt, state, started_at, code_version, config_hash, shared_run)"
	" VALUES ($10,$1,$2,$3,$4,$5,'running',$6,$7,$8,$9)",
	[P_ITEM_IDS] =
	"SELECT nextval(pg_get_serial_sequence('manifest', 'id'))"
	" FROM generate_series(1, $1)",
	[P_RUN_IDS] =
	"SELECT nextval(pg_get_serial_sequence('runs', 'id'))"
	" FROM generate_series(1, $1)",
	[P_FORGET_ONE] =
	"DELETE FROM work WHERE id = $1 AND state = 'done'",
	/* the batched writes (below): many rows, one statement, each
	 * column an array, in the order of its kind's single statement */
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
	" error = t.error, rows_changed = t.rows"
	" FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[],"
	" $5::bigint[]) AS t(id, state, at, error, rows) WHERE r.id = t.id",
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
};

/*
 * Ids.  Inside a transaction, a manifest row or a run is inserted with an
 * id taken from its table's sequence beforehand, a block at a time (1,
 * 2, 4... up to PGST_IDS_MAX), so that the insert needs no answer and is
 * batched (below).  Ids stay increasing; those of a block not used
 * when the daemon stops are skipped, as a rolled-back insert's are.
 */
#define PGST_IDS_MAX 256

struct pgst_ids {
	int64_t id[PGST_IDS_MAX];
	int n, pos, block;
};

/*
 * Batched writes.  Inside a transaction, the writes a run's start and end
 * make (manifest rows added and set, runs started and finished, the
 * partitions' newest runs and builds) are not sent one statement each:
 * their rows are kept per kind, as array literals, and sent as one
 * statement per kind (unnest) before the next statement of any other
 * kind, before a read, and before COMMIT; a ROLLBACK drops them.  They go
 * in the order of enum pgst_batch_kind, parents first (a run's manifest row
 * before the run, a run before its partition's newest), and a row that
 * names the same row (id, or job and key) as one already kept sends every
 * kind first, so that the statements change each row in the order the
 * writes were made.  So a loop turn that starts and ends fifty runs
 * costs six statements, not three hundred and fifty.  The statements
 * that insert are prepared; those that join their rows to a table
 * (updates, the newest runs, deletions) are planned for their rows each
 * time, because a plan cached while the tables were small would read
 * them whole as they grow, and that planning costs more than it saves
 * below PGST_BATCH_JOIN rows: such a batch goes as its rows' single
 * statements (prepared, pipelined).  With several hosts
 * the planner's offers and the deletion of the results it recorded go in
 * the same transaction (store_pg_offer, store_pg_forget): a run's row and
 * its offer, a result's record and its deletion, commit together.
 */
enum pgst_batch_kind {
	B_ITEM_ADD,
	B_RUN_START,
	B_ITEM_SET,
	B_RUN_FINISH,
	B_LATEST,
	B_BUILT,
	B_OFFER,
	B_FORGET,
	B_COUNT
};

#define PGST_PIPE_MAX 256 /* statements sent before their answers are read */
#define PGST_BATCH_COLS 10
#define PGST_BATCH_MAX 256
#define PGST_BATCH_JOIN 8

struct pgst_batch {
	struct pgsql_array col[PGST_BATCH_COLS];
	char **val;                  /* row r's column c at r * COLS + c */
	int n;
	int64_t id[PGST_BATCH_MAX];  /* the row each names (ITEM_SET, RUN_FINISH) */
	char *key[PGST_BATCH_MAX];   /* ... "job\x1fkey" (LATEST, BUILT) */
	size_t first_after;          /* LATEST: its first row's p->after */
};

/* What each kind sends, how many columns it has, and the single
 * statement of one row when it joins (P_COUNT: an insert, always
 * batched and prepared). */
static const struct {
	enum pgst_stmt stmt;
	int ncols;
	enum pgst_stmt single;
	const char *what;
} pgst_batch_kinds[B_COUNT] = {
	[B_ITEM_ADD] = { P_B_ITEM_ADD, 8, P_COUNT, "adding to the manifest" },
	[B_RUN_START] = { P_B_RUN_START, 10, P_COUNT, "recording runs" },
	[B_ITEM_SET] = { P_B_ITEM_SET, 8, P_ITEM_SET,
			 "updating the manifest" },
	[B_RUN_FINISH] = { P_B_RUN_FINISH, 5, P_RUN_FINISH,
			   "finishing runs" },
	[B_LATEST] = { P_B_LATEST, 4, P_LATEST_PUT,
		       "recording partitions' last runs" },
	[B_BUILT] = { P_B_BUILT, 6, P_COUNT, "recording builds" },
	[B_OFFER] = { P_B_OFFER, 6, P_COUNT, "offering runs" },
	[B_FORGET] = { P_B_FORGET, 1, P_FORGET_ONE,
		       "deleting recorded results" },
};

/* Is statement id one planned at each use (never prepared)? */
static bool
pgst_unprepared(int id)
{
	for (int k = 0; k < B_COUNT; k++)
		if (pgst_batch_kinds[k].stmt == (enum pgst_stmt)id)
			return pgst_batch_kinds[k].single != P_COUNT;
	return false;
}

/* A partition_finished callback waiting for the commit. */
struct pgst_after {
	store_prev_cb cb;
	void *data;
	char *job;
	enum mstate prev, state;
};

/* The answer of a statement sent without waiting, if someone reads it. */
struct pgst;
typedef void (*pgst_answer_fn)(struct pgst *p, PGresult *r, size_t arg);

struct pgst_answer {
	pgst_answer_fn fn;
	size_t arg;
};

struct pgst {
	struct store base; /* first: store.c sees this */
	PGconn *pg;
	char *conninfo;
	char *password_file;
	int64_t fence;     /* the lease generation it must see, 0: none */
	bool deposed;      /* the last fence check failed */
	bool prepared;     /* the connection has the statements */
	bool tx;           /* a transaction is open */
	bool deferred;     /* ... opened by defer: flush commits it */
	int depth;         /* begin() groups open inside it */
	bool aborted;      /* a statement failed in it (PostgreSQL: all later
			    * ones fail until a rollback) */
	char abort_msg[512];
	int64_t runs_kept;
	bool opened;       /* migrated and counted (pgst_open_db) */
	bool connected;    /* the last pgst_connect succeeded */
	bool recount;      /* count runs_kept again at the next chance */
	bool piped;        /* in pipeline mode: sent, answers not read */
	int npiped;        /* statements sent since the last sync */
	struct pgst_answer answer[PGST_PIPE_MAX]; /* ... who reads each */
	struct pgst_batch batch[B_COUNT];
	bool batched;      /* some batch holds rows */
	bool sending;      /* pgst_batch_send is sending them */
	bool committed;    /* the last COMMIT's answer */
	struct pgst_after *after; /* to call once the transaction commits */
	size_t nafter, cafter;
	struct pgst_ids item_ids, run_ids; /* reserved, not used yet */
};

/* The PostgreSQL store behind a struct store. */
static struct pgst *
pgst_of(struct store *st)
{
	return (struct pgst *)st;
}

/* The first line of the connection's last message, without "ERROR:  ". */
static void
pgst_pqmsg(PGconn *pg, char *buf, size_t len)
{
	snprintf(buf, len, "%s", pg_conn_error(pg));
	buf[strcspn(buf, "\r\n")] = '\0';
}

/* Fill err from the connection's last error, with context; a failure
 * inside a transaction aborts it (see the top of this file). */
static int
pgst_fail(struct pgst *p, struct err *err, const char *what)
{
	char msg[512];

	pgst_pqmsg(p->pg, msg, sizeof msg);
	if (p->tx && !p->aborted) {
		p->aborted = true;
		snprintf(p->abort_msg, sizeof p->abort_msg, "%s: %s", what, msg);
	}
	return err_set(err, EXIT_INTERNAL, "state store: %s: %s", what, msg);
}

/* Notices (a migration's "already exists, skipping") are not ours to
 * print. */
static void
pgst_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Connect (or connect again) to the server. */
static int
pgst_connect(struct pgst *p, struct err *err)
{
	char msg[512], where[256];
	char *password = NULL;
	PGresult *r;

	if (p->pg != NULL) {
		PQfinish(p->pg);
		p->pg = NULL;
	}
	p->prepared = false;
	p->piped = false;
	p->npiped = 0;
	p->connected = false;
	if (p->password_file != NULL &&
	    pg_conn_password("state store", p->password_file, EXIT_BAD_INPUT,
			     false, &password, err) < 0)
		return -1;
	p->pg = pg_conn_connect(p->conninfo, password);
	if (p->pg == NULL)
		return err_set(err, EXIT_INTERNAL, "out of memory");
	if (PQstatus(p->pg) != CONNECTION_OK) {
		pg_conn_where(p->pg, where, sizeof where);
		pgst_pqmsg(p->pg, msg, sizeof msg);
		return err_set(err, EXIT_WORK_FAILED, "state store: cannot"
			       " connect to %s: %s", where, msg);
	}
	p->connected = true;
	PQsetNoticeProcessor(p->pg, pgst_notice, NULL);
	/* A transaction lasts one loop callback.  One left open (the
	 * process stopped by SIGSTOP or a frozen VM mid-turn) would hold
	 * the fence's lock on the lease row and every row it wrote, and so
	 * stall the other nodes' lease and heartbeats: the server ends such
	 * a session after 2 s idle in a transaction (the node finds its
	 * transaction failed when it wakes, and the store-failure rule
	 * applies). */
	r = PQexec(p->pg, "SET idle_in_transaction_session_timeout = '2s'");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		PQclear(r);
		return pgst_fail(p, err, "setting idle_in_transaction_session_timeout");
	}
	PQclear(r);
	return 0;
}

/* Prepare every statement on the connection. */
static int
pgst_prepare(struct pgst *p, struct err *err)
{
	char name[16];
	PGresult *r;

	for (int i = 0; i < P_COUNT; i++) {
		if (pgst_unprepared(i))
			continue;
		snprintf(name, sizeof name, "s%d", i);
		r = PQprepare(p->pg, name, pgst_sql[i], 0, NULL);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			PQclear(r);
			return pgst_fail(p, err, "preparing statements");
		}
		PQclear(r);
	}
	p->prepared = true;
	return 0;
}

static int pgst_open_db(struct pgst *p, struct err *err);

/* Make the connection usable: outside a transaction, a broken one is
 * connected again (and its statements prepared again); a store opened
 * while the server could not be reached is migrated and counted at its
 * first connection (pgst_open_db). */
static int
pgst_ready(struct pgst *p, struct err *err)
{
	if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK && p->prepared)
		return 0;
	if (p->tx) {
		if (!p->aborted) {
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg,
				 "the connection was lost");
		}
		return err_set(err, EXIT_INTERNAL, "state store: the connection"
			       " was lost during a transaction");
	}
	return pgst_open_db(p, err);
}

/* Parameters of one statement, as text (NULL: SQL NULL). */
struct pgst_args {
	int n;
	const char *v[PGST_MAXARGS];
	char buf[PGST_MAXARGS][24];
};

/* Add a text parameter (NULL: SQL NULL). */
static void
arg_text(struct pgst_args *a, const char *s)
{
	a->v[a->n++] = s;
}

/* Add an integer parameter. */
static void
arg_int(struct pgst_args *a, int64_t x)
{
	snprintf(a->buf[a->n], sizeof a->buf[a->n], "%" PRId64, x);
	a->v[a->n] = a->buf[a->n];
	a->n++;
}

/* Add a boolean parameter. */
static void
arg_bool(struct pgst_args *a, bool b)
{
	a->v[a->n++] = b ? "t" : "f";
}

/*
 * Pipelining.  Inside a transaction, a write whose answer nobody reads
 * (pgst_write_done) is sent without waiting (libpq pipeline mode); the
 * answers are read by pgst_sync before the next statement that needs one,
 * and before COMMIT or ROLLBACK, so that a loop turn's writes cost one
 * round trip per read, not one per write.  A write that failed is found
 * there: the transaction is marked aborted, and its commit (the turn's
 * flush) fails with it, as store.c's rule 1 wants of a failed write.  At
 * most PGST_PIPE_MAX statements wait at once: their answers stay well
 * within the socket's buffers (a blocking connection that sends while the
 * server waits for its answers to be read would deadlock).  A statement
 * sent with an answer function has its rows handed to it there.
 */

static void pgst_batch_send(struct pgst *p);
static void pgst_fence_answer(struct pgst *p, PGresult *r, size_t arg);

/* Read the answers of the statements sent without waiting, the batched
 * writes sent first. */
static void
pgst_sync(struct pgst *p)
{
	int nulls = 0, results = 0;
	PGresult *r;
	char msg[512];

	pgst_batch_send(p);
	if (!p->piped)
		return;
	p->piped = false;
	if (PQpipelineSync(p->pg) != 1)
		goto lost;
	for (;;) {
		r = PQgetResult(p->pg);
		if (r == NULL) {
			/* the end of one statement's answers */
			if (PQstatus(p->pg) == CONNECTION_BAD ||
			    ++nulls > p->npiped)
				goto lost;
			continue;
		}
		if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			break;
		}
		if (++results > 2 * p->npiped + 2) { /* never: a broken one */
			PQclear(r);
			goto lost;
		}
		if ((PQresultStatus(r) == PGRES_TUPLES_OK ||
		     PQresultStatus(r) == PGRES_COMMAND_OK) &&
		    nulls < p->npiped && p->answer[nulls].fn != NULL)
			p->answer[nulls].fn(p, r, p->answer[nulls].arg);
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && !p->aborted &&
		    nulls < p->npiped &&
		    p->answer[nulls].fn == pgst_fence_answer) {
			p->deposed = true;
			snprintf(msg, sizeof msg, "deposed: another node holds"
				 " the planner lease");
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg, "%s", msg);
		}
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && !p->aborted) {
			snprintf(msg, sizeof msg, "%s",
				 PQresultErrorMessage(r));
			msg[strcspn(msg, "\r\n")] = '\0';
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg, "%s",
				 msg[0] ? msg : "a write failed");
		}
		PQclear(r);
	}
	p->npiped = 0;
	PQexitPipelineMode(p->pg);
	return;
lost:
	p->npiped = 0;
	if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK)
		PQexitPipelineMode(p->pg);
	if (p->tx && !p->aborted) {
		p->aborted = true;
		snprintf(p->abort_msg, sizeof p->abort_msg, "the connection"
			 " was lost");
	}
}

/* Send SQL (sql, or prepared statement id) inside the open transaction
 * without waiting for its answer (pgst_sync reads it, and hands its rows
 * to fn if not NULL). */
static int
pgst_pipe_send(struct pgst *p, const char *sql, enum pgst_stmt id,
	       const struct pgst_args *a, const char *what, pgst_answer_fn fn,
	       size_t arg, struct err *err)
{
	char name[16];
	int ok;

	if (p->npiped >= PGST_PIPE_MAX)
		pgst_sync(p);
	/* SQL text (BEGIN, COMMIT) needs the connection, not the prepared
	 * statements (a migration commits before they are) */
	if ((sql == NULL || p->pg == NULL ||
	     PQstatus(p->pg) != CONNECTION_OK) && pgst_ready(p, err) < 0)
		return -1;
	if (p->aborted)
		return err_set(err, EXIT_INTERNAL, "state store: %s: the"
			       " transaction failed earlier (%s)", what,
			       p->abort_msg);
	if (!p->piped) {
		if (PQenterPipelineMode(p->pg) != 1)
			return pgst_fail(p, err, what);
		p->piped = true;
	}
	snprintf(name, sizeof name, "s%d", (int)id);
	ok = sql != NULL ?
	     PQsendQueryParams(p->pg, sql, a ? a->n : 0, NULL, a ? a->v : NULL,
			       NULL, NULL, 0) :
	     PQsendQueryPrepared(p->pg, name, a ? a->n : 0, a ? a->v : NULL,
				 NULL, NULL, 0);
	if (!ok) {
		pgst_fail(p, err, what);
		pgst_sync(p);
		return -1;
	}
	p->answer[p->npiped].fn = fn;
	p->answer[p->npiped].arg = arg;
	p->npiped++;
	return 0;
}

/* Send a statement without waiting, after the batched writes. */
static int
pgst_pipe(struct pgst *p, const char *sql, enum pgst_stmt id,
	  const struct pgst_args *a, const char *what, struct err *err)
{
	pgst_batch_send(p);
	return pgst_pipe_send(p, sql, id, a, what, NULL, 0, err);
}

/* Run simple SQL without parameters or rows (transaction control). */
static int
pgst_simple(struct pgst *p, const char *sql, struct err *err)
{
	PGresult *r;
	int rc = 0;

	pgst_sync(p);
	r = PQexec(p->pg, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pgst_fail(p, err, sql);
	PQclear(r);
	return rc;
}

/* Run prepared statement id: its result (PQclear it), or NULL with err. */
static PGresult *
pgst_exec(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
	  const char *what, struct err *err)
{
	char name[16];
	PGresult *r;

	pgst_sync(p);
	if (pgst_ready(p, err) < 0)
		return NULL;
	if (p->aborted) {
		err_set(err, EXIT_INTERNAL, "state store: %s: the transaction"
			" failed earlier (%s)", what, p->abort_msg);
		return NULL;
	}
	snprintf(name, sizeof name, "s%d", (int)id);
	r = PQexecPrepared(p->pg, name, a ? a->n : 0, a ? a->v : NULL, NULL,
			   NULL, 0);
	/* a read outside a transaction on a connection the server dropped
	 * (a restart while idle) is tried once more, connected again; a
	 * write is not: it may have been committed before the drop */
	if (PQresultStatus(r) == PGRES_FATAL_ERROR && !p->tx &&
	    PQstatus(p->pg) == CONNECTION_BAD &&
	    strncmp(pgst_sql[id], "SELECT", 6) == 0) {
		PQclear(r);
		if (pgst_ready(p, err) < 0)
			return NULL;
		r = PQexecPrepared(p->pg, name, a ? a->n : 0, a ? a->v : NULL,
				   NULL, NULL, 0);
	}
	if (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK) {
		pgst_fail(p, err, what);
		PQclear(r);
		return NULL;
	}
	return r;
}

/* Rows a statement changed. */
static int64_t
pgst_changes(PGresult *r)
{
	const char *n = PQcmdTuples(r);

	return n != NULL && *n != '\0' ? strtoll(n, NULL, 10) : 0;
}

/* Text column or NULL. */
static const char *
col_text(PGresult *r, int row, int i)
{
	return PQgetisnull(r, row, i) ? NULL : PQgetvalue(r, row, i);
}

/* Is a column NULL? */
static bool
col_null(PGresult *r, int row, int i)
{
	return PQgetisnull(r, row, i) != 0;
}

/* Integer column (0 for NULL). */
static int64_t
col_int(PGresult *r, int row, int i)
{
	return PQgetisnull(r, row, i) ? 0 :
		strtoll(PQgetvalue(r, row, i), NULL, 10);
}

/* Boolean column (false for NULL). */
static bool
col_bool(PGresult *r, int row, int i)
{
	return !PQgetisnull(r, row, i) && PQgetvalue(r, row, i)[0] == 't';
}

/* Copy a text column into a fixed buffer ("" for NULL). */
static void
col_copy(PGresult *r, int row, int i, char *buf, size_t sz)
{
	const char *v = col_text(r, row, i);

	snprintf(buf, sz, "%s", v ? v : "");
}

/* ---- batched writes (above) ------------------------------------------ */

/* Empty one kind's batch. */
static void
pgst_batch_clear(struct pgst_batch *b)
{
	for (int c = 0; c < PGST_BATCH_COLS; c++)
		pgsql_array_free(&b->col[c]);
	for (int i = 0; i < b->n; i++) {
		free(b->key[i]);
		for (int c = 0; b->val != NULL && c < PGST_BATCH_COLS; c++) {
			free(b->val[i * PGST_BATCH_COLS + c]);
			b->val[i * PGST_BATCH_COLS + c] = NULL;
		}
	}
	b->n = 0;
}

/* Drop every batch's rows (the transaction is rolled back). */
static void
pgst_batch_drop(struct pgst *p)
{
	for (int k = 0; k < B_COUNT; k++)
		pgst_batch_clear(&p->batch[k]);
	p->batched = false;
}

/* Drop the batches and free what they hold (close). */
static void
pgst_batch_free(struct pgst *p)
{
	pgst_batch_drop(p);
	for (int k = 0; k < B_COUNT; k++) {
		free(p->batch[k].val);
		p->batch[k].val = NULL;
	}
}

/* P_B_LATEST's answer: the state each row replaced, by ordinal, into the
 * callbacks waiting for the commit from index first on. */
static void
pgst_latest_answer(struct pgst *p, PGresult *r, size_t first)
{
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t ord = col_int(r, i, 0);
		size_t at = first + (size_t)ord - 1;
		enum mstate prev;

		if (ord >= 1 && at < p->nafter &&
		    mstate_parse(col_text(r, i, 1), &prev) == 0)
			p->after[at].prev = prev;
	}
}

/* P_LATEST_PUT's answer: the state one row replaced, into the callback
 * waiting for the commit at index at. */
static void
pgst_latest_one(struct pgst *p, PGresult *r, size_t at)
{
	enum mstate prev;

	if (PQntuples(r) > 0 && at < p->nafter &&
	    mstate_parse(col_text(r, 0, 0), &prev) == 0)
		p->after[at].prev = prev;
}

/* Send one kind's rows: one statement, or, below PGST_BATCH_JOIN rows of
 * a kind that joins, each row's single statement. */
static void
pgst_batch_send_kind(struct pgst *p, int k)
{
	struct pgst_batch *b = &p->batch[k];
	enum pgst_stmt single = pgst_batch_kinds[k].single;
	int ncols = pgst_batch_kinds[k].ncols;
	struct pgst_args a = { 0 };
	struct err err;

	if (single != P_COUNT && b->n < PGST_BATCH_JOIN) {
		for (int i = 0; i < b->n; i++) {
			a.n = ncols;
			for (int c = 0; c < ncols; c++)
				a.v[c] = b->val[i * PGST_BATCH_COLS + c];
			pgst_pipe_send(p, NULL, single, &a,
				       pgst_batch_kinds[k].what,
				       k == B_LATEST ? pgst_latest_one : NULL,
				       b->first_after + (size_t)i, &err);
		}
		return;
	}
	for (int c = 0; c < ncols; c++)
		a.v[a.n++] = pgsql_array_end(&b->col[c]);
	pgst_pipe_send(p, single != P_COUNT ?
		       pgst_sql[pgst_batch_kinds[k].stmt] : NULL,
		       single != P_COUNT ? P_COUNT : pgst_batch_kinds[k].stmt,
		       &a, pgst_batch_kinds[k].what,
		       k == B_LATEST ? pgst_latest_answer : NULL,
		       b->first_after, &err);
}

/* Send every kind's rows in the order of enum pgst_batch_kind.  A failure
 * aborts the transaction (pgst_pipe_send), whose commit then fails: the
 * rows are not kept. */
static void
pgst_batch_send(struct pgst *p)
{
	if (!p->batched || p->sending)
		return;
	p->sending = true; /* a sync on the way must not send them twice */
	for (int k = 0; k < B_COUNT; k++) {
		if (p->batch[k].n == 0)
			continue;
		pgst_batch_send_kind(p, k);
		pgst_batch_clear(&p->batch[k]);
	}
	p->batched = false;
	p->sending = false;
}

/*
 * Keep a row of kind k: the batch whose columns the caller appends it to,
 * in order, or NULL with err when the transaction failed earlier.  id
 * (> 0) or job and key name the row it changes: when a kept row of the
 * kind names it too, or the batch is full, every batch is sent first.
 */
static struct pgst_batch *
pgst_batch_row(struct pgst *p, enum pgst_batch_kind k, int64_t id,
	       const char *job, const char *key, struct err *err)
{
	struct pgst_batch *b = &p->batch[k];
	char *name = NULL;
	bool again = b->n >= PGST_BATCH_MAX;

	if (p->aborted) {
		err_set(err, EXIT_INTERNAL, "state store: %s: the transaction"
			" failed earlier (%s)", pgst_batch_kinds[k].what,
			p->abort_msg);
		return NULL;
	}
	if (job != NULL)
		name = xasprintf("%s\x1f%s", job, key);
	for (int i = 0; i < b->n && !again && (name != NULL || id > 0); i++)
		again = name != NULL ? strcmp(b->key[i], name) == 0 :
			b->id[i] == id;
	if (again)
		pgst_batch_send(p);
	if (b->n == 0)
		b->first_after = p->nafter;
	b->id[b->n] = id;
	b->key[b->n] = name;
	b->n++;
	p->batched = true;
	return b;
}

/* Keep one row of kind k: a, its single statement's parameters in order
 * (pgst_batch_row says what id, job and key are); 0, or -1 with err. */
static int
pgst_batch_add(struct pgst *p, enum pgst_batch_kind k, int64_t id,
	       const char *job, const char *key, const struct pgst_args *a,
	       struct err *err)
{
	struct pgst_batch *b = pgst_batch_row(p, k, id, job, key, err);
	int row;

	if (b == NULL)
		return -1;
	row = b->n - 1;
	if (pgst_batch_kinds[k].single != P_COUNT && b->val == NULL)
		b->val = xcalloc(PGST_BATCH_MAX * PGST_BATCH_COLS,
				 sizeof *b->val);
	for (int c = 0; c < a->n; c++) {
		pgsql_array_text(&b->col[c], a->v[c]);
		if (b->val != NULL && a->v[c] != NULL)
			b->val[row * PGST_BATCH_COLS + c] = xstrdup(a->v[c]);
	}
	return 0;
}

/* ---- transactions ----------------------------------------------------- */

static void pgst_tx_rollback(struct pgst *p);

/* A transaction was opened: no group, nothing failed yet. */
static void
pgst_tx_state(struct pgst *p)
{
	p->tx = true;
	p->aborted = false;
	p->depth = 0;
	p->deferred = false;
}

/* An idle connection has nothing to say: anything readable is the
 * server's goodbye (an error, then the end of the stream), which marks
 * the connection broken once read to its end. */
static void
pgst_idle_check(struct pgst *p)
{
	struct pollfd pfd;

	if (p->pg == NULL || p->piped || PQstatus(p->pg) != CONNECTION_OK)
		return;
	pfd.fd = PQsocket(p->pg);
	pfd.events = POLLIN;
	while (pfd.fd >= 0 && poll(&pfd, 1, 0) == 1 &&
	       PQconsumeInput(p->pg) == 1)
		;
}

/* Count the runs kept again when store_pg_fence asked for it (outside a
 * transaction; a failure leaves it asked). */
static void
pgst_recount(struct pgst *p)
{
	PGresult *r;

	if (!p->recount || p->tx)
		return;
	r = pgst_exec(p, P_RUNS_COUNT, NULL, "counting runs", NULL);
	if (r == NULL)
		return;
	p->runs_kept = col_int(r, 0, 0);
	p->recount = false;
	PQclear(r);
}

/* Open a transaction: BEGIN sent without waiting (its answer comes with
 * the next statement's).  A connection the server dropped while idle is
 * made again first (nothing was sent on it that could have been
 * applied). */
static int
pgst_tx_open(struct pgst *p, struct err *err)
{
	pgst_idle_check(p);
	if (pgst_ready(p, err) < 0)
		return -1;
	pgst_recount(p);
	pgst_tx_state(p);
	if (pgst_pipe(p, "BEGIN", P_COUNT, NULL, "BEGIN", err) < 0) {
		pgst_tx_rollback(p);
		return -1;
	}
	return 0;
}

/* The fence check's answer: it passed (a failure marks the store deposed,
 * pgst_sync). */
static void
pgst_fence_answer(struct pgst *p, PGresult *r, size_t arg)
{
	(void)r;
	(void)arg;
	p->deposed = false;
}

/* COMMIT's answer: committed, unless the server says ROLLBACK (its
 * answer to a COMMIT of a failed transaction). */
static void
pgst_commit_answer(struct pgst *p, PGresult *r, size_t arg)
{
	(void)arg;
	p->committed = strcmp(PQcmdStatus(r), "COMMIT") == 0;
}

/* Run the callbacks waiting for the commit, or drop them (rolled back). */
static void
pgst_after_end(struct pgst *p, bool committed)
{
	for (size_t i = 0; i < p->nafter; i++) {
		struct pgst_after *x = &p->after[i];

		if (committed)
			x->cb(x->job, x->prev, x->state, x->data);
		free(x->job);
	}
	p->nafter = 0;
}

static void pgst_batch_drop(struct pgst *p);

/* Commit the open transaction (COMMIT sent after its writes, one round
 * trip); an aborted one is rolled back and fails. */
static int
pgst_tx_commit(struct pgst *p, struct err *err)
{
	struct err ignored;

	pgst_batch_send(p);
	p->committed = false;
	if (p->fence > 0 && !p->aborted) {
		struct pgst_args a = { 0 };

		arg_int(&a, p->fence);
		pgst_pipe_send(p, NULL, P_FENCE, &a, "checking the planner"
			       " lease", pgst_fence_answer, 0, &ignored);
	}
	if (!p->aborted)
		pgst_pipe_send(p, "COMMIT", P_COUNT, NULL, "COMMIT",
			       pgst_commit_answer, 0, &ignored);
	pgst_sync(p);
	p->tx = false;
	p->deferred = false;
	p->depth = 0;
	if (p->aborted) {
		p->aborted = false;
		pgst_after_end(p, false);
		if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK)
			pgst_simple(p, "ROLLBACK", NULL);
		return err_set(err, EXIT_INTERNAL, "state store: the transaction"
			       " was rolled back: %s", p->abort_msg);
	}
	pgst_after_end(p, p->committed);
	if (!p->committed)
		return err_set(err, EXIT_INTERNAL, "state store: the transaction"
			       " was rolled back by the server");
	return 0;
}

/* Roll back the open transaction. */
static void
pgst_tx_rollback(struct pgst *p)
{
	pgst_batch_drop(p);
	pgst_after_end(p, false);
	pgst_sync(p);
	p->tx = false;
	p->deferred = false;
	p->depth = 0;
	p->aborted = false;
	if (p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK)
		pgst_simple(p, "ROLLBACK", NULL);
}

/* Begin: a transaction, or a group inside one (no savepoint: above). */
static int
pgst_begin(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (p->tx) {
		p->depth++;
		return 0;
	}
	return pgst_tx_open(p, err);
}

/* Commit: end the group, or commit what begin opened. */
static int
pgst_commit(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (p->depth > 0) {
		p->depth--;
		return 0;
	}
	if (!p->tx || p->deferred)
		return 0;
	return pgst_tx_commit(p, err);
}

/* Roll back what begin opened; a group inside a transaction fails the
 * whole transaction (above). */
static void
pgst_rollback(struct store *st)
{
	struct pgst *p = pgst_of(st);

	if (p->depth > 0) {
		p->depth--;
		if (!p->aborted) {
			p->aborted = true;
			snprintf(p->abort_msg, sizeof p->abort_msg,
				 "a group of its writes was rolled back");
		}
		return;
	}
	if (!p->tx || p->deferred)
		return;
	pgst_tx_rollback(p);
}

/* Open the loop turn's transaction, if none is. */
static int
pgst_defer(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (p->tx)
		return 0;
	if (pgst_tx_open(p, err) < 0)
		return -1;
	p->deferred = true;
	return 0;
}

/* Commit the loop turn's transaction. */
static int
pgst_flush(struct store *st, struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (!p->tx || !p->deferred || p->depth > 0)
		return 0;
	return pgst_tx_commit(p, err);
}

/* Roll back whatever is open, the deferred transaction and its groups
 * included (a failed turn: store.h). */
static void
pgst_discard(struct store *st)
{
	struct pgst *p = pgst_of(st);

	if (p->tx)
		pgst_tx_rollback(p);
}

/* Run a statement that writes: inside the open transaction, or, with a
 * fence and none open, in one of its own that checks the lease. */
static PGresult *
pgst_write(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
	   const char *what, struct err *err)
{
	PGresult *r;

	if (p->tx || p->fence <= 0)
		return pgst_exec(p, id, a, what, err);
	if (pgst_tx_open(p, err) < 0)
		return NULL;
	r = pgst_exec(p, id, a, what, err);
	if (r == NULL) {
		pgst_tx_rollback(p);
		return NULL;
	}
	if (pgst_tx_commit(p, err) < 0) {
		PQclear(r);
		return NULL;
	}
	return r;
}

/* Run a statement that writes and returns nothing of interest. */
static int
pgst_write_done(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
		const char *what, struct err *err)
{
	PGresult *r;

	if (p->tx)
		return pgst_pipe(p, NULL, id, a, what, err);
	if ((r = pgst_write(p, id, a, what, err)) == NULL)
		return -1;
	PQclear(r);
	return 0;
}

/* ---- open, migrate, close ---------------------------------------------- */

/* The version of the schema (0: none yet); within the migration's
 * transaction. */
static int
pgst_schema_version(struct pgst *p, int *version, struct err *err)
{
	PGresult *r;

	*version = 0;
	r = PQexec(p->pg, "SELECT to_regclass('schema_version') IS NOT NULL");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return pgst_fail(p, err, "reading the schema version");
	}
	if (!col_bool(r, 0, 0)) {
		PQclear(r);
		return pgst_simple(p, "CREATE TABLE schema_version (version"
				   " integer PRIMARY KEY, name text NOT NULL,"
				   " applied_at timestamptz NOT NULL DEFAULT"
				   " now())", err);
	}
	PQclear(r);
	r = PQexec(p->pg, "SELECT COALESCE(MAX(version), 0) FROM"
		   " schema_version");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return pgst_fail(p, err, "reading the schema version");
	}
	*version = (int)col_int(r, 0, 0);
	PQclear(r);
	return 0;
}

/* Apply the migrations above schema_version, once across nodes. */
static int
pgst_migrate(struct pgst *p, struct err *err)
{
	const char *vals[2];
	char num[16];
	int version, rc;
	int64_t fence;
	PGresult *r;

	if (pgst_simple(p, "BEGIN", err) < 0)
		return -1;
	p->tx = true;
	if (pgst_simple(p, "SELECT pg_advisory_xact_lock(" PGST_MIGRATE_LOCK
			")", err) < 0 ||
	    pgst_schema_version(p, &version, err) < 0)
		goto fail;
	if (version > sql_pg_migrations_count) {
		err_set(err, EXIT_BAD_INPUT, "state store: schema version %d"
			" is newer than"
			" this backfilld knows (%d): run the backfilld that"
			" wrote it", version, sql_pg_migrations_count);
		goto fail;
	}
	for (int i = version; i < sql_pg_migrations_count; i++) {
		if (pgst_simple(p, sql_pg_migrations[i].sql, err) < 0) {
			err_prefix(err, "applying pg/%s",
				   sql_pg_migrations[i].name);
			goto fail;
		}
		snprintf(num, sizeof num, "%d", sql_pg_migrations[i].version);
		vals[0] = num;
		vals[1] = sql_pg_migrations[i].name;
		r = PQexecParams(p->pg, "INSERT INTO schema_version (version,"
				 " name) VALUES ($1, $2)", 2, NULL, vals, NULL,
				 NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			PQclear(r);
			pgst_fail(p, err, "recording the schema version");
			goto fail;
		}
		PQclear(r);
	}
	/* committed without the planner's fence: the schema is no
	 * planner's write, and its check is a prepared statement, which a
	 * first connection prepares only after this (pgst_open_db); sent
	 * unprepared it would fail as a lost connection, on this and on
	 * every later first connection, and the node would refuse every
	 * request while the lease is its own */
	fence = p->fence;
	p->fence = 0;
	p->aborted = false;
	rc = pgst_tx_commit(p, err);
	p->fence = fence;
	return rc;
fail:
	pgst_tx_rollback(p);
	return -1;
}

/* Close the connection and free the store. */
static void
pgst_close(struct store *st)
{
	struct pgst *p = pgst_of(st);

	if (p == NULL)
		return;
	pgst_batch_free(p);
	pgst_after_end(p, false);
	free(p->after);
	if (p->pg != NULL)
		pgst_sync(p);
	if (p->pg != NULL)
		PQfinish(p->pg);
	free(p->conninfo);
	free(p->password_file);
	free(p);
}

/* Connect, and the first time migrate and count the runs kept; then
 * prepare the statements. */
static int
pgst_open_db(struct pgst *p, struct err *err)
{
	PGresult *r;

	if (pgst_connect(p, err) < 0 ||
	    (!p->opened && pgst_migrate(p, err) < 0) ||
	    pgst_prepare(p, err) < 0)
		return -1;
	if (!p->opened) {
		r = pgst_exec(p, P_RUNS_COUNT, NULL, "counting runs", err);
		if (r == NULL)
			return -1;
		p->runs_kept = col_int(r, 0, 0);
		PQclear(r);
		p->opened = true;
	}
	return 0;
}

/*
 * Open.  A server that cannot be reached (no answer, or not taking
 * connections yet: PQping) is not an error: the store opens unconnected, every operation fails as on a
 * connection lost (the failure policy, store.h), and the first one that
 * connects migrates and counts (pgst_ready): a node started, or
 * restarted in place, while the database is down stays up and waits for
 * it (docs/several-hosts.md).  Anything else (a password file that
 * cannot be read, a schema this build does not know, a migration that
 * fails) is a start-up error as ever.
 */
int
store_pg_open(const char *conninfo, const char *password_file,
	      struct store **out, struct err *err)
{
	struct pgst *p = xcalloc(1, sizeof *p);

	p->base.ops = &store_pg_ops;
	p->conninfo = xstrdup(conninfo);
	p->password_file = password_file ? xstrdup(password_file) : NULL;
	if (pgst_open_db(p, err) < 0) {
		/* not reached: no server answers (PQPING_NO_RESPONSE), or
		 * one that does not take connections yet (starting, shutting
		 * down); a server that answers and refuses this node (its
		 * password, its database) is a start-up error */
		PGPing ping = PQping(p->conninfo);
		/* or reached, and the connection lost before the schema was
		 * checked (the server shutting down, a session terminated) */
		bool lost = p->connected && p->pg != NULL &&
			    PQstatus(p->pg) == CONNECTION_BAD;

		if (p->opened || p->pg == NULL ||
		    PQstatus(p->pg) == CONNECTION_OK ||
		    (!lost && ping != PQPING_NO_RESPONSE &&
		     ping != PQPING_REJECT)) {
			pgst_close(&p->base);
			return -1;
		}
		PQfinish(p->pg); /* not reached: connect again later */
		p->pg = NULL;
	}
	*out = &p->base;
	return 0;
}

void
store_pg_fence(struct store *st, int64_t generation)
{
	struct pgst *p = pgst_of(st);

	/* a new planner: the runs kept are the store's, every earlier
	 * planner's too, not the ones this node counted at its start plus
	 * its own (counted again outside a transaction, pgst_stats) */
	if (generation > 0 && generation != p->fence)
		p->recount = true;
	p->fence = generation > 0 ? generation : 0;
}

bool
store_pg_deposed(const struct store *st)
{
	return ((const struct pgst *)st)->deposed;
}

/* The planner's open, fenced transaction, or -1 with err. */
static int
pgst_planner_tx(struct pgst *p, const char *what, struct err *err)
{
	if (p->tx && p->fence > 0)
		return 0;
	return err_set(err, EXIT_INTERNAL, "state store: %s: %s", what,
		       p->fence > 0 ? "no transaction is open" :
		       "this node is not the planner");
}

int
store_pg_offer(struct store *st, const struct cluster_offer *o, size_t n,
	       struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (pgst_planner_tx(p, "offering runs", err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct pgsql_buf keys = { 0 };
		struct pgst_args a = { 0 };
		int rc;

		/* the keys as one text, split again by the statement */
		pgsql_buf_join(&keys, o[i].keys, o[i].nkeys, '\x1f');
		arg_int(&a, o[i].id);
		arg_int(&a, o[i].request);
		arg_text(&a, o[i].job);
		arg_text(&a, keys.p);
		arg_int(&a, o[i].attempt);
		arg_int(&a, p->fence);
		rc = pgst_batch_add(p, B_OFFER, 0, NULL, NULL, &a, err);
		free(keys.p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int
store_pg_forget(struct store *st, const int64_t *ids, size_t n,
		struct err *err)
{
	struct pgst *p = pgst_of(st);

	if (pgst_planner_tx(p, "deleting recorded results", err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct pgst_args a = { 0 };

		arg_int(&a, ids[i]);
		if (pgst_batch_add(p, B_FORGET, ids[i], NULL, NULL, &a,
				   err) < 0)
			return -1;
	}
	return 0;
}

/* The server checkpoints: nothing to do on the loop. */
static void
pgst_checkpoint_on(struct store *st, struct uv_loop_s *loop)
{
	(void)st;
	(void)loop;
}

/* ---- requests, the manifest, runs ------------------------------------- */

/* The next id reserved for a table (stmt: P_ITEM_IDS, P_RUN_IDS). */
static int
pgst_next_id(struct pgst *p, struct pgst_ids *r, enum pgst_stmt stmt,
	     int64_t *id, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *res;

	if (r->pos >= r->n) {
		r->block = r->block > 0 ? r->block : 1;
		arg_int(&a, r->block);
		res = pgst_exec(p, stmt, &a, "reserving ids", err);
		if (res == NULL)
			return -1;
		r->n = PQntuples(res) < PGST_IDS_MAX ? PQntuples(res) :
		       PGST_IDS_MAX;
		for (int i = 0; i < r->n; i++)
			r->id[i] = col_int(res, i, 0);
		PQclear(res);
		r->pos = 0;
		if (r->block < PGST_IDS_MAX)
			r->block *= 2;
		if (r->n == 0)
			return err_set(err, EXIT_INTERNAL, "state store:"
				       " reserving ids: none given");
	}
	*id = r->id[r->pos++];
	return 0;
}

/* Read the id a RETURNING id statement gave. */
static int
pgst_returned_id(PGresult *r, int64_t *id)
{
	if (r == NULL)
		return -1;
	*id = PQntuples(r) > 0 ? col_int(r, 0, 0) : 0;
	PQclear(r);
	return 0;
}

/* Add a request. */
static int
pgst_request_add(struct store *st, const struct store_request *rq,
		 int64_t *id, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_text(&a, rq->job);
	arg_text(&a, rq->kind);
	arg_text(&a, rq->reason);
	arg_text(&a, rq->from_key);
	arg_text(&a, rq->to_key);
	arg_text(&a, rq->reprocess ? rq->reprocess : "all");
	arg_bool(&a, rq->reverse);
	arg_bool(&a, rq->no_downstream);
	arg_int(&a, rq->created_at);
	if (rq->concurrency > 0)
		arg_int(&a, rq->concurrency);
	else
		arg_text(&a, NULL);
	arg_bool(&a, rq->fail_fast);
	arg_text(&a, rq->downstream);
	if (rq->budget_ms > 0)
		arg_int(&a, rq->budget_ms);
	else
		arg_text(&a, NULL);
	arg_bool(&a, rq->no_cutoff);
	return pgst_returned_id(pgst_write(p, P_REQUEST_ADD, &a,
					   "adding a request", err), id);
}

/* Mark a request finished. */
static int
pgst_request_finish(struct store *st, int64_t id, int64_t at, bool cancelled,
		    struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, id);
	arg_int(&a, at);
	arg_bool(&a, cancelled);
	return pgst_write_done(pgst_of(st), P_REQUEST_FINISH, &a,
			       "finishing a request", err);
}

/* Add a manifest row. */
static int
pgst_item_add(struct store *st, const struct store_item *it, int64_t *id,
	      struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_int(&a, it->request_id);
	arg_text(&a, it->job);
	arg_text(&a, it->key);
	arg_int(&a, it->seq);
	arg_bool(&a, it->downstream);
	arg_text(&a, mstate_name(it->state));
	arg_int(&a, it->at);
	if (p->tx) {
		if (pgst_next_id(p, &p->item_ids, P_ITEM_IDS, id, err) < 0)
			return -1;
		arg_int(&a, *id);
		return pgst_batch_add(p, B_ITEM_ADD, 0, NULL, NULL, &a, err);
	}
	return pgst_returned_id(pgst_write(p, P_ITEM_ADD, &a,
					   "adding to the manifest", err), id);
}

/* Set a manifest row's state and what goes with it. */
static int
pgst_item_set(struct store *st, int64_t id, enum mstate state, int attempts,
	      int64_t not_before, const char *error, const char *blocked_on,
	      int changed, int64_t at, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_int(&a, id);
	arg_text(&a, mstate_name(state));
	arg_int(&a, attempts);
	arg_int(&a, not_before);
	arg_text(&a, error);
	arg_text(&a, blocked_on);
	arg_int(&a, at);
	if (changed >= 0)
		arg_bool(&a, changed > 0);
	else
		arg_text(&a, NULL);
	if (p->tx)
		return pgst_batch_add(p, B_ITEM_SET, id, NULL, NULL, &a, err);
	return pgst_write_done(p, P_ITEM_SET, &a, "updating the manifest",
			       err);
}

/* Record a run that starts. */
static int
pgst_run_start(struct store *st, int64_t manifest_id, int64_t request_id,
	       const char *job, const char *key, int attempt,
	       int64_t started_at, const char *code_version,
	       const char *config_hash, int64_t shared_run, int64_t *run_id,
	       struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_int(&a, manifest_id);
	arg_int(&a, request_id);
	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, attempt);
	arg_int(&a, started_at);
	arg_text(&a, code_version);
	arg_text(&a, config_hash);
	if (shared_run > 0)
		arg_int(&a, shared_run);
	else
		arg_text(&a, NULL);
	if (p->tx) {
		if (pgst_next_id(p, &p->run_ids, P_RUN_IDS, run_id, err) < 0)
			return -1;
		arg_int(&a, *run_id);
		if (pgst_batch_add(p, B_RUN_START, 0, NULL, NULL, &a, err) < 0)
			return -1;
	} else if (pgst_returned_id(pgst_write(p, P_RUN_START, &a,
					       "recording a run", err),
				    run_id) < 0) {
		return -1;
	}
	p->runs_kept++;
	return 0;
}

/* Record how a run ended. */
static int
pgst_run_finish(struct store *st, int64_t run_id, enum mstate state,
		int64_t finished_at, const char *error, int64_t rows_changed,
		struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_int(&a, run_id);
	arg_text(&a, mstate_name(state));
	arg_int(&a, finished_at);
	arg_text(&a, error);
	if (rows_changed >= 0)
		arg_int(&a, rows_changed);
	else
		arg_text(&a, NULL);
	if (p->tx)
		return pgst_batch_add(p, B_RUN_FINISH, run_id, NULL, NULL, &a,
				      err);
	return pgst_write_done(p, P_RUN_FINISH, &a, "finishing a run", err);
}

/* Record a successful build of a partition. */
static int
pgst_partition_built(struct store *st, const char *job, const char *key,
		     int64_t built_at, int64_t inputs_at, int64_t run_id,
		     const char *code_version, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, built_at);
	if (inputs_at >= 0)
		arg_int(&a, inputs_at);
	else
		arg_text(&a, NULL);
	arg_int(&a, run_id);
	arg_text(&a, code_version);
	if (p->tx)
		return pgst_batch_add(p, B_BUILT, 0, job, key, &a, err);
	return pgst_write_done(p, P_PART_BUILT, &a, "recording a build", err);
}

/* When (job, key) last landed: 0, or 1 when never. */
static int
pgst_partition_get(struct store *st, const char *job, const char *key,
		   int64_t *built_at, int64_t *inputs_at, char *code_version,
		   size_t cvsz, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 1;

	arg_text(&a, job);
	arg_text(&a, key);
	r = pgst_exec(pgst_of(st), P_PART_GET, &a, "reading a build", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		*built_at = col_int(r, 0, 0);
		*inputs_at = col_null(r, 0, 1) ? -1 : col_int(r, 0, 1);
		if (code_version != NULL)
			snprintf(code_version, cvsz, "%s",
				 col_null(r, 0, 2) ? "" : col_text(r, 0, 2));
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/* recover's transaction. */
static int
pgst_recover_tx(struct store *st, struct pgst *p, const struct pgst_args *a,
		int *count, struct err *err)
{
	PGresult *r;

	if (pgst_begin(st, err) < 0)
		return -1;
	r = pgst_exec(p, P_RECOVER_RUNS, a, "recovering runs", err);
	if (r == NULL)
		goto fail;
	*count = (int)pgst_changes(r);
	PQclear(r);
	r = pgst_exec(p, P_RECOVER_MANIFEST, a, "recovering the manifest",
		      err);
	if (r == NULL)
		goto fail;
	PQclear(r);
	return pgst_commit(st, err);
fail:
	pgst_rollback(st);
	return -1;
}

/* Runs left running by a crash: failed, their manifest rows queued; but
 * those in keep, which a new planner adopts. */
static int
pgst_recover(struct store *st, int64_t at, const int64_t *keep, size_t nkeep,
	     int *count, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	char *ids = xcalloc(nkeep + 1, 24), *w = ids;
	int rc;

	*w++ = '{';
	for (size_t i = 0; i < nkeep; i++)
		w += sprintf(w, "%s%" PRId64, i > 0 ? "," : "", keep[i]);
	*w++ = '}';
	arg_int(&a, at);
	arg_text(&a, ids);
	rc = pgst_recover_tx(st, p, &a, count, err);
	free(ids);
	return rc;
}

/* Call cb for each row of a manifest query (P_LOAD_OPEN, P_LOAD_ONE). */
static int
pgst_load_rows(struct pgst *p, enum pgst_stmt id, const struct pgst_args *a,
	       store_open_cb cb, void *data, struct err *err)
{
	struct store_open_row row;
	PGresult *r;

	r = pgst_exec(p, id, a, "loading the manifest", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		memset(&row, 0, sizeof row);
		row.id = col_int(r, i, 0);
		row.request_id = col_int(r, i, 1);
		row.job = col_text(r, i, 2);
		row.key = col_text(r, i, 3);
		row.seq = (int)col_int(r, i, 4);
		row.downstream = col_bool(r, i, 5);
		if (mstate_parse(col_text(r, i, 6), &row.state) < 0)
			row.state = MS_QUEUED;
		row.attempts = (int)col_int(r, i, 7);
		row.not_before = col_int(r, i, 8);
		row.blocked_on = col_text(r, i, 9);
		row.rq_job = col_text(r, i, 10);
		row.rq_kind = col_text(r, i, 11);
		row.rq_reverse = col_bool(r, i, 12);
		row.rq_created_at = col_int(r, i, 13);
		row.rq_concurrency = (int)col_int(r, i, 14);
		row.rq_fail_fast = col_bool(r, i, 15);
		row.rq_budget_ms = col_int(r, i, 16);
		row.rq_spent_ms = col_int(r, i, 17);
		row.rq_over_budget = col_bool(r, i, 18);
		row.rq_no_cutoff = col_bool(r, i, 19);
		row.changed = col_null(r, i, 20) ? -1 : col_bool(r, i, 20);
		if (cb(&row, data, err) < 0) {
			PQclear(r);
			return -1;
		}
	}
	PQclear(r);
	return 0;
}

/* Every manifest row of unfinished requests. */
static int
pgst_load_open(struct store *st, store_open_cb cb, void *data,
	       struct err *err)
{
	return pgst_load_rows(pgst_of(st), P_LOAD_OPEN, NULL, cb, data, err);
}

/* Every manifest row of one request. */
static int
pgst_load_request(struct store *st, int64_t request_id, store_open_cb cb,
		  void *data, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, request_id);
	return pgst_load_rows(pgst_of(st), P_LOAD_ONE, &a, cb, data, err);
}

/* Mark a finished request open again. */
static int
pgst_request_reopen(struct store *st, int64_t id, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, id);
	return pgst_write_done(pgst_of(st), P_REQUEST_REOPEN, &a,
			       "reopening a request", err);
}

/* Last finished run's state of each partition of job in a key range. */
static int
pgst_last_states(struct store *st, const char *job, const char *first_key,
		 const char *last_key, store_last_cb cb, void *data,
		 struct err *err)
{
	struct pgst_args a = { 0 };
	enum mstate state;
	PGresult *r;

	arg_text(&a, job);
	arg_text(&a, first_key);
	arg_text(&a, last_key);
	r = pgst_exec(pgst_of(st), P_LAST_STATES, &a, "reading the last runs",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		if (mstate_parse(col_text(r, i, 1), &state) == 0)
			cb(col_text(r, i, 0), state, data);
	PQclear(r);
	return 0;
}

/* Call a key callback for each row's first column. */
static int
pgst_key_rows(PGresult *r, store_key_cb cb, void *data, struct err *err)
{
	int rc = 0;

	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r) && rc == 0; i++)
		if (cb(col_text(r, i, 0), data, err) < 0)
			rc = -1;
	PQclear(r);
	return rc;
}

/* Keys of job whose latest successful build used code_version. */
static int
pgst_keys_built_by(struct store *st, const char *job, const char *code_version,
		   store_key_cb cb, void *data, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, code_version);
	return pgst_key_rows(pgst_exec(pgst_of(st), P_BUILT_BY, &a,
				       "reading builds", err), cb, data, err);
}

/* Keys of job in [first_key, last_key] built by another code version. */
static int
pgst_keys_changed(struct store *st, const char *job, const char *code_version,
		  const char *first_key, const char *last_key, store_key_cb cb,
		  void *data, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, code_version);
	arg_text(&a, first_key);
	arg_text(&a, last_key);
	return pgst_key_rows(pgst_exec(pgst_of(st), P_KEYS_CHANGED, &a,
				       "reading builds", err), cb, data, err);
}

/* Every built partition of job. */
static int
pgst_partitions_of(struct store *st, const char *job, store_built_cb cb,
		   void *data, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 0;

	arg_text(&a, job);
	r = pgst_exec(pgst_of(st), P_PARTS_OF, &a, "reading builds", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
		bool has = !col_null(r, i, 2);

		if (cb(col_text(r, i, 0), col_int(r, i, 1), has,
		       has ? col_int(r, i, 2) : 0, data, err) < 0)
			rc = -1;
	}
	PQclear(r);
	return rc;
}

/* A run finished: it becomes its partition's newest; cb learns the state
 * of the one it replaces (MS_COUNT: none): at once outside a
 * transaction, at its commit inside one (store.h). */
static int
pgst_partition_finished(struct store *st, const char *job, const char *key,
			int64_t run_id, enum mstate state, store_prev_cb cb,
			void *data, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	enum mstate prev = MS_COUNT;
	PGresult *r;

	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, run_id);
	arg_text(&a, mstate_name(state));
	if (p->tx) {
		if (pgst_batch_add(p, B_LATEST, 0, job, key, &a, err) < 0)
			return -1;
		if (p->nafter == p->cafter) {
			p->cafter = p->cafter ? 2 * p->cafter : 64;
			p->after = xreallocarray(p->after, p->cafter,
						 sizeof *p->after);
		}
		p->after[p->nafter++] = (struct pgst_after){ cb, data,
			xstrdup(job), MS_COUNT, state };
		return 0;
	}
	/* one statement reads the one it replaces and writes it */
	r = pgst_write(p, P_LATEST_PUT, &a, "recording a partition's last run",
		       err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0 && mstate_parse(col_text(r, 0, 0), &prev) < 0)
		prev = MS_COUNT;
	PQclear(r);
	if (cb != NULL)
		cb(job, prev, state, data);
	return 0;
}

/* Partitions per job by the state of their newest finished run. */
static int
pgst_latest_counts(struct store *st, store_count_cb cb, void *data,
		   struct err *err)
{
	enum mstate state;
	PGresult *r;

	r = pgst_exec(pgst_of(st), P_LATEST_COUNTS, NULL,
		      "counting partitions", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		if (mstate_parse(col_text(r, i, 1), &state) == 0)
			cb(col_text(r, i, 0), state, col_int(r, i, 2), data);
	PQclear(r);
	return 0;
}

/* Record a command run's process group. */
static int
pgst_run_proc(struct store *st, int64_t run_id, int64_t pgid,
	      int64_t proc_start, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, run_id);
	arg_int(&a, pgid);
	arg_int(&a, proc_start);
	return pgst_write_done(pgst_of(st), P_RUN_PROC, &a,
			       "recording a run's process", err);
}

/* A run of the request that last finished job's partition key. */
static int
pgst_run_lookup(struct store *st, const char *job, const char *key,
		int attempt, struct store_run_info *out, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 1;

	arg_text(&a, job);
	arg_text(&a, key);
	arg_int(&a, attempt);
	r = pgst_exec(pgst_of(st), P_RUN_LOOKUP, &a, "reading a run", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		out->id = strtoll(col_text(r, 0, 0), NULL, 10);
		out->request_id = strtoll(col_text(r, 0, 1), NULL, 10);
		out->attempt = atoi(col_text(r, 0, 2));
		if (mstate_parse(col_text(r, 0, 3), &out->state) < 0)
			out->state = MS_FAILED;
		snprintf(out->error, sizeof out->error, "%s",
			 col_text(r, 0, 4) ? col_text(r, 0, 4) : "");
		snprintf(out->node, sizeof out->node, "%s",
			 col_text(r, 0, 5) ? col_text(r, 0, 5) : "");
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/* Run run_id runs on node `node` (the planner's own runs). */
static int
pgst_run_node(struct store *st, int64_t run_id, const char *node,
	      struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, run_id);
	arg_text(&a, node);
	return pgst_write_done(pgst_of(st), P_RUN_NODE, &a,
			       "recording a run's node", err);
}

/* Run run_id is a mark by `by`. */
static int
pgst_run_mark(struct store *st, int64_t run_id, const char *by,
	      struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, run_id);
	arg_text(&a, by);
	return pgst_write_done(pgst_of(st), P_RUN_MARK, &a,
			       "recording a mark", err);
}

/* The partitions of job in a key range whose newest run is a mark. */
static int
pgst_marked_keys(struct store *st, const char *job, const char *first_key,
		 const char *last_key, store_last_cb cb, void *data,
		 struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_text(&a, job);
	arg_text(&a, first_key);
	arg_text(&a, last_key);
	r = pgst_exec(pgst_of(st), P_MARKED_KEYS, &a, "reading the marks",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_text(r, i, 0), MS_SUCCEEDED, data);
	PQclear(r);
	return 0;
}

/* Runs left running with a process group. */
static int
pgst_orphans(struct store *st, store_orphan_cb cb, void *data,
	     struct err *err)
{
	PGresult *r;

	r = pgst_exec(pgst_of(st), P_ORPHANS, NULL,
		      "reading runs left running", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_int(r, i, 0), col_text(r, i, 1), col_text(r, i, 2),
		   col_int(r, i, 3), col_int(r, i, 4), data);
	PQclear(r);
	return 0;
}

/* Runs left running, for a new planner to adopt. */
static int
pgst_running_runs(struct store *st, store_running_cb cb, void *data,
		  struct err *err)
{
	struct store_running_row row;
	PGresult *r;

	r = pgst_exec(pgst_of(st), P_RUNNING, NULL, "reading runs left running",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		row.id = col_int(r, i, 0);
		row.manifest_id = col_int(r, i, 1);
		row.request_id = col_int(r, i, 2);
		row.job = col_text(r, i, 3);
		row.key = col_text(r, i, 4);
		row.attempt = (int)col_int(r, i, 5);
		row.started_at = col_int(r, i, 6);
		cb(&row, data);
	}
	PQclear(r);
	return 0;
}

/* Forget a run that never started. */
static int
pgst_run_unstart(struct store *st, int64_t run_id, struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_int(&a, run_id);
	r = pgst_write(p, P_RUN_UNSTART, &a, "forgetting a run that never"
		       " started", err);
	if (r == NULL)
		return -1;
	p->runs_kept -= pgst_changes(r);
	PQclear(r);
	return 0;
}

/*
 * Can the store be written again?  A real commit that needs room,
 * reconnecting first if need be: store_probe (sql/pg/004_probe.sql)
 * emptied, filled with min_free bytes of pages of its own (at least
 * one), and emptied again, in one transaction.  The server extends the
 * table's new file page by page, and a filesystem that cannot hold them
 * fails the INSERT ("could not extend file ... No space left on
 * device"); the commit then frees them.  A commit that writes only a
 * transaction id, or a row that fits a page a table has, succeeds on a
 * full disk and would restart a node into the same failure.  Another
 * node probing at the same moment holds the table's lock: waited for at
 * most 2 s, then this probe fails and is tried again later.
 */
static int
pgst_probe_write(struct store *st, int64_t min_free, struct err *err)
{
	struct pgst *p = pgst_of(st);
	long long pages = min_free / 8192 > 0 ? min_free / 8192 : 1;
	char sql[256], what[96];
	PGresult *r;

	if (p->tx)
		return err_set(err, EXIT_INTERNAL, "a transaction is open");
	/* a new connection each time: one the server dropped may still
	 * look connected to libpq (and its prepared statements and
	 * pipeline with it), and would fail every probe the same way */
	if (pgst_open_db(p, err) < 0 || pgst_simple(p, "BEGIN", err) < 0)
		return -1;
	p->tx = true;
	p->aborted = false;
	p->depth = 0;
	p->deferred = false;
	snprintf(sql, sizeof sql, "SET LOCAL lock_timeout = '2s';"
		 " TRUNCATE store_probe; INSERT INTO store_probe SELECT"
		 " repeat('x', 8000) FROM generate_series(1, %lld);"
		 " TRUNCATE store_probe", pages);
	snprintf(what, sizeof what, "writing %lld KiB to probe it", pages * 8);
	r = PQexec(p->pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		PQclear(r);
		pgst_fail(p, err, what);
		pgst_tx_rollback(p);
		return -1;
	}
	PQclear(r);
	return pgst_tx_commit(p, err);
}

/* What the store holds. */
static void
pgst_stats(struct store *st, struct store_stats *out)
{
	struct pgst *p = pgst_of(st);
	PGresult *r;

	memset(out, 0, sizeof *out);
	/* not connected: what is known, no connection tried from here */
	if (p->pg == NULL || PQstatus(p->pg) != CONNECTION_OK) {
		out->runs_kept = p->runs_kept;
		return;
	}
	pgst_recount(p);
	out->runs_kept = p->runs_kept;
	/* (a failure here does not abort an open transaction's record) */
	if (p->aborted)
		return;
	r = pgst_exec(p, P_DB_SIZE, NULL, "measuring the database", NULL);
	if (r == NULL)
		return;
	out->db_bytes = col_int(r, 0, 0);
	PQclear(r);
}

/* Delete one slice of history that may go (store.c, "Pruning"). */
static int
pgst_prune_delete(struct pgst *p, struct store_prune *pr, int64_t id,
		  struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int64_t n;

	arg_int(&a, id);
	if (pr->phase == 0) {
		if (pgst_write_done(p, P_PRUNE_AUDIT_DEL, &a,
				    "pruning audit rows", err) < 0)
			return -1;
		r = pgst_write(p, P_PRUNE_RUN_DEL, &a, "pruning runs", err);
		if (r == NULL)
			return -1;
		n = pgst_changes(r);
		pr->runs += n;
		p->runs_kept -= n;
	} else {
		if (pgst_write_done(p, P_PRUNE_MANIFEST_DEL, &a,
				    "pruning the manifest", err) < 0)
			return -1;
		r = pgst_write(p, P_PRUNE_REQUEST_DEL, &a, "pruning requests",
			       err);
		if (r == NULL)
			return -1;
		pr->requests += pgst_changes(r);
	}
	PQclear(r);
	return 0;
}

/* One slice of a pruning pass: 1 more to do, 0 the pass is over. */
static int
pgst_prune_step(struct store *st, struct store_prune *pr, int limit,
		struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	int64_t *ids, nids = 0, seen = 0;
	bool end = false;
	PGresult *r;

	if (pr->phase >= 2)
		return 0;
	arg_int(&a, pr->cursor);
	arg_int(&a, limit);
	r = pgst_exec(p, pr->phase == 0 ? P_PRUNE_RUNS : P_PRUNE_REQUESTS, &a,
		      "reading history to prune", err);
	if (r == NULL)
		return -1;
	ids = xcalloc((size_t)(limit > 0 ? limit : 1), sizeof *ids);
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t id = col_int(r, i, 0);
		bool finished = !col_null(r, i, 3);
		bool keep = pr->phase == 0 && col_bool(r, i, 4);

		seen++;
		if (col_int(r, i, 2) >= pr->newest_cutoff) {
			end = true; /* younger than any keep_runs: done */
			break;
		}
		pr->cursor = id;
		if (!keep && finished &&
		    col_int(r, i, 3) < pr->cutoff(col_text(r, i, 1), pr->data))
			ids[nids++] = id;
	}
	PQclear(r);
	for (int64_t i = 0; i < nids; i++) {
		if (pgst_prune_delete(p, pr, ids[i], err) < 0) {
			free(ids);
			return -1;
		}
	}
	free(ids);
	if (end || seen < limit) { /* the walk reached the end or a young row */
		pr->phase++;
		pr->cursor = 0;
	}
	return pr->phase < 2 ? 1 : 0;
}

/* ---- job state, requests, audit ---------------------------------------- */

/* Per-job schedule state (defaults when the job has none yet). */
static int
pgst_job_get(struct store *st, const char *job, struct store_job_state *js,
	     struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	memset(js, 0, sizeof *js);
	strcpy(js->catchup, "ok");
	arg_text(&a, job);
	r = pgst_exec(pgst_of(st), P_JOB_GET, &a, "reading job state", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		js->has_watermark = !col_null(r, 0, 0);
		col_copy(r, 0, 0, js->watermark, sizeof js->watermark);
		col_copy(r, 0, 1, js->catchup, sizeof js->catchup);
		col_copy(r, 0, 2, js->gap_from, sizeof js->gap_from);
		col_copy(r, 0, 3, js->gap_to, sizeof js->gap_to);
		js->paused = col_bool(r, 0, 4);
		js->paused_at = col_int(r, 0, 5);
		js->has_late_since = !col_null(r, 0, 6);
		js->late_since = col_int(r, 0, 6);
		js->has_late_checked = !col_null(r, 0, 7);
		js->late_checked_at = col_int(r, 0, 7);
		js->late_found = col_int(r, 0, 8);
		col_copy(r, 0, 9, js->late_error, sizeof js->late_error);
		js->has_reconciled = !col_null(r, 0, 10);
		col_copy(r, 0, 10, js->reconciled, sizeof js->reconciled);
	}
	PQclear(r);
	return 0;
}

/* Save per-job schedule state. */
static int
pgst_job_put(struct store *st, const char *job,
	     const struct store_job_state *js, int64_t at, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, js->has_watermark ? js->watermark : NULL);
	arg_text(&a, js->catchup[0] ? js->catchup : "ok");
	arg_text(&a, js->gap_from[0] ? js->gap_from : NULL);
	arg_text(&a, js->gap_to[0] ? js->gap_to : NULL);
	arg_bool(&a, js->paused);
	if (js->paused)
		arg_int(&a, js->paused_at);
	else
		arg_text(&a, NULL);
	arg_int(&a, at);
	if (js->has_late_since)
		arg_int(&a, js->late_since);
	else
		arg_text(&a, NULL);
	if (js->has_late_checked) {
		arg_int(&a, js->late_checked_at);
		arg_int(&a, js->late_found);
	} else {
		arg_text(&a, NULL);
		arg_text(&a, NULL);
	}
	arg_text(&a, js->late_error[0] ? js->late_error : NULL);
	arg_text(&a, js->has_reconciled ? js->reconciled : NULL);
	return pgst_write_done(pgst_of(st), P_JOB_PUT, &a, "saving job state",
			       err);
}

/* The values recorded for (job, metric), newest first, at most max. */
static int
pgst_trend_values(struct store *st, const char *job, const char *metric,
		  size_t max, store_trend_cb cb, void *data, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_text(&a, job);
	arg_text(&a, metric);
	arg_int(&a, (int64_t)max);
	r = pgst_exec(pgst_of(st), P_TREND_VALUES, &a, "reading trend values",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_text(r, i, 0), strtod(PQgetvalue(r, i, 1), NULL), data);
	PQclear(r);
	return 0;
}

/* The shard_publishes rows statement q reads (their columns in table
 * order) to cb. */
static int
pgst_shard_rows(struct store *st, int q, const struct pgst_args *a,
		store_shard_cb cb, void *data, struct err *err)
{
	PGresult *r = pgst_exec(pgst_of(st), q, a,
				"reading the shards' publishes", err);

	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		struct store_shard_row row = {
			.request = col_int(r, i, 0),
			.job = col_text(r, i, 1),
			.key = col_text(r, i, 2),
			.shard = (int)col_int(r, i, 3),
			.nshards = (int)col_int(r, i, 4),
			.run_id = col_int(r, i, 5),
			.rows_before = col_int(r, i, 6),
			.rows_after = col_int(r, i, 7),
			.published_at = col_int(r, i, 8),
		};

		cb(&row, data);
	}
	PQclear(r);
	return 0;
}

/* Record a shard's publish of a partition. */
static int
pgst_shard_put(struct store *st, const struct store_shard_row *row,
	       struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, row->request);
	arg_text(&a, row->job);
	arg_text(&a, row->key);
	arg_int(&a, row->shard);
	arg_int(&a, row->nshards);
	arg_int(&a, row->run_id);
	arg_int(&a, row->rows_before);
	arg_int(&a, row->rows_after);
	arg_int(&a, row->published_at);
	return pgst_write_done(pgst_of(st), P_SHARD_PUT, &a,
			       "recording a shard's publish", err);
}

static int
pgst_shards_of(struct store *st, int64_t request, const char *job,
	       const char *key, store_shard_cb cb, void *data,
	       struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, request);
	arg_text(&a, job);
	arg_text(&a, key);
	return pgst_shard_rows(st, P_SHARDS_OF, &a, cb, data, err);
}

static int
pgst_shards_partial(struct store *st, store_shard_cb cb, void *data,
		    struct err *err)
{
	return pgst_shard_rows(st, P_SHARDS_PARTIAL, NULL, cb, data, err);
}

/* Record a metric's value for a partition (replacing an earlier one). */
static int
pgst_trend_put(struct store *st, const char *job, const char *metric,
	       const char *key, double value, int64_t run_id, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, metric);
	arg_text(&a, key);
	snprintf(a.buf[a.n], sizeof a.buf[a.n], "%.17g", value);
	a.v[a.n] = a.buf[a.n];
	a.n++;
	arg_int(&a, run_id);
	return pgst_write_done(pgst_of(st), P_TREND_PUT, &a,
			       "recording a trend value", err);
}

/* Keep the newest `keep` values of (job, metric). */
static int
pgst_trend_trim(struct store *st, const char *job, const char *metric,
		size_t keep, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, metric);
	arg_int(&a, (int64_t)keep);
	return pgst_write_done(pgst_of(st), P_TREND_TRIM, &a,
			       "trimming trend values", err);
}

/* Every (job, metric) with values. */
static int
pgst_trend_series(struct store *st, store_series_cb cb, void *data,
		  struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	r = pgst_exec(pgst_of(st), P_TREND_SERIES, &a, "reading trend series",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_text(r, i, 0), col_text(r, i, 1), data);
	PQclear(r);
	return 0;
}

/* Does request id exist: 0 with its job and whether finished, 1 not. */
static int
pgst_request_get(struct store *st, int64_t id, char *job, size_t jobsz,
		 bool *finished, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 1;

	arg_int(&a, id);
	r = pgst_exec(pgst_of(st), P_REQUEST_GET, &a, "reading a request", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		col_copy(r, 0, 0, job, jobsz);
		*finished = col_bool(r, 0, 1);
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/* A request's own controls: 0, or 1 when there is no such request. */
static int
pgst_request_controls(struct store *st, int64_t id, int *concurrency,
		      bool *fail_fast, char *downstream, size_t dsz,
		      struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int rc = 1;

	arg_int(&a, id);
	r = pgst_exec(pgst_of(st), P_REQUEST_CONTROLS, &a,
		      "reading a request's controls", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		*concurrency = (int)col_int(r, 0, 0);
		*fail_fast = col_bool(r, 0, 1);
		col_copy(r, 0, 2, downstream, dsz);
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/* A request's measured warehouse time and when it stopped over budget. */
static int
pgst_request_budget(struct store *st, int64_t id, int64_t spent_ms,
		    int64_t over_at, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, id);
	arg_int(&a, spent_ms);
	if (over_at > 0)
		arg_int(&a, over_at);
	else
		arg_text(&a, NULL);
	return pgst_write_done(pgst_of(st), P_REQUEST_BUDGET, &a,
			       "writing a request's measured time", err);
}

/* The newest `limit` requests stopped over budget, newest first. */
static int
pgst_over_budget(struct store *st, int limit, store_budget_cb cb, void *data,
		 struct err *err)
{
	struct store_budget_row row;
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_int(&a, limit);
	r = pgst_exec(pgst_of(st), P_OVER_BUDGET, &a, "reading the requests"
		      " stopped over budget", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		row.id = col_int(r, i, 0);
		row.job = col_text(r, i, 1);
		row.budget_ms = col_int(r, i, 2);
		row.spent_ms = col_int(r, i, 3);
		row.over_at = col_int(r, i, 4);
		row.cancelled = col_int(r, i, 5);
		cb(&row, data);
	}
	PQclear(r);
	return 0;
}

/* The newest `limit` requests, newest first. */
static int
pgst_recent_requests(struct store *st, int limit, store_recent_cb cb,
		     void *data, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_int(&a, limit);
	r = pgst_exec(pgst_of(st), P_RECENT_REQUESTS, &a,
		      "reading the recent requests", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_int(r, i, 0), col_text(r, i, 1), col_text(r, i, 2),
		   col_text(r, i, 3), col_int(r, i, 4), !col_null(r, i, 5),
		   col_int(r, i, 5), col_bool(r, i, 6), data);
	PQclear(r);
	return 0;
}

/* The failed and blocked rows of a request, in run order. */
static int
pgst_request_problems(struct store *st, int64_t request_id,
		      store_problem_cb cb, void *data, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_int(&a, request_id);
	r = pgst_exec(pgst_of(st), P_PROBLEMS, &a,
		      "reading a request's failures", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		cb(col_text(r, i, 0), col_text(r, i, 1), col_text(r, i, 2),
		   col_text(r, i, 3), col_text(r, i, 4), data);
	PQclear(r);
	return 0;
}

/* Record what a run wrote to one partition (replacing any record). */
static int
pgst_audit_add(struct store *st, int64_t run_id, const char *key,
	       bool has_before, int64_t rows_before, bool has_after,
	       int64_t rows_after, const char *metrics, const char *checks,
	       const char *metrics_text, const char *checks_text, bool passed,
	       const char *sum_before, const char *sum_after, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_int(&a, run_id);
	arg_text(&a, key);
	if (has_before)
		arg_int(&a, rows_before);
	else
		arg_text(&a, NULL);
	if (has_after)
		arg_int(&a, rows_after);
	else
		arg_text(&a, NULL);
	arg_text(&a, metrics ? metrics : "{}");
	arg_text(&a, checks ? checks : "[]");
	arg_bool(&a, passed);
	arg_text(&a, metrics_text);
	arg_text(&a, checks_text);
	arg_text(&a, sum_before);
	arg_text(&a, sum_after);
	return pgst_write_done(pgst_of(st), P_AUDIT_ADD, &a,
			       "recording an audit", err);
}

/* One row of the audit query as a struct store_audit_row. */
static void
pgst_audit_row(PGresult *r, int i, struct store_audit_row *row)
{
	memset(row, 0, sizeof *row);
	row->job = col_text(r, i, 0);
	row->key = col_text(r, i, 1);
	row->downstream = col_bool(r, i, 2);
	row->item_state = col_text(r, i, 3);
	row->has_run = !col_null(r, i, 4);
	row->run_id = col_int(r, i, 4);
	row->code_version = col_text(r, i, 5);
	row->config_hash = col_text(r, i, 6);
	row->run_state = col_text(r, i, 7);
	row->error = col_text(r, i, 8);
	row->has_rows_before = !col_null(r, i, 9);
	row->rows_before = col_int(r, i, 9);
	row->has_rows_after = !col_null(r, i, 10);
	row->rows_after = col_int(r, i, 10);
	row->metrics = col_text(r, i, 11);
	row->checks = col_text(r, i, 12);
	row->has_audit = !col_null(r, i, 13);
	row->passed = col_bool(r, i, 13);
	row->metrics_text = col_text(r, i, 14);
	row->checks_text = col_text(r, i, 15);
	row->item_error = col_text(r, i, 16);
	row->sum_before = col_null(r, i, 17) ? NULL : col_text(r, i, 17);
	row->sum_after = col_null(r, i, 18) ? NULL : col_text(r, i, 18);
}

/* Every manifest row of a request with its latest run and its audit. */
static int
pgst_audit_of(struct store *st, int64_t request_id, store_audit_cb cb,
	      void *data, struct err *err)
{
	struct store_audit_row row;
	struct pgst_args a = { 0 };
	PGresult *r;

	arg_int(&a, request_id);
	r = pgst_exec(pgst_of(st), P_AUDIT_OF, &a, "reading the audit", err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		pgst_audit_row(r, i, &row);
		cb(&row, data);
	}
	PQclear(r);
	return 0;
}

/* A request's manifest rows by state, and how long it took. */
static int
pgst_request_counts(struct store *st, int64_t request_id,
		    int64_t counts[MS_COUNT], int64_t *elapsed_ms,
		    struct err *err)
{
	struct pgst_args a = { 0 };
	enum mstate state;
	PGresult *r;

	for (int i = 0; i < MS_COUNT; i++)
		counts[i] = 0;
	*elapsed_ms = 0;
	arg_int(&a, request_id);
	r = pgst_exec(pgst_of(st), P_REQUEST_COUNTS, &a, "counting a request",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		if (mstate_parse(col_text(r, i, 0), &state) == 0)
			counts[state] += col_int(r, i, 1);
		*elapsed_ms = col_int(r, i, 3) - col_int(r, i, 2);
	}
	PQclear(r);
	return 0;
}

/* The durations of job's newest successful runs, newest first. */
static int
pgst_durations(struct store *st, const char *job, int64_t *ms, size_t max,
	       size_t *n, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	*n = 0;
	arg_text(&a, job);
	arg_int(&a, (int64_t)max);
	r = pgst_exec(pgst_of(st), P_DURATIONS, &a, "reading run durations",
		      err);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r) && *n < max; i++)
		ms[(*n)++] = col_int(r, i, 0);
	PQclear(r);
	return 0;
}

/* The newest landing among job's partitions in a key range: 0, or 1
 * when none was ever built. */
static int
pgst_newest_build(struct store *st, const char *job, const char *first_key,
		  const char *last_key, int64_t *built_at, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;
	int found = 1;

	arg_text(&a, job);
	arg_text(&a, first_key);
	arg_text(&a, last_key);
	r = pgst_exec(pgst_of(st), P_NEWEST_BUILD, &a, "reading builds", err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0 && !col_null(r, 0, 0)) {
		*built_at = col_int(r, 0, 0);
		found = 0;
	}
	PQclear(r);
	return found;
}

/* ---- runs, page by page (store.c: the same keyset cursor) ---------------- */

struct pgst_cursor {
	struct store_runs_cursor base; /* first: store.c sees this */
	struct pgst *p;
};

/* The bounds min(id) and max(id)+1 of table; empty: lo = hi = 0. */
static int
pgst_runs_bounds(struct pgst *p, const char *table, int64_t *lo, int64_t *hi,
		 struct err *err)
{
	char sql[96];
	PGresult *r;

	if (pgst_ready(p, err) < 0)
		return -1;
	snprintf(sql, sizeof sql, "SELECT min(id), max(id) FROM %s", table);
	pgst_sync(p);
	r = PQexec(p->pg, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return pgst_fail(p, err, "listing runs");
	}
	*lo = *hi = 0;
	if (!col_null(r, 0, 0)) {
		*lo = col_int(r, 0, 0);
		*hi = col_int(r, 0, 1) + 1;
	}
	PQclear(r);
	return 0;
}

/* The PostgreSQL cursor behind a runs cursor. */
static struct pgst_cursor *
pgst_cursor_of(const struct store_runs_cursor *c)
{
	return (struct pgst_cursor *)c;
}

/* Close a cursor. */
static void
pgst_runs_close(struct store_runs_cursor *base)
{
	if (base == NULL)
		return;
	store_runs_free(base);
	free(base);
}

/* Open the runs listing (store.h). */
static int
pgst_runs_open(struct store *st, const char *job, int64_t request_id,
	       const char *state, struct store_runs_cursor **out,
	       struct err *err)
{
	struct pgst_cursor *c = xcalloc(1, sizeof *c);
	struct pgst *p = pgst_of(st);

	store_runs_init(&c->base, st, job, request_id, state);
	c->p = p;
	if (pgst_runs_bounds(p, "manifest", &c->base.lo[0], &c->base.hi[0],
			     err) < 0 ||
	    pgst_runs_bounds(p, "runs", &c->base.lo[1], &c->base.hi[1],
			     err) < 0) {
		pgst_runs_close(&c->base);
		return -1;
	}
	store_runs_clip(&c->base);
	*out = &c->base;
	return 0;
}

/* One listed row as a struct store_run_row. */
static void
pgst_run_row(PGresult *r, int i, struct store_run_row *row)
{
	memset(row, 0, sizeof *row);
	row->has_id = !col_null(r, i, 0);
	row->id = col_int(r, i, 0);
	row->request_id = col_int(r, i, 1);
	row->job = col_text(r, i, 2);
	row->key = col_text(r, i, 3);
	row->attempt = (int)col_int(r, i, 4);
	row->state = col_text(r, i, 5);
	row->has_started_at = !col_null(r, i, 6);
	row->started_at = col_int(r, i, 6);
	row->has_finished_at = !col_null(r, i, 7);
	row->finished_at = col_int(r, i, 7);
	row->error = col_text(r, i, 8);
	row->has_rows = !col_null(r, i, 9);
	row->rows_changed = col_int(r, i, 9);
	row->code_version = col_text(r, i, 10);
	row->marked_by = col_text(r, i, 11);
}

/* One window of the current phase (store_runs_window_fn). */
static int
pgst_runs_window(struct store_runs_cursor *base, int64_t lo,
		 struct store_runs_page *pg, struct err *err)
{
	static const unsigned types[6] = { PGST_INT8OID, PGST_INT8OID,
		PGST_TEXTOID, PGST_INT8OID, PGST_TEXTOID, PGST_INT8OID };
	struct pgst *p = pgst_cursor_of(base)->p;
	struct pgst_args a = { 0 };
	struct store_run_row row;
	char sql[768];
	PGresult *r;

	store_runs_sql(base, '$', sql, sizeof sql);
	arg_int(&a, base->hi[base->phase]);
	arg_int(&a, lo);
	arg_text(&a, base->job);
	arg_int(&a, base->request_id);
	arg_text(&a, base->state);
	arg_int(&a, pg->max_rows);
	pgst_sync(p);
	if (pgst_ready(p, err) < 0)
		return -1;
	r = PQexecParams(p->pg, sql, a.n, types, a.v, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return pgst_fail(p, err, "listing runs");
	}
	for (int i = 0; i < PQntuples(r) && !pg->stop; i++) {
		pgst_run_row(r, i, &row);
		if (store_runs_row(base, &row, col_int(r, i, 12), pg,
				   err) < 0) {
			PQclear(r);
			return -1;
		}
	}
	PQclear(r);
	return 0;
}

/* One page of the listing: 1 complete, 0 more may follow, -1 err. */
static int
pgst_runs_page(struct store_runs_cursor *base, int max_rows, store_run_cb cb,
	       void *data, struct err *err)
{
	return store_runs_walk(base, max_rows, pgst_runs_window, cb, data,
			       err);
}

const struct store_ops store_pg_ops = {
	.name = "postgres",
	.open = NULL, /* store_pg_open, with its password_file */
	.close = pgst_close,
	.checkpoint_on = pgst_checkpoint_on,
	.begin = pgst_begin,
	.commit = pgst_commit,
	.rollback = pgst_rollback,
	.defer = pgst_defer,
	.flush = pgst_flush,
	.request_add = pgst_request_add,
	.request_finish = pgst_request_finish,
	.item_add = pgst_item_add,
	.item_set = pgst_item_set,
	.run_start = pgst_run_start,
	.run_finish = pgst_run_finish,
	.partition_built = pgst_partition_built,
	.partition_get = pgst_partition_get,
	.newest_build = pgst_newest_build,
	.recover = pgst_recover,
	.load_open = pgst_load_open,
	.load_request = pgst_load_request,
	.request_controls = pgst_request_controls,
	.request_reopen = pgst_request_reopen,
	.last_states = pgst_last_states,
	.keys_built_by = pgst_keys_built_by,
	.keys_changed = pgst_keys_changed,
	.partitions_of = pgst_partitions_of,
	.runs_open = pgst_runs_open,
	.runs_page = pgst_runs_page,
	.runs_max_id = store_runs_newest,
	.runs_close = pgst_runs_close,
	.partition_finished = pgst_partition_finished,
	.latest_counts = pgst_latest_counts,
	.run_proc = pgst_run_proc,
	.run_mark = pgst_run_mark,
	.run_node = pgst_run_node,
	.run_lookup = pgst_run_lookup,
	.marked_keys = pgst_marked_keys,
	.orphans = pgst_orphans,
	.running_runs = pgst_running_runs,
	.run_unstart = pgst_run_unstart,
	.probe_write = pgst_probe_write,
	.stats = pgst_stats,
	.prune_step = pgst_prune_step,
	.job_get = pgst_job_get,
	.job_put = pgst_job_put,
	.trend_values = pgst_trend_values,
	.trend_put = pgst_trend_put,
	.trend_trim = pgst_trend_trim,
	.trend_series = pgst_trend_series,
	.shard_put = pgst_shard_put,
	.shards_of = pgst_shards_of,
	.shards_partial = pgst_shards_partial,
	.request_problems = pgst_request_problems,
	.audit_add = pgst_audit_add,
	.audit_of = pgst_audit_of,
	.request_counts = pgst_request_counts,
	.durations = pgst_durations,
	.recent_requests = pgst_recent_requests,
	.request_get = pgst_request_get,
	.request_budget = pgst_request_budget,
	.over_budget = pgst_over_budget,
	.discard = pgst_discard,
};
