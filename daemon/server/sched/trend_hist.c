/*
 * trend_hist.c - the history of trend checks (trend_hist.h).
 */
#include "trend_hist.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "trend.h"
#include "xalloc.h"

/* The values read into one metric's history. */
static void
trend_hist_cb(const char *key, double value, void *data)
{
	struct exec_trend_hist *h = data;

	h->keys = xreallocarray(h->keys, h->n + 1, sizeof *h->keys);
	h->values = xreallocarray(h->values, h->n + 1, sizeof *h->values);
	h->keys[h->n] = xstrdup(key != NULL ? key : "");
	h->values[h->n++] = value;
}

struct exec_trend_hist *
trend_hist_load(struct store *st, const struct job_def *j)
{
	struct exec_trend_hist *h = NULL;
	struct err err;

	for (size_t k = 0; k < j->nmetrics; k++) {
		const struct metric_def *m = &j->metrics[k];

		if (!m->trend.has)
			continue;
		if (h == NULL)
			h = xcalloc(j->nmetrics, sizeof *h);
		if (store_trend_values(st, j->name, m->name,
				       trend_keep(&m->trend), trend_hist_cb,
				       &h[k], &err) < 0) {
			log_err("job=%s metric=%s cannot read its trend history:"
				" %s", j->name, m->name, err.msg);
			for (size_t i = 0; i < h[k].n; i++)
				free(h[k].keys[i]);
			h[k].n = 0;
			h[k].error = xstrdup(err.msg);
		}
	}
	return h;
}

void
trend_hist_free(struct exec_trend_hist *h, size_t n)
{
	if (h == NULL)
		return;
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < h[k].n; i++)
			free(h[k].keys[i]);
		free(h[k].keys);
		free(h[k].values);
		free(h[k].error);
	}
	free(h);
}

int
trend_hist_record(struct store *st, const struct exec_run *run,
		  int64_t run_id, struct err *err)
{
	const struct job_def *j = run->job;

	if (run->guards == NULL || run->committed_before)
		return 0;
	for (size_t k = 0; k < j->nmetrics; k++) {
		const struct metric_def *m = &j->metrics[k];
		bool any = false;

		if (!m->trend.has)
			continue;
		for (size_t i = 0; i < run->nparts; i++) {
			const struct exec_metric_result *mr =
			    &run->guards[i].metrics[k];

			if (!mr->has_after)
				continue;
			if (store_trend_put(st, j->name, m->name,
					    run->parts[i].key, mr->after,
					    run_id, err) < 0)
				return -1;
			any = true;
		}
		if (any && store_trend_trim(st, j->name, m->name,
					    trend_keep(&m->trend), err) < 0)
			return -1;
	}
	return 0;
}

/* The series in the store, collected (trend_hist_trim). */
struct trend_series {
	char **job, **metric;
	size_t n;
};

static void
trend_series_cb(const char *job, const char *metric, void *data)
{
	struct trend_series *ts = data;

	ts->job = xreallocarray(ts->job, ts->n + 1, sizeof *ts->job);
	ts->metric = xreallocarray(ts->metric, ts->n + 1, sizeof *ts->metric);
	ts->job[ts->n] = xstrdup(job != NULL ? job : "");
	ts->metric[ts->n++] = xstrdup(metric != NULL ? metric : "");
}

/* The bound of (job, metric) in cfg: its trend's keep, 0 for none. */
static size_t
trend_hist_keep(const struct config *cfg, const char *job, const char *metric)
{
	const struct job_def *j = config_job(cfg, job);

	for (size_t k = 0; j != NULL && k < j->nmetrics; k++)
		if (strcmp(j->metrics[k].name, metric) == 0)
			return trend_keep(&j->metrics[k].trend);
	return 0;
}

int
trend_hist_trim(struct store *st, const struct config *cfg, struct err *err)
{
	struct trend_series ts = { NULL, NULL, 0 };
	int rc;

	rc = store_trend_series(st, trend_series_cb, &ts, err);
	for (size_t i = 0; rc == 0 && i < ts.n; i++)
		rc = store_trend_trim(st, ts.job[i], ts.metric[i],
				      trend_hist_keep(cfg, ts.job[i],
						      ts.metric[i]), err);
	for (size_t i = 0; i < ts.n; i++) {
		free(ts.job[i]);
		free(ts.metric[i]);
	}
	free(ts.job);
	free(ts.metric);
	return rc;
}
