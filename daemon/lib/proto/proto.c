/*
 * proto.c - framing and field encoding of the control protocol (pure).
 *
 * Writing: proto_begin() resets a struct buf and reserves the 12-byte
 * header, proto_add*() append "key=value\0" fields, proto_end() fills the
 * header with the body length.  No byte of a value makes a sender abort
 * (only a key that is not one, which the code names, never the data):
 * proto_add_n() renders a NUL of text as "\x00", proto_add_bytes() carries
 * any byte, encoded.  One frame per buffer: a sender that queues
 * several frames builds each in its own buffer and appends it.  proto_end()
 * does not enforce PROTO_MAX_BODY: a sender whose body may grow large
 * keeps it small itself (the daemon sends long output as DATA frames of at
 * most 1 MiB, control.c), because the peer refuses a longer frame.
 *
 * Reading: proto_parse() is incremental and defensive.  It looks at no
 * byte past `len`, refuses a bad magic, version or type as soon as those
 * bytes have arrived (so a stray HTTP client is turned away at once),
 * refuses an announced length above PROTO_MAX_BODY before waiting for or
 * allocating anything, and allocates the body (length + 1 for a closing
 * NUL) only once the whole frame is there.  The body is then validated
 * completely: every field "key=value\0", keys 1..PROTO_KEY_MAX of
 * [a-z0-9_], at most PROTO_MAX_FIELDS fields, no key twice.
 */
#include "proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Store v big-endian in n bytes at p. */
static void
proto_put_be(char *p, uint32_t v, int n)
{
	int i;

	for (i = n - 1; i >= 0; i--) {
		p[i] = (char)(v & 0xff);
		v >>= 8;
	}
}

/* Read n big-endian bytes at p. */
static uint32_t
proto_get_be(const char *p, int n)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v = (v << 8) | (unsigned char)p[i];
	return v;
}

/* Start a frame of `type` in b (which is reset). */
void
proto_begin(struct buf *b, int type)
{
	char head[PROTO_HEADER];

	proto_put_be(head, PROTO_MAGIC, 4);
	proto_put_be(head + 4, PROTO_VERSION, 2);
	proto_put_be(head + 6, (uint32_t)type, 2);
	proto_put_be(head + 8, 0, 4);
	buf_reset(b);
	buf_add(b, head, sizeof head);
}

/* True when key is 1..PROTO_KEY_MAX characters of [a-z0-9_]. */
static int
proto_key_ok(const char *key, size_t len)
{
	size_t i;

	if (len == 0 || len > PROTO_KEY_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char c = key[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '_'))
			return 0;
	}
	return 1;
}

/* Append field key=value; key must be a valid key (a programming error
 * otherwise: abort rather than send a frame the peer refuses). */
void
proto_add(struct buf *b, const char *key, const char *value)
{
	size_t klen = strlen(key);

	if (!proto_key_ok(key, klen))
		abort();
	buf_add(b, key, klen);
	buf_add(b, "=", 1);
	buf_add(b, value, strlen(value));
	buf_add(b, "", 1);
}

/* Append field key=value where value is len bytes of text: a NUL among
 * them goes as "\x00" (the text rule's), never an abort: the bytes may
 * be anyone's. */
void
proto_add_n(struct buf *b, const char *key, const char *value, size_t len)
{
	size_t klen = strlen(key), i, run = 0;

	if (!proto_key_ok(key, klen))
		abort();
	buf_add(b, key, klen);
	buf_add(b, "=", 1);
	for (i = 0; i < len; i++) {
		if (value[i] != '\0')
			continue;
		buf_add(b, value + run, i - run);
		buf_add(b, "\\x00", 4);
		run = i + 1;
	}
	if (len > run)
		buf_add(b, value + run, len - run);
	buf_add(b, "", 1);
}

/* Append field key=<data[0..len) encoded: a backslash as two, a NUL as
 * a backslash and '0'>. */
void
proto_add_bytes(struct buf *b, const char *key, const void *data, size_t len)
{
	const char *p = data;
	size_t klen = strlen(key), i, run = 0;

	if (!proto_key_ok(key, klen))
		abort();
	buf_add(b, key, klen);
	buf_add(b, "=", 1);
	for (i = 0; i < len; i++) {
		if (p[i] != '\0' && p[i] != '\\')
			continue;
		buf_add(b, p + run, i - run);
		buf_add(b, p[i] == '\0' ? "\\0" : "\\\\", 2);
		run = i + 1;
	}
	if (len > run)
		buf_add(b, p + run, len - run);
	buf_add(b, "", 1);
}

/* Decode a value of proto_add_bytes into out: 0, or -1 at a fault. */
int
proto_bytes_decode(const char *value, size_t value_len, struct buf *out)
{
	size_t i, run = 0;

	for (i = 0; i < value_len; i++) {
		if (value[i] != '\\')
			continue;
		buf_add(out, value + run, i - run);
		if (i + 1 == value_len || (value[i + 1] != '\\' &&
		    value[i + 1] != '0'))
			return -1;
		buf_add(out, value[i + 1] == '0' ? "" : "\\", 1);
		run = ++i + 1;
	}
	if (value_len > run)
		buf_add(out, value + run, value_len - run);
	if (out->data == NULL)
		buf_add(out, "", 0);
	return 0;
}

/* One DATA frame with data[0..len) in its field `bytes`. */
void
proto_data_bytes(struct buf *f, const void *data, size_t len)
{
	proto_begin(f, PROTO_DATA);
	proto_add_bytes(f, "bytes", data, len);
	proto_end(f);
}

/* Append field key=<printf-formatted value>. */
void
proto_addf(struct buf *b, const char *key, const char *fmt, ...)
{
	size_t klen = strlen(key);
	va_list ap;

	if (!proto_key_ok(key, klen))
		abort();
	buf_add(b, key, klen);
	buf_add(b, "=", 1);
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
	buf_add(b, "", 1);
}

/* Append field key=<decimal v>. */
void
proto_add_int(struct buf *b, const char *key, long long v)
{
	proto_addf(b, key, "%lld", v);
}

/* Finish the frame started by proto_begin(): write the body length. */
void
proto_end(struct buf *b)
{
	size_t body = b->len - PROTO_HEADER;

	proto_put_be(b->data + 8, body > UINT32_MAX ? UINT32_MAX :
	    (uint32_t)body, 4);
}

/* Name of a frame type, for messages. */
static const char *
proto_type_name(uint32_t type)
{
	switch (type) {
	case PROTO_REQUEST:
		return "request";
	case PROTO_RESPONSE:
		return "response";
	case PROTO_PROGRESS:
		return "progress";
	case PROTO_DATA:
		return "data";
	}
	return "unknown";
}

/* Split and check the body of msg into fields; -1 with err if malformed. */
static int
proto_split(struct proto_msg *msg, struct err *err)
{
	const char *p = msg->body, *end = msg->body + msg->body_len;
	const char *key, *eq, *nul;
	size_t klen, i;

	while (p < end) {
		key = p;
		eq = memchr(p, '=', (size_t)(end - p));
		nul = memchr(p, '\0', (size_t)(end - p));
		if (nul == NULL)
			return err_set(err, EXIT_BAD_INPUT,
			    "malformed %s frame: field %zu does not end with "
			    "a NUL byte: use backfillctl and backfilld from "
			    "the same release", proto_type_name(
			    (uint32_t)msg->type), msg->nfields + 1);
		if (eq == NULL || eq > nul)
			return err_set(err, EXIT_BAD_INPUT,
			    "malformed %s frame: field %zu has no '=': use "
			    "backfillctl and backfilld from the same release",
			    proto_type_name((uint32_t)msg->type),
			    msg->nfields + 1);
		klen = (size_t)(eq - key);
		if (!proto_key_ok(key, klen))
			return err_set(err, EXIT_BAD_INPUT,
			    "malformed %s frame: field %zu has a bad key (keys "
			    "are 1 to %d characters of a-z, 0-9 and _): use "
			    "backfillctl and backfilld from the same release",
			    proto_type_name((uint32_t)msg->type),
			    msg->nfields + 1, PROTO_KEY_MAX);
		if (msg->nfields == PROTO_MAX_FIELDS)
			return err_set(err, EXIT_BAD_INPUT,
			    "malformed %s frame: more than %d fields: use "
			    "backfillctl and backfilld from the same release",
			    proto_type_name((uint32_t)msg->type),
			    PROTO_MAX_FIELDS);
		for (i = 0; i < msg->nfields; i++) {
			if (strlen(msg->fields[i].key) == klen &&
			    memcmp(msg->fields[i].key, key, klen) == 0)
				return err_set(err, EXIT_BAD_INPUT,
				    "malformed %s frame: field '%.*s' appears "
				    "twice: use backfillctl and backfilld from "
				    "the same release",
				    proto_type_name((uint32_t)msg->type),
				    (int)klen, key);
		}
		/* Terminate the key in place: the '=' becomes a NUL. */
		msg->body[eq - msg->body] = '\0';
		msg->fields[msg->nfields].key = key;
		msg->fields[msg->nfields].value = eq + 1;
		msg->fields[msg->nfields].value_len = (size_t)(nul - eq - 1);
		msg->nfields++;
		p = nul + 1;
	}
	return 0;
}

/*
 * Decode one frame from the start of data[0..len).  Returns 1 with *used
 * and *msg filled (the caller frees it with proto_msg_free), 0 when more
 * bytes are needed, -1 with err when the bytes are not a valid frame.  On
 * 0 and -1, *msg is empty (safe to free) and *used is 0.
 */
int
proto_parse(const char *data, size_t len, size_t *used,
	    struct proto_msg *msg, struct err *err)
{
	char magic[4];
	uint32_t version, type, blen;
	size_t i;

	*used = 0;
	msg->type = 0;
	msg->body = NULL;
	msg->body_len = 0;
	msg->nfields = 0;

	/* Refuse a bad magic on its first wrong byte. */
	proto_put_be(magic, PROTO_MAGIC, 4);
	for (i = 0; i < len && i < 4; i++) {
		if (data[i] != magic[i])
			return err_set(err, EXIT_BAD_INPUT,
			    "not a backfilld control frame (bad magic): the "
			    "peer does not speak the backfilld protocol; "
			    "check the socket path");
	}
	if (len < 6)
		return 0;
	version = proto_get_be(data + 4, 2);
	if (version != PROTO_VERSION)
		return err_set(err, EXIT_BAD_INPUT,
		    "protocol version %u is not supported (this side speaks "
		    "%d): use backfillctl and backfilld from the same release",
		    (unsigned)version, PROTO_VERSION);
	if (len < 8)
		return 0;
	type = proto_get_be(data + 6, 2);
	if (type != PROTO_REQUEST && type != PROTO_RESPONSE &&
	    type != PROTO_PROGRESS && type != PROTO_DATA)
		return err_set(err, EXIT_BAD_INPUT,
		    "unknown frame type %u: use backfillctl and backfilld "
		    "from the same release", (unsigned)type);
	if (len < PROTO_HEADER)
		return 0;
	blen = proto_get_be(data + 8, 4);
	if (blen > PROTO_MAX_BODY)
		return err_set(err, EXIT_BAD_INPUT,
		    "frame of %lu bytes is longer than the limit of %u bytes: "
		    "ask for less (e.g. --limit) or use backfillctl and "
		    "backfilld from the same release",
		    (unsigned long)blen, PROTO_MAX_BODY);
	if (len - PROTO_HEADER < blen)
		return 0;

	msg->type = (int)type;
	msg->body = xmalloc((size_t)blen + 1);
	memcpy(msg->body, data + PROTO_HEADER, blen);
	msg->body[blen] = '\0';
	msg->body_len = blen;
	if (proto_split(msg, err) != 0) {
		proto_msg_free(msg);
		return -1;
	}
	*used = PROTO_HEADER + (size_t)blen;
	return 1;
}

/* The body length announced by a complete header. */
size_t
proto_body_len(const char *header)
{
	return proto_get_be(header + 8, 4);
}

/* Free a message's body; the message is empty afterwards. */
void
proto_msg_free(struct proto_msg *msg)
{
	free(msg->body);
	msg->type = 0;
	msg->body = NULL;
	msg->body_len = 0;
	msg->nfields = 0;
}

/* The value of field key, or NULL when absent. */
const char *
proto_get(const struct proto_msg *msg, const char *key)
{
	size_t i;

	for (i = 0; i < msg->nfields; i++) {
		if (strcmp(msg->fields[i].key, key) == 0)
			return msg->fields[i].value;
	}
	return NULL;
}

/* A bytes field decoded into out: 0, -1 when absent or malformed. */
int
proto_get_bytes(const struct proto_msg *msg, const char *key, struct buf *out)
{
	size_t i;

	for (i = 0; i < msg->nfields; i++) {
		if (strcmp(msg->fields[i].key, key) == 0)
			return proto_bytes_decode(msg->fields[i].value,
			    msg->fields[i].value_len, out);
	}
	return -1;
}

/* Integer field: optional '-', then decimal digits only; no spaces, no
 * '+', no overflow.  0 ok, -1 when absent or not such an integer. */
int
proto_get_int(const struct proto_msg *msg, const char *key, long long *v)
{
	const char *s = proto_get(msg, key);
	const char *d;
	char *end;
	long long n;

	if (s == NULL)
		return -1;
	d = s[0] == '-' ? s + 1 : s;
	if (*d < '0' || *d > '9')
		return -1;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*v = n;
	return 0;
}
