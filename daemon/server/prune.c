/*
 * prune.c - keep_runs: finished runs older than their job's keep_runs are
 * deleted from the state store, with their audit rows and the requests
 * left empty (store_prune_step says what stays).
 *
 * Rules that must always hold:
 *  PRUNE-1. The daemon's clock.  A pass starts when the daemon's clock (the
 *     test clock in tests) has moved an hour or more since the last pass began,
 *     checked on an hourly timer and whenever the clock file changes; so
 *     at most one pass an hour of daemon time, and one at start.
 *  PRUNE-2. Slices.  A pass looks at PRUNE_SLICE rows per loop turn and then
 *     yields (a zero timer), so the loop is never held for more than the
 *     few milliseconds one slice takes, and runs, clients and the
 *     schedule go on between slices.
 *  PRUNE-3. One pass at a time; the configuration is read at each slice, so a
 *     reload between slices applies to the rest of the pass.
 *  PRUNE-4. A slice is a write of its loop turn (store.h, the failure policy):
 *     one that fails ends the pass and fails the turn, so the daemon stops
 *     new work and restarts in place once the store can be written
 *     (scheduler.c, SCHED-7); no pass starts or goes on while it waits.
 *  PRUNE-5. Logs go with their runs.  A command run's log (exec_log_path, named
 *     by its run id) is deleted once the slice that deleted its run is
 *     committed, never before (a slice rolled back keeps both), so the
 *     log folder holds the logs of the runs kept and no more.  A log
 *     written before logs were named by run (PARTITION.ATTEMPT.log) is
 *     not the daemon's to match with a run: it stays (docs/logs.md).
 */
#include "prune.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"

#define PRUNE_SLICE 256
#define PRUNE_EVERY_MS (3600 * 1000)

struct prune {
	struct sched *sched;
	uv_timer_t hourly;
	uv_timer_t slice;
	bool running;
	bool has_last;
	int64_t last_start;      /* daemon clock, ms */
	int64_t started_real;    /* uv_now at the pass's start */
	int64_t now;             /* the pass's daemon clock, ms */
	struct store_prune pass;
	struct buf logs;         /* the slice's pruned runs' logs, each
				  * path NUL-terminated: unlinked once
				  * the slice is committed */
	int closing;             /* handles still to close */
};

/* A run was pruned: its log goes once the slice is committed (PRUNE-5). */
static void
prune_run_log(const char *job, const char *key, int64_t run_id, void *data)
{
	struct prune *p = data;
	const char *dir = sched_log_dir(p->sched);
	char path[PATH_MAX];

	/* the executor names no log for such names (exec_cmd.c) */
	if (dir == NULL || dir[0] == '\0' || strchr(job, '/') != NULL ||
	    strcmp(job, "..") == 0 || strcmp(job, ".") == 0 ||
	    strchr(key, '/') != NULL ||
	    exec_log_path(path, sizeof path, dir, job, key, run_id) < 0)
		return;
	buf_add(&p->logs, path, strlen(path) + 1);
}

/* The slice is committed: delete its runs' logs. */
static void
prune_logs_unlink(struct prune *p)
{
	size_t off = 0;

	while (off < p->logs.len) {
		const char *path = p->logs.data + off;

		if (unlink(path) < 0 && errno != ENOENT)
			log_warn("cannot delete the log %s of a pruned run: %s",
				 path, strerror(errno));
		off += strlen(path) + 1;
	}
	buf_reset(&p->logs);
}

/* The cutoff for runs of job: finished before it, they may go. */
static int64_t
prune_cutoff(const char *job, void *data)
{
	struct prune *p = data;
	const struct config *cfg = sched_config(p->sched);
	const struct job_def *j = config_job(cfg, job);

	return p->now - (j ? j->keep_runs : cfg->keep_runs) * 1000;
}

/* The newest cutoff of any job: rows younger than it all stay. */
static int64_t
prune_newest_cutoff(const struct config *cfg, int64_t now)
{
	int64_t keep = cfg->keep_runs;

	for (size_t i = 0; i < cfg->njobs; i++)
		if (cfg->jobs[i].keep_runs < keep)
			keep = cfg->jobs[i].keep_runs;
	return now - keep * 1000;
}

/* One slice of the pass; re-armed until the pass is over. */
static void
prune_slice_cb(uv_timer_t *t)
{
	struct prune *p = t->data;
	struct store *st = sched_store(p->sched);
	struct err err;
	int rc;

	if (sched_store_failed(p->sched, NULL, NULL)) {
		p->running = false; /* PRUNE-4: the restart prunes */
		return;
	}
	p->pass.newest_cutoff = prune_newest_cutoff(sched_config(p->sched),
						    p->now);
	buf_reset(&p->logs);
	if (store_begin(st, &err) < 0) {
		rc = -1;
	} else {
		rc = store_prune_step(st, &p->pass, PRUNE_SLICE, &err);
		if (rc < 0)
			store_rollback(st);
		else if (store_commit(st, &err) < 0)
			rc = -1;
	}
	if (rc >= 0)
		prune_logs_unlink(p);
	buf_reset(&p->logs);
	if (rc < 0) {
		log_err("pruning history stopped: %s", err.msg);
		p->running = false;
		return;
	}
	if (rc > 0) {
		uv_timer_start(&p->slice, prune_slice_cb, 0, 0);
		return;
	}
	p->running = false;
	if (p->pass.runs > 0 || p->pass.requests > 0)
		log_info("pruned %" PRId64 " runs and %" PRId64 " requests older"
			 " than keep_runs in %" PRId64 " ms", p->pass.runs,
			 p->pass.requests,
			 (int64_t)uv_now(t->loop) - p->started_real);
}

void
prune_tick(struct prune *p)
{
	int64_t now = clock_now_ms();

	/* several hosts: only the planner prunes; a node that has not
	 * been one writes nothing to the state store */
	if (p == NULL || p->running || p->closing ||
	    sched_store_failed(p->sched, NULL, NULL) ||
	    sched_dormant(p->sched))
		return;
	if (p->has_last && llabs(now - p->last_start) < PRUNE_EVERY_MS)
		return;
	p->has_last = true;
	p->last_start = now;
	p->now = now;
	p->running = true;
	p->started_real = (int64_t)uv_now(p->slice.loop);
	p->pass = (struct store_prune){ .cutoff = prune_cutoff, .data = p,
					.pruned = prune_run_log };
	uv_timer_start(&p->slice, prune_slice_cb, 0, 0);
}

/* The hourly check on the real clock. */
static void
prune_hourly_cb(uv_timer_t *t)
{
	prune_tick(t->data);
}

struct prune *
prune_new(uv_loop_t *loop, struct sched *s)
{
	struct prune *p = xcalloc(1, sizeof *p);

	p->sched = s;
	uv_timer_init(loop, &p->hourly);
	uv_timer_init(loop, &p->slice);
	p->hourly.data = p->slice.data = p;
	uv_timer_start(&p->hourly, prune_hourly_cb, PRUNE_EVERY_MS,
		       PRUNE_EVERY_MS);
	uv_unref((uv_handle_t *)&p->hourly);
	prune_tick(p);
	return p;
}

/* A handle closed: free when both are. */
static void
prune_closed_cb(uv_handle_t *h)
{
	struct prune *p = h->data;

	if (--p->closing == 0) {
		buf_free(&p->logs);
		free(p);
	}
}

void
prune_close(struct prune *p)
{
	if (p == NULL || p->closing)
		return;
	p->closing = 2;
	uv_close((uv_handle_t *)&p->hourly, prune_closed_cb);
	uv_close((uv_handle_t *)&p->slice, prune_closed_cb);
}
