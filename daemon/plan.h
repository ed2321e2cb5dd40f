/*
 * plan.h - the downstream planner (pure).
 *
 * From the partitions a request names for one job, the plan adds every
 * downstream partition that contains one of them, following upstream
 * chains to the end, each once, with the plan items it waits for.  Items
 * are in run order: the request's own partitions first (in the order
 * given), then downstream jobs in topological order, each job's partitions
 * in time order (reverse when asked).
 *
 * Rule: a downstream item may run only when every item it waits for is
 * final; if one of them failed (or is blocked), it is blocked.
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
};

void plan_init(struct plan *p);
void plan_free(struct plan *p);
/* Add one of the request's own partitions (before plan_expand). */
int plan_add_root(struct plan *p, int job, part_t part, struct err *err);
/* Add the downstream items (unless no_downstream), newest first when
 * reverse. */
int plan_expand(struct plan *p, const struct config *cfg, bool reverse,
		struct err *err);

#endif
