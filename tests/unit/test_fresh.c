/*
 * test_fresh.c - the freshness set (daemon/lib/fresh.c): late from since +
 * deadline on, reported once, forgotten on success, retimed on reload.
 * (A hook's placeholders: test_hooks.c.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fresh.h"

#define H (3600 * 1000LL)

struct seen {
	char keys[16][CAL_KEY_MAX];
	char jobs[16][16];
	int n;
};

/* Record each newly late item. */
static void
seen_cb(const struct fresh_item *it, void *data)
{
	struct seen *s = data;

	snprintf(s->keys[s->n], CAL_KEY_MAX, "%s", it->key);
	snprintf(s->jobs[s->n], 16, "%s", it->job);
	s->n++;
}

/* Late at since + deadline, not before; once; oldest named. */
START_TEST(test_late_once)
{
	struct fresh *f = fresh_new();
	struct seen s = { .n = 0 };
	char key[CAL_KEY_MAX] = "";
	part_t old = -1;

	ck_assert_int_eq(fresh_next(f), INT64_MAX);
	fresh_track(f, "a", 20, "2026-01-21", 10 * H, 2 * H, 7);
	fresh_track(f, "a", 19, "2026-01-20", 11 * H, 2 * H, 7);
	fresh_track(f, "b", 19, "2026-01-20", 9 * H, 6 * H, 8);
	ck_assert_int_eq(fresh_next(f), 12 * H);
	ck_assert_int_eq(fresh_advance(f, 12 * H - 1, seen_cb, &s), 0);
	ck_assert_int_eq(fresh_advance(f, 13 * H, seen_cb, &s), 2);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.keys[0], "2026-01-21"); /* deadline order */
	ck_assert_str_eq(s.keys[1], "2026-01-20");
	ck_assert_int_eq(fresh_late(f, "a", &old, key), 2);
	ck_assert_int_eq(old, 19);
	ck_assert_str_eq(key, "2026-01-20");
	ck_assert_int_eq(fresh_late(f, "b", NULL, NULL), 0);
	ck_assert_int_eq(fresh_next(f), 15 * H);
	/* the clock moves on, and back: no item is reported twice */
	ck_assert_int_eq(fresh_advance(f, 14 * H, seen_cb, &s), 0);
	ck_assert_int_eq(fresh_advance(f, 1 * H, seen_cb, &s), 0);
	ck_assert_int_eq(fresh_advance(f, 15 * H, seen_cb, &s), 1);
	ck_assert_str_eq(s.jobs[2], "b");
	ck_assert_int_eq(fresh_advance(f, 100 * H, seen_cb, &s), 0);
	ck_assert_int_eq(s.n, 3);
	ck_assert_int_eq(fresh_next(f), INT64_MAX);
	/* success forgets; tracking again starts over */
	fresh_done(f, "a", "2026-01-20");
	ck_assert_int_eq(fresh_late(f, "a", &old, key), 1);
	ck_assert_str_eq(key, "2026-01-21");
	fresh_done(f, "a", "nothing");
	ck_assert_uint_eq(fresh_size(f), 2);
	fresh_free(f);
}
END_TEST

/* Tracking twice keeps the earlier since; a reload retimes or forgets. */
START_TEST(test_track_and_reload)
{
	struct fresh *f = fresh_new();

	fresh_track(f, "a", 1, "k1", 10 * H, 1 * H, 0);
	fresh_track(f, "a", 1, "k1", 5 * H, 1 * H, 0);
	fresh_track(f, "a", 1, "k1", 20 * H, 1 * H, 0);
	ck_assert_uint_eq(fresh_size(f), 1);
	ck_assert_int_eq(fresh_next(f), 6 * H);
	fresh_set_deadline(f, "a", 3 * H);
	ck_assert_int_eq(fresh_next(f), 8 * H);
	fresh_track(f, "b", 2, "k2", 0, 1 * H, 0);
	fresh_set_deadline(f, "a", 0);
	ck_assert_uint_eq(fresh_size(f), 1);
	ck_assert_int_eq(fresh_next(f), 1 * H);
	fresh_free(f);
}
END_TEST

/* Many items: hash chains and removal by swap stay consistent. */
START_TEST(test_many)
{
	struct fresh *f = fresh_new();
	char key[CAL_KEY_MAX];

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof key, "p%d", i);
		fresh_track(f, i % 2 ? "odd" : "even", i, key, i, 1000, 0);
	}
	for (int i = 0; i < 5000; i += 3) {
		snprintf(key, sizeof key, "p%d", i);
		fresh_done(f, i % 2 ? "odd" : "even", key);
	}
	ck_assert_uint_eq(fresh_size(f), 5000 - 1667);
	ck_assert_int_eq(fresh_advance(f, 1000 + 4999, NULL, NULL), 5000 - 1667);
	ck_assert_int_eq(fresh_late(f, "even", NULL, key), 1666);
	ck_assert_str_eq(key, "p2");
	fresh_free(f);
}
END_TEST

static Suite *
fresh_suite(void)
{
	Suite *s = suite_create("fresh");
	TCase *tc = tcase_create("fresh");

	tcase_add_test(tc, test_late_once);
	tcase_add_test(tc, test_track_and_reload);
	tcase_add_test(tc, test_many);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(fresh_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
