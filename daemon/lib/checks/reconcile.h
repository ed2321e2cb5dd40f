/*
 * reconcile.h - the arithmetic of a reconciliation check
 * (docs/configuration.md, "Reconciliation"): a value computed on a source
 * warehouse against one computed on the job's own after the write, within
 * a tolerance.
 */
#ifndef BACKFILLD_RECONCILE_H
#define BACKFILLD_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>

struct reconcile_tolerance {
	bool pct;     /* a percentage of the source value */
	double value; /* >= 0 */
};

/* "0.1%" (percent) or "0.01" (absolute), non-negative and finite; -1
 * for anything else. */
int reconcile_tolerance_parse(const char *s, struct reconcile_tolerance *t);
/* Its shortest text: "0.1%", "0.01". */
void reconcile_tolerance_format(const struct reconcile_tolerance *t,
				char *out, size_t size);

/* A query's value as a number: *has false for NULL (value NULL) or no
 * row; -1 when it is text that is no number. */
int reconcile_number(const char *value, bool *has, double *v);

/*
 * Whether target is within t of source; *diff = target - source.  NULL
 * on one side only fails; both NULL pass (nothing on either side).  A
 * percentage of a zero source allows no difference.
 */
bool reconcile_within(bool has_source, double source, bool has_target,
		      double target, const struct reconcile_tolerance *t,
		      double *diff);

/*
 * The audit's words for a compared reconcile (passed: reconcile_within's
 * verdict, tol: the tolerance's text): "source 715.12, target 834.07,
 * difference +118.95, above tolerance 0.1%"; with a NULL side it names
 * the side that was NULL and gives no difference, which has none.
 */
void reconcile_detail(bool has_source, double source, bool has_target,
		      double target, double diff, bool passed,
		      const char *tol, char *out, size_t size);

#endif
