/*
 * sched_clock.c - the clock schedule's shell: on every wake, for every
 * clock-driven job, apply schedule_decide() (SCHED-6, schedule.c):
 * materialise what it says as a request, log what it skipped or refused,
 * fire on_refused, save the job's state and arm the timer for the next
 * due time.  Pause and resume.  (The refused gap cleared once filled:
 * sched_jobstate.c.)
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "hooks.h"
#include "log.h"
#include "schedule.h"
#include "xalloc.h"

struct marked_ctx {
	const struct job_def *j;
	part_t first;
	bool *marked; /* by partition - first */
	size_t n;
};

static void
sched_marked_cb(const char *key, enum mstate st, void *data)
{
	struct marked_ctx *mc = data;
	part_t p;

	(void)st;
	/* the keys of a hull (cal_key_hull): any outside first.. dropped */
	if (cal_parse_key(&mc->j->cal, key, &p, NULL) == 0 &&
	    p >= mc->first && (size_t)(p - mc->first) < mc->n)
		mc->marked[p - mc->first] = true;
}

/* Materialise partitions first..last of job j for the schedule, but for
 * those whose newest run is a mark (docs/mark.md: the operator's word;
 * only backfill or rerun builds them again). */
static int
sched_materialise(struct sched *s, int job, part_t first, part_t last,
		  const char *kind, struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[job];
	struct sched_req rq = {.job = job, .kind = kind};
	struct marked_ctx mc = {.j = j, .first = first};
	struct part_range r = {first, last};
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX], lo[CAL_KEY_MAX], hi[CAL_KEY_MAX];
	size_t nmarked = 0;
	struct plan plan;
	int64_t id;
	int rc;

	mc.n = (size_t)(last - first + 1);
	mc.marked = xcalloc(mc.n, sizeof *mc.marked);
	rq.parts = xcalloc(mc.n, sizeof *rq.parts);
	cal_key(&j->cal, first, a);
	cal_key(&j->cal, last, b);
	cal_key_hull(&j->cal, r, lo, hi);
	if (store_marked_keys(s->store, j->name, lo, hi, sched_marked_cb, &mc,
			      err) < 0) {
		rc = -1;
		goto out;
	}
	/* a day a zone skipped has no interval: nothing to build */
	for (size_t i = 0; i < mc.n; i++)
		if (mc.marked[i])
			nmarked++;
		else if (!cal_empty(&j->cal, first + (part_t)i))
			rq.parts[rq.nparts++] = first + (part_t)i;
	if (nmarked > 0)
		log_info("job=%s %s: %zu marked partitions of %s..%s left as"
			 " marked", j->name, kind, nmarked, a, b);
	plan_init(&plan);
	rc = rq.nparts > 0 ? sched_submit(s, &rq, true, &plan, &id, err) : 0;
	plan_free(&plan);
	for (size_t i = 0; rc == 0 && i < rq.nparts; i++)
		sched_fresh_materialised(s, job, rq.parts[i], rq.parts[i], id);
out:
	free(mc.marked);
	free(rq.parts);
	return rc;
}

/* A refused gap: say how to fill it, and run the job's on_refused. */
static void
sched_refused(struct sched *s, const struct job_def *j,
	      const struct schedule_decision *d)
{
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX], c[CAL_KEY_MAX], n[CAL_KEY_MAX];
	char range[2 * CAL_KEY_MAX + 2], why[256];
	bool more = d->piece < d->last;

	cal_key(&j->cal, d->first, a);
	cal_key(&j->cal, d->last, b);
	cal_key(&j->cal, d->piece, c);
	cal_key(&j->cal, more ? d->piece + 1 : d->last, n);
	log_err("job=%s catchup refused: %" PRId64 " partitions missed"
		" (%s..%s), above max_catchup %d; nothing of the gap runs."
		" Backfill it in bounded pieces of at most %d partitions:"
		" backfillctl backfill %s --from %s --to %s%s%s%s",
		j->name, d->gap, a, b, j->max_catchup, j->max_backfill, j->name,
		a, c, more ? ", then the same from " : "", more ? n : "",
		more ? " on" : "");
	snprintf(range, sizeof range, "%s..%s", a, b);
	snprintf(why, sizeof why,
		 "catchup refused: %" PRId64 " partitions"
		 " missed, above max_catchup %d",
		 d->gap, j->max_catchup);
	hooks_fire(s->hooks, j, HOOK_REFUSED, s->cfg->hook_timeout, range, 0,
		   why);
}

/* Apply a decision that materialises, skips or refuses (newly due). */
static int
sched_clock_act(struct sched *s, int job, const struct schedule_decision *d,
		struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[job];
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	switch (d->action) {
	case SCHEDULE_RUN:
		return sched_materialise(s, job, d->last, d->last, "schedule",
					 err);
	case SCHEDULE_CATCHUP:
		return sched_materialise(s, job, d->first, d->last, "catchup",
					 err);
	case SCHEDULE_SKIP:
		if (sched_materialise(s, job, d->last, d->last, "schedule",
				      err) < 0)
			return -1;
		cal_key(&j->cal, d->first, a);
		cal_key(&j->cal, d->last - 1, b);
		log_notice("job=%s catchup is off: skipped %" PRId64 " missed"
			   " partitions %s..%s, running the newest due one"
			   " (backfill them if they are needed)",
			   j->name, d->gap - 1, a, b);
		return 0;
	case SCHEDULE_REFUSE:
		sched_refused(s, j, d);
		return 0;
	case SCHEDULE_NOTHING:
		break;
	}
	return 0;
}

/* Decide and apply the schedule of one clock-driven job; *next: the
 * earliest next due time so far. */
static void
sched_clock_job(struct sched *s, int job, bool resumed, int64_t now,
		int64_t *next)
{
	const struct job_def *j = &s->cfg->jobs[job];
	struct jobstate *js = sched_jobstate_of(s, job);
	struct schedule_decision d;
	struct err err;

	schedule_decide(j, &js->st, resumed, now, &d);
	if (sched_clock_act(s, job, &d, &err) < 0)
		goto fail;
	if (d.save) {
		js->st = d.state;
		/* a failed save of what was only a display fix is retried on
		 * the next wake; one that moved the watermark is an error */
		if (sched_jobstate_save(s, js, &err) < 0 &&
		    d.action != SCHEDULE_NOTHING)
			goto fail;
	}
	if (d.has_next_due && d.next_due < *next)
		*next = d.next_due;
	return;
fail:
	log_err("job=%s schedule: %s", j->name, err.msg);
}

static void
sched_due_cb(uv_timer_t *t)
{
	sched_schedule(t->data, false, -1);
}

/*
 * Run the schedule (SCHED-6, schedule.c) and the late_data sensors for
 * every job; `resumed` with `only`: that job was just resumed.  Arm the
 * timer for the earliest next due time.
 */
void
sched_schedule(struct sched *s, bool resumed, int only)
{
	int64_t now = clock_now(), next = INT64_MAX, delay;

	if (s->closing || s->draining || s->store_failed || s->dormant)
		return;
	for (size_t i = 0; i < s->cfg->njobs; i++) {
		const struct job_def *j = &s->cfg->jobs[i];

		if (j->late_data != NULL)
			sched_sensor_check(s, (int)i, now, &next);
		if (schedule_is_clock_job(j))
			sched_clock_job(s, (int)i, resumed && (int)i == only,
					now, &next);
	}
	uv_timer_stop(&s->due_timer);
	if (next == INT64_MAX)
		return;
	/* re-read the clock at least daily: a suspended host's monotonic
	 * timer does not advance while it sleeps */
	delay = next > now ? (next - now) * 1000 : 0;
	if (delay > 86400000)
		delay = 86400000;
	uv_timer_start(&s->due_timer, sched_due_cb, (uint64_t)delay, 0);
}

void
sched_clock_changed(struct sched *s)
{
	sched_schedule(s, false, -1);
	sched_fresh_arm(s);
	sched_want(s, SCHED_WANT_DISPATCH);
}

/* The system clock was set (clockjump.h): the due timer was armed with
 * a delay to an instant of the old time; not while draining. */
void
sched_clock_jumped(void *data)
{
	struct sched *s = data;

	if (!s->draining)
		sched_clock_changed(s);
}

int
sched_pause(struct sched *s, int job, bool pause, struct err *err)
{
	const struct job_def *j = &s->cfg->jobs[job];
	struct jobstate *js = sched_jobstate_of(s, job);
	bool was = js->st.paused;

	js->st.paused = pause;
	js->st.paused_at = pause ? clock_now_ms() : 0;
	if (sched_jobstate_save(s, js, err) < 0) {
		js->st.paused = was;
		return -1;
	}
	log_notice("job=%s %s", j->name, pause ? "paused" : "resumed");
	if (!pause && was)
		sched_schedule(s, true, job);
	/* resumed: its runs; paused: its run handed ahead taken back */
	if (pause != was)
		sched_want(s, SCHED_WANT_DISPATCH);
	return 0;
}
