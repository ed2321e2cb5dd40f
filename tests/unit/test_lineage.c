/*
 * test_lineage.c - the one downstream rule, table-driven: grains, weeks
 * that straddle two months, jobs that do not feed each other, and
 * partitions outside a downstream job's start..end.
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
	"  - {name: other, partition: day, command: [\"true\"]}\n";

static const struct {
	const char *up, *key, *down;
	const char *want[2]; /* NULL-terminated keys */
} cases[] = {
	{ "hourly", "2026-02-08T23", "daily", { "2026-02-08", NULL } },
	{ "daily", "2026-02-08", "weekly", { "2026-02-02", NULL } },   /* a Sunday */
	{ "daily", "2026-02-09", "weekly", { "2026-02-09", NULL } },   /* a Monday */
	{ "daily", "2026-03-01", "monthly", { "2026-03-01", NULL } },
	/* the ISO week of 2026-04-27 holds April 27-30 and May 1-3 */
	{ "weekly", "2026-04-27", "monthly", { "2026-04-01", "2026-05-01" } },
	{ "daily", "2026-02-08", "bounded", { "2026-02-02", NULL } },
	{ "daily", "2026-01-31", "bounded", { NULL } },   /* before start */
	{ "daily", "2026-02-16", "bounded", { NULL } },   /* after end */
	{ "daily", "2026-02-08", "other", { NULL } },     /* does not feed it */
	{ "hourly", "2026-02-08T01", "weekly", { NULL } }, /* feeds it only through daily */
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
		part_t p, out[2];
		char key[CAL_KEY_MAX];
		int n, want = 0;

		ck_assert_int_eq(part_parse_key(cfg->jobs[up].grain, cases[i].key,
						&p, NULL), 0);
		n = lineage_map(cfg, up, p, down, out);
		while (want < 2 && cases[i].want[want] != NULL)
			want++;
		ck_assert_msg(n == want, "%s %s -> %s: %d partitions, want %d",
			      cases[i].up, cases[i].key, cases[i].down, n, want);
		/* the range form says the same */
		struct part_range r = lineage_range(cfg, up, p, down);
		ck_assert_int_eq(range_count(&r), want);
		if (want > 0)
			ck_assert_int_eq(r.first, out[0]);
		for (int k = 0; k < n; k++) {
			part_key(cfg->jobs[down].grain, out[k], key);
			ck_assert_str_eq(key, cases[i].want[k]);
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
