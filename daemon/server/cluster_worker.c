/*
 * cluster_worker.c - the daemon's side of several hosts (cluster_worker.h,
 * docs/several-hosts.md).
 *
 * Planner: the scheduler's remote (scheduler.h): each run sched_run_begin
 * recorded is kept here by its run id and offered, in one batch per loop
 * turn.  done_cb reads the results, records them (committed), then
 * deletes their rows, calling each run's done_cb, the chain a local run
 * takes; an interrupted row (its node was declared dead) ends as not
 * started: queued again, no attempt counted.  A new planner adopts the
 * runs an earlier one left in flight (cworker_takeover_cb); a planner
 * that stops hands them over (cworker_stop).
 *
 * The planner runs its share itself (lease_share): a run it may run while
 * it runs fewer than its share goes to its own executor, with no work row
 * (cworker_run_here), once its runs rows are committed (next loop turn,
 * as an offer), and its result reaches the scheduler as a worker's would
 * (encoded, then decoded).  Deposed, it cancels them and
 * drops their results (the next planner queues them again); stopping
 * while others live, it makes them its claims (cworker_hand_own).
 *
 * Worker (every node, the planner too): once per loop turn, one statement
 * finishes the runs ended since the last turn and claims what it may run
 * while it has room (max_concurrency); it runs them on the executor.  A
 * finish the database did not take is tried again when it is back.
 *
 * The result a worker records carries what a local run's result gives
 * the scheduler (runresult.h): checks and guardrail figures too, so that
 * audit and guardrails read the same wherever the run ran.
 */
#include "cluster_worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "calendar.h"
#include "clock.h"
#include "config.h"
#include "exec.h"
#include "lease.h"
#include "log.h"
#include "scheduler.h"
#include "store.h"
#include "module.h"
#include "runresult.h"
#include "trend_hist.h"
#include "xalloc.h"

/* A claimed run on this node, or one the planner runs itself (own). */
struct local {
	struct exec_run run;
	struct exec_part *parts;
	struct wh_commit *commits; /* exactly-once commits, or NULL */
	struct exec_trend_hist *trend; /* trend checks' history, or NULL */
	size_t ntrend;
	int64_t id;   /* the work row (own: the run's id, no row) */
	bool done;    /* ended; its finish waits for the database */
	bool discard; /* fenced: its result would be refused */
	bool own;     /* the planner's own: no work row, result to direct */
	bool pending; /* own, not started: its runs rows are not committed */
	bool withdrawn; /* pending, cancelled: it ends unstarted */
	struct exec_run *direct; /* own: the scheduler's run (NULL: dropped) */
	struct cworker *w;
	struct local *next;
};

struct cworker {
	uv_loop_t *loop;
	struct sched *sched;
	struct store *store;
	struct exec *exec;
	char *log_dir;
	struct cworker_opts o;
	const struct cluster_driver *drv;
	struct cluster *c;
	struct sched_remote remote;

	struct exec_run **offered; /* planner: runs on offer or claimed */
	size_t noffered, nunsent;  /* the last nunsent are not offered yet */
	struct exec_run **cancels; /* planner: to end as not started */
	size_t ncancels;

	struct local *locals;
	int nlocal; /* running here (not done), own runs too */
	int ndropped; /* own runs whose result was dropped (deposed) */
	uv_timer_t pump; /* next loop turn: offer, claim, cancel */
	uv_timer_t takeover; /* a new planner reads the work in flight */
	uv_timer_t retry; /* finishes the store refused: try them again */
	uint64_t retry_ms; /* 0: the last finishes were recorded */
	bool taking_over;    /* ... and has not adopted it yet */
	bool adopting;       /* inside sched_start_adopt */
	bool planner_once;
	bool db_lost; /* the state store was lost since it was reached */
	bool closing;
	void (*closed_cb)(void *);
	void *closed_arg;
};

static void cworker_run_done_cb(struct exec_run *run);
static void cworker_start(struct cworker *w, const struct cluster_work *x);
static char *cworker_encode(const struct exec_run *run);
static void cworker_decode(const char *text, struct exec_run *run);
static void cworker_local_free(struct cworker *w, struct local *l);
static void cworker_forget_all(struct cworker *w);

/* The local runs ended while closing: close the cluster. */
static void
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
static void
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
static int
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
static struct exec_run *
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
static void
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
static void
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
static void
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
static void
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
static void
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
static void
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
static void
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
static void
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
static void
cworker_drop_cancel(struct cworker *w, const struct exec_run *run)
{
	for (size_t i = 0; i < w->ncancels; i++)
		if (w->cancels[i] == run) {
			w->cancels[i] = w->cancels[--w->ncancels];
			return;
		}
}

static void cworker_collect(void *data);

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
static void
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
 * adopt.h).  A store that cannot be written (rule 7) ends them unoffered.
 */
static void
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
static void
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
static void
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

		if (part_parse_key(j->grain, x->keys[k], &pt, err) < 0)
			return -1;
		snprintf(p->key, sizeof p->key, "%s", x->keys[k]);
		part_bound(j->grain, part_start(j->grain, pt), p->start);
		part_bound(j->grain, part_end(j->grain, pt), p->end);
	}
	l->run.run_id = x->id;
	l->run.cfg = config_ref(cfg);
	l->run.job = j;
	l->run.parts = l->parts;
	l->run.nparts = x->nkeys;
	l->run.attempt = x->attempt;
	l->run.log_dir = w->log_dir;
	cworker_commits(l, j, x);
	cworker_trend(w, l);
	l->run.done_cb = cworker_run_done_cb;
	l->run.data = l;
	return 0;
}

/* Unlink and free a local run. */
static void
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
static char *
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
 */
static void
cworker_exchange(struct cworker *w)
{
	struct config *cfg = sched_config(w->sched);
	const char **jobs = xcalloc(cfg->njobs + 1, sizeof *jobs);
	struct cluster_finish *f;
	struct local *l, *nx;
	size_t nj = 0, nf = 0, n = 0, room = 0;
	struct cluster_work *rows = NULL;
	struct err err;

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
	if ((nf > 0 || nj > 0) &&
	    w->drv->finish_claim(w->c, f, nf, jobs, nj, room, &rows, &n,
				 &err) < 0) {
		if (nf > 0)
			cworker_finishes_outcome(w, nf, &err);
		else
			log_debug("cannot claim: %s", err.msg);
	} else {
		if (nf > 0)
			cworker_finishes_outcome(w, nf, NULL);
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
 * exchange (next loop turn, or now when the node closes).  An own run's
 * result goes to the scheduler now, unless this node is no longer the
 * planner (dropped: it writes nothing). */
static void
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
	}
	cworker_kick(w); /* closing: the pump sends it and shuts */
}

/* Start one claimed run here. */
static void
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
static void
cworker_pump_cb(uv_timer_t *t)
{
	struct cworker *w = t->data;

	if (w->closing && w->closed_cb != NULL && w->nlocal == 0) {
		cworker_exchange(w); /* the finishes still to send */
		cworker_shut(w);
		return;
	}
	cworker_end_cancels(w);
	if (w->nunsent > 0)
		cworker_offer(w); /* commits the turn: own runs' rows too */
	cworker_start_own(w);
	cworker_exchange(w);
}

/* store_pg_fence (store_pg.h) from the PostgreSQL module. */
static void
cworker_fence(struct cworker *w, int64_t gen)
{
	static void (*fence)(struct store *, int64_t);
	char why[256];

	if (fence == NULL)
		*(void **)&fence = module_symbol("store_pg_fence", "the"
						 " PostgreSQL state store", why,
						 sizeof why);
	if (fence != NULL)
		fence(w->store, gen);
}

/*
 * A new planner adopts the runs an earlier one left in flight
 * (docs/several-hosts.md, adopt.h): it reads the work table and starts
 * the scheduler with the runs rows those rows carry kept running, handed
 * back here by cworker_adopt, so that their results are recorded through
 * their done_cb as this planner's own; a claim of a dead node is reaped
 * into an interrupted result as ever.  The rows that carry no run the
 * store holds running are given up: offers withdrawn, done rows deleted,
 * claims asked to stop.  Until then nothing is collected, planned or
 * answered; a read that fails is tried again CWORKER_TAKEOVER_MS later.
 */
static void cworker_mail_cb(void *data);

#define CWORKER_TAKEOVER_MS 300

/* Withdraw, stop or delete the rows the scheduler did not adopt. */
static void
cworker_give_up(struct cworker *w, const struct cluster_work *rows,
		const enum adopt_action *act, size_t n)
{
	int64_t *ids = xcalloc(n + 1, sizeof *ids);
	size_t nids = 0;
	struct err err;

	for (size_t i = 0; i < n; i++) {
		if (act[i] == ADOPT_KEEP)
			continue;
		ids[nids++] = rows[i].id;
		if (act[i] != ADOPT_DROP)
			log_warn("run=%" PRId64 " job=%s: %s by the earlier"
				 " planner, but not running in the state store:"
				 " %s", rows[i].id, rows[i].job,
				 act[i] == ADOPT_WITHDRAW ? "offered" :
				 "claimed", act[i] == ADOPT_WITHDRAW ?
				 "withdrawn" : "its node is asked to stop it");
	}
	if (nids > 0 && w->drv->forget(w->c, ids, nids, &err) < 0)
		log_warn("cannot give up %zu rows of the work table: %s", nids,
			 err.msg);
	free(ids);
}

/* The state of a work row for adopt.h. */
static enum adopt_work
cworker_work_state(const struct cluster_work *x)
{
	if (strcmp(x->state, "offered") == 0)
		return ADOPT_OFFERED;
	if (strcmp(x->state, "claimed") == 0)
		return ADOPT_CLAIMED;
	return ADOPT_DONE;
}

static void
cworker_takeover_cb(uv_timer_t *t)
{
	struct cworker *w = t->data;
	struct cluster_work *rows = NULL;
	struct adopt_row *ar;
	enum adopt_action *act;
	struct cluster_state st;
	size_t n = 0, kept = 0;
	struct err err;
	int rc;

	if (!w->taking_over || w->closing)
		return;
	if (w->drv->work_rows(w->c, &rows, &n, &err) < 0) {
		log_warn("cannot read the work in flight: %s", err.msg);
		uv_timer_start(&w->takeover, cworker_takeover_cb,
			       CWORKER_TAKEOVER_MS, 0);
		return;
	}
	ar = xcalloc(n + 1, sizeof *ar);
	act = xcalloc(n + 1, sizeof *act); /* ADOPT_KEEP: nothing given up */
	for (size_t i = 0; i < n; i++)
		ar[i] = (struct adopt_row){rows[i].id,
			cworker_work_state(&rows[i]), rows[i].job,
			(const char *const *)rows[i].keys, rows[i].nkeys,
			rows[i].claimed_by};
	w->taking_over = false;
	w->planner_once = true;
	w->drv->state(w->c, &st);
	sched_set_previous_planner(w->sched, st.prev_planner);
	w->adopting = true;
	rc = sched_start_adopt(w->sched, ar, n, act, &err);
	w->adopting = false;
	if (rc < 0) {
		log_err("cannot start planning: %s", err.msg);
	} else if (n > 0) {
		cworker_give_up(w, rows, act, n);
		for (size_t i = 0; i < n; i++)
			kept += act[i] == ADOPT_KEEP;
		log_notice("%zu runs in flight adopted from the earlier planner"
			   " (%zu rows of the work table given up)", kept,
			   n - kept);
	}
	free(act);
	free(ar);
	w->drv->work_free(rows, n);
	cworker_kick(w);
	cworker_collect(w); /* results that came meanwhile */
	cworker_mail_cb(w); /* what waited meanwhile */
}

/* role_cb */
static void
cworker_role_cb(void *data, enum cluster_role role, int64_t gen)
{
	struct cworker *w = data;

	log_notice("this node is now %s%s", cluster_role_name(role),
		   role == CLUSTER_PLANNER ? " (it holds the lease)" : "");
	if (role != CLUSTER_PLANNER) {
		/* a planner handing over keeps its fence: it writes nothing
		 * more to the state store */
		if (!w->closing)
			cworker_fence(w, 0);
		w->taking_over = false;
		uv_timer_stop(&w->takeover);
		if (w->planner_once)
			cworker_drop_own(w, "deposed");
		if (w->planner_once && w->o.deposed_cb != NULL)
			w->o.deposed_cb(w->o.data);
		/* still here (stopping): the runs whose results were dropped
		 * would never end; forget them all, as a hand-over does */
		if (w->planner_once && w->ndropped > 0)
			cworker_forget_all(w);
	} else {
		cworker_fence(w, gen);
		if (!w->planner_once && !w->taking_over) {
			w->taking_over = true;
			cworker_takeover_cb(&w->takeover);
		}
		cworker_kick(w);
	}
	if (w->o.changed_cb != NULL)
		w->o.changed_cb(w->o.data);
}

/* mail_cb */
static void
cworker_mail_cb(void *data)
{
	struct cworker *w = data;

	/* a new planner answers once it plans (cworker_takeover_cb) */
	if (w->o.mail_cb != NULL && w->planner_once)
		w->o.mail_cb(w->o.data);
}

/* work_cb */
static void
cworker_work_cb(void *data)
{
	cworker_kick(data);
}

/* fenced_cb: every claimed run is forgotten. */
static void
cworker_fenced_cb(void *data, int64_t old_inc, int64_t new_inc)
{
	struct cworker *w = data;

	log_warn("this node was declared dead (incarnation %" PRId64 ", now %"
		 PRId64 "): its runs are cancelled and run again elsewhere",
		 old_inc, new_inc);
	for (struct local *l = w->locals; l != NULL; l = l->next) {
		l->discard = true;
		if (!l->done)
			exec_cancel(w->exec, &l->run);
	}
}

/* db_cb */
static void
cworker_db_cb(void *data, bool ok, const char *why)
{
	struct cworker *w = data;

	/* the first connection also reports ok: only a loss makes it "again" */
	if (ok && w->db_lost)
		log_notice("the state store is reachable again");
	else if (!ok)
		log_warn("the state store is lost: %s", why ? why : "?");
	w->db_lost = !ok;
	if (ok)
		cworker_kick(w);
	if (w->o.changed_cb != NULL)
		w->o.changed_cb(w->o.data);
}

/* cancel_cb */
static void
cworker_cancel_cb(void *data, int64_t id)
{
	struct cworker *w = data;

	for (struct local *l = w->locals; l != NULL; l = l->next)
		if (l->id == id && !l->done)
			exec_cancel(w->exec, &l->run);
}

/* log_cb: the layer's lines already say "cluster: node=..." */
static void
cworker_log_cb(void *data, int prio, const char *line)
{
	(void)data;
	if (prio <= 3)
		log_err("%s", line);
	else if (prio == 4)
		log_warn("%s", line);
	else if (prio == 5)
		log_notice("%s", line);
	else if (prio == 6)
		log_info("%s", line);
	else
		log_debug("%s", line);
}

const struct cluster_driver *
cworker_driver(void)
{
	static const struct cluster_driver *drv;
	char why[256];

	if (drv == NULL && (drv = cluster_driver_load(why, sizeof why)) ==
	    NULL)
		log_err("%s", why);
	return drv;
}

int
cworker_open(const struct cworker_opts *o, struct cworker **out,
	     struct err *err)
{
	struct cworker *w = xcalloc(1, sizeof *w);
	struct config *cfg = sched_config(o->sched);
	struct cluster_opts co = {cfg->state_conninfo, cfg->state_password_file,
		cfg->node, cfg->lease, cfg->cluster_hash,
		exec_fence_clock(o->exec)};
	struct cluster_cbs cbs = {cworker_role_cb, cworker_work_cb,
		cworker_collect, cworker_mail_cb, cworker_fenced_cb, cworker_db_cb,
		cworker_cancel_cb, cworker_log_cb, w};
	char why[256];

	w->o = *o;
	w->loop = o->loop;
	w->sched = o->sched;
	w->store = o->store;
	w->exec = o->exec;
	w->log_dir = xstrdup(o->log_dir);
	if ((w->drv = cluster_driver_load(why, sizeof why)) == NULL) {
		free(w->log_dir);
		free(w);
		return err_set(err, EXIT_BAD_INPUT, "%s", why);
	}
	uv_timer_init(o->loop, &w->pump);
	w->pump.data = w;
	uv_timer_init(o->loop, &w->takeover);
	w->takeover.data = w;
	uv_timer_init(o->loop, &w->retry);
	w->retry.data = w;
	w->pump.timer_cb = cworker_pump_cb;
	w->remote = (struct sched_remote){cworker_submit, cworker_cancel,
		cworker_adopt, w};
	sched_set_remote(o->sched, &w->remote);
	if (w->drv->open(o->loop, &co, &cbs, &w->c, err) < 0) {
		uv_close((uv_handle_t *)&w->pump, NULL);
		uv_close((uv_handle_t *)&w->takeover, NULL);
		uv_close((uv_handle_t *)&w->retry, NULL);
		return -1;
	}
	*out = w;
	return 0;
}

void
cworker_reload(struct cworker *w)
{
	struct config *cfg = sched_config(w->sched);

	w->drv->set_config_hash(w->c, cfg->cluster_hash);
	w->drv->set_lease(w->c, cfg->lease);
	cworker_kick(w);
}

/* Forget every run of the scheduler without recording anything (their
 * runs rows stay running, for the next planner). */
static void
cworker_forget_all(struct cworker *w)
{
	w->noffered = w->nunsent = w->ncancels = 0;
	w->ndropped = 0;
	sched_hand_over(w->sched);
}

/*
 * A planner stopping while others live: the runs it runs itself become
 * its claims (one fenced statement, their runs rows committed first), so
 * that they go on here, finish through the work table and the next
 * planner adopts them.  When that fails (deposed, the database lost),
 * they are cancelled and their results dropped: the next planner queues
 * them again.
 */
static void
cworker_hand_own(struct cworker *w)
{
	struct cluster_offer *o;
	const char **keys;
	size_t n = 0, nk = 0;
	struct local *l;
	struct err err;

	for (l = w->locals; l != NULL; l = l->next)
		if (l->own && l->direct != NULL) {
			n++;
			nk += l->run.nparts;
		}
	if (n == 0)
		return;
	o = xcalloc(n, sizeof *o);
	keys = xcalloc(nk + 1, sizeof *keys);
	n = nk = 0;
	for (l = w->locals; l != NULL; l = l->next) {
		if (!l->own || l->direct == NULL)
			continue;
		o[n].id = l->id;
		o[n].request = l->run.ncommits > 0 ? l->run.commits[0].request :
			       0;
		o[n].job = l->run.job->name;
		o[n].keys = &keys[nk];
		o[n].nkeys = l->run.nparts;
		o[n].attempt = l->run.attempt;
		for (size_t k = 0; k < l->run.nparts; k++)
			keys[nk++] = l->run.parts[k].key;
		n++;
	}
	if (sched_flush(w->sched) < 0)
		snprintf(err.msg, sizeof err.msg, "the state store cannot be"
			 " written");
	else if (w->drv->claim_own(w->c, o, n, &err) == 0)
		err.msg[0] = '\0';
	free(keys);
	free(o);
	if (err.msg[0] != '\0') {
		log_warn("%zu runs this planner runs itself cannot be handed"
			 " over: %s", n, err.msg);
		cworker_drop_own(w, "not handed over");
		return;
	}
	for (l = w->locals; l != NULL; l = l->next)
		if (l->own && l->direct != NULL) {
			l->own = false;
			l->direct = NULL;
		}
	log_notice("%zu runs this planner runs itself are handed over: they"
		   " go on as this node's claims, for the next planner", n);
}

/*
 * A planner that stops hands over (docs/several-hosts.md): the runs it
 * recorded but has not offered yet are offered, the runs it runs itself
 * become its claims (cworker_hand_own), then it forgets every run in
 * flight without recording anything (their runs rows stay running),
 * releases the lease and never takes it again; the next planner adopts
 * them.  Its claimed runs go on until they end or the shutdown grace is
 * over, and their results wait in the work table for that planner.
 */
void
cworker_stop(struct cworker *w)
{
	w->closing = true;
	if (w->planner_once) {
		/* deposed meanwhile: the offer fails, the runs are the
		 * planner's now all the same */
		cworker_offer(w);
		if (w->nunsent > 0)
			log_warn("%zu runs recorded but not offered are queued"
				 " again by the next planner", w->nunsent);
		cworker_start_own(w);
		cworker_hand_own(w);
		cworker_forget_all(w);
	}
	w->drv->resign(w->c);
}

bool
cworker_others_alive(struct cworker *w)
{
	const struct config *cfg = sched_config(w->sched);
	struct cluster_node *nodes = NULL;
	size_t n = 0;
	int64_t now;
	struct err err;
	bool any = false;

	if (w->drv->nodes(w->c, &nodes, &n, &now, &err) < 0) {
		log_warn("cannot list the nodes: %s; stopping as a single"
			 " host", err.msg);
		return false;
	}
	for (size_t i = 0; i < n && !any; i++)
		any = strcmp(nodes[i].name, cfg->node) != 0 &&
		      strcmp(nodes[i].role, "stopped") != 0 &&
		      !lease_node_dead(nodes[i].last_seen_ms, now, cfg->lease);
	free(nodes);
	return any;
}

void
cworker_close(struct cworker *w, void (*cb)(void *), void *arg)
{
	w->closing = true;
	w->closed_cb = cb;
	w->closed_arg = arg;
	/* not at once: this may be called from a run's done_cb inside
	 * cworker_collect, whose statements still follow on the connection;
	 * the pump sends the finishes still to send and shuts */
	if (w->nlocal == 0)
		cworker_kick(w);
}

void
cworker_resign(struct cworker *w)
{
	w->drv->resign(w->c);
}

void
cworker_cancel_all(struct cworker *w)
{
	for (struct local *l = w->locals; l != NULL; l = l->next)
		if (!l->done)
			exec_cancel(w->exec, &l->run);
}

void
cworker_free(struct cworker *w)
{
	while (w->locals != NULL)
		cworker_local_free(w, w->locals);
	w->drv->free(w->c);
	free(w->offered);
	free(w->cancels);
	free(w->log_dir);
	free(w);
}

int
cworker_running(const struct cworker *w)
{
	return w->nlocal;
}

struct cluster *
cworker_cluster(struct cworker *w)
{
	return w->c;
}
