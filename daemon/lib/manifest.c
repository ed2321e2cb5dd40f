/*
 * manifest.c - the open manifest as a state machine (manifest.h).
 *
 * Pure: memory only.  The scheduler's shell writes every change to the
 * state store (SCHED-1 in scheduler.c) and logs it; this file decides.
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

/* The hash chain holding (job, key). */
struct item **
manifest_bucket(struct manifest *m, const char *job, const char *key)
{
	return &m->hash[text_hash_pair(job, key) % MANIFEST_HASH_SIZE];
}

/* Is item x of job and key? */
bool
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
	free(m->job_deck);
	free(m->job_counts);
	free(m->job_parts);
	free(m->changes);
	m->job_running = NULL;
	m->job_deck = NULL;
	m->job_counts = NULL;
	m->job_parts = NULL;
	m->changes = NULL;
	m->nchanges = m->changecap = 0;
}

/* The states counted by partition (job_parts). */
static bool
manifest_distinct(enum mstate st)
{
	return st == MS_QUEUED || st == MS_RUNNING || st == MS_BLOCKED;
}

/* Is an item of its job and partition other than it, from x on in its
 * hash chain, in state st? */
static bool
manifest_sibling_in(const struct item *x, const struct item *it,
		    enum mstate st)
{
	for (; x; x = x->hnext)
		if (x != it && x->state == st &&
		    manifest_same(x, it->job_name, it->key))
			return true;
	return false;
}

/* Count item it leaving state from (MS_NONE: none) for state to in its
 * job's partitions: a partition is in a state while any of its items
 * is. */
static void
manifest_count_part(struct manifest *m, struct item *it, enum mstate from,
		    enum mstate to)
{
	struct item *first = *manifest_bucket(m, it->job_name, it->key);

	if (from != MS_NONE && manifest_distinct(from) &&
	    !manifest_sibling_in(first, it, from))
		m->job_parts[it->job][from]--;
	if (to != MS_NONE && manifest_distinct(to) &&
	    !manifest_sibling_in(first, it, to))
		m->job_parts[it->job][to]++;
}

/* Resolve an item's job index against the configuration. */
static void
manifest_resolve(struct manifest *m, struct item *it)
{
	it->job = config_job_index(m->cfg, it->job_name);
	if (it->job >= 0 && cal_parse_key(&m->cfg->jobs[it->job].cal, it->key,
					  &it->part, NULL) < 0)
		it->job = -1;
}

/* nrunning, job_running and a request's nruns count slots: as many as
 * runs but for a wide ClickHouse batch (a run handed ahead, adopted or
 * of the several hosts has width 0). */
int
manifest_run_slots(const struct run *r)
{
	return r->width > 1 ? r->width : 1;
}

void
manifest_reindex(struct manifest *m, const struct config *cfg)
{
	m->cfg = cfg;
	free(m->job_running);
	free(m->job_deck);
	free(m->job_counts);
	free(m->job_parts);
	m->njobs = cfg->njobs;
	m->job_running = xcalloc(m->njobs, sizeof *m->job_running);
	m->job_deck = xcalloc(m->njobs, sizeof *m->job_deck);
	m->job_counts = xcalloc(m->njobs, sizeof *m->job_counts);
	m->job_parts = xcalloc(m->njobs, sizeof *m->job_parts);
	for (struct request *rq = m->requests.next; rq != &m->requests;
	     rq = rq->next) {
		for (size_t i = 0; i < rq->n; i++) {
			struct item *it = rq->items[i];

			manifest_resolve(m, it);
			if (it->job >= 0 && it->state < MS_COUNT)
				m->job_counts[it->job][it->state]++;
		}
	}
	/* each partition once: by the last of its items in its chain */
	for (size_t b = 0; b < MANIFEST_HASH_SIZE; b++)
		for (struct item *it = m->hash[b]; it; it = it->hnext)
			if (manifest_distinct(it->state) && it->job >= 0 &&
			    !manifest_sibling_in(it->hnext, it, it->state))
				m->job_parts[it->job][it->state]++;
	for (struct run *r = m->runs.next; r != &m->runs; r = r->next) {
		r->job = config_job_index(cfg, r->job_name);
		if (r->job >= 0)
			m->job_running[r->job] += manifest_run_slots(r);
		if (r->job >= 0 && r->deck)
			m->job_deck[r->job]++;
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
		m->changes =
		    xreallocarray(m->changes, m->changecap, sizeof *m->changes);
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

	if (from != MS_NONE) {
		rq->counts[from]--;
		if (from == MS_QUEUED || from == MS_RUNNING)
			m->nqueued--;
		if (counted)
			m->job_counts[it->job][from]--;
	}
	if (counted) {
		m->job_counts[it->job][to]++;
		manifest_count_part(m, it, from, to);
	}
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

	/* MS_NONE and MS_LATE are the views' states, never an item's: a
	 * caller passing one is a bug, and the counts have no slot for it */
	if ((unsigned)to >= MS_COUNT)
		abort();
	if (from == to)
		return;
	it->state = to;
	manifest_count(m, it, from, to);
}

bool
manifest_final(enum mstate st)
{
	return st == MS_SUCCEEDED || st == MS_FAILED || st == MS_CANCELLED ||
	       st == MS_BLOCKED || st == MS_SKIPPED;
}

bool
manifest_landed_state(enum mstate st)
{
	return st == MS_SUCCEEDED || st == MS_SKIPPED;
}

void
manifest_skip(struct manifest *m, struct item *it)
{
	it->attempts++;
	it->cut = CUTOFF_IN_SKIPPED;
	manifest_set(m, it, MS_SKIPPED);
}

struct request *
manifest_request_add(struct manifest *m, int64_t id, const char *job,
		     const char *kind, int64_t created_at)
{
	struct request *rq = xcalloc(1, sizeof *rq);

	rq->id = id;
	rq->job = xstrdup(job);
	rq->kind = xstrdup(kind);
	rq->priority =
	    strcmp(kind, "schedule") == 0 || strcmp(kind, "catchup") == 0;
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
		rq->items =
		    xreallocarray(rq->items, rq->n + 64, sizeof *rq->items);
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
	it->cut = state == MS_SKIPPED ? CUTOFF_IN_SKIPPED : CUTOFF_IN_UNKNOWN;
	it->state = MS_NONE; /* not set yet: manifest_set counts it */
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
		in->outs =
		    xreallocarray(in->outs, in->outcap, sizeof *in->outs);
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

		/* a running total's own partitions wait for those before
		 * them too (plan.h, Cascades) */
		if (o->job < 0 || (!o->downstream &&
				   m->cfg->jobs[o->job].self_lookback == 0))
			continue;
		for (size_t k = 0; k < rq->n; k++) {
			struct item *in = rq->items[k];
			struct part_range r;

			if (in == o || in->job < 0)
				continue;
			r = lineage_range(m->cfg, in->job, in->part, o->job);
			if (o->part >= r.first && o->part <= r.last)
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
		    it->state < MS_COUNT) {
			m->job_counts[it->job][it->state]--;
			manifest_count_part(m, it, it->state, MS_NONE);
		}
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

/* ---- downstream: settle, block, release (SCHED-4) ---------------------- */

/*
 * SCHED-4, downstream.  An item with inputs runs only when every input
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
		snprintf(c->note, sizeof c->note,
			 "cancelled: its input %s %s was"
			 " cancelled",
			 gone->job_name, gone->key);
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
		snprintf(c->note, sizeof c->note,
			 "landed later by request %" PRId64, by->id);
		manifest_settle_outs(m, it);
		n++;
	}
	return n;
}

struct item *
manifest_mark_running(struct manifest *m, const char *job, const char *key)
{
	for (struct item *it = *manifest_bucket(m, job, key); it;
	     it = it->hnext)
		if (it->state == MS_RUNNING && manifest_same(it, job, key))
			return it;
	return NULL;
}

/*
 * SCHED-4, a mark.  The operator's word stands: a queued or blocked item
 * of the marked partition in another request would overwrite it, so it
 * leaves its queue.  It landed (what waits for it in its request runs as
 * after any landing), unless the mark says --no-downstream: then it is
 * cancelled and what waits for it settles (cancelled when nothing else
 * of it is pending or failed), so that nothing downstream runs because
 * of the mark.  A failed item of it is left to manifest_landed (released
 * by a mark with downstream, kept failed by one without).
 */
int64_t
manifest_marked(struct manifest *m, const char *job, const char *key,
		const struct request *by, bool no_downstream, const char *note)
{
	int64_t n = 0;

	for (struct item *it = *manifest_bucket(m, job, key); it;
	     it = it->hnext) {
		if ((it->state != MS_QUEUED && it->state != MS_BLOCKED) ||
		    it->rq == by || !manifest_same(it, job, key))
			continue;
		free(it->blocked_on);
		it->blocked_on = NULL;
		it->cut = CUTOFF_IN_UNKNOWN; /* built by hand: changed */
		manifest_set(m, it, no_downstream ? MS_CANCELLED : MS_SUCCEEDED);
		snprintf(manifest_note(m, it, MANIFEST_MARKED)->note,
			 sizeof m->changes[0].note, "%s", note);
		manifest_settle_outs(m, it);
		n++;
	}
	return n;
}

/* Cancel a request's queued and blocked items; with a note, each is
 * noted as a change (why).  Returns how many. */
static int64_t
manifest_cancel_open(struct manifest *m, struct request *rq, const char *note,
		     enum manifest_why why)
{
	int64_t n = 0;

	for (size_t i = 0; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (it->state != MS_QUEUED && it->state != MS_BLOCKED)
			continue;
		manifest_set(m, it, MS_CANCELLED);
		if (note != NULL)
			snprintf(manifest_note(m, it, why)->note,
				 sizeof m->changes[0].note, "%s", note);
		n++;
	}
	return n;
}

/*
 * SCHED-4, fail fast.  Once an item of a --fail-fast request has failed
 * for good (retries exhausted), its queued and blocked items are
 * cancelled and nothing more of it starts; runs in flight finish.
 * Returns how many were cancelled.
 */
int64_t
manifest_fail_fast(struct manifest *m, struct request *rq,
		   const struct item *bad)
{
	char note[256];

	snprintf(note, sizeof note, "cancelled: --fail-fast after %s %s failed",
		 bad->job_name, bad->key);
	return manifest_cancel_open(m, rq, note, MANIFEST_FAIL_FAST);
}

/*
 * Budgets (budget.h, BUDGET-4).  A request whose measured warehouse time
 * passed 1.5 times its budget starts nothing more: its queued and blocked
 * items are cancelled with the reason, as fail fast does; runs in flight
 * finish.  `retry` resumes it (the shell sets its measured time to zero).
 */
int64_t
manifest_over_budget(struct manifest *m, struct request *rq, const char *note)
{
	char buf[256];

	rq->over_budget = true;
	snprintf(buf, sizeof buf, "cancelled: %s", note);
	return manifest_cancel_open(m, rq, buf, MANIFEST_OVER_BUDGET);
}

int64_t
manifest_cancel(struct manifest *m, struct request *rq)
{
	return manifest_cancel_open(m, rq, NULL, MANIFEST_FAIL_FAST);
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

			if (it->job >= 0 ||
			    (it->state != MS_QUEUED && it->state != MS_BLOCKED))
				continue;
			manifest_set(m, it, MS_CANCELLED);
			snprintf(
			    manifest_note(m, it, MANIFEST_UNCONFIGURED)->note,
			    sizeof m->changes[0].note,
			    "cancelled: the job"
			    " is no longer in the configuration");
			manifest_settle_outs(m, it);
			n++;
		}
	}
	return n;
}

/*
 * SCHED-4, retry.  `retry` queues a request's failed, blocked and
 * cancelled items again as the same request (reopened in the store and in
 * memory, attempts counted afresh), never while a run of it is in flight
 * (the shell refuses that before calling manifest_retry).
 */
bool
manifest_retriable(const struct item *it)
{
	return it->job >= 0 &&
	       (it->state == MS_FAILED || it->state == MS_BLOCKED ||
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

/* ---- runs in flight ------------------------------------------------- */

/* Count a run's slots against the requests of its items: a batch run's
 * items are all of one request, an ordinary run's each of another. */
static void
manifest_count_requests(struct run *r, int delta)
{
	for (size_t i = 0; i < r->nitems; i++)
		if (i == 0 || !r->batch)
			r->items[i]->rq->nruns += delta * manifest_run_slots(r);
}

void
manifest_run_start(struct manifest *m, struct run *r)
{
	for (size_t i = 0; i < r->nitems; i++)
		r->items[i]->attempts++;
	manifest_run_adopt(m, r);
}

void
manifest_run_adopt(struct manifest *m, struct run *r)
{
	for (size_t i = 0; i < r->nitems; i++) {
		r->items[i]->run = r;
		manifest_set(m, r->items[i], MS_RUNNING);
	}
	r->prev = m->runs.prev;
	r->next = &m->runs;
	m->runs.prev->next = r;
	m->runs.prev = r;
	m->nrunning += manifest_run_slots(r);
	if (r->job >= 0 && (size_t)r->job < m->njobs)
		m->job_running[r->job] += manifest_run_slots(r);
	if (r->deck) {
		m->ndeck++;
		if (r->job >= 0 && (size_t)r->job < m->njobs)
			m->job_deck[r->job]++;
	}
	manifest_count_requests(r, 1);
}

void
manifest_run_undeck(struct manifest *m, struct run *r)
{
	if (!r->deck)
		return;
	r->deck = false;
	if (r->next == NULL)
		return; /* never started */
	m->ndeck--;
	if (r->job >= 0 && (size_t)r->job < m->njobs &&
	    m->job_deck[r->job] > 0)
		m->job_deck[r->job]--;
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
	/* queued again without a retry: the run was interrupted (a stop, a
	 * throttle), which is no attempt: the next run is the same one */
	bool interrupted = r->requeue ||
			   (result == MS_QUEUED && retry_job == NULL);

	for (size_t i = 0; i < r->nitems; i++) {
		struct item *x = r->items[i];

		x->run = NULL;
		if (interrupted && x->attempts > 0)
			x->attempts--;
		if (retry_job != NULL)
			x->not_before =
			    now + manifest_backoff_ms(retry_job, x->attempts);
		manifest_set(m, x, result);
	}
}

void
manifest_run_not_started(struct manifest *m, struct run *r, int64_t not_before)
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
manifest_in_flight(const struct manifest *m, int *runs, int64_t *items)
{
	int n = 0;
	int64_t k = 0;

	for (const struct run *r = m->runs.next; r != &m->runs; r = r->next) {
		n++;
		k += (int64_t)r->nitems;
	}
	*runs = n;
	*items = k;
}

void
manifest_run_finish(struct manifest *m, struct run *r)
{
	if (r->next == NULL)
		return; /* never started */
	manifest_run_undeck(m, r);
	m->nrunning -= manifest_run_slots(r);
	if (r->job >= 0 && (size_t)r->job < m->njobs) {
		m->job_running[r->job] -= manifest_run_slots(r);
		if (m->job_running[r->job] < 0)
			m->job_running[r->job] = 0;
	}
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
