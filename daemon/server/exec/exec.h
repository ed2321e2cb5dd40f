/*
 * exec.h - running one partition (or one batch of partitions) of a job.
 *
 * The scheduler decides what runs and when (caps, order, retries); this
 * module only runs what it is handed, off the event loop:
 *  - SQL jobs on a pool of worker threads, each keeping its own long-lived
 *    warehouse connections; all statements and checks of a run in one
 *    transaction (BEGIN IMMEDIATE on SQLite), parameters bound, never
 *    spliced; any failure rolls back;
 *  - command jobs through uv_spawn in their own process group, argv
 *    placeholders substituted, BACKFILLD_* environment, output appended to
 *    a per-run log file.
 * Warehouses sit behind struct wh_driver (wh.h) so PostgreSQL can join
 * SQLite.  Completion is reported on the loop thread through done_cb
 * (worker threads only ever touch the loop with wake_send, wake.h).
 * Timeouts: a run past job->timeout is interrupted (sqlite3_interrupt, or
 * SIGKILL to the command's process group) and reported with timed_out set.
 */
#ifndef BACKFILLD_EXEC_H
#define BACKFILLD_EXEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "calendar.h"
#include "config.h"
#include "digest.h"
#include "err.h"
#include "wh_commits.h"

struct exec;

/* One partition's parameters: its key, its local bounds and the same
 * instants in UTC (YYYY-MM-DD HH:MM:SS), [t0, t1) in seconds. */
struct exec_part {
	char key[CAL_KEY_MAX];       /* :partition / {partition} */
	char start[CAL_KEY_MAX];     /* :partition_start */
	char end[CAL_KEY_MAX];       /* :partition_end */
	char start_utc[CAL_KEY_MAX]; /* :partition_start_utc */
	char end_utc[CAL_KEY_MAX];   /* :partition_end_utc */
	int64_t t0, t1;
};

/* The parameters a SQL run binds for one partition (exec_part_params). */
#define EXEC_NPARAMS 5

/* Fill p for partition pt of calendar c: key, local and UTC bounds. */
void exec_part_set(struct exec_part *p, const struct cal *c, part_t pt);

struct exec_check_result {
	char *name;
	bool passed;
	bool warn;     /* severity: warn: failed, it does not fail the run */
	char *detail;  /* "returned 1", "returned NULL", "returned no row", or
			* the error that kept the check from running */
	size_t part;   /* index into exec_run.parts: the partition checked */
	int shard;     /* 1-based: the shard of a Distributed target it ran
			* on (exec_wap.c); 0 for a table that is not one */
	/* a reconcile check: the values compared (has_*: not NULL, and the
	 * source reached) and target - source */
	bool recon, has_source, has_target;
	double source, target, diff;
	/* a trend check (trend.h): the metric's value (has_target, target),
	 * its window's size, mean and sd, and how far off (has_sigma) */
	bool trend, has_sigma;
	int64_t history;
	double mean, sd, sigma;
};

/* The values a job's successful runs recorded for one metric, newest
 * first (trend_values of the state store), for its trend check; error
 * set (and n 0) when they could not be read. */
struct exec_trend_hist {
	size_t n;
	char **keys;
	double *values;
	char *error;
};

/* A metric of a guarded run, before and after its write. */
struct exec_metric_result {
	const char *name;        /* the job's metric name (inside cfg) */
	bool has_before, has_after, has_change;
	double before, after;
	double change_pct;
};

/* The guardrail figures of one partition of a run (job->table set).
 * sum_before and sum_after: its order-independent checksum (digest.h)
 * before and after the write, in the run's transaction, for a job that
 * feeds a downstream job (early cut-off); "" when not read. */
struct exec_guard_result {
	bool has_rows_before, has_rows_after;
	int64_t rows_before, rows_after;
	struct exec_metric_result *metrics; /* job->nmetrics of them */
	char sum_before[DIGEST_LEN], sum_after[DIGEST_LEN];
	/* The rows the job's statements changed (inserted, updated,
	 * deleted) for this partition, when has_changes: a run of one
	 * partition at a time on SQLite or PostgreSQL (not a batch, nor a
	 * ClickHouse stage).  Early cut-off and the partition_column
	 * guardrail read it (cutoff.h). */
	bool has_changes;
	int64_t changes;
};

/* One shard's publish of a run's part on a ClickHouse Distributed target
 * (exec_wap.c; docs/clickhouse.md, "Beyond one server"). */
struct exec_shard_publish {
	size_t part;
	int shard, nshards;        /* 1-based, of nshards */
	int64_t rows_before, rows_after; /* that shard's audit counts */
};

/*
 * A command run's log, LOG_DIR/JOB/KEY.run-ID.log: named by the run (ID
 * its run id, the first request's when one execution serves several), so
 * that each run of a partition has its own and none is appended to
 * another request's.  Into out: 0, or -1 when it does not fit.
 */
int exec_log_path(char *out, size_t size, const char *log_dir,
		  const char *job, const char *key, int64_t run_id);

struct exec_run {
	/* Set by the caller before exec_submit; unchanged until done_cb. */
	int64_t run_id;
	struct config *cfg;        /* the caller holds a reference for the run */
	const struct job_def *job; /* inside cfg */
	struct exec_part *parts;   /* one, or several for a batch run */
	size_t nparts;
	int attempt;               /* 1 for the first */
	/* A ClickHouse batch: its stage filled by up to this many statements
	 * at once, each over a consecutive share of its partitions (the
	 * run's struct run width, the slots it holds); 0 or 1: one. */
	int width;
	const char *log_dir;       /* command output: exec_log_path() */
	/* A query run instead (late_data sensors): this read-only SQL with
	 * :since bound runs outside a transaction, the job's statements do
	 * not; the first column of its rows comes back in values. */
	const char *query_sql;
	const char *query_since;
	size_t query_max;          /* at most this many values (0: 100000) */
	/* A proof instead (--verify): the job's statements for parts[0] run
	 * twice in one transaction that is rolled back; the partition's
	 * content (job->table, job->partition_column) is read before the
	 * first run and after each, into verify_rows and verify_sum. */
	bool verify;
	/* Exactly-once commits (wh_commits.h): the requests' partitions this
	 * run commits, a row of backfilld_commits each in its transaction
	 * (none: NULL, 0); commits_keep_ms: how long the job's rows stay
	 * (its keep_runs). */
	const struct wh_commit *commits;
	size_t ncommits;
	int64_t commits_keep_ms;
	/* Trend checks: [k] for each metric of the job (n 0 for one without
	 * trend:), read by the caller before exec_submit and kept until
	 * done_cb; NULL for a job without trend (trend_hist.h). */
	const struct exec_trend_hist *trend;
	void (*done_cb)(struct exec_run *run);
	/* Optional (NULL for none): called on the loop thread once the run
	 * has really begun (taken by a worker, or spawned), before done_cb;
	 * a run that never starts (cancelled while queued) gets none.  A SQL
	 * run without one and without a timeout does not wake the loop when
	 * it begins, only when it is done. */
	void (*started_cb)(struct exec_run *run);
	/* Optional: a shard of a Distributed target published a part; called
	 * on the loop thread while the worker waits for its return, before
	 * the next shard publishes: 0 recorded, -1 with err (the run fails,
	 * the other shards unpublished). */
	int (*shard_cb)(struct exec_run *run,
			const struct exec_shard_publish *pub, struct err *err);
	void *shard_data;          /* shard_cb's own */
	/* The shards already recorded published for parts[0] by every request
	 * of commits (bit s - 1 for shard s), not published again, and the
	 * sums of their audit counts. */
	uint64_t shards_done;
	int64_t shards_done_before, shards_done_after;
	void *data;

	/* Results, valid in done_cb. */
	bool failed;
	bool timed_out;
	bool cancelled;           /* exec_cancel() or exec_close() stopped it */
	/* Failed with an error no retry cures (the warehouse refused the
	 * user or a privilege, WH_ERR_DENIED): not retried. */
	bool no_retry;
	/* It could not start for want of resources (EMFILE, ENFILE, EAGAIN,
	 * ENOMEM from opening its log or spawning): failed is set too, but
	 * nothing ran; the caller queues it again without counting it. */
	bool not_started;
	/* Several hosts: with not_started, the node that ran it stopped
	 * (docs/several-hosts.md): the run is recorded failed with its
	 * error and its partitions are queued again at once. */
	bool interrupted;
	/* With not_started: a run handed ahead (exec_submit_after) taken
	 * back by exec_withdraw before it started. */
	bool withdrawn;
	/* Every identity of commits already had its row: nothing ran,
	 * nothing was committed, the run succeeded; error holds the note
	 * ("already committed by run N at T"). */
	bool committed_before;
	/* A command run, once spawned (in started_cb): its process group
	 * (its pid) and the leader's start time, /proc/PID/stat field 22. */
	int64_t pgid;
	int64_t proc_start;
	char error[ERR_MSG_MAX];  /* one line when failed */
	int64_t rows_changed;     /* sqlite3_total_changes delta, -1 for commands */
	struct exec_check_result *checks; /* every check's outcome, in order */
	size_t nchecks;
	struct exec_guard_result *guards; /* one per part when job->table */
	/* A Distributed target (ClickHouse cluster:): each shard's figures,
	 * [s * nparts + i] for shard s + 1 and part i, has_rows_* false for a
	 * shard recorded published by an earlier attempt (not built again);
	 * guards then holds their sums (guard_shard_total).  NULL else. */
	struct exec_guard_result *shard_guards;
	size_t nshards;
	char **values;            /* a query run's values */
	size_t nvalues;
	int64_t verify_rows[3];   /* a proof: before, after run 1, after run 2 */
	char verify_sum[3][64];   /* ... and the partition's checksums */

	/* Private to the executor (exec_priv.h). */
	void *priv;
};

/* Create the executor: `nthreads` SQL worker threads on `loop`. */
int exec_new(uv_loop_t *loop, int nthreads, struct exec **out,
	     struct err *err);
/* Grow the worker pool to at least nthreads (reload raised the cap). */
int exec_resize(struct exec *ex, int nthreads, struct err *err);
/* Start a run now.  done_cb is always called exactly once, later, on the
 * loop thread (also when starting fails: failed set, error filled). */
void exec_submit(struct exec *ex, struct exec_run *run);
/* Hand a SQL run ahead: it starts on the worker of run `after` (in
 * flight, SQL) as soon as that one ends, without waiting for the loop,
 * so the worker never sleeps between the two (a run handed after one
 * that has a run after it follows the last of them).  When `after` has
 * ended already, or is no SQL run, this is exec_submit. */
void exec_submit_after(struct exec *ex, struct exec_run *run,
		       struct exec_run *after);
/* Take back a run handed ahead that has not started: its done_cb
 * follows with not_started and withdrawn set.  False (nothing done)
 * once it has started or ended. */
bool exec_withdraw(struct exec *ex, struct exec_run *run);
/* Interrupt a run in flight; its done_cb follows with cancelled set. */
void exec_cancel(struct exec *ex, struct exec_run *run);
/* Whether warehouse `name` could be reached the last time a worker
 * connected to it: 1 yes, -1 no (error filled), 0 not tried yet. */
int exec_warehouse_state(struct exec *ex, const char *name, char *error,
			 size_t errsz, int64_t *at_ms);
/* The warehouse driver for a kind (loading the PostgreSQL module on
 * first use), or NULL with *why saying why not.  Any thread. */
struct wh_driver;
const struct wh_driver *exec_driver_for(enum wh_kind kind, const char **why);
/* ClickHouse (docs/clickhouse.md): every job's table reached now, its
 * partition key against the job's grain; -1 with err (EXIT_BAD_INPUT,
 * "FILE:LINE:COL: job ...") at the first mismatch or missing table.  A
 * warehouse that cannot be reached (or does not answer within 10 s) is
 * skipped.  Each job's `distributed` is set as found (cutoff.h, CUTOFF-7):
 * cfg is not yet shared.  Blocking: at start; on reload it runs off the
 * loop (keycheck.h).  Any thread. */
int exec_check_partition_keys(const struct config *cfg, struct err *err);
/* What --check-config learnt from exec_check_partition_keys_report:
 * the ClickHouse jobs checked, what could not be checked ("warehouse
 * \"NAME\": why; ...", malloc'd; NULL when nothing was left unchecked),
 * and each job's Distributed table's local table (locals[j], malloc'd;
 * NULL for a job whose table is not Distributed or was not reached). */
struct exec_keycheck {
	size_t nchecked;
	char *unchecked;
	char **locals;
};
/* exec_check_partition_keys, reporting into kc (NULL: no report). */
int exec_check_partition_keys_report(const struct config *cfg,
				     struct exec_keycheck *kc,
				     struct err *err);
void exec_keycheck_free(struct exec_keycheck *kc, size_t njobs);
/* ClickHouse (docs/clickhouse.md, "Exactly once"): a run that published
 * keeps its stage partitions until its record is committed; call this
 * after each commit of the caller's records (loop thread): the stages of
 * the runs whose done_cb has been called are then dropped, on the
 * workers. */
void exec_release_stages(struct exec *ex);
/* A partition of a job that an open request has recorded succeeded. */
struct exec_done {
	int64_t request;
	char key[CAL_KEY_MAX];
};
/* At start (loop thread, before any run of the job is submitted): drop
 * the marks and stage partitions of job jd that none of the open requests
 * `keep` names, or whose request recorded the partition succeeded
 * (done[0..ndone)): a crash came between a record and its release. */
void exec_sweep_stages(struct exec *ex, struct config *cfg,
		       const struct job_def *jd, const int64_t *keep,
		       size_t nkeep, const struct exec_done *done,
		       size_t ndone);
/* Several hosts: the clock of the fence (cluster.h, cluster_opts'
 * alive_until), written by the cluster's heartbeat, read by the workers
 * right before and after each ClickHouse publish. */
_Atomic int64_t *exec_fence_clock(struct exec *ex);
/* Cancel what still runs, join the threads, close every handle; closed_cb
 * runs once everything is closed, after which exec_free() may be called. */
void exec_close(struct exec *ex, void (*closed_cb)(void *data), void *data);
void exec_free(struct exec *ex);
/* Free the results a run collected (checks). */
void exec_run_clear_results(struct exec_run *run);

#endif
