/*
 * sched_cutoff.c - early cut-off downstream (docs/cutoff.md), applied at
 * dispatch: the shell around cutoff_decide() (lib/cutoff.c).
 *
 * A downstream item is about to run once every input of its request has
 * landed (pick.c).  Each input's run read its partition's fingerprint
 * before and after its write, in its transaction (guard.c), and left
 * what it found in item->cut (sched_dispatch.c, sched_run_cuts).  When
 * every input came out identical or was itself skipped, and the item's
 * own partition was built by the job's current code and is not stale,
 * the item is not run: its manifest row, a runs row and its partition's
 * newest run read `skipped` with the reason, in one transaction, and
 * what waits for it is settled as for a success (chains: an unchanged
 * week skips its month).  The partition's build (partitions) is left as
 * it was: it still holds what its inputs hold.
 *
 * Rules that must hold:
 *  - only downstream items are skipped, never a request's own partitions;
 *  - a request with --no-cutoff skips nothing;
 *  - an input whose fingerprint is unknown (no table, a driver without a
 *    digest, a result lost and found committed) forces the run;
 *  - a skip the store refuses is undone in memory and the item runs.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutoff.h"
#include "fresh.h"
#include "log.h"
#include "pick.h"
#include "xalloc.h"

/* What input item `in` did, for cutoff_decide. */
static enum cutoff_input
sched_cutoff_input(const struct item *in)
{
	return in->state == MS_SKIPPED ? CUTOFF_IN_SKIPPED : in->cut;
}

/* The item's own last build: built, stale, its code version. */
static void
sched_cutoff_self(struct sched *s, const struct job_def *j,
		  const struct item *x, struct cutoff_self *self,
		  char *version, size_t vsz)
{
	int64_t built = 0, inputs = -1, newest;
	struct err err;

	memset(self, 0, sizeof *self);
	self->version = j->code_version;
	if (store_partition_get(s->store, j->name, x->key, &built, &inputs,
				version, vsz, &err) != 0)
		return;
	self->built = true;
	self->last_version = version[0] ? version : NULL;
	newest = sched_inputs_at(s, j, x->part);
	self->stale = newest > inputs;
	self->built_from_inputs = !self->stale;
}

/* Does cut-off skip item x? */
static bool
sched_cutoff_skips(struct sched *s, const struct item *x)
{
	enum cutoff_input *in;
	struct cutoff_self self;
	char version[64];
	const char *reason;
	bool skip;

	if (!x->downstream || x->nins == 0 || x->rq->no_cutoff || x->job < 0)
		return false;
	/* cheap first: any input that changed or is unknown forces a run */
	for (size_t i = 0; i < x->nins; i++) {
		enum cutoff_input k = sched_cutoff_input(x->ins[i]);

		if (k != CUTOFF_IN_SAME && k != CUTOFF_IN_SKIPPED)
			return false;
	}
	in = xcalloc(x->nins, sizeof *in);
	for (size_t i = 0; i < x->nins; i++)
		in[i] = sched_cutoff_input(x->ins[i]);
	sched_cutoff_self(s, &s->cfg->jobs[x->job], x, &self, version,
			  sizeof version);
	skip = cutoff_decide(&self, in, x->nins, false, &reason) ==
	       CUTOFF_SKIP;
	free(in);
	return skip;
}

/* Record the skip of item x (already skipped in memory). */
static int
sched_cutoff_record(struct sched *s, struct item *x, int64_t now,
		    int64_t *rid, struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[x->job];

	if (store_defer(s->store, err) < 0 || store_begin(s->store, err) < 0)
		return -1;
	if (store_run_start(s->store, x->id, x->rq->id, x->job_name, x->key,
			    x->attempts, now, j->code_version,
			    s->cfg->file_hash, 0, rid, err) < 0 ||
	    store_run_finish(s->store, *rid, MS_SKIPPED, now,
			     CUTOFF_REASON_UNCHANGED, -1, err) < 0 ||
	    store_partition_finished(s->store, x->job_name, x->key, *rid,
				     MS_SKIPPED, sched_count_prev_cb, s,
				     err) < 0 ||
	    sched_item_store(s, x, CUTOFF_REASON_UNCHANGED, now, err) < 0)
		return sched_tx_end(s, -1, err);
	return sched_tx_end(s, 0, err);
}

/* Skip item x: recorded, logged, what waits for it settled; false (x
 * as it was) when the store refused. */
static bool
sched_cutoff_skip(struct sched *s, struct item *x, int64_t now)
{
	enum cutoff_input cut = x->cut;
	struct request *rq = x->rq;
	int64_t rid = 0;
	struct err err;

	manifest_skip(&s->m, x);
	if (sched_cutoff_record(s, x, now, &rid, &err) < 0) {
		x->attempts--;
		x->cut = cut;
		manifest_set(&s->m, x, MS_QUEUED);
		log_err("job=%s partition=%s cannot record its skip: %s",
			x->job_name, x->key, err.msg);
		return false;
	}
	log_info("job=%s partition=%s request=%" PRId64 " run=%" PRId64
		 " skipped: " CUTOFF_REASON_UNCHANGED, x->job_name, x->key,
		 rq->id, rid);
	if (s->run_cb != NULL) {
		struct sched_run_event ev = { .job = x->job_name,
					      .state = MS_SKIPPED };

		s->run_cb(s->run_data, &ev);
	}
	sched_run_fact(s, config_job(s->cfg, x->job_name), &x, 1, rid,
		       MS_SKIPPED, NULL, now);
	fresh_done(s->fresh, x->job_name, x->key);
	sched_fresh_outs(s, x, now);
	manifest_settle_outs(&s->m, x);
	sched_apply(s, now);
	sched_request_changed(s, rq); /* may free rq and x */
	return true;
}

bool
sched_cutoff(struct sched *s, struct run *r, int64_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < r->nitems; i++) {
		struct item *x = r->items[i];

		if (sched_cutoff_skips(s, x) && sched_cutoff_skip(s, x, now))
			continue;
		r->items[k++] = x;
	}
	r->nitems = k;
	pick_run_trim(&s->m, r);
	return k == 0;
}
