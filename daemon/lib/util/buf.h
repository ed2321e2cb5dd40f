/*
 * buf.h - a growable byte buffer (pure).
 *
 * The text of every answer, frame and generated statement is built in a
 * struct buf.  The data is always NUL-terminated (after the first append),
 * so a buffer of text can be used as a C string; len does not count the
 * NUL.  Appending aborts on allocation failure: every user (the daemon's
 * loop, the client, the workers) has no better recovery, and callers stay
 * simple.
 */
#ifndef BACKFILLD_BUF_H
#define BACKFILLD_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
void buf_add(struct buf *b, const void *data, size_t len);
void buf_addstr(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Detach the data (NUL-terminated, never NULL); the buffer is reset. */
char *buf_steal(struct buf *b);

#endif
