/*
 * manifest.c - the open manifest as a state machine (manifest.h).
 *
 * Pure: memory only.  The scheduler's shell writes every change to the
 * state store (rule 1 in scheduler.c) and logs it; this file decides.
 */
#include "manifest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lineage.h"
#include "text.h"
#include "xalloc.h"

/* ---- items, requests and counters ------------------------------------ */

/* The bucket of (job, key) in the hash. */
static struct item **
manifest_bucket(struct manifest *m, const char *job, const char *key)
{
	return &m->hash[text_hash_pair(job, key) % MANIFEST_HASH_SIZE];
}

/* Is item x of job and key? */
static bool
manifest_same(const struct item *x, const char *job, const char *key)
{
	return strcmp(x->key, key) == 0 && strcmp(x->job_name, job) == 0;
}

void
manifest_init(struct manifest *m, const struct config *cfg)
{
	memset(m, 0, sizeof *m);
	m->requests.next = m->requests.prev = &m->requests;
	m->runs.next = m->runs.prev = &m->runs;
	manifest_reindex(m, cfg);
}

void
manifest_clear(struct manifest *m)
{
	while (m->requests.next != &m->requests)
		manifest_request_free(m, m->requests.next);
	free(m->job_running);
	free(m->job_counts);
	free(m->changes);
	m->job_running = NULL;
	m->job_counts = NULL;
	m->changes = NULL;
	m->nchanges = m->changecap = 0;
}

/* Resolve an item's job index against the configuration. */
static void
manifest_resolve(struct manifest *m, struct item *it)
{
	it->job = config_job_index(m->cfg, it->job_name);
	if (it->job >= 0 && part_parse_key(m->cfg->jobs[it->job].grain, it->key,
					   &it->part, NULL) < 0)
		it->job = -1;
}

void
manifest_reindex(struct manifest *m, const struct config *cfg)
{
	m->cfg = cfg;
	free(m->job_running);
	free(m->job_counts);
	m->njobs = cfg->njobs;
	m->job_running = xcalloc(m->njobs, sizeof *m->job_running);
	m->job_counts = xcalloc(m->njobs, sizeof *m->job_counts);
	for (struct request *rq = m->requests.next; rq != &m->requests;
	     rq = rq->next) {
		for (size_t i = 0; i < rq->n; i++) {
			struct item *it = rq->items[i];

			manifest_resolve(m, it);
			if (it->job >= 0 && it->state < MS_COUNT)
				m->job_counts[it->job][it->state]++;
		}
	}
	for (struct run *r = m->runs.next; r != &m->runs; r = r->next) {
		r->job = config_job_index(cfg, r->job_name);
		if (r->job >= 0)
			m->job_running[r->job]++;
	}
}

void
manifest_changes_clear(struct manifest *m)
{
	m->nchanges = 0;
}

/* Note that a rule moved an item (the shell writes and logs it). */
static struct manifest_change *
manifest_note(struct manifest *m, struct item *it, enum manifest_why why)
{
	struct manifest_change *c;

	if (m->nchanges == m->changecap) {
		m->changecap = m->changecap ? m->changecap * 2 : 16;
		m->changes = xreallocarray(m->changes, m->changecap,
					   sizeof *m->changes);
	}
	c = &m->changes[m->nchanges++];
	memset(c, 0, sizeof *c);
	c->item = it;
	c->why = why;
	return c;
}

/* Count a state change in the request's, the job's and the totals. */
static void
manifest_count(struct manifest *m, struct item *it, enum mstate from,
	       enum mstate to)
{
	struct request *rq = it->rq;
	bool counted = it->job >= 0 && (size_t)it->job < m->njobs;

	if (from != MS_COUNT) {
		rq->counts[from]--;
		if (from == MS_QUEUED || from == MS_RUNNING)
			m->nqueued--;
		if (counted)
			m->job_counts[it->job][from]--;
	}
	if (counted)
		m->job_counts[it->job][to]++;
	rq->counts[to]++;
	if (to == MS_QUEUED || to == MS_RUNNING)
		m->nqueued++;
	if (to == MS_FAILED)
		m->failed_total++;
	if (to == MS_QUEUED && it->idx < rq->cursor)
		rq->cursor = it->idx;
}

void
manifest_set(struct manifest *m, struct item *it, enum mstate to)
{
	enum mstate from = it->state;

	if (from == to)
		return;
	it->state = to;
	manifest_count(m, it, from, to);
}

bool
manifest_final(enum mstate st)
{
	return st == MS_SUCCEEDED || st == MS_FAILED || st == MS_CANCELLED ||
	       st == MS_BLOCKED;
}

struct request *
manifest_request_add(struct manifest *m, int64_t id, const char *job,
		     const char *kind, int64_t created_at)
{
	struct request *rq = xcalloc(1, sizeof *rq);

	rq->id = id;
	rq->job = xstrdup(job);
	rq->kind = xstrdup(kind);
	rq->priority = strcmp(kind, "schedule") == 0 ||
		       strcmp(kind, "catchup") == 0;
	rq->created_at = created_at;
	rq->prev = m->requests.prev;
	rq->next = &m->requests;
	m->requests.prev->next = rq;
	m->requests.prev = rq;
	return rq;
}

struct request *
manifest_request_find(struct manifest *m, int64_t id)
{
	for (struct request *rq = m->requests.next; rq != &m->requests;
	     rq = rq->next)
		if (rq->id == id)
			return rq;
	return NULL;
}

struct item *
manifest_item_add(struct manifest *m, struct request *rq, int64_t id,
		  const char *job, const char *key, int seq, bool downstream,
		  enum mstate state)
{
	struct item *it = xcalloc(1, sizeof *it);
	struct item **b;

	if (rq->n % 64 == 0)
		rq->items = xreallocarray(rq->items, rq->n + 64,
					  sizeof *rq->items);
	it->id = id;
	it->rq = rq;
	it->idx = rq->n;
	rq->items[rq->n++] = it;
	if (!downstream)
		rq->nroot = rq->n;
	it->job_name = xstrdup(job);
	snprintf(it->key, sizeof it->key, "%s", key);
	it->seq = seq;
	it->downstream = downstream;
	it->state = MS_COUNT;
	manifest_resolve(m, it);
	manifest_set(m, it, state);
	b = manifest_bucket(m, job, key);
	it->hnext = *b;
	*b = it;
	return it;
}

void
manifest_link(struct item *in, struct item *out)
{
	if (in->nouts == in->outcap) {
		in->outcap = in->outcap ? in->outcap * 2 : 2;
		in->outs = xreallocarray(in->outs, in->outcap, sizeof *in->outs);
	}
	in->outs[in->nouts++] = out;
	out->ins = xreallocarray(out->ins, out->nins + 1, sizeof *out->ins);
	out->ins[out->nins++] = in;
}

void
manifest_relink(struct manifest *m, struct request *rq)
{
	for (size_t i = 0; i < rq->n; i++) {
		struct item *o = rq->items[i];

		if (!o->downstream || o->job < 0)
			continue;
		for (size_t k = 0; k < rq->n; k++) {
			struct item *in = rq->items[k];
			part_t out[2];
			int n;

			if (in == o || in->job < 0)
				continue;
			n = lineage_map(m->cfg, in->job, in->part, o->job, out);
			for (int x = 0; x < n; x++)
				if (out[x] == o->part)
					manifest_link(in, o);
		}
	}
}

/* Remove an item from the hash. */
static void
manifest_unhash(struct manifest *m, struct item *it)
{
	for (struct item **pp = manifest_bucket(m, it->job_name, it->key); *pp;
	     pp = &(*pp)->hnext) {
		if (*pp == it) {
			*pp = it->hnext;
			return;
		}
	}
}

void
manifest_request_free(struct manifest *m, struct request *rq)
{
	if (m->rr == rq)
		m->rr = rq->next;
	rq->prev->next = rq->next;
	rq->next->prev = rq->prev;
	for (size_t i = 0; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (it->state == MS_QUEUED || it->state == MS_RUNNING)
			m->nqueued--;
		if (it->job >= 0 && (size_t)it->job < m->njobs &&
		    it->state < MS_COUNT)
			m->job_counts[it->job][it->state]--;
		manifest_unhash(m, it);
		free(it->job_name);
		free(it->blocked_on);
		free(it->ins);
		free(it->outs);
		free(it);
	}
	free(rq->items);
	free(rq->job);
	free(rq->kind);
	free(rq);
}

/* ---- downstream: settle, block, release (rule 4) ---------------------- */

/*
 * Rule 4, downstream.  An item with inputs runs only when every input
 * item of its request is final; an input that failed or is blocked blocks
 * it, naming the input.  A later successful run of that input's job and
 * partition, from any request, releases it (manifest_landed).  An input
 * cancelled, with no other input pending or bad, cancels it: it would
 * never run.
 */
bool
manifest_settle(struct manifest *m, struct item *o)
{
	struct item *bad = NULL, *gone = NULL;
	bool pending = false;
	struct manifest_change *c;
	char what[256];

	if (o->state != MS_QUEUED && o->state != MS_BLOCKED)
		return false;
	for (size_t i = 0; i < o->nins; i++) {
		struct item *in = o->ins[i];

		if (in->state == MS_QUEUED || in->state == MS_RUNNING)
			pending = true;
		else if ((in->state == MS_FAILED || in->state == MS_BLOCKED) &&
			 bad == NULL)
			bad = in;
		else if (in->state == MS_CANCELLED)
			gone = in;
	}
	if (gone != NULL && bad == NULL && !pending) {
		manifest_set(m, o, MS_CANCELLED);
		c = manifest_note(m, o, MANIFEST_INPUT_CANCELLED);
		snprintf(c->note, sizeof c->note, "cancelled: its input %s %s was"
			 " cancelled", gone->job_name, gone->key);
		return true;
	}
	if (bad != NULL && !pending) {
		snprintf(what, sizeof what, "%s %s", bad->job_name, bad->key);
		if (o->state == MS_BLOCKED && o->blocked_on &&
		    strcmp(o->blocked_on, what) == 0)
			return false;
		free(o->blocked_on);
		o->blocked_on = xstrdup(what);
		manifest_set(m, o, MS_BLOCKED);
		manifest_note(m, o, MANIFEST_BLOCKED)->cause_state = bad->state;
		return true;
	}
	if (o->state == MS_BLOCKED && bad == NULL) {
		free(o->blocked_on);
		o->blocked_on = NULL;
		manifest_set(m, o, MS_QUEUED);
		manifest_note(m, o, MANIFEST_RELEASED);
		return true;
	}
	return false;
}

/* An item became final (or was released): settle the items waiting for
 * it, transitively. */
void
manifest_settle_outs(struct manifest *m, struct item *it)
{
	for (size_t i = 0; i < it->nouts; i++)
		if (manifest_settle(m, it->outs[i]))
			manifest_settle_outs(m, it->outs[i]);
}

/* (job, key) landed through request `by`: the failed or blocked items of
 * it that others wait for count as landed, so what they blocked is
 * released, whichever request it belongs to.  Returns how many. */
int64_t
manifest_landed(struct manifest *m, const char *job, const char *key,
		struct request *by)
{
	int64_t n = 0;

	for (struct item *it = *manifest_bucket(m, job, key); it;
	     it = it->hnext) {
		struct manifest_change *c;

		if (it->state != MS_FAILED && it->state != MS_BLOCKED)
			continue;
		if (!manifest_same(it, job, key) || it->nouts == 0)
			continue;
		free(it->blocked_on);
		it->blocked_on = NULL;
		manifest_set(m, it, MS_SUCCEEDED);
		c = manifest_note(m, it, MANIFEST_LANDED);
		snprintf(c->note, sizeof c->note, "landed later by request %"
			 PRId64, by->id);
		manifest_settle_outs(m, it);
		n++;
	}
	return n;
}

/*
 * Rule 4, fail fast.  Once an item of a --fail-fast request has failed
 * for good (retries exhausted), its queued and blocked items are
 * cancelled and nothing more of it starts; runs in flight finish.
 * Returns how many were cancelled.
 */
int64_t
manifest_fail_fast(struct manifest *m, struct request *rq,
		   const struct item *bad)
{
	int64_t n = 0;

	for (size_t i = 0; i < rq->n; i++) {
		struct item *it = rq->items[i];
		struct manifest_change *c;

		if (it->state != MS_QUEUED && it->state != MS_BLOCKED)
			continue;
		manifest_set(m, it, MS_CANCELLED);
		c = manifest_note(m, it, MANIFEST_FAIL_FAST);
		snprintf(c->note, sizeof c->note, "cancelled: --fail-fast after"
			 " %s %s failed", bad->job_name, bad->key);
		n++;
	}
	return n;
}

int64_t
manifest_cancel(struct manifest *m, struct request *rq)
{
	int64_t n = 0;

	for (size_t i = 0; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (it->state != MS_QUEUED && it->state != MS_BLOCKED)
			continue;
		manifest_set(m, it, MS_CANCELLED);
		n++;
	}
	return n;
}

/* After a reload: queued or blocked items of jobs no longer in the
 * configuration can never run; they are cancelled (and what waits for
 * them settles) so that their requests finish. */
int64_t
manifest_cancel_unconfigured(struct manifest *m)
{
	int64_t n = 0;

	for (struct request *rq = m->requests.next; rq != &m->requests;
	     rq = rq->next) {
		for (size_t i = 0; i < rq->n; i++) {
			struct item *it = rq->items[i];

			if (it->job >= 0 || (it->state != MS_QUEUED &&
					     it->state != MS_BLOCKED))
				continue;
			manifest_set(m, it, MS_CANCELLED);
			snprintf(manifest_note(m, it, MANIFEST_UNCONFIGURED)->note,
				 sizeof m->changes[0].note, "cancelled: the job"
				 " is no longer in the configuration");
			manifest_settle_outs(m, it);
			n++;
		}
	}
	return n;
}

/*
 * Rule 4, retry.  `retry` queues a request's failed, blocked and
 * cancelled items again as the same request (reopened in the store and in
 * memory, attempts counted afresh), never while a run of it is in flight
 * (the shell refuses that before calling manifest_retry).
 */
bool
manifest_retriable(const struct item *it)
{
	return it->job >= 0 && (it->state == MS_FAILED ||
				it->state == MS_BLOCKED ||
				it->state == MS_CANCELLED);
}

int64_t
manifest_retry(struct manifest *m, struct request *rq)
{
	int64_t n = 0;

	for (size_t i = 0; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (!manifest_retriable(it))
			continue;
		it->attempts = 0;
		it->not_before = 0;
		free(it->blocked_on);
		it->blocked_on = NULL;
		manifest_set(m, it, MS_QUEUED);
		n++;
	}
	return n;
}

/* Retries: a run that failed at attempt `attempts` (1 for the first) is
 * tried again while attempts <= retries, unless the daemon is stopping. */
bool
manifest_retries(const struct job_def *j, int attempts, bool draining)
{
	return attempts <= j->retries && !draining;
}

/* Backoff before retry number `attempts`: retry_backoff, doubled after
 * each further attempt, up to a day. */
int64_t
manifest_backoff_ms(const struct job_def *j, int attempts)
{
	int64_t backoff = j->retry_backoff * 1000;

	for (int k = 1; k < attempts && backoff < 86400000; k++)
		backoff *= 2;
	return backoff;
}

/* ---- dispatch: caps and order (rules 2, 3 and 5) ---------------------- */

/*
 * Rule 2, caps.  At most cfg->max_concurrency runs in flight, at most
 * job->concurrency of one job, at most max_connections on one PostgreSQL
 * warehouse, at most a request's own concurrency (backfill --concurrency,
 * never above its job's) of that request's runs, its downstream items'
 * included, and never two runs of the same job and partition at once: a
 * partition queued while it runs waits for it.  A run carrying items of
 * several requests (rule 5) counts once against each of them and takes no
 * item of a request at its cap.  A throttled warehouse (throttle.h) starts
 * nothing; a paused job neither.
 */

/* Is a run of (job, key) in flight? */
static bool
manifest_partition_running(struct manifest *m, const struct item *it)
{
	for (struct item *x = *manifest_bucket(m, it->job_name, it->key); x;
	     x = x->hnext)
		if (x->state == MS_RUNNING && manifest_same(x, it->job_name,
							    it->key))
			return true;
	return false;
}

/* Is a job paused, by the gate? */
static bool
manifest_paused(const struct manifest_gate *g, int job)
{
	return job >= 0 && g != NULL && g->paused != NULL &&
	       g->paused(g->data, job);
}

/* May this job start one more run now (its cap, its warehouse's)? */
static bool
manifest_job_free(struct manifest *m, const struct manifest_gate *g, int job)
{
	const struct job_def *j;
	const struct warehouse_def *w;
	int n = 0;

	if (job < 0)
		return false;
	j = &m->cfg->jobs[job];
	if ((size_t)job < m->njobs && m->job_running[job] >= j->concurrency)
		return false;
	if (j->warehouse < 0)
		return true;
	w = &m->cfg->warehouses[j->warehouse];
	if (w->kind == WH_POSTGRES) {
		/* its runs in flight: at most max_concurrency, a cheap scan */
		for (struct run *r = m->runs.next; r != &m->runs; r = r->next)
			if (r->job >= 0 &&
			    m->cfg->jobs[r->job].warehouse == j->warehouse)
				n++;
		if (n >= w->max_connections)
			return false;
	}
	return g == NULL || g->throttled == NULL ||
	       !g->throttled(g->data, j->warehouse);
}

/* Is an item ready to run (not counting its job's cap)?  A retry not yet
 * due moves *wake earlier. */
static bool
manifest_ready(struct manifest *m, const struct manifest_gate *g,
	       struct item *it, int64_t now, int64_t *wake)
{
	if (it->state != MS_QUEUED || it->job < 0)
		return false;
	for (size_t i = 0; i < it->nins; i++)
		if (it->ins[i]->state != MS_SUCCEEDED)
			return false;
	if (it->not_before > now) {
		if (it->not_before < *wake)
			*wake = it->not_before;
		return false;
	}
	if (manifest_paused(g, it->job))
		return false;
	return !manifest_partition_running(m, it);
}

/* Is a request running as many runs as its own cap allows? */
static bool
manifest_at_cap(const struct request *rq)
{
	return rq->cap > 0 && rq->nruns >= rq->cap;
}

/* The first runnable item of a request in seq order, or NULL. */
static struct item *
manifest_request_next(struct manifest *m, const struct manifest_gate *g,
		      struct request *rq, int64_t now, int64_t *wake)
{
	while (rq->cursor < rq->n && rq->items[rq->cursor]->state != MS_QUEUED)
		rq->cursor++;
	if (manifest_at_cap(rq))
		return NULL;
	for (size_t i = rq->cursor; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (it->state != MS_QUEUED)
			continue;
		if (!manifest_job_free(m, g, it->job) ||
		    manifest_paused(g, it->job)) {
			if (!it->downstream)
				i = rq->nroot - 1; /* every root is this job's */
			continue;
		}
		if (manifest_ready(m, g, it, now, wake))
			return it;
	}
	return NULL;
}

/*
 * Rule 3, order.  Requests of kind schedule and catchup are served before
 * operator requests; operator requests share the pool round-robin; within
 * a request, items run in seq order (oldest first, or newest with
 * --reverse; downstream items after the items they wait for).
 */
static struct item *
manifest_pick(struct manifest *m, const struct manifest_gate *g, int64_t now,
	      int64_t *wake)
{
	struct request *rq, *start;
	struct item *it = NULL;

	for (rq = m->requests.next; rq != &m->requests && !it; rq = rq->next)
		if (rq->priority)
			it = manifest_request_next(m, g, rq, now, wake);
	if (it != NULL || m->requests.next == &m->requests)
		return it;
	start = m->rr;
	if (start == NULL || start == &m->requests)
		start = m->requests.next;
	rq = start;
	do {
		if (rq != &m->requests && !rq->priority &&
		    (it = manifest_request_next(m, g, rq, now, wake)) != NULL) {
			m->rr = rq->next;
			return it;
		}
		rq = rq->next;
	} while (rq != start);
	return NULL;
}

/* Add an item to a run being picked. */
static void
manifest_run_add(struct run *r, struct item *it)
{
	if (r->nitems == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4;
		r->items = xreallocarray(r->items, r->cap, sizeof *r->items);
	}
	r->items[r->nitems++] = it;
}

/*
 * Rule 5, one run for many.  Items of several requests for the same job
 * and partition that are ready at the same time run once, together.  A
 * batch job's ready partitions of one request run as one batch.
 */
static void
manifest_gather(struct manifest *m, const struct manifest_gate *g,
		struct run *r, struct item *it, int64_t now)
{
	int64_t wake = INT64_MAX;
	struct item *x;

	for (size_t i = 0; r->batch && i < it->rq->nroot; i++) {
		x = it->rq->items[i];
		if (x != it && x->job == it->job &&
		    manifest_ready(m, g, x, now, &wake))
			manifest_run_add(r, x);
	}
	for (x = *manifest_bucket(m, it->job_name, it->key); x && !r->batch;
	     x = x->hnext) {
		if (x == it || !manifest_same(x, it->job_name, it->key))
			continue;
		if (!manifest_at_cap(x->rq) && manifest_ready(m, g, x, now, &wake))
			manifest_run_add(r, x);
	}
}

/* The next run to start under the caps, in order, or NULL (*wake: when a
 * retry comes due, if sooner).  The run is not started yet: the shell
 * records it, then calls manifest_run_start (or manifest_run_free). */
struct run *
manifest_next_run(struct manifest *m, const struct manifest_gate *g,
		  int64_t now, int64_t *wake)
{
	struct item *it;
	struct run *r;

	if (m->nrunning >= m->cfg->max_concurrency)
		return NULL;
	if ((it = manifest_pick(m, g, now, wake)) == NULL)
		return NULL;
	r = xcalloc(1, sizeof *r);
	r->job = it->job;
	snprintf(r->job_name, sizeof r->job_name, "%s", it->job_name);
	r->batch = m->cfg->jobs[it->job].batch && !it->downstream;
	manifest_run_add(r, it);
	manifest_gather(m, g, r, it, now);
	return r;
}

/* Count a run against the requests of its items: a batch run's items are
 * all of one request, an ordinary run's each of another. */
static void
manifest_count_requests(struct run *r, int delta)
{
	for (size_t i = 0; i < r->nitems; i++)
		if (i == 0 || !r->batch)
			r->items[i]->rq->nruns += delta;
}

void
manifest_run_start(struct manifest *m, struct run *r)
{
	for (size_t i = 0; i < r->nitems; i++) {
		r->items[i]->attempts++;
		r->items[i]->run = r;
		manifest_set(m, r->items[i], MS_RUNNING);
	}
	r->prev = m->runs.prev;
	r->next = &m->runs;
	m->runs.prev->next = r;
	m->runs.prev = r;
	m->nrunning++;
	if (r->job >= 0 && (size_t)r->job < m->njobs)
		m->job_running[r->job]++;
	manifest_count_requests(r, 1);
}

void
manifest_run_unstart(struct manifest *m, struct run *r)
{
	manifest_run_finish(m, r);
	for (size_t i = 0; i < r->nitems; i++) {
		r->items[i]->attempts--;
		r->items[i]->run = NULL;
		manifest_set(m, r->items[i], MS_QUEUED);
	}
}

void
manifest_run_result(struct manifest *m, struct run *r, enum mstate result,
		    const struct job_def *retry_job, int64_t now)
{
	for (size_t i = 0; i < r->nitems; i++) {
		struct item *x = r->items[i];

		x->run = NULL;
		if (r->requeue && x->attempts > 0)
			x->attempts--;
		if (retry_job != NULL)
			x->not_before = now + manifest_backoff_ms(retry_job,
								  x->attempts);
		manifest_set(m, x, result);
	}
}

void
manifest_run_not_started(struct manifest *m, struct run *r,
			 int64_t not_before)
{
	for (size_t i = 0; i < r->nitems; i++) {
		struct item *x = r->items[i];

		x->run = NULL;
		if (x->attempts > 0)
			x->attempts--;
		x->not_before = not_before;
		manifest_set(m, x, MS_QUEUED);
	}
}

void
manifest_run_finish(struct manifest *m, struct run *r)
{
	if (r->next == NULL)
		return; /* never started */
	m->nrunning--;
	if (r->job >= 0 && (size_t)r->job < m->njobs &&
	    m->job_running[r->job] > 0)
		m->job_running[r->job]--;
	manifest_count_requests(r, -1);
	r->prev->next = r->next;
	r->next->prev = r->prev;
	r->next = r->prev = NULL;
}

void
manifest_run_free(struct run *r)
{
	if (r == NULL)
		return;
	free(r->items);
	free(r);
}
