/*
 * trend_hist.h - the history trend checks are held against (trend.h,
 * docs/checks.md "Trend checks"), between the state store and a run.
 *
 * Before a run starts, on the loop thread, the values each trend metric
 * of its job recorded are read (trend_keep of them, newest first) and
 * handed to the run (exec_run.trend), which judges each partition after
 * its write against them.  After a successful run, the value of each
 * trend metric after the write is recorded for each of its partitions,
 * and (job, metric) trimmed to trend_keep values: the store holds at most
 * last + 1 values per trend metric, whatever the uptime.  At start and
 * reload, series no trend metric of the configuration names are dropped
 * and the others trimmed to their window (a window made smaller).
 */
#ifndef BACKFILLD_TREND_HIST_H
#define BACKFILLD_TREND_HIST_H

#include "config.h"
#include "exec.h"
#include "store.h"

/* The history of every metric of job j ([k] for metric k, n 0 for one
 * without trend:), or NULL when j has no trend metric.  A read that
 * fails is logged and leaves that metric's error set: its check fails,
 * saying so.  Free with trend_hist_free(h, j->nmetrics). */
struct exec_trend_hist *trend_hist_load(struct store *st,
					const struct job_def *j);
void trend_hist_free(struct exec_trend_hist *h, size_t n);
/* After run succeeded: each trend metric's value after the write for each
 * of its partitions (a NULL value is not recorded), by run_id, then the
 * bound.  Writes (the caller's transaction). */
int trend_hist_record(struct store *st, const struct exec_run *run,
		      int64_t run_id, struct err *err);
/* At start and reload: drop the series of metrics that have no trend
 * in cfg, trim the others to their bound.  Writes. */
int trend_hist_trim(struct store *st, const struct config *cfg,
		    struct err *err);

#endif
