/*
 * store_pg_read.c - the PostgreSQL state store's operations that read,
 * keep or prune (store_pg_int.h; the rules are at the top of
 * store_pg.c): the write probe and stats, pruning, job state, trends,
 * shards' publishes, requests and their audit, runs page by page.
 */
#include "store_pg_int.h"

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
int
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

/* What the store holds: the planner's (or a single host's) runs_kept
 * from its changes, counted again on its connection when asked; the
 * database's size, and on a node of several hosts that is not the
 * planner the runs (the runs are others'), read off the loop
 * (store_pg_stats.c), never waited for past its bound. */
void
pgst_stats(struct store *st, struct store_stats *out)
{
	struct pgst *p = pgst_of(st);
	bool others = p->shared && p->fence <= 0;

	memset(out, 0, sizeof *out);
	/* not connected: no connection tried from the loop here */
	if (!others && p->pg != NULL && PQstatus(p->pg) == CONNECTION_OK)
		pgst_recount(p);
	out->runs_kept = p->runs_kept; /* on another node: the open's count,
					* until a reading comes back */
	pgst_stats_figures(p, others, PGST_STATS_WAIT_MS, out);
}

/* Delete one slice of history that may go (store.c, "Pruning"); job
 * and key: the run's (phase 0, for pr->pruned), or NULL. */
static int
pgst_prune_delete(struct pgst *p, struct store_prune *pr, int64_t id,
		  const char *job, const char *key, struct err *err)
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
		if (n > 0 && pr->pruned != NULL && job != NULL)
			pr->pruned(job, key, id, pr->data);
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
int
pgst_prune_step(struct store *st, struct store_prune *pr, int limit,
		struct err *err)
{
	struct pgst *p = pgst_of(st);
	struct pgst_args a = { 0 };
	int64_t *ids, nids = 0, seen = 0;
	char **names; /* phase 0: job and key of each id */
	bool end = false;
	PGresult *r;
	int rc = 0;

	if (pr->phase >= 2)
		return 0;
	arg_int(&a, pr->cursor);
	arg_int(&a, limit);
	r = pgst_exec(p, pr->phase == 0 ? P_PRUNE_RUNS : P_PRUNE_REQUESTS, &a,
		      "reading history to prune", err);
	if (r == NULL)
		return -1;
	ids = xcalloc((size_t)(limit > 0 ? limit : 1), sizeof *ids);
	names = xcalloc((size_t)(limit > 0 ? limit : 1) * 2, sizeof *names);
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
		    col_int(r, i, 3) < pr->cutoff(col_text(r, i, 1), pr->data)) {
			if (pr->phase == 0) {
				names[nids * 2] = xstrdup(col_text(r, i, 1) ?
				    col_text(r, i, 1) : "");
				names[nids * 2 + 1] = xstrdup(col_text(r, i, 5) ?
				    col_text(r, i, 5) : "");
			}
			ids[nids++] = id;
		}
	}
	PQclear(r);
	for (int64_t i = 0; i < nids && rc == 0; i++)
		rc = pgst_prune_delete(p, pr, ids[i], names[i * 2],
				       names[i * 2 + 1], err);
	for (int64_t i = 0; i < nids * 2; i++)
		free(names[i]);
	free(names);
	free(ids);
	if (rc < 0)
		return -1;
	if (end || seen < limit) { /* the walk reached the end or a young row */
		pr->phase++;
		pr->cursor = 0;
	}
	return pr->phase < 2 ? 1 : 0;
}

/* ---- job state, requests, audit ---------------------------------------- */

/* Per-job schedule state (defaults when the job has none yet). */
int
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
int
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

/* The calendar a job's keys were built in, and whether any was. */
int
pgst_job_calendar(struct store *st, const char *job, char *cal, size_t calsz,
		  bool *built, struct err *err)
{
	struct pgst_args a = { 0 };
	PGresult *r;

	cal[0] = '\0';
	*built = false;
	arg_text(&a, job);
	r = pgst_exec(pgst_of(st), P_JOB_CAL_GET, &a, "reading a job's calendar",
		      err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) > 0) {
		col_copy(r, 0, 0, cal, calsz);
		*built = col_bool(r, 0, 1);
	}
	PQclear(r);
	return 0;
}

/* Record a job's calendar ("" as NULL). */
int
pgst_job_calendar_put(struct store *st, const char *job, const char *cal,
		      int64_t at, struct err *err)
{
	struct pgst_args a = { 0 };

	arg_text(&a, job);
	arg_text(&a, cal[0] != '\0' ? cal : NULL);
	arg_int(&a, at);
	return pgst_write_done(pgst_of(st), P_JOB_CAL_PUT, &a,
			       "saving a job's calendar", err);
}

/* The values recorded for (job, metric), newest first, at most max. */
int
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
int
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

int
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

int
pgst_shards_partial(struct store *st, store_shard_cb cb, void *data,
		    struct err *err)
{
	return pgst_shard_rows(st, P_SHARDS_PARTIAL, NULL, cb, data, err);
}

/* Record a metric's value for a partition (replacing an earlier one). */
int
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
int
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
int
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
int
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
int
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
int
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
int
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
int
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
int
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
int
pgst_audit_add(struct store *st, int64_t run_id, const char *key,
	       bool has_before, int64_t rows_before, bool has_after,
	       int64_t rows_after, const char *metrics, const char *checks,
	       const char *metrics_text, const char *checks_text, bool passed,
	       const char *sum_before, const char *sum_after, int64_t changes,
	       struct err *err)
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
	if (changes >= 0)
		arg_int(&a, changes);
	else
		arg_text(&a, NULL);
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
	row->has_changes = !col_null(r, i, 19);
	row->changes = col_int(r, i, 19);
}

/* Every manifest row of a request with its latest run and its audit. */
int
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
int
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
int
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
int
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
void
pgst_runs_close(struct store_runs_cursor *base)
{
	if (base == NULL)
		return;
	store_runs_free(base);
	free(base);
}

/* Open the runs listing (store.h). */
int
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
int
pgst_runs_page(struct store_runs_cursor *base, int max_rows, store_run_cb cb,
	       void *data, struct err *err)
{
	return store_runs_walk(base, max_rows, pgst_runs_window, cb, data,
			       err);
}
