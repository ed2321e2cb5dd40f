/*
 * trend.c - the statistics of a trend check (trend.h).
 */
#include "trend.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void
trend_stats(const double *v, size_t n, struct trend_stats *out)
{
	double mean = 0, m2 = 0, d;

	for (size_t i = 0; i < n; i++) {
		d = v[i] - mean;
		mean += d / (double)(i + 1);
		m2 += d * (v[i] - mean);
	}
	out->n = n;
	out->mean = n > 0 ? mean : 0;
	out->sd = n > 1 && m2 > 0 ? sqrt(m2 / (double)(n - 1)) : 0;
}

/* v equals m but for rounding (a history of one value summed in another
 * order). */
static bool
trend_same(double v, double m)
{
	return fabs(v - m) <= 1e-9 * fmax(1.0, fmax(fabs(v), fabs(m)));
}

enum trend_verdict
trend_judge(const double *hist, size_t n, bool has_value, double value,
	    const struct trend_def *t, struct trend_result *out)
{
	memset(out, 0, sizeof *out);
	trend_stats(hist, n, &out->st);
	if (!has_value)
		return out->verdict = TREND_NO_VALUE;
	if (n < (size_t)t->min_history)
		return out->verdict = TREND_TOO_LITTLE;
	out->has_sigma = true;
	if (out->st.sd == 0 || trend_same(out->st.sd, 0)) {
		bool same = trend_same(value, out->st.mean);

		out->sigma = same ? 0 : INFINITY;
		return out->verdict = same ? TREND_WITHIN : TREND_OUTSIDE;
	}
	out->sigma = fabs(value - out->st.mean) / out->st.sd;
	return out->verdict = out->sigma <= t->max_sigma ? TREND_WITHIN :
			      TREND_OUTSIDE;
}

bool
trend_passed(enum trend_verdict v)
{
	return v != TREND_OUTSIDE;
}

size_t
trend_window(const char *const *keys, const double *values, size_t n,
	     const char *key, const struct trend_def *t, double *out)
{
	size_t m = 0;

	for (size_t i = 0; i < n && m < (size_t)t->last; i++)
		if (strcmp(keys[i], key) != 0)
			out[m++] = values[i];
	return m;
}

size_t
trend_keep(const struct trend_def *t)
{
	return t->has ? (size_t)t->last + 1 : 0;
}

void
trend_detail(const struct trend_result *r, bool has_value, double value,
	     const struct trend_def *t, char *out, size_t size)
{
	switch (r->verdict) {
	case TREND_NO_VALUE:
		snprintf(out, size, "no value (NULL) to hold against %zu"
			 " partitions", r->st.n);
		return;
	case TREND_TOO_LITTLE:
		snprintf(out, size, "value %.10g; not enough history: %zu"
			 " partition%s, min_history %d", value, r->st.n,
			 r->st.n == 1 ? "" : "s", t->min_history);
		return;
	default:
		break;
	}
	(void)has_value;
	if (isinf(r->sigma))
		snprintf(out, size, "value %.10g, history constant at %.10g over"
			 " %zu partitions: above max_sigma %g", value,
			 r->st.mean, r->st.n, t->max_sigma);
	else
		snprintf(out, size, "value %.10g, mean %.10g, sd %.4g over %zu"
			 " partitions: %.2f sigma, %s max_sigma %g", value,
			 r->st.mean, r->st.sd, r->st.n, r->sigma,
			 r->verdict == TREND_WITHIN ? "within" : "above",
			 t->max_sigma);
}
