/*
 * map_view.h - fill a struct map (map.h) for `backfillctl map` from the
 * state store's partition_latest (one range read by key, in key order)
 * and the scheduler's memory (queued, running, blocked and late
 * partitions, the refused gap, stale downstream partitions).  Never one
 * row per partition on the wire: cmd.c sends the map's ranges or its
 * calendar.
 */
#ifndef BACKFILLD_MAP_VIEW_H
#define BACKFILLD_MAP_VIEW_H

#include "map.h"
#include "scheduler.h"

/* The map of job over from..to (texts as typed, NULL for the default:
 * the job's start, or its first built partition, to its newest due
 * partition).  -1 with err (EXIT_BAD_INPUT for a bad or too large
 * range). */
int map_view_build(struct sched *s, int job, const char *from,
		   const char *to, struct map *m, struct err *err);

/* The same; with newest > 0 and no from, at most the newest `newest`
 * partitions of the default range (the report). */
int map_view_build_newest(struct sched *s, int job, const char *from,
			  const char *to, int64_t newest, struct map *m,
			  struct err *err);

#endif
