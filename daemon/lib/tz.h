/*
 * tz.h - IANA time zones from the system's tzdata (RFC 8536 TZif v2+
 * files under /usr/share/zoneinfo, or $TZDIR), never the process-wide TZ.
 *
 * A loaded zone is immutable and reference counted: its timeline as
 * segments [from, to) of constant UT offset (transitions that change only
 * the abbreviation or isdst are merged), the file's table followed by the
 * footer's POSIX TZ rule; instants past the table and its 400 years of
 * footer transitions are reduced by whole Gregorian cycles (146097 days,
 * over which the rule repeats), so every answer is exact from year 0001
 * to 9999.
 *
 * Hour cells (calendar.h): one cell starts at each segment's start and at
 * each local :00 inside a segment.  In segment s the cell of instant t is
 * floor((t + s.off) / 3600) + s.shift; the first segment has shift 0, so a
 * zone without transitions numbers its cells as UTC numbers hours.  A cell
 * lasts at most an hour and is never empty; a repeated wall hour is two
 * cells, a skipped one none.
 *
 * tz_parse() is pure (bytes in, zone out) and refuses, with one line, any
 * file that is not a well-formed TZif v2+ file of a zone without leap
 * seconds; tz_load() is the only I/O: it reads one file.
 *
 * Rejected alternatives: ICU (its own, older copy of tzdata that the
 * system's updates do not reach), GLib or cctz (a library, or C++, in a
 * daemon that has none for this).
 */
#ifndef BACKFILLD_TZ_H
#define BACKFILLD_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The largest zone file tz_load() reads (real ones are under 4 KiB). */
#define TZ_FILE_MAX (256 * 1024)
/* The longest zone name. */
#define TZ_NAME_MAX 255

struct tz;

/* A zone's segment: [from, to) at offset `off` (seconds east of UT);
 * the cell of t in it is floor((t + off) / 3600) + shift.  from is
 * INT64_MIN for the first segment, to INT64_MAX for an endless last. */
struct tz_seg {
	int64_t from, to;
	int32_t off;
	int64_t shift;
};

/* Parse the bytes of a TZif file named `name` into a zone (refcount 1).
 * Pure.  Returns 0, or -1 with err naming what is wrong. */
int tz_parse(const char *name, const unsigned char *buf, size_t len,
    struct tz **out, struct err *err);
/* Check a zone name: [A-Za-z0-9_+./-], no . or .. component, not
 * absolute, not localtime, posixrules or right/...; 0 or -1. */
int tz_name_check(const char *name, struct err *err);
/* Read zone `name` from $TZDIR (or /usr/share/zoneinfo) and parse it. */
int tz_load(const char *name, struct tz **out, struct err *err);
/* A job's zone: as tz_load(), but a zone that is UTC itself ("UTC",
 * Etc/UTC, Etc/GMT, Zulu, ...) gives *out = NULL, the built-in UTC
 * calendar; "UTC" reads no file, so a host without tzdata runs UTC jobs. */
int tz_load_calendar(const char *name, struct tz **out, struct err *err);
struct tz *tz_ref(struct tz *z);
void tz_unref(struct tz *z);

const char *tz_name(const struct tz *z);
/* 16 hex digits of the file's bytes: a reload sees a changed zone. */
const char *tz_digest(const struct tz *z);
/* True for a zone that is UTC itself: one offset, zero, forever. */
bool tz_is_utc(const struct tz *z);
/* The largest backward jump of the wall clock, in seconds (0 if none). */
int32_t tz_max_fold(const struct tz *z);
/* True when every offset in effect during [from, to) is whole hours, so
 * the zone's hours start on UTC hours (ClickHouse's toStartOfHour). */
bool tz_hours_on_utc_hours(const struct tz *z, int64_t from, int64_t to);

/* Offset (seconds east of UT) in effect at instant t. */
int32_t tz_offset(const struct tz *z, int64_t t);
/* The segment holding instant t. */
void tz_seg_at(const struct tz *z, int64_t t, struct tz_seg *s);
/* The hour cell of instant t. */
int64_t tz_cell_of(const struct tz *z, int64_t t);
/* First instant of hour cell `cell`. */
int64_t tz_cell_start(const struct tz *z, int64_t cell);
/* The first instant whose wall clock (t + offset) reads `wall` or later:
 * min{t : t + off(t) >= wall}; a wall time a gap skipped gives the end
 * of the gap, a repeated one its first occurrence. */
int64_t tz_wall_first(const struct tz *z, int64_t wall);

#endif
