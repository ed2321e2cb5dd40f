/*
 * cluster_pg_int.h - what the pieces of several hosts on PostgreSQL share
 * (inside the backfilld-pg module; the daemon sees cluster.h's driver):
 * the connection, its statements and its events (cluster_pg_conn.c),
 * registration, heartbeat, lease, reaping, forwards and the driver
 * (cluster_pg.c), the work table and the mailbox (cluster_pg_work.c).
 * The rules are at the top of cluster_pg.c.
 */
#ifndef BACKFILLD_CLUSTER_PG_INT_H
#define BACKFILLD_CLUSTER_PG_INT_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "cluster.h"
#include "lease.h"
#include "pgsql.h"
#include "xalloc.h"

#define CPG_PASSWORD_MAX 4096
#define CPG_KEY_SEP "\x1f" /* between the keys of one run in an array */
#define CPG_MAIL_KEEP "5 minutes" /* answered or abandoned mail, at most */
#define CPG_EARLY 16 /* answers that came before their forward returned */

extern const struct cluster_driver cluster_pg_driver;
/* A request forwarded to the planner, waiting for its answer. */
struct cpg_fwd {
	int64_t id;           /* mailbox id */
	int64_t deadline;     /* monotonic ms */
	int64_t timeout_ms;
	cluster_reply_cb *cb;
	void *arg;
	bool answered;        /* bf_reply seen: fetch it */
	int64_t generation;   /* the lease's at the first heartbeat after
			       * it was sent, 0 before */
	struct cpg_fwd *next;
};

struct cluster {
	uv_loop_t *loop;
	struct cluster_cbs cbs;
	char *conninfo;
	char *password_file;
	char node[LEASE_NAME_MAX];
	char config_hash[17];
	int64_t lease_s;
	_Atomic int64_t *alive_until; /* cluster_opts', or NULL */
	int running;
	int64_t *taken;       /* planner: mailbox ids taken, not answered */
	size_t ntaken;

	PGconn *pg;
	uv_poll_t *poll;      /* on the socket of pg; closed with it */
	uv_timer_t beat;      /* heartbeat, every third of the lease */
	uv_timer_t deadline;  /* the planner's local deadline */
	/* delivers the events below on the next loop turn, never inline: an
	 * idle handle, not a 0 ms timer, so that a stream of events (each
	 * callback's statements drain more notifications) cannot hold the
	 * loop inside one pass of its timers, away from the heartbeat */
	uv_idle_t kick;
	bool listen_planner;  /* LISTEN bf_done, bf_mail: planner only */
	uv_timer_t fwd_timer; /* the earliest forwarded request's timeout */
	int nclosing;
	void (*closed_cb)(void *);
	void *closed_arg;
	bool closing;
	bool resigned;        /* never take the lease again (resign) */

	int64_t incarnation;  /* 0: not registered */
	enum cluster_role role;
	int64_t generation;   /* while planner */
	int64_t forgotten;    /* planner: work rows deleted since its vacuum */
	int64_t renew_sent;   /* monotonic ms of the last renewal sent */
	char planner[LEASE_NAME_MAX];
	char prev_planner[LEASE_NAME_MAX]; /* the lease's holder before */
	int live_nodes;        /* at the last heartbeat; 0: not known */
	bool db_ok;
	int64_t db_lost_ms;
	char db_error[ERR_MSG_MAX];

	/* events for the kick */
	bool ev_work, ev_done, ev_mail, ev_role, ev_db;
	int64_t ev_fenced_old; /* > 0: fenced_cb owed */
	int64_t fenced_at;     /* monotonic ms of the last fencing */
	struct cpg_fwd *fwd;
	int64_t *cancel;          /* claimed runs to stop, for cancel_cb */
	size_t ncancel;
	int64_t early[CPG_EARLY]; /* bf_reply ids no forward knew yet */
	size_t nearly;
	unsigned prepared;     /* bit i: cpg_prep i prepared on pg */
};

/* The statements of the loop's hot path, prepared once per connection. */
enum cpg_prep {
	CPG_P_OFFER,
	CPG_P_EXCHANGE,
	CPG_P_HEARTBEAT,
	CPG_P_RESULTS,
	CPG_P_FORGET,
};
#define CPG_MS(x) "(extract(epoch from " x ") * 1000)::bigint"

/* ---- shared by the pieces ------------------------------------------- */

/* An int64 column (NULL: 0). */
static inline int64_t
cpg_i64(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return 0;
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* A boolean column (NULL: false). */
static inline bool
cpg_bool(const PGresult *res, int row, int col)
{
	return !PQgetisnull(res, row, col) &&
	       PQgetvalue(res, row, col)[0] == 't';
}

/* A text column into a fixed buffer (NULL: ""). */
static inline void
cpg_str(const PGresult *res, int row, int col, char *buf, size_t len)
{
	snprintf(buf, len, "%s", PQgetisnull(res, row, col) ? "" :
		 PQgetvalue(res, row, col));
}

/* A text column, allocated, or NULL. */
static inline char *
cpg_dup(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL :
	       xstrdup(PQgetvalue(res, row, col));
}

/* Arm the forward timer at the earliest deadline. */
void cpg_fwd_arm(struct cluster *c);

/* Listen for results and requests while planner only (workers would
 * only be woken by them); after starting to, collect once what came
 * before. */
void cpg_listen(struct cluster *c);

/* Deliver what happened, in order: database, fencing, role, work. */
void cpg_kick_cb(uv_idle_t *t);

/* Refuse a planner call on a node that is not planner. */
int cpg_need_planner(struct cluster *c, struct err *err);

/* Milliseconds on the monotonic clock. */
int64_t cpg_mono_ms(void);

/* One line for the daemon's log. */
void __attribute__((format(printf, 3, 4))) cpg_log(struct cluster *c, int prio,
	const char *fmt, ...);

/* Split "a\x1fb" into an allocated array of keys. */
void cpg_split_keys(const char *s, char ***keys, size_t *n);

/* Have the kick deliver the pending events on the next loop turn. */
void cpg_kick(struct cluster *c);

/* LEASE-1: a planner write the fence refused (the lease moved on): this
 * node a worker from now on, and -1 with err "deposed: the lease moved
 * on" (and "; why" when why is not NULL), EXIT_WORK_FAILED. */
int cpg_deposed(struct cluster *c, const char *why, struct err *err);
/* Change role (events follow through the kick). */
void cpg_set_role(struct cluster *c, enum cluster_role role,
	int64_t generation);

/* Free a closed poll handle. */
void cpg_poll_closed_cb(uv_handle_t *h);

/* Drop the connection: the database is lost until the next heartbeat
 * connects again.  Lost work: none (claims stand until reaped). */
void cpg_drop(struct cluster *c, const char *why);

/* cpg_exec_p of a statement not prepared. */
PGresult *cpg_exec(struct cluster *c, const char *sql, int n,
	const char *const *vals, const int *lens, const int *formats,
	struct err *err);

/* cpg_exec_p with text parameters only. */
PGresult *cpg_qp(struct cluster *c, int prep, const char *sql, int n,
	const char *const *vals, struct err *err);

/* cpg_exec with text parameters only. */
PGresult *cpg_q(struct cluster *c, const char *sql, int n,
	const char *const *vals, struct err *err);

/* Connect (without blocking longer than the call bound) and LISTEN. */
int cpg_connect(struct cluster *c, struct err *err);

/* Planner: offer runs, fenced by the lease. */
int cpg_offer(struct cluster *c, const struct cluster_offer *o, size_t n,
	struct err *err);

/* Planner: the done rows. */
int cpg_results(struct cluster *c, size_t max, struct cluster_work **out,
	size_t *n, struct err *err);

/* Planner: delete rows (results recorded, offers withdrawn), fenced. */
int cpg_forget(struct cluster *c, const int64_t *ids, size_t n,
	struct err *err);

/* Planner: ids of the rows offered or claimed. */
int cpg_in_flight(struct cluster *c, int64_t **ids, size_t *n,
	struct err *err);

/* Planner: every row of the work table, with its state. */
int cpg_work_all(struct cluster *c, struct cluster_work **out, size_t *n,
	struct err *err);

/* Planner stopping: its own runs in flight become its claims (claim_own
 * in cluster.h), fenced by the lease. */
int cpg_claim_own(struct cluster *c, const struct cluster_offer *o, size_t n,
	struct err *err);

/* Planner stopping: release the lease, fenced, and keep off it. */
void cpg_resign(struct cluster *c);

/* Worker: claim offered runs of the given jobs. */
int cpg_claim(struct cluster *c, const char *const *jobs, size_t njobs,
	size_t max, struct cluster_work **out, size_t *n, struct err *err);

/* Worker: record a claimed run's end, if the claim still stands. */
int cpg_finish(struct cluster *c, int64_t id, const struct cluster_result *r,
	struct err *err);

/*
 * Worker: one statement finishes the runs of f (each only if its claim
 * still stands: claimed_by, incarnation, state) and claims up to max
 * offered runs (as cpg_claim).  Rows come back tagged by the last column:
 * 0 the notification (one row), 1 a finish recorded (its id), 2 a claim
 * (CPG_WORK_COLS).  The claim sees the rows as they were before the
 * statement: the runs it finishes are claimed, not offered, so the two
 * parts cannot meet.  "id = ANY" beside the join lets the finish use the
 * primary key (the planner does not know how short the arrays are).
 */
int cpg_finish_claim(struct cluster *c, struct cluster_finish *f, size_t nf,
	const char *const *jobs, size_t njobs, size_t max,
	struct cluster_work **out, size_t *n, struct err *err);

/* Any node: the nodes table. */
int cpg_nodes(struct cluster *c, struct cluster_node **out, size_t *n,
	int64_t *now_ms, struct err *err);

/* Non-planner: post a request for the planner. */
int cpg_forward(struct cluster *c, const void *req, size_t len,
	int64_t timeout_ms, cluster_reply_cb *cb, void *arg, struct err *err);

/* Planner: the oldest unanswered request not taken yet (one taken and
 * held, a forwarded wait, is not taken again). */
int cpg_mail_take(struct cluster *c, struct cluster_mail **out,
	struct err *err);

/* Planner: answer request id. */
int cpg_mail_answer(struct cluster *c, int64_t id, const void *resp,
	size_t len, struct err *err);

/* Free rows from claim or results. */
void cpg_work_free(struct cluster_work *w, size_t n);

/* Free a request taken from the mailbox. */
void cpg_mail_free(struct cluster_mail *m);

#endif
