/*
 * schedule.h - the clock schedule's decisions (pure: no libuv, no store,
 * no clock reads, no logging).
 *
 * Given a job's definition, its state as the store keeps it (watermark,
 * catchup state, refused gap, paused) and `now`, schedule_decide() says
 * what to materialise, what to skip or refuse, the state to save and
 * when the job is next due.  The shell (sched_clock.c) applies it: it
 * writes the request, logs, fires the on_refused hook and arms the timer.
 * The rule (SCHED-6) is the block comment in schedule.c.
 */
#ifndef BACKFILLD_SCHEDULE_H
#define BACKFILLD_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "calendar.h"
#include "config.h"
#include "mstate.h"

/*
 * Schedule math.  A partition p is due at cal_end(p) + ready_after: a day
 * of a zone at that zone's midnight, in summer and in winter.
 * schedule_cal_last_due() is the newest partition due at `now` (may be
 * before any start: the caller clips).  schedule_cal_due_time() is when p
 * comes due.  The enum grain forms are the UTC calendars'.
 */
part_t schedule_cal_last_due(const struct cal *c, int64_t ready_after,
    int64_t now);
int64_t schedule_cal_due_time(const struct cal *c, int64_t ready_after,
    part_t p);
part_t schedule_last_due(enum grain g, int64_t ready_after, int64_t now);
int64_t schedule_due_time(enum grain g, int64_t ready_after, part_t p);

/*
 * Nothing before its time (docs/commands.md): a partition may be built by
 * backfill or rerun once its interval has closed, and marked (mark) once
 * it is due (closed and ready_after passed).  schedule_last_closed() is
 * the newest such partition of job j at `now` (seconds; `due`: the mark's
 * rule; a job with partition: none, its one partition - at any time);
 * schedule_refuse_open() refuses partition p, one after it, with
 * one line naming p and when it closes (or comes due), ending with
 * `nothing` ("nothing was queued").  Returns -1 (EXIT_BAD_INPUT).
 */
part_t schedule_last_closed(const struct job_def *j, bool due, int64_t now);
/* schedule_last_closed(job, false, now) of every job of cfg, into
 * last[cfg->njobs]: what a plan may hold with build_future off
 * (plan_drop_open). */
void schedule_last_closed_all(const struct config *cfg, int64_t now,
			      part_t *last);
/* When the last input of partition p of job j comes due (seconds): for a
 * job without upstream its own due time; for a downstream job the latest
 * of its interval's end and, for each upstream job, that of the upstream
 * partition holding p's last instant, or the job's last one past its
 * end (the landing that plans p: plan.h, Nothing before its time); 0
 * for a whole table (never awaited).  Until then a partition never
 * built is not stale. */
int64_t schedule_inputs_due(const struct config *cfg, int j, part_t p);
int schedule_refuse_open(const struct job_def *j, part_t p, bool due,
			 const char *nothing, struct err *err);

/* Is the job driven by the clock (a start, no upstream)? */
bool schedule_is_clock_job(const struct job_def *j);

enum schedule_action {
	SCHEDULE_NOTHING, /* nothing newly due (or paused, or no clock) */
	SCHEDULE_RUN,	  /* one newly due partition: `last`, as schedule */
	SCHEDULE_CATCHUP, /* first..last as one catchup request */
	SCHEDULE_SKIP,	  /* catchup off: first..last-1 skipped, `last` runs
			   * as schedule */
	SCHEDULE_REFUSE,  /* catchup on, first..last above max_catchup:
			   * nothing runs */
};

struct schedule_decision {
	enum schedule_action action;
	part_t first, last; /* the partitions newly due (the gap) */
	int64_t gap;	    /* last - first + 1 */
	part_t piece;	    /* refused: the last partition of the gap's
			     * first piece of at most max_backfill */
	bool save;	    /* state differs from the input: save it */
	struct store_job_state state; /* the job's state once applied */
	bool has_next_due;
	int64_t next_due; /* seconds: arm the timer for then */
};

/* Decide for job j at `now` (seconds); `resumed`: the job was just
 * resumed (paused time is not missed time). */
void schedule_decide(const struct job_def *j, const struct store_job_state *st,
		     bool resumed, int64_t now, struct schedule_decision *d);

/* What status shows of a job's schedule (reads never write). */
struct schedule_view {
	const char *catchup; /* ok, refused, off */
	bool has_watermark;
	part_t watermark;
	bool has_gap;
	part_t gap_from, gap_to;
	bool has_next_due;
	int64_t next_due; /* seconds */
};
void schedule_view(const struct job_def *j, const struct store_job_state *st,
		   int64_t now, struct schedule_view *v);

/* Does partition `key` of job j lie in its refused gap?  Then *from and
 * *to are the gap; it is filled once all of its to - from + 1 partitions
 * have succeeded, and schedule_gap_clear() makes catchup what the
 * configuration says again. */
bool schedule_gap_covers(const struct job_def *j,
			 const struct store_job_state *st, const char *key,
			 part_t *from, part_t *to);
void schedule_gap_clear(const struct job_def *j, struct store_job_state *st);

#endif
