/*
 * cmd_status.c - status [JOB]: per job its schedule state and counts;
 * the state store, the warehouses and their throttles, late partitions
 * and late-data sensors.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "calendar.h"
#include "clock.h"
#include "cluster.h"
#include "json.h"
#include "text.h"
#include "pgsql.h"
#include "throttle.h"

/*
 * The state store as status shows it: its name (SQLite: the file; the
 * PostgreSQL store: the database its connection string names, never a
 * password) and its state: ok; failed, a commit it refused (memory is
 * ahead of it, scheduler.c SCHED-7; a deposed planner waiting for it
 * too); lost, it cannot be reached (several hosts: the node's
 * connection).
 */
struct status_store {
	char name[600];
	const char *state;
	const char *error;
	int64_t since;
	bool pg;
	struct cluster_state cs;
};

/* What status says of the state store. */
static void
status_store_of(struct cmd_ctx *ctx, struct status_store *o)
{
	const struct config *cfg = sched_config(ctx->sched);
	char db[512];

	memset(o, 0, sizeof *o);
	o->state = "ok";
	o->pg = cfg->state_conninfo != NULL;
	if (o->pg) {
		pgsql_conninfo_name(cfg->state_conninfo, db, sizeof db);
		snprintf(o->name, sizeof o->name, "PostgreSQL %s", db[0] ? db :
			 "(libpq's defaults)");
	} else {
		snprintf(o->name, sizeof o->name, "%s", cfg->state_db ?
			 cfg->state_db : "");
	}
	if (sched_store_failed(ctx->sched, &o->error, &o->since)) {
		o->state = "failed";
		return;
	}
	o->error = NULL;
	if (ctx->cluster_drv == NULL)
		return;
	ctx->cluster_drv->state(ctx->cluster, &o->cs);
	if (!o->cs.db_ok) {
		o->state = "lost";
		o->error = o->cs.db_error;
		o->since = o->cs.db_lost_ms;
	}
}

/* Does this node's memory hold the counts?  Not on a node that has not
 * been the planner (its scheduler never loaded the store). */
static bool
status_known(struct cmd_ctx *ctx)
{
	return !sched_dormant(ctx->sched);
}


/* A number or null in JSON. */
static void
cmd_json_num(struct buf *b, bool has, double v)
{
	if (has)
		buf_printf(b, "%.15g", v);
	else
		buf_addstr(b, "null");
}

/* A warehouse's throttle in status --json: null without one. */
static void
cmd_throttle_json(struct sched *s, const char *wh, struct buf *out)
{
	struct throttle_view v;
	char at[CAL_KEY_MAX];

	throttle_view(sched_throttle(s), wh, &v);
	if (!v.has) {
		buf_addstr(out, "null");
		return;
	}
	buf_printf(out, "{\"state\": \"%s\", \"value\": ", !v.checked ?
		   "unknown" : v.critical ? "critical" : v.throttled ?
		   "throttled" : "ok");
	cmd_json_num(out, v.has_value, v.value);
	buf_printf(out, ", \"max\": %.15g, \"critical\": ", v.max);
	cmd_json_num(out, v.has_critical, v.critical_at);
	cal_format_iso_ms(v.since_ms, at);
	buf_addstr(out, ", \"since\": ");
	json_str(out, v.throttled ? at : NULL);
	cal_format_iso_ms(v.checked_ms, at);
	buf_addstr(out, ", \"checked_at\": ");
	json_str(out, v.checked ? at : NULL);
	buf_printf(out, ", \"checks\": %" PRId64, v.checks);
	buf_addstr(out, ", \"error\": ");
	json_str(out, v.error[0] ? v.error : NULL);
	buf_addstr(out, "}");
}

/* A throttled warehouse's line in status. */
static void
cmd_throttle_text(struct sched *s, const char *wh, struct buf *out)
{
	struct throttle_view v;
	char at[CAL_KEY_MAX];

	throttle_view(sched_throttle(s), wh, &v);
	if (!v.has || !v.throttled)
		return;
	cal_format_iso_ms(v.since_ms, at);
	if (v.error[0]) {
		buf_printf(out, "warehouse %s: throttled since %s: ", wh, at);
		text_escape_str(out, v.error);
		buf_printf(out, " (max %.15g); no new run starts there\n",
			   v.max);
	} else {
		buf_printf(out, "warehouse %s: %s since %s: value %.15g above"
			   " max %.15g; no new run starts there%s\n", wh,
			   v.critical ? "critical" : "throttled", at, v.value,
			   v.max, v.critical ? ", runs in flight are requeued" :
			   "");
	}
}

/* The head of status --json: the daemon and its state store, up to the
 * opening of the jobs array. */
static void
status_head_json(struct cmd_ctx *ctx, struct buf *out)
{
	struct sched *s = ctx->sched;
	const struct config *cfg = sched_config(s);
	char now[CAL_KEY_MAX], since_s[CAL_KEY_MAX];
	char figures_at[CAL_KEY_MAX];
	struct store_stats ss;
	struct status_store so;
	int64_t now_ms;
	bool bad;

	status_store_of(ctx, &so);
	bad = strcmp(so.state, "ok") != 0;
	sched_read_stats(s, &ss);
	now_ms = clock_now_ms();
	cal_format_iso_ms(now_ms, now);
	cal_format_iso_ms(now_ms - (ss.age_ms > 0 ? ss.age_ms : 0), figures_at);
	buf_printf(out, "{\"version\": \"%s\", \"now\": \"%s\", \"running\":"
		   " %d, \"queued\": %" PRId64 ", \"runs_kept\": %" PRId64 ","
		   " \"store_bytes\": %" PRId64 ", \"wal_bytes\": %" PRId64 ","
		   " \"store_figures_at\": ", BACKFILLD_VERSION, now,
		   sched_running(s), sched_queued(s), ss.runs_kept,
		   ss.db_bytes, ss.wal_bytes);
	json_str(out, ss.age_ms >= 0 ? figures_at : NULL);
	buf_printf(out, ", \"store_figures_stale\": %s, \"from_memory\": ",
		   ss.stale ? "true" : "false");
	json_str(out, ctx->from_memory);
	buf_addstr(out, ", \"store\": {\"path\": ");
	json_str(out, cfg->state_db);
	buf_addstr(out, ", \"name\": ");
	json_str(out, so.name);
	cal_format_iso_ms(so.since, since_s);
	buf_printf(out, ", \"state\": \"%s\", \"since\": ", so.state);
	json_str(out, bad ? since_s : NULL);
	buf_addstr(out, ", \"error\": ");
	json_str(out, bad ? so.error : NULL);
	buf_addstr(out, "}, \"jobs\": [");
}

/* A job's late-data sensor in status --json, inside its object. */
static void
status_sensor_json(const struct sched_job_view *v, struct buf *out)
{
	char lc[CAL_KEY_MAX], nc[CAL_KEY_MAX];

	cal_format_iso_ms(v->last_check_ms, lc);
	cal_format_iso_ms(v->next_check * 1000, nc);
	buf_addstr(out, ", \"late_data\": {\"last_check\": ");
	json_str(out, v->has_last_check ? lc : NULL);
	buf_addstr(out, ", \"next_check\": ");
	json_str(out, nc);
	buf_printf(out, ", \"found\": %" PRId64 ", \"error\": ", v->found);
	json_str(out, v->sensor_error);
	buf_addstr(out, "}");
}

/* A job's object in status --json (first: the first of the array). */
static void
status_job_json(const struct job_def *j, const struct sched_job_view *v,
		int64_t stale, bool first, bool known, struct buf *out)
{
	char k[CAL_KEY_MAX], k2[CAL_KEY_MAX];

	buf_addstr(out, first ? "\n  {\"name\": " : ",\n  {\"name\": ");
	json_str(out, j->name);
	buf_printf(out, ", \"grain\": \"%s\", \"timezone\": ",
		   grain_name(j->grain));
	json_str(out, cal_zone_name(&j->cal));
	buf_printf(out, ", \"paused\": %s, \"watermark\": ",
		   v->paused ? "true" : "false");
	if (v->has_watermark)
		cal_key(&j->cal, v->watermark, k);
	json_str(out, v->has_watermark ? k : NULL);
	buf_addstr(out, ", \"next_due\": ");
	if (v->has_next_due)
		cal_format_iso_ms(v->next_due * 1000, k);
	json_str(out, v->has_next_due ? k : NULL);
	buf_printf(out, ", \"catchup\": \"%s\", \"gap\": ", v->catchup);
	if (v->has_gap) {
		cal_key(&j->cal, v->gap_from, k);
		cal_key(&j->cal, v->gap_to, k2);
		buf_printf(out, "{\"from\": \"%s\", \"to\": \"%s\", \"partitions\":"
			   " %" PRId64 "}", k, k2, v->gap_to - v->gap_from + 1);
	} else {
		buf_addstr(out, "null");
	}
	if (known)
		buf_printf(out, ", \"queued\": %" PRId64 ", \"running\": %"
			   PRId64 ", \"succeeded\": %" PRId64 ", \"failed\": %"
			   PRId64 ", \"blocked\": %" PRId64 ", \"stale\": %"
			   PRId64 ", \"late\": %" PRId64 ", \"oldest_late\": ",
			   v->queued, v->running, v->succeeded, v->failed,
			   v->blocked, stale, v->late);
	else /* not known on this node (status_known) */
		buf_addstr(out, ", \"queued\": null, \"running\": null,"
			   " \"succeeded\": null, \"failed\": null,"
			   " \"blocked\": null, \"stale\": null, \"late\":"
			   " null, \"oldest_late\": ");
	if (v->late > 0)
		cal_key(&j->cal, v->late_oldest, k);
	json_str(out, v->late > 0 ? k : NULL);
	if (j->nreconciles > 0) {
		buf_addstr(out, ", \"reconciled_through\": ");
		if (v->has_reconciled)
			cal_key(&j->cal, v->reconciled, k);
		json_str(out, v->has_reconciled ? k : NULL);
	}
	if (v->has_sensor)
		status_sensor_json(v, out);
	buf_addstr(out, "}");
}

/* A job's row in the status table. */
static void
status_job_row(const struct job_def *j, const struct sched_job_view *v,
	       int64_t stale, bool known, struct cmd_table *t)
{
	char c[6][24], catch[80], wm[CAL_KEY_MAX], nd[CAL_KEY_MAX],
	     gf[CAL_KEY_MAX], gt[CAL_KEY_MAX], grain[CMD_GRAIN_MAX];

	if (v->has_watermark)
		cal_key(&j->cal, v->watermark, wm);
	if (v->has_next_due)
		cal_format_iso_ms(v->next_due * 1000, nd);
	snprintf(c[0], 24, "%" PRId64, v->queued);
	snprintf(c[1], 24, "%" PRId64, v->running);
	snprintf(c[2], 24, "%" PRId64, v->succeeded);
	snprintf(c[3], 24, "%" PRId64, v->failed);
	snprintf(c[4], 24, "%" PRId64, v->blocked);
	snprintf(c[5], 24, "%" PRId64, stale);
	if (v->has_gap) {
		cal_key(&j->cal, v->gap_from, gf);
		cal_key(&j->cal, v->gap_to, gt);
		snprintf(catch, sizeof catch, "refused (gap %s..%s)", gf, gt);
	} else {
		snprintf(catch, sizeof catch, "%s", v->catchup);
	}
	if (!known)
		for (int i = 0; i < 6; i++)
			snprintf(c[i], 24, "-");
	const char *row[12] = { j->name, cmd_grain_text(j, grain),
		v->paused ? "yes" : "no", v->has_watermark ? wm : "-",
		v->has_next_due ? nd : "-", catch, c[0], c[1], c[2], c[3], c[4],
		c[5] };
	cmd_table_row(t, row);
}

/* The warehouses of status --json, and the end of the object. */
static void
status_warehouses_json(struct sched *s, struct buf *out)
{
	const struct config *cfg = sched_config(s);

	buf_addstr(out, "\n], \"warehouses\": [");
	for (size_t w = 0; w < cfg->nwarehouses; w++) {
		char why[256], at[CAL_KEY_MAX];
		int64_t at_ms = 0;
		int st = sched_warehouse_state(s, cfg->warehouses[w].name, why,
					       sizeof why, &at_ms);

		buf_addstr(out, w ? ",\n  {\"name\": " : "\n  {\"name\": ");
		json_str(out, cfg->warehouses[w].name);
		buf_printf(out, ", \"kind\": \"%s\", \"state\": \"%s\","
			   " \"checked_at\": ", cfg->warehouses[w].kind ==
			   WH_POSTGRES ? "postgres" : cfg->warehouses[w].kind ==
			   WH_CLICKHOUSE ? "clickhouse" : "sqlite", st > 0 ? "ok" :
			   st < 0 ? "unreachable" : "unknown");
		cal_format_iso_ms(at_ms, at);
		json_str(out, st ? at : NULL);
		buf_addstr(out, ", \"error\": ");
		json_str(out, st < 0 ? why : NULL);
		buf_addstr(out, ", \"throttle\": ");
		cmd_throttle_json(s, cfg->warehouses[w].name, out);
		buf_addstr(out, "}");
	}
	buf_addstr(out, cfg->nwarehouses ? "\n]" : "]");
}

/* Below the status table: the state store, the warehouses that are
 * unreachable or throttled. */
static void
status_store_text(struct cmd_ctx *ctx, struct buf *out)
{
	struct sched *s = ctx->sched;
	const struct config *cfg = sched_config(s);
	char since_s[CAL_KEY_MAX], why_wh[256], esc[1024];
	struct store_stats ss;
	struct status_store so;
	int64_t at_ms;

	status_store_of(ctx, &so);
	text_escape(so.error ? so.error : "", esc, sizeof esc);
	sched_read_stats(s, &ss);
	buf_printf(out, "history: %" PRId64 " runs kept; state store %.1f MiB,"
		   " its WAL %.1f MiB", ss.runs_kept,
		   (double)ss.db_bytes / 1048576.0,
		   (double)ss.wal_bytes / 1048576.0);
	if (ss.stale && ss.age_ms >= 0) {
		cal_format_iso_ms(clock_now_ms() - ss.age_ms, since_s);
		buf_printf(out, " (as read at %s: the state store did not"
			   " answer in time)", since_s);
	} else if (ss.stale) {
		buf_addstr(out, " (not read yet: the state store did not"
			   " answer in time)");
	}
	buf_addstr(out, "\n");
	cal_format_iso_ms(so.since, since_s);
	if (strcmp(so.state, "failed") == 0)
		buf_printf(out, "state store %s cannot be written since %s: %s;"
			   " no new runs start until it can (%s)\n", so.name,
			   since_s, esc, so.pg ? "backfilld tries it again"
			   " and resumes by itself" : "free space on its"
			   " filesystem");
	else if (strcmp(so.state, "lost") == 0)
		buf_printf(out, "state store %s lost since %s: %s; this node"
			   " starts nothing until it is back (it connects again"
			   " by itself)\n", so.name, since_s, esc);
	for (size_t w = 0; w < cfg->nwarehouses; w++) {
		at_ms = 0;
		if (sched_warehouse_state(s, cfg->warehouses[w].name, why_wh,
					  sizeof why_wh, &at_ms) < 0) {
			buf_printf(out, "warehouse %s: unreachable: ",
				   cfg->warehouses[w].name);
			text_escape_str(out, why_wh);
			buf_addstr(out, "\n");
		}
		cmd_throttle_text(s, cfg->warehouses[w].name, out);
	}
}

/* Below the status table: a refused catchup's gap and the command that
 * fills it, in pieces of at most max_backfill (the log line of the
 * refusal says the same, sched_clock.c). */
static void
status_gap_text(const struct job_def *j, const struct sched_job_view *v,
		struct buf *out)
{
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX], c[CAL_KEY_MAX], n[CAL_KEY_MAX];
	int64_t gap = v->gap_to - v->gap_from + 1;
	part_t piece = v->gap_to;
	bool more = j->max_backfill > 0 && gap > j->max_backfill;

	if (more)
		piece = v->gap_from + j->max_backfill - 1;
	cal_key(&j->cal, v->gap_from, a);
	cal_key(&j->cal, v->gap_to, b);
	cal_key(&j->cal, piece, c);
	cal_key(&j->cal, piece + 1, n);
	buf_printf(out, "catchup %s: refused, gap %s..%s (%" PRId64
		   " partition%s, above max_catchup %d); fill it", j->name, a,
		   b, gap, gap == 1 ? "" : "s", j->max_catchup);
	if (more)
		buf_printf(out, " in pieces of at most %d partitions (its"
			   " max_backfill)", j->max_backfill);
	buf_printf(out, ": backfillctl backfill %s --from %s --to %s", j->name,
		   a, c);
	if (more)
		buf_printf(out, ", then the same from %s on", n);
	buf_addstr(out, "\n");
}

/* Below the status table: a job's refused gap, its late partitions and
 * its late-data sensor. */
static void
status_job_text(const struct job_def *j, const struct sched_job_view *v,
		struct buf *out)
{
	char lc[CAL_KEY_MAX], nc[CAL_KEY_MAX], ok[CAL_KEY_MAX];

	if (v->has_gap)
		status_gap_text(j, v, out);
	if (v->late > 0) {
		cal_key(&j->cal, v->late_oldest, ok);
		buf_printf(out, "late %s: %" PRId64 " partition%s past the"
			   " deadline of %" PRId64 "s, oldest %s\n", j->name,
			   v->late, v->late == 1 ? "" : "s", j->deadline, ok);
	}
	if (j->nreconciles > 0) {
		if (v->has_reconciled)
			cal_key(&j->cal, v->reconciled, ok);
		buf_printf(out, "reconciled %s: through %s\n", j->name,
			   v->has_reconciled ? ok : "- (none yet)");
	}
	if (!v->has_sensor)
		return;
	cal_format_iso_ms(v->last_check_ms, lc);
	cal_format_iso_ms(v->next_check * 1000, nc);
	if (!v->has_last_check) {
		buf_printf(out, "late_data %s: not checked yet; first check %s\n",
			   j->name, nc);
	} else if (v->sensor_error) {
		buf_printf(out, "late_data %s: last check %s failed: ",
			   j->name, lc);
		text_escape_str(out, v->sensor_error);
		buf_printf(out, "; next %s\n", nc);
	} else {
		buf_printf(out, "late_data %s: last check %s found %" PRId64
			   " partitions; next %s\n", j->name, lc, v->found, nc);
	}
}

/* The requests stopped over budget that status shows, at most. */
#define STATUS_OVER_BUDGET_MAX 10

struct status_budget {
	struct buf *out;
	const char *only; /* a job's name, or NULL */
	bool json;
	size_t n;
	size_t seen; /* rows read, whatever their job */
};

/* One request stopped over budget (budget.h), as a line or a JSON
 * object. */
static void
status_budget_cb(const struct store_budget_row *row, void *data)
{
	struct status_budget *sb = data;
	char at[CAL_KEY_MAX], b[48], sp[48];

	sb->seen++;
	if (sb->only != NULL && strcmp(sb->only, row->job) != 0)
		return;
	cal_format_iso_ms(row->over_at, at);
	if (sb->json) {
		buf_printf(sb->out, "%s{\"request\": %" PRId64 ", \"job\": ",
			   sb->n ? ", " : "", row->id);
		json_str(sb->out, row->job);
		buf_printf(sb->out, ", \"budget_seconds\": %.3f,"
			   " \"warehouse_seconds\": %.3f, \"cancelled\": %"
			   PRId64 ", \"since\": \"%s\"}",
			   (double)row->budget_ms / 1000.0,
			   (double)row->spent_ms / 1000.0, row->cancelled, at);
	} else {
		budget_duration((double)row->budget_ms / 1000.0, b, sizeof b);
		budget_duration((double)row->spent_ms / 1000.0, sp, sizeof sp);
		buf_printf(sb->out, "request %" PRId64 " (%s): stopped over"
			   " budget since %s: measured warehouse time %s passed"
			   " 1.5 x its budget of %s; %" PRId64 " partitions"
			   " cancelled (backfillctl retry %" PRId64 " resumes"
			   " them)\n", row->id, row->job, at, sp, b,
			   row->cancelled, row->id);
	}
	sb->n++;
}

/* The requests stopped over budget and not resumed, newest first: lines
 * below the table, or the "over_budget" array of --json. */
static void
status_budget(struct cmd_ctx *ctx, const char *only, bool json,
	      struct buf *out)
{
	struct status_budget sb = { out, only, json, 0, 0 };
	struct err err;
	int rc;

	if (json)
		buf_addstr(out, ", \"over_budget\": [");
	/* none was there last time and none stopped since: no read (a
	 * status a second makes no store transaction for this) */
	rc = sched_budget_none(ctx->sched) ? 0 :
	    sched_read_over_budget(ctx->sched, STATUS_OVER_BUDGET_MAX,
				   status_budget_cb, &sb, &err);
	if (rc < 0 && !json)
		buf_printf(out, "requests over budget: cannot be read: %s\n",
			   err.msg);
	if (rc == 0 && sb.seen == 0)
		sched_set_budget_none(ctx->sched, true);
	if (json)
		buf_addstr(out, "]");
}

/* status [JOB] [--json]: every job (or JOB), as a table or JSON. */
static void
cmd_status_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
		struct cmd_res *res)
{
	static const char *const head[12] = { "JOB", "GRAIN", "PAUSED",
		"WATERMARK", "NEXT DUE", "CATCHUP", "QUEUED", "RUNNING",
		"SUCCEEDED", "FAILED", "BLOCKED", "STALE" };
	struct sched *s = ctx->sched;
	const struct config *cfg = sched_config(s);
	bool json = req->show.json;
	struct cmd_table t = { .ncols = 12 };
	struct sched_job_view v;
	size_t k = 0;
	int only = -1;
	bool known = status_known(ctx);

	if (req->show.job && (only = cmd_job(ctx, req->show.job, res)) < 0)
		return;
	if (json) {
		status_head_json(ctx, &res->out);
	} else {
		if (ctx->from_memory != NULL)
			buf_printf(&res->out, "this node answers from its own"
				   " memory, not the planner's: %s%s\n",
				   ctx->from_memory, known ? "" : "; it has not"
				   " been the planner, so it knows no counts");
		cmd_table_row(&t, head);
	}
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];
		int64_t stale;

		if (only >= 0 && (int)i != only)
			continue;
		sched_job_view(s, (int)i, &v);
		stale = sched_stale_count(s, (int)i);
		if (json)
			status_job_json(j, &v, stale, k++ == 0, known,
					&res->out);
		else
			status_job_row(j, &v, stale, known, &t);
	}
	if (json) {
		status_warehouses_json(s, &res->out);
		status_budget(ctx, only >= 0 ? cfg->jobs[only].name : NULL,
			      true, &res->out);
		cmd_shards_partial(ctx, only >= 0 ? cfg->jobs[only].name :
				   NULL, true, &res->out);
		cmd_nodes_json(ctx, &res->out);
		buf_addstr(&res->out, "}\n");
		return;
	}
	cmd_table_print(&t, &res->out);
	status_store_text(ctx, &res->out);
	status_budget(ctx, only >= 0 ? cfg->jobs[only].name : NULL, false,
		      &res->out);
	cmd_shards_partial(ctx, only >= 0 ? cfg->jobs[only].name : NULL,
			   false, &res->out);
	cmd_nodes_text(ctx, &res->out);
	for (size_t i = 0; i < cfg->njobs; i++) {
		if (only >= 0 && (int)i != only)
			continue;
		sched_job_view(s, (int)i, &v);
		status_job_text(&cfg->jobs[i], &v, &res->out);
	}
}

const struct cmd_entry cmd_status_entry = {
	&cmdspec_status, cmd_status_exec
};
