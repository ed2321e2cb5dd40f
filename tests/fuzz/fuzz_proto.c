/*
 * fuzz_proto.c - libFuzzer target: the control protocol's frame parser,
 * proto_parse(), fed the way a socket feeds it: in pieces.
 *
 * The first four input bytes seed the split points, the rest is the
 * stream.  Invariants (FUZZ_CHECK traps when one breaks):
 *  - the frames and the final outcome (a refusal with its message, or
 *    bytes waiting for more) do not depend on how the stream was split:
 *    fed whole or in random pieces, the parser sees the same thing;
 *  - a frame it accepts is rebuilt byte for byte by proto_begin(),
 *    proto_add() of its fields and proto_end(), and parses again to
 *    the same fields; proto_get() finds each field;
 *  - each value rendered as a JSON string (json_str) is quoted,
 *    holds no control byte and is valid UTF-8;
 *  - a REQUEST parsed by each command's specification (cmdspec_parse,
 *    what cmd.c does at the boundary) is refused with a message (which
 *    may quote the value sent as it came: backfillctl escapes it), or
 *    gives each list the names its text holds; a copy of the typed
 *    request (cmdspec_req_dup) holds the same values.
 */
#include "fuzz.h"

#include "cmdspec.h"
#include "json.h"
#include "proto.h"

/* What one way of feeding the stream produced. */
struct fuzz_proto_log {
	struct buf frames;  /* each frame: its used size, then its bytes */
	int outcome;        /* -1 refused, 0 waiting (or nothing left) */
	size_t pending;     /* bytes not consumed */
	char msg[ERR_MSG_MAX];
};

/* A small deterministic generator for the split points. */
static uint32_t
fuzz_proto_rand(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0. */
static size_t
fuzz_proto_utf8(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Check one value's JSON rendering. */
static void
fuzz_proto_json(const char *value)
{
	struct buf b;
	size_t i, n;

	buf_init(&b);
	json_str(&b, value);
	FUZZ_CHECK(b.len >= 2 && b.data[0] == '"' && b.data[b.len - 1] == '"');
	for (i = 0; i < b.len; i += n) {
		FUZZ_CHECK((unsigned char)b.data[i] >= 0x20);
		n = fuzz_proto_utf8((const unsigned char *)b.data + i, b.len - i);
		FUZZ_CHECK(n > 0);
	}
	buf_free(&b);
}

/* A field of a frame (cmdspec_get_fn). */
static const char *
fuzz_proto_get(const void *src, const char *field)
{
	return proto_get(src, field);
}

/* A list's names are its text's, between its commas. */
static void
fuzz_proto_list(const struct cmdspec_list *l)
{
	struct buf b;

	if (l->text == NULL) {
		FUZZ_CHECK(l->n == 0);
		return;
	}
	buf_init(&b);
	for (size_t i = 0; i < l->n; i++)
		buf_printf(&b, "%s%s", i ? "," : "", l->v[i]);
	buf_add(&b, "", 1);
	FUZZ_CHECK(strcmp(b.data, l->text) == 0);
	buf_free(&b);
}

/* A REQUEST parsed by every command's specification. */
static void
fuzz_proto_typed(const struct proto_msg *msg)
{
	struct cmdspec_req rq, copy;
	struct err err;

	for (size_t i = 0; i < cmdspec_count; i++) {
		const struct cmdspec *cs = cmdspec_table[i];

		memset(&err, 0, sizeof err);
		if (cmdspec_parse(cs, fuzz_proto_get, msg, false, &rq,
				  &err) < 0) {
			FUZZ_CHECK(err.code == EXIT_BAD_INPUT);
			FUZZ_CHECK(err.msg[0] != '\0');
			cmdspec_req_free(&rq);
			continue;
		}
		cmdspec_req_dup(&rq, &copy);
		if (cs == &cmdspec_backfill) {
			fuzz_proto_list(&rq.backfill.downstream);
			fuzz_proto_list(&copy.backfill.downstream);
			FUZZ_CHECK(rq.backfill.job != NULL &&
			    strcmp(rq.backfill.job, copy.backfill.job) == 0);
		} else if (cs == &cmdspec_mark) {
			fuzz_proto_list(&rq.mark.partitions);
			fuzz_proto_list(&copy.mark.partitions);
			FUZZ_CHECK(rq.mark.partitions.n > 0);
		}
		cmdspec_req_free(&rq);
		cmdspec_req_free(&copy);
	}
}

/* Check a parsed frame against the bytes it came from. */
static void
fuzz_proto_frame(const struct proto_msg *msg, const char *bytes, size_t used)
{
	struct proto_msg again;
	struct buf b;
	struct err err;
	size_t i, used2;

	FUZZ_CHECK(used == PROTO_HEADER + msg->body_len);
	FUZZ_CHECK(msg->nfields <= PROTO_MAX_FIELDS);
	buf_init(&b);
	proto_begin(&b, msg->type);
	for (i = 0; i < msg->nfields; i++) {
		FUZZ_CHECK(strlen(msg->fields[i].value) ==
		    msg->fields[i].value_len);
		FUZZ_CHECK(proto_get(msg, msg->fields[i].key) ==
		    msg->fields[i].value);
		proto_add(&b, msg->fields[i].key, msg->fields[i].value);
		fuzz_proto_json(msg->fields[i].value);
	}
	proto_end(&b);
	FUZZ_CHECK(b.len == used && memcmp(b.data, bytes, used) == 0);
	FUZZ_CHECK(proto_parse(b.data, b.len, &used2, &again, &err) == 1);
	FUZZ_CHECK(used2 == used && again.nfields == msg->nfields &&
	    again.type == msg->type);
	for (i = 0; i < msg->nfields; i++)
		FUZZ_CHECK(strcmp(again.fields[i].key, msg->fields[i].key) == 0 &&
		    strcmp(again.fields[i].value, msg->fields[i].value) == 0);
	proto_msg_free(&again);
	buf_free(&b);
	if (msg->type == PROTO_REQUEST)
		fuzz_proto_typed(msg);
}

/* Feed the stream in pieces (max_piece 0: whole) and log what comes out. */
static void
fuzz_proto_feed(const char *data, size_t size, uint32_t seed,
		struct fuzz_proto_log *log)
{
	struct buf in;
	struct proto_msg msg;
	struct err err;
	size_t off = 0, used, piece;
	int rc = 0;

	buf_init(&in);
	buf_init(&log->frames);
	log->outcome = 0;
	log->msg[0] = '\0';
	while (off < size) {
		if (seed == 0) {
			piece = size - off;
		} else {
			/* mostly small pieces, now and then a big one */
			piece = fuzz_proto_rand(&seed) % 8 == 0 ?
			    fuzz_proto_rand(&seed) % 4096 + 1 :
			    fuzz_proto_rand(&seed) % 16 + 1;
			if (piece > size - off)
				piece = size - off;
		}
		buf_add(&in, data + off, piece);
		off += piece;
		for (;;) {
			memset(&err, 0, sizeof err);
			rc = proto_parse(in.data, in.len, &used, &msg, &err);
			if (rc != 1)
				break;
			FUZZ_CHECK(used > 0 && used <= in.len);
			fuzz_proto_frame(&msg, in.data, used);
			buf_add(&log->frames, &used, sizeof used);
			buf_add(&log->frames, in.data, used);
			proto_msg_free(&msg);
			memmove(in.data, in.data + used, in.len - used);
			in.len -= used;
		}
		if (rc == -1) {
			FUZZ_CHECK(used == 0 && msg.body == NULL);
			FUZZ_CHECK(err.code == EXIT_BAD_INPUT);
			FUZZ_CHECK(fuzz_one_line(err.msg));
			log->outcome = -1;
			memcpy(log->msg, err.msg, sizeof log->msg);
			break;
		}
		FUZZ_CHECK(rc == 0 && used == 0);
	}
	log->pending = in.len;
	buf_free(&in);
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_proto_log whole, split;
	uint32_t seed;

	if (size < 4)
		return 0;
	memcpy(&seed, data, 4);
	seed |= 1; /* xorshift never leaves 0; 0 means "whole" */
	fuzz_proto_feed((const char *)data + 4, size - 4, 0, &whole);
	fuzz_proto_feed((const char *)data + 4, size - 4, seed, &split);
	FUZZ_CHECK(whole.outcome == split.outcome);
	FUZZ_CHECK(strcmp(whole.msg, split.msg) == 0);
	FUZZ_CHECK(whole.frames.len == split.frames.len &&
	    (whole.frames.len == 0 ||
	     memcmp(whole.frames.data, split.frames.data, whole.frames.len) == 0));
	if (whole.outcome == 0)
		FUZZ_CHECK(whole.pending == split.pending);
	buf_free(&whole.frames);
	buf_free(&split.frames);
	return 0;
}
