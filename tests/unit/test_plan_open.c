/*
 * test_plan_open.c - nothing before its time in the planner
 * (plan_drop_open, plan.h): with build_future off a plan holds no
 * downstream partition whose interval has not closed at planning time,
 * nor one fed only through such partitions, and what it keeps waits only
 * for what it keeps.  Times are those of the issue: a scheduled fact
 * whose day lands at 03:00 the next day.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "config.h"
#include "plan.h"
#include "plan_fixture.h"
#include "schedule.h"

/* fct (day) feeds a rolling 7-day mart, a weekly mart (which feeds a
 * monthly one and a daily table reading its week), a running total and
 * a whole table. */
static const char open_yaml[] =
	"jobs:\n"
	"  - {name: fct, partition: day, start: 2026-01-01,"
	" ready_after: 3h, command: [x]}\n"
	"  - {name: mart_rolling_7d, partition: day,"
	" upstream: [{job: fct, lookback: 6}], command: [x]}\n"
	"  - {name: weekly, partition: week, upstream: [fct], command: [x]}\n"
	"  - {name: monthly, partition: month, upstream: [weekly],"
	" command: [x]}\n"
	"  - {name: wkday, partition: day, upstream: [weekly], command: [x]}\n"
	"  - {name: rtd, partition: day,"
	" upstream: [fct, {job: rtd, lookback: 1}], command: [x]}\n"
	"  - {name: lifetime, partition: none, upstream: [fct],"
	" command: [x]}\n"
	"  - {name: ended, partition: day, start: 2026-01-01,"
	" end: 2026-03-25, ready_after: 3h, command: [x]}\n"
	"  - {name: ended_weekly, partition: week, upstream: [ended],"
	" command: [x]}\n";

static struct config *cfg;
static int fct, rtd;

static void
setup(void)
{
	cfg = fixture_config("/tmp/plan_open.yaml", open_yaml);
	fct = config_job_index(cfg, "fct");
	rtd = config_job_index(cfg, "rtd");
}

static void
teardown(void)
{
	config_unref(cfg);
}

/* Seconds of "YYYY-MM-DD HH:MM:SS" (UTC). */
static int64_t
at(const char *s)
{
	int y, mo, d, h, mi, se;

	ck_assert_int_eq(sscanf(s, "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi,
				&se), 6);
	return cal_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
}

/* "job key" of item i. */
static const char *
name_of(const struct plan *p, size_t i, char *buf, size_t len)
{
	return fixture_item(cfg, p, i, buf, len);
}

/* The plan as lines "job key <- job key, job key" in run order. */
static char *
render(const struct plan *p)
{
	size_t cap = 65536, len = 0;
	char *out = calloc(1, cap), a[96];

	for (size_t i = 0; i < p->n; i++) {
		len += (size_t)snprintf(out + len, cap - len, "%s",
					name_of(p, i, a, sizeof a));
		for (size_t d = 0; d < p->items[i].ndeps; d++) {
			size_t in = p->deps[p->items[i].dep_off + d];

			ck_assert_uint_lt(in, i); /* inputs run first */
			len += (size_t)snprintf(out + len, cap - len, "%s%s",
						d ? ", " : " <- ",
						name_of(p, in, a, sizeof a));
		}
		len += (size_t)snprintf(out + len, cap - len, "\n");
	}
	return out;
}

/* Plan fct first..last at `now` with rtd built up to rtd_newest ("" for
 * none), expanded, then left without what has not closed. */
static void
plan_at(struct plan *p, int root, const char *first, const char *last,
	const char *now, const char *rtd_newest)
{
	struct plan_built *b = calloc(cfg->njobs, sizeof *b);
	part_t *closed = calloc(cfg->njobs, sizeof *closed);

	if (rtd_newest[0])
		b[rtd] = (struct plan_built){ true, day_of(rtd_newest) };
	plan_init(p);
	for (part_t d = day_of(first); d <= day_of(last); d++)
		plan_add_root(p, root, d);
	plan_expand_built(p, cfg, false, NULL, b);
	schedule_last_closed_all(cfg, at(now), closed);
	plan_drop_open(p, closed);
	free(b);
	free(closed);
}

/* Does the rendered plan hold this line (whole)? */
static bool
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *s = text; (s = strstr(s, line)) != NULL; s++)
		if ((s == text || s[-1] == '\n') && s[n] == '\n')
			return true;
	return false;
}

/* Does it hold an item "job key" (whatever it waits for)? */
static bool
has_item(const char *text, const char *item)
{
	size_t n = strlen(item);

	for (const char *s = text; (s = strstr(s, item)) != NULL; s++)
		if ((s == text || s[-1] == '\n') &&
		    (s[n] == '\n' || s[n] == ' '))
			return true;
	return false;
}

/* The catch-up: at 2026-04-01 03:00 fct 03-25..03-31 is caught
 * up.  The rolling mart is rebuilt for 03-25..03-31 and not for
 * 04-01..04-06 (today and the days to come); the week 03-23..03-29 is
 * rebuilt and the week holding today is not; March is rebuilt from the
 * week kept, April not; wkday's days of the open week (03-30, 03-31:
 * closed, but fed only through it) are left out with it; the running
 * total's cascade stops at 03-31 though it was built to 04-05; the whole
 * table is rebuilt.  Kept items wait only for kept ones. */
START_TEST(catchup_leaves_out_open)
{
	struct plan p;
	char *t;

	plan_at(&p, fct, "2026-03-25", "2026-03-31", "2026-04-01 03:00:00",
		"2026-04-05");
	t = render(&p);
	ck_assert_uint_eq(p.nroot, 7);
	ck_assert_msg(has_line(t, "mart_rolling_7d 2026-03-31 <- fct"
			       " 2026-03-25, fct 2026-03-26, fct 2026-03-27,"
			       " fct 2026-03-28, fct 2026-03-29, fct"
			       " 2026-03-30, fct 2026-03-31"), "%s", t);
	for (part_t d = day_of("2026-04-01"); d <= day_of("2026-04-06"); d++) {
		char key[CAL_KEY_MAX], item[96];

		cal_key(&cal_utc[GRAIN_DAY], d, key);
		snprintf(item, sizeof item, "mart_rolling_7d %s", key);
		ck_assert_msg(!has_item(t, item), "%s planned:\n%s", item, t);
		snprintf(item, sizeof item, "rtd %s", key);
		ck_assert_msg(!has_item(t, item), "%s planned:\n%s", item, t);
	}
	ck_assert_msg(has_line(t, "weekly 2026-03-23 <- fct 2026-03-25, fct"
			       " 2026-03-26, fct 2026-03-27, fct 2026-03-28,"
			       " fct 2026-03-29"), "%s", t);
	ck_assert_msg(!has_item(t, "weekly 2026-03-30"), "%s", t);
	ck_assert_msg(has_line(t, "monthly 2026-03-01 <- weekly 2026-03-23"),
		      "%s", t);
	ck_assert_msg(!has_item(t, "monthly 2026-04-01"), "%s", t);
	ck_assert_msg(has_line(t, "wkday 2026-03-29 <- weekly 2026-03-23"),
		      "%s", t);
	ck_assert_msg(!has_item(t, "wkday 2026-03-30"), "%s", t);
	ck_assert_msg(!has_item(t, "wkday 2026-03-31"), "%s", t);
	ck_assert_msg(has_line(t, "rtd 2026-03-31 <- fct 2026-03-31, rtd"
			       " 2026-03-30"), "%s", t);
	ck_assert_msg(has_item(t, "lifetime -"), "%s", t);
	/* 7 fct, 7 mart, 1 week, 1 month, 7 wkday, 7 rtd, 1 whole table */
	ck_assert_uint_eq(p.n, 31);
	/* left out: mart 04-01..06, week 03-30, April, wkday 03-30..04-05,
	 * rtd 04-01..04-05 */
	ck_assert_uint_eq(p.nopen, 6 + 1 + 1 + 7 + 5);
	free(t);
	plan_free(&p);
}
END_TEST

/* Mid-week: fct 2026-03-25 (a Wednesday) lands on Thursday 03:00.  Its
 * rolling-mart day is built (closed at midnight), the six after it are
 * not; its week is not, nor what reads only the week (March, wkday's
 * days, the closed ones included); the running total's day is. */
START_TEST(mid_week_leaves_week)
{
	struct plan p;
	char *t;

	plan_at(&p, fct, "2026-03-25", "2026-03-25", "2026-03-26 03:00:00",
		"");
	t = render(&p);
	ck_assert_str_eq(t, "fct 2026-03-25\n"
			 "mart_rolling_7d 2026-03-25 <- fct 2026-03-25\n"
			 "rtd 2026-03-25 <- fct 2026-03-25\n"
			 "lifetime - <- fct 2026-03-25\n");
	ck_assert_uint_eq(p.nopen, 6 + 1 + 1 + 7);
	free(t);
	plan_free(&p);
}
END_TEST

/* The week's last day: fct 2026-03-29 (Sunday) lands on Monday 03:00,
 * after the week closed at midnight: the week is built, waiting for it,
 * and wkday's days with it; March has not closed (it is built when the
 * week holding its last day lands, on 04-06). */
START_TEST(last_day_builds_week)
{
	struct plan p;
	char *t;

	plan_at(&p, fct, "2026-03-29", "2026-03-29", "2026-03-30 03:00:00",
		"");
	t = render(&p);
	ck_assert_msg(has_line(t, "weekly 2026-03-23 <- fct 2026-03-29"),
		      "%s", t);
	ck_assert_msg(!has_item(t, "monthly 2026-03-01"), "%s", t);
	ck_assert_msg(has_line(t, "wkday 2026-03-23 <- weekly 2026-03-23"),
		      "%s", t);
	ck_assert_msg(has_line(t, "mart_rolling_7d 2026-03-29 <- fct"
			       " 2026-03-29"), "%s", t);
	ck_assert_msg(!has_item(t, "mart_rolling_7d 2026-03-30"), "%s", t);
	free(t);
	plan_free(&p);
	/* fct 04-05, the last day of the week straddling March and April,
	 * lands on 04-06 03:00: that week, then March (closed) waiting for
	 * it; April (open) is left out */
	plan_at(&p, fct, "2026-04-05", "2026-04-05", "2026-04-06 03:00:00",
		"");
	t = render(&p);
	ck_assert_msg(has_line(t, "weekly 2026-03-30 <- fct 2026-04-05"),
		      "%s", t);
	ck_assert_msg(has_line(t, "monthly 2026-03-01 <- weekly 2026-03-30"),
		      "%s", t);
	ck_assert_msg(!has_item(t, "monthly 2026-04-01"), "%s", t);
	free(t);
	plan_free(&p);
}
END_TEST

/* The boundary is the interval's end: one second before Monday 00:00
 * the week is open, at 00:00 it has closed. */
START_TEST(closes_at_its_end)
{
	struct plan p;
	char *t;

	plan_at(&p, fct, "2026-03-29", "2026-03-29", "2026-03-29 23:59:59",
		"");
	t = render(&p);
	ck_assert_msg(!has_item(t, "weekly 2026-03-23"), "%s", t);
	ck_assert_msg(!has_item(t, "mart_rolling_7d 2026-03-29"), "%s", t);
	free(t);
	plan_free(&p);
	plan_at(&p, fct, "2026-03-29", "2026-03-29", "2026-03-30 00:00:00",
		"");
	t = render(&p);
	ck_assert_msg(has_item(t, "weekly 2026-03-23"), "%s", t);
	ck_assert_msg(has_item(t, "mart_rolling_7d 2026-03-29"), "%s", t);
	ck_assert_msg(!has_item(t, "mart_rolling_7d 2026-03-30"), "%s", t);
	free(t);
	plan_free(&p);
}
END_TEST

/* A repair of the running total's own 2026-03-20 on 03-26 03:00, built to
 * 03-28: its cascade runs to 03-25 and leaves 03-26..28 out; the
 * request's own day is kept whatever the clock (backfill refuses an open
 * one before planning: nroot is never taken out). */
START_TEST(cascade_stops_at_closed)
{
	struct plan p;
	char *t;

	plan_at(&p, rtd, "2026-03-20", "2026-03-20", "2026-03-26 03:00:00",
		"2026-03-28");
	t = render(&p);
	ck_assert_str_eq(t, "rtd 2026-03-20\n"
			 "rtd 2026-03-21 <- rtd 2026-03-20\n"
			 "rtd 2026-03-22 <- rtd 2026-03-21\n"
			 "rtd 2026-03-23 <- rtd 2026-03-22\n"
			 "rtd 2026-03-24 <- rtd 2026-03-23\n"
			 "rtd 2026-03-25 <- rtd 2026-03-24\n");
	ck_assert_uint_eq(p.nopen, 3);
	free(t);
	plan_free(&p);

	plan_at(&p, rtd, "2026-03-20", "2026-03-20", "2026-03-19 00:00:00",
		"");
	ck_assert_uint_eq(p.n, 1);
	ck_assert_uint_eq(p.nroot, 1);
	ck_assert_uint_eq(p.nopen, 0);
	plan_free(&p);
}
END_TEST

/* Long after: nothing is open, nothing is left out; the plan is the one
 * plan_expand_built makes (build_future's plan). */
START_TEST(all_closed_unchanged)
{
	struct plan p, q;
	char *t, *u;

	plan_at(&p, fct, "2026-03-25", "2026-03-31", "2026-06-01 00:00:00",
		"2026-04-05");
	plan_init(&q);
	for (part_t d = day_of("2026-03-25"); d <= day_of("2026-03-31"); d++)
		plan_add_root(&q, fct, d);
	{
		struct plan_built *b = calloc(cfg->njobs, sizeof *b);

		b[rtd] = (struct plan_built){ true, day_of("2026-04-05") };
		plan_expand_built(&q, cfg, false, NULL, b);
		free(b);
	}
	t = render(&p);
	u = render(&q);
	ck_assert_str_eq(t, u);
	ck_assert_uint_eq(p.nopen, 0);
	ck_assert_uint_eq(p.ndeps, q.ndeps);
	free(t);
	free(u);
	plan_free(&p);
	plan_free(&q);
}
END_TEST

/* The key of job name's partition holding date ymd. */
static part_t
part_of(const char *name, const char *ymd)
{
	char t[32];

	snprintf(t, sizeof t, "%s 12:00:00", ymd);
	return cal_part_of(job_cal(&cfg->jobs[config_job_index(cfg, name)]),
			   at(t));
}

/* schedule_inputs_due: when the landing that plans a partition comes
 * (until then one never built is not stale): the fact's day at its due
 * time (end + 3h), the week and the rolling mart's day at that of the
 * fact day holding their last instant, March read from weeks at that of
 * the week holding 03-31 (its Sunday 04-05), a week past its input's end
 * at its own end (the input's last day, 03-25, came due before), the
 * whole table never (0). */
START_TEST(inputs_due)
{
	struct {
		const char *job, *part, *due;
	} cases[] = {
		{"fct", "2026-03-29", "2026-03-30 03:00:00"},
		{"weekly", "2026-03-25", "2026-03-30 03:00:00"},
		{"mart_rolling_7d", "2026-04-05", "2026-04-06 03:00:00"},
		{"monthly", "2026-03-10", "2026-04-06 03:00:00"},
		{"wkday", "2026-03-23", "2026-03-30 03:00:00"},
		{"rtd", "2026-03-25", "2026-03-26 03:00:00"},
		{"ended_weekly", "2026-03-23", "2026-03-30 00:00:00"},
		{"ended", "2026-03-20", "2026-03-21 03:00:00"},
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		ck_assert_msg(schedule_inputs_due(cfg, config_job_index(cfg,
				cases[i].job), part_of(cases[i].job,
				cases[i].part)) == at(cases[i].due),
			      "%s %s", cases[i].job, cases[i].part);
	ck_assert_int_eq(schedule_inputs_due(cfg, config_job_index(cfg,
			 "lifetime"), 0), 0);
}
END_TEST

/* schedule_last_closed_all: each job's newest closed partition (the
 * whole table's one, 0, always). */
START_TEST(last_closed_all)
{
	part_t *c = calloc(cfg->njobs, sizeof *c);

	schedule_last_closed_all(cfg, at("2026-04-01 03:00:00"), c);
	ck_assert_int_eq(c[fct], day_of("2026-03-31"));
	ck_assert_int_eq(c[config_job_index(cfg, "weekly")],
			 cal_part_of(&cal_utc[GRAIN_WEEK], at("2026-03-29 "
							      "12:00:00")));
	ck_assert_int_eq(c[config_job_index(cfg, "lifetime")], 0);
	free(c);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("plan_open");
	TCase *tc = tcase_create("open");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, catchup_leaves_out_open);
	tcase_add_test(tc, mid_week_leaves_week);
	tcase_add_test(tc, last_day_builds_week);
	tcase_add_test(tc, closes_at_its_end);
	tcase_add_test(tc, cascade_stops_at_closed);
	tcase_add_test(tc, all_closed_unchanged);
	tcase_add_test(tc, last_closed_all);
	tcase_add_test(tc, inputs_due);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
