/*
 * trend.h - a metric held against the job's own recent history
 * (docs/checks.md, "Trend checks"): its value after the write against the
 * mean and standard deviation of the values the job's successful runs
 * recorded for the metric most recently, other partitions than this one.
 *
 *	metrics:
 *	  revenue: {sql: SUM(revenue_usd), trend: {last: 28, max_sigma: 3}}
 *
 * The rule, for a value v and the window's n values of mean m and sample
 * standard deviation s (n - 1 in the denominator):
 *   n < min_history         passes, "not enough history" (first loads)
 *   v is NULL               passes, no value to hold (min_rows guards it)
 *   s = 0                   passes only when v = m (a constant history
 *                           allows no move at all)
 *   otherwise               passes when |v - m| <= max_sigma * s
 * Pure: no I/O; the caller hands in the window, newest first.
 */
#ifndef BACKFILLD_TREND_H
#define BACKFILLD_TREND_H

#include <stdbool.h>
#include <stddef.h>

#define TREND_LAST_MIN 2
#define TREND_LAST_MAX 1000
#define TREND_MIN_HISTORY_DEFAULT 7

/* A metric's trend: (has false: none) */
struct trend_def {
	bool has;
	int last;         /* values in the window, TREND_LAST_MIN..MAX */
	double max_sigma; /* > 0 */
	int min_history;  /* fewest values to judge, 2..last; default
			   * min(TREND_MIN_HISTORY_DEFAULT, last) */
};

struct trend_stats {
	size_t n;
	double mean;
	double sd;  /* sample standard deviation; 0 for n < 2 */
};

enum trend_verdict {
	TREND_WITHIN,     /* passes */
	TREND_OUTSIDE,    /* fails (or warns) */
	TREND_TOO_LITTLE, /* passes: fewer than min_history values */
	TREND_NO_VALUE    /* passes: the metric is NULL */
};

struct trend_result {
	enum trend_verdict verdict;
	struct trend_stats st;
	bool has_sigma;
	double sigma; /* |v - m| / s; INFINITY when s = 0 and v != m */
};

/* Mean and sample standard deviation of v[0..n) (Welford's method). */
void trend_stats(const double *v, size_t n, struct trend_stats *out);
/* Judge value against the window hist[0..n) by t (the rule above). */
enum trend_verdict trend_judge(const double *hist, size_t n, bool has_value,
			       double value, const struct trend_def *t,
			       struct trend_result *out);
/* Whether a verdict passes. */
bool trend_passed(enum trend_verdict v);
/*
 * The window for partition `key` out of a history newest first
 * (keys[i], values[i], n of them): the first t->last values whose key is
 * not `key`, copied into out (room for t->last); returns how many.
 */
size_t trend_window(const char *const *keys, const double *values, size_t n,
		    const char *key, const struct trend_def *t, double *out);
/* How many values of a (job, metric) the state store keeps: the window,
 * and one more so that a partition in it still sees `last` others. */
size_t trend_keep(const struct trend_def *t);
/* One line for the audit: "value V, mean M, sd S over N partitions,
 * Z sigma, within max_sigma X" and the like. */
void trend_detail(const struct trend_result *r, bool has_value, double value,
		  const struct trend_def *t, char *out, size_t size);

#endif
