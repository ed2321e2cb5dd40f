/*
 * exec.c - running one partition (or one batch) of a job, off the loop.
 *
 * SQL runs go through a queue (ex->lock, ex->cond) to a pool of worker
 * threads.  Each worker keeps its own warehouse connections, keyed by
 * warehouse name and location, open across runs; one that errors badly
 * (!usable) is closed and reopened by the next run that needs it.  A
 * worker never touches the loop except through wake_send() (wake.h: a
 * pipe, not uv_async_send(), whose receiving side spins): it pushes
 * "started" and "done" events onto two lists under ex->lock and the one
 * wake drains them on the loop thread, started before done; a shard's
 * publish (exec_shard_published, ClickHouse) is a third list, drained
 * between them, whose worker waits until the loop has recorded it.  A
 * SQL run with no timeout and no started_cb wakes the loop once, when
 * done (its start, which then arms nothing, is drained with it); one
 * with either also when it starts.
 *
 * Command runs need no thread: uv_spawn() in their own session (so the
 * pid is also the process group), output appended to a per-run log file,
 * reaped by libuv's exit callback on the loop.
 *
 * Every run owns a uv_timer_t (its timeout, armed when the run starts)
 * whose close callback is where done_cb is called and the run's private
 * state freed: so done_cb always comes later, on the loop thread, once.
 *
 * Stopping a run (timeout, exec_cancel, exec_close) follows these rules:
 *  - the reason is stored first, atomically, in fl->stop; the first
 *    reason wins;
 *  - a queued SQL run is unlinked and finished at once;
 *  - a running SQL run is interrupted through its worker's connection, but
 *    only while w->current == fl, both read under w->lock: the worker
 *    sets and clears current under the same lock, so the connection is
 *    never interrupted on behalf of another run, nor after it is closed;
 *    a stop that comes before the worker has begun is seen by the worker,
 *    which checks fl->stop after begin() and before every step;
 *  - a command's process group gets SIGKILL, only while the child is not
 *    yet reaped (the pid could be reused after);
 *  - a run that still completed (committed, exited 0) keeps its success;
 *    a run that failed while stopping reports the stop, not the symptom.
 * Lock order: ex->lock before w->lock; a worker never holds both.
 *
 * This file is the loop thread's side: a run's life from exec_submit to
 * done_cb, and the executor's creation, resize and close.  The other
 * files of the executor, and what each owns, are listed at the top of
 * exec_priv.h.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_ms.h"
#include "exec_priv.h"
#include "exec_wap.h"
#include "xalloc.h"

static void exec_close_finish(struct exec *ex);

/* Mark a run failed with a one-line message. */
void
exec_fail(struct exec_run *run, const char *fmt, ...)
{
	va_list ap;
	char *p;

	run->failed = true;
	va_start(ap, fmt);
	vsnprintf(run->error, sizeof run->error, fmt, ap);
	va_end(ap);
	for (p = run->error; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* True once someone asked the run to stop. */
bool
exec_stopping(struct exec_flight *fl)
{
	return atomic_load(&fl->stop) != EXEC_STOP_NONE;
}

/* exec_stopping, with err saying so. */
bool
exec_interrupted(struct exec_flight *fl, struct err *err)
{
	if (!exec_stopping(fl))
		return false;
	err_interrupted(err);
	return true;
}

/* A failed run that was being stopped reports why it was stopped. */
void
exec_result_stop(struct exec_flight *fl)
{
	struct exec_run *run = fl->run;
	char dur[CAL_KEY_MAX];

	if (!run->failed)
		return;
	switch (atomic_load(&fl->stop)) {
	case EXEC_STOP_TIMEOUT:
		cal_format_duration(run->job->timeout, dur);
		run->timed_out = true;
		exec_fail(run, "timed out after %s", dur);
		break;
	case EXEC_STOP_CANCEL:
		run->cancelled = true;
		exec_fail(run, "cancelled");
		break;
	default:
		break;
	}
}

struct exec_run *
exec_flight_run(struct exec_flight *fl)
{
	return fl->run;
}

_Atomic int64_t *
exec_fence_clock(struct exec *ex)
{
	return &ex->alive_until;
}

int
exec_fence_check(struct exec_flight *fl, const char *when, struct err *err)
{
	int64_t until = atomic_load(&fl->ex->alive_until);

	/* 0: one host, or no heartbeat yet (no run is claimed before one) */
	if (until == 0 || clock_ms(CLOCK_MONOTONIC) < until)
		return 0;
	return err_set(err, EXIT_WORK_FAILED, "%s: this node's lease could"
		       " have run out (paused or cut off past it), so another"
		       " node may have taken the partition over; it is run"
		       " again there", when);
}

const atomic_int *
exec_flight_stop(struct exec_flight *fl)
{
	return &fl->stop;
}

void
exec_flight_set_staged(struct exec_flight *fl)
{
	fl->staged = true;
}

/* The timer is closed: the run is over, tell the caller. */
static void
exec_timer_close_cb(uv_handle_t *handle)
{
	struct exec_flight *fl = handle->data;
	struct exec *ex = fl->ex;
	struct exec_run *run = fl->run;

	LIST_REMOVE(fl, alink);
	if (--ex->nrunning == 0 && !ex->close_done)
		wake_ref(&ex->wake, 0);
	run->priv = NULL;
	if (fl->staged)
		exec_unstage_later(ex, run);
	free(fl);
	run->done_cb(run);
	if (ex->closing && ex->nrunning == 0)
		exec_close_finish(ex);
}

/* Finish a run whose result is final: done_cb follows the timer's close. */
void
exec_finish(struct exec_flight *fl)
{
	struct exec *ex = fl->ex;

	if (fl->finishing)
		return;
	fl->finishing = true;
	uv_mutex_lock(&ex->lock);
	if (fl->on_slist) {
		/* A "started" event not yet drained must not outlive fl. */
		TAILQ_REMOVE(&ex->started, fl, slink);
		fl->on_slist = false;
	}
	uv_mutex_unlock(&ex->lock);
	uv_timer_stop(&fl->timer);
	uv_close((uv_handle_t *)&fl->timer, exec_timer_close_cb);
}

/* Take fl out of the queue; ex->lock held. */
static void
exec_unqueue(struct exec *ex, struct exec_flight *fl)
{
	TAILQ_REMOVE(&ex->queue, fl, qlink);
}

/* Take a run handed ahead off the run it follows (the one after it, if
 * any, follows that run instead); ex->lock held. */
static void
exec_deck_unlink(struct exec_flight *fl)
{
	fl->deck_of->deck = fl->deck;
	if (fl->deck != NULL)
		fl->deck->deck_of = fl->deck_of;
	fl->deck = NULL;
	fl->deck_of = NULL;
}

void
exec_deck_release(struct exec *ex, struct exec_flight *fl)
{
	struct exec_flight *nx = fl->deck;

	if (nx == NULL)
		return;
	fl->deck = NULL;
	nx->deck_of = NULL;
	nx->state = EXEC_QUEUED;
	TAILQ_INSERT_HEAD(&ex->queue, nx, qlink);
}

/* Stop a run for `reason` (the first reason given wins). */
static void
exec_stop(struct exec_flight *fl, int reason)
{
	struct exec *ex = fl->ex;
	struct exec_worker *w;
	int none = EXEC_STOP_NONE;

	if (fl->finishing)
		return;
	if (!atomic_compare_exchange_strong(&fl->stop, &none, reason))
		return;
	if (fl->is_cmd) {
		exec_cmd_kill(fl);
		return;
	}
	uv_mutex_lock(&ex->lock);
	switch (fl->state) {
	case EXEC_QUEUED:
	case EXEC_DECK:
		if (fl->state == EXEC_DECK) {
			exec_deck_unlink(fl);
		} else {
			exec_unqueue(ex, fl);
			if (fl->deck != NULL) {
				exec_deck_release(ex, fl);
				uv_cond_signal(&ex->cond);
			}
		}
		fl->state = EXEC_DONE;
		uv_mutex_unlock(&ex->lock);
		fl->run->failed = true;
		exec_result_stop(fl);
		exec_finish(fl);
		return;
	case EXEC_RUNNING:
		w = fl->worker;
		uv_mutex_lock(&w->lock);
		if (w->current == fl && w->conn != NULL)
			w->conn->drv->interrupt(w->conn);
		uv_mutex_unlock(&w->lock);
		break;
	case EXEC_DONE:
		break;
	}
	uv_mutex_unlock(&ex->lock);
}

/* A run's timeout expired. */
static void
exec_timeout_cb(uv_timer_t *timer)
{
	exec_stop(timer->data, EXEC_STOP_TIMEOUT);
}

/* Arm a run's timeout, if it has one. */
void
exec_arm_timeout(struct exec_flight *fl)
{
	int64_t t = fl->run->job->timeout;

	if (t > 0)
		uv_timer_start(&fl->timer, exec_timeout_cb,
		    (uint64_t)t * 1000, 0);
}

/* Drain the workers' events: started runs first, then finished ones. */
static void
exec_wake_cb(struct wake *wake)
{
	struct exec *ex = wake->data;
	struct exec_flight_tailq started = TAILQ_HEAD_INITIALIZER(started);
	struct exec_flight_tailq done = TAILQ_HEAD_INITIALIZER(done);
	struct exec_flight *s, *d;

	uv_mutex_lock(&ex->lock);
	TAILQ_CONCAT(&started, &ex->started, slink);
	TAILQ_CONCAT(&done, &ex->done, qlink);
	TAILQ_FOREACH(s, &started, slink)
		s->on_slist = false;
	uv_mutex_unlock(&ex->lock);

	while ((s = TAILQ_FIRST(&started)) != NULL) {
		TAILQ_REMOVE(&started, s, slink);
		if (s->finishing)
			continue;
		if (!s->is_cmd)
			exec_arm_timeout(s);
		if (s->run->started_cb != NULL)
			s->run->started_cb(s->run);
	}
	exec_shard_notes(ex); /* after their runs' starts */
	while ((d = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, d, qlink);
		exec_finish(d);
	}
}

/* Start a run now, or after `after` (exec_submit_after); done_cb
 * follows exactly once, later, on the loop. */
static void
exec_submit_to(struct exec *ex, struct exec_run *run, struct exec_run *after)
{
	const struct job_def *jd = run->job;
	struct exec_flight *fl, *prev = after != NULL ? after->priv : NULL;

	fl = xcalloc(1, sizeof *fl);
	fl->ex = ex;
	fl->run = run;
	atomic_init(&fl->stop, EXEC_STOP_NONE);
	fl->state = EXEC_DONE;
	run->priv = fl;
	run->failed = false;
	run->timed_out = false;
	run->cancelled = false;
	run->no_retry = false;
	run->not_started = false;
	run->withdrawn = false;
	run->committed_before = false;
	run->pgid = 0;
	run->proc_start = -1;
	run->error[0] = '\0';
	run->rows_changed = 0;
	run->checks = NULL;
	run->nchecks = 0;
	uv_timer_init(ex->loop, &fl->timer);
	fl->timer.data = fl;
	LIST_INSERT_HEAD(&ex->all, fl, alink);
	if (ex->nrunning++ == 0 && !ex->close_done)
		wake_ref(&ex->wake, 1);

	if (ex->closing) {
		run->failed = true;
		run->cancelled = true;
		exec_fail(run, "cancelled");
		exec_finish(fl);
		return;
	}
	if (jd == NULL || run->parts == NULL || run->nparts == 0) {
		exec_fail(run, "nothing to run");
		exec_finish(fl);
		return;
	}
	if (jd->command != NULL && jd->command_len > 0 &&
	    run->query_sql == NULL) {
		fl->is_cmd = true;
		run->rows_changed = -1;
		exec_cmd_start(fl);
		return;
	}
	if ((jd->sql == NULL && run->query_sql == NULL) || run->cfg == NULL ||
	    jd->warehouse < 0 ||
	    (size_t)jd->warehouse >= run->cfg->nwarehouses) {
		exec_fail(run, "job %s has no sql and warehouse, nor a command",
		    jd->name);
		exec_finish(fl);
		return;
	}
	uv_mutex_lock(&ex->lock);
	while (prev != NULL && prev->deck != NULL)
		prev = prev->deck; /* the end of the chain */
	if (prev != NULL && !prev->is_cmd && prev->state != EXEC_DONE) {
		/* no signal: prev's worker takes it when prev ends */
		fl->state = EXEC_DECK;
		fl->deck_of = prev;
		prev->deck = fl;
		uv_mutex_unlock(&ex->lock);
		return;
	}
	fl->state = EXEC_QUEUED;
	TAILQ_INSERT_TAIL(&ex->queue, fl, qlink);
	uv_cond_signal(&ex->cond);
	uv_mutex_unlock(&ex->lock);
}

void
exec_submit(struct exec *ex, struct exec_run *run)
{
	exec_submit_to(ex, run, NULL);
}

void
exec_submit_after(struct exec *ex, struct exec_run *run,
		  struct exec_run *after)
{
	exec_submit_to(ex, run, after);
}

bool
exec_withdraw(struct exec *ex, struct exec_run *run)
{
	struct exec_flight *fl = run->priv;

	if (fl == NULL || fl->finishing)
		return false;
	uv_mutex_lock(&ex->lock);
	if (fl->state != EXEC_DECK) {
		uv_mutex_unlock(&ex->lock);
		return false;
	}
	exec_deck_unlink(fl);
	fl->state = EXEC_DONE;
	uv_mutex_unlock(&ex->lock);
	run->failed = true;
	run->not_started = true;
	run->withdrawn = true;
	exec_fail(run, "taken back before it started");
	exec_finish(fl);
	return true;
}

/* Interrupt a run in flight; done_cb follows with cancelled set. */
void
exec_cancel(struct exec *ex, struct exec_run *run)
{
	(void)ex;
	if (run->priv != NULL)
		exec_stop(run->priv, EXEC_STOP_CANCEL);
}

/* Start worker threads until there are nthreads. */
int
exec_resize(struct exec *ex, int nthreads, struct err *err)
{
	struct exec_worker *w, **ws;
	int r;

	if (ex->closing)
		return err_set(err, EXIT_INTERNAL, "executor is closing");
	while (ex->nworkers < nthreads) {
		ws = xreallocarray(ex->workers, ex->nworkers + 1, sizeof *ws);
		ex->workers = ws;
		w = xcalloc(1, sizeof *w);
		w->ex = ex;
		if (uv_mutex_init(&w->lock) != 0) {
			free(w);
			return err_set(err, EXIT_INTERNAL, "cannot create a "
			    "mutex");
		}
		r = uv_thread_create(&w->tid, exec_worker_main, w);
		if (r != 0) {
			uv_mutex_destroy(&w->lock);
			free(w);
			return err_set(err, EXIT_INTERNAL, "cannot start a "
			    "worker thread: %s", uv_strerror(r));
		}
		ex->workers[ex->nworkers++] = w;
	}
	return 0;
}

/* Tell every worker to quit, and wait for them. */
static void
exec_join(struct exec *ex)
{
	int i;

	uv_mutex_lock(&ex->lock);
	ex->quit = true;
	uv_cond_broadcast(&ex->cond);
	uv_mutex_unlock(&ex->lock);
	for (i = 0; i < ex->nworkers; i++)
		uv_thread_join(&ex->workers[i]->tid);
}

/* Release what exec_new allocated (threads already joined). */
static void
exec_destroy(struct exec *ex)
{
	struct exec_unstage *u;
	int i;

	for (i = 0; i < ex->nworkers; i++) {
		uv_mutex_destroy(&ex->workers[i]->lock);
		free(ex->workers[i]);
	}
	free(ex->workers);
	exec_release_stages(ex); /* unrecorded: left to the next start */
	while ((u = ex->uhead) != NULL) {
		ex->uhead = u->next;
		exec_unstage_free(u);
	}
	exec_wap_known_forget();
	for (size_t k = 0; k < ex->nconncount; k++)
		free(ex->conncount[k].name);
	free(ex->conncount);
	uv_cond_destroy(&ex->cond);
	uv_mutex_destroy(&ex->lock);
	free(ex);
}

/* Create the executor: `nthreads` SQL worker threads on `loop`. */
int
exec_new(uv_loop_t *loop, int nthreads, struct exec **out, struct err *err)
{
	struct exec *ex;
	int r;

	*out = NULL;
	if (nthreads < 1)
		return err_set(err, EXIT_INTERNAL, "need at least one worker "
		    "thread, not %d", nthreads);
	ex = xcalloc(1, sizeof *ex);
	ex->loop = loop;
	TAILQ_INIT(&ex->queue);
	TAILQ_INIT(&ex->done);
	TAILQ_INIT(&ex->started);
	LIST_INIT(&ex->running);
	LIST_INIT(&ex->all);
	if (uv_mutex_init(&ex->lock) != 0) {
		free(ex);
		return err_set(err, EXIT_INTERNAL, "cannot create a mutex");
	}
	if (uv_cond_init(&ex->cond) != 0) {
		uv_mutex_destroy(&ex->lock);
		free(ex);
		return err_set(err, EXIT_INTERNAL, "cannot create a condition");
	}
	/* Workers first: none signals the loop before a run is submitted,
	 * and a failure here leaves no handle to close. */
	if (exec_resize(ex, nthreads, err) == -1) {
		exec_join(ex);
		exec_destroy(ex);
		return -1;
	}
	r = wake_init(loop, &ex->wake, exec_wake_cb);
	if (r != 0) {
		exec_join(ex);
		exec_destroy(ex);
		return err_set(err, EXIT_INTERNAL, "cannot create the workers'"
		    " wake-up pipe: %s", uv_strerror(r));
	}
	ex->wake.data = ex;
	/* Idle, the executor does not keep the loop alive. */
	wake_ref(&ex->wake, 0);
	*out = ex;
	return 0;
}

/* The wake is closed: the executor is fully stopped. */
static void
exec_wake_close_cb(struct wake *wake)
{
	struct exec *ex = wake->data;

	if (ex->closed_cb != NULL)
		ex->closed_cb(ex->closed_data);
}

/* Nothing runs any more: stop the threads and close the wake. */
static void
exec_close_finish(struct exec *ex)
{
	if (ex->close_done)
		return;
	ex->close_done = true;
	exec_join(ex);
	wake_close(&ex->wake, exec_wake_close_cb);
}

/* Cancel what still runs, join the threads, close every handle. */
void
exec_close(struct exec *ex, void (*closed_cb)(void *data), void *data)
{
	struct exec_flight *fl, *next;

	if (ex->closing)
		return;
	ex->closing = true;
	ex->closed_cb = closed_cb;
	ex->closed_data = data;
	for (fl = LIST_FIRST(&ex->all); fl != NULL; fl = next) {
		next = LIST_NEXT(fl, alink);
		exec_stop(fl, EXEC_STOP_CANCEL);
	}
	if (ex->nrunning == 0)
		exec_close_finish(ex);
}

/* Free the executor after closed_cb. */
void
exec_free(struct exec *ex)
{
	if (ex != NULL)
		exec_destroy(ex);
}

/* Free the results a run collected (checks). */
void
exec_run_clear_results(struct exec_run *run)
{
	size_t i;

	for (i = 0; i < run->nchecks; i++) {
		free(run->checks[i].name);
		free(run->checks[i].detail);
	}
	free(run->checks);
	run->checks = NULL;
	run->nchecks = 0;
	for (i = 0; i < run->nvalues; i++)
		free(run->values[i]);
	free(run->values);
	run->values = NULL;
	run->nvalues = 0;
	if (run->guards != NULL) {
		for (i = 0; i < run->nparts; i++)
			free(run->guards[i].metrics);
		free(run->guards);
		run->guards = NULL;
	}
	for (i = 0; run->shard_guards != NULL &&
	     i < run->nshards * run->nparts; i++)
		free(run->shard_guards[i].metrics);
	free(run->shard_guards);
	run->shard_guards = NULL;
	run->nshards = 0;
}
