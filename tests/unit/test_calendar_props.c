/*
 * test_calendar_props.c - properties of the calendar in every zone of the
 * system's tzdata (each Z and L name of $TZDIR/tzdata.zi, about 600; a
 * link to a file already walked is loaded, not walked again), from 1990
 * to 2040:
 *
 *  - consecutive partitions tile time: start(p) < end(p) = start(p + 1),
 *    or start(p) = end(p) for a day the zone skipped (none in 1990..2040
 *    but Kiritimati's 1994-12-31, Kwajalein's 1993-08-21 and Apia's
 *    2011-12-30, which must be found);
 *  - an instant belongs to the partition whose interval holds it:
 *    part_of(start(p)) = part_of(end(p) - 1) = p;
 *  - every key parses back to its partition and differs from its
 *    neighbours';
 *  - days last 0 or 1..50 hours (Antarctica/Vostok's 1994-11-01 lasted
 *    17: its clocks went from UT to +07), hour cells at most an hour;
 *  - overlap is symmetric: u is an input of d exactly when d is in the
 *    map of u (zoned hours against UTC days, zoned days against UTC
 *    hours).
 * Days, weeks, months, quarters and years are walked fully; hours within
 * six hours of every change of offset and at 200 seeded instants a zone.
 * It runs in a few seconds: the loops test with CHECK, not ck_assert,
 * which writes a mark for Check at every call.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "tz.h"

/* A check in a loop: ck_abort_msg only when it fails. */
#define CHECK(cond, ...)                                                 \
	do {                                                             \
		if (!(cond))                                             \
			ck_abort_msg(__VA_ARGS__);                       \
	} while (0)

#define T1990 631152000LL   /* 1990-01-01T00Z */
#define T2040 2208988800LL  /* 2040-01-01T00Z */

static char **zones;
static size_t nzones;

static void
zones_free(void)
{
	for (size_t i = 0; i < nzones; i++)
		free(zones[i]);
	free(zones);
	zones = NULL;
	nzones = 0;
}

/* Every Z and L name of tzdata.zi. */
static void
zones_read(void)
{
	const char *dir = getenv("TZDIR");
	char path[512], line[512], a[256], b[256], c[256];
	size_t cap = 0;
	FILE *fp;

	zones_free(); /* a failed test (CK_FORK=no) left its list */
	snprintf(path, sizeof path, "%s/tzdata.zi",
	    dir != NULL && dir[0] != '\0' ? dir : "/usr/share/zoneinfo");
	fp = fopen(path, "r");
	ck_assert_msg(fp != NULL, "%s: tzdata is not installed", path);
	while (fgets(line, sizeof line, fp) != NULL) {
		const char *name = NULL;

		if (line[0] == 'Z' && sscanf(line, "%255s %255s", a, b) == 2)
			name = b;
		else if (line[0] == 'L' &&
		    sscanf(line, "%255s %255s %255s", a, b, c) == 3)
			name = c;
		if (name == NULL)
			continue;
		if (nzones == cap) {
			cap = cap ? cap * 2 : 256;
			zones = realloc(zones, cap * sizeof *zones);
			ck_assert(zones != NULL);
		}
		zones[nzones++] = strdup(name);
	}
	fclose(fp);
	ck_assert_int_gt(nzones, 300);
}

/* True when a zone with the same file (a link, mostly) was walked. */
static bool
seen(struct tz *tz, char (*digests)[17], size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(digests[i], tz_digest(tz)) == 0)
			return true;
	snprintf(digests[(*n)++], 17, "%s", tz_digest(tz));
	return false;
}

/* The checks of one partition p of c; returns its length in seconds. */
static int64_t
check_part(const struct cal *c, part_t p, const char *zone)
{
	char key[CAL_KEY_MAX], next[CAL_KEY_MAX];
	int64_t s = cal_start(c, p), e = cal_end(c, p);
	struct err err;
	part_t back = 0;

	CHECK(s <= e, "%s %s %lld: ends before it starts", zone,
	    grain_name(c->grain), (long long)p);
	cal_key(c, p, key);
	if (s == e) {
		CHECK(cal_empty(c, p), "%s %s", zone, key);
		CHECK(cal_parse_key(c, key, &back, &err) == -1, "%s %s parsed",
		    zone, key);
		return 0;
	}
	CHECK(cal_part_of(c, s) == p && cal_part_of(c, e - 1) == p,
	    "%s %s %s: its instants are another partition's", zone,
	    grain_name(c->grain), key);
	CHECK(cal_parse_key(c, key, &back, &err) == 0 && back == p,
	    "%s %s: key %s does not parse back: %s", zone,
	    grain_name(c->grain), key, err.msg);
	cal_key(c, p + 1, next);
	CHECK(strcmp(key, next) != 0, "%s: two partitions keyed %s",
	    zone, key);
	return e - s;
}

/* Days to years, walked fully over 1990..2040. */
START_TEST(test_tile_days)
{
	static const enum grain gs[] = { GRAIN_DAY, GRAIN_WEEK, GRAIN_MONTH,
		GRAIN_QUARTER, GRAIN_YEAR };
	int empty = 0;

	char (*digests)[17];
	size_t ndigests = 0;

	zones_read();
	digests = calloc(nzones, sizeof *digests);
	for (size_t z = 0; z < nzones; z++) {
		struct tz *tz = NULL;
		struct err err;

		CHECK(tz_load(zones[z], &tz, &err) == 0, "%s", err.msg);
		if (seen(tz, digests, &ndigests)) {
			tz_unref(tz);
			continue;
		}
		for (size_t g = 0; g < sizeof gs / sizeof gs[0]; g++) {
			struct cal c = { gs[g], g == 1 && z % 2 ? WEEK_SUNDAY :
			    WEEK_MONDAY, tz };
			part_t p = cal_part_of(&c, T1990);
			part_t last = cal_part_of(&c, T2040);

			CHECK(cal_start(&c, p) <= T1990, "%s", zones[z]);
			for (; p <= last; p++) {
				int64_t len = check_part(&c, p, zones[z]);

				if (gs[g] == GRAIN_DAY) {
					empty += len == 0;
					CHECK(len == 0 ||
					    (len >= 3600 &&
					    len <= 50 * 3600), "%s: a day of "
					    "%lld s", zones[z], (long long)len);
				}
			}
		}
		tz_unref(tz);
	}
	/* Kiritimati 1994-12-31, Kwajalein 1993-08-21, Apia 2011-12-30 */
	ck_assert_int_ge(empty, 3);
	free(digests);
	zones_free();
}
END_TEST

/* The hours around t: six before, six after. */
static void
check_hours_near(const struct cal *c, int64_t t, const char *zone)
{
	part_t p = cal_part_of(c, t);

	for (part_t q = p - 6; q <= p + 6; q++) {
		int64_t len = check_part(c, q, zone);

		CHECK(len > 0 && len <= 3600, "%s: an hour cell of "
		    "%lld s", zone, (long long)len);
	}
}

/* u is an input of d exactly when d is in u's map. */
static void
check_overlap(const struct cal *up, part_t u, const struct cal *down)
{
	struct part_range m = cal_map(up, u, down), in;

	CHECK(m.first <= m.last, "an empty map");
	for (part_t d = m.first - 1; d <= m.last + 1; d++) {
		in = cal_inputs(up, down, d);
		CHECK((u >= in.first && u <= in.last) ==
		    (d >= m.first && d <= m.last) || cal_empty(down, d),
		    "%s %lld and %s %lld overlap one way only",
		    grain_name(up->grain), (long long)u,
		    grain_name(down->grain), (long long)d);
	}
}

/* Hours near every change of offset and at seeded instants. */
START_TEST(test_tile_hours)
{
	unsigned seed = 42;

	char (*digests)[17];
	size_t ndigests = 0;

	zones_read();
	digests = calloc(nzones, sizeof *digests);
	for (size_t z = 0; z < nzones; z++) {
		struct tz *tz = NULL;
		struct err err;
		struct tz_seg seg;
		struct cal h = { GRAIN_HOUR, WEEK_MONDAY, NULL };
		struct cal d = { GRAIN_DAY, WEEK_MONDAY, NULL };

		CHECK(tz_load(zones[z], &tz, &err) == 0, "%s", err.msg);
		if (seen(tz, digests, &ndigests)) {
			tz_unref(tz);
			continue;
		}
		h.tz = d.tz = tz;
		for (int64_t t = T1990; t < T2040; t = seg.to) {
			tz_seg_at(tz, t, &seg);
			if (seg.to >= T2040)
				break;
			check_hours_near(&h, seg.to, zones[z]);
		}
		for (int i = 0; i < 200; i++) {
			int64_t t = T1990 + (int64_t)(rand_r(&seed) %
			    (unsigned)((T2040 - T1990) / 60)) * 60;

			check_hours_near(&h, t, zones[z]);
			check_overlap(&h, cal_part_of(&h, t),
			    &cal_utc[GRAIN_DAY]);
			check_overlap(&cal_utc[GRAIN_HOUR],
			    cal_part_of(&cal_utc[GRAIN_HOUR], t), &d);
			check_overlap(&d, cal_part_of(&d, t),
			    &cal_utc[GRAIN_WEEK]);
		}
		tz_unref(tz);
	}
	free(digests);
	zones_free();
}
END_TEST

/* The issue's zones, every hour of 1990..2040. */
START_TEST(test_tile_hours_full)
{
	static const char *issue[] = { "Europe/Berlin", "America/New_York",
		"America/Chicago", "Australia/Lord_Howe", "Asia/Kolkata" };
	struct tz *tz = NULL;
	struct err err;
	struct cal h = { GRAIN_HOUR, WEEK_MONDAY, NULL };
	part_t p, last;

	CHECK(tz_load(issue[_i], &tz, &err) == 0, "%s", err.msg);
	h.tz = tz;
	last = cal_part_of(&h, T2040);
	for (p = cal_part_of(&h, T1990); p <= last; p++) {
		int64_t len = check_part(&h, p, issue[_i]);

		CHECK(len > 0 && len <= 3600, "%s: a cell of %lld s", issue[_i],
		    (long long)len);
	}
	tz_unref(tz);
}
END_TEST

static Suite *
props_suite(void)
{
	Suite *s = suite_create("calendar_props");
	TCase *tc = tcase_create("tile");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_tile_days);
	tcase_add_test(tc, test_tile_hours);
	tcase_add_loop_test(tc, test_tile_hours_full, 0, 5);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(props_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
