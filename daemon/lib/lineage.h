/*
 * lineage.h - the one downstream rule: which partitions of a downstream
 * job a partition of its upstream feeds.  Used by the planner (what a
 * request must rebuild), by the scheduler when it relinks a request loaded
 * at start (which items wait for which), and by staleness (which
 * downstream partitions are older than their inputs).  Pure.
 *
 * The rule: job `down` names `up` in its upstream; map the partition
 * across grains (calendar.h part_map: same grain itself, hour -> day,
 * day -> week and month, week -> the months it touches, and
 * compositions); keep only partitions inside down's start..end, the ones
 * that exist.
 */
#ifndef BACKFILLD_LINEAGE_H
#define BACKFILLD_LINEAGE_H

#include <stdbool.h>

#include "calendar.h"
#include "config.h"

/* Does job index up feed job index down? */
bool lineage_feeds(const struct config *cfg, int up, int down);

/* The partitions of job down that partition p of job up feeds: those of
 * down's calendar that p's interval overlaps (calendar.h cal_map: across
 * grains and zones), clipped to down's start..end; an empty range (last <
 * first) when up does not feed down. */
struct part_range lineage_range(const struct config *cfg, int up, part_t p,
    int down);

/* The same into out (0 to 2 of them, oldest first), for callers of UTC
 * calendars, where a partition feeds at most two. */
int lineage_map(const struct config *cfg, int up, part_t p, int down,
		part_t out[2]);

#endif
