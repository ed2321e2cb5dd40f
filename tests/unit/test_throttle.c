/*
 * test_throttle.c - what a throttle check's result does
 * (throttle_decide, daemon/server/exec/throttle.c), table-driven: above max is
 * throttled (max itself is not), above critical is critical as well, a
 * failed query throttles but is never critical, and a spell begins and
 * ends once (on_throttle fires on exactly those two).
 */
#include <check.h>
#include <stdlib.h>

#include "throttle.h"

static const struct throttle_def with_critical = {
	.sql = "SELECT load", .has_max = true, .max = 10,
	.has_critical = true, .critical = 20, .every = 5,
};
static const struct throttle_def max_only = {
	.sql = "SELECT load", .has_max = true, .max = 10, .every = 5,
};

static const struct {
	const char *name;
	const struct throttle_def *t;
	bool was, ok;
	double value;
	bool throttled, critical, begins, ends;
} cases[] = {
	{ "below max", &with_critical, false, true, 5, false, false, false, false },
	{ "at max is not above", &with_critical, false, true, 10, false, false, false, false },
	{ "negative", &with_critical, false, true, -3, false, false, false, false },
	{ "above max: a spell begins", &with_critical, false, true, 10.5, true, false, true, false },
	{ "above critical at once", &with_critical, false, true, 25, true, true, true, false },
	{ "at critical is only throttled", &with_critical, false, true, 20, true, false, true, false },
	{ "still above max: no new spell", &with_critical, true, true, 15, true, false, false, false },
	{ "critical within a spell", &with_critical, true, true, 21, true, true, false, false },
	{ "recovery: at max again", &with_critical, true, true, 10, false, false, false, true },
	{ "recovery from critical", &with_critical, true, true, 0, false, false, false, true },
	{ "failed query throttles", &with_critical, false, false, 0, true, false, true, false },
	{ "failed query is never critical", &with_critical, true, false, 1e9, true, false, false, false },
	{ "failed query does not release", &max_only, true, false, 0, true, false, false, false },
	{ "no critical configured", &max_only, false, true, 1e12, true, false, true, false },
	{ "no critical, recovery", &max_only, true, true, 9.99, false, false, false, true },
	{ "not throttled, still fine", &max_only, false, true, 0, false, false, false, false },
};

START_TEST(test_decide)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct throttle_decision d = throttle_decide(cases[i].t,
							     cases[i].was,
							     cases[i].ok,
							     cases[i].value);

		ck_assert_msg(d.throttled == cases[i].throttled &&
			      d.critical == cases[i].critical &&
			      d.begins == cases[i].begins &&
			      d.ends == cases[i].ends,
			      "%s: throttled %d critical %d begins %d ends %d,"
			      " want %d %d %d %d", cases[i].name, d.throttled,
			      d.critical, d.begins, d.ends, cases[i].throttled,
			      cases[i].critical, cases[i].begins, cases[i].ends);
	}
}
END_TEST

/* A run of checks: one spell, one begin and one end, whatever the values
 * do inside it. */
START_TEST(test_spell)
{
	static const double values[] = { 1, 12, 30, 11, 25, 10, 3, 2 };
	bool throttled = false;
	int begins = 0, ends = 0, critical = 0;

	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
		struct throttle_decision d = throttle_decide(&with_critical,
							     throttled, true,
							     values[i]);

		begins += d.begins;
		ends += d.ends;
		critical += d.critical;
		throttled = d.throttled;
	}
	ck_assert_int_eq(begins, 1);
	ck_assert_int_eq(ends, 1);
	ck_assert_int_eq(critical, 2);
	ck_assert(!throttled);
}
END_TEST

static Suite *
throttle_suite(void)
{
	Suite *s = suite_create("throttle");
	TCase *tc = tcase_create("throttle");

	tcase_add_test(tc, test_decide);
	tcase_add_test(tc, test_spell);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(throttle_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
