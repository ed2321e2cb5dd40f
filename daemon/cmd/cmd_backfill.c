/*
 * cmd_backfill.c - backfill and rerun: one request for partitions of a
 * job, with the downstream partitions that contain them.
 *
 * The specification (cmdspec.h) has checked the fields' forms and the
 * rules across them; here are the checks that need the job: its grain,
 * its start and end, its max_backfill (a request above it is refused
 * whole, before anything is enumerated when the range says so) and its
 * concurrency, and the choice of its partitions.  Then the request is
 * one call into the scheduler (sched_backfill: the clock, the plan, its
 * estimate and budget, the proof, the queue); here is only its answer.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "calendar.h"
#include "cutoff.h"
#include "estimate.h"
#include "json.h"
#include "plan.h"
#include "text.h"
#include "verify.h"
#include "xalloc.h"

/* Order partitions. */
static int
backfill_part_cmp(const void *a, const void *b)
{
	part_t x = *(const part_t *)a, y = *(const part_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort and drop duplicates. */
static size_t
backfill_unique(part_t *p, size_t n)
{
	size_t k = 0;

	if (n == 0)
		return 0;
	qsort(p, n, sizeof *p, backfill_part_cmp);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || p[k - 1] != p[i])
			p[k++] = p[i];
	return k;
}

/* Refuse partitions outside the job's start..end. */
static int
backfill_check_bounds(const struct job_def *j, part_t first, part_t last,
	     struct err *err)
{
	char k[CAL_KEY_MAX];

	if (j->has_start && first < j->start) {
		cal_key(job_cal(j), j->start, k);
		return err_set(err, EXIT_BAD_INPUT, "%s has no partitions before"
			       " its start %s: begin the range there", j->name, k);
	}
	if (j->has_end && last > j->end) {
		cal_key(job_cal(j), j->end, k);
		return err_set(err, EXIT_BAD_INPUT, "%s has no partitions after"
			       " its end %s: end the range there", j->name, k);
	}
	return 0;
}

/* Refuse a count above the job's bound: the request is refused whole
 * (docs/configuration.md, max_backfill). */
static int
backfill_check_count(const struct job_def *j, int64_t count, const char *what,
	    struct err *err)
{
	if (count <= (int64_t)j->max_backfill)
		return 0;
	return err_set(err, EXIT_BAD_INPUT, "refused: %s is %" PRId64 " partitions"
		       " of %s, above its max_backfill of %d; nothing was"
		       " queued. Split it into requests of at most %d partitions,"
		       " or raise max_backfill", what, count, j->name,
		       j->max_backfill, j->max_backfill);
}

int
cmd_keys_cb(const char *key, void *data, struct err *err)
{
	struct cmd_keys *kc = data;
	part_t p;

	if (cal_parse_key(job_cal(kc->j), key, &p, NULL) < 0)
		return 0;
	if (kc->n == kc->cap) {
		kc->cap = kc->cap ? kc->cap * 2 : 64;
		kc->parts = xreallocarray(kc->parts, kc->cap,
					  sizeof *kc->parts);
	}
	kc->parts[kc->n++] = p;
	return 0;
}

/* Collect a stale partition of the job. */
static int
backfill_stale_cb(int job, part_t part, bool built, int64_t built_at,
	      const struct stale_input *in, size_t nin, void *data,
	      struct err *err)
{
	struct cmd_keys *kc = data;
	char key[CAL_KEY_MAX];

	(void)job; (void)built; (void)built_at; (void)in; (void)nin;
	cal_key(job_cal(kc->j), part, key);
	return cmd_keys_cb(key, kc, err);
}

/* The file line of the n-th date (1-based): from the client's dates_lines
 * field when it sent one, else n itself. */
static long
backfill_dates_line(const char *lines, int n)
{
	const char *p = lines;

	for (int i = 1; p != NULL && *p != '\0'; i++) {
		if (i == n)
			return strtol(p, NULL, 10);
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return n;
}

/* Refuse more distinct partitions than the job's max_backfill: sorts
 * and deduplicates kc first, so 1,001 copies of a date are one. */
static int
backfill_dates_count(struct cmd_keys *kc, struct err *err)
{
	kc->n = backfill_unique(kc->parts, kc->n);
	return backfill_check_count(kc->j, (int64_t)kc->n, "the dates file", err);
}

/* Parse the dates field (one date, or hour key for hourly jobs, a line)
 * into the partitions that hold them; errors name file:line (the client
 * sends the file's name and each date's line), and the count is of
 * distinct partitions. */
static int
backfill_parse_dates(const struct job_def *j, const char *dates, const char *file,
	    const char *lines, struct cmd_keys *kc, struct err *err)
{
	const char *p = dates;
	int line = 0;
	char qf[256];

	text_escape(file ? file : "the dates file", qf, sizeof qf);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char d[64];
		struct part_range r;

		line++;
		if (len == 0) {
			p += nl ? 1 : 0;
			continue;
		}
		if (len >= sizeof d)
			return err_set(err, EXIT_BAD_INPUT, "%s:%ld: the line is"
				       " too long: write one date (YYYY-MM-DD)"
				       " a line", qf, backfill_dates_line(lines, line));
		memcpy(d, p, len);
		d[len] = '\0';
		if (cal_range_parse_one(job_cal(j), d, &r, err) < 0) {
			err_prefix(err, "%s:%ld", qf, backfill_dates_line(lines, line));
			return -1;
		}
		for (part_t q = r.first; q <= r.last; q++) {
			char key[CAL_KEY_MAX];

			if (cal_empty(job_cal(j), q))
				continue; /* a day the zone skipped */
			cal_key(job_cal(j), q, key);
			if (cmd_keys_cb(key, kc, err) < 0)
				return -1;
		}
		/* bounded memory: duplicates go every few bounds' worth */
		if (kc->n > 2 * (size_t)j->max_backfill + 64 &&
		    backfill_dates_count(kc, err) < 0)
			return -1;
		p += len + (nl ? 1 : 0);
	}
	return backfill_dates_count(kc, err);
}

/* --downstream JOB[,JOB] as a JSON array of its names, or null. */
static void
backfill_downstream_json(const char *down, struct buf *out)
{
	const char *p, *comma;
	struct buf name;

	if (down == NULL) {
		buf_addstr(out, "null");
		return;
	}
	buf_init(&name);
	buf_addstr(out, "[");
	for (p = down;; p = comma + 1) {
		comma = strchr(p, ',');
		buf_reset(&name);
		buf_add(&name, p, comma ? (size_t)(comma - p) : strlen(p));
		if (p != down)
			buf_addstr(out, ", ");
		json_str(out, name.data);
		if (comma == NULL)
			break;
	}
	buf_addstr(out, "]");
	buf_free(&name);
}

/* Which plan items are conditional (early cut-off, docs/cutoff.md): a
 * downstream partition runs only when an input changes, when every input
 * reads its fingerprint or is conditional itself, unless --no-cutoff.
 * Allocated, one per item. */
static bool *
backfill_conditional(const struct config *cfg, const struct plan *plan,
		     const struct sched_req *rq)
{
	bool *cond = xcalloc(plan->n ? plan->n : 1, sizeof *cond);

	for (size_t i = 0; i < plan->n && !rq->no_cutoff; i++) {
		const struct plan_item *it = &plan->items[i];

		cond[i] = it->downstream && it->ndeps > 0;
		for (size_t d = 0; cond[i] && d < it->ndeps; d++) {
			size_t k = plan->deps[it->dep_off + d];

			const struct job_def *in =
				&cfg->jobs[plan->items[k].job];

			cond[i] = cond[k] ||
			    cutoff_fingerprinted(in, in->distributed);
		}
	}
	return cond;
}

/* The dry run's line about early cut-off, when it has downstream work. */
static void
backfill_cutoff_text(const struct config *cfg, const struct plan *plan,
		     const struct sched_req *rq, struct buf *out)
{
	bool *cond = backfill_conditional(cfg, plan, rq);
	size_t n = 0;

	for (size_t i = 0; i < plan->n; i++)
		n += cond[i];
	free(cond);
	if (rq->no_cutoff && plan->n > plan->nroot)
		buf_addstr(out, "cutoff: off (--no-cutoff): every downstream"
			   " partition is rebuilt\n");
	else if (n > 0)
		buf_printf(out, "cutoff: %zu of the %zu downstream partitions"
			   " are conditional: each runs only if one of its"
			   " inputs changes (skipped: inputs unchanged; the"
			   " estimate counts them all; --no-cutoff rebuilds"
			   " them regardless)\n", n, plan->n - plan->nroot);
}

/* The request's budget as a JSON value: {seconds, source, refused} (the
 * verdict of budget_admit on the estimate), or null without one. */
static void
backfill_budget_json(const struct sched_req *rq, const struct estimate *est,
		     struct buf *out)
{
	if (rq->budget_s <= 0) {
		buf_addstr(out, "null");
		return;
	}
	buf_printf(out, "{\"seconds\": %" PRId64 ", \"source\": ",
		   rq->budget_s);
	json_str(out, rq->budget_source);
	buf_printf(out, ", \"refused\": %s}",
		   budget_admit(rq->budget_s, rq->budget_source, est->has,
				est->warehouse_seconds, NULL) < 0 ? "true" :
		   "false");
}

/* A plan as JSON (dry run --json), with the request's own controls and
 * the estimate. */
static void
backfill_plan_json(const struct config *cfg, const struct plan *plan,
		   const struct sched_req *rq, const struct estimate *est,
		   struct buf *out)
{
	char key[CAL_KEY_MAX], dk[CAL_KEY_MAX];
	bool *cond = backfill_conditional(cfg, plan, rq);
	size_t ncond = 0;

	for (size_t i = 0; i < plan->n; i++)
		ncond += cond[i];
	buf_addstr(out, "{\"partitions\": [");
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		const struct job_def *j = &cfg->jobs[it->job];

		cal_key(job_cal(j), it->part, key);
		buf_addstr(out, i ? ",\n  {" : "\n  {");
		buf_addstr(out, "\"job\": ");
		json_str(out, j->name);
		buf_addstr(out, ", \"partition\": ");
		json_str(out, key);
		buf_printf(out, ", \"downstream\": %s, \"conditional\": %s,"
			   " \"waits_for\": [", it->downstream ? "true" : "false",
			   cond[i] ? "true" : "false");
		for (size_t d = 0; d < it->ndeps; d++) {
			const struct plan_item *in =
				&plan->items[plan->deps[it->dep_off + d]];
			const struct job_def *ij = &cfg->jobs[in->job];

			cal_key(job_cal(ij), in->part, dk);
			buf_addstr(out, d ? ", {\"job\": " : "{\"job\": ");
			json_str(out, ij->name);
			buf_addstr(out, ", \"partition\": ");
			json_str(out, dk);
			buf_addstr(out, "}");
		}
		buf_addstr(out, "]}");
	}
	buf_printf(out, "%s], \"total\": %zu, \"downstream\": %zu,"
		   " \"not_closed\": %zu, \"concurrency\": ",
		   plan->n ? "\n" : "", plan->n, plan->n - plan->nroot,
		   plan->nopen);
	if (rq->concurrency > 0)
		buf_printf(out, "%d", rq->concurrency);
	else
		buf_addstr(out, "null");
	buf_printf(out, ", \"fail_fast\": %s, \"cutoff\": %s,"
		   " \"conditional\": %zu, \"downstream_jobs\": ",
		   rq->fail_fast ? "true" : "false",
		   rq->no_cutoff ? "false" : "true", ncond);
	free(cond);
	backfill_downstream_json(rq->downstream, out);
	buf_addstr(out, ", \"estimate\": ");
	estimate_json(cfg, est, out);
	buf_addstr(out, ", \"budget\": ");
	backfill_budget_json(rq, est, out);
	buf_addstr(out, "}\n");
}

/* What plan item i waits for, "job key, key; job key", into waits. */
static void
backfill_plan_waits(const struct config *cfg, const struct plan *plan,
		    size_t i, struct buf *waits)
{
	const struct plan_item *it = &plan->items[i];
	char dk[CAL_KEY_MAX];

	for (size_t d = 0; d < it->ndeps; d++) {
		const struct plan_item *in =
			&plan->items[plan->deps[it->dep_off + d]];
		const struct job_def *ij = &cfg->jobs[in->job];

		cal_key(job_cal(ij), in->part, dk);
		if (d == 0 || in->job !=
		    plan->items[plan->deps[it->dep_off + d - 1]].job)
			buf_printf(waits, "%s%s %s", d ? "; " : "", ij->name,
				   dk);
		else
			buf_printf(waits, ", %s", dk);
	}
	buf_add(waits, "", 1);
}

/* The budget's line below a dry run's estimate: the budget, and what the
 * request would meet. */
static void
backfill_budget_text(const struct sched_req *rq, const struct estimate *est,
		     struct buf *out)
{
	char b[CAL_KEY_MAX];
	struct err err;

	if (rq->budget_s <= 0)
		return;
	cal_format_duration(rq->budget_s, b);
	if (budget_admit(rq->budget_s, rq->budget_source, est->has,
			 est->warehouse_seconds, &err) < 0)
		buf_printf(out, "budget: %s (%s): this request would be %s\n",
			   b, rq->budget_source, err.msg);
	else
		buf_printf(out, "budget: %s of warehouse time (%s): the request"
			   " stops starting partitions once its runs have taken"
			   " 1.5 times that\n", b, rq->budget_source);
}

/* A plan as a table (dry run), with the request's own controls and the
 * estimate. */
static void
backfill_plan_text(const struct config *cfg, const struct plan *plan,
		   const struct sched_req *rq, const struct estimate *est,
		   struct buf *out)
{
	struct cmd_table t = { .ncols = 4 };
	const char *head[4] = { "ORDER", "JOB", "PARTITION", "WAITS FOR" };
	char key[CAL_KEY_MAX], order[24];
	struct buf waits;

	buf_init(&waits);
	cmd_table_row(&t, head);
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		const struct job_def *j = &cfg->jobs[it->job];

		buf_reset(&waits);
		cal_key(job_cal(j), it->part, key);
		snprintf(order, sizeof order, "%zu", i + 1);
		backfill_plan_waits(cfg, plan, i, &waits);
		const char *row[4] = { order, j->name, key,
			it->ndeps ? waits.data : "-" };
		cmd_table_row(&t, row);
	}
	buf_free(&waits);
	cmd_table_print(&t, out);
	buf_printf(out, "%zu partitions: %zu of %s, %zu downstream\n", plan->n,
		   plan->nroot, plan->nroot ?
		   cfg->jobs[plan->items[0].job].name : "-",
		   plan->n - plan->nroot);
	if (plan->nopen > 0)
		buf_printf(out, "not closed: %zu downstream partitions left"
			   " out, their interval has not closed yet (the"
			   " inputs still to land in their window build"
			   " them; build_future: true plans them now)\n",
			   plan->nopen);
	if (rq->concurrency > 0)
		buf_printf(out, "concurrency: at most %d runs of this request at"
			   " once\n", rq->concurrency);
	if (rq->fail_fast)
		buf_addstr(out, "fail-fast: the rest is cancelled after the first"
			   " failure\n");
	if (rq->downstream != NULL)
		buf_printf(out, "downstream: only %s and what they feed; the"
			   " other downstream jobs' partitions are left stale\n",
			   rq->downstream);
	backfill_cutoff_text(cfg, plan, rq, out);
	estimate_text(cfg, est, out);
	backfill_budget_text(rq, est, out);
}

/* Print a plan (dry run) as a table or JSON, with its estimate. */
static void
backfill_render_plan(const struct config *cfg, const struct plan *plan,
		     const struct sched_req *rq, const struct estimate *est,
		     bool json, struct buf *out)
{
	if (json)
		backfill_plan_json(cfg, plan, rq, est, out);
	else
		backfill_plan_text(cfg, plan, rq, est, out);
}

/* The request's budget (budget.h, BUDGET-1): --budget within the job's
 * max_backfill_time (its form checked by the specification); a rerun
 * has none. */
static int
backfill_budget(const struct job_def *jd, const struct cmdreq_backfill *req,
		struct sched_req *rq, struct err *err)
{
	if (strcmp(rq->kind, "rerun") == 0)
		return 0;
	return budget_of(jd->name, jd->max_backfill_time, req->budget,
			 &rq->budget_s, &rq->budget_source, err);
}

/* The request's own controls from its fields (--concurrency,
 * --fail-fast, --downstream; their forms checked by the specification):
 * 0, or -1 after refusing.  *keep is allocated for --downstream (the
 * caller frees it). */
static int
backfill_controls(const struct config *cfg, int j,
		  const struct cmdreq_backfill *req, struct sched_req *rq,
		  bool **keep, struct cmd_res *res)
{
	const struct job_def *jd = &cfg->jobs[j];
	const char *down = req->downstream.text;
	long long n = req->concurrency;
	struct err err;

	rq->fail_fast = req->fail_fast;
	rq->no_cutoff = req->no_cutoff;
	if (backfill_budget(jd, req, rq, &err) < 0) {
		cmd_fail_err(res, &err);
		return -1;
	}
	if (n > 0) {
		if (n > jd->concurrency) {
			cmd_fail(res, EXIT_BAD_INPUT, "--concurrency %lld is above"
				 " %s's own concurrency %d: give at most %d (a"
				 " request's cap only lowers its job's)", n,
				 jd->name, jd->concurrency, jd->concurrency);
			return -1;
		}
		rq->concurrency = (int)n;
	}
	if (down != NULL) {
		*keep = xcalloc(cfg->njobs ? cfg->njobs : 1, sizeof **keep);
		if (plan_select_downstream(cfg, j, down, *keep, &err) < 0) {
			cmd_fail_err(res, &err);
			return -1;
		}
		rq->keep = *keep;
		rq->downstream = down;
	}
	return 0;
}

/* rerun: the one partition, a key of the job's grain within its bounds. */
static int
backfill_rerun_part(const struct cmdreq_backfill *req, struct cmd_keys *kc,
		    struct sched_req *rq, struct err *err)
{
	const char *partition = req->partition.text;
	part_t p;

	if (cal_parse_key(job_cal(kc->j), partition, &p, err) < 0 ||
	    backfill_check_bounds(kc->j, p, p, err) < 0)
		return -1;
	rq->from_key = rq->to_key = partition;
	return cmd_keys_cb(partition, kc, err);
}

/* --from/--to at the job's grain: the range within the job's bounds and,
 * unless --built-by narrows it, its max_backfill; its keys into fk, tk. */
static int
backfill_range(const struct cmdreq_backfill *req, struct cmd_keys *kc,
	       struct part_range *r, struct sched_req *rq, char *fk, char *tk,
	       struct err *err)
{
	if (cal_range_parse(job_cal(kc->j), req->from.text, req->to.text, r,
			err) < 0)
		return -1;
	if ((req->built_by == NULL && !req->changed &&
	     backfill_check_count(kc->j, range_count(r), "this range",
				  err) < 0) ||
	    backfill_check_bounds(kc->j, r->first, r->last, err) < 0)
		return -1;
	cal_key(job_cal(kc->j), r->first, fk);
	cal_key(job_cal(kc->j), r->last, tk);
	rq->from_key = fk;
	rq->to_key = tk;
	return 0;
}

/* --built-by VERSION: the partitions whose newest build used it, within
 * the range r when --from/--to narrow it. */
static int
backfill_built_by(struct sched *s, const char *built_by, bool narrow,
		  const struct part_range *r, struct cmd_keys *kc,
		  struct err *err)
{
	size_t k = 0;

	if (sched_read_keys_built_by(s, kc->j->name, built_by,
				     cmd_keys_cb, kc, err) < 0)
		return -1;
	if (narrow) {
		for (size_t i = 0; i < kc->n; i++)
			if (kc->parts[i] >= r->first && kc->parts[i] <= r->last)
				kc->parts[k++] = kc->parts[i];
		kc->n = k;
	}
	return backfill_check_count(kc->j, (int64_t)kc->n, "the set built by"
				    " that version", err);
}

/* --changed: the partitions whose newest build used a code version other
 * than the job's current one, within the range r when --from/--to narrow
 * it; refused whole above max_backfill. */
static int
backfill_changed(struct sched *s, bool narrow, const char *fk,
		 const char *tk, struct cmd_keys *kc, struct err *err)
{
	if (sched_read_keys_changed(s, kc->j->name,
				    kc->j->code_version, narrow ? fk : "",
				    narrow ? tk : "~", cmd_keys_cb, kc,
				    err) < 0)
		return -1;
	return backfill_check_count(kc->j, (int64_t)kc->n, "the set built by"
				    " other code versions", err);
}

/* --stale: the job's stale partitions; 1 (with a message in res) when
 * there are none, -1 after refusing. */
static int
backfill_stale(struct sched *s, int j, struct cmd_keys *kc,
	       struct cmd_res *res)
{
	struct err err;

	if (kc->j->nupstream == 0 && kc->j->self_lookback == 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "%s has no upstream jobs, so"
			 " nothing of it can be stale: --stale is for"
			 " downstream jobs", kc->j->name);
		return -1;
	}
	if (sched_stale(s, j, backfill_stale_cb, kc, &err) < 0 ||
	    backfill_check_count(kc->j, (int64_t)kc->n, "the stale set",
				 &err) < 0) {
		cmd_fail_err(res, &err);
		return -1;
	}
	if (kc->n == 0) {
		buf_printf(&res->out, "nothing of %s is stale: no request"
			   " queued\n", kc->j->name);
		return 1;
	}
	return 0;
}

/* --dates-file: the file's dates (at least one), within the bounds. */
static int
backfill_dates(const struct cmdspec_dates *dates, struct cmd_keys *kc,
	       struct cmd_res *res)
{
	struct err err;

	if (backfill_parse_dates(kc->j, dates->text, dates->file,
				 dates->lines, kc, &err) < 0) {
		cmd_fail_err(res, &err);
		return -1;
	}
	if (kc->n == 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "the dates file holds no dates:"
			 " write one date (YYYY-MM-DD) a line");
		return -1;
	}
	kc->n = backfill_unique(kc->parts, kc->n);
	if (backfill_check_bounds(kc->j, kc->parts[0], kc->parts[kc->n - 1],
				  &err) < 0) {
		cmd_fail_err(res, &err);
		return -1;
	}
	return 0;
}

/* No dates at all: the one partition, -, of a job with partition: none;
 * refused for any other job. */
static int
backfill_whole(struct cmd_keys *kc, struct sched_req *rq, struct err *err)
{
	if (kc->j->grain != GRAIN_NONE)
		return err_set(err, EXIT_BAD_INPUT, "no dates given: add --from "
			       "D --to D, --dates-file F, --stale, --built-by "
			       "VERSION or --changed");
	rq->from_key = rq->to_key = "-";
	return cmd_keys_cb("-", kc, err);
}

/*
 * The partitions of a backfill, chosen the one way the specification let
 * through (--built-by possibly narrowed by --from/--to): 0, 1 when there
 * is nothing to queue (res says so), or -1 after refusing.  fk and tk
 * (CAL_KEY_MAX) hold the range's keys for the record.
 */
static int
backfill_select(struct cmd_ctx *ctx, const struct cmdreq_backfill *req,
		int j, struct cmd_keys *kc, struct sched_req *rq, char *fk,
		char *tk, struct cmd_res *res)
{
	struct sched *s = ctx->sched;
	const char *built_by = req->built_by;
	bool from = req->from.text != NULL;
	struct part_range r = { 0, -1 };
	struct err err;

	if (from && backfill_range(req, kc, &r, rq, fk, tk, &err) < 0)
		goto fail;
	if (built_by != NULL) {
		rq->kind = "built_by";
		if (backfill_built_by(s, built_by, from, &r, kc, &err) < 0)
			goto fail;
		return 0;
	}
	if (req->changed) {
		if (backfill_changed(s, from, fk, tk, kc, &err) < 0)
			goto fail;
		return 0;
	}
	if (req->stale) {
		rq->kind = "stale";
		return backfill_stale(s, j, kc, res);
	}
	if (req->dates.text != NULL)
		return backfill_dates(&req->dates, kc, res);
	if (!from && backfill_whole(kc, rq, &err) < 0)
		goto fail;
	for (part_t q = r.first; q <= r.last; q++) {
		char key[CAL_KEY_MAX];

		if (cal_empty(job_cal(kc->j), q))
			continue; /* a day the zone skipped */
		cal_key(job_cal(kc->j), q, key);
		if (cmd_keys_cb(key, kc, &err) < 0)
			goto fail;
	}
	return 0;
fail:
	cmd_fail_err(res, &err);
	return -1;
}

/* The answer to a queued request: its id and counts, text or JSON. */
static void
backfill_answer(struct cmd_res *res, const struct sched_req *rq,
		const struct plan *plan, int64_t id, const char *job,
		bool json)
{
	res->request = id;
	res->total = (int64_t)plan->n;
	if (res->frame) {
		proto_add_int(res->frame, "request", id);
		proto_add_int(res->frame, "total", (long long)plan->n);
	}
	if (json) {
		buf_printf(&res->out, "{\"request\": %" PRId64 ", \"partitions\":"
			   " %zu, \"downstream\": %zu, \"concurrency\": ", id,
			   plan->nroot, plan->n - plan->nroot);
		if (rq->concurrency > 0)
			buf_printf(&res->out, "%d", rq->concurrency);
		else
			buf_addstr(&res->out, "null");
		buf_printf(&res->out, ", \"fail_fast\": %s, \"cutoff\": %s,"
			   " \"budget_seconds\": ", rq->fail_fast ? "true" : "false",
			   rq->no_cutoff ? "false" : "true");
		if (rq->budget_s > 0)
			buf_printf(&res->out, "%" PRId64 "}\n", rq->budget_s);
		else
			buf_addstr(&res->out, "null}\n");
		return;
	}
	buf_printf(&res->out, "request %" PRId64 ": queued %zu partition%s of"
		   " %s and %zu downstream", id, plan->nroot,
		   plan->nroot == 1 ? "" : "s", job, plan->n - plan->nroot);
	if (rq->concurrency > 0)
		buf_printf(&res->out, "; at most %d at once", rq->concurrency);
	if (rq->fail_fast)
		buf_addstr(&res->out, "; fail-fast");
	if (rq->no_cutoff && plan->n > plan->nroot)
		buf_addstr(&res->out, "; no cutoff: every downstream partition"
			   " is rebuilt");
	if (rq->budget_s > 0) {
		char b[CAL_KEY_MAX];

		cal_format_duration(rq->budget_s, b);
		buf_printf(&res->out, "; budget %s of warehouse time", b);
	}
	buf_addstr(&res->out, "\n");
}

/* The answer once the scheduler took the request (sched_backfill, or
 * the proof it waited for): a dry run's plan, the queued request, or
 * why nothing was queued.  cfg and jd: the configuration it was planned
 * with. */
static void
backfill_result(const struct config *cfg, const struct job_def *jd,
		const struct cmdreq_backfill *req,
		const struct sched_backfill *bf, struct cmd_res *res)
{
	const struct sched_req *rq = &bf->rq;

	if (req->dry_run)
		backfill_render_plan(cfg, &bf->plan, rq, &bf->est, req->json,
				     &res->out);
	else if (bf->id == 0 && req->changed)
		buf_printf(&res->out, "nothing to run: no partition of %s%s was"
			   " last built by a code version other than %s\n",
			   jd->name, req->from.text ? " in that range" : "",
			   jd->code_version);
	else if (bf->id == 0 && req->built_by != NULL)
		buf_printf(&res->out, "nothing to run: no partition of %s%s was"
			   " last built by version %s\n", jd->name,
			   req->from.text ? " in that range" : "",
			   req->built_by);
	else if (bf->id == 0)
		buf_printf(&res->out, "nothing to run: no partition of %s in"
			   " that range matches --reprocess %s\n", jd->name,
			   cmdspec_reprocess_name(rq->reprocess));
	else
		backfill_answer(res, rq, &bf->plan, bf->id, jd->name,
				req->json);
}

/* The proof passed (verify.h's then): the answer from what the
 * scheduler did with the request it held (data: a copy of the request). */
static void
backfill_verified(void *data, const struct sched_proof *p,
		  struct cmd_stream *cs, struct buf *out)
{
	const struct cmdspec_req *req = data;
	struct cmd_res res = { .status = EXIT_DONE };

	buf_init(&res.out);
	err_clear(&res.err);
	if (p->rc < 0)
		cmd_fail_err(&res, &p->err);
	else
		backfill_result(p->run.cfg, p->run.job, &req->backfill, p->bf,
				&res);
	cs->status = res.status;
	cs->err = res.err;
	cs->request = res.request;
	cs->total = res.total;
	if (res.status == EXIT_DONE || !res.err.msg[0])
		buf_add(out, res.out.data, res.out.len);
	buf_free(&res.out);
}

/* Free the copy of a request its proof's answer held. */
static void
backfill_req_free(void *data)
{
	cmdspec_req_free(data);
	free(data);
}

/* Hand the request (rq, its partitions in kc) to the scheduler, which
 * plans, estimates, fits the budget, proves and queues it
 * (sched_backfill); answer what it did, or stream the proof's answer. */
static void
backfill_submit(struct cmd_ctx *ctx, const struct cmdspec_req *creq,
		struct cmd_keys *kc, const struct sched_req *rq,
		struct cmd_res *res)
{
	const struct cmdreq_backfill *req = &creq->backfill;
	struct sched_backfill bf = { .rq = *rq, .dry_run = req->dry_run,
				     .verify = req->verify };
	struct cmdspec_req *copy;
	struct err err;

	kc->n = backfill_unique(kc->parts, kc->n);
	bf.rq.parts = kc->parts;
	bf.rq.nparts = kc->n;
	if (sched_backfill(ctx->sched, &bf, &err) < 0) {
		cmd_fail_err(res, &err);
	} else if (bf.proof != NULL) {
		copy = xcalloc(1, sizeof *copy);
		cmdspec_req_dup(creq, copy);
		res->stream = verify_stream(bf.proof, req->json,
					    backfill_verified, copy,
					    backfill_req_free);
	} else {
		backfill_result(sched_config(ctx->sched), kc->j, req, &bf,
				res);
	}
	sched_backfill_free(&bf);
}

/* backfill JOB (--from D --to D | --dates-file F | --stale | --built-by V)
 * and rerun JOB PARTITION */
static void
cmd_backfill_exec(struct cmd_ctx *ctx, const struct cmdspec_req *creq,
		  struct cmd_res *res)
{
	const struct cmdreq_backfill *req = &creq->backfill;
	bool rerun = creq->cs == &cmdspec_rerun;
	const struct config *cfg = sched_config(ctx->sched);
	struct sched_req rq = { .kind = rerun ? "rerun" : "backfill" };
	struct cmd_keys kc = { 0 };
	char fk[CAL_KEY_MAX], tk[CAL_KEY_MAX];
	bool *keep = NULL;
	struct err err;
	int j, rc;

	if ((j = cmd_job(ctx, req->job, res)) < 0)
		return;
	kc.j = &cfg->jobs[j];
	rq.job = j;
	rq.reverse = req->reverse;
	rq.no_downstream = req->no_downstream;
	rq.reason = req->reason;
	/* the specification let through one of its names, or none: all */
	rq.reprocess = req->reprocess.name != NULL ?
	    (enum reprocess)req->reprocess.i : REPROCESS_ALL;
	if (backfill_controls(cfg, j, req, &rq, &keep, res) < 0)
		goto out;
	if (rerun) {
		rc = backfill_rerun_part(req, &kc, &rq, &err);
		if (rc < 0)
			cmd_fail_err(res, &err);
	} else {
		rc = backfill_select(ctx, req, j, &kc, &rq, fk, tk, res);
	}
	if (rc == 0)
		backfill_submit(ctx, creq, &kc, &rq, res);
out:
	free(kc.parts);
	free(keep);
}

const struct cmd_entry cmd_backfill_entry = {
	&cmdspec_backfill, cmd_backfill_exec
};
const struct cmd_entry cmd_rerun_entry = {
	&cmdspec_rerun, cmd_backfill_exec
};
