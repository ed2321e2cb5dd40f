/*
 * fresh.h - freshness: the partitions a job with a `deadline` still owes,
 * and which of them are late (docs/configuration.md, "Freshness and hooks").
 *
 * Pure: no clock, no I/O.  The scheduler tells it when a partition starts
 * being owed (a scheduled partition when it is materialised, since its due
 * time; a downstream partition when an input of it lands, since then) and
 * when it succeeds; the scheduler's timer asks fresh_next() when the next
 * deadline falls and calls fresh_advance() then.  Nothing here reads the
 * history of runs: the set holds only partitions not yet succeeded, so its
 * size is that of the open work of the jobs that have a deadline.
 *
 * Rules:
 *  FRESH-1. A tracked partition is late from since + deadline on, until it
 *     succeeds (then it is forgotten).
 *  FRESH-2. fresh_advance() reports each partition once when it becomes late:
 *     moving the clock again (forward or back) never reports it again.
 *  FRESH-3. Tracking a partition already tracked keeps the earlier `since`.
 */
#ifndef BACKFILLD_FRESH_H
#define BACKFILLD_FRESH_H

#include <stdbool.h>
#include <stdint.h>

#include "calendar.h"

struct fresh;

struct fresh_item {
	const char *job;
	char key[CAL_KEY_MAX];
	part_t part;
	int64_t since;    /* ms: due time, or when an input landed */
	int64_t deadline; /* ms */
	int64_t request;  /* the request that materialised it, or 0 */
	bool late;
};

struct fresh *fresh_new(void);
void fresh_free(struct fresh *f);
/* Start owing (job, key) since `since` (ms), late after deadline (ms). */
void fresh_track(struct fresh *f, const char *job, part_t part,
		 const char *key, int64_t since, int64_t deadline,
		 int64_t request);
/* (job, key) succeeded: forget it. */
void fresh_done(struct fresh *f, const char *job, const char *key);
/* A job's deadline changed (ms), or it has none any more (0): its items
 * are retimed or forgotten. */
void fresh_set_deadline(struct fresh *f, const char *job, int64_t deadline);
/* When the next partition becomes late (ms), INT64_MAX when none will. */
int64_t fresh_next(const struct fresh *f);
/* Mark late what is due at `now` (ms), calling cb once for each newly
 * late item, oldest deadline first; returns how many. */
typedef void (*fresh_late_cb)(const struct fresh_item *it, void *data);
int64_t fresh_advance(struct fresh *f, int64_t now, fresh_late_cb cb,
		      void *data);
/* A job's late partitions: their count and the oldest (the smallest
 * partition; *oldest untouched when none). */
int64_t fresh_late(const struct fresh *f, const char *job, part_t *oldest,
		   char oldest_key[CAL_KEY_MAX]);
/* Call cb for each late item of job. */
void fresh_each_late(const struct fresh *f, const char *job,
		     void (*cb)(const struct fresh_item *it, void *data),
		     void *data);
/* Items tracked, late or not. */
size_t fresh_size(const struct fresh *f);

#endif
