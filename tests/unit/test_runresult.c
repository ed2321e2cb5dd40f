/*
 * test_runresult.c - the result of a run on another node
 * (daemon/lib/cluster/runresult.h): round trips of every field, checks and
 * guards included; the defaults; the key=value line of earlier workers;
 * garbled and hostile texts refused whole, without a crash; the bounds.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runresult.h"
#include "xalloc.h"

/* Format then parse r into out; the text is returned (to free). */
static char *
round_trip(const struct runresult *r, struct runresult *out)
{
	struct buf b;
	struct err err;

	buf_init(&b);
	runresult_format(r, &b);
	ck_assert_msg(runresult_parse(b.data, out, &err) == 0, "%s: %s",
		      b.data, err.msg);
	return buf_steal(&b);
}

START_TEST(test_round_trip_scalars)
{
	struct runresult in[] = {
		{false, false, false, false, -1, NULL, 0, NULL, 0},
		{true, false, false, false, 0, NULL, 0, NULL, 0},
		{false, true, true, false, 12345678901LL, NULL, 0, NULL, 0},
		{false, false, false, true, 0, NULL, 0, NULL, 0}};

	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		struct runresult out;

		free(round_trip(&in[i], &out));
		ck_assert(out.timed_out == in[i].timed_out);
		ck_assert(out.not_started == in[i].not_started);
		ck_assert(out.cancelled == in[i].cancelled);
		ck_assert(out.committed_before == in[i].committed_before);
		ck_assert_int_eq(out.rows_changed, in[i].rows_changed);
		ck_assert_int_eq(out.nchecks, 0);
		ck_assert_ptr_null(out.guards);
		runresult_clear(&out);
	}
}
END_TEST

START_TEST(test_round_trip_batch)
{
	/* a batch of two partitions: checks of each, guards of each, names
	 * and details that need escaping, a metric not measured after */
	struct runresult_check checks[] = {
		{"min_rows", "3 rows, at least 1", true, 0, false, false, false, false, 0, 0, 0,
		 false, false, 0, 0, 0, 0, 0},
		{"no \"nulls\"\n",
		 "returned 1 \\ caf\xc3\xa9 \xf0\x9f\x98\x80", false, 1, true, true, true, false, 715.12, 0, 0,
		 false, false, 0, 0, 0, 0, 0},
		{"reconcile:rev", "", true, 1, false, true, true, true, 1.5, 1.25, -0.25,
		 false, false, 0, 0, 0, 0, 0},
		{"trend:revenue", "value 7151.2, mean 974.5", false, 0, true, false, false, true, 0,
		 7151.2, 0, true, true, 13, 974.52, 222.0, 27.82, 0},
		{"trend:rows", "history constant", false, 1, false, false, false, true, 0, 42, 0,
		 true, true, 8, 40, 0, INFINITY, 0},
		{"trend:first", "not enough history", true, 1, false, false, false, false, 0, 0, 0,
		 true, false, 0, 0, 0, 0, 0}};
	struct runresult_metric m0[] = {{true, true, true, 0.1, 1.0 / 3, -12.5},
		{true, false, false, -0.0, 0, 0}};
	struct runresult_metric m1[] = {{false, true, false, 0, 1e300, 0},
		{true, true, true, NAN, INFINITY, -INFINITY}};
	struct runresult_guard guards[] = {{true, true, 7, 9, m0, 2,
		"00000000000000ab", "00000000000000cd", false, 0},
		{false, true, 0, -4, m1, 2, "", "", false, 0}};
	struct runresult in = {false, false, false, false, 42, checks, 6,
		guards, 2};
	struct runresult out;
	char *text;

	checks[1].shard = 2; /* a check on shard 2 of a Distributed target */
	text = round_trip(&in, &out);
	ck_assert_int_eq(out.rows_changed, 42);
	ck_assert_int_eq(out.nchecks, 6);
	for (size_t i = 0; i < 6; i++) {
		ck_assert_int_eq(out.checks[i].shard, checks[i].shard);
		ck_assert_str_eq(out.checks[i].name, checks[i].name);
		ck_assert_str_eq(out.checks[i].detail, checks[i].detail);
		ck_assert(out.checks[i].passed == checks[i].passed);
		ck_assert(out.checks[i].warn == checks[i].warn);
		ck_assert(out.checks[i].recon == checks[i].recon);
		ck_assert(out.checks[i].has_source == checks[i].has_source);
		ck_assert(out.checks[i].has_target == checks[i].has_target);
		if (checks[i].recon) {
			if (checks[i].has_source)
				ck_assert_double_eq(out.checks[i].source,
						    checks[i].source);
			if (checks[i].has_target)
				ck_assert_double_eq(out.checks[i].target,
						    checks[i].target);
			ck_assert_double_eq(out.checks[i].diff, checks[i].diff);
		}
		ck_assert(out.checks[i].trend == checks[i].trend);
		if (checks[i].trend) {
			ck_assert(out.checks[i].has_sigma == checks[i].has_sigma);
			ck_assert_int_eq(out.checks[i].history, checks[i].history);
			ck_assert(out.checks[i].mean == checks[i].mean);
			ck_assert(out.checks[i].sd == checks[i].sd);
			if (checks[i].has_sigma)
				ck_assert(out.checks[i].sigma == checks[i].sigma);
			if (checks[i].has_target)
				ck_assert(out.checks[i].target == checks[i].target);
		}
		ck_assert_uint_eq(out.checks[i].part, checks[i].part);
	}
	ck_assert_int_eq(out.nguards, 2);
	for (size_t p = 0; p < 2; p++) {
		const struct runresult_guard *g = &out.guards[p];

		ck_assert(g->has_rows_before == guards[p].has_rows_before);
		ck_assert(g->has_rows_after == guards[p].has_rows_after);
		if (g->has_rows_before)
			ck_assert_int_eq(g->rows_before, guards[p].rows_before);
		ck_assert_int_eq(g->rows_after, guards[p].rows_after);
		ck_assert_int_eq(g->nmetrics, 2);
		/* the fingerprints travel (early cut-off) */
		ck_assert_str_eq(g->sum_before, guards[p].sum_before);
		ck_assert_str_eq(g->sum_after, guards[p].sum_after);
	}
	/* doubles exactly, NaN and infinities included */
	ck_assert(out.guards[0].metrics[0].before == 0.1);
	ck_assert(out.guards[0].metrics[0].after == 1.0 / 3);
	ck_assert(out.guards[0].metrics[0].change_pct == -12.5);
	ck_assert(out.guards[0].metrics[1].has_before);
	ck_assert(!out.guards[0].metrics[1].has_after);
	ck_assert(!out.guards[1].metrics[0].has_before);
	ck_assert(out.guards[1].metrics[0].after == 1e300);
	ck_assert(isnan(out.guards[1].metrics[1].before));
	ck_assert(isinf(out.guards[1].metrics[1].after) &&
		  out.guards[1].metrics[1].after > 0);
	ck_assert(isinf(out.guards[1].metrics[1].change_pct) &&
		  out.guards[1].metrics[1].change_pct < 0);
	runresult_clear(&out);
	ck_assert_int_eq(out.nchecks, 0);
	ck_assert_int_eq(out.rows_changed, -1);
	free(text);
}
END_TEST

START_TEST(test_guards_empty_and_absent)
{
	struct runresult in = {false, false, false, false, 0, NULL, 0, NULL,
		0}, out;
	struct runresult_guard none = {false, false, 0, 0, NULL, 0, "", "",
		false, 0};
	struct err err;

	/* a job with a table whose run measured nothing: guards, not NULL */
	in.guards = &none;
	in.nguards = 1;
	free(round_trip(&in, &out));
	ck_assert_ptr_nonnull(out.guards);
	ck_assert_int_eq(out.nguards, 1);
	ck_assert(!out.guards[0].has_rows_before);
	runresult_clear(&out);
	ck_assert_int_eq(runresult_parse("{\"guards\": []}", &out, &err), 0);
	ck_assert_ptr_nonnull(out.guards);
	ck_assert_int_eq(out.nguards, 0);
	runresult_clear(&out);
	ck_assert_int_eq(runresult_parse("{\"guards\": null}", &out, &err), 0);
	ck_assert_ptr_null(out.guards);
}
END_TEST

/* The rows a run's statements changed in each partition travel (early
 * cut-off reads them: without them an empty partition is unknown and its
 * downstream always rebuilt; the audit shows them): 0 apart from not
 * counted; a negative, fractional or text count is refused whole; a
 * planner's text without it reads as not counted. */
START_TEST(test_guard_changes)
{
	struct runresult_guard g[3] = {
		{true, true, 0, 0, NULL, 0, "0000000000000000",
		 "0000000000000000", true, 24},
		{true, true, 0, 0, NULL, 0, "", "", true, 0},
		{true, true, 3, 3, NULL, 0, "", "", false, 0}};
	struct runresult in = {false, false, false, false, 24, NULL, 0, g, 3};
	struct runresult out;
	struct err err;
	char *text = round_trip(&in, &out);

	ck_assert_ptr_nonnull(strstr(text, "\"changes\": 24"));
	ck_assert(out.guards[0].has_changes);
	ck_assert_int_eq(out.guards[0].changes, 24);
	ck_assert(out.guards[1].has_changes);
	ck_assert_int_eq(out.guards[1].changes, 0);
	ck_assert(!out.guards[2].has_changes);
	free(text);
	runresult_clear(&out);
	ck_assert_int_eq(runresult_parse("{\"guards\": [{\"changes\": null}]}",
					 &out, &err), 0);
	ck_assert(!out.guards[0].has_changes);
	runresult_clear(&out);
	ck_assert_int_eq(runresult_parse("{\"guards\": [{\"changes\":"
					 " 9223372036854775807}]}", &out,
					 &err), 0);
	ck_assert_int_eq(out.guards[0].changes, INT64_MAX);
	runresult_clear(&out);
	{
		const char *bad[] = {
			"{\"guards\": [{\"changes\": -1}]}",
			"{\"guards\": [{\"changes\": 1.5}]}",
			"{\"guards\": [{\"changes\": \"7\"}]}",
			"{\"guards\": [{}, {\"changes\": -9223372036854775807}]}",
		};

		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			ck_assert_int_eq(runresult_parse(bad[i], &out, &err), -1);
			ck_assert_msg(strstr(err.msg, "changes") != NULL, "%s",
				      err.msg);
			ck_assert_ptr_null(out.guards);
			ck_assert_int_eq(out.rows_changed, -1);
		}
	}
	/* a count the format is given below 0 is written as not counted */
	g[0].changes = -5;
	text = round_trip(&in, &out);
	ck_assert(!out.guards[0].has_changes);
	free(text);
	runresult_clear(&out);
}
END_TEST

START_TEST(test_defaults_and_old_lines)
{
	struct runresult r;
	struct err err;

	ck_assert_int_eq(runresult_parse(NULL, &r, &err), 0);
	ck_assert(!r.timed_out && !r.not_started);
	ck_assert_int_eq(r.rows_changed, -1);
	ck_assert_int_eq(runresult_parse("  ", &r, &err), 0);
	ck_assert_int_eq(r.rows_changed, -1);
	/* an earlier worker's line */
	ck_assert_int_eq(runresult_parse("timed_out=1 not_started=0"
					 " rows_changed=7 committed_before=1",
					 &r, &err), 0);
	ck_assert(r.timed_out && r.committed_before);
	ck_assert_int_eq(r.rows_changed, 7);
	ck_assert_int_eq(runresult_parse("  later=3  timed_out=1 ", &r, &err),
			 0);
	ck_assert(r.timed_out);
	ck_assert_int_eq(runresult_parse("timed_out=x rows_changed=7", &r,
					 &err), -1);
	ck_assert(!r.timed_out);
	ck_assert_int_eq(r.rows_changed, -1);
	ck_assert_int_eq(runresult_parse("novalue= rows_changed", &r, &err),
			 -1);
	/* unknown keys of a newer worker are skipped, whatever their value */
	ck_assert_int_eq(runresult_parse(
		"{\"new\": {\"a\": [1, -2.5e3, \"x\", null, true, {}]},"
		" \"rows_changed\": 3, \"checks\": [{\"name\": \"c\","
		" \"later\": [[]]}], \"guards\": [{\"rows_after\": 2,"
		" \"metrics\": [{\"x\": false}]}]}", &r, &err), 0);
	ck_assert_int_eq(r.rows_changed, 3);
	ck_assert_int_eq(r.nchecks, 1);
	ck_assert_str_eq(r.checks[0].detail, "");
	ck_assert_int_eq(r.guards[0].rows_after, 2);
	ck_assert(!r.guards[0].metrics[0].has_before);
	runresult_clear(&r);
}
END_TEST

/* RUNRESULT_STR_MAX + 1 bytes of 'a' (4097). */
#define RR_A16 "aaaaaaaaaaaaaaaa"
#define RR_A256 RR_A16 RR_A16 RR_A16 RR_A16 RR_A16 RR_A16 RR_A16 RR_A16 \
	RR_A16 RR_A16 RR_A16 RR_A16 RR_A16 RR_A16 RR_A16 RR_A16
#define RR_A4096 RR_A256 RR_A256 RR_A256 RR_A256 RR_A256 RR_A256 RR_A256 \
	RR_A256 RR_A256 RR_A256 RR_A256 RR_A256 RR_A256 RR_A256 RR_A256 RR_A256
#define RR_LONG RR_A4096 "a"

/* Texts a garbled row or a hostile worker could hold. */
static const char *const bad[] = {
	"{", "}", "{\"rows_changed\": }", "{\"rows_changed\": 1,}",
	"{\"rows_changed\": 1} x", "{\"rows_changed\": 1}{}",
	"{\"timed_out\": 1}", "{\"timed_out\": tru}", "{\"cancelled\": 0}",
	"{rows_changed: 1}",
	"{\"rows_changed\": 99999999999999999999}",
	"{\"rows_changed\": 1.5}", "{\"rows_changed\": \"1\"}",
	"{\"rows_changed\": 0x10}", "{\"rows_changed\": +1}",
	"{\"checks\": [{\"passed\": true}]}",
	"{\"checks\": [{\"name\": 3}]}",
	"{\"checks\": [{\"name\": \"a\", \"part\": -1}]}",
	"{\"checks\": [{\"name\": \"a\", \"part\": 100000}]}",
	"{\"checks\": [{\"name\": \"a\"}, ]}",
	"{\"checks\": {\"name\": \"a\"}}",
	"{\"checks\": [{\"name\": \"a\\u0000b\"}]}",
	"{\"checks\": [{\"name\": \"\\ud800\"}]}",
	"{\"checks\": [{\"name\": \"\\udc00\"}]}",
	"{\"checks\": [{\"name\": \"\\ud800\\u0041\"}]}",
	"{\"checks\": [{\"name\": \"\\uZZZZ\"}]}",
	"{\"checks\": [{\"name\": \"\\x\"}]}",
	"{\"checks\": [{\"name\": \"a\tb\"}]}",
	"{\"checks\": [{\"name\": \"unterminated",
	"{\"checks\": [{\"name\": \"a\\",
	"{\"guards\": [{\"metrics\": [{\"before\": nan}]}]}",
	"{\"guards\": [{\"metrics\": [{\"before\": \"NaN\"}]}]}",
	"{\"guards\": [{\"metrics\": [{\"before\": 1e999}]}]}",
	"{\"guards\": [{\"rows_before\": 1.0}]}",
	"{\"guards\": 3}",
	"{\"x\": [1 2]}", "{\"x\": @}", "{\"x\"}", "[]", "\"s\"", "null",
	/* not RFC 8259 JSON (no writer makes it): bytes that are not UTF-8,
	 * a leading zero, a bare dot */
	"{\"checks\": [{\"name\": \"caf\xe9\"}]}",
	"{\"checks\": [{\"name\": \"\xed\xa0\x80\"}]}",
	"{\"rows_changed\": 05}", "{\"guards\": [{\"metrics\": [{\"after\": 1.}]}]}",
	/* a string over the bound in a member nobody reads */
	"{\"later\": \"" RR_LONG "\"}",
};

START_TEST(test_garbled_refused)
{
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct runresult r;
		struct err err;

		err.msg[0] = '\0';
		ck_assert_msg(runresult_parse(bad[i], &r, &err) == -1,
			      "accepted: %s", bad[i]);
		ck_assert_msg(strstr(err.msg, "malformed") != NULL,
			      "%s: %s", bad[i], err.msg);
		/* refused as a whole: the defaults, nothing allocated */
		ck_assert(!r.timed_out && !r.not_started && !r.cancelled &&
			  !r.committed_before);
		ck_assert_int_eq(r.rows_changed, -1);
		ck_assert_int_eq(r.nchecks, 0);
		ck_assert_ptr_null(r.checks);
		ck_assert_ptr_null(r.guards);
	}
}
END_TEST

/* Every prefix of a valid text is refused (no read past the end). */
START_TEST(test_truncated_refused)
{
	struct runresult_check c = {"name", "detail", true, 0, false, true, true, true, 1, 2, 1,
		false, false, 0, 0, 0, 0, 0};
	struct runresult_metric m = {true, true, true, 1, 2, 100};
	struct runresult_guard g = {true, true, 1, 2, &m, 1, "", "", false,
		0};
	struct runresult in = {true, false, false, false, 5, &c, 1, &g, 1};
	struct runresult r;
	struct buf b;
	struct err err;

	buf_init(&b);
	runresult_format(&in, &b);
	for (size_t n = 1; n < b.len; n++) {
		char *cut = xstrndup(b.data, n);

		ck_assert_msg(runresult_parse(cut, &r, &err) == -1,
			      "accepted: %s", cut);
		free(cut);
	}
	buf_free(&b);
}
END_TEST

/* Bytes of a valid text changed at random (a fixed seed): each read
 * either succeeds or is refused, and frees what it took. */
START_TEST(test_mutations)
{
	struct runresult_check c[] = {{"min_rows", "3 rows", true, 0, false, false, false, false, 0, 0, 0,
		false, false, 0, 0, 0, 0, 0},
		{"x", "caf\xc3\xa9 \"q\"", false, 1, true, true, false, true, 0, 3, 0,
		 true, true, 5, 2.5, 1, 0.5, 0}};
	struct runresult_metric m = {true, false, true, 1.5, 0, 12.5};
	struct runresult_guard g[] = {{true, true, 1, 2, &m, 1, "", "", false, 0},
		{false, true, 0, 3, &m, 1, "", "", false, 0}};
	struct runresult in = {false, true, false, true, 5, c, 2, g, 2};
	struct runresult r;
	static const char pick[] =
		"{}[],:\"\\ -0123456789.eEtruefalsnu\x01\xff";
	unsigned seed = 12345;
	struct buf b;
	struct err err;

	buf_init(&b);
	runresult_format(&in, &b);
	for (int i = 0; i < 20000; i++) {
		char *t = xstrdup(b.data);
		int nflips = 1 + i % 4;

		for (int k = 0; k < nflips; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % b.len;
			seed = seed * 1103515245u + 12345u;
			t[at] = pick[(seed >> 8) % (sizeof pick - 1)];
		}
		if (runresult_parse(t, &r, &err) == 0)
			runresult_clear(&r);
		else
			ck_assert_ptr_null(r.checks);
		free(t);
	}
	buf_free(&b);
}
END_TEST

/* A negative zero keeps its sign (written as a real); a member named
 * twice counts once, the last. */
START_TEST(test_zero_and_twice)
{
	struct runresult_metric m = {true, true, true, -0.0, 0.0, -0.0};
	struct runresult_guard g = {false, false, 0, 0, &m, 1, "", "", false,
		0};
	struct runresult in = {false, false, false, false, 0, NULL, 0, &g, 1};
	struct runresult out;
	struct err err;

	free(round_trip(&in, &out));
	ck_assert(signbit(out.guards[0].metrics[0].before));
	ck_assert(!signbit(out.guards[0].metrics[0].after));
	ck_assert(signbit(out.guards[0].metrics[0].change_pct));
	runresult_clear(&out);
	ck_assert_int_eq(runresult_parse("{\"rows_changed\": 1,"
					 " \"rows_changed\": 2}", &out, &err), 0);
	ck_assert_int_eq(out.rows_changed, 2);
	runresult_clear(&out);
}
END_TEST

START_TEST(test_bounds)
{
	struct runresult r;
	struct err err;
	struct buf b;
	char *s;

	/* nesting: refused at the bound, no deep recursion */
	buf_init(&b);
	buf_addstr(&b, "{\"x\": ");
	for (int i = 0; i < 100000; i++)
		buf_addstr(&b, "[");
	ck_assert_int_eq(runresult_parse(b.data, &r, &err), -1);
	ck_assert_msg(strstr(err.msg, "deep") != NULL, "%s", err.msg);
	/* a string over RUNRESULT_STR_MAX */
	buf_reset(&b);
	buf_addstr(&b, "{\"checks\": [{\"name\": \"");
	for (int i = 0; i <= RUNRESULT_STR_MAX; i++)
		buf_addstr(&b, "a");
	buf_addstr(&b, "\"}]}");
	ck_assert_int_eq(runresult_parse(b.data, &r, &err), -1);
	ck_assert_msg(strstr(err.msg, "too long") != NULL, "%s", err.msg);
	/* more metrics than RUNRESULT_MAX_METRICS */
	buf_reset(&b);
	buf_addstr(&b, "{\"guards\": [{\"metrics\": [{}");
	for (int i = 0; i < RUNRESULT_MAX_METRICS; i++)
		buf_addstr(&b, ", {}");
	buf_addstr(&b, "]}]}");
	ck_assert_int_eq(runresult_parse(b.data, &r, &err), -1);
	ck_assert_msg(strstr(err.msg, "too many") != NULL, "%s", err.msg);
	buf_free(&b);
	/* a long name or detail is cut when written, at a character, and
	 * reads back; bytes that are not UTF-8 too */
	s = xcalloc(3 * RUNRESULT_STR_MAX, 1);
	memset(s, 'a', 3 * RUNRESULT_STR_MAX - 1);
	memcpy(s + RUNRESULT_STR_MAX / 4 - 2, "\xc3\xa9", 2);
	{
		struct runresult_check c = {s, s, false, 0, false, false, false, false, 0, 0, 0,
			false, false, 0, 0, 0, 0, 0};
		struct runresult in = {false, false, false, false, 0, &c, 1,
			NULL, 0};
		struct runresult out;

		free(round_trip(&in, &out));
		ck_assert_uint_eq(strlen(out.checks[0].name),
				  RUNRESULT_STR_MAX / 4 - 2);
		runresult_clear(&out);
		memset(s, 0xff, 3 * RUNRESULT_STR_MAX - 1);
		free(round_trip(&in, &out));
		ck_assert_uint_le(strlen(out.checks[0].detail),
				  RUNRESULT_STR_MAX);
		runresult_clear(&out);
	}
	free(s);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("runresult");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_round_trip_scalars);
	tcase_add_test(tc, test_round_trip_batch);
	tcase_add_test(tc, test_guards_empty_and_absent);
	tcase_add_test(tc, test_guard_changes);
	tcase_add_test(tc, test_defaults_and_old_lines);
	tcase_add_test(tc, test_garbled_refused);
	tcase_add_test(tc, test_truncated_refused);
	tcase_add_test(tc, test_mutations);
	tcase_add_test(tc, test_zero_and_twice);
	tcase_add_test(tc, test_bounds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
