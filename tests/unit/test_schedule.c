/*
 * test_schedule.c - the clock schedule's decisions (schedule.c), one
 * table row per case: what is due, catchup materialised, skipped or
 * refused over max_catchup, a refused gap kept until filled, ready_after,
 * end, a week straddling two months, a clock stepping back or jumping
 * forward, paused and resumed jobs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "tz.h"

/* A clock job: grain, start, end ("" none), ready_after (s), catchup,
 * max_catchup, max_backfill. */
struct jobspec {
	enum grain grain;
	const char *start, *end;
	int64_t ready_after;
	bool catchup;
	int max_catchup, max_backfill;
};

/* The job's state: watermark ("" none), catchup, refused gap, paused. */
struct statespec {
	const char *watermark, *catchup, *gap_from, *gap_to;
	bool paused;
};

struct scase {
	const char *name;
	struct jobspec job;
	struct statespec st;
	bool resumed;
	const char *now; /* YYYY-MM-DD HH:MM, UTC */
	enum schedule_action action;
	const char *first, *last; /* keys, when something is newly due */
	const char *piece;	  /* refused: the first piece's last key */
	bool save;
	struct statespec want; /* the state once applied */
	const char *next_due;  /* YYYY-MM-DD HH:MM, or NULL for none */
};

/* clang-format off */
#define DAILY(start, catchup, maxc) \
	{ GRAIN_DAY, start, "", 0, catchup, maxc, 100 }

static const struct scase cases[] = {
	{ "nothing due before the first partition ends",
	  DAILY("2026-03-01", true, 10), { "", "", "", "", false }, false,
	  "2026-03-01 12:00", SCHEDULE_NOTHING, NULL, NULL, NULL, true,
	  { "", "ok", "", "", false }, "2026-03-02 00:00" },
	{ "one newly due partition runs",
	  DAILY("2026-03-01", true, 10), { "2026-03-01", "ok", "", "", false },
	  false, "2026-03-03 00:30", SCHEDULE_RUN, "2026-03-02", "2026-03-02",
	  NULL, true, { "2026-03-02", "ok", "", "", false }, "2026-03-04 00:00" },
	{ "the first partition runs at start",
	  DAILY("2026-03-01", true, 10), { "", "", "", "", false }, false,
	  "2026-03-02 00:00", SCHEDULE_RUN, "2026-03-01", "2026-03-01", NULL,
	  true, { "2026-03-01", "ok", "", "", false }, "2026-03-03 00:00" },
	{ "ready_after holds a partition back",
	  { GRAIN_DAY, "2026-03-01", "", 7200, true, 10, 100 },
	  { "2026-03-01", "ok", "", "", false }, false, "2026-03-03 01:00",
	  SCHEDULE_NOTHING, NULL, NULL, NULL, false,
	  { "2026-03-01", "ok", "", "", false }, "2026-03-03 02:00" },
	{ "a single partition runs even with catchup off",
	  DAILY("2026-03-01", false, 10), { "2026-03-01", "off", "", "", false },
	  false, "2026-03-03 00:00", SCHEDULE_RUN, "2026-03-02", "2026-03-02",
	  NULL, true, { "2026-03-02", "off", "", "", false }, "2026-03-04 00:00" },
	{ "a gap within max_catchup is caught up as one request",
	  DAILY("2026-03-01", true, 10), { "2026-03-01", "ok", "", "", false },
	  false, "2026-03-06 00:00", SCHEDULE_CATCHUP, "2026-03-02",
	  "2026-03-05", NULL, true, { "2026-03-05", "ok", "", "", false },
	  "2026-03-07 00:00" },
	{ "a gap of exactly max_catchup is caught up",
	  DAILY("2026-03-01", true, 4), { "2026-03-01", "ok", "", "", false },
	  false, "2026-03-06 00:00", SCHEDULE_CATCHUP, "2026-03-02",
	  "2026-03-05", NULL, true, { "2026-03-05", "ok", "", "", false },
	  "2026-03-07 00:00" },
	{ "catchup off skips the gap, runs the newest",
	  DAILY("2026-03-01", false, 10), { "2026-03-01", "off", "", "", false },
	  false, "2026-03-06 00:00", SCHEDULE_SKIP, "2026-03-02", "2026-03-05",
	  NULL, true, { "2026-03-05", "off", "", "", false }, "2026-03-07 00:00" },
	{ "a gap above max_catchup is refused, in pieces of max_backfill",
	  { GRAIN_DAY, "2026-03-01", "", 0, true, 3, 2 },
	  { "2026-03-01", "ok", "", "", false }, false, "2026-03-06 00:00",
	  SCHEDULE_REFUSE, "2026-03-02", "2026-03-05", "2026-03-03", true,
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false },
	  "2026-03-07 00:00" },
	{ "a refused gap stays shown while the schedule goes on",
	  DAILY("2026-03-01", true, 3),
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false }, false,
	  "2026-03-07 00:00", SCHEDULE_RUN, "2026-03-06", "2026-03-06", NULL,
	  true, { "2026-03-06", "refused", "2026-03-02", "2026-03-05", false },
	  "2026-03-08 00:00" },
	{ "a refused gap stays shown when nothing is due",
	  DAILY("2026-03-01", false, 3),
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false }, false,
	  "2026-03-06 00:00", SCHEDULE_NOTHING, NULL, NULL, NULL, false,
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false },
	  "2026-03-07 00:00" },
	{ "a refused gap stays through a catchup within max_catchup",
	  DAILY("2026-03-01", true, 3),
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false }, false,
	  "2026-03-08 00:00", SCHEDULE_CATCHUP, "2026-03-06", "2026-03-07",
	  NULL, true,
	  { "2026-03-07", "refused", "2026-03-02", "2026-03-05", false },
	  "2026-03-09 00:00" },
	{ "a refused gap stays through a skip (catchup off)",
	  DAILY("2026-03-01", false, 3),
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false }, false,
	  "2026-03-09 00:00", SCHEDULE_SKIP, "2026-03-06", "2026-03-08", NULL,
	  true, { "2026-03-08", "refused", "2026-03-02", "2026-03-05", false },
	  "2026-03-10 00:00" },
	{ "a gap refused while one is unfilled extends it",
	  DAILY("2026-03-01", true, 3),
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false }, false,
	  "2026-03-11 00:00", SCHEDULE_REFUSE, "2026-03-06", "2026-03-10",
	  "2026-03-10", true,
	  { "2026-03-10", "refused", "2026-03-02", "2026-03-10", false },
	  "2026-03-12 00:00" },
	{ "a clock stepping back re-runs nothing",
	  DAILY("2026-03-01", true, 10), { "2026-03-10", "ok", "", "", false },
	  false, "2026-03-05 00:00", SCHEDULE_NOTHING, NULL, NULL, NULL, false,
	  { "2026-03-10", "ok", "", "", false }, "2026-03-12 00:00" },
	{ "a clock jumping forward finds a gap (refused, catchup on)",
	  DAILY("2026-03-01", true, 10), { "2026-03-01", "ok", "", "", false },
	  false, "2026-04-01 00:00", SCHEDULE_REFUSE, "2026-03-02", "2026-03-31",
	  "2026-03-31", true,
	  { "2026-03-31", "refused", "2026-03-02", "2026-03-31", false },
	  "2026-04-02 00:00" },
	{ "a clock jumping forward finds a gap (skipped, catchup off)",
	  DAILY("2026-03-01", false, 10), { "2026-03-01", "off", "", "", false },
	  false, "2026-04-01 00:00", SCHEDULE_SKIP, "2026-03-02", "2026-03-31",
	  NULL, true, { "2026-03-31", "off", "", "", false }, "2026-04-02 00:00" },
	{ "a paused job materialises nothing and is not due",
	  DAILY("2026-03-01", true, 10), { "2026-03-01", "ok", "", "", true },
	  false, "2026-03-06 00:00", SCHEDULE_NOTHING, NULL, NULL, NULL, false,
	  { "2026-03-01", "ok", "", "", true }, NULL },
	{ "paused time is not missed time: resumed, catchup off",
	  DAILY("2026-03-01", false, 10), { "2026-03-01", "off", "", "", false },
	  true, "2026-03-06 00:00", SCHEDULE_CATCHUP, "2026-03-02",
	  "2026-03-05", NULL, true, { "2026-03-05", "off", "", "", false },
	  "2026-03-07 00:00" },
	{ "resumed above max_catchup: refused even with catchup off",
	  DAILY("2026-03-01", false, 3), { "2026-03-01", "off", "", "", false },
	  true, "2026-03-06 00:00", SCHEDULE_REFUSE, "2026-03-02", "2026-03-05",
	  "2026-03-05", true,
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false },
	  "2026-03-07 00:00" },
	{ "nothing past end, and then no next due",
	  { GRAIN_DAY, "2026-03-01", "2026-03-03", 0, true, 10, 100 },
	  { "2026-03-01", "ok", "", "", false }, false, "2026-03-10 00:00",
	  SCHEDULE_CATCHUP, "2026-03-02", "2026-03-03", NULL, true,
	  { "2026-03-03", "ok", "", "", false }, NULL },
	{ "a week straddling two months is one partition",
	  { GRAIN_WEEK, "2026-01-19", "", 0, true, 10, 100 },
	  { "2026-01-19", "ok", "", "", false }, false, "2026-02-02 00:00",
	  SCHEDULE_RUN, "2026-01-26", "2026-01-26", NULL, true,
	  { "2026-01-26", "ok", "", "", false }, "2026-02-09 00:00" },
	{ "a month comes due on the first of the next",
	  { GRAIN_MONTH, "2026-01-01", "", 0, true, 10, 100 },
	  { "2026-01-01", "ok", "", "", false }, false, "2026-03-01 00:00",
	  SCHEDULE_RUN, "2026-02-01", "2026-02-01", NULL, true,
	  { "2026-02-01", "ok", "", "", false }, "2026-04-01 00:00" },
	{ "an hour comes due at the next hour",
	  { GRAIN_HOUR, "2026-03-01", "", 0, true, 10, 100 },
	  { "2026-03-01T05", "ok", "", "", false }, false, "2026-03-01 07:00",
	  SCHEDULE_RUN, "2026-03-01T06", "2026-03-01T06", NULL, true,
	  { "2026-03-01T06", "ok", "", "", false }, "2026-03-01 08:00" },
	{ "catchup off shows off even with nothing due",
	  DAILY("2026-03-01", false, 10), { "", "", "", "", false }, false,
	  "2026-03-01 12:00", SCHEDULE_NOTHING, NULL, NULL, NULL, true,
	  { "", "off", "", "", false }, "2026-03-02 00:00" },
};

/* clang-format on */

/* Seconds of "YYYY-MM-DD HH:MM" (UTC). */
static int64_t
at(const char *s)
{
	int y, mo, d, h, mi;

	ck_assert_int_eq(sscanf(s, "%d-%d-%d %d:%d", &y, &mo, &d, &h, &mi), 5);
	return cal_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

/* A partition of grain g from its key. */
static part_t
part(enum grain g, const char *key)
{
	part_t p;
	struct err err;

	if (part_parse_key(g, key, &p, &err) < 0)
		ck_abort_msg("%s: %s", key, err.msg);
	return p;
}

/* A job definition from a row. */
static void
make_job(const struct jobspec *js, struct job_def *j)
{
	memset(j, 0, sizeof *j);
	j->name = "j";
	j->warehouse = -1;
	j->grain = js->grain;
	j->cal = cal_utc[js->grain];
	j->has_start = true;
	j->start = js->grain == GRAIN_HOUR ? part(GRAIN_DAY, js->start) * 24
					   : part(js->grain, js->start);
	j->has_end = js->end[0] != '\0';
	if (j->has_end)
		j->end = part(js->grain, js->end);
	j->ready_after = js->ready_after;
	j->catchup = js->catchup;
	j->max_catchup = js->max_catchup;
	j->max_backfill = js->max_backfill;
}

/* A job's state from a row. */
static void
make_state(const struct statespec *ss, struct store_job_state *st)
{
	memset(st, 0, sizeof *st);
	st->has_watermark = ss->watermark[0] != '\0';
	snprintf(st->watermark, sizeof st->watermark, "%s", ss->watermark);
	snprintf(st->catchup, sizeof st->catchup, "%s", ss->catchup);
	snprintf(st->gap_from, sizeof st->gap_from, "%s", ss->gap_from);
	snprintf(st->gap_to, sizeof st->gap_to, "%s", ss->gap_to);
	st->paused = ss->paused;
}

START_TEST(schedule_cases)
{
	const struct scase *c = &cases[_i];
	struct job_def j;
	struct store_job_state st, want;
	struct schedule_decision d;

	make_job(&c->job, &j);
	make_state(&c->st, &st);
	make_state(&c->want, &want);
	schedule_decide(&j, &st, c->resumed, at(c->now), &d);
	ck_assert_msg(d.action == c->action, "%s: action %d, want %d", c->name,
		      d.action, c->action);
	if (c->first != NULL) {
		ck_assert_int_eq(d.first, part(j.grain, c->first));
		ck_assert_int_eq(d.last, part(j.grain, c->last));
		ck_assert_int_eq(d.gap, d.last - d.first + 1);
	}
	if (c->piece != NULL)
		ck_assert_int_eq(d.piece, part(j.grain, c->piece));
	ck_assert_msg(d.save == c->save, "%s: save %d", c->name, d.save);
	ck_assert_str_eq(d.state.watermark, want.watermark);
	ck_assert_int_eq(d.state.has_watermark, want.has_watermark);
	ck_assert_str_eq(d.state.catchup, want.catchup);
	ck_assert_str_eq(d.state.gap_from, want.gap_from);
	ck_assert_str_eq(d.state.gap_to, want.gap_to);
	ck_assert_int_eq(d.has_next_due, c->next_due != NULL);
	if (c->next_due != NULL)
		ck_assert_int_eq(d.next_due, at(c->next_due));
}
END_TEST

/* ---- the refused gap, filled ------------------------------------------ */

/* clang-format off */
static const struct {
	const char *catchup, *gap_from, *gap_to, *key;
	bool covers;
} gap_cases[] = {
	{ "refused", "2026-03-02", "2026-03-05", "2026-03-02", true },
	{ "refused", "2026-03-02", "2026-03-05", "2026-03-05", true },
	{ "refused", "2026-03-02", "2026-03-05", "2026-03-01", false },
	{ "refused", "2026-03-02", "2026-03-05", "2026-03-06", false },
	{ "ok", "", "", "2026-03-03", false },
	{ "refused", "", "", "2026-03-03", false },
};

/* clang-format on */

START_TEST(schedule_gap_cases)
{
	struct jobspec js = DAILY("2026-03-01", true, 3);
	struct statespec ss = {"2026-03-05", gap_cases[_i].catchup,
			       gap_cases[_i].gap_from, gap_cases[_i].gap_to,
			       false};
	struct job_def j;
	struct store_job_state st;
	part_t from, to;

	make_job(&js, &j);
	make_state(&ss, &st);
	ck_assert_int_eq(
	    schedule_gap_covers(&j, &st, gap_cases[_i].key, &from, &to),
	    gap_cases[_i].covers);
	if (gap_cases[_i].covers) {
		ck_assert_int_eq(to - from + 1, 4);
		schedule_gap_clear(&j, &st);
		ck_assert_str_eq(st.catchup, "ok");
		ck_assert_str_eq(st.gap_from, "");
		ck_assert_str_eq(st.gap_to, "");
	}
}
END_TEST

/* ---- what status shows ------------------------------------------------ */

/* clang-format off */
static const struct {
	const char *name;
	bool clock, catchup;
	struct statespec st;
	const char *now;
	const char *shown;
	bool has_gap;
	const char *next_due;
} view_cases[] = {
	{ "refused with its gap", true, true,
	  { "2026-03-05", "refused", "2026-03-02", "2026-03-05", false },
	  "2026-03-06 00:00", "refused", true, "2026-03-07 00:00" },
	{ "catchup as configured", true, false,
	  { "2026-03-05", "ok", "", "", false }, "2026-03-06 00:00", "off",
	  false, "2026-03-07 00:00" },
	{ "behind: next due is after the newest due", true, true,
	  { "2026-03-01", "ok", "", "", false }, "2026-03-06 00:00", "ok",
	  false, "2026-03-07 00:00" },
	{ "no clock: off, never due", false, true,
	  { "", "", "", "", false }, "2026-03-06 00:00", "off", false, NULL },
};

/* clang-format on */

START_TEST(schedule_view_cases)
{
	struct jobspec js = DAILY("2026-03-01", view_cases[_i].catchup, 3);
	struct job_def j;
	struct store_job_state st;
	struct schedule_view v;

	make_job(&js, &j);
	j.has_start = view_cases[_i].clock;
	make_state(&view_cases[_i].st, &st);
	schedule_view(&j, &st, at(view_cases[_i].now), &v);
	ck_assert_str_eq(v.catchup, view_cases[_i].shown);
	ck_assert_int_eq(v.has_gap, view_cases[_i].has_gap);
	ck_assert_int_eq(v.has_next_due, view_cases[_i].next_due != NULL);
	if (view_cases[_i].next_due != NULL)
		ck_assert_int_eq(v.next_due, at(view_cases[_i].next_due));
}
END_TEST

/* Nothing before its time: the newest partition backfill may build
 * (closed) and mark may record (due), and the refusal's line. */
static const struct {
	enum grain grain;
	int64_t ready_after;
	const char *now;
	const char *closed, *due; /* keys */
	const char *open;	  /* the refused key */
	const char *closes, *comes_due;
} closed_cases[] = {
	{ GRAIN_DAY, 0, "2026-02-21 03:30", "2026-02-20", "2026-02-20",
	  "2026-02-21", "closes at 2026-02-22T00:00:00.000Z",
	  "comes due at 2026-02-22T00:00:00.000Z" },
	{ GRAIN_DAY, 6 * 3600, "2026-02-21 03:30", "2026-02-20", "2026-02-19",
	  "2026-02-20", NULL, "comes due at 2026-02-21T06:00:00.000Z" },
	{ GRAIN_DAY, 0, "2026-02-22 00:00", "2026-02-21", "2026-02-21",
	  "2027-02-10", "closes at 2027-02-11T00:00:00.000Z", NULL },
	{ GRAIN_HOUR, 0, "2026-02-21 03:30", "2026-02-21T02", "2026-02-21T02",
	  "2026-02-21T03", "closes at 2026-02-21T04:00:00.000Z", NULL },
	{ GRAIN_WEEK, 0, "2026-02-21 03:30", "2026-02-09", "2026-02-09",
	  "2026-02-16", "closes at 2026-02-23T00:00:00.000Z", NULL },
	{ GRAIN_MONTH, 3600, "2026-03-01 00:30", "2026-02-01", "2026-01-01",
	  "2026-03-01", "closes at 2026-04-01T00:00:00.000Z",
	  "comes due at 2026-04-01T01:00:00.000Z" },
};

START_TEST(schedule_closed_cases)
{
	struct jobspec js = { closed_cases[_i].grain, "2026-01-01", "",
			      closed_cases[_i].ready_after, true, 10, 100 };
	int64_t now = at(closed_cases[_i].now);
	enum grain g = closed_cases[_i].grain;
	part_t open = part(g, closed_cases[_i].open);
	struct job_def j;
	struct err err;

	if (g == GRAIN_WEEK)
		js.start = "2026-01-05";
	make_job(&js, &j);
	ck_assert_int_eq(schedule_last_closed(&j, false, now),
			 part(g, closed_cases[_i].closed));
	ck_assert_int_eq(schedule_last_closed(&j, true, now),
			 part(g, closed_cases[_i].due));
	ck_assert_int_gt(open, schedule_last_closed(&j,
			 closed_cases[_i].closes == NULL, now));
	if (closed_cases[_i].closes != NULL) {
		ck_assert_int_eq(schedule_refuse_open(&j, open, false,
				 "nothing was queued", &err), -1);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
		ck_assert_ptr_nonnull(strstr(err.msg, closed_cases[_i].closes));
		ck_assert_ptr_nonnull(strstr(err.msg, closed_cases[_i].open));
		ck_assert_ptr_nonnull(strstr(err.msg, "has not closed yet"));
		ck_assert_ptr_nonnull(strstr(err.msg, "nothing was queued"));
	}
	if (closed_cases[_i].comes_due != NULL) {
		ck_assert_int_eq(schedule_refuse_open(&j, open, true,
				 "nothing was marked", &err), -1);
		ck_assert_ptr_nonnull(strstr(err.msg,
					     closed_cases[_i].comes_due));
		ck_assert_ptr_nonnull(strstr(err.msg, "is not due yet"));
		ck_assert_ptr_nonnull(strstr(err.msg, "nothing was marked"));
	}
}
END_TEST

/* partition: none (issue 41): the whole table's one partition, -, spans
 * all time and never closes, yet may always be built and marked (a
 * backfill of it was refused as 'closes at 9999-12-31'). */
START_TEST(schedule_closed_none)
{
	static const char *const nows[] = { "1970-01-02 00:00",
		"2026-02-21 03:30", "9998-12-31 00:00" };
	struct job_def j;

	memset(&j, 0, sizeof j);
	j.name = "whole";
	j.warehouse = -1;
	j.grain = GRAIN_NONE;
	j.cal = cal_utc[GRAIN_NONE];
	j.ready_after = 6 * 3600;
	for (size_t i = 0; i < sizeof nows / sizeof nows[0]; i++) {
		ck_assert_int_eq(schedule_last_closed(&j, false, at(nows[i])), 0);
		ck_assert_int_eq(schedule_last_closed(&j, true, at(nows[i])), 0);
	}
}
END_TEST

/* A zone's calendar at grain g (the system's tzdata). */
static struct cal
zoned(const char *zone, enum grain g)
{
	struct cal c = { g, WEEK_MONDAY, NULL };
	struct tz *z = NULL;
	struct err err;

	if (tz_load(zone, &z, &err) != 0)
		ck_abort_msg("%s", err.msg);
	c.tz = z;
	return c;
}

/* UTC seconds of YYYY-MM-DD HH:MM:SS. */
static int64_t
at_s(const char *s)
{
	char date[11];
	int64_t d = 0;

	memcpy(date, s, 10);
	date[10] = '\0';
	ck_assert_int_eq(cal_parse_date(date, &d, NULL), 0);
	return d * 86400 + atoi(s + 11) * 3600 + atoi(s + 14) * 60 +
	       atoi(s + 17);
}

/* A Berlin day comes due at Berlin midnight: 22:00Z in summer, 23:00Z in
 * winter (zdump -v Europe/Berlin: CEST +2, CET +1), plus ready_after. */
START_TEST(schedule_zoned_due)
{
	struct cal c = zoned("Europe/Berlin", GRAIN_DAY);
	char key[CAL_KEY_MAX];
	part_t p;

	p = schedule_cal_last_due(&c, 0, at_s("2024-07-14 21:59:59"));
	cal_key(&c, p, key);
	ck_assert_str_eq(key, "2024-07-13");
	p = schedule_cal_last_due(&c, 0, at_s("2024-07-14 22:00:00"));
	cal_key(&c, p, key);
	ck_assert_str_eq(key, "2024-07-14");
	ck_assert_int_eq(schedule_cal_due_time(&c, 0, p),
			 at_s("2024-07-14 22:00:00"));
	p = schedule_cal_last_due(&c, 0, at_s("2024-01-14 22:59:59"));
	cal_key(&c, p, key);
	ck_assert_str_eq(key, "2024-01-13");
	p = schedule_cal_last_due(&c, 0, at_s("2024-01-14 23:00:00"));
	cal_key(&c, p, key);
	ck_assert_str_eq(key, "2024-01-14");
	ck_assert_int_eq(schedule_cal_due_time(&c, 3600, p),
			 at_s("2024-01-15 00:00:00"));
	/* the 25-hour day 2023-10-29 comes due at 23:00Z, 25 h after the
	 * day before it */
	p = schedule_cal_last_due(&c, 0, at_s("2023-10-29 23:00:00"));
	ck_assert_int_eq(schedule_cal_due_time(&c, 0, p) -
			 schedule_cal_due_time(&c, 0, p - 1), 25 * 3600);
	tz_unref((struct tz *)c.tz);
}
END_TEST

/* Catchup counts local partitions: a Chicago hourly job that missed
 * 2021-11-07 (midnight CDT = 05:00Z to midnight CST = 06:00Z next day)
 * has 25 partitions newly due; 2021-03-14 23. */
START_TEST(schedule_zoned_catchup_count)
{
	struct cal c = zoned("America/Chicago", GRAIN_HOUR);
	struct part_range gap;

	gap.first = schedule_cal_last_due(&c, 0, at_s("2021-11-07 05:00:00")) + 1;
	gap.last = schedule_cal_last_due(&c, 0, at_s("2021-11-08 06:00:00"));
	ck_assert_int_eq(range_count(&gap), 25);
	gap.first = schedule_cal_last_due(&c, 0, at_s("2021-03-14 06:00:00")) + 1;
	gap.last = schedule_cal_last_due(&c, 0, at_s("2021-03-15 05:00:00"));
	ck_assert_int_eq(range_count(&gap), 23);
	/* the same instants are 25 UTC hours too: counting is by instants */
	gap.first = schedule_last_due(GRAIN_HOUR, 0, at_s("2021-11-07 05:00:00"))
		    + 1;
	gap.last = schedule_last_due(GRAIN_HOUR, 0, at_s("2021-11-08 06:00:00"));
	ck_assert_int_eq(range_count(&gap), 25);
	tz_unref((struct tz *)c.tz);
}
END_TEST

static Suite *
schedule_suite(void)
{
	Suite *s = suite_create("schedule");
	TCase *tc = tcase_create("decisions");

	tcase_add_loop_test(tc, schedule_cases, 0,
			    (int)(sizeof cases / sizeof cases[0]));
	tcase_add_loop_test(tc, schedule_gap_cases, 0,
			    (int)(sizeof gap_cases / sizeof gap_cases[0]));
	tcase_add_loop_test(tc, schedule_view_cases, 0,
			    (int)(sizeof view_cases / sizeof view_cases[0]));
	tcase_add_loop_test(tc, schedule_closed_cases, 0,
			    (int)(sizeof closed_cases /
				  sizeof closed_cases[0]));
	tcase_add_test(tc, schedule_closed_none);
	suite_add_tcase(s, tc);

	tc = tcase_create("zoned");
	tcase_add_test(tc, schedule_zoned_due);
	tcase_add_test(tc, schedule_zoned_catchup_count);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(schedule_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
