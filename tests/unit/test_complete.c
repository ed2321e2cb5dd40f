/*
 * test_complete.c - the completion scripts (daemon/lib/proto/complete.c) are
 * the command table's: every command and every option of each is in
 * both scripts, each argument with the action its kind calls for (jobs,
 * a list of jobs, an enum's values, files), option descriptions joined
 * from their help lines, and nothing for another shell.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cmdspec.h"
#include "complete.h"

/* The script for shell, NUL-terminated. */
static char *
script(const char *shell)
{
	struct buf b;

	buf_init(&b);
	ck_assert_int_eq(complete_script(&b, shell), 0);
	buf_add(&b, "", 1);
	return buf_steal(&b);
}

static void
has(const char *text, const char *needle)
{
	ck_assert_msg(strstr(text, needle) != NULL, "missing: %s", needle);
}

/* The text of one command's branch: from head ("\n\tNAME)\n" in bash,
 * "\n\t\tNAME)\n" in zsh) to the ";;" that ends it on a line of its
 * own, indented one tab more than head. */
static char *
branch(const char *text, const char *head)
{
	const char *p = strstr(text, head), *e;
	char end[16];
	char *out;

	ck_assert_msg(p != NULL, "no branch %s", head);
	snprintf(end, sizeof end, "\n%.*s\t;;\n", (int)strspn(head + 1, "\t"),
	    "\t\t\t\t");
	e = strstr(p, end);
	ck_assert_msg(e != NULL, "branch %s does not end", head);
	out = strndup(p, (size_t)(e - p));
	ck_assert_ptr_nonnull(out);
	return out;
}

/* Every command has a bash branch listing each of its options, and the
 * command word list names them all. */
START_TEST(test_bash_commands)
{
	char *s = script("bash"), head[64], opt[64];

	has(s, "complete -F _backfillctl backfillctl\n");
	has(s, "jobs --json");
	for (size_t i = 0; i < cmdspec_count; i++) {
		const struct cmdspec *cs = cmdspec_table[i];
		char *b;

		snprintf(head, sizeof head, "\n\t%s)\n", cs->name);
		b = branch(s, head);
		for (int k = 0; cs->opts[k].name != NULL; k++) {
			snprintf(opt, sizeof opt, "--%s", cs->opts[k].name);
			has(b, opt);
		}
		free(b);
		snprintf(opt, sizeof opt, " %s ", cs->name);
		if (i > 0 && i + 1 < cmdspec_count)
			has(s, opt);
	}
	free(s);
}
END_TEST

/* Each kind gets its action in bash. */
START_TEST(test_bash_actions)
{
	char *s = script("bash"), *b;

	b = branch(s, "\n\tbackfill)\n");
	has(b, "pos=(job)");
	has(b, "--reprocess) act='w:all failed missing' ;;");
	has(b, "--dates-file) act=file ;;");
	has(b, "--downstream) act=jobs ;;");
	has(b, "--from) act=- ;;");
	ck_assert_ptr_null(strstr(b, "--reverse) act")); /* a flag */
	has(b, "vals='--from --to --dates-file --reprocess --built-by "
	    "--downstream --concurrency --budget --reason'");
	free(b);
	b = branch(s, "\n\trerun)\n");
	has(b, "pos=(job -)");
	free(b);
	b = branch(s, "\n\truns)\n");
	has(b, "--job) act=job ;;");
	has(b, "--state) act='w:queued running succeeded failed blocked "
	    "cancelled skipped' ;;");
	free(b);
	b = branch(s, "\n\treport)\n");
	has(b, "--html) act=file ;;"); /* its help calls the value FILE */
	free(b);
	b = branch(s, "\n\tcompletion)\n");
	has(b, "pos=('w:bash zsh')");
	free(b);
	b = branch(s, "\n\tcancel)\n");
	has(b, "pos=(-)");
	free(b);
	free(s);
}
END_TEST

/* zsh: every command with its summary, options with their descriptions
 * (continuation lines joined, quotes and brackets escaped), positionals
 * required or optional as the table says. */
START_TEST(test_zsh)
{
	char *s = script("zsh"), *b, head[64], opt[64];

	ck_assert(strncmp(s, "#compdef backfillctl\n", 21) == 0);
	has(s, "\t\t\t'rerun:Run one partition of JOB again'\n");
	has(s, "\t\t\t'pause:Freeze JOB'\\''s schedule and queue'\n");
	has(s, "compdef _backfillctl backfillctl");
	for (size_t i = 0; i < cmdspec_count; i++) {
		const struct cmdspec *cs = cmdspec_table[i];

		snprintf(head, sizeof head, "\t\t\t'%s:", cs->name);
		has(s, head);
		snprintf(head, sizeof head, "\n\t\t%s)\n", cs->name);
		b = branch(s, head);
		for (int k = 0; cs->opts[k].name != NULL; k++) {
			snprintf(opt, sizeof opt, "'--%s", cs->opts[k].name);
			has(b, opt);
		}
		has(b, "'--socket=[the daemon'\\''s socket]:PATH:_files'");
		free(b);
	}
	b = branch(s, "\n\t\tbackfill)\n");
	has(b, "'--reprocess=[all (default), failed or missing]:WHICH:"
	    "(all failed missing)'");
	has(b, "'--concurrency=[at most N runs of this request at once (at "
	    "most the job'\\''s own concurrency)]:N: '");
	has(b, "'--downstream=[rebuild only these downstream jobs (and what "
	    "they feed)]:JOB,JOB:_sequence _backfillctl_jobs'");
	has(b, "'--dates-file=[the dates, one a line ('\\''#'\\'' comments, "
	    "blank lines skipped; - reads standard input)]:F:_files'");
	has(b, "'--reverse[newest partition first]'");
	has(b, "'1:JOB:_backfillctl_jobs'");
	free(b);
	b = branch(s, "\n\t\tstatus)\n");
	has(b, "'1::JOB:_backfillctl_jobs'"); /* optional */
	free(b);
	b = branch(s, "\n\t\trerun)\n");
	has(b, "'2:PARTITION: '");
	free(b);
	free(s);
}
END_TEST

/* The table's names and values go into the scripts unquoted: plain
 * words only. */
START_TEST(test_plain_words)
{
	const char *ok = "abcdefghijklmnopqrstuvwxyz0123456789-_";

	for (size_t i = 0; i < cmdspec_count; i++) {
		const struct cmdspec *cs = cmdspec_table[i];

		ck_assert(strspn(cs->name, ok) == strlen(cs->name));
		for (int k = 0; cs->opts[k].name != NULL; k++) {
			const struct cmdspec_arg *a = &cs->opts[k];

			ck_assert(strspn(a->name, ok) == strlen(a->name));
			for (int v = 0; a->values != NULL && a->values[v]; v++)
				ck_assert(strspn(a->values[v], ok) ==
				    strlen(a->values[v]));
		}
	}
}
END_TEST

START_TEST(test_other_shell)
{
	struct buf b;

	buf_init(&b);
	ck_assert_int_eq(complete_script(&b, "fish"), -1);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(complete_script(&b, ""), -1);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

static Suite *
complete_suite(void)
{
	Suite *s = suite_create("complete");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_bash_commands);
	tcase_add_test(tc, test_bash_actions);
	tcase_add_test(tc, test_zsh);
	tcase_add_test(tc, test_plain_words);
	tcase_add_test(tc, test_other_shell);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(complete_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
