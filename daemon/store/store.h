/*
 * store.h - the state store: requests, the manifest, runs, partitions
 * (last builds) and per-job state, in one SQLite database in WAL mode.
 *
 * The only module that includes sqlite3.h for the state store.  Used from
 * the loop thread only.  Every function that changes state commits before
 * it returns, unless the caller wrapped it in store_begin()/store_commit(),
 * in which case nothing is acknowledged to a client before store_commit()
 * returned 0.  Statements are prepared once and reset after use.
 */
#ifndef BACKFILLD_STORE_H
#define BACKFILLD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct store;

enum mstate {
	MS_QUEUED,
	MS_RUNNING,
	MS_SUCCEEDED,
	MS_FAILED,
	MS_BLOCKED,
	MS_CANCELLED,
	MS_COUNT
};
const char *mstate_name(enum mstate s);
int mstate_parse(const char *s, enum mstate *out);

/* Open (creating if needed) and migrate to the schema compiled in. */
int store_open(const char *path, struct store **out, struct err *err);
/* Close; the loop must have run every queued checkpoint (uv_run ended). */
void store_close(struct store *st);
/* Run WAL checkpoints on loop's thread pool instead of inside commits
 * (without a loop, commits checkpoint on the store's own connection once
 * the WAL passes 16 MiB). */
struct uv_loop_s;
void store_checkpoint_on(struct store *st, struct uv_loop_s *loop);

/* Group several changes into one transaction (BEGIN IMMEDIATE), or into a
 * savepoint when a transaction is already open. */
int store_begin(struct store *st, struct err *err);
int store_commit(struct store *st, struct err *err);
void store_rollback(struct store *st);
/* Open a transaction, if none is, that only store_flush() commits: the
 * changes of one loop turn share one commit.  Call store_flush() before
 * anything is acknowledged to a client. */
int store_defer(struct store *st, struct err *err);
int store_flush(struct store *st, struct err *err);

struct store_request {
	const char *job;
	const char *kind; /* schedule, catchup, backfill, rerun, stale, built_by, late_data */
	const char *reason;
	const char *from_key;
	const char *to_key;
	const char *reprocess;
	bool reverse;
	bool no_downstream;
	int64_t created_at;
	int concurrency;        /* runs of it at once, 0: no cap of its own */
	bool fail_fast;
	const char *downstream; /* the downstream jobs it keeps, NULL: all */
};
int store_request_add(struct store *st, const struct store_request *rq,
		      int64_t *id, struct err *err);
int store_request_finish(struct store *st, int64_t id, int64_t at,
			 bool cancelled, struct err *err);

struct store_item {
	int64_t request_id;
	const char *job;
	const char *key;
	int seq;
	bool downstream;
	enum mstate state;
	int64_t at;
};
int store_item_add(struct store *st, const struct store_item *it,
		   int64_t *id, struct err *err);
/* Set a manifest row's state and the fields that go with it (error and
 * blocked_on may be NULL). */
int store_item_set(struct store *st, int64_t id, enum mstate state,
		   int attempts, int64_t not_before, const char *error,
		   const char *blocked_on, int64_t at, struct err *err);

int store_run_start(struct store *st, int64_t manifest_id, int64_t request_id,
		    const char *job, const char *key, int attempt,
		    int64_t started_at, const char *code_version,
		    const char *config_hash, int64_t *run_id, struct err *err);
int store_run_finish(struct store *st, int64_t run_id, enum mstate state,
		     int64_t finished_at, const char *error,
		     int64_t rows_changed, struct err *err);
/* Record a successful build of a partition (staleness). */
int store_partition_built(struct store *st, const char *job, const char *key,
			  int64_t built_at, int64_t inputs_at, int64_t run_id,
			  const char *code_version, struct err *err);
/* When (job, key) last landed: 0 and *built_at, or 1 when never. */
int store_partition_get(struct store *st, const char *job, const char *key,
			int64_t *built_at, int64_t *inputs_at, struct err *err);

/* The newest landing among job's partitions first_key..last_key: 0 and
 * *built_at, or 1 when none of them was ever built. */
int store_newest_build(struct store *st, const char *job, const char *first_key,
		       const char *last_key, int64_t *built_at, struct err *err);

/* At start: mark runs left 'running' by a crash as failed and their manifest
 * rows queued again; returns how many in *count. */
int store_recover(struct store *st, int64_t at, int *count, struct err *err);

/* Every open manifest row (queued, running, blocked) of unfinished
 * requests, in request then seq order. */
struct store_open_row {
	int64_t id;
	int64_t request_id;
	const char *job;
	const char *key;
	int seq;
	bool downstream;
	enum mstate state;
	int attempts;
	int64_t not_before;
	const char *blocked_on;
	/* the request's */
	const char *rq_job;
	const char *rq_kind;
	bool rq_reverse;
	int64_t rq_created_at;
	int rq_concurrency;     /* 0: none */
	bool rq_fail_fast;
};
typedef int (*store_open_cb)(const struct store_open_row *row, void *data,
			     struct err *err);
/* Also calls back for finished rows (succeeded, failed, cancelled) of
 * requests that are not finished, so counts and dependencies rebuild. */
int store_load_open(struct store *st, store_open_cb cb, void *data,
		    struct err *err);
/* Every manifest row of one request, finished or not, in seq order (a
 * request `retry` brings back into memory). */
int store_load_request(struct store *st, int64_t request_id, store_open_cb cb,
		       void *data, struct err *err);
/* A request's own controls (backfill --concurrency, --fail-fast,
 * --downstream; 0, false and "" when not given): 0, or 1 when there is
 * no such request. */
int store_request_controls(struct store *st, int64_t id, int *concurrency,
			   bool *fail_fast, char *downstream, size_t dsz,
			   struct err *err);
/* Mark a finished request open again (retry). */
int store_request_reopen(struct store *st, int64_t id, struct err *err);

/* Last finished run's state of each partition of job in [first_key,
 * last_key] (text order equals time order for keys of one grain). */
typedef void (*store_last_cb)(const char *key, enum mstate last_state,
			      void *data);
int store_last_states(struct store *st, const char *job, const char *first_key,
		      const char *last_key, store_last_cb cb, void *data,
		      struct err *err);

/* Keys of job whose latest successful build used code_version. */
typedef int (*store_key_cb)(const char *key, void *data, struct err *err);
int store_keys_built_by(struct store *st, const char *job,
			const char *code_version, store_key_cb cb, void *data,
			struct err *err);

/* Every built partition of job (key, built_at, inputs_at). */
typedef int (*store_built_cb)(const char *key, int64_t built_at,
			      bool has_inputs_at, int64_t inputs_at,
			      void *data, struct err *err);
int store_partitions_of(struct store *st, const char *job, store_built_cb cb,
			void *data, struct err *err);

/* One row of the runs listing (store_runs_page): a run, or a manifest row
 * still queued or blocked (newest first, those first). */
struct store_run_row {
	bool has_id;          /* false: a queued or blocked item, not yet run */
	int64_t id;
	int64_t request_id;
	const char *job;
	const char *key;
	int attempt;
	const char *state;
	bool has_started_at;
	int64_t started_at;
	bool has_finished_at;
	int64_t finished_at;
	const char *error;
	bool has_rows;
	int64_t rows_changed;
	const char *code_version;
};
typedef int (*store_run_cb)(const struct store_run_row *row, void *data,
			    struct err *err);

/*
 * The runs listing (pending manifest rows, runs, partitions cancelled
 * before they ran, each newest first), page by page (a keyset cursor: see
 * store.c).  store_runs_page() hands at most max_rows rows to cb, doing a
 * bounded amount of work whatever the filters; cb returns -1 to fail, 1
 * to end the page after this row (the next page resumes after it), 0 to
 * go on.  Returns 1 when the listing is complete, 0 when more pages may
 * follow (a page may hold no row and not be the last), -1 with err.  A
 * cursor holds no SQLite resource between pages; close it before the
 * store.  store_runs_max_id() is the newest run id it will list (0: none).
 */
struct store_runs_cursor;
int store_runs_open(struct store *st, const char *job, int64_t request_id,
		    const char *state, struct store_runs_cursor **out,
		    struct err *err);
int store_runs_page(struct store_runs_cursor *c, int max_rows, store_run_cb cb,
		    void *data, struct err *err);
int64_t store_runs_max_id(const struct store_runs_cursor *c);
void store_runs_close(struct store_runs_cursor *c);

/* A run of job's partition key finished as state (succeeded or failed):
 * it becomes the partition's newest run.  *prev is the state of the one
 * it replaces, MS_COUNT when none (status counts partitions by it). */
int store_partition_finished(struct store *st, const char *job,
			     const char *key, int64_t run_id, enum mstate state,
			     enum mstate *prev, struct err *err);
/* Partitions per job by the state of their newest finished run (at start:
 * the scheduler keeps the counts in memory from then on). */
typedef void (*store_count_cb)(const char *job, enum mstate state,
			       int64_t count, void *data);
int store_latest_counts(struct store *st, store_count_cb cb, void *data,
			struct err *err);

/* A command run's process group and its leader's start time. */
int store_run_proc(struct store *st, int64_t run_id, int64_t pgid,
		   int64_t proc_start, struct err *err);

/* Runs left 'running' with a recorded process group (a command run a
 * crash left behind), for proc_end_groups() before store_recover(). */
typedef void (*store_orphan_cb)(int64_t run_id, const char *job,
				const char *key, int64_t pgid,
				int64_t proc_start, void *data);
int store_orphans(struct store *st, store_orphan_cb cb, void *data,
		  struct err *err);
/* Forget a run that never started (no descriptors, no memory): its row
 * goes, the partition is queued again without an attempt counted. */
int store_run_unstart(struct store *st, int64_t run_id, struct err *err);

/* Can the store be written again (after a failed commit)?  0 when its
 * filesystem has min_free bytes available and a real commit succeeds. */
int store_probe_write(struct store *st, int64_t min_free, struct err *err);

/* What the store holds: runs kept (counted at open, then kept), the
 * database and its WAL in bytes. */
struct store_stats {
	int64_t runs_kept;
	int64_t db_bytes;
	int64_t wal_bytes;
	int64_t loop_checkpoints; /* the pool could not keep up this often */
};
void store_stats(struct store *st, struct store_stats *out);

/* One pass of pruning, advanced a slice at a time by store_prune_step():
 * set cutoff (runs of job finished before the time it returns, in ms, may
 * go), newest_cutoff (the largest value cutoff can return: rows started
 * after it are younger than every keep_runs) and data; zero the rest. */
struct store_prune {
	int64_t (*cutoff)(const char *job, void *data);
	void *data;
	int64_t newest_cutoff;
	int phase;        /* 0 runs, 1 requests, 2 done */
	int64_t cursor;   /* the last id looked at */
	int64_t runs;     /* deleted so far */
	int64_t requests;
};
/* Look at up to `limit` rows and delete what may go: 1 when there is
 * more to do, 0 when the pass is over, -1 with err. */
int store_prune_step(struct store *st, struct store_prune *pr, int limit,
		     struct err *err);

/* Per-job schedule state. */
struct store_job_state {
	bool has_watermark;
	char watermark[32];
	char catchup[16]; /* ok, refused, off */
	char gap_from[32];
	char gap_to[32];
	bool paused;
	int64_t paused_at;
	/* late_data sensor */
	bool has_late_since;
	int64_t late_since;       /* ms: :since of the next check */
	bool has_late_checked;
	int64_t late_checked_at;  /* ms */
	int64_t late_found;       /* partitions the last check found */
	char late_error[512];     /* "" when the last check succeeded */
};
int store_job_get(struct store *st, const char *job, struct store_job_state *js,
		  struct err *err);
int store_job_put(struct store *st, const char *job,
		  const struct store_job_state *js, int64_t at, struct err *err);

/* The failed and blocked rows of a request, in run order. */
typedef void (*store_problem_cb)(const char *job, const char *key,
				 const char *state, const char *error,
				 const char *blocked_on, void *data);
int store_request_problems(struct store *st, int64_t request_id,
			   store_problem_cb cb, void *data, struct err *err);

/* What a run wrote to one partition (JSON text for metrics and checks). */
int store_audit_add(struct store *st, int64_t run_id, const char *key,
		    bool has_before, int64_t rows_before, bool has_after,
		    int64_t rows_after, const char *metrics, const char *checks,
		    const char *metrics_text, const char *checks_text,
		    bool passed, struct err *err);
/* Every manifest row of a request with its latest run and that run's audit. */
struct store_audit_row {
	const char *job, *key, *item_state;
	bool downstream;
	bool has_run;
	int64_t run_id;
	const char *code_version, *config_hash, *run_state, *error;
	bool has_rows_before, has_rows_after;
	int64_t rows_before, rows_after;
	const char *metrics, *checks;
	const char *metrics_text, *checks_text;
	bool has_audit, passed;
};
typedef void (*store_audit_cb)(const struct store_audit_row *row, void *data);
int store_audit_of(struct store *st, int64_t request_id, store_audit_cb cb,
		   void *data, struct err *err);

/* A request's manifest rows by state, and how long it took. */
int store_request_counts(struct store *st, int64_t request_id,
			 int64_t counts[MS_COUNT], int64_t *elapsed_ms,
			 struct err *err);

/* The durations (ms) of job's newest successful runs, newest first, at
 * most max of them (an indexed read of max rows: runs_job_succeeded). */
int store_durations(struct store *st, const char *job, int64_t *ms,
		    size_t max, size_t *n, struct err *err);

/* The newest `limit` requests, newest first (the report's audit). */
typedef void (*store_recent_cb)(int64_t id, const char *job, const char *kind,
				const char *reason, int64_t created_at,
				bool finished, int64_t finished_at,
				bool cancelled, void *data);
int store_recent_requests(struct store *st, int limit, store_recent_cb cb,
			  void *data, struct err *err);

/* Does request id exist; fills its job and whether finished. */
int store_request_get(struct store *st, int64_t id, char *job, size_t jobsz,
		      bool *finished, struct err *err);

#endif
