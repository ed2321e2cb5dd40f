/*
 * fuzz.h - what every libFuzzer target of tests/fuzz shares: the entry
 * point's prototype and the invariant check.
 *
 * An invariant that does not hold is a finding like a crash: FUZZ_CHECK
 * prints the condition and where it is, then __builtin_trap()s, which
 * libFuzzer reports as a deadly signal and saves the input.
 */
#ifndef BACKFILLD_FUZZ_H
#define BACKFILLD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) \
			fuzz_fail(#cond, __FILE__, __LINE__); \
	} while (0)

/* Report a broken invariant and stop with a trap. */
static inline void __attribute__((noreturn))
fuzz_fail(const char *cond, const char *file, int line)
{
	fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, cond);
	fflush(stderr);
	__builtin_trap();
}

/* A NUL-terminated copy of the input (malloc'd): what the text APIs take;
 * an embedded NUL simply ends the text early. */
static inline char *
fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* True when a one-line message: not empty, no newline. */
static inline int
fuzz_one_line(const char *msg)
{
	return msg[0] != '\0' && strchr(msg, '\n') == NULL;
}

#endif
