/*
 * calendar.h - dates, durations and partitions (pure: no I/O, no clock).
 *
 * Time is UTC seconds since the Unix epoch (int64_t).  A job's calendar
 * (struct cal: grain, week_start, zone) cuts time into partitions: the
 * partition p is the half-open interval of instants
 * [cal_start(c, p), cal_start(c, p + 1)), and every rule that relates
 * partitions (containment, overlap, the schedule, counting) is derived
 * from those intervals.  The index is dense: every integer is one
 * partition, in time order.
 *   hour    - UTC: hours since 1970-01-01T00.  In a zone: a cell index,
 *             one cell at each local :00 and at each change of offset,
 *             so a cell lasts at most an hour, a repeated hour is two
 *             cells and a skipped hour none (tz.h, tz_seg)
 *   day     - local days since 1970-01-01; a day starts at the first
 *             instant whose wall clock reads that date (23, 24 or 25
 *             hours long; zero for a day a zone skipped: cal_empty)
 *   week    - Monday weeks: (day + 3) / 7 (week 0 starts Monday
 *             1969-12-29); Sunday weeks: (day + 4) / 7 (week 0 starts
 *             Sunday 1969-12-28); the key is the first day's date
 *   month   - (y - 1970) * 12 + m - 1;  quarter - (y - 1970) * 4 +
 *             (m - 1) / 3;  year - y - 1970; keyed by their first day
 *   none    - one partition, 0, keyed "-": the instants from 0001-01-01
 *             to 9999-12-31 (exclusive) whatever the zone, so it overlaps
 *             every partition of every calendar (a whole table); indices
 *             below 0 and above 0 are empty; its local bounds are
 *             0001-01-01 and 9999-12-31; --from/--to are refused for it
 * Indices may be negative (dates before 1970).  Dates are valid from
 * 0001-01-01 to 9999-12-31; parsers refuse anything outside.
 *
 * Keys (the :partition parameter): YYYY-MM-DD for day and coarser (the
 * first local day), YYYY-MM-DDTHH for UTC hours, YYYY-MM-DDTHH+01:00 for
 * hours of a zone (the wall hour and offset of the cell's start).  Local
 * bounds (:partition_start, :partition_end, end exclusive): YYYY-MM-DD for
 * day and coarser, YYYY-MM-DD HH:MM:SS for hour; UTC bounds
 * (cal_bound_utc): YYYY-MM-DD HH:MM:SS.
 *
 * The calendar with tz == NULL is the built-in UTC calendar: its
 * arithmetic is the closed forms above (one branch per call), and the
 * old part_*(enum grain) functions are that calendar at Monday weeks.
 */
#ifndef BACKFILLD_CALENDAR_H
#define BACKFILLD_CALENDAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Fine to coarse: the order is what cal_can_feed() compares. */
enum grain {
	GRAIN_HOUR, GRAIN_DAY, GRAIN_WEEK, GRAIN_MONTH, GRAIN_QUARTER,
	GRAIN_YEAR, GRAIN_NONE
};
#define GRAIN_COUNT 7

/* ISO weekday of a week's first day. */
enum week_start { WEEK_MONDAY = 1, WEEK_SUNDAY = 7 };

typedef int64_t part_t;

/* Floor division: rounds toward minus infinity (b > 0); the calendar's
 * and the zones' (tz.c) one division. */
static inline int64_t
cal_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b) != 0 && a < 0)
		q--;
	return q;
}

struct tz; /* tz.h: an immutable, reference-counted zone */

/* A job's calendar: a value, embedded in its definition.  tz == NULL is
 * the built-in UTC calendar; a zone is never UTC itself (tz.h). */
struct cal {
	enum grain grain;
	enum week_start week_start; /* WEEK_MONDAY unless week + sunday */
	const struct tz *tz;
};

/* The UTC calendar of each grain, Monday weeks: cal_utc[GRAIN_DAY]. */
extern const struct cal cal_utc[GRAIN_COUNT];

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

/* The configuration word of a grain: "hour" ... "year", "none". */
const char *grain_name(enum grain g);
/* Parse a grain a job may declare today: hour, day, week or month
 * (quarter and year come with the configuration keys of the zoned
 * calendar); 0, or -1 for anything else. */
int grain_parse(const char *s, enum grain *g);
/* Parse any of the six time grain words (not "none": the configuration
 * reads partition: none itself, config_job.c); 0, or -1. */
int cal_grain_parse(const char *s, enum grain *g);
/* True when every partition of `fine` lies inside partitions of `coarse`
 * that a mapping can follow: hour->any, day->day/week/month, week->week/month,
 * month->month; any grain -> none, none -> none only. */
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

/*
 * The calendar of a job (struct cal).  Every function is pure and total
 * over indices whose dates lie in 0001..9999; UTC calendars (tz == NULL)
 * give exactly what the part_*() functions above give.
 */
/* The partition holding instant t (seconds). */
part_t cal_part_of(const struct cal *c, int64_t t);
/* First second of p's interval (UTC seconds). */
int64_t cal_start(const struct cal *c, part_t p);
/* First second after p's interval: cal_start(c, p + 1). */
int64_t cal_end(const struct cal *c, part_t p);
/* True for a zero-length partition (a local day a zone skipped). */
bool cal_empty(const struct cal *c, part_t p);
/* Local day number of p's key (day and coarser), or of the local day
 * its first instant lies in (hour). */
int64_t cal_first_day(const struct cal *c, part_t p);
/* The partition holding local day `local_day`; for hour, the day's
 * first cell. */
part_t cal_part_of_day(const struct cal *c, int64_t local_day);
/* Local day number of instant t (the day whose interval holds t). */
int64_t cal_local_day(const struct cal *c, int64_t t);
/* Key text of p into buf. */
void cal_key(const struct cal *c, part_t p, char buf[CAL_KEY_MAX]);
/* Parse a canonical key of calendar c (anything else is refused with a
 * message naming the right key, or the hours of that wall hour). */
int cal_parse_key(const struct cal *c, const char *s, part_t *p,
    struct err *err);
/* Local bounds of p: :partition_start and :partition_end. */
void cal_bounds_local(const struct cal *c, part_t p, char start[CAL_KEY_MAX],
    char end[CAL_KEY_MAX]);
/* An instant as UTC text, YYYY-MM-DD HH:MM:SS (the *_utc bounds). */
void cal_bound_utc(int64_t t, char buf[CAL_KEY_MAX]);
/* Operator input in the job's calendar (--from/--to, inclusive): a date
 * covers every partition overlapping that local day, an hour (hour grain
 * only) every cell of that wall hour, an hour with an offset that one
 * cell.  from after to is refused; so is a range of skipped time. */
int cal_range_parse(const struct cal *c, const char *from, const char *to,
    struct part_range *r, struct err *err);
/* One date or hour (a dates file, a PARTITION, start:/end:), errors
 * speaking of "the date". */
int cal_range_parse_one(const struct cal *c, const char *s,
    struct part_range *r, struct err *err);
/* The partitions of c overlapping the instants [lo, hi) (empty, last <
 * first, when lo >= hi).  The one relation between partitions:
 * containment is overlap with lookback 0. */
struct part_range cal_overlap(const struct cal *c, int64_t lo, int64_t hi);
/* The partitions of `down` that partition p of `up` overlaps. */
struct part_range cal_map(const struct cal *up, part_t p,
    const struct cal *down);
/* The partitions of `up` that overlap partition d of `down`. */
struct part_range cal_inputs(const struct cal *up, const struct cal *down,
    part_t d);
/* May `up` feed `down`: up's grain no coarser than down's (zones may
 * differ: overlap relates them). */
bool cal_can_feed(const struct cal *up, const struct cal *down);
/* Windows (issue 41): partition d of `down` with lookback L reads the
 * instants [cal_start(down, d - L), cal_end(down, d)).  The partitions of
 * `up` in that window; and the partitions of `down` whose window overlaps
 * partition u of `up`. */
struct part_range cal_window_inputs(const struct cal *up,
    const struct cal *down, part_t d, int lookback);
struct part_range cal_window_readers(const struct cal *up, part_t u,
    const struct cal *down, int lookback);
/* True unless keys sort out of time order (hours of a zone with offsets:
 * 02+02:00 comes after 02+01:00 by bytes, before it in time). */
bool cal_keys_sort_in_time(const struct cal *c);
/* Text bounds lo <= key <= hi (byte order) holding every key of range r;
 * for calendars whose keys sort in time these are the keys of r's ends,
 * otherwise a wider hull the caller filters by parsing. */
void cal_key_hull(const struct cal *c, struct part_range r,
    char lo[CAL_KEY_MAX], char hi[CAL_KEY_MAX]);
/* "UTC" or the zone's IANA name. */
const char *cal_zone_name(const struct cal *c);

#endif
