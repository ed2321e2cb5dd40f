/*
 * sched_audit.c - what a run measured and checked, as the audit rows of
 * its partitions (JSON for `audit --json`, one line of text for people).
 */
#include "sched_int.h"

#include <math.h>
#include <string.h>

#include "guard.h"
#include "json.h"
#include "severity.h"
#include "text.h"

/* A number or null in JSON. */
static void
sched_audit_num(struct buf *b, bool has, double v)
{
	if (has)
		buf_printf(b, "%.10g", v);
	else
		buf_addstr(b, "null");
}

/* One "before, after, change" object, its closing brace the caller's. */
static void
sched_audit_change(struct buf *b, bool has_before, double before,
		   bool has_after, double after, bool has_change, double pct)
{
	buf_addstr(b, "{\"before\": ");
	sched_audit_num(b, has_before, before);
	buf_addstr(b, ", \"after\": ");
	sched_audit_num(b, has_after, after);
	buf_addstr(b, ", \"change_pct\": ");
	sched_audit_num(b, has_change, pct);
}

/* A Distributed target's shards' figures of part i, rows (k < 0) or
 * metric k: ", \"shards\": [{shard, before, after, change_pct}...]"
 * after a total's change_pct (nothing for a table that is not one). */
static void
sched_audit_shards(struct buf *b, const struct exec_run *run, size_t i,
		   int k)
{
	if (run->shard_guards == NULL)
		return;
	buf_addstr(b, ", \"shards\": [");
	for (size_t s = 0; s < run->nshards; s++) {
		const struct exec_guard_result *sg =
		    &run->shard_guards[s * run->nparts + i];
		bool hb = sg->has_rows_before, ha = sg->has_rows_after, hc;
		double before = (double)sg->rows_before;
		double after = (double)sg->rows_after, pct = 0;

		if (k >= 0) {
			const struct exec_metric_result *m = &sg->metrics[k];

			hb = ha && m->has_before;
			ha = ha && m->has_after;
			before = m->before;
			after = m->after;
		}
		hc = hb && ha && guard_change(before, after, &pct);
		buf_printf(b, "%s{\"shard\": %zu, \"before\": ", s ? ", " : "",
			   s + 1);
		sched_audit_num(b, hb, before);
		buf_addstr(b, ", \"after\": ");
		sched_audit_num(b, ha, after);
		buf_addstr(b, ", \"change_pct\": ");
		sched_audit_num(b, hc, pct);
		buf_addstr(b, "}");
	}
	buf_addstr(b, "]");
}

/* One metric as text: "name 1.50 -> 2 (+33.3%)" (text_figure: an
 * integral figure, money in integer cents, without ".00"). */
static void
sched_audit_metric_text(struct buf *t, size_t k,
			const struct exec_metric_result *m)
{
	char f[32];

	buf_printf(t, "%s%s ", k ? "; " : "", m->name);
	if (m->has_before)
		buf_addstr(t, text_figure(m->before, f, sizeof f));
	else
		buf_addstr(t, "-");
	if (m->has_after)
		buf_printf(t, " -> %s", text_figure(m->after, f, sizeof f));
	else
		buf_addstr(t, " -> -");
	if (m->has_change)
		buf_printf(t, " (%+.1f%%)", m->change_pct);
}

/* The metrics of one partition: JSON into `json`, text into `text`. */
static void
sched_audit_metrics(const struct exec_run *run, size_t i,
		    const struct exec_guard_result *g, struct buf *json,
		    struct buf *text)
{
	double pct = 0;
	bool ch;

	buf_addstr(json, "{");
	if (g != NULL) {
		ch = g->has_rows_before && g->has_rows_after &&
		     guard_change((double)g->rows_before, (double)g->rows_after,
				  &pct);
		buf_addstr(json, "\"rows\": ");
		sched_audit_change(json, g->has_rows_before,
				   (double)g->rows_before, g->has_rows_after,
				   (double)g->rows_after, ch, pct);
		sched_audit_shards(json, run, i, -1);
		buf_addstr(json, "}");
		for (size_t k = 0; k < run->job->nmetrics; k++) {
			const struct exec_metric_result *m = &g->metrics[k];

			buf_addstr(json, ", ");
			json_str(json, run->job->metrics[k].name);
			buf_addstr(json, ": ");
			sched_audit_change(json, m->has_before, m->before,
					   m->has_after, m->after,
					   m->has_change, m->change_pct);
			sched_audit_shards(json, run, i, (int)k);
			buf_addstr(json, "}");
			sched_audit_metric_text(text, k, m);
		}
	}
	buf_addstr(json, "}");
	buf_add(json, "", 1);
	buf_add(text, "", 1);
}

/* A trend check's figures: the value held, the window's size, mean and
 * sd, and how many sd away (null when not judged; a string "inf" for a
 * move off a constant history, which JSON numbers cannot say). */
static void
sched_audit_trend(struct buf *json, const struct exec_check_result *cr)
{
	buf_addstr(json, ", \"value\": ");
	sched_audit_num(json, cr->has_target, cr->target);
	buf_printf(json, ", \"history\": %lld, \"mean\": ",
		   (long long)cr->history);
	sched_audit_num(json, cr->history > 0, cr->mean);
	buf_addstr(json, ", \"stddev\": ");
	sched_audit_num(json, cr->history > 1, cr->sd);
	buf_addstr(json, ", \"sigma\": ");
	if (cr->has_sigma && isinf(cr->sigma))
		buf_addstr(json, "\"inf\"");
	else
		sched_audit_num(json, cr->has_sigma, cr->sigma);
}

/* The checks of partition i: JSON into `json`, "N/M passed; name: why"
 * into `text` ("not run" when the run failed before them, "none"
 * when it had none to run). */
static void
sched_audit_checks(const struct exec_run *run, size_t i, struct buf *json,
		   struct buf *text)
{
	struct buf failed;
	size_t n = 0, npassed = 0;

	buf_init(&failed);
	buf_addstr(json, "[");
	for (size_t c = 0; c < run->nchecks; c++) {
		const struct exec_check_result *cr = &run->checks[c];

		if (cr->part != i)
			continue;
		buf_addstr(json, n++ ? ", {\"name\": " : "{\"name\": ");
		json_str(json, cr->name);
		buf_printf(json, ", \"passed\": %s, \"severity\": \"%s\","
			   " \"result\": \"%s\", \"detail\": ",
			   cr->passed ? "true" : "false",
			   cr->warn ? "warn" : "error",
			   severity_result(cr->passed, cr->warn));
		json_str(json, cr->detail);
		if (cr->shard > 0) /* a Distributed target's shard */
			buf_printf(json, ", \"shard\": %d", cr->shard);
		if (cr->recon) {
			buf_addstr(json, ", \"source\": ");
			sched_audit_num(json, cr->has_source, cr->source);
			buf_addstr(json, ", \"target\": ");
			sched_audit_num(json, cr->has_target, cr->target);
			buf_addstr(json, ", \"difference\": ");
			sched_audit_num(json, cr->has_source && cr->has_target,
					cr->diff);
		}
		if (cr->trend)
			sched_audit_trend(json, cr);
		buf_addstr(json, "}");
		if (cr->passed)
			npassed++;
		else if (cr->shard > 0)
			buf_printf(&failed, "; %s (shard %d)%s: %s", cr->name,
				   cr->shard, cr->warn ? " (warning)" : "",
				   cr->detail);
		else
			buf_printf(&failed, "; %s%s: %s", cr->name,
				   cr->warn ? " (warning)" : "", cr->detail);
	}
	buf_addstr(json, "]");
	buf_add(json, "", 1);
	buf_add(&failed, "", 1);
	if (n > 0)
		buf_printf(text, "%zu/%zu passed", npassed, n);
	else if (run->failed || run->cancelled)
		buf_addstr(text, "not run"); /* the write failed before */
	else
		buf_addstr(text, "none");
	buf_addstr(text, failed.data);
	buf_add(text, "", 1);
	buf_free(&failed);
}

bool
sched_audit_warning(const struct exec_run *run, size_t i, char *out,
		    size_t size)
{
	size_t n = 0;
	int len = 0;

	out[0] = '\0';
	for (size_t c = 0; c < run->nchecks; c++) {
		const struct exec_check_result *cr = &run->checks[c];

		if (cr->part != i || cr->passed || !cr->warn)
			continue;
		if (n++ == 0 && cr->shard > 0)
			len = snprintf(out, size, SEVERITY_NOTE "check %s failed"
				       " for %s on shard %d (%s)", cr->name,
				       run->parts[i].key, cr->shard,
				       cr->detail);
		else if (n == 1)
			len = snprintf(out, size, SEVERITY_NOTE "check %s failed"
				       " for %s (%s)", cr->name,
				       run->parts[i].key, cr->detail);
	}
	if (n > 1 && len >= 0 && (size_t)len < size)
		snprintf(out + len, size - (size_t)len, "; %zu more", n - 1);
	return n > 0;
}

bool
sched_audit_reconciled(const struct exec_run *run, size_t i)
{
	size_t n = 0;

	for (size_t c = 0; c < run->nchecks; c++) {
		const struct exec_check_result *cr = &run->checks[c];

		if (cr->part != i || !cr->recon)
			continue;
		if (!cr->passed)
			return false;
		n++;
	}
	return n > 0;
}

/* Record what a run measured and checked for each of its partitions
 * (inside the caller's transaction); a batch run has one run id per
 * partition (run_ids), an ordinary one NULL. */
int
sched_audit(struct sched *s, struct exec_run *run, const int64_t *run_ids,
	    struct err *err)
{
	struct buf metrics, checks, mtext, ctext;
	int rc = 0;

	if (run->guards == NULL && run->nchecks == 0)
		return 0;
	buf_init(&metrics);
	buf_init(&checks);
	buf_init(&mtext);
	buf_init(&ctext);
	for (size_t i = 0; i < run->nparts && rc == 0; i++) {
		const struct exec_guard_result *g =
		    run->guards ? &run->guards[i] : NULL;

		buf_reset(&metrics);
		buf_reset(&checks);
		buf_reset(&mtext);
		buf_reset(&ctext);
		sched_audit_metrics(run, i, g, &metrics, &mtext);
		sched_audit_checks(run, i, &checks, &ctext);
		rc = store_audit_add(
		    s->store, run_ids ? run_ids[i] : run->run_id,
		    run->parts[i].key, g && g->has_rows_before,
		    g ? g->rows_before : 0, g && g->has_rows_after,
		    g ? g->rows_after : 0, metrics.data, checks.data,
		    mtext.data, ctext.data, !run->failed,
		    g && g->sum_before[0] ? g->sum_before : NULL,
		    g && g->sum_after[0] ? g->sum_after : NULL,
		    g && g->has_changes ? g->changes : -1, err);
	}
	buf_free(&metrics);
	buf_free(&checks);
	buf_free(&mtext);
	buf_free(&ctext);
	return rc;
}

void
sched_run_fact(struct sched *s, const struct job_def *j,
	       struct item *const *items, size_t n, int64_t run_id,
	       enum mstate state, const char *error, int64_t now)
{
	const struct cal *c;
	struct sched_run_fact f;

	if (s->fact_cb == NULL || j == NULL || n == 0)
		return;
	c = &j->cal;
	memset(&f, 0, sizeof f);
	f.state = state;
	f.job = j;
	f.run_id = run_id;
	f.request_id = items[0]->rq->id;
	f.request_job = items[0]->rq->job;
	f.request_kind = items[0]->rq->kind;
	f.request_created_ms = items[0]->rq->created_at;
	f.key = items[0]->key;
	f.t0 = cal_start(c, items[0]->part);
	f.t1 = cal_end(c, items[n - 1]->part);
	f.attempt = items[0]->attempts;
	f.error = error;
	f.now_ms = now;
	s->fact_cb(s->fact_data, &f);
}
