/*
 * sched_recover.c - start and restart: end the process groups a crashed
 * daemon left, recover its runs, rebuild the open manifest from the store
 * (sched_load_open; downstream items relinked by the mapping), probe the
 * warehouses; after a reload, cancel what jobs no longer configured had
 * queued.
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "proc.h"
#include "trend_hist.h"
#include "xalloc.h"

struct probe {
	struct exec_run run;
	struct exec_part part;
	struct job_def job;
	struct sched *s;
};

/* A warehouse probe finished: say so when it failed.  Unreachable only
 * when connecting failed (the executor's record, which status shows);
 * the probe's query failing on a connection that works is another
 * matter. */
static void
probe_done_cb(struct exec_run *run)
{
	struct probe *p = run->data;
	const char *name = run->cfg->warehouses[p->job.warehouse].name;
	char why[8];
	int64_t at = 0;

	if (run->failed && !run->cancelled &&
	    exec_warehouse_state(p->s->exec, name, why, sizeof why, &at) > 0)
		log_warn("warehouse=%s answers, but its probe failed: %s", name,
			 run->error);
	else if (run->failed && !run->cancelled)
		log_warn(
		    "warehouse=%s unreachable: %s; its jobs' runs fail into"
		    " their retries until it answers",
		    name, run->error);
	exec_run_clear_results(run);
	config_unref(run->cfg);
	free(p);
}

/* Job jd's partitions the open requests have recorded succeeded. */
static struct exec_done *
sched_sweep_done(struct sched *s, const struct job_def *jd, size_t *n)
{
	struct exec_done *done = NULL;
	struct request *rq;

	*n = 0;
	for (rq = s->m.requests.next; rq != &s->m.requests; rq = rq->next)
		for (size_t i = 0; i < rq->n; i++) {
			const struct item *it = rq->items[i];

			if (it->state != MS_SUCCEEDED ||
			    strcmp(it->job_name, jd->name) != 0)
				continue;
			done = xreallocarray(done, *n + 1, sizeof *done);
			done[*n].request = rq->id;
			snprintf(done[*n].key, sizeof done[*n].key, "%s",
				 it->key);
			(*n)++;
		}
	return done;
}

/* ClickHouse: the stages a crash left between a run's record and their
 * release go, unless an open request names them and has not recorded
 * their partition succeeded (it publishes them again: docs/clickhouse.md,
 * "Exactly once"). */
static void
sched_sweep_stages(struct sched *s)
{
	struct request *rq;
	struct exec_done *done;
	int64_t *ids = NULL;
	size_t n = 0, ndone;

	for (rq = s->m.requests.next; rq != &s->m.requests; rq = rq->next) {
		ids = xreallocarray(ids, n + 1, sizeof *ids);
		ids[n++] = rq->id;
	}
	for (size_t j = 0; j < s->cfg->njobs; j++) {
		const struct job_def *jd = &s->cfg->jobs[j];

		if (jd->sql == NULL || jd->table == NULL || jd->warehouse < 0 ||
		    s->cfg->warehouses[jd->warehouse].kind != WH_CLICKHOUSE)
			continue;
		done = sched_sweep_done(s, jd, &ndone);
		exec_sweep_stages(s->exec, s->cfg, jd, ids, n, done, ndone);
		free(done);
	}
	free(ids);
}

/* Connect to every warehouse once, so status can say which are reachable
 * before any run needs them. */
void
sched_probe_warehouses(struct sched *s)
{
	for (size_t i = 0; i < s->cfg->nwarehouses; i++) {
		struct probe *p = xcalloc(1, sizeof *p);

		p->s = s;
		p->job.name = "(warehouse probe)";
		p->job.warehouse = (int)i;
		p->job.grain = GRAIN_DAY;
		snprintf(p->part.key, sizeof p->part.key, "probe");
		p->run.cfg = config_ref(s->cfg);
		p->run.job = &p->job;
		p->run.parts = &p->part;
		p->run.nparts = 1;
		p->run.attempt = 1;
		p->run.query_sql = "SELECT 1";
		p->run.query_max = 1;
		p->run.done_cb = probe_done_cb;
		p->run.data = p;
		exec_submit(s->exec, &p->run);
	}
}

struct orphans {
	struct proc_group *g;
	int64_t *run_ids;
	char (*what)[160];
	size_t n, cap;
};

/* Collect one run left running with a process group. */
static void
orphan_collect_cb(int64_t run_id, const char *job, const char *key,
		  int64_t pgid, int64_t proc_start, void *data)
{
	struct orphans *o = data;

	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 8;
		o->g = xreallocarray(o->g, o->cap, sizeof *o->g);
		o->run_ids =
		    xreallocarray(o->run_ids, o->cap, sizeof *o->run_ids);
		o->what = xreallocarray(o->what, o->cap, sizeof *o->what);
	}
	memset(&o->g[o->n], 0, sizeof o->g[o->n]);
	o->g[o->n].pgid = (pid_t)pgid;
	o->g[o->n].start = proc_start;
	o->run_ids[o->n] = run_id;
	snprintf(o->what[o->n], sizeof o->what[o->n],
		 "job=%.64s partition=%.32s", job ? job : "?", key ? key : "?");
	o->n++;
}

/* The groups spawned but not recorded before the crash: found by the
 * marker every command run carries (proc.h). */
static void
orphan_collect_marked(struct sched *s, struct orphans *o)
{
	struct proc_group *marked = NULL;
	size_t nmarked = 0, recorded = o->n;
	char marker[4200];

	snprintf(marker, sizeof marker, "BACKFILLD_INSTANCE=%s",
		 s->log_dir ? s->log_dir : "");
	if (proc_find_marked(marker, &marked, &nmarked) == 0) {
		for (size_t i = 0; i < nmarked; i++) {
			bool known = false;

			for (size_t k = 0; k < recorded; k++)
				known |= o->g[k].pgid == marked[i].pgid;
			if (!known)
				orphan_collect_cb(0, "?", "?", marked[i].pgid,
						  marked[i].start, o);
		}
	}
	free(marked);
}

/* Say what became of one orphan group. */
static void
orphan_log(const struct orphans *o, size_t i)
{
	const struct proc_group *g = &o->g[i];

	if (!g->matched)
		log_info("%s run=%" PRId64 ": its process group %ld is"
			 " gone (or its pid is another program's now):"
			 " nothing to end",
			 o->what[i], o->run_ids[i], (long)g->pgid);
	else if (g->survived)
		log_err("%s run=%" PRId64 ": its process group %ld left"
			" by the previous daemon survived SIGKILL; the"
			" partition is queued again all the same",
			o->what[i], o->run_ids[i], (long)g->pgid);
	else if (o->run_ids[i] == 0)
		log_warn("ended process group %ld, a command run the"
			 " previous daemon started but had not recorded"
			 " (%s)",
			 (long)g->pgid, g->killed ? "SIGKILL" : "SIGTERM");
	else
		log_warn("%s run=%" PRId64 ": ended process group %ld"
			 " left running by the previous daemon (%s)",
			 o->what[i], o->run_ids[i], (long)g->pgid,
			 g->killed ? "SIGKILL" : "SIGTERM");
}

/*
 * Before runs left 'running' are queued again: end the command process
 * groups a crashed daemon left behind, so that a partition never runs
 * twice at once (proc.h).  Start-up waits at most 3 s for them: 2 s after
 * SIGTERM, 1 s after SIGKILL.  recorded: also the groups the store names
 * (not on several hosts, where it names other nodes' processes too: this
 * host's are found by their marker alone).
 */
static void
sched_end_orphans(struct sched *s, bool recorded)
{
	struct orphans o = {0};
	struct err err;

	if (recorded &&
	    store_orphans(s->store, orphan_collect_cb, &o, &err) < 0) {
		log_err("cannot read the runs a crash left running: %s",
			err.msg);
		return;
	}
	orphan_collect_marked(s, &o);
	if (o.n > 0)
		proc_end_groups(o.g, o.n, 2000, 1000);
	for (size_t i = 0; i < o.n; i++)
		orphan_log(&o, i);
	free(o.g);
	free(o.run_ids);
	free(o.what);
}

/* Recover, with the runs a new planner adopts kept running, and load. */
static int
sched_recover_load(struct sched *s, const struct adopt_row *rows,
		   size_t nrows, enum adopt_action *action, int64_t now,
		   int *recovered, struct err *err)
{
	struct sched_adopt *ad = NULL;
	const int64_t *keep = NULL;
	size_t nkeep = 0;
	int rc = -1;

	if (s->remote != NULL) {
		if (sched_adopt_read(s, rows, nrows, action, &ad, err) < 0)
			goto out;
		sched_adopt_keep(ad, &keep, &nkeep);
	}
	if (store_recover(s->store, now, keep, nkeep, recovered, err) < 0 ||
	    trend_hist_trim(s->store, s->cfg, err) < 0 ||
	    store_latest_counts(s->store, sched_count_load_cb, s, err) < 0 ||
	    sched_load_open(s, err) < 0)
		goto out;
	if (ad != NULL)
		sched_adopt_apply(s, ad);
	rc = 0;
out:
	sched_adopt_free(ad);
	return rc;
}

/* sched_start_adopt's recovery (scheduler.h): the orphans ended, runs
 * left running recovered (a new planner's adopted), the open manifest
 * loaded and settled, deadlines owed, finished requests closed,
 * ClickHouse stages a crash left swept. */
int
sched_recover(struct sched *s, const struct adopt_row *rows, size_t nrows,
	      enum adopt_action *action, struct err *err)
{
	struct request *rq, *nx;
	int recovered = 0;
	int64_t now = clock_now_ms();

	s->dormant = false;
	/* several hosts: this node's were ended before it claimed any work
	 * (sched_end_local_orphans); the runs of other nodes are not ours */
	if (s->remote == NULL)
		sched_end_orphans(s, true);
	if (sched_recover_load(s, rows, nrows, action, now, &recovered,
			       err) < 0)
		return -1;
	if (recovered > 0)
		log_warn("%d runs were interrupted by a stop or crash; their"
			 " partitions are queued again",
			 recovered);
	for (rq = s->m.requests.next; rq != &s->m.requests; rq = rq->next) {
		manifest_relink(&s->m, rq);
		for (size_t i = 0; i < rq->n; i++)
			manifest_settle(&s->m, rq->items[i]);
		sched_apply(s, now);
		sched_fresh_loaded(s, rq);
	}
	sched_fresh_failed(s);
	/* requests that were complete but not marked so */
	for (rq = s->m.requests.next; rq != &s->m.requests; rq = nx) {
		nx = rq->next;
		sched_request_changed(s, rq);
	}
	if (s->remote == NULL)
		sched_sweep_stages(s);
	return 0;
}

/* After a reload: cancel the queued or blocked partitions of jobs no
 * longer configured so that their requests finish; returns how many. */
int64_t
sched_cancel_unconfigured(struct sched *s)
{
	int64_t now = clock_now_ms(), n, *ids;
	size_t nids = 0;

	n = manifest_cancel_unconfigured(&s->m);
	ids = xcalloc(s->m.nchanges + 1, sizeof *ids);
	for (size_t i = 0; i < s->m.nchanges; i++) {
		int64_t id = s->m.changes[i].item->rq->id;

		if (nids == 0 || ids[nids - 1] != id)
			ids[nids++] = id;
	}
	sched_apply(s, now);
	for (size_t i = 0; i < nids; i++) {
		struct request *rq = manifest_request_find(&s->m, ids[i]);

		if (rq != NULL)
			sched_request_changed(s, rq);
	}
	free(ids);
	return n;
}

void
sched_end_local_orphans(struct sched *s)
{
	sched_end_orphans(s, false);
}
