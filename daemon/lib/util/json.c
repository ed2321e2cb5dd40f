/*
 * json.c - JSON values written into a struct buf (pure); see json.h.
 */
#include "json.h"

#include <stdio.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static size_t
json_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		/* no overlongs (e0 a0..), no surrogates (ed 80..9f) */
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0;
		return (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		/* no overlongs (f0 90..), nothing above U+10FFFF (f4 8f) */
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
			return 0;
		return (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
		    (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/*
 * Append s as a JSON string literal.  Quote and backslash are escaped,
 * control characters become \n, \t, ... or \u00XX (DEL, 0x7f, too, as
 * text.h's rule has it: nothing raw for a terminal), valid UTF-8 passes
 * through, and a byte that is not valid UTF-8 becomes \ufffd so that the
 * output is always valid JSON whatever a run's error text holds.  NULL
 * appends the JSON literal null.  The sequence checks stop at the NUL, so
 * they never read past the string.
 */
void
json_str(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	if (s == NULL) {
		buf_addstr(b, "null");
		return;
	}
	buf_add(b, "\"", 1);
	while (*p != '\0') {
		switch (*p) {
		case '"':
			buf_add(b, "\\\"", 2);
			break;
		case '\\':
			buf_add(b, "\\\\", 2);
			break;
		case '\b':
			buf_add(b, "\\b", 2);
			break;
		case '\f':
			buf_add(b, "\\f", 2);
			break;
		case '\n':
			buf_add(b, "\\n", 2);
			break;
		case '\r':
			buf_add(b, "\\r", 2);
			break;
		case '\t':
			buf_add(b, "\\t", 2);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				buf_printf(b, "\\u%04x", *p);
			} else if (*p < 0x80) {
				buf_add(b, p, 1);
			} else if ((n = json_utf8_len(p)) > 0) {
				buf_add(b, p, n);
				p += n;
				continue;
			} else {
				buf_add(b, "\\ufffd", 6);
			}
			break;
		}
		p++;
	}
	buf_add(b, "\"", 1);
}


/* An array of n strings. */
void
json_strv(struct buf *b, char *const *v, size_t n)
{
	buf_addstr(b, "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_addstr(b, ", ");
		json_str(b, v[i]);
	}
	buf_addstr(b, "]");
}

/* An array of names that need no escaping. */
void
json_keys(struct buf *b, const char *const *k, size_t n)
{
	buf_addstr(b, "[");
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s\"%s\"", i ? ", " : "", k[i]);
	buf_addstr(b, "]");
}
