/*
 * cutoff.h - early cut-off downstream (issue 28): whether a downstream
 * partition of a request must be rebuilt, from the fingerprints of its
 * inputs and its own build history.
 *
 * Pure: no clock, no I/O.  The scheduler gathers, for one downstream
 * partition, what each of its inputs in the request did (ran and came out
 * identical, ran and changed, was skipped itself, or has no fingerprint)
 * and what its own last build was; cutoff_decide() says run or skip.
 *
 * Rules (in this order):
 *  CUTOFF-1. --no-cutoff rebuilds regardless.
 *  CUTOFF-2. A partition never built, or already stale, is rebuilt (skipping it
 *     would leave the mart lying).
 *  CUTOFF-3. A partition whose code version differs from its last build's is
 *     rebuilt.
 *  CUTOFF-4. A partition whose last build is older than an input's previous
 *     state (it was not built from them) is rebuilt.
 *  CUTOFF-5. A partition with an input that changed, or whose fingerprint is
 *     unknown (a job without table and partition_column, a failed read,
 *     a fingerprint that matched no row before nor after a write that
 *     changed rows or whose changes are not known), is rebuilt: a skip
 *     is proven, never assumed.
 *  CUTOFF-6. Otherwise every input came out identical or was skipped itself
 *     (chains: an unchanged week skips its month): skipped, "inputs
 *     unchanged".
 */
#ifndef BACKFILLD_CUTOFF_H
#define BACKFILLD_CUTOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "digest.h"

/* A partition's fingerprint: its row count and order-independent
 * checksum (digest.h), as verify computes them. */
struct cutoff_fp {
	bool known;
	int64_t rows;
	char sum[DIGEST_LEN];
};

enum cutoff_input {
	CUTOFF_IN_SAME,     /* ran, fingerprint before == after */
	CUTOFF_IN_CHANGED,  /* ran, fingerprint differs */
	CUTOFF_IN_SKIPPED,  /* skipped by cut-off itself */
	CUTOFF_IN_UNKNOWN,  /* no fingerprint before or after, or one that
			     * proves nothing (cutoff_input_of) */
};

struct cutoff_self {
	bool built;           /* has a successful build */
	bool stale;
	bool built_from_inputs;
	const char *version;  /* the job's current code version */
	const char *last_version; /* that of its last build, or NULL */
};

enum cutoff_verdict {
	CUTOFF_RUN,
	CUTOFF_SKIP,
};

#define CUTOFF_REASON_UNCHANGED "inputs unchanged"

/* CUTOFF-7.  Does a run of job j read its partition's fingerprint (a SQL
 * job with table: and partition_column: that feeds another job or itself, a
 * running total whose cascade stops at a partition that came out
 * identical; on
 * ClickHouse the live partition before publishing and the stage)?  For a
 * command job, no: its downstream always runs.  Nor on the shards of a
 * Distributed table (distributed: the run publishes into a shard's local
 * table, or the key check found jd->table Distributed), each of which
 * holds part of the partition.  The one rule: the dry run's
 * "conditional" and the runs' reads (guard.c, exec_wap_digest.c). */
bool cutoff_fingerprinted(const struct job_def *j, bool distributed);
/* The state store's form of what a run did to its partition (its
 * manifest row's `changed`): 0 identical, 1 changed, -1 anything else;
 * and back. */
int cutoff_changed_of(enum cutoff_input in);
enum cutoff_input cutoff_input_of_changed(int changed);
/* What one input did, from its fingerprints before and after its write
 * and the rows that write changed (the driver's count of rows inserted,
 * updated or deleted; -1 when not known).  Identical only when both were
 * read, agree, and prove it: a partition of no row before and after is
 * identical only when the write changed no row at all (it may have
 * written rows that the partition_column filter does not see: a column
 * holding :partition_start rather than the key); else unknown. */
enum cutoff_input cutoff_input_of(const struct cutoff_fp *before,
				  const struct cutoff_fp *after,
				  int64_t changes);
/* The guardrail: did a write that changed rows (changes > 0) leave no row
 * with the partition's key in partition_column, before or after it?  Its
 * writes then fell outside its declared partition. */
bool cutoff_partition_missed(int64_t rows_before, int64_t rows_after,
			     int64_t changes);
/* Run or skip one downstream partition with n inputs in the request;
 * *reason (static text) says why. */
enum cutoff_verdict cutoff_decide(const struct cutoff_self *self,
				  const enum cutoff_input *in, size_t n,
				  bool no_cutoff, const char **reason);

#endif
