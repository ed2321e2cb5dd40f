/*
 * xalloc.h - the one allocation wrapper.
 *
 * Policy (docs/architecture.md, "Failing"): running out of memory is not
 * an error a caller handles.  Every allocation in backfilld and
 * backfillctl goes through these functions; on failure they write one line
 * to stderr and abort(), so that systemd restarts the daemon from its last
 * commit (the state store is the truth; nothing is acknowledged before it
 * is committed).  No caller checks for NULL.
 */
#ifndef BACKFILLD_XALLOC_H
#define BACKFILLD_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t size);
/* Zeroed; n * size checked for overflow. */
void *xcalloc(size_t n, size_t size);
/* n * size checked for overflow; xreallocarray(NULL, ...) allocates. */
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

/* For a library that allocates on its own and reports exhaustion (libyaml,
 * glob, SQLite's and libpq's string functions): the same one line, then
 * abort().  what names the call ("libyaml", "glob"). */
void xalloc_exhausted(const char *what) __attribute__((noreturn));

#endif
