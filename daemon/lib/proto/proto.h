/*
 * proto.h - the control protocol between backfillctl and backfilld (pure).
 *
 * A connection carries frames.  Each frame is a 12-byte header followed by
 * a body:
 *   u32 magic   0x42464c44 ("BFLD"), big-endian
 *   u16 version PROTO_VERSION; a peer answers another version with an
 *               error frame and closes
 *   u16 type    PROTO_REQUEST, PROTO_RESPONSE, PROTO_PROGRESS or
 *               PROTO_DATA
 *   u32 length  of the body, at most PROTO_MAX_BODY (and at most
 *               PROTO_MAX_REQUEST for a REQUEST: the daemon refuses more)
 * The body is a sequence of fields "key=value\0": key is 1..32 of [a-z0-9_],
 * value any bytes but NUL.  A body that is not exactly that is refused.
 * A field that must carry any byte (a command run's output, whose bytes
 * are not the daemon's) is encoded (proto_add_bytes): a backslash is sent
 * as "\\" and a NUL as "\0", and nothing else is escaped.
 *
 * A client sends one REQUEST (field cmd=... and the command's fields); the
 * daemon answers with zero or more PROGRESS frames (only for cmd=wait) or
 * DATA frames (out=<a chunk of text for stdout>, printed as it comes, or
 * bytes=<a chunk of a run's output, encoded>, which backfillctl decodes
 * and renders printable unless asked for the raw bytes) and
 * then one RESPONSE carrying status=<exit code>, and optionally out=<text
 * for stdout, after the DATA chunks> and err=<one line for stderr>, plus
 * command fields.
 */
#ifndef BACKFILLD_PROTO_H
#define BACKFILLD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

#define PROTO_MAGIC 0x42464c44u
#define PROTO_VERSION 2
#define PROTO_HEADER 12
#define PROTO_MAX_BODY (4u * 1024 * 1024)
#define PROTO_MAX_REQUEST (1u * 1024 * 1024)
#define PROTO_MAX_FIELDS 64
#define PROTO_KEY_MAX 32

enum proto_type {
	PROTO_REQUEST = 1,
	PROTO_RESPONSE = 2,
	PROTO_PROGRESS = 3,
	PROTO_DATA = 4
};

struct proto_field {
	const char *key;   /* points into the body */
	const char *value; /* NUL-terminated, points into the body */
	size_t value_len;
};

/* A parsed frame; fields point into `body`, which the msg owns. */
struct proto_msg {
	int type;
	char *body;
	size_t body_len;
	struct proto_field fields[PROTO_MAX_FIELDS];
	size_t nfields;
};

/* Building a frame: start, add fields, finish (writes the header). */
void proto_begin(struct buf *b, int type);
void proto_add(struct buf *b, const char *key, const char *value);
/* The same with a value of len bytes.  The value is text: a NUL byte
 * among them (which would end the field) is sent as the text rule's
 * "\x00" (text.h), never refused: outside bytes cannot stop a sender. */
void proto_add_n(struct buf *b, const char *key, const char *value,
		 size_t len);
/* A field that carries len bytes exactly, whatever they are: encoded,
 * '\' as "\\" and NUL as "\0" (at most 2 * len bytes of value). */
void proto_add_bytes(struct buf *b, const char *key, const void *data,
		     size_t len);
/* Decode such a value (value_len bytes) into out: 0, or -1 when it is not
 * an encoding (a '\' followed by neither '\' nor '0', or last); out then
 * holds what came before the fault. */
int proto_bytes_decode(const char *value, size_t value_len, struct buf *out);
/* One DATA frame carrying data[0..len) exactly in its field `bytes`: the
 * caller keeps len at most PROTO_DATA_BYTES_MAX so that the encoded frame
 * stays within PROTO_MAX_BODY whatever the bytes. */
#define PROTO_DATA_BYTES_MAX (1u * 1024 * 1024)
void proto_data_bytes(struct buf *f, const void *data, size_t len);
void proto_addf(struct buf *b, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void proto_add_int(struct buf *b, const char *key, long long v);
void proto_end(struct buf *b);

/*
 * Incremental decoding from a stream.  proto_parse() looks at `len` bytes
 * of `data`: returns 0 with *used = 0 when more bytes are needed, 1 with
 * *used = frame size and *msg filled (body copied) when a frame is
 * complete, -1 with err (EXIT_BAD_INPUT) when the bytes are not a valid
 * frame: wrong magic, another version, unknown type, too long, or a
 * malformed body.
 */
int proto_parse(const char *data, size_t len, size_t *used,
		struct proto_msg *msg, struct err *err);
void proto_msg_free(struct proto_msg *msg);
/* The body length a complete header (PROTO_HEADER bytes) announces. */
size_t proto_body_len(const char *header);

/* Field lookup: the value, or NULL when absent. */
const char *proto_get(const struct proto_msg *msg, const char *key);
/* A bytes field (proto_add_bytes) decoded into out: 0, -1 when absent or
 * not an encoding. */
int proto_get_bytes(const struct proto_msg *msg, const char *key,
		    struct buf *out);
/* Integer field: 0 ok, -1 when absent or not a decimal integer. */
int proto_get_int(const struct proto_msg *msg, const char *key, long long *v);

#endif
