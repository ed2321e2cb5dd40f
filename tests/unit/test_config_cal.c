/*
 * test_config_cal.c - a job's calendar in the configuration (config_cal.c):
 * partition: quarter and year, week_start: (weekly jobs only), timezone:
 * (at the top level and on a job: a name of the system's tzdata, a
 * misspelt one refused at its position with the closest name), the
 * calendar the state store records (config_cal_name), code_version
 * unchanged for UTC jobs with Monday weeks, and config_diff naming the
 * calendar's keys.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_diff.h"
#include "tz.h"

/* Load text as /srv/bf/backfilld.yaml, asserting success. */
static struct config *
load_ok(const char *text)
{
	struct config *cfg = NULL;
	struct err err = { 0 };
	int rc = config_load_string("/srv/bf/backfilld.yaml", text,
				    strlen(text), &cfg, &err);

	ck_assert_msg(rc == 0, "unexpected error: %s", err.msg);
	return cfg;
}

/* Load text as inline.yaml, asserting failure with exactly `msg`. */
static void
load_bad(const char *text, const char *msg)
{
	struct config *cfg = (struct config *)1;
	struct err err = { 0 };

	ck_assert_int_eq(config_load_string("inline.yaml", text, strlen(text),
					    &cfg, &err), -1);
	ck_assert_ptr_null(cfg);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, msg);
}

static int64_t
day(int y, int m, int d)
{
	return cal_days_from_civil(y, m, d);
}

/* Quarter and year jobs: their start and end are the quarters (years)
 * holding the dates; a day feeds both, a quarter cannot feed a month. */
START_TEST(test_quarter_year)
{
	struct config *cfg = load_ok(
		"jobs:\n"
		"  - {name: d, partition: day, start: 2024-01-01, command: [x]}\n"
		"  - {name: q, partition: quarter, start: 2024-02-10, end: 2024-12-31, upstream: [d], command: [x]}\n"
		"  - {name: y, partition: year, start: 2023-07-01, upstream: [d], command: [x]}\n");
	const struct job_def *q = config_job(cfg, "q"), *y = config_job(cfg, "y");
	char key[CAL_KEY_MAX];

	ck_assert_int_eq(q->grain, GRAIN_QUARTER);
	ck_assert_int_eq(q->cal.grain, GRAIN_QUARTER);
	ck_assert_ptr_null(q->cal.tz);
	ck_assert_int_eq(q->start, (2024 - 1970) * 4);
	ck_assert_int_eq(q->end, (2024 - 1970) * 4 + 3);
	cal_key(&q->cal, q->start, key);
	ck_assert_str_eq(key, "2024-01-01");
	ck_assert_int_eq(y->start, 2023 - 1970);
	cal_key(&y->cal, y->start, key);
	ck_assert_str_eq(key, "2023-01-01");
	config_unref(cfg);

	/* a coarser upstream: each month reads the quarter holding it */
	cfg = load_ok("jobs:\n"
		      "  - {name: q, partition: quarter, command: [x]}\n"
		      "  - {name: m, partition: month, upstream: [q], command: [x]}\n");
	ck_assert_int_eq(cfg->jobs[1].upstream_idx[0], 0);
	config_unref(cfg);
	load_bad("jobs:\n"
		 "  - {name: q, partition: fortnight, command: [x]}\n",
		 "inline.yaml:2:26: job \"q\": partition must be one of hour, day, week, month, quarter, year, none, got \"fortnight\"");
}
END_TEST

/* week_start: sunday makes Sunday-to-Saturday weeks keyed by their
 * Sunday; only weekly jobs take it; monday is the default. */
START_TEST(test_week_start)
{
	struct config *cfg = load_ok(
		"jobs:\n"
		"  - {name: s, partition: week, week_start: sunday, start: 2024-01-01, end: 2024-01-06, command: [x]}\n"
		"  - {name: m, partition: week, week_start: monday, start: 2024-01-01, command: [x]}\n"
		"  - {name: n, partition: week, start: 2024-01-01, command: [x]}\n");
	const struct job_def *s = config_job(cfg, "s"), *m = config_job(cfg, "m");
	const struct job_def *n = config_job(cfg, "n");
	char key[CAL_KEY_MAX];

	ck_assert_int_eq(s->cal.week_start, WEEK_SUNDAY);
	cal_key(&s->cal, s->start, key);
	ck_assert_str_eq(key, "2023-12-31");
	ck_assert_int_eq(s->end, s->start);
	ck_assert_int_eq(m->cal.week_start, WEEK_MONDAY);
	ck_assert_int_eq(n->cal.week_start, WEEK_MONDAY);
	cal_key(&n->cal, n->start, key);
	ck_assert_str_eq(key, "2024-01-01");
	config_unref(cfg);

	load_bad("jobs:\n"
		 "  - name: d\n"
		 "    partition: day\n"
		 "    week_start: sunday\n"
		 "    command: [x]\n",
		 "inline.yaml:4:5: job \"d\": week_start is for partition: week; this job's partitions are days");
	load_bad("jobs:\n"
		 "  - {name: w, partition: week, week_start: tuesday, command: [x]}\n",
		 "inline.yaml:2:44: job \"w\": week_start must be monday or sunday, got \"tuesday\"");
}
END_TEST

/* code_version: a UTC job with Monday weeks keeps the one it had before
 * calendars (timezone: UTC and week_start: monday written or not); a
 * Sunday week changes it. */
START_TEST(test_code_version_unchanged)
{
	struct config *a = load_ok(
		"jobs:\n  - {name: w, partition: week, command: [x]}\n");
	struct config *b = load_ok(
		"timezone: UTC\n"
		"jobs:\n  - {name: w, partition: week, week_start: monday, timezone: Etc/UTC, command: [x]}\n");
	struct config *c = load_ok(
		"jobs:\n  - {name: w, partition: week, week_start: sunday, command: [x]}\n");

	/* the hash of name, grain, argv as it was before zones */
	ck_assert_str_eq(config_job(a, "w")->code_version,
			 config_job(b, "w")->code_version);
	ck_assert_str_ne(config_job(a, "w")->code_version,
			 config_job(c, "w")->code_version);
	ck_assert_ptr_null(config_job(b, "w")->cal.tz);
	ck_assert_str_eq(cal_zone_name(&config_job(b, "w")->cal), "UTC");
	config_unref(a);
	config_unref(b);
	config_unref(c);
}
END_TEST

/* A name that is not a zone: refused at its position, with the closest
 * name of tzdata.zi. */
START_TEST(test_timezone_unknown)
{
	load_bad("jobs:\n"
		 "  - name: d\n"
		 "    partition: day\n"
		 "    timezone: Europe/Berln\n"
		 "    command: [x]\n",
		 "inline.yaml:4:15: job \"d\": timezone: unknown time zone \"Europe/Berln\"; did you mean \"Europe/Berlin\"?");
	load_bad("timezone: America/New_Yrok\n",
		 "inline.yaml:1:11: timezone: unknown time zone \"America/New_Yrok\"; did you mean \"America/New_York\"?");
	load_bad("timezone: Nowhere/Special\n",
		 "inline.yaml:1:11: timezone: unknown time zone \"Nowhere/Special\"; write an IANA name such as Europe/Berlin");
	load_bad("timezone: ../etc/passwd\n",
		 "inline.yaml:1:11: timezone: bad time zone name ../etc/passwd: write an IANA name such as Europe/Berlin");
	load_bad("jobs:\n  - {name: d, partition: day, timezone: right/UTC, command: [x]}\n",
		 "inline.yaml:2:41: job \"d\": timezone: time zone right/UTC is not a zone name: write an IANA name such as Europe/Berlin");
}
END_TEST

/* Zones are taken (the gate of the first landing is gone), at the top
 * level and on a job; config_cal_name is what the state store records
 * (jobs.calendar): "" for UTC with Monday weeks, else the zone and
 * " sunday" for Sunday weeks. */
START_TEST(test_timezone_accepted)
{
	struct config *c = load_ok(
		"timezone: Europe/Berlin\n"
		"jobs:\n"
		"  - {name: b, partition: day, command: [x]}\n"
		"  - {name: c, partition: day, timezone: America/Chicago, command: [x]}\n"
		"  - {name: u, partition: day, timezone: UTC, command: [x]}\n"
		"  - {name: w, partition: week, timezone: UTC, week_start: sunday, command: [x]}\n"
		"  - {name: s, partition: week, week_start: sunday, command: [x]}\n");
	char name[CONFIG_CAL_NAME_MAX];

	config_cal_name(config_job(c, "b"), name, sizeof name);
	ck_assert_str_eq(name, "Europe/Berlin");
	config_cal_name(config_job(c, "c"), name, sizeof name);
	ck_assert_str_eq(name, "America/Chicago");
	config_cal_name(config_job(c, "u"), name, sizeof name);
	ck_assert_str_eq(name, "");
	config_cal_name(config_job(c, "w"), name, sizeof name);
	ck_assert_str_eq(name, "UTC sunday");
	config_cal_name(config_job(c, "s"), name, sizeof name);
	ck_assert_str_eq(name, "Europe/Berlin sunday");
	config_unref(c);
}
END_TEST

/* Zones: a job's own zone, the top level's inherited,
 * UTC written on a job overriding it; start/end in local days; the
 * code_version names the zone; config_diff reports the change. */
START_TEST(test_timezone_zoned)
{
	struct config *a, *b;
	struct config_diff d;
	const struct job_def *j;
	char key[CAL_KEY_MAX];

	a = load_ok(
		"timezone: Europe/Berlin\n"
		"jobs:\n"
		"  - {name: b, partition: day, start: 2023-10-29, end: 2023-10-29, command: [x]}\n"
		"  - {name: u, partition: day, timezone: UTC, command: [x]}\n"
		"  - {name: h, partition: hour, timezone: America/Chicago, start: 2021-11-07T01, end: 2021-11-07T01, command: [x]}\n");
	b = load_ok(
		"jobs:\n"
		"  - {name: b, partition: day, start: 2023-10-29, end: 2023-10-29, command: [x]}\n"
		"  - {name: u, partition: day, timezone: UTC, command: [x]}\n"
		"  - {name: h, partition: hour, timezone: America/Chicago, start: 2021-11-07T01, end: 2021-11-07T01, command: [x]}\n");
	j = config_job(a, "b");
	ck_assert_ptr_nonnull(j->cal.tz);
	ck_assert_str_eq(cal_zone_name(&j->cal), "Europe/Berlin");
	ck_assert_int_eq(j->start, day(2023, 10, 29));
	ck_assert_int_eq(j->end, j->start);
	/* 25 hours: Berlin's day holds 2023-10-28T22Z .. 10-29T23Z */
	ck_assert_int_eq(cal_end(&j->cal, j->end) - cal_start(&j->cal, j->start),
			 25 * 3600);
	ck_assert_ptr_null(config_job(a, "u")->cal.tz);
	/* the fold hour without offset is both of its cells */
	j = config_job(a, "h");
	ck_assert_int_eq(j->end, j->start + 1);
	cal_key(&j->cal, j->start, key);
	ck_assert_str_eq(key, "2021-11-07T01-05:00");
	cal_key(&j->cal, j->end, key);
	ck_assert_str_eq(key, "2021-11-07T01-06:00");
	ck_assert_str_ne(config_job(a, "b")->code_version,
			 config_job(b, "b")->code_version);
	ck_assert_str_eq(config_job(a, "u")->code_version,
			 config_job(b, "u")->code_version);

	config_diff(a, b, &d);
	ck_assert_uint_eq(d.nsettings, 1);
	ck_assert_str_eq(d.settings[0], "timezone");
	ck_assert_uint_eq(d.jobs.nchanged, 1);
	ck_assert_str_eq(d.jobs.changed[0].name, "b");
	ck_assert_uint_ge(d.jobs.changed[0].nkeys, 1);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "timezone");
	config_diff_free(&d);

	/* a skipped hour as a job's whole span names the clock change */
	load_bad("jobs:\n"
		 "  - {name: h, partition: hour, timezone: America/Chicago, start: 2021-03-14T02, end: 2021-03-14T02, command: [x]}\n",
		 "inline.yaml:2:66: job \"h\": start: \"2021-03-14T02\"..\"2021-03-14T02\" did not happen in America/Chicago: its clocks skipped that time; nothing was queued");
	config_unref(a);
	config_unref(b);
}
END_TEST

/* config_diff: week_start changed on a job. */
START_TEST(test_diff_week_start)
{
	struct config *a = load_ok(
		"jobs:\n  - {name: w, partition: week, command: [x]}\n");
	struct config *b = load_ok(
		"jobs:\n  - {name: w, partition: week, week_start: sunday, command: [x]}\n");
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert_uint_eq(d.jobs.nchanged, 1);
	ck_assert_uint_eq(d.jobs.changed[0].nkeys, 1);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "week_start");
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
}
END_TEST

static Suite *
config_cal_suite(void)
{
	Suite *s = suite_create("config_cal");
	TCase *tc = tcase_create("calendar");

	tcase_add_test(tc, test_quarter_year);
	tcase_add_test(tc, test_week_start);
	tcase_add_test(tc, test_code_version_unchanged);
	tcase_add_test(tc, test_timezone_unknown);
	tcase_add_test(tc, test_timezone_accepted);
	tcase_add_test(tc, test_timezone_zoned);
	tcase_add_test(tc, test_diff_week_start);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(config_cal_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
