/*
 * test_digest.c - the one form of a partition's checksum
 * (daemon/lib/digest.c): 16 hex digits of a sum modulo 2^64, whether the
 * driver summed in C (SQLite) or handed back a decimal of any size and
 * sign (PostgreSQL's numeric sum of bigint hashes).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

static const struct {
	const char *dec, *hex;
} cases[] = {
	{ "0", "0000000000000000" },
	{ "-0", "0000000000000000" },
	{ "1", "0000000000000001" },
	{ "-1", "ffffffffffffffff" },
	{ "9223372036854775807", "7fffffffffffffff" },
	{ "-9223372036854775808", "8000000000000000" },
	{ "18446744073709551615", "ffffffffffffffff" },
	{ "18446744073709551616", "0000000000000000" },     /* 2^64 */
	{ "18446744073709551617", "0000000000000001" },
	{ "-18446744073709551617", "ffffffffffffffff" },
	/* 30 bigints of 2^62 summed: 30 * 2^62 = 7.5 * 2^64 -> 2^63 */
	{ "138350580552821637120", "8000000000000000" },
	{ "-138350580552821637120", "8000000000000000" },
	{ "00042", "000000000000002a" },
};

/* A decimal reduced modulo 2^64 and written as 16 hex digits: the same
 * text as the wrapping uint64_t sum of the same hashes. */
START_TEST(test_decimal_to_hex)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[DIGEST_LEN];
		uint64_t v = 42;

		ck_assert_msg(digest_parse_decimal(cases[i].dec, &v) == 0,
			      "%s refused", cases[i].dec);
		digest_format(v, out, sizeof out);
		ck_assert_msg(strcmp(out, cases[i].hex) == 0, "%s gave %s, want %s",
			      cases[i].dec, out, cases[i].hex);
	}
}
END_TEST

/* The sum of signed hashes in decimal and the wrapping unsigned sum give
 * one text. */
START_TEST(test_same_as_wrapping_sum)
{
	const int64_t h[] = { INT64_MAX, INT64_MAX, -5, INT64_MIN, 12345,
			      INT64_MIN, -1 };
	char a[DIGEST_LEN], b[DIGEST_LEN], dec[64];
	__int128 exact = 0;
	uint64_t wrap = 0, parsed;
	unsigned __int128 mag;
	size_t n = 0, k = 0;
	char digits[64];

	for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
		exact += h[i];
		wrap += (uint64_t)h[i];
	}
	/* exact as decimal text, as PostgreSQL would print it */
	mag = exact < 0 ? (unsigned __int128)(-exact) : (unsigned __int128)exact;
	do {
		digits[n++] = (char)('0' + (int)(mag % 10));
		mag /= 10;
	} while (mag > 0);
	if (exact < 0)
		dec[k++] = '-';
	while (n > 0)
		dec[k++] = digits[--n];
	dec[k] = '\0';
	ck_assert_int_eq(digest_parse_decimal(dec, &parsed), 0);
	digest_format(parsed, a, sizeof a);
	digest_format(wrap, b, sizeof b);
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(strlen(a), 16);
}
END_TEST

/* Anything but an optional '-' and digits is refused. */
START_TEST(test_refused)
{
	const char *bad[] = { "", "-", "1.5", " 1", "1 ", "+1", "0x10", "1e3",
			      "--1", "NaN" };
	uint64_t v;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(digest_parse_decimal(bad[i], &v) == -1,
			      "\"%s\" accepted", bad[i]);
}
END_TEST

static Suite *
digest_suite(void)
{
	Suite *s = suite_create("digest");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_decimal_to_hex);
	tcase_add_test(tc, test_same_as_wrapping_sum);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(digest_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
