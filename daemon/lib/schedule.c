/*
 * schedule.c - the clock schedule's decisions (schedule.h).
 *
 * SCHED-6, the schedule.  Each clock-driven job has a watermark: the
 * newest partition the schedule materialised.  On every wake the due set
 * is recomputed from `now`; the partitions between the watermark and the
 * newest due one are a gap when more than one: caught up as one request
 * when catchup is on and the gap is within max_catchup, otherwise skipped
 * (catchup off: the older part of the gap never runs, the newest due
 * partition runs as one schedule request, and the watermark moves to it;
 * whatever the gap's size) or refused (catchup on, above the bound: none
 * runs, status says so until every partition of the gap has succeeded,
 * whatever comes due after it: a later partition, catchup or skip leaves
 * the gap as it is, and a gap refused while it is unfilled extends it to
 * the newer gap's end).
 * A single newly due partition is not a gap: it runs whatever catchup
 * says.  A clock that goes back finds nothing due past the watermark and
 * re-runs nothing; a clock that jumps forward finds a gap.  A paused job
 * materialises nothing; on resume what came due meanwhile is materialised
 * within max_catchup, whatever catchup says: paused time is not missed
 * time.
 */
#include "schedule.h"

#include <stdio.h>
#include <string.h>

/* The newest partition p of calendar c with cal_end(p) + ready_after <=
 * now: in a zone, a day comes due at that zone's midnight (plus
 * ready_after), whatever the season. */
part_t
schedule_cal_last_due(const struct cal *c, int64_t ready_after, int64_t now)
{
	return cal_part_of(c, now - ready_after) - 1;
}

/* When partition p of calendar c comes due: its end plus ready_after. */
int64_t
schedule_cal_due_time(const struct cal *c, int64_t ready_after, part_t p)
{
	return cal_end(c, p) + ready_after;
}

/* The same at grain g of the UTC calendar. */
part_t
schedule_last_due(enum grain g, int64_t ready_after, int64_t now)
{
	return schedule_cal_last_due(&cal_utc[g], ready_after, now);
}

int64_t
schedule_due_time(enum grain g, int64_t ready_after, part_t p)
{
	return schedule_cal_due_time(&cal_utc[g], ready_after, p);
}

part_t
schedule_last_closed(const struct job_def *j, bool due, int64_t now)
{
	/* a whole table's one partition, -, spans all time: it never closes,
	 * and is always buildable (it has no schedule to wait for) */
	if (job_cal(j)->grain == GRAIN_NONE)
		return 0;
	return schedule_cal_last_due(job_cal(j), due ? j->ready_after : 0,
	    now);
}

void
schedule_last_closed_all(const struct config *cfg, int64_t now,
			 part_t *last)
{
	for (size_t i = 0; i < cfg->njobs; i++)
		last[i] = schedule_last_closed(&cfg->jobs[i], false, now);
}

int64_t
schedule_inputs_due(const struct config *cfg, int j, part_t p)
{
	const struct job_def *jd = &cfg->jobs[j];
	const struct cal *c = job_cal(jd);
	int64_t t, last;

	if (c->grain == GRAIN_NONE)
		return 0;
	if (jd->has_end && p > jd->end)
		p = jd->end; /* what comes after its end never comes */
	if (jd->nupstream == 0)
		return schedule_cal_due_time(c, jd->ready_after, p);
	t = cal_end(c, p);
	last = t - 1;
	for (size_t u = 0; u < jd->nupstream; u++) {
		int up = jd->upstream_idx[u];
		const struct cal *uc = job_cal(&cfg->jobs[up]);
		int64_t due;

		if (up == j || uc->grain == GRAIN_NONE)
			continue;
		due = schedule_inputs_due(cfg, up, cal_part_of(uc, last));
		if (due > t)
			t = due;
	}
	return t;
}

int
schedule_refuse_open(const struct job_def *j, part_t p, bool due,
		     const char *nothing, struct err *err)
{
	char key[CAL_KEY_MAX], at[CAL_KEY_MAX];
	const struct cal *c = job_cal(j);
	int64_t t = due ? schedule_cal_due_time(c, j->ready_after, p)
			: cal_end(c, p);

	cal_key(c, p, key);
	cal_format_iso_ms(t * 1000, at);
	if (due)
		return err_set(err, EXIT_BAD_INPUT, "%s %s is not due yet: it"
			       " comes due at %s; only a partition that could"
			       " have run can be marked; %s", j->name, key, at,
			       nothing);
	return err_set(err, EXIT_BAD_INPUT, "refused: %s %s has not closed"
		       " yet: it closes at %s; only a partition whose"
		       " interval has ended can be built (build_future:"
		       " true allows it); %s", j->name, key, at, nothing);
}

bool
schedule_is_clock_job(const struct job_def *j)
{
	return j->nupstream == 0 && j->has_start;
}

/* When partition `next` (clipped to start) comes due: false when it is
 * past the job's end and nothing comes due any more. */
static bool
schedule_next_due(const struct job_def *j, part_t next, int64_t *due)
{
	if (next < j->start)
		next = j->start;
	if (j->has_end && next > j->end)
		return false;
	*due = schedule_cal_due_time(job_cal(j), j->ready_after, next);
	return true;
}

/* Set a job state's catchup text. */
static void
schedule_set_catchup(struct store_job_state *st, const char *what)
{
	snprintf(st->catchup, sizeof st->catchup, "%s", what);
}

/* Is a refused gap still unfilled in st (shown until it is filled)? */
static bool
schedule_has_refused(const struct store_job_state *st)
{
	return strcmp(st->catchup, "refused") == 0;
}

/* Set the catchup text the configuration says, unless a refused gap is
 * still unfilled: that stays shown, across whatever the schedule does
 * next, until schedule_gap_clear(). */
static void
schedule_set_configured(const struct job_def *j, struct store_job_state *st)
{
	if (schedule_has_refused(st))
		return;
	schedule_set_catchup(st, j->catchup ? "ok" : "off");
	st->gap_from[0] = st->gap_to[0] = '\0';
}

/* Decide what a gap first..last (more than one partition) becomes. */
static void
schedule_gap(const struct job_def *j, bool resumed, struct schedule_decision *d)
{
	struct store_job_state *st = &d->state;

	if ((j->catchup || resumed) && d->gap <= j->max_catchup) {
		d->action = SCHEDULE_CATCHUP;
		schedule_set_configured(j, st);
	} else if (!j->catchup && !resumed) {
		/* the older part of the gap is skipped, its newest due
		 * partition runs, the job goes on with what comes due */
		d->action = SCHEDULE_SKIP;
		schedule_set_configured(j, st);
	} else {
		/* the command the log suggests is one the daemon accepts:
		 * the gap's first piece of at most max_backfill */
		d->action = SCHEDULE_REFUSE;
		d->piece = d->gap > j->max_backfill
			       ? d->first + j->max_backfill - 1
			       : d->last;
		/* a gap refused while an older one is unfilled extends it:
		 * the gap shown runs from the older one's first partition
		 * (what ran in between counts as filled once succeeded) */
		if (!schedule_has_refused(st) || st->gap_from[0] == '\0')
			cal_key(job_cal(j), d->first, st->gap_from);
		schedule_set_catchup(st, "refused");
		cal_key(job_cal(j), d->last, st->gap_to);
	}
}

void
schedule_decide(const struct job_def *j, const struct store_job_state *st,
		bool resumed, int64_t now, struct schedule_decision *d)
{
	part_t wm, nextp;

	memset(d, 0, sizeof *d);
	d->state = *st;
	if (!schedule_is_clock_job(j) || st->paused)
		return;
	if (!st->has_watermark ||
	    cal_parse_key(job_cal(j), st->watermark, &wm, NULL) < 0)
		wm = j->start - 1;
	d->last = schedule_cal_last_due(job_cal(j), j->ready_after, now);
	if (j->has_end && d->last > j->end)
		d->last = j->end;
	if (d->last > wm) {
		d->first = wm + 1 < j->start ? j->start : wm + 1;
		d->gap = d->last - d->first + 1;
		if (d->gap == 1) {
			d->action = SCHEDULE_RUN;
			schedule_set_configured(j, &d->state);
		} else {
			schedule_gap(j, resumed, d);
		}
		d->state.has_watermark = true;
		cal_key(job_cal(j), d->last, d->state.watermark);
		d->save = true;
	} else if (!st->has_watermark || !j->catchup) {
		const char *want = j->catchup ? "ok" : "off";

		if (strcmp(st->catchup, "refused") != 0 &&
		    strcmp(st->catchup, want) != 0) {
			schedule_set_catchup(&d->state, want);
			d->save = true;
		}
	}
	nextp = d->last > wm ? d->last + 1 : wm + 1;
	d->has_next_due = schedule_next_due(j, nextp, &d->next_due);
}

void
schedule_view(const struct job_def *j, const struct store_job_state *st,
	      int64_t now, struct schedule_view *v)
{
	bool refused = strcmp(st->catchup, "refused") == 0;

	memset(v, 0, sizeof *v);
	v->has_watermark =
	    st->has_watermark &&
	    cal_parse_key(job_cal(j), st->watermark, &v->watermark, NULL) == 0;
	if (!schedule_is_clock_job(j))
		v->catchup = "off";
	else if (refused)
		v->catchup = "refused";
	else
		v->catchup = j->catchup ? "ok" : "off";
	/* refused until every partition of the gap has succeeded:
	 * schedule_gap_clear() once the last one lands */
	v->has_gap =
	    refused && st->gap_from[0] &&
	    cal_parse_key(job_cal(j), st->gap_from, &v->gap_from, NULL) == 0 &&
	    cal_parse_key(job_cal(j), st->gap_to, &v->gap_to, NULL) == 0;
	if (schedule_is_clock_job(j)) {
		part_t nextp = v->has_watermark ? v->watermark + 1 : j->start;
		part_t last = schedule_cal_last_due(job_cal(j), j->ready_after, now);

		if (nextp <= last)
			nextp = last + 1;
		v->has_next_due = schedule_next_due(j, nextp, &v->next_due);
	}
}

bool
schedule_gap_covers(const struct job_def *j, const struct store_job_state *st,
		    const char *key, part_t *from, part_t *to)
{
	return strcmp(st->catchup, "refused") == 0 && st->gap_from[0] &&
	       strcmp(key, st->gap_from) >= 0 && strcmp(key, st->gap_to) <= 0 &&
	       cal_parse_key(job_cal(j), st->gap_from, from, NULL) == 0 &&
	       cal_parse_key(job_cal(j), st->gap_to, to, NULL) == 0;
}

void
schedule_gap_clear(const struct job_def *j, struct store_job_state *st)
{
	schedule_set_catchup(st, j->catchup ? "ok" : "off");
	st->gap_from[0] = st->gap_to[0] = '\0';
}
