/*
 * map_view.c - a job's map from the store and the scheduler (see
 * map_view.h).  Cost: one indexed range read of partition_latest for the
 * job (at most MAP_MAX_PARTITIONS rows), the scheduler's open work, and
 * for a downstream job its stale partitions; nothing of the runs history.
 */
#include "map_view.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "schedule.h"

struct first_ctx {
	const struct cal *cal;
	part_t first;
	bool found;
};

/* The oldest of a job's partitions, by index (a zoned hour's keys do not
 * sort in time order). */
static void
map_first_cb(const char *key, enum mstate st, void *data)
{
	struct first_ctx *c = data;
	part_t p;

	(void)st;
	if (cal_parse_key(c->cal, key, &p, NULL) < 0)
		return;
	if (!c->found || p < c->first)
		c->first = p;
	c->found = true;
}

/* One partition's newest finished run. */
static void
map_last_cb(const char *key, enum mstate st, void *data)
{
	struct map *m = data;
	part_t p;

	if (cal_parse_key(&m->cal, key, &p, NULL) < 0)
		return;
	if (st == MS_SUCCEEDED)
		map_raise(m, p, MAP_SUCCEEDED);
	else if (st == MS_SKIPPED)
		map_raise(m, p, MAP_SKIPPED);
	else if (st == MS_FAILED)
		map_raise(m, p, MAP_FAILED);
}

/* One partition whose newest run is a mark. */
static void
map_marked_cb(const char *key, enum mstate st, void *data)
{
	struct map *m = data;
	part_t p;

	(void)st;
	if (cal_parse_key(&m->cal, key, &p, NULL) == 0)
		map_raise(m, p, MAP_MARKED);
}

/* The oldest partition in the scheduler's memory. */
static void
map_min_cb(part_t p, enum mstate st, void *data)
{
	part_t *min = data;

	(void)st;
	if (p < *min)
		*min = p;
}

/* A partition in the scheduler's memory. */
static void
map_open_cb(part_t p, enum mstate st, void *data)
{
	struct map *m = data;

	map_raise(m, p, st == MS_RUNNING ? MAP_RUNNING :
		  st == MS_QUEUED ? MAP_QUEUED :
		  st == MS_BLOCKED ? MAP_BLOCKED : MAP_LATE); /* MS_LATE */
}

/* The most newer inputs a stale cell's note names. */
#define MAP_NOTE_INPUTS 10

/* What map_stale_cb reads: the map, and the configuration its jobs are
 * named in. */
struct map_stale_ctx {
	struct map *m;
	const struct config *cfg;
};

/* A stale downstream partition, noted with its newer inputs ("newer fct
 * 2026-02-10, 2026-02-11; fx 2026-02-01"): the inputs in its window that
 * landed after it was built. */
static int
map_stale_cb(int job, part_t part, bool built, int64_t built_at,
	     const struct stale_input *in, size_t nin, void *data,
	     struct err *err)
{
	struct map_stale_ctx *sc = data;
	struct map *m = sc->m;
	const struct config *cfg = sc->cfg;
	char k[CAL_KEY_MAX];
	struct buf note;

	(void)job; (void)built; (void)built_at; (void)err;
	map_raise(m, part, MAP_STALE);
	if (part < m->from || part > m->to)
		return 0;
	buf_init(&note);
	buf_addstr(&note, "newer");
	for (size_t i = 0; i < nin && i < MAP_NOTE_INPUTS; i++) {
		const struct job_def *ij = &cfg->jobs[in[i].job];

		cal_key(job_cal(ij), in[i].part, k);
		if (i == 0 || in[i].job != in[i - 1].job)
			buf_printf(&note, "%s %s %s", i ? ";" : "", ij->name, k);
		else
			buf_printf(&note, ", %s", k);
	}
	if (nin > MAP_NOTE_INPUTS)
		buf_printf(&note, " and %zu more", nin - MAP_NOTE_INPUTS);
	buf_add(&note, "", 1);
	map_note(m, part, note.data);
	buf_free(&note);
	return 0;
}

/* One bound as typed: its first (from) or last (to) partition. */
static int
map_bound(const struct cal *c, const char *text, bool last, part_t *p,
	  struct err *err)
{
	struct part_range r;

	if (cal_range_parse(c, text, text, &r, err) < 0)
		return -1;
	*p = last ? r.last : r.first;
	return 0;
}

int
map_view_build(struct sched *s, int job, const char *from, const char *to,
	       struct map *m, struct err *err)
{
	return map_view_build_newest(s, job, from, to, 0, m, err);
}

int
map_view_build_newest(struct sched *s, int job, const char *from,
		      const char *to, int64_t newest, struct map *m,
		      struct err *err)
{
	const struct job_def *j = &sched_config(s)->jobs[job];
	struct sched_job_view v;
	part_t first, last, due;
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	due = schedule_last_closed(j, true, clock_now());
	if (j->has_end && due > j->end)
		due = j->end;
	if (j->grain == GRAIN_NONE)
		due = 0; /* a whole table: its one partition, - */
	if (from != NULL) {
		if (map_bound(job_cal(j), from, false, &first, err) < 0)
			return -1;
	} else if (j->has_start || j->grain == GRAIN_NONE) {
		first = j->has_start ? j->start : 0;
	} else {
		struct first_ctx fc = { .cal = job_cal(j), .found = false };
		part_t open = INT64_MAX;

		if (store_last_states(sched_store(s), j->name, "0", "9", map_first_cb,
				      &fc, err) < 0)
			return -1;
		first = fc.found ? fc.first : due;
		/* or the oldest partition queued, running or blocked */
		sched_job_open(s, job, map_min_cb, &open);
		if (open < first)
			first = open;
	}
	if (to != NULL) {
		if (map_bound(job_cal(j), to, true, &last, err) < 0)
			return -1;
	} else {
		last = due > first ? due : first;
	}
	/* the report's newest partitions up to `to`, also before the
	 * oldest one kept (the "older" link of a job without start) */
	if (newest > 0 && from == NULL && (last - first + 1 > newest ||
					   (last < first && !j->has_start)))
		first = last - newest + 1;
	if (map_init(m, job_cal(j), first, last, err) < 0)
		return -1;
	for (part_t p = due + 1; p <= last; p++)
		map_set(m, p, MAP_NOT_DUE);
	/* zoned hours: the keys' hull, each key placed by its index */
	cal_key_hull(job_cal(j), (struct part_range){ first, last }, a, b);
	if (store_last_states(sched_store(s), j->name, a, b, map_last_cb, m,
			      err) < 0 ||
	    store_marked_keys(sched_store(s), j->name, a, b, map_marked_cb, m,
			      err) < 0) {
		map_free(m);
		return -1;
	}
	sched_job_view(s, job, &v);
	if (v.has_gap)
		for (part_t p = v.gap_from > first ? v.gap_from : first;
		     p <= v.gap_to && p <= last; p++)
			map_raise(m, p, MAP_REFUSED);
	if ((j->nupstream > 0 || j->self_lookback > 0) &&
	    sched_stale(s, job, map_stale_cb,
			&(struct map_stale_ctx){ m, sched_config(s) }, err) < 0) {
		map_free(m);
		return -1;
	}
	sched_job_open(s, job, map_open_cb, m);
	return 0;
}
