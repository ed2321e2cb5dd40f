/*
 * test_cutoff.c - early cut-off downstream (daemon/lib/cutoff.c): a
 * downstream partition is skipped only when every input in the request
 * came out identical (or was skipped itself) and it was built, not stale,
 * from these inputs, by its current code version.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cutoff.h"
#include "manifest.h"

static struct cutoff_fp
fp(int64_t rows, const char *sum)
{
	struct cutoff_fp f = { .known = true, .rows = rows };

	strcpy(f.sum, sum);
	return f;
}

static const struct cutoff_self fresh_self = {
	.built = true, .stale = false, .built_from_inputs = true,
	.version = "v2", .last_version = "v2",
};

START_TEST(test_input_of)
{
	struct cutoff_fp a = fp(10, "00000000000000aa");
	struct cutoff_fp b = fp(10, "00000000000000ab");
	struct cutoff_fp c = fp(11, "00000000000000aa");
	struct cutoff_fp u = { .known = false };

	ck_assert_int_eq(cutoff_input_of(&a, &a, 20), CUTOFF_IN_SAME);
	ck_assert_int_eq(cutoff_input_of(&a, &a, -1), CUTOFF_IN_SAME);
	ck_assert_int_eq(cutoff_input_of(&a, &b, 20), CUTOFF_IN_CHANGED);
	ck_assert_int_eq(cutoff_input_of(&a, &c, 20), CUTOFF_IN_CHANGED);
	ck_assert_int_eq(cutoff_input_of(&u, &a, 20), CUTOFF_IN_UNKNOWN);
	ck_assert_int_eq(cutoff_input_of(&a, &u, 20), CUTOFF_IN_UNKNOWN);
	ck_assert_int_eq(cutoff_input_of(NULL, &a, 20), CUTOFF_IN_UNKNOWN);
}
END_TEST

/* issue 40: a fingerprint that matched no row before nor after proves
 * nothing when the write changed rows (a partition_column holding
 * :partition_start), nor when its changes are not known; an empty
 * partition that stayed empty under a write that changed nothing is
 * identical; a sum that was not read is unknown. */
START_TEST(test_input_of_proof)
{
	struct cutoff_fp z = fp(0, "0000000000000000");
	struct cutoff_fp a = fp(24, "00000000000000aa");
	struct cutoff_fp blank = fp(24, "");

	ck_assert_int_eq(cutoff_input_of(&z, &z, 24), CUTOFF_IN_UNKNOWN);
	ck_assert_int_eq(cutoff_input_of(&z, &z, -1), CUTOFF_IN_UNKNOWN);
	ck_assert_int_eq(cutoff_input_of(&z, &z, 0), CUTOFF_IN_SAME);
	ck_assert_int_eq(cutoff_input_of(&z, &a, 24), CUTOFF_IN_CHANGED);
	ck_assert_int_eq(cutoff_input_of(&a, &z, 24), CUTOFF_IN_CHANGED);
	ck_assert_int_eq(cutoff_input_of(&blank, &blank, 0), CUTOFF_IN_UNKNOWN);
}
END_TEST

START_TEST(test_partition_missed)
{
	ck_assert(cutoff_partition_missed(0, 0, 24));
	ck_assert(!cutoff_partition_missed(0, 0, 0));
	ck_assert(!cutoff_partition_missed(0, 0, -1));  /* not known: no claim */
	ck_assert(!cutoff_partition_missed(3, 0, 3));   /* deleted by key */
	ck_assert(!cutoff_partition_missed(0, 24, 24)); /* written by key */
}
END_TEST

START_TEST(test_unchanged_skips)
{
	enum cutoff_input in[] = { CUTOFF_IN_SAME, CUTOFF_IN_SAME,
				   CUTOFF_IN_SKIPPED };
	const char *why = NULL;

	ck_assert_int_eq(cutoff_decide(&fresh_self, in, 3, false, &why),
			 CUTOFF_SKIP);
	ck_assert_str_eq(why, "inputs unchanged");
}
END_TEST

START_TEST(test_rebuild_reasons)
{
	enum cutoff_input same[] = { CUTOFF_IN_SAME, CUTOFF_IN_SAME };
	enum cutoff_input one[] = { CUTOFF_IN_SAME, CUTOFF_IN_CHANGED };
	enum cutoff_input unk[] = { CUTOFF_IN_SAME, CUTOFF_IN_UNKNOWN };
	struct cutoff_self s;
	const char *why;

	ck_assert_int_eq(cutoff_decide(&fresh_self, one, 2, false, &why),
			 CUTOFF_RUN);
	ck_assert_str_eq(why, "input changed");
	ck_assert_int_eq(cutoff_decide(&fresh_self, unk, 2, false, &why),
			 CUTOFF_RUN);
	ck_assert_str_eq(why, "input fingerprint unknown");
	ck_assert_int_eq(cutoff_decide(&fresh_self, same, 2, true, &why),
			 CUTOFF_RUN);
	ck_assert_str_eq(why, "no cutoff");

	s = fresh_self;
	s.built = false;
	ck_assert_int_eq(cutoff_decide(&s, same, 2, false, &why), CUTOFF_RUN);
	ck_assert_str_eq(why, "never built");
	s = fresh_self;
	s.stale = true;
	ck_assert_int_eq(cutoff_decide(&s, same, 2, false, &why), CUTOFF_RUN);
	ck_assert_str_eq(why, "stale");
	s = fresh_self;
	s.last_version = "v1";
	ck_assert_int_eq(cutoff_decide(&s, same, 2, false, &why), CUTOFF_RUN);
	ck_assert_str_eq(why, "code version changed");
	s.last_version = NULL;
	ck_assert_int_eq(cutoff_decide(&s, same, 2, false, &why), CUTOFF_RUN);
	s = fresh_self;
	s.built_from_inputs = false;
	ck_assert_int_eq(cutoff_decide(&s, same, 2, false, &why), CUTOFF_RUN);
	ck_assert_str_eq(why, "not built from its inputs");
}
END_TEST

/* day -> week -> month: 14 days, day 9 changed.  Week 1 (days 0..6) is
 * skipped, week 2 (days 7..13) rebuilt; the month, with one skipped and
 * one changed week, is rebuilt.  With day 9 unchanged too, both weeks
 * and the month are skipped. */
static int
chain(int changed_day, enum cutoff_verdict *month)
{
	enum cutoff_input days[14], weeks[2];
	const char *why;
	int runs = 0;

	for (int d = 0; d < 14; d++)
		days[d] = d == changed_day ? CUTOFF_IN_CHANGED : CUTOFF_IN_SAME;
	for (int w = 0; w < 2; w++) {
		enum cutoff_verdict v = cutoff_decide(&fresh_self, days + 7 * w,
						      7, false, &why);
		/* a rebuilt week: say it changed (its fingerprint moved) */
		weeks[w] = v == CUTOFF_SKIP ? CUTOFF_IN_SKIPPED
					    : CUTOFF_IN_CHANGED;
		runs += v == CUTOFF_RUN;
	}
	*month = cutoff_decide(&fresh_self, weeks, 2, false, &why);
	return runs;
}

START_TEST(test_chain)
{
	enum cutoff_verdict m;

	ck_assert_int_eq(chain(9, &m), 1);
	ck_assert_int_eq(m, CUTOFF_RUN);
	ck_assert_int_eq(chain(-1, &m), 0);
	ck_assert_int_eq(m, CUTOFF_SKIP);
}
END_TEST

START_TEST(test_store_form)
{
	/* the manifest row's `changed`, both ways */
	ck_assert_int_eq(cutoff_changed_of(CUTOFF_IN_SAME), 0);
	ck_assert_int_eq(cutoff_changed_of(CUTOFF_IN_CHANGED), 1);
	ck_assert_int_eq(cutoff_changed_of(CUTOFF_IN_UNKNOWN), -1);
	ck_assert_int_eq(cutoff_changed_of(CUTOFF_IN_SKIPPED), -1);
	for (int c = -1; c <= 1; c++)
		ck_assert_int_eq(cutoff_changed_of(cutoff_input_of_changed(c)), c);
	ck_assert_int_eq(cutoff_input_of_changed(7), CUTOFF_IN_UNKNOWN);
}
END_TEST

START_TEST(test_fingerprinted)
{
	int down = 1;
	struct job_def j = { .name = "fct", .sql = "x", .table = "t",
		.partition_column = "dt", .warehouse = 0,
		.downstream_idx = &down, .ndownstream = 1 };

	ck_assert(cutoff_fingerprinted(&j, false));
	j.warehouse = 1;
	ck_assert(cutoff_fingerprinted(&j, false));
	j.warehouse = 2; /* ClickHouse: the live partition and the stage */
	ck_assert(cutoff_fingerprinted(&j, false));
	j.warehouse = 0;
	j.ndownstream = 0; /* nothing reads it: not read */
	ck_assert(!cutoff_fingerprinted(&j, false));
	j.ndownstream = 1;
	j.partition_column = NULL;
	ck_assert(!cutoff_fingerprinted(&j, false));
	j.partition_column = "dt";
	j.sql = NULL; /* a command job */
	ck_assert(!cutoff_fingerprinted(&j, false));
	j.sql = "x";
	/* CUTOFF-7: the shards of a Distributed table each hold part of the
	 * partition: no run reads its fingerprint, so its downstream is not
	 * conditional (the dry run said it was) */
	j.warehouse = 2;
	ck_assert(!cutoff_fingerprinted(&j, true));
}
END_TEST

/* A skipped item is final, counts as landed for what waits for it, and
 * is never retried: a week skipped releases its month. */
START_TEST(test_manifest_skip)
{
	struct job_def jobs[2] = {
		{ .name = "wk", .grain = GRAIN_WEEK,
		  .cal = { GRAIN_WEEK, WEEK_MONDAY, NULL } },
		{ .name = "mo", .grain = GRAIN_MONTH,
		  .cal = { GRAIN_MONTH, WEEK_MONDAY, NULL } },
	};
	struct config cfg = { .jobs = jobs, .njobs = 2 };
	struct manifest m;
	struct request *rq;
	struct item *wk, *mo;

	manifest_init(&m, &cfg);
	rq = manifest_request_add(&m, 1, "wk", "backfill", 0);
	wk = manifest_item_add(&m, rq, 1, "wk", "2026-01-05", 0, true,
			       MS_QUEUED);
	mo = manifest_item_add(&m, rq, 2, "mo", "2026-01-01", 1, true,
			       MS_QUEUED);
	manifest_link(wk, mo);
	ck_assert_int_eq(wk->cut, CUTOFF_IN_UNKNOWN);
	manifest_skip(&m, wk);
	ck_assert_int_eq(wk->state, MS_SKIPPED);
	ck_assert_int_eq(wk->cut, CUTOFF_IN_SKIPPED);
	ck_assert_int_eq(wk->attempts, 1);
	ck_assert(manifest_final(wk->state));
	ck_assert(manifest_landed_state(wk->state));
	ck_assert(!manifest_landed_state(MS_FAILED));
	ck_assert(!manifest_retriable(wk));
	ck_assert_int_eq(rq->counts[MS_SKIPPED], 1);
	ck_assert_int_eq(m.job_counts[0][MS_SKIPPED], 1);
	manifest_settle_outs(&m, wk);
	ck_assert_int_eq(mo->state, MS_QUEUED); /* not blocked: it may run */
	ck_assert_int_eq(m.nchanges, 0);
	/* loaded back from the store as skipped */
	ck_assert_int_eq(manifest_item_add(&m, rq, 3, "wk", "2026-01-12", 2,
					   true, MS_SKIPPED)->cut,
			 CUTOFF_IN_SKIPPED);
	manifest_clear(&m);
}
END_TEST

static Suite *
cutoff_suite(void)
{
	Suite *s = suite_create("cutoff");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_input_of);
	tcase_add_test(tc, test_input_of_proof);
	tcase_add_test(tc, test_partition_missed);
	tcase_add_test(tc, test_unchanged_skips);
	tcase_add_test(tc, test_rebuild_reasons);
	tcase_add_test(tc, test_chain);
	tcase_add_test(tc, test_store_form);
	tcase_add_test(tc, test_fingerprinted);
	tcase_add_test(tc, test_manifest_skip);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cutoff_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
