/*
 * test_tz.c - the TZif reader: files built byte by byte here (every
 * truncation, version 1, leap seconds, bad counts, footer variants of RFC
 * 8536 section 3.3), names, loading from $TZDIR, and the system's zones at
 * the instants `zdump -v` gives for them.
 *
 * Expected instants of real zones were taken from `zdump -v -c Y0,Y1 ZONE`
 * (tzdata 2025b, Debian 12) when the tests were written and are hard-coded
 * here; footer cases are worked out by hand in their comments.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calendar.h"
#include "tz.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Epoch seconds of "YYYY-MM-DD HH:MM:SS" (UTC). */
static int64_t
utc(const char *s)
{
	char date[11];
	int64_t d = 0;
	struct err err;

	memcpy(date, s, 10);
	date[10] = '\0';
	if (cal_parse_date(date, &d, &err) != 0)
		ck_abort_msg("test date %s: %s", s, err.msg);
	return d * 86400 + atoi(s + 11) * 3600 + atoi(s + 14) * 60 +
	    atoi(s + 17);
}

/* --- TZif files built here --------------------------------------------- */

struct fx {
	int version;		/* '2', '3', or 0 for a version 1 file */
	size_t nt;
	int64_t at[8];
	unsigned char idx[8];
	size_t ntype;
	int32_t off[4];
	uint32_t leap;		/* leap second records to claim */
	const char *footer;	/* without its newlines */
};

static size_t
put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return 4;
}

/* A header and data block with times of tsz bytes. */
static size_t
fx_block(const struct fx *f, unsigned char *p, int tsz)
{
	size_t n = 0, i;

	memcpy(p, "TZif", 4);
	p[4] = (unsigned char)(f->version ? f->version : 0);
	memset(p + 5, 0, 15);
	n = 20;
	n += put32(p + n, 0);			/* isutcnt */
	n += put32(p + n, 0);			/* isstdcnt */
	n += put32(p + n, f->leap);		/* leapcnt */
	n += put32(p + n, (uint32_t)f->nt);	/* timecnt */
	n += put32(p + n, (uint32_t)f->ntype);	/* typecnt */
	n += put32(p + n, 4);			/* charcnt */
	for (i = 0; i < f->nt; i++) {
		if (tsz == 8)
			n += put32(p + n, (uint32_t)((uint64_t)f->at[i] >> 32));
		n += put32(p + n, (uint32_t)f->at[i]);
	}
	for (i = 0; i < f->nt; i++)
		p[n++] = f->idx[i];
	for (i = 0; i < f->ntype; i++) {
		n += put32(p + n, (uint32_t)f->off[i]);
		p[n++] = 0;
		p[n++] = 0;
	}
	memcpy(p + n, "LMT", 4);
	n += 4;
	for (i = 0; i < f->leap; i++) {
		memset(p + n, 0, (size_t)tsz + 4);
		n += (size_t)tsz + 4;
	}
	return n;
}

/* The whole file: v1 block, v2 block, footer. */
static size_t
fx_build(const struct fx *f, unsigned char *out)
{
	size_t n = fx_block(f, out, 4);

	if (f->version == 0)
		return n;
	n += fx_block(f, out + n, 8);
	n += (size_t)sprintf((char *)out + n, "\n%s\n",
	    f->footer ? f->footer : "");
	return n;
}

/* Parse a built file; abort with the message when it is refused. */
static struct tz *
fx_zone(const struct fx *f)
{
	unsigned char buf[4096];
	size_t n = fx_build(f, buf);
	struct tz *z = NULL;
	struct err err;

	err_clear(&err);
	if (tz_parse("Test/Zone", buf, n, &z, &err) != 0)
		ck_abort_msg("refused: %s", err.msg);
	return z;
}

/* A zone at +1 that goes to +2 at 2000-01-01 and back at 2001-01-01. */
static const struct fx fx_two = {
	'2', 2, { 946684800, 978307200 }, { 1, 0 }, 2, { 3600, 7200 }, 0,
	"AAA-1"
};

START_TEST(test_parse_table)
{
	struct tz *z = fx_zone(&fx_two);

	ck_assert_str_eq(tz_name(z), "Test/Zone");
	ck_assert_int_eq(strlen(tz_digest(z)), 16);
	ck_assert_int_eq(tz_offset(z, -4000000000LL), 3600); /* type 0 */
	ck_assert_int_eq(tz_offset(z, 946684799), 3600);
	ck_assert_int_eq(tz_offset(z, 946684800), 7200);
	ck_assert_int_eq(tz_offset(z, 978307199), 7200);
	ck_assert_int_eq(tz_offset(z, 978307200), 3600);
	ck_assert_int_eq(tz_offset(z, utc("9999-12-31 23:59:59")), 3600);
	ck_assert_int_eq(tz_max_fold(z), 3600);
	ck_assert(!tz_is_utc(z));
	/* the wall clock 2001-01-01 01:30 happens twice: its first instant,
	 * at +2, is 2000-12-31 23:30Z */
	ck_assert_int_eq(tz_wall_first(z, 978312600), 978307200 - 1800);
	tz_unref(tz_ref(z));
	tz_unref(z);
}
END_TEST

/* Every prefix of a good file is refused with one line, never read past
 * (ASan watches the copy, exactly `len` bytes on the heap). */
START_TEST(test_parse_truncated)
{
	unsigned char buf[4096];
	size_t n = fx_build(&fx_two, buf), len;
	struct tz *z;
	struct err err;

	for (len = 0; len < n; len++) {
		unsigned char *copy = malloc(len + 1);

		memcpy(copy, buf, len);
		z = NULL;
		err_clear(&err);
		ck_assert_msg(tz_parse("Test/Zone", copy, len, &z, &err) == -1,
		    "a file of %zu of %zu bytes taken", len, n);
		ck_assert(z == NULL);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
		ck_assert(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
		free(copy);
	}
}
END_TEST

/* Files refused, and the words their refusal must hold. */
static const struct {
	struct fx f;
	const char *corrupt; /* "magic", or NULL */
	const char *want;
} bad_files[] = {
	{ { 0, 1, { 0 }, { 0 }, 1, { 0 }, 0, NULL }, NULL, "version 1" },
	{ { '2', 1, { 0 }, { 0 }, 1, { 0 }, 2, "" }, NULL, "right/" },
	{ { '2', 2, { 10, 5 }, { 0, 0 }, 1, { 0 }, 0, "" }, NULL,
	  "not in order" },
	{ { '2', 1, { 10 }, { 3 }, 1, { 0 }, 0, "" }, NULL,
	  "local time type it lacks" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 27 * 3600 }, 0, "" }, NULL,
	  "bad local time type" },
	{ { '2', 0, { 0 }, { 0 }, 0, { 0 }, 0, "" }, NULL,
	  "inconsistent counts" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "UTC0" }, "magic",
	  "not a TZif file" },
	/* the footer says +1 after a last transition to +2 */
	{ { '2', 1, { 10 }, { 1 }, 2, { 3600, 7200 }, 0, "AAA-1" }, NULL,
	  "disagrees" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "EST5EDT" }, NULL,
	  "not a TZ rule" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "E5" }, NULL, "not a TZ rule" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "EST25" }, NULL,
	  "not a TZ rule" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "<+05" }, NULL,
	  "not a TZ rule" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "EST5EDT,M13.1.0,M11.1.0" },
	  NULL, "not a TZ rule" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "EST5EDT,J0,J365" }, NULL,
	  "not a TZ rule" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "EST5EDT,M3.2.0/168,M11.1.0" },
	  NULL, "not a TZ rule" },
	{ { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, "EST5 " }, NULL,
	  "not a TZ rule" },
};

START_TEST(test_parse_refused)
{
	unsigned char buf[4096];
	size_t n = fx_build(&bad_files[_i].f, buf);
	struct tz *z = NULL;
	struct err err;

	if (bad_files[_i].corrupt != NULL)
		buf[0] = 'X';
	err_clear(&err);
	ck_assert_int_eq(tz_parse("Test/Zone", buf, n, &z, &err), -1);
	ck_assert(z == NULL);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_msg(strstr(err.msg, bad_files[_i].want) != NULL &&
	    strstr(err.msg, "Test/Zone") != NULL, "%s", err.msg);
}
END_TEST

/* Bytes after the footer and a footer without its last newline. */
START_TEST(test_parse_footer_framing)
{
	unsigned char buf[4096];
	size_t n = fx_build(&fx_two, buf);
	struct tz *z = NULL;
	struct err err;

	buf[n] = 'x';
	ck_assert_int_eq(tz_parse("T", buf, n + 1, &z, &err), -1);
	ck_assert_int_eq(tz_parse("T", buf, n - 1, &z, &err), -1);
	ck_assert(z == NULL);
}
END_TEST

/* Footers alone (no transitions): the rule gives every offset. */
static const struct {
	const char *footer;
	const char *at; /* UTC */
	int32_t off;
} footers[] = {
	/* a quoted name and a half-hour offset */
	{ "<+0530>-5:30", "1900-01-01 00:00:00", 19800 },
	{ "<+0530>-5:30", "2024-06-01 00:00:00", 19800 },
	/* US rules: 2024-03-10 02:00 EST = 07:00Z, 11-03 02:00 EDT = 06:00Z */
	{ "EST5EDT,M3.2.0,M11.1.0", "2024-03-10 06:59:59", -18000 },
	{ "EST5EDT,M3.2.0,M11.1.0", "2024-03-10 07:00:00", -14400 },
	{ "EST5EDT,M3.2.0,M11.1.0", "2024-11-03 05:59:59", -14400 },
	{ "EST5EDT,M3.2.0,M11.1.0", "2024-11-03 06:00:00", -18000 },
	{ "EST5EDT,M3.2.0,M11.1.0", "1985-07-01 00:00:00", -14400 },
	/* 9999-03-14 is March's second Sunday; 02:00 EST = 07:00Z */
	{ "EST5EDT,M3.2.0,M11.1.0", "9999-03-14 06:59:59", -18000 },
	{ "EST5EDT,M3.2.0,M11.1.0", "9999-03-14 07:00:00", -14400 },
	/* Jn never counts Feb 29: J91 is April 1 in 2024 too; 01:00 at +1
	 * is 00:00Z; J274 is October 1, 01:00 at +2 = Sep 30 23:00Z */
	{ "AAA-1BBB,J91/1,J274/1", "2024-03-31 23:59:59", 3600 },
	{ "AAA-1BBB,J91/1,J274/1", "2024-04-01 00:00:00", 7200 },
	{ "AAA-1BBB,J91/1,J274/1", "2024-09-30 22:59:59", 7200 },
	{ "AAA-1BBB,J91/1,J274/1", "2024-09-30 23:00:00", 3600 },
	/* n counts Feb 29 from 0: day 90 is March 31 in 2024, April 1 in
	 * 2023 */
	{ "AAA-1BBB,90/1,273/1", "2024-03-31 00:00:00", 7200 },
	{ "AAA-1BBB,90/1,273/1", "2024-03-30 23:59:59", 3600 },
	{ "AAA-1BBB,90/1,273/1", "2023-03-31 23:59:59", 3600 },
	{ "AAA-1BBB,90/1,273/1", "2023-04-01 00:00:00", 7200 },
	/* a negative time: 23:00 the day before March's second Sunday,
	 * 2024-03-09 23:00 EST = 2024-03-10 04:00Z */
	{ "EST5EDT,M3.2.0/-1,M11.1.0", "2024-03-10 03:59:59", -18000 },
	{ "EST5EDT,M3.2.0/-1,M11.1.0", "2024-03-10 04:00:00", -14400 },
	/* 167 hours after the first Sunday of March 2024 (03-03) 00:00 EST
	 * = 2024-03-09 23:00 EST = 03-10 04:00Z */
	{ "EST5EDT,M3.1.0/167,M11.1.0", "2024-03-10 04:00:00", -14400 },
	{ "EST5EDT,M3.1.0/167,M11.1.0", "2024-03-10 03:59:59", -18000 },
	/* DST all year (RFC 8536 section 3.3.1) */
	{ "EST5EDT,0/0,J365/25", "2024-01-01 04:59:59", -14400 },
	{ "EST5EDT,0/0,J365/25", "2024-01-01 05:00:00", -14400 },
	{ "EST5EDT,0/0,J365/25", "2024-06-01 00:00:00", -14400 },
	{ "EST5EDT,0/0,J365/25", "2025-01-01 05:00:00", -14400 },
	{ "EST5EDT,0/0,J365/25", "7777-12-31 23:00:00", -14400 },
	/* an explicit DST offset, southern hemisphere (DST over new year):
	 * AEST-10AEDT,M10.1.0,M4.1.0/3 */
	{ "AEST-10AEDT,M10.1.0,M4.1.0/3", "2024-01-15 00:00:00", 39600 },
	{ "AEST-10AEDT,M10.1.0,M4.1.0/3", "2024-07-15 00:00:00", 36000 },
	{ "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2023-09-30 15:29:59",
	  37800 },
	{ "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2023-09-30 15:30:00",
	  39600 },
};

START_TEST(test_footers)
{
	struct fx f = { '2', 0, { 0 }, { 0 }, 1, { 0 }, 0, footers[_i].footer };
	struct tz *z = fx_zone(&f);

	ck_assert_msg(tz_offset(z, utc(footers[_i].at)) == footers[_i].off,
	    "%s at %s: %d", footers[_i].footer, footers[_i].at,
	    tz_offset(z, utc(footers[_i].at)));
	tz_unref(z);
}
END_TEST

/* --- names and loading --------------------------------------------------- */

START_TEST(test_names)
{
	static const char *good[] = { "Europe/Berlin", "UTC", "Etc/GMT+5",
		"America/Argentina/Buenos_Aires", "America/Port-au-Prince" };
	static const char *bad[] = { "", "/etc/passwd", "../etc/passwd",
		"Europe/../../x", "Europe//Berlin", "Europe/", "./UTC",
		"Europe/Ber lin", "localtime", "posixrules", "right/UTC",
		"Europe/Berlin\n" };
	struct err err;
	size_t i;

	for (i = 0; i < NELEM(good); i++)
		ck_assert_msg(tz_name_check(good[i], &err) == 0, "%s: %s",
		    good[i], err.msg);
	for (i = 0; i < NELEM(bad); i++) {
		err_clear(&err);
		ck_assert_msg(tz_name_check(bad[i], &err) == -1, "%s taken",
		    bad[i]);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	}
	ck_assert_int_eq(tz_name_check(NULL, &err), -1);
}
END_TEST

/* $TZDIR is where zones are read from; a missing one says so. */
START_TEST(test_load_tzdir)
{
	char dir[] = "/tmp/test_tz.XXXXXX", path[256];
	unsigned char buf[4096];
	size_t n = fx_build(&fx_two, buf);
	struct tz *z = NULL;
	struct err err;
	FILE *fp;

	ck_assert(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/Two", dir);
	fp = fopen(path, "wb");
	ck_assert(fp != NULL);
	ck_assert_int_eq(fwrite(buf, 1, n, fp), n);
	fclose(fp);
	setenv("TZDIR", dir, 1);
	ck_assert_int_eq(tz_load("Two", &z, &err), 0);
	ck_assert_int_eq(tz_offset(z, 946684800), 7200);
	ck_assert_str_eq(tz_name(z), "Two");
	tz_unref(z);
	err_clear(&err);
	ck_assert_int_eq(tz_load("Europe/Berlin", &z, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_msg(strstr(err.msg, "unknown time zone Europe/Berlin") !=
	    NULL, "%s", err.msg);
	ck_assert_int_eq(tz_load("../etc/passwd", &z, &err), -1);
	unsetenv("TZDIR");
	unlink(path);
	rmdir(dir);
}
END_TEST

/* --- the system's zones, against zdump -v ------------------------------ */

/* An instant and the offset zdump -v gives there (tzdata 2025b). */
static const struct {
	const char *zone;
	const char *at;
	int32_t off;
} zdumps[] = {
	{ "Europe/Berlin", "2023-03-26 00:59:59", 3600 },
	{ "Europe/Berlin", "2023-03-26 01:00:00", 7200 },
	{ "Europe/Berlin", "2023-10-29 00:59:59", 7200 },
	{ "Europe/Berlin", "2023-10-29 01:00:00", 3600 },
	/* the table's edge (2037) and the footer's years after it */
	{ "Europe/Berlin", "2037-10-25 00:59:59", 7200 },
	{ "Europe/Berlin", "2037-10-25 01:00:00", 3600 },
	{ "Europe/Berlin", "2038-03-28 00:59:59", 3600 },
	{ "Europe/Berlin", "2038-03-28 01:00:00", 7200 },
	{ "Europe/Berlin", "2100-03-28 00:59:59", 3600 },
	{ "Europe/Berlin", "2100-03-28 01:00:00", 7200 },
	{ "Europe/Berlin", "2100-10-31 01:00:00", 3600 },
	{ "Europe/Berlin", "9999-03-28 00:59:59", 3600 },
	{ "Europe/Berlin", "9999-03-28 01:00:00", 7200 },
	{ "Europe/Berlin", "9999-10-31 00:59:59", 7200 },
	{ "Europe/Berlin", "9999-10-31 01:00:00", 3600 },
	{ "America/New_York", "2024-03-10 06:59:59", -18000 },
	{ "America/New_York", "2024-03-10 07:00:00", -14400 },
	{ "America/New_York", "2024-11-03 05:59:59", -14400 },
	{ "America/New_York", "2024-11-03 06:00:00", -18000 },
	{ "Australia/Lord_Howe", "2023-09-30 15:29:59", 37800 },
	{ "Australia/Lord_Howe", "2023-09-30 15:30:00", 39600 },
	{ "Australia/Lord_Howe", "2023-04-01 14:59:59", 39600 },
	{ "Australia/Lord_Howe", "2023-04-01 15:00:00", 37800 },
	{ "Asia/Kolkata", "2024-01-01 00:00:00", 19800 },
	{ "Pacific/Apia", "2011-12-30 09:59:59", -36000 },
	{ "Pacific/Apia", "2011-12-30 10:00:00", 50400 },
};

START_TEST(test_zdump)
{
	struct tz *z = NULL;
	struct err err;

	if (tz_load(zdumps[_i].zone, &z, &err) != 0)
		ck_abort_msg("%s", err.msg);
	ck_assert_msg(tz_offset(z, utc(zdumps[_i].at)) == zdumps[_i].off,
	    "%s at %s: %d, zdump says %d", zdumps[_i].zone, zdumps[_i].at,
	    tz_offset(z, utc(zdumps[_i].at)), zdumps[_i].off);
	tz_unref(z);
}
END_TEST

/* UTC files are UTC; folds are measured. */
START_TEST(test_system_shapes)
{
	struct tz *z = NULL;
	struct err err;

	ck_assert_int_eq(tz_load("Etc/UTC", &z, &err), 0);
	ck_assert(tz_is_utc(z));
	tz_unref(z);
	ck_assert_int_eq(tz_load("Europe/Berlin", &z, &err), 0);
	ck_assert(!tz_is_utc(z));
	ck_assert_int_eq(tz_max_fold(z), 3600);
	tz_unref(z);
	ck_assert_int_eq(tz_load("Asia/Kolkata", &z, &err), 0);
	ck_assert_int_eq(tz_offset(z, utc("9999-12-31 00:00:00")), 19800);
	tz_unref(z);
}
END_TEST

/* Zones that are UTC become the built-in calendar; whole-hour offsets
 * are told from others over a span of time. */
START_TEST(test_calendar_zone)
{
	struct tz *z = (struct tz *)1;
	struct err err;

	/* "UTC" reads no file: not even a missing $TZDIR stops it */
	setenv("TZDIR", "/nonexistent", 1);
	ck_assert_int_eq(tz_load_calendar("UTC", &z, &err), 0);
	ck_assert(z == NULL);
	unsetenv("TZDIR");
	ck_assert_int_eq(tz_load_calendar("Etc/UTC", &z, &err), 0);
	ck_assert(z == NULL);
	ck_assert_int_eq(tz_load_calendar("Etc/GMT", &z, &err), 0);
	ck_assert(z == NULL);
	ck_assert_int_eq(tz_load_calendar("No/Such_Zone", &z, &err), -1);
	ck_assert_int_eq(tz_load_calendar("Asia/Kolkata", &z, &err), 0);
	ck_assert(z != NULL);
	ck_assert(!tz_hours_on_utc_hours(z, utc("2024-01-01 00:00:00"),
	    utc("2025-01-01 00:00:00")));
	tz_unref(z);
	ck_assert_int_eq(tz_load_calendar("Europe/Berlin", &z, &err), 0);
	ck_assert(tz_hours_on_utc_hours(z, utc("1990-01-01 00:00:00"),
	    utc("2100-01-01 00:00:00")));
	/* Berlin's local mean time was +0:53:28 until 1893 */
	ck_assert(!tz_hours_on_utc_hours(z, utc("1890-01-01 00:00:00"),
	    utc("1990-01-01 00:00:00")));
	tz_unref(z);
}
END_TEST

static Suite *
tz_suite(void)
{
	Suite *s = suite_create("tz");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_parse_table);
	tcase_add_test(tc, test_parse_truncated);
	tcase_add_loop_test(tc, test_parse_refused, 0, NELEM(bad_files));
	tcase_add_test(tc, test_parse_footer_framing);
	tcase_add_loop_test(tc, test_footers, 0, NELEM(footers));
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_load_tzdir);
	tcase_add_loop_test(tc, test_zdump, 0, NELEM(zdumps));
	tcase_add_test(tc, test_system_shapes);
	tcase_add_test(tc, test_calendar_zone);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tz_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
