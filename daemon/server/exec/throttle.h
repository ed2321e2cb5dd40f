/*
 * throttle.h - per-warehouse throttling (a warehouse's `throttle:`).
 *
 * For each warehouse with a throttle, a one-shot timer re-armed after each
 * check runs the throttle's query every `every` on a connection of its own
 * (opened and used only inside uv_queue_work: off the loop, one query at a
 * time), with a short timeout.  The value decides the warehouse's state:
 *
 *   value <= max          ok: runs start as usual
 *   value >  max          throttled: no new run starts on the warehouse
 *                         (the scheduler asks throttle_blocks); runs in
 *                         flight finish
 *   value >  critical     critical: as throttled, and the warehouse's runs
 *                         in flight are interrupted and queued again
 *                         without an attempt counted
 *   the query fails       throttled, with the error (never critical: a
 *                         failing probe says nothing about the load)
 *
 * Rules that must hold: no run starts on the warehouse until its first
 * check has answered (at the start, and after a reload that changed its
 * throttle; a check that times out answers throttled), and that answer,
 * when ok, pokes the scheduler; the state changes only on the loop
 * thread, when a check completes; `since` is when the current throttled spell began;
 * on_throttle runs once when a spell begins and once when it ends; the
 * end of a spell pokes the scheduler, so queued runs start at once.
 */
#ifndef BACKFILLD_THROTTLE_H
#define BACKFILLD_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "hooks.h"

struct throttle;

/* What to tell the scheduler: stop dispatch changes (poke: dispatch
 * again) and critical (requeue the warehouse's runs in flight). */
struct throttle_ops {
	void (*poke)(void *data);
	void (*requeue)(void *data, const char *warehouse);
	void *data;
};

/* A warehouse's throttle as status shows it. */
struct throttle_view {
	bool has;            /* the warehouse has a throttle */
	bool checked;        /* a check has completed */
	bool throttled;
	bool critical;
	bool has_value;
	double value;        /* the last value read */
	double max;
	bool has_critical;
	double critical_at;
	int64_t since_ms;    /* throttled since (when throttled) */
	int64_t checked_ms;  /* the last check's end */
	int64_t checks;      /* checks completed */
	char error[256];     /* "" unless the last check failed */
};

/* What one check's result does: value (when ok; a failed query is
 * throttled, never critical) against the throttle's max and critical,
 * given whether the warehouse was throttled before it.  Pure. */
struct throttle_decision {
	bool throttled;  /* no new run starts on the warehouse */
	bool critical;   /* and its runs in flight are queued again */
	bool begins;     /* a throttled spell begins: log, on_throttle */
	bool ends;       /* the spell ends: log, on_throttle, dispatch again */
};
struct throttle_decision throttle_decide(const struct throttle_def *t,
					 bool was_throttled, bool ok,
					 double value);

/* on_throttle runs through hooks (hooks_fire_throttle). */
struct throttle *throttle_new(uv_loop_t *loop, struct hooks *hooks,
			      const struct throttle_ops *ops);
/* Take cfg's throttles (at start and after each reload): a warehouse
 * whose throttle is unchanged keeps its state and connection. */
void throttle_configure(struct throttle *th, struct config *cfg);
/* True while no new run may start on the warehouse: throttled, or not
 * checked yet. */
bool throttle_blocks(const struct throttle *th, const char *warehouse);
/* Fill v for the warehouse (v->has false when it has no throttle). */
void throttle_view(const struct throttle *th, const char *warehouse,
		   struct throttle_view *v);
/* Stop the timers and ask queries in flight to stop; the handles close
 * on the next loop turns and throttle_free may follow uv_run. */
void throttle_close(struct throttle *th);
void throttle_free(struct throttle *th);

#endif
