/*
 * fnv.h - FNV-1a, the one non-cryptographic hash of bytes (UTIL-1):
 * a job's code_version and the files' hashes (config_hash.c, 64 bits),
 * the SQLite driver's row hash (wh_sqlite.c, 64 bits), the per-node
 * suffix of ClickHouse stage names (exec_wap.c) and a job and partition
 * pair (text.c, 32 bits).  Inline: the backfilld-pg and backfilld-ch
 * modules use it too.  Its values are stored (code versions, stage
 * names): never change them.
 */
#ifndef BACKFILLD_FNV_H
#define BACKFILLD_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A32_INIT 2166136261u
#define FNV1A64_INIT 0xcbf29ce484222325ULL

/* FNV-1a 32 over n bytes at p, continuing from h (FNV1A32_INIT first). */
static inline uint32_t
fnv1a32(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* FNV-1a 64 over n bytes at p, continuing from h (FNV1A64_INIT first). */
static inline uint64_t
fnv1a64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#endif
