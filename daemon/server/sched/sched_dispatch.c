/*
 * sched_dispatch.c - dispatch and recording: the shell that starts the
 * runs the core picks (pick_next_run, SCHED-2, SCHED-3 and SCHED-5 in pick.c)
 * and records their outcome, retries and downstream settling (SCHED-4).
 *
 * sched_run_begin() is the one place where "dispatch decided to start
 * run X" is applied: the start is committed to the store, then the run is
 * handed to the executor.  sched_run_done_cb() is where its end comes
 * back.
 */
#include "sched_int.h"
#include "pick.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "schedule.h"
#include "throttle.h"
#include "trend_hist.h"
#include "xalloc.h"

static void sched_run_done_cb(struct exec_run *run);
static void sched_run_started_cb(struct exec_run *run);
static void sched_retry_cb(uv_timer_t *t);

/* Is a warehouse throttled (the dispatch gate)? */
static bool
sched_throttled_cb(void *data, int warehouse)
{
	struct sched *s = data;

	return throttle_blocks(s->throttle, s->cfg->warehouses[warehouse].name);
}

/* Free a run's shell and core halves. */
void
sched_active_free(struct active *a)
{
	manifest_run_free(a->mr);
	free(a->commits);
	trend_hist_free(a->trend, a->ntrend);
	free(a->run_ids);
	free(a->parts);
	free(a);
}

/* Record the start of a run in the store: its items running, a runs row
 * for each item (a batch's, or one run for several requests: SCHED-5). */
static int
sched_run_record_start(struct sched *s, struct active *a, int64_t now,
		       struct err *err)
{
	struct run *r = a->mr;
	const struct job_def *j = &s->cfg->jobs[r->job];
	bool rows = r->batch || r->nitems > 1;

	if (rows)
		a->run_ids = xcalloc(r->nitems, sizeof *a->run_ids);
	if (store_defer(s->store, err) < 0 || store_begin(s->store, err) < 0)
		return -1;
	for (size_t i = 0; i < r->nitems; i++)
		if (sched_item_store(s, r->items[i], NULL, now, err) < 0)
			goto fail;
	for (size_t i = 0; i < (rows ? r->nitems : 1); i++) {
		struct item *x = r->items[i];
		/* one execution for several requests: one id shown */
		int64_t shared = !r->batch && i > 0 ? a->run_ids[0] : 0;

		if (store_run_start(
			s->store, x->id, x->rq->id, x->job_name, x->key,
			x->attempts, now, j->code_version, s->cfg->file_hash,
			shared, rows ? &a->run_ids[i] : &a->run.run_id,
			err) < 0)
			goto fail;
	}
	if (rows)
		a->run.run_id = a->run_ids[0];
	return sched_tx_end(s, 0, err);
fail:
	return sched_tx_end(s, -1, err);
}

/* The executor's parameters of one item. */
static void
sched_part(const struct job_def *j, const struct item *x, struct exec_part *p)
{
	exec_part_set(p, &j->cal, x->part);
	snprintf(p->key, sizeof p->key, "%s", x->key);
}

/*
 * The identities a SQL run commits (wh_commits.h): each item's request
 * and partition.  A batch's items are of one request, one partition each;
 * a run for several requests (SCHED-5) commits its one partition for each
 * of them, so it counts as already committed only when every request's
 * row is there.
 */
static void
sched_run_commits(struct active *a, const struct job_def *j)
{
	struct run *r = a->mr;

	if (j->sql == NULL || j->command != NULL)
		return;
	a->commits = xcalloc(r->nitems, sizeof *a->commits);
	for (size_t i = 0; i < r->nitems; i++) {
		a->commits[i].request = r->items[i]->rq->id;
		a->commits[i].request_at = r->items[i]->rq->created_at;
		a->commits[i].run_id = a->run_ids ? a->run_ids[i] :
				       a->run.run_id;
		a->commits[i].part = r->batch ? i : 0;
	}
	a->run.commits = a->commits;
	a->run.ncommits = r->nitems;
	a->run.commits_keep_ms = j->keep_runs * 1000;
}

/* The executor's run of a recorded run (its done_cb this file's). */
void
sched_run_fill(struct sched *s, struct active *a)
{
	struct run *r = a->mr;
	struct item *e = r->items[0];
	const struct job_def *j = &s->cfg->jobs[r->job];

	if (r->batch) {
		a->parts = xcalloc(r->nitems, sizeof *a->parts);
		for (size_t i = 0; i < r->nitems; i++)
			sched_part(j, r->items[i], &a->parts[i]);
	}
	sched_part(j, e, &a->part);
	a->run.cfg = config_ref(s->cfg);
	a->run.job = j;
	a->run.parts = r->batch ? a->parts : &a->part;
	a->run.nparts = r->batch ? r->nitems : 1;
	a->run.width = r->width;
	a->run.attempt = e->attempts;
	a->run.log_dir = s->log_dir;
	sched_run_commits(a, j);
	sched_shards_fill(s, a);
	if (s->remote == NULL && a->trend == NULL) {
		/* several hosts: the node that runs it reads them */
		a->trend = trend_hist_load(s->store, j);
		a->ntrend = j->nmetrics;
		a->run.trend = a->trend;
	}
	a->run.done_cb = sched_run_done_cb;
	/* only a command has something to record at its start (its process
	 * group): a SQL run without it wakes the loop once, when done */
	a->run.started_cb = j->command != NULL ? sched_run_started_cb : NULL;
	a->run.data = a;
}

/* Hand a recorded run to the executor. */
static void
sched_run_submit(struct sched *s, struct active *a)
{
	struct run *r = a->mr;
	struct item *e = r->items[0];

	sched_run_fill(s, a);
	if (r->batch && r->nitems > 1)
		log_info("job=%s partition=%s..%s request=%" PRId64
			 " run=%" PRId64
			 " attempt=%d started: one batch of %zu partitions",
			 e->job_name, e->key, r->items[r->nitems - 1]->key,
			 e->rq->id, a->run.run_id, e->attempts, r->nitems);
	else
		log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " attempt=%d started%s",
			 e->job_name, e->key, e->rq->id, a->run.run_id,
			 e->attempts,
			 r->nitems > 1 ? " (for several requests)" : "");
	for (size_t i = 0; i < r->nitems; i++)
		sched_request_changed(s, r->items[i]->rq);
	if (s->remote != NULL)
		s->remote->submit(s->remote->data, &a->run);
	else if (a->deck_of != NULL)
		exec_submit_after(s->exec, &a->run, &a->deck_of->run);
	else
		exec_submit(s->exec, &a->run);
}

/*
 * Apply dispatch's decision to start run r (pick_next_run): mark it
 * started in the manifest, commit that to the store, hand it to the
 * executor.  The one seam between deciding and doing: -1 (the run undone,
 * freed) when the store refused.
 */
static int
sched_run_begin(struct sched *s, struct run *r, struct active *after,
		int64_t now)
{
	struct active *a = xcalloc(1, sizeof *a);
	struct err err;

	a->s = s;
	a->mr = r;
	a->started_at = now;
	r->data = a;
	if (after != NULL) {
		a->deck_of = after;
		after->deck = a;
	}
	manifest_run_start(&s->m, r);
	if (sched_run_record_start(s, a, now, &err) < 0) {
		manifest_run_unstart(&s->m, r);
		log_err("job=%s partition=%s cannot start: %s", r->job_name,
			r->items[0]->key, err.msg);
		if (after != NULL)
			after->deck = NULL;
		sched_active_free(a);
		return -1;
	}
	sched_run_fact(s, &s->cfg->jobs[r->job], r->items,
		       r->batch ? r->nitems : 1, a->run.run_id, MS_RUNNING,
		       NULL, now);
	sched_run_submit(s, a);
	return 0;
}

/* Arm the retry timer for `at` (ms) if sooner than what is armed. */
static void
sched_arm_retry(struct sched *s, int64_t at, int64_t now)
{
	if (at == INT64_MAX || at >= s->retry_at || s->closing)
		return;
	s->retry_at = at;
	uv_timer_start(&s->retry_timer, sched_retry_cb,
		       (uint64_t)(at > now ? at - now : 0), 0);
}

/* The retry timer: a retry came due. */
static void
sched_retry_cb(uv_timer_t *t)
{
	struct sched *s = t->data;

	s->retry_at = INT64_MAX;
	sched_dispatch(s);
}

/*
 * A run handed ahead (docs/performance.md, "Runs handed ahead"): when a
 * job's partitions take under SCHED_DECK_MS, the loop's turn between one
 * run's end and the next one's start (the worker wakes the loop, the loop
 * records and dispatches, the worker wakes again) costs as much as the
 * run itself.  So such a job gets its next run started (recorded running)
 * while its current one runs; the executor starts it on the same worker
 * the moment the current one ends.  It is counted in flight, not against
 * the caps, until then, so no more of the job's runs execute at once than
 * its concurrency allows.  Only SQL runs on SQLite or ClickHouse on this
 * host (a ClickHouse run of one partition is four statements, 10 to 20
 * ms, of which the loop's turn was one more millisecond), not a batch, no
 * trend check (whose history the run before it may still add to), no
 * item of a fail-fast request (pick_next_deck: it would start after a
 * failure of the run before it).  One that has not started yet is taken
 * back when the daemon drains or reloads, when its job is paused, and at
 * a dispatch that finds its warehouse throttled.  A ClickHouse stage
 * partition's release waits for a run handed ahead of its partition as
 * for a queued one (exec_partition_busy).
 */
#define SCHED_DECK_MS 20

/* SCHED_DECK_MS, or BACKFILLD_TEST_DECK_MS (tests: runs handed ahead
 * however long a loaded test machine makes them). */
static int64_t
sched_deck_ms(void)
{
	static int64_t ms = -1;
	const char *t;

	if (ms < 0) {
		t = getenv("BACKFILLD_TEST_DECK_MS");
		ms = t != NULL && *t != '\0' ? strtoll(t, NULL, 10) :
		     SCHED_DECK_MS;
		if (ms < 0)
			ms = SCHED_DECK_MS;
	}
	return ms;
}

/* May job index `job` have a run handed ahead? */
static bool
sched_deckable(struct sched *s, int job)
{
	const struct job_def *j = &s->cfg->jobs[job];
	struct jobstate *js;

	if (s->remote != NULL || j->sql == NULL || j->command != NULL ||
	    j->batch || j->nmetrics > 0 || j->warehouse < 0 ||
	    s->cfg->warehouses[j->warehouse].kind == WH_POSTGRES)
		return false;
	js = sched_jobstate_of(s, job);
	return js->last_ms >= 0 && js->last_ms <= sched_deck_ms();
}

/* Hand a run ahead after each deckable job's running run that has none. */
static void
sched_deck(struct sched *s, const struct pick_gate *g, int64_t now,
	   int64_t *wake)
{
	for (struct run *p = s->m.runs.next; p != &s->m.runs; p = p->next) {
		struct active *pa = p->data;
		struct run *r;

		if (p->deck || pa->deck != NULL || p->job < 0 ||
		    s->m.job_deck[p->job] > 0 || !sched_deckable(s, p->job))
			continue;
		while ((r = pick_next_deck(&s->m, g, p->job, now, wake)) !=
		       NULL && sched_cutoff(s, r, now))
			manifest_run_free(r);
		if (r != NULL && sched_run_begin(s, r, pa, now) < 0)
			return;
	}
}

/* Take back the runs handed ahead that have not started: all of them, or
 * those of paused jobs and throttled warehouses.  Their done_cb follows
 * (sched_not_started: queued again, no attempt counted).  Returns how
 * many. */
static int
sched_deck_review(struct sched *s, bool all)
{
	int n = 0;

	for (struct run *r = s->m.runs.next; r != &s->m.runs; r = r->next) {
		const struct job_def *j =
		    r->job >= 0 ? &s->cfg->jobs[r->job] : NULL;

		if (!r->deck || s->remote != NULL)
			continue;
		if (all || j == NULL || sched_paused_cb(s, r->job) ||
		    (j->warehouse >= 0 && sched_throttled_cb(s, j->warehouse)))
			n += exec_withdraw(s->exec,
					   &((struct active *)r->data)->run);
	}
	return n;
}

int
sched_deck_withdraw(struct sched *s)
{
	return sched_deck_review(s, true);
}

/* Start the runs the core picks while the caps allow. */
void
sched_dispatch(struct sched *s)
{
	struct pick_gate g = {sched_paused_cb, sched_throttled_cb, s,
			      s->remote != NULL};
	int64_t now = clock_now_ms(), wake = INT64_MAX;
	struct run *r;

	if (s->m.ndeck > 0)
		sched_deck_review(s, s->draining || s->closing ||
				     s->store_failed || s->dormant);
	if (s->draining || s->closing || s->store_failed || s->dormant)
		return;
	while ((r = pick_next_run(&s->m, &g, now, &wake)) != NULL) {
		if (sched_cutoff(s, r, now)) {
			manifest_run_free(r);
			continue;
		}
		if (sched_run_begin(s, r, NULL, now) < 0)
			break;
	}
	if (s->remote == NULL && s->m.nrunning > 0)
		sched_deck(s, &g, now, &wake);
	sched_arm_retry(s, wake, now);
}

/* A command run was spawned: record its process group and the leader's
 * start time, so that a daemon restarted after a crash can end it (and
 * only it) before its partition runs again (proc.h). */
static void
sched_run_started_cb(struct exec_run *run)
{
	struct active *a = run->data;
	struct sched *s = a->s;
	struct err err;

	if (run->pgid <= 0)
		return;
	if (store_defer(s->store, &err) < 0 ||
	    store_run_proc(s->store, run->run_id, run->pgid, run->proc_start,
			   &err) < 0)
		log_err("job=%s partition=%s run=%" PRId64 " cannot record its"
			" process group %" PRId64 ": %s",
			a->mr->job_name, a->mr->items[0]->key, run->run_id,
			run->pgid, err.msg);
}

/*
 * A run that could not start for want of resources (no descriptor, no
 * memory, no process slot) never ran: its items go back to queued
 * without an attempt counted, its runs rows are forgotten, and the queue
 * tries again after SCHED_NOT_STARTED_MS.  Such a spell must not burn a
 * partition's retries.
 */
#define SCHED_NOT_STARTED_MS 2000

static void
sched_not_started(struct sched *s, struct active *a, int64_t now)
{
	struct exec_run *run = &a->run;
	struct run *r = a->mr;
	struct item *e = r->items[0];
	int64_t delay = run->interrupted || run->withdrawn ? 0 :
			SCHED_NOT_STARTED_MS;
	struct err err;

	manifest_run_not_started(&s->m, r, now + delay);
	if (store_defer(s->store, &err) < 0 || store_begin(s->store, &err) < 0)
		goto fail;
	for (size_t i = 0; i < (a->run_ids ? r->nitems : 1); i++) {
		int64_t rid = a->run_ids ? a->run_ids[i] : run->run_id;

		/* an interrupted run stays in the history, failed */
		if ((run->interrupted ?
		     store_run_finish(s->store, rid, MS_FAILED, now,
				      run->error, -1, &err) :
		     store_run_unstart(s->store, rid, &err)) < 0)
			goto fail_tx;
	}
	for (size_t i = 0; i < r->nitems; i++)
		if (sched_item_store(s, r->items[i], NULL, now, &err) < 0)
			goto fail_tx;
	if (store_commit(s->store, &err) < 0)
		goto fail_tx;
	goto logged;
fail_tx:
	store_rollback(s->store);
fail:
	log_err("job=%s partition=%s run=%" PRId64 " cannot record that it did"
		" not start: %s",
		r->job_name, e->key, run->run_id, err.msg);
logged:
	if (run->withdrawn)
		log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " taken back before it started; queued again, no"
			 " attempt counted", r->job_name, e->key, e->rq->id,
			 run->run_id);
	else if (run->interrupted)
		log_warn("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " %s; queued again, no attempt counted", r->job_name,
			 e->key, e->rq->id, run->run_id, run->error);
	else
		log_warn("job=%s partition=%s request=%" PRId64 " not started:"
			 " %s; queued again in %d s, no attempt counted (raise"
			 " the descriptor limit, LimitNOFILE=, if this repeats)",
			 r->job_name, e->key, e->rq->id, run->error,
			 SCHED_NOT_STARTED_MS / 1000);
	sched_arm_retry(s, now + delay, now);
}

/* What a run's end means: the state of its runs rows (run_state) and of
 * its items (result), and whether it is retried. */
struct outcome {
	enum mstate result, run_state;
	bool retry;
};

/*
 * When a successful build landed, for staleness: now, but for a run that
 * left its partition identical (early cut-off, cutoff.h), which keeps
 * the time its content last changed, so that it makes no downstream
 * partition stale (docs/cutoff.md).
 */
static int64_t
sched_built_at(struct sched *s, const struct item *x, int64_t now)
{
	int64_t built, inputs;
	struct err err;

	if (x->cut != CUTOFF_IN_SAME ||
	    store_partition_get(s->store, x->job_name, x->key, &built, &inputs,
				NULL, 0, &err) != 0)
		return now;
	return built;
}

/* What a successful run did to each of its items' partitions, from the
 * fingerprints it read before and after its write. */
static void
sched_run_cuts(struct active *a, const struct outcome *o)
{
	const struct exec_run *run = &a->run;
	struct run *r = a->mr;

	for (size_t i = 0; i < r->nitems; i++) {
		const struct exec_guard_result *g =
		    run->guards != NULL && o->result == MS_SUCCEEDED &&
		    !run->committed_before ?
		    &run->guards[r->batch ? i : 0] : NULL;
		struct cutoff_fp before = {0}, after = {0};
		int64_t changes = -1;

		if (g != NULL) {
			before.known = g->sum_before[0] != '\0' &&
				       g->has_rows_before;
			before.rows = g->rows_before;
			memcpy(before.sum, g->sum_before, sizeof before.sum);
			after.known = g->sum_after[0] != '\0' &&
				      g->has_rows_after;
			after.rows = g->rows_after;
			memcpy(after.sum, g->sum_after, sizeof after.sum);
			if (g->has_changes)
				changes = g->changes;
		}
		r->items[i]->cut = cutoff_input_of(&before, &after, changes);
	}
}

/* Write one partition's run row, newest run and build. */
static int
sched_record_part(struct sched *s, struct active *a, size_t i,
		  const struct outcome *o, int64_t inputs_at, int64_t now,
		  struct err *err)
{
	struct exec_run *run = &a->run;
	int64_t rid = a->mr->batch ? a->run_ids[i] : run->run_id;
	const char *key = a->mr->items[a->mr->batch ? i : 0]->key;
	char note[ERR_MSG_MAX];
	/* a run an earlier attempt had committed keeps its note; one that
	 * succeeded with warnings notes them */
	const char *error = run->failed || run->committed_before ?
			    run->error : NULL;

	if (error == NULL && !run->cancelled &&
	    sched_audit_warning(run, a->mr->batch ? i : 0, note, sizeof note))
		error = note;

	/* a batch's rows changed are the batch's: on its first row */
	if (store_run_finish(s->store, rid, o->run_state, now, error,
			     i == 0 ? run->rows_changed : -1, err) < 0)
		return -1;
	if (o->run_state != MS_CANCELLED &&
	    store_partition_finished(s->store, a->mr->job_name, key, rid,
				     o->run_state, sched_count_prev_cb, s, err) < 0)
		return -1;
	if (o->result == MS_SUCCEEDED &&
	    store_partition_built(s->store, a->mr->job_name, key,
				  sched_built_at(s, a->mr->items[a->mr->batch ?
				  i : 0], now), inputs_at, rid,
				  run->job->code_version, err) < 0)
		return -1;
	return 0;
}

/* What day `part` of a running total's batch (SCHED-9) after its first
 * was built from: its own inputs, and the day before it, built by the
 * same run (now); without it that day would read as newer than its
 * build, the batch's days stale one by one. */
static int64_t
sched_batch_inputs_at(struct sched *s, const struct job_def *j, part_t part,
		      int64_t now)
{
	int64_t at = sched_inputs_at(s, j, part);

	return at > now ? at : now;
}

/* Record a run's end in one transaction: its runs rows, partitions,
 * audit and items (already moved in memory). */
static int
sched_record_end(struct sched *s, struct active *a, const struct outcome *o,
		 int64_t now, struct err *err)
{
	struct exec_run *run = &a->run;
	struct run *r = a->mr;
	size_t nkeys = r->batch ? r->nitems : 1;
	int64_t inputs_at = -1;

	if (o->result == MS_SUCCEEDED &&
	    (run->job->nupstream > 0 || run->job->self_lookback > 0))
		inputs_at = sched_inputs_at(s, run->job, r->items[0]->part);
	if (store_defer(s->store, err) < 0 || store_begin(s->store, err) < 0)
		return -1;
	for (size_t i = 0; i < nkeys; i++)
		if (sched_record_part(s, a, i, o, i > 0 && o->result == MS_SUCCEEDED &&
				      run->job->self_lookback > 0 ?
				      sched_batch_inputs_at(s, run->job,
							    r->items[i]->part,
							    now) : inputs_at,
				      now, err) < 0)
			goto fail;
	if (!run->cancelled && sched_audit(s, run, a->run_ids, err) < 0)
		goto fail;
	if (o->result == MS_SUCCEEDED &&
	    trend_hist_record(s->store, run, run->run_id, err) < 0)
		goto fail;
	/* the other requests' rows of a run shared by several (SCHED-5) */
	for (size_t i = 1; !r->batch && a->run_ids && i < r->nitems; i++) {
		if (store_run_finish(s->store, a->run_ids[i], o->run_state, now,
				     run->failed ? run->error : NULL, -1,
				     err) < 0)
			goto fail;
		if (!run->cancelled &&
		    sched_audit(s, run, &a->run_ids[i], err) < 0)
			goto fail;
	}
	for (size_t i = 0; i < r->nitems; i++)
		if (sched_item_store(s, r->items[i],
				     run->failed ? run->error : NULL, now,
				     err) < 0)
			goto fail;
	return sched_tx_end(s, 0, err);
fail:
	return sched_tx_end(s, -1, err);
}

/* The log line of a run's end. */
static void
sched_run_log(const struct active *a, const struct outcome *o, int64_t now)
{
	const struct exec_run *run = &a->run;
	const struct item *e = a->mr->items[0];
	const char *job = a->mr->job_name;

	if (o->run_state == MS_SUCCEEDED && run->committed_before)
		log_notice("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			   " succeeded: %s (its result was lost); nothing ran"
			   " again", job, e->key, e->rq->id, run->run_id,
			   run->error);
	else if (o->run_state == MS_SUCCEEDED && run->rows_changed >= 0)
		log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " succeeded in %" PRId64 " ms rows=%" PRId64,
			 job, e->key, e->rq->id, run->run_id,
			 now - a->started_at, run->rows_changed);
	else if (o->run_state == MS_SUCCEEDED)
		log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " succeeded in %" PRId64 " ms",
			 job, e->key, e->rq->id, run->run_id,
			 now - a->started_at);
	else if (o->run_state == MS_CANCELLED)
		log_notice("job=%s partition=%s run=%" PRId64
			   " cancelled; queued again",
			   job, e->key, run->run_id);
	else
		log_err("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			" attempt=%d failed: %s%s",
			job, e->key, e->rq->id, run->run_id, e->attempts,
			run->error, o->retry ? "; will retry" : "");
}

/* Tell the metrics a run ended (with its delay past due when scheduled). */
static void
sched_run_event(struct sched *s, const struct active *a,
		const struct outcome *o, int64_t now)
{
	const struct item *e = a->mr->items[0];
	struct sched_run_event ev = {
	    .job = a->mr->job_name,
	    .state = o->run_state,
	    .duration_s = (double)(now - a->started_at) / 1000.0,
	    .checks = a->run.checks,
	    .nchecks = a->run.cancelled ? 0 : a->run.nchecks,
	};
	const struct job_def *dj = config_job(s->cfg, a->mr->job_name);

	if (s->run_cb == NULL)
		return;
	if (dj != NULL && schedule_is_clock_job(dj) && e->rq->priority) {
		ev.has_delay = true;
		ev.delay_s = (double)(a->started_at -
				      schedule_due_time(
					  dj->grain, dj->ready_after, e->part) *
					  1000) /
			     1000.0;
	}
	s->run_cb(s->run_data, &ev);
}

/* After a run's end: settle what waits for its items, release blocked
 * items elsewhere and fill a refused gap (sched_landed), fail fast
 * (SCHED-4). */
static void
sched_run_settle(struct sched *s, struct run *r, const struct outcome *o,
		 int64_t now)
{
	struct item *e = r->items[0];

	for (size_t i = 0; i < r->nitems; i++)
		if (manifest_final(r->items[i]->state))
			manifest_settle_outs(&s->m, r->items[i]);
	sched_apply(s, now);
	for (size_t i = 0;
	     o->result == MS_SUCCEEDED && i < (r->batch ? r->nitems : 1); i++) {
		sched_landed(s, r->job_name, r->items[i]->key, e->rq, now);
	}
	for (size_t i = 0; o->result == MS_FAILED && i < r->nitems; i++) {
		struct request *rq = r->items[i]->rq;
		int64_t n;

		if (!rq->fail_fast)
			continue;
		n = manifest_fail_fast(&s->m, rq, r->items[i]);
		sched_apply(s, now);
		if (n > 0)
			log_notice("request=%" PRId64
				   " fail-fast: %s %s failed;"
				   " %" PRId64 " queued partitions cancelled"
				   " (backfillctl retry %" PRId64 " queues them"
				   " again)",
				   rq->id, r->items[i]->job_name,
				   r->items[i]->key, n, rq->id);
	}
	if (o->retry)
		sched_arm_retry(s, e->not_before, now);
}

/* Decide what a run's end means. */
static void
sched_outcome(struct sched *s, const struct active *a, struct outcome *o)
{
	const struct exec_run *run = &a->run;

	memset(o, 0, sizeof *o);
	if (run->not_started && !run->cancelled) {
		o->result = o->run_state = MS_QUEUED;
	} else if (run->cancelled) {
		o->result = MS_QUEUED; /* queued again, run at next start */
		o->run_state = MS_CANCELLED;
	} else if (run->failed) {
		o->run_state = MS_FAILED;
		o->retry = !run->no_retry &&
		    manifest_retries(run->job, a->mr->items[0]->attempts,
				     s->draining);
		o->result = o->retry ? MS_QUEUED : MS_FAILED;
	} else {
		o->result = o->run_state = MS_SUCCEEDED;
	}
}

/* Record an ended run and move its items (not for one not started). */
static void
sched_run_record(struct sched *s, struct active *a, const struct outcome *o,
		 int64_t now)
{
	struct run *r = a->mr;
	struct err err;

	manifest_run_result(&s->m, r, o->result, o->retry ? a->run.job : NULL,
			    now);
	sched_run_cuts(a, o);
	if (sched_record_end(s, a, o, now, &err) < 0)
		log_err("job=%s partition=%s run=%" PRId64 " cannot record the"
			" result: %s",
			r->job_name, r->items[0]->key, a->run.run_id, err.msg);
	sched_run_log(a, o, now);
	if (o->run_state != MS_CANCELLED)
		sched_fresh_run_done(s, a, o->result, now);
	sched_run_event(s, a, o, now);
}

/* A run finished: record it, retry or settle, and dispatch again. */
static void
sched_run_done_cb(struct exec_run *run)
{
	struct active *a = run->data;
	struct sched *s = a->s;
	struct run *r = a->mr;
	int64_t now = clock_now_ms();
	struct outcome o;
	int64_t *ids;
	size_t n = r->nitems;

	/* the run handed ahead after this one has started (or ended) */
	if (a->deck != NULL) {
		manifest_run_undeck(&s->m, a->deck->mr);
		a->deck->deck_of = NULL;
		a->deck = NULL;
	}
	if (a->deck_of != NULL) { /* ended before it started */
		a->deck_of->deck = NULL;
		a->deck_of = NULL;
	}
	if (!run->failed && !run->cancelled && r->job >= 0)
		sched_jobstate_of(s, r->job)->last_ms = now - a->started_at;
	sched_outcome(s, a, &o);
	if (run->not_started && !run->cancelled)
		sched_not_started(s, a, now);
	else
		sched_run_record(s, a, &o, now);
	sched_run_fact(s, run->job, r->items, r->batch ? n : 1, run->run_id,
		       run->not_started ? MS_CANCELLED : o.run_state,
		       run->failed ? run->error : NULL, now);
	manifest_run_finish(&s->m, r);
	/* before the run's configuration goes: run->job is in it */
	sched_budget_run_done(s, a, now);
	exec_run_clear_results(run);
	config_unref(run->cfg);
	sched_run_settle(s, r, &o, now);
	/* tell the requests by id: telling one may free it */
	ids = xcalloc(n, sizeof *ids);
	for (size_t i = 0; i < n; i++)
		ids[i] = r->items[i]->rq->id;
	sched_active_free(a);
	for (size_t i = 0; i < n; i++) {
		struct request *rq = manifest_request_find(&s->m, ids[i]);

		if (rq != NULL)
			sched_request_changed(s, rq);
	}
	free(ids);
	if (s->draining && s->m.nrunning == 0 && s->idle_cb)
		s->idle_cb(s->idle_data);
	else
		sched_want(s, SCHED_WANT_DISPATCH);
}

void
sched_requeue_warehouse(struct sched *s, const char *warehouse)
{
	for (struct run *r = s->m.runs.next; r != &s->m.runs; r = r->next) {
		const struct job_def *j =
		    r->job >= 0 ? &s->cfg->jobs[r->job] : NULL;
		struct active *a = r->data;

		if (j == NULL || j->warehouse < 0 || r->requeue ||
		    strcmp(s->cfg->warehouses[j->warehouse].name, warehouse) !=
			0)
			continue;
		r->requeue = true;
		log_notice("job=%s partition=%s run=%" PRId64 " interrupted:"
			   " warehouse %s is above its critical load; queued"
			   " again, no attempt counted",
			   r->job_name, r->items[0]->key, a->run.run_id,
			   warehouse);
		sched_run_cancel(s, &a->run);
	}
}

void
sched_cancel_running(struct sched *s)
{
	for (struct run *r = s->m.runs.next; r != &s->m.runs; r = r->next)
		sched_run_cancel(s, &((struct active *)r->data)->run);
}

/* Stop a run in flight, here or on another node (its done_cb follows,
 * never from inside this call). */
void
sched_run_cancel(struct sched *s, struct exec_run *run)
{
	if (s->remote != NULL)
		s->remote->cancel(s->remote->data, run);
	else
		exec_cancel(s->exec, run);
}

void
sched_set_remote(struct sched *s, const struct sched_remote *remote)
{
	s->remote = remote;
	s->dormant = remote != NULL;
}
