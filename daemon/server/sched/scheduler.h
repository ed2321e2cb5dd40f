/*
 * scheduler.h - the scheduler: requests, the in-memory manifest, dispatch
 * through the worker pool under the caps, retries, downstream release,
 * the clock-driven schedule with bounded catchup.
 *
 * Lives on the loop thread.  The state store is the truth: every change is
 * committed there before it is acknowledged or acted on; the in-memory
 * structures are an index over the open part of the manifest, rebuilt from
 * the store at start.
 *
 * The rules are pure functions (lib/manifest.h, lib/pick.h,
 * lib/schedule.h); this interface is their shell, implemented by
 * scheduler.c and the sched_*.c files (sched_int.h says which does what).
 */
#ifndef BACKFILLD_SCHED_H
#define BACKFILLD_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "adopt.h"
#include "calendar.h"
#include "config.h"
#include "err.h"
#include "estimate.h"
#include "exec.h"
#include "plan.h"
#include "buf.h"
#include "cmdspec.h"
#include "store.h"

struct sched;
struct hooks;

/* A scheduler over cfg (it holds cfg from now on), dormant until
 * sched_start_adopt. */
struct sched *sched_new(uv_loop_t *loop, struct store *store,
			struct exec *exec, struct config *cfg,
			const char *log_dir);
/* Several hosts, before this node claims work: end the command process
 * groups this daemon's previous life on this host left running (found by
 * their marker, proc.h), as sched_start_adopt does for a daemon on its
 * own. */
void sched_end_local_orphans(struct sched *s);

/*
 * Several hosts (docs/several-hosts.md): the planner hands its runs to
 * the cluster instead of the executor.  submit() takes a run that
 * sched_run_begin recorded; the run's done_cb is called when its result
 * comes back (the same chain as a local run).  cancel() asks for it to
 * stop (its done_cb follows).  A scheduler with a remote is dormant (no
 * dispatch, no schedule) until sched_start_adopt.
 */
struct sched_remote {
	void (*submit)(void *data, struct exec_run *run);
	void (*cancel)(void *data, struct exec_run *run);
	/* a run an earlier planner left in flight, rebuilt by
	 * sched_start_adopt: on offer or claimed already */
	void (*adopt)(void *data, struct exec_run *run);
	void *data;
};
void sched_set_remote(struct sched *s, const struct sched_remote *remote);
/*
 * Load the open manifest, recover crashed runs, run the schedule once and
 * start dispatching.  A daemon on its own passes no rows (NULL, 0, NULL).
 * For a new planner (docs/several-hosts.md): the runs rows
 * left running that a work row of rows[] carries (adopt.h) stay running
 * and are handed to the remote's adopt() with their done_cb, as if this
 * planner had started them; the others are recovered (failed as
 * interrupted, queued again).  action[k] says what the caller does with
 * rows[k]: kept, or withdrawn, stopped or deleted.
 */
int sched_start_adopt(struct sched *s, const struct adopt_row *rows,
		      size_t nrows, enum adopt_action *action,
		      struct err *err);
/* Before sched_start_adopt: the node that was planner before this one
 * ("" or NULL: not known), named in the errors of the runs it left
 * running that nobody runs now (queued again). */
void sched_set_previous_planner(struct sched *s, const char *node);
/*
 * A planner that stops while others live hands its runs in flight over
 * (docs/several-hosts.md): forget them here without recording anything;
 * their rows stay running in the store for the next planner to adopt.
 * The remote forgets them first.  The idle callback follows if draining.
 */
void sched_hand_over(struct sched *s);
/* Swap in a new configuration (taking over its reference); the queued and
 * blocked partitions of jobs it no longer has are cancelled: returns how
 * many. */
int64_t sched_reload(struct sched *s, struct config *cfg);
/* Queued and blocked partitions of the job named `job` (a reload that
 * removes it cancels them). */
int64_t sched_pending_of(struct sched *s, const char *job);
struct config *sched_config(struct sched *s);
/* Commit the state changes of this loop turn (SCHED-1 in scheduler.c):
 * called before each poll and before any answer to a client.  -1 when the
 * store refused the commit: the turn's changes are lost and the scheduler
 * stops taking work (SCHED-7); nothing may be acknowledged then. */
int sched_flush(struct sched *s);
/* A run of a ClickHouse job on a cluster's shards (sched_shards.c): the
 * shards its requests have recorded published (run->shards_done, not
 * published again) and the record of each shard's publish (shard_cb);
 * nothing for any other run.  After its commits are set. */
void sched_shards_prepare(struct sched *s, struct exec_run *run);
/* Whether a commit failed (SCHED-7), why and since when (ms). */
bool sched_store_failed(const struct sched *s, const char **error,
			int64_t *since_ms);
/* SCHED-7's one answer to a change asked while the store cannot be
 * written (cmd.c refuses the commands that change state with it,
 * control.c replaces an answer whose commit failed by it), into out. */
void sched_store_refusal(const struct sched *s, char *out, size_t outsz);
/* Called once when a commit first fails. */
void sched_on_store_failure(struct sched *s, void (*cb)(void *), void *data);
/* Several hosts: a deposed planner waiting for its store before it
 * restarts in place: from now on nothing is dispatched, scheduled or
 * written, as after a failed commit (SCHED-7), and sched_store_failed
 * says why.  Without the failure callback. */
void sched_suspend(struct sched *s, const char *why);
/* A scheduler that has not loaded the store: a node that has not been
 * the planner (several hosts).  What it holds in memory is no count. */
bool sched_dormant(const struct sched *s);
/* Stop dispatching; runs in flight go on.  Returns how many of them were
 * runs handed ahead that had not started, taken back (their done_cb
 * follows). */
int sched_drain(struct sched *s);
/* Cancel runs in flight (shutdown): their partitions are queued again. */
void sched_cancel_running(struct sched *s);
int sched_running(const struct sched *s);
int64_t sched_queued(const struct sched *s);
int64_t sched_failed_total(const struct sched *s);
/* Called when nothing runs any more after sched_drain. */
void sched_on_idle(struct sched *s, void (*cb)(void *data), void *data);
/* Close the timers; free after the loop ran the close callbacks. */
void sched_close(struct sched *s);
void sched_free(struct sched *s);
/* Call cb (from the loop) whenever runs start or finish or requests
 * change, so the caller can refresh a summary (throttled by the caller). */
void sched_on_change(struct sched *s, void (*cb)(void *data), void *data);
/* Run the jobs' hooks (on_failure, on_late, on_refused) through h; NULL
 * (the default) runs none. */
void sched_set_hooks(struct sched *s, struct hooks *h);
/* The partitions of job in memory: queued, running and blocked ones (with
 * that state) and late ones (MS_LATE), for `map`; a partition may come
 * several times. */
typedef void (*sched_open_cb)(part_t p, enum mstate st, void *data);
void sched_job_open(struct sched *s, int job, sched_open_cb cb, void *data);
/* The requests in memory (open, or finished with partitions still
 * blocked), oldest first: for the report (then sched_progress). */
typedef void (*sched_request_cb)(int64_t id, const char *job,
				 const char *kind, int64_t created_at_ms,
				 void *data);
void sched_each_request(struct sched *s, sched_request_cb cb, void *data);
/* A run ended (not one that could not start): for the metrics. */
struct sched_run_event {
	const char *job;
	enum mstate state;   /* succeeded, failed, cancelled, or skipped by
			      * early cut-off (no duration, no checks) */
	double duration_s;
	bool has_delay;      /* a scheduled partition: */
	double delay_s;      /* from its due time to the run's start */
	const struct exec_check_result *checks; /* its checks' outcomes */
	size_t nchecks;
};
void sched_on_run(struct sched *s,
		  void (*cb)(void *data, const struct sched_run_event *ev),
		  void *data);
/* A run began (state MS_RUNNING) or ended (succeeded, failed,
 * cancelled: stopped or never started, skipped by early cut-off): for
 * the lineage events (server/view/olrun.c).  Valid during the call. */
struct sched_run_fact {
	enum mstate state;
	const struct job_def *job;   /* of the run's configuration */
	int64_t run_id;              /* the store's */
	int64_t request_id;          /* of its first item */
	const char *request_job;     /* that request's own job */
	const char *request_kind;
	int64_t request_created_ms;
	const char *key;             /* its first partition */
	int64_t t0, t1;              /* its partitions' interval, seconds */
	int attempt;
	const char *error;           /* a failed run's, or NULL */
	int64_t now_ms;
};
void sched_on_run_fact(struct sched *s,
		       void (*cb)(void *data, const struct sched_run_fact *f),
		       void *data);
/* The test clock changed: re-run the schedule now. */
void sched_clock_changed(struct sched *s);

/* An operator or sensor request. */
struct sched_req {
	int job;             /* index in the current config */
	const char *kind;    /* backfill, rerun, stale, built_by, late_data */
	part_t *parts;       /* the job's partitions, ascending, distinct */
	size_t nparts;
	enum reprocess reprocess;
	bool reverse;
	bool no_downstream;
	const char *reason;
	const char *from_key; /* for the record */
	const char *to_key;
	int concurrency;      /* runs of it at once (<= the job's), 0: none */
	bool fail_fast;       /* cancel the rest after its first failure */
	bool no_cutoff;       /* rebuild the downstream regardless (cutoff.h) */
	const bool *keep;     /* downstream jobs kept (plan.h), NULL: all */
	const char *downstream; /* the same, as given, for the record */
	int64_t budget_s;     /* budget of warehouse time (budget.h), 0: none */
	const char *budget_source; /* "--budget", "max_backfill_time" */
};
/*
 * Plan a request: filter by reprocess, expand downstream.  With `commit`
 * the plan is written to the store and queued (*request_id set, or 0 when
 * nothing was left to run).
 */
int sched_submit(struct sched *s, const struct sched_req *rq, bool commit,
		 struct plan *plan, int64_t *request_id, struct err *err);
/* Plan a request (sched_submit without commit) and estimate its
 * warehouse time with the job's recent durations: 0, or -1 (no plan or
 * no durations).  For `reload`'s report of what a deploy changed. */
int sched_plan_estimate(struct sched *s, const struct sched_req *rq,
			struct estimate *est, struct err *err);

/*
 * The idempotency proof (verify JOB PARTITION, backfill --verify, a
 * job's verify: true): before anything of a request commits, the job's
 * SQL runs for one partition twice in one warehouse transaction on the
 * executor's worker (exec_run.verify), the partition's content read
 * before and after each run, and the transaction is rolled back.  The
 * caller sets done and data at once (on the loop thread): done(data) is
 * called on the loop when the proof ended, its verdict logged and, for
 * a backfill's (sched_backfill), the request queued when it passed.
 */
struct sched_proof {
	struct exec_run run;   /* the verdict once done: failed, error,
				* verify_rows, verify_sum; run.cfg the
				* configuration it started with (held) */
	struct exec_part part; /* the partition proved */
	void (*done)(void *data);
	void *data;
	bool running;          /* the run is in flight */
	bool orphan;           /* released while it was */
	struct sched *s;
	/* a backfill waiting for the proof: its plan, queued (unless a dry
	 * run) when the proof passed, with the queue's answer */
	struct sched_backfill *bf;
	int rc;                /* 0, or -1 with err: the queue refused */
	struct err err;
};
/* Can job j be verified?  0, or -1 with err (exit 2, one line). */
int sched_proof_check(const struct config *cfg, int j, struct err *err);
/* Start the proof of job j on partition key: NULL with err when it
 * cannot start. */
struct sched_proof *sched_proof_start(struct sched *s, int j,
				      const char *key, struct err *err);
/* Did the proof pass: the second run left the partition as the first
 * did (rows and checksum)?  Once done. */
bool sched_proof_passed(const struct sched_proof *p);
/* The caller is done with p: freed now, or when its run ends (a
 * backfill's request is then not queued). */
void sched_proof_release(struct sched_proof *p);

/*
 * A backfill or rerun, whole: its partitions (rq.parts) checked against
 * the clock (nothing before its time, schedule.h), planned (filtered by
 * reprocess, expanded downstream), the budget fitted to the plan and the
 * request refused whole above it (budget.h BUDGET-1 and BUDGET-2, on the
 * estimate), then: a request that asks for the proof (verify, or its
 * job's verify: true unless a dry run) starts it and is answered from
 * proof once done (plan, est and the queued id in proof->bf); a dry run
 * stops with plan and est; any other is queued (id, 0 when nothing was
 * left to run).  0, or -1 with err (nothing queued).  Free with
 * sched_backfill_free.
 */
struct sched_backfill {
	struct sched_req rq;   /* the request; budget_s and budget_source
				* as fitted to the plan */
	bool dry_run;
	bool verify;           /* --verify */
	struct plan plan;
	struct estimate est;   /* a dry run's, or a budget's */
	int64_t id;
	struct sched_proof *proof; /* the proof in flight, or NULL */
};
int sched_backfill(struct sched *s, struct sched_backfill *bf,
		   struct err *err);
void sched_backfill_free(struct sched_backfill *bf);

/*
 * backfillctl mark (docs/mark.md): record the partitions of a job as
 * built without running them.  One request (stored as kind 'rerun'), its
 * partitions' items succeeded at once, each with a runs row that is a
 * mark (marked_by, and the note "marked succeeded by BY: REASON"), its
 * newest run and build, all in one transaction; then, as after any
 * landing, its downstream items (unless no_downstream) queue and what
 * failed inputs blocked elsewhere is released.  *request_id is the new
 * request's.  -1 with err when the store refused (nothing changed).
 */
/* The longest --reason a mark takes, in bytes (docs/mark.md): it is
 * kept whole in the runs' note "marked succeeded by USER: REASON". */
#define SCHED_MARK_REASON_MAX 1000
struct sched_mark_req {
	int job;
	const part_t *parts; /* ascending, distinct */
	size_t nparts;
	bool no_downstream;
	const char *by;      /* the operator */
	const char *reason;
};
int sched_mark(struct sched *s, const struct sched_mark_req *mk,
	       int64_t *request_id, struct err *err);

struct sched_progress {
	int64_t total, succeeded, failed, blocked, cancelled, running, queued;
	int64_t skipped; /* early cut-off: inputs unchanged (docs/cutoff.md) */
	int64_t elapsed_ms;
	bool finished; /* nothing queued or running any more */
};
/* 0 and *p, or -1 (EXIT_BAD_INPUT) when the request is unknown. */
int sched_progress(struct sched *s, int64_t request_id,
		   struct sched_progress *p, struct err *err);
/* Watch a request: cb on every change (the caller throttles) and once with
 * finished set, after which the watch is gone.  Returns a handle for
 * sched_unwatch, or NULL when the request is unknown or already finished
 * (then call sched_progress). */
typedef void (*sched_watch_cb)(void *data, const struct sched_progress *p);
void *sched_watch(struct sched *s, int64_t request_id, sched_watch_cb cb,
		  void *data);
void sched_unwatch(struct sched *s, void *handle);

int sched_cancel_request(struct sched *s, int64_t request_id, int64_t *dropped,
			 struct err *err);
/* Queue a request's failed, blocked and cancelled items again as the
 * same request (*queued: how many); refused (EXIT_BAD_INPUT) for an
 * unknown request, one with runs in flight or one with nothing to retry. */
int sched_retry_request(struct sched *s, int64_t request_id, int64_t *queued,
			struct err *err);
int sched_pause(struct sched *s, int job, bool pause, struct err *err);
/* Per-job live view for status. */
struct sched_job_view {
	bool paused;
	bool has_watermark;
	part_t watermark;
	const char *catchup; /* ok, refused, off */
	bool has_gap;
	part_t gap_from, gap_to;
	bool has_next_due;
	int64_t next_due; /* seconds */
	int64_t queued, running, blocked;
	int64_t succeeded, failed; /* partitions by their newest finished run */
	int64_t late;              /* partitions past the job's deadline */
	part_t late_oldest;        /* the oldest of them, when late > 0 */
	/* late_data sensor */
	bool has_sensor;
	bool has_last_check;
	int64_t last_check_ms, next_check; /* ms, seconds */
	int64_t found;
	const char *sensor_error;          /* NULL when the last check worked */
	/* reconcile: the newest partition whose reconcile checks passed
	 * (kept in the state store's job row) */
	bool has_reconciled;
	part_t reconciled;
	/* requests of the job stopped over budget since the daemon started */
	int64_t budget_stops;
};
void sched_job_view(struct sched *s, int job, struct sched_job_view *v);
struct store *sched_store(struct sched *s);
/*
 * The commands' reads of the state store (sched_query.c), each the
 * store.h function of the same name (its contract there) on the
 * scheduler's store: a command calls the scheduler, never the store
 * (tools/check_layout.py, MAY_USE).  A range of keys (keys_changed,
 * last_states) is of partitions: for the hours of a zone, whose keys do
 * not sort in time as text, it is read as the calendar's hull and the
 * keys outside it are dropped; the rows come in text order.
 */
int sched_read_audit_of(struct sched *s, int64_t request_id, store_audit_cb cb,
	void *data, struct err *err);
int sched_read_request_get(struct sched *s, int64_t id, char *job,
	size_t jobsz, bool *finished, struct err *err);
int sched_read_keys_built_by(struct sched *s, const char *job,
	const char *code_version, store_key_cb cb, void *data,
	struct err *err);
int sched_read_keys_changed(struct sched *s, const char *job,
	const char *code_version, const char *first_key, const char *last_key,
	store_key_cb cb, void *data, struct err *err);
int sched_read_run_lookup(struct sched *s, const char *job, const char *key,
	int attempt, struct store_run_info *out, struct err *err);
int sched_read_last_states(struct sched *s, const char *job,
	const char *first_key, const char *last_key, store_last_cb cb,
	void *data, struct err *err);
int sched_read_request_controls(struct sched *s, int64_t id, int *concurrency,
	bool *fail_fast, char *downstream, size_t dsz, struct err *err);
int sched_read_runs_open(struct sched *s, const char *job, int64_t request_id,
	const char *state, struct store_runs_cursor **out, struct err *err);
int sched_read_runs_page(struct store_runs_cursor *c, int max_rows,
	store_run_cb cb, void *data, struct err *err);
void sched_read_runs_close(struct store_runs_cursor *c);
int64_t sched_read_runs_max_id(const struct store_runs_cursor *c);
int sched_read_shards_of(struct sched *s, int64_t request, const char *job,
	const char *key, store_shard_cb cb, void *data, struct err *err);
int sched_read_shards_partial(struct sched *s, store_shard_cb cb, void *data,
	struct err *err);
int sched_read_over_budget(struct sched *s, int limit, store_budget_cb cb,
	void *data, struct err *err);
void sched_read_stats(struct sched *s, struct store_stats *out);
int sched_read_request_problems(struct sched *s, int64_t request_id,
	store_problem_cb cb, void *data, struct err *err);
/* Whether status found no request stopped over budget, none having
 * stopped since (then it need not read them again); set by status. */
bool sched_budget_none(struct sched *s);
void sched_set_budget_none(struct sched *s, bool none);
/* Is job's partition key running here?  Its attempt, request, and the
 * run id its execution's log is named by (run_id may be NULL). */
bool sched_partition_running(struct sched *s, const char *job, const char *key,
			     int *attempt, int64_t *request, int64_t *run_id);
/* Is it queued here (waiting to run)? */
bool sched_partition_queued(struct sched *s, const char *job, const char *key);
/* The loop, and the folder of command runs' logs (JOB/KEY.run-ID.log). */
uv_loop_t *sched_loop(struct sched *s);
const char *sched_log_dir(struct sched *s);
/* The executor runs go to (the proofs of --verify use it too). */
struct exec *sched_exec(struct sched *s);
/* Per-warehouse throttling (throttle.h): the scheduler starts no run on a
 * warehouse throttle_blocks() names.  NULL: none. */
struct throttle;
void sched_set_throttle(struct sched *s, struct throttle *th);
struct throttle *sched_throttle(struct sched *s);
/* Dispatch again at the end of this loop turn (a throttle lifted). */
void sched_poke(struct sched *s);
/* Interrupt the runs in flight on a warehouse and queue them again
 * without counting an attempt (a throttle above critical). */
void sched_requeue_warehouse(struct sched *s, const char *warehouse);
/* Whether a warehouse answered its last connection: 1 yes, -1 no (error
 * filled), 0 not tried yet; probed at start and after each reload. */
int sched_warehouse_state(struct sched *s, const char *name, char *error,
			  size_t errsz, int64_t *at_ms);
/* Downstream partitions older than their inputs, for `stale`: calls cb
 * for each with the newer inputs. */
struct stale_input {
	int job;
	part_t part;
	int64_t built_at;
};
typedef int (*sched_stale_cb)(int job, part_t part, bool built,
			      int64_t built_at, const struct stale_input *in,
			      size_t nin, void *data, struct err *err);
int sched_stale(struct sched *s, int only_job, sched_stale_cb cb, void *data,
		struct err *err);
/* How many partitions of job are stale now (0 for a job without
 * upstream, or when the store could not be read). */
int64_t sched_stale_count(struct sched *s, int job);

#endif
