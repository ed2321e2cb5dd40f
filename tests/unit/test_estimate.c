/*
 * test_estimate.c - a plan's estimate: the median of each job's recent
 * durations, in waves of the job's effective concurrency, jobs without
 * history named and left out.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "config.h"
#include "estimate.h"
#include "plan.h"

static const char yaml[] =
	"state_db: s.db\n"
	"socket: s.sock\n"
	"max_concurrency: 3\n"
	"warehouses:\n"
	"  - {name: w, sqlite: w.db}\n"
	"jobs:\n"
	"  - {name: fct, warehouse: w, partition: day, concurrency: 2, sql: SELECT 1}\n"
	"  - {name: weekly, warehouse: w, partition: week, upstream: [fct], sql: SELECT 1}\n"
	"  - {name: export, partition: day, upstream: [fct], command: [/bin/true]}\n"
	"  - {name: bulk, warehouse: w, partition: day, batch: true, concurrency: 3, sql: SELECT 1}\n"
	"  - {name: chunked, warehouse: w, partition: day, batch: 3, concurrency: 2, sql: SELECT 1}\n";

static struct config *cfg;

static void
setup(void)
{
	struct err err;

	if (config_load_string("/tmp/estimate.yaml", yaml, strlen(yaml), &cfg,
			       &err) < 0)
		ck_abort_msg("config: %s", err.msg);
}

static void
teardown(void)
{
	config_unref(cfg);
}

/* Durations by job: fct 1s 3s 2s (median 2s), export 0.5s, weekly none,
 * bulk 10s. */
static int
fake_cb(const char *job, int64_t *ms, size_t max, size_t *n, void *data,
	struct err *err)
{
	(void)data; (void)err; (void)max;
	*n = 0;
	if (strcmp(job, "fct") == 0) {
		ms[0] = 1000; ms[1] = 3000; ms[2] = 2000;
		*n = 3;
	} else if (strcmp(job, "export") == 0) {
		ms[0] = 500;
		*n = 1;
	} else if (strcmp(job, "bulk") == 0 || strcmp(job, "chunked") == 0) {
		ms[0] = 10000;
		*n = 1;
	}
	return 0;
}

/* No durations at all. */
static int
none_cb(const char *job, int64_t *ms, size_t max, size_t *n, void *data,
	struct err *err)
{
	(void)job; (void)ms; (void)max; (void)data; (void)err;
	*n = 0;
	return 0;
}

/* A plan of job's days from..to with downstream. */
static void
plan_days(struct plan *p, const char *job, const char *from, int days)
{
	int64_t d;

	plan_init(p);
	ck_assert_int_eq(cal_parse_date(from, &d, NULL), 0);
	for (int i = 0; i < days; i++)
		plan_add_root(p, config_job_index(cfg, job), d + i);
	plan_expand(p, cfg, false, NULL);
}

START_TEST(median)
{
	int64_t a[] = { 5, 1, 3 }, b[] = { 4, 1, 3, 2 };

	ck_assert_int_eq(estimate_median(a, 3), 3);
	ck_assert_int_eq(estimate_median(b, 4), 2);
	ck_assert_int_eq(estimate_median(a, 0), 0);
}
END_TEST

/* Five days of fct at concurrency 2: three waves of 2s; one week of
 * weekly (no history: named); five exports at the pool's 1 (their
 * concurrency) of 0.5s, not warehouse time. */
START_TEST(waves_and_missing)
{
	struct plan p;
	struct estimate e;
	struct err err;

	plan_days(&p, "fct", "2026-02-02", 5);
	ck_assert_int_eq(estimate_plan(cfg, &p, 0, fake_cb, NULL, &e, &err), 0);
	ck_assert(e.has);
	ck_assert_double_eq_tol(e.seconds, 3 * 2.0 + 5 * 0.5, 1e-9);
	ck_assert_double_eq_tol(e.warehouse_seconds, 5 * 2.0, 1e-9);
	ck_assert_uint_eq(e.nmissing, 1);
	ck_assert_str_eq(cfg->jobs[e.missing[0]].name, "weekly");
	estimate_free(&e);
	/* the request's own --concurrency 1: five waves of 2s */
	ck_assert_int_eq(estimate_plan(cfg, &p, 1, fake_cb, NULL, &e, &err), 0);
	ck_assert_double_eq_tol(e.seconds, 5 * 2.0 + 5 * 0.5, 1e-9);
	estimate_free(&e);
	plan_free(&p);
}
END_TEST

/* A batch job runs once per request. */
START_TEST(batch_once)
{
	struct plan p;
	struct estimate e;
	struct err err;

	plan_days(&p, "bulk", "2026-02-02", 7);
	ck_assert_int_eq(estimate_plan(cfg, &p, 0, fake_cb, NULL, &e, &err), 0);
	ck_assert_double_eq_tol(e.seconds, 10.0, 1e-9);
	ck_assert_double_eq_tol(e.warehouse_seconds, 10.0, 1e-9);
	estimate_free(&e);
	plan_free(&p);
}
END_TEST

/* A batch: N job runs once per chunk of N: 10 partitions are 4 runs, two
 * at a time (its concurrency). */
START_TEST(batch_chunks)
{
	struct plan p;
	struct estimate e;
	struct err err;

	plan_days(&p, "chunked", "2026-02-02", 10);
	ck_assert_int_eq(estimate_plan(cfg, &p, 0, fake_cb, NULL, &e, &err), 0);
	ck_assert_double_eq_tol(e.seconds, 20.0, 1e-9);
	ck_assert_double_eq_tol(e.warehouse_seconds, 40.0, 1e-9);
	estimate_free(&e);
	plan_free(&p);
}
END_TEST

START_TEST(no_history)
{
	struct plan p;
	struct estimate e;
	struct err err;

	plan_days(&p, "fct", "2026-02-02", 2);
	ck_assert_int_eq(estimate_plan(cfg, &p, 0, none_cb, NULL, &e, &err), 0);
	ck_assert(!e.has);
	ck_assert_uint_eq(e.nmissing, 3);
	estimate_free(&e);
	plan_free(&p);
}
END_TEST

/* SCHED-2: a job's runs get at most its warehouse's cap, the one dispatch
 * applies (pick_wh_cap): on ClickHouse too (the estimate counted eight at
 * once where two ran), never on SQLite. */
START_TEST(warehouse_cap)
{
	struct warehouse_def whs[3] = {
		{ .name = "s", .kind = WH_SQLITE, .max_connections = 2 },
		{ .name = "p", .kind = WH_POSTGRES, .max_connections = 2 },
		{ .name = "c", .kind = WH_CLICKHOUSE, .max_connections = 2 },
	};
	struct job_def j = { .name = "j", .concurrency = 8, .warehouse = 0 };
	struct config c = { .warehouses = whs, .nwarehouses = 3, .jobs = &j,
			    .njobs = 1, .max_concurrency = 16 };

	ck_assert_int_eq(estimate_concurrency(&c, 0), 8);
	j.warehouse = 1;
	ck_assert_int_eq(estimate_concurrency(&c, 0), 2);
	j.warehouse = 2;
	ck_assert_int_eq(estimate_concurrency(&c, 0), 2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("estimate");
	TCase *tc = tcase_create("estimate");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, median);
	tcase_add_test(tc, waves_and_missing);
	tcase_add_test(tc, batch_once);
	tcase_add_test(tc, batch_chunks);
	tcase_add_test(tc, no_history);
	tcase_add_test(tc, warehouse_cap);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
