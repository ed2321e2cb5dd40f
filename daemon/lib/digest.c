/*
 * digest.c - the one form of a partition's checksum (see digest.h).
 */
#include "digest.h"

#include <stdio.h>

void
digest_format(uint64_t sum, char *out, size_t size)
{
	snprintf(out, size, "%016llx", (unsigned long long)sum);
}

int
digest_parse_decimal(const char *dec, uint64_t *sum)
{
	const char *p = dec;
	uint64_t v = 0;
	int neg = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (*p == '\0')
		return -1;
	/* unsigned arithmetic wraps: v is the number modulo 2^64 */
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*sum = neg ? (uint64_t)0 - v : v;
	return 0;
}
