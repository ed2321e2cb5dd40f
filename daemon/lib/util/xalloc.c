/*
 * xalloc.c - allocations that cannot fail (xalloc.h states the policy).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Exhaustion of our own allocation: one line, then abort(). */
static void __attribute__((noreturn))
xalloc_fail(size_t n, size_t size)
{
	fprintf(stderr, "<2>backfilld: out of memory allocating %zu x %zu "
		"bytes; aborting (the state store keeps every committed "
		"change)\n", n, size);
	abort();
}

/* Exhaustion reported by a library: the same line, naming it. */
void
xalloc_exhausted(const char *what)
{
	fprintf(stderr, "<2>backfilld: out of memory in %s; aborting (the "
		"state store keeps every committed change)\n", what);
	abort();
}

void *
xmalloc(size_t size)
{
	void *p;

	p = malloc(size == 0 ? 1 : size);
	if (p == NULL)
		xalloc_fail(1, size);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if (n == 0 || size == 0)
		n = size = 1;
	p = calloc(n, size);
	if (p == NULL)
		xalloc_fail(n, size);
	return p;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	void *q;

	if (size != 0 && n > SIZE_MAX / size)
		xalloc_fail(n, size);
	q = realloc(p, n * size == 0 ? 1 : n * size);
	if (q == NULL)
		xalloc_fail(n, size);
	return q;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p;

	p = strndup(s, n);
	if (p == NULL)
		xalloc_fail(1, n + 1);
	return p;
}

char *
xvasprintf(const char *fmt, va_list ap)
{
	char *p;

	if (vasprintf(&p, fmt, ap) < 0)
		xalloc_fail(1, strlen(fmt));
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = xvasprintf(fmt, ap);
	va_end(ap);
	return p;
}
