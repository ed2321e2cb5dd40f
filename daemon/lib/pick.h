/*
 * pick.h - dispatch's choice (pure: no libuv, no store, no clock, no
 * logging): the next run to start under the caps, in the order, with the
 * items that ride along.  SCHED-2, SCHED-3 and SCHED-5 are the block
 * comments in pick.c.  The shell (sched_dispatch.c) starts what it picks
 * (manifest_run_start) and records it.
 */
#ifndef BACKFILLD_PICK_H
#define BACKFILLD_PICK_H

#include "manifest.h"

/* What dispatch may not use, asked of the shell (NULL: nothing paused or
 * throttled): a paused job, a throttled warehouse (index in cfg).
 * one_slot: every run holds one slot (several hosts: a worker runs a
 * ClickHouse batch by one statement, pick_width). */
struct pick_gate {
	bool (*paused)(void *data, int job);
	bool (*throttled)(void *data, int warehouse);
	void *data;
	bool one_slot;
};

/* The next run to start under the caps, in order, or NULL (*wake: when
 * a retry comes due, if sooner).  The run is not started yet: the shell
 * records it, then calls manifest_run_start (or manifest_run_free). */
struct run *pick_next_run(struct manifest *m, const struct pick_gate *g,
			  int64_t now, int64_t *wake);

/* SCHED-2, the cap of a warehouse: a PostgreSQL or ClickHouse one
 * holds at most max_connections, its runs in flight (pick_job_free) and
 * the connections kept open for them (exec_sql.c); -1 for one without a
 * cap (SQLite: one file). */
int64_t pick_wh_cap(const struct warehouse_def *w);

/* The next run of job `job` to hand ahead (exec_submit_after): what
 * pick_next_run would start next if that job, and the requests of its
 * items, had one slot more and max_concurrency did not count, or NULL
 * (also when one of its runs is handed ahead already).  No item of a
 * fail-fast request is handed ahead, nor rides along.  The run has
 * deck set; it counts in flight, not against the caps, until
 * manifest_run_undeck. */
struct run *pick_next_deck(struct manifest *m, const struct pick_gate *g,
			   int job, int64_t now, int64_t *wake);

/* Items were taken out of picked run r (early cut-off skipped them):
 * a batch whose stage is filled over its interval (ClickHouse) keeps
 * only its first consecutive partitions, the rest stay queued. */
void pick_run_trim(const struct manifest *m, struct run *r);

#endif
