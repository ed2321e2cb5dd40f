/*
 * plan.h - the downstream planner (pure).
 *
 * From the partitions a request names for one job, the plan adds every
 * downstream partition that one of them overlaps (lineage.h: finer into
 * coarser, or a coarser upstream into each of the finer partitions it
 * spans), following upstream
 * chains to the end, each once, with the plan items it waits for.  Items
 * are in run order: the request's own partitions first (in the order
 * given), then downstream jobs in topological order, each job's partitions
 * in time order (reverse when asked).
 *
 * Rule: a downstream item may run only when every item it waits for is
 * final; if one of them failed (or is blocked), it is blocked.
 *
 * Narrowing (backfill --downstream JOB[,JOB]): `keep` marks the downstream
 * jobs named.  A downstream job is planned when it is named, or when a
 * job it feeds on is a planned downstream job (what a named job feeds is
 * rebuilt too: the chain is followed past it); a job fed only by the
 * request's own job or by jobs left out is left out, and so is what only
 * it feeds.  The partitions left out are then stale, as with
 * --no-downstream.
 *
 * Cascades (DESIGN, "A job in its own upstream"): a job listing itself
 * with {job: ITSELF, lookback: N} (job_def.self_lookback) reads its own N
 * partitions before each one, so a rebuild of its partition P changes
 * every later one.  Its items in a plan are every partition from the
 * earliest one the request names or its upstream feeds, to the latest
 * one of those or its newest built partition, whichever is later, each
 * once, in time order whatever --reverse says, each waiting (besides its
 * inputs) for the job's items before it within N; the ones after the
 * request's own are downstream items (the cascade), and a gap between
 * two of the request's own partitions is rebuilt in its place as a
 * downstream item (items[0..nroot) then holds it: a mark never marks
 * it, cut-off may skip it).  What it
 * feeds is planned from all of them.  Its part of the plan, its own
 * partitions included, counts against its max_backfill.
 *
 * Nothing before its time (DESIGN; schedule.h): with build_future off,
 * plan_drop_open() takes out of an expanded plan every downstream item
 * whose partition has not closed at planning time (a rolling window's
 * days after the newest repaired one up to today, the week or month
 * holding today, a cascade's days to come), and every downstream item
 * fed only through items taken out; an item kept waits only for the
 * items kept.  The request's own items (items[0..nroot)) are never
 * taken out: backfill and rerun refuse an open one before planning.  No
 * partition taken out is lost: the input covering its last instant comes
 * due only after it closes, and that landing plans it again (a week when
 * its Sunday lands); until it closes it is not stale either.
 */
#ifndef BACKFILLD_PLAN_H
#define BACKFILLD_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "calendar.h"
#include "config.h"
#include "err.h"

struct plan_item {
	int job;          /* index into cfg->jobs */
	part_t part;
	bool downstream;
	size_t dep_off;   /* its inputs: plan->deps[dep_off .. dep_off+ndeps) */
	size_t ndeps;     /* (item indices, all earlier in the plan) */
};

struct plan {
	struct plan_item *items;
	size_t n;
	size_t cap;
	size_t *deps;
	size_t ndeps;
	size_t depcap;
	size_t nroot;     /* the request's own partitions: items[0..nroot) */
	size_t nopen;     /* downstream items taken out by plan_drop_open */
};

/* A job's newest built partition (one with a successful run), for the
 * cascade of a job in its own upstream; has false when none is. */
struct plan_built {
	bool has;
	part_t newest;
};

void plan_init(struct plan *p);
void plan_free(struct plan *p);
/* Add one of the request's own partitions (before plan_expand). */
void plan_add_root(struct plan *p, int job, part_t part);
/* Add the downstream items, newest first when reverse; keep (one flag per
 * job, see Narrowing) or NULL for every downstream job. */
void plan_expand(struct plan *p, const struct config *cfg, bool reverse,
		 const bool *keep);
/* The same, with each job's newest built partition (built: cfg->njobs
 * entries, or NULL when none is known): a job in its own upstream then
 * cascades (Cascades, above). */
void plan_expand_built(struct plan *p, const struct config *cfg,
		       bool reverse, const bool *keep,
		       const struct plan_built *built);
/* The request's own partitions of a job in its own upstream without
 * its cascade (--no-downstream): in time order, each waiting for those
 * of them it reads (within its lookback); nothing else added.  Any other
 * job's: unchanged. */
void plan_own_in_order(struct plan *p, const struct config *cfg);
/* Take out the downstream items not closed (Nothing before its time,
 * above): closed[] (cfg->njobs entries) is each job's newest closed
 * partition (schedule_last_closed_all); their count in p->nopen. */
void plan_drop_open(struct plan *p, const part_t *closed);
/* Refuse a plan whose part for some downstream job is above that job's
 * max_backfill (DESIGN, "Calendars and dependency windows"): 0, or -1
 * (EXIT_BAD_INPUT) naming the first such job, its count and its bound.
 * A coarser upstream (a month for a day) or a window makes a downstream
 * part larger than the request's own. */
int plan_check_bounds(const struct plan *p, const struct config *cfg,
		      struct err *err);
/* Mark in below[] (cfg->njobs flags) the jobs downstream of job, directly
 * or through a chain. */
void plan_downstream_of(const struct config *cfg, int job, bool *below);
/* Parse --downstream's list (job names, comma separated) into keep[]
 * (cfg->njobs flags): 0, or -1 (EXIT_BAD_INPUT) naming the first name that
 * is empty, unknown, not downstream of job, or reached from job only
 * through jobs left out. */
int plan_select_downstream(const struct config *cfg, int job,
			   const char *list, bool *keep, struct err *err);

#endif
