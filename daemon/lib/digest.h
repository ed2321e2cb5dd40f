/*
 * digest.h - the one form of a partition's checksum (verify, docs/commands.md
 * "backfillctl"): the wrapping sum, modulo 2^64, of a 64-bit hash of each
 * row, written as 16 lower-case hex digits, whichever driver computed it.
 */
#ifndef BACKFILLD_DIGEST_H
#define BACKFILLD_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define DIGEST_LEN 17   /* 16 hex digits and the NUL */

/* Write sum as 16 hex digits into out (size >= DIGEST_LEN). */
void digest_format(uint64_t sum, char *out, size_t size);
/* A sum a database gives in decimal, of any size and sign (PostgreSQL's
 * numeric sum of bigint hashes), reduced modulo 2^64: 0, or -1 when dec
 * is not an optional '-' and digits. */
int digest_parse_decimal(const char *dec, uint64_t *sum);

#endif
