/*
 * test_text.c - the one escaping rule for outside text (text.h): every
 * control byte, the short forms, idempotence, NUL bytes inside a length,
 * the fixed-buffer form cut with "...", one byte's rendering, and the
 * shortest form of a double that reads back.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fnv.h"
#include "text.h"

/* The rendering of one byte by the rule. */
static void
want_byte(unsigned char c, char *out, size_t size)
{
	if (c == '\n')
		snprintf(out, size, "\\n");
	else if (c == '\r')
		snprintf(out, size, "\\r");
	else if (c == '\t')
		snprintf(out, size, "\\t");
	else if (c < 0x20 || c == 0x7f)
		snprintf(out, size, "\\x%02x", c);
	else
		snprintf(out, size, "%c", c);
}

START_TEST(test_every_byte)
{
	for (unsigned c = 0; c < 0x80; c++) {
		unsigned char in[3] = { 'a', (unsigned char)c, 'b' };
		char want[16], one[8];
		struct buf b;

		want_byte((unsigned char)c, one, sizeof one);
		snprintf(want, sizeof want, "a%sb", one);
		buf_init(&b);
		text_escape_add(&b, in, sizeof in);
		ck_assert_str_eq(b.data, want);
		ck_assert(text_is_clean(b.data, b.len));
		ck_assert(text_is_clean(in, sizeof in) ==
		    (c >= 0x20 && c != 0x7f));
		buf_free(&b);
	}
}
END_TEST

START_TEST(test_terminal_escape)
{
	const char *owned = "v\x1b]0;owned\a\x1b[2J";
	char out[64];
	struct buf b;

	buf_init(&b);
	text_escape_str(&b, owned);
	ck_assert_str_eq(b.data, "v\\x1b]0;owned\\x07\\x1b[2J");
	/* fixed buffer: the same rendering */
	ck_assert_str_eq(text_escape(owned, out, sizeof out), b.data);
	buf_free(&b);
}
END_TEST

START_TEST(test_idempotent)
{
	const char *in = "a\\b\n\x01\\x1b\x7f\xc3\xa9";
	struct buf once, twice;

	buf_init(&once);
	buf_init(&twice);
	text_escape_str(&once, in);
	/* backslash kept, UTF-8 kept */
	ck_assert_str_eq(once.data, "a\\b\\n\\x01\\x1b\\x7f\xc3\xa9");
	text_escape_str(&twice, once.data);
	ck_assert_str_eq(twice.data, once.data);
	buf_free(&once);
	buf_free(&twice);
}
END_TEST

START_TEST(test_lines_every_byte)
{
	/* the rule for lines: newline and tab kept, the rest as the rule */
	for (unsigned c = 0; c < 0x100; c++) {
		unsigned char in[3] = { 'a', (unsigned char)c, 'b' };
		char want[16], one[8];
		struct buf b;

		if (c == '\n' || c == '\t')
			snprintf(one, sizeof one, "%c", c);
		else if (c < 0x80)
			want_byte((unsigned char)c, one, sizeof one);
		else
			snprintf(one, sizeof one, "%c", c);
		snprintf(want, sizeof want, "a%sb", one);
		buf_init(&b);
		text_escape_lines(&b, in, sizeof in);
		ck_assert_uint_eq(b.len, strlen(want));
		ck_assert_mem_eq(b.data, want, b.len);
		for (size_t i = 0; i < b.len; i++) {
			unsigned char o = (unsigned char)b.data[i];

			ck_assert(o >= 0x20 || o == '\n' || o == '\t');
			ck_assert(o != 0x7f);
		}
		buf_free(&b);
	}
}
END_TEST

START_TEST(test_lines_terminal)
{
	/* what a run may print to take a terminal over: ESC, BEL, CR, NUL,
	 * backspace; the lines stay lines */
	static const char in[] = "ok\n\x1b]0;owned\a\x1b[2Jgone\rfake\0x\b\n"
	    "\tcol\r\n";
	struct buf b, piece;

	buf_init(&b);
	text_escape_lines(&b, in, sizeof in - 1);
	ck_assert_str_eq(b.data, "ok\n\\x1b]0;owned\\x07\\x1b[2Jgone\\rfake"
	    "\\x00x\\x08\n\tcol\\r\n");
	/* byte by byte: cut anywhere, the same rendering */
	buf_init(&piece);
	for (size_t i = 0; i < sizeof in - 1; i++)
		text_escape_lines(&piece, in + i, 1);
	ck_assert_uint_eq(piece.len, b.len);
	ck_assert_mem_eq(piece.data, b.data, b.len);
	buf_free(&piece);
	buf_free(&b);
	buf_init(&b);
	text_escape_lines(&b, "", 0);
	ck_assert_ptr_nonnull(b.data);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_nul_and_empty)
{
	struct buf b;

	buf_init(&b);
	text_escape_add(&b, "x\0y", 3);
	ck_assert_str_eq(b.data, "x\\x00y");
	buf_reset(&b);
	text_escape_str(&b, NULL);
	ck_assert_ptr_nonnull(b.data);
	ck_assert_str_eq(b.data, "");
	buf_free(&b);
	buf_init(&b);
	text_escape_add(&b, "", 0);
	ck_assert_ptr_nonnull(b.data); /* usable as a C string */
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_fixed_cut)
{
	char out[8];

	ck_assert_str_eq(text_escape("abc", out, sizeof out), "abc");
	ck_assert_str_eq(text_escape("abcdefghij", out, sizeof out),
	    "abcd...");
	/* an escape is never cut in half */
	ck_assert_str_eq(text_escape("ab\x1b" "cdefg", out, sizeof out),
	    "ab...");
	ck_assert_str_eq(text_escape(NULL, out, sizeof out), "");
	ck_assert_str_eq(text_escape("abc", out, 3), "");
}
END_TEST

START_TEST(test_double)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0.9, "0.9" }, { 0.1 + 0.2, "0.30000000000000004" },
		{ 20, "20" }, { 1.5, "1.5" }, { -0.25, "-0.25" }, { 0, "0" },
		{ 1e21, "1e+21" }, { 123456789.125, "123456789.125" },
		{ 1.0 / 3.0, "0.3333333333333333" },
	};
	char out[32];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		text_double(cases[i].v, out, sizeof out);
		ck_assert_str_eq(out, cases[i].want);
		ck_assert(strtod(out, NULL) == cases[i].v);
	}
}
END_TEST

START_TEST(test_figure)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 3348168, "3348168" }, { 0, "0" }, { -42, "-42" },
		{ 1.5, "1.50" }, { 0.125, "0.12" }, { -0.5, "-0.50" },
		{ 9007199254740991.0, "9007199254740991" },
		{ 1e300, NULL },
	};
	char out[32];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		text_figure(cases[i].v, out, sizeof out);
		if (cases[i].want != NULL)
			ck_assert_str_eq(out, cases[i].want);
		else /* beyond 2^53: %.2f, cut to the buffer */
			ck_assert(strlen(out) == sizeof out - 1);
	}
}
END_TEST

/* UTIL-1: FNV-1a, the published test vectors, and text_hash_pair as the
 * hash of "a" 0xff "b" (its values name things: they never change). */
START_TEST(test_fnv)
{
	ck_assert_uint_eq(fnv1a32(FNV1A32_INIT, "", 0), 0x811c9dc5u);
	ck_assert_uint_eq(fnv1a32(FNV1A32_INIT, "a", 1), 0xe40c292cu);
	ck_assert_uint_eq(fnv1a32(FNV1A32_INIT, "foobar", 6), 0xbf9cf968u);
	ck_assert_uint_eq(fnv1a64(FNV1A64_INIT, "a", 1),
			  0xaf63dc4c8601ec8cULL);
	ck_assert_uint_eq(fnv1a64(FNV1A64_INIT, "foobar", 6),
			  0x85944171f73967e8ULL);
	ck_assert_uint_eq(fnv1a64(fnv1a64(FNV1A64_INIT, "foo", 3), "bar", 3),
			  0x85944171f73967e8ULL);
	ck_assert_uint_eq(text_hash_pair("job", "2026-01-01"),
			  fnv1a32(FNV1A32_INIT, "job\xff" "2026-01-01", 14));
}
END_TEST

START_TEST(test_byte)
{
	char e[5];

	ck_assert_uint_eq(text_escape_byte('a', e), 1);
	ck_assert_str_eq(e, "a");
	ck_assert_uint_eq(text_escape_byte('\t', e), 2);
	ck_assert_str_eq(e, "\\t");
	ck_assert_uint_eq(text_escape_byte(0x1b, e), 4);
	ck_assert_str_eq(e, "\\x1b");
	ck_assert_uint_eq(text_escape_byte(0x7f, e), 4);
	ck_assert_str_eq(e, "\\x7f");
	ck_assert_uint_eq(text_escape_byte(0xc3, e), 1); /* UTF-8 kept */
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("text");
	TCase *tc = tcase_create("text");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_every_byte);
	tcase_add_test(tc, test_terminal_escape);
	tcase_add_test(tc, test_idempotent);
	tcase_add_test(tc, test_lines_every_byte);
	tcase_add_test(tc, test_lines_terminal);
	tcase_add_test(tc, test_nul_and_empty);
	tcase_add_test(tc, test_fixed_cut);
	tcase_add_test(tc, test_double);
	tcase_add_test(tc, test_figure);
	tcase_add_test(tc, test_byte);
	tcase_add_test(tc, test_fnv);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
