/*
 * cluster_pg_conn.c - several hosts on PostgreSQL: small things, the
 * events handed to the daemon (NOTIFY, the kick), and the connection:
 * statements sent without blocking the loop longer than the call bound,
 * connecting and preparing (cluster_pg_int.h; the rules are at the top
 * of cluster_pg.c).
 */
#include "cluster_pg_int.h"

#include "clock_ms.h"

/* ------------------------------------------------------------------ */
/* Small things                                                        */
/* ------------------------------------------------------------------ */

/* Milliseconds on the monotonic clock (clock_ms.h, UTIL-2). */
int64_t
cpg_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int
cpg_deposed(struct cluster *c, const char *why, struct err *err)
{
	cpg_set_role(c, CLUSTER_WORKER, 0);
	return err_set(err, EXIT_WORK_FAILED, "deposed: the lease moved on%s%s",
		       why != NULL ? "; " : "", why != NULL ? why : "");
}

/* Milliseconds on the wall clock (for status only). */
static int64_t
cpg_wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* The bound on one statement: CLUSTER_CALL_MS, or a third of the lease. */
static int
cpg_call_ms(const struct cluster *c)
{
	int64_t hb = lease_heartbeat_ms(c->lease_s);

	return (int)(hb < CLUSTER_CALL_MS ? hb : CLUSTER_CALL_MS);
}

/* One line for the daemon's log. */
void __attribute__((format(printf, 3, 4)))
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

/* Split "a\x1fb" into an allocated array of keys. */
void
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

/* Have the kick deliver the pending events on the next loop turn. */
void
cpg_kick(struct cluster *c)
{
	if (!c->closing)
		uv_idle_start(&c->kick, cpg_kick_cb);
}

/* Change role (events follow through the kick). */
void
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
void
cpg_poll_closed_cb(uv_handle_t *h)
{
	free(h);
}

/* Drop the connection: the database is lost until the next heartbeat
 * connects again.  Lost work: none (claims stand until reaped). */
void
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
	/* a planner stays one until its local deadline (lease.h LEASE-2):
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
PGresult *
cpg_exec(struct cluster *c, const char *sql, int n, const char *const *vals,
	 const int *lens, const int *formats, struct err *err)
{
	return cpg_exec_p(c, -1, sql, n, vals, lens, formats, err);
}

/* cpg_exec_p with text parameters only. */
PGresult *
cpg_qp(struct cluster *c, int prep, const char *sql, int n,
       const char *const *vals, struct err *err)
{
	return cpg_exec_p(c, prep, sql, n, vals, NULL, NULL, err);
}

/* cpg_exec with text parameters only. */
PGresult *
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
int
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
	/* The prepared statements (enum cpg_prep) touch the small
	 * coordination tables by key or whole (work has its primary key
	 * only): their one generic plan is the plan their parameters would
	 * get, without planning them again at each call (the exchange, a
	 * dozen plan nodes, is sent at every turn). */
	res = cpg_q(c, "SET plan_cache_mode = force_generic_plan;"
		    " LISTEN bf_work; LISTEN bf_reply", 0, NULL, err);
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
