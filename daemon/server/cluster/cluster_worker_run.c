/*
 * cluster_worker_run.c - a worker's side of several hosts: results
 * decoded and recorded, claims built into the executor's runs, a run's
 * result encoded, the exchange of finishes and claims, and starting a
 * claimed run (cluster_worker_int.h; the rules are at the top of
 * cluster_worker.c).
 */
#include "cluster_worker_int.h"

/* The checks of a worker's result into run (their strings moved). */
static void
cworker_decode_checks(struct runresult *rr, struct exec_run *run)
{
	size_t dropped = 0;

	if (rr->nchecks == 0)
		return;
	run->checks = xcalloc(rr->nchecks, sizeof *run->checks);
	for (size_t i = 0; i < rr->nchecks; i++) {
		struct runresult_check *c = &rr->checks[i];
		struct exec_check_result *cr;

		if (c->part >= run->nparts) {
			dropped++;
			continue;
		}
		cr = &run->checks[run->nchecks++];
		cr->name = c->name;
		cr->detail = c->detail;
		cr->passed = c->passed;
		cr->warn = c->warn;
		cr->shard = c->shard;
		cr->recon = c->recon;
		cr->has_source = c->has_source;
		cr->has_target = c->has_target;
		cr->source = c->source;
		cr->target = c->target;
		cr->diff = c->diff;
		cr->trend = c->trend;
		cr->history = c->history;
		cr->mean = c->mean;
		cr->sd = c->sd;
		cr->has_sigma = c->has_sigma;
		cr->sigma = c->sigma;
		cr->part = c->part;
		c->name = c->detail = NULL;
	}
	if (dropped > 0)
		log_warn("run=%" PRId64 ": %zu check results name a partition"
			 " the run does not have; left out", run->run_id,
			 dropped);
}

/* The guardrail figures of a worker's result into run: one per part,
 * the metrics in the order of the planner's job. */
static void
cworker_decode_guards(const struct runresult *rr, struct exec_run *run)
{
	const struct job_def *j = run->job;

	if (rr->guards == NULL || j->table == NULL)
		return;
	if (rr->nguards != run->nparts) {
		log_warn("run=%" PRId64 ": the result has guardrail figures of"
			 " %zu partitions, the run %zu; left out", run->run_id,
			 rr->nguards, run->nparts);
		return;
	}
	run->guards = xcalloc(run->nparts, sizeof *run->guards);
	for (size_t p = 0; p < run->nparts; p++) {
		const struct runresult_guard *g = &rr->guards[p];
		struct exec_guard_result *eg = &run->guards[p];

		eg->has_rows_before = g->has_rows_before;
		eg->rows_before = g->rows_before;
		eg->has_rows_after = g->has_rows_after;
		eg->rows_after = g->rows_after;
		snprintf(eg->sum_before, sizeof eg->sum_before, "%s",
			 g->sum_before);
		snprintf(eg->sum_after, sizeof eg->sum_after, "%s",
			 g->sum_after);
		/* what the statements wrote: without it an empty partition
		 * is unknown to early cut-off, and the audit shows no count */
		eg->has_changes = g->has_changes;
		eg->changes = g->changes;
		eg->metrics = xcalloc(j->nmetrics + 1, sizeof *eg->metrics);
		for (size_t k = 0; k < j->nmetrics; k++) {
			struct exec_metric_result *m = &eg->metrics[k];

			m->name = j->metrics[k].name;
			if (k >= g->nmetrics)
				continue; /* the worker's job has fewer */
			m->has_before = g->metrics[k].has_before;
			m->before = g->metrics[k].before;
			m->has_after = g->metrics[k].has_after;
			m->after = g->metrics[k].after;
			m->has_change = g->metrics[k].has_change;
			m->change_pct = g->metrics[k].change_pct;
		}
	}
}

/* Decode a worker's result (runresult.h) into run. */
void
cworker_decode(const char *text, struct exec_run *run)
{
	struct runresult rr;
	struct err err;

	if (runresult_parse(text, &rr, &err) < 0)
		log_warn("run=%" PRId64 ": %s", run->run_id, err.msg);
	run->timed_out = rr.timed_out;
	run->not_started = rr.not_started;
	run->cancelled = rr.cancelled;
	run->rows_changed = rr.rows_changed;
	run->committed_before = rr.committed_before;
	cworker_decode_checks(&rr, run);
	cworker_decode_guards(&rr, run);
	runresult_clear(&rr);
}

/* A run of an earlier planner whose node stopped: the recovery marked it
 * interrupted; say by which node (one transaction, this loop turn). */
static void
cworker_note_interrupted(struct cworker *w, const struct cluster_work *x)
{
	char error[ERR_MSG_MAX];
	struct err err;

	snprintf(error, sizeof error, "interrupted: node %s stopped; queued"
		 " again", x->claimed_by);
	if (store_defer(w->store, &err) < 0 || store_begin(w->store, &err) < 0)
		goto fail;
	if (store_run_finish(w->store, x->id, MS_FAILED, clock_now_ms(),
			     error, -1, &err) < 0 ||
	    store_commit(w->store, &err) < 0) {
		store_rollback(w->store);
		goto fail;
	}
	return;
fail:
	log_warn("run=%" PRId64 ": cannot record that node %s stopped: %s",
		 x->id, x->claimed_by, err.msg);
}

/* Feed one result row into the scheduler's chain. */
static void
cworker_result(struct cworker *w, const struct cluster_work *x)
{
	struct exec_run *run = cworker_take_offered(w, x->id);

	if (run == NULL) {
		/* no run of this planner: one an earlier planner's store
		 * does not hold running (cworker_takeover_cb) */
		if (x->interrupted)
			cworker_note_interrupted(w, x);
		return;
	}
	cworker_drop_cancel(w, run);
	cworker_ran_on(w, x->id, x->claimed_by);
	cworker_decode(x->result, run);
	run->failed = x->failed;
	if (x->error != NULL)
		snprintf(run->error, sizeof run->error, "%s", x->error);
	if (x->interrupted) {
		run->failed = run->not_started = run->interrupted = true;
		if (x->error == NULL)
			snprintf(run->error, sizeof run->error, "interrupted:"
				 " node %s stopped", x->claimed_by);
	}
	run->done_cb(run);
}

/* done_cb: read the results, record them, then delete their rows. */
void
cworker_collect(void *data)
{
	struct cworker *w = data;
	struct cluster_work *rows;
	size_t n;
	bool more;
	struct err err;

	/* a new planner reads results once it has adopted their runs */
	if (!w->planner_once || w->closing)
		return;
	do {
		int64_t *ids;

		if (w->drv->results(w->c, 256, &rows, &n, &err) < 0) {
			log_warn("cannot read the runs' results: %s", err.msg);
			return;
		}
		ids = xcalloc(n + 1, sizeof *ids);
		for (size_t i = 0; i < n; i++) {
			cworker_result(w, &rows[i]);
			ids[i] = rows[i].id;
		}
		/* recorded and deleted in one transaction: a planner
		 * killed before its commit leaves the rows to the next one,
		 * which adopts their runs */
		more = n == 256;
		if (n > 0 && (store_defer(w->store, &err) < 0 ||
			      cworker_store_forget(w, ids, n, &err) < 0))
			log_warn("cannot delete %zu results: %s", n, err.msg);
		if (n > 0 && sched_flush(w->sched) < 0) {
			log_warn("%zu results not recorded: the state store"
				 " cannot be written", n);
			more = false; /* their rows stay: read no further */
		}
		free(ids);
		w->drv->work_free(rows, n);
	} while (more);
}

/* The identities a claimed SQL run commits (wh_commits.h): the offer's
 * request and each of its partitions.  A run the planner shared between
 * several requests (one partition) carries the first one's only. */
static void
cworker_commits(struct local *l, const struct job_def *j,
		const struct cluster_work *x)
{
	if (x->request <= 0 || j->sql == NULL || j->command != NULL)
		return;
	l->commits = xcalloc(x->nkeys ? x->nkeys : 1, sizeof *l->commits);
	for (size_t k = 0; k < x->nkeys; k++) {
		l->commits[k].request = x->request;
		l->commits[k].run_id = x->id;
		l->commits[k].part = k;
	}
	l->run.commits = l->commits;
	l->run.ncommits = x->nkeys;
	l->run.commits_keep_ms = j->keep_runs * 1000;
}

/* Build the executor's run of one claim; -1 when this node cannot. */
static int
cworker_build(struct cworker *w, const struct cluster_work *x,
	      struct local *l, struct err *err)
{
	struct config *cfg = sched_config(w->sched);
	const struct job_def *j = NULL;

	for (size_t i = 0; i < cfg->njobs && j == NULL; i++)
		if (strcmp(cfg->jobs[i].name, x->job) == 0)
			j = &cfg->jobs[i];
	if (j == NULL)
		return err_set(err, EXIT_BAD_INPUT, "job %s is not configured"
			       " on this node", x->job);
	l->parts = xcalloc(x->nkeys ? x->nkeys : 1, sizeof *l->parts);
	for (size_t k = 0; k < x->nkeys; k++) {
		struct exec_part *p = &l->parts[k];
		part_t pt;

		if (cal_parse_key(&j->cal, x->keys[k], &pt, err) < 0)
			return -1;
		exec_part_set(p, &j->cal, pt);
		snprintf(p->key, sizeof p->key, "%s", x->keys[k]);
	}
	l->run.run_id = x->id;
	l->run.cfg = config_ref(cfg);
	l->run.job = j;
	l->run.parts = l->parts;
	l->run.nparts = x->nkeys;
	l->run.attempt = x->attempt;
	l->run.log_dir = w->log_dir;
	cworker_commits(l, j, x);
	sched_shards_prepare(w->sched, &l->run);
	cworker_trend(w, l);
	l->run.done_cb = cworker_run_done_cb;
	l->run.data = l;
	return 0;
}

/* Unlink and free a local run. */
void
cworker_local_free(struct cworker *w, struct local *l)
{
	for (struct local **p = &w->locals; *p != NULL; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			break;
		}
	if (l->run.cfg != NULL) {
		exec_run_clear_results(&l->run);
		config_unref(l->run.cfg);
	}
	free(l->parts);
	free(l->commits);
	trend_hist_free(l->trend, l->ntrend);
	free(l);
}

/* A local run's result as the text the planner decodes (runresult.h). */
char *
cworker_encode(const struct exec_run *run)
{
	struct runresult rr = {run->timed_out, run->not_started ||
		run->cancelled, run->cancelled, run->committed_before,
		run->rows_changed, NULL, run->nchecks, NULL, 0};
	struct runresult_metric *ms = NULL;
	size_t nm = run->job->nmetrics;
	struct buf b;

	rr.checks = xcalloc(run->nchecks + 1, sizeof *rr.checks);
	for (size_t i = 0; i < run->nchecks; i++) {
		rr.checks[i].name = run->checks[i].name;
		rr.checks[i].detail = run->checks[i].detail;
		rr.checks[i].passed = run->checks[i].passed;
		rr.checks[i].warn = run->checks[i].warn;
		rr.checks[i].shard = run->checks[i].shard;
		rr.checks[i].recon = run->checks[i].recon;
		rr.checks[i].has_source = run->checks[i].has_source;
		rr.checks[i].has_target = run->checks[i].has_target;
		rr.checks[i].source = run->checks[i].source;
		rr.checks[i].target = run->checks[i].target;
		rr.checks[i].diff = run->checks[i].diff;
		rr.checks[i].trend = run->checks[i].trend;
		rr.checks[i].history = run->checks[i].history;
		rr.checks[i].mean = run->checks[i].mean;
		rr.checks[i].sd = run->checks[i].sd;
		rr.checks[i].has_sigma = run->checks[i].has_sigma;
		rr.checks[i].sigma = run->checks[i].sigma;
		rr.checks[i].part = run->checks[i].part;
	}
	if (run->guards != NULL) {
		rr.nguards = run->nparts;
		rr.guards = xcalloc(run->nparts, sizeof *rr.guards);
		ms = xcalloc(run->nparts * nm + 1, sizeof *ms);
	}
	for (size_t p = 0; p < rr.nguards; p++) {
		const struct exec_guard_result *g = &run->guards[p];

		rr.guards[p].has_rows_before = g->has_rows_before;
		rr.guards[p].rows_before = g->rows_before;
		rr.guards[p].has_rows_after = g->has_rows_after;
		rr.guards[p].rows_after = g->rows_after;
		snprintf(rr.guards[p].sum_before, sizeof rr.guards[p].sum_before,
			 "%s", g->sum_before);
		snprintf(rr.guards[p].sum_after, sizeof rr.guards[p].sum_after,
			 "%s", g->sum_after);
		rr.guards[p].has_changes = g->has_changes && g->changes >= 0;
		rr.guards[p].changes = g->changes;
		rr.guards[p].metrics = &ms[p * nm];
		rr.guards[p].nmetrics = nm;
		for (size_t k = 0; k < nm; k++) {
			ms[p * nm + k].has_before = g->metrics[k].has_before;
			ms[p * nm + k].before = g->metrics[k].before;
			ms[p * nm + k].has_after = g->metrics[k].has_after;
			ms[p * nm + k].after = g->metrics[k].after;
			ms[p * nm + k].has_change = g->metrics[k].has_change;
			ms[p * nm + k].change_pct = g->metrics[k].change_pct;
		}
	}
	buf_init(&b);
	runresult_format(&rr, &b);
	free(ms);
	free(rr.guards);
	free(rr.checks);
	return buf_steal(&b);
}

/* Describe how a local run ended, for its finish (its result text is
 * allocated: the caller frees f->r.result). */
static void
cworker_finish_of(struct local *l, struct cluster_finish *f)
{
	f->id = l->id;
	f->r.failed = l->run.failed || l->run.cancelled;
	f->r.error = l->run.error[0] ? l->run.error :
		     l->run.cancelled ? "cancelled" : NULL;
	f->r.result = cworker_encode(&l->run);
	f->ok = 0;
}

/*
 * Finishes the store refused (a full disk: the statement fails while the
 * connection stays up, so no reconnection comes to kick the pump) are
 * tried again on a timer, CWORKER_RETRY_FIRST_MS and doubling to
 * CWORKER_RETRY_MAX_MS, whether or not anything else happens on this
 * node: once every slot holds a result waiting to be recorded, nothing
 * else would.  The first refusal is logged, the next ones are not (a
 * node that logged each of them filled the journal while the disk was
 * full), and the recovery is.
 */
#define CWORKER_RETRY_FIRST_MS 1000
#define CWORKER_RETRY_MAX_MS 30000

static void
cworker_retry_cb(uv_timer_t *t)
{
	struct cworker *w = t->data;

	w->retry_ms = w->retry_ms * 2 > CWORKER_RETRY_MAX_MS ?
		CWORKER_RETRY_MAX_MS : w->retry_ms * 2;
	cworker_kick(w);
}

/* nf finishes were refused (err) or, with err NULL, recorded. */
static void
cworker_finishes_outcome(struct cworker *w, size_t nf, const struct err *err)
{
	if (err == NULL) {
		if (w->retry_ms != 0)
			log_notice("recorded the results of %zu runs the state"
				   " store had refused", nf);
		w->retry_ms = 0;
		uv_timer_stop(&w->retry);
		return;
	}
	if (w->retry_ms == 0) {
		log_warn("cannot record the results of %zu runs: %s; trying"
			 " again until the state store takes them", nf,
			 err->msg);
		w->retry_ms = CWORKER_RETRY_FIRST_MS;
	} else {
		log_debug("cannot record the results of %zu runs: %s", nf,
			  err->msg);
	}
	if (!uv_is_active((uv_handle_t *)&w->retry) &&
	    !uv_is_closing((uv_handle_t *)&w->retry))
		uv_timer_start(&w->retry, cworker_retry_cb, w->retry_ms, 0);
}

/*
 * One loop turn's exchange with the work table, one statement: finish
 * the runs ended since the last (a finish the database did not take is
 * tried again next time), and claim what this node may run while it has
 * room (max_concurrency).  A refused finish (this node was declared dead
 * meanwhile) is dropped: its run was queued again.
 *
 * The claim goes only when an offer may wait: since a bf_work
 * notification (every offer's commit sends one), a role change, or a
 * claim that came back full or failed.  A claim that came back short saw
 * every offer this node may take; a later one comes with its own
 * notification, which is only read after this statement's result, so
 * the flag is cleared before the statement and a notification read
 * meanwhile sets it again.  The one offer no notification announces, a
 * row another node's claim skipped (SKIP LOCKED) and then failed to take,
 * is claimed at the first turn CWORKER_RECLAIM_MS after the short claim.
 * Without this, each turn of a node (the planner's own runs ending) sent
 * a claim that found nothing.
 *
 * A finish alone, while other runs of this node are in flight, waits up
 * to CWORKER_FINISH_MS for those that end meanwhile (cworker_run_done_cb):
 * with short runs, each ending on its own turn, a node sent one exchange
 * per run, whose statement, commit and bf_done notification cost the
 * server more than the rows it changed (docs/design-notes.md, "The
 * PostgreSQL store's writes per partition").  A claim that is due goes at
 * once, with every finish waiting, so that no slot waits idle for an
 * offer that waits too; so does the finish of a node's last run in
 * flight, which nothing would join.
 */
#define CWORKER_RECLAIM_MS 1000
#define CWORKER_FINISH_MS 5

/* Is a claim due at the next exchange (cworker_exchange's rule)? */
static bool
cworker_claim_due(const struct cworker *w)
{
	return w->offers_maybe ||
	       uv_now(w->loop) - w->short_at >= CWORKER_RECLAIM_MS;
}

void
cworker_exchange(struct cworker *w)
{
	struct config *cfg = sched_config(w->sched);
	const char **jobs = xcalloc(cfg->njobs + 1, sizeof *jobs);
	struct cluster_finish *f;
	struct local *l, *nx;
	size_t nj = 0, nf = 0, n = 0, room = 0;
	struct cluster_work *rows = NULL;
	struct err err;
	uint64_t now = uv_now(w->loop);
	bool claim;

	for (l = w->locals; l != NULL; l = nx) {
		nx = l->next;
		if (l->done && l->discard)
			cworker_local_free(w, l);
		else if (l->done)
			nf++;
	}
	f = xcalloc(nf + 1, sizeof *f);
	nf = 0;
	for (l = w->locals; l != NULL; l = l->next)
		if (l->done) {
			cworker_finish_of(l, &f[nf]);
			nf++;
		}
	if (!w->closing && w->nlocal < cfg->max_concurrency)
		room = (size_t)(cfg->max_concurrency - w->nlocal);
	for (size_t i = 0; room > 0 && i < cfg->njobs; i++)
		if (lease_job_allowed(cfg->jobs[i].nodes, cfg->jobs[i].nnodes,
				      cfg->node))
			jobs[nj++] = cfg->jobs[i].name;
	claim = nj > 0 && cworker_claim_due(w);
	if (!claim)
		nj = room = 0;
	else
		w->offers_maybe = false;
	if ((nf > 0 || nj > 0) &&
	    w->drv->finish_claim(w->c, f, nf, jobs, nj, room, &rows, &n,
				 &err) < 0) {
		if (claim)
			w->offers_maybe = true;
		if (nf > 0)
			cworker_finishes_outcome(w, nf, &err);
		else
			log_debug("cannot claim: %s", err.msg);
	} else {
		if (claim && n < room)
			w->short_at = now;
		else if (claim)
			w->offers_maybe = true; /* full: there may be more */
		if (nf > 0) {
			log_debug("sent the ends of %zu runs in one exchange",
				  nf);
			cworker_finishes_outcome(w, nf, NULL);
		}
		for (size_t i = 0; i < nf; i++)
			for (l = w->locals; l != NULL; l = nx) {
				nx = l->next;
				if (l->done && l->id == f[i].id) {
					cworker_local_free(w, l);
					break;
				}
			}
	}
	for (size_t i = 0; i < nf; i++)
		free((char *)f[i].r.result);
	free(f);
	free(jobs);
	for (size_t i = 0; i < n; i++)
		cworker_start(w, &rows[i]);
	if (n > 0)
		w->drv->work_free(rows, n);
	if (n > 0 || nf > 0)
		w->drv->set_running(w->c, w->nlocal);
	if (n == room && n > 0)
		cworker_kick(w); /* there may be more: next turn */
}

/* A claimed run ended on the executor: its finish goes with the next
 * exchange (within CWORKER_FINISH_MS, at the next loop turn when a claim
 * is due, or now when the node closes).  An own run's result goes to the
 * scheduler now, unless this node is no longer the planner (dropped: it
 * writes nothing). */
void
cworker_run_done_cb(struct exec_run *run)
{
	struct local *l = run->data;
	struct cworker *w = l->w;

	l->done = true;
	w->nlocal--;
	if (l->own) {
		if (l->direct != NULL && (l->discard ||
					  !w->drv->planner_now(w->c))) {
			l->direct = NULL;
			w->ndropped++;
			log_warn("run=%" PRId64 ": its result is dropped: this"
				 " node is no longer the planner (the next"
				 " queues it again)", l->id);
		}
		if (l->direct != NULL)
			cworker_own_result(w, l);
		cworker_local_free(w, l);
		w->drv->set_running(w->c, w->nlocal);
	} else if (!w->closing && w->nlocal > 0 && !cworker_claim_due(w)) {
		/* the exchange already due (a kick), or one a little later
		 * that the runs still in flight, ending meanwhile, join */
		if (!uv_is_active((uv_handle_t *)&w->pump) &&
		    !uv_is_closing((uv_handle_t *)&w->pump))
			uv_timer_start(&w->pump, w->pump.timer_cb,
				       CWORKER_FINISH_MS, 0);
		return;
	}
	cworker_kick(w); /* closing: the pump sends it and shuts */
}

/* Start one claimed run here. */
void
cworker_start(struct cworker *w, const struct cluster_work *x)
{
	struct local *l = xcalloc(1, sizeof *l);
	struct err err;

	l->w = w;
	l->id = x->id;
	l->next = w->locals;
	w->locals = l;
	if (cworker_build(w, x, l, &err) < 0) {
		struct cluster_result r = {true, err.msg, NULL};

		log_err("run=%" PRId64 " job=%s: %s", x->id, x->job, err.msg);
		w->drv->finish(w->c, x->id, &r, &err);
		cworker_local_free(w, l);
		return;
	}
	if (x->nkeys > 1)
		log_info("job=%s partition=%s..%s run=%" PRId64 " attempt=%d"
			 " claimed by this node: one batch of %zu partitions",
			 x->job, x->keys[0], x->keys[x->nkeys - 1], x->id,
			 x->attempt, x->nkeys);
	else
		log_info("job=%s partition=%s run=%" PRId64 " attempt=%d"
			 " claimed by this node", x->job,
			 x->nkeys ? x->keys[0] : "", x->id, x->attempt);
	w->nlocal++;
	exec_submit(w->exec, &l->run);
}

/* One loop turn's work: cancels, offers, finishes, claims. */
