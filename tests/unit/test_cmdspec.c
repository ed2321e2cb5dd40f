/*
 * test_cmdspec.c - the command specification shared by backfillctl and
 * backfilld: each command's arguments accept and refuse what they should,
 * with the one message of each rule (table-driven), the enums' tables;
 * a request parsed once into typed values, copied and released.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdspec.h"

#define MAX_FIELDS 16

/* A request's fields: "key=value" strings, NULL-terminated. */
struct fields {
	const char *kv[MAX_FIELDS];
};

/* The value of field `field` in a struct fields (cmdspec_get_fn). */
static const char *
get(const void *src, const char *field)
{
	const struct fields *f = src;
	size_t n = strlen(field);

	for (int i = 0; i < MAX_FIELDS && f->kv[i] != NULL; i++)
		if (strncmp(f->kv[i], field, n) == 0 && f->kv[i][n] == '=')
			return f->kv[i] + n + 1;
	return NULL;
}

/*
 * The cases: a command, its fields, and "" when they are accepted, else
 * a piece of the message.  As the daemon checks them (client false):
 * backfillctl runs the same checks, plus its own about --wait and
 * report's --html.
 */
static const struct {
	const char *cmd;
	struct fields f;
	const char *want;
} cases[] = {
	/* backfill: the ways of choosing the dates */
	{ "backfill", { { "job=j", "from=2026-02-01", "to=2026-02-03" } }, "" },
	{ "backfill", { { "job=j", "from=2026-02-01T05", "to=2026-02-01T07" } },
	  "" },
	{ "backfill", { { "job=j", "dates=2026-02-01" } }, "" },
	{ "backfill", { { "job=j", "stale=1" } }, "" },
	{ "backfill", { { "job=j", "built_by=3f2a9c0d41b7e865" } }, "" },
	{ "backfill", { { "job=j", "built_by=3f2a9c0d41b7e865", "from=2026-02-01",
			  "to=2026-02-02" } }, "" },
	{ "backfill", { { "from=2026-02-01", "to=2026-02-03" } },
	  "missing JOB: say which job to backfill" },
	{ "backfill", { { "job=", "stale=1" } }, "the job name is empty" },
	/* no dates: the daemon decides by the job (partition: none takes
	 * none; any other job is refused there, "no dates given") */
	{ "backfill", { { "job=j" } }, "" },
	{ "backfill", { { "job=j", "stale=0" } }, "" },
	{ "backfill", { { "job=j", "from=2026-02-01" } },
	  "--from without --to: give both bounds" },
	{ "backfill", { { "job=j", "to=2026-02-01" } },
	  "--to without --from: give both bounds" },
	{ "backfill", { { "job=j", "from=2026-02-01", "to=2026-02-02",
			  "dates=2026-02-01" } },
	  "--from/--to and --dates-file both given: choose the dates one way" },
	{ "backfill", { { "job=j", "from=2026-02-01", "to=2026-02-02",
			  "stale=1" } },
	  "--from/--to and --stale both given" },
	{ "backfill", { { "job=j", "dates=2026-02-01", "stale=1" } },
	  "--dates-file and --stale both given" },
	{ "backfill", { { "job=j", "stale=1", "built_by=3f2a9c0d41b7e865" } },
	  "--stale and --built-by both given: choose the dates one way (only"
	  " --from/--to may narrow --built-by and --changed)" },
	/* --changed: the partitions a deploy changed, narrowed by a range */
	{ "backfill", { { "job=j", "changed=1" } }, "" },
	{ "backfill", { { "job=j", "changed=1", "from=2026-02-01",
			  "to=2026-02-02" } }, "" },
	{ "backfill", { { "job=j", "changed=1", "stale=1" } },
	  "--stale and --changed both given" },
	{ "backfill", { { "job=j", "changed=1", "built_by=3f2a9c0d41b7e865" } },
	  "--built-by and --changed both given" },
	{ "backfill", { { "job=j", "changed=0" } }, "" }, /* the daemon decides */
	{ "backfill", { { "job=j", "stale=1", "no_cutoff=1" } }, "" },
	{ "backfill", { { "job=j", "built_by=xyz" } },
	  "--built-by takes a code version: its 16 hex digits" },
	{ "backfill", { { "job=j", "built_by=" } },
	  "--built-by needs a code version" },
	{ "backfill", { { "job=j", "from=2026-02-30", "to=2026-03-01" } },
	  "--from: 2026-02-30 is not a date" },
	{ "backfill", { { "job=j", "from=2026-02-01", "to=2026-13-01" } },
	  "--to: 2026-13-01 is not a date" },
	{ "backfill", { { "job=j", "from=2026-2-1", "to=2026-02-03" } },
	  "--from: bad date" },
	/* an hour written wrongly is told how hours are written */
	{ "backfill", { { "job=j", "from=2026-02-08T5", "to=2026-02-08T06" } },
	  "--from: bad hour \"2026-02-08T5\": write hours as YYYY-MM-DDTHH" },
	{ "backfill", { { "job=j", "from=2026-02-08T05", "to=2026-02-08T06:00" } },
	  "--to: bad hour \"2026-02-08T06:00\": write hours as YYYY-MM-DDTHH" },
	/* the hour of a zone with its offset: one hour of a repeated wall
	 * hour (the daemon checks it against the job's zone) */
	{ "backfill", { { "job=j", "from=2026-10-25T02+02:00",
			  "to=2026-10-25T02+01:00" } }, "" },
	{ "backfill", { { "job=j", "from=2021-11-07T01-06:00",
			  "to=2021-11-07T01-06:00" } }, "" },
	{ "backfill", { { "job=j", "from=2026-10-25T02+2:00",
			  "to=2026-10-25T03" } },
	  "--from: bad hour \"2026-10-25T02+2:00\": write hours as YYYY-MM-DDTHH" },
	{ "backfill", { { "job=j", "from=2026-10-25T24+01:00",
			  "to=2026-10-25T03" } }, "--from: " },
	{ "backfill", { { "job=j", "from=2026-02-03", "to=2026-02-01" } },
	  "--from 2026-02-03 is after --to 2026-02-01" },
	{ "backfill", { { "job=j", "stale=1", "reprocess=failed" } }, "" },
	{ "backfill", { { "job=j", "stale=1", "reprocess=sometimes" } },
	  "--reprocess must be all, failed or missing, not 'sometimes'" },
	{ "backfill", { { "job=j", "stale=1", "reprocess=faild" } },
	  "(did you mean 'failed'?)" },
	{ "backfill", { { "job=j", "stale=1", "concurrency=2" } }, "" },
	{ "backfill", { { "job=j", "stale=1", "concurrency=0" } },
	  "--concurrency must be a positive integer, not '0'" },
	{ "backfill", { { "job=j", "stale=1", "concurrency=-1" } },
	  "--concurrency must be a positive integer, not '-1'" },
	{ "backfill", { { "job=j", "stale=1", "concurrency=+3" } },
	  "positive integer" },
	{ "backfill", { { "job=j", "stale=1", "concurrency=99999999999999999999"
	  } }, "positive integer" },
	{ "backfill", { { "job=j", "stale=1", "downstream=a,b" } }, "" },
	{ "backfill", { { "job=j", "stale=1", "downstream=a," } },
	  "--downstream 'a,' has an empty job name" },
	{ "backfill", { { "job=j", "stale=1", "downstream=,a" } },
	  "empty job name" },
	{ "backfill", { { "job=j", "stale=1", "downstream=a,,b" } },
	  "empty job name" },
	{ "backfill", { { "job=j", "stale=1", "downstream=" } },
	  "empty job name" },
	{ "backfill", { { "job=j", "stale=1", "downstream=a",
			  "no_downstream=1" } },
	  "--downstream and --no-downstream both given: choose one" },
	/* rerun, verify */
	{ "rerun", { { "job=j", "partition=2026-02-01" } }, "" },
	{ "rerun", { { "job=j", "partition=2026-02-01T23" } }, "" },
	{ "rerun", { { "job=j" } }, "missing PARTITION: give the partition's key" },
	{ "rerun", { { "partition=2026-02-01" } }, "missing JOB: say which job"
	  " to rerun" },
	{ "rerun", { { "job=j", "partition=2026-13-01" } },
	  "PARTITION: 2026-13-01 is not a date" },
	{ "rerun", { { "job=j", "partition=2026-02-01T24" } },
	  "2026-02-01T24 is not an hour" },
	{ "verify", { { "job=j", "partition=2026-02-01" } }, "" },
	/* -: the key of a job with partition: none (the daemon parses it in
	 * the job's calendar); not a date for --from */
	{ "rerun", { { "job=j", "partition=-" } }, "" },
	{ "verify", { { "job=j", "partition=-" } }, "" },
	{ "logs", { { "job=j", "partition=-" } }, "" },
	{ "backfill", { { "job=j", "from=-", "to=-" } }, "--from: bad date" },
	{ "verify", { { "job=j" } }, "missing PARTITION" },
	/* status, runs */
	{ "status", { { NULL } }, "" },
	{ "status", { { "job=j" } }, "" },
	{ "status", { { "job=" } }, "the job name is empty" },
	{ "runs", { { "limit=5", "request=3", "state=failed", "json=1" } }, "" },
	{ "runs", { { "limit=-5" } },
	  "--limit must be a positive integer, not '-5'" },
	{ "runs", { { "limit=abc" } }, "--limit must be a positive integer" },
	{ "runs", { { "request=0" } }, "--request must be a positive integer" },
	{ "runs", { { "state=exploded" } },
	  "--state must be queued, running, succeeded, failed, blocked,"
	  " cancelled or skipped, not 'exploded'" },
	{ "runs", { { "json=1", "jsonl=1" } },
	  "--json and --jsonl exclude each other: choose one" },
	{ "runs", { { "json=1", "jsonl=0" } }, "" },
	/* audit, cancel, retry, pause, map, report */
	{ "audit", { { "request=7" } }, "" },
	{ "audit", { { NULL } }, "missing --request N: say which request to"
	  " audit" },
	{ "audit", { { "request=x" } }, "--request must be a positive integer" },
	{ "cancel", { { "request=7" } }, "" },
	{ "cancel", { { "request=abc" } },
	  "REQUEST must be a positive integer, not 'abc'" },
	{ "cancel", { { NULL } }, "missing REQUEST: say which request to cancel" },
	{ "retry", { { NULL } }, "missing REQUEST: say which request to retry" },
	{ "wait", { { "request=7" } }, "" },
	{ "wait", { { NULL } },
	  "missing REQUEST: say which request to wait for" },
	{ "wait", { { "request=0" } }, "REQUEST" },
	/* mark: a required flag and text, a list of partitions */
	{ "mark", { { "job=j", "partitions=2026-01-01,2026-01-02",
		      "succeeded=1", "reason=fixed" } }, "" },
	{ "mark", { { "job=j", "partitions=2026-01-01", "reason=fixed" } },
	  "missing --succeeded" },
	{ "mark", { { "job=j", "partitions=2026-01-01", "succeeded=1" } },
	  "missing --reason TEXT" },
	{ "mark", { { "job=j", "partitions=2026-01-01", "succeeded=1",
		      "reason=" } }, "missing --reason TEXT" },
	{ "mark", { { "job=j", "succeeded=1", "reason=x" } },
	  "missing PARTITION" },
	{ "mark", { { "job=j", "partitions=2026-01-01,,x", "succeeded=1",
		      "reason=x" } }, "PARTITION" },
	{ "logs", { { "job=j", "partition=2026-01-01" } }, "" },
	{ "logs", { { "job=j", "partition=2026-01-01", "attempt=0" } },
	  "--attempt" },
	{ "logs", { { "job=j" } }, "missing PARTITION" },
	{ "pause", { { NULL } }, "missing JOB: say which job" },
	{ "resume", { { "job=j" } }, "" },
	{ "map", { { "job=j", "from=anything" } }, "" },
	{ "report", { { NULL } }, "" },
	{ "reload", { { "dry_run=1", "json=1" } }, "" },
};

/* Every case, as the daemon checks it. */
START_TEST(test_cases)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct cmdspec *cs = cmdspec_find(cases[i].cmd);
		struct err err;
		int rc;

		err_clear(&err);
		ck_assert_msg(cs != NULL, "case %zu: no command %s", i,
			      cases[i].cmd);
		rc = cmdspec_check(cs, get, &cases[i].f, false, &err);
		if (cases[i].want[0] == '\0') {
			ck_assert_msg(rc == 0, "case %zu (%s): refused: %s", i,
				      cases[i].cmd, err.msg);
			continue;
		}
		ck_assert_msg(rc == -1, "case %zu (%s): accepted, want \"%s\"",
			      i, cases[i].cmd, cases[i].want);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
		ck_assert_msg(strstr(err.msg, cases[i].want) != NULL,
			      "case %zu (%s): message \"%s\" lacks \"%s\"", i,
			      cases[i].cmd, err.msg, cases[i].want);
		ck_assert_msg(strchr(err.msg, '\n') == NULL,
			      "case %zu: a message of more than one line", i);
	}
}
END_TEST

/* report --html is the client's: required there, ignored by the daemon. */
START_TEST(test_client_only)
{
	struct fields none = { { NULL } }, html = { { "html=/tmp/r.html" } };
	struct fields empty = { { "html=" } };
	struct err err;

	ck_assert_int_eq(cmdspec_check(&cmdspec_report, get, &none, false,
				       &err), 0);
	ck_assert_int_eq(cmdspec_check(&cmdspec_report, get, &none, true,
				       &err), -1);
	ck_assert_str_eq(err.msg, "missing --html FILE: say where to write the"
			 " report page");
	ck_assert_int_eq(cmdspec_check(&cmdspec_report, get, &empty, true,
				       &err), -1);
	ck_assert_int_eq(cmdspec_check(&cmdspec_report, get, &html, true,
				       &err), 0);
}
END_TEST

/* The table: names unique, found by name, usage beginning with the name,
 * options and positionals within the client's bounds, fields that are
 * protocol keys, enum arguments with values, and the mutating commands
 * the daemon guards. */
START_TEST(test_table)
{
	/* verify rolls back: anyone who may connect may run it */
	static const char *const mutating[] = { "backfill", "rerun",
		"pause", "resume", "cancel", "retry", "reload", "mark" };
	size_t nmut = 0;

	ck_assert_uint_eq(cmdspec_count, 19);
	for (size_t i = 0; i < cmdspec_count; i++) {
		const struct cmdspec *cs = cmdspec_table[i];

		ck_assert_ptr_eq(cmdspec_find(cs->name), cs);
		ck_assert_msg(strncmp(cs->usage, cs->name, strlen(cs->name)) == 0,
			      "%s: usage %s", cs->name, cs->usage);
		ck_assert_int_le(cmdspec_nopts(cs), CMDSPEC_MAX_OPTS);
		ck_assert_int_le(cs->minpos, cmdspec_npos(cs));
		for (int k = 0; k < cs->minpos; k++)
			ck_assert_msg(cs->pos[k].missing != NULL, "%s: positional"
				      " %d is required without a message",
				      cs->name, k);
		for (int k = 0; k < cmdspec_nopts(cs); k++) {
			const struct cmdspec_arg *a = &cs->opts[k];

			ck_assert_msg(a->kind != CMDSPEC_ENUM || a->values != NULL,
				      "%s --%s: an enum without values",
				      cs->name, a->name);
			ck_assert_msg((a->field == NULL) == (a->kind ==
				      CMDSPEC_WAIT), "%s --%s: field", cs->name,
				      a->name);
			ck_assert_msg(a->field == NULL ||
				      strspn(a->field, "abcdefghijklmnopqrstuvwxyz_")
				      == strlen(a->field), "%s: field %s",
				      cs->name, a->field);
		}
		if (cs->flags & CMDSPEC_MUTATES) {
			bool found = false;

			for (size_t m = 0; m < sizeof mutating / sizeof mutating[0];
			     m++)
				found |= strcmp(mutating[m], cs->name) == 0;
			ck_assert_msg(found, "%s mutates", cs->name);
			nmut++;
		}
	}
	ck_assert_uint_eq(nmut, sizeof mutating / sizeof mutating[0]);
	ck_assert(cmdspec_runs.flags & CMDSPEC_STREAMS);
	ck_assert(!(cmdspec_status.flags & CMDSPEC_STREAMS));
	ck_assert_ptr_eq(cmdspec_find("wait"), &cmdspec_wait);
	ck_assert(cmdspec_wait.flags & CMDSPEC_CONTROL);
	/* the control socket's and the forwarding's flags, by name */
	ck_assert(cmdspec_is("wait", CMDSPEC_CONTROL));
	ck_assert(!cmdspec_is("status", CMDSPEC_CONTROL));
	ck_assert(!cmdspec_is("nonesuch", CMDSPEC_CONTROL));
	ck_assert(!cmdspec_is(NULL, CMDSPEC_CONTROL));
	for (size_t i = 0; i < cmdspec_count; i++) {
		const char *n = cmdspec_table[i]->name;
		bool local = strcmp(n, "runs") == 0 ||
			     strcmp(n, "reload") == 0 ||
			     strcmp(n, "logs") == 0;

		ck_assert_msg(cmdspec_is(n, CMDSPEC_LOCAL) == local,
			      "%s answered by a node itself", n);
	}
	ck_assert_ptr_eq(cmdspec_find("completion"), &cmdspec_completion);
	ck_assert(cmdspec_completion.flags & CMDSPEC_CLIENT);
	ck_assert(cmdspec_mark.flags & CMDSPEC_MANY);
	ck_assert(cmdspec_mark.flags & CMDSPEC_MUTATES);
	ck_assert(cmdspec_logs.flags & CMDSPEC_STREAMS);
	ck_assert(!(cmdspec_logs.flags & CMDSPEC_MUTATES));
	ck_assert_ptr_null(cmdspec_find("frobnicate"));
}
END_TEST

/* --reprocess: names and values, both ways; NULL is all. */
START_TEST(test_reprocess)
{
	enum reprocess r;

	ck_assert_int_eq(cmdspec_reprocess_parse(NULL, &r), 0);
	ck_assert_int_eq(r, REPROCESS_ALL);
	for (int i = REPROCESS_ALL; i <= REPROCESS_MISSING; i++) {
		const char *name = cmdspec_reprocess_name((enum reprocess)i);

		ck_assert_int_eq(cmdspec_reprocess_parse(name, &r), 0);
		ck_assert_int_eq(r, i);
	}
	ck_assert_str_eq(cmdspec_reprocess_name(REPROCESS_FAILED), "failed");
	ck_assert_str_eq(cmdspec_reprocess_name(REPROCESS_MISSING), "missing");
	ck_assert_int_eq(cmdspec_reprocess_parse("sometimes", &r), -1);
	ck_assert_int_eq(cmdspec_reprocess_parse("", &r), -1);
}
END_TEST

/* One value by its kind, with the integer it holds. */
START_TEST(test_value)
{
	const struct cmdspec_arg integer = { "limit", CMDSPEC_INT, "limit",
		NULL, NULL, 0, 0 };
	const struct cmdspec_arg budget = { "budget", CMDSPEC_DURATION,
		"budget", NULL, NULL, 0, 0 };
	long long n = 0;
	struct err err;

	ck_assert_int_eq(cmdspec_check_value(&integer, "--limit", "007", &n,
					     &err), 0);
	ck_assert_int_eq(n, 7);
	ck_assert_int_eq(cmdspec_check_value(&integer, "--limit", "", &n,
					     &err), -1);
	ck_assert_str_eq(err.msg, "--limit must be a positive integer, not ''");
	ck_assert_int_eq(cmdspec_check_value(&integer, "--limit", "1 ", &n,
					     &err), -1);
	ck_assert_int_eq(cmdspec_check_value(&budget, "--budget", "90m", &n,
					     &err), 0);
	ck_assert_int_eq(n, 5400);
	ck_assert_int_eq(cmdspec_check_value(&budget, "--budget", "0s", &n,
					     &err), -1);
	ck_assert_str_eq(err.msg, "--budget must be a positive duration like"
			 " 30s, 15m, 2h or 1d, at most 36500d (100 years),"
			 " not '0s'");
	ck_assert_int_eq(cmdspec_check_value(&budget, "--budget", "2 h", &n,
					     &err), -1);
	ck_assert_int_eq(cmdspec_date_ok("2024-02-29", &err), 0);
	ck_assert_int_eq(cmdspec_date_ok("2025-02-29", &err), -1);
	ck_assert_int_eq(cmdspec_date_ok("2026-01-01T00", &err), 0);
	ck_assert_int_eq(cmdspec_date_ok("2026-01-01T", &err), -1);
}
END_TEST

/* A request parsed into its command's typed values: each kind. */
START_TEST(test_parse)
{
	const struct fields f = { { "job=fct", "from=2026-02-01",
		"to=2026-02-03T05", "downstream=a,bb,c", "concurrency=3",
		"budget=2h", "reprocess=failed", "fail_fast=1", "dry_run=0",
		"json=1", "reason=why", "tty=1", "cmd=backfill" } };
	struct cmdspec_req rq, copy;
	struct err err;

	ck_assert_int_eq(cmdspec_parse(&cmdspec_backfill, get, &f, false, &rq,
				       &err), 0);
	ck_assert_ptr_eq(rq.cs, &cmdspec_backfill);
	ck_assert(rq.tty);
	ck_assert_str_eq(rq.backfill.job, "fct");
	ck_assert_str_eq(rq.backfill.from.text, "2026-02-01");
	ck_assert(!rq.backfill.from.hour);
	ck_assert(rq.backfill.to.hour);
	ck_assert_int_eq(rq.backfill.to.v - rq.backfill.from.v * 24, 2 * 24 + 5);
	ck_assert_uint_eq(rq.backfill.downstream.n, 3);
	ck_assert_str_eq(rq.backfill.downstream.v[1], "bb");
	ck_assert_str_eq(rq.backfill.downstream.text, "a,bb,c");
	ck_assert_int_eq(rq.backfill.concurrency, 3);
	ck_assert_int_eq(rq.backfill.budget, 7200);
	ck_assert_str_eq(rq.backfill.reprocess.name, "failed");
	ck_assert_int_eq(rq.backfill.reprocess.i, REPROCESS_FAILED);
	ck_assert(rq.backfill.fail_fast && rq.backfill.json);
	ck_assert(!rq.backfill.dry_run && !rq.backfill.stale);
	ck_assert_ptr_null(rq.backfill.built_by);
	ck_assert_ptr_null(rq.backfill.dates.text);
	/* a copy outlives its source */
	cmdspec_req_dup(&rq, &copy);
	ck_assert_ptr_ne(copy.backfill.job, rq.backfill.job);
	cmdspec_req_free(&rq);
	ck_assert_str_eq(copy.backfill.job, "fct");
	ck_assert_str_eq(copy.backfill.reason, "why");
	ck_assert_str_eq(copy.backfill.to.text, "2026-02-03T05");
	ck_assert_str_eq(copy.backfill.downstream.v[2], "c");
	ck_assert_str_eq(copy.backfill.reprocess.name, "failed");
	cmdspec_req_free(&copy);
}
END_TEST

/* Lists, a dates file's three fields, a field that is no option. */
START_TEST(test_parse_fields)
{
	const struct fields mark = { { "job=fct", "partitions=2026-01-02",
		"succeeded=1", "reason=fixed" } };
	const struct fields dates = { { "job=fct", "dates=2026-01-01\n"
		"2026-01-03", "dates_file=d.txt", "dates_lines=1\n3" } };
	const struct fields stale = { { "job=x", "json=1" } };
	struct cmdspec_req rq;
	struct err err;

	ck_assert_int_eq(cmdspec_parse(&cmdspec_mark, get, &mark, false, &rq,
				       &err), 0);
	ck_assert_uint_eq(rq.mark.partitions.n, 1);
	ck_assert_str_eq(rq.mark.partitions.v[0], "2026-01-02");
	ck_assert(rq.mark.succeeded && !rq.mark.no_downstream);
	ck_assert(!rq.tty);
	cmdspec_req_free(&rq);
	ck_assert_int_eq(cmdspec_parse(&cmdspec_backfill, get, &dates, false,
				       &rq, &err), 0);
	ck_assert_str_eq(rq.backfill.dates.file, "d.txt");
	ck_assert_str_eq(rq.backfill.dates.lines, "1\n3");
	cmdspec_req_free(&rq);
	ck_assert_int_eq(cmdspec_parse(&cmdspec_stale, get, &stale, false, &rq,
				       &err), 0);
	ck_assert_str_eq(rq.show.job, "x");
	ck_assert(rq.show.json);
	cmdspec_req_free(&rq);
	/* refused: released all the same */
	ck_assert_int_eq(cmdspec_parse(&cmdspec_runs, get, &(struct fields){ {
		"json=1", "jsonl=1" } }, false, &rq, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "exclude each other"));
	cmdspec_req_free(&rq);
}
END_TEST

/* The member size of a kind. */
static size_t
kind_size(enum cmdspec_kind k)
{
	switch (k) {
	case CMDSPEC_FLAG: return sizeof(bool);
	case CMDSPEC_TEXT: case CMDSPEC_JOB: return sizeof(const char *);
	case CMDSPEC_INT: case CMDSPEC_DURATION: return sizeof(long long);
	case CMDSPEC_DATE: return sizeof(struct cmdspec_date);
	case CMDSPEC_ENUM: return sizeof(struct cmdspec_enum);
	case CMDSPEC_LIST: return sizeof(struct cmdspec_list);
	case CMDSPEC_DATES_FILE: return sizeof(struct cmdspec_dates);
	default: return 0;
	}
}

/* Every argument's member lies in the union, past the common head, and
 * no two arguments of a command share one. */
START_TEST(test_offsets)
{
	for (size_t i = 0; i < cmdspec_count; i++) {
		const struct cmdspec *cs = cmdspec_table[i];
		const struct cmdspec_arg *lists[3] = { cs->pos, cs->opts,
			cs->fields };
		size_t off[CMDSPEC_MAX_OPTS * 2], n = 0;

		for (int l = 0; l < 3; l++)
			for (const struct cmdspec_arg *a = lists[l];
			     a != NULL && a->name != NULL; a++) {
				if (a->field == NULL)
					continue;
				ck_assert_msg(a->off >= offsetof(struct
					      cmdspec_req, backfill) && a->off +
					      kind_size(a->kind) <= sizeof(struct
					      cmdspec_req), "%s %s: offset",
					      cs->name, a->name);
				for (size_t k = 0; k < n; k++)
					ck_assert_msg(off[k] != a->off, "%s %s:"
						      " a member twice",
						      cs->name, a->name);
				off[n++] = a->off;
			}
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cmdspec");
	TCase *tc = tcase_create("cmdspec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_cases);
	tcase_add_test(tc, test_client_only);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_reprocess);
	tcase_add_test(tc, test_value);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_parse_fields);
	tcase_add_test(tc, test_offsets);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
