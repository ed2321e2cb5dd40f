/*
 * cluster_pg.c - several hosts on one PostgreSQL database: node
 * registration, heartbeat and lease, the work table, reaping and the
 * mailbox (struct cluster_driver, cluster.h), through libpq, inside the
 * PostgreSQL module; the daemon finds it as `cluster_pg_driver`.
 *
 * One connection of its own, used on the loop thread.  Statements are
 * sent with PQsendQueryParams on a non-blocking connection and waited for
 * with poll() up to the call bound (cpg_call_ms): the loop stalls at most
 * that long, and only when the database does not answer, which is then
 * treated as lost (the connection is dropped; the next heartbeat
 * reconnects).  The alternative, every statement as a callback chain on
 * the loop, would make each claim and each result a state machine for a
 * wait that is a few hundred microseconds when the database is there.
 * Between statements the connection's socket is watched with uv_poll for
 * NOTIFY: bf_work (offers), bf_done (results), bf_mail (requests for the
 * planner), bf_reply (answers, payload the mailbox id).
 *
 * Every statement that decides something is one statement, its condition
 * inside it: a claim cannot take a row another node took (FOR UPDATE SKIP
 * LOCKED, then state re-checked), a result cannot land for a claim that
 * was reaped (claimed_by, incarnation and state in its WHERE), a planner
 * write cannot land once the lease has moved on (holder, generation and
 * expiry checked in the same statement), a dead node's runs are failed in
 * the statement that bumps its incarnation.
 *
 * Times come from the database's clock (now()), as milliseconds since the
 * epoch; the local monotonic clock only bounds waits and the planner's own
 * deadline (lease.h, rule 2).
 */
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

/* ------------------------------------------------------------------ */
/* Small things                                                        */
/* ------------------------------------------------------------------ */

/* Milliseconds on the monotonic clock. */
static int64_t
cpg_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds on the wall clock (for status only). */
static int64_t
cpg_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The bound on one statement: CLUSTER_CALL_MS, or a third of the lease. */
static int
cpg_call_ms(const struct cluster *c)
{
	int64_t hb = lease_heartbeat_ms(c->lease_s);

	return (int)(hb < CLUSTER_CALL_MS ? hb : CLUSTER_CALL_MS);
}

/* One line for the daemon's log. */
static void __attribute__((format(printf, 3, 4)))
cpg_log(struct cluster *c, int prio, const char *fmt, ...)
{
	char line[ERR_MSG_MAX];
	va_list ap;

	if (c->cbs.log_cb == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	c->cbs.log_cb(c->cbs.data, prio, line);
}

/* libpq's message, one line, without "ERROR:  ". */
static void
cpg_pqmsg(PGconn *pg, const PGresult *res, char *buf, size_t len)
{
	const char *m = res != NULL ? PQresultErrorMessage(res) : NULL;
	char *r, *w;

	if (m == NULL || *m == '\0')
		m = pg != NULL ? PQerrorMessage(pg) : NULL;
	if (m == NULL || *m == '\0')
		m = "unknown error";
	if (strncmp(m, "ERROR:  ", 8) == 0 || strncmp(m, "FATAL:  ", 8) == 0)
		m += 8;
	snprintf(buf, len, "%s", m);
	for (r = w = buf; *r != '\0'; r++) {
		if (*r == '\n' || *r == '\r' || *r == '\t')
			*r = ' ';
		if (*r == ' ' && (w == buf || w[-1] == ' '))
			continue;
		*w++ = *r;
	}
	while (w > buf && w[-1] == ' ')
		w--;
	*w = '\0';
}

/* Notices are not ours to print. */
static void
cpg_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* An int64 column (NULL: 0). */
static int64_t
cpg_i64(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return 0;
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* A boolean column (NULL: false). */
static bool
cpg_bool(const PGresult *res, int row, int col)
{
	return !PQgetisnull(res, row, col) &&
	       PQgetvalue(res, row, col)[0] == 't';
}

/* A text column into a fixed buffer (NULL: ""). */
static void
cpg_str(const PGresult *res, int row, int col, char *buf, size_t len)
{
	snprintf(buf, len, "%s", PQgetisnull(res, row, col) ? "" :
		 PQgetvalue(res, row, col));
}

/* A text column, allocated, or NULL. */
static char *
cpg_dup(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL :
	       xstrdup(PQgetvalue(res, row, col));
}

/* Split "a\x1fb" into an allocated array of keys. */
static void
cpg_split_keys(const char *s, char ***keys, size_t *n)
{
	const char *p;
	size_t k = 1, i = 0;

	for (p = s; *p != '\0'; p++)
		k += *p == CPG_KEY_SEP[0];
	*keys = xcalloc(k, sizeof **keys);
	for (;;) {
		p = strchr(s, CPG_KEY_SEP[0]);
		(*keys)[i++] = p != NULL ? xstrndup(s, (size_t)(p - s)) :
					   xstrdup(s);
		if (p == NULL)
			break;
		s = p + 1;
	}
	*n = i;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static void cpg_kick_cb(uv_idle_t *t);
static void cpg_listen(struct cluster *c);

/* Have the kick deliver the pending events on the next loop turn. */
static void
cpg_kick(struct cluster *c)
{
	if (!c->closing)
		uv_idle_start(&c->kick, cpg_kick_cb);
}

/* Change role (events follow through the kick). */
static void
cpg_set_role(struct cluster *c, enum cluster_role role, int64_t generation)
{
	if (c->role == role && c->generation == generation)
		return;
	if (c->role == CLUSTER_PLANNER && role != CLUSTER_PLANNER)
		cpg_log(c, 4, "cluster: node=%s stops being planner"
			" (generation %" PRId64 ")", c->node, c->generation);
	if (role == CLUSTER_PLANNER) {
		cpg_log(c, 5, "cluster: node=%s is planner, generation %"
			PRId64, c->node, generation);
		c->ntaken = 0;
	}
	c->role = role;
	c->generation = generation;
	if (role != CLUSTER_PLANNER)
		uv_timer_stop(&c->deadline);
	c->ev_role = true;
	cpg_kick(c);
}

/* Read the notifications the connection holds into events. */
static void
cpg_drain(struct cluster *c)
{
	PGnotify *n;
	struct cpg_fwd *f;

	while (c->pg != NULL && (n = PQnotifies(c->pg)) != NULL) {
		cpg_log(c, 7, "cluster: node=%s notified: %s %s", c->node,
			n->relname, n->extra);
		if (strcmp(n->relname, "bf_work") == 0) {
			c->ev_work = true;
		} else if (strcmp(n->relname, "bf_done") == 0) {
			c->ev_done = true;
		} else if (strcmp(n->relname, "bf_mail") == 0) {
			c->ev_mail = true;
		} else if (strcmp(n->relname, "bf_reply") == 0) {
			int64_t id = strtoll(n->extra, NULL, 10);

			for (f = c->fwd; f != NULL; f = f->next)
				if (f->id == id)
					break;
			if (f != NULL)
				f->answered = true;
			else /* answered before cpg_forward saw its id */
				c->early[c->nearly++ % CPG_EARLY] = id;
		}
		PQfreemem(n);
	}
	if (c->ev_work || c->ev_done || c->ev_mail)
		cpg_kick(c);
	for (f = c->fwd; f != NULL; f = f->next)
		if (f->answered)
			cpg_kick(c);
}

/* ------------------------------------------------------------------ */
/* The connection                                                      */
/* ------------------------------------------------------------------ */

static void cpg_poll_cb(uv_poll_t *p, int status, int events);

/* Free a closed poll handle. */
static void
cpg_poll_closed_cb(uv_handle_t *h)
{
	free(h);
}

/* Drop the connection: the database is lost until the next heartbeat
 * connects again.  Lost work: none (claims stand until reaped). */
static void
cpg_drop(struct cluster *c, const char *why)
{
	if (c->poll != NULL) {
		uv_poll_stop(c->poll);
		uv_close((uv_handle_t *)c->poll, cpg_poll_closed_cb);
		c->poll = NULL;
	}
	if (c->pg != NULL) {
		PQfinish(c->pg);
		c->pg = NULL;
	}
	if (c->db_ok || c->db_lost_ms == 0) {
		c->db_ok = false;
		c->db_lost_ms = cpg_wall_ms();
		snprintf(c->db_error, sizeof c->db_error, "%s", why);
		cpg_log(c, 3, "cluster: node=%s lost the state store: %s;"
			" no run starts until it is back", c->node, why);
		c->ev_db = true;
		cpg_kick(c);
	}
	if (c->role == CLUSTER_WORKER)
		cpg_set_role(c, CLUSTER_OFFLINE, 0);
	/* a planner stays one until its local deadline (lease.h rule 2):
	 * the connection may come back in time to renew */
}

/* Wait until the socket is ready for `events` or the monotonic deadline
 * passes; 1 ready, 0 timed out, -1 error. */
static int
cpg_wait(struct cluster *c, short events, int64_t deadline)
{
	struct pollfd pfd;
	int64_t left;
	int r;

	for (;;) {
		left = deadline - cpg_mono_ms();
		if (left <= 0)
			return 0;
		pfd.fd = PQsocket(c->pg);
		pfd.events = events;
		pfd.revents = 0;
		r = poll(&pfd, 1, (int)left);
		if (r > 0)
			return 1;
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/*
 * Send what is queued on the connection and read the answers of one
 * statement until the call's deadline: the last result (PGRES_TUPLES_OK
 * or PGRES_COMMAND_OK), or NULL with err filled; a timeout or a broken
 * connection drops it.
 */
static PGresult *
cpg_answer(struct cluster *c, int64_t deadline, struct err *err)
{
	PGresult *res, *last = NULL;
	char msg[ERR_MSG_MAX];
	int r;

	while ((r = PQflush(c->pg)) == 1)
		if (cpg_wait(c, POLLOUT | POLLIN, deadline) <= 0)
			goto timeout;
	if (r < 0)
		goto broken;
	for (;;) {
		while (PQisBusy(c->pg)) {
			r = cpg_wait(c, POLLIN, deadline);
			if (r <= 0)
				goto timeout;
			if (!PQconsumeInput(c->pg))
				goto broken;
		}
		res = PQgetResult(c->pg);
		if (res == NULL)
			break;
		PQclear(last);
		last = res;
	}
	cpg_drain(c);
	if (last == NULL || (PQresultStatus(last) != PGRES_TUPLES_OK &&
			     PQresultStatus(last) != PGRES_COMMAND_OK)) {
		cpg_pqmsg(c->pg, last, msg, sizeof msg);
		PQclear(last);
		if (PQstatus(c->pg) != CONNECTION_OK) {
			cpg_drop(c, msg);
			return err_set(err, EXIT_WORK_FAILED, "the state store"
				       " connection was lost: %s", msg), NULL;
		}
		return err_set(err, EXIT_WORK_FAILED, "the state store"
			       " refused a statement: %s", msg), NULL;
	}
	return last;
timeout:
	PQclear(last);
	snprintf(msg, sizeof msg, "no answer within %d ms", cpg_call_ms(c));
	cpg_drop(c, msg);
	return err_set(err, EXIT_WORK_FAILED, "the state store: %s", msg),
	       NULL;
broken:
	PQclear(last);
	cpg_pqmsg(c->pg, NULL, msg, sizeof msg);
	cpg_drop(c, msg);
	return err_set(err, EXIT_WORK_FAILED, "the state store connection"
		       " was lost: %s", msg), NULL;
}

/*
 * Run one statement with text parameters (formats: NULL, or 1 for a
 * binary parameter) and return its result (PGRES_TUPLES_OK or
 * PGRES_COMMAND_OK), or NULL with err filled; a timeout or a broken
 * connection drops it.  prep >= 0: a statement of the loop's hot path
 * (enum cpg_prep), prepared on the connection at its first use, so that
 * the server plans it once, not at every call.
 */
static PGresult *
cpg_exec_p(struct cluster *c, int prep, const char *sql, int n,
	   const char *const *vals, const int *lens, const int *formats,
	   struct err *err)
{
	int64_t deadline = cpg_mono_ms() + cpg_call_ms(c);
	char name[16], msg[ERR_MSG_MAX];
	PGresult *res;

	if (c->pg == NULL)
		return err_set(err, EXIT_WORK_FAILED, "the state store is not"
			       " connected: %s", c->db_error), NULL;
	snprintf(name, sizeof name, "c%d", prep);
	if (prep >= 0 && !(c->prepared & (1u << prep))) {
		if (!PQsendPrepare(c->pg, name, sql, n, NULL))
			goto broken;
		if ((res = cpg_answer(c, deadline, err)) == NULL)
			return NULL;
		PQclear(res);
		c->prepared |= 1u << prep;
	}
	/* without parameters, the simple protocol: several statements */
	if (!(prep >= 0 ? PQsendQueryPrepared(c->pg, name, n, vals, lens,
					      formats, 0) :
	      n == 0 ? PQsendQuery(c->pg, sql) :
	      PQsendQueryParams(c->pg, sql, n, NULL, vals, lens, formats, 0)))
		goto broken;
	return cpg_answer(c, deadline, err);
broken:
	cpg_pqmsg(c->pg, NULL, msg, sizeof msg);
	cpg_drop(c, msg);
	return err_set(err, EXIT_WORK_FAILED, "the state store connection"
		       " was lost: %s", msg), NULL;
}

/* cpg_exec_p of a statement not prepared. */
static PGresult *
cpg_exec(struct cluster *c, const char *sql, int n, const char *const *vals,
	 const int *lens, const int *formats, struct err *err)
{
	return cpg_exec_p(c, -1, sql, n, vals, lens, formats, err);
}

/* cpg_exec_p with text parameters only. */
static PGresult *
cpg_qp(struct cluster *c, int prep, const char *sql, int n,
       const char *const *vals, struct err *err)
{
	return cpg_exec_p(c, prep, sql, n, vals, NULL, NULL, err);
}

/* cpg_exec with text parameters only. */
static PGresult *
cpg_q(struct cluster *c, const char *sql, int n, const char *const *vals,
      struct err *err)
{
	return cpg_exec(c, sql, n, vals, NULL, NULL, err);
}

/* Read the first line of the password file (never kept, never shown). */
static int
cpg_read_password(const char *path, char **out, struct err *err)
{
	FILE *f = fopen(path, "re");
	size_t n;

	*out = NULL;
	if (f == NULL)
		return err_set(err, EXIT_WORK_FAILED, "state: cannot read"
			       " password_file %s: %s", path, strerror(errno));
	*out = xcalloc(1, CPG_PASSWORD_MAX + 1);
	n = fread(*out, 1, CPG_PASSWORD_MAX, f);
	fclose(f);
	(*out)[n] = '\0';
	(*out)[strcspn(*out, "\r\n")] = '\0';
	return 0;
}

/* Connect (without blocking longer than the call bound) and LISTEN. */
static int
cpg_connect(struct cluster *c, struct err *err)
{
	const char *kw[5], *val[5];
	int64_t deadline = cpg_mono_ms() + cpg_call_ms(c);
	char *password = NULL, msg[ERR_MSG_MAX];
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	PGresult *res;
	int n = 0, r;

	if (c->password_file != NULL &&
	    cpg_read_password(c->password_file, &password, err) < 0)
		return -1;
	kw[n] = "fallback_application_name";
	val[n++] = "backfilld-cluster";
	kw[n] = "dbname";
	val[n++] = c->conninfo;
	if (password != NULL) {
		kw[n] = "password";
		val[n++] = password;
	}
	kw[n] = NULL;
	val[n] = NULL;
	c->pg = PQconnectStartParams(kw, val, 1);
	if (password != NULL) {
		explicit_bzero(password, strlen(password));
		free(password);
	}
	if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD)
		goto failed;
	while (st != PGRES_POLLING_OK) {
		if (st == PGRES_POLLING_FAILED)
			goto failed;
		r = cpg_wait(c, st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
			     deadline);
		if (r <= 0) {
			snprintf(msg, sizeof msg, "cannot connect within %d ms",
				 cpg_call_ms(c));
			goto out;
		}
		st = PQconnectPoll(c->pg);
	}
	PQsetNoticeProcessor(c->pg, cpg_notice, NULL);
	/* close-on-exec, whatever libpq does: no command run inherits it */
	if (PQsocket(c->pg) >= 0)
		(void)fcntl(PQsocket(c->pg), F_SETFD, FD_CLOEXEC);
	c->prepared = 0;
	if (PQsetnonblocking(c->pg, 1) != 0)
		goto failed;
	res = cpg_q(c, "LISTEN bf_work; LISTEN bf_reply", 0, NULL, err);
	c->listen_planner = false;
	if (res == NULL) {
		if (c->pg != NULL)
			PQfinish(c->pg);
		c->pg = NULL;
		return -1;
	}
	PQclear(res);
	c->poll = xcalloc(1, sizeof *c->poll);
	uv_poll_init(c->loop, c->poll, PQsocket(c->pg));
	c->poll->data = c;
	uv_poll_start(c->poll, UV_READABLE, cpg_poll_cb);
	return 0;
failed:
	cpg_pqmsg(c->pg, NULL, msg, sizeof msg);
out:
	if (c->pg != NULL)
		PQfinish(c->pg);
	c->pg = NULL;
	return err_set(err, EXIT_WORK_FAILED, "%s", msg);
}

/* The socket has something: notifications, or the end of the
 * connection. */
static void
cpg_poll_cb(uv_poll_t *p, int status, int events)
{
	struct cluster *c = p->data;
	char msg[ERR_MSG_MAX];

	(void)events;
	if (c->pg == NULL)
		return;
	if (status < 0 || !PQconsumeInput(c->pg)) {
		cpg_pqmsg(c->pg, NULL, msg, sizeof msg);
		cpg_drop(c, msg);
		return;
	}
	cpg_drain(c);
}

/* ------------------------------------------------------------------ */
/* Registration, heartbeat, lease, reaping                             */
/* ------------------------------------------------------------------ */

#define CPG_MS(x) "(extract(epoch from " x ") * 1000)::bigint"

/* Register this node: a new incarnation; runs still claimed by its
 * earlier processes fail as interrupted (they are gone). */
static int
cpg_register(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"WITH reg AS (INSERT INTO nodes (name, incarnation, last_seen,"
		"  running, config_hash, role, started_at)"
		"  VALUES ($1, 1, now(), 0, $2, 'worker', now())"
		"  ON CONFLICT (name) DO UPDATE SET"
		"  incarnation = nodes.incarnation + 1, last_seen = now(),"
		"  running = 0, config_hash = $2, role = 'worker',"
		"  started_at = now() RETURNING incarnation),"
		" old AS (UPDATE work SET state = 'done', failed = true,"
		"  interrupted = true, finished_at = now(),"
		"  error = 'interrupted: node ' || $1 || ' stopped'"
		"  WHERE claimed_by = $1 AND state = 'claimed' RETURNING id),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM old))"
		" SELECT (SELECT incarnation FROM reg), (SELECT count(*) FROM"
		" old), (SELECT count(*) FROM n)";
	const char *v[2] = { c->node, c->config_hash };
	PGresult *res = cpg_q(c, sql, 2, v, err);
	int64_t old;

	if (res == NULL)
		return -1;
	c->incarnation = cpg_i64(res, 0, 0);
	old = cpg_i64(res, 0, 1);
	PQclear(res);
	cpg_log(c, 5, "cluster: node=%s registered, incarnation %" PRId64,
		c->node, c->incarnation);
	if (old > 0)
		cpg_log(c, 4, "cluster: node=%s: %" PRId64 " runs its previous"
			" process had claimed are interrupted", c->node, old);
	return 0;
}

/* Queue the ids in "1,2,3" for cancel_cb (runs the planner wants
 * stopped: their request was cancelled). */
static void
cpg_cancels(struct cluster *c, const char *list)
{
	const char *p = list;
	char *end;

	while (*p != '\0') {
		int64_t id = strtoll(p, &end, 10);

		if (end == p)
			break;
		c->cancel = xreallocarray(c->cancel, c->ncancel + 1,
					  sizeof *c->cancel);
		c->cancel[c->ncancel++] = id;
		p = *end == ',' ? end + 1 : end;
	}
	if (c->ncancel > 0)
		cpg_kick(c);
}

/* Heartbeat and read the lease and how many nodes live (rule 3; this one
 * counted, however late its last heartbeat): *fenced when this
 * incarnation is no longer the node's (declared dead meanwhile). */
static int
cpg_heartbeat(struct cluster *c, struct lease_row *row, int64_t *now_ms,
	      bool *fenced, struct err *err)
{
	static const char sql[] =
		"WITH hb AS (UPDATE nodes SET last_seen = now(), running = $3,"
		"  config_hash = $4, role = $5"
		"  WHERE name = $1 AND incarnation = $2 RETURNING 1)"
		" SELECT (SELECT count(*) FROM hb), l.id IS NOT NULL,"
		" coalesce(l.holder, ''), coalesce(l.generation, 0),"
		" coalesce(" CPG_MS("l.expires_at") ", 0), " CPG_MS("now()") ","
		" (SELECT string_agg(id::text, ',') FROM work WHERE claimed_by = $1"
		"  AND incarnation = $2 AND state = 'claimed' AND cancel),"
		" 1 + (SELECT count(*) FROM nodes WHERE name <> $1"
		"  AND role <> 'stopped'"
		"  AND last_seen >= now() - $6 * interval '1 millisecond')"
		" FROM (SELECT 1) x LEFT JOIN lease l ON l.id = 1";
	char inc[32], running[32], ms[32];
	const char *v[6] = { c->node, inc, running, c->config_hash,
			     c->role == CLUSTER_PLANNER ? "planner" : "worker",
			     ms };
	PGresult *res;

	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(running, sizeof running, "%d", c->running);
	snprintf(ms, sizeof ms, "%" PRId64, c->lease_s * 1000);
	if ((res = cpg_qp(c, CPG_P_HEARTBEAT, sql, 6, v, err)) == NULL)
		return -1;
	*fenced = cpg_i64(res, 0, 0) == 0;
	memset(row, 0, sizeof *row);
	row->exists = cpg_bool(res, 0, 1);
	cpg_str(res, 0, 2, row->holder, sizeof row->holder);
	row->generation = cpg_i64(res, 0, 3);
	row->expires_ms = cpg_i64(res, 0, 4);
	*now_ms = cpg_i64(res, 0, 5);
	if (!*fenced && !PQgetisnull(res, 0, 6))
		cpg_cancels(c, PQgetvalue(res, 0, 6));
	c->live_nodes = (int)cpg_i64(res, 0, 7);
	PQclear(res);
	return 0;
}

/* Take the lease (free or expired), noting who held it before (an
 * expired holder: a planner that died); 1 taken, 0 someone was faster.  A
 * free or expired row is locked FOR UPDATE first: that waits for the
 * transaction in flight of a deposed planner's store, whose fence holds
 * the row FOR KEY SHARE (store_pg.c, "Fencing"); the holder's own
 * renewals (UPDATE of no key column) do not wait for it. */
static int
cpg_acquire(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"WITH k AS (SELECT coalesce(holder, '') AS holder FROM lease"
		"  WHERE id = 1 AND (coalesce(holder, '') = ''"
		"   OR expires_at IS NULL OR expires_at <= now()) FOR UPDATE),"
		" l AS (INSERT INTO lease AS l (id, holder, generation,"
		"  expires_at)"
		"  SELECT 1, $1, 1, now() + $3 * interval '1 millisecond'"
		"  WHERE EXISTS (SELECT 1 FROM nodes WHERE name = $1"
		"   AND incarnation = $2) AND (SELECT count(*) FROM k) >= 0"
		"  ON CONFLICT (id) DO UPDATE SET holder = $1,"
		"  generation = l.generation + 1, expires_at = EXCLUDED.expires_at"
		"  WHERE coalesce(l.holder, '') = '' OR l.expires_at IS NULL"
		"   OR l.expires_at <= now()"
		"  RETURNING generation),"
		" r AS (UPDATE nodes SET role = 'planner' WHERE name = $1"
		"  AND incarnation = $2 AND EXISTS (SELECT 1 FROM l) RETURNING 1)"
		" SELECT generation, (SELECT count(*) FROM r),"
		" coalesce((SELECT holder FROM k), '') FROM l";
	char inc[32], ms[32];
	const char *v[3] = { c->node, inc, ms };
	int64_t sent = cpg_mono_ms();
	PGresult *res;

	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(ms, sizeof ms, "%" PRId64, c->lease_s * 1000);
	if ((res = cpg_q(c, sql, 3, v, err)) == NULL)
		return -1;
	if (PQntuples(res) == 1) {
		c->renew_sent = sent;
		snprintf(c->planner, sizeof c->planner, "%s", c->node);
		cpg_str(res, 0, 2, c->prev_planner, sizeof c->prev_planner);
		cpg_set_role(c, CLUSTER_PLANNER, cpg_i64(res, 0, 0));
		PQclear(res);
		return 1;
	}
	PQclear(res);
	return 0;
}

/* Renew the lease held; 1 renewed, 0 lost (deposed). */
static int
cpg_renew(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"UPDATE lease SET expires_at = now() + $3 * interval"
		" '1 millisecond' WHERE id = 1 AND holder = $1"
		" AND generation = $2 AND expires_at > now() RETURNING 1";
	char gen[32], ms[32];
	const char *v[3] = { c->node, gen, ms };
	int64_t sent = cpg_mono_ms();
	PGresult *res;
	int ok;

	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	snprintf(ms, sizeof ms, "%" PRId64, c->lease_s * 1000);
	if ((res = cpg_q(c, sql, 3, v, err)) == NULL)
		return -1;
	ok = PQntuples(res) == 1;
	PQclear(res);
	if (ok)
		c->renew_sent = sent;
	return ok;
}

static void cpg_deadline_cb(uv_timer_t *t);

/* Arm the planner's local deadline from the last renewal sent. */
static void
cpg_arm_deadline(struct cluster *c)
{
	int64_t left = lease_local_deadline(c->renew_sent, c->lease_s) -
		       cpg_mono_ms();

	uv_timer_start(&c->deadline, cpg_deadline_cb, left > 0 ? left : 0,
		       0);
}

/* The lease could have run out without a renewal: stop planning. */
static void
cpg_deposed_late(struct cluster *c)
{
	if (c->role != CLUSTER_PLANNER)
		return;
	cpg_log(c, 3, "cluster: node=%s could not renew its lease in time:"
		" deposed", c->node);
	cpg_set_role(c, c->db_ok ? CLUSTER_WORKER : CLUSTER_OFFLINE, 0);
}

/* The local deadline's timer. */
static void
cpg_deadline_cb(uv_timer_t *t)
{
	cpg_deposed_late(t->data);
}

/* Planner: declare dead the nodes silent for longer than the lease and
 * fail their claimed runs (and claims of stale incarnations), in one
 * statement fenced by the lease; drop old mail. */
static int
cpg_reap(struct cluster *c, struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" dead AS (UPDATE nodes SET incarnation = incarnation + 1,"
		"  role = 'stopped', running = 0"
		"  WHERE name <> $1 AND role <> 'stopped'"
		"  AND last_seen < now() - $3 * interval '1 millisecond'"
		"  AND EXISTS (SELECT 1 FROM ok) RETURNING name),"
		" r AS (UPDATE work w SET state = 'done', failed = true,"
		"  interrupted = true, finished_at = now(),"
		"  error = 'interrupted: node ' || w.claimed_by || ' stopped'"
		"  WHERE w.state = 'claimed' AND EXISTS (SELECT 1 FROM ok)"
		"  AND (w.claimed_by IN (SELECT name FROM dead)"
		"   OR NOT EXISTS (SELECT 1 FROM nodes n"
		"    WHERE n.name = w.claimed_by AND n.incarnation = w.incarnation"
		"    AND n.role <> 'stopped'))"
		"  RETURNING w.id),"
		" m AS (DELETE FROM mailbox WHERE created_at < now() - interval '"
		CPG_MAIL_KEEP "' AND EXISTS (SELECT 1 FROM ok) RETURNING 1),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM r))"
		" SELECT (SELECT count(*) FROM ok), (SELECT string_agg(name, ', ')"
		" FROM dead), (SELECT count(*) FROM r), (SELECT count(*) FROM m),"
		" (SELECT count(*) FROM n)";
	char gen[32], ms[32], names[512];
	const char *v[3] = { c->node, gen, ms };
	PGresult *res;
	int64_t runs;

	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	snprintf(ms, sizeof ms, "%" PRId64, c->lease_s * 1000);
	if ((res = cpg_q(c, sql, 3, v, err)) == NULL)
		return -1;
	if (cpg_i64(res, 0, 0) == 0) {
		PQclear(res);
		cpg_set_role(c, CLUSTER_WORKER, 0);
		return err_set(err, EXIT_WORK_FAILED, "deposed: the lease moved"
			       " on");
	}
	cpg_str(res, 0, 1, names, sizeof names);
	runs = cpg_i64(res, 0, 2);
	PQclear(res);
	if (names[0] != '\0')
		cpg_log(c, 4, "cluster: nodes declared dead (silent for more"
			" than the lease of %" PRId64 "s): %s", c->lease_s,
			names);
	if (runs > 0) {
		cpg_log(c, 4, "cluster: %" PRId64 " runs of stopped nodes"
			" interrupted, to be queued again", runs);
		c->ev_done = true;
		cpg_kick(c);
	}
	return 0;
}

/* A node fenced out: it was declared dead while it ran. */
static int
cpg_fenced(struct cluster *c, struct err *err)
{
	int64_t old = c->incarnation, now = cpg_mono_ms();

	cpg_log(c, 3, "cluster: node=%s was declared dead (incarnation %"
		PRId64 " is gone): its runs in flight are abandoned; it"
		" registers again", c->node, old);
	if (c->fenced_at > 0 && now - c->fenced_at < 4 * c->lease_s * 1000)
		cpg_log(c, 3, "cluster: node=%s was declared dead twice within"
			" %" PRId64 " s: does another daemon run with node: %s"
			" on this state store? Each node needs a name of its"
			" own", c->node, 4 * c->lease_s, c->node);
	c->fenced_at = now;
	if (c->role == CLUSTER_PLANNER)
		cpg_set_role(c, CLUSTER_WORKER, 0);
	if (cpg_register(c, err) < 0)
		return -1;
	c->ev_fenced_old = old;
	cpg_kick(c);
	return 0;
}

/* Act on the lease as lease_decide() says. */
static int
cpg_lease(struct cluster *c, const struct lease_row *row, int64_t now_ms,
	  struct err *err)
{
	enum lease_action a = lease_decide(row, c->node, c->role ==
					   CLUSTER_PLANNER ? c->generation : 0,
					   now_ms);
	int r;

	switch (a) {
	case LEASE_RENEW:
		if ((r = cpg_renew(c, err)) < 0)
			return -1;
		if (r == 0) {
			cpg_set_role(c, CLUSTER_WORKER, 0);
			return 0;
		}
		cpg_arm_deadline(c);
		return cpg_reap(c, err);
	case LEASE_ACQUIRE:
		if (c->resigned)
			return 0;
		if ((r = cpg_acquire(c, err)) <= 0)
			return r;
		cpg_arm_deadline(c);
		return cpg_reap(c, err);
	case LEASE_WAIT:
		snprintf(c->planner, sizeof c->planner, "%s", row->holder);
		return 0;
	case LEASE_DEPOSED:
		cpg_log(c, 3, "cluster: node=%s lost its lease (now held by"
			" \"%s\", generation %" PRId64 "): deposed", c->node,
			row->holder, row->generation);
		snprintf(c->planner, sizeof c->planner, "%s", row->holder);
		cpg_set_role(c, CLUSTER_WORKER, 0);
		return 0;
	}
	return 0;
}

/* Bring the connection up (and register) if it is down. */
static int
cpg_ensure(struct cluster *c, struct err *err)
{
	bool was_lost = !c->db_ok;

	if (c->pg != NULL && c->incarnation != 0)
		return 0;
	if (c->pg == NULL && cpg_connect(c, err) < 0) {
		if (c->db_ok || c->db_lost_ms == 0) {
			cpg_drop(c, err->msg);
		} else {
			snprintf(c->db_error, sizeof c->db_error, "%s",
				 err->msg);
		}
		return -1;
	}
	if (c->incarnation == 0 && cpg_register(c, err) < 0)
		return -1;
	c->db_ok = true;
	c->db_error[0] = '\0';
	if (c->role == CLUSTER_OFFLINE)
		cpg_set_role(c, CLUSTER_WORKER, 0);
	if (was_lost) {
		cpg_log(c, 5, "cluster: node=%s reached the state store", c->node);
		/* notifications may have been missed meanwhile */
		c->ev_db = c->ev_work = c->ev_done = c->ev_mail = true;
		cpg_kick(c);
	}
	return 0;
}

static void cpg_fwd_lease(struct cluster *c, const struct lease_row *row);

/* One heartbeat: connect if needed, heartbeat, lease, reap. */
static void
cpg_beat_cb(uv_timer_t *t)
{
	struct cluster *c = t->data;
	struct lease_row row;
	struct err err;
	int64_t now_ms, sent = cpg_mono_ms();
	bool fenced;

	if (c->closing || cpg_ensure(c, &err) < 0)
		return;
	if (cpg_heartbeat(c, &row, &now_ms, &fenced, &err) < 0)
		goto failed;
	/* alive in the database's view until sent + lease at least (rule 3:
	 * last_seen is the heartbeat's commit, after it was sent) */
	if (c->alive_until != NULL)
		atomic_store(c->alive_until, fenced ? 1 :
			     sent + c->lease_s * 1000 - c->lease_s * 1000 / 3);
	if (fenced) {
		if (cpg_fenced(c, &err) < 0)
			goto failed;
		return;
	}
	if (cpg_lease(c, &row, now_ms, &err) < 0)
		goto failed;
	cpg_listen(c);
	cpg_fwd_lease(c, &row);
	return;
failed:
	cpg_log(c, 4, "cluster: node=%s heartbeat: %s", c->node, err.msg);
}

/* ------------------------------------------------------------------ */
/* Forwarded requests                                                  */
/* ------------------------------------------------------------------ */

static void cpg_fwd_timer_cb(uv_timer_t *t);

/* Arm the forward timer at the earliest deadline. */
static void
cpg_fwd_arm(struct cluster *c)
{
	int64_t first = INT64_MAX, now = cpg_mono_ms();
	struct cpg_fwd *f;

	for (f = c->fwd; f != NULL; f = f->next)
		if (f->deadline < first)
			first = f->deadline;
	if (first == INT64_MAX)
		uv_timer_stop(&c->fwd_timer);
	else
		uv_timer_start(&c->fwd_timer, cpg_fwd_timer_cb,
			       first > now ? (uint64_t)(first - now) : 0, 0);
}

/* Take f off the list. */
static void
cpg_fwd_unlink(struct cluster *c, struct cpg_fwd *f)
{
	struct cpg_fwd **pp;

	for (pp = &c->fwd; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
}

/* Fetch the answer of f (answered), deliver it. */
static void
cpg_fwd_fetch(struct cluster *c, struct cpg_fwd *f)
{
	static const char sql[] = "DELETE FROM mailbox WHERE id = $1 AND"
				  " response IS NOT NULL RETURNING response";
	char id[32];
	const char *v[1] = { id };
	unsigned char *bytes;
	size_t len = 0;
	PGresult *res;
	struct err err;

	snprintf(id, sizeof id, "%" PRId64, f->id);
	f->answered = false;
	if ((res = cpg_q(c, sql, 1, v, &err)) == NULL || PQntuples(res) == 0) {
		if (res == NULL)
			cpg_log(c, 4, "cluster: node=%s: the answer to"
				" request %s: %s", c->node, id, err.msg);
		PQclear(res);
		return; /* not yet, or lost: the timeout answers */
	}
	bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 0),
				&len);
	PQclear(res);
	cpg_fwd_unlink(c, f);
	cpg_fwd_arm(c);
	f->cb(f->arg, bytes != NULL ? 0 : -1, bytes, len,
	      bytes != NULL ? NULL : "out of memory");
	PQfreemem(bytes);
	free(f);
}

/* A forwarded request's time is up: no planner answered. */
static void
cpg_fwd_timer_cb(uv_timer_t *t)
{
	static const char sql[] = "DELETE FROM mailbox WHERE id = $1";
	struct cluster *c = t->data;
	int64_t now = cpg_mono_ms();
	struct cpg_fwd *f, *next;
	char why[512], id[32];
	const char *v[1] = { id };
	struct err err;

	for (f = c->fwd; f != NULL; f = next) {
		next = f->next;
		if (f->deadline > now)
			continue;
		cpg_fwd_unlink(c, f);
		snprintf(id, sizeof id, "%" PRId64, f->id);
		PQclear(c->pg != NULL ? cpg_q(c, sql, 1, v, &err) : NULL);
		if (!c->db_ok)
			snprintf(why, sizeof why, "the state store cannot be"
				 " reached (%s): this node cannot ask the"
				 " planner", c->db_error);
		else if (c->planner[0] == '\0')
			snprintf(why, sizeof why, "no planner: no node has"
				 " held the lease for %" PRId64 " ms; check"
				 " that the nodes are running", f->timeout_ms);
		else
			snprintf(why, sizeof why, "the planner (node \"%s\")"
				 " did not answer within %" PRId64 " ms",
				 c->planner, f->timeout_ms);
		f->cb(f->arg, -1, NULL, 0, why);
		free(f);
	}
	cpg_fwd_arm(c);
}

/*
 * The lease moved on while forwarded requests wait: the planner they
 * went to (the holder at the first heartbeat after each was sent) can no
 * longer answer (deposed, it restarts in place; dead, it never will), so
 * each fails now, saying so, instead of at its timeout, which may be
 * long (a request that runs a proof first, control.c).  One sent just as
 * the lease moved is known by the next heartbeat's generation.
 */
static void
cpg_fwd_lease(struct cluster *c, const struct lease_row *row)
{
	static const char sql[] = "DELETE FROM mailbox WHERE id = $1";
	struct cpg_fwd *f, *next;
	char why[512], id[32];
	const char *v[1] = { id };
	struct err err;

	for (f = c->fwd; f != NULL; f = next) {
		next = f->next;
		if (f->generation == 0 || f->generation == row->generation) {
			f->generation = row->generation;
			continue;
		}
		cpg_fwd_unlink(c, f);
		snprintf(id, sizeof id, "%" PRId64, f->id);
		PQclear(c->pg != NULL ? cpg_q(c, sql, 1, v, &err) : NULL);
		snprintf(why, sizeof why, "the planner changed while it"
			 " handled the request (lease generation %" PRId64
			 ", now %" PRId64 " held by \"%s\"): its answer cannot"
			 " come back; see status and runs for what it did",
			 f->generation, row->generation, row->holder);
		f->cb(f->arg, -1, NULL, 0, why);
		free(f);
	}
	cpg_fwd_arm(c);
}

/* Listen for results and requests while planner only (workers would
 * only be woken by them); after starting to, collect once what came
 * before. */
static void
cpg_listen(struct cluster *c)
{
	bool want = c->role == CLUSTER_PLANNER;
	struct err err;
	PGresult *res;

	if (c->pg == NULL || c->listen_planner == want)
		return;
	res = cpg_q(c, want ? "LISTEN bf_done; LISTEN bf_mail" :
		    "UNLISTEN bf_done; UNLISTEN bf_mail", 0, NULL, &err);
	if (res == NULL)
		return;
	PQclear(res);
	c->listen_planner = want;
	if (want) {
		c->ev_done = c->ev_mail = true;
		cpg_kick(c);
	}
}

/* ------------------------------------------------------------------ */
/* The kick: events to the daemon                                      */
/* ------------------------------------------------------------------ */

/* Deliver what happened, in order: database, fencing, role, work. */
static void
cpg_kick_cb(uv_idle_t *t)
{
	struct cluster *c = t->data;
	const struct cluster_cbs *cb = &c->cbs;
	struct cpg_fwd *f, *next;

	uv_idle_stop(&c->kick);
	cpg_listen(c);
	if (c->ev_db) {
		c->ev_db = false;
		if (cb->db_cb != NULL)
			cb->db_cb(cb->data, c->db_ok, c->db_ok ? NULL :
				  c->db_error);
	}
	if (c->ev_fenced_old > 0) {
		int64_t old = c->ev_fenced_old;

		c->ev_fenced_old = 0;
		if (cb->fenced_cb != NULL)
			cb->fenced_cb(cb->data, old, c->incarnation);
	}
	if (c->ncancel > 0) {
		int64_t *ids = c->cancel;
		size_t n = c->ncancel, i;

		c->cancel = NULL;
		c->ncancel = 0;
		for (i = 0; i < n && cb->cancel_cb != NULL; i++)
			cb->cancel_cb(cb->data, ids[i]);
		free(ids);
	}
	if (c->ev_role) {
		c->ev_role = false;
		if (cb->role_cb != NULL)
			cb->role_cb(cb->data, c->role, c->generation);
	}
	if (c->ev_work) {
		c->ev_work = false;
		if (cb->work_cb != NULL && c->role != CLUSTER_OFFLINE)
			cb->work_cb(cb->data);
	}
	if (c->ev_done) {
		c->ev_done = false;
		if (cb->done_cb != NULL && c->role == CLUSTER_PLANNER)
			cb->done_cb(cb->data);
	}
	if (c->ev_mail) {
		c->ev_mail = false;
		if (cb->mail_cb != NULL && c->role == CLUSTER_PLANNER)
			cb->mail_cb(cb->data);
	}
	for (f = c->fwd; f != NULL; f = next) {
		next = f->next;
		if (f->answered)
			cpg_fwd_fetch(c, f);
	}
}

/* ------------------------------------------------------------------ */
/* The driver                                                          */
/* ------------------------------------------------------------------ */

/* Open: handles, first connection and registration, heartbeat. */
static int
cpg_open(uv_loop_t *loop, const struct cluster_opts *o,
	 const struct cluster_cbs *cbs, struct cluster **out, struct err *err)
{
	struct cluster *c = xcalloc(1, sizeof *c);

	*out = NULL;
	if (o->lease_s < 1 || strlen(o->node) >= sizeof c->node) {
		free(c);
		return err_set(err, EXIT_BAD_INPUT, "cluster: bad node name or"
			       " lease");
	}
	c->loop = loop;
	c->cbs = *cbs;
	c->conninfo = xstrdup(o->conninfo);
	c->password_file = o->password_file ? xstrdup(o->password_file) : NULL;
	snprintf(c->node, sizeof c->node, "%s", o->node);
	snprintf(c->config_hash, sizeof c->config_hash, "%s",
		 o->config_hash ? o->config_hash : "");
	c->lease_s = o->lease_s;
	c->alive_until = o->alive_until;
	c->role = CLUSTER_OFFLINE;
	uv_timer_init(loop, &c->beat);
	uv_timer_init(loop, &c->deadline);
	uv_idle_init(loop, &c->kick);
	uv_timer_init(loop, &c->fwd_timer);
	c->beat.data = c->deadline.data = c->kick.data = c->fwd_timer.data = c;
	/* the first heartbeat now, so that open says how the database is */
	cpg_beat_cb(&c->beat);
	uv_timer_start(&c->beat, cpg_beat_cb,
		       (uint64_t)lease_heartbeat_ms(c->lease_s),
		       (uint64_t)lease_heartbeat_ms(c->lease_s));
	*out = c;
	return 0;
}

/* A handle of ours is closed. */
static void
cpg_handle_closed_cb(uv_handle_t *h)
{
	struct cluster *c = h->data;

	if (--c->nclosing == 0 && c->closed_cb != NULL)
		c->closed_cb(c->closed_arg);
}

/* Leave cleanly: claims handed back, lease released, node stopped. */
static void
cpg_leave(struct cluster *c)
{
	static const char sql[] =
		"WITH w AS (UPDATE work SET state = 'done', failed = true,"
		"  interrupted = true, finished_at = now(),"
		"  error = 'interrupted: node ' || $1 || ' stopped'"
		"  WHERE claimed_by = $1 AND incarnation = $2"
		"  AND state = 'claimed' RETURNING 1),"
		" l AS (UPDATE lease SET holder = NULL, expires_at = now()"
		"  WHERE id = 1 AND holder = $1 AND generation = $3 RETURNING 1),"
		" s AS (UPDATE nodes SET role = 'stopped', running = 0,"
		"  last_seen = now() WHERE name = $1 AND incarnation = $2"
		"  RETURNING 1),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM w))"
		" SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM l),"
		" (SELECT count(*) FROM s), (SELECT count(*) FROM n)";
	char inc[32], gen[32];
	const char *v[3] = { c->node, inc, gen };
	struct err err;

	if (c->pg == NULL || c->incarnation == 0)
		return;
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(gen, sizeof gen, "%" PRId64,
		 c->role == CLUSTER_PLANNER ? c->generation : -1);
	PQclear(cpg_q(c, sql, 3, v, &err));
}

/* Close: leave, then close every handle; closed_cb once all are. */
static void
cpg_close(struct cluster *c, void (*closed_cb)(void *), void *arg)
{
	struct cpg_fwd *f;

	cpg_leave(c);
	c->closing = true;
	while ((f = c->fwd) != NULL) {
		c->fwd = f->next;
		f->cb(f->arg, -1, NULL, 0, "the daemon is stopping");
		free(f);
	}
	if (c->poll != NULL) {
		uv_poll_stop(c->poll);
		uv_close((uv_handle_t *)c->poll, cpg_poll_closed_cb);
		c->poll = NULL;
	}
	if (c->pg != NULL)
		PQfinish(c->pg);
	c->pg = NULL;
	c->closed_cb = closed_cb;
	c->closed_arg = arg;
	c->nclosing = 4;
	uv_close((uv_handle_t *)&c->beat, cpg_handle_closed_cb);
	uv_close((uv_handle_t *)&c->deadline, cpg_handle_closed_cb);
	uv_close((uv_handle_t *)&c->kick, cpg_handle_closed_cb);
	uv_close((uv_handle_t *)&c->fwd_timer, cpg_handle_closed_cb);
}

/* Free a closed cluster. */
static void
cpg_free(struct cluster *c)
{
	if (c == NULL)
		return;
	free(c->conninfo);
	free(c->password_file);
	free(c->cancel);
	free(c->taken);
	free(c);
}

/* The running count the next heartbeat writes. */
static void
cpg_set_running(struct cluster *c, int running)
{
	c->running = running;
}

/* A new lease length (reload): the next heartbeat, a third of it away,
 * renews or takes the lease for that long. */
static void
cpg_set_lease(struct cluster *c, int64_t lease_s)
{
	uint64_t hb;

	if (lease_s < 1 || lease_s == c->lease_s)
		return;
	c->lease_s = lease_s;
	hb = (uint64_t)lease_heartbeat_ms(lease_s);
	uv_timer_start(&c->beat, cpg_beat_cb, hb, hb);
}

/* The configuration hash the next heartbeat writes. */
static void
cpg_set_config_hash(struct cluster *c, const char *hash)
{
	snprintf(c->config_hash, sizeof c->config_hash, "%s", hash);
}

/* This node's view. */
static void
cpg_state(const struct cluster *c, struct cluster_state *st)
{
	memset(st, 0, sizeof *st);
	st->role = c->role;
	st->generation = c->generation;
	st->incarnation = c->incarnation;
	st->db_ok = c->db_ok;
	st->db_lost_ms = c->db_lost_ms;
	snprintf(st->db_error, sizeof st->db_error, "%s", c->db_error);
	snprintf(st->planner, sizeof st->planner, "%s", c->planner);
	if (c->role == CLUSTER_PLANNER)
		snprintf(st->prev_planner, sizeof st->prev_planner, "%s",
			 c->prev_planner);
	st->live_nodes = c->live_nodes;
}

/* Planner now, by the role and the local deadline (rule 2): the deadline
 * timer may not have fired yet (a process stopped, then continued). */
static bool
cpg_planner_now(struct cluster *c)
{
	if (c->role != CLUSTER_PLANNER)
		return false;
	if (cpg_mono_ms() < lease_local_deadline(c->renew_sent, c->lease_s))
		return true;
	cpg_deposed_late(c);
	return false;
}

/* Refuse a planner call on a node that is not planner. */
static int
cpg_need_planner(struct cluster *c, struct err *err)
{
	if (c->role == CLUSTER_PLANNER)
		return 0;
	return err_set(err, EXIT_WORK_FAILED, "node %s is not the planner",
		       c->node);
}

/* The arrays of runs described by o (ids, requests, jobs, keys,
 * attempts), as the offer statements take them (pgsql_array_end); the
 * caller frees them. */
static void
cpg_offer_arrays(const struct cluster_offer *o, size_t n,
		 struct pgsql_array a[5])
{
	size_t i;

	memset(a, 0, 5 * sizeof *a);
	for (i = 0; i < n; i++) {
		struct pgsql_buf keys = { 0 };

		pgsql_array_int(&a[0], o[i].id);
		pgsql_array_int(&a[1], o[i].request);
		pgsql_array_text(&a[2], o[i].job);
		pgsql_buf_join(&keys, o[i].keys, o[i].nkeys, CPG_KEY_SEP[0]);
		pgsql_array_text(&a[3], keys.p);
		free(keys.p);
		pgsql_array_int(&a[4], o[i].attempt);
	}
}

/* Planner: offer runs, fenced by the lease. */
static int
cpg_offer(struct cluster *c, const struct cluster_offer *o, size_t n,
	  struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" ins AS (INSERT INTO work (id, request, job, keys, attempt,"
		"  generation)"
		"  SELECT t.id, nullif(t.request, 0), t.job,"
		"  string_to_array(t.keys, E'\\x1f'), t.attempt, $2"
		"  FROM unnest($3::bigint[], $4::bigint[], $5::text[],"
		"  $6::text[], $7::int[]) AS t(id, request, job, keys, attempt)"
		"  WHERE EXISTS (SELECT 1 FROM ok)"
		"  ON CONFLICT (id) DO NOTHING RETURNING 1),"
		" n AS (SELECT pg_notify('bf_work', '')"
		"  WHERE EXISTS (SELECT 1 FROM ins))"
		" SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM ins),"
		" (SELECT count(*) FROM n)";
	struct pgsql_array a[5];
	char gen[32];
	const char *v[7];
	PGresult *res;
	size_t k;
	bool ok;

	if (cpg_need_planner(c, err) < 0)
		return -1;
	if (n == 0)
		return 0;
	cpg_offer_arrays(o, n, a);
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	v[0] = c->node;
	v[1] = gen;
	for (k = 0; k < 5; k++)
		v[2 + k] = pgsql_array_end(&a[k]);
	res = cpg_qp(c, CPG_P_OFFER, sql, 7, v, err);
	for (k = 0; k < 5; k++)
		pgsql_array_free(&a[k]);
	if (res == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0) == 1;
	PQclear(res);
	if (!ok) {
		cpg_set_role(c, CLUSTER_WORKER, 0);
		return err_set(err, EXIT_WORK_FAILED, "deposed: the lease moved"
			       " on; offer refused");
	}
	return 0;
}

/* Fill w from row i of a work query (columns in CPG_WORK_COLS order). */
#define CPG_WORK_COLS "id, coalesce(request, 0), job," \
	" array_to_string(keys, E'\\x1f'), attempt, generation, " \
	CPG_MS("claimed_at") ", coalesce(claimed_by, ''), failed," \
	" interrupted, error, result"

/* One row of a CPG_WORK_COLS query. */
static void
cpg_work_row(const PGresult *res, int i, struct cluster_work *w)
{
	memset(w, 0, sizeof *w);
	w->id = cpg_i64(res, i, 0);
	w->request = cpg_i64(res, i, 1);
	cpg_str(res, i, 2, w->job, sizeof w->job);
	cpg_split_keys(PQgetvalue(res, i, 3), &w->keys, &w->nkeys);
	w->attempt = (int)cpg_i64(res, i, 4);
	w->generation = cpg_i64(res, i, 5);
	w->claimed_ms = cpg_i64(res, i, 6);
	cpg_str(res, i, 7, w->claimed_by, sizeof w->claimed_by);
	w->failed = cpg_bool(res, i, 8);
	w->interrupted = cpg_bool(res, i, 9);
	w->error = cpg_dup(res, i, 10);
	w->result = cpg_dup(res, i, 11);
}

/* The rows of a CPG_WORK_COLS result, allocated. */
static void
cpg_work_rows(const PGresult *res, struct cluster_work **out, size_t *n)
{
	int i, nt = PQntuples(res);

	*n = (size_t)nt;
	*out = nt > 0 ? xcalloc((size_t)nt, sizeof **out) : NULL;
	for (i = 0; i < nt; i++)
		cpg_work_row(res, i, &(*out)[i]);
}

/* Planner: the done rows. */
static int
cpg_results(struct cluster *c, size_t max, struct cluster_work **out,
	    size_t *n, struct err *err)
{
	static const char sql[] = "SELECT " CPG_WORK_COLS " FROM work"
				  " WHERE state = 'done' ORDER BY id LIMIT $1";
	char lim[32];
	const char *v[1] = { lim };
	PGresult *res;

	*out = NULL;
	*n = 0;
	if (cpg_need_planner(c, err) < 0)
		return -1;
	snprintf(lim, sizeof lim, "%zu", max);
	if ((res = cpg_qp(c, CPG_P_RESULTS, sql, 1, v, err)) == NULL)
		return -1;
	cpg_work_rows(res, out, n);
	PQclear(res);
	return 0;
}

/* Planner: delete rows (results recorded, offers withdrawn), fenced. */
static int
cpg_forget(struct cluster *c, const int64_t *ids, size_t n, struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" d AS (DELETE FROM work WHERE id = ANY($3::bigint[])"
		"  AND state <> 'claimed' AND EXISTS (SELECT 1 FROM ok)"
		"  RETURNING 1),"
		" x AS (UPDATE work SET cancel = true WHERE id = ANY($3::bigint[])"
		"  AND state = 'claimed' AND EXISTS (SELECT 1 FROM ok)"
		"  RETURNING 1)"
		" SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM d),"
		" (SELECT count(*) FROM x)";
	struct pgsql_array a = { 0 };
	char gen[32];
	const char *v[3] = { c->node, gen, NULL };
	PGresult *res;
	size_t i;
	bool ok;

	if (cpg_need_planner(c, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		pgsql_array_int(&a, ids[i]);
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	v[2] = pgsql_array_end(&a);
	res = cpg_qp(c, CPG_P_FORGET, sql, 3, v, err);
	pgsql_array_free(&a);
	if (res == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0) == 1;
	PQclear(res);
	if (!ok) {
		cpg_set_role(c, CLUSTER_WORKER, 0);
		return err_set(err, EXIT_WORK_FAILED, "deposed: the lease moved"
			       " on");
	}
	return 0;
}

/* Planner: ids of the rows offered or claimed. */
static int
cpg_in_flight(struct cluster *c, int64_t **ids, size_t *n, struct err *err)
{
	PGresult *res;
	int i;

	*ids = NULL;
	*n = 0;
	res = cpg_q(c, "SELECT id FROM work WHERE state <> 'done' ORDER BY id",
		    0, NULL, err);
	if (res == NULL)
		return -1;
	*n = (size_t)PQntuples(res);
	*ids = *n > 0 ? xcalloc(*n, sizeof **ids) : NULL;
	for (i = 0; i < PQntuples(res); i++)
		(*ids)[i] = cpg_i64(res, i, 0);
	PQclear(res);
	return 0;
}

/* Planner: every row of the work table, with its state. */
static int
cpg_work_all(struct cluster *c, struct cluster_work **out, size_t *n,
	     struct err *err)
{
	static const char sql[] = "SELECT " CPG_WORK_COLS ", state FROM work"
				  " ORDER BY id";
	PGresult *res;

	*out = NULL;
	*n = 0;
	if (cpg_need_planner(c, err) < 0)
		return -1;
	if ((res = cpg_q(c, sql, 0, NULL, err)) == NULL)
		return -1;
	cpg_work_rows(res, out, n);
	for (size_t i = 0; i < *n; i++)
		cpg_str(res, (int)i, 12, (*out)[i].state,
			sizeof (*out)[i].state);
	PQclear(res);
	return 0;
}

/* Planner stopping: its own runs in flight become its claims (claim_own
 * in cluster.h), fenced by the lease. */
static int
cpg_claim_own(struct cluster *c, const struct cluster_offer *o, size_t n,
	      struct err *err)
{
	static const char sql[] =
		"WITH ok AS (SELECT 1 FROM lease WHERE id = 1 AND holder = $1"
		"  AND generation = $2 AND expires_at > now()),"
		" ins AS (INSERT INTO work (id, request, job, keys, attempt,"
		"  generation, state, claimed_by, incarnation, claimed_at)"
		"  SELECT t.id, nullif(t.request, 0), t.job,"
		"  string_to_array(t.keys, E'\\x1f'), t.attempt, $2, 'claimed',"
		"  $1, $3, now()"
		"  FROM unnest($4::bigint[], $5::bigint[], $6::text[],"
		"  $7::text[], $8::int[]) AS t(id, request, job, keys, attempt)"
		"  WHERE EXISTS (SELECT 1 FROM ok) RETURNING 1)"
		" SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM ins)";
	struct pgsql_array a[5];
	char gen[32], inc[32];
	const char *v[8];
	PGresult *res;
	size_t k;
	int64_t ok, ins;

	if (cpg_need_planner(c, err) < 0)
		return -1;
	if (n == 0)
		return 0;
	cpg_offer_arrays(o, n, a);
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	v[0] = c->node;
	v[1] = gen;
	v[2] = inc;
	for (k = 0; k < 5; k++)
		v[3 + k] = pgsql_array_end(&a[k]);
	res = cpg_q(c, sql, 8, v, err);
	for (k = 0; k < 5; k++)
		pgsql_array_free(&a[k]);
	if (res == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0);
	ins = cpg_i64(res, 0, 1);
	PQclear(res);
	if (ok != 1) {
		cpg_set_role(c, CLUSTER_WORKER, 0);
		return err_set(err, EXIT_WORK_FAILED, "deposed: the lease moved"
			       " on");
	}
	if (ins != (int64_t)n)
		return err_set(err, EXIT_WORK_FAILED, "%" PRId64 " of %zu rows"
			       " inserted", ins, n);
	return 0;
}

/* Planner stopping: release the lease, fenced, and keep off it. */
static void
cpg_resign(struct cluster *c)
{
	static const char sql[] =
		"UPDATE lease SET holder = NULL, expires_at = now()"
		" WHERE id = 1 AND holder = $1 AND generation = $2";
	char gen[32];
	const char *v[2] = { c->node, gen };
	struct err err;

	c->resigned = true;
	if (c->role != CLUSTER_PLANNER)
		return;
	snprintf(gen, sizeof gen, "%" PRId64, c->generation);
	if (c->pg != NULL)
		PQclear(cpg_q(c, sql, 2, v, &err));
	cpg_log(c, 5, "cluster: node=%s hands the lease over (generation %"
		PRId64 ")", c->node, c->generation);
	cpg_set_role(c, c->db_ok ? CLUSTER_WORKER : CLUSTER_OFFLINE, 0);
}

/* Worker: claim offered runs of the given jobs. */
static int
cpg_claim(struct cluster *c, const char *const *jobs, size_t njobs,
	  size_t max, struct cluster_work **out, size_t *n, struct err *err)
{
	static const char sql[] =
		"WITH me AS (SELECT 1 FROM nodes WHERE name = $1"
		"  AND incarnation = $2 AND role <> 'stopped'),"
		" pick AS (SELECT id FROM work WHERE state = 'offered'"
		"  AND job = ANY($3::text[]) AND EXISTS (SELECT 1 FROM me)"
		"  ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED)"
		" UPDATE work w SET state = 'claimed', claimed_by = $1,"
		" incarnation = $2, claimed_at = now()"
		" FROM pick WHERE w.id = pick.id AND w.state = 'offered'"
		" RETURNING w.id, coalesce(w.request, 0), w.job,"
		" array_to_string(w.keys, E'\\x1f'), w.attempt, w.generation,"
		" " CPG_MS("w.claimed_at") ", w.claimed_by, w.failed,"
		" w.interrupted, w.error, w.result";
	struct pgsql_array a = { 0 };
	char inc[32], lim[32];
	const char *v[4] = { c->node, inc, NULL, lim };
	PGresult *res;
	size_t i;

	*out = NULL;
	*n = 0;
	if (max == 0 || njobs == 0 || c->role == CLUSTER_OFFLINE ||
	    c->incarnation == 0)
		return c->pg == NULL ? err_set(err, EXIT_WORK_FAILED, "the"
					       " state store is not connected:"
					       " %s", c->db_error) : 0;
	for (i = 0; i < njobs; i++)
		pgsql_array_text(&a, jobs[i]);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(lim, sizeof lim, "%zu", max);
	v[2] = pgsql_array_end(&a);
	res = cpg_q(c, sql, 4, v, err);
	pgsql_array_free(&a);
	if (res == NULL)
		return -1;
	cpg_work_rows(res, out, n);
	PQclear(res);
	return 0;
}

/* Worker: record a claimed run's end, if the claim still stands. */
static int
cpg_finish(struct cluster *c, int64_t id, const struct cluster_result *r,
	   struct err *err)
{
	static const char sql[] =
		"WITH u AS (UPDATE work SET state = 'done', finished_at = now(),"
		"  failed = $4, error = $5, result = $6"
		"  WHERE id = $1 AND claimed_by = $2 AND incarnation = $3"
		"  AND state = 'claimed' RETURNING 1),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM u))"
		" SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM n)";
	char sid[32], inc[32];
	const char *v[6] = { sid, c->node, inc, r->failed ? "t" : "f",
			     r->error, r->result };
	PGresult *res;
	int ok;

	snprintf(sid, sizeof sid, "%" PRId64, id);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	if ((res = cpg_q(c, sql, 6, v, err)) == NULL)
		return -1;
	ok = cpg_i64(res, 0, 0) == 1;
	PQclear(res);
	if (!ok)
		cpg_log(c, 4, "cluster: node=%s run=%" PRId64 ": result"
			" refused: the run was given up on meanwhile (this"
			" node was declared dead); it was queued again",
			c->node, id);
	return ok;
}

/* Read a finish_claim's rows: the finishes recorded into f, the claims
 * into *out. */
static void
cpg_exchanged(struct cluster *c, const PGresult *res, struct cluster_finish *f,
	      size_t nf, struct cluster_work **out, size_t *n)
{
	int nt = PQntuples(res);
	size_t i, nc = 0;

	for (int r = 0; r < nt; r++)
		nc += cpg_i64(res, r, 12) == 2;
	*out = nc > 0 ? xcalloc(nc, sizeof **out) : NULL;
	for (int r = 0; r < nt; r++) {
		int64_t kind = cpg_i64(res, r, 12), id = cpg_i64(res, r, 0);

		if (kind == 2) {
			cpg_work_row(res, r, &(*out)[(*n)++]);
			continue;
		}
		for (i = 0; kind == 1 && i < nf; i++)
			if (f[i].id == id)
				f[i].ok = 1;
	}
	for (i = 0; i < nf; i++)
		if (!f[i].ok)
			cpg_log(c, 4, "cluster: node=%s run=%" PRId64 ": result"
				" refused: the run was given up on meanwhile"
				" (this node was declared dead); it was queued"
				" again", c->node, f[i].id);
}

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
static int
cpg_finish_claim(struct cluster *c, struct cluster_finish *f, size_t nf,
		 const char *const *jobs, size_t njobs, size_t max,
		 struct cluster_work **out, size_t *n, struct err *err)
{
	static const char sql[] =
		"WITH me AS (SELECT 1 FROM nodes WHERE name = $1"
		"  AND incarnation = $2 AND role <> 'stopped'),"
		" f AS (UPDATE work w SET state = 'done', finished_at = now(),"
		"  failed = t.failed, error = t.error, result = t.result"
		"  FROM unnest($3::bigint[], $4::boolean[], $5::text[],"
		"  $6::text[]) AS t(id, failed, error, result)"
		"  WHERE w.id = ANY($3::bigint[]) AND w.id = t.id"
		"  AND w.claimed_by = $1 AND w.incarnation = $2"
		"  AND w.state = 'claimed' RETURNING w.id),"
		" n AS (SELECT pg_notify('bf_done', '')"
		"  WHERE EXISTS (SELECT 1 FROM f)),"
		" pick AS (SELECT id FROM work WHERE state = 'offered'"
		"  AND job = ANY($7::text[]) AND $8 > 0"
		"  AND EXISTS (SELECT 1 FROM me)"
		"  ORDER BY id LIMIT $8 FOR UPDATE SKIP LOCKED),"
		" c AS (UPDATE work w SET state = 'claimed', claimed_by = $1,"
		"  incarnation = $2, claimed_at = now()"
		"  FROM pick WHERE w.id = pick.id AND w.state = 'offered'"
		"  RETURNING w.*)"
		" SELECT (SELECT count(*) FROM n), 0, '', '', 0, 0, 0, '', false,"
		"  false, NULL, NULL, 0"
		" UNION ALL SELECT id, 0, '', '', 0, 0, 0, '', false, false, NULL,"
		"  NULL, 1 FROM f"
		" UNION ALL SELECT " CPG_WORK_COLS ", 2 FROM c";
	struct pgsql_array a[5];
	char inc[32], lim[32];
	const char *v[8];
	PGresult *res;
	size_t i, k;

	*out = NULL;
	*n = 0;
	for (i = 0; i < nf; i++)
		f[i].ok = 0;
	if (c->role == CLUSTER_OFFLINE || c->incarnation == 0 || c->pg == NULL)
		return err_set(err, EXIT_WORK_FAILED, "the state store is not"
			       " connected: %s", c->db_error);
	if (njobs == 0)
		max = 0;
	if (nf == 0 && max == 0)
		return 0;
	memset(a, 0, sizeof a);
	for (i = 0; i < nf; i++) {
		pgsql_array_int(&a[0], f[i].id);
		pgsql_array_int(&a[1], f[i].r.failed);
		pgsql_array_text(&a[2], f[i].r.error);
		pgsql_array_text(&a[3], f[i].r.result);
	}
	for (i = 0; i < njobs; i++)
		pgsql_array_text(&a[4], jobs[i]);
	snprintf(inc, sizeof inc, "%" PRId64, c->incarnation);
	snprintf(lim, sizeof lim, "%zu", max);
	v[0] = c->node;
	v[1] = inc;
	for (k = 0; k < 5; k++)
		v[2 + k] = pgsql_array_end(&a[k]);
	v[7] = lim;
	res = cpg_qp(c, CPG_P_EXCHANGE, sql, 8, v, err);
	for (k = 0; k < 5; k++)
		pgsql_array_free(&a[k]);
	if (res == NULL)
		return -1;
	cpg_exchanged(c, res, f, nf, out, n);
	PQclear(res);
	return 0;
}

/* Any node: the nodes table. */
static int
cpg_nodes(struct cluster *c, struct cluster_node **out, size_t *n,
	  int64_t *now_ms, struct err *err)
{
	static const char sql[] =
		"SELECT name, incarnation, " CPG_MS("last_seen") ", "
		CPG_MS("started_at") ", running, config_hash, role, "
		CPG_MS("now()") " FROM nodes ORDER BY name";
	PGresult *res;
	int i;

	*out = NULL;
	*n = 0;
	if ((res = cpg_q(c, sql, 0, NULL, err)) == NULL)
		return -1;
	*n = (size_t)PQntuples(res);
	*out = *n > 0 ? xcalloc(*n, sizeof **out) : NULL;
	*now_ms = 0;
	for (i = 0; i < PQntuples(res); i++) {
		struct cluster_node *nd = &(*out)[i];

		cpg_str(res, i, 0, nd->name, sizeof nd->name);
		nd->incarnation = cpg_i64(res, i, 1);
		nd->last_seen_ms = cpg_i64(res, i, 2);
		nd->started_ms = cpg_i64(res, i, 3);
		nd->running = (int)cpg_i64(res, i, 4);
		cpg_str(res, i, 5, nd->config_hash, sizeof nd->config_hash);
		cpg_str(res, i, 6, nd->role, sizeof nd->role);
		*now_ms = cpg_i64(res, i, 7);
	}
	PQclear(res);
	return 0;
}

/* Non-planner: post a request for the planner. */
static int
cpg_forward(struct cluster *c, const void *req, size_t len,
	    int64_t timeout_ms, cluster_reply_cb *cb, void *arg,
	    struct err *err)
{
	static const char sql[] =
		"WITH m AS (INSERT INTO mailbox (from_node, request)"
		"  VALUES ($1, $2) RETURNING id),"
		" n AS (SELECT pg_notify('bf_mail', '') FROM m)"
		" SELECT (SELECT id FROM m), (SELECT count(*) FROM n)";
	const char *v[2] = { c->node, req };
	int lens[2] = { 0, (int)len }, fmts[2] = { 0, 1 };
	struct cpg_fwd *f;
	PGresult *res;

	if (len > CLUSTER_MAIL_MAX)
		return err_set(err, EXIT_BAD_INPUT, "request too large to"
			       " forward (%zu bytes)", len);
	if ((res = cpg_exec(c, sql, 2, v, lens, fmts, err)) == NULL)
		return -1;
	f = xcalloc(1, sizeof *f);
	f->id = cpg_i64(res, 0, 0);
	PQclear(res);
	f->timeout_ms = timeout_ms;
	f->deadline = cpg_mono_ms() + timeout_ms;
	f->cb = cb;
	f->arg = arg;
	f->next = c->fwd;
	c->fwd = f;
	cpg_fwd_arm(c);
	/* a quick planner answers while the INSERT's result is on its way */
	for (size_t i = 0; i < CPG_EARLY; i++)
		if (c->early[i] == f->id) {
			c->early[i] = 0;
			f->answered = true;
			cpg_kick(c);
		}
	return 0;
}

/* Planner: the oldest unanswered request not taken yet (one taken and
 * held, a forwarded wait, is not taken again). */
static int
cpg_mail_take(struct cluster *c, struct cluster_mail **out, struct err *err)
{
	static const char sql[] =
		"SELECT id, from_node, request FROM mailbox"
		" WHERE response IS NULL AND id <> ALL ($1::bigint[])"
		" ORDER BY id LIMIT 1";
	struct cluster_mail *m;
	unsigned char *bytes;
	PGresult *res;
	size_t len = 0;
	struct pgsql_array ids = {0};
	const char *v[1];

	*out = NULL;
	if (cpg_need_planner(c, err) < 0)
		return -1;
	for (size_t i = 0; i < c->ntaken; i++)
		pgsql_array_int(&ids, c->taken[i]);
	v[0] = pgsql_array_end(&ids);
	res = cpg_q(c, sql, 1, v, err);
	pgsql_array_free(&ids);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return 0;
	}
	m = xcalloc(1, sizeof *m);
	m->id = cpg_i64(res, 0, 0);
	c->taken = xreallocarray(c->taken, c->ntaken + 1, sizeof *c->taken);
	c->taken[c->ntaken++] = m->id;
	cpg_str(res, 0, 1, m->from, sizeof m->from);
	bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 2),
				&len);
	PQclear(res);
	m->req = xmalloc(len + 1);
	if (bytes != NULL)
		memcpy(m->req, bytes, len);
	else
		len = 0;
	((char *)m->req)[len] = '\0';
	m->len = len;
	PQfreemem(bytes);
	*out = m;
	return 0;
}

/* Planner: answer request id. */
static int
cpg_mail_answer(struct cluster *c, int64_t id, const void *resp, size_t len,
		struct err *err)
{
	static const char sql[] =
		"WITH u AS (UPDATE mailbox SET response = $2, answered_at = now()"
		"  WHERE id = $1 AND response IS NULL RETURNING id),"
		" n AS (SELECT pg_notify('bf_reply', id::text) FROM u)"
		" SELECT (SELECT count(*) FROM n)";
	char sid[32];
	const char *v[2] = { sid, resp != NULL ? resp : "" };
	int lens[2] = { 0, (int)len }, fmts[2] = { 0, 1 };
	PGresult *res;

	for (size_t i = 0; i < c->ntaken; i++)
		if (c->taken[i] == id) {
			c->taken[i] = c->taken[--c->ntaken];
			break;
		}
	if (len > CLUSTER_MAIL_MAX)
		return err_set(err, EXIT_WORK_FAILED, "answer too large to"
			       " forward (%zu bytes)", len);
	snprintf(sid, sizeof sid, "%" PRId64, id);
	if ((res = cpg_exec(c, sql, 2, v, lens, fmts, err)) == NULL)
		return -1;
	PQclear(res);
	return 0;
}

/* Free rows from claim or results. */
static void
cpg_work_free(struct cluster_work *w, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < w[i].nkeys; k++)
			free(w[i].keys[k]);
		free(w[i].keys);
		free(w[i].error);
		free(w[i].result);
	}
	free(w);
}

/* Free a request taken from the mailbox. */
static void
cpg_mail_free(struct cluster_mail *m)
{
	if (m != NULL)
		free(m->req);
	free(m);
}

const struct cluster_driver cluster_pg_driver = {
	.open = cpg_open,
	.close = cpg_close,
	.free = cpg_free,
	.set_running = cpg_set_running,
	.set_config_hash = cpg_set_config_hash,
	.set_lease = cpg_set_lease,
	.state = cpg_state,
	.offer = cpg_offer,
	.results = cpg_results,
	.forget = cpg_forget,
	.in_flight = cpg_in_flight,
	.work_rows = cpg_work_all,
	.claim_own = cpg_claim_own,
	.planner_now = cpg_planner_now,
	.resign = cpg_resign,
	.claim = cpg_claim,
	.finish = cpg_finish,
	.finish_claim = cpg_finish_claim,
	.nodes = cpg_nodes,
	.forward = cpg_forward,
	.mail_take = cpg_mail_take,
	.mail_answer = cpg_mail_answer,
	.work_free = cpg_work_free,
	.mail_free = cpg_mail_free,
};
