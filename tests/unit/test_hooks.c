/*
 * test_hooks.c - a hook's argv and environment (daemon/server/base/hooks.c),
 * without a loop: the placeholders of a job's hooks ({job}, {partition},
 * {request}, {error}) and of on_throttle ({warehouse}, {value}, {state}),
 * table-driven; the BACKFILLD_* variables that replace the daemon's own;
 * the bounds of daemon/lib/hookq.c (hooks in flight, the queue, what is
 * dropped and logged once, a hook's share of the log).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "hookq.h"
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


/* A thousand hooks fired at once under hook_concurrency 4, hook_queue
 * 4096: 4 run, the rest queue, none is dropped; as hooks end the queue
 * is started in order, never more than 4 at once, until all have run. */
START_TEST(test_q_thousand)
{
	struct hookq q;
	int run = 0, queued = 0, started = 0, maxrun = 0;

	hookq_init(&q, HOOKQ_CONCURRENCY_DEFAULT, HOOKQ_QUEUE_DEFAULT);
	ck_assert_int_eq(q.concurrency, 4);
	ck_assert_int_eq(q.queue, 4096);
	for (int i = 0; i < 1000; i++) {
		enum hookq_verdict v = hookq_fire(&q);

		ck_assert_msg(v == HOOKQ_RUN || v == HOOKQ_QUEUE,
			      "hook %d: verdict %d", i, v);
		run += v == HOOKQ_RUN;
		queued += v == HOOKQ_QUEUE;
	}
	ck_assert_int_eq(run, 4);
	ck_assert_int_eq(queued, 996);
	ck_assert_int_eq(q.running, 4);
	ck_assert_int_eq(q.queued, 996);
	ck_assert_int_eq(q.dropped, 0);
	started = run;
	while (q.running > 0) {
		hookq_done(&q);
		while (hookq_next(&q))
			started++;
		if (q.running > maxrun)
			maxrun = q.running;
	}
	ck_assert_int_eq(started, 1000);
	ck_assert_int_eq(maxrun, 4);
	ck_assert_int_eq(q.queued, 0);
	ck_assert(!hookq_next(&q));
}
END_TEST

/* A full queue drops: counted each time, logged once per spell; the
 * spell ends when the queue is empty again, and the next drop is logged. */
START_TEST(test_q_drop)
{
	struct hookq q;

	hookq_init(&q, 1, 2);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_RUN);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP_LOG);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP);
	ck_assert_int_eq(q.dropped, 3);
	/* one ends: the head starts, one place in the queue, still a spell */
	hookq_done(&q);
	ck_assert(hookq_next(&q));
	ck_assert(!hookq_next(&q));
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP);
	ck_assert_int_eq(q.dropped, 4);
	/* the queue empties: the spell is over */
	hookq_done(&q);
	ck_assert(hookq_next(&q));
	hookq_done(&q);
	ck_assert(hookq_next(&q));
	ck_assert_int_eq(q.queued, 0);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP_LOG);
	ck_assert_int_eq(q.dropped, 5);
	/* no queue at all: drops while the one runs; its end ends the spell */
	hookq_init(&q, 1, 0);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_RUN);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP_LOG);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP);
	hookq_done(&q);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_RUN);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_DROP_LOG);
}
END_TEST

/* A hook fired while others wait goes behind them, even when a place is
 * free (first in, first out); a reload's bounds take effect at once. */
START_TEST(test_q_order_and_bounds)
{
	struct hookq q;

	hookq_init(&q, 2, 10);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_RUN);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_RUN);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	hookq_done(&q);
	/* one place free, one waiting: the newcomer queues behind it */
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	ck_assert(hookq_next(&q));
	ck_assert(!hookq_next(&q));
	ck_assert_int_eq(q.queued, 1);
	/* raised to 3: the waiting one may start */
	hookq_bound(&q, 3, 10);
	ck_assert(hookq_next(&q));
	ck_assert_int_eq(q.running, 3);
	/* lowered to 1: nothing new starts until the three have ended */
	hookq_bound(&q, 1, 10);
	ck_assert_int_eq(hookq_fire(&q), HOOKQ_QUEUE);
	hookq_done(&q);
	ck_assert(!hookq_next(&q));
	hookq_done(&q);
	ck_assert(!hookq_next(&q));
	hookq_done(&q);
	ck_assert(hookq_next(&q));
	ck_assert_int_eq(q.running, 1);
	/* nonsense bounds are clamped: one runs, none waits */
	hookq_init(&q, 0, -5);
	ck_assert_int_eq(q.concurrency, 1);
	ck_assert_int_eq(q.queue, 0);
}
END_TEST

/* A hook's share of the log: lines are logged while their cost fits in
 * HOOKQ_OUTPUT_MAX; from the first that does not, every byte is counted
 * dropped (its newline too), even a short line that would fit. */
START_TEST(test_out_share)
{
	struct hookq_out o = { 0 };
	size_t lines = 0;

	/* "yes": one byte of output, about 60 bytes of log per line */
	while (hookq_out_take(&o, 1, 60, true))
		lines++;
	ck_assert_uint_eq(lines, HOOKQ_OUTPUT_MAX / 60);
	ck_assert(o.logged <= HOOKQ_OUTPUT_MAX);
	ck_assert_uint_eq(o.dropped, 2);
	ck_assert(!hookq_out_take(&o, 0, 1, true));
	ck_assert(!hookq_out_take(&o, 10, 20, false));
	ck_assert_uint_eq(o.dropped, 2 + 1 + 10);
	hookq_out_cut(&o, 7);
	ck_assert_uint_eq(o.dropped, 20);
	ck_assert_uint_eq(o.logged, lines * 60);
	/* exactly the share fits */
	memset(&o, 0, sizeof o);
	ck_assert(hookq_out_take(&o, 100, HOOKQ_OUTPUT_MAX, true));
	ck_assert(!hookq_out_take(&o, 0, 1, true));
	ck_assert_uint_eq(o.dropped, 1);
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
	tcase_add_test(tc, test_q_thousand);
	tcase_add_test(tc, test_q_drop);
	tcase_add_test(tc, test_q_order_and_bounds);
	tcase_add_test(tc, test_out_share);
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
