/*
 * estimate.h - how long a plan should take, from the jobs' recent runs
 * (pure: the durations come through a callback).
 *
 * Per job of the plan: the median of its newest ESTIMATE_RUNS successful
 * runs' durations (a median, not a mean: one run stuck behind a lock must
 * not double the estimate).  The job's partitions run in waves of its
 * effective concurrency (its `concurrency`, bounded by `max_concurrency`
 * and, on PostgreSQL, by the warehouse's `max_connections`); a batch job
 * runs once per request (batch: true) or once per chunk of N (batch: N).  Jobs of a plan run one after the other (the
 * downstream ones wait for their inputs), so their times add up:
 *
 *   seconds           = sum over jobs of ceil(runs / concurrency) * median
 *   warehouse_seconds = sum over SQL jobs of runs * median
 *
 * A job without a successful run has no history: it is left out and
 * named; a plan none of whose jobs has history has no estimate.
 */
#ifndef BACKFILLD_ESTIMATE_H
#define BACKFILLD_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "plan.h"
#include "buf.h"

#define ESTIMATE_RUNS 50 /* recent successful runs read per job */

struct estimate {
	bool has;                 /* some job of the plan has history */
	double seconds;           /* wall time, at the jobs' concurrency */
	double warehouse_seconds; /* time spent in warehouse transactions */
	int *missing;             /* jobs of the plan without history */
	size_t nmissing;
};

/* The newest durations (ms) of job, at most max, into ms; *n how many. */
typedef int estimate_durations_fn(const char *job, int64_t *ms, size_t max,
				  size_t *n, void *data, struct err *err);

/* The median of ms[0..n) (sorted in place); 0 when n is 0. */
int64_t estimate_median(int64_t *ms, size_t n);
/* The concurrency job j's runs get (at least 1). */
int estimate_concurrency(const struct config *cfg, int j);
/* Estimate plan; cap is the request's own --concurrency (0: none), which
 * lowers every job's; free with estimate_free. */
int estimate_plan(const struct config *cfg, const struct plan *plan, int cap,
		  estimate_durations_fn *fn, void *data, struct estimate *out,
		  struct err *err);
void estimate_free(struct estimate *e);
/* Append e as a JSON value (an object, or null without history). */
void estimate_json(const struct config *cfg, const struct estimate *e,
		   struct buf *out);
/* Append e as one line of text. */
void estimate_text(const struct config *cfg, const struct estimate *e,
		   struct buf *out);

#endif
