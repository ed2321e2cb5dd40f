/*
 * throttle.c - per-warehouse throttling (throttle.h).
 *
 * One struct throttle_wh per throttled warehouse of the configuration in
 * force.  Its life: a timer fires, the check is queued on libuv's thread
 * pool (throttle_work_cb: open the connection if needed, run the query
 * under the driver's watch with THROTTLE_TIMEOUT_MS, read one number),
 * and throttle_after_cb applies the result on the loop and re-arms the
 * timer.  A reload or shutdown marks an entry dead: its timer closes, a
 * query in flight is asked to stop (the watch's stop flag), and the entry
 * is freed once both the timer is closed and no work is in flight.
 *
 * What a check's value means is throttle_decide (pure, tested in
 * tests/unit/test_throttle.c).  on_throttle runs through hooks.c's runner
 * (hooks_fire_throttle), as every hook does: killed after hook_timeout,
 * output to the log, a failure logged and never retried.
 */
#include "throttle.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "exec.h"
#include "hooks.h"
#include "log.h"
#include "wh.h"
#include "xalloc.h"

#define THROTTLE_TIMEOUT_MS 10000 /* one check at most (and at most every) */

struct throttle_wh {
	struct throttle *th;
	char *name;
	struct config *cfg;                 /* a reference: def lives in it */
	const struct warehouse_def *def;
	uv_timer_t timer;
	uv_work_t work;
	bool busy;                          /* work queued or running */
	bool dead;                          /* reload or shutdown dropped it */
	bool timer_closed;
	atomic_int stop;                    /* the watch's stop flag */
	struct wh_conn *conn;               /* the work callback's only */
	/* the connection while its query runs, for the loop's deadline
	 * (interrupt() is the one call another thread may make) */
	uv_mutex_t lock;
	struct wh_conn *live;               /* lock */
	atomic_int overdue;                 /* the deadline interrupted it */

	/* the last check's result (written by the work, read after it) */
	int rc;
	double value;
	char error[256];

	/* state, loop thread */
	struct throttle_view v;
};

struct throttle {
	uv_loop_t *loop;
	struct hooks *hooks;                /* runs on_throttle */
	struct throttle_ops ops;
	struct throttle_wh **w;
	size_t n;
	bool closing;
};

static void throttle_timer_cb(uv_timer_t *t);

struct throttle *
throttle_new(uv_loop_t *loop, struct hooks *hooks,
	     const struct throttle_ops *ops)
{
	struct throttle *th = xcalloc(1, sizeof *th);

	th->loop = loop;
	th->hooks = hooks;
	th->ops = *ops;
	return th;
}

/* Free an entry that is dead, idle and whose timer is closed. */
static void
throttle_wh_maybe_free(struct throttle_wh *w)
{
	if (!w->dead || w->busy || !w->timer_closed)
		return;
	if (w->conn)
		w->conn->drv->close(w->conn);
	uv_mutex_destroy(&w->lock);
	config_unref(w->cfg);
	free(w->name);
	free(w);
}

/* The timer's handle is closed. */
static void
throttle_timer_closed_cb(uv_handle_t *h)
{
	struct throttle_wh *w = h->data;

	w->timer_closed = true;
	throttle_wh_maybe_free(w);
}

/* Drop an entry: stop its timer and query, free it when idle. */
static void
throttle_wh_kill(struct throttle_wh *w)
{
	w->dead = true;
	atomic_store(&w->stop, 1); /* a query in flight gives up */
	uv_mutex_lock(&w->lock);
	if (w->live)
		w->live->drv->interrupt(w->live);
	uv_mutex_unlock(&w->lock);
	uv_close((uv_handle_t *)&w->timer, throttle_timer_closed_cb);
}

/* How long one check may take: every, at most THROTTLE_TIMEOUT_MS. */
static int64_t
throttle_timeout_ms(const struct throttle_def *t)
{
	int64_t ms = t->every * 1000;

	return ms > THROTTLE_TIMEOUT_MS ? THROTTLE_TIMEOUT_MS : ms;
}

/* One check, on a thread-pool thread. */
static void
throttle_work_cb(uv_work_t *req)
{
	struct throttle_wh *w = req->data;
	const struct throttle_def *t = w->def->throttle;
	struct err err;
	bool has_row = false;
	char *value = NULL, *end;
	int64_t timeout = throttle_timeout_ms(t);
	int rc;

	w->rc = -1;
	w->error[0] = '\0';
	if (w->conn == NULL) {
		const char *why = NULL;
		const struct wh_driver *drv = exec_driver_for(w->def->kind, &why);

		if (drv == NULL) {
			snprintf(w->error, sizeof w->error, "%s", why);
			return;
		}
		if (drv->open(w->def, &w->conn, &err) == -1) {
			w->conn = NULL;
			snprintf(w->error, sizeof w->error, "%s", err.msg);
			return;
		}
	}
	if (w->conn->drv->watch)
		w->conn->drv->watch(w->conn, &w->stop, timeout, true);
	uv_mutex_lock(&w->lock);
	w->live = w->conn;
	uv_mutex_unlock(&w->lock);
	rc = w->conn->drv->query_value(w->conn, t->sql, NULL, 0, &has_row,
				       &value, &err);
	uv_mutex_lock(&w->lock);
	w->live = NULL;
	uv_mutex_unlock(&w->lock);
	if (rc == -1 && atomic_load(&w->overdue))
		snprintf(w->error, sizeof w->error, "the throttle query did not"
			 " answer within %lld ms", (long long)timeout);
	else if (rc == -1)
		snprintf(w->error, sizeof w->error, "the throttle query failed:"
			 " %s", err.msg);
	else if (!has_row)
		snprintf(w->error, sizeof w->error, "the throttle query returned"
			 " no row");
	else if (value == NULL)
		snprintf(w->error, sizeof w->error, "the throttle query returned"
			 " NULL");
	else {
		errno = 0;
		w->value = strtod(value, &end);
		if (end == value || *end != '\0' || errno != 0 ||
		    !isfinite(w->value))
			snprintf(w->error, sizeof w->error, "the throttle query"
				 " returned \"%.64s\", not a number", value);
		else
			w->rc = 0;
	}
	free(value);
	if (w->conn->drv->watch)
		w->conn->drv->watch(w->conn, NULL, 0, false);
	/* an interrupt sticks to a connection until its next begin(),
	 * which a throttle never calls: start afresh */
	if (!w->conn->drv->usable(w->conn) || atomic_load(&w->overdue) ||
	    atomic_load(&w->stop)) {
		w->conn->drv->close(w->conn);
		w->conn = NULL;
	}
}

struct throttle_decision
throttle_decide(const struct throttle_def *t, bool was_throttled, bool ok,
		double value)
{
	struct throttle_decision d;

	d.throttled = !ok || value > t->max;
	d.critical = ok && t->has_critical && value > t->critical;
	d.begins = d.throttled && !was_throttled;
	d.ends = !d.throttled && was_throttled;
	return d;
}

/* A check is over: apply it on the loop, then wait for the next one. */
static void
throttle_after_cb(uv_work_t *req, int status)
{
	struct throttle_wh *w = req->data;
	struct throttle_view *v = &w->v;
	const struct throttle_def *t = w->def->throttle;
	struct throttle *th = w->th;
	int64_t now = clock_now_ms();
	struct throttle_decision d;
	bool first;
	char val[64];

	w->busy = false;
	if (w->dead) {
		throttle_wh_maybe_free(w);
		return;
	}
	uv_timer_stop(&w->timer); /* the deadline */
	if (status != 0)
		snprintf(w->error, sizeof w->error, "the check was cancelled");
	first = !v->checked;
	v->checked = true;
	v->checked_ms = now;
	v->checks++;
	snprintf(v->error, sizeof v->error, "%s", w->rc == 0 ? "" : w->error);
	if (w->rc == 0) {
		v->has_value = true;
		v->value = w->value;
	}
	d = throttle_decide(t, v->throttled, w->rc == 0, w->value);
	snprintf(val, sizeof val, "%s", "");
	if (w->rc == 0)
		snprintf(val, sizeof val, "%.15g", w->value);
	if (d.begins) {
		v->throttled = true;
		v->since_ms = now;
		if (w->rc == 0)
			log_warn("warehouse=%s throttled: value %s above max %g;"
				 " no new run starts there until it drops",
				 w->name, val, t->max);
		else
			log_warn("warehouse=%s throttled: %s; no new run starts"
				 " there until the query answers below max %g",
				 w->name, w->error, t->max);
		hooks_fire_throttle(th->hooks, w->def, w->cfg->hook_timeout, val,
				    d.critical ? "critical" : "throttled");
	} else if (d.ends) {
		v->throttled = false;
		log_notice("warehouse=%s released: value %s at or below max %g",
			   w->name, val, t->max);
		hooks_fire_throttle(th->hooks, w->def, w->cfg->hook_timeout, val,
				    "released");
	}
	if (d.critical && !v->critical)
		log_warn("warehouse=%s critical: value %s above %g; its runs in"
			 " flight are interrupted and queued again", w->name,
			 val, t->critical);
	v->critical = d.critical;
	if (d.critical && th->ops.requeue)
		th->ops.requeue(th->ops.data, w->name);
	/* the first answer opens the warehouse (throttle_blocks) */
	if ((d.ends || (first && !d.throttled)) && th->ops.poke)
		th->ops.poke(th->ops.data);
	if (!th->closing)
		uv_timer_start(&w->timer, throttle_timer_cb,
			       (uint64_t)t->every * 1000, 0);
}

/* A check outlived its timeout (the driver's watch did not end it):
 * interrupt it from here. */
static void
throttle_deadline_cb(uv_timer_t *t)
{
	struct throttle_wh *w = t->data;

	atomic_store(&w->overdue, 1);
	uv_mutex_lock(&w->lock);
	if (w->live)
		w->live->drv->interrupt(w->live);
	uv_mutex_unlock(&w->lock);
}

/* Time for a check: queue it on the thread pool. */
static void
throttle_timer_cb(uv_timer_t *t)
{
	struct throttle_wh *w = t->data;

	if (w->dead || w->busy)
		return;
	w->busy = true;
	w->work.data = w;
	atomic_store(&w->overdue, 0);
	if (uv_queue_work(w->th->loop, &w->work, throttle_work_cb,
			  throttle_after_cb) < 0) {
		w->busy = false;
		uv_timer_start(&w->timer, throttle_timer_cb,
			       (uint64_t)w->def->throttle->every * 1000, 0);
		return;
	}
	/* the same timer, while the check runs: its deadline, a second
	 * after the driver's own */
	uv_timer_start(&w->timer, throttle_deadline_cb,
		       (uint64_t)throttle_timeout_ms(w->def->throttle) + 1000, 0);
}

/* Same throttle (query, bounds, period, location)? */
static bool
throttle_same(const struct warehouse_def *a, const struct warehouse_def *b)
{
	const struct throttle_def *x = a->throttle, *y = b->throttle;
	const char *wa = a->kind == WH_SQLITE ? a->path : a->conninfo;
	const char *wb = b->kind == WH_SQLITE ? b->path : b->conninfo;

	return a->kind == b->kind && wa && wb && strcmp(wa, wb) == 0 &&
	       strcmp(x->sql, y->sql) == 0 && x->max == y->max &&
	       x->has_critical == y->has_critical &&
	       x->critical == y->critical && x->every == y->every;
}

void
throttle_configure(struct throttle *th, struct config *cfg)
{
	struct throttle_wh **nw = xcalloc(cfg->nwarehouses, sizeof *nw);
	size_t n = 0;

	for (size_t i = 0; i < cfg->nwarehouses; i++) {
		const struct warehouse_def *def = &cfg->warehouses[i];
		struct throttle_wh *w = NULL, *old = NULL;

		if (def->throttle == NULL)
			continue;
		for (size_t k = 0; k < th->n; k++)
			if (th->w[k] && strcmp(th->w[k]->name, def->name) == 0)
				old = th->w[k];
		w = xcalloc(1, sizeof *w);
		w->name = xstrdup(def->name);
		uv_mutex_init(&w->lock);
		w->th = th;
		w->cfg = config_ref(cfg);
		w->def = def;
		uv_timer_init(th->loop, &w->timer);
		w->timer.data = w;
		w->v.has = true;
		if (old && throttle_same(old->def, def)) {
			/* carry the state over: a reload does not release */
			w->v = old->v;
		}
		w->v.max = def->throttle->max;
		w->v.has_critical = def->throttle->has_critical;
		w->v.critical_at = def->throttle->critical;
		uv_timer_start(&w->timer, throttle_timer_cb, 0, 0);
		nw[n++] = w;
	}
	for (size_t k = 0; k < th->n; k++)
		if (th->w[k])
			throttle_wh_kill(th->w[k]);
	free(th->w);
	th->w = nw;
	th->n = n;
	if (th->ops.poke)
		th->ops.poke(th->ops.data);
}

/* The entry of a warehouse, or NULL. */
static const struct throttle_wh *
throttle_find(const struct throttle *th, const char *warehouse)
{
	for (size_t k = 0; th && k < th->n; k++)
		if (strcmp(th->w[k]->name, warehouse) == 0)
			return th->w[k];
	return NULL;
}

bool
throttle_blocks(const struct throttle *th, const char *warehouse)
{
	const struct throttle_wh *w = throttle_find(th, warehouse);

	/* rule: nothing starts before the first check has answered (a
	 * timeout answers throttled) */
	return w != NULL && (w->v.throttled || !w->v.checked);
}

void
throttle_view(const struct throttle *th, const char *warehouse,
	      struct throttle_view *v)
{
	const struct throttle_wh *w = throttle_find(th, warehouse);

	if (w == NULL)
		memset(v, 0, sizeof *v);
	else
		*v = w->v;
}

void
throttle_close(struct throttle *th)
{
	if (th == NULL || th->closing)
		return;
	th->closing = true;
	for (size_t k = 0; k < th->n; k++)
		throttle_wh_kill(th->w[k]);
	th->n = 0;
}

void
throttle_free(struct throttle *th)
{
	if (th == NULL)
		return;
	free(th->w);
	free(th);
}
