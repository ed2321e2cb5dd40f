/*
 * test_map.c - map.c: ranges of one state, the rank of states, the bound,
 * and the calendars (ISO weeks across a year end, hours, months, weeks).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"
#include "tz.h"

/* Collect ranges as "FROM..TO state count;" text. */
static void
collect_cb(part_t from, part_t to, enum map_state s, int64_t count, void *data)
{
	struct buf *b = data;

	buf_printf(b, "%lld..%lld %s %lld;", (long long)from, (long long)to,
		   map_state_name(s), (long long)count);
}

/* Runs of one state, in order; the strongest state wins. */
START_TEST(test_ranges)
{
	struct map m;
	struct err err;
	struct buf b;

	ck_assert_int_eq(map_init(&m, &cal_utc[GRAIN_DAY], 100, 109, &err), 0);
	map_raise(&m, 102, MAP_SUCCEEDED);
	map_raise(&m, 103, MAP_SUCCEEDED);
	map_raise(&m, 103, MAP_FAILED);
	map_raise(&m, 103, MAP_SUCCEEDED); /* weaker: stays failed */
	map_raise(&m, 104, MAP_QUEUED);
	map_set(&m, 108, MAP_NOT_DUE);
	map_set(&m, 109, MAP_NOT_DUE);
	map_raise(&m, 200, MAP_RUNNING);   /* outside: nothing */
	buf_init(&b);
	map_ranges(&m, collect_cb, &b);
	buf_add(&b, "", 1);
	ck_assert_str_eq(b.data, "100..101 never_run 2;102..102 succeeded 1;"
			 "103..103 failed 1;104..104 queued 1;"
			 "105..107 never_run 3;108..109 not_due 2;");
	buf_reset(&b);
	map_json(&m, "j", &b);
	buf_add(&b, "", 1);
	ck_assert_ptr_nonnull(strstr(b.data, "{\"job\": \"j\", \"grain\": \"day\", "
		"\"timezone\": \"UTC\", \"from\": \"1970-04-11\", \"to\": \"1970-04-20\", \"ranges\": ["));
	ck_assert_ptr_nonnull(strstr(b.data, "{\"from\": \"1970-04-14\", \"to\":"
		" \"1970-04-14\", \"state\": \"failed\", \"count\": 1}"));
	buf_free(&b);
	map_free(&m);
}
END_TEST

/* Above MAP_MAX_PARTITIONS is refused at once, whatever the size. */
START_TEST(test_bound)
{
	struct map m;
	struct err err;

	ck_assert_int_eq(map_init(&m, &cal_utc[GRAIN_HOUR], 0, MAP_MAX_PARTITIONS - 1, &err), 0);
	map_free(&m);
	ck_assert_int_eq(map_init(&m, &cal_utc[GRAIN_HOUR], 0, MAP_MAX_PARTITIONS, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, "the map would hold 100001 partitions, above the"
			 " bound of 100000; narrow it with --from and --to");
	ck_assert_int_eq(map_init(&m, &cal_utc[GRAIN_DAY], 0, INT64_MAX / 2, &err), -1);
	ck_assert_int_eq(map_init(&m, &cal_utc[GRAIN_DAY], 5, 4, &err), -1);
}
END_TEST

/* Text of a map of calendar c whose partitions are all `s` but the
 * first, failed. */
static char *
calendar_of(const struct cal *c, const char *from, const char *to)
{
	struct map m;
	struct err err;
	struct part_range r;
	struct buf b;

	ck_assert_msg(cal_range_parse(c, from, to, &r, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(map_init(&m, c, r.first, r.last, &err), 0);
	for (part_t p = r.first; p <= r.last; p++)
		map_raise(&m, p, MAP_SUCCEEDED);
	map_raise(&m, r.first, MAP_FAILED);
	buf_init(&b);
	map_text(&m, "j", false, &b);
	buf_add(&b, "", 1);
	map_free(&m);
	return b.data;
}

/* The same in a grain's UTC calendar. */
static char *
calendar(enum grain g, const char *from, const char *to)
{
	return calendar_of(&cal_utc[g], from, to);
}

/* A zone's calendar from the system's tzdata; tz_unref(c.tz) when done. */
static struct cal
zcal(const char *zone, enum grain g)
{
	struct cal c = { g, WEEK_MONDAY, NULL };
	struct tz *z = NULL;
	struct err err;

	if (tz_load(zone, &z, &err) != 0)
		ck_abort_msg("%s", err.msg);
	c.tz = z;
	return c;
}

/* Quarters: a row per year, four cells; years: a row per decade. */
START_TEST(test_calendar_quarters_years)
{
	char *t = calendar(GRAIN_QUARTER, "2023-07-01", "2024-06-30");

	ck_assert_str_eq(t,
		"j (quarter) 2023-07-01..2024-04-01: 4 partitions\n"
		"     1234\n"
		"2023   Fs\n"
		"2024 ss\n"
		"legend:  s succeeded 3  F failed 1\n");
	free(t);
	t = calendar(GRAIN_YEAR, "2018-05-05", "2021-12-31");
	ck_assert_str_eq(t,
		"j (year) 2018-01-01..2021-01-01: 4 partitions\n"
		"     0123456789\n"
		"2010         Fs\n"
		"2020 ss\n"
		"legend:  s succeeded 3  F failed 1\n");
	free(t);
}
END_TEST

/* Sunday weeks: a row per year, the week of 2023-12-31 (a Sunday) that
 * holds 2024-01-01 in 2023's row. */
START_TEST(test_calendar_sunday_weeks)
{
	struct cal c = { GRAIN_WEEK, WEEK_SUNDAY, NULL };
	char *t = calendar_of(&c, "2023-12-20", "2024-01-08");

	ck_assert_str_eq(t,
		"j (week) 2023-12-17..2024-01-07: 4 partitions\n"
		"     weeks (by Sunday) from the first of the year\n"
		"2023                                                   Fss\n"
		"2024 s\n"
		"legend:  s succeeded 3  F failed 1\n");
	free(t);
}
END_TEST

/* A zoned job: the zone in the header and the JSON; hours a row per
 * local day, 25 cells on the day Berlin's clocks go back, 23 when they go
 * forward. */
START_TEST(test_calendar_zoned)
{
	struct cal c = zcal("Europe/Berlin", GRAIN_HOUR);
	struct cal d = zcal("Asia/Kolkata", GRAIN_DAY);
	char *t = calendar_of(&c, "2023-10-29", "2023-10-29");
	struct part_range r;
	struct map m;
	struct err err;
	struct buf b;

	ck_assert_str_eq(t,
		"j (hour, Europe/Berlin) 2023-10-29T00+02:00..2023-10-29T23+01:00:"
		" 25 partitions\n"
		"           0     6     12    18\n"
		"2023-10-29 Fssssssssssssssssssssssss\n"
		"legend:  s succeeded 24  F failed 1\n");
	free(t);
	t = calendar_of(&c, "2023-03-26", "2023-03-26");
	ck_assert_ptr_nonnull(strstr(t, "2023-03-26 Fssssssssssssssssssssss\n"));
	ck_assert_ptr_nonnull(strstr(t, ": 23 partitions\n"));
	free(t);
	t = calendar_of(&d, "2024-01-01", "2024-01-02");
	ck_assert_str_eq(t,
		"j (day, Asia/Kolkata) 2024-01-01..2024-01-02: 2 partitions\n"
		"               MTWTFSS\n"
		"2024-01-01 Jan Fs\n"
		"legend:  s succeeded 1  F failed 1\n");
	free(t);
	ck_assert_int_eq(cal_range_parse(&d, "2024-01-01", "2024-01-01", &r,
					 &err), 0);
	ck_assert_int_eq(map_init(&m, &d, r.first, r.last, &err), 0);
	buf_init(&b);
	map_json(&m, "j", &b);
	buf_add(&b, "", 1);
	ck_assert_ptr_nonnull(strstr(b.data, "\"grain\": \"day\", \"timezone\":"
		" \"Asia/Kolkata\", \"from\": \"2024-01-01\""));
	buf_free(&b);
	map_free(&m);
	tz_unref((struct tz *)c.tz);
	tz_unref((struct tz *)d.tz);
}
END_TEST

/* The report's grid of a map of calendar c over from..to (all
 * succeeded, the first failed). */
static char *
html_of(const struct cal *c, const char *from, const char *to)
{
	struct map m;
	struct err err;
	struct part_range r;
	struct buf b;

	ck_assert_msg(cal_range_parse(c, from, to, &r, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(map_init(&m, c, r.first, r.last, &err), 0);
	for (part_t p = r.first; p <= r.last; p++)
		map_raise(&m, p, MAP_SUCCEEDED);
	map_raise(&m, r.first, MAP_FAILED);
	buf_init(&b);
	map_html(&m, "j", &b);
	map_free(&m);
	return b.data;
}

/* How many times needle is in hay. */
static int
count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* The report's hour grid in Berlin: a row per local day (its date label,
 * then its cells), 25 cells on 2023-10-29 with the second 02 marked
 * apart, 23 on 2023-03-26 with no 02; a range from the middle of a day
 * pads the day's earlier hours.  The heading's words name the zone. */
START_TEST(test_html_zoned_hours)
{
	struct cal c = zcal("Europe/Berlin", GRAIN_HOUR);
	struct buf b;
	char *t = html_of(&c, "2023-10-29", "2023-10-29");

	ck_assert_int_eq(count(t, "data-partition="), 25);
	ck_assert_int_eq(count(t, "class=\"lbl\" data-job=\"j\" data-day="),
			 1);
	ck_assert_ptr_nonnull(strstr(t, "data-day=\"2023-10-29\""));
	ck_assert_int_eq(count(t, "data-hour=\"02\""), 1);
	ck_assert_int_eq(count(t, "class=\"c rep"), 1);
	ck_assert_ptr_nonnull(strstr(t, "<span class=\"c rep s-succeeded\""
		" data-job=\"j\" data-partition=\"2023-10-29T02+01:00\""
		" data-state=\"succeeded\" data-hour=\"02'\" title=\""
		"2023-10-29T02+01:00 succeeded, the second 02\">"));
	ck_assert_ptr_nonnull(strstr(t, "data-partition=\"2023-10-29T02+02:00\""
		" data-state=\"succeeded\" data-hour=\"02\""));
	ck_assert_int_eq(count(t, "c pad"), 0);
	free(t);
	t = html_of(&c, "2023-03-26", "2023-03-26");
	ck_assert_int_eq(count(t, "data-partition="), 23);
	ck_assert_int_eq(count(t, "data-hour=\"02"), 0);
	ck_assert_int_eq(count(t, "data-hour=\"03\""), 1);
	ck_assert_int_eq(count(t, "rep"), 0);
	free(t);
	/* from 20:00 on the 28th: 20 pads, 4 cells, then the next day's row */
	t = html_of(&c, "2023-10-28T20+02:00", "2023-10-29T03+01:00");
	ck_assert_int_eq(count(t, "c pad"), 20);
	ck_assert_int_eq(count(t, "data-day="), 2);
	ck_assert_int_eq(count(t, "data-partition="), 4 + 5);
	ck_assert_int_eq(count(t, "class=\"c rep"), 1);
	ck_assert_ptr_nonnull(strstr(t, "data-day=\"2023-10-28\">2023-10-28"
		"</span><span class=\"c pad\"></span>"));
	free(t);
	buf_init(&b);
	map_html_calendar(&c, &b);
	ck_assert_str_eq(b.data, "hour, Europe/Berlin, local time");
	buf_reset(&b);
	map_html_calendar(&cal_utc[GRAIN_HOUR], &b);
	ck_assert_str_eq(b.data, "hour");
	buf_free(&b);
	tz_unref((struct tz *)c.tz);
}
END_TEST

/* The report's day grid: the weekdays' row, a week's label (its month,
 * its Monday), pads before the first day's weekday. */
START_TEST(test_html_days)
{
	char *t = html_of(&cal_utc[GRAIN_DAY], "2024-01-03", "2024-01-08");

	ck_assert_int_eq(count(t, "data-partition="), 6);
	ck_assert_int_eq(count(t, "c pad"), 2);
	ck_assert_ptr_nonnull(strstr(t, "data-month=\"2024-01\">January 2024"));
	ck_assert_ptr_nonnull(strstr(t, "data-week=\"2024-01-01\""));
	ck_assert_ptr_nonnull(strstr(t, "data-week=\"2024-01-08\""));
	ck_assert_int_eq(count(t, "data-hour="), 0);
	free(t);
}
END_TEST

/* A cell's note (map_note: why a stale partition is stale) follows its
 * state in its title; a note outside the range is dropped, a second one
 * replaces the first, cells without one are as before. */
START_TEST(test_html_note)
{
	struct map m;
	struct err err;
	struct buf b;
	part_t d = cal_days_from_civil(2026, 2, 12);

	ck_assert_int_eq(map_init(&m, &cal_utc[GRAIN_DAY], d, d + 1, &err), 0);
	map_raise(&m, d, MAP_STALE);
	map_raise(&m, d + 1, MAP_SUCCEEDED);
	map_note(&m, d, "replaced");
	map_note(&m, d, "newer fct 2026-02-10");
	map_note(&m, d + 2, "outside");
	buf_init(&b);
	map_html(&m, "mart", &b);
	map_free(&m);
	ck_assert_ptr_nonnull(strstr(b.data, "data-partition=\"2026-02-12\""
		" data-state=\"stale\" title=\"2026-02-12 stale: newer fct"
		" 2026-02-10\">"));
	ck_assert_ptr_nonnull(strstr(b.data, "data-partition=\"2026-02-13\""
		" data-state=\"succeeded\" title=\"2026-02-13 succeeded\">"));
	ck_assert_int_eq(count(b.data, "outside"), 0);
	ck_assert_int_eq(count(b.data, "replaced"), 0);
	buf_free(&b);
}
END_TEST

/* Days: rows by ISO week across a year end (2020-12-28 .. 2021-01-03 is
 * 2020-W53), the month label where a month begins. */
START_TEST(test_calendar_days)
{
	char *t = calendar(GRAIN_DAY, "2020-12-30", "2021-01-12");

	ck_assert_str_eq(t,
		"j (day) 2020-12-30..2021-01-12: 14 partitions\n"
		"               MTWTFSS\n"
		"2020-12-28 Jan   Fssss\n"
		"2021-01-04     sssssss\n"
		"2021-01-11     ss\n"
		"legend:  s succeeded 13  F failed 1\n");
	free(t);
	/* a leap day */
	t = calendar(GRAIN_DAY, "2024-02-26", "2024-03-03");
	ck_assert_ptr_nonnull(strstr(t, "2024-02-26 Mar Fssssss\n"));
	free(t);
}
END_TEST

/* Hours: a row per day, 24 columns. */
START_TEST(test_calendar_hours)
{
	char *t = calendar(GRAIN_HOUR, "2026-03-01T22", "2026-03-02T01");

	ck_assert_str_eq(t,
		"j (hour) 2026-03-01T22..2026-03-02T01: 4 partitions\n"
		"           0     6     12    18\n"
		"2026-03-01                       Fs\n"
		"2026-03-02 ss\n"
		"legend:  s succeeded 3  F failed 1\n");
	free(t);
}
END_TEST

/* Months and weeks: a row per year. */
START_TEST(test_calendar_strips)
{
	char *t = calendar(GRAIN_MONTH, "2025-11-01", "2026-02-01");

	ck_assert_str_eq(t,
		"j (month) 2025-11-01..2026-02-01: 4 partitions\n"
		"     JFMAMJJASOND\n"
		"2025           Fs\n"
		"2026 ss\n"
		"legend:  s succeeded 3  F failed 1\n");
	free(t);
	/* 2020 has 53 ISO weeks; 2021's first Monday is 01-04 */
	t = calendar(GRAIN_WEEK, "2020-12-21", "2021-01-04");
	ck_assert_ptr_nonnull(strstr(t, "\n2020 "));
	ck_assert_ptr_nonnull(strstr(t, "Fs\n2021 s\n"));
	free(t);
}
END_TEST

/* Colours: escapes only when asked, reset at each row's end. */
START_TEST(test_colour)
{
	struct map m;
	struct err err;
	struct buf b;

	ck_assert_int_eq(map_init(&m, &cal_utc[GRAIN_MONTH], 0, 2, &err), 0);
	buf_init(&b);
	map_text(&m, "j", true, &b);
	buf_add(&b, "", 1);
	ck_assert_ptr_nonnull(strstr(b.data, "\033[0;2mnnn\033[0m\n"));
	buf_free(&b);
	map_free(&m);
}
END_TEST

static Suite *
map_suite(void)
{
	Suite *s = suite_create("map");
	TCase *tc = tcase_create("map");

	tcase_add_test(tc, test_ranges);
	tcase_add_test(tc, test_bound);
	tcase_add_test(tc, test_calendar_days);
	tcase_add_test(tc, test_calendar_hours);
	tcase_add_test(tc, test_calendar_strips);
	tcase_add_test(tc, test_colour);
	tcase_add_test(tc, test_calendar_quarters_years);
	tcase_add_test(tc, test_calendar_sunday_weeks);
	tcase_add_test(tc, test_calendar_zoned);
	tcase_add_test(tc, test_html_zoned_hours);
	tcase_add_test(tc, test_html_days);
	tcase_add_test(tc, test_html_note);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(map_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
