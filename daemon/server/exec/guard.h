/*
 * guard.h - the built-in guardrails of a SQL job that declares its table
 * (table, partition_column, key, min_rows, metrics): inside the run's
 * transaction, the partition's row count and metrics before the write and
 * after it, key uniqueness, the minimum row count, and each metric's
 * largest allowed move.  Called by exec.c on its worker thread.
 */
#ifndef BACKFILLD_GUARD_H
#define BACKFILLD_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "err.h"
#include "exec.h"
#include "wh.h"

/* SQL counting the partition's rows (k < 0) or computing metric k, with
 * :partition bound; free() it. */
char *guard_sql_metric(const struct job_def *j, int k);
/* SQL returning one duplicated key of the partition as text, or no row;
 * free() it; NULL when the job declares no key. */
char *guard_sql_dupkey(const struct job_def *j);
/* The move of a metric in percent; false when it has no base to move
 * from (no value before, or zero before). */
bool guard_change(double before, double after, double *pct);

/* A part's figure read, before (after false) or after its write: its row
 * count; metric k's value (has: not NULL), and its move once both sides
 * are known.  The one way guard.c and exec_wap_set.c record them. */
void guard_set_rows(struct exec_guard_result *g, bool after, int64_t rows);
void guard_set_metric(struct exec_guard_result *g, const struct job_def *j,
		      size_t k, bool after, bool has, double v);
/* The most checks one part of a run of j records (the size of
 * run->checks per part, per shard): the one count, for SQL runs
 * (exec_sql.c) and ClickHouse's (exec_wap.c). */
size_t guard_checks_max(const struct job_def *j);
/* run->guards allocated (guard_before does it; a caller that measures
 * the figures itself calls it first). */
void guard_prepare(struct exec_run *run);
/* A Distributed target's shards (exec_wap.c): run->shard_guards
 * allocated for nshards shards; guard_shard_keep copies shard s's
 * figures of part i (run->guards[i] as its build left them) there;
 * guard_shard_total sets the rows and each metric of run->guards[i] to
 * their sums over the shards (each known only when every shard's is:
 * not for a shard recorded published by an earlier attempt, whose figures
 * were not read again, nor one a failure kept from reading it; a metric
 * is summed, as sum() and count() add up over shards). */
void guard_shard_prepare(struct exec_run *run, size_t nshards);
void guard_shard_keep(struct exec_run *run, size_t s, size_t i);
void guard_shard_total(struct exec_run *run, size_t i);
/* The trend checks of part i, judged once on the sums over the shards
 * (guard_shard_total), after every shard's build and before any publish
 * (a shard's own are not judged: its part of a partition is not the
 * partition its history holds); none for a run resumed after some shards
 * published (judged by the attempt that published them). */
enum guard_outcome guard_shard_trends(struct exec_run *run, size_t i,
				      struct err *err);
/* Before the write: rows and metrics of part i into run->guards[i]. */
int guard_before(struct exec_run *run, struct wh_conn *conn, size_t i,
		 const struct wh_param *params, size_t nparams,
		 struct err *err);
/* guard_before reading `table` instead of the job's (ClickHouse: a
 * shard's local table). */
int guard_before_in(struct exec_run *run, struct wh_conn *conn, size_t i,
		    const struct wh_param *params, size_t nparams,
		    const char *table, struct err *err);
/* What the checks after the write found. */
enum guard_outcome {
	GUARD_PASSED,  /* every check passed */
	GUARD_FAILED,  /* one failed: the run fails and rolls back (err names
			* the first failure when first_error) */
	GUARD_BROKEN   /* one could not run (err says why): the run fails */
};

/*
 * After the write: rows and metrics again, then the checks key_unique,
 * min_rows and max_change (one per metric with max_change), appended to
 * run->checks (which has room for them).
 */
enum guard_outcome guard_after(struct exec_run *run, struct wh_conn *conn, size_t i,
		const struct wh_param *params, size_t nparams, bool first_error,
		struct err *err);
/* guard_after reading `table` instead of the job's (ClickHouse: the
 * stage, where the new partition is before it is published; the before
 * figures came from the live table). */
enum guard_outcome guard_after_in(struct exec_run *run, struct wh_conn *conn,
		size_t i, const struct wh_param *params, size_t nparams,
		bool first_error, const char *table, struct err *err);
/* Whether the guard_*_in of this thread read their table FINAL (a
 * ClickHouse Replacing or Collapsing engine: its rows as merged, one
 * version a key), until set again. */
void guard_read_final(bool final);
/* guard_after_in on the figures the caller put into run->guards[i]
 * already (ClickHouse: read for several partitions at once). */
enum guard_outcome guard_judge_in(struct exec_run *run, struct wh_conn *conn,
		size_t i, const struct wh_param *params, size_t nparams,
		bool first_error, const char *table, struct err *err);

#endif
