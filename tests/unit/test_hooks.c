/*
 * test_hooks.c - a hook's argv and environment (daemon/server/hooks.c),
 * without a loop: the placeholders of a job's hooks ({job}, {partition},
 * {request}, {error}) and of on_throttle ({warehouse}, {value}, {state}),
 * table-driven; the BACKFILLD_* variables that replace the daemon's own.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"

static const struct hook_var job_vars[] = {
	{ "job", "fct" }, { "partition", "2026-01-02" }, { "request", "42" },
	{ "error", "check failed" },
};

static const struct hook_var throttle_vars[] = {
	{ "warehouse", "dw" }, { "value", "27.5" }, { "state", "throttled" },
};

static const struct {
	const char *name;
	const struct hook_var *vars;
	size_t nvars;
	const char *arg, *want;
} subst_cases[] = {
	{ "every job placeholder", job_vars, 4,
	  "{job}:{partition}/{request} {error}",
	  "fct:2026-01-02/42 check failed" },
	{ "twice and glued", job_vars, 4, "{job}{job}-{partition}{partition}",
	  "fctfct-2026-01-022026-01-02" },
	{ "no placeholder", job_vars, 4, "/usr/local/bin/page", "/usr/local/bin/page" },
	{ "empty argument", job_vars, 4, "", "" },
	{ "unknown braces kept", job_vars, 4, "{x}{job}{}{", "{x}fct{}{" },
	{ "unclosed placeholder kept", job_vars, 4, "{job", "{job" },
	{ "capitals are not a placeholder", job_vars, 4, "{JOB}", "{JOB}" },
	{ "braces around one", job_vars, 4, "{{job}}", "{fct}" },
	{ "throttle's placeholders", throttle_vars, 3,
	  "{warehouse} {value} {state}", "dw 27.5 throttled" },
	{ "a job's placeholder in on_throttle stays", throttle_vars, 3,
	  "{job}@{warehouse}", "{job}@dw" },
};

/* Each placeholder replaced, anywhere, any number of times. */
START_TEST(test_subst)
{
	for (size_t i = 0; i < sizeof subst_cases / sizeof subst_cases[0]; i++) {
		char *s = hooks_subst(subst_cases[i].arg, subst_cases[i].vars,
				      subst_cases[i].nvars);

		ck_assert_msg(strcmp(s, subst_cases[i].want) == 0,
			      "%s: \"%s\" gave \"%s\", want \"%s\"",
			      subst_cases[i].name, subst_cases[i].arg, s,
			      subst_cases[i].want);
		free(s);
	}
}
END_TEST

/* A value put in is not scanned again: an error text holding "{job}"
 * stays as it is; empty values vanish; a long value fits. */
START_TEST(test_subst_values)
{
	const struct hook_var v[] = { { "job", "j" }, { "error", "no {job} here" },
				      { "request", "" } };
	char big[5000], want[3 * sizeof big];
	struct hook_var long_v[] = { { "error", big } };
	char *s;

	s = hooks_subst("{error}|{request}|{job}", v, 3);
	ck_assert_str_eq(s, "no {job} here||j");
	free(s);
	memset(big, 'e', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	snprintf(want, sizeof want, "%s%s%s", big, big, big);
	s = hooks_subst("{error}{error}{error}", long_v, 1);
	ck_assert_str_eq(s, want);
	free(s);
}
END_TEST

/* The argv: every element substituted, NULL-ended. */
START_TEST(test_argv)
{
	char *const tmpl[] = { "/bin/notify", "--job={job}", "{partition}",
			       "{error}", NULL };
	char **argv = hooks_argv(tmpl, 4, job_vars, 4);

	ck_assert_str_eq(argv[0], "/bin/notify");
	ck_assert_str_eq(argv[1], "--job=fct");
	ck_assert_str_eq(argv[2], "2026-01-02");
	ck_assert_str_eq(argv[3], "check failed");
	ck_assert_ptr_null(argv[4]);
	hooks_strv_free(argv);
}
END_TEST

/* The environment: the daemon's own BACKFILLD_* entries dropped (a hook
 * never sees a stale one), the rest kept in order, one BACKFILLD_NAME per
 * placeholder at the end. */
START_TEST(test_env)
{
	char *const env[] = { "PATH=/bin", "BACKFILLD_JOB=stale",
			      "HOME=/root", "BACKFILLD_STATE=old", NULL };
	char **e = hooks_env(env, throttle_vars, 3);

	ck_assert_str_eq(e[0], "PATH=/bin");
	ck_assert_str_eq(e[1], "HOME=/root");
	ck_assert_str_eq(e[2], "BACKFILLD_WAREHOUSE=dw");
	ck_assert_str_eq(e[3], "BACKFILLD_VALUE=27.5");
	ck_assert_str_eq(e[4], "BACKFILLD_STATE=throttled");
	ck_assert_ptr_null(e[5]);
	hooks_strv_free(e);
	e = hooks_env(NULL, job_vars, 4);
	ck_assert_str_eq(e[0], "BACKFILLD_JOB=fct");
	ck_assert_str_eq(e[1], "BACKFILLD_PARTITION=2026-01-02");
	ck_assert_str_eq(e[2], "BACKFILLD_REQUEST=42");
	ck_assert_str_eq(e[3], "BACKFILLD_ERROR=check failed");
	ck_assert_ptr_null(e[4]);
	hooks_strv_free(e);
}
END_TEST

static Suite *
hooks_suite(void)
{
	Suite *s = suite_create("hooks");
	TCase *tc = tcase_create("hooks");

	tcase_add_test(tc, test_subst);
	tcase_add_test(tc, test_subst_values);
	tcase_add_test(tc, test_argv);
	tcase_add_test(tc, test_env);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(hooks_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
