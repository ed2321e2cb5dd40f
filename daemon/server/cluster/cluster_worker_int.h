/*
 * cluster_worker_int.h - what the pieces of the daemon's side of several
 * hosts share: the planner's offers, its own runs and cancels
 * (cluster_worker_plan.c), a worker's claims, runs and results
 * (cluster_worker_run.c), the loop turn, roles, takeover and the
 * lifecycle (cluster_worker.c).  The rules are at the top of
 * cluster_worker.c.
 */
#ifndef BACKFILLD_CLUSTER_WORKER_INT_H
#define BACKFILLD_CLUSTER_WORKER_INT_H

#include "cluster_worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "calendar.h"
#include "clock.h"
#include "config.h"
#include "exec.h"
#include "lease.h"
#include "log.h"
#include "scheduler.h"
#include "store.h"
#include "module.h"
#include "runresult.h"
#include "trend_hist.h"
#include "xalloc.h"

/* A claimed run on this node, or one the planner runs itself (own). */
struct local {
	struct exec_run run;
	struct exec_part *parts;
	struct wh_commit *commits; /* exactly-once commits, or NULL */
	struct exec_trend_hist *trend; /* trend checks' history, or NULL */
	size_t ntrend;
	int64_t id;   /* the work row (own: the run's id, no row) */
	bool done;    /* ended; its finish waits for the database */
	bool discard; /* fenced: its result would be refused */
	bool own;     /* the planner's own: no work row, result to direct */
	bool pending; /* own, not started: its runs rows are not committed */
	bool withdrawn; /* pending, cancelled: it ends unstarted */
	struct exec_run *direct; /* own: the scheduler's run (NULL: dropped) */
	struct cworker *w;
	struct local *next;
};

struct cworker {
	uv_loop_t *loop;
	struct sched *sched;
	struct store *store;
	struct exec *exec;
	char *log_dir;
	struct cworker_opts o;
	const struct cluster_driver *drv;
	struct cluster *c;
	struct sched_remote remote;

	struct exec_run **offered; /* planner: runs on offer or claimed */
	size_t noffered, nunsent;  /* the last nunsent are not offered yet */
	struct exec_run **cancels; /* planner: to end as not started */
	size_t ncancels;

	struct local *locals;
	int nlocal; /* running here (not done), own runs too */
	int ndropped; /* own runs whose result was dropped (deposed) */
	uv_timer_t pump; /* next loop turn: offer, claim, cancel */
	uv_timer_t takeover; /* a new planner reads the work in flight */
	uv_timer_t retry; /* finishes the store refused: try them again */
	uint64_t retry_ms; /* 0: the last finishes were recorded */
	/* an offer may wait for this node: set by bf_work, a role change,
	 * a claim that came back full or failed; cleared as a claim is
	 * sent (cworker_exchange) */
	bool offers_maybe;
	uint64_t short_at; /* uv_now of the last claim that came back short */
	bool taking_over;    /* ... and has not adopted it yet */
	bool adopting;       /* inside sched_start_adopt */
	bool planner_once;
	bool db_lost; /* the state store was lost since it was reached */
	bool closing;
	void (*closed_cb)(void *);
	void *closed_arg;
};

/* ---- shared by the pieces ------------------------------------------- */

/* Forget every run of the scheduler without recording anything (their
 * runs rows stay running, for the next planner). */
void cworker_forget_all(struct cworker *w);

/* The local runs ended while closing: close the cluster. */
void cworker_shut(struct cworker *w);

/* Arm the next loop turn's pump. */
void cworker_kick(struct cworker *w);

/* Delete recorded results' rows in the planner's open store
 * transaction. */
int cworker_store_forget(struct cworker *w, const int64_t *ids, size_t n,
	struct err *err);

/* Find and remove an offered run by id. */
struct exec_run *cworker_take_offered(struct cworker *w, int64_t id);

/* The history of the run's trend checks, read from the shared store on
 * this node (trend_hist.h). */
void cworker_trend(struct cworker *w, struct local *l);

/*
 * Start the own runs submitted since the last turn, their runs rows
 * committed first (sched_flush), so that a planner killed meanwhile
 * leaves them to the next one to queue again (sched_adopt.c).  A store
 * that cannot be written ends them unstarted, as it ends offers; one
 * cancelled or dropped meanwhile never starts.
 */
void cworker_start_own(struct cworker *w);

/* Record which node ran a run: its command log is there (logs). */
void cworker_ran_on(struct cworker *w, int64_t run_id, const char *node);

/* An own run ended: its result to the scheduler's run, as a worker's
 * result would come (cworker_finish_of, then cworker_result). */
void cworker_own_result(struct cworker *w, struct local *l);

/* Deposed or fenced: the own runs are cancelled and their results will
 * be dropped; the next planner queues them again. */
void cworker_drop_own(struct cworker *w, const char *why);

/* The scheduler's remote: run it here (the planner's share), or keep the
 * run and offer it next turn. */
void cworker_submit(void *data, struct exec_run *run);

/* The scheduler's remote: a run an earlier planner offered, adopted:
 * offered already (before the runs not sent yet). */
void cworker_adopt(void *data, struct exec_run *run);

/* The scheduler's remote: end the run as not started (next turn); an
 * own run is stopped, and its result ends it. */
void cworker_cancel(void *data, struct exec_run *run);

/* A run whose result came is no longer to be cancelled. */
void cworker_drop_cancel(struct cworker *w, const struct exec_run *run);

/*
 * End the cancelled runs (a cancelled request, a warehouse above its
 * critical load requeues them).  The results already in are read first.
 * One never offered, or withdrawn while still on offer, ends now: queued
 * again, no attempt counted.  One a node has claimed is asked to stop
 * (forget sets its cancel): its node stops it and records it cancelled,
 * and that result ends it here, so that its partition never runs twice
 * at once.  When the database cannot say, the next turn tries again.
 */
void cworker_end_cancels(struct cworker *w);

/*
 * Offer the runs recorded since the last turn, in the store transaction
 * that holds their runs rows: they commit together, so an offer never
 * names a run the state store does not hold (a takeover adopts by them,
 * adopt.h).  A store that cannot be written (SCHED-7) ends them unoffered.
 */
void cworker_offer(struct cworker *w);

/* Decode a worker's result (runresult.h) into run. */
void cworker_decode(const char *text, struct exec_run *run);

/* done_cb: read the results, record them, then delete their rows. */
void cworker_collect(void *data);

/* Unlink and free a local run. */
void cworker_local_free(struct cworker *w, struct local *l);

/* A local run's result as the text the planner decodes (runresult.h). */
char *cworker_encode(const struct exec_run *run);

/*
 * One loop turn's exchange with the work table, one statement: finish
 * the runs ended since the last (a finish the database did not take is
 * tried again next time), and claim what this node may run while it has
 * room (max_concurrency).  A refused finish (this node was declared dead
 * meanwhile) is dropped: its run was queued again.
 */
void cworker_exchange(struct cworker *w);

/* A claimed run ended on the executor: its finish goes with the next
 * exchange (next loop turn, or now when the node closes).  An own run's
 * result goes to the scheduler now, unless this node is no longer the
 * planner (dropped: it writes nothing). */
void cworker_run_done_cb(struct exec_run *run);

/* Start one claimed run here. */
void cworker_start(struct cworker *w, const struct cluster_work *x);

#endif
