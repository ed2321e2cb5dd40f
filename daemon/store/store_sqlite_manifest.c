/*
 * store_sqlite_manifest.c - the SQLite state store's requests, manifest
 * items, runs and partitions: what the scheduler writes as work moves
 * (one loop turn's changes share one commit, store.h), and what it loads
 * at start and recovery.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite_int.h"
#include "xalloc.h"

int
store_sqlite_request_add(struct store *base, const struct store_request *rq,
			 int64_t *id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_ADD];

	store_sqlite_bind_text(s, 1, rq->job);
	store_sqlite_bind_text(s, 2, rq->kind);
	store_sqlite_bind_text(s, 3, rq->reason);
	store_sqlite_bind_text(s, 4, rq->from_key);
	store_sqlite_bind_text(s, 5, rq->to_key);
	store_sqlite_bind_text(s, 6, rq->reprocess ? rq->reprocess : "all");
	sqlite3_bind_int(s, 7, rq->reverse);
	sqlite3_bind_int(s, 8, rq->no_downstream);
	sqlite3_bind_int64(s, 9, rq->created_at);
	if (rq->concurrency > 0)
		sqlite3_bind_int(s, 10, rq->concurrency);
	else
		sqlite3_bind_null(s, 10);
	sqlite3_bind_int(s, 11, rq->fail_fast);
	store_sqlite_bind_text(s, 12, rq->downstream);
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

int
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

int
store_sqlite_item_add(struct store *base, const struct store_item *it,
		      int64_t *id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_ITEM_ADD];

	sqlite3_bind_int64(s, 1, it->request_id);
	store_sqlite_bind_text(s, 2, it->job);
	store_sqlite_bind_text(s, 3, it->key);
	sqlite3_bind_int(s, 4, it->seq);
	sqlite3_bind_int(s, 5, it->downstream);
	store_sqlite_bind_text(s, 6, mstate_name(it->state));
	sqlite3_bind_int64(s, 8, it->at);
	if (store_sqlite_step_done(st, s, err, "adding to the manifest") < 0)
		return -1;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

int
store_sqlite_item_set(struct store *base, int64_t id, enum mstate state,
		      int attempts, int64_t not_before, const char *error,
		      const char *blocked_on, int changed, int64_t at,
		      struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_ITEM_SET];

	sqlite3_bind_int64(s, 1, id);
	store_sqlite_bind_text(s, 2, mstate_name(state));
	sqlite3_bind_int(s, 3, attempts);
	sqlite3_bind_int64(s, 4, not_before);
	store_sqlite_bind_text(s, 5, error);
	store_sqlite_bind_text(s, 6, blocked_on);
	sqlite3_bind_int64(s, 7, at);
	if (changed >= 0)
		sqlite3_bind_int(s, 8, changed);
	else
		sqlite3_bind_null(s, 8);
	return store_sqlite_step_done(st, s, err, "updating the manifest");
}

int
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
	store_sqlite_bind_text(s, 3, job);
	store_sqlite_bind_text(s, 4, key);
	sqlite3_bind_int(s, 5, attempt);
	sqlite3_bind_int64(s, 6, started_at);
	store_sqlite_bind_text(s, 7, code_version);
	store_sqlite_bind_text(s, 8, config_hash);
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

int
store_sqlite_run_finish(struct store *base, int64_t run_id, enum mstate state,
			int64_t finished_at, const char *error,
			int64_t rows_changed, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_FINISH];

	sqlite3_bind_int64(s, 1, run_id);
	store_sqlite_bind_text(s, 2, mstate_name(state));
	sqlite3_bind_int64(s, 3, finished_at);
	store_sqlite_bind_text(s, 4, error);
	if (rows_changed >= 0)
		sqlite3_bind_int64(s, 5, rows_changed);
	else
		sqlite3_bind_null(s, 5);
	return store_sqlite_step_done(st, s, err, "finishing a run");
}

int
store_sqlite_partition_built(struct store *base, const char *job,
			     const char *key, int64_t built_at,
			     int64_t inputs_at, int64_t run_id,
			     const char *code_version, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PART_BUILT];

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, key);
	sqlite3_bind_int64(s, 3, built_at);
	if (inputs_at >= 0)
		sqlite3_bind_int64(s, 4, inputs_at);
	else
		sqlite3_bind_null(s, 4);
	sqlite3_bind_int64(s, 5, run_id);
	store_sqlite_bind_text(s, 6, code_version);
	return store_sqlite_step_done(st, s, err, "recording a build");
}

int
store_sqlite_partition_get(struct store *base, const char *job, const char *key,
			   int64_t *built_at, int64_t *inputs_at,
			   char *code_version, size_t cvsz, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PART_GET];
	int rc;

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, key);
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

int
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
		row.job = store_sqlite_col_text(s, 2);
		row.key = store_sqlite_col_text(s, 3);
		row.seq = sqlite3_column_int(s, 4);
		row.downstream = sqlite3_column_int(s, 5);
		if (mstate_parse(store_sqlite_col_text(s, 6), &row.state) < 0)
			row.state = MS_QUEUED;
		row.attempts = sqlite3_column_int(s, 7);
		row.not_before = sqlite3_column_int64(s, 8);
		row.blocked_on = store_sqlite_col_text(s, 9);
		row.rq_job = store_sqlite_col_text(s, 10);
		row.rq_kind = store_sqlite_col_text(s, 11);
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

int
store_sqlite_load_open(struct store *base, store_open_cb cb, void *data,
		       struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);

	return store_sqlite_load_rows(st, st->stmt[S_LOAD_OPEN], cb, data, err);
}

int
store_sqlite_load_request(struct store *base, int64_t request_id,
			  store_open_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LOAD_ONE];

	sqlite3_bind_int64(s, 1, request_id);
	return store_sqlite_load_rows(st, s, cb, data, err);
}

int
store_sqlite_request_reopen(struct store *base, int64_t id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_REOPEN];

	return store_sqlite_id_done(st, s, id, err, "reopening a request");
}

int
store_sqlite_last_states(struct store *base, const char *job,
			 const char *first_key, const char *last_key,
			 store_last_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LAST_STATES];
	enum mstate state;
	int rc;

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, first_key);
	store_sqlite_bind_text(s, 3, last_key);
	while ((rc = store_sqlite_next(st, s, err, "reading the last runs")) > 0) {
		if (mstate_parse(store_sqlite_col_text(s, 1), &state) == 0)
			cb(store_sqlite_col_text(s, 0), state, data);
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
		if (cb(store_sqlite_col_text(s, 0), data, err) < 0) {
			store_sqlite_done(s);
			return -1;
		}
	}
	return rc;
}

int
store_sqlite_keys_built_by(struct store *base, const char *job,
			   const char *code_version, store_key_cb cb,
			   void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_BUILT_BY];

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, code_version);
	return store_sqlite_key_rows(st, s, cb, data, err);
}

int
store_sqlite_keys_changed(struct store *base, const char *job,
			  const char *code_version, const char *first_key,
			  const char *last_key, store_key_cb cb, void *data,
			  struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_KEYS_CHANGED];

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, code_version);
	store_sqlite_bind_text(s, 3, first_key);
	store_sqlite_bind_text(s, 4, last_key);
	return store_sqlite_key_rows(st, s, cb, data, err);
}

int
store_sqlite_partitions_of(struct store *base, const char *job,
			   store_built_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PARTS_OF];
	int rc;

	store_sqlite_bind_text(s, 1, job);
	while ((rc = store_sqlite_next(st, s, err, "reading builds")) > 0) {
		bool has = sqlite3_column_type(s, 2) != SQLITE_NULL;

		if (cb(store_sqlite_col_text(s, 0), sqlite3_column_int64(s, 1),
		       has, has ? sqlite3_column_int64(s, 2) : 0, data,
		       err) < 0) {
			store_sqlite_done(s);
			return -1;
		}
	}
	return rc;
}

int
store_sqlite_partition_finished(struct store *base, const char *job,
				const char *key, int64_t run_id,
				enum mstate state, store_prev_cb cb,
				void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LATEST_GET];
	enum mstate prev = MS_NONE;
	int rc;

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, key);
	rc = store_sqlite_next(st, s, err, "reading a partition's last run");
	if (rc < 0)
		return -1;
	if (rc > 0) {
		if (mstate_parse(store_sqlite_col_text(s, 0), &prev) < 0)
			prev = MS_NONE;
		store_sqlite_done(s);
	}
	s = st->stmt[S_LATEST_PUT];
	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, key);
	sqlite3_bind_int64(s, 3, run_id);
	store_sqlite_bind_text(s, 4, mstate_name(state));
	if (store_sqlite_step_done(st, s, err,
				   "recording a partition's last run") < 0)
		return -1;
	if (cb != NULL)
		cb(job, prev, state, data);
	return 0;
}

int
store_sqlite_latest_counts(struct store *base, store_count_cb cb, void *data,
			   struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_LATEST_COUNTS];
	enum mstate state;
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "counting partitions")) > 0) {
		if (mstate_parse(store_sqlite_col_text(s, 1), &state) == 0)
			cb(store_sqlite_col_text(s, 0), state,
			   sqlite3_column_int64(s, 2), data);
	}
	return rc;
}

int
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

int
store_sqlite_run_lookup(struct store *base, const char *job, const char *key,
			int attempt, struct store_run_info *out,
			struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_LOOKUP];
	int rc;

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, key);
	sqlite3_bind_int(s, 3, attempt);
	rc = store_sqlite_next(st, s, err, "reading a run");
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	out->id = sqlite3_column_int64(s, 0);
	out->request_id = sqlite3_column_int64(s, 1);
	out->attempt = sqlite3_column_int(s, 2);
	if (mstate_parse(store_sqlite_col_text(s, 3), &out->state) < 0)
		out->state = MS_FAILED;
	snprintf(out->error, sizeof out->error, "%s",
		 store_sqlite_col_text(s, 4) ? store_sqlite_col_text(s, 4)
					     : "");
	store_sqlite_done(s);
	return 0;
}

/* One host: every log is this host's. */
int
store_sqlite_run_node(struct store *base, int64_t run_id, const char *node,
		      struct err *err)
{
	(void)base;
	(void)run_id;
	(void)node;
	(void)err;
	return 0;
}

int
store_sqlite_run_mark(struct store *base, int64_t run_id, const char *by,
		      struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RUN_MARK];

	sqlite3_bind_int64(s, 1, run_id);
	store_sqlite_bind_text(s, 2, by);
	return store_sqlite_step_done(st, s, err, "recording a mark");
}

int
store_sqlite_marked_keys(struct store *base, const char *job,
			 const char *first_key, const char *last_key,
			 store_last_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_MARKED_KEYS];
	int rc;

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, first_key);
	store_sqlite_bind_text(s, 3, last_key);
	while ((rc = store_sqlite_next(st, s, err, "reading the marks")) > 0)
		cb(store_sqlite_col_text(s, 0), MS_SUCCEEDED, data);
	return rc;
}

int
store_sqlite_orphans(struct store *base, store_orphan_cb cb, void *data,
		     struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_ORPHANS];
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "reading runs left running")) > 0)
		cb(sqlite3_column_int64(s, 0), store_sqlite_col_text(s, 1),
		   store_sqlite_col_text(s, 2), sqlite3_column_int64(s, 3),
		   sqlite3_column_int64(s, 4), data);
	return rc;
}

int
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

int
store_sqlite_newest_build(struct store *base, const char *job,
			  const char *first_key, const char *last_key,
			  int64_t *built_at, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_NEWEST_BUILD];
	int rc, found = 1;

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, first_key);
	store_sqlite_bind_text(s, 3, last_key);
	while ((rc = store_sqlite_next(st, s, err, "reading builds")) > 0) {
		if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
			*built_at = sqlite3_column_int64(s, 0);
			found = 0;
		}
	}
	return rc < 0 ? -1 : found;
}
