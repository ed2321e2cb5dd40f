/*
 * test_adopt.c - what a new planner adopts (daemon/lib/cluster/adopt.h): runs
 * rows matched with work rows, one run, a batch, one run for several
 * requests; runs never offered; work rows without a run; a job the new
 * planner does not know.
 */
#include <check.h>
#include <stdlib.h>

#include "adopt.h"

static const char *const k1[] = {"2025-01-01"};
static const char *const k2[] = {"2025-01-02"};
static const char *const kb[] = {"2025-02-01", "2025-02-02", "2025-02-03"};

/* Each state of a work row with its run: kept; without: by its state. */
START_TEST(test_single)
{
	struct adopt_run runs[] = {
		{10, "a", "2025-01-01", true}, /* offered */
		{11, "a", "2025-01-02", true}, /* claimed */
		{12, "b", "2025-01-01", true}, /* done meanwhile */
		{13, "b", "2025-01-02", true}, /* never offered */
	};
	struct adopt_row rows[] = {
		{10, ADOPT_OFFERED, "a", k1, 1, ""},
		{11, ADOPT_CLAIMED, "a", k2, 1, ""},
		{12, ADOPT_DONE, "b", k1, 1, ""},
		{20, ADOPT_OFFERED, "a", k1, 1, ""}, /* its commit rolled back */
		{21, ADOPT_CLAIMED, "b", k2, 1, ""},
		{22, ADOPT_DONE, "b", k1, 1, ""},  /* recorded, not forgotten */
	};
	long owner[4];
	enum adopt_action act[6];

	adopt_match(runs, 4, rows, 6, owner, act);
	ck_assert_int_eq(owner[0], 0);
	ck_assert_int_eq(owner[1], 1);
	ck_assert_int_eq(owner[2], 2);
	ck_assert_int_eq(owner[3], -1);
	ck_assert_int_eq(act[0], ADOPT_KEEP);
	ck_assert_int_eq(act[1], ADOPT_KEEP);
	ck_assert_int_eq(act[2], ADOPT_KEEP);
	ck_assert_int_eq(act[3], ADOPT_WITHDRAW);
	ck_assert_int_eq(act[4], ADOPT_STOP);
	ck_assert_int_eq(act[5], ADOPT_DROP);
}
END_TEST

/* A batch's rows by its keys; one run for several requests by its key;
 * a row of another job with the same key stays out. */
START_TEST(test_groups)
{
	struct adopt_run runs[] = {
		{30, "batch", "2025-02-01", true},
		{31, "batch", "2025-02-02", true},
		{32, "batch", "2025-02-03", true},
		{40, "a", "2025-01-01", true},
		{41, "a", "2025-01-01", true}, /* rule 5: another request */
		{42, "other", "2025-01-01", true},
	};
	struct adopt_row rows[] = {
		{30, ADOPT_CLAIMED, "batch", kb, 3, ""},
		{40, ADOPT_OFFERED, "a", k1, 1, ""},
	};
	long owner[6];
	enum adopt_action act[2];

	adopt_match(runs, 6, rows, 2, owner, act);
	ck_assert_int_eq(owner[0], 0);
	ck_assert_int_eq(owner[1], 0);
	ck_assert_int_eq(owner[2], 0);
	ck_assert_int_eq(owner[3], 1);
	ck_assert_int_eq(owner[4], 1);
	ck_assert_int_eq(owner[5], -1);
	ck_assert_int_eq(act[0], ADOPT_KEEP);
	ck_assert_int_eq(act[1], ADOPT_KEEP);
}
END_TEST

/* A job the new planner does not know: queued again, its work stopped;
 * a work row naming another job than its run is no match. */
START_TEST(test_unknown_job)
{
	struct adopt_run runs[] = {
		{50, "gone", "2025-01-01", false},
		{51, "gone", "2025-01-02", false},
		{60, "a", "2025-01-01", true},
	};
	const char *const both[] = {"2025-01-01", "2025-01-02"};
	struct adopt_row rows[] = {
		{50, ADOPT_CLAIMED, "gone", both, 2, ""},
		{60, ADOPT_OFFERED, "b", k1, 1, ""},
	};
	long owner[3];
	enum adopt_action act[2];

	adopt_match(runs, 3, rows, 2, owner, act);
	ck_assert_int_eq(owner[0], -1);
	ck_assert_int_eq(owner[1], -1);
	ck_assert_int_eq(owner[2], -1);
	ck_assert_int_eq(act[0], ADOPT_STOP);
	ck_assert_int_eq(act[1], ADOPT_WITHDRAW);
}
END_TEST

/* Nothing left in flight, or nothing running. */
START_TEST(test_empty)
{
	struct adopt_run runs[] = {{1, "a", "2025-01-01", true}};
	struct adopt_row rows[] = {{2, ADOPT_DONE, "a", k1, 1, ""}};
	long owner[1];
	enum adopt_action act[1];

	adopt_match(runs, 1, NULL, 0, owner, act);
	ck_assert_int_eq(owner[0], -1);
	adopt_match(NULL, 0, rows, 1, owner, act);
	ck_assert_int_eq(act[0], ADOPT_DROP);
	ck_assert_int_eq(adopt_orphan(ADOPT_OFFERED), ADOPT_WITHDRAW);
	ck_assert_int_eq(adopt_orphan(ADOPT_CLAIMED), ADOPT_STOP);
}
END_TEST

/* Suite: adopt. */
static Suite *
adopt_suite(void)
{
	Suite *s = suite_create("adopt");
	TCase *tc = tcase_create("adopt");

	tcase_add_test(tc, test_single);
	tcase_add_test(tc, test_groups);
	tcase_add_test(tc, test_unknown_job);
	tcase_add_test(tc, test_empty);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(adopt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
