/*
 * budget.h - a backfill request's budget of warehouse time (pure: no
 * I/O, no clock; backfilld.yaml(5), max_backfill_time; backfillctl(1),
 * backfill --budget).
 *
 * The rules, applied by cmd_backfill.c (admission) and sched_budget.c
 * (measurement):
 *
 *   BUDGET-1. The budget.  A backfill request's budget is its --budget,
 *      which may only lower its job's max_backfill_time; without
 *      --budget it is the job's max_backfill_time (the top-level one
 *      unless the job sets its own); 0 is none.  Other requests (the
 *      schedule, catchup, sensors, rerun) have none.  A budget applies
 *      only to a request of which some job's runs take warehouse time
 *      (BUDGET-3: a SQL job's, not a command's): one of commands alone
 *      has none, and its --budget is refused, since nothing would
 *      measure it.
 *   BUDGET-2. Admission.  A request whose estimated warehouse time (estimate.h:
 *      the figure --dry-run prints) is above its budget is refused whole,
 *      before anything is queued, naming both.  A request without an
 *      estimate (none of its jobs has a successful run yet) is admitted:
 *      only its measured time can stop it.
 *   BUDGET-3. Measurement.  Each run that carries partitions of the request and
 *      ran on a warehouse (a SQL job, budget_job_measured; not a command,
 *      whose process the daemon cannot see the warehouse time of; not a
 *      run that never started) adds
 *      its wall time, start to end, to the request's measured time once,
 *      whether it succeeded, failed or was interrupted: a batch or a chunk
 *      counts once, a run shared by several requests counts for each.
 *   BUDGET-4. The stop.  Once the measured time passes BUDGET_STOP_NUM /
 *      BUDGET_STOP_DEN (1.5) times the budget, the request starts nothing
 *      more: its queued and blocked partitions are cancelled with the
 *      reason (runs in flight finish and count).  It stops once, and
 *      only while something of it is left to start (a request whose last
 *      run took it past the line has nothing to stop: it is not listed as
 *      stopped); `retry` resumes it, its measured time from zero again.
 */
#ifndef BACKFILLD_BUDGET_H
#define BACKFILLD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "plan.h"

#define BUDGET_STOP_NUM 3 /* the stop: measured > budget * 3 / 2 */
#define BUDGET_STOP_DEN 2

/*
 * BUDGET-1: the budget (seconds, 0: none) of a request of job `job` whose
 * max_backfill_time is max_s (0: none), given --budget asked_s (0: not
 * given): 0 and *budget_s (and *source: "--budget" or
 * "max_backfill_time"), or -1 (EXIT_BAD_INPUT) when asked_s is above
 * max_s.
 */
int budget_of(const char *job, int64_t max_s, int64_t asked_s,
	      int64_t *budget_s, const char **source, struct err *err);

/* BUDGET-3: do job j's runs take warehouse time the budget counts (a SQL
 * job on a warehouse; not a command)? */
bool budget_job_measured(const struct job_def *j);

/*
 * BUDGET-1, for the request's plan (its downstream partitions included):
 * with a budget *budget_s from *source (budget_of) and no job of the plan
 * measured (budget_job_measured), a --budget is refused (-1,
 * EXIT_BAD_INPUT, saying why and what to do) and a max_backfill_time
 * dropped (*budget_s 0, *source NULL: the request has none); else 0,
 * unchanged.  `job` is the request's job.
 */
int budget_fit_plan(const struct config *cfg, const struct plan *plan,
		    const char *job, int64_t *budget_s, const char **source,
		    struct err *err);

/*
 * BUDGET-2: admit a request with budget budget_s (0: none) and, when
 * has_estimate, estimated warehouse time est_s: 0, or -1 (EXIT_BAD_INPUT)
 * with the refusal, which names the estimate, the budget and its source.
 */
int budget_admit(int64_t budget_s, const char *source, bool has_estimate,
		 double est_s, struct err *err);

/* BUDGET-3: the measured time (ms) after a run of run_ms more (a negative
 * run, a clock that went back, adds nothing; the sum saturates). */
int64_t budget_charge(int64_t spent_ms, int64_t run_ms);

/* BUDGET-4: has measured time spent_ms passed 1.5 times budget_ms (0:
 * none, never)? */
bool budget_over(int64_t budget_ms, int64_t spent_ms);

/* BUDGET-4: is a request stopped now?  Its budget and measured time, whether
 * it was stopped already, and how many of its partitions are queued or
 * blocked (left to start). */
bool budget_stop(int64_t budget_ms, int64_t spent_ms, bool stopped,
		 int64_t open);

/* BUDGET-4's reason, for the cancelled partitions, the log line and the
 * on_failure hook: "over budget: measured warehouse time ... passed 1.5 x
 * the budget of ...; backfillctl retry N resumes it" into out. */
void budget_stop_note(int64_t request, int64_t budget_ms, int64_t spent_ms,
		      char *out, size_t size);

/* A duration in seconds as text, said once: "5.2s", "30s" under a
 * minute, else "3m 4s (184 s)", "1h 2m (3720 s)", "2h (7200 s)"; whole
 * seconds rounded
 * down, as the on_failure hook's {budget} and {warehouse_seconds} are. */
void budget_duration(double s, char *out, size_t size);

#endif
