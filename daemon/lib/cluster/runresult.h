/*
 * runresult.h - how a run ended on another node, as the text a worker
 * records and the planner reads back (docs/several-hosts.md).
 *
 * Everything a local run's result gives the scheduler besides failed and
 * error (which have columns of their own): timed_out, not_started,
 * cancelled, committed_before, rows_changed, every check's outcome and
 * the guardrail figures of each partition, so that audit, guardrails and
 * batch runs read the same wherever the run ran.  The text is one JSON object:
 *
 *   {"timed_out": false, "not_started": false, "cancelled": false,
 *    "committed_before": false, "rows_changed": 12,
 *    "checks": [{"name": "min_rows", "passed": true,
 *                "detail": "3 rows, at least 1", "part": 0}, ...],
 *    "guards": [{"rows_before": 2, "rows_after": 3,
 *                "sum_before": "00ab...", "sum_after": "00ab...",
 *                "changes": 4,
 *                "metrics": [{"before": 1.5, "after": 2,
 *                             "change_pct": 33.3}, ...]}, ...]}
 *
 * null stands for a figure not measured; "guards" is absent when the job
 * has no table (else one per partition, metrics in the job's order).  A
 * guard's "changes" (the rows the statements changed in that partition:
 * early cut-off and the audit read it) is absent when not counted, and
 * must be an integer from 0 to INT64_MAX.
 * Unknown keys are skipped, so a newer worker's text reads on an older
 * planner (a cancelled run says not_started too, which is what an older
 * planner made of it).  The key=value line of earlier workers
 * ("timed_out=0 not_started=0 rows_changed=5 committed_before=1") still
 * reads.
 *
 * Reading is strict and bounded: a text that is not such an object, a
 * string longer than RUNRESULT_STR_MAX, more than RUNRESULT_MAX_CHECKS
 * checks, RUNRESULT_MAX_PARTS guards or RUNRESULT_MAX_METRICS metrics, or
 * nesting deeper than RUNRESULT_MAX_DEPTH is refused as a whole.
 */
#ifndef BACKFILLD_RUNRESULT_H
#define BACKFILLD_RUNRESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

#define RUNRESULT_STR_MAX 4096       /* bytes of a name or detail */
#define RUNRESULT_MAX_CHECKS 1000000
#define RUNRESULT_MAX_PARTS 100000
#define RUNRESULT_MAX_METRICS 1024
#define RUNRESULT_MAX_DEPTH 16
#define RUNRESULT_SUM_MAX 17         /* a checksum's 16 hex digits, NUL */

struct runresult_check {
	char *name;
	char *detail;
	bool passed;
	size_t part; /* index of the partition checked */
	bool warn;   /* severity: warn */
	/* a reconcile check: the values compared (exec.h) */
	bool recon, has_source, has_target;
	double source, target, diff;
	/* a trend check: its value in has_target and target, the window
	 * (exec.h) */
	bool trend, has_sigma;
	int64_t history;
	double mean, sd, sigma;
	int shard;   /* 1-based: the shard of a Distributed target (exec.h) */
};

struct runresult_metric {
	bool has_before, has_after, has_change;
	double before, after, change_pct;
};

struct runresult_guard {
	bool has_rows_before, has_rows_after;
	int64_t rows_before, rows_after;
	struct runresult_metric *metrics;
	size_t nmetrics;
	/* the partition's checksums (digest.h), "" when not read */
	char sum_before[RUNRESULT_SUM_MAX], sum_after[RUNRESULT_SUM_MAX];
	/* the rows the run's statements changed in the partition
	 * (exec_guard_result), >= 0, when has_changes */
	bool has_changes;
	int64_t changes;
};

struct runresult {
	bool timed_out;
	bool not_started;     /* nothing ran: queued again, not counted */
	bool cancelled;       /* stopped on the way: recorded cancelled */
	/* an earlier attempt had committed it: nothing ran (wh_commits.h) */
	bool committed_before;
	int64_t rows_changed; /* -1: not known (a command) */
	struct runresult_check *checks;
	size_t nchecks;
	struct runresult_guard *guards; /* NULL: no guardrails */
	size_t nguards;
};

/* Append r as one JSON object (no newline) to out; names and details
 * longer than RUNRESULT_STR_MAX - 1 bytes are cut at a character. */
void runresult_format(const struct runresult *r, struct buf *out);
/* Read text into r (its arrays allocated: runresult_clear frees them).
 * NULL or "" leaves the defaults (not timed out, started, rows_changed
 * -1, no checks, no guards).  Returns 0, or -1 with err filled and r
 * left at the defaults when the text is malformed or too large. */
int runresult_parse(const char *text, struct runresult *r, struct err *err);
/* Free what runresult_parse allocated and reset r to the defaults. */
void runresult_clear(struct runresult *r);

#endif
