/*
 * scheduler.c - the scheduler's one entry: its life cycle (new, start,
 * reload, drain, close), and the loop's step, where what the files
 * below asked for during a loop turn (sched_want) is done once.
 *
 * The scheduling rules live with the code that applies each (their one
 * list: docs/architecture.md, "Rule index"):
 *  SCHED-1. The store first                 sched_store.c (sched_flush)
 *  SCHED-2. Caps                            pick.c (pick_job_free)
 *  SCHED-3. Order                           pick.c (pick_item)
 *  SCHED-4. Downstream, fail fast, retry    manifest.c (manifest_settle)
 *  SCHED-5. One run for many                pick.c (pick_gather)
 *  SCHED-6. The schedule                    schedule.c (schedule_decide)
 *  SCHED-7. A store that cannot be written  sched_store.c (sched_store_fail)
 *  SCHED-8. Running totals in order        pick.c (pick_earlier_pending)
 *  SCHED-9. A running total's batch        pick.c (pick_chunk)
 * manifest.c, pick.c and schedule.c are pure (no libuv, no store, no
 * clock); the shell that applies their decisions is split by concern.
 *
 * Layers.  The shell's files call each other in one direction only: a
 * file calls functions of files in layers below its own, never above,
 * never around.  Which file does what, and its layer, is written once:
 * docs/architecture.md, "The scheduler's layers" (tools/check_layout.py
 * checks that the table holds, that every file it names exists, and that
 * no circle exists; meson test test_layout).  scheduler.h's functions are
 * each defined in the
 * file of its concern, so a command enters at the layer it needs (a
 * backfill at sched_submit.c, a cancel at sched_request.c): since no
 * file calls up, whatever it starts runs downwards from there.
 *
 * A file that must have something done that belongs above it does not
 * call up: it asks with sched_want() (sched_int.h), which sets a flag
 * and arms the idle handle; the step (sched_step_cb, here) does it once
 * at the end of the loop turn, before main.c commits the turn (rule
 * 1): SCHED_WANT_DISPATCH (a request queued, a run ended, a job
 * resumed: start what the caps allow) and SCHED_WANT_SCHEDULE (a
 * sensor's check came back: run the schedule again).  Libuv's callbacks
 * (a timer, a run's done_cb) enter the file that armed them; a call
 * through a function pointer (the remote, a watcher, the change and
 * store callbacks) is no arrow.
 *
 * SCHED-1, the store first.  A state change is committed to the state
 * store before it is acknowledged to a client: the changes of one loop
 * turn (runs started and finished) share one transaction, committed by
 * sched_flush() at the end of the turn and before any answer is sent; a
 * request is committed before its id is returned.  A crash can lose only
 * the record of runs of the last turn, whose partitions are then still
 * queued and run again (partition writes are idempotent).
 *
 * SCHED-7, a store that cannot be written (a full disk) stops the work,
 * never the daemon: when a write fails (store.h), the turn is rolled
 * back and memory is ahead of the store, so no run starts, nothing is
 * materialised and no answer acknowledges anything from then on
 * (sched_flush fails, control.c answers with the error); runs in flight
 * finish unrecorded, and no later turn writes anything either
 * (store_refuse_all): it could commit the end of a change whose start
 * was rolled back (a request finished, its last run still running in
 * the store), which a restart would then never repair.  main.c waits
 * until the store can be written and nothing runs, then restarts the
 * daemon in place, which resumes from the last commit as after a crash
 * (SCHED-1).
 */
#include "sched_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "clockjump.h"
#include "fresh.h"
#include "log.h"
#include "trend_hist.h"
#include "xalloc.h"

/*
 * The loop's step (sched_want): what the files below asked for during
 * this loop turn, done once at its end (the idle phase, before main.c's
 * commit of the turn): the schedule run again (a sensor's check came
 * back), then one dispatch however many events asked for it.
 */
static void
sched_step_cb(uv_idle_t *h)
{
	struct sched *s = h->data;
	unsigned want = s->want;

	s->want = 0;
	if (want & SCHED_WANT_SCHEDULE) {
		sched_schedule(s, false, -1);
		want |= s->want; /* what the schedule asked for */
		s->want = 0;
	}
	if (want & SCHED_WANT_DISPATCH)
		sched_dispatch(s);
	if (s->want == 0) {
		uv_idle_stop(h);
		s->step_armed = false;
	}
}

/* Size the per-job caches to the configuration. */
static void
sched_index_jobs(struct sched *s)
{
	free(s->js_by_job);
	s->js_by_job = xcalloc(s->cfg->njobs, sizeof *s->js_by_job);
	manifest_reindex(&s->m, s->cfg);
}

struct sched *
sched_new(uv_loop_t *loop, struct store *store, struct exec *exec,
	  struct config *cfg, const char *log_dir)
{
	struct sched *s = xcalloc(1, sizeof *s);

	s->loop = loop;
	s->store = store;
	s->exec = exec;
	s->cfg = cfg;
	s->log_dir = xstrdup(log_dir ? log_dir : "");
	manifest_init(&s->m, cfg);
	s->js_by_job = xcalloc(cfg->njobs, sizeof *s->js_by_job);
	s->retry_at = INT64_MAX;
	s->started_ms = clock_now_ms();
	uv_timer_init(loop, &s->retry_timer);
	s->retry_timer.data = s;
	uv_timer_init(loop, &s->due_timer);
	s->due_timer.data = s;
	uv_timer_init(loop, &s->late_timer);
	s->late_timer.data = s;
	/* due times are instants of the wall clock, the timers monotonic */
	if (!clock_is_test())
		s->clock_jump = clockjump_start(loop, sched_clock_jumped, s);
	s->fresh = fresh_new();
	uv_idle_init(loop, &s->step);
	s->step.data = s;
	s->step_cb = sched_step_cb;
	return s;
}

int
sched_start_adopt(struct sched *s, const struct adopt_row *rows, size_t nrows,
		  enum adopt_action *action, struct err *err)
{
	if (sched_recover(s, rows, nrows, action, err) < 0)
		return -1;
	sched_probe_warehouses(s);
	sched_schedule(s, false, -1);
	sched_want(s, SCHED_WANT_DISPATCH);
	return 0;
}

int64_t
sched_reload(struct sched *s, struct config *cfg)
{
	int64_t cancelled;
	struct err err;

	sched_deck_withdraw(s); /* handed ahead under the old definitions */
	config_unref(s->cfg);
	s->cfg = cfg;
	sched_index_jobs(s);
	/* a trend removed or its window made smaller: the store's bound */
	if (!s->dormant && trend_hist_trim(s->store, cfg, &err) < 0)
		log_err("cannot trim the trend history: %s", err.msg);
	sched_fresh_reload(s);
	cancelled = sched_cancel_unconfigured(s);
	sched_probe_warehouses(s);
	if (!s->draining)
		sched_schedule(s, false, -1);
	sched_want(s, SCHED_WANT_DISPATCH);
	return cancelled;
}

bool
sched_store_failed(const struct sched *s, const char **error, int64_t *since_ms)
{
	if (error)
		*error = s->store_error;
	if (since_ms)
		*since_ms = s->store_failed_at;
	return s->store_failed;
}

void
sched_on_store_failure(struct sched *s, void (*cb)(void *), void *data)
{
	s->store_cb = cb;
	s->store_data = data;
}

void
sched_suspend(struct sched *s, const char *why)
{
	sched_drain(s);
	(void)sched_store_fail(s, why); /* SCHED-7, without its callback */
}

bool
sched_dormant(const struct sched *s)
{
	return s->dormant;
}

struct config *
sched_config(struct sched *s)
{
	return s->cfg;
}

struct store *
sched_store(struct sched *s)
{
	return s->store;
}

struct exec *
sched_exec(struct sched *s)
{
	return s->exec;
}

void
sched_set_throttle(struct sched *s, struct throttle *th)
{
	s->throttle = th;
}

struct throttle *
sched_throttle(struct sched *s)
{
	return s->throttle;
}

void
sched_set_hooks(struct sched *s, struct hooks *h)
{
	s->hooks = h;
}

void
sched_poke(struct sched *s)
{
	sched_want(s, SCHED_WANT_DISPATCH);
}

int
sched_drain(struct sched *s)
{
	s->draining = true;
	uv_timer_stop(&s->due_timer);
	uv_timer_stop(&s->retry_timer);
	/* what has not started waits for the next start */
	return sched_deck_withdraw(s);
}

/* Runs in flight (m.nrunning counts slots: a wide ClickHouse batch
 * holds several, SCHED-2). */
int
sched_running(const struct sched *s)
{
	int runs;
	int64_t items;

	manifest_in_flight(&s->m, &runs, &items);
	return runs;
}

/* Items queued: those queued or running, less the running ones (each
 * partition of a batch in flight). */
int64_t
sched_queued(const struct sched *s)
{
	int runs;
	int64_t items;

	manifest_in_flight(&s->m, &runs, &items);
	return s->m.nqueued - items;
}

int64_t
sched_failed_total(const struct sched *s)
{
	return s->m.failed_total;
}

void
sched_on_change(struct sched *s, void (*cb)(void *data), void *data)
{
	s->change_cb = cb;
	s->change_data = data;
}

void
sched_on_run_fact(struct sched *s,
		  void (*cb)(void *data, const struct sched_run_fact *f),
		  void *data)
{
	s->fact_cb = cb;
	s->fact_data = data;
}

void
sched_on_run(struct sched *s,
	     void (*cb)(void *data, const struct sched_run_event *ev),
	     void *data)
{
	s->run_cb = cb;
	s->run_data = data;
}

void
sched_on_idle(struct sched *s, void (*cb)(void *data), void *data)
{
	s->idle_cb = cb;
	s->idle_data = data;
	if (s->m.nrunning == 0 && cb)
		cb(data);
}

void
sched_close(struct sched *s)
{
	s->closing = 1;
	uv_close((uv_handle_t *)&s->retry_timer, NULL);
	uv_close((uv_handle_t *)&s->due_timer, NULL);
	uv_close((uv_handle_t *)&s->late_timer, NULL);
	uv_close((uv_handle_t *)&s->step, NULL);
	clockjump_close(s->clock_jump);
	s->clock_jump = NULL;
}

void
sched_free(struct sched *s)
{
	while (s->m.requests.next != &s->m.requests)
		sched_request_free(s, s->m.requests.next);
	manifest_clear(&s->m);
	for (size_t i = 0; i < s->njobstates; i++) {
		free(s->jobstates[i]->name);
		free(s->jobstates[i]);
	}
	free(s->jobstates);
	fresh_free(s->fresh);
	free(s->js_by_job);
	free(s->log_dir);
	config_unref(s->cfg);
	free(s);
}
