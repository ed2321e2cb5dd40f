/*
 * test_proto.c - the control protocol's framing, field validation, struct
 * buf and JSON escaping (daemon/lib/proto/proto.c).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "proto.h"

/* Build a raw frame: header fields as given, then body bytes. */
static void
raw_frame(struct buf *b, uint32_t magic, uint16_t version, uint16_t type,
    uint32_t len, const char *body, size_t body_len)
{
	unsigned char h[PROTO_HEADER];

	h[0] = magic >> 24;
	h[1] = magic >> 16;
	h[2] = magic >> 8;
	h[3] = magic;
	h[4] = version >> 8;
	h[5] = version;
	h[6] = type >> 8;
	h[7] = type;
	h[8] = len >> 24;
	h[9] = len >> 16;
	h[10] = len >> 8;
	h[11] = len;
	buf_reset(b);
	buf_add(b, h, sizeof h);
	buf_add(b, body, body_len);
}

/* Parse a raw frame whose body is body[0..body_len); the result. */
static int
parse_body(const char *body, size_t body_len, struct err *err)
{
	struct proto_msg msg;
	struct buf b;
	size_t used;
	int rc;

	buf_init(&b);
	raw_frame(&b, PROTO_MAGIC, PROTO_VERSION, PROTO_REQUEST,
	    (uint32_t)body_len, body, body_len);
	rc = proto_parse(b.data, b.len, &used, &msg, err);
	if (rc == 1)
		ck_assert_uint_eq(used, b.len);
	proto_msg_free(&msg);
	buf_free(&b);
	return rc;
}

/* A JSON-escaped string, freshly allocated. */
static char *
json(const char *s)
{
	struct buf b;

	buf_init(&b);
	json_str(&b, s);
	return buf_steal(&b);
}

START_TEST(test_round_trip)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used;
	long long v;

	buf_init(&b);
	proto_begin(&b, PROTO_RESPONSE);
	proto_add(&b, "status", "0");
	proto_add(&b, "out", "line 1\nline 2 = with equals\n");
	proto_add(&b, "empty", "");
	proto_addf(&b, "request", "%d", 12);
	proto_add_int(&b, "neg", -42);
	proto_add_int(&b, "big", 9223372036854775807LL);
	proto_end(&b);

	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 1);
	ck_assert_uint_eq(used, b.len);
	ck_assert_int_eq(msg.type, PROTO_RESPONSE);
	ck_assert_uint_eq(msg.nfields, 6);
	ck_assert_str_eq(proto_get(&msg, "status"), "0");
	ck_assert_str_eq(proto_get(&msg, "out"),
	    "line 1\nline 2 = with equals\n");
	ck_assert_uint_eq(msg.fields[1].value_len,
	    strlen("line 1\nline 2 = with equals\n"));
	ck_assert_str_eq(proto_get(&msg, "empty"), "");
	ck_assert_ptr_null(proto_get(&msg, "missing"));
	ck_assert_int_eq(proto_get_int(&msg, "request", &v), 0);
	ck_assert_int_eq(v, 12);
	ck_assert_int_eq(proto_get_int(&msg, "neg", &v), 0);
	ck_assert_int_eq(v, -42);
	ck_assert_int_eq(proto_get_int(&msg, "big", &v), 0);
	ck_assert(v == 9223372036854775807LL);
	proto_msg_free(&msg);
	ck_assert_ptr_null(msg.body);
	proto_msg_free(&msg); /* twice is harmless */
	buf_free(&b);
}
END_TEST

START_TEST(test_empty_body)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used;

	buf_init(&b);
	proto_begin(&b, PROTO_PROGRESS);
	proto_end(&b);
	ck_assert_uint_eq(b.len, PROTO_HEADER);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 1);
	ck_assert_uint_eq(used, PROTO_HEADER);
	ck_assert_int_eq(msg.type, PROTO_PROGRESS);
	ck_assert_uint_eq(msg.nfields, 0);
	proto_msg_free(&msg);
	buf_free(&b);
}
END_TEST

START_TEST(test_header_bytes)
{
	static const unsigned char want[] = {
		'B', 'F', 'L', 'D', 0, 2, 0, 1, 0, 0, 0, 6,
		'c', 'm', 'd', '=', 'x', 0
	};
	struct buf b;

	buf_init(&b);
	proto_begin(&b, PROTO_REQUEST);
	proto_add(&b, "cmd", "x");
	proto_end(&b);
	ck_assert_uint_eq(b.len, sizeof want);
	ck_assert_int_eq(memcmp(b.data, want, sizeof want), 0);
	/* proto_begin starts over */
	proto_begin(&b, PROTO_REQUEST);
	proto_end(&b);
	ck_assert_uint_eq(b.len, PROTO_HEADER);
	buf_free(&b);
}
END_TEST

START_TEST(test_two_frames_in_a_row)
{
	struct proto_msg msg;
	struct buf b, all;
	struct err err;
	size_t used, off = 0;

	buf_init(&b);
	buf_init(&all);
	proto_begin(&b, PROTO_PROGRESS);
	proto_add(&b, "done", "1");
	proto_end(&b);
	buf_add(&all, b.data, b.len);
	proto_begin(&b, PROTO_RESPONSE);
	proto_add(&b, "status", "1");
	proto_end(&b);
	buf_add(&all, b.data, b.len);

	ck_assert_int_eq(proto_parse(all.data, all.len, &used, &msg, &err), 1);
	ck_assert_int_eq(msg.type, PROTO_PROGRESS);
	ck_assert_str_eq(proto_get(&msg, "done"), "1");
	proto_msg_free(&msg);
	off = used;
	ck_assert_int_eq(proto_parse(all.data + off, all.len - off, &used,
	    &msg, &err), 1);
	ck_assert_int_eq(msg.type, PROTO_RESPONSE);
	ck_assert_str_eq(proto_get(&msg, "status"), "1");
	ck_assert_uint_eq(off + used, all.len);
	proto_msg_free(&msg);
	buf_free(&b);
	buf_free(&all);
}
END_TEST

/* Every strict prefix of a valid frame needs more bytes; each is parsed
 * from its own exact-size allocation so that ASan/valgrind catch any read
 * past len. */
START_TEST(test_truncated_every_offset)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used, i;
	char *copy;

	buf_init(&b);
	proto_begin(&b, PROTO_REQUEST);
	proto_add(&b, "cmd", "backfill");
	proto_add(&b, "job", "fct_daily_sales");
	proto_add(&b, "dates", "2026-01-01\n2026-01-02");
	proto_end(&b);
	for (i = 0; i < b.len; i++) {
		copy = malloc(i ? i : 1);
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, b.data, i);
		used = 99;
		ck_assert_msg(proto_parse(copy, i, &used, &msg, &err) == 0,
		    "prefix of %zu bytes", i);
		ck_assert_uint_eq(used, 0);
		ck_assert_ptr_null(msg.body);
		proto_msg_free(&msg);
		free(copy);
	}
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 1);
	proto_msg_free(&msg);
	buf_free(&b);
}
END_TEST

START_TEST(test_bad_magic)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used;

	buf_init(&b);
	raw_frame(&b, 0x47455420u /* "GET " */, 1, 1, 0, "", 0);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "magic"));
	ck_assert_ptr_null(strchr(err.msg, '\n'));
	/* refused on the first wrong byte, before the header is whole */
	ck_assert_int_eq(proto_parse("BFX", 3, &used, &msg, &err), -1);
	ck_assert_int_eq(proto_parse("X", 1, &used, &msg, &err), -1);
	ck_assert_int_eq(proto_parse("BF", 2, &used, &msg, &err), 0);
	ck_assert_int_eq(proto_parse("", 0, &used, &msg, &err), 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_bad_version)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used;

	buf_init(&b);
	raw_frame(&b, PROTO_MAGIC, 7, PROTO_REQUEST, 0, "", 0);
	/* known as soon as the version bytes are there */
	ck_assert_int_eq(proto_parse(b.data, 6, &used, &msg, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, "protocol version 7 is not supported (this "
	    "side speaks 2): use backfillctl and backfilld from the same "
	    "release");
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), -1);
	raw_frame(&b, PROTO_MAGIC, 0, PROTO_REQUEST, 0, "", 0);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), -1);
	ck_assert_uint_eq(used, 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_bad_type)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used;
	uint16_t types[] = { 0, 5, 0xffff };
	size_t i;

	buf_init(&b);
	for (i = 0; i < sizeof types / sizeof types[0]; i++) {
		raw_frame(&b, PROTO_MAGIC, PROTO_VERSION, types[i], 0, "", 0);
		ck_assert_int_eq(proto_parse(b.data, 8, &used, &msg, &err), -1);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
		ck_assert_ptr_nonnull(strstr(err.msg, "frame type"));
	}
	buf_free(&b);
}
END_TEST

/* An oversize length is refused from the header alone: no body bytes, and
 * nothing allocated (a 4 GiB malloc would fail or show under valgrind). */
START_TEST(test_oversize)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used;

	buf_init(&b);
	raw_frame(&b, PROTO_MAGIC, PROTO_VERSION, PROTO_REQUEST,
	    PROTO_MAX_BODY + 1, "", 0);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_ptr_null(msg.body);
	ck_assert_ptr_nonnull(strstr(err.msg, "4194305"));
	raw_frame(&b, PROTO_MAGIC, PROTO_VERSION, PROTO_REQUEST, 0xffffffffu,
	    "", 0);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), -1);
	ck_assert_ptr_null(msg.body);
	/* exactly the limit is fine, and needs the whole body first */
	raw_frame(&b, PROTO_MAGIC, PROTO_VERSION, PROTO_REQUEST,
	    PROTO_MAX_BODY, "", 0);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 0);
	ck_assert_ptr_null(msg.body);
	buf_free(&b);
}
END_TEST

START_TEST(test_max_body)
{
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used, n = PROTO_MAX_BODY - 5; /* "out=" + value + NUL */
	char *big = malloc(n + 2);

	ck_assert_ptr_nonnull(big);
	memset(big, 'x', n);
	big[n] = '\0';
	buf_init(&b);
	proto_begin(&b, PROTO_RESPONSE);
	proto_add(&b, "out", big);
	proto_end(&b);
	ck_assert_uint_eq(b.len, PROTO_HEADER + PROTO_MAX_BODY);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 1);
	ck_assert_uint_eq(msg.fields[0].value_len, n);
	proto_msg_free(&msg);
	/* one byte more is refused */
	big[n] = 'x';
	big[n + 1] = '\0';
	proto_begin(&b, PROTO_RESPONSE);
	proto_add(&b, "out", big);
	proto_end(&b);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), -1);
	ck_assert_ptr_null(msg.body);
	buf_free(&b);
	free(big);
}
END_TEST

START_TEST(test_bad_bodies)
{
	static const struct {
		const char *body;
		size_t len;
		const char *want;
	} cases[] = {
		{ "cmd\0", 4, "no '='" },
		{ "=x\0", 3, "bad key" },
		{ "Cmd=x\0", 6, "bad key" },
		{ "cmd-x=x\0", 8, "bad key" },
		{ "c d=x\0", 6, "bad key" },
		{ "cmd=x", 5, "NUL" },
		{ "cmd=x\0job", 9, "NUL" },
		{ "cmd=x\0cmd=y\0", 12, "twice" },
		{ "a=1\0b=2\0a=3\0", 12, "twice" },
		{ "\0", 1, "no '='" },
		{ "abcdefghijklmnopqrstuvwxyz0123456=x\0", 36, "bad key" },
	};
	struct err err;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err_clear(&err);
		ck_assert_msg(parse_body(cases[i].body, cases[i].len, &err) ==
		    -1, "case %zu accepted", i);
		ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
		ck_assert_msg(strstr(err.msg, cases[i].want) != NULL,
		    "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
		ck_assert_ptr_null(strchr(err.msg, '\n'));
	}
	/* a 32-character key is fine; a value may hold '=' */
	ck_assert_int_eq(parse_body("abcdefghijklmnopqrstuvwxyz012345=x\0",
	    35, &err), 1);
	ck_assert_int_eq(parse_body("a==b=\0", 6, &err), 1);
}
END_TEST

START_TEST(test_field_count)
{
	struct buf body;
	struct err err;
	int i;

	buf_init(&body);
	for (i = 0; i < PROTO_MAX_FIELDS; i++) {
		buf_printf(&body, "k%d=%d", i, i);
		buf_add(&body, "", 1);
	}
	ck_assert_int_eq(parse_body(body.data, body.len, &err), 1);
	buf_printf(&body, "one_more=1");
	buf_add(&body, "", 1);
	ck_assert_int_eq(parse_body(body.data, body.len, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "more than 64 fields"));
	buf_free(&body);
}
END_TEST

START_TEST(test_get_int)
{
	static const struct {
		const char *value;
		int rc;
		long long v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "12", 0, 12 },
		{ "-5", 0, -5 },
		{ "007", 0, 7 },
		{ "9223372036854775807", 0, 9223372036854775807LL },
		{ "9223372036854775808", -1, 0 },
		{ "", -1, 0 },
		{ "-", -1, 0 },
		{ "+5", -1, 0 },
		{ " 5", -1, 0 },
		{ "5 ", -1, 0 },
		{ "5x", -1, 0 },
		{ "0x10", -1, 0 },
		{ "1e3", -1, 0 },
		{ "--5", -1, 0 },
	};
	struct proto_msg msg;
	struct buf b;
	struct err err;
	size_t used, i;
	long long v;

	buf_init(&b);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		proto_begin(&b, PROTO_RESPONSE);
		proto_add(&b, "n", cases[i].value);
		proto_end(&b);
		ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err),
		    1);
		v = 4242;
		ck_assert_msg(proto_get_int(&msg, "n", &v) == cases[i].rc,
		    "'%s'", cases[i].value);
		if (cases[i].rc == 0)
			ck_assert(v == cases[i].v);
		ck_assert_int_eq(proto_get_int(&msg, "absent", &v), -1);
		proto_msg_free(&msg);
	}
	buf_free(&b);
}
END_TEST

START_TEST(test_json_escape)
{
	static const struct {
		const char *in;
		const char *out;
	} cases[] = {
		{ "", "\"\"" },
		{ "plain", "\"plain\"" },
		{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
		{ "a\\b", "\"a\\\\b\"" },
		{ "l1\nl2\r\t", "\"l1\\nl2\\r\\t\"" },
		{ "\b\f", "\"\\b\\f\"" },
		{ "\x01\x1f", "\"\\u0001\\u001f\"" },
		{ "\x7f", "\"\\u007f\"" }, /* DEL too: text.h's rule */
		{ "/", "\"/\"" },
		/* UTF-8 passes through: é, €, 𝄞 */
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e",
		  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\"" },
		/* bytes that are not UTF-8 become U+FFFD */
		{ "a\xff" "b", "\"a\\ufffdb\"" },
		{ "\xc3", "\"\\ufffd\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },
	};
	size_t i;
	char *s;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		s = json(cases[i].in);
		ck_assert_msg(strcmp(s, cases[i].out) == 0, "case %zu: %s", i,
		    s);
		free(s);
	}
	s = json(NULL);
	ck_assert_str_eq(s, "null");
	free(s);
}
END_TEST

START_TEST(test_buf)
{
	struct buf b;
	char *s;
	int i;

	buf_init(&b);
	s = buf_steal(&b);
	ck_assert_str_eq(s, "");
	free(s);
	buf_addstr(&b, "a");
	buf_printf(&b, "%d-%s", 42, "x");
	ck_assert_str_eq(b.data, "a42-x");
	for (i = 0; i < 1000; i++)
		buf_printf(&b, "%0100d", i);
	ck_assert_uint_eq(b.len, 5 + 100000);
	ck_assert_uint_eq(strlen(b.data), b.len);
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.data, "");
	buf_add(&b, "xyz", 2);
	s = buf_steal(&b);
	ck_assert_str_eq(s, "xy");
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	free(s);
	buf_free(&b);
}
END_TEST

/* Tiny deterministic generator (xorshift32), so runs repeat exactly. */
static uint32_t
fuzz_next(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* Parse data[0..len) from an exact-size copy and check the contract. */
static void
fuzz_one(const char *data, size_t len)
{
	struct proto_msg msg;
	struct err err;
	size_t used = 12345, i;
	char *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, data, len);
	rc = proto_parse(copy, len, &used, &msg, &err);
	ck_assert(rc == -1 || rc == 0 || rc == 1);
	if (rc == 1) {
		ck_assert(used >= PROTO_HEADER && used <= len);
		ck_assert(msg.nfields <= PROTO_MAX_FIELDS);
		for (i = 0; i < msg.nfields; i++)
			ck_assert_uint_eq(strlen(msg.fields[i].value),
			    msg.fields[i].value_len);
	} else {
		ck_assert_uint_eq(used, 0);
		ck_assert_ptr_null(msg.body);
	}
	proto_msg_free(&msg);
	free(copy);
}

START_TEST(test_data_frame)
{
	struct proto_msg msg;
	struct err err;
	struct buf b;
	size_t used;

	/* a DATA frame carries a chunk of text, cut anywhere (no NUL) */
	buf_init(&b);
	proto_begin(&b, PROTO_DATA);
	proto_add_n(&b, "out", "[\n  {\"id\": 1}xyz", 13);
	proto_end(&b);
	ck_assert_uint_eq(proto_body_len(b.data), b.len - PROTO_HEADER);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 1);
	ck_assert_uint_eq(used, b.len);
	ck_assert_int_eq(msg.type, PROTO_DATA);
	ck_assert_uint_eq(msg.fields[0].value_len, 13);
	ck_assert_str_eq(proto_get(&msg, "out"), "[\n  {\"id\": 1}");
	proto_msg_free(&msg);
	buf_free(&b);
}
END_TEST

START_TEST(test_data_nul)
{
	struct proto_msg msg;
	struct err err;
	struct buf b;
	size_t used;

	/* text with a NUL (a run's output quoted somewhere): never an
	 * abort; the NUL is sent as the text rule's \x00 */
	buf_init(&b);
	proto_begin(&b, PROTO_DATA);
	proto_add_n(&b, "out", "a\0b\0", 4);
	proto_end(&b);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 1);
	ck_assert_str_eq(proto_get(&msg, "out"), "a\\x00b\\x00");
	proto_msg_free(&msg);
	buf_free(&b);
}
END_TEST

/* data[0..len) through a DATA frame of bytes and back. */
static void
bytes_round_trip(const char *data, size_t len)
{
	struct proto_msg msg;
	struct err err;
	struct buf b, out;
	size_t used;

	buf_init(&b);
	buf_init(&out);
	proto_data_bytes(&b, data, len);
	ck_assert_uint_le(b.len - PROTO_HEADER, 2 * len + 7);
	ck_assert_int_eq(proto_parse(b.data, b.len, &used, &msg, &err), 1);
	ck_assert_uint_eq(used, b.len);
	ck_assert_int_eq(msg.type, PROTO_DATA);
	ck_assert_int_eq(proto_get_bytes(&msg, "bytes", &out), 0);
	ck_assert_uint_eq(out.len, len);
	ck_assert_ptr_nonnull(out.data);
	if (len > 0)
		ck_assert_mem_eq(out.data, data, len);
	ck_assert_int_eq(proto_get_bytes(&msg, "out", &out), -1);
	proto_msg_free(&msg);
	buf_free(&out);
	buf_free(&b);
}

START_TEST(test_data_bytes)
{
	static const char every[] = "\0\\0\\\\\0\x1b[2J\a\r\n\xff\\";
	char all[256 * 2];
	struct buf out;

	bytes_round_trip("", 0);
	bytes_round_trip("plain text\n", 11);
	bytes_round_trip(every, sizeof every - 1);
	for (int i = 0; i < 256; i++) {
		all[i] = (char)i;
		all[511 - i] = (char)i;
	}
	bytes_round_trip(all, sizeof all);
	/* the encoding on the wire: backslash doubled, NUL as \0 */
	buf_init(&out);
	proto_begin(&out, PROTO_DATA);
	proto_add_bytes(&out, "bytes", "a\0\\0", 4);
	ck_assert_uint_eq(out.len - PROTO_HEADER, 13);
	ck_assert_mem_eq(out.data + PROTO_HEADER, "bytes=a\\0\\\\0", 13);
	buf_free(&out);
	/* what is not an encoding is refused, not guessed */
	buf_init(&out);
	ck_assert_int_eq(proto_bytes_decode("ab\\", 3, &out), -1);
	buf_reset(&out);
	ck_assert_int_eq(proto_bytes_decode("a\\nb", 4, &out), -1);
	buf_reset(&out);
	ck_assert_int_eq(proto_bytes_decode("a\\0\\\\", 5, &out), 0);
	ck_assert_uint_eq(out.len, 3);
	ck_assert_mem_eq(out.data, "a\0\\", 3);
	buf_free(&out);
}
END_TEST

START_TEST(test_fuzz)
{
	uint32_t seed = 0x2026beefu;
	char data[512];
	struct buf b;
	size_t len, i, j;

	/* pure noise */
	for (i = 0; i < 20000; i++) {
		len = fuzz_next(&seed) % sizeof data;
		for (j = 0; j < len; j++)
			data[j] = (char)fuzz_next(&seed);
		fuzz_one(data, len);
	}
	/* a valid header and a noisy body from a small alphabet */
	buf_init(&b);
	for (i = 0; i < 20000; i++) {
		static const char alpha[] = "ab_=\0Z9=\0";
		len = fuzz_next(&seed) % 64;
		for (j = 0; j < len; j++)
			data[j] = alpha[fuzz_next(&seed) % (sizeof alpha - 1)];
		raw_frame(&b, PROTO_MAGIC, PROTO_VERSION,
		    (uint16_t)(1 + fuzz_next(&seed) % 3), (uint32_t)len, data,
		    len);
		fuzz_one(b.data, b.len);
	}
	/* valid frames with a few bytes flipped and cut anywhere */
	for (i = 0; i < 20000; i++) {
		proto_begin(&b, PROTO_RESPONSE);
		proto_add(&b, "status", "0");
		proto_add(&b, "out", "hello\n");
		proto_add_int(&b, "request", (long long)i);
		proto_end(&b);
		for (j = fuzz_next(&seed) % 4; j > 0; j--)
			b.data[fuzz_next(&seed) % b.len] ^=
			    (char)(1u << (fuzz_next(&seed) % 8));
		fuzz_one(b.data, fuzz_next(&seed) % (b.len + 1));
	}
	buf_free(&b);
}
END_TEST

/* The suite. */
static Suite *
proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("frames");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_empty_body);
	tcase_add_test(tc, test_header_bytes);
	tcase_add_test(tc, test_two_frames_in_a_row);
	tcase_add_test(tc, test_truncated_every_offset);
	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_bad_version);
	tcase_add_test(tc, test_bad_type);
	tcase_add_test(tc, test_oversize);
	tcase_add_test(tc, test_max_body);
	tcase_add_test(tc, test_bad_bodies);
	tcase_add_test(tc, test_field_count);
	tcase_add_test(tc, test_get_int);
	tcase_add_test(tc, test_json_escape);
	tcase_add_test(tc, test_buf);
	tcase_add_test(tc, test_data_frame);
	tcase_add_test(tc, test_data_nul);
	tcase_add_test(tc, test_data_bytes);
	tcase_add_test(tc, test_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(proto_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
