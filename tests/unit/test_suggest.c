/*
 * test_suggest.c - "did you mean": distances and the choice of a name,
 * table-driven.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"

static const struct {
	const char *a, *b;
	size_t d;
} distances[] = {
	{ "", "", 0 },
	{ "status", "status", 0 },
	{ "statsu", "status", 1 },      /* a transposition is one edit */
	{ "stat", "status", 2 },
	{ "bakfill", "backfill", 1 },
	{ "max_concurency", "max_concurrency", 1 },
	{ "kitten", "sitting", 3 },
	{ "abc", "", 3 },
};

START_TEST(test_distance)
{
	for (size_t i = 0; i < sizeof distances / sizeof distances[0]; i++)
		ck_assert_msg(suggest_distance(distances[i].a, distances[i].b) ==
			      distances[i].d, "%s ~ %s", distances[i].a,
			      distances[i].b);
	char longer[80];

	for (int i = 0; i < 79; i++)
		longer[i] = 'x';
	longer[79] = '\0';
	ck_assert(suggest_distance(longer, "x") == SIZE_MAX);
}
END_TEST

static const char *const commands[] = {
	"backfill", "rerun", "status", "runs", "stale", "audit", "pause",
	"resume", "cancel", "reload", "jobs",
};

static const struct {
	const char *word;
	const char *want; /* NULL: nothing close enough */
} closest[] = {
	{ "statsu", "status" },
	{ "bakfill", "backfill" },
	{ "aud", "audit" },        /* the one name it is a prefix of */
	{ "re", NULL },            /* a prefix of rerun, resume, reload: no */
	{ "run", "runs" },         /* prefix of runs only (rerun is not) */
	{ "xyz", NULL },
	{ "", NULL },
	{ "cancle", "cancel" },
};

START_TEST(test_closest)
{
	for (size_t i = 0; i < sizeof closest / sizeof closest[0]; i++) {
		const char *got = suggest_closest(closest[i].word, commands,
						  sizeof commands / sizeof commands[0]);

		if (closest[i].want == NULL)
			ck_assert_msg(got == NULL, "%s: got %s", closest[i].word, got);
		else
			ck_assert_msg(got != NULL && strcmp(got, closest[i].want) == 0,
				      "%s: got %s, want %s", closest[i].word,
				      got ? got : "(none)", closest[i].want);
	}
}
END_TEST

/* suggest_close keeps the best so far and the length-scaled limit. */
START_TEST(test_close)
{
	size_t best = SIZE_MAX;

	ck_assert(suggest_close("sqll", "sql", &best));   /* 1 edit, limit 1 */
	ck_assert_uint_eq(best, 1);
	ck_assert(!suggest_close("sqll", "sqlite", &best)); /* farther */
	best = SIZE_MAX;
	ck_assert(!suggest_close("ab", "xy", &best));     /* 2 edits, limit 1 */
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("suggest");
	TCase *tc = tcase_create("suggest");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_distance);
	tcase_add_test(tc, test_closest);
	tcase_add_test(tc, test_close);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
