/*
 * test_runresult.c - the result line of a run on another node
 * (daemon/lib/runresult.h): round trips, defaults, malformed fields,
 * unknown keys.
 */
#include <check.h>
#include <stdlib.h>

#include "runresult.h"

START_TEST(test_round_trip)
{
	struct runresult in[] = {{false, false, -1, false},
		{true, false, 0, false}, {false, true, 12345678901LL, false},
		{false, false, 0, true}};
	char line[RUNRESULT_MAX];

	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		struct runresult out;

		runresult_format(&in[i], line, sizeof line);
		ck_assert_int_eq(runresult_parse(line, &out), 0);
		ck_assert(out.timed_out == in[i].timed_out);
		ck_assert(out.not_started == in[i].not_started);
		ck_assert_int_eq(out.rows_changed, in[i].rows_changed);
		ck_assert(out.committed_before == in[i].committed_before);
	}
	/* the line an older worker writes is unchanged without the flag */
	runresult_format(&in[1], line, sizeof line);
	ck_assert_str_eq(line, "timed_out=1 not_started=0 rows_changed=0");
}
END_TEST

START_TEST(test_defaults_and_bad)
{
	struct runresult r = {true, true, 5, true};

	ck_assert_int_eq(runresult_parse(NULL, &r), 0);
	ck_assert(!r.timed_out && !r.not_started && !r.committed_before);
	ck_assert_int_eq(r.rows_changed, -1);
	ck_assert_int_eq(runresult_parse("timed_out=x rows_changed=7", &r), -1);
	ck_assert(!r.timed_out);
	ck_assert_int_eq(r.rows_changed, 7);
	ck_assert_int_eq(runresult_parse("novalue= rows_changed", &r), -1);
	ck_assert_int_eq(runresult_parse("  later=3  timed_out=1 ", &r), 0);
	ck_assert(r.timed_out);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("runresult");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_defaults_and_bad);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
