/* text.c - rendering outside text printable; the rule is in text.h. */
#include "text.h"
#include <inttypes.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fnv.h"

/* Whether c is a byte the rule escapes. */
static bool
text_is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

size_t
text_escape_byte(unsigned char c, char *e)
{
	if (!text_is_control(c)) {
		e[0] = (char)c;
		e[1] = '\0';
		return 1;
	}
	switch (c) {
	case '\n':
		memcpy(e, "\\n", 3);
		return 2;
	case '\r':
		memcpy(e, "\\r", 3);
		return 2;
	case '\t':
		memcpy(e, "\\t", 3);
		return 2;
	default:
		snprintf(e, 5, "\\x%02x", c);
		return 4;
	}
}

/* The rule's rendering of s[0..len) into b; keep_lines: newline and tab
 * kept as they are. */
static void
text_escape_rule(struct buf *b, const void *s, size_t len, bool keep_lines)
{
	const unsigned char *p = s;
	char e[5];
	size_t i, run = 0;

	/* indices, not pointers: s may be NULL with len 0 */
	for (i = 0; i < len; i++) {
		if (!text_is_control(p[i]) ||
		    (keep_lines && (p[i] == '\n' || p[i] == '\t')))
			continue;
		if (i > run)
			buf_add(b, p + run, i - run);
		buf_add(b, e, text_escape_byte(p[i], e));
		run = i + 1;
	}
	if (len > run)
		buf_add(b, p + run, len - run);
	if (b->data == NULL)
		buf_add(b, "", 0);
}

void
text_escape_add(struct buf *b, const void *s, size_t len)
{
	text_escape_rule(b, s, len, false);
}

void
text_escape_lines(struct buf *b, const void *s, size_t len)
{
	text_escape_rule(b, s, len, true);
}

void
text_escape_str(struct buf *b, const char *s)
{
	text_escape_add(b, s, s != NULL ? strlen(s) : 0);
}

/* Render s printable into out: control bytes escaped, cut with "...". */
const char *
text_escape(const char *s, char *out, size_t size)
{
	size_t n = 0;

	if (size < 4) {
		if (size > 0)
			out[0] = '\0';
		return out;
	}
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char e[5];
		size_t len;

		len = text_escape_byte(c, e);
		/* keep room for "..." and the NUL */
		if (n + len + 4 > size && s[1] != '\0') {
			memcpy(out + n, "...", 3);
			n += 3;
			break;
		}
		if (n + len + 1 > size) {
			memcpy(out + (size - 4), "...", 3);
			n = size - 1;
			break;
		}
		memcpy(out + n, e, len);
		n += len;
	}
	out[n] = '\0';
	return out;
}

bool
text_is_clean(const void *s, size_t len)
{
	const unsigned char *p = s;
	size_t i;

	for (i = 0; i < len; i++) {
		if (text_is_control(p[i]))
			return false;
	}
	return true;
}

const char *
text_double(double v, char *out, size_t size)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, size, "%.*g", prec, v);
		if (strtod(out, NULL) == v || v != v)
			break;
	}
	return out;
}

const char *
text_figure(double v, char *out, size_t size)
{
	if (v == v && v > -9007199254740992.0 && v < 9007199254740992.0 &&
	    v == (double)(int64_t)v)
		snprintf(out, size, "%" PRId64, (int64_t)v);
	else
		snprintf(out, size, "%.2f", v);
	return out;
}

unsigned
text_hash_pair(const char *a, const char *b)
{
	uint32_t h = fnv1a32(FNV1A32_INIT, a, strlen(a));

	h = fnv1a32(h, "\xff", 1);
	return fnv1a32(h, b, strlen(b));
}
