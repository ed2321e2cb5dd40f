/*
 * reconcile.c - the reconciliation arithmetic (reconcile.h).
 */
#include "reconcile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
reconcile_tolerance_parse(const char *s, struct reconcile_tolerance *t)
{
	char num[64], *end;
	size_t n = strlen(s);
	bool pct;
	double v;

	if (n == 0 || n >= sizeof num || s[0] == '-' || s[0] == '+' ||
	    s[0] == ' ')
		return -1;
	pct = s[n - 1] == '%';
	memcpy(num, s, n - pct);
	num[n - pct] = '\0';
	if (num[0] == '\0')
		return -1;
	errno = 0;
	v = strtod(num, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0)
		return -1;
	t->pct = pct;
	t->value = v;
	return 0;
}

void
reconcile_tolerance_format(const struct reconcile_tolerance *t, char *out,
			   size_t size)
{
	snprintf(out, size, "%g%s", t->value, t->pct ? "%" : "");
}

int
reconcile_number(const char *value, bool *has, double *v)
{
	char *end;

	*has = false;
	if (value == NULL)
		return 0;
	errno = 0;
	*v = strtod(value, &end);
	while (*end == ' ')
		end++;
	if (end == value || *end != '\0' || errno != 0 || !isfinite(*v))
		return -1;
	*has = true;
	return 0;
}

void
reconcile_detail(bool has_source, double source, bool has_target,
		 double target, double diff, bool passed, const char *tol,
		 char *out, size_t size)
{
	char sv[40] = "NULL", tv[40] = "NULL";

	if (has_source)
		snprintf(sv, sizeof sv, "%.15g", source);
	if (has_target)
		snprintf(tv, sizeof tv, "%.15g", target);
	if (has_source && has_target)
		snprintf(out, size, "source %s, target %s, difference %+.10g,"
			 " %s %s", sv, tv, diff, passed ? "within tolerance" :
			 "above tolerance", tol);
	else if (!has_source && !has_target)
		snprintf(out, size, "source NULL, target NULL: both were NULL"
			 " (no value on either side), no difference");
	else
		snprintf(out, size, "source %s, target %s: the %s was NULL (no"
			 " value, or no row), so there is no difference to"
			 " compare; a NULL matches only a NULL", sv, tv,
			 has_source ? "target" : "source");
}

bool
reconcile_within(bool has_source, double source, bool has_target,
		 double target, const struct reconcile_tolerance *t,
		 double *diff)
{
	double allowed;

	*diff = 0;
	if (!has_source || !has_target)
		return has_source == has_target;
	*diff = target - source;
	allowed = t->pct ? fabs(source) * t->value / 100.0 : t->value;
	/* a relative epsilon, so that 0.1 + 0.2 against 0.3 passes at 0 */
	return fabs(*diff) <= allowed + 1e-9 * fmax(fabs(source), fabs(target));
}
