/*
 * sched_submit.c - submission: a request's partitions filtered by
 * --reprocess, expanded downstream (plan.h), written to the store with
 * its items in one transaction (SCHED-1) and added to the manifest; a
 * backfill whole (sched_backfill: the clock, the plan, its estimate and
 * budget, the proof, the queue) and the proof (sched_proof_*).
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "clock.h"
#include "log.h"
#include "schedule.h"
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

		cal_key(job_cal(&cfg->jobs[it->job]), it->part, key);
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
	char qreason[256], key[CAL_KEY_MAX], qbudget[64], qopen[96] = "";
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

		cal_key(job_cal(&cfg->jobs[it->job]), it->part, key);
		x = manifest_item_add(&s->m, r, ids[i], cfg->jobs[it->job].name,
				      key, (int)i, it->downstream, MS_QUEUED);
		for (size_t d = 0; d < it->ndeps; d++)
			manifest_link(r->items[plan->deps[it->dep_off + d]], x);
	}
	free(ids);
	if (plan->nopen > 0)
		snprintf(qopen, sizeof qopen, ", %zu downstream not closed"
			 " yet left out", plan->nopen);
	log_info("request=%" PRId64 " job=%s kind=%s queued %zu partitions"
		 " (%zu downstream%s)%s%s%s",
		 *id, j->name, rq->kind, plan->n, plan->n - plan->nroot, qopen,
		 budget_log(rq, qbudget, sizeof qbudget),
		 rq->reason ? " reason=" : "",
		 rq->reason ? text_escape(rq->reason, qreason, sizeof qreason)
			    : "");
	sched_want(s, SCHED_WANT_DISPATCH);
	return 0;
}

/* Write a plan sched_submit made (without commit) as a new request and
 * queue it: *request_id, or 0 when the plan is empty. */
static int
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
	bool in_text_order; /* false for a zone's hours (cal_key_hull) */
};

/* Remember the last state of one key (keys in text order: binary search;
 * otherwise, the hours of a zone at a fold, one by one). */
static void
last_filter_cb(const char *key, enum mstate st, void *data)
{
	struct last_filter *lf = data;
	size_t lo = 0, hi = lf->n;

	for (size_t i = 0; !lf->in_text_order && i < lf->n; i++)
		if (strcmp(lf->keys[i], key) == 0)
			lf->states[i] = st;
	if (!lf->in_text_order)
		return;

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
	char lo[CAL_KEY_MAX], hi[CAL_KEY_MAX];

	lf->n = rq->nparts;
	lf->keys = xcalloc(lf->n, sizeof *lf->keys);
	lf->states = xcalloc(lf->n, sizeof *lf->states);
	lf->in_text_order = cal_keys_sort_in_time(job_cal(j));
	for (size_t i = 0; i < lf->n; i++) {
		cal_key(job_cal(j), rq->parts[i], lf->keys[i]);
		lf->states[i] = MS_NONE; /* never ran */
	}
	cal_key_hull(job_cal(j), (struct part_range){rq->parts[0],
		     rq->parts[lf->n - 1]}, lo, hi);
	return store_last_states(s->store, j->name, lo, hi, last_filter_cb,
				 lf, err);
}

struct newest_walk {
	const struct cal *cal;
	struct plan_built *b;
};

/* Keep the newest of a job's built partitions (store_partitions_of). */
static int
sched_newest_cb(const char *key, int64_t built_at, bool has_inputs_at,
		int64_t inputs_at, void *data, struct err *err)
{
	struct newest_walk *w = data;
	struct err perr;
	part_t p;

	(void)built_at;
	(void)has_inputs_at;
	(void)inputs_at;
	(void)err;
	if (cal_parse_key(w->cal, key, &p, &perr) < 0)
		return 0; /* a key of an older calendar: not this one's */
	if (!w->b->has || p > w->b->newest) {
		w->b->has = true;
		w->b->newest = p;
	}
	return 0;
}

/* The newest built partition of each job in its own upstream that the
 * request's job is or feeds (plan.h, Cascades), into built[]; NULL
 * (*built) when there is none. */
static int
sched_built(struct sched *s, int job, struct plan_built **built,
	    struct err *err)
{
	const struct config *cfg = s->cfg;
	bool *below = xcalloc(cfg->njobs, sizeof *below);
	int rc = 0;

	*built = NULL;
	plan_downstream_of(cfg, job, below);
	below[job] = true;
	for (size_t d = 0; d < cfg->njobs && rc == 0; d++) {
		struct newest_walk w;

		if (!below[d] || cfg->jobs[d].self_lookback == 0)
			continue;
		if (*built == NULL)
			*built = xcalloc(cfg->njobs, sizeof **built);
		w.cal = job_cal(&cfg->jobs[d]);
		w.b = &(*built)[d];
		rc = store_partitions_of(s->store, cfg->jobs[d].name,
					 sched_newest_cb, &w, err);
	}
	free(below);
	return rc;
}

/* Nothing before its time (plan.h): with build_future off, the
 * downstream partitions whose interval has not closed now are left out
 * of the plan, the schedule's and a backfill's alike; the inputs still
 * to land in their windows plan them once they have closed. */
static void
sched_drop_open(const struct config *cfg, struct plan *plan)
{
	part_t *closed;

	if (cfg->build_future)
		return;
	closed = xcalloc(cfg->njobs, sizeof *closed);
	schedule_last_closed_all(cfg, clock_now(), closed);
	plan_drop_open(plan, closed);
	free(closed);
}

int
sched_submit(struct sched *s, const struct sched_req *rq, bool commit,
	     struct plan *plan, int64_t *request_id, struct err *err)
{
	struct last_filter lf = {0};
	struct plan_built *built = NULL;
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
		    lf.states[k] != MS_NONE)
			continue;
		plan_add_root(plan, rq->job, rq->parts[k]);
	}
	if (plan->n > 0 && !rq->no_downstream) {
		if (sched_built(s, rq->job, &built, err) < 0)
			goto out;
		plan_expand_built(plan, s->cfg, rq->reverse, rq->keep, built);
		sched_drop_open(s->cfg, plan);
	} else {
		plan_own_in_order(plan, s->cfg);
	}
	if (plan_check_bounds(plan, s->cfg, err) < 0)
		goto out;
	rc = 0;
	if (commit)
		rc = sched_queue_plan(s, rq, plan, request_id, err);
out:
	free(built);
	free(lf.keys);
	free(lf.states);
	return rc;
}

/* A job's recent durations, for estimate_plan. */
static int
sched_durations_cb(const char *job, int64_t *ms, size_t max, size_t *n,
		   void *data, struct err *err)
{
	return store_durations(data, job, ms, max, n, err);
}

int
sched_plan_estimate(struct sched *s, const struct sched_req *rq,
		    struct estimate *est, struct err *err)
{
	struct plan plan;
	int64_t id;
	int rc = -1;

	plan_init(&plan);
	if (sched_submit(s, rq, false, &plan, &id, err) == 0 &&
	    estimate_plan(s->cfg, &plan, rq->concurrency, sched_durations_cb,
			  s->store, est, err) == 0)
		rc = 0;
	plan_free(&plan);
	return rc;
}

/* A plan's estimate (none when the durations cannot be read: logged). */
static void
sched_estimate(struct sched *s, const struct plan *plan,
	       const struct sched_req *rq, struct estimate *est)
{
	struct err err;

	if (estimate_plan(s->cfg, plan, rq->concurrency, sched_durations_cb,
			  s->store, est, &err) < 0) {
		log_warn("event=estimate error=\"%s\"", err.msg);
		memset(est, 0, sizeof *est);
	}
}

int
sched_proof_check(const struct config *cfg, int j, struct err *err)
{
	const struct job_def *jd = &cfg->jobs[j];

	if (jd->sql == NULL)
		return err_set(err, EXIT_BAD_INPUT, "%s is a command job: the"
			       " proof runs a SQL job twice in one rolled-back"
			       " transaction, which a command cannot do",
			       jd->name);
	if (jd->table == NULL || jd->partition_column == NULL)
		return err_set(err, EXIT_BAD_INPUT, "%s declares no table: and"
			       " partition_column:, so there is no partition to"
			       " compare: add them to the job", jd->name);
	return 0;
}

bool
sched_proof_passed(const struct sched_proof *p)
{
	return !p->run.failed &&
	       p->run.verify_rows[1] == p->run.verify_rows[2] &&
	       strcmp(p->run.verify_sum[1], p->run.verify_sum[2]) == 0;
}

/* The copies a backfill keeps while its proof runs. */
static void
sched_backfill_drop(struct sched_backfill *bf)
{
	struct sched_req *rq = &bf->rq;

	free((char *)rq->reason);
	free((char *)rq->from_key);
	free((char *)rq->to_key);
	free((char *)rq->downstream);
	sched_backfill_free(bf);
	free(bf);
}

/* Free a proof whose run is over. */
static void
sched_proof_free(struct sched_proof *p)
{
	exec_run_clear_results(&p->run);
	if (p->run.cfg)
		config_unref(p->run.cfg);
	if (p->bf != NULL)
		sched_backfill_drop(p->bf);
	free(p);
}

/* Log the verdict of a proof that ended. */
static void
sched_proof_log(const struct sched_proof *p)
{
	const struct exec_run *r = &p->run;

	if (r->failed) {
		log_info("event=verify job=%s partition=%s result=error"
			 " error=\"%s\"", r->job->name, p->part.key, r->error);
		return;
	}
	log_info("event=verify job=%s partition=%s result=%s rows=%" PRId64
		 ",%" PRId64 ",%" PRId64, r->job->name, p->part.key,
		 sched_proof_passed(p) ? "idempotent" : "changed",
		 r->verify_rows[0], r->verify_rows[1], r->verify_rows[2]);
}

/* A reload while the proof ran: the held plan's jobs by name in the
 * running configuration, each still there with its grain; else refused
 * (the partitions were of the jobs the request was planned with). */
static int
sched_proof_remap(struct sched *s, struct sched_proof *p, struct err *err)
{
	const struct config *old = p->run.cfg, *cur = s->cfg;
	struct sched_backfill *bf = p->bf;
	struct plan *plan = &bf->plan;
	int *to = xcalloc(old->njobs ? old->njobs : 1, sizeof *to);
	int rc = 0;

	for (size_t j = 0; j < old->njobs; j++) {
		to[j] = config_job_index(cur, old->jobs[j].name);
		if (to[j] >= 0 && cur->jobs[to[j]].grain != old->jobs[j].grain)
			to[j] = -1;
	}
	for (size_t i = 0; i <= plan->n && rc == 0; i++) {
		int *job = i < plan->n ? &plan->items[i].job : &bf->rq.job;

		if (to[*job] < 0)
			rc = err_set(err, EXIT_BAD_INPUT, "%s was removed, or its"
				     " partition changed, by a reload while the"
				     " proof ran: nothing was queued; ask again",
				     old->jobs[*job].name);
	}
	for (size_t i = 0; i < plan->n && rc == 0; i++)
		plan->items[i].job = to[plan->items[i].job];
	if (rc == 0)
		bf->rq.job = to[bf->rq.job];
	free(to);
	return rc;
}

/* The proof's run ended (loop thread): a backfill's passed request is
 * queued with the plan made before it (its jobs found again after a
 * reload). */
static void
sched_proof_done_cb(struct exec_run *run)
{
	struct sched_proof *p = run->data;
	struct sched_backfill *bf = p->bf;

	p->running = false;
	if (p->orphan) {
		sched_proof_free(p);
		return;
	}
	sched_proof_log(p);
	if (bf != NULL && !bf->dry_run && sched_proof_passed(p)) {
		p->rc = sched_proof_remap(p->s, p, &p->err);
		if (p->rc == 0)
			p->rc = sched_queue_plan(p->s, &bf->rq, &bf->plan,
						 &bf->id, &p->err);
	}
	if (p->done)
		p->done(p->data);
}

struct sched_proof *
sched_proof_start(struct sched *s, int j, const char *key, struct err *err)
{
	const struct job_def *jd = &s->cfg->jobs[j];
	struct sched_proof *p;
	part_t k;

	if (sched_proof_check(s->cfg, j, err) < 0 ||
	    cal_parse_key(&jd->cal, key, &k, err) < 0)
		return NULL;
	p = xcalloc(1, sizeof *p);
	p->s = s;
	err_clear(&p->err);
	exec_part_set(&p->part, &jd->cal, k);
	p->run.cfg = config_ref(s->cfg);
	p->run.job = jd;
	p->run.parts = &p->part;
	p->run.nparts = 1;
	p->run.attempt = 1;
	p->run.verify = true;
	p->run.done_cb = sched_proof_done_cb;
	p->run.data = p;
	p->running = true;
	log_info("event=verify job=%s partition=%s result=started", jd->name,
		 p->part.key);
	exec_submit(s->exec, &p->run);
	return p;
}

void
sched_proof_release(struct sched_proof *p)
{
	if (p->running)
		p->orphan = true;
	else
		sched_proof_free(p);
}

/* Nothing before its time (schedule.h): the first partition whose
 * interval has not closed yet is refused, and the request with it,
 * unless the configuration's build_future allows it. */
static int
sched_check_closed(const struct config *cfg, const struct sched_req *rq,
		   struct err *err)
{
	const struct job_def *j = &cfg->jobs[rq->job];
	part_t last = schedule_last_closed(j, false, clock_now());

	for (size_t i = 0; i < rq->nparts && !cfg->build_future; i++)
		if (rq->parts[i] > last)
			return schedule_refuse_open(j, rq->parts[i], false,
						    "nothing was queued", err);
	return 0;
}

/* Hand bf's plan and estimate over to its proof, with copies of the
 * request's text (its partitions and kept jobs are planned already). */
static void
sched_backfill_hold(struct sched_backfill *bf)
{
	struct sched_backfill *h = xcalloc(1, sizeof *h);
	struct sched_req *rq = &h->rq;

	*h = *bf;
	h->proof = NULL;
	rq->parts = NULL;
	rq->nparts = 0;
	rq->keep = NULL;
	rq->reason = bf->rq.reason ? xstrdup(bf->rq.reason) : NULL;
	rq->from_key = bf->rq.from_key ? xstrdup(bf->rq.from_key) : NULL;
	rq->to_key = bf->rq.to_key ? xstrdup(bf->rq.to_key) : NULL;
	rq->downstream = bf->rq.downstream ? xstrdup(bf->rq.downstream) :
	    NULL;
	plan_init(&bf->plan);
	memset(&bf->est, 0, sizeof bf->est);
	bf->proof->bf = h;
}

int
sched_backfill(struct sched *s, struct sched_backfill *bf, struct err *err)
{
	struct sched_req *rq = &bf->rq;
	const struct job_def *j = &s->cfg->jobs[rq->job];
	bool dry = bf->dry_run;
	int64_t id;

	plan_init(&bf->plan);
	memset(&bf->est, 0, sizeof bf->est);
	bf->id = 0;
	bf->proof = NULL;
	if (sched_check_closed(s->cfg, rq, err) < 0 ||
	    sched_submit(s, rq, false, &bf->plan, &id, err) < 0)
		return -1;
	/* budget.h BUDGET-1: only a plan with warehouse time has a budget */
	if (budget_fit_plan(s->cfg, &bf->plan, j->name, &rq->budget_s,
			    &rq->budget_source, err) < 0)
		return -1;
	if (dry || rq->budget_s > 0)
		sched_estimate(s, &bf->plan, rq, &bf->est);
	/* budget.h BUDGET-2: refused whole, before the proof and the queue */
	if (!dry && budget_admit(rq->budget_s, rq->budget_source,
				 bf->est.has, bf->est.warehouse_seconds,
				 err) < 0)
		return -1;
	if (rq->nparts > 0 && (bf->verify || (j->verify && !dry))) {
		char vk[CAL_KEY_MAX];

		/* the first partition the request would run */
		cal_key(job_cal(j), rq->parts[rq->reverse ? rq->nparts - 1 : 0],
			 vk);
		if ((bf->proof = sched_proof_start(s, rq->job, vk,
						   err)) == NULL)
			return -1;
		sched_backfill_hold(bf);
		return 0;
	}
	if (dry)
		return 0;
	return sched_queue_plan(s, rq, &bf->plan, &bf->id, err);
}

void
sched_backfill_free(struct sched_backfill *bf)
{
	estimate_free(&bf->est);
	plan_free(&bf->plan);
}
