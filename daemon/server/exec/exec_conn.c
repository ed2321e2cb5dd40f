/*
 * exec_conn.c - the warehouse drivers and each worker's connections
 * (worker threads, but for exec_driver_for and exec_warehouse_state).
 *
 * SQLite's driver is built in; PostgreSQL's and ClickHouse's are loaded
 * from their modules (module.h) on first use, once (uv_once).  Each
 * worker keeps its own connections, keyed by warehouse name and location,
 * open across runs, with what it learnt on each (backfilld_commits is
 * there, the (job, request) pairs that pruned it, the ClickHouse jobs
 * whose partition key passed); one that errors badly (!usable) is closed
 * and reopened by the next run that needs it.  The count of open
 * connections per warehouse (max_connections) and whether it could be
 * reached last are shared by every worker, under ex->lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "exec_priv.h"
#include "module.h"
#include "wh_commits.h"
#include "xalloc.h"

static uv_once_t exec_pg_once = UV_ONCE_INIT;
static const struct wh_driver *exec_pg;
static char exec_pg_error[512] = "this build has no PostgreSQL driver";

/* Load the driver from backfilld-pg.so (module.h). */
static void
exec_pg_load(void)
{
#ifdef HAVE_LIBPQ
	exec_pg = module_symbol("wh_pg_driver", "the PostgreSQL driver",
				exec_pg_error, sizeof exec_pg_error);
#endif
}

/* The PostgreSQL driver, loaded on first use; NULL when it cannot be. */
static const struct wh_driver *
exec_pg_driver(void)
{
	uv_once(&exec_pg_once, exec_pg_load);
	return exec_pg;
}

static uv_once_t exec_ch_once = UV_ONCE_INIT;
static const struct wh_driver *exec_ch;
static char exec_ch_error[512] = "this build has no ClickHouse driver"
	" (built without libcurl: install libcurl4-openssl-dev, rebuild)";

/* Load the driver from backfilld-ch.so (module.h). */
static void
exec_ch_load(void)
{
#ifdef HAVE_LIBCURL
	exec_ch = module_symbol_in("backfilld-ch.so", "wh_ch_driver",
				   "the ClickHouse driver", exec_ch_error,
				   sizeof exec_ch_error);
#endif
}

/* The ClickHouse driver, loaded on first use; NULL when it cannot be. */
static const struct wh_driver *
exec_ch_driver(void)
{
	uv_once(&exec_ch_once, exec_ch_load);
	return exec_ch;
}

/* Why there is no driver for a kind. */
static const char *
exec_no_driver(enum wh_kind kind)
{
	return kind == WH_POSTGRES ? exec_pg_error : kind == WH_CLICKHOUSE ?
		exec_ch_error : "this build has no driver for it";
}

/* The driver for a kind of warehouse, or NULL when not built in. */
const struct wh_driver *
exec_driver(enum wh_kind kind)
{
	switch (kind) {
	case WH_SQLITE:
		return &wh_sqlite_driver;
	case WH_POSTGRES:
		return exec_pg_driver();
	case WH_CLICKHOUSE:
		return exec_ch_driver();
	default:
		return NULL;
	}
}

const struct wh_driver *
exec_driver_for(enum wh_kind kind, const char **why)
{
	const struct wh_driver *drv = exec_driver(kind);

	if (drv == NULL && why != NULL)
		*why = exec_no_driver(kind);
	return drv;
}

/* Count a connection to warehouse `name` opened (+1) or closed (-1);
 * returns how many are open now. */
int
exec_conn_count(struct exec *ex, const char *name, int delta)
{
	struct exec_conncount *c = NULL;
	int n;

	uv_mutex_lock(&ex->lock);
	for (size_t i = 0; i < ex->nconncount; i++)
		if (strcmp(ex->conncount[i].name, name) == 0)
			c = &ex->conncount[i];
	if (c == NULL) {
		c = xreallocarray(ex->conncount, ex->nconncount + 1, sizeof *c);
		ex->conncount = c;
		c = &ex->conncount[ex->nconncount++];
		c->name = xstrdup(name);
		c->open = 0;
	}
	c->open += delta;
	n = c->open;
	uv_mutex_unlock(&ex->lock);
	return n;
}

/* Remember whether warehouse `name` could be reached just now. */
static void
exec_conn_outcome(struct exec *ex, const char *name, bool ok,
		  const char *error)
{
	exec_conn_count(ex, name, 0); /* make sure it has a row */
	uv_mutex_lock(&ex->lock);
	for (size_t i = 0; i < ex->nconncount; i++) {
		struct exec_conncount *c = &ex->conncount[i];

		if (strcmp(c->name, name) != 0)
			continue;
		c->state = ok ? 1 : -1;
		snprintf(c->error, sizeof c->error, "%s", ok ? "" : error);
		c->at_ms = clock_now_ms();
	}
	uv_mutex_unlock(&ex->lock);
}

int
exec_warehouse_state(struct exec *ex, const char *name, char *error,
		     size_t errsz, int64_t *at_ms)
{
	int state = 0;

	if (errsz > 0)
		error[0] = '\0';
	uv_mutex_lock(&ex->lock);
	for (size_t i = 0; i < ex->nconncount; i++) {
		const struct exec_conncount *c = &ex->conncount[i];

		if (strcmp(c->name, name) != 0)
			continue;
		state = c->state;
		snprintf(error, errsz, "%s", c->error);
		*at_ms = c->at_ms;
	}
	uv_mutex_unlock(&ex->lock);
	return state;
}

/* Forget `key` among cc's checked jobs, or every one when key is NULL. */
static void
exec_conn_wap_forget(struct exec_conncache *cc, const char *key)
{
	size_t i = 0;

	while (i < cc->nwap_checked) {
		if (key == NULL || strcmp(cc->wap_checked[i], key) == 0) {
			free(cc->wap_checked[i]);
			cc->wap_checked[i] = cc->wap_checked[--cc->nwap_checked];
		} else {
			i++;
		}
	}
	if (cc->nwap_checked == 0) {
		free(cc->wap_checked);
		cc->wap_checked = NULL;
	}
}

/*
 * Has job jd's partition key passed exec_wap_key on conn before (op 0)?
 * Op 1 records that it has, op -1 forgets it (a run of jd failed: the
 * next one checks again).  The key is checked at start and at every
 * reload too; this spares each run of a backfill its system.tables
 * round trip.  At most EXEC_WAP_CHECKED_MAX jobs a connection.
 */
#define EXEC_WAP_CHECKED_MAX 256
bool
exec_conn_wap(struct exec_worker *w, struct wh_conn *conn,
	      const struct job_def *jd, int op)
{
	struct exec_conncache *cc = NULL;
	char *key;
	bool found = false;

	for (size_t i = 0; i < w->ncache && cc == NULL; i++)
		if (w->cache[i].conn == conn)
			cc = &w->cache[i];
	if (cc == NULL)
		return false;
	key = xasprintf("%s %s %s %s", jd->name, jd->table,
			     jd->partition_column, grain_name(jd->grain));
	for (size_t i = 0; i < cc->nwap_checked && !found; i++)
		found = strcmp(cc->wap_checked[i], key) == 0;
	if (op == -1 && found)
		exec_conn_wap_forget(cc, key);
	if (op == 1 && !found) {
		if (cc->nwap_checked >= EXEC_WAP_CHECKED_MAX)
			exec_conn_wap_forget(cc, NULL);
		cc->wap_checked = xreallocarray(cc->wap_checked,
		    cc->nwap_checked + 1, sizeof *cc->wap_checked);
		cc->wap_checked[cc->nwap_checked++] = key;
		return true;
	}
	free(key);
	return found;
}

/* The worker's open connection to wh, opening one if needed. */
struct wh_conn *
exec_conn_get(struct exec_worker *w, const struct warehouse_def *wh,
	      struct err *err)
{
	const struct wh_driver *drv;
	struct exec_conncache *cc;
	struct wh_conn *conn;
	const char *where;
	struct wh_conn *stale = NULL;
	struct err gone;
	size_t i;

	where = wh->kind == WH_SQLITE ? wh->path : wh->kind == WH_CLICKHOUSE ?
		wh->url : wh->conninfo;
	if (where == NULL)
		where = "";
	for (i = 0; i < w->ncache; i++) {
		cc = &w->cache[i];
		if (strcmp(cc->name, wh->name) != 0 ||
		    strcmp(cc->where, where) != 0)
			continue;
		conn = cc->conn;
		if (conn->drv->check == NULL ||
		    conn->drv->check(conn, &gone) == 0)
			return conn;
		/* Its file was deleted or replaced: a file at the path
		 * again is opened afresh; without one the run fails, and
		 * the stale connection stays cached so that every later
		 * run says why too. */
		stale = conn;
		break;
	}
	drv = exec_driver(wh->kind);
	if (drv == NULL) {
		err_set(err, EXIT_WORK_FAILED, "warehouse \"%s\": %s", wh->name,
		    exec_no_driver(wh->kind));
		exec_conn_outcome(w->ex, wh->name, false, err->msg);
		return NULL;
	}
	if (drv->open(wh, &conn, err) == -1) {
		if (stale) {
			char why[ERR_MSG_MAX];

			/* err->msg is an argument: not formatted into itself */
			snprintf(why, sizeof why, "%s", err->msg);
			err_set(err, EXIT_WORK_FAILED, "%s; put the file back, or"
			    " point sqlite: in the configuration at where it is"
			    " now (%s)", gone.msg, why);
		}
		exec_conn_outcome(w->ex, wh->name, false, err->msg);
		return NULL;
	}
	if (stale != NULL)
		exec_conn_drop(w, stale);
	exec_conn_outcome(w->ex, wh->name, true, NULL);
	exec_conn_count(w->ex, wh->name, +1);
	cc = xreallocarray(w->cache, w->ncache + 1, sizeof *w->cache);
	w->cache = cc;
	cc = &w->cache[w->ncache++];
	cc->name = xstrdup(wh->name);
	cc->where = xstrdup(where);
	cc->conn = conn;
	cc->commits_ready = false;
	memset(cc->pruned, 0, sizeof cc->pruned);
	cc->npruned = 0;
	cc->wap_checked = NULL;
	cc->nwap_checked = 0;
	return conn;
}

/* Close one cached connection and forget it. */
void
exec_conn_drop(struct exec_worker *w, struct wh_conn *conn)
{
	size_t i;

	for (i = 0; i < w->ncache; i++) {
		if (w->cache[i].conn != conn)
			continue;
		exec_conn_count(w->ex, w->cache[i].name, -1);
		conn->drv->close(conn);
		free(w->cache[i].name);
		free(w->cache[i].where);
		for (size_t k = 0; k < EXEC_PRUNED; k++)
			free(w->cache[i].pruned[k].job);
		exec_conn_wap_forget(&w->cache[i], NULL);
		w->cache[i] = w->cache[--w->ncache];
		return;
	}
}

/* Before a run that records commits: make sure the connection's warehouse
 * has backfilld_commits (once per connection). */
int
exec_conn_commits(struct exec_worker *w, struct wh_conn *conn,
		  struct err *err)
{
	for (size_t i = 0; i < w->ncache; i++) {
		struct exec_conncache *cc = &w->cache[i];

		if (cc->conn != conn)
			continue;
		if (!cc->commits_ready &&
		    wh_commits_ensure(conn, err) == -1)
			return -1;
		cc->commits_ready = true;
		return 0;
	}
	return wh_commits_ensure(conn, err);
}

/* Whether this run is the first of its (job, oldest request) on conn,
 * which then prunes backfilld_commits (wh_commits.h, COMMITS-3); noted. */
bool
exec_commits_prune_due(struct exec_worker *w, struct wh_conn *conn,
		       const struct exec_run *run)
{
	int64_t request = run->commits[0].request;
	struct exec_conncache *cc = NULL;
	unsigned slot;

	for (size_t i = 1; i < run->ncommits; i++)
		if (run->commits[i].request < request)
			request = run->commits[i].request;
	for (size_t i = 0; i < w->ncache && cc == NULL; i++)
		if (w->cache[i].conn == conn)
			cc = &w->cache[i];
	if (cc == NULL)
		return true;
	for (size_t k = 0; k < EXEC_PRUNED; k++)
		if (cc->pruned[k].job != NULL && cc->pruned[k].request ==
		    request && strcmp(cc->pruned[k].job, run->job->name) == 0)
			return false;
	slot = cc->npruned++ % EXEC_PRUNED;
	free(cc->pruned[slot].job);
	cc->pruned[slot].job = xstrdup(run->job->name);
	cc->pruned[slot].request = request;
	return true;
}
