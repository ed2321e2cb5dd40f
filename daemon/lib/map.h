/*
 * map.h - a job's partitions as a map of states (docs/commands.md, "The
 * map"): the pure part.  The daemon fills a struct map from the state store's
 * partition_latest and its own memory (cmd.c), one byte per partition of
 * a bounded range; map.c turns it into runs of one state (the JSON
 * `ranges`) or a calendar, one character per partition.
 *
 * When several things are true of a partition, the strongest wins, in the
 * order of enum map_state's rank (map_raise): running, queued, blocked,
 * late, failed, stale, marked, skipped, succeeded, refused, never_run, not_due.
 */
#ifndef BACKFILLD_MAP_H
#define BACKFILLD_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calendar.h"
#include "err.h"
#include "buf.h"

#define MAP_MAX_PARTITIONS 100000

enum map_state {
	MAP_NOT_DUE,
	MAP_NEVER_RUN,
	MAP_REFUSED,
	MAP_SUCCEEDED,
	MAP_SKIPPED,  /* its newest run skipped by early cut-off: 'u' */
	MAP_MARKED,   /* succeeded by backfillctl mark: nothing ran */
	MAP_STALE,
	MAP_FAILED,
	MAP_LATE,
	MAP_BLOCKED,
	MAP_QUEUED,
	MAP_RUNNING,
	MAP_NSTATES
};
/* The state's name in JSON and the legend. */
const char *map_state_name(enum map_state s);

struct map {
	enum grain grain;  /* = cal.grain */
	struct cal cal;    /* the job's calendar (its zone is referenced) */
	part_t from, to;
	size_t n;
	uint8_t *st; /* n states, from first */
	char **why;  /* n notes or NULL: why a cell has its state (a stale
		      * one's newer inputs), after it in the page's title */
};

/* A map of from..to, every partition MAP_NEVER_RUN; refuses (EXIT_BAD_INPUT)
 * a range above MAP_MAX_PARTITIONS, computed, never enumerated. */
int map_init(struct map *m, const struct cal *c, part_t from, part_t to,
	     struct err *err);
void map_free(struct map *m);
/* Set p's state (outside the range: nothing). */
void map_set(struct map *m, part_t p, enum map_state s);
/* Note why p has its state (outside the range: nothing); text must be
 * safe in an HTML attribute (job names, keys, spaces, commas). */
void map_note(struct map *m, part_t p, const char *text);
/* Set p's state when s ranks above the one it has. */
void map_raise(struct map *m, part_t p, enum map_state s);
/* Runs of one state: cb(from, to, state, count) in order. */
typedef void (*map_range_cb)(part_t from, part_t to, enum map_state s,
			     int64_t count, void *data);
void map_ranges(const struct map *m, map_range_cb cb, void *data);
/* {job, grain, timezone, from, to, ranges: [{from, to, state, count}]}
 * and "\n"; keys in the map's calendar. */
void map_json(const struct map *m, const char *job, struct buf *out);
/* The calendar in local time (day: a row per ISO week, a column per
 * weekday; hour: a row per local day, 23, 24 or 25 columns; week, month
 * and quarter: a row per year; year: a row per decade), the zone named in
 * the header when not UTC, a legend with counts; ANSI colours when
 * `colour`. */
void map_text(const struct map *m, const char *job, bool colour,
	      struct buf *out);
/* The calendar's words for a heading: the grain, ", Sunday weeks" for
 * weeks from Sunday and ", ZONE, local time" in a zone other than UTC. */
void map_html_calendar(const struct cal *c, struct buf *out);
/* The report's grid of m (<div class="map g-GRAIN">, then its legend
 * <p class="legend">, left open): a cell per partition (data-job=job_html,
 * HTML-safe already, data-partition, data-state); days a row per ISO
 * week under a row of weekdays, with months and the Monday's date; hours
 * a row per local day (its date; 23, 24 or 25 cells, the first day's
 * earlier hours as hidden pads) with data-hour the local hour, the
 * second of a repeated hour marked class "c rep", data-hour="HH'";
 * other grains the cells in a row from m->from. */
void map_html(const struct map *m, const char *job_html, struct buf *out);

#endif
