/*
 * exec_stage.c - ClickHouse stage partitions kept until their run is
 * recorded, then dropped on a worker (exec_wap.c WAP-2; the rules are
 * at struct exec_unstage in exec_priv.h).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "exec_priv.h"
#include "xalloc.h"

void
exec_unstage_free(struct exec_unstage *u)
{
	config_unref(u->cfg);
	free(u->parts);
	free(u->keep);
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

/* Whether a run of job's partition key (NULL: any) is queued or running;
 * ex->lock held. */
static bool
exec_partition_busy(struct exec *ex, const char *job, const char *key)
{
	struct exec_flight *fl;

	TAILQ_FOREACH(fl, &ex->queue, qlink)
		if (exec_flight_of(fl, job, key))
			return true;
	LIST_FOREACH(fl, &ex->running, rlink)
		if (exec_flight_of(fl, job, key))
			return true;
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

/* Drop what u names on worker w (skip[i]: a run has part i now). */
static void
exec_unstage_run(struct exec_worker *w, struct exec_unstage *u,
		 const bool *skip)
{
	const struct warehouse_def *wh =
	    &u->cfg->warehouses[u->job->warehouse];
	struct exec_part *parts;
	struct wh_conn *conn;
	struct err err;
	size_t n;

	conn = exec_conn_get(w, wh, &err);
	if (conn == NULL)
		return; /* the next run of each partition clears it */
	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, NULL, 10000, false); /* bounded */
	if (conn->drv->tag != NULL)
		conn->drv->tag(conn, 0);
	if (u->parts != NULL) {
		exec_wap_release(conn, u->cfg, wh, u->job, u->parts, skip,
				 u->nparts);
	} else if (exec_wap_stale(conn, u->cfg, u->job, u->keep, u->nkeep,
				  &parts, &n, &err) == 0) {
		exec_wap_release(conn, u->cfg, wh, u->job, parts, NULL, n);
		free(parts);
	}
	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, NULL, 0, false);
	if (!conn->drv->usable(conn))
		exec_conn_drop(w, conn);
}

/* Take the first stage to drop and drop it; ex->lock held on entry and
 * on return (released meanwhile). */
void
exec_unstage_take(struct exec_worker *w)
{
	struct exec *ex = w->ex;
	struct exec_unstage *u = ex->uhead, **pp;
	bool *skip, all = false;

	ex->uhead = u->next;
	if (ex->uhead == NULL)
		ex->utail = NULL;
	skip = xcalloc(u->nparts ? u->nparts : 1, sizeof *skip);
	for (size_t i = 0; i < u->nparts; i++)
		skip[i] = exec_partition_busy(ex, u->job->name, u->parts[i].key);
	/* a sweep meets no run of its job: else left to the next start */
	all = u->parts == NULL && exec_partition_busy(ex, u->job->name, NULL);
	u->next = ex->ubusy;
	ex->ubusy = u;
	uv_mutex_unlock(&ex->lock);
	if (!all)
		exec_unstage_run(w, u, skip);
	free(skip);
	uv_mutex_lock(&ex->lock);
	for (pp = &ex->ubusy; *pp != u; pp = &(*pp)->next)
		;
	*pp = u->next;
	uv_cond_broadcast(&ex->cond); /* runs waiting for it */
	uv_mutex_unlock(&ex->lock);
	exec_unstage_free(u);
	uv_mutex_lock(&ex->lock);
}

/* Queue u for the workers (loop thread). */
static void
exec_unstage_queue(struct exec *ex, struct exec_unstage *u)
{
	uv_mutex_lock(&ex->lock);
	u->next = NULL;
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

void
exec_sweep_stages(struct exec *ex, struct config *cfg, const struct job_def *jd,
		  const int64_t *keep, size_t nkeep)
{
	struct exec_unstage *u = xcalloc(1, sizeof *u);

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
