/*
 * sched_store.c - the bottom of the scheduler's shell: the store's
 * commit, which applies SCHED-1 and SCHED-7 (the store first; a store that
 * cannot be written stops the work, never the daemon: both stated at
 * the top of scheduler.c), and the writes and reads every other file of
 * the shell shares.  It calls no other file of the shell.
 */
#include "sched_int.h"

#include <stdio.h>

#include "clock.h"
#include "log.h"

/* End a transaction the caller began: commit after rc 0 (its writes
 * went in), roll back otherwise; 0, or -1 with err filled by the write
 * or the commit that failed. */
int
sched_tx_end(struct sched *s, int rc, struct err *err)
{
	if (rc == 0 && store_commit(s->store, err) == 0)
		return 0;
	store_rollback(s->store);
	return -1;
}

bool
sched_store_fail(struct sched *s, const char *why)
{
	if (s->store_failed)
		return false;
	s->store_failed = true;
	s->store_failed_at = clock_now_ms();
	snprintf(s->store_error, sizeof s->store_error, "%s", why);
	store_refuse_all(s->store, s->store_error);
	return true;
}

void
sched_store_refusal(const struct sched *s, char *out, size_t outsz)
{
	/* what a change asked meanwhile did: nothing (it is forgotten when
	 * the daemon resumes from its last commit, and nothing starts
	 * before) */
	snprintf(out, outsz, "the state store cannot be written (%s):"
		 " nothing was recorded and none of it will be done;"
		 " %sbackfilld resumes by itself, then try again",
		 s->store_error, config_is_cluster(s->cfg) ? "" :
		 "free space on its filesystem, ");
}

int
sched_flush(struct sched *s)
{
	struct err err;

	if (store_flush(s->store, &err) == 0) {
		/* the records of the runs done so far are committed: their
		 * ClickHouse stages may go (exec.h) */
		if (!s->store_failed)
			exec_release_stages(s->exec);
		return 0;
	}
	/* SCHED-7: the turn's changes are rolled back and memory is ahead
	 * of the store; stop taking work, say so once, let main.c decide */
	if (sched_store_fail(s, err.msg)) {
		log_err(
		    "cannot commit to the state store: %s; no new runs start"
		    " and nothing more is acknowledged until it can be written"
		    " again: free space on its filesystem, backfilld resumes"
		    " by itself",
		    err.msg);
		if (s->store_cb)
			s->store_cb(s->store_data);
	}
	return -1;
}

/* Persist an item's state. */
int
sched_item_store(struct sched *s, struct item *it, const char *error,
		 int64_t now, struct err *err)
{
	return store_item_set(s->store, it->id, it->state, it->attempts,
			      it->not_before, error, it->blocked_on,
			      cutoff_changed_of(it->cut), now, err);
}

struct newest_ctx {
	const struct cal *c;
	struct part_range r;
	int64_t built;
};

static int
sched_newest_cb(const char *key, int64_t built_at, bool has_inputs_at,
		int64_t inputs_at, void *data, struct err *err)
{
	struct newest_ctx *n = data;
	part_t p;

	(void)has_inputs_at;
	(void)inputs_at;
	(void)err;
	if (cal_parse_key(n->c, key, &p, NULL) == 0 && p >= n->r.first &&
	    p <= n->r.last && built_at > n->built)
		n->built = built_at;
	return 0;
}

/* The newest build among partitions r of job uj (-1: none): one range
 * query where keys sort in time; otherwise (hours of a zone: 02+02:00
 * sorts after 02+01:00 as text) the job's partitions listed and filtered
 * by index. */
static int
sched_newest_build(struct sched *s, const struct job_def *uj,
		   struct part_range r, int64_t *built)
{
	struct newest_ctx n = {&uj->cal, r, -1};
	char lo[CAL_KEY_MAX], hi[CAL_KEY_MAX];

	if (cal_keys_sort_in_time(&uj->cal)) {
		cal_key_hull(&uj->cal, r, lo, hi);
		return store_newest_build(s->store, uj->name, lo, hi, built,
					  NULL);
	}
	if (store_partitions_of(s->store, uj->name, sched_newest_cb, &n,
				NULL) < 0)
		return -1;
	*built = n.built;
	return 0;
}

/* Newest landing among the inputs of a downstream partition, or -1. */
int64_t
sched_inputs_at(struct sched *s, const struct job_def *j, part_t part)
{
	int64_t newest = -1;

	for (size_t u = 0; u < j->nupstream; u++) {
		const struct job_def *uj = &s->cfg->jobs[j->upstream_idx[u]];
		struct part_range r = cal_window_inputs(&uj->cal, &j->cal, part,
							job_lookback(j, u));
		int64_t built;

		if (sched_newest_build(s, uj, r, &built) == 0 && built > newest)
			newest = built;
	}
	/* a running total reads its own partitions part-N..part-1 */
	if (j->self_lookback > 0) {
		struct part_range r = { part - j->self_lookback, part - 1 };
		int64_t built;

		if (sched_newest_build(s, j, r, &built) == 0 && built > newest)
			newest = built;
	}
	return newest;
}
