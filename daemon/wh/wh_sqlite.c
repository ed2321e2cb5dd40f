/*
 * wh_sqlite.c - the SQLite warehouse driver (struct wh_driver, wh.h).
 *
 * One connection per worker thread, opened SQLITE_OPEN_READWRITE |
 * SQLITE_OPEN_NOMUTEX (never created: a missing warehouse is an error, not
 * an empty database) and kept open across runs.  The user's journal mode
 * is left alone.  A run's transaction is BEGIN IMMEDIATE, so two runs
 * writing the same warehouse queue on the lock instead of deadlocking on a
 * lock upgrade.
 *
 * Waiting on a lock.  The runs of this process that write one file take
 * turns before their BEGIN IMMEDIATE (wh_sqlite_queue.h): a run that
 * commits or rolls back hands the file to the run that waited longest,
 * which is woken at once.  The file lock then only decides between
 * processes.  Not sqlite3_busy_timeout() for that: a fixed busy timeout
 * ignores the run's deadline and the daemon's shutdown, and
 * sqlite3_interrupt() does not end a busy wait.  Our busy handler sleeps
 * in steps of at most 100 ms and gives up as soon as the run was stopped
 * (watch(): the executor's stop flag, set by a timeout, a cancel or the
 * shutdown), interrupt() was called, the run's deadline passed, or one
 * wait lasted WHSQL_BUSY_MAX_MS; a wait for the turn obeys the same rules
 * (whsql_wait_left), in steps of 100 ms too.  So a locked warehouse delays
 * a timeout or a shutdown by 100 ms at most.
 *
 * The file.  The (st_dev, st_ino) of the path are kept at open; check()
 * compares them with the path's now.  An open connection keeps its inode
 * alive, so the inode number cannot be reused by another file while we
 * hold it: a different pair, or no file, means the warehouse file was
 * deleted or replaced under us, and every write would go to an unlinked
 * inode nobody will ever read.
 *
 * The wall clock.  The date and time functions refuse to read it unless
 * the run allows it (wh_sqlite_clock.h).
 *
 * Interrupts.  sqlite3_interrupt() only stops statements that are running
 * when it is called: one that arrives between two statements is forgotten
 * when the next one starts.  So interrupt() also raises a flag that every
 * call checks before it starts a statement, and that a progress handler
 * checks while one runs; begin() lowers it.  The progress handler only acts
 * inside the caller's statements (`guarded`), never inside ROLLBACK.
 *
 * The transaction is the daemon's.  An authorizer refuses, while a caller's
 * statement is being prepared (`guarded`), every BEGIN, COMMIT, END and
 * ROLLBACK (SQLite's SQLITE_TRANSACTION; ROLLBACK TO a savepoint is
 * SQLITE_SAVEPOINT and allowed), ATTACH and DETACH (VACUUM attaches too,
 * and cannot run in a transaction anyway), and the PRAGMAs
 * sqlscan_txn_pragma() lists, so no statement of job or check SQL can end
 * or reshape the run's transaction: it fails before it runs.  SQLite's own
 * parser decides, so the guarantee does not rest on config.c's static
 * check (sqlscan_txn), which says the same earlier.  After each statement,
 * and before the daemon's COMMIT, the transaction must still be open
 * (sqlite3_get_autocommit); else the run fails and nothing is committed.
 *
 * Parameters are bound with sqlite3_bind_parameter_index() semantics: each
 * statement's own parameters are looked up in the caller's list by name,
 * so a statement binds only what it uses, and a name the caller did not
 * pass is an error rather than a silent NULL.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "clock_ms.h"
#include "digest.h"
#include "fnv.h"
#include "sqlscan.h"
#include "wh.h"
#include "wh_sqlite_clock.h"
#include "wh_sqlite_queue.h"
#include "xalloc.h"

#define WHSQL_BUSY_MAX_MS 30000   /* one wait on a lock, at most */
#define WHSQL_BUSY_STEP_MS 100    /* longest sleep between two tries */
#define WHSQL_PROGRESS_OPS 1000

/* A job's script, prepared once per connection and reused (reset) by
 * every later run of the same text on it. */
#define WHSQL_CACHE 16

struct whsql_script {
	char *sql;              /* the whole script text */
	sqlite3_stmt **stmts;
	int n;
};

/* A read-only statement (a check, a lookup of backfilld_commits), as
 * whsql_prepare_read left it, kept and reset for its next use. */
#define WHSQL_RCACHE 16

struct whsql_read_st {
	char *sql;
	bool single;
	sqlite3_stmt *st;
};

struct whsql_conn {
	struct wh_conn base;
	struct whsql_script cache[WHSQL_CACHE];
	unsigned next_slot;     /* round-robin replacement */
	struct whsql_read_st rcache[WHSQL_RCACHE];
	unsigned next_rslot;
	sqlite3_stmt *begin_st; /* BEGIN IMMEDIATE and COMMIT, prepared once */
	sqlite3_stmt *commit_st;
	sqlite3 *db;
	char *name;            /* the warehouse's name, for messages */
	atomic_int interrupted; /* interrupt() since the last begin() */
	bool guarded;          /* a caller's statement runs: progress may stop it */
	const char *refused;   /* what the authorizer last refused */
	bool in_tx;            /* between begin() and commit()/rollback() */
	bool broken;
	/* the run being served (watch()): stop flag and deadline */
	const atomic_int *stop;
	int64_t deadline_ms;    /* monotonic; 0: none */
	int64_t busy_since_ms;  /* start of the current wait on a lock */
	bool busy_gave_up;      /* the last wait ended on the deadline */
	struct whq *queue;      /* this process's writers of the file */
	bool turn;              /* ours, from begin() to commit()/rollback() */
	/* the file (check()) */
	char *path;
	dev_t dev;
	ino_t ino;
	/* the wall clock (watch()) */
	struct whsql_clock clock;
};

/* Finalize a cached script's statements and forget it. */
static void
whsql_script_drop(struct whsql_script *sc)
{
	for (int i = 0; i < sc->n; i++)
		sqlite3_finalize(sc->stmts[i]);
	free(sc->stmts);
	free(sc->sql);
	memset(sc, 0, sizeof *sc);
}

/* The driver's view of a connection. */
static struct whsql_conn *
whsql_conn(struct wh_conn *conn)
{
	return (struct whsql_conn *)conn;
}

/* Remember that an error code means the connection is no longer safe. */
static void
whsql_note(struct whsql_conn *c, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_IOERR:
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_NOMEM:
	case SQLITE_CANTOPEN:
		c->broken = true;
		break;
	default:
		if (rc == SQLITE_READONLY_DBMOVED)
			c->broken = true;
		break;
	}
}

/* Copy the connection's error message at once, one line. */
static void
whsql_errmsg(struct whsql_conn *c, int rc, char *buf, size_t len)
{
	char *p;

	if ((rc & 0xff) == SQLITE_INTERRUPT)
		snprintf(buf, len, "interrupted");
	else if ((rc & 0xff) == SQLITE_AUTH && c->refused != NULL)
		snprintf(buf, len, "%s controls the run's transaction: "
		    SQLSCAN_TXN_ADVICE, c->refused);
	else if ((rc & 0xff) == SQLITE_BUSY && c->busy_gave_up)
		snprintf(buf, len, "%s: warehouse \"%s\" stayed locked by "
		    "another connection until the run's timeout",
		    sqlite3_errmsg(c->db), c->name);
	else if ((rc & 0xff) == SQLITE_BUSY)
		snprintf(buf, len, "%s: warehouse \"%s\" is locked by another "
		    "connection", sqlite3_errmsg(c->db), c->name);
	else
		snprintf(buf, len, "%s", sqlite3_errmsg(c->db));
	for (p = buf; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	whsql_note(c, rc);
}

/* Fill err from the connection's last error, after a prefix. */
static int
whsql_fail(struct whsql_conn *c, int rc, struct err *err, const char *prefix)
{
	char msg[ERR_MSG_MAX];

	if (prefix == NULL && (rc & 0xff) == SQLITE_INTERRUPT)
		return err_interrupted(err);
	whsql_errmsg(c, rc, msg, sizeof msg);
	if (prefix == NULL)
		return err_set(err, EXIT_WORK_FAILED, "%s", msg);
	return err_set(err, EXIT_WORK_FAILED, "%s%s", prefix, msg);
}

/* Progress handler: stop the running statement once interrupted. */
static int
whsql_progress_cb(void *arg)
{
	struct whsql_conn *c = arg;

	return c->guarded && atomic_load(&c->interrupted) != 0;
}

/* Authorizer: refuse, in a caller's statement, what would end or reshape
 * the run's transaction (the top of this file). */
static int
whsql_auth_cb(void *arg, int action, const char *a1, const char *a2,
	      const char *db, const char *trigger)
{
	struct whsql_conn *c = arg;
	const char *what = NULL;

	(void)a2;
	(void)db;
	(void)trigger;
	if (!c->guarded)
		return SQLITE_OK;
	switch (action) {
	case SQLITE_TRANSACTION: /* a1: BEGIN, COMMIT (END too), ROLLBACK */
		what = a1 != NULL && strcmp(a1, "BEGIN") == 0 ? "BEGIN" :
		    a1 != NULL && strcmp(a1, "COMMIT") == 0 ? "COMMIT" :
		    "ROLLBACK";
		break;
	case SQLITE_ATTACH:
		what = "ATTACH";
		break;
	case SQLITE_DETACH:
		what = "DETACH";
		break;
	case SQLITE_PRAGMA:
		if (a1 != NULL)
			what = sqlscan_txn_pragma(a1, strlen(a1));
		break;
	default:
		break;
	}
	if (what == NULL)
		return SQLITE_OK;
	c->refused = what;
	return SQLITE_DENY;
}

/* Milliseconds on the monotonic clock. */
static int64_t
whsql_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* Was the run stopped (watch()) or interrupted since begin()? */
static bool
whsql_stopped(struct whsql_conn *c)
{
	return atomic_load(&c->interrupted) ||
	       (c->stop != NULL && atomic_load(c->stop) != 0);
}

/*
 * How long the wait that began at busy_since_ms may still last, in ms; 0
 * to give up: once the run is stopped or interrupted, past the run's
 * deadline (busy_gave_up then), or after WHSQL_BUSY_MAX_MS of this wait.
 */
static int64_t
whsql_wait_left(struct whsql_conn *c, int64_t now)
{
	int64_t left;

	if (whsql_stopped(c))
		return 0;
	left = c->busy_since_ms + WHSQL_BUSY_MAX_MS - now;
	if (c->deadline_ms != 0 && c->deadline_ms - now < left) {
		left = c->deadline_ms - now;
		if (left <= 0) {
			c->busy_gave_up = true;
			return 0;
		}
	}
	return left > 0 ? left : 0;
}

/* whq_take's left(): at most a step, so that a stop is seen within it. */
static int64_t
whsql_turn_left(void *arg)
{
	int64_t left = whsql_wait_left(arg, whsql_now_ms());

	return left < WHSQL_BUSY_STEP_MS ? left : WHSQL_BUSY_STEP_MS;
}

/* End the connection's turn at the file, if it has it. */
static void
whsql_turn_end(struct whsql_conn *c)
{
	if (c->turn) {
		c->turn = false;
		whq_give(c->queue);
	}
}

/*
 * Busy handler: 1 to try the lock again after a sleep, 0 to give up (the
 * statement then fails with SQLITE_BUSY), by whsql_wait_left's rules;
 * sleeps at most WHSQL_BUSY_STEP_MS.
 */
static int
whsql_busy_cb(void *arg, int count)
{
	static const int steps[] = { 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 };
	struct whsql_conn *c = arg;
	int64_t now = whsql_now_ms(), left;
	struct timespec ts;
	int ms;

	if (count == 0)
		c->busy_since_ms = now;
	if ((left = whsql_wait_left(c, now)) == 0)
		return 0;
	ms = count < (int)(sizeof steps / sizeof steps[0]) ? steps[count] :
	    WHSQL_BUSY_STEP_MS;
	if (ms > left)
		ms = (int)left;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	return 1;
}

/* Run one fixed SQL text that takes no parameters. */
static int
whsql_exec_simple(struct whsql_conn *c, const char *sql, struct err *err,
		  const char *prefix)
{
	int rc;

	rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return whsql_fail(c, rc, err, prefix);
	return 0;
}

/* Step a fixed statement (BEGIN IMMEDIATE, COMMIT) prepared on first use;
 * returns the SQLite result code. */
static int
whsql_step_fixed(struct whsql_conn *c, sqlite3_stmt **st, const char *sql)
{
	int rc;

	if (*st == NULL) {
		rc = sqlite3_prepare_v2(c->db, sql, -1, st, NULL);
		if (rc != SQLITE_OK)
			return rc;
	}
	rc = sqlite3_step(*st);
	sqlite3_reset(*st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void whsql_close(struct wh_conn *conn);

/* Open the warehouse file read-write, never creating it. */
static int
whsql_open(const struct warehouse_def *wh, struct wh_conn **out,
	   struct err *err)
{
	struct whsql_conn *c;
	char msg[ERR_MSG_MAX];
	int rc, sys;

	*out = NULL;
	if (wh->path == NULL)
		return err_set(err, EXIT_BAD_INPUT,
		    "warehouse \"%s\": no sqlite path", wh->name);
	c = xcalloc(1, sizeof *c);
	c->name = xstrdup(wh->name);
	c->path = xstrdup(wh->path);
	c->base.drv = &wh_sqlite_driver;
	atomic_init(&c->interrupted, 0);

	rc = sqlite3_open_v2(wh->path, &c->db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_extended_result_codes(c->db, 1);
		sqlite3_progress_handler(c->db, WHSQL_PROGRESS_OPS,
		    whsql_progress_cb, c);
		/* Read the schema now so "file is not a database" shows here;
		 * locked, without waiting: the file is there, and the run's
		 * statements will wait for the lock, watched. */
		rc = sqlite3_exec(c->db, "SELECT 1 FROM sqlite_master LIMIT 1",
		    NULL, NULL, NULL);
		if ((rc & 0xff) == SQLITE_BUSY)
			rc = SQLITE_OK;
		sqlite3_busy_handler(c->db, whsql_busy_cb, c);
		sqlite3_set_authorizer(c->db, whsql_auth_cb, c);
	}
	if (rc == SQLITE_OK) {
		struct stat sb;

		/* The file we opened; stat after open: the inode it names
		 * stays ours (and unreused) while the connection is open. */
		if (stat(wh->path, &sb) == -1) {
			rc = SQLITE_CANTOPEN;
		} else {
			c->dev = sb.st_dev;
			c->ino = sb.st_ino;
			c->queue = whq_get(c->dev, c->ino);
		}
	}
	if (rc == SQLITE_OK && whsql_clock_install(&c->clock, c->db) !=
	    SQLITE_OK) {
		err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\": cannot "
		    "replace its date and time functions: %s", wh->name,
		    sqlite3_errmsg(c->clock.helper != NULL ? c->clock.helper :
		    c->db));
		whsql_close(&c->base);
		return -1;
	}
	if (rc != SQLITE_OK) {
		sys = c->db != NULL ? sqlite3_system_errno(c->db) : 0;
		if ((rc & 0xff) == SQLITE_CANTOPEN && sys != 0)
			snprintf(msg, sizeof msg, "%s", strerror(sys));
		else if (c->db != NULL)
			snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(c->db));
		else
			snprintf(msg, sizeof msg, "%s", sqlite3_errstr(rc));
		err_set(err, EXIT_WORK_FAILED,
		    "warehouse \"%s\": cannot open %s: %s", wh->name, wh->path,
		    msg);
		sqlite3_close(c->db);
		whq_put(c->queue);
		free(c->name);
		free(c->path);
		free(c);
		return -1;
	}
	*out = &c->base;
	return 0;
}

/* Close the connection (rolling back anything open). */
static void
whsql_close(struct wh_conn *conn)
{
	struct whsql_conn *c;

	if (conn == NULL)
		return;
	c = whsql_conn(conn);
	for (int i = 0; i < WHSQL_CACHE; i++)
		whsql_script_drop(&c->cache[i]);
	for (int i = 0; i < WHSQL_RCACHE; i++) {
		sqlite3_finalize(c->rcache[i].st);
		free(c->rcache[i].sql);
	}
	sqlite3_finalize(c->begin_st);
	sqlite3_finalize(c->commit_st);
	whsql_clock_free(&c->clock);
	sqlite3_close_v2(c->db); /* rolls back what is open: then the turn */
	whsql_turn_end(c);
	whq_put(c->queue);
	free(c->name);
	free(c->path);
	free(c);
}

/* A wait for the turn given up (whsql_wait_left): why, in err. */
static int
whsql_turn_fail(struct whsql_conn *c, struct err *err)
{
	if (c->busy_gave_up)
		return err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\" stayed"
		    " locked by another run of this daemon until the run's"
		    " timeout", c->name);
	if (whsql_stopped(c))
		return err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\" is"
		    " locked by another run of this daemon: stopped while"
		    " waiting for it", c->name);
	return err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\" stayed locked"
	    " by another run of this daemon for %d s", c->name,
	    WHSQL_BUSY_MAX_MS / 1000);
}

/* BEGIN IMMEDIATE, after this process's earlier writers of the file
 * (its turn), lowering any interrupt left by an earlier run. */
static int
whsql_begin(struct wh_conn *conn, struct err *err)
{
	struct whsql_conn *c = whsql_conn(conn);
	int rc;

	atomic_store(&c->interrupted, 0);
	c->guarded = false;
	c->refused = NULL;
	c->busy_gave_up = false;
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	whsql_turn_end(c);
	c->busy_since_ms = whsql_now_ms();
	if (whq_take(c->queue, whsql_turn_left, c) < 0)
		return whsql_turn_fail(c, err);
	c->turn = true;
	rc = whsql_step_fixed(c, &c->begin_st, "BEGIN IMMEDIATE");
	if (rc != SQLITE_OK) {
		whsql_turn_end(c);
		return whsql_fail(c, rc, err, NULL);
	}
	c->in_tx = true;
	return 0;
}

/* True when `name` (":partition") is one of params; its value in *value. */
static bool
whsql_param(const char *name, const struct wh_param *params, size_t nparams,
	    const char **value)
{
	size_t i;

	if (name == NULL || name[0] != ':')
		return false;
	for (i = 0; i < nparams; i++) {
		if (strcmp(name + 1, params[i].name) == 0) {
			*value = params[i].value;
			return true;
		}
	}
	return false;
}

/* Bind every parameter the statement names from params. */
static int
whsql_bind(struct whsql_conn *c, sqlite3_stmt *st,
	   const struct wh_param *params, size_t nparams, char *msg,
	   size_t len)
{
	const char *name, *value;
	char known[256];
	size_t i, off;
	int n, rc;

	n = sqlite3_bind_parameter_count(st);
	for (int k = 1; k <= n; k++) {
		name = sqlite3_bind_parameter_name(st, k);
		if (!whsql_param(name, params, nparams, &value)) {
			off = 0;
			known[0] = '\0';
			for (i = 0; i < nparams && off < sizeof known; i++)
				off += snprintf(known + off, sizeof known - off,
				    "%s:%s", i > 0 ? ", " : "", params[i].name);
			snprintf(msg, len, "parameter %s has no value "
			    "(known: %s)", name != NULL ? name : "?",
			    nparams > 0 ? known : "none");
			return -1;
		}
		if (value == NULL)
			rc = sqlite3_bind_null(st, k);
		else
			rc = sqlite3_bind_text(st, k, value, -1, SQLITE_STATIC);
		if (rc != SQLITE_OK) {
			whsql_errmsg(c, rc, msg, len);
			return -1;
		}
	}
	return 0;
}

/* Fail a statement of a script: "statement N failed: msg". */
static int
whsql_script_fail(struct whsql_conn *c, sqlite3_stmt *st, int n,
		  const char *msg, struct err *err)
{
	sqlite3_finalize(st);
	c->guarded = false;
	return err_set(err, EXIT_WORK_FAILED, "statement %d failed: %s", n,
	    msg);
}

/* Run one prepared statement of a script to its end, parameters bound. */
static int
whsql_step_all(struct whsql_conn *c, sqlite3_stmt *st, int n,
	       const struct wh_param *params, size_t nparams, struct err *err)
{
	char msg[ERR_MSG_MAX];
	int rc;

	if (whsql_bind(c, st, params, nparams, msg, sizeof msg) == -1)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE) {
		whsql_errmsg(c, rc, msg, sizeof msg);
		goto fail;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (c->in_tx && sqlite3_get_autocommit(c->db)) {
		c->in_tx = false;
		snprintf(msg, sizeof msg, "it ended the run's transaction: "
			 SQLSCAN_TXN_ADVICE);
		goto fail;
	}
	return 0;
fail:
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	c->guarded = false;
	return err_set(err, EXIT_WORK_FAILED, "statement %d failed: %s", n, msg);
}

/* Run a script whose statements were prepared by an earlier run. */
static int
whsql_exec_cached(struct whsql_conn *c, struct whsql_script *sc,
		  const struct wh_param *params, size_t nparams,
		  struct err *err)
{
	for (int i = 0; i < sc->n; i++) {
		if (atomic_load(&c->interrupted))
			return whsql_script_fail(c, NULL, i + 1, "interrupted",
			    err);
		c->guarded = true;
		if (whsql_step_all(c, sc->stmts[i], i + 1, params, nparams,
		    err) == -1) {
			whsql_script_drop(sc); /* prepare afresh next time */
			return -1;
		}
	}
	c->guarded = false;
	return 0;
}

/* Run the ;-separated statements of sql in order, parameters bound.  The
 * statements are prepared as they come (a statement may use a table an
 * earlier one created) and kept for the next run of the same script. */
static int
whsql_exec_script(struct wh_conn *conn, const char *sql,
		  const struct wh_param *params, size_t nparams,
		  struct err *err)
{
	struct whsql_conn *c = whsql_conn(conn);
	struct whsql_script *sc, fresh = { 0 };
	const char *p = sql, *tail;
	char msg[ERR_MSG_MAX];
	sqlite3_stmt *st;
	int n = 0, rc;

	for (int i = 0; i < WHSQL_CACHE; i++) {
		sc = &c->cache[i];
		if (sc->sql != NULL && strcmp(sc->sql, sql) == 0)
			return whsql_exec_cached(c, sc, params, nparams, err);
	}
	while (*p != '\0') {
		if (atomic_load(&c->interrupted)) {
			whsql_script_drop(&fresh);
			return whsql_script_fail(c, NULL, n + 1, "interrupted",
			    err);
		}
		st = NULL;
		c->guarded = true;
		rc = sqlite3_prepare_v2(c->db, p, -1, &st, &tail);
		if (rc != SQLITE_OK) {
			whsql_errmsg(c, rc, msg, sizeof msg);
			whsql_script_drop(&fresh);
			return whsql_script_fail(c, st, n + 1, msg, err);
		}
		if (st == NULL) {
			/* Only blanks, comments or a lone ';' were left. */
			if (tail == p)
				break;
			p = tail;
			continue;
		}
		p = tail;
		n++;
		fresh.stmts = xreallocarray(fresh.stmts, (size_t)n,
					    sizeof *fresh.stmts);
		fresh.stmts[fresh.n++] = st;
		if (whsql_step_all(c, st, n, params, nparams, err) == -1) {
			whsql_script_drop(&fresh);
			return -1;
		}
	}
	c->guarded = false;
	/* keep it for the next run of this script on this connection */
	fresh.sql = xstrdup(sql);
	sc = &c->cache[c->next_slot++ % WHSQL_CACHE];
	whsql_script_drop(sc);
	*sc = fresh;
	return 0;
}

/* A copy of column col (not NULL) of the current row: SQLite returns NULL
 * for such a column only when it ran out of memory converting it. */
static char *
whsql_column_dup(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	if (t == NULL)
		xalloc_exhausted("SQLite");
	return xstrdup((const char *)t);
}

/* Prepare sql as what ("a check") must be: a statement (single: only
 * one), read-only, params bound.  -1 with msg, *st finalized. */
static int
whsql_prepare_read(struct whsql_conn *c, const char *sql, const char *what,
		   bool single, const struct wh_param *params, size_t nparams,
		   sqlite3_stmt **st, char *msg, size_t len)
{
	sqlite3_stmt *more = NULL;
	const char *tail;
	int rc;

	*st = NULL;
	rc = sqlite3_prepare_v2(c->db, sql, -1, st, &tail);
	if (rc != SQLITE_OK) {
		whsql_errmsg(c, rc, msg, len);
		goto fail;
	}
	if (*st == NULL) {
		snprintf(msg, len, "no statement");
		goto fail;
	}
	if (single) {
		rc = sqlite3_prepare_v2(c->db, tail, -1, &more, NULL);
		sqlite3_finalize(more);
		if (rc != SQLITE_OK || more != NULL) {
			snprintf(msg, len, "%s is one statement", what);
			goto fail;
		}
	}
	if (!sqlite3_stmt_readonly(*st)) {
		snprintf(msg, len, "%s must not write", what);
		goto fail;
	}
	if (whsql_bind(c, *st, params, nparams, msg, len) == -1)
		goto fail;
	return 0;

fail:
	sqlite3_finalize(*st);
	*st = NULL;
	return -1;
}

/* The cached statement of sql, bound to params, or a new one prepared
 * (whsql_prepare_read) and kept: -1 with msg. */
static int
whsql_read_stmt(struct whsql_conn *c, const char *sql, const char *what,
		bool single, const struct wh_param *params, size_t nparams,
		sqlite3_stmt **st, char *msg, size_t len)
{
	struct whsql_read_st *rs;

	for (int i = 0; i < WHSQL_RCACHE; i++) {
		rs = &c->rcache[i];
		if (rs->sql == NULL || rs->single != single ||
		    strcmp(rs->sql, sql) != 0)
			continue;
		*st = rs->st;
		return whsql_bind(c, *st, params, nparams, msg, len);
	}
	if (whsql_prepare_read(c, sql, what, single, params, nparams, st,
			       msg, len) == -1)
		return -1;
	rs = &c->rcache[c->next_rslot++ % WHSQL_RCACHE];
	sqlite3_finalize(rs->st);
	free(rs->sql);
	rs->sql = xstrdup(sql);
	rs->single = single;
	rs->st = *st;
	return 0;
}

/*
 * One read-only statement (whsql_prepare_read, kept per connection by
 * whsql_read_stmt) run under the interrupt guard: each row to row(st,
 * arg, msg, len), which returns 0 for the next row, 1 to stop, -1 to
 * fail with msg.  0, or -1 with err.
 */
static int
whsql_read(struct whsql_conn *c, const char *sql, const char *what,
	   bool single, const struct wh_param *params, size_t nparams,
	   int (*row)(sqlite3_stmt *, void *, char *, size_t), void *arg,
	   struct err *err)
{
	sqlite3_stmt *st = NULL;
	char msg[ERR_MSG_MAX];
	int rc = SQLITE_DONE, r = 0;

	if (atomic_load(&c->interrupted))
		return err_interrupted(err);
	c->guarded = true;
	if (whsql_read_stmt(c, sql, what, single, params, nparams, &st,
			    msg, sizeof msg) == -1)
		r = -1;
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = row(st, arg, msg, sizeof msg);
	if (r == 0 && rc != SQLITE_DONE) {
		whsql_errmsg(c, rc, msg, sizeof msg);
		r = -1;
	}
	if (st != NULL) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	c->guarded = false;
	if (r == 0 && c->in_tx && sqlite3_get_autocommit(c->db)) {
		c->in_tx = false;
		snprintf(msg, sizeof msg, "it ended the run's transaction: "
			 SQLSCAN_TXN_ADVICE);
		r = -1;
	}
	if (r < 0)
		return err_set(err, EXIT_WORK_FAILED, "%s", msg);
	return 0;
}

/* What query_value reads: the first column of the first row. */
struct whsql_value {
	bool *has_row;
	char **value;
};

/* query_value's row: keep its first column, stop. */
static int
whsql_value_row(sqlite3_stmt *st, void *arg, char *msg, size_t len)
{
	struct whsql_value *v = arg;

	(void)msg;
	(void)len;
	*v->has_row = true;
	if (sqlite3_column_count(st) > 0 &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		*v->value = whsql_column_dup(st, 0);
	return 1;
}

/* Run one read-only statement; the first column of its first row. */
static int
whsql_query_value(struct wh_conn *conn, const char *sql,
		  const struct wh_param *params, size_t nparams,
		  bool *has_row, char **value, struct err *err)
{
	struct whsql_value v = { has_row, value };

	*has_row = false;
	*value = NULL;
	return whsql_read(whsql_conn(conn), sql, "a check", true, params,
			  nparams, whsql_value_row, &v, err);
}

/* Create temp.backfill_manifest and insert the batch's partitions. */
static int
whsql_manifest_fill(struct wh_conn *conn, const struct wh_manifest_row *rows,
		    size_t nrows, struct err *err)
{
	struct whsql_conn *c = whsql_conn(conn);
	sqlite3_stmt *st = NULL;
	size_t i;
	int rc;

	if (whsql_exec_simple(c, "DROP TABLE IF EXISTS temp.backfill_manifest;"
	    "CREATE TEMP TABLE backfill_manifest(partition_key TEXT, "
	    "partition_start TEXT, partition_end TEXT, partition_start_utc "
	    "TEXT, partition_end_utc TEXT)", err, NULL) == -1)
		return -1;
	c->guarded = true;
	rc = sqlite3_prepare_v2(c->db,
	    "INSERT INTO temp.backfill_manifest VALUES (?1, ?2, ?3, ?4, ?5)",
	    -1, &st, NULL);
	for (i = 0; rc == SQLITE_OK && i < nrows; i++) {
		if (atomic_load(&c->interrupted)) {
			rc = SQLITE_INTERRUPT;
			break;
		}
		sqlite3_bind_text(st, 1, rows[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, rows[i].start, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, rows[i].end, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, rows[i].start_utc, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, rows[i].end_utc, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			rc = sqlite3_reset(st);
	}
	c->guarded = false;
	if (rc != SQLITE_OK) {
		whsql_fail(c, rc, err, NULL);
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}

/* Drop the manifest inside the transaction, before commit. */
static int
whsql_manifest_drop(struct wh_conn *conn, struct err *err)
{
	return whsql_exec_simple(whsql_conn(conn),
	    "DROP TABLE IF EXISTS temp.backfill_manifest", err, NULL);
}

/* COMMIT; on failure make sure nothing stays open. */
static int
whsql_commit(struct wh_conn *conn, struct err *err)
{
	struct whsql_conn *c = whsql_conn(conn);
	int rc;

	c->guarded = false;
	if (sqlite3_get_autocommit(c->db)) {
		/* it ended early (the top of this file): not ours to end */
		c->in_tx = false;
		whsql_turn_end(c);
		return err_set(err, EXIT_WORK_FAILED, "the run's transaction "
		    "had ended before its commit");
	}
	rc = whsql_step_fixed(c, &c->commit_st, "COMMIT");
	if (rc != SQLITE_OK) {
		whsql_fail(c, rc, err, NULL);
		if (!sqlite3_get_autocommit(c->db) &&
		    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL) !=
		    SQLITE_OK && !sqlite3_get_autocommit(c->db))
			c->broken = true;
		c->in_tx = false;
		whsql_turn_end(c);
		return -1;
	}
	c->in_tx = false;
	whsql_turn_end(c);
	return 0;
}

/* ROLLBACK whatever is open (SQLite may already have rolled back). */
static void
whsql_rollback(struct wh_conn *conn)
{
	struct whsql_conn *c = whsql_conn(conn);

	c->guarded = false;
	c->in_tx = false;
	if (!sqlite3_get_autocommit(c->db) &&
	    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK &&
	    !sqlite3_get_autocommit(c->db))
		c->broken = true;
	whsql_turn_end(c);
}

/* Stop the running statement and every later one until begin(). */
static void
whsql_interrupt(struct wh_conn *conn)
{
	struct whsql_conn *c = whsql_conn(conn);

	atomic_store(&c->interrupted, 1);
	sqlite3_interrupt(c->db);
}

/* sqlite3_total_changes64: the caller takes differences. */
static int64_t
whsql_changes(struct wh_conn *conn)
{
	return sqlite3_total_changes64(whsql_conn(conn)->db);
}

/* False after an error that leaves the connection unsafe to reuse. */
static bool
whsql_usable(const struct wh_conn *conn)
{
	return !((const struct whsql_conn *)conn)->broken;
}

/* Serve one run: its stop flag, timeout and allow_wall_clock. */
static void
whsql_watch(struct wh_conn *conn, const atomic_int *stop, int64_t timeout_ms,
	    bool allow_wall_clock)
{
	struct whsql_conn *c = whsql_conn(conn);

	c->stop = stop;
	c->deadline_ms = timeout_ms > 0 ? whsql_now_ms() + timeout_ms : 0;
	c->clock.allow = allow_wall_clock;
	c->busy_gave_up = false;
}

/* Fail (-1, err filled) when the path no longer names the file the
 * connection has open. */
static int
whsql_check(struct wh_conn *conn, struct err *err)
{
	struct whsql_conn *c = whsql_conn(conn);
	struct stat sb;

	if (stat(c->path, &sb) == 0 && sb.st_dev == c->dev &&
	    sb.st_ino == c->ino)
		return 0;
	return err_set(err, EXIT_WORK_FAILED, "warehouse %s: its file %s was "
	    "deleted or replaced while open", c->name, c->path);
}

/* What query_column collects: the non-NULL first-column values. */
struct whsql_column {
	char **v;
	size_t n, cap, max;
};

/* query_column's row: collect its first column unless NULL; fail past
 * the maximum. */
static int
whsql_column_row(sqlite3_stmt *st, void *arg, char *msg, size_t len)
{
	struct whsql_column *col = arg;

	if (sqlite3_column_count(st) == 0 ||
	    sqlite3_column_type(st, 0) == SQLITE_NULL)
		return 0;
	if (col->n == col->max) {
		snprintf(msg, len, "more than %zu values", col->max);
		return -1;
	}
	if (col->n == col->cap) {
		col->cap = col->cap ? col->cap * 2 : 16;
		col->v = xreallocarray(col->v, col->cap, sizeof *col->v);
	}
	col->v[col->n++] = whsql_column_dup(st, 0);
	return 0;
}

/* Every first-column value of a read-only statement (sensors). */
static int
whsql_query_column(struct wh_conn *conn, const char *sql,
		   const struct wh_param *params, size_t nparams,
		   size_t max_values, char ***values, size_t *nvalues,
		   struct err *err)
{
	struct whsql_column col = { .max = max_values };

	*values = NULL;
	*nvalues = 0;
	if (whsql_read(whsql_conn(conn), sql, "a sensor query", false, params,
		       nparams, whsql_column_row, &col, err) == -1) {
		for (size_t i = 0; i < col.n; i++)
			free(col.v[i]);
		free(col.v);
		return -1;
	}
	*values = col.v;
	*nvalues = col.n;
	return 0;
}

/* FNV-1a over bytes, continuing from h (fnv.h). */
#define whsql_fnv fnv1a64

/* FNV-1a over v as 8 bytes, least significant first (the same hash on
 * every host). */
static uint64_t
whsql_fnv64(uint64_t h, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	return whsql_fnv(h, b, sizeof b);
}

/* Column i of the row at st into h, exactly: its storage class, then an
 * INTEGER's 64 bits, a REAL's IEEE 754 bits (0.1 and 0.10000000000000002
 * differ, and so do -0.0 and 0.0), a TEXT's or BLOB's length and bytes;
 * a NULL is its class alone (apart from '' and 0). */
static uint64_t
whsql_fnv_column(uint64_t h, sqlite3_stmt *st, int i)
{
	int type = sqlite3_column_type(st, i);
	unsigned char t = (unsigned char)type;
	double d;
	uint64_t bits;
	const void *p;
	int len;

	h = whsql_fnv(h, &t, 1);
	switch (type) {
	case SQLITE_INTEGER:
		return whsql_fnv64(h, (uint64_t)sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		d = sqlite3_column_double(st, i);
		memcpy(&bits, &d, sizeof bits);
		return whsql_fnv64(h, bits);
	case SQLITE_TEXT:
	case SQLITE_BLOB:
		p = type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, i)
					: sqlite3_column_blob(st, i);
		len = sqlite3_column_bytes(st, i);
		h = whsql_fnv64(h, (uint64_t)len);
		return p != NULL && len > 0 ? whsql_fnv(h, p, (size_t)len) : h;
	default:
		return h;
	}
}

/* A partition's row count and the wrapping sum of each row's hash: FNV-1a
 * over every column's exact value (whsql_fnv_column), finished by a
 * splitmix64 step so that sums of similar rows spread. */
static int
whsql_digest(struct wh_conn *conn, const char *table, const char *column,
	     const char *partition, int64_t *rows, char *sum, size_t sumsz,
	     struct err *err)
{
	struct whsql_conn *c = whsql_conn(conn);
	sqlite3_stmt *st = NULL;
	char sql[1024] = "SELECT * FROM ";
	uint64_t total = 0;
	int64_t n = 0;
	int rc;

	sqlscan_quote_ident(sql, sizeof sql, table);
	strncat(sql, " WHERE ", sizeof sql - strlen(sql) - 1);
	sqlscan_quote_ident(sql, sizeof sql, table);
	strncat(sql, ".", sizeof sql - strlen(sql) - 1);
	sqlscan_quote_ident(sql, sizeof sql, column);
	strncat(sql, " = ?1", sizeof sql - strlen(sql) - 1);
	if (atomic_load(&c->interrupted))
		return err_interrupted(err);
	c->guarded = true;
	rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		c->guarded = false;
		return whsql_fail(c, rc, err, NULL);
	}
	sqlite3_bind_text(st, 1, partition, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t h = FNV1A64_INIT;
		int ncol = sqlite3_column_count(st);

		for (int i = 0; i < ncol; i++)
			h = whsql_fnv_column(h, st, i);
		h ^= h >> 30;
		h *= 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 27;
		h *= 0x94d049bb133111ebULL;
		h ^= h >> 31;
		total += h;
		n++;
	}
	if (rc != SQLITE_DONE) {
		rc = whsql_fail(c, rc, err, NULL);
		sqlite3_finalize(st);
		c->guarded = false;
		return rc;
	}
	sqlite3_finalize(st);
	c->guarded = false;
	*rows = n;
	digest_format(total, sum, sumsz);
	return 0;
}

const struct wh_driver wh_sqlite_driver = {
	.name = "sqlite",
	.open = whsql_open,
	.close = whsql_close,
	.begin = whsql_begin,
	.exec_script = whsql_exec_script,
	.query_value = whsql_query_value,
	.query_column = whsql_query_column,
	.manifest_fill = whsql_manifest_fill,
	.manifest_drop = whsql_manifest_drop,
	.commit = whsql_commit,
	.rollback = whsql_rollback,
	.interrupt = whsql_interrupt,
	.changes = whsql_changes,
	.usable = whsql_usable,
	.watch = whsql_watch,
	.check = whsql_check,
	.digest = whsql_digest,
};
