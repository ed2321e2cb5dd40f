/*
 * test_chstage.c - the stage table's engine of a ClickHouse target
 * (chstage.c): a Replicated*MergeTree loses its ZooKeeper path and
 * replica name and keeps everything else; other engines are left alone;
 * a Replicated engine that does not read as one is refused.
 */
#include <check.h>
#include <stdlib.h>

#include "chstage.h"

static void
expect(const char *engine_full, int rc, const char *want)
{
	char *out = (char *)"unset";

	ck_assert_int_eq(chstage_engine(engine_full, &out), rc);
	if (want == NULL)
		ck_assert_ptr_null(out);
	else
		ck_assert_str_eq(out, want);
	free(out);
}

START_TEST(test_replicated)
{
	/* 18.16's engine_full of the test's fact table */
	expect("ReplicatedMergeTree('/clickhouse/tables/{shard}/wh/fct',"
	       " '{replica}') PARTITION BY dt ORDER BY (dt, store_id)"
	       " SETTINGS index_granularity = 8192", 1,
	       "MergeTree PARTITION BY dt ORDER BY (dt, store_id)"
	       " SETTINGS index_granularity = 8192");
	/* the family's own arguments kept, nested lists and quotes too */
	expect("ReplicatedSummingMergeTree('/t/{shard}/s', '{replica}',"
	       " (sales, revenue_cents)) PARTITION BY dt ORDER BY dt", 1,
	       "SummingMergeTree((sales, revenue_cents)) PARTITION BY dt"
	       " ORDER BY dt");
	expect("ReplicatedCollapsingMergeTree('/t/a\\'b', 'r''1', sign)"
	       " ORDER BY k", 1, "CollapsingMergeTree(sign) ORDER BY k");
	expect("ReplicatedReplacingMergeTree('/p', '{replica}', `v)`)"
	       " ORDER BY k", 1, "ReplacingMergeTree(`v)`) ORDER BY k");
	/* the old syntax: date column, key and granularity as arguments */
	expect("ReplicatedMergeTree('/p', 'r', dt, (dt, store_id), 8192)", 1,
	       "MergeTree(dt, (dt, store_id), 8192)");
	/* a newer server's defaults */
	expect("ReplicatedMergeTree PARTITION BY dt ORDER BY dt", 1,
	       "MergeTree PARTITION BY dt ORDER BY dt");
	expect("ReplicatedMergeTree() ORDER BY dt", 1, "MergeTree ORDER BY dt");
}
END_TEST

START_TEST(test_not_replicated)
{
	expect("MergeTree PARTITION BY dt ORDER BY (dt, store_id) SETTINGS"
	       " index_granularity = 8192", 0, NULL);
	expect("ReplacingMergeTree(v) ORDER BY k", 0, NULL);
	expect("Distributed(two, wh1, fct_local, rand())", 0, NULL);
}
END_TEST

START_TEST(test_refused)
{
	/* not a MergeTree, not two literals, a list or quote that never ends */
	expect("ReplicatedThing('/p', 'r')", -1, NULL);
	expect("ReplicatedMergeTree('/p') ORDER BY k", -1, NULL);
	expect("ReplicatedMergeTree(path, 'r') ORDER BY k", -1, NULL);
	expect("ReplicatedMergeTree('/p', 'r', (a, b) ORDER BY k", -1, NULL);
	expect("ReplicatedMergeTree('/p, 'r') ORDER BY k", -1, NULL);
	expect("ReplicatedSummingMergeTree('/p', 'r', ) ORDER BY k", -1, NULL);
}
END_TEST

START_TEST(test_create)
{
	char *sql = chstage_create("_backfilld_stage_fct", "fct",
				   "ReplicatedMergeTree('/p', '{replica}')"
				   " PARTITION BY dt ORDER BY dt");

	ck_assert_str_eq(sql, "CREATE TABLE IF NOT EXISTS"
			 " `_backfilld_stage_fct` AS `fct` ENGINE = MergeTree"
			 " PARTITION BY dt ORDER BY dt");
	free(sql);
	ck_assert_ptr_null(chstage_create("s", "t", "MergeTree ORDER BY dt"));
	ck_assert_ptr_null(chstage_create("s", "t", "ReplicatedMergeTree('/p')"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("chstage");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_replicated);
	tcase_add_test(tc, test_not_replicated);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_create);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
