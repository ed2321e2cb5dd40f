/* text.c - rendering text that users typed, for errors and the log. */
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

		if (c == '\n')
			len = (size_t)snprintf(e, sizeof e, "\\n");
		else if (c == '\r')
			len = (size_t)snprintf(e, sizeof e, "\\r");
		else if (c == '\t')
			len = (size_t)snprintf(e, sizeof e, "\\t");
		else if (c == '\\')
			len = (size_t)snprintf(e, sizeof e, "\\\\");
		else if (c < 0x20 || c == 0x7f)
			len = (size_t)snprintf(e, sizeof e, "\\x%02x", c);
		else {
			e[0] = (char)c;
			e[1] = '\0';
			len = 1;
		}
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

unsigned
text_hash_pair(const char *a, const char *b)
{
	uint32_t h = 2166136261u;

	for (const char *p = a; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (const char *p = b; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}
