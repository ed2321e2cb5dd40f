/*
 * exec_sql.c - one SQL run on a worker thread: the connection taken from
 * the worker's cache, then, by kind of run, the job's transaction (one
 * partition, several one after the other, or a batch), a proof
 * (--verify: run twice, read, rolled back), a late_data query, or a run
 * on ClickHouse (exec_wap.c).  The transaction begins by looking up the
 * run's rows of backfilld_commits and ends by inserting them
 * (wh_commits.h): a run whose earlier attempt committed commits nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "exec_priv.h"
#include "guard.h"
#include "pick.h"
#include "wh_commits.h"
#include "xalloc.h"

/* The keys of a run's parts, for wh_commits (free the array). */
static const char **
exec_part_keys(const struct exec_run *run)
{
	const char **keys = xcalloc(run->nparts, sizeof *keys);

	for (size_t i = 0; i < run->nparts; i++)
		keys[i] = run->parts[i].key;
	return keys;
}

/* Inside the run's transaction, first: 1 when an earlier attempt already
 * committed every identity of the run (wh_commits.h, COMMITS-1), 0 when it
 * must run, -1 with err; *present (free it) says which identities have a
 * row already. */
static int
exec_commits_seen(struct exec_run *run, struct wh_conn *conn,
		  bool **present, struct err *err)
{
	const char **keys;
	char note[ERR_MSG_MAX];
	int r;

	*present = NULL;
	if (run->ncommits == 0)
		return 0;
	keys = exec_part_keys(run);
	*present = xcalloc(run->ncommits, sizeof **present);
	r = wh_commits_seen(conn, run->job->name, keys, run->commits,
			    run->ncommits, *present, note, sizeof note, err);
	free(keys);
	if (r == 1) {
		run->committed_before = true;
		snprintf(run->error, sizeof run->error, "%s", note);
	}
	return r;
}

/* Inside the run's transaction, last: its rows of backfilld_commits, for
 * the identities without one. */
static int
exec_commits_record(struct exec_worker *w, struct exec_run *run,
		    struct wh_conn *conn, const bool *present,
		    struct err *err)
{
	int64_t now = clock_now_ms();
	const char **keys;
	int r;

	if (run->ncommits == 0)
		return 0;
	keys = exec_part_keys(run);
	r = wh_commits_record(conn, run->job->name, keys, run->commits,
			      run->ncommits, present, now,
			      exec_commits_prune_due(w, conn, run) ?
			      now - run->commits_keep_ms : 0, err);
	free(keys);
	return r;
}

/* After a transaction that failed, rolled back: when another run
 * committed every identity meanwhile (the fence, wh_commits.h COMMITS-4: a
 * run abandoned by a node paused past its lease, or the one queued again
 * in its place), this run committed nothing and is recorded as an
 * attempt that found them: 1.  Else 0, err untouched. */
static int
exec_commits_lost(struct exec_run *run, struct wh_conn *conn)
{
	const char **keys;
	char note[ERR_MSG_MAX];
	struct err qerr;
	int r;

	if (run->ncommits == 0 || !conn->drv->usable(conn))
		return 0;
	keys = exec_part_keys(run);
	r = wh_commits_seen(conn, run->job->name, keys, run->commits,
			    run->ncommits, NULL, note, sizeof note, &qerr);
	free(keys);
	if (r != 1)
		return 0;
	run->committed_before = true;
	snprintf(run->error, sizeof run->error, "%s", note);
	return 1;
}

void
exec_part_set(struct exec_part *p, const struct cal *c, part_t pt)
{
	cal_key(c, pt, p->key);
	cal_bounds_local(c, pt, p->start, p->end);
	p->t0 = cal_start(c, pt);
	p->t1 = cal_end(c, pt);
	cal_bound_utc(p->t0, p->start_utc);
	cal_bound_utc(p->t1, p->end_utc);
}

/* The four bounds' parameters, from lo's start to hi's end: a run's
 * (lo == hi) and a batch's, named once. */
static void
exec_bound_params(const struct exec_part *lo, const struct exec_part *hi,
		  struct wh_param out[4])
{
	out[0].name = "partition_start";
	out[0].value = lo->start;
	out[1].name = "partition_end";
	out[1].value = hi->end;
	out[2].name = "partition_start_utc";
	out[2].value = lo->start_utc;
	out[3].name = "partition_end_utc";
	out[3].value = hi->end_utc;
}

/* Fill params with part p's key, local bounds and UTC bounds. */
void
exec_part_params(const struct exec_part *p,
		 struct wh_param params[EXEC_NPARAMS])
{
	params[0].name = "partition";
	params[0].value = p->key;
	exec_bound_params(p, p, params + 1);
}

/* A batch's interval: compared by instant, never by text (a zone's local
 * hours do not sort as text). */
void
exec_batch_span(const struct exec_part *parts, size_t n,
		struct wh_param span[4])
{
	const struct exec_part *lo = &parts[0], *hi = &parts[0];

	for (size_t i = 1; i < n; i++) {
		if (parts[i].t0 < lo->t0)
			lo = &parts[i];
		if (parts[i].t1 > hi->t1)
			hi = &parts[i];
	}
	exec_bound_params(lo, hi, span);
}

/* Begin the run's transaction on conn. */
int
exec_begin(struct wh_conn *conn, struct err *err)
{
	if (conn->drv->begin(conn, err) == -1) {
		err_prefix(err, "cannot begin a transaction");
		return -1;
	}
	return 0;
}

/* After part i ran: its checks, then its guard (with a table).  A check
 * or guard that fails sets *rc to -1 (err keeps the first failure);
 * returns -1 when one could not run (the transaction is lost). */
static int
exec_part_after(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		const struct wh_param *params, int *rc, struct err *err)
{
	struct exec_run *run = fl->run;
	enum guard_outcome g;
	int r;

	r = exec_checks(fl, conn, i, params, EXEC_NPARAMS,
			*rc == 0 ? err : NULL);
	if (r == -2)
		return -1;
	if (r == -1)
		*rc = -1;
	if (run->job->nreconciles > 0) {
		r = exec_reconciles(fl, conn, i, params, EXEC_NPARAMS,
				    *rc == 0 ? err : NULL);
		if (r == -2)
			return -1;
		if (r == -1)
			*rc = -1;
	}
	if (run->job->table != NULL) {
		g = guard_after(run, conn, i, params, EXEC_NPARAMS, *rc == 0,
				err);
		if (g == GUARD_BROKEN)
			return -1;
		if (g == GUARD_FAILED)
			*rc = -1;
	}
	return 0;
}

/* The batch's statements: manifest, job SQL once, checks per partition. */
static int
exec_sql_batch(struct exec_flight *fl, struct wh_conn *conn, int64_t *base,
	       struct err *err)
{
	struct exec_run *run = fl->run;
	struct wh_manifest_row *rows;
	struct wh_param params[EXEC_NPARAMS];
	int rc = 0, r;
	size_t i;

	rows = xcalloc(run->nparts, sizeof *rows);
	for (i = 0; i < run->nparts; i++) {
		rows[i].key = run->parts[i].key;
		rows[i].start = run->parts[i].start;
		rows[i].end = run->parts[i].end;
		rows[i].start_utc = run->parts[i].start_utc;
		rows[i].end_utc = run->parts[i].end_utc;
	}
	r = conn->drv->manifest_fill(conn, rows, run->nparts, err);
	free(rows);
	if (r == -1) {
		err_prefix(err, "cannot fill backfill_manifest");
		return -1;
	}
	*base = conn->drv->changes(conn);
	for (i = 0; run->job->table != NULL && i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		if (guard_before(run, conn, i, params, EXEC_NPARAMS, err) == -1)
			return -1;
	}

	/* The whole batch's interval; :partition means one partition and
	 * is deliberately not bound (the driver says so by name). */
	exec_batch_span(run->parts, run->nparts, params);
	if (conn->drv->exec_script(conn, run->job->sql, params, 4, err) == -1)
		return -1;
	for (i = 0; i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		if (exec_part_after(fl, conn, i, params, &rc, err) == -1)
			return -1;
	}
	if (rc == 0 && conn->drv->manifest_drop(conn, err) == -1)
		return -1;
	return rc;
}

/* Several partitions without batch: one after the other, in the run's
 * transaction.  -1 when one failed (err keeps the first failure). */
static int
exec_sql_parts(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	struct wh_param params[EXEC_NPARAMS];
	int64_t base;
	int rc = 0;

	for (size_t i = 0; i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		if (exec_interrupted(fl, err))
			return -1;
		if (jd->table != NULL && guard_before(run, conn, i, params,
						      EXEC_NPARAMS, err) == -1)
			return -1;
		base = conn->drv->changes(conn);
		if (conn->drv->exec_script(conn, jd->sql, params, EXEC_NPARAMS,
					   rc == 0 ? err : NULL) == -1)
			return -1;
		/* what this partition's statements wrote (early cut-off and
		 * the partition_column guardrail, guard.c) */
		if (run->guards != NULL) {
			run->guards[i].has_changes = true;
			run->guards[i].changes = conn->drv->changes(conn) - base;
		}
		if (exec_part_after(fl, conn, i, params, &rc, err) == -1)
			return -1;
	}
	return rc;
}

/* The run's transaction on conn: everything, then commit or roll back. */
static int
exec_sql_tx(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	const struct wh_driver *drv = conn->drv;
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	int64_t base, changed;
	bool *present = NULL;

	if (exec_begin(conn, err) == -1)
		return -1;
	if (exec_interrupted(fl, err))
		goto fail;
	switch (exec_commits_seen(run, conn, &present, err)) {
	case 1:
		drv->rollback(conn);
		free(present);
		run->rows_changed = 0;
		return 0;
	case -1:
		goto fail;
	}
	if (guard_checks_max(jd) > 0)
		run->checks = xcalloc(guard_checks_max(jd) * run->nparts,
				      sizeof *run->checks);
	base = drv->changes(conn);
	if (jd->batch) {
		if (exec_sql_batch(fl, conn, &base, err) == -1)
			goto fail;
	} else if (exec_sql_parts(fl, conn, err) == -1) {
		goto fail;
	}
	if (exec_interrupted(fl, err))
		goto fail;
	changed = drv->changes(conn) - base;
	if (exec_commits_record(fl->worker, run, conn, present, err) == -1)
		goto fail;
	free(present);
	present = NULL;
	if (drv->commit(conn, err) == -1) {
		err_prefix(err, "commit failed");
		return -1;
	}
	run->rows_changed = changed;
	return 0;

fail:
	drv->rollback(conn);
	/* the marker's insert failed on its key, or a statement on a row
	 * the other run wrote: the other run's commit stands for this one */
	if (present != NULL && !exec_stopping(fl) &&
	    exec_commits_lost(run, conn)) {
		free(present);
		exec_run_clear_results(run); /* as a run that found them */
		run->rows_changed = 0;
		return 0;
	}
	free(present);
	return -1;
}

/* The proof's three steps inside its transaction: read part 0, run it,
 * read it, run it again, read it (exec_sql_verify). */
static int
exec_verify_steps(struct exec_flight *fl, struct wh_conn *conn,
		  struct err *err)
{
	const struct wh_driver *drv = conn->drv;
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const struct exec_part *p = &run->parts[0];
	struct wh_manifest_row row = { p->key, p->start, p->end,
				       p->start_utc, p->end_utc };
	struct wh_param params[EXEC_NPARAMS];

	exec_part_params(p, params);
	for (int k = 0; k < 3; k++) {
		if (exec_interrupted(fl, err))
			return -1;
		if (k > 0 && jd->batch) {
			if (drv->manifest_fill(conn, &row, 1, err) == -1 ||
			    drv->exec_script(conn, jd->sql, params + 1,
					     EXEC_NPARAMS - 1, err) == -1 ||
			    drv->manifest_drop(conn, err) == -1) {
				err_prefix(err, "run %d of 2", k);
				return -1;
			}
		} else if (k > 0 && drv->exec_script(conn, jd->sql, params,
						     EXEC_NPARAMS, err) == -1) {
			err_prefix(err, "run %d of 2", k);
			return -1;
		}
		if (drv->digest(conn, jd->table, jd->partition_column, p->key,
				&run->verify_rows[k], run->verify_sum[k],
				sizeof run->verify_sum[k], err) == -1) {
			err_prefix(err, "reading partition %s of %s", p->key,
				   jd->table);
			return -1;
		}
	}
	return 0;
}

/* A proof (--verify): parts[0] twice in one transaction, its content read
 * before and after each run, everything rolled back. */
static int
exec_sql_verify(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	int rc;

	if (conn->drv->digest == NULL)
		return err_set(err, EXIT_BAD_INPUT, "the %s driver cannot"
			       " verify a job", conn->drv->name);
	if (exec_begin(conn, err) == -1)
		return -1;
	rc = exec_verify_steps(fl, conn, err);
	conn->drv->rollback(conn);
	return rc;
}

/* A query run (a late_data sensor): the values of one read-only
 * statement with :since bound, outside any transaction. */
static int
exec_sql_query(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	struct exec_run *run = fl->run;
	struct wh_param since = { "since", run->query_since };

	if (conn->drv->query_column == NULL)
		return err_set(err, EXIT_WORK_FAILED, "the %s driver cannot run"
			       " late_data sensors", conn->drv->name);
	if (conn->drv->query_column(conn, run->query_sql, &since, 1,
				    run->query_max ? run->query_max : 100000,
				    &run->values, &run->nvalues, err) == -1) {
		err_prefix(err, "late_data query");
		return -1;
	}
	return 0;
}

/* The run on conn, by its kind: a query, a proof, a run on ClickHouse, or
 * the job's transaction. */
static int
exec_sql_kind(struct exec_worker *w, struct exec_flight *fl,
	      struct wh_conn *conn, enum wh_kind kind, struct err *err)
{
	struct exec_run *run = fl->run;
	int rc;

	if (run->query_sql != NULL)
		return exec_sql_query(fl, conn, err);
	if (kind == WH_CLICKHOUSE && run->verify)
		return exec_sql_wap_verify(fl, conn, err);
	if (kind == WH_CLICKHOUSE) {
		rc = exec_sql_wap(fl, conn, exec_conn_wap(w, conn, run->job, 0),
				  err);
		/* checked once a connection; again after a failed run */
		exec_conn_wap(w, conn, run->job, rc == 0 ? 1 : -1);
		return rc;
	}
	if (run->verify)
		return exec_sql_verify(fl, conn, err);
	if (run->ncommits > 0 && exec_conn_commits(w, conn, err) == -1)
		return -1;
	return exec_sql_tx(fl, conn, err);
}

/* One SQL run on worker w. */
void
exec_sql_run(struct exec_worker *w, struct exec_flight *fl)
{
	struct exec_run *run = fl->run;
	const struct warehouse_def *wh;
	struct wh_conn *conn;
	struct err err;
	int rc;

	err_clear(&err);
	if (exec_stopping(fl)) {
		exec_fail(run, "interrupted");
		exec_result_stop(fl);
		return;
	}
	wh = &run->cfg->warehouses[run->job->warehouse];
	conn = exec_conn_get(w, wh, &err);
	if (conn == NULL) {
		run->no_retry = err.code == WH_ERR_DENIED;
		exec_fail(run, "%s", err.msg);
		exec_result_stop(fl);
		return;
	}

	uv_mutex_lock(&w->lock);
	w->current = fl;
	w->conn = conn;
	uv_mutex_unlock(&w->lock);
	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, &fl->stop, run->job->timeout * 1000,
		    run->job->allow_wall_clock);

	if (run->query_sql == NULL && !run->verify &&
	    run->job->nreconciles > 0) {
		exec_recon_sources(w, fl);
		uv_mutex_lock(&w->lock);
		w->conn = conn;
		uv_mutex_unlock(&w->lock);
		/* a source on the same warehouse is the same connection */
		if (conn->drv->watch != NULL)
			conn->drv->watch(conn, &fl->stop,
			    run->job->timeout * 1000,
			    run->job->allow_wall_clock);
	}
	if (conn->drv->tag != NULL)
		conn->drv->tag(conn, run->run_id);
	rc = exec_sql_kind(w, fl, conn, wh->kind, &err);
	exec_log_stopped(run, conn, 0);
	free(fl->recon);
	fl->recon = NULL;

	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, NULL, 0, false);
	uv_mutex_lock(&w->lock);
	w->current = NULL;
	w->conn = NULL;
	uv_mutex_unlock(&w->lock);

	/* keep the connection for the next run, unless it is broken or the
	 * warehouse has more open than its max_connections (PostgreSQL:
	 * each worker thread caches its own) */
	if (!conn->drv->usable(conn) || (pick_wh_cap(wh) >= 0 &&
	    exec_conn_count(w->ex, wh->name, 0) > pick_wh_cap(wh)))
		exec_conn_drop(w, conn);
	if (run->nchecks == 0) {
		/* Failed before any check: nothing for the caller to free. */
		free(run->checks);
		run->checks = NULL;
	}
	if (rc == -1) {
		run->no_retry = err.code == WH_ERR_DENIED;
		exec_fail(run, "%s", err.msg);
		exec_result_stop(fl);
	}
}
