/*
 * store_pg_int.h - what the pieces of the PostgreSQL state store share
 * (inside the backfilld-pg module; store_pg.h is its face to the daemon):
 * the statements (store_pg_sql.c), the connection, its pipeline, the
 * batched writes and the transactions (store_pg_tx.c), the operations
 * that write (store_pg.c) and those that read or keep (store_pg_read.c).
 * The rules are at the top of store_pg.c.
 */
#ifndef BACKFILLD_STORE_PG_INT_H
#define BACKFILLD_STORE_PG_INT_H

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "pg_conn.h"
#include "pgsql.h"
#include "sql_embedded.h"
#include "store_pg.h"
#include "xalloc.h"

extern const struct sql_migration sql_pg_migrations[];
extern const int sql_pg_migrations_count;

#define PGST_MIGRATE_LOCK "7236505386216927537" /* any fixed key */
#define PGST_MAXARGS 16
#define PGST_INT8OID 20
#define PGST_TEXTOID 25
enum pgst_stmt {
	P_REQUEST_ADD,
	P_REQUEST_FINISH,
	P_ITEM_ADD,
	P_ITEM_SET,
	P_RUN_START,
	P_RUN_FINISH,
	P_PART_BUILT,
	P_PART_GET,
	P_LOAD_OPEN,
	P_LOAD_ONE,
	P_REQUEST_REOPEN,
	P_REQUEST_CONTROLS,
	P_LAST_STATES,
	P_LATEST_PUT,
	P_LATEST_COUNTS,
	P_RUNS_COUNT,
	P_RUN_PROC,
	P_RUN_MARK,
	P_RUN_NODE,
	P_RUN_LOOKUP,
	P_MARKED_KEYS,
	P_ORPHANS,
	P_RUN_UNSTART,
	P_RECOVER_RUNS,
	P_RECOVER_MANIFEST,
	P_RUNNING,
	P_PRUNE_RUNS,
	P_PRUNE_AUDIT_DEL,
	P_PRUNE_RUN_DEL,
	P_PRUNE_REQUESTS,
	P_PRUNE_MANIFEST_DEL,
	P_PRUNE_REQUEST_DEL,
	P_BUILT_BY,
	P_KEYS_CHANGED,
	P_PARTS_OF,
	P_JOB_GET,
	P_JOB_PUT,
	P_JOB_CAL_GET,
	P_JOB_CAL_PUT,
	P_TREND_VALUES,
	P_TREND_PUT,
	P_TREND_TRIM,
	P_TREND_SERIES,
	P_SHARD_PUT,
	P_SHARDS_OF,
	P_SHARDS_PARTIAL,
	P_REQUEST_GET,
	P_RECENT_REQUESTS,
	P_PROBLEMS,
	P_AUDIT_ADD,
	P_AUDIT_OF,
	P_REQUEST_COUNTS,
	P_NEWEST_BUILD,
	P_DURATIONS,
	P_REQUEST_BUDGET,
	P_OVER_BUDGET,
	P_FENCE,
	P_ITEM_ADD_ID,
	P_RUN_START_ID,
	P_ITEM_IDS,
	P_RUN_IDS,
	P_FORGET_ONE,
	P_B_ITEM_ADD,
	P_B_RUN_START,
	P_B_ITEM_SET,
	P_B_RUN_FINISH,
	P_B_LATEST,
	P_B_BUILT,
	P_B_OFFER,
	P_B_FORGET,
	P_B_RUN_NODE,
	P_COUNT
};
/*
 * Ids.  Inside a transaction, a manifest row or a run is inserted with an
 * id taken from its table's sequence beforehand, a block at a time (1,
 * 2, 4... up to PGST_IDS_MAX), so that the insert needs no answer and is
 * batched (below).  Ids stay increasing; those of a block not used
 * when the daemon stops are skipped, as a rolled-back insert's are.
 */
#define PGST_IDS_MAX 256

struct pgst_ids {
	int64_t id[PGST_IDS_MAX];
	int n, pos, block;
};
/*
 * Batched writes.  Inside a transaction, the writes a run's start and end
 * make (manifest rows added and set, runs started and finished, the
 * partitions' newest runs and builds) are not sent one statement each:
 * their rows are kept per kind, as array literals, and sent as one
 * statement per kind (unnest) before the next statement of any other
 * kind, before a read, and before COMMIT; a ROLLBACK drops them.  They go
 * in the order of enum pgst_batch_kind, parents first (a run's manifest row
 * before the run, a run before its partition's newest), and a row that
 * names the same row (id, or job and key) as one already kept sends every
 * kind first, so that the statements change each row in the order the
 * writes were made.  So a loop turn that starts and ends fifty runs
 * costs six statements, not three hundred and fifty.  Every statement
 * is prepared.  Those that join their rows to a table (updates, the
 * newest runs, deletions) are sent with enable_seqscan off and
 * plan_cache_mode force_generic_plan for them (one set_config statement,
 * local to the transaction, then back to the default before anything
 * else but the COMMIT that ends them): their one plan, made the first
 * time and whenever the server invalidates it, is then the index
 * lookup of each row, whatever the rows' number and the tables' size.
 * Planned for their rows each time instead (as they were), they cost
 * their parsing and planning at every turn (a fifth of the planner's
 * store connection's CPU in the cluster bench, docs/design-notes.md);
 * with enable_seqscan on, a plan made while the tables held a few
 * thousand rows hash-joined each batch against a scan of the whole
 * table, a cost that grows with the store (tests/bench/README.md: 275
 * rows read per partition at 3,000 partitions).  A kind with a single
 * row goes as that row's single statement (PGST_BATCH_JOIN).  With
 * several hosts the planner's offers and the deletion of the results it
 * recorded go in the same transaction (store_pg_offer, store_pg_forget):
 * a run's row and its offer, a result's record and its deletion, commit
 * together.  The node that ran a run (run_node, recorded with its
 * result) is kept until the run's finish in the same transaction and
 * written by the finish's UPDATE (pgst_node_keep): one new version of
 * the runs row, not two; one no finish took goes as a B_RUN_NODE row.
 */
enum pgst_batch_kind {
	B_ITEM_ADD,
	B_RUN_START,
	B_ITEM_SET,
	B_RUN_FINISH,
	B_RUN_NODE,
	B_LATEST,
	B_BUILT,
	B_OFFER,
	B_FORGET,
	B_COUNT
};

#define PGST_PIPE_MAX 256 /* statements sent before their answers are read */
#define PGST_BATCH_COLS 10
#define PGST_BATCH_MAX 256
#define PGST_BATCH_JOIN 2

struct pgst_batch {
	struct pgsql_array col[PGST_BATCH_COLS];
	char **val;                  /* row r's column c at r * COLS + c */
	int n;
	int64_t id[PGST_BATCH_MAX];  /* the row each names (ITEM_SET, RUN_FINISH) */
	char *key[PGST_BATCH_MAX];   /* ... "job\x1fkey" (LATEST, BUILT) */
	size_t first_after;          /* LATEST: its first row's p->after */
};
/* A partition_finished callback waiting for the commit. */
struct pgst_after {
	store_prev_cb cb;
	void *data;
	char *job;
	enum mstate prev, state;
};

/* The answer of a statement sent without waiting, if someone reads it. */
struct pgst;
typedef void (*pgst_answer_fn)(struct pgst *p, PGresult *r, size_t arg);

struct pgst_answer {
	pgst_answer_fn fn;
	size_t arg;
};

/* A run's node (pgst_run_node) kept for the run's finish in the same
 * transaction, so that one UPDATE of the row writes both. */
struct pgst_node {
	int64_t id;
	char *node;
};

struct pgst {
	struct store base; /* first: store.c sees this */
	PGconn *pg;
	char *conninfo;
	char *password_file;
	int64_t fence;     /* the lease generation it must see, 0: none */
	bool prepared;     /* the connection has the statements */
	bool tx;           /* a transaction is open */
	bool deferred;     /* ... opened by defer: flush commits it */
	int depth;         /* begin() groups open inside it */
	bool aborted;      /* a statement failed in it (PostgreSQL: all later
			    * ones fail until a rollback) */
	char abort_msg[512];
	int64_t runs_kept;
	bool opened;       /* migrated and counted (pgst_open_db) */
	bool connected;    /* the last pgst_connect succeeded */
	bool recount;      /* count runs_kept again at the next chance */
	bool shared;       /* several hosts' (store_pg_fence was called) */
	bool piped;        /* in pipeline mode: sent, answers not read */
	int npiped;        /* statements sent since the last sync */
	struct pgst_answer answer[PGST_PIPE_MAX]; /* ... who reads each */
	struct pgst_batch batch[B_COUNT];
	bool batched;      /* some batch holds rows */
	bool sending;      /* pgst_batch_send is sending them */
	bool committed;    /* the last COMMIT's answer */
	struct pgst_after *after; /* to call once the transaction commits */
	size_t nafter, cafter;
	struct pgst_ids item_ids, run_ids; /* reserved, not used yet */
	struct pgst_node *nodes; /* runs' nodes waiting for their finish */
	size_t nnodes, cnodes;
	struct pgst_stats *stats; /* status's figures (store_pg_stats.c) */
};
/* Parameters of one statement, as text (NULL: SQL NULL). */
struct pgst_args {
	int n;
	const char *v[PGST_MAXARGS];
	char buf[PGST_MAXARGS][24];
};

/* What each kind sends, how many columns it has, and the single
 * statement of one row when it joins (P_COUNT: an insert, always
 * batched and prepared). */
struct pgst_batch_kind_def {
	enum pgst_stmt stmt;
	int ncols;
	enum pgst_stmt single;
	const char *what;
};

extern const char *const pgst_sql[P_COUNT];
extern const struct pgst_batch_kind_def pgst_batch_kinds[B_COUNT];

/* ---- shared by the pieces ------------------------------------------- */

/* The PostgreSQL store behind a struct store. */
static inline struct pgst *
pgst_of(struct store *st)
{
	return (struct pgst *)st;
}

/* Add a text parameter (NULL: SQL NULL). */
static inline void
arg_text(struct pgst_args *a, const char *s)
{
	a->v[a->n++] = s;
}

/* Add an integer parameter. */
static inline void
arg_int(struct pgst_args *a, int64_t x)
{
	snprintf(a->buf[a->n], sizeof a->buf[a->n], "%" PRId64, x);
	a->v[a->n] = a->buf[a->n];
	a->n++;
}

/* Add a boolean parameter. */
static inline void
arg_bool(struct pgst_args *a, bool b)
{
	a->v[a->n++] = b ? "t" : "f";
}

/* Rows a statement changed. */
static inline int64_t
pgst_changes(PGresult *r)
{
	const char *n = PQcmdTuples(r);

	return n != NULL && *n != '\0' ? strtoll(n, NULL, 10) : 0;
}

/* Text column or NULL. */
static inline const char *
col_text(PGresult *r, int row, int i)
{
	return PQgetisnull(r, row, i) ? NULL : PQgetvalue(r, row, i);
}

/* Is a column NULL? */
static inline bool
col_null(PGresult *r, int row, int i)
{
	return PQgetisnull(r, row, i) != 0;
}

/* Integer column (0 for NULL). */
static inline int64_t
col_int(PGresult *r, int row, int i)
{
	return PQgetisnull(r, row, i) ? 0 :
		strtoll(PQgetvalue(r, row, i), NULL, 10);
}

/* Boolean column (false for NULL). */
static inline bool
col_bool(PGresult *r, int row, int i)
{
	return !PQgetisnull(r, row, i) && PQgetvalue(r, row, i)[0] == 't';
}

/* Copy a text column into a fixed buffer ("" for NULL). */
static inline void
col_copy(PGresult *r, int row, int i, char *buf, size_t sz)
{
	const char *v = col_text(r, row, i);

	snprintf(buf, sz, "%s", v ? v : "");
}

/* Connect, and the first time migrate and count the runs kept; then
 * prepare the statements. */
int pgst_open_db(struct pgst *p, struct err *err);

/* Fill err from the connection's last error, with context; a failure
 * inside a transaction aborts it (see the top of store_pg.c). */
int pgst_fail(struct pgst *p, struct err *err, const char *what);

/* Connect (or connect again) to the server. */
int pgst_connect(struct pgst *p, struct err *err);

/* Prepare every statement on the connection. */
int pgst_prepare(struct pgst *p, struct err *err);

/* Make the connection usable: outside a transaction, a broken one is
 * connected again (and its statements prepared again); a store opened
 * while the server could not be reached is migrated and counted at its
 * first connection (pgst_open_db). */
int pgst_ready(struct pgst *p, struct err *err);

/* Read the answers of the statements sent without waiting, the batched
 * writes sent first. */
void pgst_sync(struct pgst *p);

/* Run simple SQL without parameters or rows (transaction control). */
int pgst_simple(struct pgst *p, const char *sql, struct err *err);

/* Run prepared statement id: its result (PQclear it), or NULL with err. */
PGresult *pgst_exec(struct pgst *p, enum pgst_stmt id,
	const struct pgst_args *a, const char *what, struct err *err);

/* Keep run id's node for its finish in this transaction (pgst_run_node):
 * a finish takes it (pgst_node_take), and one not taken by the next send
 * goes as its own row. */
int pgst_node_keep(struct pgst *p, int64_t id, const char *node,
	struct err *err);

/* The node kept for run id, taken (free it), or NULL. */
char *pgst_node_take(struct pgst *p, int64_t id);

/* Drop the batches and free what they hold (close). */
void pgst_batch_free(struct pgst *p);

/* Keep one row of kind k: a, its single statement's parameters in order
 * (pgst_batch_row says what id, job and key are); 0, or -1 with err. */
int pgst_batch_add(struct pgst *p, enum pgst_batch_kind k, int64_t id,
	const char *job, const char *key, const struct pgst_args *a,
	struct err *err);

/* Count the runs kept again when store_pg_fence asked for it (outside a
 * transaction; a failure leaves it asked). */
void pgst_recount(struct pgst *p);

/* Run the callbacks waiting for the commit, or drop them (rolled back). */
void pgst_after_end(struct pgst *p, bool committed);

/* Commit the open transaction (COMMIT sent after its writes, one round
 * trip); an aborted one is rolled back and fails. */
int pgst_tx_commit(struct pgst *p, struct err *err);

/* Roll back the open transaction. */
void pgst_tx_rollback(struct pgst *p);

/* Begin: a transaction, or a group inside one (no savepoint: the top
 * of store_pg.c). */
int pgst_begin(struct store *st, struct err *err);

/* Commit: end the group, or commit what begin opened. */
int pgst_commit(struct store *st, struct err *err);

/* Roll back what begin opened; a group inside a transaction fails the
 * whole transaction (the top of store_pg.c). */
void pgst_rollback(struct store *st);

/* Open the loop turn's transaction, if none is. */
int pgst_defer(struct store *st, struct err *err);

/* Commit the loop turn's transaction. */
int pgst_flush(struct store *st, struct err *err);

/* Roll back whatever is open, the deferred transaction and its groups
 * included (a failed turn: store.h). */
void pgst_discard(struct store *st);

/* Run a statement that writes: inside the open transaction, or, with a
 * fence and none open, in one of its own that checks the lease. */
PGresult *pgst_write(struct pgst *p, enum pgst_stmt id,
	const struct pgst_args *a, const char *what, struct err *err);

/* Run a statement that writes and returns nothing of interest. */
int pgst_write_done(struct pgst *p, enum pgst_stmt id,
	const struct pgst_args *a, const char *what, struct err *err);

/*
 * Can the store be written again?  A real commit that needs room,
 * reconnecting first if need be: store_probe (sql/pg/004_probe.sql)
 * emptied, filled with min_free bytes of pages of its own (at least
 * one), and emptied again, in one transaction.  The server extends the
 * table's new file page by page, and a filesystem that cannot hold them
 * fails the INSERT ("could not extend file ... No space left on
 * device"); the commit then frees them.  A commit that writes only a
 * transaction id, or a row that fits a page a table has, succeeds on a
 * full disk and would restart a node into the same failure.  Another
 * node probing at the same moment holds the table's lock: waited for at
 * most 2 s, then this probe fails and is tried again later.
 */
int pgst_probe_write(struct store *st, int64_t min_free, struct err *err);

/* What the store holds. */
void pgst_stats(struct store *st, struct store_stats *out);
/* store_pg_stats.c: the figures read on a thread of their own. */
struct pgst_stats;
#define PGST_STATS_WAIT_MS 1000 /* the loop waits for a reading, at most */
void pgst_stats_figures(struct pgst *p, bool count, int64_t wait_ms,
			struct store_stats *out);
void pgst_stats_close(struct pgst *p);

/* One slice of a pruning pass: 1 more to do, 0 the pass is over. */
int pgst_prune_step(struct store *st, struct store_prune *pr, int limit,
	struct err *err);

/* Per-job schedule state (defaults when the job has none yet). */
int pgst_job_get(struct store *st, const char *job, struct store_job_state *js,
	struct err *err);

/* Save per-job schedule state. */
int pgst_job_put(struct store *st, const char *job,
	const struct store_job_state *js, int64_t at, struct err *err);
int pgst_job_calendar(struct store *st, const char *job, char *cal,
		      size_t calsz, bool *built, struct err *err);
int pgst_job_calendar_put(struct store *st, const char *job, const char *cal,
			  int64_t at, struct err *err);

/* The values recorded for (job, metric), newest first, at most max. */
int pgst_trend_values(struct store *st, const char *job, const char *metric,
	size_t max, store_trend_cb cb, void *data, struct err *err);

/* Record a shard's publish of a partition. */
int pgst_shard_put(struct store *st, const struct store_shard_row *row,
	struct err *err);

int pgst_shards_of(struct store *st, int64_t request, const char *job,
	const char *key, store_shard_cb cb, void *data, struct err *err);

int pgst_shards_partial(struct store *st, store_shard_cb cb, void *data,
	struct err *err);

/* Record a metric's value for a partition (replacing an earlier one). */
int pgst_trend_put(struct store *st, const char *job, const char *metric,
	const char *key, double value, int64_t run_id, struct err *err);

/* Keep the newest `keep` values of (job, metric). */
int pgst_trend_trim(struct store *st, const char *job, const char *metric,
	size_t keep, struct err *err);

/* Every (job, metric) with values. */
int pgst_trend_series(struct store *st, store_series_cb cb, void *data,
	struct err *err);

/* Does request id exist: 0 with its job and whether finished, 1 not. */
int pgst_request_get(struct store *st, int64_t id, char *job, size_t jobsz,
	bool *finished, struct err *err);

/* A request's own controls: 0, or 1 when there is no such request. */
int pgst_request_controls(struct store *st, int64_t id, int *concurrency,
	bool *fail_fast, char *downstream, size_t dsz, struct err *err);

/* A request's measured warehouse time and when it stopped over budget. */
int pgst_request_budget(struct store *st, int64_t id, int64_t spent_ms,
	int64_t over_at, struct err *err);

/* The newest `limit` requests stopped over budget, newest first. */
int pgst_over_budget(struct store *st, int limit, store_budget_cb cb,
	void *data, struct err *err);

/* The newest `limit` requests, newest first. */
int pgst_recent_requests(struct store *st, int limit, store_recent_cb cb,
	void *data, struct err *err);

/* The failed and blocked rows of a request, in run order. */
int pgst_request_problems(struct store *st, int64_t request_id,
	store_problem_cb cb, void *data, struct err *err);

/* Record what a run wrote to one partition (replacing any record). */
int pgst_audit_add(struct store *st, int64_t run_id, const char *key,
	bool has_before, int64_t rows_before, bool has_after,
	int64_t rows_after, const char *metrics, const char *checks,
	const char *metrics_text, const char *checks_text, bool passed,
	const char *sum_before, const char *sum_after, int64_t changes,
	struct err *err);

/* Every manifest row of a request with its latest run and its audit. */
int pgst_audit_of(struct store *st, int64_t request_id, store_audit_cb cb,
	void *data, struct err *err);

/* A request's manifest rows by state, and how long it took. */
int pgst_request_counts(struct store *st, int64_t request_id,
	int64_t counts[MS_COUNT], int64_t *elapsed_ms, struct err *err);

/* The durations of job's newest successful runs, newest first. */
int pgst_durations(struct store *st, const char *job, int64_t *ms, size_t max,
	size_t *n, struct err *err);

/* The newest landing among job's partitions in a key range: 0, or 1
 * when none was ever built. */
int pgst_newest_build(struct store *st, const char *job, const char *first_key,
	const char *last_key, int64_t *built_at, struct err *err);

/* Close a cursor. */
void pgst_runs_close(struct store_runs_cursor *base);

/* Open the runs listing (store.h). */
int pgst_runs_open(struct store *st, const char *job, int64_t request_id,
	const char *state, struct store_runs_cursor **out, struct err *err);

/* One page of the listing: 1 complete, 0 more may follow, -1 err. */
int pgst_runs_page(struct store_runs_cursor *base, int max_rows,
	store_run_cb cb, void *data, struct err *err);

#endif
