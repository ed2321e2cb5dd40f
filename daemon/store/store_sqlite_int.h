/*
 * store_sqlite_int.h - what the files of the SQLite state store share
 * (store_sqlite.c's top comment lists them): the statements' ids, the
 * store's struct, and the helpers and operations each file defines for
 * the others.  Loop thread only, but for the checkpoint's pool thread
 * (store_sqlite_ckpt.c).
 */
#ifndef BACKFILLD_STORE_SQLITE_INT_H
#define BACKFILLD_STORE_SQLITE_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "store.h"

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
	S_JOB_CAL_GET,
	S_JOB_CAL_PUT,
	S_TREND_VALUES,
	S_TREND_PUT,
	S_TREND_TRIM,
	S_TREND_SERIES,
	S_SHARD_PUT,
	S_SHARDS_OF,
	S_SHARDS_PARTIAL,
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

/* The statements, by id (store_sqlite_sql.c). */
extern const char *const store_sqlite_sql[S_COUNT];

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
static inline struct store_sqlite *
store_sqlite_of(struct store *base)
{
	return (struct store_sqlite *)base;
}

/* ---- store_sqlite.c ---------------------------------------------------- */

/* Fill err from the connection's last error, with context. */
int store_sqlite_fail(struct store_sqlite *st, struct err *err,
		      const char *what);
/* Run SQL without results. */
int store_sqlite_exec(struct store_sqlite *st, const char *sql,
		      struct err *err);
/* Transactions and savepoints (the rules above store_sqlite_begin). */
int store_sqlite_begin(struct store *base, struct err *err);
int store_sqlite_commit(struct store *base, struct err *err);
void store_sqlite_rollback(struct store *base);
/* Bind text or NULL. */
void store_sqlite_bind_text(sqlite3_stmt *s, int i, const char *v);
/* Step a statement that returns no rows, then reset it. */
int store_sqlite_step_done(struct store_sqlite *st, sqlite3_stmt *s,
			   struct err *err, const char *what);
/* Reset a statement after reading rows. */
void store_sqlite_done(sqlite3_stmt *s);
/*
 * Step a statement that returns rows: 1 with the next row in s; at the
 * end 0, or -1 with err (sqlite's message, after what) on an error, the
 * statement reset either way.  A caller that stops before the end calls
 * store_sqlite_done itself.
 */
int store_sqlite_next(struct store_sqlite *st, sqlite3_stmt *s, struct err *err,
		      const char *what);
/* store_sqlite_step_done with id bound as ?1. */
int store_sqlite_id_done(struct store_sqlite *st, sqlite3_stmt *s, int64_t id,
			 struct err *err, const char *what);
/* store_sqlite_next with id bound as ?1 (the first row of a lookup). */
int store_sqlite_id_next(struct store_sqlite *st, sqlite3_stmt *s, int64_t id,
			 struct err *err, const char *what);
/* Text column or NULL. */
const char *store_sqlite_col_text(sqlite3_stmt *s, int i);
/* Copy a text column into a fixed buffer ("" for NULL). */
void store_sqlite_col_copy(sqlite3_stmt *s, int i, char *buf, size_t sz);

/* ---- store_sqlite_ckpt.c ----------------------------------------------- */

/* After each commit: checkpoint on the pool when the WAL has grown, on
 * the loop when the pool could not keep up. */
int store_sqlite_wal_hook(void *arg, sqlite3 *db, const char *name, int pages);
void store_sqlite_checkpoint_on(struct store *base, uv_loop_t *loop);

/* ---- store_sqlite_manifest.c ------------------------------------------- */

int store_sqlite_request_add(struct store *base, const struct store_request *rq,
			     int64_t *id, struct err *err);
int store_sqlite_request_finish(struct store *base, int64_t id, int64_t at,
				bool cancelled, struct err *err);
int store_sqlite_item_add(struct store *base, const struct store_item *it,
			  int64_t *id, struct err *err);
int store_sqlite_item_set(struct store *base, int64_t id, enum mstate state,
			  int attempts, int64_t not_before, const char *error,
			  const char *blocked_on, int changed, int64_t at,
			  struct err *err);
int store_sqlite_run_start(struct store *base, int64_t manifest_id,
			   int64_t request_id, const char *job, const char *key,
			   int attempt, int64_t started_at,
			   const char *code_version, const char *config_hash,
			   int64_t shared_run, int64_t *run_id,
			   struct err *err);
int store_sqlite_run_finish(struct store *base, int64_t run_id,
			    enum mstate state, int64_t finished_at,
			    const char *error, int64_t rows_changed,
			    struct err *err);
int store_sqlite_partition_built(struct store *base, const char *job,
				 const char *key, int64_t built_at,
				 int64_t inputs_at, int64_t run_id,
				 const char *code_version, struct err *err);
int store_sqlite_partition_get(struct store *base, const char *job,
			       const char *key, int64_t *built_at,
			       int64_t *inputs_at, char *code_version,
			       size_t cvsz, struct err *err);
int store_sqlite_recover(struct store *base, int64_t at, const int64_t *keep,
			 size_t nkeep, int *count, struct err *err);
int store_sqlite_load_open(struct store *base, store_open_cb cb, void *data,
			   struct err *err);
int store_sqlite_load_request(struct store *base, int64_t request_id,
			      store_open_cb cb, void *data, struct err *err);
int store_sqlite_request_reopen(struct store *base, int64_t id,
				struct err *err);
int store_sqlite_last_states(struct store *base, const char *job,
			     const char *first_key, const char *last_key,
			     store_last_cb cb, void *data, struct err *err);
int store_sqlite_keys_built_by(struct store *base, const char *job,
			       const char *code_version, store_key_cb cb,
			       void *data, struct err *err);
int store_sqlite_keys_changed(struct store *base, const char *job,
			      const char *code_version, const char *first_key,
			      const char *last_key, store_key_cb cb, void *data,
			      struct err *err);
int store_sqlite_partitions_of(struct store *base, const char *job,
			       store_built_cb cb, void *data, struct err *err);
int store_sqlite_partition_finished(struct store *base, const char *job,
				    const char *key, int64_t run_id,
				    enum mstate state, store_prev_cb cb,
				    void *data, struct err *err);
int store_sqlite_latest_counts(struct store *base, store_count_cb cb,
			       void *data, struct err *err);
int store_sqlite_run_proc(struct store *base, int64_t run_id, int64_t pgid,
			  int64_t proc_start, struct err *err);
int store_sqlite_run_lookup(struct store *base, const char *job,
			    const char *key, int attempt,
			    struct store_run_info *out, struct err *err);
/* One host: every log is this host's. */
int store_sqlite_run_node(struct store *base, int64_t run_id, const char *node,
			  struct err *err);
int store_sqlite_run_mark(struct store *base, int64_t run_id, const char *by,
			  struct err *err);
int store_sqlite_marked_keys(struct store *base, const char *job,
			     const char *first_key, const char *last_key,
			     store_last_cb cb, void *data, struct err *err);
int store_sqlite_orphans(struct store *base, store_orphan_cb cb, void *data,
			 struct err *err);
int store_sqlite_run_unstart(struct store *base, int64_t run_id,
			     struct err *err);
int store_sqlite_newest_build(struct store *base, const char *job,
			      const char *first_key, const char *last_key,
			      int64_t *built_at, struct err *err);

/* ---- store_sqlite_query.c ---------------------------------------------- */

int store_sqlite_probe_write(struct store *base, int64_t min_free,
			     struct err *err);
void store_sqlite_stats(struct store *base, struct store_stats *out);
/* Pruning, one slice at a time (the rules above its definition). */
int store_sqlite_prune_step(struct store *base, struct store_prune *pr,
			    int limit, struct err *err);
int store_sqlite_job_get(struct store *base, const char *job,
			 struct store_job_state *js, struct err *err);
int store_sqlite_job_put(struct store *base, const char *job,
			 const struct store_job_state *js, int64_t at,
			 struct err *err);
int store_sqlite_job_calendar(struct store *base, const char *job, char *cal,
			      size_t calsz, bool *built, struct err *err);
int store_sqlite_job_calendar_put(struct store *base, const char *job,
				  const char *cal, int64_t at,
				  struct err *err);
int store_sqlite_trend_values(struct store *base, const char *job,
			      const char *metric, size_t max, store_trend_cb cb,
			      void *data, struct err *err);
int store_sqlite_trend_put(struct store *base, const char *job,
			   const char *metric, const char *key, double value,
			   int64_t run_id, struct err *err);
int store_sqlite_shard_put(struct store *base, const struct store_shard_row *r,
			   struct err *err);
int store_sqlite_shards_of(struct store *base, int64_t request, const char *job,
			   const char *key, store_shard_cb cb, void *data,
			   struct err *err);
int store_sqlite_shards_partial(struct store *base, store_shard_cb cb,
				void *data, struct err *err);
int store_sqlite_trend_trim(struct store *base, const char *job,
			    const char *metric, size_t keep, struct err *err);
int store_sqlite_trend_series(struct store *base, store_series_cb cb,
			      void *data, struct err *err);
int store_sqlite_request_get(struct store *base, int64_t id, char *job,
			     size_t jobsz, bool *finished, struct err *err);
int store_sqlite_request_controls(struct store *base, int64_t id,
				  int *concurrency, bool *fail_fast,
				  char *downstream, size_t dsz,
				  struct err *err);
int store_sqlite_request_budget(struct store *base, int64_t id,
				int64_t spent_ms, int64_t over_at,
				struct err *err);
int store_sqlite_over_budget(struct store *base, int limit, store_budget_cb cb,
			     void *data, struct err *err);
int store_sqlite_recent_requests(struct store *base, int limit,
				 store_recent_cb cb, void *data,
				 struct err *err);
int store_sqlite_request_problems(struct store *base, int64_t request_id,
				  store_problem_cb cb, void *data,
				  struct err *err);
int store_sqlite_audit_add(struct store *base, int64_t run_id, const char *key,
			   bool has_before, int64_t rows_before, bool has_after,
			   int64_t rows_after, const char *metrics,
			   const char *checks, const char *metrics_text,
			   const char *checks_text, bool passed,
			   const char *sum_before, const char *sum_after,
			   int64_t changes, struct err *err);
int store_sqlite_audit_of(struct store *base, int64_t request_id,
			  store_audit_cb cb, void *data, struct err *err);
int store_sqlite_request_counts(struct store *base, int64_t request_id,
				int64_t counts[MS_COUNT], int64_t *elapsed_ms,
				struct err *err);
int store_sqlite_durations(struct store *base, const char *job, int64_t *ms,
			   size_t max, size_t *n, struct err *err);

/* ---- store_sqlite_runs.c ----------------------------------------------- */

int store_sqlite_runs_open(struct store *base, const char *job,
			   int64_t request_id, const char *state,
			   struct store_runs_cursor **out, struct err *err);
int store_sqlite_runs_page(struct store_runs_cursor *base, int max_rows,
			   store_run_cb cb, void *data, struct err *err);
void store_sqlite_runs_close(struct store_runs_cursor *base);

#endif
