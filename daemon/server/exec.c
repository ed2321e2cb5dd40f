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
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "clock_ms.h"
#include "exec.h"
#include "exec_int.h"
#include "chsql.h"
#include "guard.h"
#include "module.h"
#include "proc.h"
#include "reconcile.h"
#include "severity.h"
#include "wake.h"
#include "wh.h"
#include "xalloc.h"



extern char **environ;

enum exec_stop { EXEC_STOP_NONE, EXEC_STOP_TIMEOUT, EXEC_STOP_CANCEL };

/* Where a SQL run is; guarded by ex->lock. */
enum exec_state { EXEC_QUEUED, EXEC_RUNNING, EXEC_DONE };

struct exec_worker;

/* A run in flight: exec_run.priv. */
struct exec_flight {
	struct exec *ex;
	struct exec_run *run;
	bool is_cmd;
	atomic_int stop;             /* enum exec_stop */

	/* ex->lock */
	enum exec_state state;
	struct exec_worker *worker;  /* while EXEC_RUNNING */
	struct exec_flight *qnext;      /* queue or done list */
	struct exec_flight *rnext, *rprev; /* running (ex->rhead) */
	struct exec_flight *snext;      /* started list */
	bool on_slist;

	/* loop thread only */
	struct exec_flight *aprev, *anext; /* every run in flight */
	uv_timer_t timer;
	uv_process_t proc;
	bool finishing;              /* the timer is closing: done_cb follows */
	bool spawned;
	bool exited;
	char log_path[PATH_MAX];

	bool staged;                 /* published, stages kept (exec_wap.c) */

	/* worker thread only: each reconcile's source value of each part,
	 * [part * job->nreconciles + k], read before the transaction */
	struct exec_recon_src *recon;
};

struct exec_recon_src {
	bool ok;                /* the source answered */
	bool has;               /* ... with a number (not NULL) */
	double v;
	char err[ERR_MSG_MAX];  /* !ok: why */
};

/* One open warehouse connection of a worker. */
/* The (job, request) pairs whose first run on a connection pruned
 * backfilld_commits (wh_commits.h, rule 3), the oldest replaced first. */
#define EXEC_PRUNED 8

struct exec_conncache {
	char *name;
	char *where;  /* sqlite path or postgres conninfo */
	struct wh_conn *conn;
	bool commits_ready; /* backfilld_commits is there (wh_commits.h) */
	struct {
		char *job;
		int64_t request;
	} pruned[EXEC_PRUNED];
	unsigned npruned;   /* pairs noted so far (next slot: % EXEC_PRUNED) */
	/* ClickHouse: the jobs whose partition key passed exec_wap_key on
	 * this connection, as "job table column grain" (exec_conn_wap) */
	char **wap_checked;
	size_t nwap_checked;
};

/*
 * Stages to drop (ClickHouse, exec_wap.c rule 2): the partitions a
 * recorded run published, or, at start, a sweep of the marks no open
 * request names.  Kept on the loop thread (ex->phead) until the caller
 * has committed the run's record (exec_release_stages), then queued for
 * the workers (ex->uhead), which take them before runs.  A partition of
 * a run queued or running then is skipped (that run clears it first, and
 * its own record releases it), and a run of a partition being dropped
 * waits for the drop (ex->ubusy): a drop never meets a run's own stage.
 */
struct exec_unstage {
	struct exec_unstage *next;
	struct config *cfg;          /* a reference */
	const struct job_def *job;   /* inside cfg */
	struct exec_part *parts;     /* NULL for a sweep */
	size_t nparts;
	int64_t *keep;               /* a sweep: the open requests */
	size_t nkeep;
};

/* A shard's publish told to the loop (exec_shard_published), the worker
 * waiting on ex->cond until done. */
struct exec_shard_note {
	struct exec_shard_note *next;
	struct exec_flight *fl;
	const struct exec_shard_publish *pub;
	bool done;
	int rc;
	struct err err;
};

struct exec_worker {
	struct exec *ex;
	uv_thread_t tid;
	struct exec_flight *taken;   /* ex->lock: the run it runs */
	uv_mutex_t lock;           /* current and conn, for interrupts */
	struct exec_flight *current;
	struct wh_conn *conn;
	struct exec_conncache *cache; /* this worker's thread only */
	size_t ncache;
};

struct exec {
	uv_loop_t *loop;
	struct wake wake;

	uv_mutex_t lock;
	uv_cond_t cond;
	struct exec_flight *qhead, *qtail; /* queued SQL runs */
	struct exec_flight *dhead, *dtail; /* finished by a worker */
	struct exec_flight *shead, *stail; /* started, not yet told */
	struct exec_unstage *uhead, *utail; /* stages to drop now */
	struct exec_unstage *ubusy;        /* ... being dropped */
	struct exec_flight *rhead;         /* taken by a worker */
	struct exec_shard_note *nhead;     /* shards' publishes to record */
	bool quit;

	/* open warehouse connections over all workers, by warehouse name
	 * (ex->lock): a PostgreSQL warehouse keeps at most max_connections */
	struct exec_conncount {
		char *name;
		int open;
		int state;         /* 1 reachable, -1 not, 0 not tried yet */
		char error[256];   /* why not */
		int64_t at_ms;     /* when last tried */
	} *conncount;
	size_t nconncount;

	/* loop thread only */
	struct exec_worker **workers;
	int nworkers;
	struct exec_flight *all;
	struct exec_unstage *phead;        /* loop: waiting for the record */
	_Atomic int64_t alive_until;       /* several hosts (exec_fence_clock) */
	int nrunning;
	bool closing;
	bool close_done;
	void (*closed_cb)(void *data);
	void *closed_data;
};

/* calloc that cannot fail: running out of memory here is not survivable. */
static void *
exec_xcalloc(size_t n, size_t size)
{
	void *p;

	p = calloc(n, size);
	if (p == NULL && n != 0 && size != 0)
		abort();
	return p;
}

/* strdup that cannot fail. */
static char *
exec_xstrdup(const char *s)
{
	char *p;

	p = strdup(s);
	if (p == NULL)
		abort();
	return p;
}

/* asprintf that cannot fail. */
static char *
exec_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return p;
}

/* Mark a run failed with a one-line message. */
static void
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
	err_set(err, EXIT_WORK_FAILED, "interrupted");
	return true;
}

/* A failed run that was being stopped reports why it was stopped. */
static void
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

/* ---- worker threads ---------------------------------------------------- */

/* Count a connection to warehouse `name` opened (+1) or closed (-1);
 * returns how many are open now. */
static int
exec_conn_count(struct exec *ex, const char *name, int delta)
{
	struct exec_conncount *c = NULL;
	int n;

	uv_mutex_lock(&ex->lock);
	for (size_t i = 0; i < ex->nconncount; i++)
		if (strcmp(ex->conncount[i].name, name) == 0)
			c = &ex->conncount[i];
	if (c == NULL) {
		c = realloc(ex->conncount, (ex->nconncount + 1) * sizeof *c);
		if (c == NULL)
			abort();
		ex->conncount = c;
		c = &ex->conncount[ex->nconncount++];
		c->name = exec_xstrdup(name);
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

static void exec_conn_drop(struct exec_worker *w, struct wh_conn *conn);

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
static bool
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
	key = exec_xasprintf("%s %s %s %s", jd->name, jd->table,
			     jd->partition_column, grain_name(jd->grain));
	for (size_t i = 0; i < cc->nwap_checked && !found; i++)
		found = strcmp(cc->wap_checked[i], key) == 0;
	if (op == -1 && found)
		exec_conn_wap_forget(cc, key);
	if (op == 1 && !found) {
		if (cc->nwap_checked >= EXEC_WAP_CHECKED_MAX)
			exec_conn_wap_forget(cc, NULL);
		cc->wap_checked = realloc(cc->wap_checked,
		    (cc->nwap_checked + 1) * sizeof *cc->wap_checked);
		if (cc->wap_checked == NULL)
			abort();
		cc->wap_checked[cc->nwap_checked++] = key;
		return true;
	}
	free(key);
	return found;
}

/* The worker's open connection to wh, opening one if needed. */
static struct wh_conn *
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
	cc = realloc(w->cache, (w->ncache + 1) * sizeof *w->cache);
	if (cc == NULL)
		abort();
	w->cache = cc;
	cc = &w->cache[w->ncache++];
	cc->name = exec_xstrdup(wh->name);
	cc->where = exec_xstrdup(where);
	cc->conn = conn;
	cc->commits_ready = false;
	memset(cc->pruned, 0, sizeof cc->pruned);
	cc->npruned = 0;
	cc->wap_checked = NULL;
	cc->nwap_checked = 0;
	return conn;
}

/* Close one cached connection and forget it. */
static void
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
static int
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

/* The keys of a run's parts, for wh_commits (free the array). */
static const char **
exec_part_keys(const struct exec_run *run)
{
	const char **keys = exec_xcalloc(run->nparts, sizeof *keys);

	for (size_t i = 0; i < run->nparts; i++)
		keys[i] = run->parts[i].key;
	return keys;
}

/* Inside the run's transaction, first: 1 when an earlier attempt already
 * committed every identity of the run (wh_commits.h, rule 1), 0 when it
 * must run, -1 with err; *present (free it) says which identities have a
 * row already. */
static int
exec_commits_seen(struct exec_run *run, struct wh_conn *conn,
		  bool **present, struct err *err)
{
	const char **keys;
	char note[ERR_MSG_MAX];
	int r;

	*present = NULL;
	if (run->ncommits == 0)
		return 0;
	keys = exec_part_keys(run);
	*present = exec_xcalloc(run->ncommits, sizeof **present);
	r = wh_commits_seen(conn, run->job->name, keys, run->commits,
			    run->ncommits, *present, note, sizeof note, err);
	free(keys);
	if (r == 1) {
		run->committed_before = true;
		snprintf(run->error, sizeof run->error, "%s", note);
	}
	return r;
}

/* Whether this run is the first of its (job, oldest request) on conn,
 * which then prunes backfilld_commits (wh_commits.h, rule 3); noted. */
static bool
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
	cc->pruned[slot].job = exec_xstrdup(run->job->name);
	cc->pruned[slot].request = request;
	return true;
}

/* Inside the run's transaction, last: its rows of backfilld_commits, for
 * the identities without one. */
static int
exec_commits_record(struct exec_worker *w, struct exec_run *run,
		    struct wh_conn *conn, const bool *present,
		    struct err *err)
{
	int64_t now = clock_now_ms();
	const char **keys;
	int r;

	if (run->ncommits == 0)
		return 0;
	keys = exec_part_keys(run);
	r = wh_commits_record(conn, run->job->name, keys, run->commits,
			      run->ncommits, present, now,
			      exec_commits_prune_due(w, conn, run) ?
			      now - run->commits_keep_ms : 0, err);
	free(keys);
	return r;
}

/* After a transaction that failed, rolled back: when another run
 * committed every identity meanwhile (the fence, wh_commits.h rule 4: a
 * run abandoned by a node paused past its lease, or the one queued again
 * in its place), this run committed nothing and is recorded as an
 * attempt that found them: 1.  Else 0, err untouched. */
static int
exec_commits_lost(struct exec_run *run, struct wh_conn *conn)
{
	const char **keys;
	char note[ERR_MSG_MAX];
	struct err qerr;
	int r;

	if (run->ncommits == 0 || !conn->drv->usable(conn))
		return 0;
	keys = exec_part_keys(run);
	r = wh_commits_seen(conn, run->job->name, keys, run->commits,
			    run->ncommits, NULL, note, sizeof note, &qerr);
	free(keys);
	if (r != 1)
		return 0;
	run->committed_before = true;
	snprintf(run->error, sizeof run->error, "%s", note);
	return 1;
}

/* Truthiness of a check's value: NULL, "", 0 (any numeric spelling),
 * "false" and "f" (PostgreSQL's boolean text) fail; anything else passes. */
static bool
exec_value_true(const char *v)
{
	const char *p;
	char *end;
	double d;

	if (v == NULL)
		return false;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v == '\0' || strcasecmp(v, "false") == 0 ||
	    strcasecmp(v, "f") == 0)
		return false;
	d = strtod(v, &end);
	if (end != v) {
		for (p = end; *p == ' ' || *p == '\t'; p++)
			;
		if (*p == '\0')
			return d != 0;
	}
	return true;
}

/*
 * Run every check of the job for part i, recording each outcome.  A check
 * that returns a failing value fails the run (the first one names the
 * error) unless its severity is warn, but the others still run, for the audit; a check that cannot run
 * (SQL error, interrupt) stops there.  Returns 0 when all passed, -1 when
 * one failed, -2 when one could not run.
 */
int
exec_checks(struct exec_flight *fl, struct wh_conn *conn, size_t i,
	    const struct wh_param *params, size_t nparams, struct err *err)
{
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const char *key = run->parts[i].key;
	struct exec_check_result *cr;
	char detail[ERR_MSG_MAX];
	struct err qerr;
	bool has_row;
	char *value;
	int rc = 0;
	size_t k;

	for (k = 0; k < jd->nchecks; k++) {
		if (exec_interrupted(fl, err))
			return -2;
		err_clear(&qerr);
		cr = &run->checks[run->nchecks++];
		cr->name = exec_xstrdup(jd->checks[k].name);
		cr->warn = jd->checks[k].warn;
		cr->part = i;
		if (conn->drv->query_value(conn, jd->checks[k].sql, params,
		    nparams, &has_row, &value, &qerr) == -1) {
			cr->passed = false;
			cr->detail = exec_xstrdup(qerr.msg);
			if (rc == 0)
				err_set(err, EXIT_WORK_FAILED,
				    "check %s failed for %s: %s",
				    jd->checks[k].name, key, qerr.msg);
			return -2;
		}
		cr->passed = has_row && exec_value_true(value);
		if (!has_row)
			snprintf(detail, sizeof detail, "returned no row");
		else if (value == NULL)
			snprintf(detail, sizeof detail, "returned NULL");
		else
			snprintf(detail, sizeof detail, "returned %.64s%s",
			    value, strlen(value) > 64 ? "..." : "");
		free(value);
		cr->detail = exec_xstrdup(detail);
		if (severity_fails_run(cr->passed, cr->warn) && rc == 0) {
			err_set(err, EXIT_WORK_FAILED, "check %s failed for %s "
			    "(%s)", jd->checks[k].name, key, detail);
			rc = -1;
		}
	}
	return rc;
}

/* A source query's own timeout: a thread that interrupts conn once ms
 * have passed, unless told it is done first. */
struct exec_watchdog {
	uv_mutex_t lock;
	uv_cond_t cond;
	bool done, fired;
	struct wh_conn *conn;
	int64_t ms;
};

static void
exec_watchdog_main(void *arg)
{
	struct exec_watchdog *wd = arg;
	int64_t deadline = clock_ms(CLOCK_MONOTONIC) + wd->ms, left;

	uv_mutex_lock(&wd->lock);
	while (!wd->done) {
		left = deadline - clock_ms(CLOCK_MONOTONIC);
		if (left <= 0) {
			wd->fired = true;
			wd->conn->drv->interrupt(wd->conn);
			break;
		}
		(void)uv_cond_timedwait(&wd->cond, &wd->lock,
		    (uint64_t)left * 1000000u);
	}
	uv_mutex_unlock(&wd->lock);
}


/*
 * Before the run's transaction: every reconcile's source query for every
 * part, on its own warehouse (this worker's connection to it), with its
 * own timeout; the job's timeout and cancel interrupt it too.  A source
 * that cannot be reached or answers with an error is recorded as such:
 * its check fails after the write.
 */
static void
exec_recon_sources(struct exec_worker *w, struct exec_flight *fl)
{
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	struct wh_param params[3];
	struct exec_watchdog wd;
	uv_thread_t tid;
	size_t n = jd->nreconciles;

	fl->recon = exec_xcalloc(n * run->nparts + 1, sizeof *fl->recon);
	for (size_t i = 0; i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		for (size_t k = 0; k < n; k++) {
			const struct reconcile_def *rd = &jd->reconciles[k];
			const struct warehouse_def *wh =
			    &run->cfg->warehouses[rd->source_wh];
			struct exec_recon_src *rs = &fl->recon[i * n + k];
			struct wh_conn *conn;
			struct err qerr;
			char *value = NULL;
			bool has_row, bad = false;
			int rc;

			err_clear(&qerr);
			if (exec_interrupted(fl, &qerr) ||
			    (conn = exec_conn_get(w, wh, &qerr)) == NULL) {
				snprintf(rs->err, sizeof rs->err, "%s", qerr.msg);
				continue;
			}
			uv_mutex_lock(&w->lock);
			w->conn = conn;
			uv_mutex_unlock(&w->lock);
			if (conn->drv->watch != NULL)
				conn->drv->watch(conn, &fl->stop,
				    rd->source_timeout * 1000, false);
			memset(&wd, 0, sizeof wd);
			wd.conn = conn;
			wd.ms = rd->source_timeout * 1000;
			if (uv_mutex_init(&wd.lock) != 0 ||
			    uv_cond_init(&wd.cond) != 0 ||
			    uv_thread_create(&tid, exec_watchdog_main, &wd) != 0)
				abort();
			rc = conn->drv->query_value(conn, rd->source_sql,
			    params, 3, &has_row, &value, &qerr);
			uv_mutex_lock(&wd.lock);
			wd.done = true;
			uv_cond_signal(&wd.cond);
			uv_mutex_unlock(&wd.lock);
			uv_thread_join(&tid);
			uv_cond_destroy(&wd.cond);
			uv_mutex_destroy(&wd.lock);
			if (conn->drv->watch != NULL)
				conn->drv->watch(conn, NULL, 0, false);
			uv_mutex_lock(&w->lock);
			w->conn = NULL;
			uv_mutex_unlock(&w->lock);
			if (rc == 0 && reconcile_number(has_row ? value : NULL,
			    &rs->has, &rs->v) < 0)
				bad = true;
			if (rc == -1)
				snprintf(rs->err, sizeof rs->err, "%s%s",
				    wd.fired ? "timed out: " : "", qerr.msg);
			else if (bad)
				snprintf(rs->err, sizeof rs->err, "returned %.64s,"
				    " not a number", value);
			else
				rs->ok = true;
			free(value);
			/* interrupted until its next begin(): not for reuse */
			if (wd.fired || !conn->drv->usable(conn))
				exec_conn_drop(w, conn);
		}
	}
}

/*
 * After part i's write, in the run's transaction: every reconcile's target
 * query, compared with its source value.  Returns 0 when all passed (or
 * only warned), -1 when one failed, -2 when a target query could not run.
 */
static int
exec_reconciles(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		const struct wh_param *params, size_t nparams, struct err *err)
{
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const char *key = run->parts[i].key;
	char detail[ERR_MSG_MAX], name[160], tol[64];
	int rc = 0;

	for (size_t k = 0; k < jd->nreconciles; k++) {
		const struct reconcile_def *rd = &jd->reconciles[k];
		const struct exec_recon_src *rs =
		    &fl->recon[i * jd->nreconciles + k];
		struct exec_check_result *cr = &run->checks[run->nchecks++];
		struct err qerr;
		char *value = NULL;
		bool has_row;

		snprintf(name, sizeof name, "reconcile:%s", rd->name);
		reconcile_tolerance_format(&rd->tolerance, tol, sizeof tol);
		cr->name = exec_xstrdup(name);
		cr->part = i;
		cr->warn = rd->warn;
		cr->recon = true;
		err_clear(&qerr);
		if (exec_interrupted(fl, err) ||
		    conn->drv->query_value(conn, rd->target_sql, params, nparams,
		    &has_row, &value, &qerr) == -1) {
			cr->detail = exec_xstrdup(qerr.msg);
			if (rc == 0 && err != NULL && qerr.msg[0])
				err_set(err, EXIT_WORK_FAILED, "check %s failed"
				    " for %s: target: %s", name, key, qerr.msg);
			return -2;
		}
		if (reconcile_number(has_row ? value : NULL, &cr->has_target,
		    &cr->target) < 0) {
			snprintf(detail, sizeof detail, "target returned %.64s,"
			    " not a number", value);
			cr->passed = false;
		} else if (!rs->ok) {
			snprintf(detail, sizeof detail, "source %s: %s",
			    run->cfg->warehouses[rd->source_wh].name, rs->err);
			cr->passed = false;
		} else {
			cr->has_source = rs->has;
			cr->source = rs->v;
			cr->passed = reconcile_within(rs->has, rs->v,
			    cr->has_target, cr->target, &rd->tolerance,
			    &cr->diff);
			char sv[40] = "NULL", tv[40] = "NULL";

			if (rs->has)
				snprintf(sv, sizeof sv, "%.15g", rs->v);
			if (cr->has_target)
				snprintf(tv, sizeof tv, "%.15g", cr->target);
			snprintf(detail, sizeof detail, "source %s, target %s,"
			    " difference %+.10g, %s %s", sv, tv, cr->diff,
			    cr->passed ? "within tolerance" : "above tolerance",
			    tol);
		}
		free(value);
		cr->detail = exec_xstrdup(detail);
		if (severity_fails_run(cr->passed, cr->warn) && rc == 0) {
			if (err != NULL)
				err_set(err, EXIT_WORK_FAILED, "check %s failed"
				    " for %s (%s)", name, key, detail);
			rc = -1;
		}
	}
	return rc;
}

/* Fill params with part i's :partition, :partition_start, :partition_end. */
void
exec_part_params(const struct exec_part *p, struct wh_param params[3])
{
	params[0].name = "partition";
	params[0].value = p->key;
	params[1].name = "partition_start";
	params[1].value = p->start;
	params[2].name = "partition_end";
	params[2].value = p->end;
}

/* Begin the run's transaction on conn. */
int
exec_begin(struct wh_conn *conn, struct err *err)
{
	if (conn->drv->begin(conn, err) == -1) {
		err_prefix(err, "cannot begin a transaction");
		return -1;
	}
	return 0;
}

/* After part i ran: its checks, then its guard (with a table).  A check
 * or guard that fails sets *rc to -1 (err keeps the first failure);
 * returns -1 when one could not run (the transaction is lost). */
static int
exec_part_after(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		const struct wh_param *params, int *rc, struct err *err)
{
	struct exec_run *run = fl->run;
	enum guard_outcome g;
	int r;

	r = exec_checks(fl, conn, i, params, 3, *rc == 0 ? err : NULL);
	if (r == -2)
		return -1;
	if (r == -1)
		*rc = -1;
	if (run->job->nreconciles > 0) {
		r = exec_reconciles(fl, conn, i, params, 3,
				    *rc == 0 ? err : NULL);
		if (r == -2)
			return -1;
		if (r == -1)
			*rc = -1;
	}
	if (run->job->table != NULL) {
		g = guard_after(run, conn, i, params, 3, *rc == 0, err);
		if (g == GUARD_BROKEN)
			return -1;
		if (g == GUARD_FAILED)
			*rc = -1;
	}
	return 0;
}

/* The batch's statements: manifest, job SQL once, checks per partition. */
static int
exec_sql_batch(struct exec_flight *fl, struct wh_conn *conn, int64_t *base,
	       struct err *err)
{
	struct exec_run *run = fl->run;
	struct wh_manifest_row *rows;
	struct wh_param params[3];
	const char *lo, *hi;
	int rc = 0, r;
	size_t i;

	rows = exec_xcalloc(run->nparts, sizeof *rows);
	lo = run->parts[0].start;
	hi = run->parts[0].end;
	for (i = 0; i < run->nparts; i++) {
		rows[i].key = run->parts[i].key;
		rows[i].start = run->parts[i].start;
		rows[i].end = run->parts[i].end;
		if (strcmp(rows[i].start, lo) < 0)
			lo = rows[i].start;
		if (strcmp(rows[i].end, hi) > 0)
			hi = rows[i].end;
	}
	r = conn->drv->manifest_fill(conn, rows, run->nparts, err);
	free(rows);
	if (r == -1) {
		err_prefix(err, "cannot fill backfill_manifest");
		return -1;
	}
	*base = conn->drv->changes(conn);
	for (i = 0; run->job->table != NULL && i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		if (guard_before(run, conn, i, params, 3, err) == -1)
			return -1;
	}

	/* The whole batch's interval; :partition means one partition and
	 * is deliberately not bound (the driver says so by name). */
	params[0].name = "partition_start";
	params[0].value = lo;
	params[1].name = "partition_end";
	params[1].value = hi;
	if (conn->drv->exec_script(conn, run->job->sql, params, 2, err) == -1)
		return -1;
	for (i = 0; i < run->nparts; i++) {
		exec_part_params(&run->parts[i], params);
		if (exec_part_after(fl, conn, i, params, &rc, err) == -1)
			return -1;
	}
	if (rc == 0 && conn->drv->manifest_drop(conn, err) == -1)
		return -1;
	return rc;
}

/* The run's transaction on conn: everything, then commit or roll back. */
static int
exec_sql_tx(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	const struct wh_driver *drv = conn->drv;
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	struct wh_param params[3];
	int64_t base, changed;
	bool *present = NULL;
	int rc = 0;
	size_t i;

	if (exec_begin(conn, err) == -1)
		return -1;
	if (exec_interrupted(fl, err))
		goto fail;
	switch (exec_commits_seen(run, conn, &present, err)) {
	case 1:
		drv->rollback(conn);
		free(present);
		run->rows_changed = 0;
		return 0;
	case -1:
		goto fail;
	}
	if (jd->nchecks > 0 || jd->table != NULL || jd->nreconciles > 0)
		run->checks = exec_xcalloc((jd->nchecks + jd->nreconciles +
		    (jd->table ? 2 + 2 * jd->nmetrics : 0)) * run->nparts,
		    sizeof *run->checks);
	base = drv->changes(conn);
	if (jd->batch) {
		if (exec_sql_batch(fl, conn, &base, err) == -1)
			goto fail;
	} else {
		/* Several partitions without batch: one after the other, in
		 * the same transaction. */
		for (i = 0; i < run->nparts; i++) {
			exec_part_params(&run->parts[i], params);
			if (exec_interrupted(fl, err))
				goto fail;
			if (jd->table != NULL && guard_before(run, conn, i,
			    params, 3, err) == -1)
				goto fail;
			if (drv->exec_script(conn, jd->sql, params, 3,
			    rc == 0 ? err : NULL) == -1) {
				if (rc == 0)
					goto fail;
				break;
			}
			if (exec_part_after(fl, conn, i, params, &rc, err) == -1)
				goto fail;
		}
		if (rc == -1)
			goto fail;
	}
	if (exec_interrupted(fl, err))
		goto fail;
	changed = drv->changes(conn) - base;
	if (exec_commits_record(fl->worker, run, conn, present, err) == -1)
		goto fail;
	free(present);
	present = NULL;
	if (drv->commit(conn, err) == -1) {
		err_prefix(err, "commit failed");
		return -1;
	}
	run->rows_changed = changed;
	return 0;

fail:
	drv->rollback(conn);
	/* the marker's insert failed on its key, or a statement on a row
	 * the other run wrote: the other run's commit stands for this one */
	if (present != NULL && !exec_stopping(fl) &&
	    exec_commits_lost(run, conn)) {
		free(present);
		exec_run_clear_results(run); /* as a run that found them */
		run->rows_changed = 0;
		return 0;
	}
	free(present);
	return -1;
}

/* The proof's three steps inside its transaction: read part 0, run it,
 * read it, run it again, read it (exec_sql_verify). */
static int
exec_verify_steps(struct exec_flight *fl, struct wh_conn *conn,
		  struct err *err)
{
	const struct wh_driver *drv = conn->drv;
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const struct exec_part *p = &run->parts[0];
	struct wh_manifest_row row = { p->key, p->start, p->end };
	struct wh_param params[3];

	exec_part_params(p, params);
	for (int k = 0; k < 3; k++) {
		if (exec_interrupted(fl, err))
			return -1;
		if (k > 0 && jd->batch) {
			if (drv->manifest_fill(conn, &row, 1, err) == -1 ||
			    drv->exec_script(conn, jd->sql, params + 1, 2,
					     err) == -1 ||
			    drv->manifest_drop(conn, err) == -1) {
				err_prefix(err, "run %d of 2", k);
				return -1;
			}
		} else if (k > 0 && drv->exec_script(conn, jd->sql, params, 3,
						     err) == -1) {
			err_prefix(err, "run %d of 2", k);
			return -1;
		}
		if (drv->digest(conn, jd->table, jd->partition_column, p->key,
				&run->verify_rows[k], run->verify_sum[k],
				sizeof run->verify_sum[k], err) == -1) {
			err_prefix(err, "reading partition %s of %s", p->key,
				   jd->table);
			return -1;
		}
	}
	return 0;
}

/* A proof (--verify): parts[0] twice in one transaction, its content read
 * before and after each run, everything rolled back. */
static int
exec_sql_verify(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	int rc;

	if (conn->drv->digest == NULL)
		return err_set(err, EXIT_BAD_INPUT, "the %s driver cannot"
			       " verify a job", conn->drv->name);
	if (exec_begin(conn, err) == -1)
		return -1;
	rc = exec_verify_steps(fl, conn, err);
	conn->drv->rollback(conn);
	return rc;
}

/* A query run (a late_data sensor): the values of one read-only
 * statement with :since bound, outside any transaction. */
static int
exec_sql_query(struct exec_flight *fl, struct wh_conn *conn, struct err *err)
{
	struct exec_run *run = fl->run;
	struct wh_param since = { "since", run->query_since };

	if (conn->drv->query_column == NULL)
		return err_set(err, EXIT_WORK_FAILED, "the %s driver cannot run"
			       " late_data sensors", conn->drv->name);
	if (conn->drv->query_column(conn, run->query_sql, &since, 1,
				    run->query_max ? run->query_max : 100000,
				    &run->values, &run->nvalues, err) == -1) {
		err_prefix(err, "late_data query");
		return -1;
	}
	return 0;
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
static void
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

/* One SQL run on worker w. */
static void
exec_sql_run(struct exec_worker *w, struct exec_flight *fl)
{
	struct exec_run *run = fl->run;
	const struct warehouse_def *wh;
	struct wh_conn *conn;
	struct err err;
	int rc;

	err_clear(&err);
	if (exec_stopping(fl)) {
		exec_fail(run, "interrupted");
		exec_result_stop(fl);
		return;
	}
	wh = &run->cfg->warehouses[run->job->warehouse];
	conn = exec_conn_get(w, wh, &err);
	if (conn == NULL) {
		exec_fail(run, "%s", err.msg);
		exec_result_stop(fl);
		return;
	}

	uv_mutex_lock(&w->lock);
	w->current = fl;
	w->conn = conn;
	uv_mutex_unlock(&w->lock);
	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, &fl->stop, run->job->timeout * 1000,
		    run->job->allow_wall_clock);

	if (run->query_sql == NULL && !run->verify &&
	    run->job->nreconciles > 0) {
		exec_recon_sources(w, fl);
		uv_mutex_lock(&w->lock);
		w->conn = conn;
		uv_mutex_unlock(&w->lock);
		/* a source on the same warehouse is the same connection */
		if (conn->drv->watch != NULL)
			conn->drv->watch(conn, &fl->stop,
			    run->job->timeout * 1000,
			    run->job->allow_wall_clock);
	}
	if (conn->drv->tag != NULL)
		conn->drv->tag(conn, run->run_id);
	if (run->query_sql != NULL)
		rc = exec_sql_query(fl, conn, &err);
	else if (wh->kind == WH_CLICKHOUSE && run->verify)
		rc = exec_sql_wap_verify(fl, conn, &err);
	else if (wh->kind == WH_CLICKHOUSE) {
		rc = exec_sql_wap(fl, conn, exec_conn_wap(w, conn, run->job, 0),
				  &err);
		/* checked once a connection; again after a failed run */
		exec_conn_wap(w, conn, run->job, rc == 0 ? 1 : -1);
	}
	else if (run->verify)
		rc = exec_sql_verify(fl, conn, &err);
	else if (run->ncommits > 0 && exec_conn_commits(w, conn, &err) == -1)
		rc = -1;
	else
		rc = exec_sql_tx(fl, conn, &err);
	free(fl->recon);
	fl->recon = NULL;

	if (conn->drv->watch != NULL)
		conn->drv->watch(conn, NULL, 0, false);
	uv_mutex_lock(&w->lock);
	w->current = NULL;
	w->conn = NULL;
	uv_mutex_unlock(&w->lock);

	/* keep the connection for the next run, unless it is broken or the
	 * warehouse has more open than its max_connections (PostgreSQL:
	 * each worker thread caches its own) */
	if (!conn->drv->usable(conn) ||
	    ((wh->kind == WH_POSTGRES || wh->kind == WH_CLICKHOUSE) &&
	     exec_conn_count(w->ex, wh->name, 0) > wh->max_connections))
		exec_conn_drop(w, conn);
	if (run->nchecks == 0) {
		/* Failed before any check: nothing for the caller to free. */
		free(run->checks);
		run->checks = NULL;
	}
	if (rc == -1) {
		exec_fail(run, "%s", err.msg);
		exec_result_stop(fl);
	}
}

/* Append fl to the started list the loop drains; ex->lock held. */
static void
exec_started_add(struct exec *ex, struct exec_flight *fl)
{
	fl->on_slist = true;
	if (ex->stail != NULL)
		ex->stail->snext = fl;
	else
		ex->shead = fl;
	ex->stail = fl;
}

/* ---- stages kept until recorded (struct exec_unstage) ------------------ */

static void
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
	for (struct exec_flight *fl = ex->qhead; fl != NULL; fl = fl->qnext)
		if (exec_flight_of(fl, job, key))
			return true;
	for (struct exec_flight *fl = ex->rhead; fl != NULL; fl = fl->rnext)
		if (exec_flight_of(fl, job, key))
			return true;
	return false;
}

/* Whether run fl must wait for a drop of one of its partitions (or a
 * sweep of its job); ex->lock held. */
static bool
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
static void
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
static void
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

/* ---- the worker loop --------------------------------------------------- */

/* Whether a worker has something to do now; ex->lock held. */
static bool
exec_worker_ready(struct exec *ex)
{
	if (ex->uhead != NULL)
		return true;
	if (ex->qhead != NULL)
		return !exec_flight_waits(ex, ex->qhead);
	return ex->quit;
}

/* A worker thread: take queued runs (stages to drop first) until told to
 * quit. */
static void
exec_worker_main(void *arg)
{
	struct exec_worker *w = arg;
	struct exec *ex = w->ex;
	struct exec_flight *fl;

	for (;;) {
		uv_mutex_lock(&ex->lock);
		while (!exec_worker_ready(ex))
			uv_cond_wait(&ex->cond, &ex->lock);
		if (ex->uhead != NULL) {
			exec_unstage_take(w);
			uv_mutex_unlock(&ex->lock);
			continue;
		}
		fl = ex->qhead;
		if (fl == NULL) {
			uv_mutex_unlock(&ex->lock);
			break;
		}
		ex->qhead = fl->qnext;
		if (ex->qhead == NULL)
			ex->qtail = NULL;
		fl->qnext = NULL;
		fl->state = EXEC_RUNNING;
		fl->worker = w;
		fl->rnext = ex->rhead;
		fl->rprev = NULL;
		if (ex->rhead != NULL)
			ex->rhead->rprev = fl;
		ex->rhead = fl;
		exec_started_add(ex, fl);
		uv_mutex_unlock(&ex->lock);
		if (fl->run->job->timeout > 0 || fl->run->started_cb != NULL)
			wake_send(&ex->wake);

		exec_sql_run(w, fl);

		/* After this, fl belongs to the loop thread again. */
		uv_mutex_lock(&ex->lock);
		if (fl->rprev != NULL)
			fl->rprev->rnext = fl->rnext;
		else
			ex->rhead = fl->rnext;
		if (fl->rnext != NULL)
			fl->rnext->rprev = fl->rprev;
		fl->state = EXEC_DONE;
		if (ex->dtail != NULL)
			ex->dtail->qnext = fl;
		else
			ex->dhead = fl;
		ex->dtail = fl;
		uv_mutex_unlock(&ex->lock);
		wake_send(&ex->wake);
	}
	while (w->ncache > 0)
		exec_conn_drop(w, w->cache[0].conn);
	free(w->cache);
	w->cache = NULL;
}

/* ---- loop thread ------------------------------------------------------- */

static void exec_close_finish(struct exec *ex);

/* The timer is closed: the run is over, tell the caller. */
static void
exec_timer_close_cb(uv_handle_t *handle)
{
	struct exec_flight *fl = handle->data;
	struct exec *ex = fl->ex;
	struct exec_run *run = fl->run;

	if (fl->aprev != NULL)
		fl->aprev->anext = fl->anext;
	else
		ex->all = fl->anext;
	if (fl->anext != NULL)
		fl->anext->aprev = fl->aprev;
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
static void
exec_finish(struct exec_flight *fl)
{
	struct exec *ex = fl->ex;
	struct exec_flight **pp;

	if (fl->finishing)
		return;
	fl->finishing = true;
	uv_mutex_lock(&ex->lock);
	if (fl->on_slist) {
		/* A "started" event not yet drained must not outlive fl. */
		for (pp = &ex->shead; *pp != NULL; pp = &(*pp)->snext) {
			if (*pp != fl)
				continue;
			*pp = fl->snext;
			if (ex->stail == fl) {
				struct exec_flight *p = ex->shead;

				while (p != NULL && p->snext != NULL)
					p = p->snext;
				ex->stail = p;
			}
			break;
		}
		fl->on_slist = false;
	}
	uv_mutex_unlock(&ex->lock);
	uv_timer_stop(&fl->timer);
	uv_close((uv_handle_t *)&fl->timer, exec_timer_close_cb);
}

/* Kill a command's whole process group, if it is still ours to kill. */
static void
exec_cmd_kill(struct exec_flight *fl)
{
	if (!fl->spawned || fl->exited)
		return;
	if (kill(-fl->proc.pid, SIGKILL) == -1)
		kill(fl->proc.pid, SIGKILL);
}

/* Stop a run for `reason` (the first reason given wins). */
static void
exec_stop(struct exec_flight *fl, int reason)
{
	struct exec *ex = fl->ex;
	struct exec_worker *w;
	struct exec_flight **pp;
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
		for (pp = &ex->qhead; *pp != fl; pp = &(*pp)->qnext)
			;
		*pp = fl->qnext;
		if (ex->qtail == fl) {
			ex->qtail = ex->qhead;
			while (ex->qtail != NULL && ex->qtail->qnext != NULL)
				ex->qtail = ex->qtail->qnext;
		}
		fl->qnext = NULL;
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
static void
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
	struct exec_flight *s, *d, *next;

	uv_mutex_lock(&ex->lock);
	s = ex->shead;
	d = ex->dhead;
	ex->shead = ex->stail = NULL;
	ex->dhead = ex->dtail = NULL;
	for (next = s; next != NULL; next = next->snext)
		next->on_slist = false;
	uv_mutex_unlock(&ex->lock);

	for (; s != NULL; s = next) {
		next = s->snext;
		s->snext = NULL;
		if (s->finishing)
			continue;
		if (!s->is_cmd)
			exec_arm_timeout(s);
		if (s->run->started_cb != NULL)
			s->run->started_cb(s->run);
	}
	exec_shard_notes(ex); /* after their runs' starts */
	for (; d != NULL; d = next) {
		next = d->qnext;
		d->qnext = NULL;
		exec_finish(d);
	}
}

/* Tell the loop a command started (its started_cb comes from the drain). */
static void
exec_post_started(struct exec_flight *fl)
{
	struct exec *ex = fl->ex;

	uv_mutex_lock(&ex->lock);
	exec_started_add(ex, fl);
	uv_mutex_unlock(&ex->lock);
	wake_send(&ex->wake);
}

/* The command's process handle is closed: the run is over. */
static void
exec_proc_close_cb(uv_handle_t *handle)
{
	exec_finish(handle->data);
}

/* The command exited (or was killed): record how. */
static void
exec_proc_exit_cb(uv_process_t *proc, int64_t status, int sig)
{
	struct exec_flight *fl = proc->data;
	struct exec_run *run = fl->run;

	fl->exited = true;
	uv_timer_stop(&fl->timer);
	if (sig != 0)
		exec_fail(run, "command killed by signal %d (log: %s)", sig,
		    fl->log_path);
	else if (status != 0)
		exec_fail(run, "command exited with status %lld (log: %s)",
		    (long long)status, fl->log_path);
	exec_result_stop(fl);
	uv_close((uv_handle_t *)proc, exec_proc_close_cb);
}

/* Length of `s` with its placeholders substituted, written to out if set. */
static size_t
exec_subst_into(const char *s, const struct exec_part *p, char *out)
{
	static const char *const names[] = {
		"{partition}", "{partition_start}", "{partition_end}"
	};
	const char *values[3] = { p->key, p->start, p->end };
	size_t n = 0, len, vlen;
	int k;

	while (*s != '\0') {
		for (k = 0; k < 3; k++) {
			len = strlen(names[k]);
			if (strncmp(s, names[k], len) == 0)
				break;
		}
		if (k < 3) {
			vlen = strlen(values[k]);
			if (out != NULL)
				memcpy(out + n, values[k], vlen);
			n += vlen;
			s += len;
		} else {
			if (out != NULL)
				out[n] = *s;
			n++;
			s++;
		}
	}
	if (out != NULL)
		out[n] = '\0';
	return n;
}

/* A copy of `s` with {partition}, {partition_start}, {partition_end}. */
static char *
exec_subst(const char *s, const struct exec_part *p)
{
	char *out;

	out = exec_xcalloc(exec_subst_into(s, p, NULL) + 1, 1);
	exec_subst_into(s, p, out);
	return out;
}

/* True for an environment entry a run sets itself. */
static bool
exec_env_ours(const char *e)
{
	static const char *const ours[] = {
		"BACKFILLD_JOB=", "BACKFILLD_PARTITION=",
		"BACKFILLD_PARTITION_START=", "BACKFILLD_PARTITION_END=",
		"BACKFILLD_ATTEMPT=", "BACKFILLD_INSTANCE="
	};
	size_t i;

	for (i = 0; i < sizeof ours / sizeof ours[0]; i++)
		if (strncmp(e, ours[i], strlen(ours[i])) == 0)
			return true;
	return false;
}

/* Whether errno e means "no resources now" (a run that could not start
 * for it is queued again, not failed). */
static bool
exec_resource_errno(int e)
{
	return e == EMFILE || e == ENFILE || e == EAGAIN || e == ENOMEM;
}

/* Open (creating LOG_DIR/JOB) the run's log file for appending. */
static int
exec_cmd_log(struct exec_flight *fl, int *fd, struct err *err)
{
	struct exec_run *run = fl->run;
	const char *name = run->job->name;
	char dir[PATH_MAX];
	int n;

	if (run->log_dir == NULL) {
		snprintf(fl->log_path, sizeof fl->log_path, "/dev/null");
	} else {
		if (strchr(name, '/') != NULL || strcmp(name, "..") == 0 ||
		    strchr(run->parts[0].key, '/') != NULL)
			return err_set(err, EXIT_WORK_FAILED, "job name %s "
			    "cannot name a log file", name);
		if (mkdir(run->log_dir, 0750) == -1 && errno != EEXIST)
			return err_set(err, EXIT_WORK_FAILED, "cannot create "
			    "%s: %s", run->log_dir, strerror(errno));
		n = snprintf(dir, sizeof dir, "%s/%s", run->log_dir, name);
		if (n < 0 || (size_t)n >= sizeof dir)
			return err_set(err, EXIT_WORK_FAILED, "log path too "
			    "long under %s", run->log_dir);
		if (mkdir(dir, 0750) == -1 && errno != EEXIST)
			return err_set(err, EXIT_WORK_FAILED, "cannot create "
			    "%s: %s", dir, strerror(errno));
		n = snprintf(fl->log_path, sizeof fl->log_path,
		    "%s/%s.%d.log", dir, run->parts[0].key, run->attempt);
		if (n < 0 || (size_t)n >= sizeof fl->log_path)
			return err_set(err, EXIT_WORK_FAILED, "log path too "
			    "long under %s", dir);
	}
	/* O_NOFOLLOW: a symbolic link planted at the log's path must not
	 * make the daemon append to whatever it points at */
	*fd = open(fl->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	    O_NOCTTY | O_NOFOLLOW, 0640);
	if (*fd == -1) {
		run->not_started = exec_resource_errno(errno);
		return err_set(err, EXIT_WORK_FAILED, "cannot open %s: %s",
		    fl->log_path, strerror(errno));
	}
	return 0;
}

/* Spawn a command run in its own session. */
static void
exec_cmd_start(struct exec_flight *fl)
{
	struct exec *ex = fl->ex;
	struct exec_run *run = fl->run;
	const struct job_def *jd = run->job;
	const struct exec_part *part = &run->parts[0];
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	char **argv, **envp, *extra[6];
	int logfd = -1, nullfd, r;
	size_t i, n, k;
	struct err err;

	if (exec_cmd_log(fl, &logfd, &err) == -1) {
		exec_fail(run, "%s", err.msg);
		exec_finish(fl);
		return;
	}
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nullfd == -1) {
		run->not_started = exec_resource_errno(errno);
		exec_fail(run, "cannot open /dev/null: %s", strerror(errno));
		close(logfd);
		exec_finish(fl);
		return;
	}

	argv = exec_xcalloc(jd->command_len + 1, sizeof *argv);
	for (i = 0; i < jd->command_len; i++)
		argv[i] = exec_subst(jd->command[i], part);
	extra[0] = exec_xasprintf("BACKFILLD_JOB=%s", jd->name);
	extra[1] = exec_xasprintf("BACKFILLD_PARTITION=%s", part->key);
	extra[2] = exec_xasprintf("BACKFILLD_PARTITION_START=%s", part->start);
	extra[3] = exec_xasprintf("BACKFILLD_PARTITION_END=%s", part->end);
	extra[4] = exec_xasprintf("BACKFILLD_ATTEMPT=%d", run->attempt);
	/* what finds this group again after a crash (proc.h) */
	extra[5] = exec_xasprintf("BACKFILLD_INSTANCE=%s", run->log_dir ?
				  run->log_dir : "");
	for (n = 0; environ != NULL && environ[n] != NULL; n++)
		;
	envp = exec_xcalloc(n + 7, sizeof *envp);
	for (i = 0, k = 0; i < n; i++)
		if (!exec_env_ours(environ[i]))
			envp[k++] = environ[i];
	for (i = 0; i < 6; i++)
		envp[k++] = extra[i];

	memset(&opt, 0, sizeof opt);
	opt.file = argv[0];
	opt.args = argv;
	opt.env = envp;
	opt.flags = UV_PROCESS_DETACHED;
	opt.exit_cb = exec_proc_exit_cb;
	stdio[0].flags = UV_INHERIT_FD;
	stdio[0].data.fd = nullfd;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = logfd;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = logfd;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	fl->proc.data = fl;
	proc_cloexec_all(-1);
	r = uv_spawn(ex->loop, &fl->proc, &opt);

	close(nullfd);
	close(logfd);
	for (i = 0; i < jd->command_len; i++)
		free(argv[i]);
	free(argv);
	for (i = 0; i < 6; i++)
		free(extra[i]);
	free(envp);

	if (r != 0) {
		/* A handle that failed to spawn must still be closed. */
		run->not_started = exec_resource_errno(-r);
		exec_fail(run, "cannot run %s: %s", jd->command[0],
		    strerror(-r));
		uv_close((uv_handle_t *)&fl->proc, exec_proc_close_cb);
		return;
	}
	fl->spawned = true;
	run->pgid = fl->proc.pid;
	if (proc_start_time(fl->proc.pid, &run->proc_start) < 0)
		run->proc_start = -1;
	exec_arm_timeout(fl);
	exec_post_started(fl);
}

/* Start a run now; done_cb follows exactly once, later, on the loop. */
void
exec_submit(struct exec *ex, struct exec_run *run)
{
	const struct job_def *jd = run->job;
	struct exec_flight *fl;

	fl = exec_xcalloc(1, sizeof *fl);
	fl->ex = ex;
	fl->run = run;
	atomic_init(&fl->stop, EXEC_STOP_NONE);
	fl->state = EXEC_DONE;
	run->priv = fl;
	run->failed = false;
	run->timed_out = false;
	run->cancelled = false;
	run->not_started = false;
	run->committed_before = false;
	run->pgid = 0;
	run->proc_start = -1;
	run->error[0] = '\0';
	run->rows_changed = 0;
	run->checks = NULL;
	run->nchecks = 0;
	uv_timer_init(ex->loop, &fl->timer);
	fl->timer.data = fl;
	fl->anext = ex->all;
	if (ex->all != NULL)
		ex->all->aprev = fl;
	ex->all = fl;
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
	fl->state = EXEC_QUEUED;
	if (ex->qtail != NULL)
		ex->qtail->qnext = fl;
	else
		ex->qhead = fl;
	ex->qtail = fl;
	uv_cond_signal(&ex->cond);
	uv_mutex_unlock(&ex->lock);
}

/* Interrupt a run in flight; done_cb follows with cancelled set. */
void
exec_cancel(struct exec *ex, struct exec_run *run)
{
	(void)ex;
	if (run->priv != NULL)
		exec_stop(run->priv, EXEC_STOP_CANCEL);
}

/* Runs submitted whose done_cb has not been called yet. */
int
exec_running(const struct exec *ex)
{
	return ex->nrunning;
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
		ws = realloc(ex->workers, (ex->nworkers + 1) * sizeof *ws);
		if (ws == NULL)
			return err_set(err, EXIT_INTERNAL, "out of memory");
		ex->workers = ws;
		w = exec_xcalloc(1, sizeof *w);
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
	ex = calloc(1, sizeof *ex);
	if (ex == NULL)
		return err_set(err, EXIT_INTERNAL, "out of memory");
	ex->loop = loop;
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
	for (fl = ex->all; fl != NULL; fl = next) {
		next = fl->anext;
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
}
