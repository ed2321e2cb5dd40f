/*
 * test_calendar.c - the calendar suite: civil dates, strict parsers,
 * partitions at every grain, downstream mapping, ranges and schedule math.
 *
 * Loop tests run over tables of dates chosen where calendars break: month
 * ends, leap days, year ends, ISO week 53, the epoch and the ends of the
 * valid range.  Expected values are exact (cross-checked with Python's
 * datetime), never recomputed with the code under test.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "schedule.h"
#include "tz.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Day number of a date the test knows to be good. */
static int64_t
day_of(const char *s)
{
	struct err err;
	int64_t d = 0;

	err_clear(&err);
	if (cal_parse_date(s, &d, &err) != 0)
		ck_abort_msg("test date %s refused: %s", s, err.msg);
	return d;
}

/* Epoch seconds of a good date plus a time of day. */
static int64_t
time_of(const char *date, int h, int mi, int s)
{
	return day_of(date) * 86400 + h * 3600 + mi * 60 + s;
}

/* Partition of a good key at grain g. */
static part_t
key_of(enum grain g, const char *key)
{
	struct err err;
	part_t p = 0;

	err_clear(&err);
	if (part_parse_key(g, key, &p, &err) != 0)
		ck_abort_msg("test key %s refused: %s", key, err.msg);
	return p;
}

/* Assert that err holds a one-line bad-input message. */
static void
assert_bad_input(const struct err *err, const char *what)
{
	ck_assert_msg(err->code == EXIT_BAD_INPUT, "%s: code %d", what,
	    err->code);
	ck_assert_msg(err->msg[0] != '\0', "%s: empty message", what);
	ck_assert_msg(strchr(err->msg, '\n') == NULL,
	    "%s: message spans lines: %s", what, err->msg);
}

/* --- civil dates ------------------------------------------------------- */

static const struct {
	int y, m, d;
	int64_t days;
	int weekday;
} known_days[] = {
	{ 1970, 1, 1, 0, 4 },
	{ 1969, 12, 31, -1, 3 },
	{ 1969, 12, 29, -3, 1 },
	{ 2000, 2, 29, 11016, 2 },
	{ 2000, 3, 1, 11017, 3 },
	{ 2024, 2, 29, 19782, 4 },
	{ 2026, 2, 8, 20492, 7 },
	{ 1900, 3, 1, -25508, 4 },
	{ 1600, 1, 1, -135140, 6 },
	{ 2400, 12, 31, 157419, 7 },
	{ 1, 1, 1, -719162, 1 },
	{ 9999, 12, 31, 2932896, 5 },
};

START_TEST(test_known_days)
{
	int y, m, d;

	ck_assert_int_eq(cal_days_from_civil(known_days[_i].y,
	    known_days[_i].m, known_days[_i].d), known_days[_i].days);
	cal_civil_from_days(known_days[_i].days, &y, &m, &d);
	ck_assert_int_eq(y, known_days[_i].y);
	ck_assert_int_eq(m, known_days[_i].m);
	ck_assert_int_eq(d, known_days[_i].d);
	ck_assert_int_eq(cal_weekday(known_days[_i].days),
	    known_days[_i].weekday);
}
END_TEST

/* Every day from 1600-01-01 to 2400-12-31 against a date counter that
 * knows nothing but days_in_month; plus format/parse round trip. */
START_TEST(test_round_trip_1600_2400)
{
	int64_t first = cal_days_from_civil(1600, 1, 1);
	int64_t last = cal_days_from_civil(2400, 12, 31);
	int cy = 1600, cm = 1, cd = 1, cw = 6; /* 1600-01-01 was a Saturday */
	char buf[CAL_KEY_MAX], want[64];
	struct err err;
	int64_t day, back;
	int y, m, d;

	ck_assert_int_eq(last - first + 1, 292560);
	for (day = first; day <= last; day++) {
		cal_civil_from_days(day, &y, &m, &d);
		if (y != cy || m != cm || d != cd)
			ck_abort_msg("day %lld: got %d-%d-%d want %d-%d-%d",
			    (long long)day, y, m, d, cy, cm, cd);
		if (cal_days_from_civil(y, m, d) != day)
			ck_abort_msg("day %lld does not round trip",
			    (long long)day);
		if (cal_weekday(day) != cw)
			ck_abort_msg("day %lld: weekday %d want %d",
			    (long long)day, cal_weekday(day), cw);
		cal_format_date(day, buf);
		snprintf(want, sizeof want, "%04d-%02d-%02d", cy, cm, cd);
		if (strcmp(buf, want) != 0)
			ck_abort_msg("day %lld formats as %s", (long long)day,
			    buf);
		if (cal_parse_date(buf, &back, &err) != 0 || back != day)
			ck_abort_msg("%s does not parse back", buf);
		cw = cw % 7 + 1;
		if (++cd > cal_days_in_month(cy, cm)) {
			cd = 1;
			if (++cm > 12) {
				cm = 1;
				cy++;
			}
		}
	}
}
END_TEST

/* The whole valid range, 0001-01-01 .. 9999-12-31, both directions. */
START_TEST(test_round_trip_full_range)
{
	int64_t day, first = -719162, last = 2932896;
	int y, m, d, py = 1, pm = 1, pd = 0;

	for (day = first; day <= last; day++) {
		cal_civil_from_days(day, &y, &m, &d);
		if (cal_days_from_civil(y, m, d) != day)
			ck_abort_msg("day %lld does not round trip",
			    (long long)day);
		/* strictly one day after the previous date */
		if (!((y == py && m == pm && d == pd + 1) ||
		    (y == py && m == pm + 1 && d == 1) ||
		    (y == py + 1 && m == 1 && d == 1 && pm == 12)))
			ck_abort_msg("day %lld: %d-%d-%d after %d-%d-%d",
			    (long long)day, y, m, d, py, pm, pd);
		py = y;
		pm = m;
		pd = d;
	}
	ck_assert_int_eq(py, 9999);
	ck_assert_int_eq(pm, 12);
	ck_assert_int_eq(pd, 31);
}
END_TEST

static const struct {
	int y;
	bool leap;
} leap_years[] = {
	{ 1, false }, { 4, true }, { 100, false }, { 400, true },
	{ 1600, true }, { 1700, false }, { 1800, false }, { 1900, false },
	{ 1996, true }, { 2000, true }, { 2023, false }, { 2024, true },
	{ 2025, false }, { 2026, false }, { 2100, false }, { 2400, true },
	{ 9996, true }, { 9999, false },
};

START_TEST(test_leap_days)
{
	char s[64];
	struct err err;
	int64_t d;
	int y = leap_years[_i].y;

	ck_assert_int_eq(cal_is_leap(y), leap_years[_i].leap);
	ck_assert_int_eq(cal_days_in_month(y, 2), leap_years[_i].leap ? 29 : 28);
	snprintf(s, sizeof s, "%04d-02-29", y);
	err_clear(&err);
	if (leap_years[_i].leap) {
		ck_assert_int_eq(cal_parse_date(s, &d, &err), 0);
		ck_assert_int_eq(d + 1, cal_days_from_civil(y, 3, 1));
	} else {
		ck_assert_int_eq(cal_parse_date(s, &d, &err), -1);
		assert_bad_input(&err, s);
		ck_assert_ptr_nonnull(strstr(err.msg, "has 28 days"));
	}
	/* the year's length, from Jan 1 to Jan 1 */
	if (y < 9999)
		ck_assert_int_eq(cal_days_from_civil(y + 1, 1, 1) -
		    cal_days_from_civil(y, 1, 1), leap_years[_i].leap ? 366 : 365);
}
END_TEST

static const int month_end_years[] = { 1, 1900, 1969, 1970, 2000, 2023,
	2024, 2026, 2100, 9999 };

/* Every month end of the table's years: last day parses, the day after
 * does not, and the next day number is the 1st of the next month. */
START_TEST(test_month_ends)
{
	static const int len[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
		30, 31 };
	int y = month_end_years[_i], m, want, ny, nm, nd;
	char s[64];
	struct err err;
	int64_t day;
	part_t p;

	for (m = 1; m <= 12; m++) {
		want = len[m - 1] + (m == 2 && cal_is_leap(y));
		ck_assert_int_eq(cal_days_in_month(y, m), want);
		snprintf(s, sizeof s, "%04d-%02d-%02d", y, m, want);
		ck_assert_msg(cal_parse_date(s, &day, &err) == 0, "%s: %s", s,
		    err.msg);
		cal_civil_from_days(day + 1, &ny, &nm, &nd);
		ck_assert_int_eq(nd, 1);
		ck_assert_int_eq(nm, m % 12 + 1);
		ck_assert_int_eq(ny, m == 12 ? y + 1 : y);
		/* month partition: s is its last day */
		p = part_of_day(GRAIN_MONTH, day);
		ck_assert_int_eq(p, ((int64_t)y - 1970) * 12 + m - 1);
		ck_assert_int_eq(part_end(GRAIN_MONTH, p), (day + 1) * 86400);
		ck_assert_int_eq(part_of_day(GRAIN_MONTH, day + 1), p + 1);
		snprintf(s, sizeof s, "%04d-%02d-%02d", y, m, want + 1);
		err_clear(&err);
		ck_assert_int_eq(cal_parse_date(s, &day, &err), -1);
		assert_bad_input(&err, s);
	}
	ck_assert_int_eq(cal_days_in_month(y, 0), 0);
	ck_assert_int_eq(cal_days_in_month(y, 13), 0);
}
END_TEST

static const struct {
	const char *dec31, *jan1;
	const char *week_of_jan1; /* Monday key */
} year_ends[] = {
	{ "1969-12-31", "1970-01-01", "1969-12-29" },
	{ "1999-12-31", "2000-01-01", "1999-12-27" },
	{ "2000-12-31", "2001-01-01", "2001-01-01" },
	{ "2020-12-31", "2021-01-01", "2020-12-28" },
	{ "2025-12-31", "2026-01-01", "2025-12-29" },
	{ "2026-12-31", "2027-01-01", "2026-12-28" },
	{ "9998-12-31", "9999-01-01", "9998-12-28" },
};

START_TEST(test_year_ends)
{
	int64_t a = day_of(year_ends[_i].dec31), b = day_of(year_ends[_i].jan1);
	char key[CAL_KEY_MAX];

	ck_assert_int_eq(b, a + 1);
	ck_assert_int_eq(part_of_day(GRAIN_MONTH, b),
	    part_of_day(GRAIN_MONTH, a) + 1);
	ck_assert_int_eq(part_of_day(GRAIN_HOUR, b),
	    part_of_time(GRAIN_HOUR, a * 86400 + 86399) + 1);
	part_key(GRAIN_WEEK, part_of_day(GRAIN_WEEK, b), key);
	ck_assert_str_eq(key, year_ends[_i].week_of_jan1);
	part_key(GRAIN_MONTH, part_of_day(GRAIN_MONTH, b), key);
	ck_assert_str_eq(key, year_ends[_i].jan1);
}
END_TEST

/* --- strict parsers ---------------------------------------------------- */

static const struct {
	const char *s;
	const char *date_msg; /* exact cal_parse_date message, or NULL */
	const char *hour_msg; /* exact cal_parse_hour message, or NULL */
} bad_inputs[] = {
	{ "2026-02-30", "2026-02-30 is not a date: February 2026 has 28 days",
	  NULL },
	{ "2025-02-29", "2025-02-29 is not a date: February 2025 has 28 days",
	  NULL },
	{ "2100-02-29", "2100-02-29 is not a date: February 2100 has 28 days",
	  NULL },
	{ "2026-04-31", "2026-04-31 is not a date: April 2026 has 30 days",
	  NULL },
	{ "2026-01-00", "2026-01-00 is not a date: January 2026 has 31 days",
	  NULL },
	{ "2026-13-01", "2026-13-01 is not a date: months run from 01 to 12",
	  NULL },
	{ "2026-00-10", "2026-00-10 is not a date: months run from 01 to 12",
	  NULL },
	{ "0000-01-01", "0000-01-01 is not a date: years run from 0001 to 9999",
	  NULL },
	{ "2026-1-01", "bad date \"2026-1-01\": write dates as YYYY-MM-DD, "
	  "e.g. 2026-02-08", NULL },
	{ "2026-01-01x", NULL, NULL },
	{ " 2026-01-01", NULL, NULL },
	{ "2026-01-01 ", NULL, NULL },
	{ "", "bad date \"\": write dates as YYYY-MM-DD, e.g. 2026-02-08",
	  "bad hour \"\": write hours as YYYY-MM-DDTHH, e.g. 2026-02-08T13" },
	{ "2026-01-01T24", NULL,
	  "2026-01-01T24 is not an hour: hours run from 00 to 23" },
	{ "2026-01-01T99", NULL,
	  "2026-01-01T99 is not an hour: hours run from 00 to 23" },
	{ "2026-01-01T1", NULL, "bad hour \"2026-01-01T1\": write hours as "
	  "YYYY-MM-DDTHH, e.g. 2026-02-08T13" },
	{ "2026-02-30T00", NULL,
	  "2026-02-30 is not a date: February 2026 has 28 days" },
	{ "2026-01-01T001", NULL, NULL },
	{ "2026-01-01t01", NULL, NULL },
	{ "2026-01-01 01", NULL, NULL },
	{ "2026-01-01T-1", NULL, NULL },
	{ "2026-01-01T+1", NULL, NULL },
	{ "2026-01-01T00:00", NULL, NULL },
	{ "-2026-01-01", NULL, NULL },
	{ "+2026-01-01", NULL, NULL },
	{ "+026-01-01", NULL, NULL },
	{ "2026-+1-01", NULL, NULL },
	{ "2026/01/01", NULL, NULL },
	{ "20260101", NULL, NULL },
	{ "10000-01-01", NULL, NULL },
	{ "2026-01-0a", NULL, NULL },
	{ "2026-01-01\n", "bad date \"2026-01-01\\n\": write dates as "
	  "YYYY-MM-DD, e.g. 2026-02-08", NULL },
	{ "\"2026-01-01\"", "bad date \"\\\"2026-01-01\\\"\": write dates as "
	  "YYYY-MM-DD, e.g. 2026-02-08", NULL },
	{ "\xef\xbc\x92""026-01-01", NULL, NULL }, /* fullwidth digit two */
};

START_TEST(test_bad_inputs)
{
	const char *s = bad_inputs[_i].s;
	enum grain g;
	struct err err;
	int64_t v = 12345;
	part_t p = 12345;

	err_clear(&err);
	ck_assert_msg(cal_parse_date(s, &v, &err) == -1, "date \"%s\" taken",
	    s);
	assert_bad_input(&err, s);
	if (bad_inputs[_i].date_msg != NULL)
		ck_assert_str_eq(err.msg, bad_inputs[_i].date_msg);
	err_clear(&err);
	ck_assert_msg(cal_parse_hour(s, &v, &err) == -1, "hour \"%s\" taken",
	    s);
	assert_bad_input(&err, s);
	if (bad_inputs[_i].hour_msg != NULL)
		ck_assert_str_eq(err.msg, bad_inputs[_i].hour_msg);
	ck_assert_int_eq(v, 12345); /* untouched on failure */
	for (g = GRAIN_HOUR; g <= GRAIN_MONTH; g++) {
		err_clear(&err);
		ck_assert_int_eq(part_parse_key(g, s, &p, &err), -1);
		assert_bad_input(&err, s);
	}
	ck_assert_int_eq(p, 12345);
}
END_TEST

START_TEST(test_parse_null_and_long)
{
	char big[300];
	struct err err;
	int64_t v;

	err_clear(&err);
	ck_assert_int_eq(cal_parse_date(NULL, &v, &err), -1);
	assert_bad_input(&err, "NULL date");
	ck_assert_int_eq(cal_parse_hour(NULL, &v, &err), -1);
	ck_assert_int_eq(cal_parse_duration(NULL, &v, &err), -1);
	memset(big, '7', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	err_clear(&err);
	ck_assert_int_eq(cal_parse_date(big, &v, &err), -1);
	assert_bad_input(&err, "long date");
	ck_assert_ptr_nonnull(strstr(err.msg, "...\""));
	ck_assert_uint_lt(strlen(err.msg), 160);
	/* NULL err is allowed */
	ck_assert_int_eq(cal_parse_date("2026-02-30", &v, NULL), -1);
}
END_TEST

static const struct {
	const char *s;
	int64_t hours;
} good_hours[] = {
	{ "1970-01-01T00", 0 },
	{ "1969-12-31T23", -1 },
	{ "2026-02-08T13", 20492LL * 24 + 13 },
	{ "2024-02-29T23", 19782LL * 24 + 23 },
	{ "0001-01-01T00", -719162LL * 24 },
	{ "9999-12-31T23", 2932896LL * 24 + 23 },
};

START_TEST(test_good_hours)
{
	char key[CAL_KEY_MAX];
	struct err err;
	int64_t h;

	ck_assert_int_eq(cal_parse_hour(good_hours[_i].s, &h, &err), 0);
	ck_assert_int_eq(h, good_hours[_i].hours);
	part_key(GRAIN_HOUR, h, key);
	ck_assert_str_eq(key, good_hours[_i].s);
	ck_assert_int_eq(key_of(GRAIN_HOUR, good_hours[_i].s), h);
}
END_TEST

static const struct {
	const char *s;
	int64_t secs;
	const char *canon; /* cal_format_duration of secs */
} good_durations[] = {
	{ "0s", 0, "0s" },
	{ "0d", 0, "0s" },
	{ "30s", 30, "30s" },
	{ "90s", 90, "90s" },
	{ "60s", 60, "1m" },
	{ "15m", 900, "15m" },
	{ "90m", 5400, "90m" },
	{ "120m", 7200, "2h" },
	{ "2h", 7200, "2h" },
	{ "24h", 86400, "1d" },
	{ "1d", 86400, "1d" },
	{ "3601s", 3601, "3601s" },
	{ "007s", 7, "7s" },
	{ "36500d", 3153600000LL, "36500d" },
	{ "876000h", 3153600000LL, "36500d" },
	{ "3153600000s", 3153600000LL, "36500d" },
};

START_TEST(test_good_durations)
{
	char buf[CAL_KEY_MAX];
	struct err err;
	int64_t v = -1;

	ck_assert_msg(cal_parse_duration(good_durations[_i].s, &v, &err) == 0,
	    "%s: %s", good_durations[_i].s, err.msg);
	ck_assert_int_eq(v, good_durations[_i].secs);
	cal_format_duration(v, buf);
	ck_assert_str_eq(buf, good_durations[_i].canon);
}
END_TEST

static const struct {
	const char *s;
	const char *msg; /* exact, or NULL */
} bad_durations[] = {
	{ "", "empty duration: write a whole number and a unit (s, m, h or d), "
	  "e.g. 30s, 15m, 2h, 1d" },
	{ "5w", "bad duration \"5w\": write a whole number and a unit "
	  "(s, m, h or d), e.g. 30s, 15m, 2h, 1d" },
	{ "36501d", "duration \"36501d\" is too long: the most is 36500d "
	  "(100 years)" },
	{ "3153600001s", NULL },
	{ "876001h", NULL },
	{ "99999999999999999999999999s", NULL },
	{ "s", NULL },
	{ "m", NULL },
	{ "10", NULL },
	{ "1.5h", NULL },
	{ "-1s", NULL },
	{ "+1s", NULL },
	{ " 1s", NULL },
	{ "1s ", NULL },
	{ "1 s", NULL },
	{ "1S", NULL },
	{ "1H", NULL },
	{ "1h30m", NULL },
	{ "1ms", NULL },
	{ "1d\n", NULL },
	{ "0x10s", NULL },
	{ "１s", NULL },
};

START_TEST(test_bad_durations)
{
	struct err err;
	int64_t v = 12345;

	err_clear(&err);
	ck_assert_msg(cal_parse_duration(bad_durations[_i].s, &v, &err) == -1,
	    "duration \"%s\" taken", bad_durations[_i].s);
	assert_bad_input(&err, bad_durations[_i].s);
	if (bad_durations[_i].msg != NULL)
		ck_assert_str_eq(err.msg, bad_durations[_i].msg);
	ck_assert_int_eq(v, 12345);
}
END_TEST

START_TEST(test_format)
{
	char buf[CAL_KEY_MAX];

	cal_format_iso_ms((20492LL * 86400 + 13 * 3600 + 4 * 60 + 5) * 1000 +
	    123, buf);
	ck_assert_str_eq(buf, "2026-02-08T13:04:05.123Z");
	cal_format_iso_ms(0, buf);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00.000Z");
	cal_format_iso_ms(-1, buf);
	ck_assert_str_eq(buf, "1969-12-31T23:59:59.999Z");
	cal_format_iso_ms(-1000, buf);
	ck_assert_str_eq(buf, "1969-12-31T23:59:59.000Z");
	cal_format_iso_ms(2932896LL * 86400000 + 86399999, buf);
	ck_assert_str_eq(buf, "9999-12-31T23:59:59.999Z");
	cal_format_iso_ms(-719162LL * 86400000, buf);
	ck_assert_str_eq(buf, "0001-01-01T00:00:00.000Z");
	cal_format_date(-719162, buf);
	ck_assert_str_eq(buf, "0001-01-01");
	cal_format_date(2932896, buf);
	ck_assert_str_eq(buf, "9999-12-31");
	cal_format_duration(172800, buf);
	ck_assert_str_eq(buf, "2d");
	cal_format_duration(86400 + 3600, buf);
	ck_assert_str_eq(buf, "25h");
}
END_TEST

/* --- grains and partitions --------------------------------------------- */

START_TEST(test_grain_names)
{
	static const char *bad[] = { "", "Day", "days", "daily", "weekly",
		" hour", "month ", "minute", "year" };
	enum grain g, back;
	size_t i;

	ck_assert_str_eq(grain_name(GRAIN_HOUR), "hour");
	ck_assert_str_eq(grain_name(GRAIN_DAY), "day");
	ck_assert_str_eq(grain_name(GRAIN_WEEK), "week");
	ck_assert_str_eq(grain_name(GRAIN_MONTH), "month");
	for (g = GRAIN_HOUR; g <= GRAIN_MONTH; g++) {
		ck_assert_int_eq(grain_parse(grain_name(g), &back), 0);
		ck_assert_int_eq(back, g);
	}
	for (i = 0; i < NELEM(bad); i++)
		ck_assert_msg(grain_parse(bad[i], &back) == -1, "\"%s\" taken",
		    bad[i]);
	ck_assert_int_eq(grain_parse(NULL, &back), -1);
	/* quarter and year are calendar grains, not yet a job's words */
	ck_assert_str_eq(grain_name(GRAIN_QUARTER), "quarter");
	ck_assert_str_eq(grain_name(GRAIN_YEAR), "year");
	ck_assert_int_eq(grain_parse("quarter", &back), -1);
	for (g = GRAIN_HOUR; g <= GRAIN_YEAR; g++) {
		ck_assert_int_eq(cal_grain_parse(grain_name(g), &back), 0);
		ck_assert_int_eq(back, g);
	}
	ck_assert_int_eq(cal_grain_parse("years", &back), -1);
}
END_TEST

START_TEST(test_grain_can_feed)
{
	/* [up][down], grains in enum order hour, day, week, month */
	static const bool want[4][4] = {
		{ true, true, true, true },    /* hour -> any */
		{ false, true, true, true },   /* day -> day, week, month */
		{ false, false, true, true },  /* week -> week, month */
		{ false, false, false, true }, /* month -> month */
	};
	enum grain up, down;

	for (up = GRAIN_HOUR; up <= GRAIN_MONTH; up++)
		for (down = GRAIN_HOUR; down <= GRAIN_MONTH; down++)
			ck_assert_msg(grain_can_feed(up, down) == want[up][down],
			    "%s -> %s", grain_name(up), grain_name(down));
}
END_TEST

static const struct {
	enum grain g;
	const char *key;
	part_t index;
	const char *start, *end; /* part_bound of start and end */
} bounds[] = {
	{ GRAIN_HOUR, "2026-02-08T13", 20492LL * 24 + 13,
	  "2026-02-08 13:00:00", "2026-02-08 14:00:00" },
	{ GRAIN_HOUR, "2026-12-31T23", 20818LL * 24 + 23,
	  "2026-12-31 23:00:00", "2027-01-01 00:00:00" },
	{ GRAIN_HOUR, "1969-12-31T23", -1,
	  "1969-12-31 23:00:00", "1970-01-01 00:00:00" },
	{ GRAIN_HOUR, "1969-12-31T00", -24,
	  "1969-12-31 00:00:00", "1969-12-31 01:00:00" },
	{ GRAIN_DAY, "2024-02-29", 19782, "2024-02-29", "2024-03-01" },
	{ GRAIN_DAY, "1969-12-31", -1, "1969-12-31", "1970-01-01" },
	{ GRAIN_DAY, "0001-01-01", -719162, "0001-01-01", "0001-01-02" },
	{ GRAIN_WEEK, "2026-12-28", 2974, "2026-12-28", "2027-01-04" },
	{ GRAIN_WEEK, "1969-12-29", 0, "1969-12-29", "1970-01-05" },
	{ GRAIN_WEEK, "1969-12-22", -1, "1969-12-22", "1969-12-29" },
	{ GRAIN_WEEK, "0001-01-01", -102737, "0001-01-01", "0001-01-08" },
	{ GRAIN_MONTH, "2024-02-01", 649, "2024-02-01", "2024-03-01" },
	{ GRAIN_MONTH, "1970-01-01", 0, "1970-01-01", "1970-02-01" },
	{ GRAIN_MONTH, "1969-12-01", -1, "1969-12-01", "1970-01-01" },
	{ GRAIN_MONTH, "1969-01-01", -12, "1969-01-01", "1969-02-01" },
	{ GRAIN_MONTH, "0001-01-01", -23628, "0001-01-01", "0001-02-01" },
	{ GRAIN_MONTH, "9999-11-01", 96358, "9999-11-01", "9999-12-01" },
};

START_TEST(test_bounds)
{
	enum grain g = bounds[_i].g;
	part_t p = key_of(g, bounds[_i].key);
	char buf[CAL_KEY_MAX];
	int64_t s, e;

	ck_assert_int_eq(p, bounds[_i].index);
	part_key(g, p, buf);
	ck_assert_str_eq(buf, bounds[_i].key);
	s = part_start(g, p);
	e = part_end(g, p);
	part_bound(g, s, buf);
	ck_assert_str_eq(buf, bounds[_i].start);
	part_bound(g, e, buf);
	ck_assert_str_eq(buf, bounds[_i].end);
	ck_assert_int_eq(part_of_time(g, s), p);
	ck_assert_int_eq(part_of_time(g, e - 1), p);
	ck_assert_int_eq(part_of_time(g, e), p + 1);
	ck_assert_int_eq(part_of_time(g, s - 1), p - 1);
	ck_assert_int_eq(part_start(g, p + 1), e);
}
END_TEST

static const struct {
	const char *date;
	const char *monday;
	part_t week;
} iso_weeks[] = {
	{ "2020-12-31", "2020-12-28", 2661 }, /* ISO 2020-W53 */
	{ "2021-01-03", "2020-12-28", 2661 }, /* Sunday of 2020-W53 */
	{ "2021-01-04", "2021-01-04", 2662 }, /* 2021-W01 */
	{ "2026-12-31", "2026-12-28", 2974 }, /* ISO 2026-W53 */
	{ "2027-01-01", "2026-12-28", 2974 },
	{ "2027-01-03", "2026-12-28", 2974 },
	{ "2027-01-04", "2027-01-04", 2975 },
	{ "2026-02-11", "2026-02-09", 2928 },
	{ "2026-03-30", "2026-03-30", 2935 },
	{ "2026-04-05", "2026-03-30", 2935 },
	{ "1970-01-01", "1969-12-29", 0 },
	{ "1969-12-29", "1969-12-29", 0 },
	{ "1969-12-28", "1969-12-22", -1 },
	{ "0001-01-01", "0001-01-01", -102737 },
	{ "9999-12-31", "9999-12-27", 418985 },
};

START_TEST(test_iso_weeks)
{
	int64_t d = day_of(iso_weeks[_i].date);
	char buf[CAL_KEY_MAX];
	part_t w = part_of_day(GRAIN_WEEK, d);

	ck_assert_int_eq(w, iso_weeks[_i].week);
	part_key(GRAIN_WEEK, w, buf);
	ck_assert_str_eq(buf, iso_weeks[_i].monday);
	ck_assert_int_eq(cal_weekday(day_of(buf)), 1);
	ck_assert_int_eq(part_of_time(GRAIN_WEEK, d * 86400 + 43200), w);
	ck_assert_int_eq(key_of(GRAIN_WEEK, iso_weeks[_i].monday), w);
}
END_TEST

/* Every day of the week of Monday 2026-02-09 keys to that Monday; only
 * the Monday is a valid key, and the refusal names it. */
START_TEST(test_week_keys)
{
	int64_t monday = day_of("2026-02-09"), d;
	char date[CAL_KEY_MAX], key[CAL_KEY_MAX], want[ERR_MSG_MAX];
	struct err err;
	part_t p;

	for (d = monday; d < monday + 7; d++) {
		cal_format_date(d, date);
		ck_assert_int_eq(part_of_day(GRAIN_WEEK, d), 2928);
		part_key(GRAIN_WEEK, part_of_day(GRAIN_WEEK, d), key);
		ck_assert_str_eq(key, "2026-02-09");
		err_clear(&err);
		if (d == monday) {
			ck_assert_int_eq(part_parse_key(GRAIN_WEEK, date, &p,
			    &err), 0);
			ck_assert_int_eq(p, 2928);
			continue;
		}
		ck_assert_int_eq(part_parse_key(GRAIN_WEEK, date, &p, &err),
		    -1);
		assert_bad_input(&err, date);
		snprintf(want, sizeof want, "%s is not a week key: weeks are "
		    "keyed by their Monday, 2026-02-09", date);
		ck_assert_str_eq(err.msg, want);
	}
	ck_assert_int_eq(part_parse_key(GRAIN_WEEK, "2026-02-11", &p, &err), -1);
	ck_assert_str_eq(err.msg, "2026-02-11 is not a week key: weeks are "
	    "keyed by their Monday, 2026-02-09");
	ck_assert_int_eq(part_parse_key(GRAIN_WEEK, "2027-01-01", &p, &err), -1);
	ck_assert_str_eq(err.msg, "2027-01-01 is not a week key: weeks are "
	    "keyed by their Monday, 2026-12-28");
}
END_TEST

START_TEST(test_month_keys)
{
	struct err err;
	part_t p;

	ck_assert_int_eq(part_parse_key(GRAIN_MONTH, "2026-02-11", &p, &err),
	    -1);
	assert_bad_input(&err, "month key");
	ck_assert_str_eq(err.msg, "2026-02-11 is not a month key: months are "
	    "keyed by their first day, 2026-02-01");
	ck_assert_int_eq(part_parse_key(GRAIN_MONTH, "1969-12-31", &p, &err),
	    -1);
	ck_assert_str_eq(err.msg, "1969-12-31 is not a month key: months are "
	    "keyed by their first day, 1969-12-01");
	ck_assert_int_eq(part_parse_key(GRAIN_MONTH, "2026-02-01", &p, &err), 0);
	ck_assert_int_eq(p, (2026 - 1970) * 12 + 1);
	/* a day key is any date; an hour key is not a day key */
	ck_assert_int_eq(part_parse_key(GRAIN_DAY, "2026-02-11", &p, &err), 0);
	ck_assert_int_eq(p, 20495);
	ck_assert_int_eq(part_parse_key(GRAIN_DAY, "2026-02-11T00", &p, &err),
	    -1);
	ck_assert_int_eq(part_parse_key(GRAIN_HOUR, "2026-02-11", &p, &err),
	    -1);
}
END_TEST

/* --- downstream mapping ------------------------------------------------ */

static const struct {
	enum grain up;
	const char *key;
	enum grain down;
	int n;
	const char *out[2];
} maps[] = {
	/* a week straddling two months feeds both */
	{ GRAIN_WEEK, "2026-03-30", GRAIN_MONTH, 2,
	  { "2026-03-01", "2026-04-01" } },
	{ GRAIN_WEEK, "2020-12-28", GRAIN_MONTH, 2,
	  { "2020-12-01", "2021-01-01" } },
	{ GRAIN_WEEK, "1969-12-29", GRAIN_MONTH, 2,
	  { "1969-12-01", "1970-01-01" } },
	{ GRAIN_WEEK, "2026-02-09", GRAIN_MONTH, 1, { "2026-02-01" } },
	{ GRAIN_WEEK, "2021-02-22", GRAIN_MONTH, 1, { "2021-02-01" } },
	{ GRAIN_WEEK, "2026-02-09", GRAIN_WEEK, 1, { "2026-02-09" } },
	/* day */
	{ GRAIN_DAY, "2026-03-31", GRAIN_WEEK, 1, { "2026-03-30" } },
	{ GRAIN_DAY, "2026-03-31", GRAIN_MONTH, 1, { "2026-03-01" } },
	{ GRAIN_DAY, "2026-04-01", GRAIN_MONTH, 1, { "2026-04-01" } },
	{ GRAIN_DAY, "2021-01-03", GRAIN_WEEK, 1, { "2020-12-28" } },
	{ GRAIN_DAY, "2027-01-01", GRAIN_WEEK, 1, { "2026-12-28" } },
	{ GRAIN_DAY, "1969-12-31", GRAIN_WEEK, 1, { "1969-12-29" } },
	{ GRAIN_DAY, "1969-12-31", GRAIN_MONTH, 1, { "1969-12-01" } },
	{ GRAIN_DAY, "2024-02-29", GRAIN_DAY, 1, { "2024-02-29" } },
	/* hour */
	{ GRAIN_HOUR, "2026-03-31T23", GRAIN_DAY, 1, { "2026-03-31" } },
	{ GRAIN_HOUR, "2026-03-31T23", GRAIN_WEEK, 1, { "2026-03-30" } },
	{ GRAIN_HOUR, "2026-03-31T23", GRAIN_MONTH, 1, { "2026-03-01" } },
	{ GRAIN_HOUR, "2026-04-01T00", GRAIN_DAY, 1, { "2026-04-01" } },
	{ GRAIN_HOUR, "2026-04-01T00", GRAIN_WEEK, 1, { "2026-03-30" } },
	{ GRAIN_HOUR, "2026-04-01T00", GRAIN_MONTH, 1, { "2026-04-01" } },
	{ GRAIN_HOUR, "2026-04-05T23", GRAIN_WEEK, 1, { "2026-03-30" } },
	{ GRAIN_HOUR, "2026-04-06T00", GRAIN_WEEK, 1, { "2026-04-06" } },
	{ GRAIN_HOUR, "1969-12-31T23", GRAIN_DAY, 1, { "1969-12-31" } },
	{ GRAIN_HOUR, "1969-12-31T23", GRAIN_WEEK, 1, { "1969-12-29" } },
	{ GRAIN_HOUR, "1969-12-31T23", GRAIN_MONTH, 1, { "1969-12-01" } },
	{ GRAIN_HOUR, "1969-12-28T23", GRAIN_WEEK, 1, { "1969-12-22" } },
	{ GRAIN_HOUR, "2026-02-08T13", GRAIN_HOUR, 1, { "2026-02-08T13" } },
	/* not allowed */
	{ GRAIN_MONTH, "2026-03-01", GRAIN_WEEK, 0, { NULL } },
	{ GRAIN_DAY, "2026-03-01", GRAIN_HOUR, 0, { NULL } },
	{ GRAIN_WEEK, "2026-03-30", GRAIN_DAY, 0, { NULL } },
};

START_TEST(test_part_map)
{
	part_t p = key_of(maps[_i].up, maps[_i].key), out[2];
	char buf[CAL_KEY_MAX];
	int n, k;

	n = part_map(maps[_i].up, p, maps[_i].down, out);
	ck_assert_int_eq(n, maps[_i].n);
	for (k = 0; k < n; k++) {
		part_key(maps[_i].down, out[k], buf);
		ck_assert_str_eq(buf, maps[_i].out[k]);
		/* and p is among the inputs of each downstream partition */
		struct part_range in = part_inputs(maps[_i].up, maps[_i].down,
		    out[k]);
		ck_assert_int_le(in.first, p);
		ck_assert_int_ge(in.last, p);
	}
}
END_TEST

static const struct {
	enum grain up, down;
	const char *key; /* of the downstream partition */
	int64_t count;
	const char *first, *last; /* keys of the upstream partitions */
} inputs[] = {
	{ GRAIN_DAY, GRAIN_WEEK, "2026-02-09", 7, "2026-02-09", "2026-02-15" },
	{ GRAIN_DAY, GRAIN_WEEK, "2026-12-28", 7, "2026-12-28", "2027-01-03" },
	{ GRAIN_DAY, GRAIN_MONTH, "2024-02-01", 29, "2024-02-01", "2024-02-29" },
	{ GRAIN_DAY, GRAIN_MONTH, "2025-02-01", 28, "2025-02-01", "2025-02-28" },
	{ GRAIN_DAY, GRAIN_MONTH, "1969-12-01", 31, "1969-12-01", "1969-12-31" },
	{ GRAIN_HOUR, GRAIN_MONTH, "2024-02-01", 696,
	  "2024-02-01T00", "2024-02-29T23" },
	{ GRAIN_HOUR, GRAIN_WEEK, "2026-03-30", 168,
	  "2026-03-30T00", "2026-04-05T23" },
	{ GRAIN_HOUR, GRAIN_DAY, "1969-12-31", 24,
	  "1969-12-31T00", "1969-12-31T23" },
	/* weeks overlapping March 2026 (Mar 1 is a Sunday) */
	{ GRAIN_WEEK, GRAIN_MONTH, "2026-03-01", 6, "2026-02-23", "2026-03-30" },
	{ GRAIN_WEEK, GRAIN_MONTH, "2021-02-01", 4, "2021-02-01", "2021-02-22" },
	{ GRAIN_MONTH, GRAIN_MONTH, "2026-03-01", 1, "2026-03-01", "2026-03-01" },
	{ GRAIN_DAY, GRAIN_DAY, "2026-03-01", 1, "2026-03-01", "2026-03-01" },
};

START_TEST(test_part_inputs)
{
	part_t d = key_of(inputs[_i].down, inputs[_i].key);
	struct part_range r = part_inputs(inputs[_i].up, inputs[_i].down, d);
	char buf[CAL_KEY_MAX];

	ck_assert_int_eq(range_count(&r), inputs[_i].count);
	part_key(inputs[_i].up, r.first, buf);
	ck_assert_str_eq(buf, inputs[_i].first);
	part_key(inputs[_i].up, r.last, buf);
	ck_assert_str_eq(buf, inputs[_i].last);
}
END_TEST

START_TEST(test_part_inputs_refused)
{
	struct part_range r = part_inputs(GRAIN_MONTH, GRAIN_WEEK, 2928);

	ck_assert_int_eq(range_count(&r), 0);
	r = part_inputs(GRAIN_DAY, GRAIN_HOUR, 0);
	ck_assert_int_eq(range_count(&r), 0);
}
END_TEST

/* --- ranges ------------------------------------------------------------ */

static const struct {
	enum grain g;
	const char *from, *to;
	int64_t count;
	const char *first, *last; /* keys */
} ranges[] = {
	{ GRAIN_DAY, "0001-01-01", "9999-12-31", 3652059,
	  "0001-01-01", "9999-12-31" },
	{ GRAIN_HOUR, "0001-01-01", "9999-12-31", 87649416,
	  "0001-01-01T00", "9999-12-31T23" },
	{ GRAIN_WEEK, "0001-01-01", "9999-12-31", 521723,
	  "0001-01-01", "9999-12-27" },
	{ GRAIN_MONTH, "0001-01-01", "9999-12-31", 119988,
	  "0001-01-01", "9999-12-01" },
	{ GRAIN_DAY, "2026-02-01", "2026-02-01", 1, "2026-02-01", "2026-02-01" },
	{ GRAIN_DAY, "2024-02-01", "2024-03-01", 30, "2024-02-01", "2024-03-01" },
	{ GRAIN_DAY, "1969-12-25", "1970-01-05", 12, "1969-12-25", "1970-01-05" },
	{ GRAIN_HOUR, "2026-03-01", "2026-03-01", 24,
	  "2026-03-01T00", "2026-03-01T23" },
	{ GRAIN_HOUR, "2026-03-01T05", "2026-03-01", 19,
	  "2026-03-01T05", "2026-03-01T23" },
	{ GRAIN_HOUR, "2026-03-01", "2026-03-01T05", 6,
	  "2026-03-01T00", "2026-03-01T05" },
	{ GRAIN_HOUR, "2026-03-01T05", "2026-03-01T05", 1,
	  "2026-03-01T05", "2026-03-01T05" },
	{ GRAIN_HOUR, "2024-02-01", "2024-02-29", 696,
	  "2024-02-01T00", "2024-02-29T23" },
	{ GRAIN_WEEK, "2026-02-11", "2026-02-11", 1, "2026-02-09", "2026-02-09" },
	{ GRAIN_WEEK, "2026-02-08", "2026-02-09", 2, "2026-02-02", "2026-02-09" },
	{ GRAIN_WEEK, "2026-12-31", "2027-01-03", 1, "2026-12-28", "2026-12-28" },
	{ GRAIN_MONTH, "2026-01-31", "2026-02-01", 2, "2026-01-01", "2026-02-01" },
	{ GRAIN_MONTH, "1969-12-15", "1970-01-15", 2, "1969-12-01", "1970-01-01" },
};

START_TEST(test_ranges)
{
	enum grain g = ranges[_i].g;
	char buf[CAL_KEY_MAX];
	struct part_range r;
	struct err err;

	err_clear(&err);
	ck_assert_msg(range_parse(g, ranges[_i].from, ranges[_i].to, &r,
	    &err) == 0, "%s..%s: %s", ranges[_i].from, ranges[_i].to, err.msg);
	ck_assert_int_eq(range_count(&r), ranges[_i].count);
	part_key(g, r.first, buf);
	ck_assert_str_eq(buf, ranges[_i].first);
	part_key(g, r.last, buf);
	ck_assert_str_eq(buf, ranges[_i].last);
}
END_TEST

static const struct {
	enum grain g;
	const char *from, *to;
	const char *msg; /* exact, or NULL */
} bad_ranges[] = {
	{ GRAIN_DAY, "2026-03-01", "2026-02-01",
	  "--from 2026-03-01 is after --to 2026-02-01: give the earlier one "
	  "as --from (the range is inclusive)" },
	{ GRAIN_WEEK, "2026-02-11", "2026-02-10", NULL }, /* same week */
	{ GRAIN_MONTH, "2026-02-11", "2026-02-10", NULL },
	{ GRAIN_HOUR, "2026-03-01T05", "2026-03-01T04", NULL },
	{ GRAIN_HOUR, "2026-03-02T00", "2026-03-01", NULL },
	{ GRAIN_HOUR, "9999-12-31", "0001-01-01", NULL },
	{ GRAIN_DAY, "2026-03-01T05", "2026-03-02",
	  "--from \"2026-03-01T05\": only hourly jobs take YYYY-MM-DDTHH "
	  "bounds; this job's partitions are days, write --from as "
	  "YYYY-MM-DD" },
	{ GRAIN_WEEK, "2026-03-01", "2026-03-02T00", NULL },
	{ GRAIN_MONTH, "2026-03-01T00", "2026-03-02", NULL },
	{ GRAIN_DAY, "2026-02-30", "2026-03-02",
	  "--from: 2026-02-30 is not a date: February 2026 has 28 days" },
	{ GRAIN_DAY, "2026-03-01", "2026-3-2",
	  "--to: bad date \"2026-3-2\": write dates as YYYY-MM-DD, "
	  "e.g. 2026-02-08" },
	{ GRAIN_HOUR, "2026-03-01T24", "2026-03-02", NULL },
	{ GRAIN_HOUR, "2026-03-01", "", NULL },
	{ GRAIN_DAY, NULL, "2026-03-02", NULL },
};

START_TEST(test_bad_ranges)
{
	struct part_range r = { 7, 7 };
	struct err err;

	err_clear(&err);
	ck_assert_int_eq(range_parse(bad_ranges[_i].g, bad_ranges[_i].from,
	    bad_ranges[_i].to, &r, &err), -1);
	assert_bad_input(&err, "range");
	if (bad_ranges[_i].msg != NULL)
		ck_assert_str_eq(err.msg, bad_ranges[_i].msg);
	ck_assert_int_eq(r.first, 7);
	ck_assert_int_eq(r.last, 7);
}
END_TEST

START_TEST(test_range_count_extremes)
{
	struct part_range r = { INT64_C(-1000000000000), INT64_C(1000000000000) };

	ck_assert_int_eq(range_count(&r), INT64_C(2000000000001));
	r.first = 5;
	r.last = 4;
	ck_assert_int_eq(range_count(&r), 0);
}
END_TEST

/* --- schedule ---------------------------------------------------------- */

static const struct {
	enum grain g;
	int64_t ready_after;
	const char *date; /* now = date + h:m:s */
	int h, m, s;
	const char *last_due; /* key */
	const char *due_date; /* due time of last_due = due_date + dh:00 */
	int dh, dm;
} scheds[] = {
	{ GRAIN_DAY, 0, "2026-02-08", 0, 0, 0, "2026-02-07", "2026-02-08", 0, 0 },
	{ GRAIN_DAY, 0, "2026-02-07", 23, 59, 59, "2026-02-06",
	  "2026-02-07", 0, 0 },
	{ GRAIN_DAY, 7200, "2026-02-08", 1, 59, 59, "2026-02-06",
	  "2026-02-07", 2, 0 },
	{ GRAIN_DAY, 7200, "2026-02-08", 2, 0, 0, "2026-02-07",
	  "2026-02-08", 2, 0 },
	{ GRAIN_DAY, 21600, "2026-01-01", 0, 0, 0, "2025-12-30",
	  "2025-12-31", 6, 0 },
	{ GRAIN_DAY, 0, "1970-01-01", 0, 0, 0, "1969-12-31", "1970-01-01", 0, 0 },
	{ GRAIN_DAY, 0, "1969-12-31", 23, 59, 59, "1969-12-30",
	  "1969-12-31", 0, 0 },
	{ GRAIN_DAY, 172800, "2026-03-01", 12, 0, 0, "2026-02-26",
	  "2026-03-01", 0, 0 },
	{ GRAIN_HOUR, 0, "2026-02-08", 13, 30, 0, "2026-02-08T12",
	  "2026-02-08", 13, 0 },
	{ GRAIN_HOUR, 5400, "2026-02-08", 13, 29, 59, "2026-02-08T10",
	  "2026-02-08", 12, 30 },
	{ GRAIN_HOUR, 5400, "2026-02-08", 13, 30, 0, "2026-02-08T11",
	  "2026-02-08", 13, 30 },
	{ GRAIN_HOUR, 1800, "2026-01-01", 0, 15, 0, "2025-12-31T22",
	  "2025-12-31", 23, 30 },
	{ GRAIN_WEEK, 86400, "2026-02-10", 0, 0, 0, "2026-02-02",
	  "2026-02-10", 0, 0 },
	{ GRAIN_WEEK, 86400, "2026-02-09", 23, 59, 59, "2026-01-26",
	  "2026-02-03", 0, 0 },
	{ GRAIN_WEEK, 0, "2027-01-04", 0, 0, 0, "2026-12-28", "2027-01-04", 0, 0 },
	{ GRAIN_MONTH, 0, "2026-03-01", 0, 0, 0, "2026-02-01", "2026-03-01", 0, 0 },
	{ GRAIN_MONTH, 3600, "2026-03-01", 0, 59, 59, "2026-01-01",
	  "2026-02-01", 1, 0 },
	{ GRAIN_MONTH, 0, "1970-01-01", 0, 0, 0, "1969-12-01", "1970-01-01", 0, 0 },
};

START_TEST(test_sched)
{
	enum grain g = scheds[_i].g;
	int64_t ra = scheds[_i].ready_after;
	int64_t now = time_of(scheds[_i].date, scheds[_i].h, scheds[_i].m,
	    scheds[_i].s);
	part_t p = schedule_last_due(g, ra, now);
	char buf[CAL_KEY_MAX];

	part_key(g, p, buf);
	ck_assert_str_eq(buf, scheds[_i].last_due);
	ck_assert_int_eq(schedule_due_time(g, ra, p),
	    time_of(scheds[_i].due_date, scheds[_i].dh, scheds[_i].dm, 0));
	/* p is due, p + 1 is not yet */
	ck_assert_int_le(schedule_due_time(g, ra, p), now);
	ck_assert_int_gt(schedule_due_time(g, ra, p + 1), now);
	/* one second before p's due time, p - 1 was the newest due */
	ck_assert_int_eq(schedule_last_due(g, ra, schedule_due_time(g, ra, p) - 1),
	    p - 1);
}
END_TEST

/* Stepping `now` second by second across two day boundaries: last_due
 * changes exactly at each due time. */
START_TEST(test_sched_boundary_walk)
{
	int64_t ra = 7200, start = time_of("2026-02-08", 1, 0, 0), now;
	part_t prev = schedule_last_due(GRAIN_DAY, ra, start), p;
	int changes = 0;

	for (now = start; now < start + 2 * 86400; now++) {
		p = schedule_last_due(GRAIN_DAY, ra, now);
		if (p != prev) {
			ck_assert_int_eq(p, prev + 1);
			ck_assert_int_eq(now, schedule_due_time(GRAIN_DAY, ra, p));
			ck_assert_int_eq(now % 3600, 0);
			changes++;
		}
		prev = p;
	}
	ck_assert_int_eq(changes, 2);
}
END_TEST

/* --- calendars: quarters, years, Sunday weeks (UTC) -------------------- */

/* Partitions of the UTC calendars beside months: a key, its index, its
 * interval as UTC text and the key of the partition after it.  Indices
 * and weekdays cross-checked with Python's datetime. */
static const struct {
	enum grain g;
	enum week_start ws;
	const char *key;
	part_t index;
	const char *start, *end; /* cal_bound_utc of start and end */
	const char *next;
} cals[] = {
	{ GRAIN_QUARTER, WEEK_MONDAY, "2023-10-01", 215,
	  "2023-10-01 00:00:00", "2024-01-01 00:00:00", "2024-01-01" },
	{ GRAIN_QUARTER, WEEK_MONDAY, "2024-01-01", 216,
	  "2024-01-01 00:00:00", "2024-04-01 00:00:00", "2024-04-01" },
	{ GRAIN_QUARTER, WEEK_MONDAY, "1969-10-01", -1,
	  "1969-10-01 00:00:00", "1970-01-01 00:00:00", "1970-01-01" },
	{ GRAIN_QUARTER, WEEK_MONDAY, "9999-07-01", 32118,
	  "9999-07-01 00:00:00", "9999-10-01 00:00:00", "9999-10-01" },
	{ GRAIN_YEAR, WEEK_MONDAY, "2023-01-01", 53,
	  "2023-01-01 00:00:00", "2024-01-01 00:00:00", "2024-01-01" },
	{ GRAIN_YEAR, WEEK_MONDAY, "2024-01-01", 54,
	  "2024-01-01 00:00:00", "2025-01-01 00:00:00", "2025-01-01" },
	{ GRAIN_YEAR, WEEK_MONDAY, "1969-01-01", -1,
	  "1969-01-01 00:00:00", "1970-01-01 00:00:00", "1970-01-01" },
	{ GRAIN_WEEK, WEEK_SUNDAY, "1969-12-28", 0,
	  "1969-12-28 00:00:00", "1970-01-04 00:00:00", "1970-01-04" },
	{ GRAIN_WEEK, WEEK_SUNDAY, "2023-12-31", 2818,
	  "2023-12-31 00:00:00", "2024-01-07 00:00:00", "2024-01-07" },
	{ GRAIN_WEEK, WEEK_SUNDAY, "2024-03-31", 2831,
	  "2024-03-31 00:00:00", "2024-04-07 00:00:00", "2024-04-07" },
	{ GRAIN_WEEK, WEEK_MONDAY, "2024-01-01", 2818,
	  "2024-01-01 00:00:00", "2024-01-08 00:00:00", "2024-01-08" },
};

START_TEST(test_cal_table)
{
	struct cal c = { cals[_i].g, cals[_i].ws, NULL };
	char key[CAL_KEY_MAX], t[CAL_KEY_MAX], a[CAL_KEY_MAX], b[CAL_KEY_MAX];
	struct err err;
	part_t p = 99999;

	err_clear(&err);
	ck_assert_msg(cal_parse_key(&c, cals[_i].key, &p, &err) == 0, "%s: %s",
	    cals[_i].key, err.msg);
	ck_assert_int_eq(p, cals[_i].index);
	cal_key(&c, p, key);
	ck_assert_str_eq(key, cals[_i].key);
	cal_bound_utc(cal_start(&c, p), t);
	ck_assert_str_eq(t, cals[_i].start);
	cal_bound_utc(cal_end(&c, p), t);
	ck_assert_str_eq(t, cals[_i].end);
	ck_assert(!cal_empty(&c, p));
	/* the interval's first and last second are p's, the next one p+1's */
	ck_assert_int_eq(cal_part_of(&c, cal_start(&c, p)), p);
	ck_assert_int_eq(cal_part_of(&c, cal_end(&c, p) - 1), p);
	ck_assert_int_eq(cal_part_of(&c, cal_end(&c, p)), p + 1);
	ck_assert_int_eq(cal_part_of_day(&c, cal_first_day(&c, p)), p);
	cal_key(&c, p + 1, key);
	ck_assert_str_eq(key, cals[_i].next);
	/* day+ local bounds are the first days of p and p + 1 */
	cal_bounds_local(&c, p, a, b);
	ck_assert_str_eq(a, cals[_i].key);
	ck_assert_str_eq(b, cals[_i].next);
}
END_TEST

/* Keys that are not a partition's first day are refused naming it. */
static const struct {
	enum grain g;
	enum week_start ws;
	const char *key, *want;
} cal_bad_keys[] = {
	{ GRAIN_QUARTER, WEEK_MONDAY, "2024-02-01",
	  "2024-02-01 is not a quarter key: quarters are keyed by their "
	  "first day, 2024-01-01" },
	{ GRAIN_QUARTER, WEEK_MONDAY, "2023-12-31",
	  "2023-12-31 is not a quarter key: quarters are keyed by their "
	  "first day, 2023-10-01" },
	{ GRAIN_YEAR, WEEK_MONDAY, "2024-07-01",
	  "2024-07-01 is not a year key: years are keyed by their first "
	  "day, 2024-01-01" },
	{ GRAIN_WEEK, WEEK_SUNDAY, "2024-01-01",
	  "2024-01-01 is not a week key: weeks are keyed by their Sunday, "
	  "2023-12-31" },
	{ GRAIN_WEEK, WEEK_MONDAY, "2023-12-31",
	  "2023-12-31 is not a week key: weeks are keyed by their Monday, "
	  "2023-12-25" },
};

START_TEST(test_cal_bad_keys)
{
	struct cal c = { cal_bad_keys[_i].g, cal_bad_keys[_i].ws, NULL };
	struct err err;
	part_t p = 12345;

	err_clear(&err);
	ck_assert_int_eq(cal_parse_key(&c, cal_bad_keys[_i].key, &p, &err),
	    -1);
	ck_assert_int_eq(p, 12345);
	assert_bad_input(&err, cal_bad_keys[_i].key);
	ck_assert_str_eq(err.msg, cal_bad_keys[_i].want);
}
END_TEST

/* Ranges and overlap over the new grains: a date names the partition
 * holding it; days map into quarters and years across year ends. */
START_TEST(test_cal_ranges_and_maps)
{
	struct cal q = { GRAIN_QUARTER, WEEK_MONDAY, NULL };
	struct cal y = { GRAIN_YEAR, WEEK_MONDAY, NULL };
	struct cal sw = { GRAIN_WEEK, WEEK_SUNDAY, NULL };
	struct part_range r;
	struct err err;
	char k[CAL_KEY_MAX];

	err_clear(&err);
	ck_assert_int_eq(cal_range_parse(&q, "2023-12-31", "2024-01-01", &r,
	    &err), 0);
	ck_assert_int_eq(range_count(&r), 2);
	cal_key(&q, r.first, k);
	ck_assert_str_eq(k, "2023-10-01");
	ck_assert_int_eq(cal_range_parse(&y, "2023-12-31", "2024-01-01", &r,
	    &err), 0);
	ck_assert_int_eq(range_count(&r), 2);
	/* the Sunday week holding Saturday 2024-04-06 is the one of 03-31 */
	ck_assert_int_eq(cal_range_parse_one(&sw, "2024-04-06", &r, &err), 0);
	ck_assert_int_eq(range_count(&r), 1);
	cal_key(&sw, r.first, k);
	ck_assert_str_eq(k, "2024-03-31");
	/* a Sunday week across a month end feeds two months */
	r = cal_map(&sw, 2831, &cal_utc[GRAIN_MONTH]);
	ck_assert_int_eq(range_count(&r), 2);
	/* a quarter reads its 92 days, a year its 366 */
	r = cal_inputs(&cal_utc[GRAIN_DAY], &q, 215);
	ck_assert_int_eq(range_count(&r), 92);
	r = cal_inputs(&cal_utc[GRAIN_DAY], &y, 54);
	ck_assert_int_eq(range_count(&r), 366);
	r = cal_inputs(&cal_utc[GRAIN_MONTH], &q, 216);
	ck_assert_int_eq(range_count(&r), 3);
	cal_key(&cal_utc[GRAIN_MONTH], r.first, k);
	ck_assert_str_eq(k, "2024-01-01");
	/* windows (issue 41): day d with lookback 6 reads 7 days, and a day
	 * is read by the 7 windows that reach it; a month with lookback 1
	 * reads the month before it too, a Sunday week's window 14 days */
	r = cal_window_inputs(&cal_utc[GRAIN_DAY], &cal_utc[GRAIN_DAY],
	    key_of(GRAIN_DAY, "2024-03-07"), 6);
	ck_assert_int_eq(range_count(&r), 7);
	cal_key(&cal_utc[GRAIN_DAY], r.first, k);
	ck_assert_str_eq(k, "2024-03-01");
	r = cal_window_readers(&cal_utc[GRAIN_DAY], key_of(GRAIN_DAY,
	    "2024-03-01"), &cal_utc[GRAIN_DAY], 6);
	ck_assert_int_eq(range_count(&r), 7);
	cal_key(&cal_utc[GRAIN_DAY], r.last, k);
	ck_assert_str_eq(k, "2024-03-07");
	r = cal_window_inputs(&cal_utc[GRAIN_DAY], &cal_utc[GRAIN_MONTH],
	    key_of(GRAIN_MONTH, "2024-03-01"), 1);
	ck_assert_int_eq(range_count(&r), 29 + 31);
	r = cal_window_inputs(&cal_utc[GRAIN_DAY], &sw, 2831, 1);
	ck_assert_int_eq(range_count(&r), 14);
	ck_assert(cal_can_feed(&cal_utc[GRAIN_MONTH], &q));
	ck_assert(!cal_can_feed(&y, &q));
	ck_assert(cal_keys_sort_in_time(&q));
	ck_assert_str_eq(cal_zone_name(&q), "UTC");
}
END_TEST

/* The UTC calendars are the part_*() functions, over every grain and a
 * sweep of instants around 1970 and 2024. */
START_TEST(test_cal_utc_is_part)
{
	enum grain g;
	int64_t t;
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	for (g = GRAIN_HOUR; g <= GRAIN_MONTH; g++) {
		for (t = -86400 * 40; t < 86400 * 40; t += 1799) {
			part_t p = part_of_time(g, t);
			part_t q = cal_part_of(&cal_utc[g], t + 1704067200);

			ck_assert_int_eq(cal_part_of(&cal_utc[g], t), p);
			ck_assert_int_eq(cal_start(&cal_utc[g], p),
			    part_start(g, p));
			ck_assert_int_eq(cal_end(&cal_utc[g], q),
			    part_end(g, q));
			cal_key(&cal_utc[g], q, a);
			part_key(g, q, b);
			ck_assert_str_eq(a, b);
		}
	}
}
END_TEST

/* --- calendars in a zone (the system's tzdata) ------------------------- */

/* A zone's calendar; the zone stays loaded for the test's process. */
static struct cal
zcal(const char *zone, enum grain g, enum week_start ws)
{
	struct cal c = { g, ws, NULL };
	struct tz *z = NULL;
	struct err err;

	if (tz_load(zone, &z, &err) != 0)
		ck_abort_msg("%s", err.msg);
	c.tz = z;
	return c;
}

/* UTC seconds of "YYYY-MM-DD HH:MM:SS". */
static int64_t
utc_of(const char *s)
{
	char date[11];

	memcpy(date, s, 10);
	date[10] = '\0';
	return time_of(date, atoi(s + 11), atoi(s + 14), atoi(s + 17));
}

/* The DST days of public schedulers' suites (Dagster, Airflow, ...) and
 * the zones with odd offsets.  Instants from `zdump -v -c Y,Y+1 ZONE`
 * (tzdata 2025b) when the tests were written: a day starts at the first
 * instant whose wall clock reads its date. */
static const struct {
	const char *zone;
	enum grain g;
	enum week_start ws;
	const char *key;
	const char *start, *end;	/* UTC */
	const char *lstart, *lend;	/* cal_bounds_local */
} zoned[] = {
	/* Berlin: 23 and 25 hour days; the repeated 02 hour twice */
	{ "Europe/Berlin", GRAIN_DAY, WEEK_MONDAY, "2023-03-26",
	  "2023-03-25 23:00:00", "2023-03-26 22:00:00",
	  "2023-03-26", "2023-03-27" },
	{ "Europe/Berlin", GRAIN_DAY, WEEK_MONDAY, "2023-10-29",
	  "2023-10-28 22:00:00", "2023-10-29 23:00:00",
	  "2023-10-29", "2023-10-30" },
	{ "Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY, "2023-10-29T02+02:00",
	  "2023-10-29 00:00:00", "2023-10-29 01:00:00",
	  "2023-10-29 02:00:00", "2023-10-29 03:00:00" },
	{ "Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY, "2023-10-29T02+01:00",
	  "2023-10-29 01:00:00", "2023-10-29 02:00:00",
	  "2023-10-29 02:00:00", "2023-10-29 03:00:00" },
	{ "Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY, "2023-03-26T01+01:00",
	  "2023-03-26 00:00:00", "2023-03-26 01:00:00",
	  "2023-03-26 01:00:00", "2023-03-26 02:00:00" },
	{ "Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY, "2023-03-26T03+02:00",
	  "2023-03-26 01:00:00", "2023-03-26 02:00:00",
	  "2023-03-26 03:00:00", "2023-03-26 04:00:00" },
	/* local mean time, +0:53:28 until 1893-03-31 23:06:32Z, when the
	 * clocks went from 23:59:59 to 00:06:32 CET: an offset with seconds
	 * in the key, and a first CET cell of 53:28 */
	{ "Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY, "1880-01-01T00+00:53:28",
	  "1879-12-31 23:06:32", "1880-01-01 00:06:32",
	  "1880-01-01 00:00:00", "1880-01-01 01:00:00" },
	{ "Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY, "1893-04-01T00+01:00",
	  "1893-03-31 23:06:32", "1893-04-01 00:00:00",
	  "1893-04-01 00:06:32", "1893-04-01 01:00:00" },
	/* a Berlin year and quarters across the year end */
	{ "Europe/Berlin", GRAIN_YEAR, WEEK_MONDAY, "2023-01-01",
	  "2022-12-31 23:00:00", "2023-12-31 23:00:00",
	  "2023-01-01", "2024-01-01" },
	{ "Europe/Berlin", GRAIN_QUARTER, WEEK_MONDAY, "2023-10-01",
	  "2023-09-30 22:00:00", "2023-12-31 23:00:00",
	  "2023-10-01", "2024-01-01" },
	{ "Europe/Berlin", GRAIN_QUARTER, WEEK_MONDAY, "2024-01-01",
	  "2023-12-31 23:00:00", "2024-03-31 22:00:00",
	  "2024-01-01", "2024-04-01" },
	{ "Europe/Berlin", GRAIN_MONTH, WEEK_MONDAY, "2023-10-01",
	  "2023-09-30 22:00:00", "2023-10-31 23:00:00",
	  "2023-10-01", "2023-11-01" },
	/* New York */
	{ "America/New_York", GRAIN_DAY, WEEK_MONDAY, "2024-03-10",
	  "2024-03-10 05:00:00", "2024-03-11 04:00:00",
	  "2024-03-10", "2024-03-11" },
	{ "America/New_York", GRAIN_DAY, WEEK_MONDAY, "2024-11-03",
	  "2024-11-03 04:00:00", "2024-11-04 05:00:00",
	  "2024-11-03", "2024-11-04" },
	{ "America/New_York", GRAIN_HOUR, WEEK_MONDAY, "2024-11-03T01-04:00",
	  "2024-11-03 05:00:00", "2024-11-03 06:00:00",
	  "2024-11-03 01:00:00", "2024-11-03 02:00:00" },
	{ "America/New_York", GRAIN_HOUR, WEEK_MONDAY, "2024-11-03T01-05:00",
	  "2024-11-03 06:00:00", "2024-11-03 07:00:00",
	  "2024-11-03 01:00:00", "2024-11-03 02:00:00" },
	/* a retail (Sunday) week holding the March change */
	{ "America/New_York", GRAIN_WEEK, WEEK_SUNDAY, "2024-03-10",
	  "2024-03-10 05:00:00", "2024-03-17 04:00:00",
	  "2024-03-10", "2024-03-17" },
	/* Chicago's repeated 01 hour */
	{ "America/Chicago", GRAIN_HOUR, WEEK_MONDAY, "2021-11-07T01-05:00",
	  "2021-11-07 06:00:00", "2021-11-07 07:00:00",
	  "2021-11-07 01:00:00", "2021-11-07 02:00:00" },
	{ "America/Chicago", GRAIN_HOUR, WEEK_MONDAY, "2021-11-07T01-06:00",
	  "2021-11-07 07:00:00", "2021-11-07 08:00:00",
	  "2021-11-07 01:00:00", "2021-11-07 02:00:00" },
	/* Lord Howe: a 30-minute change, a 23.5 hour day, a 30-minute cell */
	{ "Australia/Lord_Howe", GRAIN_DAY, WEEK_MONDAY, "2023-10-01",
	  "2023-09-30 13:30:00", "2023-10-01 13:00:00",
	  "2023-10-01", "2023-10-02" },
	{ "Australia/Lord_Howe", GRAIN_HOUR, WEEK_MONDAY,
	  "2023-10-01T01+10:30", "2023-09-30 14:30:00", "2023-09-30 15:30:00",
	  "2023-10-01 01:00:00", "2023-10-01 02:00:00" },
	{ "Australia/Lord_Howe", GRAIN_HOUR, WEEK_MONDAY,
	  "2023-10-01T02+11:00", "2023-09-30 15:30:00", "2023-09-30 16:00:00",
	  "2023-10-01 02:30:00", "2023-10-01 03:00:00" },
	/* Kolkata: a half-hour offset all year */
	{ "Asia/Kolkata", GRAIN_DAY, WEEK_MONDAY, "2024-01-01",
	  "2023-12-31 18:30:00", "2024-01-01 18:30:00",
	  "2024-01-01", "2024-01-02" },
	{ "Asia/Kolkata", GRAIN_HOUR, WEEK_MONDAY, "2024-01-01T00+05:30",
	  "2023-12-31 18:30:00", "2023-12-31 19:30:00",
	  "2024-01-01 00:00:00", "2024-01-01 01:00:00" },
	/* Santiago: midnight skipped (the day starts at 01:00), and 23:00
	 * repeated (at 03:00Z the clocks went from 23:59:59 back to 23:00:
	 * both 23:00 hours are 04-02's, a 25-hour day) */
	{ "America/Santiago", GRAIN_DAY, WEEK_MONDAY, "2022-09-11",
	  "2022-09-11 04:00:00", "2022-09-12 03:00:00",
	  "2022-09-11", "2022-09-12" },
	{ "America/Santiago", GRAIN_DAY, WEEK_MONDAY, "2022-04-02",
	  "2022-04-02 03:00:00", "2022-04-03 04:00:00",
	  "2022-04-02", "2022-04-03" },
};

START_TEST(test_zoned_table)
{
	struct cal c = zcal(zoned[_i].zone, zoned[_i].g, zoned[_i].ws);
	char key[CAL_KEY_MAX], a[CAL_KEY_MAX], b[CAL_KEY_MAX];
	struct err err;
	part_t p = 0;

	err_clear(&err);
	ck_assert_msg(cal_parse_key(&c, zoned[_i].key, &p, &err) == 0, "%s: %s",
	    zoned[_i].key, err.msg);
	cal_key(&c, p, key);
	ck_assert_str_eq(key, zoned[_i].key);
	cal_bound_utc(cal_start(&c, p), a);
	cal_bound_utc(cal_end(&c, p), b);
	ck_assert_msg(strcmp(a, zoned[_i].start) == 0 &&
	    strcmp(b, zoned[_i].end) == 0, "%s %s: [%s, %s)", zoned[_i].zone,
	    zoned[_i].key, a, b);
	ck_assert_int_eq(cal_start(&c, p), utc_of(zoned[_i].start));
	ck_assert_int_eq(cal_part_of(&c, utc_of(zoned[_i].start)), p);
	ck_assert_int_eq(cal_part_of(&c, utc_of(zoned[_i].end) - 1), p);
	ck_assert_int_eq(cal_part_of(&c, utc_of(zoned[_i].end)), p + 1);
	ck_assert_int_eq(cal_end(&c, p - 1), cal_start(&c, p));
	cal_bounds_local(&c, p, a, b);
	ck_assert_str_eq(a, zoned[_i].lstart);
	ck_assert_str_eq(b, zoned[_i].lend);
	ck_assert_str_eq(cal_zone_name(&c), zoned[_i].zone);
	ck_assert(cal_keys_sort_in_time(&c) == (zoned[_i].g != GRAIN_HOUR));
	tz_unref((struct tz *)c.tz);
}
END_TEST

/* Partitions of one local day (or hour) of an hourly calendar. */
static int64_t
zcount(const char *zone, const char *from, const char *to)
{
	struct cal c = zcal(zone, GRAIN_HOUR, WEEK_MONDAY);
	struct part_range r;
	struct err err;

	err_clear(&err);
	if (cal_range_parse(&c, from, to, &r, &err) != 0)
		ck_abort_msg("%s %s..%s: %s", zone, from, to, err.msg);
	tz_unref((struct tz *)c.tz);
	return range_count(&r);
}

START_TEST(test_zoned_counts)
{
	/* Chicago hourly: 23 partitions, then 25, each its own key */
	ck_assert_int_eq(zcount("America/Chicago", "2021-03-14", "2021-03-14"),
	    23);
	ck_assert_int_eq(zcount("America/Chicago", "2021-11-07", "2021-11-07"),
	    25);
	ck_assert_int_eq(zcount("America/Chicago", "2021-11-06", "2021-11-06"),
	    24);
	/* an hour without offset is every hour of that wall time */
	ck_assert_int_eq(zcount("America/Chicago", "2021-11-07T01",
	    "2021-11-07T01"), 2);
	ck_assert_int_eq(zcount("America/Chicago", "2021-11-07T01-06:00",
	    "2021-11-07T01-06:00"), 1);
	ck_assert_int_eq(zcount("America/Chicago", "2021-03-14T01",
	    "2021-03-14T03"), 2);
	/* Lord Howe's 23.5 hour day has 24 cells; Kolkata's days 24 */
	ck_assert_int_eq(zcount("Australia/Lord_Howe", "2023-10-01",
	    "2023-10-01"), 24);
	ck_assert_int_eq(zcount("Asia/Kolkata", "2024-01-01", "2024-01-01"),
	    24);
	ck_assert_int_eq(zcount("Europe/Berlin", "2023-10-29", "2023-10-29"),
	    25);
}
END_TEST

START_TEST(test_zoned_chicago_keys)
{
	struct cal c = zcal("America/Chicago", GRAIN_HOUR, WEEK_MONDAY);
	struct part_range r;
	struct err err;
	char key[CAL_KEY_MAX], prev[CAL_KEY_MAX] = "";
	int n2 = 0;

	ck_assert_int_eq(cal_range_parse_one(&c, "2021-03-14", &r, &err), 0);
	for (part_t p = r.first; p <= r.last; p++) {
		cal_key(&c, p, key);
		ck_assert_msg(strncmp(key, "2021-03-14T02", 13) != 0, "%s", key);
		ck_assert_str_ne(key, prev);
		memcpy(prev, key, sizeof key);
	}
	ck_assert_int_eq(cal_range_parse_one(&c, "2021-11-07", &r, &err), 0);
	for (part_t p = r.first; p <= r.last; p++) {
		cal_key(&c, p, key);
		if (strncmp(key, "2021-11-07T01", 13) == 0)
			n2++;
		ck_assert_int_eq(cal_end(&c, p) - cal_start(&c, p), 3600);
	}
	ck_assert_int_eq(n2, 2);
	tz_unref((struct tz *)c.tz);
}
END_TEST

/* Keys and ranges refused in a zone, with the words of the refusal. */
static const struct {
	const char *zone;
	enum grain g;
	const char *from, *to; /* to NULL: a key */
	const char *want;
} zoned_bad[] = {
	{ "America/New_York", GRAIN_HOUR, "2024-03-10T02-05:00", NULL,
	  "\"2024-03-10T02-05:00\" does not exist in America/New_York: "
	  "clocks went from 02:00 to 03:00 on 2024-03-10" },
	{ "Europe/Berlin", GRAIN_HOUR, "2023-10-29T02+03:00", NULL,
	  "\"2023-10-29T02+03:00\" is not an hour of Europe/Berlin: that "
	  "hour is 2023-10-29T02+02:00 and 2023-10-29T02+01:00" },
	{ "Europe/Berlin", GRAIN_HOUR, "2023-10-29T02", NULL,
	  "bad hour \"2023-10-29T02\": write hours of Europe/Berlin as "
	  "YYYY-MM-DDTHH and their offset" },
	{ "Europe/Berlin", GRAIN_HOUR, "2023-10-29T03+02:00", NULL,
	  "is not an hour of Europe/Berlin: that hour is "
	  "2023-10-29T03+01:00" },
	{ "Pacific/Apia", GRAIN_DAY, "2011-12-30", NULL,
	  "2011-12-30 did not happen in Pacific/Apia" },
	{ "America/New_York", GRAIN_HOUR, "2024-03-10T02", "2024-03-10T02",
	  "did not happen in America/New_York: its clocks skipped that "
	  "time; nothing was queued" },
	{ "America/New_York", GRAIN_HOUR, "2024-03-10T03", "2024-03-10T01",
	  "is after --to" },
	{ "America/New_York", GRAIN_WEEK, "2024-03-11", NULL,
	  "weeks are keyed by their Sunday, 2024-03-10" },
};

START_TEST(test_zoned_refused)
{
	struct cal c = zcal(zoned_bad[_i].zone, zoned_bad[_i].g,
	    zoned_bad[_i].g == GRAIN_WEEK ? WEEK_SUNDAY : WEEK_MONDAY);
	struct part_range r = { 7, 9 };
	struct err err;
	part_t p = 42;
	int rc;

	err_clear(&err);
	if (zoned_bad[_i].to == NULL)
		rc = cal_parse_key(&c, zoned_bad[_i].from, &p, &err);
	else
		rc = cal_range_parse(&c, zoned_bad[_i].from, zoned_bad[_i].to,
		    &r, &err);
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(p, 42);
	ck_assert_int_eq(r.first, 7);
	assert_bad_input(&err, zoned_bad[_i].from);
	ck_assert_msg(strstr(err.msg, zoned_bad[_i].want) != NULL, "%s",
	    err.msg);
	tz_unref((struct tz *)c.tz);
}
END_TEST

/* A day a zone skipped is empty, counted in a range and skipped by a
 * walk; the days around it are whole. */
START_TEST(test_zoned_skipped_day)
{
	struct cal c = zcal("Pacific/Apia", GRAIN_DAY, WEEK_MONDAY);
	struct part_range r;
	struct err err;
	int nonempty = 0;

	ck_assert_int_eq(cal_range_parse(&c, "2011-12-29", "2011-12-31", &r,
	    &err), 0);
	ck_assert_int_eq(range_count(&r), 3);
	for (part_t p = r.first; p <= r.last; p++)
		nonempty += !cal_empty(&c, p);
	ck_assert_int_eq(nonempty, 2);
	ck_assert(cal_empty(&c, r.first + 1));
	ck_assert_int_eq(cal_end(&c, r.first), cal_start(&c, r.last));
	/* 2011-12-29 ended at 10:00Z: the instant is 12-31's */
	ck_assert_int_eq(cal_part_of(&c, utc_of("2011-12-30 10:00:00")),
	    r.last);
	tz_unref((struct tz *)c.tz);
}
END_TEST

/* Across zones, overlap relates partitions: a UTC hour across a Kolkata
 * midnight feeds two Kolkata days, a UTC day two; a Berlin 25-hour day
 * reads 25 UTC hours. */
START_TEST(test_zoned_across)
{
	struct cal kd = zcal("Asia/Kolkata", GRAIN_DAY, WEEK_MONDAY);
	struct cal bd = zcal("Europe/Berlin", GRAIN_DAY, WEEK_MONDAY);
	struct cal bq = zcal("Europe/Berlin", GRAIN_QUARTER, WEEK_MONDAY);
	struct part_range r;
	char k[CAL_KEY_MAX];

	r = cal_map(&cal_utc[GRAIN_HOUR], key_of(GRAIN_HOUR, "2023-12-31T18"),
	    &kd);
	ck_assert_int_eq(range_count(&r), 2);
	cal_key(&kd, r.first, k);
	ck_assert_str_eq(k, "2023-12-31");
	cal_key(&kd, r.last, k);
	ck_assert_str_eq(k, "2024-01-01");
	r = cal_map(&cal_utc[GRAIN_HOUR], key_of(GRAIN_HOUR, "2023-12-31T19"),
	    &kd);
	ck_assert_int_eq(range_count(&r), 1);
	r = cal_map(&cal_utc[GRAIN_DAY], key_of(GRAIN_DAY, "2024-01-01"), &kd);
	ck_assert_int_eq(range_count(&r), 2);
	r = cal_inputs(&cal_utc[GRAIN_HOUR], &bd, cal_part_of_day(&bd,
	    day_of("2023-10-29")));
	ck_assert_int_eq(range_count(&r), 25);
	cal_key(&cal_utc[GRAIN_HOUR], r.first, k);
	ck_assert_str_eq(k, "2023-10-28T22");
	/* a Berlin day maps into its quarter; the quarter reads 92 days */
	r = cal_map(&bd, cal_part_of_day(&bd, day_of("2023-12-31")), &bq);
	ck_assert_int_eq(range_count(&r), 1);
	cal_key(&bq, r.first, k);
	ck_assert_str_eq(k, "2023-10-01");
	r = cal_inputs(&bd, &bq, r.first);
	ck_assert_int_eq(range_count(&r), 92);
	tz_unref((struct tz *)kd.tz);
	tz_unref((struct tz *)bd.tz);
	tz_unref((struct tz *)bq.tz);
}
END_TEST

/* partition: none (issue 41): one partition, keyed "-", overlapping
 * every partition of every calendar, in UTC and in a zone; no dates. */
START_TEST(test_cal_none)
{
	struct cal n = cal_utc[GRAIN_NONE];
	struct cal zn = zcal("Europe/Berlin", GRAIN_NONE, WEEK_MONDAY);
	struct cal zh = zcal("Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY);
	struct part_range r;
	struct err err;
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];
	part_t p = 7;
	enum grain back;

	ck_assert_str_eq(grain_name(GRAIN_NONE), "none");
	ck_assert_int_eq(cal_grain_parse("none", &back), -1);
	cal_key(&n, 0, a);
	ck_assert_str_eq(a, "-");
	ck_assert_int_eq(cal_parse_key(&n, "-", &p, &err), 0);
	ck_assert_int_eq(p, 0);
	ck_assert_int_eq(cal_parse_key(&zn, "2026-02-08", &p, &err), -1);
	ck_assert_str_eq(err.msg, "2026-02-08 is not the key of a job with "
	    "partition: none: its one partition is keyed -");
	cal_bounds_local(&zn, 0, a, b);
	ck_assert_str_eq(a, "0001-01-01");
	ck_assert_str_eq(b, "9999-12-31");
	ck_assert_int_eq(cal_start(&zn, 0), cal_start(&n, 0));
	ck_assert_int_eq(cal_start(&n, 0),
	    cal_days_from_civil(1, 1, 1) * 86400);
	ck_assert_int_eq(cal_end(&n, 0),
	    cal_days_from_civil(9999, 12, 31) * 86400);
	ck_assert(cal_empty(&n, -1) && cal_empty(&zn, 1));
	ck_assert_int_eq(cal_start(&n, -1), cal_end(&n, -1));
	ck_assert_int_eq(cal_start(&n, 1), cal_end(&n, 1));
	ck_assert(!cal_empty(&zn, 0));
	/* every partition of every grain maps to 0, and 0 reads them all */
	for (enum grain g = GRAIN_HOUR; g <= GRAIN_YEAR; g++) {
		ck_assert(grain_can_feed(g, GRAIN_NONE));
		ck_assert(!grain_can_feed(GRAIN_NONE, g));
		for (part_t u = -30000; u <= 30000; u += 7919) {
			r = cal_map(&cal_utc[g], u, &n);
			ck_assert_int_eq(r.first, 0);
			ck_assert_int_eq(r.last, 0);
			r = cal_window_readers(&cal_utc[g], u, &zn, 0);
			ck_assert_int_eq(r.first, 0);
			ck_assert_int_eq(r.last, 0);
		}
	}
	ck_assert(grain_can_feed(GRAIN_NONE, GRAIN_NONE));
	r = cal_inputs(&cal_utc[GRAIN_DAY], &n, 0);
	ck_assert_int_eq(r.first, cal_days_from_civil(1, 1, 1));
	ck_assert_int_eq(r.last, cal_days_from_civil(9999, 12, 30));
	r = cal_window_inputs(&zh, &zn, 0, 0);
	/* the zone's cells overlapping the whole span, and no more */
	ck_assert(cal_start(&zh, r.first) <= cal_start(&n, 0) &&
	    cal_start(&n, 0) < cal_end(&zh, r.first));
	ck_assert(cal_start(&zh, r.last) < cal_end(&n, 0) &&
	    cal_end(&n, 0) <= cal_end(&zh, r.last));
	ck_assert_int_eq(cal_part_of(&zn, 0), 0);
	ck_assert_int_eq(cal_part_of_day(&n, 20500), 0);
	cal_key_hull(&n, (struct part_range){ 0, 0 }, a, b);
	ck_assert_str_eq(a, "-");
	ck_assert_str_eq(b, "-");
	/* a whole table takes no dates */
	ck_assert_int_eq(cal_range_parse(&n, "2026-02-08", "2026-02-12", &r,
	    &err), -1);
	ck_assert_str_eq(err.msg, "--from \"2026-02-08\": a job with "
	    "partition: none has one partition, -, and takes no dates (a "
	    "backfill without dates rebuilds it)");
	ck_assert_int_eq(cal_range_parse_one(&zn, "2026-02-08", &r, &err),
	    -1);
	tz_unref((struct tz *)zn.tz);
	tz_unref((struct tz *)zh.tz);
}
END_TEST

/* Zoned hour keys do not sort in time; the hull holds them all. */
START_TEST(test_zoned_hull)
{
	struct cal c = zcal("Europe/Berlin", GRAIN_HOUR, WEEK_MONDAY);
	struct part_range r;
	struct err err;
	char lo[CAL_KEY_MAX], hi[CAL_KEY_MAX], k[CAL_KEY_MAX];

	ck_assert_int_eq(cal_range_parse_one(&c, "2023-10-29", &r, &err), 0);
	cal_key_hull(&c, r, lo, hi);
	for (part_t p = r.first; p <= r.last; p++) {
		cal_key(&c, p, k);
		ck_assert_msg(strcmp(lo, k) <= 0 && strcmp(k, hi) <= 0,
		    "%s outside %s..%s", k, lo, hi);
	}
	cal_key(&c, r.first + 2, lo);
	cal_key(&c, r.first + 3, hi);
	ck_assert_str_eq(lo, "2023-10-29T02+02:00");
	ck_assert_str_eq(hi, "2023-10-29T02+01:00");
	ck_assert_int_gt(strcmp(lo, hi), 0); /* bytes against time */
	tz_unref((struct tz *)c.tz);
}
END_TEST

static Suite *
calendar_suite(void)
{
	Suite *s = suite_create("calendar");
	TCase *tc;

	tc = tcase_create("civil");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_known_days, 0, NELEM(known_days));
	tcase_add_test(tc, test_round_trip_1600_2400);
	tcase_add_test(tc, test_round_trip_full_range);
	tcase_add_loop_test(tc, test_leap_days, 0, NELEM(leap_years));
	tcase_add_loop_test(tc, test_month_ends, 0, NELEM(month_end_years));
	tcase_add_loop_test(tc, test_year_ends, 0, NELEM(year_ends));
	suite_add_tcase(s, tc);

	tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_bad_inputs, 0, NELEM(bad_inputs));
	tcase_add_test(tc, test_parse_null_and_long);
	tcase_add_loop_test(tc, test_good_hours, 0, NELEM(good_hours));
	tcase_add_loop_test(tc, test_good_durations, 0, NELEM(good_durations));
	tcase_add_loop_test(tc, test_bad_durations, 0, NELEM(bad_durations));
	tcase_add_test(tc, test_format);
	suite_add_tcase(s, tc);

	tc = tcase_create("partition");
	tcase_add_test(tc, test_grain_names);
	tcase_add_test(tc, test_grain_can_feed);
	tcase_add_loop_test(tc, test_bounds, 0, NELEM(bounds));
	tcase_add_loop_test(tc, test_iso_weeks, 0, NELEM(iso_weeks));
	tcase_add_test(tc, test_week_keys);
	tcase_add_test(tc, test_month_keys);
	suite_add_tcase(s, tc);

	tc = tcase_create("map");
	tcase_add_loop_test(tc, test_part_map, 0, NELEM(maps));
	tcase_add_loop_test(tc, test_part_inputs, 0, NELEM(inputs));
	tcase_add_test(tc, test_part_inputs_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("range");
	tcase_add_loop_test(tc, test_ranges, 0, NELEM(ranges));
	tcase_add_loop_test(tc, test_bad_ranges, 0, NELEM(bad_ranges));
	tcase_add_test(tc, test_range_count_extremes);
	suite_add_tcase(s, tc);

	tc = tcase_create("sched");
	tcase_add_loop_test(tc, test_sched, 0, NELEM(scheds));
	tcase_add_test(tc, test_sched_boundary_walk);
	suite_add_tcase(s, tc);

	tc = tcase_create("cal");
	tcase_add_loop_test(tc, test_cal_table, 0, NELEM(cals));
	tcase_add_loop_test(tc, test_cal_bad_keys, 0, NELEM(cal_bad_keys));
	tcase_add_test(tc, test_cal_ranges_and_maps);
	tcase_add_test(tc, test_cal_utc_is_part);
	suite_add_tcase(s, tc);

	tc = tcase_create("zoned");
	tcase_add_loop_test(tc, test_zoned_table, 0, NELEM(zoned));
	tcase_add_test(tc, test_zoned_counts);
	tcase_add_test(tc, test_zoned_chicago_keys);
	tcase_add_loop_test(tc, test_zoned_refused, 0, NELEM(zoned_bad));
	tcase_add_test(tc, test_zoned_skipped_day);
	tcase_add_test(tc, test_zoned_across);
	tcase_add_test(tc, test_zoned_hull);
	tcase_add_test(tc, test_cal_none);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(calendar_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
