/*
 * chparts.h - a ClickHouse target whose partition key is compound, a
 * tuple whose first element is the job's grain's key (`PARTITION BY (dt,
 * store_id)`; docs/clickhouse.md, "Compound keys"): one of the job's
 * partitions P is the set of the table's partitions whose tuple begins
 * with P, so it is published as that exact set, by partition id (every
 * stage id of P replaced into the live table, every live id of P the
 * stage lacks dropped, in one ALTER), and a stage partition of P is
 * cleared by dropping each of its ids.
 *
 * The ids are read from system.parts, whose `partition` text of such a
 * tuple is "('2026-02-09',3)" (18.16): the first element is the text
 * from its third byte, as long as the key's plain literal ('YYYY-MM-DD',
 * or 'YYYY-MM-DD HH:00:00' for an hour).  Ids are text from the server,
 * bound again only when they are [0-9A-Za-z_-] (partition ids are
 * "20260209-3", or 32 hex digits for a String element).  Pure: no I/O.
 */
#ifndef BACKFILLD_CHPARTS_H
#define BACKFILLD_CHPARTS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* The longest partition id accepted, with its NUL. */
#define CHPARTS_ID_MAX 128

/*
 * Whether a partition key (system.tables.partition_key) is a tuple of two
 * or more elements, "(a, b, ...)" or "tuple(a, b, ...)"; its first
 * element (blanks trimmed) into first (sz bytes).  False for any other
 * key, or a first element that does not fit.
 */
bool chparts_first(const char *partition_key, char *first, size_t sz);

/*
 * The active partition ids of `stage` (and of `live` when not NULL) whose
 * first element is one of keys[0..n) (n from 1; keys of one grain: all
 * days, or all hours), one value `v` a partition: "KEY\tW\tID", W 's' (the
 * stage) or 'l' (live).  Names plain (the caller's).  *out malloc'd; -1
 * with err for a key that is none, or keys of two lengths.
 */
int chparts_ids_sql(const char *stage, const char *live,
		    const char *const *keys, size_t n, char **out,
		    struct err *err);

/* The ids of one key, the stage's and the live table's. */
struct chparts {
	char **stage;
	size_t nstage;
	char **live;
	size_t nlive;
};

/* chparts_ids_sql's answer into p[0..n) (p[i]: keys[i]'s); -1 with err
 * for a value that is not of its form, names no key, or holds an id that
 * is not [0-9A-Za-z_-]. */
int chparts_parse(const char *const *keys, size_t n, char *const *values,
		  size_t nvalues, struct chparts *p, struct err *err);
void chparts_free(struct chparts *p, size_t n);
/* Partition id `id` added to p's stage ids (stage) or live ones, once;
 * -1 when it is not [0-9A-Za-z_-]. */
int chparts_add(struct chparts *p, bool stage, const char *id);

/*
 * The publish of p[0..n): "ALTER TABLE `live` REPLACE PARTITION ID 'S'
 * FROM `stage`, ..., DROP PARTITION ID 'L', ..." with every stage id and
 * each live id the stage lacks (the server runs them in turn, each atomic
 * on its own).  *out NULL when there is nothing to do (no id at all).
 */
void chparts_publish_sql(const char *live, const char *stage,
			 const struct chparts *p, size_t n, char **out);
/* "ALTER TABLE `table` DROP PARTITION ID 'S', ..." of p[0..n)'s stage
 * ids; *out NULL when there are none. */
void chparts_drop_sql(const char *table, const struct chparts *p, size_t n,
		      char **out);

/* "ALTER TABLE `table` DROP PARTITION ID 'backfilld_none'": an ALTER
 * that drops nothing (no partition has that id) and returns once the
 * INSERTs into the table that were running have ended. */
char *chparts_wait_sql(const char *table);

#endif
