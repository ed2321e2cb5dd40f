/*
 * buf.c - the growable byte buffer of buf.h (pure).
 */
#include "buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Make room for `more` bytes plus a closing NUL, or abort. */
static void
buf_grow(struct buf *b, size_t more)
{
	size_t need, cap;

	if (more > SIZE_MAX - b->len - 1)
		abort();
	need = b->len + more + 1;
	if (need <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	b->data = xreallocarray(b->data, cap, 1);
	b->cap = cap;
}

/* An empty buffer; allocates nothing until the first append. */
void
buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

/* Release the buffer's memory; it is empty and reusable afterwards. */
void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

/* Empty the buffer, keeping its memory. */
void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

/* Append len bytes; the data stays NUL-terminated. */
void
buf_add(struct buf *b, const void *data, size_t len)
{
	buf_grow(b, len);
	if (len > 0)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

/* Append a C string. */
void
buf_addstr(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* Append printf-formatted text (va_list form). */
void
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	buf_grow(b, 64);
	va_copy(aq, ap);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, aq);
	va_end(aq);
	if (n < 0)
		abort();
	if ((size_t)n >= b->cap - b->len) {
		buf_grow(b, (size_t)n);
		n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		if (n < 0)
			abort();
	}
	b->len += (size_t)n;
}

/* Append printf-formatted text. */
void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

/* Detach the NUL-terminated data (never NULL); the buffer is reset. */
char *
buf_steal(struct buf *b)
{
	char *s;

	if (b->data == NULL)
		buf_grow(b, 0);
	b->data[b->len] = '\0';
	s = b->data;
	buf_init(b);
	return s;
}

