/*
 * budget.c - a backfill request's budget of warehouse time: the rules of
 * budget.h, without I/O.
 */
#include "budget.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "calendar.h"

int
budget_of(const char *job, int64_t max_s, int64_t asked_s, int64_t *budget_s,
	  const char **source, struct err *err)
{
	char a[CAL_KEY_MAX], m[CAL_KEY_MAX];

	*budget_s = 0;
	*source = NULL;
	if (asked_s > 0 && max_s > 0 && asked_s > max_s) {
		cal_format_duration(asked_s, a);
		cal_format_duration(max_s, m);
		return err_set(err, EXIT_BAD_INPUT, "--budget %s is above %s's"
			       " max_backfill_time %s: give at most %s (a"
			       " request's budget only lowers its job's)", a,
			       job, m, m);
	}
	if (asked_s > 0) {
		*budget_s = asked_s;
		*source = "--budget";
	} else if (max_s > 0) {
		*budget_s = max_s;
		*source = "max_backfill_time";
	}
	return 0;
}

bool
budget_job_measured(const struct job_def *j)
{
	return j != NULL && j->sql != NULL && j->command == NULL &&
	       j->warehouse >= 0;
}

int
budget_fit_plan(const struct config *cfg, const struct plan *plan,
		const char *job, int64_t *budget_s, const char **source,
		struct err *err)
{
	char b[CAL_KEY_MAX];

	if (*budget_s <= 0)
		return 0;
	for (size_t i = 0; i < plan->n; i++)
		if (budget_job_measured(&cfg->jobs[plan->items[i].job]))
			return 0;
	if (*source != NULL && strcmp(*source, "--budget") == 0) {
		cal_format_duration(*budget_s, b);
		return err_set(err, EXIT_BAD_INPUT, "refused: --budget %s would"
			       " not apply: %s runs a command, as does every"
			       " job of the request, and a budget counts only"
			       " the warehouse time of SQL jobs' runs; nothing"
			       " was queued. Drop --budget (--concurrency and"
			       " max_backfill bound a request of commands)", b,
			       job);
	}
	*budget_s = 0;
	*source = NULL;
	return 0;
}

void
budget_duration(double s, char *out, size_t size)
{
	/* whole seconds rounded down, as the on_failure hook gets them */
	long long t = s > 0 ? (long long)s : 0;

	if (s < 60 && s == (double)t)
		snprintf(out, size, "%llds", t);
	else if (s < 60)
		snprintf(out, size, "%.1fs", s);
	else if (t < 3600 && t % 60 == 0)
		snprintf(out, size, "%lldm (%lld s)", t / 60, t);
	else if (t < 3600)
		snprintf(out, size, "%lldm %llds (%lld s)", t / 60, t % 60, t);
	else if (t % 3600 / 60 == 0)
		snprintf(out, size, "%lldh (%lld s)", t / 3600, t);
	else
		snprintf(out, size, "%lldh %lldm (%lld s)", t / 3600,
			 t % 3600 / 60, t);
}

int
budget_admit(int64_t budget_s, const char *source, bool has_estimate,
	     double est_s, struct err *err)
{
	char e[48], b[48];

	if (budget_s <= 0 || !has_estimate || est_s <= (double)budget_s)
		return 0;
	budget_duration(est_s, e, sizeof e);
	budget_duration((double)budget_s, b, sizeof b);
	return err_set(err, EXIT_BAD_INPUT, "refused: the estimated warehouse"
		       " time %s is above the request's budget of %s, from %s;"
		       " nothing was queued. Split the request, or give it a"
		       " larger budget (backfill --dry-run shows the estimate)",
		       e, b, source ? source : "max_backfill_time");
}

int64_t
budget_charge(int64_t spent_ms, int64_t run_ms)
{
	if (run_ms <= 0)
		return spent_ms;
	if (spent_ms > INT64_MAX - run_ms)
		return INT64_MAX;
	return spent_ms + run_ms;
}

bool
budget_over(int64_t budget_ms, int64_t spent_ms)
{
	if (budget_ms <= 0)
		return false;
	/* spent > budget * 3 / 2, without overflow or rounding */
	if (budget_ms > INT64_MAX / BUDGET_STOP_NUM)
		return false;
	if (spent_ms > INT64_MAX / BUDGET_STOP_DEN)
		return true;
	return spent_ms * BUDGET_STOP_DEN > budget_ms * BUDGET_STOP_NUM;
}

bool
budget_stop(int64_t budget_ms, int64_t spent_ms, bool stopped, int64_t open)
{
	return !stopped && open > 0 && budget_over(budget_ms, spent_ms);
}

void
budget_stop_note(int64_t request, int64_t budget_ms, int64_t spent_ms,
		 char *out, size_t size)
{
	char sp[48], b[48];

	budget_duration((double)spent_ms / 1000.0, sp, sizeof sp);
	budget_duration((double)budget_ms / 1000.0, b, sizeof b);
	snprintf(out, size, "over budget: measured warehouse time %s passed"
		 " 1.5 x the budget of %s; backfillctl retry %" PRId64
		 " resumes it", sp, b, request);
}
