/*
 * estimate.c - how long a plan should take (estimate.h).
 */
#include <stdlib.h>
#include <string.h>

#include "estimate.h"
#include "json.h"
#include "pick.h"
#include "xalloc.h"

/* Order two durations for qsort. */
static int
estimate_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The median of ms[0..n), sorting it. */
int64_t
estimate_median(int64_t *ms, size_t n)
{
	if (n == 0)
		return 0;
	qsort(ms, n, sizeof *ms, estimate_cmp);
	if (n % 2)
		return ms[n / 2];
	return (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

/* The concurrency job j's runs get: its own, within the pool and the
 * warehouse's connections; 1 for a running total, whose days run one
 * after the other (plan.h, Cascades). */
int
estimate_concurrency(const struct config *cfg, int j)
{
	const struct job_def *jd = &cfg->jobs[j];
	int c = jd->concurrency > 0 ? jd->concurrency : 1;

	if (jd->self_lookback > 0)
		return 1;

	if (cfg->max_concurrency > 0 && c > cfg->max_concurrency)
		c = cfg->max_concurrency;
	if (jd->warehouse >= 0) {
		/* SCHED-2's cap of its warehouse, as dispatch applies it */
		int64_t cap = pick_wh_cap(&cfg->warehouses[jd->warehouse]);

		if (cap > 0 && c > cap)
			c = (int)cap;
	}
	return c;
}

/* Estimate plan from each job's recent durations. */
int
estimate_plan(const struct config *cfg, const struct plan *plan, int cap,
	      estimate_durations_fn *fn, void *data, struct estimate *out,
	      struct err *err)
{
	size_t *runs = xcalloc(cfg->njobs, sizeof *runs);
	int64_t ms[ESTIMATE_RUNS];
	int rc = 0;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < plan->n; i++)
		runs[plan->items[i].job]++;
	for (size_t j = 0; j < cfg->njobs && rc == 0; j++) {
		const struct job_def *jd = &cfg->jobs[j];
		size_t n = 0, r = runs[j];

		if (r == 0)
			continue;
		if (fn(jd->name, ms, ESTIMATE_RUNS, &n, data, err) < 0) {
			rc = -1;
			break;
		}
		if (n == 0) {
			out->missing = xreallocarray(out->missing,
						     out->nmissing + 1,
						     sizeof *out->missing);
			out->missing[out->nmissing++] = (int)j;
			continue;
		}
		double med = (double)estimate_median(ms, n) / 1000.0;
		int c = estimate_concurrency(cfg, (int)j);

		if (cap > 0 && c > cap)
			c = cap;

		if (jd->batch && jd->sql)
			r = jd->batch_size > 0 ?
			    (r + (size_t)jd->batch_size - 1) /
			    (size_t)jd->batch_size : 1;
		out->has = true;
		out->seconds += (double)((r + (size_t)c - 1) / (size_t)c) * med;
		if (jd->sql)
			out->warehouse_seconds += (double)r * med;
	}
	free(runs);
	if (rc < 0)
		estimate_free(out);
	return rc;
}

/* Free what estimate_plan allocated. */
void
estimate_free(struct estimate *e)
{
	free(e->missing);
	e->missing = NULL;
	e->nmissing = 0;
}

/* Append the estimate as the value of a JSON key: an object, or null. */
void
estimate_json(const struct config *cfg, const struct estimate *e,
	      struct buf *out)
{
	if (!e->has) {
		buf_addstr(out, "null");
		return;
	}
	buf_printf(out, "{\"seconds\": %.3f, \"warehouse_seconds\": %.3f,"
		   " \"no_history\": [", e->seconds, e->warehouse_seconds);
	for (size_t i = 0; i < e->nmissing; i++) {
		buf_addstr(out, i ? ", " : "");
		json_str(out, cfg->jobs[e->missing[i]].name);
	}
	buf_addstr(out, "]}");
}

/* Write seconds as "1h 2m", "3m 4s" or "5.2s". */
static void
estimate_duration(double s, struct buf *out)
{
	long long t = (long long)(s + 0.5);

	if (s < 60)
		buf_printf(out, "%.1fs", s);
	else if (t < 3600)
		buf_printf(out, "%lldm %llds", t / 60, t % 60);
	else
		buf_printf(out, "%lldh %lldm", t / 3600, t % 3600 / 60);
}

/* Append the estimate as one line of text. */
void
estimate_text(const struct config *cfg, const struct estimate *e,
	      struct buf *out)
{
	if (!e->has) {
		buf_addstr(out, "estimate: none (no history: no job of the plan"
			   " has a successful run yet)\n");
		return;
	}
	buf_addstr(out, "estimate: ");
	estimate_duration(e->seconds, out);
	buf_addstr(out, ", warehouse time ");
	estimate_duration(e->warehouse_seconds, out);
	buf_printf(out, " (median of the last %d successful runs per job)",
		   ESTIMATE_RUNS);
	for (size_t i = 0; i < e->nmissing; i++)
		buf_printf(out, "%s%s", i ? ", " : "; no history, not counted: ",
			   cfg->jobs[e->missing[i]].name);
	buf_addstr(out, "\n");
}
