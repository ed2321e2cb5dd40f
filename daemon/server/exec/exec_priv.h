/*
 * exec_priv.h - the executor's own state, shared by the files that make
 * it up (exec.c's top comment states the stop rules and the lock order
 * they all follow):
 *
 *   exec.c         the loop thread: a flight's life from exec_submit to
 *                  done_cb (timer, stop, wake drain), the executor's
 *                  creation, resize and close
 *   exec_worker.c  the worker threads: the queue they take runs from,
 *                  and their handoffs to the loop (started, done, a
 *                  shard's publish)
 *   exec_conn.c    the warehouse drivers (loaded on demand) and each
 *                  worker's cache of open connections
 *   exec_sql.c     a SQL run: the transaction, a batch, a proof, a query,
 *                  and backfilld_commits around them
 *   exec_check.c   checks and reconciles inside a SQL run
 *   exec_stage.c   ClickHouse stage partitions kept until recorded, then
 *                  dropped on a worker
 *   exec_cmd.c     a command run: spawn, environment, log file, exit
 *
 * exec_wap.c (a run on ClickHouse) sees exec_int.h only, not this.
 */
#ifndef BACKFILLD_EXEC_PRIV_H
#define BACKFILLD_EXEC_PRIV_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <uv.h>

#include "config.h"
#include "exec.h"
#include "exec_int.h"
#include "wake.h"
#include "wh.h"

enum exec_stop { EXEC_STOP_NONE, EXEC_STOP_TIMEOUT, EXEC_STOP_CANCEL };

/* Where a SQL run is; guarded by ex->lock. */
enum exec_state { EXEC_QUEUED, EXEC_RUNNING, EXEC_DONE,
		  EXEC_DECK /* handed ahead: queued when deck_of ends */ };

struct exec_worker;

/* The executor's lists of runs (<sys/queue.h>). */
TAILQ_HEAD(exec_flight_tailq, exec_flight);
LIST_HEAD(exec_flight_list, exec_flight);

/* A run in flight: exec_run.priv. */
struct exec_flight {
	struct exec *ex;
	struct exec_run *run;
	bool is_cmd;
	atomic_int stop;             /* enum exec_stop */

	/* ex->lock */
	enum exec_state state;
	struct exec_worker *worker;  /* while EXEC_RUNNING */
	TAILQ_ENTRY(exec_flight) qlink; /* ex->queue or ex->done */
	struct exec_flight *deck;       /* the run handed ahead after it */
	struct exec_flight *deck_of;    /* EXEC_DECK: the run it follows */
	LIST_ENTRY(exec_flight) rlink;  /* ex->running */
	TAILQ_ENTRY(exec_flight) slink; /* ex->started, when on_slist */
	bool on_slist;

	/* loop thread only */
	LIST_ENTRY(exec_flight) alink;  /* ex->all */
	uv_timer_t timer;
	uv_process_t proc;
	bool finishing;              /* the timer is closing: done_cb follows */
	bool spawned;
	bool exited;
	char log_path[PATH_MAX];

	bool staged;                 /* published, stages kept (exec_wap.c) */

	/* worker thread only: each reconcile's source value of each part,
	 * [part * job->nreconciles + k], read before the transaction */
	struct exec_recon_src *recon;
};

struct exec_recon_src {
	bool ok;                /* the source answered */
	bool has;               /* ... with a number (not NULL) */
	double v;
	char err[ERR_MSG_MAX];  /* !ok: why */
};

/* One open warehouse connection of a worker. */
/* The (job, request) pairs whose first run on a connection pruned
 * backfilld_commits (wh_commits.h, COMMITS-3), the oldest replaced first. */
#define EXEC_PRUNED 8

struct exec_conncache {
	char *name;
	char *where;  /* sqlite path or postgres conninfo */
	struct wh_conn *conn;
	bool commits_ready; /* backfilld_commits is there (wh_commits.h) */
	struct {
		char *job;
		int64_t request;
	} pruned[EXEC_PRUNED];
	unsigned npruned;   /* pairs noted so far (next slot: % EXEC_PRUNED) */
	/* ClickHouse: the jobs whose partition key passed exec_wap_key on
	 * this connection, as "job table column grain" (exec_conn_wap) */
	char **wap_checked;
	size_t nwap_checked;
};

/*
 * Stages to drop (ClickHouse, exec_wap.c WAP-2): the partitions a
 * recorded run published, or, at start, a sweep of the marks no open
 * request names.  Kept on the loop thread (ex->phead) until the caller
 * has committed the run's record (exec_release_stages), then queued for
 * the workers (ex->uhead), which take them before runs, all at once,
 * once they are due (exec_unstage_due: at shutdown, for a sweep, once
 * EXEC_RELEASE_PARTS partitions wait, once the oldest has waited
 * EXEC_RELEASE_MAX_MS, or once the executor has had no run for
 * EXEC_RELEASE_IDLE_MS since the newest was queued), each table's
 * partitions dropped together (docs/clickhouse.md, "Round trips").  A
 * partition of
 * a run queued or running then is skipped (that run clears it first, and
 * its own record releases it), and a run of a partition being dropped
 * waits for the drop (ex->ubusy): a drop never meets a run's own stage.
 */
struct exec_unstage {
	struct exec_unstage *next;
	struct config *cfg;          /* a reference */
	const struct job_def *job;   /* inside cfg */
	struct exec_part *parts;     /* NULL for a sweep */
	size_t nparts;
	int64_t *keep;               /* a sweep: the open requests */
	size_t nkeep;
	struct exec_done *done;      /* ... and what they recorded */
	size_t ndone;
	uint64_t queued;             /* when queued (monotonic ns) */
};

#define EXEC_RELEASE_PARTS 256
#define EXEC_RELEASE_MAX_MS 30000
#define EXEC_RELEASE_IDLE_MS 1000

/* A shard's publish told to the loop (exec_shard_published), the worker
 * waiting on ex->cond until done. */
struct exec_shard_note {
	struct exec_shard_note *next;
	struct exec_flight *fl;
	const struct exec_shard_publish *pub;
	bool done;
	int rc;
	struct err err;
};

struct exec_worker {
	struct exec *ex;
	uv_thread_t tid;
	struct exec_flight *taken;   /* ex->lock: the run it runs */
	uv_mutex_t lock;           /* current and conn, for interrupts */
	struct exec_flight *current;
	struct wh_conn *conn;
	struct exec_conncache *cache; /* this worker's thread only */
	size_t ncache;
};

struct exec {
	uv_loop_t *loop;
	struct wake wake;

	uv_mutex_t lock;
	uv_cond_t cond;
	struct exec_flight_tailq queue;    /* queued SQL runs */
	struct exec_flight_tailq done;     /* finished by a worker */
	struct exec_flight_tailq started;  /* started, not yet told */
	struct exec_unstage *uhead, *utail; /* stages to drop */
	size_t upending;                   /* their partitions */
	struct exec_unstage *ubusy;        /* ... being dropped */
	struct exec_flight_list running;   /* taken by a worker */
	struct exec_shard_note *nhead;     /* shards' publishes to record */
	bool quit;

	/* open warehouse connections over all workers, by warehouse name
	 * (ex->lock): a PostgreSQL warehouse keeps at most max_connections */
	struct exec_conncount {
		char *name;
		int open;
		int state;         /* 1 reachable, -1 not, 0 not tried yet */
		char error[256];   /* why not */
		int64_t at_ms;     /* when last tried */
	} *conncount;
	size_t nconncount;

	/* loop thread only */
	struct exec_worker **workers;
	int nworkers;
	struct exec_flight_list all;       /* every run in flight */
	struct exec_unstage *phead;        /* loop: waiting for the record */
	_Atomic int64_t alive_until;       /* several hosts (exec_fence_clock) */
	int nrunning;
	bool closing;
	bool close_done;
	void (*closed_cb)(void *data);
	void *closed_data;
};

/* exec.c: mark a run failed with a one-line message. */
void exec_fail(struct exec_run *run, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* exec.c: a failed run that was being stopped reports why it was. */
void exec_result_stop(struct exec_flight *fl);
/* exec.c: finish a run whose result is final (done_cb follows the
 * timer's close). */
void exec_finish(struct exec_flight *fl);
/* exec.c: arm a run's timeout, if it has one. */
void exec_arm_timeout(struct exec_flight *fl);
/* exec.c: fl ends (or leaves the queue): the run handed ahead after it,
 * if any, goes to the head of the queue; ex->lock held. */
void exec_deck_release(struct exec *ex, struct exec_flight *fl);

/* exec_worker.c: a worker thread's body (arg: its struct exec_worker). */
void exec_worker_main(void *arg);
/* exec_worker.c: append fl to the started list; ex->lock held. */
void exec_started_add(struct exec *ex, struct exec_flight *fl);
/* exec_worker.c: the shards' publishes the workers wait on, recorded
 * (loop thread). */
void exec_shard_notes(struct exec *ex);

/* exec_conn.c: count a connection to warehouse name opened (+1) or
 * closed (-1); how many are open now. */
int exec_conn_count(struct exec *ex, const char *name, int delta);
/* exec_conn.c: the worker's open connection to wh, opened if needed. */
struct wh_conn *exec_conn_get(struct exec_worker *w,
			      const struct warehouse_def *wh,
			      struct err *err);
/* exec_conn.c: close one cached connection and forget it. */
void exec_conn_drop(struct exec_worker *w, struct wh_conn *conn);
/* exec_conn.c: has jd's partition key passed exec_wap_key on conn (op 0);
 * op 1 records it, op -1 forgets it. */
bool exec_conn_wap(struct exec_worker *w, struct wh_conn *conn,
		   const struct job_def *jd, int op);
/* exec_conn.c: backfilld_commits is there on conn (once a connection). */
int exec_conn_commits(struct exec_worker *w, struct wh_conn *conn,
		      struct err *err);
/* exec_conn.c: whether this run is the first of its (job, oldest
 * request) on conn, which then prunes backfilld_commits; noted. */
bool exec_commits_prune_due(struct exec_worker *w, struct wh_conn *conn,
			    const struct exec_run *run);

/* exec_sql.c: one SQL run on worker w. */
void exec_sql_run(struct exec_worker *w, struct exec_flight *fl);

/* exec_check.c: every reconcile's source value of every part, before the
 * run's transaction (into fl->recon). */
void exec_recon_sources(struct exec_worker *w, struct exec_flight *fl);
/* exec_check.c: after part i's write, every reconcile's target against
 * its source: 0 passed, -1 one failed, -2 one could not run. */
int exec_reconciles(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		    const struct wh_param *params, size_t nparams,
		    struct err *err);

/* exec_stage.c: release a queued drop (exec_unstage_queue). */
void exec_unstage_free(struct exec_unstage *u);
/* exec_stage.c: whether run fl must wait for a drop of one of its
 * partitions; ex->lock held. */
bool exec_flight_waits(struct exec *ex, const struct exec_flight *fl);
/* exec_stage.c: whether the stages to drop are due now; else *wait_ns
 * is how long until they are (0: until something changes); ex->lock
 * held. */
bool exec_unstage_due(struct exec *ex, uint64_t *wait_ns);
/* exec_stage.c: take every stage to drop and drop them, each table's
 * together; ex->lock held on entry and on return (released meanwhile). */
void exec_unstage_take(struct exec_worker *w);
/* exec_stage.c: a run that kept its stages is over (loop thread). */
void exec_unstage_later(struct exec *ex, const struct exec_run *run);

/* exec_cmd.c: spawn a command run in its own session. */
void exec_cmd_start(struct exec_flight *fl);
/* exec_cmd.c: kill a command's process group, if still ours to kill. */
void exec_cmd_kill(struct exec_flight *fl);

#endif
