/*
 * exec_worker.c - the worker threads of SQL runs.
 *
 * A worker takes stages to drop first once they are due (exec_stage.c:
 * many runs' together), then the oldest
 * queued run that waits for no drop, and runs it (exec_sql.c).  It never
 * touches the loop except through wake_send() (wake.h): "started" and
 * "done" events go onto two lists under ex->lock that the loop drains
 * (exec_wake_cb, exec.c), started before done; a shard's publish
 * (exec_shard_published, ClickHouse) is a third list, drained between
 * them, whose worker waits until the loop has recorded it.
 */
#include <stdlib.h>

#include "exec_priv.h"

/* Append fl to the started list the loop drains; ex->lock held. */
void
exec_started_add(struct exec *ex, struct exec_flight *fl)
{
	fl->on_slist = true;
	TAILQ_INSERT_TAIL(&ex->started, fl, slink);
}

/* Whether a worker has something to do now (else *wait_ns: when the
 * stages to drop are due, 0 for no bound); ex->lock held. */
static bool
exec_worker_ready(struct exec *ex, uint64_t *wait_ns)
{
	if (exec_unstage_due(ex, wait_ns))
		return true;
	if (!TAILQ_EMPTY(&ex->queue))
		return !exec_flight_waits(ex, TAILQ_FIRST(&ex->queue));
	return ex->quit;
}

/* A worker thread: take queued runs (stages to drop first) until told to
 * quit. */
void
exec_worker_main(void *arg)
{
	struct exec_worker *w = arg;
	struct exec *ex = w->ex;
	struct exec_flight *fl;
	uint64_t wait_ns;

	for (;;) {
		uv_mutex_lock(&ex->lock);
		while (!exec_worker_ready(ex, &wait_ns)) {
			if (wait_ns > 0)
				(void)uv_cond_timedwait(&ex->cond, &ex->lock,
							wait_ns);
			else
				uv_cond_wait(&ex->cond, &ex->lock);
		}
		if (exec_unstage_due(ex, &wait_ns)) {
			exec_unstage_take(w);
			uv_mutex_unlock(&ex->lock);
			continue;
		}
		fl = TAILQ_FIRST(&ex->queue);
		if (fl == NULL) {
			uv_mutex_unlock(&ex->lock);
			break;
		}
		TAILQ_REMOVE(&ex->queue, fl, qlink);
		fl->state = EXEC_RUNNING;
		fl->worker = w;
		LIST_INSERT_HEAD(&ex->running, fl, rlink);
		exec_started_add(ex, fl);
		uv_mutex_unlock(&ex->lock);
		if (fl->run->job->timeout > 0 || fl->run->started_cb != NULL)
			wake_send(&ex->wake);

		exec_sql_run(w, fl);

		/* After this, fl belongs to the loop thread again. */
		uv_mutex_lock(&ex->lock);
		LIST_REMOVE(fl, rlink);
		fl->state = EXEC_DONE;
		/* the run handed ahead after it: next in this loop, no sleep */
		exec_deck_release(ex, fl);
		TAILQ_INSERT_TAIL(&ex->done, fl, qlink);
		uv_mutex_unlock(&ex->lock);
		wake_send(&ex->wake);
	}
	while (w->ncache > 0)
		exec_conn_drop(w, w->cache[0].conn);
	free(w->cache);
	w->cache = NULL;
}

int
exec_shard_published(struct exec_flight *fl,
		     const struct exec_shard_publish *pub, struct err *err)
{
	struct exec *ex = fl->ex;
	struct exec_shard_note n = { .fl = fl, .pub = pub };

	if (fl->run->shard_cb == NULL)
		return 0;
	uv_mutex_lock(&ex->lock);
	n.next = ex->nhead;
	ex->nhead = &n;
	uv_mutex_unlock(&ex->lock);
	wake_send(&ex->wake);
	/* the loop drains notes before it can finish (or close) this run */
	uv_mutex_lock(&ex->lock);
	while (!n.done)
		uv_cond_wait(&ex->cond, &ex->lock);
	uv_mutex_unlock(&ex->lock);
	if (n.rc != 0)
		*err = n.err;
	return n.rc;
}

/* The shards' publishes the workers wait on, recorded (loop thread). */
void
exec_shard_notes(struct exec *ex)
{
	struct exec_shard_note *n, *next;

	uv_mutex_lock(&ex->lock);
	n = ex->nhead;
	ex->nhead = NULL;
	uv_mutex_unlock(&ex->lock);
	for (; n != NULL; n = next) {
		struct exec_run *run = n->fl->run;
		struct err e;
		int rc;

		next = n->next;
		rc = run->shard_cb(run, n->pub, &e);
		uv_mutex_lock(&ex->lock);
		n->rc = rc;
		if (rc != 0)
			n->err = e;
		n->done = true; /* n is the worker's again */
		uv_cond_broadcast(&ex->cond);
		uv_mutex_unlock(&ex->lock);
	}
}
