/*
 * store_pg_stats.c - the PostgreSQL state store's figures for status
 * (stats in store.h): read from the store on a thread of their own, on a
 * connection of their own, never on the loop thread.
 *
 * Why.  Counting the runs (on a node of several hosts that is not the
 * planner nobody keeps that count) and measuring the database
 * (pg_database_size) on the loop's connection held the whole loop as
 * long as the server did not answer: a server stopped (SIGSTOP), a lock
 * held on runs, a disk that stalls.  Every client of the control socket
 * and of the HTTP endpoint, the heartbeat and the timers waited for one
 * status (tests/integration/test_status_store_stopped.py).
 *
 * Rules.
 *  - pgst_stats asks the thread for a reading and waits for it at most
 *    PGST_STATS_WAIT_MS, and never past PGST_STATS_WAIT_MS after the start
 *    of the reading in progress: a reading the server does not answer
 *    holds the loop for that long once, however many status calls come;
 *    the calls after it answer at once.
 *  - A reading not back within the wait, or failed, leaves the figures of
 *    the last one that succeeded, with their age (age_ms, and stale set):
 *    status says so.  The reading goes on meanwhile; at most one is asked
 *    beyond the one in progress.
 *  - The thread's statements run under statement_timeout
 *    (PGST_STATS_TIMEOUT): a lock held on runs fails a reading after it.
 *    A connection that failed is dropped and made again at the next
 *    reading.  A server that does not run at all (SIGSTOP) holds the
 *    thread, never the loop.
 *  - The planner's runs_kept is not read here: it is kept by its own
 *    changes and counted again on its own connection when asked
 *    (pgst_recount, store_pg_tx.c); counted on another connection, it
 *    would race with its commits.  db_bytes is read here on every node.
 *  - pgst_stats_close does not wait for a reading the server does not
 *    answer: the thread is then detached, and the last of the store and
 *    the thread frees what they share.
 */
#include <uv.h>

#include "store_pg_int.h"

#define PGST_STATS_TIMEOUT "10s"  /* the thread's statement_timeout */
#define PGST_NS_PER_MS 1000000ull

struct pgst_stats {
	uv_mutex_t mu;
	uv_cond_t cv;        /* a reading asked (thread); one done (loop) */
	uv_thread_t tid;
	int refs;            /* the store's and the thread's */
	bool quit;
	bool busy;           /* a reading in progress ... */
	uint64_t busy_since; /* ... since (uv_hrtime, ns) */
	uint64_t asked;      /* the number of the newest reading asked */
	uint64_t started;    /* ... of the newest one the thread took */
	bool count;          /* the next reading counts the runs too */
	uint64_t runs_seq, bytes_seq; /* the readings the figures come from */
	uint64_t runs_at, bytes_at;   /* ... when they finished (ns) */
	int64_t runs, bytes;
	char *conninfo;
	char *password_file;
	PGconn *pg;          /* the thread's */
};

/* Free what the store and the thread shared (the last of them). */
static void
pgst_stats_free(struct pgst_stats *s)
{
	if (s->pg != NULL)
		PQfinish(s->pg);
	uv_cond_destroy(&s->cv);
	uv_mutex_destroy(&s->mu);
	free(s->conninfo);
	free(s->password_file);
	free(s);
}

/* Drop the thread's connection (it failed; made again next time). */
static int
pgst_stats_drop(struct pgst_stats *s)
{
	PQfinish(s->pg);
	s->pg = NULL;
	return -1;
}

/* Connect the thread's connection; 0 or -1. */
static int
pgst_stats_connect(struct pgst_stats *s)
{
	char *password = NULL;
	struct err err;
	PGresult *r;
	bool ok;

	if (s->password_file != NULL &&
	    pg_conn_password("state store", s->password_file, EXIT_BAD_INPUT,
			     false, &password, &err) < 0)
		return -1;
	s->pg = pg_conn_connect(s->conninfo, password);
	if (s->pg == NULL)
		return -1;
	if (PQstatus(s->pg) != CONNECTION_OK)
		return pgst_stats_drop(s);
	r = PQexec(s->pg, "SET statement_timeout = '" PGST_STATS_TIMEOUT "'");
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	PQclear(r);
	return ok ? 0 : pgst_stats_drop(s);
}

/* One reading, on the thread: the database's size, and the runs when
 * count; 0, or -1 (the connection dropped).  A connection made before
 * that fails (the server restarted, the session ended) is made again
 * and the reading sent once more: it only reads. */
static int
pgst_stats_read(struct pgst_stats *s, bool count, int64_t *runs,
		int64_t *bytes)
{
	PGresult *r;
	bool fresh;

	for (int i = 0; i < 2; i++) {
		fresh = s->pg == NULL;
		if (fresh && pgst_stats_connect(s) < 0)
			return -1;
		r = PQexec(s->pg, count ? "SELECT (SELECT count(*) FROM runs),"
			   " pg_database_size(current_database())" :
			   "SELECT 0, pg_database_size(current_database())");
		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
			*runs = col_int(r, 0, 0);
			*bytes = col_int(r, 0, 1);
			PQclear(r);
			return 0;
		}
		PQclear(r);
		pgst_stats_drop(s);
		if (fresh)
			break;
	}
	return -1;
}

/* The thread: a reading each time one is asked, until quit. */
static void
pgst_stats_main(void *arg)
{
	struct pgst_stats *s = arg;
	int64_t runs = 0, bytes = 0;
	uint64_t n;
	bool count, last;
	int rc;

	uv_mutex_lock(&s->mu);
	for (;;) {
		while (!s->quit && s->started == s->asked)
			uv_cond_wait(&s->cv, &s->mu);
		if (s->quit)
			break;
		n = s->started = s->asked;
		count = s->count;
		s->count = false;
		s->busy = true;
		s->busy_since = uv_hrtime();
		uv_mutex_unlock(&s->mu);
		rc = pgst_stats_read(s, count, &runs, &bytes);
		uv_mutex_lock(&s->mu);
		s->busy = false;
		if (rc == 0) {
			s->bytes = bytes;
			s->bytes_seq = n;
			s->bytes_at = uv_hrtime();
			if (count) {
				s->runs = runs;
				s->runs_seq = n;
				s->runs_at = s->bytes_at;
			}
		}
		uv_cond_broadcast(&s->cv);
	}
	last = --s->refs == 0;
	uv_mutex_unlock(&s->mu);
	if (last)
		pgst_stats_free(s);
}

/* The thread for p, started at the first call (NULL: it could not be). */
static struct pgst_stats *
pgst_stats_start(struct pgst *p)
{
	struct pgst_stats *s;

	if (p->stats != NULL)
		return p->stats;
	s = xcalloc(1, sizeof *s);
	s->conninfo = xstrdup(p->conninfo);
	s->password_file = p->password_file != NULL ?
		xstrdup(p->password_file) : NULL;
	s->refs = 2;
	if (uv_mutex_init(&s->mu) != 0)
		goto no_mutex;
	if (uv_cond_init(&s->cv) != 0)
		goto no_cond;
	if (uv_thread_create(&s->tid, pgst_stats_main, s) != 0)
		goto no_thread;
	p->stats = s;
	return s;
no_thread:
	uv_cond_destroy(&s->cv);
no_cond:
	uv_mutex_destroy(&s->mu);
no_mutex:
	free(s->conninfo);
	free(s->password_file);
	free(s);
	return NULL; /* tried again at the next call */
}

/* Ask for a reading (counting the runs when count) and wait for it as the
 * rules at the top say, at most wait_ms (PGST_STATS_WAIT_MS; 0: only
 * ask); then fill out's db_bytes, its runs_kept when count, age_ms and
 * stale. */
void
pgst_stats_figures(struct pgst *p, bool count, int64_t wait_ms,
		   struct store_stats *out)
{
	struct pgst_stats *s = pgst_stats_start(p);
	uint64_t now, target, until, seq, at;

	out->age_ms = -1;
	out->stale = true;
	if (s == NULL)
		return;
	now = uv_hrtime();
	until = now + (uint64_t)wait_ms * PGST_NS_PER_MS;
	uv_mutex_lock(&s->mu);
	if (s->asked == s->started) { /* none waiting to start: ask one */
		s->asked++;
		uv_cond_broadcast(&s->cv);
	}
	s->count = s->count || count;
	target = s->asked;
	for (;;) {
		seq = count ? s->runs_seq : s->bytes_seq;
		if (seq >= target || (s->started >= target && !s->busy))
			break; /* back (or failed) */
		now = uv_hrtime();
		if (s->busy && s->busy_since +
		    PGST_STATS_WAIT_MS * PGST_NS_PER_MS < until)
			until = s->busy_since + PGST_STATS_WAIT_MS *
				PGST_NS_PER_MS;
		if (now >= until)
			break;
		(void)uv_cond_timedwait(&s->cv, &s->mu, until - now);
	}
	seq = count ? s->runs_seq : s->bytes_seq;
	at = count ? s->runs_at : s->bytes_at;
	if (seq > 0) {
		out->db_bytes = s->bytes;
		if (count)
			out->runs_kept = s->runs;
		now = uv_hrtime();
		out->age_ms = (int64_t)((now - at) / PGST_NS_PER_MS);
		out->stale = seq < target;
	}
	uv_mutex_unlock(&s->mu);
}

/* Stop the thread: joined when it is idle, detached when a reading holds
 * it (the server not answering); the last one out frees. */
void
pgst_stats_close(struct pgst *p)
{
	struct pgst_stats *s = p->stats;
	bool busy, last;

	if (s == NULL)
		return;
	p->stats = NULL;
	uv_mutex_lock(&s->mu);
	s->quit = true;
	busy = s->busy;
	uv_cond_broadcast(&s->cv);
	if (busy) {
		uv_thread_t tid = s->tid; /* s may go once unlocked */

		last = --s->refs == 0;
		uv_mutex_unlock(&s->mu);
		pthread_detach(tid);
		if (last)
			pgst_stats_free(s);
		return;
	}
	uv_mutex_unlock(&s->mu);
	uv_thread_join(&s->tid);
	pgst_stats_free(s);
}
