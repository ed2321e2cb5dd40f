/*
 * prune.h - keep_runs: the history pruner (see prune.c for its rules).
 */
#ifndef BACKFILLD_PRUNE_H
#define BACKFILLD_PRUNE_H

#include <uv.h>

#include "err.h"
#include "scheduler.h"

struct prune;

/* Start the pruner: a pass now, then at most one an hour of the daemon's
 * clock.  Freed by prune_close() once the loop ran its close callbacks. */
int prune_new(uv_loop_t *loop, struct sched *s, struct prune **out,
	      struct err *err);
/* The daemon's clock moved: start a pass if an hour has passed. */
void prune_tick(struct prune *p);
/* Stop pruning (a pass in progress stops between slices). */
void prune_close(struct prune *p);

#endif
