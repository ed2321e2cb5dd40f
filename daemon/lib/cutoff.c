/*
 * cutoff.c - early cut-off downstream: run or skip (see cutoff.h).
 */
#include "cutoff.h"

#include <string.h>

/* CUTOFF-7: the one rule of which runs read a fingerprint (the dry run's
 * "conditional", guard.c's and exec_wap_digest.c's reads). */
bool
cutoff_fingerprinted(const struct job_def *j, bool distributed)
{
	return j->sql != NULL && j->table != NULL &&
	       j->partition_column != NULL &&
	       (j->ndownstream > 0 || j->self_lookback > 0) &&
	       j->warehouse >= 0 && !distributed;
}

int
cutoff_changed_of(enum cutoff_input in)
{
	return in == CUTOFF_IN_SAME ? 0 : in == CUTOFF_IN_CHANGED ? 1 : -1;
}

enum cutoff_input
cutoff_input_of_changed(int changed)
{
	return changed == 0 ? CUTOFF_IN_SAME :
	       changed == 1 ? CUTOFF_IN_CHANGED : CUTOFF_IN_UNKNOWN;
}

enum cutoff_input
cutoff_input_of(const struct cutoff_fp *before, const struct cutoff_fp *after,
		int64_t changes)
{
	if (before == NULL || after == NULL || !before->known || !after->known ||
	    before->sum[0] == '\0' || after->sum[0] == '\0')
		return CUTOFF_IN_UNKNOWN;
	if (before->rows != after->rows || strcmp(before->sum, after->sum) != 0)
		return CUTOFF_IN_CHANGED;
	/* no row seen either side: identical only if nothing was written */
	if (before->rows == 0 && changes != 0)
		return CUTOFF_IN_UNKNOWN;
	return CUTOFF_IN_SAME;
}

bool
cutoff_partition_missed(int64_t rows_before, int64_t rows_after,
			int64_t changes)
{
	return changes > 0 && rows_before == 0 && rows_after == 0;
}

enum cutoff_verdict
cutoff_decide(const struct cutoff_self *self, const enum cutoff_input *in,
	      size_t n, bool no_cutoff, const char **reason)
{
	bool unknown = false;

	if (no_cutoff) {
		*reason = "no cutoff";
		return CUTOFF_RUN;
	}
	if (!self->built) {
		*reason = "never built";
		return CUTOFF_RUN;
	}
	if (self->stale) {
		*reason = "stale";
		return CUTOFF_RUN;
	}
	if (self->last_version == NULL || self->version == NULL ||
	    strcmp(self->version, self->last_version) != 0) {
		*reason = "code version changed";
		return CUTOFF_RUN;
	}
	if (!self->built_from_inputs) {
		*reason = "not built from its inputs";
		return CUTOFF_RUN;
	}
	for (size_t i = 0; i < n; i++) {
		if (in[i] == CUTOFF_IN_CHANGED) {
			*reason = "input changed";
			return CUTOFF_RUN;
		}
		if (in[i] == CUTOFF_IN_UNKNOWN)
			unknown = true;
	}
	if (unknown) {
		*reason = "input fingerprint unknown";
		return CUTOFF_RUN;
	}
	if (n == 0) {
		*reason = "no input in the request";
		return CUTOFF_RUN;
	}
	*reason = CUTOFF_REASON_UNCHANGED;
	return CUTOFF_SKIP;
}
