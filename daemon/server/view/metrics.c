/*
 * metrics.c - the Prometheus text file (see metrics.h).
 *
 * Histograms have fixed buckets in seconds (base units), chosen for ETL:
 * runs from a tenth of a second to hours, schedule delays from a second
 * to a day.  Per-job counters are kept by job name, so a reload that
 * drops a job keeps its counters until the daemon restarts (a counter
 * that vanished and came back would read as a reset).
 */
#include "metrics.h"

#include "atomicfile.h"
#include "clock.h"
#include "olrun.h"
#include "olsend.h"
#include "throttle.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "report.h"
#include "severity.h"
#include "xalloc.h"

static const double metrics_dur_buckets[] = { 0.1, 0.5, 1, 5, 15, 60, 300,
					      900, 3600, 14400 };
static const double metrics_delay_buckets[] = { 1, 10, 60, 300, 900, 3600,
						21600, 86400 };
#define NDUR (sizeof metrics_dur_buckets / sizeof metrics_dur_buckets[0])
#define NDELAY (sizeof metrics_delay_buckets / sizeof metrics_delay_buckets[0])

struct hist {
	int64_t counts[16]; /* per bucket, not cumulative; last: +Inf */
	int64_t n;
	double sum;
};

/* The outcomes of one check of a job: passed, failed, warned. */
struct mcheck {
	char *name;
	int64_t n[3];
	bool has_values;       /* a reconcile check that compared two values */
	double source, target, diff; /* ... at its newest run */
};

struct mjob {
	char *name;
	int64_t runs[MS_COUNT];
	struct hist dur, delay;
	struct mcheck *checks;
	size_t nchecks;
	int64_t last_success; /* seconds, daemon clock; 0: none since start */
};

struct metrics {
	uv_loop_t *loop;
	struct sched *s;
	struct hooks *h;
	uv_timer_t timer;
	struct mjob *jobs;
	size_t njobs;
	bool failing;    /* the last write failed (logged once) */
	bool report_failing;
	struct olsend *ol;  /* openlineage: (NULL: none) */
	struct olrun *olr;
};

/* The counters of job `name`, created on first use. */
static struct mjob *
metrics_job(struct metrics *m, const char *name)
{
	for (size_t i = 0; i < m->njobs; i++)
		if (strcmp(m->jobs[i].name, name) == 0)
			return &m->jobs[i];
	m->jobs = xreallocarray(m->jobs, m->njobs + 1, sizeof *m->jobs);
	memset(&m->jobs[m->njobs], 0, sizeof *m->jobs);
	m->jobs[m->njobs].name = xstrdup(name);
	return &m->jobs[m->njobs++];
}

/* Count one observation v into histogram h with bucket bounds b[nb]. */
static void
metrics_observe(struct hist *h, const double *b, size_t nb, double v)
{
	size_t i;

	if (v < 0)
		v = 0;
	for (i = 0; i < nb && v > b[i]; i++)
		;
	h->counts[i]++;
	h->n++;
	h->sum += v;
}

void
metrics_run_cb(void *data, const struct sched_run_event *ev)
{
	struct metrics *m = data;
	struct mjob *j = metrics_job(m, ev->job);

	if (ev->state < MS_COUNT)
		j->runs[ev->state]++;
	if (ev->state == MS_SUCCEEDED)
		j->last_success = clock_now();
	if (ev->state == MS_SKIPPED)
		return; /* early cut-off: nothing ran, nothing to time */
	metrics_observe(&j->dur, metrics_dur_buckets, NDUR, ev->duration_s);
	if (ev->has_delay)
		metrics_observe(&j->delay, metrics_delay_buckets, NDELAY,
				ev->delay_s);
	for (size_t i = 0; i < ev->nchecks; i++) {
		const struct exec_check_result *cr = &ev->checks[i];
		size_t c;

		for (c = 0; c < j->nchecks; c++)
			if (strcmp(j->checks[c].name, cr->name) == 0)
				break;
		if (c == j->nchecks) {
			j->checks = xreallocarray(j->checks, c + 1,
						  sizeof *j->checks);
			memset(&j->checks[c], 0, sizeof *j->checks);
			j->checks[c].name = xstrdup(cr->name);
			j->nchecks++;
		}
		j->checks[c].n[cr->passed ? 0 : cr->warn ? 2 : 1]++;
		if (cr->recon && cr->has_source && cr->has_target) {
			j->checks[c].has_values = true;
			j->checks[c].source = cr->source;
			j->checks[c].target = cr->target;
			j->checks[c].diff = cr->diff;
		}
	}
}

/* HELP and TYPE lines of one metric family. */
static void
metrics_head(struct buf *o, const char *name, const char *type,
	     const char *help)
{
	buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metrics_label(struct buf *o, const char *v);

/* The values of the newest comparison of each reconcile check. */
static void
metrics_recon(struct metrics *m, struct buf *o)
{
	static const char *const names[3] = { "backfilld_reconcile_source",
		"backfilld_reconcile_target", "backfilld_reconcile_difference" };
	static const char *const helps[3] = {
		"The source value of the newest partition a reconcile check compared, by job and check.",
		"The target value of the newest partition a reconcile check compared, by job and check.",
		"Target minus source of the newest partition a reconcile check compared, by job and check." };

	for (int f = 0; f < 3; f++) {
		metrics_head(o, names[f], "gauge", helps[f]);
		for (size_t i = 0; i < m->njobs; i++)
			for (size_t c = 0; c < m->jobs[i].nchecks; c++) {
				const struct mcheck *mc = &m->jobs[i].checks[c];

				if (!mc->has_values)
					continue;
				buf_printf(o, "%s{job=\"", names[f]);
				metrics_label(o, m->jobs[i].name);
				buf_addstr(o, "\",check=\"");
				metrics_label(o, mc->name);
				buf_printf(o, "\"} %.17g\n", f == 0 ? mc->source :
					   f == 1 ? mc->target : mc->diff);
			}
	}
}

/* A label value, escaped (backslash, quote, newline). */
static void
metrics_label(struct buf *o, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			buf_printf(o, "\\%c", *v);
		else if (*v == '\n')
			buf_addstr(o, "\\n");
		else
			buf_add(o, v, 1);
	}
}

/* The lines of one job's histogram. */
static void
metrics_hist(struct buf *o, const char *name, const char *job,
	     const struct hist *h, const double *b, size_t nb)
{
	int64_t cum = 0;

	for (size_t i = 0; i <= nb; i++) {
		cum += h->counts[i];
		buf_printf(o, "%s_bucket{job=\"", name);
		metrics_label(o, job);
		if (i < nb)
			buf_printf(o, "\",le=\"%g\"} %" PRId64 "\n", b[i], cum);
		else
			buf_printf(o, "\",le=\"+Inf\"} %" PRId64 "\n", cum);
	}
	buf_printf(o, "%s_sum{job=\"", name);
	metrics_label(o, job);
	buf_printf(o, "\"} %.6f\n%s_count{job=\"", h->sum, name);
	metrics_label(o, job);
	buf_printf(o, "\"} %" PRId64 "\n", h->n);
}

/* A histogram family: its head, then each job's (delay: the schedule
 * delays, else the run durations). */
static void
metrics_hist_family(struct buf *o, const struct metrics *m, const char *name,
		    const char *help, bool delay)
{
	metrics_head(o, name, "histogram", help);
	for (size_t i = 0; i < m->njobs; i++)
		metrics_hist(o, name, m->jobs[i].name,
			     delay ? &m->jobs[i].delay : &m->jobs[i].dur,
			     delay ? metrics_delay_buckets : metrics_dur_buckets,
			     delay ? NDELAY : NDUR);
}

/* The warehouses' throttles: whether each is throttled and the value of
 * its last check (only warehouses with a throttle: have series). */
static void
metrics_throttle(struct metrics *m, struct buf *o)
{
	const struct config *cfg = sched_config(m->s);
	struct throttle *th = sched_throttle(m->s);
	struct throttle_view v;
	bool head = false;

	for (size_t w = 0; th != NULL && w < cfg->nwarehouses; w++) {
		throttle_view(th, cfg->warehouses[w].name, &v);
		if (!v.has)
			continue;
		if (!head) {
			metrics_head(o, "backfilld_warehouse_throttled", "gauge",
				     "1 while no new run starts on the warehouse"
				     " (its throttle value is above max, or the"
				     " check failed), else 0.");
			head = true;
		}
		buf_addstr(o, "backfilld_warehouse_throttled{warehouse=\"");
		metrics_label(o, cfg->warehouses[w].name);
		buf_printf(o, "\"} %d\n", v.throttled ? 1 : 0);
	}
	head = false;
	for (size_t w = 0; th != NULL && w < cfg->nwarehouses; w++) {
		throttle_view(th, cfg->warehouses[w].name, &v);
		if (!v.has || !v.has_value)
			continue;
		if (!head) {
			metrics_head(o, "backfilld_warehouse_throttle_value",
				     "gauge", "The value the warehouse's throttle"
				     " query returned at its last check.");
			head = true;
		}
		buf_addstr(o, "backfilld_warehouse_throttle_value{warehouse=\"");
		metrics_label(o, cfg->warehouses[w].name);
		buf_printf(o, "\"} %.17g\n", v.value);
	}
}

/* The build, and the runs and checks ended since the daemon started. */
static void
metrics_counters(struct metrics *m, struct buf *o)
{
	static const enum mstate run_states[] = { MS_SUCCEEDED, MS_FAILED,
						  MS_CANCELLED, MS_SKIPPED };

	metrics_head(o, "backfilld_build_info", "gauge",
		     "The running backfilld's version (value 1).");
	buf_addstr(o, "backfilld_build_info{version=\"");
	metrics_label(o, BACKFILLD_VERSION);
	buf_addstr(o, "\"} 1\n");

	metrics_head(o, "backfilld_runs_total", "counter",
		     "Runs ended since the daemon started, by job and result.");
	for (size_t i = 0; i < m->njobs; i++)
		for (size_t k = 0; k < sizeof run_states / sizeof *run_states;
		     k++) {
			buf_addstr(o, "backfilld_runs_total{job=\"");
			metrics_label(o, m->jobs[i].name);
			buf_printf(o, "\",state=\"%s\"} %" PRId64 "\n",
				   mstate_name(run_states[k]),
				   m->jobs[i].runs[run_states[k]]);
		}

	metrics_head(o, "backfilld_checks_total", "counter",
		     "Check outcomes since the daemon started (one per partition"
		     " checked), by job, check and result (passed, failed,"
		     " warned: failed with severity: warn).");
	for (size_t i = 0; i < m->njobs; i++)
		for (size_t c = 0; c < m->jobs[i].nchecks; c++)
			for (int r = 0; r < 3; r++) {
				buf_addstr(o, "backfilld_checks_total{job=\"");
				metrics_label(o, m->jobs[i].name);
				buf_addstr(o, "\",check=\"");
				metrics_label(o, m->jobs[i].checks[c].name);
				buf_printf(o, "\",result=\"%s\"} %" PRId64 "\n",
					   severity_result(r == 0, r == 2),
					   m->jobs[i].checks[c].n[r]);
			}
}

/* Each configured job's partitions by state now. */
static void
metrics_partitions(struct metrics *m, struct buf *o,
		   const struct sched_job_view *views)
{
	const struct config *cfg = sched_config(m->s);
	static const char *const pstates[] = { "queued", "running", "blocked",
					       "failed", "late", "stale" };

	metrics_head(o, "backfilld_state_store_writable", "gauge",
		     "1 while the state store takes the daemon's commits; 0"
		     " after one failed (no run starts: status says why).");
	buf_printf(o, "backfilld_state_store_writable %d\n",
		   sched_store_failed(m->s, NULL, NULL) ? 0 : 1);

	metrics_head(o, "backfilld_partitions", "gauge",
		     "Partitions of each job by state now (failed: by their newest run; late: past the job's deadline; stale: downstream partitions older than their inputs).");
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct sched_job_view *v = &views[i];
		int64_t stale = sched_stale_count(m->s, (int)i), vals[6];
		vals[0] = v->queued;
		vals[1] = v->running;
		vals[2] = v->blocked;
		vals[3] = v->failed;
		vals[4] = v->late;
		vals[5] = stale;
		for (size_t k = 0; k < 6; k++) {
			buf_addstr(o, "backfilld_partitions{job=\"");
			metrics_label(o, cfg->jobs[i].name);
			buf_printf(o, "\",state=\"%s\"} %" PRId64 "\n",
				   pstates[k], vals[k]);
		}
	}
}

/* Each job's newest success since the daemon started, and its deadline
 * and partition length (the rule BackfilldNoSuccess adds the two). */
static void
metrics_success(struct metrics *m, struct buf *o)
{
	const struct config *cfg = sched_config(m->s);
	int64_t now = clock_now();

	metrics_head(o, "backfilld_last_success_timestamp_seconds", "gauge",
		     "When a run of the job last succeeded since the daemon"
		     " started, Unix time (no series before the first).");
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct mjob *mj = metrics_job(m, cfg->jobs[i].name);

		if (mj->last_success == 0)
			continue;
		buf_addstr(o, "backfilld_last_success_timestamp_seconds{job=\"");
		metrics_label(o, cfg->jobs[i].name);
		buf_printf(o, "\"} %" PRId64 "\n", mj->last_success);
	}

	metrics_head(o, "backfilld_deadline_seconds", "gauge",
		     "The job's deadline (jobs with one), seconds.");
	for (size_t i = 0; i < cfg->njobs; i++) {
		if (cfg->jobs[i].deadline <= 0)
			continue;
		buf_addstr(o, "backfilld_deadline_seconds{job=\"");
		metrics_label(o, cfg->jobs[i].name);
		buf_printf(o, "\"} %" PRId64 "\n", cfg->jobs[i].deadline);
	}

	metrics_head(o, "backfilld_partition_seconds", "gauge",
		     "The length of the job's partition holding now (jobs with"
		     " a deadline), seconds.");
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct cal *c = job_cal(&cfg->jobs[i]);
		part_t p = cal_part_of(c, now);

		if (cfg->jobs[i].deadline <= 0)
			continue;
		buf_addstr(o, "backfilld_partition_seconds{job=\"");
		metrics_label(o, cfg->jobs[i].name);
		buf_printf(o, "\"} %" PRId64 "\n",
			   cal_end(c, p) - cal_start(c, p));
	}
}

/* Each configured job's watermark, catchup and budget stops. */
static void
metrics_job_gauges(struct metrics *m, struct buf *o,
		   const struct sched_job_view *views)
{
	const struct config *cfg = sched_config(m->s);

	metrics_head(o, "backfilld_watermark_timestamp_seconds", "gauge",
		     "Start of the newest partition the schedule materialised, Unix time.");
	for (size_t i = 0; i < cfg->njobs; i++) {
		if (!views[i].has_watermark)
			continue;
		buf_addstr(o, "backfilld_watermark_timestamp_seconds{job=\"");
		metrics_label(o, cfg->jobs[i].name);
		buf_printf(o, "\"} %" PRId64 "\n",
			   cal_start(job_cal(&cfg->jobs[i]),
				     views[i].watermark));
	}

	metrics_head(o, "backfilld_catchup_refused", "gauge",
		     "1 while a job's catchup is refused (a gap above max_catchup), else 0.");
	for (size_t i = 0; i < cfg->njobs; i++) {
		buf_addstr(o, "backfilld_catchup_refused{job=\"");
		metrics_label(o, cfg->jobs[i].name);
		buf_printf(o, "\"} %d\n",
			   strcmp(views[i].catchup, "refused") == 0);
	}

	metrics_head(o, "backfilld_budget_stops_total", "counter",
		     "Backfill requests stopped since the daemon started, their"
		     " measured warehouse time past 1.5 times their budget"
		     " (max_backfill_time, --budget), by job.");
	for (size_t i = 0; i < cfg->njobs; i++) {
		buf_addstr(o, "backfilld_budget_stops_total{job=\"");
		metrics_label(o, cfg->jobs[i].name);
		buf_printf(o, "\"} %" PRId64 "\n", views[i].budget_stops);
	}
}

/* The hooks ended and dropped since the daemon started. */
static void
metrics_hooks(struct metrics *m, struct buf *o)
{
	metrics_head(o, "backfilld_hooks_total", "counter",
		     "Hooks ended since the daemon started, by hook and result.");
	for (int k = 0; k < HOOK_COUNT; k++)
		for (int r = 0; r < HOOK_RESULT_COUNT; r++)
			buf_printf(o, "backfilld_hooks_total{hook=\"%s\",result="
				   "\"%s\"} %" PRId64 "\n",
				   hook_kind_name((enum hook_kind)k),
				   hook_result_name((enum hook_result)r),
				   hooks_count(m->h, (enum hook_kind)k,
					       (enum hook_result)r));
	metrics_head(o, "backfilld_hooks_dropped_total", "counter",
		     "Hooks not run since the daemon started: fired while"
		     " hook_queue hooks waited already.");
	buf_printf(o, "backfilld_hooks_dropped_total %" PRId64 "\n",
		   hooks_dropped(m->h));
}

/* The lineage events' fates, when openlineage: is configured. */
static void
metrics_lineage(struct metrics *m, struct buf *o)
{
	if (m->ol == NULL)
		return;
	metrics_head(o, "backfilld_lineage_events_total", "counter",
		     "OpenLineage run events since the daemon started, by"
		     " result (sent; dropped: the queue full or the daemon"
		     " stopping; failed: refused or undeliverable after its"
		     " retries).");
	for (int c = 0; c < OLSEND_NCOUNTS; c++)
		buf_printf(o, "backfilld_lineage_events_total{result=\"%s\"} %"
			   PRId64 "\n", olsend_count_name((enum olsend_count)c),
			   olsend_count(m->ol, (enum olsend_count)c));
}

int
metrics_lineage_open(struct metrics *m, struct err *err)
{
	if (olsend_open(sched_config(m->s), &m->ol, err) < 0)
		return -1;
	if (m->ol != NULL)
		m->olr = olrun_new(m->s, m->ol);
	return 0;
}

void
metrics_render(struct metrics *m, struct buf *o)
{
	const struct config *cfg = sched_config(m->s);
	struct sched_job_view *views;

	/* every configured job has its series, even before its first run */
	for (size_t i = 0; i < cfg->njobs; i++)
		metrics_job(m, cfg->jobs[i].name);
	views = xcalloc(cfg->njobs + 1, sizeof *views);
	for (size_t i = 0; i < cfg->njobs; i++)
		sched_job_view(m->s, (int)i, &views[i]);
	metrics_counters(m, o);
	metrics_recon(m, o);
	metrics_hist_family(o, m, "backfilld_run_duration_seconds",
			    "Wall time of runs, by job.", false);
	metrics_hist_family(o, m, "backfilld_schedule_delay_seconds",
			    "From a scheduled partition's due time to its run's start, by job.",
			    true);
	metrics_partitions(m, o, views);
	metrics_job_gauges(m, o, views);
	metrics_success(m, o);
	metrics_hooks(m, o);
	metrics_throttle(m, o);
	metrics_lineage(m, o);
	free(views);
}

int
metrics_write(struct metrics *m, struct err *err)
{
	const char *path = sched_config(m->s)->metrics_file;
	struct buf o;

	if (path == NULL)
		return 0;
	buf_init(&o);
	metrics_render(m, &o);
	return atomicfile_put(path, &o, "metrics file", "metrics_file", err);
}

/* The timer: write, log a failure once until a write works again; the
 * report page (report_file) goes on the same beat. */
static void
metrics_timer_cb(uv_timer_t *t)
{
	struct metrics *m = t->data;
	const char *report = sched_config(m->s)->report_file;
	struct err err;

	if (report != NULL && report_write(m->s, report, &err) < 0) {
		if (!m->report_failing)
			log_warn("%s", err.msg);
		m->report_failing = true;
	} else if (report != NULL && m->report_failing) {
		log_notice("report file written again");
		m->report_failing = false;
	}

	if (metrics_write(m, &err) < 0) {
		if (!m->failing)
			log_warn("%s", err.msg);
		m->failing = true;
	} else if (m->failing) {
		log_notice("metrics file written again");
		m->failing = false;
	}
}

struct metrics *
metrics_new(uv_loop_t *loop, struct sched *s, struct hooks *h)
{
	struct metrics *m = xcalloc(1, sizeof *m);

	m->loop = loop;
	m->s = s;
	m->h = h;
	uv_timer_init(loop, &m->timer);
	m->timer.data = m;
	uv_timer_start(&m->timer, metrics_timer_cb, 0, METRICS_EVERY_MS);
	uv_unref((uv_handle_t *)&m->timer);
	return m;
}

/* The timer is closed: free. */
static void
metrics_closed_cb(uv_handle_t *hd)
{
	struct metrics *m = hd->data;

	for (size_t i = 0; i < m->njobs; i++) {
		free(m->jobs[i].name);
		for (size_t c = 0; c < m->jobs[i].nchecks; c++)
			free(m->jobs[i].checks[c].name);
		free(m->jobs[i].checks);
	}
	free(m->jobs);
	free(m);
}

void
metrics_close(struct metrics *m)
{
	if (m == NULL)
		return;
	if (m->ol != NULL) { /* OL-5: what waits is sent first, counted */
		sched_on_run_fact(m->s, NULL, NULL);
		olsend_close(m->ol);
		olrun_free(m->olr);
		m->ol = NULL;
		m->olr = NULL;
	}
	metrics_timer_cb(&m->timer);
	uv_timer_stop(&m->timer);
	uv_close((uv_handle_t *)&m->timer, metrics_closed_cb);
}
