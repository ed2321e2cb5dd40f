/*
 * chwap.h - the statements of write-audit-publish on ClickHouse that
 * cover several partitions at once (docs/clickhouse.md, "Round trips"),
 * and the reading of their answers.  Each partition is read as the
 * per-partition statements read it (`part_fn(column)` = its key), grouped
 * by the value a row has there; the keys are the daemon's own, validated
 * by chsql_plain.  Pure: no I/O.
 */
#ifndef BACKFILLD_CHWAP_H
#define BACKFILLD_CHWAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chparts.h"
#include "err.h"

/* At most this many partitions in one statement. */
#define CHWAP_CHUNK 64
/* At most this many marks of one partition are read. */
#define CHWAP_MARKS_MAX 16

/* What one statement reads. */
struct chwap_spec {
	const char *table;   /* the figures: rows, sum, metrics from it */
	const char *column;  /* the partition column */
	/* the function the column is read through (chsql_grain_fn: a
	 * partition is the rows with part_fn(column) = its key, a DateTime
	 * column too); NULL: the column itself */
	const char *part_fn;
	const char *const *metrics; /* aggregate SQL without placeholders */
	size_t nmetrics;
	bool digest;         /* also sum(cityHash64(*)) */
	bool final;          /* the table read FINAL (a Replacing or
			      * Collapsing engine: its rows as merged) */
	bool compound;       /* the stage's partition key a tuple whose
			      * first element is the key (chparts.h): its
			      * parts found by that element */
	/* a compound key (chparts.h): the partition ids of `table` (the
	 * stage) and of this live table too, by their first element, for
	 * the publish (NULL: not read) */
	const char *ids_live;
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
	struct chparts ids;             /* with ids_live: its partition ids */
};

struct chwap_result {
	bool stage_exists;
	struct chwap_part *parts;
	size_t n, nmetrics;
};

/*
 * One SELECT (UNION ALL of its parts) reading keys[0..n) (n from 1 to
 * CHWAP_CHUNK), each key a plain quoted literal ('YYYY-MM-DD', or
 * 'YYYY-MM-DD HH:00:00' for an hour: chsql_plain): each row one value, "e"
 * (the stage exists), "s\tP" (the stage partition P, the server's text
 * of the partition's value, holds a part), "m\tP\tREQUEST", "f\tP\tROWS
 * [\tSUM]\tMETRIC..." and "n\t-\tROWS..." (the figures of no row at
 * all), with ids_live "q\tP\tW\tID" (chparts_ids_sql's rows).  *out malloc'd; -1 with err for a key that is none.
 */
int chwap_sql(const struct chwap_spec *s, const char *const *keys, size_t n,
	      char **out, struct err *err);
/* Its answer, the rows' values, into r (the n parts of keys): -1 with err
 * when a value is not one of the forms above or names no key. */
int chwap_parse(const struct chwap_spec *s, const char *const *keys,
		char *const *values, size_t nvalues, size_t n,
		struct chwap_result *r, struct err *err);
void chwap_result_free(struct chwap_result *r);

/* ALTER TABLE `table` DROP PARTITION 'K', DROP PARTITION ... of
 * keys[0..n) (the plain literal converts to the partition's type, the
 * stage's Date or DateTime and the marks' String alike). */
int chwap_drop_sql(const char *table, const char *const *keys, size_t n,
		   char **out, struct err *err);
/* ALTER TABLE `live` REPLACE PARTITION 'K' FROM `stage`, ... of
 * keys[0..n): one request publishes them all, each REPLACE atomic on its
 * own (the server runs them in turn). */
int chwap_replace_sql(const char *live, const char *stage,
		      const char *const *keys, size_t n, char **out,
		      struct err *err);
/* INSERT INTO `mark` VALUES ('K', requests[i], run), ... a key. */
int chwap_mark_sql(const char *mark, const char *const *keys,
		   const int64_t *requests, size_t n, int64_t run,
		   char **out, struct err *err);
/* The marks' table holds a partition per run (PARTITION BY run): the
 * runs holding a mark of keys[0..n) (n from 1 to CHWAP_CHUNK), "SELECT
 * DISTINCT toString(run) ...", then "ALTER TABLE `mark` DROP PARTITION R,
 * ..." of the runs it answered (-1 with err for an answer that is no run
 * id). */
int chwap_mark_runs_sql(const char *mark, const char *const *keys, size_t n,
			char **out, struct err *err);
int chwap_drop_runs_sql(const char *mark, char *const *runs, size_t n,
			char **out, struct err *err);
/* What this process learns of a stage table once (exec_wap_known.c):
 * "e" (the stage exists: its partition column does), "s\tP" for each
 * partition P holding a part, "m\tP" for each mark (of any run). */
char *chwap_known_sql(const char *stage, const char *mark,
		      const char *column);
/* One statement reading one partition, key, in two tables: the figures
 * of s->table (the live one: before) and of `stage` (after), two rows
 * "bn\t-\tROWS..." and "an\t-\tROWS..." (chwap_sql's figures of no row,
 * read from the partition: chwap_parse gives them to the key).  No
 * GROUP BY and no row of no row: 18.16 analyses it in half the time of
 * two chwap_sql reads.  *out malloc'd; -1 with err for a key that is
 * none. */
int chwap_pair_sql(const struct chwap_spec *s, const char *stage,
		   const char *key, char **out, struct err *err);
/* Every mark, "REQUEST\tP" (the sweep at start finds the stale ones). */
char *chwap_marks_sql(const char *mark);
#endif
