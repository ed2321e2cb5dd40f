/*
 * cluster_worker_plan.c - the planner's side of several hosts: the runs
 * it offers in its turn's store transaction, those it runs itself, and
 * cancels (cluster_worker_int.h; the rules are at the top of
 * cluster_worker.c).
 */
#include "cluster_worker_int.h"

/* The local runs ended while closing: close the cluster. */
void
cworker_shut(struct cworker *w)
{
	void (*cb)(void *) = w->closed_cb;

	w->closed_cb = NULL;
	uv_close((uv_handle_t *)&w->pump, NULL);
	uv_close((uv_handle_t *)&w->takeover, NULL);
	uv_close((uv_handle_t *)&w->retry, NULL);
	w->drv->close(w->c, cb, w->closed_arg);
}

/* Arm the next loop turn's pump. */
void
cworker_kick(struct cworker *w)
{
	if (!uv_is_closing((uv_handle_t *)&w->pump))
		uv_timer_start(&w->pump, w->pump.timer_cb, 0, 0);
}

/* store_pg_offer or store_pg_forget (store_pg.h) from the PostgreSQL
 * module: the planner's work rows in its store transaction; -1 with err
 * when the module lacks it. */
static void *
cworker_store_op(const char *name, struct err *err)
{
	char why[256];
	void *fn = module_symbol(name, "the PostgreSQL state store", why,
				 sizeof why);

	if (fn == NULL)
		err_set(err, EXIT_INTERNAL, "%s", why);
	return fn;
}

/* Offer runs in the planner's open store transaction. */
static int
cworker_store_offer(struct cworker *w, const struct cluster_offer *o,
		    size_t n, struct err *err)
{
	static int (*offer)(struct store *, const struct cluster_offer *,
			    size_t, struct err *);

	if (offer == NULL &&
	    (*(void **)&offer = cworker_store_op("store_pg_offer", err)) ==
	    NULL)
		return -1;
	return offer(w->store, o, n, err);
}

/* Delete recorded results' rows in the planner's open store
 * transaction. */
int
cworker_store_forget(struct cworker *w, const int64_t *ids, size_t n,
		     struct err *err)
{
	static int (*forget)(struct store *, const int64_t *, size_t,
			     struct err *);

	if (forget == NULL &&
	    (*(void **)&forget = cworker_store_op("store_pg_forget", err)) ==
	    NULL)
		return -1;
	return forget(w->store, ids, n, err);
}

/* Find and remove an offered run by id. */
struct exec_run *
cworker_take_offered(struct cworker *w, int64_t id)
{
	for (size_t i = 0; i < w->noffered; i++) {
		struct exec_run *run = w->offered[i];

		if (run->run_id != id)
			continue;
		if (i >= w->noffered - w->nunsent)
			w->nunsent--;
		memmove(&w->offered[i], &w->offered[i + 1],
			(w->noffered - i - 1) * sizeof *w->offered);
		w->noffered--;
		return run;
	}
	return NULL;
}

/* May this planner run run itself rather than offer it?  Not while it
 * adopts or closes, not a job pinned elsewhere, not beyond its share. */
static bool
cworker_may_run_here(struct cworker *w, const struct exec_run *run)
{
	const struct config *cfg = sched_config(w->sched);
	struct cluster_state st;

	if (!w->planner_once || w->taking_over || w->adopting || w->closing ||
	    w->db_lost)
		return false;
	if (!lease_job_allowed(run->job->nodes, run->job->nnodes, cfg->node))
		return false;
	w->drv->state(w->c, &st);
	if (w->nlocal >= lease_share(cfg->max_concurrency, st.live_nodes))
		return false;
	return w->drv->planner_now(w->c);
}

/* The history of the run's trend checks, read from the shared store on
 * this node (trend_hist.h). */
void
cworker_trend(struct cworker *w, struct local *l)
{
	l->trend = trend_hist_load(w->store, l->run.job);
	l->ntrend = l->run.job->nmetrics;
	l->run.trend = l->trend;
}

/* Run the scheduler's run here, built like a claim (its partitions, and
 * the scheduler's commit identities: every request it serves). */
static void
cworker_run_here(struct cworker *w, struct exec_run *run)
{
	struct local *l = xcalloc(1, sizeof *l);

	l->w = w;
	l->id = run->run_id;
	l->own = true;
	l->direct = run;
	l->parts = xcalloc(run->nparts ? run->nparts : 1, sizeof *l->parts);
	memcpy(l->parts, run->parts, run->nparts * sizeof *l->parts);
	if (run->ncommits > 0) {
		l->commits = xcalloc(run->ncommits, sizeof *l->commits);
		memcpy(l->commits, run->commits,
		       run->ncommits * sizeof *l->commits);
	}
	l->run.run_id = run->run_id;
	l->run.cfg = config_ref(run->cfg);
	l->run.job = run->job;
	l->run.parts = l->parts;
	l->run.nparts = run->nparts;
	l->run.attempt = run->attempt;
	l->run.log_dir = w->log_dir;
	l->run.commits = l->commits;
	l->run.ncommits = run->ncommits;
	l->run.commits_keep_ms = run->commits_keep_ms;
	sched_shards_prepare(w->sched, &l->run);
	cworker_trend(w, l);
	l->run.done_cb = cworker_run_done_cb;
	l->run.data = l;
	l->pending = true;
	l->next = w->locals;
	w->locals = l;
	w->nlocal++;
	w->drv->set_running(w->c, w->nlocal);
	cworker_kick(w);
}

/* End a pending own run unstarted: queued again, no attempt counted (as
 * an offer withdrawn, cworker_end_cancels); its local freed. */
static void
cworker_unstart(struct cworker *w, struct local *l, const char *why)
{
	struct exec_run *run = l->direct;

	w->nlocal--;
	cworker_local_free(w, l);
	if (run == NULL)
		return;
	run->failed = run->not_started = run->interrupted = true;
	snprintf(run->error, sizeof run->error, "interrupted: %s", why);
	run->done_cb(run);
}

/*
 * Start the own runs submitted since the last turn, their runs rows
 * committed first (sched_flush), so that a planner killed meanwhile
 * leaves them to the next one to queue again (sched_adopt.c).  A store
 * that cannot be written ends them unstarted, as it ends offers; one
 * cancelled or dropped meanwhile never starts.
 */
void
cworker_start_own(struct cworker *w)
{
	struct local *l, **todo;
	size_t n = 0;
	bool flushed;

	for (l = w->locals; l != NULL; l = l->next)
		n += l->pending;
	if (n == 0)
		return;
	/* these only: a done_cb below may submit more, for the next turn */
	todo = xcalloc(n, sizeof *todo);
	n = 0;
	for (l = w->locals; l != NULL; l = l->next)
		if (l->pending)
			todo[n++] = l;
	flushed = sched_flush(w->sched) == 0;
	for (size_t i = 0; i < n; i++) {
		l = todo[i];
		if (l->direct == NULL || l->discard) {
			w->nlocal--;
			cworker_local_free(w, l);
		} else if (l->withdrawn) {
			cworker_unstart(w, l, "the planner withdrew it");
		} else if (!flushed) {
			cworker_unstart(w, l, "the state store cannot be"
					" written");
		} else {
			l->pending = false;
			exec_submit(w->exec, &l->run);
		}
	}
	free(todo);
	w->drv->set_running(w->c, w->nlocal);
	if (w->closing)
		cworker_kick(w); /* the pump shuts once none is left */
}

/* Record which node ran a run: its command log is there (logs). */
void
cworker_ran_on(struct cworker *w, int64_t run_id, const char *node)
{
	struct err err;

	if (node == NULL || node[0] == '\0')
		return;
	if (store_defer(w->store, &err) < 0 ||
	    store_run_node(w->store, run_id, node, &err) < 0)
		log_warn("run=%" PRId64 ": cannot record that node %s ran it:"
			 " %s", run_id, node, err.msg);
}

/* An own run ended: its result to the scheduler's run, as a worker's
 * result would come (cworker_finish_of, then cworker_result). */
void
cworker_own_result(struct cworker *w, struct local *l)
{
	struct exec_run *run = l->direct;
	char *text = cworker_encode(&l->run);

	cworker_ran_on(w, run->run_id, sched_config(w->sched)->node);
	cworker_decode(text, run);
	free(text);
	run->failed = l->run.failed || l->run.cancelled;
	if (l->run.error[0] != '\0')
		snprintf(run->error, sizeof run->error, "%s", l->run.error);
	else if (l->run.cancelled)
		snprintf(run->error, sizeof run->error, "cancelled");
	run->done_cb(run);
}

/* Deposed or fenced: the own runs are cancelled and their results will
 * be dropped; the next planner queues them again. */
void
cworker_drop_own(struct cworker *w, const char *why)
{
	int n = 0;

	for (struct local *l = w->locals; l != NULL; l = l->next) {
		if (!l->own || l->direct == NULL)
			continue;
		l->direct = NULL;
		l->discard = true;
		exec_cancel(w->exec, &l->run);
		n++;
	}
	w->ndropped += n;
	if (n > 0)
		log_warn("%d runs this node ran as planner are cancelled (%s):"
			 " the next planner queues them again", n, why);
}

/* The scheduler's remote: run it here (the planner's share), or keep the
 * run and offer it next turn. */
void
cworker_submit(void *data, struct exec_run *run)
{
	struct cworker *w = data;

	if (cworker_may_run_here(w, run)) {
		cworker_run_here(w, run);
		return;
	}
	w->offered = xreallocarray(w->offered, w->noffered + 1,
				   sizeof *w->offered);
	w->offered[w->noffered++] = run;
	w->nunsent++;
	cworker_kick(w);
}

/* The scheduler's remote: a run an earlier planner offered, adopted:
 * offered already (before the runs not sent yet). */
void
cworker_adopt(void *data, struct exec_run *run)
{
	struct cworker *w = data;
	size_t at = w->noffered - w->nunsent;

	w->offered = xreallocarray(w->offered, w->noffered + 1,
				   sizeof *w->offered);
	memmove(&w->offered[at + 1], &w->offered[at],
		w->nunsent * sizeof *w->offered);
	w->offered[at] = run;
	w->noffered++;
}

/* The scheduler's remote: end the run as not started (next turn); an
 * own run is stopped, and its result ends it. */
void
cworker_cancel(void *data, struct exec_run *run)
{
	struct cworker *w = data;

	for (struct local *l = w->locals; l != NULL; l = l->next)
		if (l->own && l->direct == run) {
			if (l->pending)
				l->withdrawn = true; /* the pump ends it */
			else
				exec_cancel(w->exec, &l->run);
			cworker_kick(w);
			return;
		}
	for (size_t i = 0; i < w->ncancels; i++)
		if (w->cancels[i] == run)
			return;
	w->cancels = xreallocarray(w->cancels, w->ncancels + 1,
				   sizeof *w->cancels);
	w->cancels[w->ncancels++] = run;
	cworker_kick(w);
}

/* A run whose result came is no longer to be cancelled. */
void
cworker_drop_cancel(struct cworker *w, const struct exec_run *run)
{
	for (size_t i = 0; i < w->ncancels; i++)
		if (w->cancels[i] == run) {
			w->cancels[i] = w->cancels[--w->ncancels];
			return;
		}
}

/* Is run among the offered runs sent already? */
static bool
cworker_sent(const struct cworker *w, const struct exec_run *run)
{
	for (size_t i = 0; i < w->noffered - w->nunsent; i++)
		if (w->offered[i] == run)
			return true;
	return false;
}

/* Is id in ids[]? */
static bool
cworker_has_id(const int64_t *ids, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/*
 * End the cancelled runs (a cancelled request, a warehouse above its
 * critical load requeues them).  The results already in are read first.
 * One never offered, or withdrawn while still on offer, ends now: queued
 * again, no attempt counted.  One a node has claimed is asked to stop
 * (forget sets its cancel): its node stops it and records it cancelled,
 * and that result ends it here, so that its partition never runs twice
 * at once.  When the database cannot say, the next turn tries again.
 */
void
cworker_end_cancels(struct cworker *w)
{
	int64_t *ids, *left = NULL;
	size_t nids = 0, nleft = 0;
	struct err err;

	if (w->ncancels == 0)
		return;
	cworker_collect(w);
	if (w->ncancels == 0)
		return;
	ids = xcalloc(w->ncancels, sizeof *ids);
	for (size_t i = 0; i < w->ncancels; i++)
		if (cworker_sent(w, w->cancels[i]))
			ids[nids++] = w->cancels[i]->run_id;
	if (nids > 0 && (w->drv->forget(w->c, ids, nids, &err) < 0 ||
			 w->drv->in_flight(w->c, &left, &nleft, &err) < 0)) {
		log_warn("cannot withdraw %zu runs: %s; trying again", nids,
			 err.msg);
		free(ids);
		return;
	}
	while (w->ncancels > 0) {
		struct exec_run *run = w->cancels[--w->ncancels];

		if (cworker_has_id(left, nleft, run->run_id))
			continue; /* claimed: asked to stop, its result follows */
		if (cworker_take_offered(w, run->run_id) != run)
			continue;
		run->failed = run->not_started = run->interrupted = true;
		snprintf(run->error, sizeof run->error, "interrupted: the"
			 " planner withdrew it");
		run->done_cb(run);
	}
	free(left);
	free(ids);
}

/*
 * Offer the runs recorded since the last turn, in the store transaction
 * that holds their runs rows: they commit together, so an offer never
 * names a run the state store does not hold (a takeover adopts by them,
 * adopt.h).  A store that cannot be written (SCHED-7) ends them unoffered.
 */
void
cworker_offer(struct cworker *w)
{
	struct cluster_offer *o;
	const char **keys;
	size_t nk = 0, first = w->noffered - w->nunsent;
	struct err err;
	int rc;

	if (w->nunsent == 0)
		return;
	o = xcalloc(w->nunsent, sizeof *o);
	for (size_t i = first; i < w->noffered; i++)
		nk += w->offered[i]->nparts;
	keys = xcalloc(nk, sizeof *keys);
	nk = 0;
	for (size_t i = first; i < w->noffered; i++) {
		struct exec_run *run = w->offered[i];
		struct cluster_offer *x = &o[i - first];

		x->id = run->run_id;
		/* the worker's identity of its commits (wh_commits.h) */
		x->request = run->ncommits > 0 ? run->commits[0].request : 0;
		x->job = run->job->name;
		x->keys = &keys[nk];
		x->nkeys = run->nparts;
		x->attempt = run->attempt;
		for (size_t k = 0; k < run->nparts; k++)
			keys[nk++] = run->parts[k].key;
	}
	rc = store_defer(w->store, &err) < 0 ||
	     cworker_store_offer(w, o, w->nunsent, &err) < 0 ? -1 : 0;
	free(keys);
	free(o);
	if (rc < 0)
		log_warn("cannot offer %zu runs: %s; they are queued again",
			 w->nunsent, err.msg);
	if (sched_flush(w->sched) < 0) {
		rc = -1;
		log_warn("%zu runs are not offered: the state store cannot be"
			 " written", w->nunsent);
	}
	if (rc < 0) {
		for (size_t i = first; i < w->noffered; i++)
			cworker_cancel(w, w->offered[i]);
		return;
	}
	w->nunsent = 0;
}
