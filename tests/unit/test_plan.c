/*
 * test_plan.c - the downstream planner: which downstream partitions a set
 * of partitions feeds, each once, in run order, with what it waits for.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "config.h"
#include "plan.h"
#include "plan_fixture.h"

static const char chain_yaml[] =
	"state_db: s.db\n"
	"socket: s.sock\n"
	"warehouses:\n"
	"  - {name: w, sqlite: w.db}\n"
	"jobs:\n"
	"  - {name: raw_hourly, warehouse: w, partition: hour, sql: SELECT 1}\n"
	"  - {name: fct, warehouse: w, partition: day, upstream: [raw_hourly], sql: SELECT 1}\n"
	"  - {name: weekly, warehouse: w, partition: week, upstream: [fct], sql: SELECT 1}\n"
	"  - {name: monthly, warehouse: w, partition: month, upstream: [weekly], sql: SELECT 1}\n"
	"  - {name: other, warehouse: w, partition: day, sql: SELECT 1}\n";

static struct config *cfg;

static void
setup(void)
{
	cfg = fixture_config("/tmp/plan.yaml", chain_yaml);
}

static void
teardown(void)
{
	config_unref(cfg);
}

/* Key of a plan item. */
static const char *
key_of(const struct plan *p, size_t i)
{
	static char buf[CAL_KEY_MAX];

	cal_key(&cfg->jobs[p->items[i].job].cal, p->items[i].part, buf);
	return buf;
}

/* Name of a plan item's job. */
static const char *
job_of(const struct plan *p, size_t i)
{
	return cfg->jobs[p->items[i].job].name;
}

/* The lesson's manifest 2026-02-08..12 straddles two ISO weeks: fct days,
 * then weeks 2026-02-02 (waiting for 02-08) and 2026-02-09 (02-09..12),
 * then February once, waiting for both weeks. */
START_TEST(lesson_window)
{
	struct plan p;
	int fct = config_job_index(cfg, "fct");

	plan_init(&p);
	for (part_t d = day_of("2026-02-08"); d <= day_of("2026-02-12"); d++)
		plan_add_root(&p, fct, d);
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.nroot, 5);
	ck_assert_uint_eq(p.n, 8);
	ck_assert_str_eq(job_of(&p, 5), "weekly");
	ck_assert_str_eq(key_of(&p, 5), "2026-02-02");
	ck_assert_uint_eq(p.items[5].ndeps, 1);
	ck_assert_uint_eq(p.deps[p.items[5].dep_off], 0);
	ck_assert_str_eq(key_of(&p, 6), "2026-02-09");
	ck_assert_uint_eq(p.items[6].ndeps, 4);
	for (size_t k = 0; k < 4; k++)
		ck_assert_uint_eq(p.deps[p.items[6].dep_off + k], 1 + k);
	ck_assert_str_eq(job_of(&p, 7), "monthly");
	ck_assert_str_eq(key_of(&p, 7), "2026-02-01");
	ck_assert_uint_eq(p.items[7].ndeps, 2);
	ck_assert_uint_eq(p.deps[p.items[7].dep_off], 5);
	ck_assert_uint_eq(p.deps[p.items[7].dep_off + 1], 6);
	plan_free(&p);
}
END_TEST

/* A week straddling a month end feeds both months. */
START_TEST(week_straddles_months)
{
	struct plan p;
	int fct = config_job_index(cfg, "fct");

	plan_init(&p);
	plan_add_root(&p, fct, day_of("2026-03-31"));
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.n, 4);
	ck_assert_str_eq(key_of(&p, 1), "2026-03-30");
	ck_assert_str_eq(key_of(&p, 2), "2026-03-01");
	ck_assert_str_eq(key_of(&p, 3), "2026-04-01");
	ck_assert_uint_eq(p.deps[p.items[3].dep_off], 1);
	plan_free(&p);
}
END_TEST

/* Hours map to their day, the day to its ISO week 53 and month; the whole
 * chain is followed; each downstream partition appears once. */
START_TEST(hours_chain_week53)
{
	struct plan p;
	int raw = config_job_index(cfg, "raw_hourly");
	int64_t h;

	plan_init(&p);
	ck_assert_int_eq(cal_parse_hour("2026-12-31T22", &h, NULL), 0);
	plan_add_root(&p, raw, h);
	plan_add_root(&p, raw, h + 1);
	plan_add_root(&p, raw, h + 2); /* 2027-01-01T00 */
	plan_expand(&p, cfg, false, NULL);
	/* 3 hours, days 12-31 and 01-01, week 2026-12-28 once, months Dec, Jan */
	ck_assert_uint_eq(p.n, 3 + 2 + 1 + 2);
	ck_assert_str_eq(key_of(&p, 3), "2026-12-31");
	ck_assert_uint_eq(p.items[3].ndeps, 2);
	ck_assert_str_eq(key_of(&p, 4), "2027-01-01");
	ck_assert_uint_eq(p.items[4].ndeps, 1);
	ck_assert_str_eq(key_of(&p, 5), "2026-12-28");
	ck_assert_uint_eq(p.items[5].ndeps, 2);
	ck_assert_str_eq(key_of(&p, 6), "2026-12-01");
	ck_assert_str_eq(key_of(&p, 7), "2027-01-01");
	ck_assert_str_eq(job_of(&p, 7), "monthly");
	plan_free(&p);
}
END_TEST

static const char rollup_yaml[] =
	"jobs:\n"
	"  - {name: fct, partition: day, command: [x]}\n"
	"  - {name: quarterly, partition: quarter, upstream: [fct], command: [x]}\n"
	"  - {name: yearly, partition: year, upstream: [quarterly], command: [x]}\n";

static void
rollup_setup(void)
{
	cfg = fixture_config("/tmp/plan.yaml", rollup_yaml);
}

/* Days across a quarter end and a year end: each quarter once, waiting
 * for its days, each year once, waiting for its quarters. */
START_TEST(quarter_year_rollups)
{
	struct plan p;
	int fct = config_job_index(cfg, "fct");

	plan_init(&p);
	plan_add_root(&p, fct, day_of("2023-03-31"));
	plan_add_root(&p, fct, day_of("2023-04-01"));
	plan_add_root(&p, fct, day_of("2023-12-31"));
	plan_add_root(&p, fct, day_of("2024-01-01"));
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.n, 4 + 4 + 2);
	ck_assert_str_eq(job_of(&p, 4), "quarterly");
	ck_assert_str_eq(key_of(&p, 4), "2023-01-01");
	ck_assert_str_eq(key_of(&p, 5), "2023-04-01");
	ck_assert_str_eq(key_of(&p, 6), "2023-10-01");
	ck_assert_uint_eq(p.items[6].ndeps, 1);
	ck_assert_uint_eq(p.deps[p.items[6].dep_off], 2);
	ck_assert_str_eq(key_of(&p, 7), "2024-01-01");
	ck_assert_str_eq(job_of(&p, 8), "yearly");
	ck_assert_str_eq(key_of(&p, 8), "2023-01-01");
	ck_assert_uint_eq(p.items[8].ndeps, 3);
	ck_assert_str_eq(key_of(&p, 9), "2024-01-01");
	ck_assert_uint_eq(p.items[9].ndeps, 1);
	ck_assert_uint_eq(p.deps[p.items[9].dep_off], 7);
	plan_free(&p);
}
END_TEST

static const char sunday_yaml[] =
	"jobs:\n"
	"  - {name: fct, partition: day, command: [x]}\n"
	"  - {name: retail, partition: week, week_start: sunday, upstream: [fct], command: [x]}\n"
	"  - {name: monthly, partition: month, upstream: [retail], command: [x]}\n";

/* Sunday weeks (US retail): a Saturday closes its week, a Sunday opens
 * the next one; the week of 2024-03-31 straddles March and April and
 * feeds both months. */
static void
sunday_setup(void)
{
	cfg = fixture_config("/tmp/plan.yaml", sunday_yaml);
}

START_TEST(sunday_weeks)
{
	struct plan p;

	plan_init(&p);
	plan_add_root(&p, 0, day_of("2024-03-30"));
	plan_add_root(&p, 0, day_of("2024-03-31"));
	plan_add_root(&p, 0, day_of("2024-04-06"));
	plan_add_root(&p, 0, day_of("2024-04-07"));
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.n, 4 + 3 + 2);
	ck_assert_str_eq(job_of(&p, 4), "retail");
	ck_assert_str_eq(key_of(&p, 4), "2024-03-24");
	ck_assert_uint_eq(p.items[4].ndeps, 1);
	ck_assert_str_eq(key_of(&p, 5), "2024-03-31");
	ck_assert_uint_eq(p.items[5].ndeps, 2);
	ck_assert_uint_eq(p.deps[p.items[5].dep_off], 1);
	ck_assert_uint_eq(p.deps[p.items[5].dep_off + 1], 2);
	ck_assert_str_eq(key_of(&p, 6), "2024-04-07");
	ck_assert_str_eq(job_of(&p, 7), "monthly");
	ck_assert_str_eq(key_of(&p, 7), "2024-03-01");
	ck_assert_str_eq(key_of(&p, 8), "2024-04-01");
	ck_assert_uint_eq(p.items[8].ndeps, 2);
	plan_free(&p);
}
END_TEST

/* --reverse orders downstream partitions newest first too. */
START_TEST(reverse_order)
{
	struct plan p;
	int fct = config_job_index(cfg, "fct");

	plan_init(&p);
	for (part_t d = day_of("2026-02-16"); d >= day_of("2026-02-01"); d--)
		plan_add_root(&p, fct, d);
	plan_expand(&p, cfg, true, NULL);
	ck_assert_str_eq(key_of(&p, 16), "2026-02-16");
	ck_assert_str_eq(key_of(&p, 17), "2026-02-09");
	ck_assert_str_eq(key_of(&p, 18), "2026-02-02");
	ck_assert_str_eq(key_of(&p, 19), "2026-01-26");
	/* week 2026-01-26 straddles January and February: both months,
	 * newest first */
	ck_assert_str_eq(key_of(&p, 20), "2026-02-01");
	ck_assert_str_eq(key_of(&p, 21), "2026-01-01");
	ck_assert_uint_eq(p.n, 22);
	plan_free(&p);
}
END_TEST

/* A job nobody depends on plans only itself. */
START_TEST(no_downstream_jobs)
{
	struct plan p;

	plan_init(&p);
	plan_add_root(&p, config_job_index(cfg, "other"),
				       day_of("2026-02-08"));
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.n, 1);
	ck_assert_uint_eq(p.items[0].ndeps, 0);
	plan_free(&p);
}
END_TEST

/* ---- narrowing (backfill --downstream) --------------------------------- */

/* fct feeds weekly and monthly; weekly feeds rollup; audit is fed by both
 * monthly and weekly; side is fed by fct only through nothing (its own). */
static const char fan_yaml[] =
	"state_db: s.db\n"
	"socket: s.sock\n"
	"warehouses:\n"
	"  - {name: w, sqlite: w.db}\n"
	"jobs:\n"
	"  - {name: fct, warehouse: w, partition: day, sql: SELECT 1}\n"
	"  - {name: weekly, warehouse: w, partition: week, upstream: [fct], sql: SELECT 1}\n"
	"  - {name: monthly, warehouse: w, partition: month, upstream: [fct], sql: SELECT 1}\n"
	"  - {name: rollup, warehouse: w, partition: month, upstream: [weekly], sql: SELECT 1}\n"
	"  - {name: audit, warehouse: w, partition: month, upstream: [monthly, weekly], sql: SELECT 1}\n"
	"  - {name: side, warehouse: w, partition: day, sql: SELECT 1}\n";

static struct config *fan;

static void
fan_setup(void)
{
	fan = fixture_config("/tmp/fan.yaml", fan_yaml);
}

static void
fan_teardown(void)
{
	config_unref(fan);
}

/* Plan fct 2026-02-09..10 with --downstream `list`; the jobs planned, in
 * plan order, one name each, comma separated, into out. */
static void
fan_plan(const char *list, char *out, size_t size)
{
	struct plan p;
	struct err err;
	bool keep[16];
	int fct = config_job_index(fan, "fct");
	size_t len = 0;

	ck_assert_int_eq(plan_select_downstream(fan, fct, list, keep, &err), 0);
	plan_init(&p);
	for (part_t d = day_of("2026-02-09"); d <= day_of("2026-02-10"); d++)
		plan_add_root(&p, fct, d);
	plan_expand(&p, fan, false, keep);
	out[0] = '\0';
	for (size_t i = p.nroot; i < p.n; i++) {
		const char *name = fan->jobs[p.items[i].job].name;

		if (i > p.nroot && p.items[i].job == p.items[i - 1].job)
			continue;
		len += (size_t)snprintf(out + len, size - len, "%s%s",
					len ? "," : "", name);
	}
	plan_free(&p);
}

/* Only the jobs named, and what a named job feeds. */
START_TEST(narrow_keeps_named_and_their_chain)
{
	char got[256];

	fan_plan("weekly", got, sizeof got);
	ck_assert_str_eq(got, "weekly,rollup,audit");
	fan_plan("monthly", got, sizeof got);
	ck_assert_str_eq(got, "monthly,audit");
	fan_plan("monthly,weekly", got, sizeof got);
	ck_assert_str_eq(got, "weekly,monthly,rollup,audit");
	fan_plan("weekly,rollup", got, sizeof got);
	ck_assert_str_eq(got, "weekly,rollup,audit");
}
END_TEST

/* The week keeps its inputs: it waits for both days. */
START_TEST(narrow_items_wait_for_inputs)
{
	struct plan p;
	struct err err;
	bool keep[16];
	int fct = config_job_index(fan, "fct");

	ck_assert_int_eq(plan_select_downstream(fan, fct, "weekly", keep, &err), 0);
	plan_init(&p);
	plan_add_root(&p, fct, day_of("2026-02-09"));
	plan_add_root(&p, fct, day_of("2026-02-10"));
	plan_expand(&p, fan, false, keep);
	ck_assert_uint_eq(p.n, 5); /* 2 days, the week, rollup Feb, audit Feb */
	ck_assert_str_eq(fan->jobs[p.items[2].job].name, "weekly");
	ck_assert_uint_eq(p.items[2].ndeps, 2);
	ck_assert_str_eq(fan->jobs[p.items[4].job].name, "audit");
	ck_assert_uint_eq(p.items[4].ndeps, 1); /* the week; monthly left out */
	plan_free(&p);
}
END_TEST

/* Unknown, not downstream, itself, empty names: refused, named. */
START_TEST(narrow_refusals)
{
	struct err err;
	bool keep[16];
	int fct = config_job_index(fan, "fct");
	int weekly = config_job_index(fan, "weekly");

	ck_assert_int_eq(plan_select_downstream(fan, fct, "nope", keep, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "unknown job \"nope\""));
	ck_assert_ptr_nonnull(strstr(err.msg, "weekly, monthly, rollup, audit"));
	ck_assert_int_eq(plan_select_downstream(fan, fct, "weekly,side", keep,
						&err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "side is not downstream of fct"));
	ck_assert_int_eq(plan_select_downstream(fan, fct, "fct", keep, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "fct is not downstream of fct"));
	ck_assert_int_eq(plan_select_downstream(fan, weekly, "monthly", keep,
						&err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "its downstream jobs are rollup, audit"));
	ck_assert_int_eq(plan_select_downstream(fan, fct, "weekly,", keep, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "empty name"));
	ck_assert_int_eq(plan_select_downstream(fan, config_job_index(fan, "side"),
						"weekly", keep, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "it has no downstream jobs"));
	/* a job further down, its feeders left out: nothing could feed it */
	ck_assert_int_eq(plan_select_downstream(fan, fct, "rollup", keep, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "rollup is fed by fct only through"
				     " jobs left out"));
}
END_TEST

/* The transitive downstream set. */
START_TEST(downstream_of_is_transitive)
{
	bool below[16];

	plan_downstream_of(fan, config_job_index(fan, "weekly"), below);
	ck_assert(!below[config_job_index(fan, "fct")]);
	ck_assert(!below[config_job_index(fan, "weekly")]);
	ck_assert(!below[config_job_index(fan, "monthly")]);
	ck_assert(below[config_job_index(fan, "rollup")]);
	ck_assert(below[config_job_index(fan, "audit")]);
	plan_downstream_of(fan, config_job_index(fan, "side"), below);
	for (size_t i = 0; i < fan->njobs; i++)
		ck_assert(!below[i]);
}
END_TEST

static const char coarser_yaml[] =
	"jobs:\n"
	"  - {name: fx, partition: month, command: [x]}\n"
	"  - {name: fct, partition: day, command: [x]}\n"
	"  - {name: eur, partition: day, upstream: [fct, fx], max_backfill: 28,\n"
	"     command: [x]}\n"
	"  - {name: eur_weekly, partition: week, upstream: [eur], command: [x]}\n";

static void
coarser_setup(void)
{
	cfg = fixture_config("/tmp/plan.yaml", coarser_yaml);
}

/* A coarser upstream: February's rate rebuilds February's 28 days of the
 * EUR table, each once, each waiting for the month; their weeks follow. */
START_TEST(coarser_upstream)
{
	struct plan p;
	struct err err;
	int fx = config_job_index(cfg, "fx");

	plan_init(&p);
	plan_add_root(&p, fx, (2026 - 1970) * 12 + 1);
	plan_expand(&p, cfg, false, NULL);
	/* 28 days, then the ISO weeks 2026-01-26 .. 2026-02-23 (5) */
	ck_assert_uint_eq(p.n, 1 + 28 + 5);
	for (size_t i = 1; i <= 28; i++) {
		ck_assert_str_eq(job_of(&p, i), "eur");
		ck_assert_uint_eq(p.items[i].ndeps, 1);
		ck_assert_uint_eq(p.deps[p.items[i].dep_off], 0);
	}
	ck_assert_str_eq(key_of(&p, 1), "2026-02-01");
	ck_assert_str_eq(key_of(&p, 28), "2026-02-28");
	ck_assert_str_eq(job_of(&p, 29), "eur_weekly");
	ck_assert_str_eq(key_of(&p, 29), "2026-01-26");
	ck_assert_uint_eq(p.items[29].ndeps, 1);  /* Feb 1 only */
	ck_assert_uint_eq(p.items[30].ndeps, 7);
	ck_assert_int_eq(plan_check_bounds(&p, cfg, &err), 0);
	plan_free(&p);

	/* January's 31 days are above eur's max_backfill of 28: refused */
	plan_init(&p);
	plan_add_root(&p, fx, (2026 - 1970) * 12);
	plan_expand(&p, cfg, false, NULL);
	ck_assert_int_eq(plan_check_bounds(&p, cfg, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, "refused: the request rebuilds 31 partitions"
			 " of eur downstream, above its max_backfill of 28;"
			 " nothing was queued. Split the request, or raise"
			 " eur's max_backfill");
	plan_free(&p);
}
END_TEST

static const char window_yaml[] =
	"jobs:\n"
	"  - {name: fct, partition: day, command: [x]}\n"
	"  - {name: mart_rolling_7d, partition: day, max_backfill: 10,\n"
	"     upstream: [{job: fct, lookback: 6}], command: [x]}\n";

static void
window_setup(void)
{
	cfg = fixture_config("/tmp/plan.yaml", window_yaml);
}

/* A rolling 7-day mart: a repair of 2026-02-08..12 rebuilds 02-08..18,
 * each once, each waiting for the repaired days in its window. */
START_TEST(rolling_window)
{
	struct plan p;
	struct err err;
	int fct = config_job_index(cfg, "fct");

	plan_init(&p);
	for (part_t d = day_of("2026-02-08"); d <= day_of("2026-02-12"); d++)
		plan_add_root(&p, fct, d);
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.n, 5 + 11);
	ck_assert_str_eq(key_of(&p, 5), "2026-02-08");
	ck_assert_str_eq(key_of(&p, 15), "2026-02-18");
	ck_assert_uint_eq(p.items[5].ndeps, 1);   /* 02-08 */
	ck_assert_uint_eq(p.items[9].ndeps, 5);   /* 02-12: 02-08..12 */
	ck_assert_uint_eq(p.items[11].ndeps, 5);  /* 02-14: 02-08..12 */
	ck_assert_uint_eq(p.items[12].ndeps, 4);  /* 02-15: 02-09..12 */
	ck_assert_uint_eq(p.items[15].ndeps, 1);  /* 02-18: 02-12 */
	ck_assert_uint_eq(p.deps[p.items[15].dep_off], 4);
	/* 11 partitions of the mart, above its max_backfill of 10 */
	ck_assert_int_eq(plan_check_bounds(&p, cfg, &err), -1);
	ck_assert_str_eq(err.msg, "refused: the request rebuilds 11 partitions"
			 " of mart_rolling_7d downstream, above its"
			 " max_backfill of 10; nothing was queued. Split the"
			 " request, or raise mart_rolling_7d's max_backfill");
	plan_free(&p);
}
END_TEST

static const char whole_yaml[] =
	"jobs:\n"
	"  - {name: fct, partition: day, command: [x]}\n"
	"  - {name: fx, partition: month, command: [x]}\n"
	"  - {name: store_lifetime, partition: none, max_backfill: 1,\n"
	"     upstream: [fct, fx], command: [x]}\n";

static void
whole_setup(void)
{
	cfg = fixture_config("/tmp/plan.yaml", whole_yaml);
}

/* partition: none: a repair of 2 days and a month rebuilds the whole table
 * once, keyed -, last, waiting for all three; it counts 1 against its
 * max_backfill of 1. */
START_TEST(whole_table)
{
	struct plan p;
	struct err err;
	int fct = config_job_index(cfg, "fct");
	part_t m;

	plan_init(&p);
	plan_add_root(&p, fct, day_of("2026-02-08"));
	plan_add_root(&p, fct, day_of("2026-02-09"));
	ck_assert_int_eq(cal_parse_key(&cfg->jobs[1].cal, "2026-02-01", &m,
				       NULL), 0);
	plan_add_root(&p, 1, m);
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.n, 4);
	ck_assert_str_eq(job_of(&p, 3), "store_lifetime");
	ck_assert_str_eq(key_of(&p, 3), "-");
	ck_assert_uint_eq(p.items[3].ndeps, 3);
	for (size_t k = 0; k < 3; k++)
		ck_assert_uint_eq(p.deps[p.items[3].dep_off + k], k);
	ck_assert_int_eq(plan_check_bounds(&p, cfg, &err), 0);
	plan_free(&p);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");
	TCase *tn = tcase_create("narrow");
	TCase *tr = tcase_create("rollups");
	TCase *tw = tcase_create("sunday");
	TCase *tx = tcase_create("coarser");
	TCase *tl = tcase_create("window");
	TCase *tz = tcase_create("whole");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, lesson_window);
	tcase_add_test(tc, week_straddles_months);
	tcase_add_test(tc, hours_chain_week53);
	tcase_add_test(tc, reverse_order);
	tcase_add_test(tc, no_downstream_jobs);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tn, fan_setup, fan_teardown);
	tcase_add_test(tn, narrow_keeps_named_and_their_chain);
	tcase_add_test(tn, narrow_items_wait_for_inputs);
	tcase_add_test(tn, narrow_refusals);
	tcase_add_test(tn, downstream_of_is_transitive);
	suite_add_tcase(s, tn);
	tcase_add_checked_fixture(tr, rollup_setup, teardown);
	tcase_add_test(tr, quarter_year_rollups);
	suite_add_tcase(s, tr);
	tcase_add_checked_fixture(tw, sunday_setup, teardown);
	tcase_add_test(tw, sunday_weeks);
	suite_add_tcase(s, tw);
	tcase_add_checked_fixture(tx, coarser_setup, teardown);
	tcase_add_test(tx, coarser_upstream);
	suite_add_tcase(s, tx);
	tcase_add_checked_fixture(tl, window_setup, teardown);
	tcase_add_test(tl, rolling_window);
	suite_add_tcase(s, tl);
	tcase_add_checked_fixture(tz, whole_setup, teardown);
	tcase_add_test(tz, whole_table);
	suite_add_tcase(s, tz);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
