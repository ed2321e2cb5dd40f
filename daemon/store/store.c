/*
 * store.c - the state store's calls, dispatched to the implementation the
 * store was opened with (store.h), and the one failure policy.
 *
 * Rules that must always hold:
 *  STORE-1. One policy.  A write that fails (the ops store.h marks "write")
 *     fails the loop turn: the first error is kept in the store's head,
 *     every later write of the turn is refused with it without reaching
 *     the implementation, and store_flush() discards what the turn had
 *     not committed and returns -1 with that error, which is how the
 *     scheduler learns of it (scheduler.c, SCHED-7).  Reads are never
 *     refused and mark nothing.  store_flush() ends the turn: the next
 *     one starts clean.
 *  STORE-2. Nothing here knows an implementation: opening is the one place
 *     that names them (store_open, store_open_pg).
 */
#include "store.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "module.h"

/* ---- opening ------------------------------------------------------- */

int
store_open(const char *path, struct store **out, struct err *err)
{
	return store_sqlite_ops.open(path, out, err);
}

int
store_open_config(const struct config *cfg, struct store **out, struct err *err)
{
	if (cfg->state_conninfo != NULL) /* state: postgres: */
		return store_open_pg(cfg->state_conninfo,
				     cfg->state_password_file, out, err);
	return store_open(cfg->state_db, out, err);
}

/* The module's open function (store.h, store_open_pg). */
typedef int (*store_pg_open_fn)(const char *conninfo, const char *password_file,
				struct store **out, struct err *err);

int
store_open_pg(const char *conninfo, const char *password_file,
	      struct store **out, struct err *err)
{
	const char *what = "the PostgreSQL state store";
	const struct store_ops *ops;
	store_pg_open_fn pg_open = NULL;
	char why[ERR_MSG_MAX - 64];

	ops = module_symbol("store_pg_ops", what, why, sizeof why);
	if (ops != NULL)
		pg_open = (store_pg_open_fn)module_symbol("store_pg_open", what,
							  why, sizeof why);
	if (ops == NULL || pg_open == NULL)
		return err_set(err, EXIT_BAD_INPUT,
			       "%s; the state store cannot be opened", why);
	if (pg_open(conninfo, password_file, out, err) < 0)
		return -1;
	(*out)->ops = ops;
	return 0;
}

const char *
store_kind(const struct store *st)
{
	return st->ops->name;
}

/* ---- the failure policy (STORE-1) ------------------------------------ */

/* A write's result: a failure fails the turn, its error kept. */
static int
store_wrote(struct store *st, int rc, struct err *err)
{
	if (rc >= 0 || st->turn_failed)
		return rc;
	st->turn_failed = true;
	if (err != NULL)
		st->turn_err = *err;
	else
		err_set(&st->turn_err, EXIT_INTERNAL,
			"state store: a write failed");
	return rc;
}

/* Refuse a write in a failed turn: true, with err filled. */
static bool
store_refused(struct store *st, struct err *err)
{
	if (st->refuse_all) {
		err_set(err, st->refuse_err.code, "not written, the state store"
			" failed earlier: %s", st->refuse_err.msg);
		return true;
	}
	if (!st->turn_failed)
		return false;
	err_set(err, st->turn_err.code,
		"not written, an earlier write of this turn failed: %s",
		st->turn_err.msg);
	return true;
}

int
store_flush(struct store *st, struct err *err)
{
	if (st->turn_failed) {
		st->ops->discard(st);
		st->turn_failed = false;
		if (err != NULL)
			*err = st->turn_err;
		return -1;
	}
	return st->ops->flush(st, err);
}

void
store_rollback(struct store *st)
{
	st->ops->rollback(st);
}

int
store_probe_write(struct store *st, int64_t min_free, struct err *err)
{
	return st->ops->probe_write(st, min_free, err);
}

void
store_refuse_all(struct store *st, const char *why)
{
	if (st->refuse_all)
		return;
	st->refuse_all = true;
	err_set(&st->refuse_err, EXIT_WORK_FAILED, "%s", why);
}

/* ---- the other calls, dispatched ------------------------------------ */

void
store_close(struct store *st)
{
	if (st != NULL)
		st->ops->close(st);
}

void
store_checkpoint_on(struct store *st, struct uv_loop_s *loop)
{
	if (st->ops->checkpoint_on != NULL)
		st->ops->checkpoint_on(st, loop);
}

void
store_stats(struct store *st, struct store_stats *out)
{
	st->ops->stats(st, out);
}

int
store_runs_page(struct store_runs_cursor *c, int max_rows, store_run_cb cb,
		void *data, struct err *err)
{
	return c->st->ops->runs_page(c, max_rows, cb, data, err);
}

int64_t
store_runs_max_id(const struct store_runs_cursor *c)
{
	return c->st->ops->runs_max_id(c);
}

void
store_runs_close(struct store_runs_cursor *c)
{
	if (c != NULL)
		c->st->ops->runs_close(c);
}

int
store_begin(struct store *st, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->begin(st, err), err);
}

int
store_commit(struct store *st, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->commit(st, err), err);
}

int
store_defer(struct store *st, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->defer(st, err), err);
}

int
store_request_add(struct store *st, const struct store_request *rq, int64_t *id,
		  struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->request_add(st, rq, id, err), err);
}

int
store_request_finish(struct store *st, int64_t id, int64_t at, bool cancelled,
		     struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(
	    st, st->ops->request_finish(st, id, at, cancelled, err), err);
}

int
store_item_add(struct store *st, const struct store_item *it, int64_t *id,
	       struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->item_add(st, it, id, err), err);
}

int
store_item_set(struct store *st, int64_t id, enum mstate state, int attempts,
	       int64_t not_before, const char *error, const char *blocked_on,
	       int changed, int64_t at, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st,
			   st->ops->item_set(st, id, state, attempts,
					     not_before, error, blocked_on,
					     changed, at, err),
			   err);
}

int
store_run_start(struct store *st, int64_t manifest_id, int64_t request_id,
		const char *job, const char *key, int attempt,
		int64_t started_at, const char *code_version,
		const char *config_hash, int64_t shared_run, int64_t *run_id,
		struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st,
			   st->ops->run_start(st, manifest_id, request_id, job,
					      key, attempt, started_at,
					      code_version, config_hash,
					      shared_run, run_id, err),
			   err);
}

int
store_run_finish(struct store *st, int64_t run_id, enum mstate state,
		 int64_t finished_at, const char *error, int64_t rows_changed,
		 struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st,
			   st->ops->run_finish(st, run_id, state, finished_at,
					       error, rows_changed, err),
			   err);
}

int
store_partition_built(struct store *st, const char *job, const char *key,
		      int64_t built_at, int64_t inputs_at, int64_t run_id,
		      const char *code_version, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st,
			   st->ops->partition_built(st, job, key, built_at,
						    inputs_at, run_id,
						    code_version, err),
			   err);
}

int
store_partition_get(struct store *st, const char *job, const char *key,
		    int64_t *built_at, int64_t *inputs_at, char *code_version,
		    size_t cvsz, struct err *err)
{
	return st->ops->partition_get(st, job, key, built_at, inputs_at,
				      code_version, cvsz, err);
}

int
store_newest_build(struct store *st, const char *job, const char *first_key,
		   const char *last_key, int64_t *built_at, struct err *err)
{
	return st->ops->newest_build(st, job, first_key, last_key, built_at,
				     err);
}

int
store_recover(struct store *st, int64_t at, const int64_t *keep, size_t nkeep,
	      int *count, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->recover(st, at, keep, nkeep, count,
						err), err);
}

int
store_load_open(struct store *st, store_open_cb cb, void *data, struct err *err)
{
	return st->ops->load_open(st, cb, data, err);
}

int
store_load_request(struct store *st, int64_t request_id, store_open_cb cb,
		   void *data, struct err *err)
{
	return st->ops->load_request(st, request_id, cb, data, err);
}

int
store_request_controls(struct store *st, int64_t id, int *concurrency,
		       bool *fail_fast, char *downstream, size_t dsz,
		       struct err *err)
{
	return st->ops->request_controls(st, id, concurrency, fail_fast,
					 downstream, dsz, err);
}

int
store_request_budget(struct store *st, int64_t id, int64_t spent_ms,
		     int64_t over_at, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->request_budget(st, id, spent_ms,
						       over_at, err), err);
}

int
store_over_budget(struct store *st, int limit, store_budget_cb cb, void *data,
		  struct err *err)
{
	return st->ops->over_budget(st, limit, cb, data, err);
}

int
store_request_reopen(struct store *st, int64_t id, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->request_reopen(st, id, err), err);
}

int
store_last_states(struct store *st, const char *job, const char *first_key,
		  const char *last_key, store_last_cb cb, void *data,
		  struct err *err)
{
	return st->ops->last_states(st, job, first_key, last_key, cb, data,
				    err);
}

int
store_keys_built_by(struct store *st, const char *job, const char *code_version,
		    store_key_cb cb, void *data, struct err *err)
{
	return st->ops->keys_built_by(st, job, code_version, cb, data, err);
}

int
store_keys_changed(struct store *st, const char *job, const char *code_version,
		   const char *first_key, const char *last_key, store_key_cb cb,
		   void *data, struct err *err)
{
	return st->ops->keys_changed(st, job, code_version, first_key, last_key,
				     cb, data, err);
}

int
store_partitions_of(struct store *st, const char *job, store_built_cb cb,
		    void *data, struct err *err)
{
	return st->ops->partitions_of(st, job, cb, data, err);
}

int
store_runs_open(struct store *st, const char *job, int64_t request_id,
		const char *state, struct store_runs_cursor **out,
		struct err *err)
{
	return st->ops->runs_open(st, job, request_id, state, out, err);
}

int
store_partition_finished(struct store *st, const char *job, const char *key,
			 int64_t run_id, enum mstate state, store_prev_cb cb,
			 void *data, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->partition_finished(st, job, key, run_id,
							   state, cb, data,
							   err),
			   err);
}

int
store_latest_counts(struct store *st, store_count_cb cb, void *data,
		    struct err *err)
{
	return st->ops->latest_counts(st, cb, data, err);
}

int
store_run_lookup(struct store *st, const char *job, const char *key,
		 int attempt, struct store_run_info *out, struct err *err)
{
	return st->ops->run_lookup(st, job, key, attempt, out, err);
}

int
store_run_node(struct store *st, int64_t run_id, const char *node,
	       struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->run_node(st, run_id, node, err), err);
}

int
store_run_mark(struct store *st, int64_t run_id, const char *by,
	       struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->run_mark(st, run_id, by, err), err);
}

int
store_marked_keys(struct store *st, const char *job, const char *first_key,
		  const char *last_key, store_last_cb cb, void *data,
		  struct err *err)
{
	return st->ops->marked_keys(st, job, first_key, last_key, cb, data,
				    err);
}

int
store_run_proc(struct store *st, int64_t run_id, int64_t pgid,
	       int64_t proc_start, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(
	    st, st->ops->run_proc(st, run_id, pgid, proc_start, err), err);
}

int
store_orphans(struct store *st, store_orphan_cb cb, void *data, struct err *err)
{
	return st->ops->orphans(st, cb, data, err);
}

int
store_running_runs(struct store *st, store_running_cb cb, void *data,
		   struct err *err)
{
	if (st->ops->running_runs == NULL)
		return 0;
	return st->ops->running_runs(st, cb, data, err);
}

int
store_run_unstart(struct store *st, int64_t run_id, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->run_unstart(st, run_id, err), err);
}

int
store_prune_step(struct store *st, struct store_prune *pr, int limit,
		 struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->prune_step(st, pr, limit, err), err);
}

int
store_job_get(struct store *st, const char *job, struct store_job_state *js,
	      struct err *err)
{
	return st->ops->job_get(st, job, js, err);
}

int
store_job_put(struct store *st, const char *job,
	      const struct store_job_state *js, int64_t at, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->job_put(st, job, js, at, err), err);
}

int
store_job_calendar(struct store *st, const char *job, char *cal, size_t calsz,
		   bool *built, struct err *err)
{
	return st->ops->job_calendar(st, job, cal, calsz, built, err);
}

int
store_job_calendar_put(struct store *st, const char *job, const char *cal,
		       int64_t at, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->job_calendar_put(st, job, cal, at, err),
			   err);
}

int
store_request_problems(struct store *st, int64_t request_id,
		       store_problem_cb cb, void *data, struct err *err)
{
	return st->ops->request_problems(st, request_id, cb, data, err);
}

int
store_audit_add(struct store *st, int64_t run_id, const char *key,
		bool has_before, int64_t rows_before, bool has_after,
		int64_t rows_after, const char *metrics, const char *checks,
		const char *metrics_text, const char *checks_text, bool passed,
		const char *sum_before, const char *sum_after, int64_t changes,
		struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(
	    st,
	    st->ops->audit_add(st, run_id, key, has_before, rows_before,
			       has_after, rows_after, metrics, checks,
			       metrics_text, checks_text, passed, sum_before,
			       sum_after, changes, err),
	    err);
}

int
store_audit_of(struct store *st, int64_t request_id, store_audit_cb cb,
	       void *data, struct err *err)
{
	return st->ops->audit_of(st, request_id, cb, data, err);
}

int
store_request_counts(struct store *st, int64_t request_id,
		     int64_t counts[MS_COUNT], int64_t *elapsed_ms,
		     struct err *err)
{
	return st->ops->request_counts(st, request_id, counts, elapsed_ms, err);
}

int
store_durations(struct store *st, const char *job, int64_t *ms, size_t max,
		size_t *n, struct err *err)
{
	return st->ops->durations(st, job, ms, max, n, err);
}

int
store_recent_requests(struct store *st, int limit, store_recent_cb cb,
		      void *data, struct err *err)
{
	return st->ops->recent_requests(st, limit, cb, data, err);
}

int
store_request_get(struct store *st, int64_t id, char *job, size_t jobsz,
		  bool *finished, struct err *err)
{
	return st->ops->request_get(st, id, job, jobsz, finished, err);
}

int
store_trend_values(struct store *st, const char *job, const char *metric,
		   size_t max, store_trend_cb cb, void *data, struct err *err)
{
	return st->ops->trend_values(st, job, metric, max, cb, data, err);
}

int
store_shard_put(struct store *st, const struct store_shard_row *row,
		struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->shard_put(st, row, err), err);
}

int
store_shards_of(struct store *st, int64_t request, const char *job,
		const char *key, store_shard_cb cb, void *data, struct err *err)
{
	return st->ops->shards_of(st, request, job, key, cb, data, err);
}

int
store_shards_partial(struct store *st, store_shard_cb cb, void *data,
		     struct err *err)
{
	return st->ops->shards_partial(st, cb, data, err);
}

int
store_trend_put(struct store *st, const char *job, const char *metric,
		const char *key, double value, int64_t run_id, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->trend_put(st, job, metric, key, value,
						  run_id, err), err);
}

int
store_trend_trim(struct store *st, const char *job, const char *metric,
		 size_t keep, struct err *err)
{
	if (store_refused(st, err))
		return -1;
	return store_wrote(st, st->ops->trend_trim(st, job, metric, keep, err),
			   err);
}

int
store_trend_series(struct store *st, store_series_cb cb, void *data,
		   struct err *err)
{
	return st->ops->trend_series(st, cb, data, err);
}
