/*
 * sched_request.c - requests in the shell: the core's changes written and
 * logged (sched_apply), a landing's consequences elsewhere (SCHED-4,
 * sched_landed), a request loaded from the store, its progress and
 * watchers, the operator's cancel and retry of a request.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"

/* Log one item a rule moved. */
static void
sched_apply_log(const struct manifest_change *c)
{
	const struct item *it = c->item;

	switch (c->why) {
	case MANIFEST_BLOCKED:
		log_warn("job=%s partition=%s request=%" PRId64
			 " blocked: input %s %s",
			 it->job_name, it->key, it->rq->id,
			 c->cause_state == MS_FAILED ? "failed:"
						     : "is blocked:",
			 it->blocked_on);
		break;
	case MANIFEST_RELEASED:
		log_info("job=%s partition=%s request=%" PRId64
			 " released: its inputs landed",
			 it->job_name, it->key, it->rq->id);
		break;
	case MANIFEST_UNCONFIGURED:
		log_warn("job=%s partition=%s request=%" PRId64
			 " cancelled: the job is no longer configured",
			 it->job_name, it->key, it->rq->id);
		break;
	case MANIFEST_MARKED:
		log_notice("job=%s partition=%s request=%" PRId64
			   " out of its queue: %s", it->job_name, it->key,
			   it->rq->id, c->note);
		break;
	case MANIFEST_INPUT_CANCELLED:
	case MANIFEST_LANDED:
	case MANIFEST_FAIL_FAST:
	case MANIFEST_OVER_BUDGET: /* one line for the request: sched_budget.c */
		break;
	}
}

/* Write to the store, in order, the items the core's rules moved, and
 * log them; a downstream item blocked is owed from now (deadlines); the
 * changes are then forgotten. */
void
sched_apply(struct sched *s, int64_t now)
{
	struct err err;
	bool owed = false;

	for (size_t i = 0; i < s->m.nchanges; i++) {
		const struct manifest_change *c = &s->m.changes[i];

		if (sched_item_store(s, c->item, c->note[0] ? c->note : NULL,
				     now, &err) < 0)
			log_err("%s", err.msg);
		sched_apply_log(c);
		if (c->why == MANIFEST_BLOCKED)
			owed |= sched_fresh_blocked(s, c->item, now);
	}
	manifest_changes_clear(&s->m);
	if (owed)
		sched_fresh_arm(s);
}

/* Unlink and free a request, its items and its watchers. */
void
sched_request_free(struct sched *s, struct request *rq)
{
	struct watch *w, *wn;

	for (w = rq->data; w; w = wn) {
		wn = w->next;
		free(w);
	}
	manifest_request_free(&s->m, rq);
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
	struct item *it;

	(void)err;
	if (lc->rq == NULL || lc->rq->id != row->request_id) {
		lc->rq = manifest_request_add(&lc->s->m, row->request_id,
					      row->rq_job, row->rq_kind,
					      row->rq_created_at);
		lc->rq->cap = row->rq_concurrency;
		lc->rq->fail_fast = row->rq_fail_fast;
		lc->rq->no_cutoff = row->rq_no_cutoff;
		lc->rq->budget_ms = row->rq_budget_ms;
		lc->rq->spent_ms = row->rq_spent_ms;
		lc->rq->over_budget = row->rq_over_budget;
	}
	it = manifest_item_add(&lc->s->m, lc->rq, row->id, row->job, row->key,
			       row->seq, row->downstream, row->state);
	if (row->state != MS_SKIPPED)
		it->cut = cutoff_input_of_changed(row->changed);
	it->attempts = row->attempts;
	it->not_before = row->not_before;
	if (row->blocked_on)
		it->blocked_on = xstrdup(row->blocked_on);
	return 0;
}

/* At start: the open manifest of the store rebuilt in memory. */
int
sched_load_open(struct sched *s, struct err *err)
{
	struct load_ctx lc = {s, NULL};

	return store_load_open(s->store, sched_load_cb, &lc, err);
}

/* Bring a finished request back into memory from the store (retry). */
struct request *
sched_load_request(struct sched *s, int64_t request_id, struct err *err)
{
	struct load_ctx lc = {s, NULL};
	int64_t failed_total = s->m.failed_total;

	/* its failures were counted when they happened */
	if (store_load_request(s->store, request_id, sched_load_cb, &lc, err) <
	    0) {
		s->m.failed_total = failed_total;
		if (lc.rq != NULL)
			sched_request_free(s, lc.rq);
		return NULL;
	}
	s->m.failed_total = failed_total;
	if (lc.rq == NULL) {
		err_set(err, EXIT_BAD_INPUT,
			"request %" PRId64 " has no"
			" partitions left in the state store (pruned):"
			" backfill them again",
			request_id);
		return NULL;
	}
	manifest_relink(&s->m, lc.rq);
	return lc.rq;
}

/* Progress of a request. */
static void
sched_request_progress(const struct request *rq, int64_t now,
		       struct sched_progress *p)
{
	memset(p, 0, sizeof *p);
	p->total = (int64_t)rq->n;
	p->succeeded = rq->counts[MS_SUCCEEDED];
	p->failed = rq->counts[MS_FAILED];
	p->blocked = rq->counts[MS_BLOCKED];
	p->cancelled = rq->counts[MS_CANCELLED];
	p->skipped = rq->counts[MS_SKIPPED];
	p->running = rq->counts[MS_RUNNING];
	p->queued = rq->counts[MS_QUEUED];
	p->elapsed_ms = now - rq->created_at;
	p->finished = p->running == 0 && p->queued == 0;
}

/* Tell a request's watchers; drop them and maybe the request once it is
 * finished (kept open while items are blocked: a later success may
 * release them). */
void
sched_request_changed(struct sched *s, struct request *rq)
{
	struct sched_progress p;
	int64_t now = clock_now_ms();
	struct watch *w, *wn;
	struct err err;

	if (s->change_cb)
		s->change_cb(s->change_data);
	sched_request_progress(rq, now, &p);
	w = rq->data;
	if (p.finished)
		rq->data = NULL;
	for (; w; w = wn) {
		wn = w->next;
		w->cb(w->data, &p);
		if (p.finished)
			free(w);
	}
	if (!p.finished || rq->counts[MS_BLOCKED] > 0)
		return;
	if (store_request_finish(s->store, rq->id, now, false, &err) < 0) {
		log_err("request=%" PRId64 " %s", rq->id, err.msg);
		return;
	}
	log_info("request=%" PRId64 " job=%s finished: %" PRId64
		 " succeeded, %" PRId64 " skipped, %" PRId64 " failed, %" PRId64
		 " cancelled", rq->id, rq->job, p.succeeded, p.skipped, p.failed,
		 p.cancelled);
	sched_request_free(s, rq);
}

/* (job, key) landed through request `by`: release what its failed items
 * elsewhere blocked (SCHED-4) and tell their requests; the job's refused
 * catchup gap may be filled now (sched_gap_filled). */
void
sched_landed(struct sched *s, const char *job, const char *key,
	     struct request *by, int64_t now)
{
	int64_t *ids;
	size_t n = 0;

	manifest_landed(&s->m, job, key, by);
	ids = xcalloc(s->m.nchanges + 1, sizeof *ids);
	for (size_t i = 0; i < s->m.nchanges; i++)
		if (s->m.changes[i].why == MANIFEST_LANDED &&
		    s->m.changes[i].item->rq != by)
			ids[n++] = s->m.changes[i].item->rq->id;
	sched_apply(s, now);
	for (size_t i = 0; i < n; i++) {
		struct request *rq = manifest_request_find(&s->m, ids[i]);

		if (rq != NULL)
			sched_request_changed(s, rq);
	}
	free(ids);
	sched_gap_filled(s, job, key);
}

/* The error for a request id the store does not know. */
static int
sched_no_request(int64_t request_id, struct err *err)
{
	return err_set(err, EXIT_BAD_INPUT,
		       "no request %" PRId64
		       ": see 'backfillctl runs' for request ids",
		       request_id);
}

int
sched_progress(struct sched *s, int64_t request_id, struct sched_progress *p,
	       struct err *err)
{
	struct request *rq = manifest_request_find(&s->m, request_id);
	char job[128];
	bool finished;
	int64_t counts[MS_COUNT] = {0};

	if (rq != NULL) {
		sched_request_progress(rq, clock_now_ms(), p);
		return 0;
	}
	if (store_request_get(s->store, request_id, job, sizeof job, &finished,
			      err) != 0)
		return sched_no_request(request_id, err);
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
	p->skipped = counts[MS_SKIPPED];
	p->finished = true;
	return 1;
}

void *
sched_watch(struct sched *s, int64_t request_id, sched_watch_cb cb, void *data)
{
	struct request *rq = manifest_request_find(&s->m, request_id);
	struct sched_progress p;
	struct watch *w;

	if (rq == NULL)
		return NULL;
	sched_request_progress(rq, clock_now_ms(), &p);
	if (p.finished)
		return NULL;
	w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->data = data;
	w->rq = rq;
	w->next = rq->data;
	rq->data = w;
	return w;
}

void
sched_unwatch(struct sched *s, void *handle)
{
	struct watch *w = handle;
	struct request *rq;

	for (rq = s->m.requests.next; rq != &s->m.requests; rq = rq->next) {
		for (struct watch **pp = (struct watch **)&rq->data; *pp;
		     pp = &(*pp)->next) {
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
	struct request *rq = manifest_request_find(&s->m, request_id);
	int64_t now = clock_now_ms();
	char job[128];
	bool finished;

	*dropped = 0;
	if (rq == NULL) {
		if (store_request_get(s->store, request_id, job, sizeof job,
				      &finished, err) != 0)
			return sched_no_request(request_id, err);
		return 0;
	}
	if (store_begin(s->store, err) < 0)
		return -1;
	for (size_t i = 0; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (it->state != MS_QUEUED && it->state != MS_BLOCKED)
			continue;
		if (store_item_set(s->store, it->id, MS_CANCELLED, it->attempts,
				   it->not_before, "cancelled by the operator",
				   it->blocked_on, -1, now, err) < 0) {
			store_rollback(s->store);
			return -1;
		}
	}
	if (store_commit(s->store, err) < 0)
		return -1;
	*dropped = manifest_cancel(&s->m, rq);
	log_notice("request=%" PRId64 " cancelled: %" PRId64
		   " queued partitions"
		   " dropped",
		   request_id, *dropped);
	sched_request_changed(s, rq);
	return 0;
}

/* Refuse a retry that cannot go ahead: 0 when it can. */
static int
sched_retry_refused(const struct request *rq, struct err *err)
{
	int64_t n = 0;

	if (rq->counts[MS_RUNNING] > 0)
		return err_set(err, EXIT_BAD_INPUT,
			       "request %" PRId64 " still"
			       " has %" PRId64 " runs in flight: retry it once"
			       " they have finished (backfillctl runs --request"
			       " %" PRId64 " --state running)",
			       rq->id, rq->counts[MS_RUNNING], rq->id);
	for (size_t i = 0; i < rq->n; i++)
		n += manifest_retriable(rq->items[i]);
	if (n == 0)
		return err_set(err, EXIT_BAD_INPUT,
			       "request %" PRId64 " has"
			       " nothing to retry: none of its partitions"
			       " failed, is blocked or was cancelled"
			       " (backfillctl runs --request %" PRId64 ")",
			       rq->id, rq->id);
	return 0;
}

/* Reopen a request and queue its retriable items in the store. */
static int
sched_retry_store(struct sched *s, struct request *rq, int64_t now,
		  struct err *err)
{
	if (store_begin(s->store, err) < 0)
		return -1;
	if (store_request_reopen(s->store, rq->id, err) < 0)
		goto fail;
	/* budget.h, BUDGET-4: a resumed request's measured time starts again */
	if ((rq->spent_ms > 0 || rq->over_budget) &&
	    store_request_budget(s->store, rq->id, 0, 0, err) < 0)
		goto fail;
	for (size_t i = 0; i < rq->n; i++) {
		struct item *it = rq->items[i];

		if (manifest_retriable(it) &&
		    store_item_set(s->store, it->id, MS_QUEUED, 0, 0, NULL,
				   NULL, -1, now, err) < 0)
			goto fail;
	}
	return sched_tx_end(s, 0, err);
fail:
	return sched_tx_end(s, -1, err);
}

int
sched_retry_request(struct sched *s, int64_t request_id, int64_t *queued,
		    struct err *err)
{
	struct request *rq = manifest_request_find(&s->m, request_id);
	int64_t now = clock_now_ms();
	char job[128];
	bool finished, loaded = false;

	*queued = 0;
	if (rq == NULL) {
		if (store_request_get(s->store, request_id, job, sizeof job,
				      &finished, err) != 0)
			return sched_no_request(request_id, err);
		if ((rq = sched_load_request(s, request_id, err)) == NULL)
			return -1;
		loaded = true;
	}
	if (sched_retry_refused(rq, err) < 0 ||
	    sched_retry_store(s, rq, now, err) < 0) {
		if (loaded)
			sched_request_free(s, rq);
		return -1;
	}
	*queued = manifest_retry(&s->m, rq);
	rq->spent_ms = 0;
	rq->over_budget = false;
	log_notice("request=%" PRId64 " job=%s retry: %" PRId64 " partitions"
		   " queued again",
		   request_id, rq->job, *queued);
	if (s->change_cb)
		s->change_cb(s->change_data);
	sched_want(s, SCHED_WANT_DISPATCH);
	return 0;
}
