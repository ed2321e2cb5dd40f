/*
 * scheduler.c - requests, the in-memory manifest and dispatch.
 *
 * Rules that must always hold:
 *  1. The store first.  A state change is committed to the state store
 *     before it is acknowledged to a client: the changes of one loop turn
 *     (runs started and finished) share one transaction, committed by
 *     sched_flush() at the end of the turn and before any answer is sent;
 *     a request is committed before its id is returned.  A crash can lose
 *     only the record of runs of the last turn, whose partitions are then
 *     still queued and run again (partition writes are idempotent).
 *  2. Caps.  At most cfg->max_concurrency runs in flight, at most
 *     job->concurrency of one job, at most max_connections on one
 *     PostgreSQL warehouse, at most a request's own concurrency (backfill
 *     --concurrency, never above its job's) of that request's runs, its
 *     downstream items' included, and never two runs of the same job and
 *     partition at once: a partition queued while it runs waits for it.
 *     A run carrying items of several requests (rule 5) counts once
 *     against each of them and takes no item of a request at its cap.
 *  3. Order.  Requests of kind schedule and catchup are served before
 *     operator requests; operator requests share the pool round-robin;
 *     within a request, items run in seq order (oldest first, or newest
 *     with --reverse; downstream items after the items they wait for).
 *  4. Downstream.  An item with inputs runs only when every input item of
 *     its request is final; an input that failed or is blocked blocks it,
 *     naming the input.  A later successful run of that input's job and
 *     partition, from any request, releases it.
 *     Fail fast: once an item of a --fail-fast request has failed for
 *     good (retries exhausted), its queued and blocked items are
 *     cancelled and nothing more of it starts; runs in flight finish.
 *     `retry` queues a request's failed, blocked and cancelled items
 *     again as the same request (reopened in the store and in memory,
 *     attempts counted afresh), never while a run of it is in flight.
 *  5. One run for many.  Items of several requests for the same job and
 *     partition that are ready at the same time run once, together.
 *  6. The schedule.  Each clock-driven job has a watermark: the newest
 *     partition the schedule materialised.  On every wake the due set is
 *     recomputed from `now`; the partitions between the watermark and the
 *     newest due one are a gap when more than one: caught up as one
 *     request when catchup is on and the gap is within max_catchup,
 *     otherwise skipped (catchup off: the older part of the gap never
 *     runs, the newest due partition runs as one schedule request, and
 *     the watermark moves to it; whatever the gap's size) or refused
 *     (catchup on, above the bound: none runs, status says so).  A single
 *     newly due partition is not a gap: it runs whatever catchup says.
 *     A clock that goes
 *     back finds nothing due past the watermark and re-runs nothing.
 *     A paused job materialises nothing; on resume what came due meanwhile
 *     is materialised within max_catchup, whatever catchup says: paused
 *     time is not missed time.
 *  7. A store that cannot be written (a full disk) stops the work, never
 *     the daemon: when a write fails (store.h), the turn is rolled back
 *     and memory is ahead of the store, so no run starts, nothing is
 *     materialised and no answer acknowledges anything from then on
 *     (sched_flush fails, control.c answers with the error); runs in
 *     flight finish unrecorded.  main.c waits until the store can be
 *     written and nothing runs, then restarts the daemon in place, which
 *     resumes from the last commit as after a crash (rule 1).
 */
#include "scheduler.h"
#include "throttle.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fresh.h"
#include "guard.h"
#include "lineage.h"
#include "hooks.h"
#include "json.h"
#include "log.h"
#include "proc.h"
#include "text.h"

struct request;

struct entry {
	int64_t id;              /* manifest row */
	struct request *rq;
	size_t idx;              /* position in rq->items */
	char *job_name;
	int job;                 /* index in s->cfg, -1 when no longer configured */
	part_t part;
	char key[CAL_KEY_MAX];
	enum mstate state;
	int attempts;
	int64_t not_before;      /* ms */
	int seq;
	bool downstream;
	char *blocked_on;
	struct entry **ins;      /* input items of the same request */
	size_t nins;
	struct entry **outs;     /* items waiting for this one */
	size_t nouts, outcap;
	struct active *run;      /* while running */
	struct entry *hnext;     /* hash chain by (job, key) */
};

struct watch {
	struct watch *next;
	sched_watch_cb cb;
	void *data;
	struct request *rq;
};

struct request {
	int64_t id;
	char *job;
	char *kind;
	bool priority;           /* schedule or catchup */
	int64_t created_at;
	struct entry **items;
	size_t n;
	size_t nroot;
	size_t cursor;           /* no queued item before it */
	int64_t counts[MS_COUNT];
	int cap;                 /* runs of it at once, 0: no cap of its own */
	int nruns;               /* runs in flight carrying an item of it */
	bool fail_fast;          /* cancel the rest after a failure */
	bool finished;           /* recorded finished in the store */
	struct watch *watches;
	struct request *next, *prev;
};

/* A run in flight: one execution, possibly for several entries (rule 5). */
struct active {
	struct exec_run run;
	struct exec_part part;   /* the one partition of an ordinary run */
	struct exec_part *parts; /* a batch run's partitions (entries order) */
	int64_t *run_ids;        /* a batch run, or one run for several entries
				  * (rule 5): one runs row per entry */
	bool batch;
	struct sched *s;
	struct entry **entries;  /* entries[0] is the primary */
	size_t nentries;
	int job;
	char job_name[128];
	int64_t started_at;
	bool requeue;            /* interrupted by a throttle: no attempt */
	struct active *next, *prev;
};

#define HASH_SIZE 4096

struct sched {
	uv_loop_t *loop;
	struct store *store;
	struct exec *exec;
	struct config *cfg;
	char *log_dir;
	struct throttle *throttle; /* NULL: no warehouse is throttled */

	struct request requests; /* circular list head */
	struct request *rr;      /* round-robin position */
	struct entry *hash[HASH_SIZE];
	struct active actives;   /* list head */
	int nrunning;
	int *job_running;        /* per job index */
	int64_t (*job_counts)[MS_COUNT]; /* entries in memory by job and state */
	struct jobstate **jobstates;     /* per job name, ever seen */
	size_t njobstates;
	struct jobstate **js_by_job;     /* per job index, filled on use */
	size_t njob_running;
	int64_t nqueued;         /* queued or running entries */
	int64_t failed_total;

	bool draining;
	/* the state store refused a commit (rule 7): no new work until the
	 * daemon has restarted from what the store holds */
	bool store_failed;
	int64_t store_failed_at;   /* ms */
	char store_error[512];
	void (*store_cb)(void *);
	void *store_data;
	void (*change_cb)(void *);
	void *change_data;
	void (*idle_cb)(void *);
	void *idle_data;
	void (*run_cb)(void *, const struct sched_run_event *);
	void *run_data;

	uv_timer_t retry_timer;
	int64_t retry_at;        /* ms, INT64_MAX when not armed */
	uv_timer_t due_timer;
	uv_timer_t late_timer;   /* the next deadline (fresh.h) */
	struct fresh *fresh;     /* partitions owed by jobs with a deadline */
	struct hooks *hooks;     /* NULL: hooks are not run */
	uv_idle_t kick;          /* dispatch once per loop turn */
	int64_t started_ms;      /* :since of a sensor's first check */
	bool kick_armed;
	int closing;
};

static void sched_dispatch(struct sched *s);
static void sched_kick(struct sched *s);
static void sched_fresh_arm(struct sched *s);
static void sched_fresh_run_done(struct sched *s, struct active *a,
				 enum mstate result, int64_t now);
static void sched_fresh_loaded(struct sched *s, struct request *rq);
static void sched_fresh_reload(struct sched *s);
static void sched_schedule(struct sched *s, bool resumed_job_only, int job);

/* ---- helpers ---------------------------------------------------------- */

/* Die on allocation failure: the daemon cannot keep its promises without
 * memory, and systemd restarts it with the manifest intact. */
static void *
xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (p == NULL) {
		log_err("out of memory");
		abort();
	}
	return p;
}

static char *
xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (p == NULL) {
		log_err("out of memory");
		abort();
	}
	return p;
}

/* The job definition of an entry, or NULL when it is gone. */
static const struct job_def *
entry_job(const struct sched *s, const struct entry *e)
{
	return e->job >= 0 ? &s->cfg->jobs[e->job] : NULL;
}

/* True for states an item does not leave by itself. */
static bool
state_final(enum mstate st)
{
	return st == MS_SUCCEEDED || st == MS_FAILED || st == MS_CANCELLED ||
	       st == MS_BLOCKED;
}

/* Count a state change in the request's counters. */
static void
entry_count(struct sched *s, struct entry *e, enum mstate from, enum mstate to)
{
	struct request *rq = e->rq;

	if (from != MS_COUNT) {
		rq->counts[from]--;
		if (from == MS_QUEUED || from == MS_RUNNING)
			s->nqueued--;
		if (e->job >= 0 && (size_t)e->job < s->njob_running)
			s->job_counts[e->job][from]--;
	}
	if (e->job >= 0 && (size_t)e->job < s->njob_running)
		s->job_counts[e->job][to]++;
	rq->counts[to]++;
	if (to == MS_QUEUED || to == MS_RUNNING)
		s->nqueued++;
	if (to == MS_FAILED)
		s->failed_total++;
	if (to == MS_QUEUED && e->idx < rq->cursor)
		rq->cursor = e->idx;
}

/* Set an entry's in-memory state (the caller writes the store). */
static void
entry_set(struct sched *s, struct entry *e, enum mstate to)
{
	enum mstate from = e->state;

	if (from == to)
		return;
	e->state = to;
	entry_count(s, e, from, to);
}

/* Persist an entry's state. */
static int
entry_store(struct sched *s, struct entry *e, const char *error, int64_t now,
	    struct err *err)
{
	return store_item_set(s->store, e->id, e->state, e->attempts,
			      e->not_before, error, e->blocked_on, now, err);
}

/* ---- requests --------------------------------------------------------- */

/* Allocate a request and link it at the tail. */
static struct request *
request_new(struct sched *s, int64_t id, const char *job, const char *kind,
	    int64_t created_at)
{
	struct request *rq = xcalloc(1, sizeof *rq);

	rq->id = id;
	rq->job = xstrdup(job);
	rq->kind = xstrdup(kind);
	rq->priority = strcmp(kind, "schedule") == 0 ||
		       strcmp(kind, "catchup") == 0;
	rq->created_at = created_at;
	rq->prev = s->requests.prev;
	rq->next = &s->requests;
	s->requests.prev->next = rq;
	s->requests.prev = rq;
	return rq;
}

/* Find an open request by id. */
static struct request *
request_find(struct sched *s, int64_t id)
{
	for (struct request *rq = s->requests.next; rq != &s->requests; rq = rq->next)
		if (rq->id == id)
			return rq;
	return NULL;
}

/* Resolve an entry's job index against the current configuration. */
static void
entry_resolve(struct sched *s, struct entry *e)
{
	e->job = config_job_index(s->cfg, e->job_name);
	if (e->job >= 0 && part_parse_key(s->cfg->jobs[e->job].grain, e->key,
					  &e->part, NULL) < 0)
		e->job = -1;
}

/* Add an entry to a request (and the hash). */
static struct entry *
request_add_entry(struct sched *s, struct request *rq, int64_t id,
		  const char *job, const char *key, int seq, bool downstream,
		  enum mstate state)
{
	struct entry *e = xcalloc(1, sizeof *e);
	unsigned h;

	if (rq->n % 64 == 0) {
		struct entry **v = realloc(rq->items, (rq->n + 64) * sizeof *v);
		if (v == NULL) {
			log_err("out of memory");
			abort();
		}
		rq->items = v;
	}
	e->id = id;
	e->rq = rq;
	e->idx = rq->n;
	rq->items[rq->n++] = e;
	if (!downstream)
		rq->nroot = rq->n;
	e->job_name = xstrdup(job);
	snprintf(e->key, sizeof e->key, "%s", key);
	e->seq = seq;
	e->downstream = downstream;
	e->state = MS_COUNT;
	entry_resolve(s, e);
	entry_set(s, e, state);
	h = text_hash_pair(job, key) % HASH_SIZE;
	e->hnext = s->hash[h];
	s->hash[h] = e;
	return e;
}

/* Link in -> out (out waits for in). */
static void
entry_link(struct entry *in, struct entry *out)
{
	if (in->nouts == in->outcap) {
		size_t cap = in->outcap ? in->outcap * 2 : 2;
		struct entry **v = realloc(in->outs, cap * sizeof *v);
		if (v == NULL) {
			log_err("out of memory");
			abort();
		}
		in->outs = v;
		in->outcap = cap;
	}
	in->outs[in->nouts++] = out;
}

/* Free an entry (unlinked from the hash by the caller). */
static void
entry_free(struct entry *e)
{
	free(e->job_name);
	free(e->blocked_on);
	free(e->ins);
	free(e->outs);
	free(e);
}

/* Remove an entry from the hash. */
static void
entry_unhash(struct sched *s, struct entry *e)
{
	struct entry **pp = &s->hash[text_hash_pair(e->job_name, e->key) % HASH_SIZE];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			return;
		}
	}
}

/* Unlink and free a request and its entries. */
static void
request_free(struct sched *s, struct request *rq)
{
	struct watch *w, *wn;

	if (s->rr == rq)
		s->rr = rq->next;
	rq->prev->next = rq->next;
	rq->next->prev = rq->prev;
	for (size_t i = 0; i < rq->n; i++) {
		struct entry *e = rq->items[i];

		if (e->state == MS_QUEUED || e->state == MS_RUNNING)
			s->nqueued--;
		if (e->job >= 0 && (size_t)e->job < s->njob_running &&
		    e->state < MS_COUNT)
			s->job_counts[e->job][e->state]--;
		entry_unhash(s, rq->items[i]);
		entry_free(rq->items[i]);
	}
	for (w = rq->watches; w; w = wn) {
		wn = w->next;
		free(w);
	}
	free(rq->items);
	free(rq->job);
	free(rq->kind);
	free(rq);
}

/* Progress of a request. */
static void
request_progress(const struct request *rq, int64_t now,
		 struct sched_progress *p)
{
	memset(p, 0, sizeof *p);
	p->total = (int64_t)rq->n;
	p->succeeded = rq->counts[MS_SUCCEEDED];
	p->failed = rq->counts[MS_FAILED];
	p->blocked = rq->counts[MS_BLOCKED];
	p->cancelled = rq->counts[MS_CANCELLED];
	p->running = rq->counts[MS_RUNNING];
	p->queued = rq->counts[MS_QUEUED];
	p->elapsed_ms = now - rq->created_at;
	p->finished = p->running == 0 && p->queued == 0;
}

/* Tell a request's watchers; drop them and maybe the request once it is
 * finished. */
static void
request_changed(struct sched *s, struct request *rq)
{
	struct sched_progress p;
	int64_t now = clock_now_ms();
	struct watch *w, *wn;
	struct err err;

	if (s->change_cb)
		s->change_cb(s->change_data);
	request_progress(rq, now, &p);
	w = rq->watches;
	if (p.finished)
		rq->watches = NULL;
	for (; w; w = wn) {
		wn = w->next;
		w->cb(w->data, &p);
		if (p.finished)
			free(w);
	}
	if (!p.finished)
		return;
	if (rq->counts[MS_BLOCKED] > 0)
		return; /* kept open: a later success may release its items */
	if (store_request_finish(s->store, rq->id, now, false, &err) < 0) {
		log_err("request=%" PRId64 " %s", rq->id, err.msg);
		return;
	}
	log_info("request=%" PRId64 " job=%s finished: %" PRId64 " succeeded, %"
		 PRId64 " failed, %" PRId64 " cancelled", rq->id, rq->job,
		 p.succeeded, p.failed, p.cancelled);
	request_free(s, rq);
}

/* ---- downstream settling ---------------------------------------------- */

/* Recompute a waiting or blocked item from its inputs (rule 4); returns
 * true when its state changed. */
static bool
entry_settle(struct sched *s, struct entry *o, int64_t now)
{
	struct entry *bad = NULL, *gone = NULL;
	bool pending = false;
	char what[256];
	struct err err;

	if (o->state != MS_QUEUED && o->state != MS_BLOCKED)
		return false;
	for (size_t i = 0; i < o->nins; i++) {
		struct entry *in = o->ins[i];

		if (in->state == MS_QUEUED || in->state == MS_RUNNING)
			pending = true;
		else if ((in->state == MS_FAILED || in->state == MS_BLOCKED) &&
			 bad == NULL)
			bad = in;
		else if (in->state == MS_CANCELLED)
			gone = in;
	}
	if (gone != NULL && bad == NULL && !pending) {
		/* an input that will never run: neither will this */
		snprintf(what, sizeof what, "cancelled: its input %s %s was"
			 " cancelled", gone->job_name, gone->key);
		entry_set(s, o, MS_CANCELLED);
		if (entry_store(s, o, what, now, &err) < 0)
			log_err("%s", err.msg);
		return true;
	}
	if (bad != NULL && !pending) {
		snprintf(what, sizeof what, "%s %s", bad->job_name, bad->key);
		if (o->state == MS_BLOCKED && o->blocked_on &&
		    strcmp(o->blocked_on, what) == 0)
			return false;
		free(o->blocked_on);
		o->blocked_on = xstrdup(what);
		entry_set(s, o, MS_BLOCKED);
		if (entry_store(s, o, NULL, now, &err) < 0)
			log_err("%s", err.msg);
		log_warn("job=%s partition=%s request=%" PRId64
			 " blocked: input %s %s", o->job_name, o->key,
			 o->rq->id, bad->state == MS_FAILED ? "failed:" :
			 "is blocked:", what);
		return true;
	}
	if (o->state == MS_BLOCKED && bad == NULL) {
		free(o->blocked_on);
		o->blocked_on = NULL;
		entry_set(s, o, MS_QUEUED);
		if (entry_store(s, o, NULL, now, &err) < 0)
			log_err("%s", err.msg);
		log_info("job=%s partition=%s request=%" PRId64
			 " released: its inputs landed", o->job_name, o->key,
			 o->rq->id);
		return true;
	}
	return false;
}

/* An item became final (or was released): settle the items waiting for
 * it, transitively. */
static void
entry_settle_outs(struct sched *s, struct entry *e, int64_t now)
{
	for (size_t i = 0; i < e->nouts; i++) {
		struct entry *o = e->outs[i];

		if (entry_settle(s, o, now))
			entry_settle_outs(s, o, now);
	}
}

/* (job, key) landed: failed items of it elsewhere count as landed, so the
 * items they blocked are released (rule 4). */
static void
sched_landed(struct sched *s, const char *job, const char *key,
	     struct request *by, int64_t now)
{
	struct entry *e;
	struct err err;
	char note[128];

	for (e = s->hash[text_hash_pair(job, key) % HASH_SIZE]; e; e = e->hnext) {
		if (e->state != MS_FAILED && e->state != MS_BLOCKED)
			continue;
		if (strcmp(e->job_name, job) != 0 || strcmp(e->key, key) != 0)
			continue;
		if (e->nouts == 0)
			continue;
		snprintf(note, sizeof note, "landed later by request %" PRId64,
			 by->id);
		free(e->blocked_on);
		e->blocked_on = NULL;
		entry_set(s, e, MS_SUCCEEDED);
		if (entry_store(s, e, note, now, &err) < 0)
			log_err("%s", err.msg);
		entry_settle_outs(s, e, now);
		if (e->rq != by)
			request_changed(s, e->rq);
	}
}

/* An item of a --fail-fast request failed for good: cancel the request's
 * queued and blocked items (rule 4); runs in flight finish. */
static void
request_fail_fast(struct sched *s, struct request *rq, struct entry *bad,
		  int64_t now)
{
	char why[256];
	struct err err;
	int64_t n = 0;

	snprintf(why, sizeof why, "cancelled: --fail-fast after %s %s failed",
		 bad->job_name, bad->key);
	for (size_t i = 0; i < rq->n; i++) {
		struct entry *e = rq->items[i];

		if (e->state != MS_QUEUED && e->state != MS_BLOCKED)
			continue;
		entry_set(s, e, MS_CANCELLED);
		if (entry_store(s, e, why, now, &err) < 0)
			log_err("%s", err.msg);
		n++;
	}
	if (n > 0)
		log_notice("request=%" PRId64 " fail-fast: %s %s failed; %" PRId64
			   " queued partitions cancelled (backfillctl retry %"
			   PRId64 " queues them again)", rq->id, bad->job_name,
			   bad->key, n, rq->id);
}

/* ---- dispatch --------------------------------------------------------- */

/* Is a run of (job, key) in flight? */
static bool
sched_partition_running(struct sched *s, const struct entry *e)
{
	for (struct entry *x = s->hash[text_hash_pair(e->job_name, e->key) % HASH_SIZE]; x; x = x->hnext)
		if (x->state == MS_RUNNING && strcmp(x->key, e->key) == 0 &&
		    strcmp(x->job_name, e->job_name) == 0)
			return true;
	return false;
}

/* May this job start one more run now? */
static bool
sched_job_free(struct sched *s, int job)
{
	const struct job_def *j;

	if (job < 0)
		return false;
	j = &s->cfg->jobs[job];
	if ((size_t)job < s->njob_running && s->job_running[job] >= j->concurrency)
		return false;
	if (j->warehouse >= 0 &&
	    s->cfg->warehouses[j->warehouse].kind == WH_POSTGRES) {
		/* the warehouse's connection cap: count its runs in flight
		 * (at most max_concurrency of them, so a scan is cheap) */
		const struct warehouse_def *w = &s->cfg->warehouses[j->warehouse];
		int n = 0;

		for (struct active *a = s->actives.next; a != &s->actives; a = a->next)
			if (a->job >= 0 && s->cfg->jobs[a->job].warehouse == j->warehouse)
				n++;
		if (n >= w->max_connections)
			return false;
	}
	if (j->warehouse >= 0 && throttle_blocks(s->throttle,
			s->cfg->warehouses[j->warehouse].name))
		return false;
	return true;
}

/* Paused jobs, looked up in memory (mirrors the store). */
static bool sched_job_paused(struct sched *s, int job);

/* Is an entry ready to run (not counting the job's cap)? */
static bool
entry_ready(struct sched *s, struct entry *e, int64_t now, int64_t *wake)
{
	if (e->state != MS_QUEUED || e->job < 0)
		return false;
	for (size_t i = 0; i < e->nins; i++)
		if (e->ins[i]->state != MS_SUCCEEDED)
			return false;
	if (e->not_before > now) {
		if (e->not_before < *wake)
			*wake = e->not_before;
		return false;
	}
	if (sched_job_paused(s, e->job))
		return false;
	return !sched_partition_running(s, e);
}

/* Is a request running as many runs as its own cap allows (rule 2)? */
static bool
request_at_cap(const struct request *rq)
{
	return rq->cap > 0 && rq->nruns >= rq->cap;
}

/* Count a run starting (delta 1) or ending (-1) against the requests of
 * its entries: a batch run's entries are all of one request, an ordinary
 * run's each of another (one item per job and partition per request). */
static void
active_count_requests(struct active *a, int delta)
{
	for (size_t i = 0; i < a->nentries; i++)
		if (i == 0 || !a->batch)
			a->entries[i]->rq->nruns += delta;
}

/* The first runnable entry of a request, or NULL. */
static struct entry *
request_next(struct sched *s, struct request *rq, int64_t now, int64_t *wake)
{
	while (rq->cursor < rq->n && rq->items[rq->cursor]->state != MS_QUEUED)
		rq->cursor++;
	if (request_at_cap(rq))
		return NULL;
	for (size_t i = rq->cursor; i < rq->n; i++) {
		struct entry *e = rq->items[i];

		if (e->state != MS_QUEUED)
			continue;
		if (!sched_job_free(s, e->job) || sched_job_paused(s, e->job)) {
			if (!e->downstream) {
				i = rq->nroot - 1; /* every root item is this job's */
				continue;
			}
			continue;
		}
		if (entry_ready(s, e, now, wake))
			return e;
	}
	return NULL;
}

static void sched_run_done_cb(struct exec_run *run);
static void sched_gap_filled(struct sched *s, const char *job,
			     const char *key);
static void sched_run_started_cb(struct exec_run *run);
static void sched_count_finished(struct sched *s, const char *job,
				 enum mstate prev, enum mstate state);

/* Newest landing among the inputs of a downstream partition, or -1. */
static int64_t
sched_inputs_at(struct sched *s, const struct job_def *j, part_t part)
{
	int64_t newest = -1;

	for (size_t u = 0; u < j->nupstream; u++) {
		const struct job_def *uj = &s->cfg->jobs[j->upstream_idx[u]];
		struct part_range r = part_inputs(uj->grain, j->grain, part);

		char first[CAL_KEY_MAX], last[CAL_KEY_MAX];
		int64_t built;

		/* keys of one grain sort in time order: one range query */
		part_key(uj->grain, r.first, first);
		part_key(uj->grain, r.last, last);
		if (store_newest_build(s->store, uj->name, first, last, &built,
				       NULL) == 0 && built > newest)
			newest = built;
	}
	return newest;
}

/* Add an entry to a run being started. */
static void
active_add(struct active *a, struct entry *x, size_t *cap)
{
	if (a->nentries == *cap) {
		*cap *= 2;
		a->entries = realloc(a->entries, *cap * sizeof *a->entries);
		if (a->entries == NULL)
			abort();
	}
	a->entries[a->nentries++] = x;
}

/* Start the run of entry e, with every other ready entry of the same job
 * and partition riding along (rule 5). */
static int
sched_start_run(struct sched *s, struct entry *e, int64_t now)
{
	const struct job_def *j = entry_job(s, e);
	struct active *a = xcalloc(1, sizeof *a);
	struct entry *x;
	int64_t wake = INT64_MAX;
	struct err err;
	size_t cap = 4;

	a->s = s;
	a->job = e->job;
	snprintf(a->job_name, sizeof a->job_name, "%s", e->job_name);
	a->entries = xcalloc(cap, sizeof *a->entries);
	a->entries[a->nentries++] = e;
	a->batch = j->batch && !e->downstream;
	/* batch: every ready partition of the job in this request, one run */
	for (size_t i = 0; a->batch && i < e->rq->nroot; i++) {
		x = e->rq->items[i];
		if (x == e || x->job != e->job || !entry_ready(s, x, now, &wake))
			continue;
		active_add(a, x, &cap);
	}
	for (x = s->hash[text_hash_pair(e->job_name, e->key) % HASH_SIZE]; x && !a->batch;
	     x = x->hnext) {
		if (x == e || strcmp(x->key, e->key) != 0 ||
		    strcmp(x->job_name, e->job_name) != 0)
			continue;
		if (request_at_cap(x->rq) || !entry_ready(s, x, now, &wake))
			continue;
		active_add(a, x, &cap);
	}
	a->started_at = now;
	if (store_defer(s->store, &err) < 0 || store_begin(s->store, &err) < 0)
		goto fail;
	for (size_t i = 0; i < a->nentries; i++) {
		x = a->entries[i];
		x->attempts++;
		entry_set(s, x, MS_RUNNING);
		x->run = a;
		if (entry_store(s, x, NULL, now, &err) < 0)
			goto fail_tx;
	}
	if (a->batch) {
		a->run_ids = xcalloc(a->nentries, sizeof *a->run_ids);
		a->parts = xcalloc(a->nentries, sizeof *a->parts);
		for (size_t i = 0; i < a->nentries; i++) {
			x = a->entries[i];
			if (store_run_start(s->store, x->id, x->rq->id, x->job_name,
					    x->key, x->attempts, now,
					    j->code_version, s->cfg->file_hash,
					    &a->run_ids[i], &err) < 0)
				goto fail_tx;
			snprintf(a->parts[i].key, sizeof a->parts[i].key, "%s",
				 x->key);
			part_bound(j->grain, part_start(j->grain, x->part),
				   a->parts[i].start);
			part_bound(j->grain, part_end(j->grain, x->part),
				   a->parts[i].end);
		}
		a->run.run_id = a->run_ids[0];
	} else if (store_run_start(s->store, e->id, e->rq->id, e->job_name,
				   e->key, e->attempts, now, j->code_version,
				   s->cfg->file_hash, &a->run.run_id, &err) < 0) {
		goto fail_tx;
	} else if (a->nentries > 1) {
		/* one run for several requests (rule 5): a runs row for
		 * each entry served, as a batch has, so that every request's
		 * runs and audit show the run that served it */
		a->run_ids = xcalloc(a->nentries, sizeof *a->run_ids);
		a->run_ids[0] = a->run.run_id;
		for (size_t i = 1; i < a->nentries; i++) {
			x = a->entries[i];
			if (store_run_start(s->store, x->id, x->rq->id,
					    x->job_name, x->key, x->attempts,
					    now, j->code_version,
					    s->cfg->file_hash, &a->run_ids[i],
					    &err) < 0)
				goto fail_tx;
		}
	}
	if (store_commit(s->store, &err) < 0)
		goto fail_tx;

	snprintf(a->part.key, sizeof a->part.key, "%s", e->key);
	part_bound(j->grain, part_start(j->grain, e->part), a->part.start);
	part_bound(j->grain, part_end(j->grain, e->part), a->part.end);
	a->run.cfg = config_ref(s->cfg);
	a->run.job = j;
	a->run.parts = a->batch ? a->parts : &a->part;
	a->run.nparts = a->batch ? a->nentries : 1;
	a->run.attempt = e->attempts;
	a->run.log_dir = s->log_dir;
	a->run.done_cb = sched_run_done_cb;
	a->run.started_cb = sched_run_started_cb;
	a->run.data = a;
	a->prev = s->actives.prev;
	a->next = &s->actives;
	s->actives.prev->next = a;
	s->actives.prev = a;
	s->nrunning++;
	if ((size_t)e->job < s->njob_running)
		s->job_running[e->job]++;
	active_count_requests(a, 1);
	if (a->batch && a->nentries > 1)
		log_info("job=%s partition=%s..%s request=%" PRId64 " run=%" PRId64
			 " attempt=%d started: one batch of %zu partitions",
			 e->job_name, e->key, a->entries[a->nentries - 1]->key,
			 e->rq->id, a->run.run_id, e->attempts, a->nentries);
	else
		log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " attempt=%d started%s", e->job_name, e->key, e->rq->id,
			 a->run.run_id, e->attempts,
			 a->nentries > 1 ? " (for several requests)" : "");
	for (size_t i = 0; i < a->nentries; i++)
		request_changed(s, a->entries[i]->rq);
	exec_submit(s->exec, &a->run);
	return 0;
fail_tx:
	store_rollback(s->store);
	for (size_t i = 0; i < a->nentries; i++) {
		a->entries[i]->attempts--;
		a->entries[i]->run = NULL;
		entry_set(s, a->entries[i], MS_QUEUED);
	}
fail:
	log_err("job=%s partition=%s cannot start: %s", e->job_name, e->key,
		err.msg);
	free(a->entries);
	free(a->run_ids);
	free(a->parts);
	free(a);
	return -1;
}

/* Arm the retry timer for `at` (ms) if sooner than what is armed. */
static void sched_retry_cb(uv_timer_t *t);

static void
sched_arm_retry(struct sched *s, int64_t at, int64_t now)
{
	if (at == INT64_MAX || at >= s->retry_at || s->closing)
		return;
	s->retry_at = at;
	uv_timer_start(&s->retry_timer, sched_retry_cb,
		       (uint64_t)(at > now ? at - now : 0), 0);
}

static void
sched_retry_cb(uv_timer_t *t)
{
	struct sched *s = t->data;

	s->retry_at = INT64_MAX;
	sched_dispatch(s);
}

/* Start runs while the caps allow (rules 2 and 3). */
static void
sched_dispatch(struct sched *s)
{
	int64_t now = clock_now_ms(), wake = INT64_MAX;

	if (s->draining || s->closing || s->store_failed)
		return;
	while (s->nrunning < s->cfg->max_concurrency) {
		struct entry *e = NULL;
		struct request *rq;

		/* schedule and catchup requests first */
		for (rq = s->requests.next; rq != &s->requests && !e; rq = rq->next)
			if (rq->priority)
				e = request_next(s, rq, now, &wake);
		/* then operator requests, round-robin */
		if (e == NULL && s->requests.next != &s->requests) {
			struct request *start = s->rr;

			if (start == NULL || start == &s->requests)
				start = s->requests.next;
			rq = start;
			do {
				if (rq != &s->requests && !rq->priority &&
				    (e = request_next(s, rq, now, &wake)) != NULL) {
					s->rr = rq->next;
					break;
				}
				rq = rq->next;
			} while (rq != start);
		}
		if (e == NULL)
			break;
		if (sched_start_run(s, e, now) < 0)
			break;
	}
	sched_arm_retry(s, wake, now);
}

/* Idle callback: one dispatch per loop turn however many events asked. */
static void
sched_kick_cb(uv_idle_t *h)
{
	struct sched *s = h->data;

	uv_idle_stop(h);
	s->kick_armed = false;
	sched_dispatch(s);
}

/* Ask for a dispatch at the end of this loop turn. */
static void
sched_kick(struct sched *s)
{
	if (s->kick_armed || s->closing)
		return;
	s->kick_armed = true;
	uv_idle_start(&s->kick, sched_kick_cb);
}

/* A number or null in JSON. */
static void
json_num(struct buf *b, bool has, double v)
{
	if (has)
		buf_printf(b, "%.10g", v);
	else
		buf_addstr(b, "null");
}

/* Record what a run measured and checked for each of its partitions
 * (inside the caller's transaction); a batch run has one run id per
 * partition (run_ids), an ordinary one NULL. */
static int
sched_audit(struct sched *s, struct exec_run *run, const int64_t *run_ids,
	    struct err *err)
{
	struct buf metrics, checks, mtext, ctext;
	int rc = 0;

	if (run->guards == NULL && run->nchecks == 0)
		return 0;
	buf_init(&metrics);
	buf_init(&checks);
	buf_init(&mtext);
	buf_init(&ctext);
	for (size_t i = 0; i < run->nparts && rc == 0; i++) {
		const struct exec_guard_result *g = run->guards ? &run->guards[i] : NULL;
		size_t n = 0;
		double pct = 0;

		size_t npassed = 0, nall = 0;

		buf_reset(&metrics);
		buf_reset(&checks);
		buf_reset(&mtext);
		buf_reset(&ctext);
		buf_addstr(&metrics, "{");
		if (g != NULL) {
			bool ch = g->has_rows_before && g->has_rows_after &&
				guard_change((double)g->rows_before,
					     (double)g->rows_after, &pct);
			buf_addstr(&metrics, "\"rows\": {\"before\": ");
			json_num(&metrics, g->has_rows_before, (double)g->rows_before);
			buf_addstr(&metrics, ", \"after\": ");
			json_num(&metrics, g->has_rows_after, (double)g->rows_after);
			buf_addstr(&metrics, ", \"change_pct\": ");
			json_num(&metrics, ch, pct);
			buf_addstr(&metrics, "}");
			for (size_t k = 0; k < run->job->nmetrics; k++) {
				const struct exec_metric_result *m = &g->metrics[k];

				buf_addstr(&metrics, ", ");
				json_str(&metrics, run->job->metrics[k].name);
				buf_addstr(&metrics, ": {\"before\": ");
				json_num(&metrics, m->has_before, m->before);
				buf_addstr(&metrics, ", \"after\": ");
				json_num(&metrics, m->has_after, m->after);
				buf_addstr(&metrics, ", \"change_pct\": ");
				json_num(&metrics, m->has_change, m->change_pct);
				buf_addstr(&metrics, "}");
				buf_printf(&mtext, "%s%s ", k ? "; " : "", m->name);
				if (m->has_before)
					buf_printf(&mtext, "%.2f", m->before);
				else
					buf_addstr(&mtext, "-");
				if (m->has_after)
					buf_printf(&mtext, " -> %.2f", m->after);
				else
					buf_addstr(&mtext, " -> -");
				if (m->has_change)
					buf_printf(&mtext, " (%+.1f%%)", m->change_pct);
			}
		}
		buf_addstr(&metrics, "}");
		buf_addstr(&checks, "[");
		for (size_t c = 0; c < run->nchecks; c++) {
			const struct exec_check_result *cr = &run->checks[c];

			if (cr->part != i)
				continue;
			buf_addstr(&checks, n++ ? ", {\"name\": " : "{\"name\": ");
			json_str(&checks, cr->name);
			buf_printf(&checks, ", \"passed\": %s, \"detail\": ",
				   cr->passed ? "true" : "false");
			json_str(&checks, cr->detail);
			buf_addstr(&checks, "}");
			nall++;
			if (cr->passed)
				npassed++;
			else
				buf_printf(&ctext, "; %s: %s", cr->name, cr->detail);
		}
		buf_addstr(&checks, "]");
		buf_add(&metrics, "", 1);
		buf_add(&checks, "", 1);
		buf_add(&mtext, "", 1);
		{
			struct buf line;

			buf_init(&line);
			buf_printf(&line, "%zu/%zu passed", npassed, nall);
			buf_add(&ctext, "", 1);
			buf_addstr(&line, ctext.data);
			buf_add(&line, "", 1);
			rc = store_audit_add(s->store,
					     run_ids ? run_ids[i] : run->run_id,
					     run->parts[i].key,
					     g && g->has_rows_before,
					     g ? g->rows_before : 0,
					     g && g->has_rows_after,
					     g ? g->rows_after : 0, metrics.data,
					     checks.data, mtext.data, line.data,
					     !run->failed, err);
			buf_free(&line);
		}
	}
	buf_free(&metrics);
	buf_free(&checks);
	buf_free(&mtext);
	buf_free(&ctext);
	return rc;
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
			" process group %" PRId64 ": %s", a->job_name,
			a->entries[0]->key, run->run_id, run->pgid, err.msg);
}

/*
 * A run that could not start for want of resources (no descriptor, no
 * memory, no process slot) never ran: its entries go back to queued
 * without an attempt counted, its runs rows are forgotten, and the queue
 * tries again after SCHED_NOT_STARTED_MS.  Such a spell must not burn a
 * partition's retries.
 */
#define SCHED_NOT_STARTED_MS 2000

static void
sched_not_started(struct sched *s, struct active *a, int64_t now)
{
	struct exec_run *run = &a->run;
	struct entry *e = a->entries[0];
	struct err err;

	if (store_defer(s->store, &err) < 0 || store_begin(s->store, &err) < 0)
		goto fail;
	for (size_t i = 0; i < (a->run_ids ? a->nentries : 1); i++)
		if (store_run_unstart(s->store, a->run_ids ? a->run_ids[i] :
				      run->run_id, &err) < 0)
			goto fail_tx;
	for (size_t i = 0; i < a->nentries; i++) {
		struct entry *x = a->entries[i];

		x->run = NULL;
		if (x->attempts > 0)
			x->attempts--;
		x->not_before = now + SCHED_NOT_STARTED_MS;
		entry_set(s, x, MS_QUEUED);
		if (entry_store(s, x, NULL, now, &err) < 0)
			goto fail_tx;
	}
	if (store_commit(s->store, &err) < 0)
		goto fail_tx;
	goto logged;
fail_tx:
	store_rollback(s->store);
fail:
	log_err("job=%s partition=%s run=%" PRId64 " cannot record that it did"
		" not start: %s", a->job_name, e->key, run->run_id, err.msg);
	for (size_t i = 0; i < a->nentries; i++) {
		a->entries[i]->run = NULL;
		entry_set(s, a->entries[i], MS_QUEUED);
	}
logged:
	log_warn("job=%s partition=%s request=%" PRId64 " not started: %s;"
		 " queued again in %d s, no attempt counted (raise the"
		 " descriptor limit, LimitNOFILE=, if this repeats)", a->job_name,
		 e->key, e->rq->id, run->error, SCHED_NOT_STARTED_MS / 1000);
	sched_arm_retry(s, now + SCHED_NOT_STARTED_MS, now);
}

/* A run finished: record it, retry or settle, and dispatch again. */
static void
sched_run_done_cb(struct exec_run *run)
{
	struct active *a = run->data;
	struct sched *s = a->s;
	struct entry *e = a->entries[0];
	const struct job_def *j = run->job;
	int64_t now = clock_now_ms();
	enum mstate result, run_state;
	const char *error = run->failed ? run->error : NULL;
	int64_t inputs_at = -1;
	struct err err;
	bool retry = false;
	size_t nkeys = a->batch ? a->nentries : 1;
	enum mstate *prev;

	if (run->not_started && !run->cancelled) {
		result = MS_QUEUED;
		sched_not_started(s, a, now);
		goto settled;
	}
	prev = xcalloc(nkeys, sizeof *prev);
	if (run->cancelled) {
		result = MS_QUEUED; /* queued again, run at next start */
		run_state = MS_CANCELLED;
	} else if (run->failed) {
		run_state = MS_FAILED;
		retry = e->attempts <= j->retries && !s->draining;
		result = retry ? MS_QUEUED : MS_FAILED;
	} else {
		run_state = MS_SUCCEEDED;
		result = MS_SUCCEEDED;
	}
	if (result == MS_SUCCEEDED && j->nupstream > 0)
		inputs_at = sched_inputs_at(s, j, e->part);

	if (store_defer(s->store, &err) < 0 || store_begin(s->store, &err) < 0)
		goto fail;
	for (size_t i = 0; i < (a->batch ? a->nentries : 1); i++) {
		int64_t rid = a->batch ? a->run_ids[i] : run->run_id;
		const char *key = a->batch ? a->entries[i]->key : e->key;

		/* a batch's rows changed are the batch's: on its first row */
		prev[i] = MS_COUNT;
		if (store_run_finish(s->store, rid, run_state, now, error,
				     i == 0 ? run->rows_changed : -1, &err) < 0)
			goto fail_tx;
		if (run_state != MS_CANCELLED &&
		    store_partition_finished(s->store, a->job_name, key, rid,
					     run_state, &prev[i], &err) < 0)
			goto fail_tx;
		if (result == MS_SUCCEEDED &&
		    store_partition_built(s->store, a->job_name, key, now,
					  inputs_at, rid, j->code_version,
					  &err) < 0)
			goto fail_tx;
	}
	if (!run->cancelled && sched_audit(s, run, a->run_ids, &err) < 0)
		goto fail_tx;
	/* the other requests' rows of a run shared by several (rule 5) */
	for (size_t i = 1; !a->batch && a->run_ids && i < a->nentries; i++) {
		if (store_run_finish(s->store, a->run_ids[i], run_state, now,
				     error, -1, &err) < 0)
			goto fail_tx;
		if (!run->cancelled &&
		    sched_audit(s, run, &a->run_ids[i], &err) < 0)
			goto fail_tx;
	}
	for (size_t i = 0; i < a->nentries; i++) {
		struct entry *x = a->entries[i];

		x->run = NULL;
		if (a->requeue && x->attempts > 0)
			x->attempts--;
		if (retry) {
			int64_t backoff = j->retry_backoff * 1000;
			for (int k = 1; k < x->attempts && backoff < 86400000; k++)
				backoff *= 2;
			x->not_before = now + backoff;
		}
		entry_set(s, x, result);
		if (entry_store(s, x, error, now, &err) < 0)
			goto fail_tx;
	}
	if (store_commit(s->store, &err) < 0)
		goto fail_tx;
	for (size_t i = 0; run_state != MS_CANCELLED && i < nkeys; i++)
		sched_count_finished(s, a->job_name, prev[i], run_state);
	goto recorded;
fail_tx:
	store_rollback(s->store);
fail:
	log_err("job=%s partition=%s run=%" PRId64 " cannot record the result: %s",
		a->job_name, e->key, run->run_id, err.msg);
	for (size_t i = 0; i < a->nentries; i++) {
		a->entries[i]->run = NULL;
		entry_set(s, a->entries[i], result);
	}
recorded:
	free(prev);
	if (run_state == MS_SUCCEEDED && run->rows_changed >= 0)
		log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " succeeded in %" PRId64 " ms rows=%" PRId64, a->job_name,
			 e->key, e->rq->id, run->run_id, now - a->started_at,
			 run->rows_changed);
	else if (run_state == MS_SUCCEEDED)
		log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			 " succeeded in %" PRId64 " ms", a->job_name, e->key,
			 e->rq->id, run->run_id, now - a->started_at);
	else if (run_state == MS_CANCELLED)
		log_notice("job=%s partition=%s run=%" PRId64
			   " cancelled; queued again", a->job_name, e->key,
			   run->run_id);
	else
		log_err("job=%s partition=%s request=%" PRId64 " run=%" PRId64
			" attempt=%d failed: %s%s", a->job_name, e->key,
			e->rq->id, run->run_id, e->attempts, run->error,
			retry ? "; will retry" : "");
	if (run_state != MS_CANCELLED)
		sched_fresh_run_done(s, a, result, now);
	if (s->run_cb != NULL) {
		struct sched_run_event ev = {
			.job = a->job_name, .state = run_state,
			.duration_s = (double)(now - a->started_at) / 1000.0,
		};
		const struct job_def *dj = config_job(s->cfg, a->job_name);

		if (dj != NULL && dj->has_start && dj->nupstream == 0 &&
		    (strcmp(e->rq->kind, "schedule") == 0 ||
		     strcmp(e->rq->kind, "catchup") == 0)) {
			ev.has_delay = true;
			ev.delay_s = (double)(a->started_at - sched_due_time(
				dj->grain, dj->ready_after, e->part) * 1000) / 1000.0;
		}
		s->run_cb(s->run_data, &ev);
	}

settled:
	s->nrunning--;
	if (a->job >= 0 && (size_t)a->job < s->njob_running && s->job_running[a->job] > 0)
		s->job_running[a->job]--;
	active_count_requests(a, -1);
	a->prev->next = a->next;
	a->next->prev = a->prev;
	exec_run_clear_results(run);
	config_unref(run->cfg);

	/* settle dependents, release blocked items elsewhere */
	for (size_t i = 0; i < a->nentries; i++)
		if (state_final(a->entries[i]->state))
			entry_settle_outs(s, a->entries[i], now);
	for (size_t i = 0; result == MS_SUCCEEDED &&
	     i < (a->batch ? a->nentries : 1); i++) {
		sched_landed(s, a->job_name, a->entries[i]->key, e->rq, now);
		sched_gap_filled(s, a->job_name, a->entries[i]->key);
	}
	for (size_t i = 0; result == MS_FAILED && i < a->nentries; i++)
		if (a->entries[i]->rq->fail_fast)
			request_fail_fast(s, a->entries[i]->rq, a->entries[i], now);
	if (retry)
		sched_arm_retry(s, e->not_before, now);
	{
		/* copy the requests: request_changed may free them */
		size_t n = a->nentries;
		struct request **rqs = xcalloc(n, sizeof *rqs);
		int64_t *ids = xcalloc(n, sizeof *ids);

		for (size_t i = 0; i < n; i++)
			ids[i] = a->entries[i]->rq->id;
		free(a->entries);
		free(a->run_ids);
		free(a->parts);
		free(a);
		for (size_t i = 0; i < n; i++) {
			struct request *rq = request_find(s, ids[i]);
			if (rq)
				request_changed(s, rq);
		}
		free(rqs);
		free(ids);
	}
	if (s->draining && s->nrunning == 0 && s->idle_cb)
		s->idle_cb(s->idle_data);
	else
		sched_kick(s);
}

/* ---- paused jobs and the schedule ------------------------------------- */

struct sensor_run {
	struct exec_run run;
	struct exec_part part;
	struct sched *s;
	char job[128];
	int64_t started_ms;
	char since[CAL_KEY_MAX];
};

struct jobstate {
	char *name;
	struct store_job_state st;
	int64_t last[MS_COUNT]; /* partitions by their newest finished run */
	bool loaded;
	struct sensor_run *sensor; /* a late_data check in flight */
};

/* The cached state of a job by name (loaded from the store on first use);
 * a jobstate lives as long as the scheduler, whatever reloads do. */
static struct jobstate *
jobstate_get(struct sched *s, const char *name)
{
	struct jobstate *js;
	struct err err;

	for (size_t i = 0; i < s->njobstates; i++)
		if (strcmp(s->jobstates[i]->name, name) == 0)
			return s->jobstates[i];
	s->jobstates = realloc(s->jobstates,
			       (s->njobstates + 1) * sizeof *s->jobstates);
	if (s->jobstates == NULL)
		abort();
	js = xcalloc(1, sizeof *js);
	s->jobstates[s->njobstates++] = js;
	js->name = xstrdup(name);
	if (store_job_get(s->store, name, &js->st, &err) < 0)
		log_err("job=%s %s", name, err.msg);
	js->loaded = true;
	return js;
}

/* A partition of job has a new newest finished run: move it between the
 * counts status shows (prev MS_COUNT: the partition had none). */
static void
sched_count_finished(struct sched *s, const char *job, enum mstate prev,
		     enum mstate state)
{
	struct jobstate *js = jobstate_get(s, job);

	if (prev < MS_COUNT && js->last[prev] > 0)
		js->last[prev]--;
	js->last[state]++;
}

/* At start: the counts of every job, from the store. */
static void
sched_count_load_cb(const char *job, enum mstate state, int64_t count,
		    void *data)
{
	jobstate_get(data, job)->last[state] = count;
}

/* The cached state of job index j of the current configuration. */
static struct jobstate *
jobstate_of(struct sched *s, int j)
{
	if (s->js_by_job[j] == NULL)
		s->js_by_job[j] = jobstate_get(s, s->cfg->jobs[j].name);
	return s->js_by_job[j];
}

static bool
sched_job_paused(struct sched *s, int job)
{
	return job >= 0 && jobstate_of(s, job)->st.paused;
}

/* Save a job's state. */
static int
jobstate_save(struct sched *s, struct jobstate *js, struct err *err)
{
	return store_job_put(s->store, js->name, &js->st, clock_now_ms(), err);
}

struct gap_count {
	int64_t succeeded;
};

/* Count the gap's partitions whose last run succeeded. */
static void
gap_count_cb(const char *key, enum mstate st, void *data)
{
	(void)key;
	if (st == MS_SUCCEEDED)
		((struct gap_count *)data)->succeeded++;
}

/* A partition of job succeeded: when it was the last of the job's
 * refused catchup gap to succeed, the gap is filled and catchup is what
 * the configuration says again.  (Here, when the state changes, and not
 * when status reads it: reads never write.) */
static void
sched_gap_filled(struct sched *s, const char *job, const char *key)
{
	struct jobstate *js = jobstate_get(s, job);
	const struct job_def *j = config_job(s->cfg, job);
	struct gap_count gc = { 0 };
	part_t from, to;
	struct err err;

	if (j == NULL || strcmp(js->st.catchup, "refused") != 0 ||
	    !js->st.gap_from[0] || strcmp(key, js->st.gap_from) < 0 ||
	    strcmp(key, js->st.gap_to) > 0 ||
	    part_parse_key(j->grain, js->st.gap_from, &from, NULL) < 0 ||
	    part_parse_key(j->grain, js->st.gap_to, &to, NULL) < 0)
		return;
	if (store_last_states(s->store, job, js->st.gap_from, js->st.gap_to,
			      gap_count_cb, &gc, &err) < 0) {
		log_err("job=%s %s", job, err.msg);
		return;
	}
	if (gc.succeeded < to - from + 1)
		return;
	log_notice("job=%s the refused catchup gap %s..%s is filled; catchup"
		   " is %s again", job, js->st.gap_from, js->st.gap_to,
		   j->catchup ? "on" : "off");
	snprintf(js->st.catchup, sizeof js->st.catchup, "%s",
		 j->catchup ? "ok" : "off");
	js->st.gap_from[0] = js->st.gap_to[0] = '\0';
	if (jobstate_save(s, js, &err) < 0)
		log_err("job=%s %s", job, err.msg);
}


/* Write the items of a plan as a new request; returns its id via *id. */
static int
sched_commit_plan(struct sched *s, const struct sched_req *rq,
		  const struct plan *plan, int64_t *id, struct err *err)
{
	const struct config *cfg = s->cfg;
	const struct job_def *j = &cfg->jobs[rq->job];
	struct store_request srq = {
		.job = j->name, .kind = rq->kind, .reason = rq->reason,
		.from_key = rq->from_key, .to_key = rq->to_key,
		.reprocess = cmdspec_reprocess_name(rq->reprocess),
		.reverse = rq->reverse, .no_downstream = rq->no_downstream,
		.created_at = clock_now_ms(), .concurrency = rq->concurrency,
		.fail_fast = rq->fail_fast, .downstream = rq->downstream,
	};
	char qreason[256];
	struct request *r;
	int64_t *ids = NULL;
	char key[CAL_KEY_MAX];

	if (store_begin(s->store, err) < 0)
		return -1;
	if (store_request_add(s->store, &srq, id, err) < 0)
		goto fail;
	ids = xcalloc(plan->n, sizeof *ids);
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		struct store_item si = {
			.request_id = *id, .job = cfg->jobs[it->job].name,
			.key = key, .seq = (int)i, .downstream = it->downstream,
			.state = MS_QUEUED, .at = srq.created_at,
		};

		part_key(cfg->jobs[it->job].grain, it->part, key);
		if (store_item_add(s->store, &si, &ids[i], err) < 0)
			goto fail;
	}
	if (store_commit(s->store, err) < 0)
		goto fail;

	r = request_new(s, *id, j->name, rq->kind, srq.created_at);
	r->cap = rq->concurrency;
	r->fail_fast = rq->fail_fast;
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		struct entry *e;

		part_key(cfg->jobs[it->job].grain, it->part, key);
		e = request_add_entry(s, r, ids[i], cfg->jobs[it->job].name, key,
				      (int)i, it->downstream, MS_QUEUED);
		if (it->ndeps > 0) {
			e->ins = xcalloc(it->ndeps, sizeof *e->ins);
			for (size_t d = 0; d < it->ndeps; d++) {
				struct entry *in = r->items[plan->deps[it->dep_off + d]];
				e->ins[e->nins++] = in;
				entry_link(in, e);
			}
		}
	}
	free(ids);
	log_info("request=%" PRId64 " job=%s kind=%s queued %zu partitions"
		 " (%zu downstream)%s%s", *id, j->name, rq->kind, plan->n,
		 plan->n - plan->nroot, rq->reason ? " reason=" : "",
		 rq->reason ? str_escape(rq->reason, qreason, sizeof qreason) : "");
	sched_kick(s);
	return 0;
fail:
	store_rollback(s->store);
	free(ids);
	return -1;
}

struct last_filter {
	char (*keys)[CAL_KEY_MAX];
	enum mstate *states;
	size_t n;
};

/* Remember the last state of one key (keys are sorted: binary search). */
static void
last_filter_cb(const char *key, enum mstate st, void *data)
{
	struct last_filter *lf = data;
	size_t lo = 0, hi = lf->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(lf->keys[mid], key);

		if (c == 0) {
			lf->states[mid] = st;
			return;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
}

int
sched_submit(struct sched *s, const struct sched_req *rq, bool commit,
	     struct plan *plan, int64_t *request_id, struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[rq->job];
	struct last_filter lf = { 0 };
	int rc = -1;

	*request_id = 0;
	if (rq->reprocess != REPROCESS_ALL && rq->nparts > 0) {
		lf.n = rq->nparts;
		lf.keys = xcalloc(lf.n, sizeof *lf.keys);
		lf.states = xcalloc(lf.n, sizeof *lf.states);
		for (size_t i = 0; i < lf.n; i++) {
			part_key(j->grain, rq->parts[i], lf.keys[i]);
			lf.states[i] = MS_COUNT; /* never ran */
		}
		if (store_last_states(s->store, j->name, lf.keys[0],
				      lf.keys[lf.n - 1], last_filter_cb, &lf,
				      err) < 0)
			goto out;
	}
	for (size_t i = 0; i < rq->nparts; i++) {
		size_t k = rq->reverse ? rq->nparts - 1 - i : i;

		if (rq->reprocess == REPROCESS_FAILED &&
		    lf.states[k] == MS_SUCCEEDED)
			continue;
		if (rq->reprocess == REPROCESS_MISSING && lf.states[k] != MS_COUNT)
			continue;
		plan_add_root(plan, rq->job, rq->parts[k]);
	}
	if (plan->n > 0 && !rq->no_downstream)
		plan_expand(plan, s->cfg, rq->reverse, rq->keep);
	rc = 0;
	if (commit && plan->n > 0)
		rc = sched_commit_plan(s, rq, plan, request_id, err);
out:
	free(lf.keys);
	free(lf.states);
	return rc;
}

/* Materialise partitions first..last of job j for the schedule. */
static int
sched_materialise(struct sched *s, int job, part_t first, part_t last,
		  const char *kind, struct err *err)
{
	struct sched_req rq = { .job = job, .kind = kind };
	struct plan plan;
	int64_t id;
	int rc;

	rq.nparts = (size_t)(last - first + 1);
	rq.parts = xcalloc(rq.nparts, sizeof *rq.parts);
	for (size_t i = 0; i < rq.nparts; i++)
		rq.parts[i] = first + (part_t)i;
	plan_init(&plan);
	rc = sched_submit(s, &rq, true, &plan, &id, err);
	plan_free(&plan);
	free(rq.parts);
	if (rc == 0 && s->cfg->jobs[job].deadline > 0) {
		const struct job_def *j = &s->cfg->jobs[job];

		for (part_t p = first; p <= last; p++) {
			char key[CAL_KEY_MAX];

			part_key(j->grain, p, key);
			fresh_track(s->fresh, j->name, p, key,
				    sched_due_time(j->grain, j->ready_after, p) * 1000,
				    j->deadline * 1000, id);
		}
		sched_fresh_arm(s);
	}
	return rc;
}

static void sched_due_cb(uv_timer_t *t);

/* When job j's sensor checks next (seconds). */
static int64_t
sensor_next_check(struct sched *s, const struct job_def *j,
		  const struct jobstate *js)
{
	int64_t last = js->st.has_late_checked ? js->st.late_checked_at :
		s->started_ms;

	return last / 1000 + j->late_data->every;
}

/* Record a sensor check's outcome and save it. */
static void
sensor_record(struct sched *s, struct jobstate *js, int64_t at, int64_t found,
	      const char *error, bool advance, int64_t since)
{
	struct err err;

	js->st.has_late_checked = true;
	js->st.late_checked_at = at;
	js->st.late_found = found;
	snprintf(js->st.late_error, sizeof js->st.late_error, "%s",
		 error ? error : "");
	if (advance) {
		js->st.has_late_since = true;
		js->st.late_since = since;
	}
	if (jobstate_save(s, js, &err) < 0)
		log_err("job=%s late_data: %s", js->name, err.msg);
}

/* Order partitions. */
static int
sensor_part_cmp(const void *a, const void *b)
{
	part_t x = *(const part_t *)a, y = *(const part_t *)b;

	return x < y ? -1 : x > y;
}

/* A late_data check finished: enqueue what it found as one request. */
static void
sensor_done_cb(struct exec_run *run)
{
	struct sensor_run *sr = run->data;
	struct sched *s = sr->s;
	struct jobstate *js = jobstate_get(s, sr->job);
	int j = config_job_index(s->cfg, sr->job);
	const struct job_def *jd = j >= 0 ? &s->cfg->jobs[j] : NULL;
	int64_t now = clock_now_ms();
	struct sched_req rq = { .job = j, .kind = "late_data",
				.reason = "late_data sensor" };
	part_t *parts = NULL;
	size_t n = 0;
	char msg[ERR_MSG_MAX];
	struct err err;

	js->sensor = NULL;
	if (run->cancelled || s->closing || jd == NULL || jd->late_data == NULL)
		goto out;
	if (run->failed) {
		log_err("job=%s late_data check failed: %s", sr->job, run->error);
		sensor_record(s, js, now, 0, run->error, false, 0);
		goto out;
	}
	parts = xcalloc(run->nvalues, sizeof *parts);
	for (size_t i = 0; i < run->nvalues; i++) {
		if (part_parse_key(jd->grain, run->values[i], &parts[n], &err) < 0 ||
		    (jd->has_start && parts[n] < jd->start) ||
		    (jd->has_end && parts[n] > jd->end)) {
			snprintf(msg, sizeof msg, "late_data returned \"%.60s\","
				 " which is not a partition of %s (%s); its query"
				 " must return %s partition keys", run->values[i],
				 jd->name, err.msg[0] ? err.msg : "outside start..end",
				 grain_name(jd->grain));
			err_clear(&err);
			log_err("job=%s %s; nothing enqueued", jd->name, msg);
			sensor_record(s, js, now, 0, msg, false, 0);
			goto out;
		}
		err_clear(&err);
		n++;
	}
	qsort(parts, n, sizeof *parts, sensor_part_cmp);
	{
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (k == 0 || parts[k - 1] != parts[i])
				parts[k++] = parts[i];
		n = k;
	}
	if (n > (size_t)jd->max_backfill) {
		snprintf(msg, sizeof msg, "late_data found %zu partitions, above"
			 " max_backfill %d: nothing enqueued; backfill them in"
			 " bounded requests (backfillctl backfill %s"
			 " --dates-file F)", n, jd->max_backfill, jd->name);
		log_err("job=%s %s", jd->name, msg);
		sensor_record(s, js, now, (int64_t)n, msg, false, 0);
		goto out;
	}
	if (n > 0) {
		struct plan plan;
		int64_t id;
		char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

		part_key(jd->grain, parts[0], a);
		part_key(jd->grain, parts[n - 1], b);
		rq.parts = parts;
		rq.nparts = n;
		rq.from_key = a;
		rq.to_key = b;
		plan_init(&plan);
		if (sched_submit(s, &rq, true, &plan, &id, &err) < 0) {
			plan_free(&plan);
			log_err("job=%s late_data: cannot enqueue: %s", jd->name,
				err.msg);
			sensor_record(s, js, now, (int64_t)n, err.msg, false, 0);
			goto out;
		}
		plan_free(&plan);
		log_notice("job=%s request=%" PRId64 " late_data found %zu"
			   " partitions (%s..%s) with rows since %s", jd->name,
			   id, n, a, b, sr->since);
	}
	sensor_record(s, js, now, (int64_t)n, NULL, true, sr->started_ms);
out:
	exec_run_clear_results(run);
	config_unref(run->cfg);
	free(parts);
	free(sr);
	if (!s->closing && !s->draining)
		sched_schedule(s, false, -1);
}

/* Start job j's late_data check. */
static void
sensor_start(struct sched *s, int j, struct jobstate *js)
{
	const struct job_def *jd = &s->cfg->jobs[j];
	struct sensor_run *sr = xcalloc(1, sizeof *sr);

	sr->s = s;
	snprintf(sr->job, sizeof sr->job, "%s", jd->name);
	sr->started_ms = clock_now_ms();
	cal_format_iso_ms(js->st.has_late_since ? js->st.late_since :
			  s->started_ms, sr->since);
	snprintf(sr->part.key, sizeof sr->part.key, "late_data");
	sr->run.cfg = config_ref(s->cfg);
	sr->run.job = jd;
	sr->run.parts = &sr->part;
	sr->run.nparts = 1;
	sr->run.attempt = 1;
	sr->run.query_sql = jd->late_data->sql;
	sr->run.query_since = sr->since;
	sr->run.query_max = (size_t)jd->max_backfill * 4 + 1024;
	sr->run.done_cb = sensor_done_cb;
	sr->run.data = sr;
	js->sensor = sr;
	log_debug("job=%s late_data check since=%s", jd->name, sr->since);
	exec_submit(s->exec, &sr->run);
}

/*
 * Run the schedule (rule 6) for every clock-driven job, or only `job` after
 * a resume, and arm the timer for the earliest next due time.
 */
static void
sched_schedule(struct sched *s, bool resumed, int only)
{
	int64_t now = clock_now(), next = INT64_MAX;
	struct err err;

	if (s->closing || s->draining || s->store_failed)
		return;
	for (size_t i = 0; i < s->cfg->njobs; i++) {
		const struct job_def *j = &s->cfg->jobs[i];
		struct jobstate *js;
		part_t last, wm, first;
		int64_t gap;
		char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

		if (j->late_data != NULL) {
			js = jobstate_of(s, (int)i);
			int64_t at = sensor_next_check(s, j, js);

			if (!js->st.paused && js->sensor == NULL && at <= now) {
				sensor_start(s, (int)i, js);
				at = now + j->late_data->every;
			}
			if (!js->st.paused && at < next)
				next = at;
		}
		if (j->nupstream > 0 || !j->has_start)
			continue;
		js = jobstate_of(s, (int)i);
		if (js->st.paused)
			continue;
		if (js->st.has_watermark &&
		    part_parse_key(j->grain, js->st.watermark, &wm, NULL) == 0)
			;
		else
			wm = j->start - 1;
		last = sched_last_due(j->grain, j->ready_after, now);
		if (j->has_end && last > j->end)
			last = j->end;
		if (last > wm) {
			first = wm + 1;
			if (first < j->start)
				first = j->start;
			gap = last - first + 1;
			bool resume_here = resumed && (int)i == only;
			if (gap == 1) {
				if (sched_materialise(s, (int)i, last, last,
						      "schedule", &err) < 0)
					goto fail;
				/* a refused gap stays shown until it is filled
				 * (sched_job_view) */
				if (strcmp(js->st.catchup, "refused") != 0)
					snprintf(js->st.catchup, sizeof js->st.catchup,
						 "%s", j->catchup ? "ok" : "off");
			} else if ((j->catchup || resume_here) && gap <= j->max_catchup) {
				if (sched_materialise(s, (int)i, first, last,
						      "catchup", &err) < 0)
					goto fail;
				snprintf(js->st.catchup, sizeof js->st.catchup, "%s",
					 j->catchup ? "ok" : "off");
				js->st.gap_from[0] = js->st.gap_to[0] = '\0';
			} else if (!j->catchup && !resume_here) {
				/* catchup off: the older part of the gap is
				 * skipped, its newest due partition runs, and
				 * the job goes on with what comes due from now */
				part_key(j->grain, first, a);
				part_key(j->grain, last - 1, b);
				if (sched_materialise(s, (int)i, last, last,
						      "schedule", &err) < 0)
					goto fail;
				log_notice("job=%s catchup is off: skipped %" PRId64
					   " missed partitions %s..%s, running the"
					   " newest due one (backfill them if they"
					   " are needed)", j->name, gap - 1, a, b);
				snprintf(js->st.catchup, sizeof js->st.catchup, "off");
			} else {
				/* the command given is one the daemon accepts:
				 * the gap's first piece of at most max_backfill */
				part_t piece = gap > j->max_backfill ?
					first + j->max_backfill - 1 : last;
				char c[CAL_KEY_MAX], n[CAL_KEY_MAX];

				part_key(j->grain, first, a);
				part_key(j->grain, last, b);
				part_key(j->grain, piece, c);
				part_key(j->grain, piece < last ? piece + 1 : last, n);
				log_err("job=%s catchup refused: %" PRId64 " partitions"
					" missed (%s..%s), above max_catchup %d;"
					" nothing of the gap runs. Backfill it in"
					" bounded pieces of at most %d partitions:"
					" backfillctl backfill %s --from %s --to %s%s%s%s",
					j->name, gap, a, b, j->max_catchup,
					j->max_backfill, j->name, a, c,
					piece < last ? ", then the same from " : "",
					piece < last ? n : "",
					piece < last ? " on" : "");
				snprintf(js->st.catchup, sizeof js->st.catchup,
					 "refused");
				snprintf(js->st.gap_from, sizeof js->st.gap_from,
					 "%s", a);
				snprintf(js->st.gap_to, sizeof js->st.gap_to, "%s", b);
				{
					char range[2 * CAL_KEY_MAX + 2], why[256];

					snprintf(range, sizeof range, "%s..%s", a, b);
					snprintf(why, sizeof why, "catchup refused: %"
						 PRId64 " partitions missed, above"
						 " max_catchup %d", gap,
						 j->max_catchup);
					hooks_fire(s->hooks, j, HOOK_REFUSED,
						   s->cfg->hook_timeout, range, 0,
						   why);
				}
			}
			js->st.has_watermark = true;
			part_key(j->grain, last, js->st.watermark);
			if (jobstate_save(s, js, &err) < 0)
				goto fail;
		} else if (!js->st.has_watermark || !j->catchup) {
			const char *want = j->catchup ? "ok" : "off";
			if (strcmp(js->st.catchup, "refused") != 0 &&
			    strcmp(js->st.catchup, want) != 0) {
				snprintf(js->st.catchup, sizeof js->st.catchup,
					 "%s", want);
				jobstate_save(s, js, &err);
			}
		}
		/* next due time */
		part_t nextp = last > wm ? last + 1 : wm + 1;
		if (nextp < j->start)
			nextp = j->start;
		if (!j->has_end || nextp <= j->end) {
			int64_t due = sched_due_time(j->grain, j->ready_after, nextp);
			if (due < next)
				next = due;
		}
		continue;
fail:
		log_err("job=%s schedule: %s", j->name, err.msg);
	}
	uv_timer_stop(&s->due_timer);
	if (next != INT64_MAX) {
		int64_t delay = next > now ? (next - now) * 1000 : 0;
		/* re-read the clock at least daily: a suspended host's
		 * monotonic timer does not advance while it sleeps */
		if (delay > 86400000)
			delay = 86400000;
		uv_timer_start(&s->due_timer, sched_due_cb, (uint64_t)delay, 0);
	}
}

static void
sched_due_cb(uv_timer_t *t)
{
	struct sched *s = t->data;

	sched_schedule(s, false, -1);
}

void
sched_clock_changed(struct sched *s)
{
	sched_schedule(s, false, -1);
	sched_fresh_arm(s);
	sched_kick(s);
}

/* ---- freshness (fresh.h) and hooks ------------------------------------ */

/* A partition became late: say so once, and run the job's on_late. */
static void
sched_late_found_cb(const struct fresh_item *it, void *data)
{
	struct sched *s = data;
	const struct job_def *j = config_job(s->cfg, it->job);
	char why[128];

	snprintf(why, sizeof why, "not landed %" PRId64 " s after it was due",
		 it->deadline / 1000);
	log_warn("job=%s partition=%s late: %s (deadline)", it->job, it->key,
		 why);
	if (j != NULL)
		hooks_fire(s->hooks, j, HOOK_LATE, s->cfg->hook_timeout,
			   it->key, it->request, why);
}

/* The deadline timer, or a clock change: mark late what is due. */
static void
sched_late_cb(uv_timer_t *t)
{
	struct sched *s = t->data;

	sched_fresh_arm(s);
}

/* Mark late what is past its deadline now and arm the timer for the next
 * deadline (the daemon's clock; at least daily, as the due timer). */
static void
sched_fresh_arm(struct sched *s)
{
	int64_t now = clock_now_ms(), next;

	if (s->closing)
		return;
	fresh_advance(s->fresh, now, sched_late_found_cb, s);
	next = fresh_next(s->fresh);
	uv_timer_stop(&s->late_timer);
	if (next != INT64_MAX) {
		int64_t delay = next > now ? next - now : 0;

		if (delay > 86400000)
			delay = 86400000;
		uv_timer_start(&s->late_timer, sched_late_cb, (uint64_t)delay, 0);
	}
}

/* A run finished (not cancelled): its partitions that landed are no longer
 * owed, the downstream partitions waiting for them are owed from now, and
 * a last attempt that failed runs the job's on_failure. */
static void
sched_fresh_run_done(struct sched *s, struct active *a, enum mstate result,
		     int64_t now)
{
	size_t n = a->batch ? a->nentries : 1;
	const struct job_def *j = config_job(s->cfg, a->job_name);

	for (size_t i = 0; i < n; i++) {
		struct entry *e = a->entries[i];

		if (result == MS_FAILED && j != NULL)
			hooks_fire(s->hooks, j, HOOK_FAILURE,
				   s->cfg->hook_timeout, e->key, e->rq->id,
				   a->run.error[0] ? a->run.error : "failed");
		if (result != MS_SUCCEEDED)
			continue;
		fresh_done(s->fresh, a->job_name, e->key);
		for (size_t k = 0; k < a->nentries; k++) {
			struct entry *x = a->entries[k];

			if (a->batch && k != i)
				continue;
			for (size_t o = 0; o < x->nouts; o++) {
				const struct job_def *d = entry_job(s, x->outs[o]);

				if (d != NULL && d->deadline > 0)
					fresh_track(s->fresh, d->name,
						    x->outs[o]->part,
						    x->outs[o]->key, now,
						    d->deadline * 1000,
						    x->outs[o]->rq->id);
			}
		}
	}
	sched_fresh_arm(s);
}

/* At start: the open partitions of a loaded request that a job with a
 * deadline owes (scheduled ones since their due time, downstream ones
 * whose inputs are final since the request was made). */
static void
sched_fresh_loaded(struct sched *s, struct request *rq)
{
	bool sched_kind = strcmp(rq->kind, "schedule") == 0 ||
			  strcmp(rq->kind, "catchup") == 0;

	for (size_t i = 0; i < rq->n; i++) {
		struct entry *e = rq->items[i];
		const struct job_def *j = entry_job(s, e);
		bool pending = false;

		if (j == NULL || j->deadline <= 0 ||
		    e->state == MS_SUCCEEDED || e->state == MS_CANCELLED)
			continue;
		for (size_t k = 0; k < e->nins; k++)
			if (e->ins[k]->state == MS_QUEUED ||
			    e->ins[k]->state == MS_RUNNING)
				pending = true;
		if (e->downstream && !pending)
			fresh_track(s->fresh, j->name, e->part, e->key,
				    rq->created_at, j->deadline * 1000, rq->id);
		else if (!e->downstream && sched_kind && j->has_start &&
			 j->nupstream == 0)
			fresh_track(s->fresh, j->name, e->part, e->key,
				    sched_due_time(j->grain, j->ready_after,
						   e->part) * 1000,
				    j->deadline * 1000, rq->id);
	}
	sched_fresh_arm(s);
}

struct fresh_failed_ctx {
	struct sched *s;
	const struct job_def *j;
};

/* A scheduled partition whose newest run failed: still owed. */
static void
sched_fresh_failed_cb(const char *key, enum mstate st, void *data)
{
	struct fresh_failed_ctx *c = data;
	const struct job_def *j = c->j;
	part_t p;

	if (st != MS_FAILED || part_parse_key(j->grain, key, &p, NULL) < 0)
		return;
	fresh_track(c->s->fresh, j->name, p, key,
		    sched_due_time(j->grain, j->ready_after, p) * 1000,
		    j->deadline * 1000, 0);
}

/* At start: the scheduled partitions of jobs with a deadline whose newest
 * run failed (their requests may be closed): one range read of
 * partition_latest per such job, start to watermark. */
static void
sched_fresh_failed(struct sched *s)
{
	for (size_t i = 0; i < s->cfg->njobs; i++) {
		const struct job_def *j = &s->cfg->jobs[i];
		struct jobstate *js;
		struct fresh_failed_ctx c = { s, j };
		char first[CAL_KEY_MAX];
		struct err err;

		if (j->deadline <= 0 || !j->has_start || j->nupstream > 0)
			continue;
		js = jobstate_of(s, (int)i);
		if (!js->st.has_watermark)
			continue;
		part_key(j->grain, j->start, first);
		if (store_last_states(s->store, j->name, first, js->st.watermark,
				      sched_fresh_failed_cb, &c, &err) < 0)
			log_err("job=%s cannot read its failed partitions: %s",
				j->name, err.msg);
	}
	sched_fresh_arm(s);
}

/* After a reload: owed partitions follow their job's new deadline. */
static void
sched_fresh_reload(struct sched *s)
{
	/* jobs gone from the configuration: forget what they owed */
	for (size_t i = 0; i < s->njobstates; i++)
		if (config_job(s->cfg, s->jobstates[i]->name) == NULL)
			fresh_set_deadline(s->fresh, s->jobstates[i]->name, 0);
	for (size_t i = 0; i < s->cfg->njobs; i++)
		fresh_set_deadline(s->fresh, s->cfg->jobs[i].name,
				   s->cfg->jobs[i].deadline * 1000);
	sched_fresh_arm(s);
}

void
sched_set_hooks(struct sched *s, struct hooks *h)
{
	s->hooks = h;
}

struct open_ctx {
	sched_open_cb cb;
	void *data;
};

/* A late item, for sched_job_open. */
static void
sched_open_late_cb(const struct fresh_item *it, void *data)
{
	struct open_ctx *c = data;

	c->cb(it->part, MS_COUNT, c->data);
}

void
sched_job_open(struct sched *s, int job, sched_open_cb cb, void *data)
{
	const char *name = s->cfg->jobs[job].name;
	struct open_ctx c = { cb, data };

	for (struct request *rq = s->requests.next; rq != &s->requests;
	     rq = rq->next)
		for (size_t i = 0; i < rq->n; i++) {
			struct entry *e = rq->items[i];

			if ((e->state == MS_QUEUED || e->state == MS_RUNNING ||
			     e->state == MS_BLOCKED) &&
			    strcmp(e->job_name, name) == 0)
				cb(e->part, e->state, data);
		}
	fresh_each_late(s->fresh, name, sched_open_late_cb, &c);
}

void
sched_each_request(struct sched *s, sched_request_cb cb, void *data)
{
	for (struct request *rq = s->requests.next; rq != &s->requests;
	     rq = rq->next)
		cb(rq->id, rq->job, rq->kind, rq->created_at, data);
}

void
sched_on_run(struct sched *s,
	     void (*cb)(void *data, const struct sched_run_event *ev),
	     void *data)
{
	s->run_cb = cb;
	s->run_data = data;
}

/* ---- life cycle ------------------------------------------------------- */

/* Resize the per-job running counters to the configuration. */
static void
sched_index_jobs(struct sched *s)
{
	free(s->job_running);
	free(s->job_counts);
	free(s->js_by_job);
	s->js_by_job = xcalloc(s->cfg->njobs, sizeof *s->js_by_job);
	s->njob_running = s->cfg->njobs;
	s->job_running = xcalloc(s->njob_running, sizeof *s->job_running);
	s->job_counts = xcalloc(s->njob_running, sizeof *s->job_counts);
	for (struct request *rq = s->requests.next; rq != &s->requests; rq = rq->next) {
		for (size_t i = 0; i < rq->n; i++) {
			struct entry *e = rq->items[i];

			entry_resolve(s, e);
			if (e->job >= 0 && e->state < MS_COUNT)
				s->job_counts[e->job][e->state]++;
		}
	}
	for (struct active *a = s->actives.next; a != &s->actives; a = a->next) {
		a->job = config_job_index(s->cfg, a->job_name);
		if (a->job >= 0)
			s->job_running[a->job]++;
	}
}

int
sched_new(uv_loop_t *loop, struct store *store, struct exec *exec,
	  struct config *cfg, const char *log_dir, struct sched **out,
	  struct err *err)
{
	struct sched *s = xcalloc(1, sizeof *s);

	s->loop = loop;
	s->store = store;
	s->exec = exec;
	s->cfg = cfg;
	s->log_dir = xstrdup(log_dir);
	s->requests.next = s->requests.prev = &s->requests;
	s->actives.next = s->actives.prev = &s->actives;
	s->retry_at = INT64_MAX;
	s->started_ms = clock_now_ms();
	uv_timer_init(loop, &s->retry_timer);
	s->retry_timer.data = s;
	uv_timer_init(loop, &s->due_timer);
	s->due_timer.data = s;
	uv_timer_init(loop, &s->late_timer);
	s->late_timer.data = s;
	s->fresh = fresh_new();
	uv_idle_init(loop, &s->kick);
	s->kick.data = s;
	sched_index_jobs(s);
	*out = s;
	(void)err;
	return 0;
}

struct load_ctx {
	struct sched *s;
	struct request *rq;
};

/* Rebuild one open manifest row in memory. */
static int
sched_load_cb(const struct store_open_row *row, void *data, struct err *err)
{
	struct load_ctx *lc = data;
	struct entry *e;

	if (lc->rq == NULL || lc->rq->id != row->request_id) {
		lc->rq = request_new(lc->s, row->request_id, row->rq_job,
				     row->rq_kind, row->rq_created_at);
		lc->rq->cap = row->rq_concurrency;
		lc->rq->fail_fast = row->rq_fail_fast;
	}
	e = request_add_entry(lc->s, lc->rq, row->id, row->job, row->key,
			      row->seq, row->downstream, row->state);
	e->attempts = row->attempts;
	e->not_before = row->not_before;
	if (row->blocked_on)
		e->blocked_on = xstrdup(row->blocked_on);
	(void)err;
	return 0;
}

/* Recompute the input links of a loaded request from the mapping. */
static void
sched_link_loaded(struct sched *s, struct request *rq)
{
	for (size_t i = 0; i < rq->n; i++) {
		struct entry *o = rq->items[i];
		const struct job_def *oj = entry_job(s, o);

		if (!o->downstream || oj == NULL)
			continue;
		for (size_t k = 0; k < rq->n; k++) {
			struct entry *in = rq->items[k];
			const struct job_def *ij = entry_job(s, in);
			part_t out[2];
			int n;

			if (in == o || ij == NULL)
				continue;
			n = lineage_map(s->cfg, in->job, in->part, o->job, out);
			for (int m = 0; m < n; m++) {
				if (out[m] != o->part)
					continue;
				o->ins = realloc(o->ins, (o->nins + 1) * sizeof *o->ins);
				if (o->ins == NULL)
					abort();
				o->ins[o->nins++] = in;
				entry_link(in, o);
			}
		}
	}
}

struct probe {
	struct exec_run run;
	struct exec_part part;
	struct job_def job;
	struct sched *s;
};

/* A warehouse probe finished: say so when it failed.  Unreachable only
 * when connecting failed (the executor's record, which status shows);
 * the probe's query failing on a connection that works is another
 * matter. */
static void
probe_done_cb(struct exec_run *run)
{
	struct probe *p = run->data;
	const char *name = run->cfg->warehouses[p->job.warehouse].name;
	char why[8];
	int64_t at = 0;

	if (run->failed && !run->cancelled &&
	    exec_warehouse_state(p->s->exec, name, why, sizeof why, &at) > 0)
		log_warn("warehouse=%s answers, but its probe failed: %s", name,
			 run->error);
	else if (run->failed && !run->cancelled)
		log_warn("warehouse=%s unreachable: %s; its jobs' runs fail into"
			 " their retries until it answers", name, run->error);
	exec_run_clear_results(run);
	config_unref(run->cfg);
	free(p);
}

/* Connect to every warehouse once, so status can say which are reachable
 * before any run needs them. */
static void
sched_probe_warehouses(struct sched *s)
{
	for (size_t i = 0; i < s->cfg->nwarehouses; i++) {
		struct probe *p = xcalloc(1, sizeof *p);

		p->s = s;
		p->job.name = "(warehouse probe)";
		p->job.warehouse = (int)i;
		p->job.grain = GRAIN_DAY;
		snprintf(p->part.key, sizeof p->part.key, "probe");
		p->run.cfg = config_ref(s->cfg);
		p->run.job = &p->job;
		p->run.parts = &p->part;
		p->run.nparts = 1;
		p->run.attempt = 1;
		p->run.query_sql = "SELECT 1";
		p->run.query_max = 1;
		p->run.done_cb = probe_done_cb;
		p->run.data = p;
		exec_submit(s->exec, &p->run);
	}
}

int
sched_warehouse_state(struct sched *s, const char *name, char *error,
		      size_t errsz, int64_t *at_ms)
{
	return exec_warehouse_state(s->exec, name, error, errsz, at_ms);
}


struct orphans {
	struct proc_group *g;
	int64_t *run_ids;
	char (*what)[160];
	size_t n, cap;
};

/* Collect one run left running with a process group. */
static void
orphan_collect_cb(int64_t run_id, const char *job, const char *key,
		  int64_t pgid, int64_t proc_start, void *data)
{
	struct orphans *o = data;

	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 8;
		o->g = realloc(o->g, o->cap * sizeof *o->g);
		o->run_ids = realloc(o->run_ids, o->cap * sizeof *o->run_ids);
		o->what = realloc(o->what, o->cap * sizeof *o->what);
		if (o->g == NULL || o->run_ids == NULL || o->what == NULL)
			abort();
	}
	memset(&o->g[o->n], 0, sizeof o->g[o->n]);
	o->g[o->n].pgid = (pid_t)pgid;
	o->g[o->n].start = proc_start;
	o->run_ids[o->n] = run_id;
	snprintf(o->what[o->n], sizeof o->what[o->n], "job=%.64s partition=%.32s",
		 job ? job : "?", key ? key : "?");
	o->n++;
}

/*
 * Before runs left 'running' are queued again: end the command process
 * groups a crashed daemon left behind, so that a partition never runs
 * twice at once (proc.h).  Start-up waits at most 3 s for them: 2 s after
 * SIGTERM, 1 s after SIGKILL.
 */
static void
sched_end_orphans(struct sched *s)
{
	struct orphans o = { 0 };
	struct err err;

	struct proc_group *marked = NULL;
	size_t nmarked = 0, recorded;
	char marker[4200];

	if (store_orphans(s->store, orphan_collect_cb, &o, &err) < 0) {
		log_err("cannot read the runs a crash left running: %s", err.msg);
		return;
	}
	/* and the groups spawned but not recorded before the crash: found
	 * by the marker every command run carries (proc.h) */
	recorded = o.n;
	snprintf(marker, sizeof marker, "BACKFILLD_INSTANCE=%s",
		 s->log_dir ? s->log_dir : "");
	if (proc_find_marked(marker, &marked, &nmarked) == 0) {
		for (size_t i = 0; i < nmarked; i++) {
			bool known = false;

			for (size_t k = 0; k < recorded; k++)
				known |= o.g[k].pgid == marked[i].pgid;
			if (!known)
				orphan_collect_cb(0, "?", "?", marked[i].pgid,
						  marked[i].start, &o);
		}
	}
	free(marked);
	if (o.n > 0)
		proc_end_groups(o.g, o.n, 2000, 1000);
	for (size_t i = 0; i < o.n; i++) {
		if (!o.g[i].matched)
			log_info("%s run=%" PRId64 ": its process group %ld is"
				 " gone (or its pid is another program's now):"
				 " nothing to end", o.what[i], o.run_ids[i],
				 (long)o.g[i].pgid);
		else if (o.g[i].survived)
			log_err("%s run=%" PRId64 ": its process group %ld left"
				" by the previous daemon survived SIGKILL; the"
				" partition is queued again all the same",
				o.what[i], o.run_ids[i], (long)o.g[i].pgid);
		else if (o.run_ids[i] == 0)
			log_warn("ended process group %ld, a command run the"
				 " previous daemon started but had not recorded"
				 " (%s)", (long)o.g[i].pgid,
				 o.g[i].killed ? "SIGKILL" : "SIGTERM");
		else
			log_warn("%s run=%" PRId64 ": ended process group %ld"
				 " left running by the previous daemon (%s)",
				 o.what[i], o.run_ids[i], (long)o.g[i].pgid,
				 o.g[i].killed ? "SIGKILL" : "SIGTERM");
	}
	free(o.g);
	free(o.run_ids);
	free(o.what);
}

int
sched_start(struct sched *s, struct err *err)
{
	struct load_ctx lc = { s, NULL };
	int recovered = 0;
	int64_t now = clock_now_ms();

	sched_end_orphans(s);
	if (store_recover(s->store, now, &recovered, err) < 0 ||
	    store_latest_counts(s->store, sched_count_load_cb, s, err) < 0 ||
	    store_load_open(s->store, sched_load_cb, &lc, err) < 0)
		return -1;
	if (recovered > 0)
		log_warn("%d runs were interrupted by a stop or crash; their"
			 " partitions are queued again", recovered);
	for (struct request *rq = s->requests.next; rq != &s->requests; rq = rq->next) {
		sched_link_loaded(s, rq);
		for (size_t i = 0; i < rq->n; i++)
			entry_settle(s, rq->items[i], now);
		sched_fresh_loaded(s, rq);
	}
	sched_fresh_failed(s);
	/* requests that were complete but not marked so */
	for (struct request *rq = s->requests.next, *nx; rq != &s->requests; rq = nx) {
		nx = rq->next;
		request_changed(s, rq);
	}
	sched_probe_warehouses(s);
	sched_schedule(s, false, -1);
	sched_kick(s);
	return 0;
}

/* After a reload: queued or blocked partitions of jobs no longer in the
 * configuration can never run; cancel them so their requests finish.
 * Returns how many were cancelled. */
static int64_t
sched_cancel_orphans(struct sched *s)
{
	int64_t now = clock_now_ms(), n = 0;
	struct err err;

	for (struct request *rq = s->requests.next, *nx; rq != &s->requests;
	     rq = nx) {
		bool changed = false;

		nx = rq->next;
		for (size_t i = 0; i < rq->n; i++) {
			struct entry *e = rq->items[i];

			if (e->job >= 0 || (e->state != MS_QUEUED &&
					    e->state != MS_BLOCKED))
				continue;
			entry_set(s, e, MS_CANCELLED);
			if (store_item_set(s->store, e->id, MS_CANCELLED,
					   e->attempts, e->not_before,
					   "cancelled: the job is no longer in the"
					   " configuration", e->blocked_on, now,
					   &err) < 0)
				log_err("%s", err.msg);
			log_warn("job=%s partition=%s request=%" PRId64
				 " cancelled: the job is no longer configured",
				 e->job_name, e->key, rq->id);
			entry_settle_outs(s, e, now);
			changed = true;
			n++;
		}
		if (changed)
			request_changed(s, rq);
	}
	return n;
}

int64_t
sched_pending_of(struct sched *s, const char *job)
{
	int64_t n = 0;

	for (struct request *rq = s->requests.next; rq != &s->requests;
	     rq = rq->next)
		for (size_t i = 0; i < rq->n; i++) {
			const struct entry *e = rq->items[i];

			if ((e->state == MS_QUEUED || e->state == MS_BLOCKED) &&
			    strcmp(e->job_name, job) == 0)
				n++;
		}
	return n;
}

int64_t
sched_reload(struct sched *s, struct config *cfg)
{
	int64_t cancelled;

	config_unref(s->cfg);
	s->cfg = cfg;
	sched_index_jobs(s);
	sched_fresh_reload(s);
	cancelled = sched_cancel_orphans(s);
	sched_probe_warehouses(s);
	if (!s->draining)
		sched_schedule(s, false, -1);
	sched_kick(s);
	return cancelled;
}

int
sched_flush(struct sched *s)
{
	struct err err;

	if (store_flush(s->store, &err) == 0)
		return 0;
	/* rule 7: the turn's changes are rolled back and memory is ahead
	 * of the store; stop taking work, say so once, let main.c decide */
	if (!s->store_failed) {
		s->store_failed = true;
		s->store_failed_at = clock_now_ms();
		snprintf(s->store_error, sizeof s->store_error, "%s", err.msg);
		log_err("cannot commit to the state store: %s; no new runs start"
			" and nothing more is acknowledged until it can be written"
			" again: free space on its filesystem, backfilld resumes"
			" by itself", err.msg);
		if (s->store_cb)
			s->store_cb(s->store_data);
	}
	return -1;
}

bool
sched_store_failed(const struct sched *s, const char **error,
		   int64_t *since_ms)
{
	if (error)
		*error = s->store_error;
	if (since_ms)
		*since_ms = s->store_failed_at;
	return s->store_failed;
}

void
sched_on_store_failure(struct sched *s, void (*cb)(void *), void *data)
{
	s->store_cb = cb;
	s->store_data = data;
}

struct config *
sched_config(struct sched *s)
{
	return s->cfg;
}

struct store *
sched_store(struct sched *s)
{
	return s->store;
}

struct exec *
sched_exec(struct sched *s)
{
	return s->exec;
}

void
sched_set_throttle(struct sched *s, struct throttle *th)
{
	s->throttle = th;
}

struct throttle *
sched_throttle(struct sched *s)
{
	return s->throttle;
}

void
sched_poke(struct sched *s)
{
	sched_kick(s);
}

void
sched_requeue_warehouse(struct sched *s, const char *warehouse)
{
	for (struct active *a = s->actives.next; a != &s->actives; a = a->next) {
		const struct job_def *j = a->job >= 0 ? &s->cfg->jobs[a->job] : NULL;

		if (j == NULL || j->warehouse < 0 || a->requeue ||
		    strcmp(s->cfg->warehouses[j->warehouse].name, warehouse) != 0)
			continue;
		a->requeue = true;
		log_notice("job=%s partition=%s run=%" PRId64 " interrupted:"
			   " warehouse %s is above its critical load; queued"
			   " again, no attempt counted", a->job_name,
			   a->entries[0]->key, a->run.run_id, warehouse);
		exec_cancel(s->exec, &a->run);
	}
}

void
sched_drain(struct sched *s)
{
	s->draining = true;
	uv_timer_stop(&s->due_timer);
	uv_timer_stop(&s->retry_timer);
}

void
sched_cancel_running(struct sched *s)
{
	for (struct active *a = s->actives.next; a != &s->actives; a = a->next)
		exec_cancel(s->exec, &a->run);
}

int
sched_running(const struct sched *s)
{
	return s->nrunning;
}

int64_t
sched_queued(const struct sched *s)
{
	return s->nqueued - s->nrunning;
}

int64_t
sched_failed_total(const struct sched *s)
{
	return s->failed_total;
}

void
sched_on_change(struct sched *s, void (*cb)(void *data), void *data)
{
	s->change_cb = cb;
	s->change_data = data;
}

void
sched_on_idle(struct sched *s, void (*cb)(void *data), void *data)
{
	s->idle_cb = cb;
	s->idle_data = data;
	if (s->nrunning == 0 && cb)
		cb(data);
}

void
sched_close(struct sched *s)
{
	s->closing = 1;
	uv_close((uv_handle_t *)&s->retry_timer, NULL);
	uv_close((uv_handle_t *)&s->due_timer, NULL);
	uv_close((uv_handle_t *)&s->late_timer, NULL);
	uv_close((uv_handle_t *)&s->kick, NULL);
}

void
sched_free(struct sched *s)
{
	while (s->requests.next != &s->requests)
		request_free(s, s->requests.next);
	for (size_t i = 0; i < s->njobstates; i++) {
		free(s->jobstates[i]->name);
		free(s->jobstates[i]);
	}
	free(s->jobstates);
	fresh_free(s->fresh);
	free(s->js_by_job);
	free(s->job_running);
	free(s->job_counts);
	free(s->log_dir);
	config_unref(s->cfg);
	free(s);
}

/* ---- queries and operator actions ------------------------------------- */

int
sched_progress(struct sched *s, int64_t request_id, struct sched_progress *p,
	       struct err *err)
{
	struct request *rq = request_find(s, request_id);
	char job[128];
	bool finished;
	int64_t counts[MS_COUNT] = { 0 };

	if (rq != NULL) {
		request_progress(rq, clock_now_ms(), p);
		return 0;
	}
	if (store_request_get(s->store, request_id, job, sizeof job, &finished,
			      err) != 0)
		return err_set(err, EXIT_BAD_INPUT, "no request %" PRId64
			       ": see 'backfillctl runs' for request ids",
			       request_id);
	/* finished and gone from memory: count its rows in the store */
	memset(p, 0, sizeof *p);
	if (store_request_counts(s->store, request_id, counts, &p->elapsed_ms,
				 err) < 0)
		return -1;
	for (int i = 0; i < MS_COUNT; i++)
		p->total += counts[i];
	p->succeeded = counts[MS_SUCCEEDED];
	p->failed = counts[MS_FAILED];
	p->blocked = counts[MS_BLOCKED];
	p->cancelled = counts[MS_CANCELLED];
	p->finished = true;
	return 1;
}

void *
sched_watch(struct sched *s, int64_t request_id, sched_watch_cb cb, void *data)
{
	struct request *rq = request_find(s, request_id);
	struct sched_progress p;
	struct watch *w;

	if (rq == NULL)
		return NULL;
	request_progress(rq, clock_now_ms(), &p);
	if (p.finished)
		return NULL;
	w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->data = data;
	w->rq = rq;
	w->next = rq->watches;
	rq->watches = w;
	return w;
}

void
sched_unwatch(struct sched *s, void *handle)
{
	struct watch *w = handle;

	for (struct request *rq = s->requests.next; rq != &s->requests; rq = rq->next) {
		for (struct watch **pp = &rq->watches; *pp; pp = &(*pp)->next) {
			if (*pp == w) {
				*pp = w->next;
				free(w);
				return;
			}
		}
	}
}

int
sched_cancel_request(struct sched *s, int64_t request_id, int64_t *dropped,
		     struct err *err)
{
	struct request *rq = request_find(s, request_id);
	int64_t now = clock_now_ms();
	char job[128];
	bool finished;

	*dropped = 0;
	if (rq == NULL) {
		if (store_request_get(s->store, request_id, job, sizeof job,
				      &finished, err) != 0)
			return err_set(err, EXIT_BAD_INPUT, "no request %" PRId64
				       ": see 'backfillctl runs' for request ids",
				       request_id);
		return 0;
	}
	if (store_begin(s->store, err) < 0)
		return -1;
	for (size_t i = 0; i < rq->n; i++) {
		struct entry *e = rq->items[i];

		if (e->state != MS_QUEUED && e->state != MS_BLOCKED)
			continue;
		if (store_item_set(s->store, e->id, MS_CANCELLED, e->attempts,
				   e->not_before, "cancelled by the operator",
				   e->blocked_on, now, err) < 0) {
			store_rollback(s->store);
			return -1;
		}
	}
	if (store_commit(s->store, err) < 0)
		return -1;
	for (size_t i = 0; i < rq->n; i++) {
		struct entry *e = rq->items[i];

		if (e->state != MS_QUEUED && e->state != MS_BLOCKED)
			continue;
		entry_set(s, e, MS_CANCELLED);
		(*dropped)++;
	}
	log_notice("request=%" PRId64 " cancelled: %" PRId64 " queued partitions"
		   " dropped", request_id, *dropped);
	request_changed(s, rq);
	return 0;
}

/* Can an item of a request be queued again by retry? */
static bool
entry_retriable(const struct entry *e)
{
	return e->job >= 0 && (e->state == MS_FAILED ||
			       e->state == MS_BLOCKED ||
			       e->state == MS_CANCELLED);
}

/* Bring a finished request back into memory from the store (retry). */
static struct request *
sched_load_request(struct sched *s, int64_t request_id, struct err *err)
{
	struct load_ctx lc = { s, NULL };
	int64_t failed_total = s->failed_total;

	/* its failures were counted when they happened */
	if (store_load_request(s->store, request_id, sched_load_cb, &lc,
			       err) < 0) {
		s->failed_total = failed_total;
		if (lc.rq != NULL)
			request_free(s, lc.rq);
		return NULL;
	}
	s->failed_total = failed_total;
	if (lc.rq == NULL) {
		err_set(err, EXIT_BAD_INPUT, "request %" PRId64 " has no"
			" partitions left in the state store (pruned):"
			" backfill them again", request_id);
		return NULL;
	}
	sched_link_loaded(s, lc.rq);
	return lc.rq;
}

int
sched_retry_request(struct sched *s, int64_t request_id, int64_t *queued,
		    struct err *err)
{
	struct request *rq = request_find(s, request_id);
	int64_t now = clock_now_ms(), n = 0;
	char job[128];
	bool finished, loaded = false;

	*queued = 0;
	if (rq == NULL) {
		if (store_request_get(s->store, request_id, job, sizeof job,
				      &finished, err) != 0)
			return err_set(err, EXIT_BAD_INPUT, "no request %" PRId64
				       ": see 'backfillctl runs' for request ids",
				       request_id);
		if ((rq = sched_load_request(s, request_id, err)) == NULL)
			return -1;
		loaded = true;
	}
	if (rq->counts[MS_RUNNING] > 0) {
		err_set(err, EXIT_BAD_INPUT, "request %" PRId64 " still has %"
			PRId64 " runs in flight: retry it once they have"
			" finished (backfillctl runs --request %" PRId64
			" --state running)", request_id,
			rq->counts[MS_RUNNING], request_id);
		goto refused;
	}
	for (size_t i = 0; i < rq->n; i++)
		n += entry_retriable(rq->items[i]);
	if (n == 0) {
		err_set(err, EXIT_BAD_INPUT, "request %" PRId64 " has nothing to"
			" retry: none of its partitions failed, is blocked or was"
			" cancelled (backfillctl runs --request %" PRId64 ")",
			request_id, request_id);
		goto refused;
	}
	if (store_begin(s->store, err) < 0)
		goto refused;
	if (store_request_reopen(s->store, request_id, err) < 0)
		goto fail_tx;
	for (size_t i = 0; i < rq->n; i++) {
		struct entry *e = rq->items[i];

		if (entry_retriable(e) &&
		    store_item_set(s->store, e->id, MS_QUEUED, 0, 0, NULL, NULL,
				   now, err) < 0)
			goto fail_tx;
	}
	if (store_commit(s->store, err) < 0)
		goto fail_tx;
	for (size_t i = 0; i < rq->n; i++) {
		struct entry *e = rq->items[i];

		if (!entry_retriable(e))
			continue;
		e->attempts = 0;
		e->not_before = 0;
		free(e->blocked_on);
		e->blocked_on = NULL;
		entry_set(s, e, MS_QUEUED);
	}
	*queued = n;
	log_notice("request=%" PRId64 " job=%s retry: %" PRId64 " partitions"
		   " queued again", request_id, rq->job, n);
	if (s->change_cb)
		s->change_cb(s->change_data);
	sched_kick(s);
	return 0;
fail_tx:
	store_rollback(s->store);
refused:
	if (loaded)
		request_free(s, rq);
	return -1;
}

int
sched_pause(struct sched *s, int job, bool pause, struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[job];
	struct jobstate *js = jobstate_of(s, job);
	bool was = js->st.paused;

	js->st.paused = pause;
	js->st.paused_at = pause ? clock_now_ms() : 0;
	if (jobstate_save(s, js, err) < 0) {
		js->st.paused = was;
		return -1;
	}
	log_notice("job=%s %s", j->name, pause ? "paused" : "resumed");
	if (!pause && was) {
		sched_schedule(s, true, job);
		sched_kick(s);
	}
	return 0;
}

void
sched_job_view(struct sched *s, int job, struct sched_job_view *v)
{
	const struct job_def *j = &s->cfg->jobs[job];
	struct jobstate *js = jobstate_of(s, job);
	int64_t now = clock_now();

	memset(v, 0, sizeof *v);
	v->paused = js->st.paused;
	v->has_watermark = js->st.has_watermark &&
		part_parse_key(j->grain, js->st.watermark, &v->watermark, NULL) == 0;
	if (j->nupstream > 0 || !j->has_start)
		v->catchup = "off";
	else if (strcmp(js->st.catchup, "refused") == 0)
		v->catchup = "refused";
	else
		v->catchup = j->catchup ? "ok" : "off";
	if (strcmp(js->st.catchup, "refused") == 0 && js->st.gap_from[0] &&
	    part_parse_key(j->grain, js->st.gap_from, &v->gap_from, NULL) == 0 &&
	    part_parse_key(j->grain, js->st.gap_to, &v->gap_to, NULL) == 0) {
		/* refused until every partition of the gap has succeeded:
		 * sched_gap_filled() clears it when the last one lands */
		v->has_gap = true;
	}
	if (j->nupstream == 0 && j->has_start) {
		part_t nextp = v->has_watermark ? v->watermark + 1 : j->start;
		part_t last = sched_last_due(j->grain, j->ready_after, now);
		if (nextp <= last)
			nextp = last + 1;
		if (nextp < j->start)
			nextp = j->start;
		if (!j->has_end || nextp <= j->end) {
			v->has_next_due = true;
			v->next_due = sched_due_time(j->grain, j->ready_after, nextp);
		}
	}
	if (j->late_data != NULL) {
		v->has_sensor = true;
		v->has_last_check = js->st.has_late_checked;
		v->last_check_ms = js->st.late_checked_at;
		v->next_check = sensor_next_check(s, j, js);
		v->found = js->st.late_found;
		v->sensor_error = js->st.late_error[0] ? js->st.late_error : NULL;
	}
	v->succeeded = js->last[MS_SUCCEEDED];
	v->failed = js->last[MS_FAILED];
	v->queued = s->job_counts[job][MS_QUEUED];
	v->running = s->job_counts[job][MS_RUNNING];
	v->blocked = s->job_counts[job][MS_BLOCKED];
	v->late = fresh_late(s->fresh, j->name, &v->late_oldest, NULL);
}

/* ---- staleness -------------------------------------------------------- */

struct stale_row {
	part_t part;        /* downstream partition */
	int in_job;
	part_t in_part;
	int64_t in_built;
};

struct stale_collect {
	struct sched *s;
	int dj;  /* the downstream job */
	int u;   /* the upstream job whose builds are read */
	struct stale_row *rows;
	size_t n, cap;
};

/* One built upstream partition: the downstream partitions it feeds. */
static int
stale_collect_cb(const char *key, int64_t built_at, bool has_inputs_at,
		 int64_t inputs_at, void *data, struct err *err)
{
	struct stale_collect *sc = data;
	const struct job_def *uj = &sc->s->cfg->jobs[sc->u];
	part_t p, out[2];
	int n;

	(void)has_inputs_at;
	(void)inputs_at;
	if (part_parse_key(uj->grain, key, &p, NULL) < 0)
		return 0;
	n = lineage_map(sc->s->cfg, sc->u, p, sc->dj, out);
	for (int i = 0; i < n; i++) {
		if (sc->n == sc->cap) {
			sc->cap = sc->cap ? sc->cap * 2 : 64;
			sc->rows = realloc(sc->rows, sc->cap * sizeof *sc->rows);
			if (sc->rows == NULL)
				return err_set(err, EXIT_INTERNAL, "out of memory");
		}
		sc->rows[sc->n++] = (struct stale_row){ out[i], sc->u, p, built_at };
	}
	return 0;
}

/* Order by downstream partition, then input job and partition. */
static int
stale_cmp(const void *a, const void *b)
{
	const struct stale_row *x = a, *y = b;

	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	if (x->in_job != y->in_job)
		return x->in_job < y->in_job ? -1 : 1;
	return x->in_part < y->in_part ? -1 : x->in_part > y->in_part;
}

int
sched_stale(struct sched *s, int only_job, sched_stale_cb cb, void *data,
	    struct err *err)
{
	const struct config *cfg = s->cfg;
	int rc = 0;

	for (size_t t = 0; t < cfg->njobs && rc == 0; t++) {
		int d = cfg->topo[t];
		const struct job_def *dj = &cfg->jobs[d];
		struct stale_collect sc = { .s = s, .dj = d };
		struct stale_input *in = NULL;

		if (dj->nupstream == 0 || (only_job >= 0 && only_job != d))
			continue;
		for (size_t u = 0; u < dj->nupstream && rc == 0; u++) {
			sc.u = dj->upstream_idx[u];
			rc = store_partitions_of(s->store, cfg->jobs[sc.u].name,
						 stale_collect_cb, &sc, err);
		}
		if (rc == 0 && sc.n > 0) {
			qsort(sc.rows, sc.n, sizeof *sc.rows, stale_cmp);
			in = xcalloc(sc.n, sizeof *in);
		}
		for (size_t a = 0; a < sc.n && rc == 0;) {
			size_t b = a, nin = 0;
			char key[CAL_KEY_MAX];
			int64_t built = -1, inputs = -1;
			bool has_built;

			while (b < sc.n && sc.rows[b].part == sc.rows[a].part)
				b++;
			part_key(dj->grain, sc.rows[a].part, key);
			has_built = store_partition_get(s->store, dj->name, key,
							&built, &inputs, NULL) == 0;
			for (size_t k = a; k < b; k++) {
				if (sc.rows[k].in_built > (has_built ? inputs : -1))
					in[nin++] = (struct stale_input){
						sc.rows[k].in_job, sc.rows[k].in_part,
						sc.rows[k].in_built };
			}
			if (nin > 0)
				rc = cb(d, sc.rows[a].part, has_built, built, in,
					nin, data, err);
			a = b;
		}
		free(in);
		free(sc.rows);
	}
	return rc;
}
