/*
 * test_lineage.c - the one downstream rule, table-driven: grains, weeks
 * that straddle two months, a coarser upstream (a month feeding each of
 * its days), jobs that do not feed each other, and partitions outside a
 * downstream job's start..end.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "lineage.h"

static const char yaml[] =
	"jobs:\n"
	"  - {name: hourly, partition: hour, command: [\"true\"]}\n"
	"  - {name: daily, partition: day, upstream: [hourly], command: [\"true\"]}\n"
	"  - {name: weekly, partition: week, upstream: [daily], command: [\"true\"]}\n"
	"  - {name: monthly, partition: month, upstream: [daily, weekly], command: [\"true\"]}\n"
	"  - {name: bounded, partition: week, upstream: [daily], start: 2026-02-02,\n"
	"     end: 2026-02-09, command: [\"true\"]}\n"
	"  - {name: other, partition: day, command: [\"true\"]}\n"
	"  - {name: fx, partition: month, command: [\"true\"]}\n"
	"  - {name: eur, partition: day, upstream: [daily, fx], command: [\"true\"]}\n"
	"  - {name: rolling, partition: day, upstream: [{job: daily, lookback: 6}],\n"
	"     end: 2026-02-15, command: [\"true\"]}\n"
	"  - {name: rolling_w, partition: week, upstream: [{job: fx, lookback: 1}],\n"
	"     command: [\"true\"]}\n"
	"  - {name: whole, partition: none, upstream: [hourly, daily, fx],\n"
	"     command: [\"true\"]}\n";

static const struct {
	const char *up, *key, *down;
	const char *first, *last; /* NULL: none */
	int count;
} cases[] = {
	{ "hourly", "2026-02-08T23", "daily", "2026-02-08", "2026-02-08", 1 },
	{ "daily", "2026-02-08", "weekly", "2026-02-02", "2026-02-02", 1 }, /* a Sunday */
	{ "daily", "2026-02-09", "weekly", "2026-02-09", "2026-02-09", 1 }, /* a Monday */
	{ "daily", "2026-03-01", "monthly", "2026-03-01", "2026-03-01", 1 },
	/* the ISO week of 2026-04-27 holds April 27-30 and May 1-3 */
	{ "weekly", "2026-04-27", "monthly", "2026-04-01", "2026-05-01", 2 },
	{ "daily", "2026-02-08", "bounded", "2026-02-02", "2026-02-02", 1 },
	{ "daily", "2026-01-31", "bounded", NULL, NULL, 0 },   /* before start */
	{ "daily", "2026-02-16", "bounded", NULL, NULL, 0 },   /* after end */
	{ "daily", "2026-02-08", "other", NULL, NULL, 0 },     /* does not feed it */
	{ "hourly", "2026-02-08T01", "weekly", NULL, NULL, 0 }, /* only through daily */
	/* a coarser upstream: February's rate feeds its 28 days */
	{ "fx", "2026-02-01", "eur", "2026-02-01", "2026-02-28", 28 },
	{ "fx", "2024-02-01", "eur", "2024-02-01", "2024-02-29", 29 },
	{ "daily", "2026-02-08", "eur", "2026-02-08", "2026-02-08", 1 },
	/* a 7-day window (lookback 6): a day feeds itself and the 6 after */
	{ "daily", "2026-02-08", "rolling", "2026-02-08", "2026-02-14", 7 },
	{ "daily", "2026-02-12", "rolling", "2026-02-12", "2026-02-15", 4 }, /* end */
	/* weeks reading the month and the week before: February's rate
	 * feeds the weeks overlapping it and the week after them */
	{ "fx", "2026-02-01", "rolling_w", "2026-01-26", "2026-03-02", 6 },
	/* partition: none: any partition of any grain feeds its one, - */
	{ "daily", "2026-02-08", "whole", "-", "-", 1 },
	{ "daily", "0001-01-01", "whole", "-", "-", 1 },
	{ "hourly", "2026-02-08T23", "whole", "-", "-", 1 },
	{ "fx", "2026-02-01", "whole", "-", "-", 1 },
};

START_TEST(test_map)
{
	struct config *cfg;
	struct err err;

	ck_assert_msg(config_load_string("/tmp/lineage.yaml", yaml, strlen(yaml),
					 &cfg, &err) == 0, "%s", err.msg);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int up = config_job_index(cfg, cases[i].up);
		int down = config_job_index(cfg, cases[i].down);
		struct part_range r;
		char key[CAL_KEY_MAX];
		part_t p;

		ck_assert_int_eq(cal_parse_key(job_cal(&cfg->jobs[up]),
					       cases[i].key, &p, NULL), 0);
		r = lineage_range(cfg, up, p, down);
		ck_assert_msg(range_count(&r) == cases[i].count,
			      "%s %s -> %s: %lld partitions, want %d",
			      cases[i].up, cases[i].key, cases[i].down,
			      (long long)range_count(&r), cases[i].count);
		if (cases[i].count > 0) {
			cal_key(job_cal(&cfg->jobs[down]), r.first, key);
			ck_assert_str_eq(key, cases[i].first);
			cal_key(job_cal(&cfg->jobs[down]), r.last, key);
			ck_assert_str_eq(key, cases[i].last);
		}
		ck_assert(lineage_feeds(cfg, up, down) ==
			  (strcmp(cases[i].down, "other") != 0 &&
			   !(strcmp(cases[i].up, "hourly") == 0 &&
			     strcmp(cases[i].down, "weekly") == 0)));
	}
	config_unref(cfg);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("lineage");
	TCase *tc = tcase_create("lineage");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_map);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
