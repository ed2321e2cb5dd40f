/*
 * test_cmd.c - the daemon's side of the commands, up to the handlers:
 * every command of the specification has its entry (and only those),
 * cmd_run() refuses an unknown command, a mutating one without the
 * rights and fields the specification refuses, all before a handler runs
 * (so without a scheduler: ctx.sched is NULL here), and the run states of
 * `runs --state` are the store's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_entry.h"
#include "store.h"

/* Build a REQUEST from "key=value" strings (NULL-terminated) and parse
 * it back, as control.c receives it. */
static void
request(struct proto_msg *msg, const char *const *kv)
{
	struct buf b;
	struct err err;
	size_t used;
	char key[64];

	buf_init(&b);
	proto_begin(&b, PROTO_REQUEST);
	for (int i = 0; kv[i] != NULL; i++) {
		const char *eq = strchr(kv[i], '=');

		ck_assert_ptr_nonnull(eq);
		snprintf(key, sizeof key, "%.*s", (int)(eq - kv[i]), kv[i]);
		proto_add(&b, key, eq + 1);
	}
	proto_end(&b);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, msg, &err), 1);
	buf_free(&b);
}

/* Run a request through cmd_run and parse the RESPONSE into *resp. */
static void
run(bool may_change, const char *const *kv, struct proto_msg *resp)
{
	struct cmd_ctx ctx = { .sched = NULL, .may_change = may_change };
	struct cmd_stream *stream = NULL;
	struct proto_msg req;
	struct buf b;
	struct err err;
	size_t used;

	request(&req, kv);
	buf_init(&b);
	proto_begin(&b, PROTO_RESPONSE);
	cmd_run(&ctx, &req, &b, &stream);
	ck_assert_ptr_null(stream);
	proto_end(&b);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, resp, &err), 1);
	buf_free(&b);
	proto_msg_free(&req);
}

/* Every command of the specification has an entry that points at it,
 * and the dispatch knows no other. */
START_TEST(test_entries)
{
	for (size_t i = 0; i < cmdspec_count; i++) {
		const struct cmd_entry *ce = cmd_find(cmdspec_table[i]->name);

		if (cmdspec_table[i]->flags & (CMDSPEC_CONTROL |
		    CMDSPEC_CLIENT)) {
			/* answered by control.c, or by backfillctl alone:
			 * no entry */
			ck_assert_ptr_null(ce);
			continue;
		}
		ck_assert_msg(ce != NULL, "no entry for %s",
			      cmdspec_table[i]->name);
		ck_assert_ptr_eq(ce->spec, cmdspec_table[i]);
		ck_assert_ptr_nonnull(ce->exec);
	}
	ck_assert_ptr_null(cmd_find("wait"));
	ck_assert_ptr_null(cmd_find("completion"));
	ck_assert_ptr_null(cmd_find("frobnicate"));
}
END_TEST

/* Requests refused before their handler runs: the status and err of the
 * RESPONSE, which has no out. */
static const struct {
	bool may_change;
	const char *kv[6];
	int status;
	const char *err;
} refused[] = {
	{ true, { "cmd=frobnicate", NULL }, EXIT_BAD_INPUT,
	  "unknown command \"frobnicate\"" },
	{ false, { "cmd=backfill", "job=j", "stale=1", NULL }, EXIT_BAD_INPUT,
	  "permission denied: backfill changes state" },
	{ false, { "cmd=reload", NULL }, EXIT_BAD_INPUT,
	  "permission denied: reload" },
	{ false, { "cmd=pause", "job=j", NULL }, EXIT_BAD_INPUT,
	  "permission denied: pause" },
	/* a dry run changes nothing: the rights are not needed, the
	 * fields are still checked */
	{ false, { "cmd=backfill", "dry_run=1", NULL }, EXIT_BAD_INPUT,
	  "missing JOB: say which job to backfill" },
	{ false, { "cmd=backfill", "job=j", "from=2026-02-01", "dry_run=1",
		   NULL }, EXIT_BAD_INPUT, "--from without --to" },
	{ false, { "cmd=backfill", "job=j", "from=2026-02-30", "to=2026-03-01",
		   "dry_run=1", NULL }, EXIT_BAD_INPUT,
	  "--from: 2026-02-30 is not a date" },
	{ false, { "cmd=runs", "limit=-5", NULL }, EXIT_BAD_INPUT,
	  "--limit must be a positive integer, not '-5'" },
	{ false, { "cmd=runs", "state=exploded", NULL }, EXIT_BAD_INPUT,
	  "--state must be queued" },
	{ false, { "cmd=runs", "json=1", "jsonl=1", NULL }, EXIT_BAD_INPUT,
	  "exclude each other" },
	{ false, { "cmd=status", "job=", NULL }, EXIT_BAD_INPUT,
	  "the job name is empty" },
	{ false, { "cmd=audit", NULL }, EXIT_BAD_INPUT, "missing --request N" },
	{ false, { "cmd=map", NULL }, EXIT_BAD_INPUT, "missing JOB" },
};

START_TEST(test_refused)
{
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		struct proto_msg resp;
		long long st;
		const char *e;

		run(refused[i].may_change, refused[i].kv, &resp);
		ck_assert_int_eq(proto_get_int(&resp, "status", &st), 0);
		ck_assert_msg(st == refused[i].status, "case %zu: status %lld",
			      i, st);
		e = proto_get(&resp, "err");
		ck_assert_msg(e != NULL && strstr(e, refused[i].err) != NULL,
			      "case %zu: err \"%s\" lacks \"%s\"", i,
			      e ? e : "(none)", refused[i].err);
		ck_assert_ptr_null(proto_get(&resp, "out"));
		proto_msg_free(&resp);
	}
}
END_TEST

/* The one state table: MS_COUNT names, in the enum's order, then NULL
 * (`runs --state` reads it to its NULL). */
START_TEST(test_states)
{
	int n = 0;

	for (; mstate_names[n] != NULL; n++)
		ck_assert_str_eq(mstate_names[n], mstate_name((enum mstate)n));
	ck_assert_int_eq(n, MS_COUNT);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cmd");
	TCase *tc = tcase_create("cmd");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_entries);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_states);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
