/*
 * adopt.h - what a new planner does with the work an earlier one left in
 * flight (docs/several-hosts.md, "Failure modes"), as a pure function:
 * no store, no clock, no I/O.
 *
 * The state store holds the runs rows left 'running' (a run of several
 * partitions, a batch or one run for several requests, has one row per
 * item, all started in one transaction); the work table holds one row per
 * run the earlier planner offered, keyed by the run's first runs row id,
 * with its job and keys.  The two are written on two connections, the
 * runs rows first (the turn's commit), the offer after, so either may
 * exist without the other:
 *
 *  - a runs row with a work row (offered, claimed or done) is in flight:
 *    adopted, its result comes back through the work table (a claim of a
 *    dead node is reaped into an interrupted result, queued again);
 *  - a runs row without one was never offered (the planner ran it itself,
 *    its share, or died between its commit and its offer, or the offer
 *    was refused): nobody runs it now, it is failed as interrupted and
 *    queued again;
 *  - a work row without a running runs row belongs to no run this store
 *    knows (its commit was rolled back, or its end is recorded already):
 *    withdrawn when offered, asked to stop when claimed, deleted when
 *    done.
 *
 * Rules that must always hold:
 *  ADOPT-1. A run is adopted only whole: each of its runs rows by the work row
 *     of its first, the others by job and partition key (a partition is
 *     in at most one run in flight).
 *  ADOPT-2. A run whose job the new planner does not know is not adopted: its
 *     rows are queued again and its work row is withdrawn or stopped.
 */
#ifndef BACKFILLD_ADOPT_H
#define BACKFILLD_ADOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A work row's state. */
enum adopt_work {
	ADOPT_OFFERED,
	ADOPT_CLAIMED,
	ADOPT_DONE,
};

/* What becomes of a work row. */
enum adopt_action {
	ADOPT_KEEP,     /* its run is adopted */
	ADOPT_WITHDRAW, /* offered, no run: delete it */
	ADOPT_STOP,     /* claimed, no run: ask its node to stop */
	ADOPT_DROP,     /* done, no run (recorded already): delete it */
};

/* A runs row left 'running'. */
struct adopt_run {
	int64_t id;
	const char *job;
	const char *key;
	bool job_known; /* the new planner's configuration has its job */
};

/* A row of the work table. */
struct adopt_row {
	int64_t id; /* the run's first runs row */
	enum adopt_work state;
	const char *job;
	const char *const *keys;
	size_t nkeys;
	const char *node; /* claimed by ("" when offered), for the log */
};

/*
 * Match runs rows with work rows: owner[i] is the index in rows of the
 * work row runs[i] belongs to, or -1 (queue it again); action[k] says
 * what becomes of rows[k].  Quadratic in the rows, which are at most the
 * runs in flight.
 */
void adopt_match(const struct adopt_run *runs, size_t nruns,
		 const struct adopt_row *rows, size_t nrows, long *owner,
		 enum adopt_action *action);

/* The action for a work row without a run. */
enum adopt_action adopt_orphan(enum adopt_work state);

#endif
