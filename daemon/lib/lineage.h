/*
 * lineage.h - the one downstream rule: which partitions of a downstream
 * job a partition of its upstream feeds.  Used by the planner (what a
 * request must rebuild), by the scheduler when it relinks a request loaded
 * at start (which items wait for which), and by staleness (which
 * downstream partitions are older than their inputs).  Pure.
 *
 * The rule: job `down` names `up` in its upstream; the partitions of
 * down that a partition of up overlaps as intervals (calendar.h cal_map:
 * finer into coarser, a coarser upstream into each finer partition it
 * spans, and across zones); keep only partitions inside down's
 * start..end, the ones that exist.  A job in its own upstream
 * (job_def.self_lookback N) feeds itself: its partition p feeds its
 * p+1..p+N (a running total's later partitions, never p itself).
 */
#ifndef BACKFILLD_LINEAGE_H
#define BACKFILLD_LINEAGE_H

#include <stdbool.h>

#include "calendar.h"
#include "config.h"

/* Does job index up feed job index down? */
bool lineage_feeds(const struct config *cfg, int up, int down);
/* The lookback of down's upstream entry for up (0 for a plain name), or
 * -1 when up does not feed down. */
int lineage_lookback(const struct config *cfg, int up, int down);

/* The partitions of job down that partition p of job up feeds: those of
 * down's calendar whose window overlaps p's interval (calendar.h
 * cal_window_readers: across grains and zones; the window of P is P's
 * interval extended back by the entry's lookback partitions of down's
 * own calendar, so p feeds the partitions it overlaps and the lookback
 * partitions after them), clipped to down's start..end; an empty range (last <
 * first) when up does not feed down. */
struct part_range lineage_range(const struct config *cfg, int up, part_t p,
    int down);

#endif
