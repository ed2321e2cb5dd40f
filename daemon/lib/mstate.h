/*
 * mstate.h - the states of a manifest row and a job's schedule state:
 * the types the pure library (manifest.c, schedule.c) shares with the
 * state store (store.h) and the commands, with no store behind them.
 */
#ifndef BACKFILLD_MSTATE_H
#define BACKFILLD_MSTATE_H

#include <stdbool.h>
#include <stdint.h>

enum mstate {
	MS_QUEUED,
	MS_RUNNING,
	MS_SUCCEEDED,
	MS_FAILED,
	MS_BLOCKED,
	MS_CANCELLED,
	MS_SKIPPED,   /* early cut-off: its inputs came out unchanged */
	MS_COUNT,     /* how many states there are: an array's bound only */
	/* not states of a row, never stored nor counted: what a variable of
	 * the type holds when no state applies */
	MS_NONE,      /* none: a partition that never ran, an item whose
		       * state is not set yet, a run's predecessor unknown */
	MS_LATE       /* a late partition, with no run in memory: for map
		       * and the report (sched_job_open) */
};

/* The names of the states, in the enum's order, then NULL (as `runs
 * --state` takes them and the store writes them). */
extern const char *const mstate_names[MS_COUNT + 1];

const char *mstate_name(enum mstate s);
int mstate_parse(const char *s, enum mstate *out);

/* Per-job schedule state. */
struct store_job_state {
	bool has_watermark;
	char watermark[32];
	char catchup[16]; /* ok, refused, off */
	char gap_from[32];
	char gap_to[32];
	bool paused;
	int64_t paused_at;
	/* late_data sensor */
	bool has_late_since;
	int64_t late_since;       /* ms: :since of the next check */
	bool has_late_checked;
	int64_t late_checked_at;  /* ms */
	int64_t late_found;       /* partitions the last check found */
	char late_error[512];     /* "" when the last check succeeded */
	/* the newest partition whose reconcile checks all passed */
	bool has_reconciled;
	char reconciled[32];
};

#endif
