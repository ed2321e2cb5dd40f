/*
 * test_budget.c - a backfill request's budget (daemon/lib/budget.c): the
 * budget from --budget and max_backfill_time, admission against the
 * estimate, the measured time and the stop at 1.5 times the budget, one
 * table of cases per rule.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"

/* Rule 1: --budget lowers max_backfill_time, never raises it. */
static const struct {
	int64_t max_s, asked_s;
	int rc;
	int64_t budget_s;
	const char *source;
} of_cases[] = {
	{ 0, 0, 0, 0, NULL },
	{ 3600, 0, 0, 3600, "max_backfill_time" },
	{ 0, 600, 0, 600, "--budget" },
	{ 3600, 600, 0, 600, "--budget" },
	{ 3600, 3600, 0, 3600, "--budget" },
	{ 3600, 3601, -1, 0, NULL },
	{ 7200, 86400, -1, 0, NULL },
};

START_TEST(test_of)
{
	int64_t b = -1;
	const char *src = "x";
	struct err err;
	int rc;

	rc = budget_of("fct", of_cases[_i].max_s, of_cases[_i].asked_s, &b,
		       &src, &err);
	ck_assert_int_eq(rc, of_cases[_i].rc);
	ck_assert_int_eq(b, of_cases[_i].budget_s);
	if (of_cases[_i].source == NULL)
		ck_assert_ptr_null(src);
	else
		ck_assert_str_eq(src, of_cases[_i].source);
	if (rc < 0)
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
}
END_TEST

START_TEST(test_of_message)
{
	int64_t b;
	const char *src;
	struct err err;

	ck_assert_int_eq(budget_of("fct", 7200, 86400, &b, &src, &err), -1);
	ck_assert_str_eq(err.msg, "--budget 1d is above fct's max_backfill_time"
			 " 2h: give at most 2h (a request's budget only lowers"
			 " its job's)");
}
END_TEST

/* Rule 2: refused only above the budget, and only with an estimate. */
static const struct {
	int64_t budget_s;
	bool has;
	double est_s;
	int rc;
} admit_cases[] = {
	{ 0, true, 1e9, 0 },       /* no budget */
	{ 3600, false, 0, 0 },     /* no history: admitted */
	{ 3600, true, 3599.9, 0 },
	{ 3600, true, 3600.0, 0 }, /* at the budget: admitted */
	{ 3600, true, 3600.5, -1 },
	{ 18000, true, 72000, -1 },
};

START_TEST(test_admit)
{
	struct err err;

	ck_assert_int_eq(budget_admit(admit_cases[_i].budget_s, "--budget",
				      admit_cases[_i].has,
				      admit_cases[_i].est_s, &err),
			 admit_cases[_i].rc);
}
END_TEST

START_TEST(test_admit_message)
{
	struct err err;

	ck_assert_int_eq(budget_admit(18000, "--budget", true, 72000, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, "refused: the estimated warehouse time 20h"
			 " (72000 s) is above the request's budget of 5h"
			 " (18000 s), from --budget; nothing was queued. Split"
			 " the request, or give it a larger budget (backfill"
			 " --dry-run shows the estimate)");
	ck_assert_int_eq(budget_admit(90, "max_backfill_time", true, 95.5,
				      &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "time 1m 35s (95 s) is above the"
				     " request's budget of 1m 30s (90 s), from"
				     " max_backfill_time;"));
	/* under a minute each figure once: no "1.4s (1 s) ... 1s (1 s)" */
	ck_assert_int_eq(budget_admit(1, "--budget", true, 1.4, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "time 1.4s is above the request's"
				     " budget of 1s, from --budget;"));
}
END_TEST

/* Rule 3: runs add up; a negative run adds nothing; no overflow. */
START_TEST(test_charge)
{
	ck_assert_int_eq(budget_charge(0, 1500), 1500);
	ck_assert_int_eq(budget_charge(1500, 0), 1500);
	ck_assert_int_eq(budget_charge(1500, -20), 1500);
	ck_assert_int_eq(budget_charge(INT64_MAX - 1, 5), INT64_MAX);
	ck_assert_int_eq(budget_charge(INT64_MAX, INT64_MAX), INT64_MAX);
}
END_TEST

/* Rule 4: the stop is strictly past 1.5 times the budget. */
static const struct {
	int64_t budget_ms, spent_ms;
	bool over;
} over_cases[] = {
	{ 0, INT64_MAX, false },          /* no budget */
	{ 3600000, 0, false },
	{ 3600000, 3600000, false },      /* at the budget */
	{ 3600000, 5400000, false },      /* exactly 1.5 times */
	{ 3600000, 5400001, true },
	{ 3600000, 7200000, true },
	{ 1, 1, false },
	{ 1, 2, true },                   /* 2 > 1.5 */
	{ 3, 4, false },                  /* 4 < 4.5 */
	{ 3, 5, true },
	{ INT64_MAX / 2, INT64_MAX, false }, /* no overflow either way */
	{ 1000, INT64_MAX, true },
};

START_TEST(test_over)
{
	ck_assert_int_eq(budget_over(over_cases[_i].budget_ms,
				     over_cases[_i].spent_ms),
			 over_cases[_i].over);
}
END_TEST

/* Rule 4: once, and only with something left to start. */
START_TEST(test_stop)
{
	ck_assert(budget_stop(1000, 1501, false, 3));
	ck_assert(!budget_stop(1000, 1500, false, 3)); /* not past 1.5 x */
	ck_assert(!budget_stop(1000, 9000, true, 3));  /* stopped already */
	ck_assert(!budget_stop(1000, 9000, false, 0)); /* nothing left */
	ck_assert(!budget_stop(0, 9000, false, 3));    /* no budget */
}
END_TEST

START_TEST(test_stop_note)
{
	char note[256];

	budget_stop_note(12, 3600000, 7200000, note, sizeof note);
	ck_assert_str_eq(note, "over budget: measured warehouse time 2h"
			 " (7200 s) passed 1.5 x the budget of 1h (3600 s);"
			 " backfillctl retry 12 resumes it");
	budget_stop_note(3, 2000, 3500, note, sizeof note);
	ck_assert_str_eq(note, "over budget: measured warehouse time 3.5s"
			 " passed 1.5 x the budget of 2s; backfillctl retry 3"
			 " resumes it");
}
END_TEST

/* One rounding rule: whole seconds rounded down, as the hook's. */
static const struct {
	double s;
	const char *want;
} duration_cases[] = {
	{ 0, "0s" },
	{ 2, "2s" },
	{ 16.8, "16.8s" },
	{ 59.5, "59.5s" },
	{ 60, "1m (60 s)" },
	{ 90, "1m 30s (90 s)" },
	{ 136.8, "2m 16s (136 s)" },
	{ 3599.9, "59m 59s (3599 s)" },
	{ 8160, "2h 16m (8160 s)" },
	{ 7230, "2h (7230 s)" },
	{ 9223372036854.775, "2562047788h (9223372036854 s)" },
};

START_TEST(test_duration)
{
	char out[48];

	budget_duration(duration_cases[_i].s, out, sizeof out);
	ck_assert_str_eq(out, duration_cases[_i].want);
}
END_TEST

/* Rule 1 for a plan: a budget applies to a plan with a SQL job. */
static const char plan_yaml[] =
	"state_db: s.db\n"
	"socket: s.sock\n"
	"warehouses:\n"
	"  - {name: w, sqlite: w.db}\n"
	"jobs:\n"
	"  - {name: cmd, partition: day, command: [/bin/true]}\n"
	"  - {name: cmd_down, partition: day, upstream: [cmd], command: [/bin/true]}\n"
	"  - {name: fct, partition: day, warehouse: w, sql: SELECT 1}\n"
	"  - {name: fct_down, partition: day, upstream: [cmd], warehouse: w, sql: SELECT 1}\n";

/* The plan of one day of job (and its downstream, unless none). */
static void
plan_of(const struct config *cfg, const char *job, bool down, struct plan *p)
{
	bool keep[8] = {false};

	plan_init(p);
	plan_add_root(p, config_job_index(cfg, job), 20500);
	plan_expand(p, cfg, false, down ? NULL : keep);
}

START_TEST(test_fit_plan)
{
	struct config *cfg;
	struct plan p;
	struct err err;
	int64_t b;
	const char *src;

	if (config_load_string("/tmp/budget.yaml", plan_yaml,
			       strlen(plan_yaml), &cfg, &err) < 0)
		ck_abort_msg("config: %s", err.msg);
	/* commands alone: --budget refused, max_backfill_time dropped */
	plan_of(cfg, "cmd", false, &p);
	b = 1, src = "--budget";
	ck_assert_int_eq(budget_fit_plan(cfg, &p, "cmd", &b, &src, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, "refused: --budget 1s would not apply: cmd"
			 " runs a command, as does every job of the request,"
			 " and a budget counts only the warehouse time of SQL"
			 " jobs' runs; nothing was queued. Drop --budget"
			 " (--concurrency and max_backfill bound a request of"
			 " commands)");
	b = 3600, src = "max_backfill_time";
	ck_assert_int_eq(budget_fit_plan(cfg, &p, "cmd", &b, &src, &err), 0);
	ck_assert_int_eq(b, 0);
	ck_assert_ptr_null(src);
	plan_free(&p);
	/* a SQL job downstream of the command takes warehouse time */
	plan_of(cfg, "cmd", true, &p);
	b = 60, src = "--budget";
	ck_assert_int_eq(budget_fit_plan(cfg, &p, "cmd", &b, &src, &err), 0);
	ck_assert_int_eq(b, 60);
	ck_assert_str_eq(src, "--budget");
	plan_free(&p);
	/* a SQL job */
	plan_of(cfg, "fct", true, &p);
	ck_assert_int_eq(budget_fit_plan(cfg, &p, "fct", &b, &src, &err), 0);
	ck_assert_int_eq(b, 60);
	plan_free(&p);
	ck_assert(!budget_job_measured(&cfg->jobs[0]));
	ck_assert(budget_job_measured(&cfg->jobs[2]));
	config_unref(cfg);
}
END_TEST

static Suite *
budget_suite(void)
{
	Suite *s = suite_create("budget");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_of, 0, sizeof of_cases / sizeof of_cases[0]);
	tcase_add_test(tc, test_of_message);
	tcase_add_loop_test(tc, test_admit, 0,
			    sizeof admit_cases / sizeof admit_cases[0]);
	tcase_add_test(tc, test_admit_message);
	tcase_add_test(tc, test_charge);
	tcase_add_loop_test(tc, test_over, 0,
			    sizeof over_cases / sizeof over_cases[0]);
	tcase_add_test(tc, test_stop);
	tcase_add_test(tc, test_stop_note);
	tcase_add_loop_test(tc, test_duration, 0,
			    sizeof duration_cases / sizeof duration_cases[0]);
	tcase_add_test(tc, test_fit_plan);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(budget_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
