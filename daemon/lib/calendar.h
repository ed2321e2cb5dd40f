/*
 * calendar.h - dates, durations and partitions (pure: no I/O, no clock).
 *
 * Time is UTC seconds since the Unix epoch (int64_t).  A partition is an
 * index at its grain:
 *   hour  - hours since 1970-01-01T00
 *   day   - days since 1970-01-01
 *   week  - ISO weeks: (days of its Monday + 3) / 7, i.e. week 0 starts
 *           Monday 1969-12-29; the key is the Monday's date
 *   month - months since 1970-01 (year * 12 + month - 1 - 1970 * 12);
 *           the key is the first day's date
 * Indices may be negative (dates before 1970).  Dates are valid from
 * 0001-01-01 to 9999-12-31; every function rejects or clamps nothing
 * silently outside that range: parsers refuse it.
 *
 * Keys (the :partition parameter): YYYY-MM-DD for day, week and month,
 * YYYY-MM-DDTHH for hour.  Bounds (:partition_start, :partition_end, end
 * exclusive): YYYY-MM-DD for day, week and month, YYYY-MM-DD HH:MM:SS for
 * hour.
 */
#ifndef BACKFILLD_CALENDAR_H
#define BACKFILLD_CALENDAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum grain { GRAIN_HOUR, GRAIN_DAY, GRAIN_WEEK, GRAIN_MONTH };

typedef int64_t part_t;

#define CAL_KEY_MAX 32 /* buffer size for keys, bounds and timestamps */

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
int64_t cal_days_from_civil(int y, int m, int d);
/* Civil date of a day number. */
void cal_civil_from_days(int64_t days, int *y, int *m, int *d);
/* ISO weekday of a day number: 1 = Monday ... 7 = Sunday. */
int cal_weekday(int64_t days);
/* True for a Gregorian leap year. */
bool cal_is_leap(int y);
/* Days in a month of a year. */
int cal_days_in_month(int y, int m);

/* Strict YYYY-MM-DD (real calendar date, years 0001..9999) -> day number. */
int cal_parse_date(const char *s, int64_t *days, struct err *err);
/* Strict YYYY-MM-DDTHH (HH 00..23) -> hours since the epoch. */
int cal_parse_hour(const char *s, int64_t *hours, struct err *err);
/* The longest duration a parser accepts: 100 years of 365 days. */
#define CAL_DURATION_MAX_DAYS 36500
/* Strict duration: digits then one of s, m, h, d ("30s", "15m", "2h",
 * "1d"); "0s" allowed, at most CAL_DURATION_MAX_DAYS; no sign, no
 * spaces, no overflow. */
int cal_parse_duration(const char *s, int64_t *seconds, struct err *err);
/* Format a day number as YYYY-MM-DD into buf (CAL_KEY_MAX). */
void cal_format_date(int64_t days, char *buf);
/* Format epoch milliseconds as YYYY-MM-DDTHH:MM:SS.sssZ into buf. */
void cal_format_iso_ms(int64_t ms, char *buf);
/* Format a duration in seconds the way users write it: "2h", "90s". */
void cal_format_duration(int64_t seconds, char *buf);

const char *grain_name(enum grain g);
int grain_parse(const char *s, enum grain *g);
/* True when every partition of `fine` lies inside partitions of `coarse`
 * that a mapping can follow: hour->any, day->day/week/month, week->week/month,
 * month->month. */
bool grain_can_feed(enum grain up, enum grain down);

/* The partition holding instant t (seconds). */
part_t part_of_time(enum grain g, int64_t t);
/* The partition holding day number `days`. */
part_t part_of_day(enum grain g, int64_t days);
/* First second of the partition's interval. */
int64_t part_start(enum grain g, part_t p);
/* First second after the partition's interval (exclusive end). */
int64_t part_end(enum grain g, part_t p);
/* Key text of a partition into buf (CAL_KEY_MAX). */
void part_key(enum grain g, part_t p, char *buf);
/* Parse a key at grain g.  Keys must be the canonical key of a partition:
 * a week key that is not a Monday, or a month key that is not the 1st, is
 * refused with a message naming the right key. */
int part_parse_key(enum grain g, const char *s, part_t *p, struct err *err);
/* Bound text (:partition_start / :partition_end) of an instant at grain g. */
void part_bound(enum grain g, int64_t t, char *buf);

/*
 * An operator range: inclusive bounds given as day numbers or, for hourly
 * jobs, hours.  range_parse() takes the --from/--to texts: YYYY-MM-DD always,
 * YYYY-MM-DDTHH as well when g is hour; it fills the first and last
 * partition at grain g whose interval holds a date (or hour) of the range.
 * from after to is refused.  The count is last - first + 1, computed, never
 * enumerated.
 */
struct part_range {
	part_t first;
	part_t last;
};
int range_parse(enum grain g, const char *from, const char *to,
		struct part_range *r, struct err *err);
/* One date (or hour) of a dates file, errors speaking of "the date". */
int range_parse_date(enum grain g, const char *s, struct part_range *r,
    struct err *err);
int64_t range_count(const struct part_range *r);

/*
 * Downstream mapping.  part_map() gives the partitions of grain `down` that
 * contain partition p of grain `up`: one, or two for a week straddling two
 * months.  part_inputs() gives the range of `up` partitions inside
 * partition d of grain `down`.  Both require grain_can_feed(up, down).
 */
int part_map(enum grain up, part_t p, enum grain down, part_t out[2]);
struct part_range part_inputs(enum grain up, enum grain down, part_t d);

#endif
