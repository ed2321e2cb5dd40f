/*
 * pick.c - dispatch's choice (pick.h): the next run to start under the
 * caps, in the order, with what rides along.  Pure, like manifest.c.
 */
#include "pick.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/*
 * SCHED-2, caps.  At most cfg->max_concurrency runs in flight, at most
 * job->concurrency of one job, at most max_connections on one PostgreSQL
 * warehouse, at most a request's own concurrency (backfill --concurrency,
 * never above its job's) of that request's runs, its downstream items'
 * included, and never two runs of the same job and partition at once: a
 * partition queued while it runs waits for it.  A run carrying items of
 * several requests (SCHED-5) counts once against each of them and takes no
 * item of a request at its cap.  A throttled warehouse (throttle.h) starts
 * nothing; a paused job neither.
 *
 * What counts against each cap is a run's slots (manifest_run_slots):
 * one, but a ClickHouse batch that fills its stage by several statements
 * at once holds one slot per statement (pick_width), as many as every
 * cap has free when it starts, so the caps bound the statements in
 * flight.
 */

/* Is a run of (job, key) in flight? */
static bool
pick_partition_running(struct manifest *m, const struct item *it)
{
	for (struct item *x = *manifest_bucket(m, it->job_name, it->key); x;
	     x = x->hnext)
		if (x->state == MS_RUNNING &&
		    manifest_same(x, it->job_name, it->key))
			return true;
	return false;
}

/*
 * SCHED-8, running totals.  A job in its own upstream (job_def.
 * self_lookback N) reads its N partitions before each one: an item of it
 * does not start while one of those N partitions is queued or running in
 * any request (its own request's wait for them already, plan.h
 * Cascades), so a day's schedule run waits for the day before however
 * many requests hold them, and concurrency above 1 never runs two of
 * them out of order.
 */
static bool
pick_earlier_pending(struct manifest *m, const struct item *it)
{
	const struct job_def *j = &m->cfg->jobs[it->job];
	char key[CAL_KEY_MAX];

	for (int k = 1; k <= j->self_lookback; k++) {
		cal_key(job_cal(j), it->part - k, key);
		for (struct item *x = *manifest_bucket(m, it->job_name, key); x;
		     x = x->hnext)
			if ((x->state == MS_QUEUED || x->state == MS_RUNNING) &&
			    manifest_same(x, it->job_name, key))
				return true;
	}
	return false;
}

/*
 * SCHED-9, a running total's batch.  A job in its own upstream with
 * batch (true or N) runs the consecutive days of its part of one
 * request as one batch, in time order: a chunk is the first queued day
 * ready by SCHED-8 (the head) and the request's days of the job right
 * after it, one partition apart, at most batch_size of them with
 * batch: N.  Within the chunk a day's wait for the days before it in
 * the same chunk counts as satisfied (the batch's SQL computes them
 * together, set-based, seeded from the day before the head, landed).
 * The chunk ends before a day that is not queued (blocked, done, in
 * flight elsewhere), not due yet (a retry's backoff) or that has an
 * input that failed or is blocked (it is to be blocked).  The head
 * does not start while any day of its chunk still waits for another
 * input (its fact day, say): the batch waits for all of them, not a
 * shorter batch now.  Without batch each day is a run (SCHED-8 alone).
 */
static bool
pick_self_batch(const struct manifest *m, int job)
{
	const struct job_def *j = &m->cfg->jobs[job];

	return j->batch && j->self_lookback > 0;
}

/* Is input `in` of chunk member x one of the chunk's days before x
 * (head: the chunk's first item)? */
static bool
pick_in_chunk(const struct item *head, const struct item *x,
	      const struct item *in)
{
	return in->rq == head->rq && in->job == head->job &&
	       in->idx >= head->idx && in->idx < x->idx;
}

/* Add an item to a run being picked. */
static void
pick_run_add(struct run *r, struct item *it)
{
	if (r->nitems == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4;
		r->items = xreallocarray(r->items, r->cap, sizeof *r->items);
	}
	r->items[r->nitems++] = it;
}

/*
 * The chunk of a running total's batch from head (SCHED-9): its length
 * (1 and more), or 0 when one of its days still waits for an input
 * outside the chunk.  into: the run to add the chunk's items after the
 * head to, or NULL.
 */
static size_t
pick_chunk(struct manifest *m, struct item *head, int64_t now,
	   struct run *into)
{
	const struct request *rq = head->rq;
	size_t size = (size_t)m->cfg->jobs[head->job].batch_size, n = 1;
	const struct item *last = head;

	for (size_t i = head->idx + 1; i < rq->n; i++) {
		struct item *x = rq->items[i];
		bool bad = false;

		if ((size > 0 && n >= size) || x->job != head->job ||
		    x->part != last->part + 1 || x->state != MS_QUEUED ||
		    x->not_before > now || pick_partition_running(m, x))
			break;
		for (size_t k = 0; k < x->nins; k++) {
			const struct item *in = x->ins[k];

			if (manifest_landed_state(in->state) ||
			    pick_in_chunk(head, x, in))
				continue;
			if (!manifest_final(in->state))
				return 0; /* still to land: the batch waits */
			bad = true;       /* never lands: x is to be blocked */
		}
		if (bad)
			break;
		if (into != NULL)
			pick_run_add(into, x);
		last = x;
		n++;
	}
	return n;
}

/* Is a job paused, by the gate? */
static bool
pick_paused(const struct pick_gate *g, int job)
{
	return job >= 0 && g != NULL && g->paused != NULL &&
	       g->paused(g->data, job);
}

int64_t
pick_wh_cap(const struct warehouse_def *w)
{
	return w->kind == WH_POSTGRES || w->kind == WH_CLICKHOUSE ?
	    (int64_t)w->max_connections : -1;
}

/* The slots the runs in flight on warehouse wh hold against its cap (the
 * runs handed ahead hold none yet): a cheap scan. */
static int64_t
pick_wh_used(const struct manifest *m, int wh)
{
	int64_t n = 0;

	for (const struct run *r = m->runs.next; r != &m->runs; r = r->next)
		if (r->job >= 0 && !r->deck &&
		    m->cfg->jobs[r->job].warehouse == wh)
			n += manifest_run_slots(r);
	return n;
}

/* May this job start one more run now (its cap, its warehouse's)?  deck:
 * the job pick_next_deck picks for, or -1 (pick_next_run). */
static bool
pick_job_free(struct manifest *m, const struct pick_gate *g, int job,
	      int deck)
{
	const struct job_def *j;

	if (job < 0)
		return false;
	j = &m->cfg->jobs[job];
	if (deck >= 0) {
		/* pick_next_deck: one run more than the cap, of its job only,
		 * while none is handed ahead */
		if (job != deck || m->job_deck[job] > 0)
			return false;
	} else if ((size_t)job < m->njobs &&
		   m->job_running[job] - m->job_deck[job] >= j->concurrency) {
		return false;
	}
	if (j->warehouse < 0)
		return true;
	if (pick_wh_cap(&m->cfg->warehouses[j->warehouse]) >= 0 &&
	    pick_wh_used(m, j->warehouse) >=
	    pick_wh_cap(&m->cfg->warehouses[j->warehouse]))
		return false;
	return g == NULL || g->throttled == NULL ||
	       !g->throttled(g->data, j->warehouse);
}

/* Is an item ready to run (not counting its job's cap)?  A retry not yet
 * due moves *wake earlier. */
static bool
pick_ready(struct manifest *m, const struct pick_gate *g, struct item *it,
	   int64_t now, int64_t *wake)
{
	if (it->state != MS_QUEUED || it->job < 0)
		return false;
	for (size_t i = 0; i < it->nins; i++)
		if (!manifest_landed_state(it->ins[i]->state))
			return false;
	if (it->not_before > now) {
		if (it->not_before < *wake)
			*wake = it->not_before;
		return false;
	}
	if (pick_paused(g, it->job))
		return false;
	if (m->cfg->jobs[it->job].self_lookback > 0 &&
	    pick_earlier_pending(m, it))
		return false;
	if (pick_partition_running(m, it))
		return false;
	return !pick_self_batch(m, it->job) || pick_chunk(m, it, now, NULL) > 0;
}

/* Is a request running as many runs as its own cap allows (one more
 * for pick_next_deck: deck >= 0)? */
static bool
pick_at_cap(const struct request *rq, int deck)
{
	return rq->cap > 0 && rq->nruns >= rq->cap + (deck >= 0);
}

/*
 * A fail-fast request's runs are never handed ahead (pick_next_deck): a
 * run handed ahead starts on its worker the moment the run before it
 * ends, before the loop learns that run failed, so it would start after
 * the request's first failure, which must start nothing more.  Taking it
 * back at the failure (exec_withdraw) would come too late for the run
 * before it on the same worker.
 */
static bool
pick_no_deck(const struct request *rq, int deck)
{
	return deck >= 0 && rq->fail_fast;
}

/* The first runnable item of a request in seq order, or NULL. */
static struct item *
pick_request_next(struct manifest *m, const struct pick_gate *g, int deck,
		  struct request *rq, int64_t now, int64_t *wake)
{
	while (rq->cursor < rq->n && rq->items[rq->cursor]->state != MS_QUEUED)
		rq->cursor++;
	if (pick_at_cap(rq, deck) || pick_no_deck(rq, deck))
		return NULL;
	for (size_t i = rq->cursor; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (it->state != MS_QUEUED)
			continue;
		if (!pick_job_free(m, g, it->job, deck) ||
		    pick_paused(g, it->job)) {
			if (!it->downstream)
				i = rq->nroot -
				    1; /* every root is this job's */
			continue;
		}
		if (pick_ready(m, g, it, now, wake))
			return it;
	}
	return NULL;
}

/*
 * SCHED-3, order.  Requests of kind schedule and catchup are served before
 * operator requests; operator requests share the pool round-robin; within
 * a request, items run in seq order (oldest first, or newest with
 * --reverse; downstream items after the items they wait for).
 */
static struct item *
pick_item(struct manifest *m, const struct pick_gate *g, int deck,
	  int64_t now, int64_t *wake)
{
	struct request *rq, *start;
	struct item *it = NULL;

	for (rq = m->requests.next; rq != &m->requests && !it; rq = rq->next)
		if (rq->priority)
			it = pick_request_next(m, g, deck, rq, now, wake);
	if (it != NULL || m->requests.next == &m->requests)
		return it;
	start = m->rr;
	if (start == NULL || start == &m->requests)
		start = m->requests.next;
	rq = start;
	do {
		if (rq != &m->requests && !rq->priority &&
		    (it = pick_request_next(m, g, deck, rq, now,
					    wake)) != NULL) {
			m->rr = rq->next;
			return it;
		}
		rq = rq->next;
	} while (rq != start);
	return NULL;
}

/* Must a batch of job j hold consecutive partitions only?  On ClickHouse
 * the stage is filled once over the batch's interval, so a partition of
 * that interval outside the batch (queued later, running elsewhere) would
 * be filled into the stage too.  A running total's batch (SCHED-9)
 * computes its days set-based over its interval, seeded from the day
 * before it: a gap would be computed from a day not built yet. */
static bool
pick_contiguous(const struct manifest *m, int job)
{
	int w = m->cfg->jobs[job].warehouse;

	if (pick_self_batch(m, job))
		return true;
	return w >= 0 && m->cfg->warehouses[w].kind == WH_CLICKHOUSE;
}

void
pick_run_trim(const struct manifest *m, struct run *r)
{
	size_t k = 1;

	if (r->batch && r->nitems >= 2 && pick_contiguous(m, r->job)) {
		while (k < r->nitems &&
		       (r->items[k]->part == r->items[k - 1]->part + 1 ||
			r->items[k]->part == r->items[k - 1]->part - 1))
			k++;
		r->nitems = k;
	}
	/* not started yet: fewer partitions, no more statements */
	if (r->width > (int)r->nitems)
		r->width = r->nitems > 1 ? (int)r->nitems : 0;
}

/*
 * SCHED-5, one run for many.  Items of several requests for the same job
 * and partition that are ready at the same time run once, together.  A
 * batch job's ready partitions of one request run as one batch: all of
 * them (batch: true) or at most batch_size (batch: N, a chunk), the
 * first in seq order, consecutive partitions only on ClickHouse (a
 * running total's: SCHED-9, pick_chunk).  So do
 * its downstream items of one request that are ready at once (the weeks
 * of a batch of days, say), when there are two or more.  Items
 * before `it` in seq order are not ready (pick_request_next took the
 * first that is).
 */
static void
pick_gather(struct manifest *m, const struct pick_gate *g, int deck,
	    struct run *r, struct item *it, int64_t now)
{
	int64_t wake = INT64_MAX;
	size_t size = r->batch ? (size_t)m->cfg->jobs[it->job].batch_size : 0;
	bool contiguous = r->batch && pick_contiguous(m, it->job);
	size_t end = it->downstream ? it->rq->n : it->rq->nroot;
	struct item *x;

	if (r->batch && pick_self_batch(m, it->job)) {
		pick_chunk(m, it, now, r); /* SCHED-9 */
		end = 0;
	}
	for (size_t i = it->idx + 1; r->batch && i < end; i++) {
		struct item *last = r->items[r->nitems - 1];

		if (size > 0 && r->nitems >= size)
			break;
		x = it->rq->items[i];
		/* a downstream batch: the job's items ready now (its other
		 * items wait for other inputs: not a gap) */
		if (it->downstream && x->job != it->job)
			continue;
		if (x->job == it->job && pick_ready(m, g, x, now, &wake) &&
		    (!contiguous || x->part == last->part + 1 ||
		     x->part == last->part - 1))
			pick_run_add(r, x);
		else if (contiguous)
			break;
	}
	/* a downstream item alone is no batch: it may ride with the same
	 * partition of other requests (below) */
	if (r->batch && it->downstream && r->nitems == 1)
		r->batch = false;
	for (x = *manifest_bucket(m, it->job_name, it->key); x && !r->batch;
	     x = x->hnext) {
		if (x == it || !manifest_same(x, it->job_name, it->key))
			continue;
		if (!pick_at_cap(x->rq, deck) && !pick_no_deck(x->rq, deck) &&
		    pick_ready(m, g, x, now, &wake))
			pick_run_add(r, x);
	}
}

/* The smaller of a and b. */
static int64_t
pick_min(int64_t a, int64_t b)
{
	return b < a ? b : a;
}

/*
 * SCHED-2, a batch's width.  On ClickHouse 18.16 an INSERT writes its
 * parts (one a partition) one after another, so a batch fills its stage
 * by several statements at once, each over a consecutive share of its
 * partitions (exec_wap_fill.c).  Each statement holds a slot of every
 * cap: the width is the run's partitions, but at most what the job's
 * concurrency, max_concurrency, its warehouse's max_connections and
 * the request's own concurrency have free now (the runs handed ahead do
 * not count, as below), at least the one slot pick_job_free found.  A
 * running total's batch (SCHED-9) computes its days set-based from the
 * day before, in one statement; a run handed ahead (deck >= 0) and a run of the
 * several hosts (one_slot: the cluster's workers run what they claim
 * with one slot) hold one slot.
 */
static void
pick_width(struct manifest *m, const struct pick_gate *g, int deck,
	   struct run *r)
{
	const struct job_def *j = &m->cfg->jobs[r->job];
	const struct warehouse_def *w;
	int64_t width = (int64_t)r->nitems, busy = 0;

	r->width = 0;
	if (!r->batch || r->nitems < 2 || deck >= 0 || j->warehouse < 0 ||
	    pick_self_batch(m, r->job) || (g != NULL && g->one_slot))
		return;
	w = &m->cfg->warehouses[j->warehouse];
	if (w->kind != WH_CLICKHOUSE)
		return;
	if ((size_t)r->job < m->njobs)
		busy = m->job_running[r->job] - m->job_deck[r->job];
	width = pick_min(width, j->concurrency - busy);
	width = pick_min(width, m->cfg->max_concurrency -
			 (m->nrunning - m->ndeck));
	if (pick_wh_cap(w) >= 0)
		width = pick_min(width, pick_wh_cap(w) -
				 pick_wh_used(m, j->warehouse));
	for (size_t i = 0; i < r->nitems; i++) {
		const struct request *rq = r->items[i]->rq;

		if (rq->cap > 0)
			width = pick_min(width, rq->cap - rq->nruns);
	}
	r->width = width > 1 ? (int)width : 0;
}

/* The next run to start under the caps, in order, or NULL (*wake: when a
 * retry comes due, if sooner); deck: the job pick_next_deck hands a run
 * ahead for, or -1.  The run is not started yet: the shell records it,
 * then calls manifest_run_start (or manifest_run_free). */
static struct run *
pick_run(struct manifest *m, const struct pick_gate *g, int deck,
	 int64_t now, int64_t *wake)
{
	struct item *it;
	struct run *r;

	if ((it = pick_item(m, g, deck, now, wake)) == NULL)
		return NULL;
	r = xcalloc(1, sizeof *r);
	r->job = it->job;
	snprintf(r->job_name, sizeof r->job_name, "%s", it->job_name);
	r->batch = m->cfg->jobs[it->job].batch;
	pick_run_add(r, it);
	pick_gather(m, g, deck, r, it, now);
	pick_width(m, g, deck, r);
	return r;
}

struct run *
pick_next_run(struct manifest *m, const struct pick_gate *g, int64_t now,
	      int64_t *wake)
{
	if (m->nrunning - m->ndeck >= m->cfg->max_concurrency)
		return NULL;
	return pick_run(m, g, -1, now, wake);
}

struct run *
pick_next_deck(struct manifest *m, const struct pick_gate *g, int job,
	       int64_t now, int64_t *wake)
{
	struct run *r;

	if (job < 0 || (size_t)job >= m->njobs || m->job_deck[job] > 0)
		return NULL;
	r = pick_run(m, g, job, now, wake);
	if (r != NULL)
		r->deck = true;
	return r;
}
