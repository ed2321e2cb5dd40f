/*
 * sched_mark.c - backfillctl mark (scheduler.h, docs/mark.md): partitions
 * recorded as built without running them, then their downstream rebuilt
 * as after any landing.
 *
 * Order: everything the mark writes (its request, its items, one runs row
 * per partition, their newest run and build) commits in one transaction
 * before anything moves in memory; so a store that refuses leaves both
 * as they were.  Then the items are added to the manifest, the marked
 * ones succeeded (no longer owed to a deadline), and the landing rule
 * (SCHED-4) runs for each of them:
 * their downstream items are ready once every input of the request is
 * final, and items of other requests that a failure of these partitions
 * blocked are released.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fresh.h"
#include "log.h"
#include "text.h"
#include "xalloc.h"

/* The note of each mark's runs row. */
static void
sched_mark_note(const struct sched_mark_req *mk, char *note, size_t size)
{
	snprintf(note, size, "marked succeeded by %s: %s", mk->by, mk->reason);
}

/* One marked partition's runs row, newest run and build. */
static int
sched_mark_store_part(struct sched *s, const struct job_def *j, part_t part,
		      int64_t request_id, int64_t item_id, const char *by,
		      const char *note, int64_t now, struct err *err)
{
	char key[CAL_KEY_MAX];
	int64_t run_id;
	int64_t inputs_at = j->nupstream > 0 || j->self_lookback > 0 ?
	    sched_inputs_at(s, j, part) : -1;

	cal_key(&j->cal, part, key);
	/* built by hand: what changed is unknown, so early cut-off rebuilds
	 * its downstream (docs/cutoff.md) */
	if (store_item_set(s->store, item_id, MS_SUCCEEDED, 1, 0, NULL, NULL,
			   cutoff_changed_of(CUTOFF_IN_UNKNOWN), now,
			   err) < 0 ||
	    store_run_start(s->store, item_id, request_id, j->name, key, 1, now,
			    j->code_version, s->cfg->file_hash, 0, &run_id,
			    err) < 0 ||
	    store_run_finish(s->store, run_id, MS_SUCCEEDED, now, note, -1,
			     err) < 0 ||
	    store_run_mark(s->store, run_id, by, err) < 0 ||
	    store_partition_finished(s->store, j->name, key, run_id,
				     MS_SUCCEEDED, sched_count_prev_cb, s, err) < 0)
		return -1;
	return store_partition_built(s->store, j->name, key, now, inputs_at,
				     run_id, j->code_version, err);
}

/* Write the mark's request, items and runs in one transaction. */
static int
sched_mark_store(struct sched *s, const struct sched_mark_req *mk,
		 const struct plan *plan, int64_t now, int64_t *id,
		 int64_t *ids, struct err *err)
{
	const struct config *cfg = s->cfg;
	const struct job_def *j = &cfg->jobs[mk->job];
	char from[CAL_KEY_MAX], to[CAL_KEY_MAX];
	char note[SCHED_MARK_REASON_MAX + 512];
	struct store_request srq = {
	    .job = j->name, .kind = "rerun", .reason = note,
	    .from_key = from, .to_key = to, .reprocess = "all",
	    .no_downstream = mk->no_downstream, .created_at = now,
	};
	char key[CAL_KEY_MAX];

	sched_mark_note(mk, note, sizeof note);
	cal_key(&j->cal, mk->parts[0], from);
	cal_key(&j->cal, mk->parts[mk->nparts - 1], to);
	if (store_defer(s->store, err) < 0 || store_begin(s->store, err) < 0)
		return -1;
	if (store_request_add(s->store, &srq, id, err) < 0)
		goto fail;
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		const struct job_def *ij = &cfg->jobs[it->job];
		struct store_item si = {
		    .request_id = *id, .job = ij->name, .key = key,
		    .seq = (int)i, .downstream = it->downstream,
		    .state = MS_QUEUED, .at = now,
		};

		cal_key(&ij->cal, it->part, key);
		if (store_item_add(s->store, &si, &ids[i], err) < 0)
			goto fail;
		if (!it->downstream &&
		    sched_mark_store_part(s, ij, it->part, *id, ids[i], mk->by,
					  note, now, err) < 0)
			goto fail;
	}
	return sched_tx_end(s, 0, err);
fail:
	return sched_tx_end(s, -1, err);
}

/* The committed mark in memory: its request and items, the marked ones
 * landed. */
static struct request *
sched_mark_memory(struct sched *s, const struct sched_mark_req *mk,
		  const struct plan *plan, int64_t id, const int64_t *ids,
		  int64_t now)
{
	const struct config *cfg = s->cfg;
	struct request *r;
	char key[CAL_KEY_MAX];

	r = manifest_request_add(&s->m, id, cfg->jobs[mk->job].name, "mark",
				 now);
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		struct item *x;

		cal_key(&cfg->jobs[it->job].cal, it->part, key);
		x = manifest_item_add(&s->m, r, ids[i], cfg->jobs[it->job].name,
				      key, (int)i, it->downstream,
				      it->downstream ? MS_QUEUED :
				      MS_SUCCEEDED);
		if (!it->downstream) {
			x->attempts = 1;
			x->cut = CUTOFF_IN_UNKNOWN; /* its downstream runs */
		}
		for (size_t d = 0; d < it->ndeps; d++)
			manifest_link(r->items[plan->deps[it->dep_off + d]], x);
	}
	return r;
}

/* A partition of the mark running now: refused (the run's end would
 * contradict the mark). */
static int
sched_mark_running(struct sched *s, const struct sched_mark_req *mk,
		   struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[mk->job];
	char key[CAL_KEY_MAX];
	struct item *x;

	for (size_t i = 0; i < mk->nparts; i++) {
		cal_key(&j->cal, mk->parts[i], key);
		if ((x = manifest_mark_running(&s->m, j->name, key)) != NULL)
			return err_set(err, EXIT_BAD_INPUT, "refused: %s %s is"
				       " running (request %" PRId64 "): wait for"
				       " it to end (backfillctl wait %" PRId64
				       "), then mark it if it is still needed;"
				       " nothing was marked", j->name, key,
				       x->rq->id, x->rq->id);
	}
	return 0;
}

/* Marked partition x of request r: its queued (and blocked) items in
 * other requests leave their queue (manifest_marked); with downstream,
 * it lands there as after a run (sched_landed: what its failures blocked
 * is released), without, nothing waiting for it is released or run.
 * The requests it moved are told. */
static void
sched_mark_others(struct sched *s, const struct sched_mark_req *mk,
		  struct request *r, struct item *x, int64_t now)
{
	const char *job = s->cfg->jobs[mk->job].name;
	char note[128];
	int64_t *ids;
	size_t n = 0;

	snprintf(note, sizeof note, "%smarked succeeded by request %" PRId64
		 "%s", mk->no_downstream ? "cancelled: " : "", r->id,
		 mk->no_downstream ? " (--no-downstream)" : "");
	manifest_marked(&s->m, job, x->key, r, mk->no_downstream, note);
	ids = xcalloc(s->m.nchanges + 1, sizeof *ids);
	for (size_t i = 0; i < s->m.nchanges; i++)
		if (s->m.changes[i].item->rq != r)
			ids[n++] = s->m.changes[i].item->rq->id;
	if (mk->no_downstream) {
		sched_apply(s, now);
		sched_gap_filled(s, job, x->key);
	} else {
		sched_landed(s, job, x->key, r, now);
	}
	for (size_t i = 0; i < n; i++) {
		struct request *o = manifest_request_find(&s->m, ids[i]);

		if (o != NULL)
			sched_request_changed(s, o);
	}
	free(ids);
}

int
sched_mark(struct sched *s, const struct sched_mark_req *mk,
	   int64_t *request_id, struct err *err)
{
	struct sched_req rq = {
	    .job = mk->job, .kind = "rerun", .parts = (part_t *)mk->parts,
	    .nparts = mk->nparts, .reprocess = REPROCESS_ALL,
	    .no_downstream = mk->no_downstream,
	};
	const char *job = s->cfg->jobs[mk->job].name;
	int64_t now = clock_now_ms(), id0, *ids = NULL;
	char qreason[256];
	struct plan plan;
	struct request *r;
	size_t nroot;
	int rc = -1;

	plan_init(&plan);
	if (sched_mark_running(s, mk, err) < 0 ||
	    sched_submit(s, &rq, false, &plan, &id0, err) < 0)
		goto out;
	ids = xcalloc(plan.n, sizeof *ids);
	if (sched_mark_store(s, mk, &plan, now, request_id, ids, err) < 0)
		goto out;
	r = sched_mark_memory(s, mk, &plan, *request_id, ids, now);
	nroot = plan.nroot;
	log_notice("request=%" PRId64 " job=%s marked %zu partitions succeeded"
		   " without running them (%zu downstream queued) by=%s"
		   " reason=%s", *request_id, job, nroot, plan.n - nroot,
		   mk->by, text_escape(mk->reason, qreason, sizeof qreason));
	for (size_t i = 0; i < r->n; i++) {
		struct item *x = r->items[i];

		if (x->downstream)
			continue;
		manifest_settle_outs(&s->m, x);
		fresh_done(s->fresh, job, x->key); /* no longer owed (late) */
		sched_mark_others(s, mk, r, x, now);
	}
	sched_apply(s, now);
	sched_request_changed(s, r); /* may finish (and free) it */
	sched_want(s, SCHED_WANT_DISPATCH);
	rc = 0;
out:
	free(ids);
	plan_free(&plan);
	return rc;
}
