/*
 * fuzz_logs.c - libFuzzer target: a command run's output through the
 * path of `backfillctl logs` (docs/logs.md): the daemon's DATA frames of
 * `bytes` (proto_data_bytes, each page cut anywhere), the client's
 * proto_parse() and proto_get_bytes(), and the rendering it prints
 * (text_escape_lines, text.h's rule for lines); also the same bytes as
 * text in proto_add_n() (which once aborted on a NUL), and as an encoded
 * value that came from a peer (proto_bytes_decode).
 *
 * The first two input bytes seed where the output is cut into pages, the
 * rest is the output.  Invariants (FUZZ_CHECK traps when one breaks):
 *  - every frame parses whole, is a DATA frame, stays within twice its
 *    bytes (so a page of PROTO_DATA_BYTES_MAX fits PROTO_MAX_BODY), and
 *    decodes to its page exactly: the pages decoded are the output;
 *  - the rendering holds no control byte but newline and tab, keeps every
 *    newline, and is the same page by page as whole;
 *  - proto_add_n() of the output builds a frame that parses, its value
 *    the output with each NUL as "\x00";
 *  - a value decodes or is refused; one that decodes (and holds no NUL,
 *    as a value in a frame cannot) is encoded back to itself: one
 *    encoding per byte string.
 */
#include "fuzz.h"

#include "buf.h"
#include "proto.h"
#include "text.h"

/* One frame of page[0..len): sent, parsed and decoded into got. */
static void
fuzz_logs_frame(const char *page, size_t len, struct buf *got)
{
	struct proto_msg msg;
	struct err err;
	struct buf f;
	size_t used, before = got->len;

	buf_init(&f);
	proto_data_bytes(&f, page, len);
	FUZZ_CHECK(f.len - PROTO_HEADER <= 2 * len + sizeof "bytes=");
	FUZZ_CHECK(proto_body_len(f.data) == f.len - PROTO_HEADER);
	memset(&err, 0, sizeof err);
	FUZZ_CHECK(proto_parse(f.data, f.len, &used, &msg, &err) == 1);
	FUZZ_CHECK(used == f.len && msg.type == PROTO_DATA &&
	    msg.nfields == 1);
	FUZZ_CHECK(proto_get_bytes(&msg, "bytes", got) == 0);
	FUZZ_CHECK(got->len - before == len);
	FUZZ_CHECK(len == 0 || memcmp(got->data + before, page, len) == 0);
	proto_msg_free(&msg);
	buf_free(&f);
}

/* The rendering holds no control byte but newline and tab, and as many
 * newlines as data[0..len). */
static void
fuzz_logs_shown(const struct buf *shown, const char *data, size_t len)
{
	size_t nl_in = 0, nl_out = 0, i;

	FUZZ_CHECK(shown->len >= len);
	for (i = 0; i < len; i++)
		nl_in += data[i] == '\n';
	for (i = 0; i < shown->len; i++) {
		unsigned char c = (unsigned char)shown->data[i];

		FUZZ_CHECK(c >= 0x20 || c == '\n' || c == '\t');
		FUZZ_CHECK(c != 0x7f);
		nl_out += c == '\n';
	}
	FUZZ_CHECK(nl_in == nl_out);
}

/* The output as text: proto_add_n renders a NUL as \x00, never aborts. */
static void
fuzz_logs_text(const char *data, size_t len)
{
	struct proto_msg msg;
	struct err err;
	struct buf f, want;
	size_t used, i;

	buf_init(&f);
	buf_init(&want);
	proto_begin(&f, PROTO_DATA);
	proto_add_n(&f, "out", data, len);
	proto_end(&f);
	for (i = 0; i < len; i++) {
		if (data[i] == '\0')
			buf_addstr(&want, "\\x00");
		else
			buf_add(&want, data + i, 1);
	}
	memset(&err, 0, sizeof err);
	FUZZ_CHECK(proto_parse(f.data, f.len, &used, &msg, &err) == 1);
	FUZZ_CHECK(msg.fields[0].value_len == want.len);
	FUZZ_CHECK(want.len == 0 ||
	    memcmp(proto_get(&msg, "out"), want.data, want.len) == 0);
	proto_msg_free(&msg);
	buf_free(&want);
	buf_free(&f);
}

/* The output as an encoded value from a peer: refused, or canonical. */
static void
fuzz_logs_decode(const char *data, size_t len)
{
	struct buf dec, again;

	buf_init(&dec);
	buf_init(&again);
	/* a value in a frame holds no NUL (it would end the field) */
	if (proto_bytes_decode(data, len, &dec) == 0 &&
	    (len == 0 || memchr(data, '\0', len) == NULL)) {
		proto_add_bytes(&again, "bytes", dec.data, dec.len);
		/* "bytes=" value NUL */
		FUZZ_CHECK(again.len == 6 + len + 1);
		FUZZ_CHECK(len == 0 || memcmp(again.data + 6, data, len) == 0);
	}
	buf_free(&dec);
	buf_free(&again);
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
	const char *data;
	struct buf got, shown, whole;
	uint32_t seed;
	size_t len, off, piece;

	if (size < 2)
		return 0;
	seed = ((uint32_t)input[0] << 8 | input[1]) | 1;
	data = (const char *)input + 2;
	len = size - 2;
	buf_init(&got);
	buf_init(&shown);
	buf_init(&whole);
	/* pages cut where the seed says, as a log is read while written */
	for (off = 0; off < len; off += piece) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		piece = seed % 64 + 1;
		if (piece > len - off)
			piece = len - off;
		fuzz_logs_frame(data + off, piece, &got);
		text_escape_lines(&shown, data + off, piece);
	}
	fuzz_logs_frame(data, 0, &got); /* an empty page */
	FUZZ_CHECK(got.len == len && (len == 0 ||
	    memcmp(got.data, data, len) == 0));
	text_escape_lines(&whole, data, len);
	FUZZ_CHECK(shown.len == whole.len && (len == 0 ||
	    memcmp(shown.data, whole.data, whole.len) == 0));
	fuzz_logs_shown(&whole, data, len);
	fuzz_logs_text(data, len);
	fuzz_logs_decode(data, len);
	buf_free(&got);
	buf_free(&shown);
	buf_free(&whole);
	return 0;
}
