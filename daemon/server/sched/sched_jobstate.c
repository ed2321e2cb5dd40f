/*
 * sched_jobstate.c - the per-job state the scheduler keeps beside the
 * manifest: the store's job row (watermark, catchup, refused gap, pause,
 * sensor), cached on first use, and the partitions of each job by their
 * newest finished run (status counts, loaded once at start); the refused
 * catchup gap cleared once its last partition succeeded.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "schedule.h"
#include "xalloc.h"

/* The cached state of a job by name (loaded from the store on first use). */
struct jobstate *
sched_jobstate(struct sched *s, const char *name)
{
	struct jobstate *js;
	struct err err;

	for (size_t i = 0; i < s->njobstates; i++) {
		js = s->jobstates[i];
		if (strcmp(js->name, name) != 0)
			continue;
		/* a read that failed (the store unreachable: status on a
		 * node that waits for it) is no state: never kept as the
		 * job's (a watermark lost would run its newest due
		 * partition again) */
		if (js->unread &&
		    store_job_get(s->store, name, &js->st, &err) == 0)
			js->unread = false;
		return js;
	}
	s->jobstates = xreallocarray(s->jobstates, s->njobstates + 1,
				     sizeof *s->jobstates);
	js = xcalloc(1, sizeof *js);
	s->jobstates[s->njobstates++] = js;
	js->name = xstrdup(name);
	js->last_ms = -1;
	if (store_job_get(s->store, name, &js->st, &err) < 0) {
		log_err("job=%s %s", name, err.msg);
		js->unread = true;
	}
	return js;
}

/* The cached state of job index j of the current configuration. */
struct jobstate *
sched_jobstate_of(struct sched *s, int j)
{
	struct err err;

	if (s->js_by_job[j] == NULL)
		s->js_by_job[j] = sched_jobstate(s, s->cfg->jobs[j].name);
	else if (s->js_by_job[j]->unread &&
		 store_job_get(s->store, s->js_by_job[j]->name,
			       &s->js_by_job[j]->st, &err) == 0)
		s->js_by_job[j]->unread = false; /* as sched_jobstate */
	return s->js_by_job[j];
}

/* Save a job's state. */
int
sched_jobstate_save(struct sched *s, struct jobstate *js, struct err *err)
{
	return store_job_put(s->store, js->name, &js->st, clock_now_ms(), err);
}

/* Is job index `job` paused (the dispatch gate)? */
bool
sched_paused_cb(void *data, int job)
{
	return job >= 0 && sched_jobstate_of(data, job)->st.paused;
}

/* A partition of job has a new newest finished run: move it between the
 * counts status shows (prev MS_NONE: the partition had none). */
void
sched_count_finished(struct sched *s, const char *job, enum mstate prev,
		     enum mstate state)
{
	struct jobstate *js = sched_jobstate(s, job);

	if (prev < MS_COUNT && js->last[prev] > 0)
		js->last[prev]--;
	js->last[state]++;
}

/* At start: the counts of every job, from the store. */
void
sched_count_load_cb(const char *job, enum mstate state, int64_t count,
		    void *data)
{
	sched_jobstate(data, job)->last[state] = count;
}

void
sched_count_prev_cb(const char *job, enum mstate prev, enum mstate state,
		    void *data)
{
	sched_count_finished(data, job, prev, state);
}

struct gap_count {
	const struct cal *c;
	part_t from, to; /* the gap: a hull's other keys are dropped */
	int64_t succeeded;
};

/* Count the gap's partitions whose last run succeeded. */
static void
sched_gap_count_cb(const char *key, enum mstate st, void *data)
{
	struct gap_count *gc = data;
	part_t p;

	if (st == MS_SUCCEEDED && cal_parse_key(gc->c, key, &p, NULL) == 0 &&
	    p >= gc->from && p <= gc->to)
		gc->succeeded++;
}

/* A partition of job succeeded: when it was the last of the job's
 * refused catchup gap to succeed, the gap is filled and catchup is what
 * the configuration says again.  (Here, when the state changes, and not
 * when status reads it: reads never write.) */
void
sched_gap_filled(struct sched *s, const char *job, const char *key)
{
	struct jobstate *js = sched_jobstate(s, job);
	const struct job_def *j = config_job(s->cfg, job);
	struct gap_count gc = {0};
	char lo[CAL_KEY_MAX], hi[CAL_KEY_MAX];
	part_t from, to;
	struct err err;

	if (j == NULL || !schedule_gap_covers(j, &js->st, key, &from, &to))
		return;
	gc.c = &j->cal;
	gc.from = from;
	gc.to = to;
	cal_key_hull(&j->cal, (struct part_range){from, to}, lo, hi);
	if (store_last_states(s->store, job, lo, hi, sched_gap_count_cb, &gc,
			      &err) < 0) {
		log_err("job=%s %s", job, err.msg);
		return;
	}
	if (gc.succeeded < to - from + 1)
		return;
	log_notice("job=%s the refused catchup gap %s..%s is filled; catchup"
		   " is %s again",
		   job, js->st.gap_from, js->st.gap_to,
		   j->catchup ? "on" : "off");
	schedule_gap_clear(j, &js->st);
	if (sched_jobstate_save(s, js, &err) < 0)
		log_err("job=%s %s", job, err.msg);
}
