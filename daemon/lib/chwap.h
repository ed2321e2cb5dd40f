/*
 * chwap.h - the statements of write-audit-publish on ClickHouse that
 * cover several partitions at once (docs/clickhouse.md, "Round trips"),
 * and the reading of their answers.  Each partition is read exactly as
 * the per-partition statements read it (`column` = the typed literal of
 * its key), grouped by which partition a row equals; the keys are the
 * daemon's own, bound by chsql_literal.  Pure: no I/O.
 */
#ifndef BACKFILLD_CHWAP_H
#define BACKFILLD_CHWAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* At most this many partitions in one statement. */
#define CHWAP_CHUNK 64
/* At most this many marks of one partition are read. */
#define CHWAP_MARKS_MAX 16

/* What one statement reads. */
struct chwap_spec {
	const char *table;   /* the figures: rows, sum, metrics from it */
	const char *column;  /* the partition column */
	const char *const *metrics; /* aggregate SQL without placeholders */
	size_t nmetrics;
	bool digest;         /* also sum(cityHash64(*)) */
	const char *stage;   /* the state too (NULL: figures only): */
	const char *mark;    /*   the stage's existence, parts and marks */
};

/* One partition's answer. */
struct chwap_part {
	bool staged;                    /* its stage partition holds parts */
	size_t nmarks;
	int64_t marks[CHWAP_MARKS_MAX]; /* the requests of its marks */
	bool seen;                      /* a row equals it */
	int64_t rows;
	char sum[32];                   /* decimal, "" when not read */
	char **metric;                  /* nmetrics texts ("" for NULL) */
};

struct chwap_result {
	bool stage_exists;
	struct chwap_part *parts;
	size_t n, nmetrics;
};

/*
 * One SELECT (UNION ALL of its parts) reading keys[0..n) (n at most
 * CHWAP_CHUNK): each row one value, "e" (the stage exists), "s\tK" (the
 * stage partition of part K, 1-based, holds a part), "m\tK\tREQUEST", "f\tK
 * \tROWS[\tSUM]\tMETRIC..." (K 0: the figures of no row at all).  *out
 * malloc'd; -1 with err for a key that is none.
 */
int chwap_sql(const struct chwap_spec *s, const char *const *keys, size_t n,
	      char **out, struct err *err);
/* Its answer, the rows' values, into r (n parts): -1 with err when a
 * value is not one of the forms above. */
int chwap_parse(const struct chwap_spec *s, char *const *values,
		size_t nvalues, size_t n, struct chwap_result *r,
		struct err *err);
void chwap_result_free(struct chwap_result *r);

/* ALTER TABLE `table` DROP PARTITION L, DROP PARTITION ... of keys[0..n)
 * (L toString(literal) when as_string: the marks' table). */
int chwap_drop_sql(const char *table, bool as_string, const char *const *keys,
		   size_t n, char **out, struct err *err);
/* INSERT INTO `mark` of one row (toString(literal), requests[i], run) a
 * key. */
int chwap_mark_sql(const char *mark, const char *const *keys,
		   const int64_t *requests, size_t n, int64_t run,
		   char **out, struct err *err);
#endif
