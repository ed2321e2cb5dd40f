/*
 * store.h - the state store seam: requests, the manifest, runs, partitions
 * (last builds) and per-job state, behind struct store_ops.
 *
 * The scheduler, the commands, pruning and main.c call the store_*
 * functions at the end of this file; store.c dispatches each one to the
 * implementation the store was opened with and applies the one failure
 * policy below.  Implementations: store_sqlite.c (one SQLite database in
 * WAL mode, the default, the only file that includes sqlite3.h for the
 * state store) and a PostgreSQL one loaded from the backfilld-pg.so
 * module (store_open_pg).  Each embeds struct store first in its own
 * struct, as each warehouse driver embeds struct wh_conn (wh.h), so the
 * callers need no per-implementation table.  Adding an implementation
 * touches this seam and store.c's opening, never the scheduler.
 *
 * Threads.  Used from the loop thread only (an implementation may use
 * libuv's pool for its own housekeeping, as SQLite's checkpoints do).
 *
 * Transactions.  Every op that changes state commits before it returns,
 * unless the caller opened a transaction:
 *
 *	begin -> writes... -> commit        (or rollback)
 *	defer -> writes... [begin -> writes -> commit|rollback]... -> flush
 *
 * begin() outside a transaction opens one that its commit() commits;
 * inside one it opens a group of writes.  A rollback() of a group is what
 * a caller does after one of its writes failed, which fails the turn
 * anyway (below): SQLite undoes the group alone (a savepoint), PostgreSQL
 * fails the whole transaction (a savepoint per group would cost a
 * subtransaction per run; store_pg.c), so its commit or flush fails.
 * defer() opens, if none is open, a transaction that only flush()
 * commits: the changes of one loop turn share one commit, and nothing is
 * acknowledged to a client before flush() returned 0 (scheduler.c, rule
 * 1).  commit() and rollback() of the deferred transaction itself (no
 * group open) do nothing.  Statements are prepared once.
 *
 * Failing (one policy, whatever the implementation; docs/architecture.md,
 * "Failing"):
 *  - Every function that can fail returns 0 or -1 and fills err with one
 *    line that names the state store and what was being done; a lookup
 *    that can find nothing returns 1 for "none" (documented per op).
 *  - A read that fails changes nothing: the caller reports it (to the
 *    client that asked, or in the log) and carries on.
 *  - A write that fails (any op marked "write" below, the transaction
 *    verbs included) fails the loop turn: store.c keeps the first error,
 *    refuses every later write of the turn with it, and the next
 *    store_flush() rolls back whatever the turn had not committed
 *    (discard) and returns -1 with that error.  sched_flush() then stops
 *    new work (scheduler.c, SCHED-7) and main.c restarts the daemon in
 *    place once a probe write succeeds; the new image resumes from the
 *    last commit as after a crash.  So the caller of a write puts its own
 *    memory back and logs or answers the error; it never exits and never
 *    carries on as if the write had been made.
 *  - store_probe_write() is how main.c asks whether the store works
 *    again: its failure marks nothing.
 *  - Before the loop runs (open, recover, load_open at start) a failure is
 *    a start-up error: main.c exits with its code.
 */
#ifndef BACKFILLD_STORE_H
#define BACKFILLD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "mstate.h"

struct config;
struct store_ops;
struct uv_loop_s;


/*
 * The head of every implementation's store: st->ops->op(st, ...).  The
 * implementation allocates its own struct zeroed (xcalloc), with this
 * first, and sets ops; the other fields are store.c's (the failed turn).
 */
struct store {
	const struct store_ops *ops;
	bool turn_failed;    /* a write of this loop turn failed */
	struct err turn_err; /* ... the first one's error */
	bool refuse_all;     /* store_refuse_all: every write refused */
	struct err refuse_err;
};

/* The head of every implementation's runs cursor (store_runs_open): the
 * filters and the keyset walk the implementations share (store_runs.c). */
struct store_runs_cursor {
	struct store *st;
	char *job, *state;    /* filters, NULL: any */
	int64_t request_id;   /* filter, 0: any */
	int phase;            /* 0 pending manifest rows, 1 runs, 2 cancelled
			       * manifest rows that never ran, 3 done */
	int64_t hi[3], lo[3]; /* next window below hi[p], down to lo[p] */
};

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
	bool no_cutoff;         /* backfill --no-cutoff */
	int64_t budget_ms;      /* budget of warehouse time (budget.h), 0: none */
};

struct store_item {
	int64_t request_id;
	const char *job;
	const char *key;
	int seq;
	bool downstream;
	enum mstate state;
	int64_t at;
};

/* A manifest row with its request's fields (load_open, load_request). */
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
	bool rq_no_cutoff;
	int changed;            /* its run left its partition: 0 identical,
				 * 1 changed, -1 unknown (cutoff.h) */
	int64_t rq_budget_ms;   /* 0: none (budget.h) */
	int64_t rq_spent_ms;    /* its measured warehouse time */
	bool rq_over_budget;    /* stopped over budget, not resumed */
};
typedef int (*store_open_cb)(const struct store_open_row *row, void *data,
			     struct err *err);
typedef void (*store_last_cb)(const char *key, enum mstate last_state,
			      void *data);
typedef int (*store_key_cb)(const char *key, void *data, struct err *err);
typedef int (*store_built_cb)(const char *key, int64_t built_at,
			      bool has_inputs_at, int64_t inputs_at,
			      void *data, struct err *err);

/* One row of the runs listing (runs_page): a run, or a manifest row still
 * queued or blocked (newest first, those first). */
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
	const char *marked_by; /* a mark (backfillctl mark): by whom; or NULL */
};
typedef int (*store_run_cb)(const struct store_run_row *row, void *data,
			    struct err *err);
typedef void (*store_count_cb)(const char *job, enum mstate state,
			       int64_t count, void *data);
/* A partition's newest run changed (partition_finished): from prev
 * (MS_NONE: it had none) to state. */
typedef void (*store_prev_cb)(const char *job, enum mstate prev,
			      enum mstate state, void *data);
typedef void (*store_orphan_cb)(int64_t run_id, const char *job,
				const char *key, int64_t pgid,
				int64_t proc_start, void *data);

/* One run found by run_lookup: its error copied. */
struct store_run_info {
	int64_t id;        /* as runs shows it: the execution's (shared_run) */
	int64_t request_id;
	int attempt;
	enum mstate state;
	char error[4096];  /* "" when it has none */
	char node[128];    /* several hosts: the node that claimed it, or "" */
};

/* A runs row left 'running' (running_runs). */
struct store_running_row {
	int64_t id;
	int64_t manifest_id;
	int64_t request_id;
	const char *job;
	const char *key;
	int attempt;
	int64_t started_at; /* ms */
};
typedef void (*store_running_cb)(const struct store_running_row *row,
				 void *data);

/* What the store holds: runs kept (counted at open, then kept), the
 * database and its WAL in bytes (0 where the implementation has none).
 * The PostgreSQL store reads db_bytes, and runs_kept on a node of several
 * hosts that is not the planner, on a thread of its own
 * (store_pg_stats.c): age_ms is how old those figures are (0: read now or
 * kept current, as SQLite's; -1: never read), stale that the reading this
 * call asked for did not come back in time or failed, so they are an
 * earlier reading's. */
struct store_stats {
	int64_t runs_kept;
	int64_t db_bytes;
	int64_t wal_bytes;
	int64_t loop_checkpoints; /* the pool could not keep up this often */
	int64_t age_ms;
	bool stale;
};

/* One pass of pruning, advanced a slice at a time by prune_step: set
 * cutoff (runs of job finished before the time it returns, in ms, may
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
	/* Optional: each run deleted (its job, partition and id), inside the
	 * step's transaction, for what goes with it (a command run's log);
	 * job and key are valid during the call only. */
	void (*pruned)(const char *job, const char *key, int64_t run_id,
		       void *data);
};


typedef void (*store_problem_cb)(const char *job, const char *key,
				 const char *state, const char *error,
				 const char *blocked_on, void *data);

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
	const char *item_error; /* the manifest row's error or note ("landed
				 * later by request N") */
	const char *sum_before, *sum_after; /* the partition's checksums
					     * (digest.h), or NULL */
	bool has_changes;  /* the rows the run's statements changed in */
	int64_t changes;   /* the partition (run_audit.changes) */
};
typedef void (*store_audit_cb)(const struct store_audit_row *row, void *data);
/* A request stopped over budget (over_budget; budget.h). */
struct store_budget_row {
	int64_t id;
	const char *job;
	int64_t budget_ms, spent_ms;
	int64_t over_at;   /* ms: when it stopped */
	int64_t cancelled; /* its partitions cancelled (not retried since) */
};
typedef void (*store_budget_cb)(const struct store_budget_row *row,
				void *data);
/* A recorded value of a metric (trend_values) and a (job, metric) that
 * has some (trend_series). */
typedef void (*store_trend_cb)(const char *key, double value, void *data);

/* One shard's publish of a partition on a ClickHouse Distributed target
 * (shard_publishes; docs/clickhouse.md, "Beyond one server"): shard
 * `shard` (1-based) of `nshards`, by run run_id of request `request`,
 * with that shard's audit counts. */
struct store_shard_row {
	int64_t request;
	const char *job, *key;
	int shard, nshards;
	int64_t run_id, rows_before, rows_after, published_at; /* ms */
};
/* shards_partial's query, the same in both stores. */
#define STORE_SHARDS_PARTIAL \
	"SELECT request, job, partition_key, shard, nshards, run_id, rows_before, rows_after, published_at" \
	" FROM shard_publishes p WHERE nshards > (SELECT COUNT(*) FROM" \
	" shard_publishes q WHERE q.request = p.request AND q.job = p.job" \
	" AND q.partition_key = p.partition_key) AND NOT EXISTS (SELECT 1" \
	" FROM runs r WHERE r.job = p.job AND r.partition_key =" \
	" p.partition_key AND r.state = 'succeeded' AND r.id > p.run_id)" \
	" ORDER BY job, partition_key, request, shard"
/* load_open's and load_one's head, the same in both stores: an item
 * and its request in the columns both stores' row readers decode, up to
 * the WHERE whose condition each appends. */
#define STORE_LOAD_ITEMS \
	"SELECT m.id, m.request_id, m.job, m.partition_key, m.seq," \
	" m.downstream, m.state, m.attempts, m.not_before, m.blocked_on," \
	" r.job, r.kind, r.reverse, r.created_at, r.concurrency," \
	" r.fail_fast, r.budget_ms, r.spent_ms," \
	" r.over_budget_at IS NOT NULL, r.no_cutoff, m.changed" \
	" FROM manifest m" \
	" JOIN requests r ON r.id = m.request_id WHERE "
/* audit_of's query, the same in both stores but for the request's
 * placeholder P: each item of the request with its newest run and that
 * run's audit. */
#define STORE_AUDIT_OF(P) \
	"SELECT m.job, m.partition_key, m.downstream, m.state," \
	" COALESCE(r.shared_run, r.id)," \
	" r.code_version, r.config_hash, r.state, r.error, a.rows_before," \
	" a.rows_after, a.metrics, a.checks, a.passed, a.metrics_text," \
	" a.checks_text, m.error, a.sum_before, a.sum_after, a.changes" \
	" FROM manifest m" \
	" LEFT JOIN runs r ON r.id = (SELECT MAX(id) FROM runs" \
	" WHERE manifest_id = m.id)" \
	" LEFT JOIN run_audit a ON a.run_id = r.id" \
	" AND a.partition_key = m.partition_key" \
	" WHERE m.request_id = " P " ORDER BY m.seq"
typedef void (*store_shard_cb)(const struct store_shard_row *row,
			       void *data);
typedef void (*store_series_cb)(const char *job, const char *metric,
				void *data);
typedef void (*store_recent_cb)(int64_t id, const char *job, const char *kind,
				const char *reason, int64_t created_at,
				bool finished, int64_t finished_at,
				bool cancelled, void *data);

/*
 * An implementation.  Each member has the signature of the store_*
 * function of the same name (store.c dispatches one to the other).  "write"
 * marks the ops under the failure policy above; the others are reads.
 * Rows handed to a callback live until it returns.  All are required but
 * those marked optional.
 */
struct store_ops {
	const char *name; /* "sqlite", "postgres" */

	/* Optional (NULL: opened by a function of its own, as
	 * store_open_pg).  Open, creating if needed, and migrate to the
	 * schema compiled in; a newer schema is refused (EXIT_BAD_INPUT). */
	int (*open)(const char *path, struct store **out, struct err *err);
	/* Close; an open transaction is rolled back.  The loop must have run
	 * every queued job of the implementation's (uv_run ended). */
	void (*close)(struct store *st);
	/* Optional.  Do housekeeping (SQLite: WAL checkpoints) on loop's
	 * thread pool instead of inside commits. */
	void (*checkpoint_on)(struct store *st, struct uv_loop_s *loop);

	/* Transactions (above).  begin, commit and defer are writes. */
	int (*begin)(struct store *st, struct err *err);
	int (*commit)(struct store *st, struct err *err);
	void (*rollback)(struct store *st);
	int (*defer)(struct store *st, struct err *err);
	/* Write.  Commit the deferred transaction if one is open and no
	 * group is; a failed commit leaves it rolled back. */
	int (*flush)(struct store *st, struct err *err);

	/* Write: a request, its id in *id. */
	int (*request_add)(struct store *st, const struct store_request *rq,
			   int64_t *id, struct err *err);
	/* Write: mark a request finished (or cancelled) at `at`. */
	int (*request_finish)(struct store *st, int64_t id, int64_t at,
			      bool cancelled, struct err *err);
	/* Write: a manifest row, its id in *id; the same (request, job,
	 * key) twice is refused. */
	int (*item_add)(struct store *st, const struct store_item *it,
			int64_t *id, struct err *err);
	/* Write: set a manifest row's state and the fields that go with it
	 * (error and blocked_on may be NULL; changed: what its run did to
	 * its partition, 0 identical, 1 changed, -1 unknown). */
	int (*item_set)(struct store *st, int64_t id, enum mstate state,
			int attempts, int64_t not_before, const char *error,
			const char *blocked_on, int changed, int64_t at,
			struct err *err);

	/* Write: a run started ('running'), its id in *run_id.  shared_run:
	 * the id of the first row of the one execution this row shares
	 * with other requests (SCHED-5: `runs` and `audit` show that id),
	 * 0 for that first row and any run of its own. */
	int (*run_start)(struct store *st, int64_t manifest_id,
			 int64_t request_id, const char *job, const char *key,
			 int attempt, int64_t started_at,
			 const char *code_version, const char *config_hash,
			 int64_t shared_run, int64_t *run_id, struct err *err);
	/* Write: a run finished; rows_changed < 0: unknown (NULL). */
	int (*run_finish)(struct store *st, int64_t run_id, enum mstate state,
			  int64_t finished_at, const char *error,
			  int64_t rows_changed, struct err *err);
	/* Write: a successful build of a partition (staleness); inputs_at <
	 * 0: none. */
	int (*partition_built)(struct store *st, const char *job,
			       const char *key, int64_t built_at,
			       int64_t inputs_at, int64_t run_id,
			       const char *code_version, struct err *err);
	/* When (job, key) last landed: 0 and *built_at (*inputs_at -1 when
	 * none) and, when code_version is not NULL, the code version that
	 * built it ("" when unknown), or 1 when never. */
	int (*partition_get)(struct store *st, const char *job, const char *key,
			     int64_t *built_at, int64_t *inputs_at,
			     char *code_version, size_t cvsz, struct err *err);
	/* The newest landing among job's partitions first_key..last_key: 0
	 * and *built_at, or 1 when none of them was ever built. */
	int (*newest_build)(struct store *st, const char *job,
			    const char *first_key, const char *last_key,
			    int64_t *built_at, struct err *err);

	/* Write, at start: mark runs of unfinished requests left 'running'
	 * by a crash as failed and their manifest rows queued again, in one
	 * transaction; how many runs in *count.  The runs rows in keep[]
	 * and their manifest rows stay running: a new planner of several
	 * hosts adopts them (adopt.h); the SQLite store takes none. */
	int (*recover)(struct store *st, int64_t at, const int64_t *keep,
		       size_t nkeep, int *count, struct err *err);
	/* Every open manifest row (queued, running, blocked) of unfinished
	 * requests, in request then seq order, and their finished rows too
	 * (succeeded, failed, cancelled) so counts and dependencies rebuild.
	 * cb returning -1 stops the walk with its error. */
	int (*load_open)(struct store *st, store_open_cb cb, void *data,
			 struct err *err);
	/* Every manifest row of one request, finished or not, in seq order
	 * (a request `retry` brings back into memory). */
	int (*load_request)(struct store *st, int64_t request_id,
			    store_open_cb cb, void *data, struct err *err);
	/* A request's own controls (backfill --concurrency, --fail-fast,
	 * --downstream; 0, false and "" when not given): 0, or 1 when there
	 * is no such request. */
	int (*request_controls)(struct store *st, int64_t id, int *concurrency,
				bool *fail_fast, char *downstream, size_t dsz,
				struct err *err);
	/* Write: mark a finished request open again (retry). */
	int (*request_reopen)(struct store *st, int64_t id, struct err *err);

	/* The newest finished run's state of each partition of job in
	 * [first_key, last_key] (text order is time order for keys of one
	 * grain). */
	int (*last_states)(struct store *st, const char *job,
			   const char *first_key, const char *last_key,
			   store_last_cb cb, void *data, struct err *err);
	/* Keys of job whose latest successful build used code_version, in
	 * key order; cb returning -1 stops the walk. */
	int (*keys_built_by)(struct store *st, const char *job,
			     const char *code_version, store_key_cb cb,
			     void *data, struct err *err);
	/* Keys of job in [first_key, last_key] whose latest successful
	 * build used a code version other than code_version (or none), in
	 * key order; cb returning -1 stops the walk. */
	int (*keys_changed)(struct store *st, const char *job,
			    const char *code_version, const char *first_key,
			    const char *last_key, store_key_cb cb, void *data,
			    struct err *err);
	/* Every built partition of job, in key order; cb returning -1 stops
	 * the walk. */
	int (*partitions_of)(struct store *st, const char *job,
			     store_built_cb cb, void *data, struct err *err);

	/*
	 * The runs listing (pending manifest rows, runs, partitions
	 * cancelled before they ran, each newest first), page by page.
	 * runs_page hands at most max_rows rows to cb, doing a bounded
	 * amount of work whatever the filters; cb returns -1 to fail, 1 to
	 * end the page after this row (the next page resumes after it), 0 to
	 * go on.  It returns 1 when the listing is complete, 0 when more
	 * pages may follow (a page may hold no row and not be the last), -1
	 * with err.  A cursor (its head: struct store_runs_cursor) holds no
	 * resource of the store between pages; it is closed before the
	 * store.  runs_max_id is the newest run id it will list (0: none).
	 */
	int (*runs_open)(struct store *st, const char *job, int64_t request_id,
			 const char *state, struct store_runs_cursor **out,
			 struct err *err);
	int (*runs_page)(struct store_runs_cursor *c, int max_rows,
			 store_run_cb cb, void *data, struct err *err);
	int64_t (*runs_max_id)(const struct store_runs_cursor *c);
	void (*runs_close)(struct store_runs_cursor *c);

	/* Write: a run of job's partition key finished as state (succeeded
	 * or failed) and becomes the partition's newest run.  cb (if not
	 * NULL) learns the state of the one it replaces once the write is
	 * made: before this returns on SQLite and outside a transaction; on
	 * PostgreSQL inside one, when it commits (never when it is rolled
	 * back), so that the write needs no round trip of its own. */
	int (*partition_finished)(struct store *st, const char *job,
				  const char *key, int64_t run_id,
				  enum mstate state, store_prev_cb cb,
				  void *data, struct err *err);
	/* Partitions per job by the state of their newest finished run (at
	 * start: the scheduler keeps the counts in memory from then on). */
	int (*latest_counts)(struct store *st, store_count_cb cb, void *data,
			     struct err *err);

	/* Write: run run_id is a mark (backfillctl mark, docs/mark.md):
	 * recorded succeeded by the operator `by`, nothing ran. */
	int (*run_mark)(struct store *st, int64_t run_id, const char *by,
			struct err *err);
	/* The partitions of job in [first_key, last_key] whose newest run
	 * is a mark (cb with the key; last_state is MS_SUCCEEDED). */
	int (*marked_keys)(struct store *st, const char *job,
			   const char *first_key, const char *last_key,
			   store_last_cb cb, void *data, struct err *err);
	/* A run of the request that built (or failed) job's partition key
	 * last: attempt `attempt`, or its newest when 0 (logs).  1: none. */
	int (*run_lookup)(struct store *st, const char *job, const char *key,
			  int attempt, struct store_run_info *out,
			  struct err *err);
	/* Write: several hosts, the node that runs run_id (its command log
	 * is there); nothing to record on one host. */
	int (*run_node)(struct store *st, int64_t run_id, const char *node,
			struct err *err);
	/* Write: a command run's process group and its leader's start time. */
	int (*run_proc)(struct store *st, int64_t run_id, int64_t pgid,
			int64_t proc_start, struct err *err);
	/* Runs left 'running' with a recorded process group (a command run
	 * a crash left behind), for proc_end_groups() before recover. */
	int (*orphans)(struct store *st, store_orphan_cb cb, void *data,
		       struct err *err);
	/* The runs rows of unfinished requests left 'running', for a new
	 * planner of several hosts to adopt before recover (adopt.h); NULL
	 * in the SQLite store, where every such row is a crash's. */
	int (*running_runs)(struct store *st, store_running_cb cb, void *data,
			    struct err *err);
	/* Write: forget a run that never started: its row goes (unless it
	 * has audit rows); the caller queues the partition again. */
	int (*run_unstart)(struct store *st, int64_t run_id, struct err *err);

	/* Can the store be written again (after a failed turn)?  0 when it
	 * has min_free bytes of room (where that can be known) and a real
	 * commit succeeds; -1 with err, also while a transaction is open.
	 * Not under the failure policy. */
	int (*probe_write)(struct store *st, int64_t min_free, struct err *err);
	/* What the store holds (never fails: unknown figures are 0). */
	void (*stats)(struct store *st, struct store_stats *out);

	/* Write: look at up to `limit` rows of pr's pass and delete what may
	 * go (see store_sqlite_query.c, "Pruning"): 1 when there is more to
	 * do, 0 when the pass is over, -1 with err. */
	int (*prune_step)(struct store *st, struct store_prune *pr, int limit,
			  struct err *err);

	/* A job's schedule state; a job never saved reads as all zero with
	 * catchup "ok". */
	int (*job_get)(struct store *st, const char *job,
		       struct store_job_state *js, struct err *err);
	/* Write: save a job's schedule state. */
	int (*job_put)(struct store *st, const char *job,
		       const struct store_job_state *js, int64_t at,
		       struct err *err);

	/* The calendar a job's keys were last accepted in (jobs.calendar,
	 * config_cal_name: "" for UTC with Monday weeks, also when the job
	 * has no row) and whether the job has built partitions. */
	int (*job_calendar)(struct store *st, const char *job, char *cal,
			    size_t calsz, bool *built, struct err *err);
	/* Write: record a job's calendar ("" stored as NULL). */
	int (*job_calendar_put)(struct store *st, const char *job,
				const char *cal, int64_t at, struct err *err);

	/* The failed and blocked rows of a request, in run order. */
	int (*request_problems)(struct store *st, int64_t request_id,
				store_problem_cb cb, void *data,
				struct err *err);
	/* Write: what a run wrote to one partition (JSON text for metrics
	 * and checks; NULL reads as {} and []; the checksums before and
	 * after, NULL when unknown; the rows its statements changed, -1
	 * when not counted); replaces an earlier one. */
	int (*audit_add)(struct store *st, int64_t run_id, const char *key,
			 bool has_before, int64_t rows_before, bool has_after,
			 int64_t rows_after, const char *metrics,
			 const char *checks, const char *metrics_text,
			 const char *checks_text, bool passed,
			 const char *sum_before, const char *sum_after,
			 int64_t changes, struct err *err);
	/* Every manifest row of a request, in seq order, with its latest run
	 * and that run's audit. */
	int (*audit_of)(struct store *st, int64_t request_id, store_audit_cb cb,
			void *data, struct err *err);
	/* A request's manifest rows by state, and how long it took. */
	int (*request_counts)(struct store *st, int64_t request_id,
			      int64_t counts[MS_COUNT], int64_t *elapsed_ms,
			      struct err *err);
	/* The durations (ms) of job's newest successful runs, newest first,
	 * at most max of them (a bounded read). */
	int (*durations)(struct store *st, const char *job, int64_t *ms,
			 size_t max, size_t *n, struct err *err);
	/* The newest `limit` requests, newest first (the report's audit). */
	int (*recent_requests)(struct store *st, int limit, store_recent_cb cb,
			       void *data, struct err *err);
	/* Does request id exist: 0 with its job and whether finished, or 1
	 * when there is no such request. */
	int (*request_get)(struct store *st, int64_t id, char *job,
			   size_t jobsz, bool *finished, struct err *err);

	/* Write: a request's measured warehouse time and when it stopped
	 * over budget (over_at 0: it did not, or retry resumed it). */
	int (*request_budget)(struct store *st, int64_t id, int64_t spent_ms,
			      int64_t over_at, struct err *err);
	/* The newest `limit` requests stopped over budget and not resumed,
	 * newest first (status; an indexed, bounded read). */
	int (*over_budget)(struct store *st, int limit, store_budget_cb cb,
			   void *data, struct err *err);
	/* Trend checks' history (trend.h): the values of metric of job the
	 * successful runs recorded, newest first (by run id, then partition
	 * key), at most max. */
	int (*trend_values)(struct store *st, const char *job,
			    const char *metric, size_t max, store_trend_cb cb,
			    void *data, struct err *err);
	/* Write: the value of metric for job's partition key after run
	 * run_id, replacing one recorded before. */
	int (*trend_put)(struct store *st, const char *job, const char *metric,
			 const char *key, double value, int64_t run_id,
			 struct err *err);
	/* Write: keep only the newest `keep` values of (job, metric) (0:
	 * none): the bound, applied after each put and at start and reload. */
	int (*trend_trim)(struct store *st, const char *job, const char *metric,
			  size_t keep, struct err *err);
	/* Every (job, metric) with values, in order. */
	int (*trend_series)(struct store *st, store_series_cb cb, void *data,
			    struct err *err);

	/* Write: a shard published a partition (replacing an earlier row
	 * of the same request, job, partition and shard). */
	int (*shard_put)(struct store *st, const struct store_shard_row *row,
			 struct err *err);
	/* The shards recorded for job's partition key by request, in shard
	 * order. */
	int (*shards_of)(struct store *st, int64_t request, const char *job,
			 const char *key, store_shard_cb cb, void *data,
			 struct err *err);
	/* The partitions some shards published and others not (fewer rows
	 * than nshards for their request, no later successful run of the
	 * partition): their rows, by job, partition, request and shard. */
	int (*shards_partial)(struct store *st, store_shard_cb cb, void *data,
			      struct err *err);

	/* Roll back whatever is open, the deferred transaction and its
	 * groups included (store.c, a failed turn); never fails loudly. */
	void (*discard)(struct store *st);
};

/* The SQLite implementation (store_sqlite.c). */
extern const struct store_ops store_sqlite_ops;

/* ---- opening ------------------------------------------------------- */

/* Open the SQLite store at path (creating it, migrating its schema). */
int store_open(const char *path, struct store **out, struct err *err);
/* Open the store cfg names: SQLite at state_db (the default), or the
 * PostgreSQL one once the configuration can name it (store_open_pg). */
int store_open_config(const struct config *cfg, struct store **out,
		      struct err *err);
/*
 * Open the PostgreSQL store through the backfilld-pg.so module, which
 * exports `const struct store_ops store_pg_ops` and
 *
 *	int store_pg_open(const char *conninfo, const char *password_file,
 *			  struct store **out, struct err *err);
 *
 * Without the module (or without those symbols) -1 with one line saying
 * which, and that the store cannot be used.
 */
int store_open_pg(const char *conninfo, const char *password_file,
		  struct store **out, struct err *err);
/* The implementation's name ("sqlite"). */
const char *store_kind(const struct store *st);

/* ---- the calls (each dispatches to the op of the same name) --------- */

void store_close(struct store *st);
void store_checkpoint_on(struct store *st, struct uv_loop_s *loop);

int store_begin(struct store *st, struct err *err);
int store_commit(struct store *st, struct err *err);
void store_rollback(struct store *st);
int store_defer(struct store *st, struct err *err);
/* Also ends a failed turn: -1 with its first error, its changes rolled
 * back (the failure policy above). */
int store_flush(struct store *st, struct err *err);

int store_request_add(struct store *st, const struct store_request *rq,
		      int64_t *id, struct err *err);
int store_request_finish(struct store *st, int64_t id, int64_t at,
			 bool cancelled, struct err *err);
int store_item_add(struct store *st, const struct store_item *it,
		   int64_t *id, struct err *err);
int store_item_set(struct store *st, int64_t id, enum mstate state,
		   int attempts, int64_t not_before, const char *error,
		   const char *blocked_on, int changed, int64_t at,
		   struct err *err);
int store_run_start(struct store *st, int64_t manifest_id, int64_t request_id,
		    const char *job, const char *key, int attempt,
		    int64_t started_at, const char *code_version,
		    const char *config_hash, int64_t shared_run,
		    int64_t *run_id, struct err *err);
int store_run_finish(struct store *st, int64_t run_id, enum mstate state,
		     int64_t finished_at, const char *error,
		     int64_t rows_changed, struct err *err);
int store_partition_built(struct store *st, const char *job, const char *key,
			  int64_t built_at, int64_t inputs_at, int64_t run_id,
			  const char *code_version, struct err *err);
int store_partition_get(struct store *st, const char *job, const char *key,
			int64_t *built_at, int64_t *inputs_at,
			char *code_version, size_t cvsz, struct err *err);
int store_newest_build(struct store *st, const char *job, const char *first_key,
		       const char *last_key, int64_t *built_at, struct err *err);
int store_recover(struct store *st, int64_t at, const int64_t *keep,
		  size_t nkeep, int *count, struct err *err);
int store_load_open(struct store *st, store_open_cb cb, void *data,
		    struct err *err);
int store_load_request(struct store *st, int64_t request_id, store_open_cb cb,
		       void *data, struct err *err);
int store_request_controls(struct store *st, int64_t id, int *concurrency,
			   bool *fail_fast, char *downstream, size_t dsz,
			   struct err *err);
int store_request_reopen(struct store *st, int64_t id, struct err *err);
int store_last_states(struct store *st, const char *job, const char *first_key,
		      const char *last_key, store_last_cb cb, void *data,
		      struct err *err);
int store_keys_built_by(struct store *st, const char *job,
			const char *code_version, store_key_cb cb, void *data,
			struct err *err);
int store_keys_changed(struct store *st, const char *job,
		       const char *code_version, const char *first_key,
		       const char *last_key, store_key_cb cb, void *data,
		       struct err *err);
int store_partitions_of(struct store *st, const char *job, store_built_cb cb,
			void *data, struct err *err);
int store_runs_open(struct store *st, const char *job, int64_t request_id,
		    const char *state, struct store_runs_cursor **out,
		    struct err *err);
int store_runs_page(struct store_runs_cursor *c, int max_rows, store_run_cb cb,
		    void *data, struct err *err);
int64_t store_runs_max_id(const struct store_runs_cursor *c);
void store_runs_close(struct store_runs_cursor *c);

/* The runs listing's keyset walk, for implementations (store_runs.c). */
struct store_runs_page {
	store_run_cb cb;
	void *data;
	int max_rows; /* rows this window may hand over */
	int n;        /* rows it handed over */
	bool stop;    /* cb ended the page */
};
/* One window of c's phase, ids [lo, hi[phase]), each row through
 * store_runs_row: 0, or -1 with err. */
typedef int (*store_runs_window_fn)(struct store_runs_cursor *c, int64_t lo,
				    struct store_runs_page *pg,
				    struct err *err);
void store_runs_init(struct store_runs_cursor *c, struct store *st,
		     const char *job, int64_t request_id, const char *state);
void store_runs_clip(struct store_runs_cursor *c);
void store_runs_free(struct store_runs_cursor *c);
int64_t store_runs_newest(const struct store_runs_cursor *c);
void store_runs_sql(const struct store_runs_cursor *c, char mark, char *sql,
		    size_t size);
int store_runs_row(struct store_runs_cursor *c,
		   const struct store_run_row *row, int64_t id,
		   struct store_runs_page *pg, struct err *err);
int store_runs_walk(struct store_runs_cursor *c, int max_rows,
		    store_runs_window_fn window, store_run_cb cb, void *data,
		    struct err *err);
int store_partition_finished(struct store *st, const char *job,
			     const char *key, int64_t run_id, enum mstate state,
			     store_prev_cb cb, void *data, struct err *err);
int store_latest_counts(struct store *st, store_count_cb cb, void *data,
			struct err *err);
int store_run_proc(struct store *st, int64_t run_id, int64_t pgid,
		   int64_t proc_start, struct err *err);
int store_run_lookup(struct store *st, const char *job, const char *key,
		     int attempt, struct store_run_info *out, struct err *err);
int store_run_node(struct store *st, int64_t run_id, const char *node,
		   struct err *err);
int store_run_mark(struct store *st, int64_t run_id, const char *by,
		   struct err *err);
int store_marked_keys(struct store *st, const char *job, const char *first_key,
		      const char *last_key, store_last_cb cb, void *data,
		      struct err *err);
int store_orphans(struct store *st, store_orphan_cb cb, void *data,
		  struct err *err);
int store_running_runs(struct store *st, store_running_cb cb, void *data,
		       struct err *err);
int store_run_unstart(struct store *st, int64_t run_id, struct err *err);
int store_probe_write(struct store *st, int64_t min_free, struct err *err);
/* From now on refuse every write (the transaction verbs too) with why,
 * for good: a commit failed and memory is ahead of the store (scheduler.c,
 * SCHED-7), so no later turn may commit the second half of a change whose
 * first half was lost (a request recorded finished whose last run's end
 * was rolled back).  Reads and store_probe_write still work; the restart
 * in place starts afresh. */
void store_refuse_all(struct store *st, const char *why);
void store_stats(struct store *st, struct store_stats *out);
int store_prune_step(struct store *st, struct store_prune *pr, int limit,
		     struct err *err);
int store_job_get(struct store *st, const char *job, struct store_job_state *js,
		  struct err *err);
int store_job_put(struct store *st, const char *job,
		  const struct store_job_state *js, int64_t at, struct err *err);
int store_job_calendar(struct store *st, const char *job, char *cal,
		       size_t calsz, bool *built, struct err *err);
int store_job_calendar_put(struct store *st, const char *job, const char *cal,
			   int64_t at, struct err *err);
int store_request_problems(struct store *st, int64_t request_id,
			   store_problem_cb cb, void *data, struct err *err);
int store_audit_add(struct store *st, int64_t run_id, const char *key,
		    bool has_before, int64_t rows_before, bool has_after,
		    int64_t rows_after, const char *metrics, const char *checks,
		    const char *metrics_text, const char *checks_text,
		    bool passed, const char *sum_before, const char *sum_after,
		    int64_t changes, struct err *err);
int store_audit_of(struct store *st, int64_t request_id, store_audit_cb cb,
		   void *data, struct err *err);
int store_request_counts(struct store *st, int64_t request_id,
			 int64_t counts[MS_COUNT], int64_t *elapsed_ms,
			 struct err *err);
int store_durations(struct store *st, const char *job, int64_t *ms,
		    size_t max, size_t *n, struct err *err);
int store_recent_requests(struct store *st, int limit, store_recent_cb cb,
			  void *data, struct err *err);
int store_request_get(struct store *st, int64_t id, char *job, size_t jobsz,
		      bool *finished, struct err *err);
int store_request_budget(struct store *st, int64_t id, int64_t spent_ms,
			 int64_t over_at, struct err *err);
int store_over_budget(struct store *st, int limit, store_budget_cb cb,
		      void *data, struct err *err);
int store_trend_values(struct store *st, const char *job, const char *metric,
		       size_t max, store_trend_cb cb, void *data,
		       struct err *err);
int store_shard_put(struct store *st, const struct store_shard_row *row,
		    struct err *err);
int store_shards_of(struct store *st, int64_t request, const char *job,
		    const char *key, store_shard_cb cb, void *data,
		    struct err *err);
int store_shards_partial(struct store *st, store_shard_cb cb, void *data,
			 struct err *err);
int store_trend_put(struct store *st, const char *job, const char *metric,
		    const char *key, double value, int64_t run_id,
		    struct err *err);
int store_trend_trim(struct store *st, const char *job, const char *metric,
		     size_t keep, struct err *err);
int store_trend_series(struct store *st, store_series_cb cb, void *data,
		       struct err *err);

#endif
