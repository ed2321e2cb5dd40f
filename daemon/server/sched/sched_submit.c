/*
 * sched_submit.c - submission: a request's partitions filtered by
 * --reprocess, expanded downstream (plan.h), written to the store with
 * its items in one transaction (rule 1) and added to the manifest.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "text.h"
#include "xalloc.h"

/* Write a plan's request and items to the store; their ids in *id and
 * ids[]. */
static int
sched_store_plan(struct sched *s, const struct sched_req *rq,
		 const struct plan *plan, int64_t created_at, int64_t *id,
		 int64_t *ids, struct err *err)
{
	const struct config *cfg = s->cfg;
	struct store_request srq = {
	    .job = cfg->jobs[rq->job].name,
	    .kind = rq->kind,
	    .reason = rq->reason,
	    .from_key = rq->from_key,
	    .to_key = rq->to_key,
	    .reprocess = cmdspec_reprocess_name(rq->reprocess),
	    .reverse = rq->reverse,
	    .no_downstream = rq->no_downstream,
	    .created_at = created_at,
	    .concurrency = rq->concurrency,
	    .fail_fast = rq->fail_fast,
	    .downstream = rq->downstream,
	    .no_cutoff = rq->no_cutoff,
	    .budget_ms = rq->budget_s * 1000,
	};
	char key[CAL_KEY_MAX];

	if (store_begin(s->store, err) < 0)
		return -1;
	if (store_request_add(s->store, &srq, id, err) < 0)
		goto fail;
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		struct store_item si = {
		    .request_id = *id,
		    .job = cfg->jobs[it->job].name,
		    .key = key,
		    .seq = (int)i,
		    .downstream = it->downstream,
		    .state = MS_QUEUED,
		    .at = created_at,
		};

		part_key(cfg->jobs[it->job].grain, it->part, key);
		if (store_item_add(s->store, &si, &ids[i], err) < 0)
			goto fail;
	}
	return sched_tx_end(s, 0, err);
fail:
	return sched_tx_end(s, -1, err);
}

/* " budget=2h" for the log line of a request with a budget, or "". */
static const char *
budget_log(const struct sched_req *rq, char *buf, size_t size)
{
	char b[CAL_KEY_MAX];

	if (rq->budget_s <= 0)
		return "";
	cal_format_duration(rq->budget_s, b);
	snprintf(buf, size, " budget=%s", b);
	return buf;
}

/* Write the items of a plan as a new request and queue them; returns its
 * id via *id. */
static int
sched_commit_plan(struct sched *s, const struct sched_req *rq,
		  const struct plan *plan, int64_t *id, struct err *err)
{
	const struct config *cfg = s->cfg;
	const struct job_def *j = &cfg->jobs[rq->job];
	int64_t created_at = clock_now_ms();
	int64_t *ids = xcalloc(plan->n, sizeof *ids);
	char qreason[256], key[CAL_KEY_MAX], qbudget[64];
	struct request *r;

	if (sched_store_plan(s, rq, plan, created_at, id, ids, err) < 0) {
		free(ids);
		return -1;
	}
	r = manifest_request_add(&s->m, *id, j->name, rq->kind, created_at);
	r->cap = rq->concurrency;
	r->fail_fast = rq->fail_fast;
	r->no_cutoff = rq->no_cutoff;
	r->budget_ms = rq->budget_s * 1000;
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		struct item *x;

		part_key(cfg->jobs[it->job].grain, it->part, key);
		x = manifest_item_add(&s->m, r, ids[i], cfg->jobs[it->job].name,
				      key, (int)i, it->downstream, MS_QUEUED);
		for (size_t d = 0; d < it->ndeps; d++)
			manifest_link(r->items[plan->deps[it->dep_off + d]], x);
	}
	free(ids);
	log_info("request=%" PRId64 " job=%s kind=%s queued %zu partitions"
		 " (%zu downstream)%s%s%s",
		 *id, j->name, rq->kind, plan->n, plan->n - plan->nroot,
		 budget_log(rq, qbudget, sizeof qbudget),
		 rq->reason ? " reason=" : "",
		 rq->reason ? text_escape(rq->reason, qreason, sizeof qreason)
			    : "");
	sched_want(s, SCHED_WANT_DISPATCH);
	return 0;
}

int
sched_queue_plan(struct sched *s, const struct sched_req *rq,
		 const struct plan *plan, int64_t *request_id, struct err *err)
{
	*request_id = 0;
	if (plan->n == 0)
		return 0;
	return sched_commit_plan(s, rq, plan, request_id, err);
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

/* Read the newest state of each of the request's partitions (for
 * --reprocess failed or missing). */
static int
sched_last_states(struct sched *s, const struct sched_req *rq,
		  struct last_filter *lf, struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[rq->job];

	lf->n = rq->nparts;
	lf->keys = xcalloc(lf->n, sizeof *lf->keys);
	lf->states = xcalloc(lf->n, sizeof *lf->states);
	for (size_t i = 0; i < lf->n; i++) {
		part_key(j->grain, rq->parts[i], lf->keys[i]);
		lf->states[i] = MS_COUNT; /* never ran */
	}
	return store_last_states(s->store, j->name, lf->keys[0],
				 lf->keys[lf->n - 1], last_filter_cb, lf, err);
}

int
sched_submit(struct sched *s, const struct sched_req *rq, bool commit,
	     struct plan *plan, int64_t *request_id, struct err *err)
{
	struct last_filter lf = {0};
	int rc = -1;

	*request_id = 0;
	if (rq->reprocess != REPROCESS_ALL && rq->nparts > 0 &&
	    sched_last_states(s, rq, &lf, err) < 0)
		goto out;
	for (size_t i = 0; i < rq->nparts; i++) {
		size_t k = rq->reverse ? rq->nparts - 1 - i : i;

		if (rq->reprocess == REPROCESS_FAILED &&
		    lf.states[k] == MS_SUCCEEDED)
			continue;
		if (rq->reprocess == REPROCESS_MISSING &&
		    lf.states[k] != MS_COUNT)
			continue;
		plan_add_root(plan, rq->job, rq->parts[k]);
	}
	if (plan->n > 0 && !rq->no_downstream)
		plan_expand(plan, s->cfg, rq->reverse, rq->keep);
	rc = 0;
	if (commit)
		rc = sched_queue_plan(s, rq, plan, request_id, err);
out:
	free(lf.keys);
	free(lf.states);
	return rc;
}
