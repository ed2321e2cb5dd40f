/*
 * cluster.h - several hosts on one PostgreSQL state store: the daemon's
 * side of the coordination (docs/several-hosts.md).  No libpq here: the
 * implementation is cluster_pg.c inside the PostgreSQL module
 * (backfilld-pg.so), reached through `cluster_pg_driver`, which
 * cluster_driver_load() looks up with module_symbol() (module.h).
 *
 * What it does, on the daemon's loop, on a connection of its own:
 *  - registers this node (a new incarnation each start) and heartbeats
 *    every third of the lease, on the database's clock;
 *  - takes, renews, loses and releases the lease that makes one node the
 *    planner (lease.h states the rules); role_cb says when this node
 *    starts or stops being planner;
 *  - reaps dead nodes while planner: their claimed work becomes done,
 *    failed and `interrupted: node N stopped`, which the planner records
 *    like any result (and queues again without counting an attempt);
 *  - carries work: the planner offers runs, every node claims some
 *    (FOR UPDATE SKIP LOCKED, one statement) and finishes them (a
 *    conditional update that a node declared dead meanwhile cannot make);
 *  - carries control requests from nodes to the planner (the mailbox) and
 *    the answers back;
 *  - wakes the other side with NOTIFY, listened for with uv_poll on the
 *    connection's socket: nothing polls the database faster than the
 *    heartbeat.
 *
 * Every call is synchronous on the loop thread and bounded: a statement
 * the server has not answered within CLUSTER_CALL_MS (or a third of the
 * lease, if less) fails, the connection is dropped, db_cb says the
 * database is lost, and the next heartbeat tries to connect again.  While
 * the database is lost no claim succeeds, so no run starts without a
 * durable claim; a planner that cannot renew stops being one when its
 * lease could have run out (lease.h, LEASE-2).
 *
 * Callbacks run on the loop thread, never from inside a cluster call.
 */
#ifndef BACKFILLD_CLUSTER_H
#define BACKFILLD_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "err.h"
#include "lease.h"

#define CLUSTER_CALL_MS 2000      /* one statement, at most */
#define CLUSTER_MAIL_MAX (16 << 20) /* a forwarded request or answer */

struct cluster;

enum cluster_role {
	CLUSTER_OFFLINE, /* no database: nothing is claimed, nothing planned */
	CLUSTER_WORKER,
	CLUSTER_PLANNER,
};

/* What the daemon tells the cluster at open. */
struct cluster_opts {
	const char *conninfo;      /* state: postgres: */
	const char *password_file; /* or NULL */
	const char *node;          /* this node's name */
	int64_t lease_s;
	const char *config_hash;   /* config->cluster_hash */
	/* Or NULL.  After each heartbeat that found this node alive: until
	 * when (CLOCK_MONOTONIC ms) it cannot have been declared dead, less a
	 * third of the lease (the send time of the heartbeat plus two thirds
	 * of the lease); 1 once it was declared dead.  Any thread reads it:
	 * the ClickHouse publish is fenced by it (exec_fence_clock). */
	_Atomic int64_t *alive_until;
};

/* One run on offer, as the planner describes it. */
struct cluster_offer {
	int64_t id;           /* the run's id in the state store */
	int64_t request;      /* 0: none (a scheduled run) */
	const char *job;
	const char *const *keys; /* its partitions' keys: one, or a batch */
	size_t nkeys;
	int attempt;          /* 1 for the first */
};

/* A row of the work table: a claim (cluster_claim) or a result
 * (cluster_results). */
struct cluster_work {
	int64_t id;
	int64_t request;
	char job[LEASE_NAME_MAX];
	char **keys;
	size_t nkeys;
	int attempt;
	int64_t generation;  /* of the planner that offered it */
	int64_t claimed_ms;  /* database clock */
	char state[8];       /* offered, claimed, done (work_rows only) */
	/* results */
	char claimed_by[LEASE_NAME_MAX];
	bool failed;
	bool interrupted;    /* its node was declared dead: requeue it */
	char *error;         /* one line, or NULL */
	char *result;        /* what the worker recorded (JSON), or NULL */
};

/* How a worker's run ended, for cluster_finish. */
struct cluster_result {
	bool failed;
	const char *error;  /* or NULL */
	const char *result; /* JSON the planner decodes, or NULL */
};

/* One finish of a batch (finish_claim): ok is filled, 1 recorded, 0
 * refused (as finish). */
struct cluster_finish {
	int64_t id;
	struct cluster_result r;
	int ok;
};

/* One node, for status. */
struct cluster_node {
	char name[LEASE_NAME_MAX];
	int64_t incarnation;
	int64_t last_seen_ms;
	int64_t started_ms;
	int running;
	char config_hash[17];
	char role[16];       /* planner, worker, stopped */
};

/* This node's own view, for status and metrics. */
struct cluster_state {
	enum cluster_role role;
	int64_t generation;   /* while planner */
	int64_t incarnation;
	bool db_ok;
	int64_t db_lost_ms;   /* wall clock, when db_ok is false */
	char db_error[ERR_MSG_MAX];
	char planner[LEASE_NAME_MAX]; /* who holds the lease, "" if nobody */
	/* while planner: who held the lease before this node took it ("" when
	 * it was released, or never held) */
	char prev_planner[LEASE_NAME_MAX];
	int live_nodes; /* at the last heartbeat, this one too; 0: not known */
};

struct cluster_cbs {
	/* This node became planner under `generation`, or stopped being
	 * one (role CLUSTER_WORKER or CLUSTER_OFFLINE, generation 0). */
	void (*role_cb)(void *data, enum cluster_role role, int64_t generation);
	/* Work is on offer (a worker claims). */
	void (*work_cb)(void *data);
	/* Results are in (the planner collects them). */
	void (*done_cb)(void *data);
	/* Control requests wait in the mailbox (the planner answers). */
	void (*mail_cb)(void *data);
	/* This node was declared dead while it ran: forget (and cancel) every
	 * claimed run now; their results would be refused anyway.  The
	 * cluster registers again once this returns. */
	void (*fenced_cb)(void *data, int64_t old_incarnation,
			  int64_t new_incarnation);
	/* The database was lost (ok false, why says why) or is back. */
	void (*db_cb)(void *data, bool ok, const char *why);
	/* The planner asks to stop claimed run `id` (its request was
	 * cancelled): cancel it, then finish it as usual.  Seen at the
	 * heartbeat. */
	void (*cancel_cb)(void *data, int64_t id);
	/* One line for the daemon's log: prio 3 err, 4 warning, 5 notice,
	 * 6 info, 7 debug. */
	void (*log_cb)(void *data, int prio, const char *line);
	void *data;
};

/* The answer to a forwarded control request. */
typedef void cluster_reply_cb(void *arg, int status, const void *resp,
			      size_t len, const char *why);

/* One control request taken from the mailbox (planner). */
struct cluster_mail {
	int64_t id;
	char from[LEASE_NAME_MAX];
	void *req;
	size_t len;
};

struct cluster_driver {
	/* Connect, register this node (a new incarnation; runs claimed by
	 * its previous process fail as interrupted) and start the heartbeat.
	 * A database that cannot be reached is not an error: the node starts
	 * OFFLINE and db_cb follows when it connects. */
	int (*open)(uv_loop_t *loop, const struct cluster_opts *opts,
		    const struct cluster_cbs *cbs, struct cluster **out,
		    struct err *err);
	/* Release the lease if held, mark the node stopped, close the
	 * connection and the loop handles; closed_cb follows (then free). */
	void (*close)(struct cluster *c, void (*closed_cb)(void *), void *arg);
	void (*free)(struct cluster *c);
	/* The figures the next heartbeat writes. */
	void (*set_running)(struct cluster *c, int running);
	void (*set_config_hash)(struct cluster *c, const char *hash);
	/* A reloaded lease: the heartbeat moves to a third of it. */
	void (*set_lease)(struct cluster *c, int64_t lease_s);
	void (*state)(const struct cluster *c, struct cluster_state *st);

	/* Planner: offer runs (one statement, fenced by the generation: 0
	 * rows when deposed meanwhile, then -1 and role_cb follows). */
	int (*offer)(struct cluster *c, const struct cluster_offer *o, size_t n,
		     struct err *err);
	/* Planner: the done rows (results and reaped claims), at most max. */
	int (*results)(struct cluster *c, size_t max, struct cluster_work **out,
		       size_t *n, struct err *err);
	/* Planner: delete done rows once their results are recorded, and
	 * offers withdrawn (a cancelled request). */
	int (*forget)(struct cluster *c, const int64_t *ids, size_t n,
		      struct err *err);
	/* Planner: ids of the rows still offered or claimed. */
	int (*in_flight)(struct cluster *c, int64_t **ids, size_t *n,
			 struct err *err);
	/* Planner: every row, state filled (a new planner adopts the runs
	 * they carry: docs/several-hosts.md). */
	int (*work_rows)(struct cluster *c, struct cluster_work **out,
			 size_t *n, struct err *err);
	/* Planner stopping while others live: the runs it runs itself
	 * (never offered) become its own claims, so that the next planner
	 * adopts them: one statement inserts their rows as claimed by this
	 * node under its incarnation, fenced by the generation (-1 when
	 * deposed meanwhile, or on error: none is inserted). */
	int (*claim_own)(struct cluster *c, const struct cluster_offer *o,
			 size_t n, struct err *err);
	/* Planner now: the role, and a lease that cannot have run out on
	 * this node's clock (lease.h, LEASE-2); when it could have, the node
	 * stops being planner here (role_cb follows). */
	bool (*planner_now)(struct cluster *c);
	/* Planner stopping while others live: release the lease now and
	 * never take it again; what is offered or claimed stays for the
	 * next planner.  role_cb follows. */
	void (*resign)(struct cluster *c);

	/* Worker: claim up to max offered runs of the given jobs (those this
	 * node may run); *n may be 0. */
	int (*claim)(struct cluster *c, const char *const *jobs, size_t njobs,
		     size_t max, struct cluster_work **out, size_t *n,
		     struct err *err);
	/* Worker: record how a claimed run ended.  Returns 1 recorded, 0
	 * refused (declared dead meanwhile: the run was reaped and queued
	 * again; discard the result), -1 on error (the database: try again
	 * at the next heartbeat, the claim stands until then). */
	int (*finish)(struct cluster *c, int64_t id,
		      const struct cluster_result *r, struct err *err);

	/* Worker: finish runs (as finish, each f[i].ok filled) and claim up
	 * to max offered runs of the given jobs (as claim), in one statement:
	 * a loop turn's exchange with the work table.  -1: neither happened. */
	int (*finish_claim)(struct cluster *c, struct cluster_finish *f,
			    size_t nf, const char *const *jobs, size_t njobs,
			    size_t max, struct cluster_work **out, size_t *n,
			    struct err *err);

	/* Any node: the nodes table, and now on the database's clock. */
	int (*nodes)(struct cluster *c, struct cluster_node **out, size_t *n,
		     int64_t *now_ms, struct err *err);
	/* Non-planner: send a control request to the planner; cb gets the
	 * answer, or status -1 and why when no planner answered within
	 * timeout_ms (or the database is lost). */
	int (*forward)(struct cluster *c, const void *req, size_t len,
		       int64_t timeout_ms, cluster_reply_cb *cb, void *arg,
		       struct err *err);
	/* Planner: take the oldest unanswered request (*out NULL: none). */
	int (*mail_take)(struct cluster *c, struct cluster_mail **out,
			 struct err *err);
	/* Planner: answer request id. */
	int (*mail_answer)(struct cluster *c, int64_t id, const void *resp,
			   size_t len, struct err *err);

	void (*work_free)(struct cluster_work *w, size_t n);
	void (*mail_free)(struct cluster_mail *m);
};

/* The role's name: offline, worker, planner. */
const char *cluster_role_name(enum cluster_role r);
/* cluster_pg_driver from the PostgreSQL module (module.h), or NULL with
 * why filled. */
const struct cluster_driver *cluster_driver_load(char *why, size_t len);

#endif
