/*
 * report.c - the report page (see report.h).  Reads what status and map
 * read (the scheduler's memory, partition_latest by key range) plus the
 * newest failed runs through the runs cursor, a bounded number of pages.
 */
#include "report.h"

#include "atomicfile.h"
#include "throttle.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "http.h"
#include "map.h"
#include "map_view.h"
#include "schedule.h"
#include "severity.h"
#include "text.h"
#include "xalloc.h"

static const char report_css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
	"h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.5em}"
	"table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;"
	"border-bottom:1px solid #ddd}th{background:#f3f3f3}"
	".map{display:grid;gap:2px;margin:.3em 0 1em}"
	".g-day{grid-template-columns:max-content repeat(7,14px)}"
	".lbl,.wd{font-size:10px;line-height:14px;color:#57606a}"
	".lbl{padding-right:6px}.wd{text-align:center}"
	".month{grid-column:1/-1;font-size:11px;font-weight:600;"
	"margin-top:4px}"
	".g-hour{grid-template-columns:max-content repeat(25,14px)}"
	".g-hour .lbl{grid-column:1}"
	".rep{box-shadow:inset 0 3px #222}"
	".g-week{grid-template-columns:repeat(53,14px)}"
	".g-month{grid-template-columns:repeat(12,14px)}"
	".c{width:14px;height:14px;display:block;border-radius:2px}"
	".pad{visibility:hidden}"
	".s-succeeded{background:#2da44e}.s-marked{background:#2da44e;"
	"outline:1px dashed #222;outline-offset:-2px}"
	".s-failed{background:#cf222e}"
	".s-running{background:#1f9bd1}.s-queued{background:#0969da}"
	".s-blocked{background:#8250df}.s-stale{background:#d4a72c}"
	".s-late{background:#ff6a00}.s-never_run{background:#d0d7de}"
	".s-refused{background:#6e2c2c}.s-not_due{background:#f6f8fa;"
	"border:1px solid #d0d7de;box-sizing:border-box}"
	".bar{display:inline-block;width:120px;height:10px;background:#d0d7de}"
	".bar span{display:block;height:10px;background:#2da44e}"
	".legend span.c{display:inline-block;vertical-align:middle;"
	"margin:0 4px 0 12px}";

/* Outside text for HTML: control bytes by the one rule (text.h), then
 * HTML's own escapes; at most REPORT_TEXT_MAX bytes of it (then "..."),
 * so that no row is unbounded. */
static void
report_esc(struct buf *o, const char *text)
{
	struct buf t;
	const char *s;
	size_t n = strlen(text);

	buf_init(&t);
	if (n > REPORT_TEXT_MAX) {
		n = REPORT_TEXT_MAX;
		/* not inside a UTF-8 sequence */
		while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
	}
	text_escape_add(&t, text, n);
	if (n < strlen(text))
		buf_addstr(&t, "...");
	for (size_t i = 0; i < t.len; i++) {
		s = t.data + i;
		switch (*s) {
		case '&': buf_addstr(o, "&amp;"); break;
		case '<': buf_addstr(o, "&lt;"); break;
		case '>': buf_addstr(o, "&gt;"); break;
		case '"': buf_addstr(o, "&quot;"); break;
		case '\'': buf_addstr(o, "&#39;"); break;
		default: buf_add(o, s, 1);
		}
	}
	buf_free(&t);
}

/* The newest partition due of job j (its end at most). */
static part_t
report_due(const struct job_def *j)
{
	part_t due = schedule_last_closed(j, true, clock_now());

	if (j->has_end && due > j->end)
		due = j->end;
	return due;
}

/* How many of the newest partitions a map shows on the pages of jobs:
 * a week of hours, 13 weeks of days, a year of weeks, 3 years of months,
 * 5 years of quarters, 10 years. */
static int64_t
report_window(enum grain g)
{
	switch (g) {
	case GRAIN_HOUR: return 7 * 24;
	case GRAIN_DAY: return 13 * 7;
	case GRAIN_WEEK: return 53;
	case GRAIN_MONTH: return 36;
	case GRAIN_QUARTER: return 20;
	case GRAIN_YEAR: return 10;
	case GRAIN_NONE: return 1;
	}
	return 36;
}

/* A link to another view of the page, query q (already safe in HTML:
 * job names and keys are [A-Za-z0-9_.:T-]), or its text alone in a file. */
static void
report_link(struct buf *o, const struct report_query *q, const char *href,
	    const char *text)
{
	if (q->links)
		buf_printf(o, "<a href=\"?%s\">%s</a>", href, text);
	else
		buf_printf(o, "%s", text);
}

/* A link to job j's map from (or to) key k: the key percent-encoded
 * (a zoned hour's '+' as %2B, http_query_put). */
static void
report_key_link(struct buf *o, const struct report_query *q,
		const struct job_def *j, const char *param, const char *k,
		const char *text)
{
	struct buf href;

	buf_init(&href);
	buf_printf(&href, "job=%s&amp;%s=", j->name, param);
	http_query_put(&href, k);
	report_link(o, q, href.data, text);
	buf_free(&href);
}

/* The cells of map m of job j and its legend (map_html). */
static void
report_map_grid(const struct job_def *j, const struct map *m, struct buf *o)
{
	struct buf job;

	buf_init(&job);
	report_esc(&job, j->name);
	map_html(m, job.data != NULL ? job.data : "", o);
	buf_free(&job);
}

/* One job's map as a grid of cells (map_html: leading pads align days to
 * weekdays; hours a row per local day of 23, 24 or 25); the day grid has a row of weekdays, the
 * date of each week's Monday and the months.  On the pages of jobs
 * (q->job empty): the newest report_window() partitions due, from the
 * job's start at the earliest; on a job's page: q->from..q->to, or the
 * newest REPORT_MAP_MAX of the job's default map range (or up to q->to),
 * at most REPORT_MAP_MAX partitions, with links to the older and newer
 * ones. */
static void
report_map(struct sched *s, int job, const struct report_query *q,
	   struct buf *o)
{
	const struct job_def *j = &sched_config(s)->jobs[job];
	struct map m;
	struct err err;
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX], href[3 * CAL_KEY_MAX + 80];
	const char *from = NULL, *to = NULL;
	part_t due = report_due(j);
	int rc;

	buf_addstr(o, "<section><h3>");
	report_esc(o, j->name);
	buf_addstr(o, " <small>(");
	map_html_calendar(job_cal(j), o);
	if (q->job[0] == '\0' && q->links) {
		buf_printf(o, ", ");
		snprintf(href, sizeof href, "job=%s", j->name);
		report_link(o, q, href, "the whole map");
	}
	buf_addstr(o, ")</small></h3>\n");
	if (j->grain == GRAIN_NONE) {
		/* a whole table: its one cell, -, and no range to page */
	} else if (q->job[0] == '\0') {
		part_t first = due - report_window(j->grain) + 1;

		if (j->has_start && j->start > first)
			first = j->start;
		cal_key(job_cal(j), first, a);
		from = a;
	} else {
		struct part_range r;

		from = q->from[0] ? q->from : NULL;
		to = q->to[0] ? q->to : NULL;
		/* from (to) a range above the bound: its first partitions
		 * (without to, the range ends at the newest due) */
		if (from != NULL &&
		    cal_range_parse(job_cal(j), from, to != NULL ? to : from,
				    &r, &err) == 0 &&
		    (to != NULL ? r.last : due > r.first ? due : r.first) -
		    r.first + 1 > REPORT_MAP_MAX) {
			cal_key(job_cal(j), r.first + REPORT_MAP_MAX - 1, b);
			to = b;
		}
	}
	rc = map_view_build_newest(s, job, from, to, REPORT_MAP_MAX, &m, &err);
	if (rc < 0) {
		buf_addstr(o, "<p>no map: ");
		report_esc(o, err.msg);
		buf_addstr(o, "</p></section>\n");
		return;
	}
	cal_key(job_cal(j), m.from, a);
	cal_key(job_cal(j), m.to, b);
	buf_printf(o, "<p>%s .. %s: %zu partitions", a, b, m.n);
	if (q->job[0] != '\0' && j->grain != GRAIN_NONE) {
		char k[CAL_KEY_MAX];

		buf_printf(o, " (at most %d on a page)", REPORT_MAP_MAX);
		if (!j->has_start || m.from > j->start) {
			cal_key(job_cal(j), m.from - 1, k);
			buf_addstr(o, "; ");
			report_key_link(o, q, j, "to", k, "older");
		}
		if (m.to < due) {
			cal_key(job_cal(j), m.to + 1, k);
			buf_addstr(o, "; ");
			report_key_link(o, q, j, "from", k, "newer");
		}
	}
	buf_addstr(o, "</p>\n");
	report_map_grid(j, &m, o);
	buf_addstr(o, "</p></section>\n");
	map_free(&m);
}

/* What the tables' callbacks share: the page, the job of a job's page
 * (-1: every job), and the rows of the table so far (and those left
 * out beyond REPORT_ROWS). */
struct report_ctx {
	struct buf *o;
	struct sched *s;
	int job;
	const struct job_def *j;   /* late partitions: the job walked */
	int64_t rows, more;
};

/* Whether a table has room for one more row; counts it either way. */
static bool
report_row(struct report_ctx *c)
{
	if (c->rows >= REPORT_ROWS) {
		c->more++;
		return false;
	}
	c->rows++;
	return true;
}

/* The end of a table, and how many rows it left out. */
static void
report_table_end(struct report_ctx *c, const char *where)
{
	buf_addstr(c->o, "</table>\n");
	if (c->more > 0)
		buf_printf(c->o, "<p>and %" PRId64 " more, not shown (%s)</p>\n",
			   c->more, where);
	c->rows = c->more = 0;
}

/* One request in memory, with its progress. */
static void
report_request_cb(int64_t id, const char *job, const char *kind,
		  int64_t created_at, void *data)
{
	struct report_ctx *c = data;
	struct buf *o = c->o;
	struct sched *s = c->s;
	struct sched_progress p;
	struct err err;
	char at[CAL_KEY_MAX];
	int64_t done;

	if (c->job >= 0 &&
	    strcmp(job, sched_config(s)->jobs[c->job].name) != 0)
		return;
	if (!report_row(c) || sched_progress(s, id, &p, &err) < 0)
		return;
	done = p.succeeded + p.failed + p.blocked + p.cancelled + p.skipped;
	cal_format_iso_ms(created_at, at);
	buf_printf(o, "<tr><td>%" PRId64 "</td><td>", id);
	report_esc(o, job);
	buf_addstr(o, "</td><td>");
	report_esc(o, kind);
	buf_printf(o, "</td><td>%s</td><td><span class=\"bar\"><span style="
		   "\"width:%d%%\"></span></span> %" PRId64 "/%" PRId64
		   "</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%" PRId64
		   "</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%" PRId64
		   "</td><td>", at,
		   p.total ? (int)(100 * done / p.total) : 100, done, p.total,
		   p.succeeded, p.skipped, p.failed, p.blocked, p.running,
		   p.queued);
	/* what is left at the pace so far, as backfill --wait shows it */
	if (done > 0 && done < p.total) {
		int64_t left = p.elapsed_ms * (p.total - done) / done / 1000;

		buf_printf(o, "%" PRId64 ":%02" PRId64 ":%02" PRId64, left / 3600,
			   left / 60 % 60, left % 60);
	} else {
		buf_addstr(o, "-");
	}
	buf_addstr(o, "</td></tr>\n");
}

struct recent {
	int64_t id, created_at, finished_at;
	char job[128], kind[16], reason[256];
	bool finished, cancelled;
};

struct recent_ctx {
	struct recent rows[REPORT_RECENT];
	int n;
};

/* One of the newest requests, copied (counted after the read). */
static void
report_recent_cb(int64_t id, const char *job, const char *kind,
		 const char *reason, int64_t created_at, bool finished,
		 int64_t finished_at, bool cancelled, void *data)
{
	struct recent_ctx *c = data;
	struct recent *r;

	if (c->n >= REPORT_RECENT)
		return;
	r = &c->rows[c->n++];
	r->id = id;
	r->created_at = created_at;
	r->finished = finished;
	r->finished_at = finished_at;
	r->cancelled = cancelled;
	snprintf(r->job, sizeof r->job, "%s", job);
	snprintf(r->kind, sizeof r->kind, "%s", kind);
	snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
}

/* The audit of the newest requests: what each asked, when, and how its
 * partitions ended (backfillctl audit --request N has the details). */
static void
report_recent(struct sched *s, struct buf *o)
{
	struct recent_ctx *c = xcalloc(1, sizeof *c);
	struct err err;

	buf_printf(o, "<h2>Audit of recent requests</h2>\n<p>The newest %d"
		   " requests; <code>backfillctl audit --request N</code> gives"
		   " each partition's rows, metrics and checks.</p>\n<table><tr>"
		   "<th>request</th><th>job</th><th>kind</th><th>reason</th><th>"
		   "created</th><th>finished</th><th>succeeded</th><th>skipped"
		   "</th><th>failed</th><th>blocked</th><th>cancelled</th><th>"
		   "open</th></tr>\n",
		   REPORT_RECENT);
	if (store_recent_requests(sched_store(s), REPORT_RECENT,
				  report_recent_cb, c, &err) < 0) {
		buf_addstr(o, "</table>\n<p>");
		report_esc(o, err.msg);
		buf_addstr(o, "</p>\n");
		free(c);
		return;
	}
	for (int i = 0; i < c->n; i++) {
		const struct recent *r = &c->rows[i];
		int64_t counts[MS_COUNT] = { 0 }, ms = 0;
		char at[CAL_KEY_MAX], fin[CAL_KEY_MAX];

		if (store_request_counts(sched_store(s), r->id, counts, &ms,
					 &err) < 0)
			continue;
		cal_format_iso_ms(r->created_at, at);
		cal_format_iso_ms(r->finished_at, fin);
		buf_printf(o, "<tr><td>%" PRId64 "</td><td>", r->id);
		report_esc(o, r->job);
		buf_addstr(o, "</td><td>");
		report_esc(o, r->kind);
		buf_addstr(o, "</td><td>");
		report_esc(o, r->reason);
		buf_printf(o, "</td><td>%s</td><td>%s%s</td><td>%" PRId64
			   "</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%"
			   PRId64 "</td><td>%" PRId64 "</td><td>%" PRId64
			   "</td></tr>\n", at,
			   r->finished ? fin : "", r->cancelled ? " (cancelled)" : "",
			   counts[MS_SUCCEEDED], counts[MS_SKIPPED],
			   counts[MS_FAILED],
			   counts[MS_BLOCKED], counts[MS_CANCELLED],
			   counts[MS_QUEUED] + counts[MS_RUNNING]);
	}
	buf_addstr(o, "</table>\n");
	free(c);
}

struct fail_ctx {
	struct buf *o;
	int n;
};

/* One failed run. */
static int
report_fail_cb(const struct store_run_row *r, void *data, struct err *err)
{
	struct fail_ctx *c = data;
	char at[CAL_KEY_MAX];

	(void)err;
	if (!r->has_id)
		return 0;
	cal_format_iso_ms(r->has_finished_at ? r->finished_at : 0, at);
	buf_addstr(c->o, "<tr><td>");
	report_esc(c->o, r->job);
	buf_addstr(c->o, "</td><td>");
	report_esc(c->o, r->key);
	buf_printf(c->o, "</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%s"
		   "</td><td>", r->request_id, r->id,
		   r->has_finished_at ? at : "");
	report_esc(c->o, r->error);
	buf_addstr(c->o, "</td></tr>\n");
	return ++c->n >= REPORT_FAILURES ? 1 : 0;
}

/* One run that succeeded with warnings (other succeeded runs skipped). */
static int
report_warn_cb(const struct store_run_row *r, void *data, struct err *err)
{
	if (!r->has_id || !severity_is_note(r->error))
		return 0;
	return report_fail_cb(r, data, err);
}

/* A stale partition. */
static int
report_stale_cb(int job, part_t part, bool built, int64_t built_at,
		const struct stale_input *in, size_t nin, void *data,
		struct err *err)
{
	struct report_ctx *c = data;
	struct buf *o = c->o;
	const struct config *cfg = sched_config(c->s);
	char key[CAL_KEY_MAX], at[CAL_KEY_MAX];

	(void)err;
	if (!report_row(c))
		return 0;
	cal_key(job_cal(&cfg->jobs[job]), part, key);
	cal_format_iso_ms(built_at, at);
	buf_addstr(o, "<tr><td>");
	report_esc(o, cfg->jobs[job].name);
	buf_printf(o, "</td><td>%s</td><td>%s</td><td>", key, built ? at : "never");
	for (size_t i = 0; i < nin && i < REPORT_INPUTS; i++) {
		cal_key(job_cal(&cfg->jobs[in[i].job]), in[i].part, key);
		buf_addstr(o, i ? ", " : "");
		report_esc(o, cfg->jobs[in[i].job].name);
		buf_printf(o, " %s", key);
	}
	if (nin > REPORT_INPUTS)
		buf_printf(o, " and %zu more", nin - REPORT_INPUTS);
	buf_addstr(o, "</td></tr>\n");
	return 0;
}

/* A late partition. */
static void
report_late_cb(part_t p, enum mstate st, void *data)
{
	struct report_ctx *c = data;
	struct buf *o = c->o;
	const struct job_def *j = c->j;
	char key[CAL_KEY_MAX];

	if (st != MS_LATE || !report_row(c))
		return;
	cal_key(job_cal(j), p, key);
	buf_addstr(o, "<tr><td>");
	report_esc(o, j->name);
	buf_printf(o, "</td><td>%s</td><td>%" PRId64 "s</td></tr>\n", key,
		   j->deadline);
}

/* A job's row of the jobs table: the columns of `status`, and late. */
static void
report_job_row(struct sched *s, int job, const struct report_query *q,
	       struct buf *o)
{
	const struct job_def *j = &sched_config(s)->jobs[job];
	char wm[CAL_KEY_MAX], nd[CAL_KEY_MAX], gf[CAL_KEY_MAX],
	     gt[CAL_KEY_MAX];
	struct sched_job_view v;
	int64_t stale = sched_stale_count(s, job);

	sched_job_view(s, job, &v);
	if (v.has_watermark)
		cal_key(job_cal(j), v.watermark, wm);
	else
		strcpy(wm, "-");
	if (v.has_next_due)
		cal_format_iso_ms(v.next_due * 1000, nd);
	else
		strcpy(nd, "-");
	buf_addstr(o, "<tr><td>");
	if (q->links && q->job[0] == '\0') {
		char href[80];

		snprintf(href, sizeof href, "job=%s", j->name);
		report_link(o, q, href, j->name);
	} else {
		report_esc(o, j->name);
	}
	buf_printf(o, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>",
		   grain_name(j->grain), v.paused ? "yes" : "no", wm, nd);
	if (v.has_gap) {
		cal_key(job_cal(j), v.gap_from, gf);
		cal_key(job_cal(j), v.gap_to, gt);
		buf_printf(o, "refused (gap %s..%s)", gf, gt);
	} else {
		report_esc(o, v.catchup);
	}
	buf_printf(o, "</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%"
		   PRId64 "</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%"
		   PRId64 "</td><td>%" PRId64 "</td></tr>\n", v.queued,
		   v.running, v.succeeded, v.failed, v.blocked, stale, v.late);
}

/* The warehouses and their throttles: throttled (with the value, the
 * bound and since when), or not. */
static void
report_warehouses(struct sched *s, struct buf *o)
{
	const struct config *cfg = sched_config(s);
	struct throttle *th = sched_throttle(s);
	struct throttle_view v;
	char since[CAL_KEY_MAX], nv[32], nm[32];

	buf_addstr(o, "<h2>Warehouses</h2>\n<table><tr><th>warehouse</th><th>"
		   "throttle</th></tr>\n");
	for (size_t w = 0; w < cfg->nwarehouses && w < REPORT_ROWS; w++) {
		memset(&v, 0, sizeof v);
		if (th != NULL)
			throttle_view(th, cfg->warehouses[w].name, &v);
		buf_addstr(o, "<tr><td>");
		report_esc(o, cfg->warehouses[w].name);
		buf_printf(o, "</td><td data-warehouse-throttle=\"%s\">",
			   !v.has ? "none" : v.throttled ? "throttled" : "ok");
		if (v.has && v.throttled) {
			cal_format_iso_ms(v.since_ms, since);
			buf_printf(o, "throttled since %s: ", since);
			if (v.error[0])
				report_esc(o, v.error);
			else
				buf_printf(o, "value %s above max %s",
					   text_double(v.value, nv, sizeof nv),
					   text_double(v.max, nm, sizeof nm));
		} else if (v.has) {
			buf_addstr(o, "ok");
		} else {
			buf_addstr(o, "-");
		}
		buf_addstr(o, "</td></tr>\n");
	}
	buf_addstr(o, "</table>\n");
	if (cfg->nwarehouses > REPORT_ROWS)
		buf_printf(o, "<p>and %zu more, not shown (backfillctl status)"
			   "</p>\n", cfg->nwarehouses - REPORT_ROWS);
}

/* The newest REPORT_FAILURES failed runs (of job, when not NULL). */
static void
report_failures(struct sched *s, const char *job, struct buf *o)
{
	struct store_runs_cursor *cur;
	struct fail_ctx fc = { o, 0 };
	struct err err;

	buf_printf(o, "<h2>Failures</h2>\n<p>The newest %d failed runs.</p>\n"
		   "<table><tr><th>job</th><th>partition</th><th>request</th>"
		   "<th>run</th><th>finished</th><th>error</th></tr>\n",
		   REPORT_FAILURES);
	if (store_runs_open(sched_store(s), job, 0, "failed", &cur, &err) == 0) {
		for (int page = 0; page < 200 && fc.n < REPORT_FAILURES; page++)
			if (store_runs_page(cur, REPORT_FAILURES - fc.n,
					    report_fail_cb, &fc, &err) != 0)
				break;
		store_runs_close(cur);
	}
	buf_addstr(o, "</table>\n");
}

/* The newest REPORT_FAILURES runs that succeeded with warnings (of job,
 * when not NULL). */
static void
report_warnings(struct sched *s, const char *job, struct buf *o)
{
	struct store_runs_cursor *cur;
	struct fail_ctx wc;
	struct err err;

	buf_printf(o, "<h2>Warnings</h2>\n<p>The newest %d runs that"
		   " succeeded with warnings (checks of severity: warn that"
		   " failed).</p>\n<table><tr><th>job</th><th>partition</th>"
		   "<th>request</th><th>run</th><th>finished</th><th>warning"
		   "</th></tr>\n", REPORT_FAILURES);
	wc.o = o;
	wc.n = 0;
	if (store_runs_open(sched_store(s), job, 0, "succeeded", &cur,
			    &err) == 0) {
		/* the newest 4000 succeeded runs at most: those without
		 * warnings are skipped */
		for (int page = 0; page < 4 && wc.n < REPORT_FAILURES; page++)
			if (store_runs_page(cur, 1000, report_warn_cb,
					    &wc, &err) != 0)
				break;
		store_runs_close(cur);
	}
	buf_addstr(o, "</table>\n");
}

void
report_query_init(struct report_query *q)
{
	memset(q, 0, sizeof *q);
	q->page = 1;
}

int
report_query_parse(const struct config *cfg, const char *query,
		   struct report_query *q, struct err *err)
{
	static const char *const names[] = { "job", "from", "to", "page" };
	char page[24] = "";
	size_t known = 0;
	const char *p;
	int has_page;

	report_query_init(q);
	q->links = true;
	if (http_query_get(query, "job", q->job, sizeof q->job) < 0 ||
	    http_query_get(query, "from", q->from, sizeof q->from) < 0 ||
	    http_query_get(query, "to", q->to, sizeof q->to) < 0 ||
	    (has_page = http_query_get(query, "page", page, sizeof page)) < 0)
		return err_set(err, EXIT_BAD_INPUT, "a parameter of the query"
			       " is too long or badly escaped: the report takes"
			       " job=NAME, from=KEY, to=KEY and page=N");
	/* every parameter is one of those */
	for (p = query; *p != '\0'; p = *p == '&' ? p + 1 : p) {
		size_t n = strcspn(p, "=&");

		for (known = 0; known < 4; known++)
			if (n > 0 && strlen(names[known]) == n &&
			    strncmp(p, names[known], n) == 0)
				break;
		if (n > 0 && known == 4)
			return err_set(err, EXIT_BAD_INPUT, "the report takes"
				       " job=NAME, from=KEY, to=KEY and page=N:"
				       " not %.*s", (int)(n > 32 ? 32 : n), p);
		p += strcspn(p, "&");
	}
	if (q->job[0] != '\0' && config_job_index(cfg, q->job) < 0)
		return err_set(err, EXIT_BAD_INPUT, "no job %s in the"
			       " configuration: see /report for the jobs",
			       q->job);
	if ((q->from[0] != '\0' || q->to[0] != '\0') && q->job[0] == '\0')
		return err_set(err, EXIT_BAD_INPUT, "from and to are the range"
			       " of a job's map: add job=NAME");
	if (q->job[0] != '\0') {
		const struct cal *c =
		    job_cal(&cfg->jobs[config_job_index(cfg, q->job)]);
		struct part_range r;

		if ((q->from[0] != '\0' &&
		     cal_range_parse(c, q->from, q->from, &r, err) < 0) ||
		    (q->to[0] != '\0' &&
		     cal_range_parse(c, q->to, q->to, &r, err) < 0) ||
		    (q->from[0] != '\0' && q->to[0] != '\0' &&
		     cal_range_parse(c, q->from, q->to, &r, err) < 0))
			return -1;
	}
	if (has_page == 1) {
		char *end;
		long long v = strtoll(page, &end, 10);

		if (*end != '\0' || end == page || v < 1 || v > 1000000 ||
		    page[0] == '+' || page[0] == '-')
			return err_set(err, EXIT_BAD_INPUT, "page must be a"
				       " number from 1: not %s", page);
		q->page = v;
	}
	return 0;
}

/* The links to the other pages of jobs, at most four. */
static void
report_pages(struct buf *o, const struct report_query *q, int64_t pages)
{
	char href[40];

	if (pages <= 1)
		return;
	buf_printf(o, "<p>page %" PRId64 " of %" PRId64 " (%d jobs a page",
		   q->page, pages, REPORT_PAGE_JOBS);
	if (!q->links) {
		buf_addstr(o, "; the others on /report?page=N of http_listen)"
			   "</p>\n");
		return;
	}
	buf_addstr(o, "):");
	if (q->page > 1) {
		buf_addstr(o, " ");
		report_link(o, q, "page=1", "first");
		snprintf(href, sizeof href, "page=%" PRId64, q->page - 1);
		buf_addstr(o, " ");
		report_link(o, q, href, "previous");
	}
	if (q->page < pages) {
		snprintf(href, sizeof href, "page=%" PRId64, q->page + 1);
		buf_addstr(o, " ");
		report_link(o, q, href, "next");
		snprintf(href, sizeof href, "page=%" PRId64, pages);
		buf_addstr(o, " ");
		report_link(o, q, href, "last");
	}
	buf_addstr(o, "</p>\n");
}

/* The page's head: its style, the daemon's figures, and the links to
 * the other pages (only: the one job shown, or NULL). */
static void
report_head(struct sched *s, const struct report_query *q, const char *only,
	    int64_t pages, struct buf *o)
{
	const struct config *cfg = sched_config(s);
	char now[CAL_KEY_MAX];

	cal_format_iso_ms(clock_now_ms(), now);
	buf_addstr(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset="
		   "\"utf-8\"><title>backfilld report</title><style>");
	buf_addstr(o, report_css);
	buf_printf(o, "</style></head><body>\n<h1>backfilld report</h1>\n"
		   "<p>backfilld %s, %s, %zu jobs, %d runs in flight, %" PRId64
		   " partitions queued</p>\n", BACKFILLD_VERSION, now, cfg->njobs,
		   sched_running(s), sched_queued(s));
	if (only != NULL) {
		buf_addstr(o, "<p>The job ");
		report_esc(o, only);
		buf_addstr(o, " alone; ");
		report_link(o, q, "page=1", "every job");
		buf_addstr(o, ".</p>\n");
	} else {
		report_pages(o, q, pages);
	}
}

int
report_render_query(struct sched *s, const struct report_query *q,
		    struct buf *o, struct err *err)
{
	const struct config *cfg = sched_config(s);
	struct report_ctx c = { o, s, -1, NULL, 0, 0 };
	size_t first = 0, last = cfg->njobs;
	int64_t pages = ((int64_t)cfg->njobs + REPORT_PAGE_JOBS - 1) /
	    REPORT_PAGE_JOBS;
	const char *only = NULL;

	if (q->job[0] != '\0') {
		c.job = config_job_index(cfg, q->job);
		if (c.job < 0)
			return err_set(err, EXIT_BAD_INPUT, "no job %s in the"
				       " configuration", q->job);
		first = (size_t)c.job;
		last = first + 1;
		only = cfg->jobs[c.job].name;
	} else {
		if (q->page > 1 && q->page > pages)
			return err_set(err, EXIT_BAD_INPUT, "no page %" PRId64
				       ": the jobs fill %" PRId64, q->page,
				       pages);
		first = (size_t)(q->page - 1) * REPORT_PAGE_JOBS;
		if (last > first + REPORT_PAGE_JOBS)
			last = first + REPORT_PAGE_JOBS;
	}
	report_head(s, q, only, pages, o);

	buf_addstr(o, "<h2>Jobs</h2>\n<table><tr><th>job</th><th>grain</th>"
		   "<th>paused</th><th>watermark</th><th>next due</th><th>"
		   "catchup</th><th>queued</th><th>running</th><th>succeeded"
		   "</th><th>failed</th><th>blocked</th><th>stale</th><th>late"
		   "</th></tr>\n");
	for (size_t i = first; i < last; i++)
		report_job_row(s, (int)i, q, o);
	buf_addstr(o, "</table>\n");
	if (only == NULL)
		report_warehouses(s, o);
	buf_addstr(o, "<h2>Partition maps</h2>\n");
	for (size_t i = first; i < last; i++)
		report_map(s, (int)i, q, o);

	buf_addstr(o, "<h2>Requests</h2>\n<table><tr><th>request</th><th>job"
		   "</th><th>kind</th><th>created</th><th>progress</th><th>"
		   "succeeded</th><th>skipped</th><th>failed</th><th>blocked"
		   "</th><th>running</th><th>queued</th><th>time left</th></tr>"
		   "\n");
	sched_each_request(s, report_request_cb, &c);
	report_table_end(&c, "backfillctl status and runs list them");
	if (only == NULL)
		report_recent(s, o);

	report_failures(s, only, o);
	report_warnings(s, only, o);

	buf_addstr(o, "<h2>Late partitions</h2>\n<table><tr><th>job</th><th>"
		   "partition</th><th>deadline</th></tr>\n");
	for (size_t i = only != NULL ? first : 0;
	     i < (only != NULL ? last : cfg->njobs); i++) {
		c.j = &cfg->jobs[i];
		if (cfg->jobs[i].deadline > 0)
			sched_job_open(s, (int)i, report_late_cb, &c);
	}
	report_table_end(&c, "backfillctl status counts them");

	buf_addstr(o, "<h2>Stale partitions</h2>\n<table><tr><th>job</th><th>"
		   "partition</th><th>built</th><th>newer inputs</th></tr>\n");
	if (sched_stale(s, c.job, report_stale_cb, &c, err) < 0) {
		buf_addstr(o, "</table>\n<p>");
		report_esc(o, err->msg);
		buf_addstr(o, "</p>\n");
	} else {
		report_table_end(&c, "backfillctl stale lists them");
	}
	buf_addstr(o, "</body></html>\n");
	return 0;
}

void
report_render(struct sched *s, struct buf *o)
{
	struct report_query q;
	struct err err;

	report_query_init(&q);
	(void)report_render_query(s, &q, o, &err);
}

int
report_write(struct sched *s, const char *path, struct err *err)
{
	struct buf o;

	buf_init(&o);
	report_render(s, &o);
	return atomicfile_put(path, &o, "report", "report_file", err);
}
