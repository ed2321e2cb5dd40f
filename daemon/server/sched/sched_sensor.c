/*
 * sched_sensor.c - late_data sensors: every `every` seconds a job's
 * read-only query names the partitions that received rows since the last
 * check; they are enqueued as one late_data request (at most
 * max_backfill of them, or none and an error in status).
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"

struct sensor_run {
	struct exec_run run;
	struct exec_part part;
	struct sched *s;
	char job[128];
	int64_t started_ms;
	char since[CAL_KEY_MAX];
};

/* When job j's sensor checks next (seconds). */
int64_t
sched_sensor_next(struct sched *s, const struct job_def *j,
		  const struct jobstate *js)
{
	int64_t last =
	    js->st.has_late_checked ? js->st.late_checked_at : s->started_ms;

	return last / 1000 + j->late_data->every;
}

/* Record a sensor check's outcome and save it. */
static void
sensor_record(struct sched *s, struct jobstate *js, int64_t at, int64_t found,
	      const char *error, bool advance, int64_t since)
{
	struct err err;

	js->st.has_late_checked = true;
	js->st.late_checked_at = at;
	js->st.late_found = found;
	snprintf(js->st.late_error, sizeof js->st.late_error, "%s",
		 error ? error : "");
	if (advance) {
		js->st.has_late_since = true;
		js->st.late_since = since;
	}
	if (sched_jobstate_save(s, js, &err) < 0)
		log_err("job=%s late_data: %s", js->name, err.msg);
}

/* Order partitions. */
static int
sensor_part_cmp(const void *a, const void *b)
{
	part_t x = *(const part_t *)a, y = *(const part_t *)b;

	return x < y ? -1 : x > y;
}

/* Parse the values a check returned into sorted, distinct partitions of
 * job jd (*n of them); -1 with msg filled when one is not a partition. */
static int
sensor_parts(const struct job_def *jd, const struct exec_run *run,
	     part_t *parts, size_t *n, char *msg, size_t msgsz)
{
	struct err err;
	size_t k = 0;

	*n = 0;
	err_clear(&err);
	for (size_t i = 0; i < run->nvalues; i++) {
		if (cal_parse_key(&jd->cal, run->values[i], &parts[*n],
				   &err) < 0 ||
		    (jd->has_start && parts[*n] < jd->start) ||
		    (jd->has_end && parts[*n] > jd->end)) {
			snprintf(
			    msg, msgsz,
			    "late_data returned \"%.60s\","
			    " which is not a partition of %s (%s); its query"
			    " must return %s partition keys",
			    run->values[i], jd->name,
			    err.msg[0] ? err.msg : "outside start..end",
			    grain_name(jd->grain));
			return -1;
		}
		err_clear(&err);
		(*n)++;
	}
	qsort(parts, *n, sizeof *parts, sensor_part_cmp);
	for (size_t i = 0; i < *n; i++)
		if (k == 0 || parts[k - 1] != parts[i])
			parts[k++] = parts[i];
	*n = k;
	return 0;
}

/* Enqueue what a check found as one late_data request. */
static void
sensor_enqueue(struct sched *s, struct sensor_run *sr, struct jobstate *js,
	       int j, part_t *parts, size_t n, int64_t now)
{
	const struct job_def *jd = &s->cfg->jobs[j];
	struct sched_req rq = {
	    .job = j, .kind = "late_data", .reason = "late_data sensor"};
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];
	struct plan plan;
	struct err err;
	int64_t id;

	cal_key(&jd->cal, parts[0], a);
	cal_key(&jd->cal, parts[n - 1], b);
	rq.parts = parts;
	rq.nparts = n;
	rq.from_key = a;
	rq.to_key = b;
	plan_init(&plan);
	if (sched_submit(s, &rq, true, &plan, &id, &err) < 0) {
		plan_free(&plan);
		log_err("job=%s late_data: cannot enqueue: %s", jd->name,
			err.msg);
		sensor_record(s, js, now, (int64_t)n, err.msg, false, 0);
		return;
	}
	plan_free(&plan);
	log_notice("job=%s request=%" PRId64 " late_data found %zu"
		   " partitions (%s..%s) with rows since %s",
		   jd->name, id, n, a, b, sr->since);
	sensor_record(s, js, now, (int64_t)n, NULL, true, sr->started_ms);
}

/* What a check that ran found: refuse it, enqueue it, or nothing. */
static void
sensor_found(struct sched *s, struct sensor_run *sr, struct jobstate *js, int j,
	     int64_t now)
{
	const struct job_def *jd = &s->cfg->jobs[j];
	struct exec_run *run = &sr->run;
	part_t *parts = xcalloc(run->nvalues, sizeof *parts);
	char msg[ERR_MSG_MAX];
	size_t n;

	if (sensor_parts(jd, run, parts, &n, msg, sizeof msg) < 0) {
		log_err("job=%s %s; nothing enqueued", jd->name, msg);
		sensor_record(s, js, now, 0, msg, false, 0);
	} else if (n > (size_t)jd->max_backfill) {
		snprintf(msg, sizeof msg,
			 "late_data found %zu partitions, above"
			 " max_backfill %d: nothing enqueued; backfill them in"
			 " bounded requests (backfillctl backfill %s"
			 " --dates-file F)",
			 n, jd->max_backfill, jd->name);
		log_err("job=%s %s", jd->name, msg);
		sensor_record(s, js, now, (int64_t)n, msg, false, 0);
	} else if (n > 0) {
		sensor_enqueue(s, sr, js, j, parts, n, now);
	} else {
		sensor_record(s, js, now, 0, NULL, true, sr->started_ms);
	}
	free(parts);
}

/* A late_data check finished. */
static void
sensor_done_cb(struct exec_run *run)
{
	struct sensor_run *sr = run->data;
	struct sched *s = sr->s;
	struct jobstate *js = sched_jobstate(s, sr->job);
	int j = config_job_index(s->cfg, sr->job);
	const struct job_def *jd = j >= 0 ? &s->cfg->jobs[j] : NULL;
	int64_t now = clock_now_ms();

	js->sensor = NULL;
	if (run->cancelled || s->closing || jd == NULL || jd->late_data == NULL)
		;
	else if (run->failed) {
		log_err("job=%s late_data check failed: %s", sr->job,
			run->error);
		sensor_record(s, js, now, 0, run->error, false, 0);
	} else
		sensor_found(s, sr, js, j, now);
	exec_run_clear_results(run);
	config_unref(run->cfg);
	free(sr);
	/* its next check: the schedule armed again (scheduler.c) */
	if (!s->closing && !s->draining)
		sched_want(s, SCHED_WANT_SCHEDULE);
}

/* Start job j's late_data check. */
static void
sensor_start(struct sched *s, int j, struct jobstate *js)
{
	const struct job_def *jd = &s->cfg->jobs[j];
	struct sensor_run *sr = xcalloc(1, sizeof *sr);

	sr->s = s;
	snprintf(sr->job, sizeof sr->job, "%s", jd->name);
	sr->started_ms = clock_now_ms();
	cal_format_iso_ms(js->st.has_late_since ? js->st.late_since
						: s->started_ms,
			  sr->since);
	snprintf(sr->part.key, sizeof sr->part.key, "late_data");
	sr->run.cfg = config_ref(s->cfg);
	sr->run.job = jd;
	sr->run.parts = &sr->part;
	sr->run.nparts = 1;
	sr->run.attempt = 1;
	sr->run.query_sql = jd->late_data->sql;
	sr->run.query_since = sr->since;
	sr->run.query_max = (size_t)jd->max_backfill * 4 + 1024;
	sr->run.done_cb = sensor_done_cb;
	sr->run.data = sr;
	js->sensor = sr;
	log_debug("job=%s late_data check since=%s", jd->name, sr->since);
	exec_submit(s->exec, &sr->run);
}

/* Start job j's check when it is due (not while paused or while one is in
 * flight); *next: the earliest next wake so far (seconds). */
void
sched_sensor_check(struct sched *s, int j, int64_t now, int64_t *next)
{
	const struct job_def *jd = &s->cfg->jobs[j];
	struct jobstate *js = sched_jobstate_of(s, j);
	int64_t at = sched_sensor_next(s, jd, js);

	if (js->st.paused)
		return;
	if (js->sensor == NULL && at <= now) {
		sensor_start(s, j, js);
		at = now + jd->late_data->every;
	}
	if (at < *next)
		*next = at;
}
