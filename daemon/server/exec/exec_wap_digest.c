/*
 * exec_wap_digest.c - the fingerprints of ClickHouse partitions
 * (docs/cutoff.md "Early cut-off"): a partition's rows and checksum, read
 * from the live table and the stage around a write-audit-publish run
 * (exec_wap.c) and by a proof (--verify).  Worker threads only.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chsql.h"
#include "cutoff.h"
#include "digest.h"
#include "exec.h"
#include "exec_int.h"
#include "exec_wap.h"
#include "wh.h"
#include "xalloc.h"

/* A partition's rows and order-independent checksum (the sum, modulo
 * 2^64, of a 64-bit hash of each row) in `table`. */
int
exec_wap_digest(struct wh_conn *conn, const char *table, const char *column,
		enum grain grain, const struct wh_param *params, int64_t *rows,
		char *sum, size_t sumsz, struct err *err)
{
	char *sql, *v = NULL, *end;
	bool has_row;
	int rc;

	/* the rows of the partition as the table's partition key makes it
	 * (docs/clickhouse.md): a DateTime column is compared by the
	 * grain's function, not as a DateTime with a Date (never equal on
	 * 18.16) */
	sql = xasprintf("SELECT toString(count()) || ' ' ||"
			     " toString(sum(" CHSQL_ROW_HASH ")) FROM `%s` WHERE"
			     " %s(`%s`) = :partition", table,
			     chsql_grain_fn(grain), column);
	rc = conn->drv->query_value(conn, sql, params, 1, &has_row, &v, err);
	free(sql);
	if (rc == -1)
		return -1;
	if (!has_row || v == NULL || (*rows = strtoll(v, &end, 10), *end != ' ')) {
		free(v);
		return err_set(err, EXIT_WORK_FAILED, "reading partition %s of %s:"
			       " no count", params[0].value, table);
	}
	snprintf(sum, sumsz, "%s", end + 1);
	free(v);
	return 0;
}

/* A ClickHouse sum (decimal, modulo 2^64) as digest.h's one form. */
static void
exec_wap_sum(const char *dec, char *out)
{
	uint64_t v = 0;

	if (digest_parse_decimal(dec, &v) < 0)
		snprintf(out, DIGEST_LEN, "%s", "");
	else
		digest_format(v, out, DIGEST_LEN);
}

bool
exec_wap_digested(const struct exec_run *run, const struct wap_tables *t)
{
	/* a shard's local table holds part of the partition: the sums of
	 * the other shards are not there, so it stays unknown (rebuilt) */
	return cutoff_fingerprinted(run->job, strcmp(t->live,
						     run->job->table) != 0);
}

/*
 * Early cut-off on ClickHouse (docs/cutoff.md): part i's fingerprint
 * before its write is the live partition's (the table published into,
 * not read on a Distributed target's shards), read by the state read
 * before the fill (`before`; "": read now, once the stage is audited and
 * before it is published); after it, the stage's, which the publish
 * copies whole (`after`, from the after figures; "": read now).  For a
 * job that feeds another.  Not read for a stage kept from an earlier
 * attempt (it may be published already: the live partition tells nothing
 * then), which leaves it unknown, so that its downstream is rebuilt.
 */
int
exec_wap_fingerprint(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		     const struct wh_param *params, const struct wap_tables *t,
		     const char *before, const char *after, struct err *err)
{
	const struct job_def *jd = exec_flight_run(fl)->job;
	struct exec_guard_result *g = &exec_flight_run(fl)->guards[i];
	char dec[2][64];
	int64_t rows;

	if (!exec_wap_digested(exec_flight_run(fl), t))
		return 0;
	snprintf(dec[0], sizeof dec[0], "%s", before);
	snprintf(dec[1], sizeof dec[1], "%s", after);
	if ((dec[0][0] == '\0' &&
	     exec_wap_digest(conn, t->live, jd->partition_column, jd->grain,
			     params, &rows, dec[0], sizeof dec[0], err) == -1) ||
	    (dec[1][0] == '\0' &&
	     exec_wap_digest(conn, t->stage, jd->partition_column, jd->grain,
			     params, &rows, dec[1], sizeof dec[1], err) == -1)) {
		err_prefix(err, "fingerprint of %s", t->live);
		return -1;
	}
	exec_wap_sum(dec[0], g->sum_before);
	exec_wap_sum(dec[1], g->sum_after);
	return 0;
}
