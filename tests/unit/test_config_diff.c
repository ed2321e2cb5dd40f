/*
 * test_config_diff.c - config_diff(): two configurations loaded from text,
 * and the exact differences listed (names, keys, code versions).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_diff.h"

static const char base[] =
	"state_db: /tmp/state.db\n"
	"max_catchup: 10\n"
	"warehouses:\n"
	"  - name: sales\n"
	"    sqlite: /tmp/sales.db\n"
	"  - name: old_wh\n"
	"    sqlite: /tmp/old.db\n"
	"jobs:\n"
	"  - name: fct\n"
	"    warehouse: sales\n"
	"    partition: day\n"
	"    start: 2026-01-01\n"
	"    sql: SELECT 1\n"
	"  - name: mart\n"
	"    warehouse: sales\n"
	"    partition: week\n"
	"    upstream: [fct]\n"
	"    sql: SELECT 2\n"
	"  - name: export\n"
	"    partition: day\n"
	"    command: [\"/bin/true\"]\n";

/* Load text, asserting success. */
static struct config *
load(const char *text)
{
	struct config *cfg = NULL;
	struct err err = { 0 };

	ck_assert_msg(config_load_string("/tmp/diff.yaml", text, strlen(text),
					 &cfg, &err) == 0, "%s", err.msg);
	return cfg;
}

/* text with the first `from` replaced by `to` (caller frees). */
static char *
replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
	char *out = malloc(n);

	ck_assert_ptr_nonnull(at);
	memcpy(out, text, (size_t)(at - text));
	strcpy(out + (at - text), to);
	strcat(out, at + strlen(from));
	return out;
}

/* The same configuration: nothing differs. */
START_TEST(test_diff_none)
{
	struct config *a = load(base), *b = load(base);
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert(config_diff_empty(&d));
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
}
END_TEST

/* A rename is one removed and one added; an SQL edit is one changed with
 * both code versions and key "sql". */
START_TEST(test_diff_rename_and_edit)
{
	char *t1 = replace(base, "name: export", "name: export_v2");
	char *t2 = replace(t1, "sql: SELECT 2", "sql: SELECT 3");
	struct config *a = load(base), *b = load(t2);
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert(!config_diff_empty(&d));
	ck_assert_uint_eq(d.jobs.nadded, 1);
	ck_assert_str_eq(d.jobs.added[0], "export_v2");
	ck_assert_uint_eq(d.jobs.nremoved, 1);
	ck_assert_str_eq(d.jobs.removed[0], "export");
	ck_assert_uint_eq(d.jobs.nchanged, 1);
	ck_assert_str_eq(d.jobs.changed[0].name, "mart");
	ck_assert_str_eq(d.jobs.changed[0].old_code_version,
			 config_job(a, "mart")->code_version);
	ck_assert_str_eq(d.jobs.changed[0].new_code_version,
			 config_job(b, "mart")->code_version);
	ck_assert_str_ne(d.jobs.changed[0].old_code_version,
			 d.jobs.changed[0].new_code_version);
	ck_assert_uint_eq(d.jobs.changed[0].nkeys, 1);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "sql");
	ck_assert_uint_eq(d.nsettings, 0);
	ck_assert_uint_eq(d.warehouses.nadded + d.warehouses.nremoved +
			  d.warehouses.nchanged, 0);
	config_diff_free(&d);
	ck_assert(config_diff_empty(&d));
	config_unref(a);
	config_unref(b);
	free(t1);
	free(t2);
}
END_TEST

/* A lookback changed is a change of the job's key "upstream"; a plain
 * name and {job: NAME} (lookback 0) are the same (issue 41). */
START_TEST(test_diff_lookback)
{
	char *t1 = replace(base, "upstream: [fct]",
			   "upstream: [{job: fct, lookback: 1}]");
	char *t0 = replace(base, "upstream: [fct]", "upstream: [{job: fct}]");
	struct config *a = load(base), *b = load(t1), *c = load(t0);
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert_uint_eq(d.jobs.nchanged, 1);
	ck_assert_str_eq(d.jobs.changed[0].name, "mart");
	ck_assert_uint_eq(d.jobs.changed[0].nkeys, 1);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "upstream");
	config_diff_free(&d);
	config_diff(a, c, &d);
	ck_assert(config_diff_empty(&d));
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
	config_unref(c);
	free(t1);
	free(t0);
}
END_TEST

/* A trend added, its window changed, its severity changed: each is a
 * change of the job's key "metrics" with a new code version. */
START_TEST(test_diff_trend)
{
	static const char *const metric[] = {
		"{sql: SUM(v)}",
		"{sql: SUM(v), trend: {last: 28, max_sigma: 3}}",
		"{sql: SUM(v), trend: {last: 14, max_sigma: 3}}",
		"{sql: SUM(v), trend: {last: 14, max_sigma: 3}, severity: warn}",
	};
	struct config *c[4];

	for (int i = 0; i < 4; i++) {
		char with[256], *t;

		snprintf(with, sizeof with, "    sql: SELECT 1\n    table: t\n"
			 "    partition_column: dt\n    metrics:\n      rev: %s\n",
			 metric[i]);
		t = replace(base, "    sql: SELECT 1\n", with);
		c[i] = load(t);
		free(t);
	}
	for (int i = 1; i < 4; i++) {
		struct config_diff d;

		config_diff(c[i - 1], c[i], &d);
		ck_assert_uint_eq(d.jobs.nchanged, 1);
		ck_assert_str_eq(d.jobs.changed[0].name, "fct");
		ck_assert_uint_eq(d.jobs.changed[0].nkeys, 1);
		ck_assert_str_eq(d.jobs.changed[0].keys[0], "metrics");
		ck_assert_str_ne(d.jobs.changed[0].old_code_version,
				 d.jobs.changed[0].new_code_version);
		config_diff_free(&d);
	}
	for (int i = 0; i < 4; i++)
		config_unref(c[i]);
}
END_TEST

/* A top-level default changes the setting and every job that inherits
 * it (with the same code version: scheduling keys do not change it). */
START_TEST(test_diff_setting_default)
{
	char *t = replace(base, "max_catchup: 10", "max_catchup: 20");
	struct config *a = load(base), *b = load(t);
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert_uint_eq(d.nsettings, 1);
	ck_assert_str_eq(d.settings[0], "max_catchup");
	ck_assert_uint_eq(d.jobs.nchanged, 3);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "max_catchup");
	ck_assert_str_eq(d.jobs.changed[0].old_code_version,
			 d.jobs.changed[0].new_code_version);
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
	free(t);
}
END_TEST

/* Warehouses added, removed and changed, several keys of one job. */
START_TEST(test_diff_warehouses_and_keys)
{
	char *t1 = replace(base, "  - name: old_wh\n    sqlite: /tmp/old.db\n",
			   "  - name: new_wh\n    sqlite: /tmp/new.db\n");
	char *t2 = replace(t1, "sqlite: /tmp/sales.db",
			   "sqlite: /tmp/sales2.db\n    max_connections: 2");
	char *t3 = replace(t2, "    start: 2026-01-01\n",
			   "    start: 2026-01-02\n    timeout: 5m\n");
	struct config *a = load(base), *b = load(t3);
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert_uint_eq(d.warehouses.nadded, 1);
	ck_assert_str_eq(d.warehouses.added[0], "new_wh");
	ck_assert_uint_eq(d.warehouses.nremoved, 1);
	ck_assert_str_eq(d.warehouses.removed[0], "old_wh");
	ck_assert_uint_eq(d.warehouses.nchanged, 1);
	ck_assert_str_eq(d.warehouses.changed[0].name, "sales");
	ck_assert_uint_eq(d.warehouses.changed[0].nkeys, 2);
	ck_assert_str_eq(d.warehouses.changed[0].keys[0], "sqlite");
	ck_assert_str_eq(d.warehouses.changed[0].keys[1], "max_connections");
	ck_assert_uint_eq(d.jobs.nchanged, 1);
	ck_assert_str_eq(d.jobs.changed[0].name, "fct");
	ck_assert_uint_eq(d.jobs.changed[0].nkeys, 2);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "start");
	ck_assert_str_eq(d.jobs.changed[0].keys[1], "timeout");
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
	free(t1);
	free(t2);
	free(t3);
}
END_TEST

/* A ClickHouse warehouse: its URL and user; a job's allow_empty, which
 * also changes its code version. */
START_TEST(test_diff_clickhouse)
{
	static const char ch[] =
		"state_db: /tmp/state.db\n"
		"warehouses:\n"
		"  - name: ch\n"
		"    clickhouse: http://127.0.0.1:8123/?database=a\n"
		"jobs:\n"
		"  - name: fct\n"
		"    warehouse: ch\n"
		"    partition: day\n"
		"    table: fct\n"
		"    partition_column: dt\n"
		"    sql: SELECT 1\n";
	char *t1 = replace(ch, "database=a\n", "database=b\n    user: etl\n");
	char *t2 = replace(t1, "    sql: SELECT 1\n",
			   "    sql: SELECT 1\n    allow_empty: true\n");
	struct config *a = load(ch), *b = load(t2);
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert_uint_eq(d.warehouses.nchanged, 1);
	ck_assert_uint_eq(d.warehouses.changed[0].nkeys, 2);
	ck_assert_str_eq(d.warehouses.changed[0].keys[0], "clickhouse");
	ck_assert_str_eq(d.warehouses.changed[0].keys[1], "user");
	ck_assert_uint_eq(d.jobs.nchanged, 1);
	ck_assert_uint_eq(d.jobs.changed[0].nkeys, 1);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "allow_empty");
	ck_assert_str_ne(a->jobs[0].code_version, b->jobs[0].code_version);
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
	free(t1);
	free(t2);
}
END_TEST

/* Moving a job to another position is no change. */
START_TEST(test_diff_moved)
{
	char *t = replace(base, "jobs:\n", "jobs:\n  - name: first\n"
			  "    partition: day\n    command: [\"/bin/true\"]\n");
	struct config *a = load(t), *b = load(base), *c = load(t);
	struct config_diff d;

	config_diff(b, a, &d);
	ck_assert_uint_eq(d.jobs.nadded, 1);
	ck_assert_uint_eq(d.jobs.nchanged, 0);
	config_diff_free(&d);
	config_diff(a, c, &d);
	ck_assert(config_diff_empty(&d));
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
	config_unref(c);
	free(t);
}
END_TEST

/* Several hosts: state and node take effect at the next restart, lease
 * and a job's nodes: at once. */
START_TEST(test_diff_cluster)
{
	static const char pg[] =
		"state: {postgres: \"dbname=a\"}\n"
		"node: etl-1\n"
		"lease: 10s\n"
		"jobs:\n"
		"  - name: e\n"
		"    partition: day\n"
		"    command: [x]\n"
		"    nodes: [etl-1]\n";
	char *t1 = replace(pg, "dbname=a", "dbname=b");
	char *t2 = replace(t1, "node: etl-1", "node: etl-2");
	char *t3 = replace(t2, "lease: 10s", "lease: 20s");
	char *t4 = replace(t3, "[etl-1]", "[etl-1, etl-2]");
	struct config *a = load(pg), *b = load(t4);
	struct config_diff d;

	config_diff(a, b, &d);
	ck_assert_uint_eq(d.nsettings, 3);
	ck_assert_str_eq(d.settings[0], "state");
	ck_assert_str_eq(d.settings[1], "node");
	ck_assert_str_eq(d.settings[2], "lease");
	ck_assert(config_diff_needs_restart("state"));
	ck_assert(config_diff_needs_restart("node"));
	ck_assert(config_diff_needs_restart("state_db"));
	ck_assert(!config_diff_needs_restart("lease"));
	ck_assert(!config_diff_needs_restart("max_concurrency"));
	ck_assert_uint_eq(d.jobs.nchanged, 1);
	ck_assert_uint_eq(d.jobs.changed[0].nkeys, 1);
	ck_assert_str_eq(d.jobs.changed[0].keys[0], "nodes");
	config_diff_free(&d);
	config_unref(b);

	/* from one host to several: state_db and state both change */
	b = load("node: etl-1\njobs: []\n");
	config_diff(b, a, &d);
	ck_assert_uint_eq(d.nsettings, 2);
	ck_assert_str_eq(d.settings[0], "state_db");
	ck_assert_str_eq(d.settings[1], "state");
	config_diff_free(&d);
	config_unref(a);
	config_unref(b);
	free(t1);
	free(t2);
	free(t3);
	free(t4);
}
END_TEST

/* Suite: config_diff. */
static Suite *
config_diff_suite(void)
{
	Suite *s = suite_create("config_diff");
	TCase *tc = tcase_create("diff");

	tcase_add_test(tc, test_diff_none);
	tcase_add_test(tc, test_diff_rename_and_edit);
	tcase_add_test(tc, test_diff_lookback);
	tcase_add_test(tc, test_diff_trend);
	tcase_add_test(tc, test_diff_setting_default);
	tcase_add_test(tc, test_diff_warehouses_and_keys);
	tcase_add_test(tc, test_diff_clickhouse);
	tcase_add_test(tc, test_diff_moved);
	tcase_add_test(tc, test_diff_cluster);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(config_diff_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
