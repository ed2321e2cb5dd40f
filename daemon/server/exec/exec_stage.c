/*
 * exec_stage.c - ClickHouse stage partitions kept until their run is
 * recorded, then dropped on a worker (exec_wap.c WAP-2; the rules are
 * at struct exec_unstage in exec_priv.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_ms.h"
#include "exec_priv.h"
#include "xalloc.h"

void
exec_unstage_free(struct exec_unstage *u)
{
	config_unref(u->cfg);
	free(u->parts);
	free(u->keep);
	free(u->done);
	free(u);
}

/* Whether fl is a run of job `job`, of partition `key` (NULL: any). */
static bool
exec_flight_of(const struct exec_flight *fl, const char *job, const char *key)
{
	const struct exec_run *run = fl->run;

	if (run->query_sql != NULL || run->job == NULL ||
	    strcmp(run->job->name, job) != 0)
		return false;
	for (size_t i = 0; key != NULL && i < run->nparts; i++)
		if (strcmp(run->parts[i].key, key) == 0)
			return true;
	return key == NULL;
}

/* Whether a run of job's partition key (NULL: any) is queued, running or
 * handed ahead after a running one; ex->lock held. */
static bool
exec_partition_busy(struct exec *ex, const char *job, const char *key)
{
	struct exec_flight *fl;

	TAILQ_FOREACH(fl, &ex->queue, qlink)
		if (exec_flight_of(fl, job, key))
			return true;
	LIST_FOREACH(fl, &ex->running, rlink)
		for (const struct exec_flight *d = fl; d != NULL; d = d->deck)
			if (exec_flight_of(d, job, key))
				return true; /* running, or handed ahead */
	return false;
}

/* Whether run fl must wait for a drop of one of its partitions (or a
 * sweep of its job); ex->lock held. */
bool
exec_flight_waits(struct exec *ex, const struct exec_flight *fl)
{
	for (struct exec_unstage *u = ex->ubusy; u != NULL; u = u->next) {
		if (u->parts == NULL && exec_flight_of(fl, u->job->name, NULL))
			return true;
		for (size_t i = 0; i < u->nparts; i++)
			if (exec_flight_of(fl, u->job->name, u->parts[i].key))
				return true;
	}
	return false;
}

/* Drop what u names on worker w: parts[0..n) (skip[i]: a run has part
 * i now), or, parts NULL, u's sweep. */
static void
exec_unstage_run(struct exec_worker *w, const struct exec_unstage *u,
		 const struct exec_part *parts, const bool *skip, size_t n)
{
	const struct warehouse_def *wh =
	    &u->cfg->warehouses[u->job->warehouse];
	struct exec_part *stale;
	struct wh_conn *conn;
	struct err err;
	size_t ns;

	conn = exec_conn_get(w, wh, &err);
	if (conn == NULL)
		return; /* the next run of each partition clears it */
	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, NULL, 10000, false); /* bounded */
	if (conn->drv->tag != NULL)
		conn->drv->tag(conn, 0);
	if (parts != NULL) {
		exec_wap_release(conn, u->cfg, wh, u->job, parts, skip, n);
	} else if (exec_wap_stale(conn, u->cfg, u->job, u->keep, u->nkeep,
				  u->done, u->ndone, &stale, &ns, &err) == 0) {
		/* a partition a run has now is left to it (it drops a stale
		 * mark of its partition before it clears the stage); the
		 * job's runs queued meanwhile wait for the sweep */
		bool *sk = xcalloc(ns + 1, sizeof *sk);

		uv_mutex_lock(&w->ex->lock);
		for (size_t i = 0; i < ns; i++)
			sk[i] = exec_partition_busy(w->ex, u->job->name,
						    stale[i].key);
		uv_mutex_unlock(&w->ex->lock);
		exec_wap_release(conn, u->cfg, wh, u->job, stale, sk, ns);
		free(sk);
		free(stale);
	}
	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, NULL, 0, false);
	if (!conn->drv->usable(conn))
		exec_conn_drop(w, conn);
}

/* Whether u and v drop the stage partitions of one table on one server
 * (neither a sweep). */
static bool
exec_unstage_same(const struct exec_unstage *u, const struct exec_unstage *v)
{
	const struct warehouse_def *a = &u->cfg->warehouses[u->job->warehouse];
	const struct warehouse_def *b = &v->cfg->warehouses[v->job->warehouse];

	return u->parts != NULL && v->parts != NULL &&
	       strcmp(u->job->name, v->job->name) == 0 &&
	       strcmp(u->job->table, v->job->table) == 0 &&
	       strcmp(a->url, b->url) == 0 &&
	       (a->cluster == NULL) == (b->cluster == NULL) &&
	       (a->cluster == NULL || strcmp(a->cluster, b->cluster) == 0);
}

/* The drops of us[0..n) on worker w, each table's partitions together
 * (a partition once; skip[k][i]: a run has part i of us[k] now). */
static void
exec_unstage_all(struct exec_worker *w, struct exec_unstage **us,
		 bool **skip, size_t n)
{
	bool *done = xcalloc(n + 1, sizeof *done);

	for (size_t k = 0; k < n; k++) {
		struct exec_part *parts;
		bool *sk;
		size_t np = 0, cap = 0;

		if (done[k])
			continue;
		if (us[k]->parts == NULL) { /* a sweep */
			exec_unstage_run(w, us[k], NULL, NULL, 0);
			continue;
		}
		for (size_t j = k; j < n; j++)
			if (j == k || exec_unstage_same(us[k], us[j]))
				cap += us[j]->nparts;
		parts = xcalloc(cap + 1, sizeof *parts);
		sk = xcalloc(cap + 1, sizeof *sk);
		for (size_t j = k; j < n; j++) {
			if (j != k && (done[j] || !exec_unstage_same(us[k], us[j])))
				continue;
			done[j] = true;
			for (size_t i = 0; i < us[j]->nparts; i++) {
				size_t at = 0;

				while (at < np && strcmp(parts[at].key,
				       us[j]->parts[i].key) != 0)
					at++;
				if (at == np)
					parts[np++] = us[j]->parts[i];
				sk[at] |= skip[j][i];
			}
		}
		exec_unstage_run(w, us[k], parts, sk, np);
		free(parts);
		free(sk);
	}
	free(done);
}

/* Tests only: BACKFILLD_TEST_CH_SWEEP=FIFO holds the worker about to
 * take the start's sweep, the first time, before it takes it (ex->lock
 * released meanwhile), until a byte can be read from FIFO (the test's
 * open of FIFO to write tells it the worker is held), so that a test can
 * have a run of the job queued when the sweep is taken (with one worker:
 * another would take the sweep meanwhile); ex->lock held. */
static void
exec_unstage_test_hold(struct exec *ex)
{
	static bool done; /* under ex->lock */
	const char *fifo = getenv("BACKFILLD_TEST_CH_SWEEP");
	struct exec_unstage *u = ex->uhead;
	FILE *f;

	while (u != NULL && u->parts != NULL)
		u = u->next;
	if (fifo == NULL || u == NULL || done)
		return;
	done = true;
	uv_mutex_unlock(&ex->lock);
	f = fopen(fifo, "r"); /* blocks until the test opens it to write */
	if (f != NULL) {
		(void)fgetc(f);
		fclose(f);
	}
	uv_mutex_lock(&ex->lock);
}

/* Take every stage to drop and drop them; ex->lock held on entry and on
 * return (released meanwhile). */
void
exec_unstage_take(struct exec_worker *w)
{
	struct exec *ex = w->ex;
	struct exec_unstage *u, **pp, **us;
	bool **skip;
	size_t n = 0, k;

	exec_unstage_test_hold(ex);
	for (u = ex->uhead; u != NULL; u = u->next)
		n++;
	us = xcalloc(n + 1, sizeof *us);
	skip = xcalloc(n + 1, sizeof *skip);
	for (k = 0, u = ex->uhead; u != NULL; u = u->next, k++) {
		us[k] = u;
		skip[k] = xcalloc(u->nparts + 1, sizeof **skip);
		for (size_t i = 0; i < u->nparts; i++)
			skip[k][i] = exec_partition_busy(ex, u->job->name,
							 u->parts[i].key);
	}
	ex->uhead = ex->utail = NULL;
	ex->upending = 0;
	for (k = 0; k < n; k++) {
		us[k]->next = ex->ubusy;
		ex->ubusy = us[k];
	}
	uv_mutex_unlock(&ex->lock);
	exec_unstage_all(w, us, skip, n);
	uv_mutex_lock(&ex->lock);
	for (k = 0; k < n; k++) {
		for (pp = &ex->ubusy; *pp != us[k]; pp = &(*pp)->next)
			;
		*pp = us[k]->next;
	}
	uv_cond_broadcast(&ex->cond); /* runs waiting for them */
	uv_mutex_unlock(&ex->lock);
	for (k = 0; k < n; k++) {
		exec_unstage_free(us[k]);
		free(skip[k]);
	}
	free(us);
	free(skip);
	uv_mutex_lock(&ex->lock);
}

bool
exec_unstage_due(struct exec *ex, uint64_t *wait_ns)
{
	const uint64_t ms = 1000000;
	uint64_t now = clock_us(CLOCK_MONOTONIC) * 1000, old, young;
	bool idle;

	*wait_ns = 0;
	if (ex->uhead == NULL)
		return false;
	if (ex->quit || ex->upending >= EXEC_RELEASE_PARTS)
		return true;
	for (struct exec_unstage *u = ex->uhead; u != NULL; u = u->next)
		if (u->parts == NULL)
			return true; /* a sweep: at once */
	old = now - ex->uhead->queued;
	young = now - ex->utail->queued;
	if (old >= EXEC_RELEASE_MAX_MS * ms)
		return true;
	idle = TAILQ_EMPTY(&ex->queue) && LIST_EMPTY(&ex->running);
	if (idle && young >= EXEC_RELEASE_IDLE_MS * ms)
		return true;
	*wait_ns = idle ? EXEC_RELEASE_IDLE_MS * ms - young :
	    EXEC_RELEASE_MAX_MS * ms - old;
	return false;
}

/* Queue u for the workers (loop thread). */
static void
exec_unstage_queue(struct exec *ex, struct exec_unstage *u)
{
	uv_mutex_lock(&ex->lock);
	u->next = NULL;
	u->queued = clock_us(CLOCK_MONOTONIC) * 1000;
	ex->upending += u->nparts;
	if (ex->utail != NULL)
		ex->utail->next = u;
	else
		ex->uhead = u;
	ex->utail = u;
	uv_cond_broadcast(&ex->cond);
	uv_mutex_unlock(&ex->lock);
}

void
exec_release_stages(struct exec *ex)
{
	static bool stopped;
	const char *test = getenv("BACKFILLD_TEST_CH_STOP");
	struct exec_unstage *u;

	/* tests only: stop between the record and the release, once */
	if (ex->phead != NULL && test != NULL && strcmp(test, "recorded") == 0 &&
	    !stopped) {
		stopped = true;
		raise(SIGSTOP);
	}
	while ((u = ex->phead) != NULL) {
		ex->phead = u->next;
		exec_unstage_queue(ex, u);
	}
}

bool
exec_done_stale(int64_t request, const char *key, const int64_t *keep,
		size_t nkeep, const struct exec_done *done, size_t ndone)
{
	size_t i;

	for (i = 0; i < nkeep && keep[i] != request; i++)
		;
	if (i == nkeep)
		return true;
	for (i = 0; i < ndone; i++)
		if (done[i].request == request && strcmp(done[i].key, key) == 0)
			return true;
	return false;
}

void
exec_sweep_stages(struct exec *ex, struct config *cfg, const struct job_def *jd,
		  const int64_t *keep, size_t nkeep, const struct exec_done *done,
		  size_t ndone)
{
	struct exec_unstage *u = xcalloc(1, sizeof *u);

	u->done = xcalloc(ndone + 1, sizeof *u->done);
	if (ndone > 0)
		memcpy(u->done, done, ndone * sizeof *done);
	u->ndone = ndone;

	u->cfg = config_ref(cfg);
	u->job = jd;
	u->keep = xcalloc(nkeep ? nkeep : 1, sizeof *u->keep);
	if (nkeep > 0)
		memcpy(u->keep, keep, nkeep * sizeof *keep);
	u->nkeep = nkeep;
	exec_unstage_queue(ex, u);
}

/* A run that kept its stages is over (loop thread): they wait for the
 * caller's record (ex->phead). */
void
exec_unstage_later(struct exec *ex, const struct exec_run *run)
{
	struct exec_unstage *u = xcalloc(1, sizeof *u);

	u->cfg = config_ref(run->cfg);
	u->job = run->job;
	u->parts = xcalloc(run->nparts, sizeof *u->parts);
	memcpy(u->parts, run->parts, run->nparts * sizeof *u->parts);
	u->nparts = run->nparts;
	u->next = ex->phead;
	ex->phead = u;
}
