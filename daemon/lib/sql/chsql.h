/*
 * chsql.h - ClickHouse SQL text the daemon writes (docs/clickhouse.md).
 *
 * ClickHouse 18.16 has no query parameters, so the ClickHouse driver
 * (wh/wh_ch.c) substitutes the values it generated itself: a :name
 * placeholder outside strings, identifiers and comments (sqlscan.h,
 * SQLSCAN_CH) becomes a typed literal of a validated partition key or
 * bound, and :stage the quoted name of the job's stage table.  Text that
 * does not scan (an unterminated quote or comment), a placeholder no value
 * was given for, and a value that is no key or bound are refused before
 * anything reaches the server.  Pure: no I/O.
 */
#ifndef BACKFILLD_CHSQL_H
#define BACKFILLD_CHSQL_H

#include <stdbool.h>
#include <stddef.h>

#include "calendar.h"
#include "err.h"

/* One value to substitute: `name` without its ':'. */
struct chsql_param {
	const char *name;
	const char *value;
};

/* The longest literal chsql_literal writes, with its NUL. */
#define CHSQL_LITERAL_MAX 48
/* The longest table name a ClickHouse job may use. */
#define CHSQL_IDENT_MAX 128

/* A row's 64-bit hash for a partition's checksum (digest.h): the text of
 * the row as a tuple, in which a NULL is NULL and a string quoted, every
 * float in its shortest exact form (0.1 apart from 0.10000000000000002,
 * -0 apart from 0), a Decimal at its scale, so that every type hashes,
 * Nullable, Decimal and LowCardinality too (cityHash64(*) refuses
 * Decimal and is NULL for a row holding a NULL, which dropped the row
 * out of the sum on 18.16). */
#define CHSQL_ROW_HASH "cityHash64(toString(tuple(*)))"

/*
 * The hour of a zone keyed YYYY-MM-DDTHH+HH:00 (or -HH:00; calendar.h) as
 * the text of the UTC hour it starts at, "YYYY-MM-DD HH:00:00" (the wall
 * hour less the offset: 2026-03-29T01+01:00 is 2026-03-29 00:00:00, the
 * two 02:00 hours of a fall-back day two UTC hours).  An offset with
 * minutes (+05:30) is refused: such an hour starts off a UTC hour, which
 * toStartOfHour cannot name (the configuration refuses those zones,
 * tz_hours_on_utc_hours).  0, or -1 for any other text.
 */
int chsql_zoned_hour(const char *key, char utc[CHSQL_LITERAL_MAX]);

/*
 * The typed literal of a value the daemon generated: YYYY-MM-DD gives
 * toDate('YYYY-MM-DD'), YYYY-MM-DDTHH gives toDateTime('YYYY-MM-DD
 * HH:00:00'), an hour of a zone YYYY-MM-DDTHH+HH:00 gives
 * toDateTime('its UTC hour', 'UTC') (chsql_zoned_hour), an instant
 * whatever the server's or the column's zone; YYYY-MM-DD HH:MM:SS gives
 * toDateTime('...'), an instant
 * YYYY-MM-DDTHH:MM:SS[.mmm]Z (late_data's :since) gives
 * toDateTime('YYYY-MM-DD HH:MM:SS', 'UTC'), to the second; every field
 * checked (digits, month 1-12, day of the month, hour 0-23, minutes and
 * seconds 0-59).  Anything else: -1, "refused: ... is not a partition
 * key, bound or instant".
 */
int chsql_literal(const char *value, char out[CHSQL_LITERAL_MAX],
		  struct err *err);
/* A partition key's plain quoted literal: 'YYYY-MM-DD', or for an hour
 * (YYYY-MM-DDTHH) 'YYYY-MM-DD HH:00:00', for an hour of a zone the text
 * of its UTC hour (chsql_zoned_hour), which the server converts to the
 * type of what it meets (a Date or DateTime column, a partition value);
 * cheaper for it to analyse than a typed literal, in statements with many
 * of them.  -1 with err for any other text. */
int chsql_plain(const char *key, char out[CHSQL_LITERAL_MAX], struct err *err);
/* True for a name ClickHouse reads as one identifier unquoted and the
 * daemon may quote without escapes: [A-Za-z_][A-Za-z0-9_]*, at most
 * CHSQL_IDENT_MAX - 1 bytes. */
bool chsql_ident_ok(const char *name);
/* The stage table of `table` (chsql_ident_ok): _backfilld_stage_TABLE,
 * or "" when that would be too long. */
void chsql_stage_name(const char *table, char *buf, size_t len);
/* The table of the stage's marks (docs/clickhouse.md, "Exactly once"):
 * _backfilld_marks_TABLE, "" when too long. */
void chsql_mark_name(const char *table, char *buf, size_t len);

/*
 * The write-audit-publish sequence's statements (docs/clickhouse.md), the
 * ClickHouse SQL of exec_wap.c in one place (issue 43).  Names are
 * chsql_ident_ok (the caller's); each returns a malloc'd statement.
 */
/* CREATE TABLE IF NOT EXISTS `stage` AS `live`. */
char *chsql_create_stage_sql(const char *stage, const char *live);
/* The marks' table (partition, request, run), PARTITION BY run: a run's
 * marks are one part, written by one INSERT, dropped by one ALTER. */
char *chsql_create_marks_sql(const char *mark);
/* DROP TABLE IF EXISTS `table`. */
char *chsql_drop_table_sql(const char *table);
/* INSERT INTO `stage` followed by the job's SELECT (its placeholders left
 * for chsql_bind). */
char *chsql_fill_sql(const char *stage, const char *select);
/* ALTER TABLE `stage` DROP PARTITION :partition. */
char *chsql_drop_part_sql(const char *stage);
/* The requests of the marks of :partition in `mark`. */
char *chsql_marks_of_sql(const char *mark);
/* The engine_full of `table` in the current database. */
char *chsql_engine_sql(const char *table);
/* Each shard's first replica's host_address of `cluster`, by shard_num. */
char *chsql_cluster_hosts_sql(const char *cluster);
/* "ENGINE KEY" of `table` (its engine, a blank, its partition_key) in
 * database db (NULL: the current one); names plain. */
char *chsql_table_key_sql(const char *db, const char *table);

/*
 * `sql` with every :name replaced: "stage" by the backquoted value (an
 * identifier, chsql_ident_ok), any other by chsql_literal of its value.
 * *out is malloc'd.  -1 with err (EXIT_BAD_INPUT): a placeholder without
 * a value ("statement uses :x, which is not bound here (:partition,
 * :partition_start, :partition_end)"), text that does not scan, a value
 * refused.
 */
int chsql_bind(const char *sql, const struct chsql_param *params,
	       size_t nparams, char **out, struct err *err);
/*
 * Split bound text into its statements (ClickHouse's HTTP interface runs
 * one per request): *stmts (malloc'd array of malloc'd strings, blanks
 * trimmed, empty ones left out), *n of them.  The text must scan.
 */
void chsql_split(const char *sql, char ***stmts, size_t *n);
void chsql_split_free(char **stmts, size_t n);

/*
 * Whether a table's partition key (system.tables.partition_key) suits a
 * job of grain g partitioned by `column`, so that one partition of the
 * table is one partition of the job: hour toStartOfHour(c); day c or
 * toDate(c); week toMonday(c); month toStartOfMonth(c); quarter
 * toStartOfQuarter(c); year toStartOfYear(c) (CHSQL_KEY_GRAIN); or, for a
 * week, month, quarter or year, c itself, a Date that holds the grain's
 * first day (CHSQL_KEY_FIRST_DAY: the same partitions as the function
 * of c when it does, which the stage is audited for: chsql_first_day_sql).
 * Blanks and the case of function names ignored, the column backquoted or
 * not.  CHSQL_KEY_NONE (chsql_key_matches false) with `want` (the key to
 * use) filled.
 */
enum chsql_key_shape {
	CHSQL_KEY_NONE,
	CHSQL_KEY_GRAIN,
	CHSQL_KEY_FIRST_DAY
};
enum chsql_key_shape chsql_key_shape(const char *partition_key,
				     const char *column, enum grain g,
				     char *want, size_t wantsz);
/*
 * The audit of a stage whose partition key is the column itself
 * (CHSQL_KEY_FIRST_DAY): "SELECT toString(`c`) FROM `stage` WHERE
 * FN(`c`) = :partition AND `c` != :partition LIMIT 1", a row of the
 * partition whose column is not the partition's first day (such a row
 * lands in a partition of its own, which the REPLACE would not publish);
 * no row when there is none.  -1 for a name that is not plain or no room.
 */
int chsql_first_day_sql(const char *stage, const char *column, enum grain g,
			char *out, size_t outsz);
/*
 * The function through which a partition's rows are read at grain g:
 * toStartOfHour, toDate, toMonday, toStartOfMonth, the function of the
 * table's partition key (chsql_key_matches), so that "FN(c) = :partition"
 * holds for every row of the table's partition, a DateTime column
 * holding the partition's start or any instant in it too (18.16 compares
 * a DateTime with a Date as never equal, and refuses the text
 * 'YYYY-MM-DD' as a DateTime); toDate of a Date is the Date, and the
 * server still prunes by the partition key through it.
 */
const char *chsql_grain_fn(enum grain g);
bool chsql_key_matches(const char *partition_key, const char *column,
		       enum grain g, char *want, size_t wantsz);

/*
 * Where the driver will substitute values in `sql` (the text of `what`,
 * e.g. "sql" or "check reconciles"), for --check-config: one line per
 * placeholder into b, "  job NAME WHAT line L: :partition ->
 * toDate('YYYY-MM-DD')" (its form at grain g, hours of a zone when
 * `zoned`; :stage -> `STAGE`).
 * Returns how many there are.
 */
struct buf;
size_t chsql_describe(const char *job, const char *what, const char *sql,
		      enum grain g, bool zoned, const char *stage,
		      struct buf *b);

/*
 * An exception ClickHouse wrote into a response body: the body's last
 * line when it is "Code: N, e.displayText() = ..." (after a 200 status
 * the server can only append it to what it already sent).  True with the
 * message (", e.what() = ..." cut) in msg.
 */
bool chsql_body_exception(const char *body, size_t len, char *msg,
			  size_t msgsz);
/* The message of an error body (any status): its exception as above, or
 * its first line, trimmed, into msg. */
void chsql_error_text(const char *body, size_t len, char *msg, size_t msgsz);
/* The N of a message "Code: N, ..." (chsql_error_text's), 0 for none. */
int chsql_error_code(const char *msg);
/* Whether a failed request was refused for who sent it, which no retry
 * cures (docs/clickhouse.md, "Credentials and privileges"): HTTP 401 or
 * 403, or ClickHouse code 516 AUTHENTICATION_FAILED, 192 UNKNOWN_USER,
 * 193 WRONG_PASSWORD, 194 REQUIRED_PASSWORD, 195 IP_ADDRESS_NOT_ALLOWED,
 * 497 ACCESS_DENIED or 164 READONLY.  *privilege: the user is known but
 * lacks a right (497, 164, HTTP 403 without a credentials code). */
bool chsql_denied(long status, int code, bool *privilege);

/* The cluster, database and local table of an engine_full (system.tables)
 * "Distributed(cluster, db, table[, sharding_key...])", each plain or
 * quoted, into buffers of sz bytes; -1 when it is no Distributed engine
 * over plain names. */
int chsql_distributed(const char *engine_full, char *cluster, char *db,
		      char *table, size_t sz);
/* The HTTP URL of a shard at `host` (system.clusters' host_address): the
 * configured url's scheme and port with that host and ?database=db; -1
 * when host or db is no plain name or address, or it does not fit. */
int chsql_shard_url(const char *url, const char *host, const char *db,
		    char *out, size_t outsz);

#endif
