/*
 * store_sqlite_query.c - the SQLite state store's upkeep (the write
 * probe, stats, pruning) and the rows beside the manifest: each job's
 * saved state, trend values, shard publishes, a request's controls and
 * budget, the audit, and the reads of status and the report.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "sql_embedded.h"
#include "store_sqlite_int.h"
#include "xalloc.h"

int
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

void
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

/* Free the job and key copies of n pruned ids. */
static void
store_sqlite_names_free(char **names, int64_t n)
{
	if (names == NULL)
		return;
	for (int64_t i = 0; i < n * 2; i++)
		free(names[i]);
	free(names);
}

/* Prune row id of the walk's phase (0: a run and its audit rows, its
 * job and key in names[0..1] for pr->pruned when not NULL; 1: a request
 * and its manifest rows): 0, or -1 with err. */
static int
store_sqlite_prune_id(struct store_sqlite *st, struct store_prune *pr,
		      int64_t id, char **names, struct err *err)
{
	if (pr->phase == 0) {
		if (store_sqlite_id_done(st, st->stmt[S_PRUNE_AUDIT_DEL], id,
					 err, "pruning audit rows") < 0 ||
		    store_sqlite_id_done(st, st->stmt[S_PRUNE_RUN_DEL], id,
					 err, "pruning runs") < 0)
			return -1;
		pr->runs += sqlite3_changes(st->db);
		st->runs_kept -= sqlite3_changes(st->db);
		if (names != NULL && sqlite3_changes(st->db) > 0)
			pr->pruned(names[0], names[1], id, pr->data);
		return 0;
	}
	if (store_sqlite_id_done(st, st->stmt[S_PRUNE_MANIFEST_DEL], id, err,
				 "pruning the manifest") < 0 ||
	    store_sqlite_id_done(st, st->stmt[S_PRUNE_REQUEST_DEL], id, err,
				 "pruning requests") < 0)
		return -1;
	pr->requests += sqlite3_changes(st->db);
	return 0;
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
int
store_sqlite_prune_step(struct store *base, struct store_prune *pr, int limit,
			struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s;
	int64_t *ids, nids = 0, seen = 0;
	char **names = NULL; /* phase 0: job and key of each id */
	bool end = false;
	int rc;

	if (pr->phase >= 2)
		return 0;
	ids = xcalloc((size_t)limit, sizeof *ids);
	if (pr->phase == 0 && pr->pruned != NULL)
		names = xcalloc((size_t)limit * 2, sizeof *names);
	s = st->stmt[pr->phase == 0 ? S_PRUNE_RUNS : S_PRUNE_REQUESTS];
	sqlite3_bind_int64(s, 1, pr->cursor);
	sqlite3_bind_int(s, 2, limit);
	while ((rc = store_sqlite_next(st, s, err, "reading history to prune")) > 0) {
		int64_t id = sqlite3_column_int64(s, 0);
		const char *job = store_sqlite_col_text(s, 1);
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
		    finished_at < pr->cutoff(job, pr->data)) {
			if (names != NULL) {
				const char *key = store_sqlite_col_text(s, 5);

				names[nids * 2] = xstrdup(job ? job : "");
				names[nids * 2 + 1] = xstrdup(key ? key : "");
			}
			ids[nids++] = id;
		}
	}
	if (rc < 0)
		goto fail;
	for (int64_t i = 0; i < nids; i++)
		if (store_sqlite_prune_id(st, pr, ids[i],
		    names != NULL ? names + i * 2 : NULL, err) < 0)
			goto fail;
	store_sqlite_names_free(names, nids);
	free(ids);
	if (end || seen < limit) { /* the walk reached the end or a young row */
		pr->phase++;
		pr->cursor = 0;
	}
	return pr->phase < 2 ? 1 : 0;
fail:
	store_sqlite_names_free(names, nids);
	free(ids);
	return -1;
}

int
store_sqlite_job_get(struct store *base, const char *job,
		     struct store_job_state *js, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_JOB_GET];
	int rc;

	memset(js, 0, sizeof *js);
	strcpy(js->catchup, "ok");
	store_sqlite_bind_text(s, 1, job);
	rc = store_sqlite_next(st, s, err, "reading job state");
	if (rc < 0)
		return -1;
	if (rc > 0) {
		js->has_watermark = sqlite3_column_type(s, 0) != SQLITE_NULL;
		store_sqlite_col_copy(s, 0, js->watermark,
				      sizeof js->watermark);
		store_sqlite_col_copy(s, 1, js->catchup, sizeof js->catchup);
		store_sqlite_col_copy(s, 2, js->gap_from, sizeof js->gap_from);
		store_sqlite_col_copy(s, 3, js->gap_to, sizeof js->gap_to);
		js->paused = sqlite3_column_int(s, 4);
		js->paused_at = sqlite3_column_int64(s, 5);
		js->has_late_since = sqlite3_column_type(s, 6) != SQLITE_NULL;
		js->late_since = sqlite3_column_int64(s, 6);
		js->has_late_checked = sqlite3_column_type(s, 7) != SQLITE_NULL;
		js->late_checked_at = sqlite3_column_int64(s, 7);
		js->late_found = sqlite3_column_int64(s, 8);
		store_sqlite_col_copy(s, 9, js->late_error,
				      sizeof js->late_error);
		js->has_reconciled = sqlite3_column_type(s, 10) != SQLITE_NULL;
		store_sqlite_col_copy(s, 10, js->reconciled,
				      sizeof js->reconciled);
		store_sqlite_done(s);
	}
	return 0;
}

int
store_sqlite_job_put(struct store *base, const char *job,
		     const struct store_job_state *js, int64_t at,
		     struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_JOB_PUT];

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, js->has_watermark ? js->watermark : NULL);
	store_sqlite_bind_text(s, 3, js->catchup[0] ? js->catchup : "ok");
	store_sqlite_bind_text(s, 4, js->gap_from[0] ? js->gap_from : NULL);
	store_sqlite_bind_text(s, 5, js->gap_to[0] ? js->gap_to : NULL);
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
	store_sqlite_bind_text(s, 12,
			       js->late_error[0] ? js->late_error : NULL);
	store_sqlite_bind_text(s, 13,
			       js->has_reconciled ? js->reconciled : NULL);
	return store_sqlite_step_done(st, s, err, "saving job state");
}

int
store_sqlite_job_calendar(struct store *base, const char *job, char *cal,
			  size_t calsz, bool *built, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_JOB_CAL_GET];
	int rc;

	cal[0] = '\0';
	*built = false;
	store_sqlite_bind_text(s, 1, job);
	rc = store_sqlite_next(st, s, err, "reading a job's calendar");
	if (rc < 0)
		return -1;
	if (rc > 0) {
		store_sqlite_col_copy(s, 0, cal, calsz);
		*built = sqlite3_column_int(s, 1) != 0;
		store_sqlite_done(s);
	}
	return 0;
}

int
store_sqlite_job_calendar_put(struct store *base, const char *job,
			      const char *cal, int64_t at, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_JOB_CAL_PUT];

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, cal[0] != '\0' ? cal : NULL);
	sqlite3_bind_int64(s, 3, at);
	return store_sqlite_step_done(st, s, err, "saving a job's calendar");
}

int
store_sqlite_trend_values(struct store *base, const char *job,
			  const char *metric, size_t max, store_trend_cb cb,
			  void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_VALUES];
	int rc;

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, metric);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)max);
	while ((rc = store_sqlite_next(st, s, err, "reading trend values")) > 0)
		cb(store_sqlite_col_text(s, 0), sqlite3_column_double(s, 1),
		   data);
	return rc < 0 ? -1 : 0;
}

int
store_sqlite_trend_put(struct store *base, const char *job,
		       const char *metric, const char *key, double value,
		       int64_t run_id, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_PUT];

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, metric);
	store_sqlite_bind_text(s, 3, key);
	sqlite3_bind_double(s, 4, value);
	sqlite3_bind_int64(s, 5, run_id);
	return store_sqlite_step_done(st, s, err, "recording a trend value");
}

/* The shard_publishes rows statement s reads (their columns in table
 * order) to cb. */
static int
store_sqlite_shard_rows(struct store_sqlite *st, sqlite3_stmt *s,
			store_shard_cb cb, void *data, struct err *err)
{
	int rc;

	while ((rc = store_sqlite_next(st, s, err,
				       "reading the shards' publishes")) > 0) {
		struct store_shard_row r = {
			.request = sqlite3_column_int64(s, 0),
			.job = store_sqlite_col_text(s, 1),
			.key = store_sqlite_col_text(s, 2),
			.shard = sqlite3_column_int(s, 3),
			.nshards = sqlite3_column_int(s, 4),
			.run_id = sqlite3_column_int64(s, 5),
			.rows_before = sqlite3_column_int64(s, 6),
			.rows_after = sqlite3_column_int64(s, 7),
			.published_at = sqlite3_column_int64(s, 8),
		};

		cb(&r, data);
	}
	return rc < 0 ? -1 : 0;
}

int
store_sqlite_shard_put(struct store *base, const struct store_shard_row *r,
		       struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_SHARD_PUT];

	sqlite3_bind_int64(s, 1, r->request);
	store_sqlite_bind_text(s, 2, r->job);
	store_sqlite_bind_text(s, 3, r->key);
	sqlite3_bind_int(s, 4, r->shard);
	sqlite3_bind_int(s, 5, r->nshards);
	sqlite3_bind_int64(s, 6, r->run_id);
	sqlite3_bind_int64(s, 7, r->rows_before);
	sqlite3_bind_int64(s, 8, r->rows_after);
	sqlite3_bind_int64(s, 9, r->published_at);
	return store_sqlite_step_done(st, s, err, "recording a shard's publish");
}

int
store_sqlite_shards_of(struct store *base, int64_t request, const char *job,
		       const char *key, store_shard_cb cb, void *data,
		       struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_SHARDS_OF];

	sqlite3_bind_int64(s, 1, request);
	store_sqlite_bind_text(s, 2, job);
	store_sqlite_bind_text(s, 3, key);
	return store_sqlite_shard_rows(st, s, cb, data, err);
}

int
store_sqlite_shards_partial(struct store *base, store_shard_cb cb, void *data,
			    struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	return store_sqlite_shard_rows(st, st->stmt[S_SHARDS_PARTIAL], cb, data,
				       err);
}

int
store_sqlite_trend_trim(struct store *base, const char *job,
			const char *metric, size_t keep, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_TRIM];

	store_sqlite_bind_text(s, 1, job);
	store_sqlite_bind_text(s, 2, metric);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)keep);
	return store_sqlite_step_done(st, s, err, "trimming trend values");
}

int
store_sqlite_trend_series(struct store *base, store_series_cb cb, void *data,
			  struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_TREND_SERIES];
	int rc;

	while ((rc = store_sqlite_next(st, s, err, "reading trend series")) > 0)
		cb(store_sqlite_col_text(s, 0), store_sqlite_col_text(s, 1),
		   data);
	return rc < 0 ? -1 : 0;
}

int
store_sqlite_request_get(struct store *base, int64_t id, char *job,
			 size_t jobsz, bool *finished, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_REQUEST_GET];
	int rc;

	rc = store_sqlite_id_next(st, s, id, err, "reading a request");
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	store_sqlite_col_copy(s, 0, job, jobsz);
	*finished = sqlite3_column_int(s, 1);
	store_sqlite_done(s);
	return 0;
}

int
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
	store_sqlite_col_copy(s, 2, downstream, dsz);
	store_sqlite_done(s);
	return 0;
}

int
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

int
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
		row.job = store_sqlite_col_text(s, 1);
		row.budget_ms = sqlite3_column_int64(s, 2);
		row.spent_ms = sqlite3_column_int64(s, 3);
		row.over_at = sqlite3_column_int64(s, 4);
		row.cancelled = sqlite3_column_int64(s, 5);
		cb(&row, data);
	}
	return rc;
}

int
store_sqlite_recent_requests(struct store *base, int limit, store_recent_cb cb,
			     void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_RECENT_REQUESTS];
	int rc;

	sqlite3_bind_int(s, 1, limit);
	while ((rc = store_sqlite_next(st, s, err, "reading the recent requests")) > 0)
		cb(sqlite3_column_int64(s, 0), store_sqlite_col_text(s, 1),
		   store_sqlite_col_text(s, 2),
		   sqlite3_column_type(s, 3) == SQLITE_NULL
		       ? NULL
		       : store_sqlite_col_text(s, 3),
		   sqlite3_column_int64(s, 4),
		   sqlite3_column_type(s, 5) != SQLITE_NULL,
		   sqlite3_column_int64(s, 5), sqlite3_column_int(s, 6) != 0,
		   data);
	return rc;
}

int
store_sqlite_request_problems(struct store *base, int64_t request_id,
			      store_problem_cb cb, void *data, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_PROBLEMS];
	int rc;

	sqlite3_bind_int64(s, 1, request_id);
	while ((rc = store_sqlite_next(st, s, err,
				"reading a request's failures")) > 0)
		cb(store_sqlite_col_text(s, 0), store_sqlite_col_text(s, 1),
		   store_sqlite_col_text(s, 2), store_sqlite_col_text(s, 3),
		   store_sqlite_col_text(s, 4), data);
	return rc;
}

int
store_sqlite_audit_add(struct store *base, int64_t run_id, const char *key,
		       bool has_before, int64_t rows_before, bool has_after,
		       int64_t rows_after, const char *metrics,
		       const char *checks, const char *metrics_text,
		       const char *checks_text, bool passed,
		       const char *sum_before, const char *sum_after,
		       int64_t changes, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_AUDIT_ADD];

	sqlite3_bind_int64(s, 1, run_id);
	store_sqlite_bind_text(s, 2, key);
	if (has_before)
		sqlite3_bind_int64(s, 3, rows_before);
	if (has_after)
		sqlite3_bind_int64(s, 4, rows_after);
	store_sqlite_bind_text(s, 5, metrics ? metrics : "{}");
	store_sqlite_bind_text(s, 6, checks ? checks : "[]");
	sqlite3_bind_int(s, 7, passed);
	store_sqlite_bind_text(s, 8, metrics_text);
	store_sqlite_bind_text(s, 9, checks_text);
	store_sqlite_bind_text(s, 10, sum_before);
	store_sqlite_bind_text(s, 11, sum_after);
	if (changes >= 0)
		sqlite3_bind_int64(s, 12, changes);
	return store_sqlite_step_done(st, s, err, "recording an audit");
}

int
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
		row.job = store_sqlite_col_text(s, 0);
		row.key = store_sqlite_col_text(s, 1);
		row.downstream = sqlite3_column_int(s, 2);
		row.item_state = store_sqlite_col_text(s, 3);
		row.has_run = sqlite3_column_type(s, 4) != SQLITE_NULL;
		row.run_id = sqlite3_column_int64(s, 4);
		row.code_version = store_sqlite_col_text(s, 5);
		row.config_hash = store_sqlite_col_text(s, 6);
		row.run_state = store_sqlite_col_text(s, 7);
		row.error = store_sqlite_col_text(s, 8);
		row.has_rows_before = sqlite3_column_type(s, 9) != SQLITE_NULL;
		row.rows_before = sqlite3_column_int64(s, 9);
		row.has_rows_after = sqlite3_column_type(s, 10) != SQLITE_NULL;
		row.rows_after = sqlite3_column_int64(s, 10);
		row.metrics = store_sqlite_col_text(s, 11);
		row.checks = store_sqlite_col_text(s, 12);
		row.has_audit = sqlite3_column_type(s, 13) != SQLITE_NULL;
		row.passed = sqlite3_column_int(s, 13);
		row.metrics_text = store_sqlite_col_text(s, 14);
		row.checks_text = store_sqlite_col_text(s, 15);
		row.item_error = store_sqlite_col_text(s, 16);
		row.sum_before = store_sqlite_col_text(s, 17);
		row.sum_after = store_sqlite_col_text(s, 18);
		row.has_changes = sqlite3_column_type(s, 19) != SQLITE_NULL;
		row.changes = sqlite3_column_int64(s, 19);
		cb(&row, data);
	}
	return rc;
}

int
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
		if (mstate_parse(store_sqlite_col_text(s, 0), &state) == 0)
			counts[state] += sqlite3_column_int64(s, 1);
		*elapsed_ms = sqlite3_column_int64(s, 3) -
			sqlite3_column_int64(s, 2);
	}
	return rc;
}

int
store_sqlite_durations(struct store *base, const char *job, int64_t *ms,
		       size_t max, size_t *n, struct err *err)
{
	struct store_sqlite *st = store_sqlite_of(base);
	sqlite3_stmt *s = st->stmt[S_DURATIONS];
	int rc;

	*n = 0;
	store_sqlite_bind_text(s, 1, job);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
	while ((rc = store_sqlite_next(st, s, err, "reading run durations")) > 0) {
		if (*n < max)
			ms[(*n)++] = sqlite3_column_int64(s, 0);
	}
	return rc < 0 ? -1 : 0;
}
