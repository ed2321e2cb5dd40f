/*
 * fuzz_calendar.c - libFuzzer target: the parsers of calendar.h (dates,
 * hours, durations, partition keys, operator ranges, grains) and the
 * partition arithmetic behind them.
 *
 * The input is text; its first line also serves as --from and its second
 * as --to.  Invariants (FUZZ_CHECK traps when one breaks):
 *  - a parser that refuses says why in one line; one that accepts was
 *    given the canonical text of what it returns: key -> parse -> key
 *    gives the key back (dates, hours, partition keys at every grain),
 *    and a duration formatted and parsed again is the same duration;
 *  - a partition holds its own start and last second and nothing of its
 *    neighbours; it maps into the coarser partitions that hold it, whose
 *    inputs hold it back;
 *  - a range has first <= last and its bounds' partitions at its ends;
 *  - the schedule: the newest due partition is due, the next is not;
 *  - the same in calendars beside the UTC ones: quarters, years, Sunday
 *    weeks, and zones of the system's tzdata (Berlin, Chicago, Lord
 *    Howe's half-hour change, Kolkata's half-hour offset) at every grain:
 *    a key parses back, a partition holds its instants (or is a day the
 *    zone skipped), a range of local dates or hours is first <= last.
 */
#include "fuzz.h"

#include "calendar.h"
#include "schedule.h"
#include "tz.h"

#define FUZZ_ZONES 4

/* The calendars beyond cal_utc[]: quarter, year and Sunday weeks in UTC,
 * then every grain of each zone (a zone missing from tzdata is left
 * out). */
static struct cal fuzz_cals[3 + FUZZ_ZONES * GRAIN_COUNT];
static size_t fuzz_ncals;

static void
fuzz_calendar_init(void)
{
	static const char *zones[FUZZ_ZONES] = { "Europe/Berlin",
		"America/Chicago", "Australia/Lord_Howe", "Asia/Kolkata" };
	struct err err;

	if (fuzz_ncals > 0)
		return;
	fuzz_cals[fuzz_ncals++] = cal_utc[GRAIN_QUARTER];
	fuzz_cals[fuzz_ncals++] = cal_utc[GRAIN_YEAR];
	fuzz_cals[fuzz_ncals] = cal_utc[GRAIN_WEEK];
	fuzz_cals[fuzz_ncals++].week_start = WEEK_SUNDAY;
	for (int z = 0; z < FUZZ_ZONES; z++) {
		struct tz *tz = NULL;

		if (tz_load(zones[z], &tz, &err) == -1)
			continue;
		for (int g = 0; g < GRAIN_COUNT; g++) {
			struct cal c = { (enum grain)g, WEEK_MONDAY, tz };

			fuzz_cals[fuzz_ncals++] = c;
		}
	}
}

/* Keys, partitions and ranges of every calendar on the two texts. */
static void
fuzz_calendar_cals(const char *s, const char *to)
{
	char buf[CAL_KEY_MAX];
	struct part_range r;
	struct err err;
	part_t p;

	fuzz_calendar_init();
	for (size_t i = 0; i < fuzz_ncals; i++) {
		const struct cal *c = &fuzz_cals[i];

		if (cal_parse_key(c, s, &p, &err) == 0) {
			int64_t st = cal_start(c, p), e = cal_end(c, p);

			cal_key(c, p, buf);
			FUZZ_CHECK(strcmp(buf, s) == 0);
			FUZZ_CHECK(st < e);
			FUZZ_CHECK(cal_part_of(c, st) == p &&
			    cal_part_of(c, e - 1) == p);
			FUZZ_CHECK(cal_end(c, p - 1) == st);
		} else {
			FUZZ_CHECK(fuzz_one_line(err.msg));
		}
		if (cal_range_parse(c, s, to, &r, &err) == 0) {
			FUZZ_CHECK(r.first <= r.last);
			FUZZ_CHECK(cal_start(c, r.first) < cal_end(c, r.last));
		} else {
			FUZZ_CHECK(fuzz_one_line(err.msg));
		}
	}
}

/* Check the arithmetic around partition p of grain g. */
static void
fuzz_calendar_part(enum grain g, part_t p)
{
	char key[CAL_KEY_MAX], bound[CAL_KEY_MAX];
	struct part_range r;
	struct err err;
	part_t back, out[2];
	int64_t s = part_start(g, p), e = part_end(g, p);
	int n, down;

	FUZZ_CHECK(s < e);
	FUZZ_CHECK(part_of_time(g, s) == p && part_of_time(g, e - 1) == p);
	FUZZ_CHECK(part_of_time(g, s - 1) == p - 1 && part_of_time(g, e) == p + 1);
	part_key(g, p, key);
	FUZZ_CHECK(part_parse_key(g, key, &back, &err) == 0 && back == p);
	part_bound(g, s, bound);
	FUZZ_CHECK(strlen(bound) == (g == GRAIN_HOUR ? 19u : 10u));
	FUZZ_CHECK(strncmp(bound, key, 10) == 0);
	for (down = g; down <= GRAIN_MONTH; down++) {
		n = part_map(g, p, (enum grain)down, out);
		FUZZ_CHECK(n == 1 || n == 2);
		FUZZ_CHECK(n == 1 || (g == GRAIN_WEEK && down == GRAIN_MONTH));
		for (int i = 0; i < n; i++) {
			FUZZ_CHECK(part_start((enum grain)down, out[i]) < e &&
			    part_end((enum grain)down, out[i]) > s);
			r = part_inputs(g, (enum grain)down, out[i]);
			FUZZ_CHECK(r.first <= p && p <= r.last);
		}
	}
	if (g != GRAIN_HOUR)
		FUZZ_CHECK(part_map(g, p, GRAIN_HOUR, out) == 0);
}

/* Check every parser of calendar.h on s. */
static void
fuzz_calendar_text(const char *s)
{
	char buf[CAL_KEY_MAX];
	struct err err;
	int64_t v, d;
	part_t p;
	enum grain g;
	int y, m, dd;

	if (cal_parse_date(s, &v, &err) == 0) {
		cal_format_date(v, buf);
		FUZZ_CHECK(strcmp(buf, s) == 0);
		cal_civil_from_days(v, &y, &m, &dd);
		FUZZ_CHECK(cal_days_from_civil(y, m, dd) == v);
		FUZZ_CHECK(dd >= 1 && dd <= cal_days_in_month(y, m));
		FUZZ_CHECK(cal_weekday(v) >= 1 && cal_weekday(v) <= 7);
		FUZZ_CHECK(cal_weekday(v + 1) == cal_weekday(v) % 7 + 1);
	} else {
		FUZZ_CHECK(fuzz_one_line(err.msg));
	}
	if (cal_parse_hour(s, &v, &err) == 0) {
		part_key(GRAIN_HOUR, v, buf);
		FUZZ_CHECK(strcmp(buf, s) == 0);
	} else {
		FUZZ_CHECK(fuzz_one_line(err.msg));
	}
	if (cal_parse_duration(s, &v, &err) == 0) {
		FUZZ_CHECK(v >= 0 && v <= (int64_t)36500 * 86400);
		cal_format_duration(v, buf);
		FUZZ_CHECK(cal_parse_duration(buf, &d, &err) == 0 && d == v);
	} else {
		FUZZ_CHECK(fuzz_one_line(err.msg));
	}
	if (grain_parse(s, &g) == 0)
		FUZZ_CHECK(strcmp(grain_name(g), s) == 0);
	for (g = GRAIN_HOUR; g <= GRAIN_MONTH; g++) {
		if (part_parse_key(g, s, &p, &err) == 0) {
			part_key(g, p, buf);
			FUZZ_CHECK(strcmp(buf, s) == 0);
			fuzz_calendar_part(g, p);
		} else {
			FUZZ_CHECK(fuzz_one_line(err.msg));
		}
	}
}

/* Check range_parse() and the schedule on --from and --to texts. */
static void
fuzz_calendar_range(const char *from, const char *to)
{
	struct part_range r;
	struct err err;
	int64_t ready, now, t;
	enum grain g;
	part_t last;

	for (g = GRAIN_HOUR; g <= GRAIN_MONTH; g++) {
		if (range_parse(g, from, to, &r, &err) == -1) {
			FUZZ_CHECK(fuzz_one_line(err.msg));
			continue;
		}
		FUZZ_CHECK(r.first <= r.last && range_count(&r) >= 1);
		FUZZ_CHECK(range_count(&r) == r.last - r.first + 1);
		/* the schedule at the start of the range, --to's text (a
		 * duration?) as ready_after */
		now = part_start(g, r.first);
		if (cal_parse_duration(to, &ready, &err) == -1)
			ready = 0;
		last = schedule_last_due(g, ready, now);
		FUZZ_CHECK(schedule_due_time(g, ready, last) <= now);
		FUZZ_CHECK(schedule_due_time(g, ready, last + 1) > now);
		t = part_end(g, r.last) - 1;
		FUZZ_CHECK(part_of_time(g, t) == r.last);
	}
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	char *nl = strchr(s, '\n');
	const char *to = "";

	if (nl != NULL) {
		*nl = '\0';
		to = nl + 1;
		nl = strchr(nl + 1, '\n');
		if (nl != NULL)
			*nl = '\0';
	}
	fuzz_calendar_text(s);
	fuzz_calendar_text(to);
	fuzz_calendar_range(s, to);
	fuzz_calendar_cals(s, to);
	free(s);
	return 0;
}
