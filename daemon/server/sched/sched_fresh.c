/*
 * sched_fresh.c - deadlines: the partitions a job with a deadline owes
 * (fresh.h), marked late on the daemon's clock, with the on_late and
 * on_failure hooks (hooks.h).
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fresh.h"
#include "hooks.h"
#include "log.h"
#include "schedule.h"

/* A partition became late: say so once, and run the job's on_late. */
static void
sched_late_found_cb(const struct fresh_item *it, void *data)
{
	struct sched *s = data;
	const struct job_def *j = config_job(s->cfg, it->job);
	char why[128];

	snprintf(why, sizeof why, "not landed %" PRId64 "s after it was due",
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
	sched_fresh_arm(t->data);
}

/* Mark late what is past its deadline now and arm the timer for the next
 * deadline (the daemon's clock; at least daily, as the due timer). */
void
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
		uv_timer_start(&s->late_timer, sched_late_cb, (uint64_t)delay,
			       0);
	}
}

/* The schedule materialised first..last of job (request_id): with a
 * deadline, each is owed from its due time. */
void
sched_fresh_materialised(struct sched *s, int job, part_t first, part_t last,
			 int64_t request_id)
{
	const struct job_def *j = &s->cfg->jobs[job];
	char key[CAL_KEY_MAX];

	if (j->deadline <= 0)
		return;
	for (part_t p = first; p <= last; p++) {
		cal_key(&j->cal, p, key);
		fresh_track(s->fresh, j->name, p, key,
			    schedule_cal_due_time(&j->cal, j->ready_after, p) *
				1000,
			    j->deadline * 1000, request_id);
	}
	sched_fresh_arm(s);
}

/* The downstream items waiting for item x are owed from now. */
void
sched_fresh_outs(struct sched *s, const struct item *x, int64_t now)
{
	for (size_t o = 0; o < x->nouts; o++) {
		const struct item *out = x->outs[o];
		const struct job_def *d =
		    out->job >= 0 ? &s->cfg->jobs[out->job] : NULL;

		if (d != NULL && d->deadline > 0)
			fresh_track(s->fresh, d->name, out->part, out->key, now,
				    d->deadline * 1000, out->rq->id);
	}
}

/* A downstream item was blocked by an input that failed (or is blocked):
 * with a deadline, it is owed from now, as after a restart (where the
 * open manifest's blocked items are owed since their request was made,
 * sched_fresh_loaded); true when it is.  The caller arms the timer. */
bool
sched_fresh_blocked(struct sched *s, const struct item *it, int64_t now)
{
	const struct job_def *j =
	    it->job >= 0 ? &s->cfg->jobs[it->job] : NULL;

	if (j == NULL || j->deadline <= 0 || !it->downstream)
		return false;
	fresh_track(s->fresh, j->name, it->part, it->key, now,
		    j->deadline * 1000, it->rq->id);
	return true;
}

/* Partition e of job j passed its reconcile checks: the job's
 * reconciled-through watermark moves to it if it is newer, saved in the
 * job's row (in the turn's transaction). */
static void
sched_fresh_reconciled(struct sched *s, const struct job_def *j,
		       const struct item *e)
{
	struct jobstate *js;
	struct err err;
	part_t had;

	if (j == NULL)
		return;
	js = sched_jobstate(s, j->name);
	if (js->st.has_reconciled &&
	    cal_parse_key(&j->cal, js->st.reconciled, &had, &err) == 0 &&
	    had >= e->part)
		return;
	js->st.has_reconciled = true;
	cal_key(&j->cal, e->part, js->st.reconciled);
	if (sched_jobstate_save(s, js, &err) < 0)
		log_err("job=%s cannot save reconciled-through %s: %s", j->name,
			js->st.reconciled, err.msg);
}

/* A run finished (not cancelled): its partitions that landed are no longer
 * owed, the downstream partitions waiting for them are owed from now, and
 * a last attempt that failed runs the job's on_failure, one that succeeded
 * with warnings its on_warning. */
void
sched_fresh_run_done(struct sched *s, struct active *a, enum mstate result,
		     int64_t now)
{
	char note[ERR_MSG_MAX];
	struct run *r = a->mr;
	size_t n = r->batch ? r->nitems : 1;
	const struct job_def *j = config_job(s->cfg, r->job_name);

	for (size_t i = 0; i < n; i++) {
		struct item *e = r->items[i];

		if (result == MS_FAILED && j != NULL)
			hooks_fire(s->hooks, j, HOOK_FAILURE,
				   s->cfg->hook_timeout, e->key, e->rq->id,
				   a->run.error[0] ? a->run.error : "failed");
		if (result != MS_SUCCEEDED)
			continue;
		if (sched_audit_reconciled(&a->run, r->batch ? i : 0))
			sched_fresh_reconciled(s, j, e);
		if (j != NULL && sched_audit_warning(&a->run, r->batch ? i : 0,
						     note, sizeof note))
			hooks_fire(s->hooks, j, HOOK_WARNING,
				   s->cfg->hook_timeout, e->key, e->rq->id,
				   note);
		fresh_done(s->fresh, r->job_name, e->key);
		for (size_t k = 0; k < r->nitems; k++)
			if (!r->batch || k == i)
				sched_fresh_outs(s, r->items[k], now);
	}
	sched_fresh_arm(s);
}

/* At start: the open partitions of a loaded request that a job with a
 * deadline owes (scheduled ones since their due time, downstream ones
 * whose inputs are final since the request was made). */
void
sched_fresh_loaded(struct sched *s, struct request *rq)
{
	for (size_t i = 0; i < rq->n; i++) {
		struct item *e = rq->items[i];
		const struct job_def *j =
		    e->job >= 0 ? &s->cfg->jobs[e->job] : NULL;
		bool pending = false;

		if (j == NULL || j->deadline <= 0 || e->state == MS_SUCCEEDED ||
		    e->state == MS_CANCELLED || e->state == MS_SKIPPED)
			continue;
		for (size_t k = 0; k < e->nins; k++)
			if (e->ins[k]->state == MS_QUEUED ||
			    e->ins[k]->state == MS_RUNNING)
				pending = true;
		if (e->downstream && !pending)
			fresh_track(s->fresh, j->name, e->part, e->key,
				    rq->created_at, j->deadline * 1000, rq->id);
		else if (!e->downstream && rq->priority &&
			 schedule_is_clock_job(j))
			fresh_track(s->fresh, j->name, e->part, e->key,
				    schedule_cal_due_time(&j->cal,
							  j->ready_after,
							  e->part) *
					1000,
				    j->deadline * 1000, rq->id);
	}
	sched_fresh_arm(s);
}

struct fresh_failed_ctx {
	struct sched *s;
	const struct job_def *j;
	struct part_range r; /* start..watermark: a hull's others dropped */
};

/* A scheduled partition whose newest run failed: still owed. */
static void
sched_fresh_failed_cb(const char *key, enum mstate st, void *data)
{
	struct fresh_failed_ctx *c = data;
	const struct job_def *j = c->j;
	part_t p;

	if (st != MS_FAILED || cal_parse_key(&j->cal, key, &p, NULL) < 0 ||
	    p < c->r.first || p > c->r.last)
		return;
	fresh_track(c->s->fresh, j->name, p, key,
		    schedule_cal_due_time(&j->cal, j->ready_after, p) * 1000,
		    j->deadline * 1000, 0);
}

/* At start: the scheduled partitions of jobs with a deadline whose newest
 * run failed (their requests may be closed): one range read of
 * partition_latest per such job, start to watermark. */
void
sched_fresh_failed(struct sched *s)
{
	for (size_t i = 0; i < s->cfg->njobs; i++) {
		const struct job_def *j = &s->cfg->jobs[i];
		struct jobstate *js;
		struct fresh_failed_ctx c = {s, j, {0, 0}};
		char lo[CAL_KEY_MAX], hi[CAL_KEY_MAX];
		struct err err;

		if (j->deadline <= 0 || !schedule_is_clock_job(j))
			continue;
		js = sched_jobstate_of(s, (int)i);
		if (!js->st.has_watermark)
			continue;
		if (cal_parse_key(&j->cal, js->st.watermark, &c.r.last,
				  &err) < 0) {
			log_err("job=%s cannot read its watermark: %s",
				j->name, err.msg);
			continue;
		}
		c.r.first = j->start;
		cal_key_hull(&j->cal, c.r, lo, hi);
		if (store_last_states(s->store, j->name, lo, hi,
				      sched_fresh_failed_cb, &c, &err) < 0)
			log_err("job=%s cannot read its failed partitions: %s",
				j->name, err.msg);
	}
	sched_fresh_arm(s);
}

/* After a reload: owed partitions follow their job's new deadline. */
void
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
