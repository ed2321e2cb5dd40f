/*
 * sched_budget.c - budgets of warehouse time (budget.h), the shell of its
 * BUDGET-3 and BUDGET-4: each run's wall time charged to the requests with a
 * budget that it carried, written in the turn that records the run's end
 * (so a restart counts on from there); a request past 1.5 times its
 * budget stopped: its queued and blocked partitions cancelled with the
 * reason (manifest_over_budget), one log line, the job's on_failure hook
 * with the figures, and the count the metrics show.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>

#include "budget.h"
#include "hooks.h"
#include "log.h"

/* BUDGET-3: did the run take warehouse time?  A SQL job's run that started
 * (an interrupted one too); not a command, not a run that never did. */
static bool
sched_budget_counts(const struct active *a)
{
	if (!budget_job_measured(a->run.job))
		return false;
	return !a->run.not_started || a->run.cancelled;
}

/* BUDGET-4: stop rq, the reason in note. */
static void
sched_budget_stop(struct sched *s, struct request *rq, int64_t now)
{
	const struct job_def *j = config_job(s->cfg, rq->job);
	char note[256];
	int64_t n;

	budget_stop_note(rq->id, rq->budget_ms, rq->spent_ms, note,
			 sizeof note);
	n = manifest_over_budget(&s->m, rq, note);
	sched_apply(s, now);
	log_notice("request=%" PRId64 " job=%s stopped %s; %" PRId64
		   " partitions cancelled", rq->id, rq->job, note, n);
	sched_jobstate(s, rq->job)->budget_stops++;
	s->budget_none = false;
	if (j != NULL)
		hooks_fire_budget(s->hooks, j, s->cfg->hook_timeout, rq->id,
				  note, rq->budget_ms, rq->spent_ms);
}

/* Charge ms to rq, stop it past its budget, and write both. */
static void
sched_budget_charge(struct sched *s, struct request *rq, int64_t ms,
		    int64_t now)
{
	struct err err;

	rq->spent_ms = budget_charge(rq->spent_ms, ms);
	if (budget_stop(rq->budget_ms, rq->spent_ms, rq->over_budget,
			rq->counts[MS_QUEUED] + rq->counts[MS_BLOCKED]))
		sched_budget_stop(s, rq, now);
	if (store_defer(s->store, &err) < 0 ||
	    store_request_budget(s->store, rq->id, rq->spent_ms,
				 rq->over_budget ? now : 0, &err) < 0)
		log_err("request=%" PRId64 " cannot record its measured"
			" warehouse time: %s", rq->id, err.msg);
}

/* A run ended (sched_run_done_cb: its items recorded, not settled yet, its
 * configuration still held: run->job is in it): its wall time to each
 * request with a budget it carried, once each (a batch's items are of one
 * request, a shared run's each of another). */
void
sched_budget_run_done(struct sched *s, struct active *a, int64_t now)
{
	struct run *r = a->mr;

	if (!sched_budget_counts(a))
		return;
	for (size_t i = 0; i < (r->batch ? 1 : r->nitems); i++) {
		struct request *rq = r->items[i]->rq;

		if (rq->budget_ms > 0)
			sched_budget_charge(s, rq, now - a->started_at, now);
	}
}
