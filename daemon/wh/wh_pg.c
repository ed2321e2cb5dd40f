/*
 * wh_pg.c - the PostgreSQL warehouse driver (struct wh_driver, wh.h),
 * through libpq.
 *
 * Threads.  Like the SQLite driver, a connection belongs to one executor
 * worker thread, which opens it, keeps it across runs and blocks on it;
 * the event loop never touches libpq.  That is the design the executor
 * already has (one long-lived connection per worker, the driver called
 * synchronously), so PostgreSQL needs no second scheduling model, and a
 * run's whole transaction stays on one connection, as it must.  The
 * alternative, libpq's asynchronous API on a uv_poll_t in the loop, would
 * have meant a second, callback-driven executor path for one driver.
 *
 * Cancellation.  The worker does not sit in a blocking PQexec: it sends
 * each statement with PQsendQueryParams and waits in poll() on the
 * connection's socket and on an eventfd.  interrupt() (the one call made
 * from another thread, the loop's timeout or cancel) only raises a flag
 * and writes the eventfd: it never blocks the loop.  The worker wakes,
 * sends the server a cancel request (PQcancel, which opens a connection
 * of its own and may take a moment: the worker's moment, not the loop's)
 * and keeps reading until the server answers "canceling statement".  A
 * server that has not answered WHPG_CANCEL_GRACE_MS after the cancel is
 * given up on: the call fails, the connection is marked unusable and
 * closed (the server then ends the statement when it sees the socket
 * gone).  As in the SQLite driver, the flag also fails every later call
 * until the next begin(), so an interrupt between two statements is not
 * lost.  ROLLBACK and COMMIT are never cancelled.
 *
 * Statements.  Job SQL is split on the tokenizer of pgsql.c and each
 * statement sent with PQexecParams semantics (extended protocol, text
 * parameters, types inferred by the server), :partition and friends as
 * $1...  A check runs inside SAVEPOINT + SET TRANSACTION READ ONLY and is
 * rolled back to the savepoint afterwards, so a check cannot write.
 *
 * The transaction is the daemon's.  Each statement of job SQL, a check or
 * a sensor is sent alone (the extended protocol takes one statement), and
 * only after sqlscan_txn (PostgreSQL dialect) found it does not control
 * the transaction: COMMIT, END, ROLLBACK (not ROLLBACK TO), ABORT, ...
 * AND CHAIN, PREPARE TRANSACTION, BEGIN, START TRANSACTION, SET
 * TRANSACTION, SET SESSION CHARACTERISTICS, a DO block that commits.  Only
 * such a statement, sent on its own, can end a transaction block: inside
 * one, PostgreSQL refuses a procedure's or a DO block's COMMIT ("invalid
 * transaction termination"), and a function cannot commit; so CALL is
 * allowed.  After each statement, and before the daemon's COMMIT, the
 * transaction must still be open (PQTRANS_INTRANS); else the run fails
 * and whatever is open is rolled back.  Work a statement does on another
 * connection (dblink) is not the run's and is not covered.
 *
 * Connections.  Opened with PQconnectdbParams(expand_dbname): the
 * warehouse's conninfo, plus connect_timeout=10 and application_name
 * backfilld unless it says otherwise, plus the first line of
 * password_file when there is one (read at each connect, never kept by
 * the driver, never in a message).  libpq's own sources (PGPASSWORD,
 * PGPASSFILE, ~/.pgpass, PGHOST...) work as usual.  A connection the
 * server dropped while idle (a restart) is reset once by begin(), before
 * anything runs; one lost inside a run fails that run ("warehouse "dw":
 * connection lost: ...") and reports !usable(), so the executor closes
 * it and the run's retry, after its backoff, connects afresh.  Messages
 * name the warehouse, host and port only.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "clock_ms.h"
#include "digest.h"
#include "pg_conn.h"
#include "pgsql.h"
#include "sqlscan.h"
#include "wh.h"
#include "xalloc.h"

#define WHPG_CANCEL_GRACE_MS 5000

extern const struct wh_driver wh_pg_driver;

struct whpg_conn {
	struct wh_conn base;
	PGconn *pg;
	char *name;             /* the warehouse's name, for messages */
	int wakefd;             /* eventfd: interrupt() wakes the worker */
	atomic_int interrupted; /* interrupt() since the last begin() */
	bool in_tx;             /* between begin() and commit()/rollback() */
	bool broken;
	int64_t changes;        /* rows written by exec_script() */
};

/* The driver's view of a connection. */
static struct whpg_conn *
whpg_conn(struct wh_conn *conn)
{
	return (struct whpg_conn *)conn;
}

/* Milliseconds on the monotonic clock. */
static int64_t
whpg_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* Make a libpq message one line: blanks collapsed, no trailing blank. */
static void
whpg_oneline(char *s)
{
	char *r, *w;
	bool blank = false;

	for (r = w = s; *r != '\0'; r++) {
		if (*r == '\n' || *r == '\r' || *r == '\t' || *r == ' ') {
			blank = w != s;
			continue;
		}
		if (blank)
			*w++ = ' ';
		blank = false;
		*w++ = *r;
	}
	*w = '\0';
}

/* The connection's last libpq message, one line, without "ERROR:  ". */
static void
whpg_pqmsg(PGconn *pg, char *buf, size_t len)
{
	snprintf(buf, len, "%s", pg_conn_error(pg));
	whpg_oneline(buf);
}

/* Notices (DROP ... IF EXISTS skipping, ...) are not ours to print. */
static void
whpg_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Free a connection that is not (or no longer) open. */
static void
whpg_free(struct whpg_conn *c)
{
	if (c == NULL)
		return;
	if (c->pg != NULL)
		PQfinish(c->pg);
	if (c->wakefd >= 0)
		close(c->wakefd);
	free(c->name);
	free(c);
}

/* Connect to the warehouse's server. */
static int
whpg_open(const struct warehouse_def *wh, struct wh_conn **out,
	  struct err *err)
{
	char msg[ERR_MSG_MAX], where[256], who[ERR_MSG_MAX];
	struct whpg_conn *c;
	char *password = NULL;

	*out = NULL;
	if (wh->conninfo == NULL)
		return err_set(err, EXIT_BAD_INPUT,
		    "warehouse \"%s\": no postgres connection string", wh->name);
	c = xcalloc(1, sizeof *c);
	c->name = xstrdup(wh->name);
	c->base.drv = &wh_pg_driver;
	c->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	atomic_init(&c->interrupted, 0);
	if (c->wakefd == -1) {
		err_set(err, EXIT_INTERNAL, "warehouse \"%s\": eventfd: %s",
		    wh->name, strerror(errno));
		whpg_free(c);
		return -1;
	}
	if (wh->password_file != NULL) {
		snprintf(who, sizeof who, "warehouse \"%s\"", wh->name);
		if (pg_conn_password(who, wh->password_file, EXIT_WORK_FAILED,
				     true, &password, err) == -1) {
			whpg_free(c);
			return -1;
		}
	}
	c->pg = pg_conn_connect(wh->conninfo, password);
	if (c->pg == NULL) /* libpq could not allocate its connection */
		xalloc_exhausted("libpq");
	if (PQstatus(c->pg) != CONNECTION_OK) {
		pg_conn_where(c->pg, where, sizeof where);
		whpg_pqmsg(c->pg, msg, sizeof msg);
		err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\": cannot "
		    "connect to %s: %s", wh->name, where, msg);
		whpg_free(c);
		return -1;
	}
	PQsetNoticeProcessor(c->pg, whpg_notice, NULL);
	*out = &c->base;
	return 0;
}

/* Close the connection; the server rolls back anything open. */
static void
whpg_close(struct wh_conn *conn)
{
	if (conn != NULL)
		whpg_free(whpg_conn(conn));
}

/* Ask the server to cancel what the connection runs (worker thread). */
static void
whpg_cancel(struct whpg_conn *c)
{
	PGcancel *k;
	char buf[256];

	k = PQgetCancel(c->pg);
	if (k == NULL)
		return;
	PQcancel(k, buf, sizeof buf);
	PQfreeCancel(k);
}

/* How a wait for a result ended. */
enum whpg_waited {
	WHPG_READY,        /* a result can be read */
	WHPG_LOST,         /* the connection failed */
	WHPG_CANCEL_IGNORED /* the server ignored a cancel for
			     * WHPG_CANCEL_GRACE_MS */
};

/*
 * Wait until a result can be read without blocking.  A guarded wait also
 * watches the eventfd and cancels the statement once interrupted.
 */
static enum whpg_waited
whpg_wait(struct whpg_conn *c, bool guarded, bool *cancelled,
	  int64_t *deadline)
{
	struct pollfd pfd[2];
	int64_t left;
	uint64_t v;
	int timeout, r;

	while (PQisBusy(c->pg)) {
		if (guarded && !*cancelled && atomic_load(&c->interrupted)) {
			whpg_cancel(c);
			*cancelled = true;
			*deadline = whpg_now_ms() + WHPG_CANCEL_GRACE_MS;
		}
		timeout = -1;
		if (*cancelled) {
			left = *deadline - whpg_now_ms();
			if (left <= 0)
				return WHPG_CANCEL_IGNORED;
			timeout = (int)left;
		}
		pfd[0].fd = PQsocket(c->pg);
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		pfd[1].fd = c->wakefd;
		pfd[1].events = POLLIN;
		pfd[1].revents = 0;
		if (pfd[0].fd < 0)
			return WHPG_LOST;
		r = poll(pfd, guarded ? 2 : 1, timeout);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			return WHPG_LOST;
		}
		if (guarded && (pfd[1].revents & POLLIN) != 0 &&
		    read(c->wakefd, &v, sizeof v) == -1 && errno != EAGAIN)
			return WHPG_LOST;
		if ((pfd[0].revents & (POLLIN | POLLERR | POLLHUP)) != 0 &&
		    !PQconsumeInput(c->pg))
			return WHPG_LOST;
	}
	return WHPG_READY;
}

/* True for an error after which the connection is no use. */
static bool
whpg_fatal(struct whpg_conn *c, const PGresult *res)
{
	const char *state;

	if (PQstatus(c->pg) != CONNECTION_OK)
		return true;
	state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	return state != NULL && (strncmp(state, "08", 2) == 0 ||
	    strncmp(state, "57P", 3) == 0);
}

/* One line for a failed statement: the server's message and detail. */
static void
whpg_errmsg(struct whpg_conn *c, const PGresult *res, bool guarded,
	    char *msg, size_t len)
{
	const char *primary, *detail;
	char buf[ERR_MSG_MAX];

	if (guarded && atomic_load(&c->interrupted)) {
		snprintf(msg, len, "interrupted");
		if (whpg_fatal(c, res))
			c->broken = true;
		return;
	}
	primary = res != NULL ?
	    PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	detail = res != NULL ?
	    PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	if (primary == NULL)
		whpg_pqmsg(c->pg, buf, sizeof buf);
	else if (detail != NULL)
		snprintf(buf, sizeof buf, "%s (%s)", primary, detail);
	else
		snprintf(buf, sizeof buf, "%s", primary);
	whpg_oneline(buf);
	if (whpg_fatal(c, res)) {
		c->broken = true;
		snprintf(msg, len, "warehouse \"%s\": connection lost: %s",
		    c->name, buf);
		return;
	}
	snprintf(msg, len, "%s (warehouse \"%s\")", buf, c->name);
}

/*
 * Run one statement (no ';' inside) with text parameters and wait for its
 * result, cancelling it when interrupted if `guarded`.  On success *res
 * holds the result (the caller clears it; NULL to clear here).
 */
static int
whpg_exec(struct whpg_conn *c, const char *sql, int nparams,
	  const char *const *values, bool guarded, PGresult **res,
	  char *msg, size_t len)
{
	PGresult *r, *keep = NULL;
	ExecStatusType st;
	bool cancelled = false, dead = false;
	int64_t deadline = 0;
	char *copy;
	enum whpg_waited w;

	if (res != NULL)
		*res = NULL;
	if (guarded && atomic_load(&c->interrupted)) {
		snprintf(msg, len, "interrupted");
		return -1;
	}
	if (PQstatus(c->pg) != CONNECTION_OK ||
	    !PQsendQueryParams(c->pg, sql, nparams, NULL, values, NULL, NULL,
	    0)) {
		whpg_errmsg(c, NULL, false, msg, len);
		c->broken = true;
		return -1;
	}
	for (;;) {
		if (!dead) {
			w = whpg_wait(c, guarded, &cancelled, &deadline);
			if (w == WHPG_CANCEL_IGNORED) {
				c->broken = true;
				PQclear(keep);
				snprintf(msg, len, "interrupted (the server did "
				    "not answer the cancel request within %d s)",
				    WHPG_CANCEL_GRACE_MS / 1000);
				return -1;
			}
			dead = w == WHPG_LOST;
		}
		r = PQgetResult(c->pg);
		if (r == NULL)
			break;
		st = PQresultStatus(r);
		if (st == PGRES_COPY_IN) {
			PQputCopyEnd(c->pg, "COPY FROM STDIN is not supported "
			    "in job SQL");
			PQclear(r);
			continue;
		}
		if (st == PGRES_COPY_OUT) {
			while (PQgetCopyData(c->pg, &copy, 0) > 0)
				PQfreemem(copy);
			PQclear(r);
			continue;
		}
		if (keep == NULL || (PQresultStatus(keep) != PGRES_FATAL_ERROR &&
		    st == PGRES_FATAL_ERROR)) {
			PQclear(keep);
			keep = r;
		} else {
			PQclear(r);
		}
		if (PQstatus(c->pg) != CONNECTION_OK)
			dead = true;
	}
	st = keep != NULL ? PQresultStatus(keep) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ||
	    st == PGRES_EMPTY_QUERY) {
		if (res != NULL)
			*res = keep;
		else
			PQclear(keep);
		return 0;
	}
	whpg_errmsg(c, keep, guarded, msg, len);
	PQclear(keep);
	return -1;
}

/* -1 with msg when statement sql controls the run's transaction (the top
 * of this file); 0 when it may be sent. */
static int
whpg_txn_refuse(const char *sql, char *msg, size_t len)
{
	struct sqlscan_txn t;

	if (sqlscan_txn(sql, SQLSCAN_PG, 0, &t) < 0)
		return 0;
	snprintf(msg, len, "%s controls the run's transaction: "
	    SQLSCAN_TXN_ADVICE, t.what);
	return -1;
}

/* Run a fixed statement; on failure fill err with its message. */
static int
whpg_simple(struct whpg_conn *c, const char *sql, bool guarded,
	    struct err *err)
{
	char msg[ERR_MSG_MAX];

	if (whpg_exec(c, sql, 0, NULL, guarded, NULL, msg, sizeof msg) == -1)
		return err_set(err, EXIT_WORK_FAILED, "%s", msg);
	return 0;
}

/* Reconnect with the same parameters (PQreset). */
static int
whpg_reset(struct whpg_conn *c, struct err *err)
{
	char msg[ERR_MSG_MAX], where[256];

	PQreset(c->pg);
	pg_conn_cloexec(c->pg);
	if (PQstatus(c->pg) != CONNECTION_OK) {
		c->broken = true;
		pg_conn_where(c->pg, where, sizeof where);
		whpg_pqmsg(c->pg, msg, sizeof msg);
		return err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\": "
		    "connection lost: cannot reconnect to %s: %s", c->name,
		    where, msg);
	}
	c->broken = false;
	return 0;
}

/* BEGIN, lowering any interrupt left by an earlier run. */
static int
whpg_begin(struct wh_conn *conn, struct err *err)
{
	struct whpg_conn *c = whpg_conn(conn);
	uint64_t v;

	atomic_store(&c->interrupted, 0);
	while (read(c->wakefd, &v, sizeof v) > 0)
		;
	c->in_tx = false;
	if (PQstatus(c->pg) != CONNECTION_OK && whpg_reset(c, err) == -1)
		return -1;
	if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		whpg_simple(c, "ROLLBACK", false, NULL);
	if (whpg_simple(c, "BEGIN", true, err) == -1) {
		if (PQstatus(c->pg) == CONNECTION_OK ||
		    atomic_load(&c->interrupted))
			return -1;
		/* Dropped while idle (a server restart): once more. */
		if (whpg_reset(c, err) == -1 ||
		    whpg_simple(c, "BEGIN", true, err) == -1)
			return -1;
	}
	c->broken = false;
	c->in_tx = true;
	return 0;
}

/* Rows a statement wrote, by its command tag. */
static int64_t
whpg_written(const PGresult *res)
{
	const char *tag = PQcmdStatus((PGresult *)res);

	if (strncmp(tag, "INSERT ", 7) != 0 && strncmp(tag, "UPDATE ", 7) != 0 &&
	    strncmp(tag, "DELETE ", 7) != 0 && strncmp(tag, "MERGE ", 6) != 0)
		return 0;
	return strtoll(PQcmdTuples((PGresult *)res), NULL, 10);
}

/* Run the statements of sql in order, each with its parameters bound. */
static int
whpg_exec_script(struct wh_conn *conn, const char *sql,
		 const struct wh_param *params, size_t nparams,
		 struct err *err)
{
	struct whpg_conn *c = whpg_conn(conn);
	struct pgsql_script script;
	const char **values = NULL;
	char msg[ERR_MSG_MAX];
	struct err perr;
	PGresult *res;
	size_t i;
	int rc = 0;

	if (pgsql_parse(sql, &script, &perr) == -1)
		return err_set(err, EXIT_WORK_FAILED, "statement %zu failed: %s",
		    script.n, perr.msg);
	for (i = 0; i < script.n && rc == 0; i++) {
		const struct pgsql_stmt *st = &script.stmts[i];

		values = xcalloc(st->nnames + 1, sizeof *values);
		if (pgsql_values(st, params, nparams, values, &perr) == -1) {
			rc = err_set(err, EXIT_WORK_FAILED, "statement %zu "
			    "failed: %s", i + 1, perr.msg);
		} else if (whpg_txn_refuse(st->sql, msg, sizeof msg) == -1) {
			rc = err_set(err, EXIT_WORK_FAILED, "statement %zu "
			    "failed: %s", i + 1, msg);
		} else if (whpg_exec(c, st->sql, (int)st->nnames, values, true,
		    &res, msg, sizeof msg) == -1) {
			rc = err_set(err, EXIT_WORK_FAILED, "statement %zu "
			    "failed: %s", i + 1, msg);
		} else {
			c->changes += whpg_written(res);
			PQclear(res);
			if (c->in_tx &&
			    PQtransactionStatus(c->pg) != PQTRANS_INTRANS)
				rc = err_set(err, EXIT_WORK_FAILED, "statement "
				    "%zu failed: it ended the run's transaction:"
				    " " SQLSCAN_TXN_ADVICE, i + 1);
		}
		free(values);
	}
	pgsql_script_free(&script);
	return rc;
}

/* Run one read-only statement; the first column of its first row. */
static int
whpg_query_value(struct wh_conn *conn, const char *sql,
		 const struct wh_param *params, size_t nparams,
		 bool *has_row, char **value, struct err *err)
{
	struct whpg_conn *c = whpg_conn(conn);
	struct pgsql_script script;
	const char **values = NULL;
	char msg[ERR_MSG_MAX];
	struct err perr;
	PGresult *res = NULL;
	bool sp = false;
	int rc = -1;

	*has_row = false;
	*value = NULL;
	if (pgsql_parse(sql, &script, &perr) == -1)
		return err_set(err, EXIT_WORK_FAILED, "%s", perr.msg);
	if (script.n != 1) {
		snprintf(msg, sizeof msg, script.n == 0 ? "no statement" :
		    "a check is one statement");
		goto out;
	}
	values = xcalloc(script.stmts[0].nnames + 1, sizeof *values);
	if (pgsql_values(&script.stmts[0], params, nparams, values,
	    &perr) == -1) {
		snprintf(msg, sizeof msg, "%s", perr.msg);
		goto out;
	}
	if (whpg_txn_refuse(script.stmts[0].sql, msg, sizeof msg) == -1)
		goto out;
	if (c->in_tx) {
		if (whpg_exec(c, "SAVEPOINT backfilld_check", 0, NULL, true,
		    NULL, msg, sizeof msg) == -1)
			goto out;
		sp = true;
		if (whpg_exec(c, "SET TRANSACTION READ ONLY", 0, NULL, true,
		    NULL, msg, sizeof msg) == -1)
			goto out;
	}
	if (whpg_exec(c, script.stmts[0].sql, (int)script.stmts[0].nnames,
	    values, true, &res, msg, sizeof msg) == -1) {
		if (strstr(msg, "read-only transaction") != NULL)
			snprintf(msg, sizeof msg, "a check must not write");
		goto out;
	}
	if (c->in_tx && PQtransactionStatus(c->pg) != PQTRANS_INTRANS) {
		snprintf(msg, sizeof msg, "it ended the run's transaction: "
		    SQLSCAN_TXN_ADVICE);
		goto out;
	}
	if (PQntuples(res) > 0) {
		*has_row = true;
		if (PQnfields(res) > 0 && !PQgetisnull(res, 0, 0)) {
			*value = xstrdup(PQgetvalue(res, 0, 0));
		}
	}
	if (sp && (whpg_exec(c, "ROLLBACK TO SAVEPOINT backfilld_check", 0,
	    NULL, false, NULL, msg, sizeof msg) == -1 ||
	    whpg_exec(c, "RELEASE SAVEPOINT backfilld_check", 0, NULL, false,
	    NULL, msg, sizeof msg) == -1)) {
		free(*value);
		*value = NULL;
		*has_row = false;
		goto out;
	}
	rc = 0;
out:
	PQclear(res);
	free(values);
	pgsql_script_free(&script);
	if (rc == -1)
		return err_set(err, EXIT_WORK_FAILED, "%s", msg);
	return 0;
}

/* Every first-column value of one read-only statement (late_data
 * sensors), run outside the job's transaction in a READ ONLY one of its
 * own that is rolled back. */
static int
whpg_query_column(struct wh_conn *conn, const char *sql,
		  const struct wh_param *params, size_t nparams,
		  size_t max_values, char ***values, size_t *nvalues,
		  struct err *err)
{
	struct whpg_conn *c = whpg_conn(conn);
	struct pgsql_script script;
	const char **pv = NULL;
	char msg[ERR_MSG_MAX], **v = NULL;
	struct err perr;
	PGresult *res = NULL;
	size_t n = 0;
	bool tx = false;
	int rc = -1, rows;
	uint64_t ev;

	*values = NULL;
	*nvalues = 0;
	/* like begin(): a fresh call, not the tail of a stopped run */
	atomic_store(&c->interrupted, 0);
	while (read(c->wakefd, &ev, sizeof ev) > 0)
		;
	c->in_tx = false;
	if (PQstatus(c->pg) != CONNECTION_OK && whpg_reset(c, err) == -1)
		return -1;
	if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		whpg_simple(c, "ROLLBACK", false, NULL);
	if (pgsql_parse(sql, &script, &perr) == -1)
		return err_set(err, EXIT_WORK_FAILED, "%s", perr.msg);
	if (script.n != 1) {
		snprintf(msg, sizeof msg, script.n == 0 ? "no statement" :
		    "a sensor query is one statement");
		goto out;
	}
	pv = xcalloc(script.stmts[0].nnames + 1, sizeof *pv);
	if (pgsql_values(&script.stmts[0], params, nparams, pv, &perr) == -1) {
		snprintf(msg, sizeof msg, "%s", perr.msg);
		goto out;
	}
	if (whpg_txn_refuse(script.stmts[0].sql, msg, sizeof msg) == -1)
		goto out;
	if (whpg_exec(c, "BEGIN READ ONLY", 0, NULL, true, NULL, msg,
	    sizeof msg) == -1)
		goto out;
	tx = true;
	if (whpg_exec(c, script.stmts[0].sql, (int)script.stmts[0].nnames, pv,
	    true, &res, msg, sizeof msg) == -1) {
		if (strstr(msg, "read-only transaction") != NULL)
			snprintf(msg, sizeof msg, "a sensor query must not write");
		goto out;
	}
	rows = PQntuples(res);
	if (rows > 0 && PQnfields(res) > 0) {
		v = xcalloc((size_t)rows, sizeof *v);
		for (int i = 0; i < rows; i++) {
			if (PQgetisnull(res, i, 0))
				continue;
			if (n == max_values) {
				snprintf(msg, sizeof msg, "more than %zu values",
				    max_values);
				goto out;
			}
			v[n++] = xstrdup(PQgetvalue(res, i, 0));
		}
	}
	rc = 0;
out:
	PQclear(res);
	if (tx)
		whpg_exec(c, "ROLLBACK", 0, NULL, false, NULL, perr.msg,
		    sizeof perr.msg);
	free(pv);
	pgsql_script_free(&script);
	if (rc == -1) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return err_set(err, EXIT_WORK_FAILED, "%s", msg);
	}
	*values = v;
	*nvalues = n;
	return 0;
}

/* Append an array element, double-quoted, to the text array literal. */
static void
whpg_array_add(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t need = strlen(s) * 2 + 4;
	char *p;

	if (*len + need + 2 > *cap) {
		*cap = (*len + need + 2) * 2;
		*buf = xreallocarray(*buf, *cap, 1);
	}
	p = *buf + *len;
	if (*len > 1)
		*p++ = ',';
	*p++ = '"';
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			*p++ = '\\';
		*p++ = *s;
	}
	*p++ = '"';
	*p = '\0';
	*len = (size_t)(p - *buf);
}

/* Create the batch manifest (a temporary table dropped at commit). */
static int
whpg_manifest_fill(struct wh_conn *conn, const struct wh_manifest_row *rows,
		   size_t nrows, struct err *err)
{
	struct whpg_conn *c = whpg_conn(conn);
	char *arr[5] = { NULL, NULL, NULL, NULL, NULL };
	size_t len[5], cap[5], i, k;
	char msg[ERR_MSG_MAX];
	int rc = -1;

	if (whpg_simple(c, "DROP TABLE IF EXISTS pg_temp.backfill_manifest",
	    true, err) == -1 ||
	    whpg_simple(c, "CREATE TEMPORARY TABLE backfill_manifest ("
	    "partition_key text, partition_start text, partition_end text, "
	    "partition_start_utc timestamptz, partition_end_utc timestamptz) "
	    "ON COMMIT DROP", true, err) == -1)
		return -1;
	for (k = 0; k < 5; k++) {
		cap[k] = 64;
		len[k] = 1;
		arr[k] = xmalloc(cap[k]);
		strcpy(arr[k], "{");
	}
	for (i = 0; i < nrows; i++) {
		whpg_array_add(&arr[0], &len[0], &cap[0], rows[i].key);
		whpg_array_add(&arr[1], &len[1], &cap[1], rows[i].start);
		whpg_array_add(&arr[2], &len[2], &cap[2], rows[i].end);
		whpg_array_add(&arr[3], &len[3], &cap[3], rows[i].start_utc);
		whpg_array_add(&arr[4], &len[4], &cap[4], rows[i].end_utc);
	}
	for (k = 0; k < 5; k++) {
		/* whpg_array_add always leaves room for the brace. */
		arr[k][len[k]++] = '}';
		arr[k][len[k]] = '\0';
	}
	/* the UTC bounds are UTC whatever the session's TimeZone */
	if (whpg_exec(c, "INSERT INTO pg_temp.backfill_manifest SELECT k, s, e,"
	    " su AT TIME ZONE 'UTC', eu AT TIME ZONE 'UTC' FROM "
	    "unnest($1::text[], $2::text[], $3::text[], $4::timestamp[], "
	    "$5::timestamp[]) AS m(k, s, e, su, eu)", 5,
	    (const char *const *)arr, true, NULL, msg, sizeof msg) == -1)
		err_set(err, EXIT_WORK_FAILED, "%s", msg);
	else
		rc = 0;
	for (k = 0; k < 5; k++)
		free(arr[k]);
	return rc;
}

/* Drop the manifest inside the transaction, before commit. */
static int
whpg_manifest_drop(struct wh_conn *conn, struct err *err)
{
	return whpg_simple(whpg_conn(conn),
	    "DROP TABLE IF EXISTS pg_temp.backfill_manifest", true, err);
}

/* COMMIT (never cancelled); on failure nothing stays open. */
static int
whpg_commit(struct wh_conn *conn, struct err *err)
{
	struct whpg_conn *c = whpg_conn(conn);
	char msg[ERR_MSG_MAX];
	PGresult *res;
	int rc;

	c->in_tx = false;
	if (PQtransactionStatus(c->pg) == PQTRANS_INERROR) {
		whpg_simple(c, "ROLLBACK", false, NULL);
		return err_set(err, EXIT_WORK_FAILED, "the transaction had "
		    "failed and was rolled back");
	}
	if (PQtransactionStatus(c->pg) != PQTRANS_INTRANS) {
		/* it ended early (the top of this file): not ours to end */
		if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
			c->broken = true;
		return err_set(err, EXIT_WORK_FAILED, "the run's transaction "
		    "had ended before its commit");
	}
	rc = whpg_exec(c, "COMMIT", 0, NULL, false, &res, msg, sizeof msg);
	if (rc == 0) {
		/* COMMIT of a failed transaction answers ROLLBACK. */
		if (strcmp(PQcmdStatus(res), "COMMIT") != 0) {
			snprintf(msg, sizeof msg, "the server rolled the "
			    "transaction back");
			rc = -1;
		}
		PQclear(res);
	}
	if (rc == -1) {
		if (PQstatus(c->pg) == CONNECTION_OK &&
		    PQtransactionStatus(c->pg) != PQTRANS_IDLE &&
		    whpg_simple(c, "ROLLBACK", false, NULL) == -1)
			c->broken = true;
		return err_set(err, EXIT_WORK_FAILED, "%s", msg);
	}
	return 0;
}

/* ROLLBACK whatever is open (never cancelled). */
static void
whpg_rollback(struct wh_conn *conn)
{
	struct whpg_conn *c = whpg_conn(conn);
	PGTransactionStatusType ts;

	c->in_tx = false;
	if (PQstatus(c->pg) != CONNECTION_OK) {
		c->broken = true;
		return;
	}
	ts = PQtransactionStatus(c->pg);
	if (ts == PQTRANS_IDLE)
		return;
	if (ts != PQTRANS_INTRANS && ts != PQTRANS_INERROR) {
		c->broken = true;
		return;
	}
	if (whpg_simple(c, "ROLLBACK", false, NULL) == -1 ||
	    PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		c->broken = true;
}

/* Flag the run stopped and wake its worker (any thread, never blocks). */
static void
whpg_interrupt(struct wh_conn *conn)
{
	struct whpg_conn *c = whpg_conn(conn);
	uint64_t one = 1;
	ssize_t n;

	atomic_store(&c->interrupted, 1);
	n = write(c->wakefd, &one, sizeof one);
	(void)n;
}

/* Rows written by job SQL since the connection opened. */
static int64_t
whpg_changes(struct wh_conn *conn)
{
	return whpg_conn(conn)->changes;
}

/* False once the connection is lost or in a state we cannot clean. */
static bool
whpg_usable(const struct wh_conn *conn)
{
	const struct whpg_conn *c = (const struct whpg_conn *)conn;

	return !c->broken && PQstatus(c->pg) == CONNECTION_OK;
}

/* A partition's row count and the sum of hashtextextended() over each
 * row's binary form (record_send: every column by its type's send
 * function, float4 and float8 by their bits, numeric by its digits and
 * scale, timestamps as integers), within the transaction; the sum modulo
 * 2^64 in digest.h's one form.  No session setting (extra_float_digits,
 * DateStyle, TimeZone, IntervalStyle) changes it, as the row's text
 * would. */
static int
whpg_digest(struct wh_conn *conn, const char *table, const char *column,
	    const char *partition, int64_t *rows, char *sum, size_t sumsz,
	    struct err *err)
{
	struct wh_param param = { "partition", partition };
	char sql[1024] = "SELECT count(*)::text || ' ' || coalesce(sum("
		"hashtextextended(encode(record_send(backfilld_row), 'base64'),"
		" 0)), 0)::text FROM ";
	char *value = NULL, *sp;
	uint64_t total;
	bool has_row;

	sqlscan_quote_ident(sql, sizeof sql, table);
	strncat(sql, " AS backfilld_row WHERE backfilld_row.",
		sizeof sql - strlen(sql) - 1);
	sqlscan_quote_ident(sql, sizeof sql, column);
	strncat(sql, " = :partition", sizeof sql - strlen(sql) - 1);
	if (whpg_query_value(conn, sql, &param, 1, &has_row, &value, err) == -1)
		return -1;
	if (value == NULL || (sp = strchr(value, ' ')) == NULL) {
		free(value);
		return err_set(err, EXIT_WORK_FAILED, "the partition's checksum"
			       " came back empty");
	}
	*sp = '\0';
	*rows = strtoll(value, NULL, 10);
	if (digest_parse_decimal(sp + 1, &total) < 0) {
		free(value);
		return err_set(err, EXIT_WORK_FAILED, "the partition's checksum"
			       " is not a number");
	}
	digest_format(total, sum, sumsz);
	free(value);
	return 0;
}

const struct wh_driver wh_pg_driver = {
	.name = "postgres",
	.open = whpg_open,
	.close = whpg_close,
	.begin = whpg_begin,
	.exec_script = whpg_exec_script,
	.query_value = whpg_query_value,
	.query_column = whpg_query_column,
	.manifest_fill = whpg_manifest_fill,
	.manifest_drop = whpg_manifest_drop,
	.commit = whpg_commit,
	.rollback = whpg_rollback,
	.interrupt = whpg_interrupt,
	.changes = whpg_changes,
	.usable = whpg_usable,
	.digest = whpg_digest,
};
