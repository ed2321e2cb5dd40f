/*
 * cmd.c - backfillctl's commands, daemon side.
 *
 * A table of commands (name, whether it changes state, handler), as tmux
 * lists its cmd_entry structs.  Every handler validates its fields itself
 * (never trusting the client's checks), answers with status/out/err, and
 * changes nothing when it refuses.  Output is a human table, or JSON with
 * the shapes of DESIGN.md when json=1.
 */
#include "cmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "clock.h"
#include "estimate.h"
#include "json.h"
#include "log.h"
#include "map_view.h"
#include "report.h"
#include "text.h"
#include "throttle.h"
#include "verify.h"

#ifndef BACKFILLD_VERSION
#define BACKFILLD_VERSION "0.1.0"
#endif

struct cmd_res {
	int status;
	struct buf out;
	struct err err;
	struct buf *frame;         /* NULL: the fields go to request, total */
	struct cmd_stream *stream; /* set by a handler that streams */
	int64_t request, total;
};

/* Pages of a stream: about this many bytes of output at most (a page
 * ends after the row that crosses it), and a long `out` is cut into DATA
 * chunks of this size. */
#define CMD_PAGE_BYTES (256 * 1024)
/* Rows of `runs` per page. */
#define CMD_RUNS_PAGE 500

struct cmd_entry {
	const char *name;
	bool mutates;
	void (*exec)(struct cmd_ctx *ctx, const struct proto_msg *req,
		     struct cmd_res *res);
};

/* Refuse with a status and a message. */
static void
res_fail(struct cmd_res *res, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
res_fail(struct cmd_res *res, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_setv(&res->err, status, fmt, ap);
	va_end(ap);
	res->status = status;
}

/* Take an error as the result. */
static void
res_err(struct cmd_res *res, const struct err *err)
{
	res->err = *err;
	res->status = err->code == EXIT_INTERNAL ? EXIT_WORK_FAILED : err->code;
}

/* A boolean flag field. */
static bool
flag(const struct proto_msg *req, const char *key)
{
	const char *v = proto_get(req, key);

	return v != NULL && strcmp(v, "1") == 0;
}

/* The job named by field `job`, or -1 after refusing. */
static int
cmd_job(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res,
	bool required)
{
	const struct config *cfg = sched_config(ctx->sched);
	const char *name = proto_get(req, "job");
	struct buf names;
	char q[128];
	int j;

	if (name == NULL || name[0] == '\0') {
		if (required)
			res_fail(res, EXIT_BAD_INPUT, "no job given: name one of"
				 " the configured jobs (backfillctl status lists"
				 " them)");
		return -1;
	}
	j = config_job_index(cfg, name);
	if (j >= 0)
		return j;
	buf_init(&names);
	for (size_t i = 0; i < cfg->njobs && i < 12; i++)
		buf_printf(&names, "%s%s", i ? ", " : "", cfg->jobs[i].name);
	if (cfg->njobs > 12)
		buf_addstr(&names, ", ...");
	buf_add(&names, "", 1);
	res_fail(res, EXIT_BAD_INPUT, "unknown job \"%s\": the configured"
		 " jobs are %s", str_escape(name, q, sizeof q), names.data);
	buf_free(&names);
	return -1;
}

/* Format epoch ms as ISO-8601 or "-" when absent. */
static void
fmt_time(int64_t ms, bool has, char *buf)
{
	if (has)
		cal_format_iso_ms(ms, buf);
	else
		strcpy(buf, "-");
}

/* ---- tables ----------------------------------------------------------- */

#define TABLE_MAX_COLS 16

struct table {
	size_t ncols;
	char **cells; /* row-major */
	size_t nrows, cap;
	size_t width[TABLE_MAX_COLS];
};

/* Add a row of ncols strings. */
static void
table_row(struct table *t, const char *const *cols)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 32;
		t->cells = realloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
		if (t->cells == NULL)
			abort();
	}
	for (size_t i = 0; i < t->ncols; i++) {
		const char *c = cols[i] ? cols[i] : "";
		size_t w = strlen(c);

		t->cells[t->nrows * t->ncols + i] = strdup(c);
		if (w > t->width[i])
			t->width[i] = w;
	}
	t->nrows++;
}

/* Print the rows aligned (last column unpadded) and free them; the
 * widths stay, so that a streamed table printed page by page stays
 * aligned as long as later rows are no wider (widths only grow). */
static void
table_print(struct table *t, struct buf *out)
{
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t i = 0; i < t->ncols; i++) {
			const char *c = t->cells[r * t->ncols + i];

			if (i + 1 == t->ncols)
				buf_printf(out, "%s\n", c);
			else
				buf_printf(out, "%-*s  ", (int)t->width[i], c);
			free(t->cells[r * t->ncols + i]);
		}
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
	t->cap = 0;
}

/* ---- backfill and rerun ----------------------------------------------- */

/* Order partitions. */
static int
part_cmp(const void *a, const void *b)
{
	part_t x = *(const part_t *)a, y = *(const part_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort and drop duplicates. */
static size_t
parts_unique(part_t *p, size_t n)
{
	size_t k = 0;

	if (n == 0)
		return 0;
	qsort(p, n, sizeof *p, part_cmp);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || p[k - 1] != p[i])
			p[k++] = p[i];
	return k;
}

/* Refuse partitions outside the job's start..end. */
static int
check_bounds(const struct job_def *j, part_t first, part_t last,
	     struct err *err)
{
	char k[CAL_KEY_MAX];

	if (j->has_start && first < j->start) {
		part_key(j->grain, j->start, k);
		return err_set(err, EXIT_BAD_INPUT, "%s has no partitions before"
			       " its start %s: begin the range there", j->name, k);
	}
	if (j->has_end && last > j->end) {
		part_key(j->grain, j->end, k);
		return err_set(err, EXIT_BAD_INPUT, "%s has no partitions after"
			       " its end %s: end the range there", j->name, k);
	}
	return 0;
}

/* Refuse a count above the job's bound (DESIGN.md: refused whole). */
static int
check_count(const struct job_def *j, int64_t count, const char *what,
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

struct keys_ctx {
	const struct job_def *j;
	part_t *parts;
	size_t n, cap;
};

/* Collect a key into a partition list. */
static int
keys_collect_cb(const char *key, void *data, struct err *err)
{
	struct keys_ctx *kc = data;
	part_t p;

	if (part_parse_key(kc->j->grain, key, &p, NULL) < 0)
		return 0;
	if (kc->n == kc->cap) {
		kc->cap = kc->cap ? kc->cap * 2 : 64;
		kc->parts = realloc(kc->parts, kc->cap * sizeof *kc->parts);
		if (kc->parts == NULL)
			return err_set(err, EXIT_INTERNAL, "out of memory");
	}
	kc->parts[kc->n++] = p;
	return 0;
}

/* Collect a stale partition of the job. */
static int
stale_keys_cb(int job, part_t part, bool built, int64_t built_at,
	      const struct stale_input *in, size_t nin, void *data,
	      struct err *err)
{
	struct keys_ctx *kc = data;
	char key[CAL_KEY_MAX];

	(void)job; (void)built; (void)built_at; (void)in; (void)nin;
	part_key(kc->j->grain, part, key);
	return keys_collect_cb(key, kc, err);
}

/* The file line of the n-th date (1-based): from the client's dates_lines
 * field when it sent one, else n itself. */
static long
dates_line_of(const char *lines, int n)
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
dates_check_count(struct keys_ctx *kc, struct err *err)
{
	kc->n = parts_unique(kc->parts, kc->n);
	return check_count(kc->j, (int64_t)kc->n, "the dates file", err);
}

/* Parse the dates field (one date, or hour key for hourly jobs, a line)
 * into the partitions that hold them; errors name file:line (the client
 * sends the file's name and each date's line), and the count is of
 * distinct partitions. */
static int
parse_dates(const struct job_def *j, const char *dates, const char *file,
	    const char *lines, struct keys_ctx *kc, struct err *err)
{
	const char *p = dates;
	int line = 0;
	char qf[256];

	str_escape(file ? file : "the dates file", qf, sizeof qf);
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
				       " a line", qf, dates_line_of(lines, line));
		memcpy(d, p, len);
		d[len] = '\0';
		if (range_parse_date(j->grain, d, &r, err) < 0) {
			err_prefix(err, "%s:%ld", qf, dates_line_of(lines, line));
			return -1;
		}
		for (part_t q = r.first; q <= r.last; q++) {
			char key[CAL_KEY_MAX];
			part_key(j->grain, q, key);
			if (keys_collect_cb(key, kc, err) < 0)
				return -1;
		}
		/* bounded memory: duplicates go every few bounds' worth */
		if (kc->n > 2 * (size_t)j->max_backfill + 64 &&
		    dates_check_count(kc, err) < 0)
			return -1;
		p += len + (nl ? 1 : 0);
	}
	return dates_check_count(kc, err);
}

/* A job's recent durations, for estimate_plan. */
static int
plan_durations_cb(const char *job, int64_t *ms, size_t max, size_t *n,
		  void *data, struct err *err)
{
	return store_durations(data, job, ms, max, n, err);
}

/* Print a plan as a table or JSON (dry run), with the request's own
 * controls (rq: concurrency and fail_fast) and the estimate. */
static void
render_plan(struct sched *s, const struct plan *plan,
	    const struct sched_req *rq, bool json, struct buf *out)
{
	const struct config *cfg = sched_config(s);
	char key[CAL_KEY_MAX], dk[CAL_KEY_MAX];
	struct estimate est;
	struct err err;

	if (estimate_plan(cfg, plan, rq->concurrency, plan_durations_cb,
			  sched_store(s), &est,
			  &err) < 0) {
		log_warn("event=estimate error=\"%s\"", err.msg);
		memset(&est, 0, sizeof est);
	}

	if (json) {
		buf_addstr(out, "{\"partitions\": [");
		for (size_t i = 0; i < plan->n; i++) {
			const struct plan_item *it = &plan->items[i];
			const struct job_def *j = &cfg->jobs[it->job];

			part_key(j->grain, it->part, key);
			buf_addstr(out, i ? ",\n  {" : "\n  {");
			buf_addstr(out, "\"job\": ");
			json_str(out, j->name);
			buf_addstr(out, ", \"partition\": ");
			json_str(out, key);
			buf_printf(out, ", \"downstream\": %s, \"waits_for\": [",
				   it->downstream ? "true" : "false");
			for (size_t d = 0; d < it->ndeps; d++) {
				const struct plan_item *in =
					&plan->items[plan->deps[it->dep_off + d]];
				const struct job_def *ij = &cfg->jobs[in->job];

				part_key(ij->grain, in->part, dk);
				buf_addstr(out, d ? ", {\"job\": " : "{\"job\": ");
				json_str(out, ij->name);
				buf_addstr(out, ", \"partition\": ");
				json_str(out, dk);
				buf_addstr(out, "}");
			}
			buf_addstr(out, "]}");
		}
		buf_printf(out, "%s], \"total\": %zu, \"downstream\": %zu,"
			   " \"concurrency\": ", plan->n ? "\n" : "", plan->n,
			   plan->n - plan->nroot);
		if (rq->concurrency > 0)
			buf_printf(out, "%d", rq->concurrency);
		else
			buf_addstr(out, "null");
		buf_printf(out, ", \"fail_fast\": %s, \"estimate\": ",
			   rq->fail_fast ? "true" : "false");
		estimate_json(cfg, &est, out);
		buf_addstr(out, "}\n");
		estimate_free(&est);
		return;
	}
	struct table t = { .ncols = 4 };
	const char *head[4] = { "ORDER", "JOB", "PARTITION", "WAITS FOR" };
	table_row(&t, head);
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_item *it = &plan->items[i];
		const struct job_def *j = &cfg->jobs[it->job];
		char order[24];
		struct buf waits;

		buf_init(&waits);
		part_key(j->grain, it->part, key);
		snprintf(order, sizeof order, "%zu", i + 1);
		for (size_t d = 0; d < it->ndeps; d++) {
			const struct plan_item *in =
				&plan->items[plan->deps[it->dep_off + d]];
			const struct job_def *ij = &cfg->jobs[in->job];

			part_key(ij->grain, in->part, dk);
			if (d == 0 || in->job != plan->items[plan->deps[it->dep_off + d - 1]].job)
				buf_printf(&waits, "%s%s %s", d ? "; " : "", ij->name, dk);
			else
				buf_printf(&waits, ", %s", dk);
		}
		buf_add(&waits, "", 1);
		const char *row[4] = { order, j->name, key, it->ndeps ? waits.data : "-" };
		table_row(&t, row);
		buf_free(&waits);
	}
	table_print(&t, out);
	buf_printf(out, "%zu partitions: %zu of %s, %zu downstream\n", plan->n,
		   plan->nroot, plan->nroot ? cfg->jobs[plan->items[0].job].name : "-",
		   plan->n - plan->nroot);
	if (rq->concurrency > 0)
		buf_printf(out, "concurrency: at most %d runs of this request at"
			   " once\n", rq->concurrency);
	if (rq->fail_fast)
		buf_addstr(out, "fail-fast: the rest is cancelled after the first"
			   " failure\n");
	estimate_text(cfg, &est, out);
	estimate_free(&est);
}

/* The request's own controls from its fields (--concurrency,
 * --fail-fast, --downstream): 0, or -1 after refusing.  *keep is
 * allocated for --downstream (the caller frees it). */
static int
cmd_request_controls(const struct config *cfg, int j,
		     const struct proto_msg *req, struct sched_req *rq,
		     bool **keep, struct cmd_res *res)
{
	const struct job_def *jd = &cfg->jobs[j];
	const char *conc = proto_get(req, "concurrency");
	const char *down = proto_get(req, "downstream");
	long long n;
	struct err err;

	rq->fail_fast = flag(req, "fail_fast");
	if (conc != NULL) {
		if (proto_get_int(req, "concurrency", &n) < 0 || n <= 0) {
			res_fail(res, EXIT_BAD_INPUT, "--concurrency must be a"
				 " positive integer, not \"%.40s\"", conc);
			return -1;
		}
		if (n > jd->concurrency) {
			res_fail(res, EXIT_BAD_INPUT, "--concurrency %lld is above"
				 " %s's own concurrency %d: give at most %d (a"
				 " request's cap only lowers its job's)", n,
				 jd->name, jd->concurrency, jd->concurrency);
			return -1;
		}
		rq->concurrency = (int)n;
	}
	if (down != NULL) {
		if (rq->no_downstream) {
			res_fail(res, EXIT_BAD_INPUT, "--downstream and"
				 " --no-downstream both given: choose one");
			return -1;
		}
		*keep = calloc(cfg->njobs ? cfg->njobs : 1, sizeof **keep);
		if (*keep == NULL) {
			res_fail(res, EXIT_WORK_FAILED, "out of memory");
			return -1;
		}
		if (plan_select_downstream(cfg, j, down, *keep, &err) < 0) {
			res_err(res, &err);
			return -1;
		}
		rq->keep = *keep;
		rq->downstream = down;
	}
	return 0;
}

static void cmd_backfill_verified(struct cmd_ctx *ctx,
				  const struct proto_msg *req,
				  struct cmd_stream *cs, struct buf *out);

/* backfill JOB ... and rerun JOB PARTITION; verified: the proof (--verify,
 * verify: true) has passed, or is not asked for. */
static void
cmd_backfill_common(struct cmd_ctx *ctx, const struct proto_msg *req,
		    struct cmd_res *res, bool rerun, bool verified)
{
	struct sched *s = ctx->sched;
	const struct config *cfg = sched_config(s);
	const char *from = proto_get(req, "from"), *to = proto_get(req, "to");
	const char *dates = proto_get(req, "dates");
	const char *reprocess = proto_get(req, "reprocess");
	const char *built_by = proto_get(req, "built_by");
	const char *partition = proto_get(req, "partition");
	bool stale = flag(req, "stale"), dry = flag(req, "dry_run");
	bool json = flag(req, "json");
	struct sched_req rq = { .kind = rerun ? "rerun" : "backfill" };
	struct keys_ctx kc = { 0 };
	struct plan plan;
	int64_t id = 0;
	struct err err;
	bool *keep = NULL;
	int j, modes;
	char fk[CAL_KEY_MAX], tk[CAL_KEY_MAX];

	plan_init(&plan);
	if ((j = cmd_job(ctx, req, res, true)) < 0)
		return;
	kc.j = &cfg->jobs[j];
	rq.job = j;
	rq.reverse = flag(req, "reverse");
	rq.no_downstream = flag(req, "no_downstream");
	rq.reason = proto_get(req, "reason");
	if (cmd_request_controls(cfg, j, req, &rq, &keep, res) < 0)
		goto out;
	if (reprocess == NULL || strcmp(reprocess, "all") == 0)
		rq.reprocess = REPROCESS_ALL;
	else if (strcmp(reprocess, "failed") == 0)
		rq.reprocess = REPROCESS_FAILED;
	else if (strcmp(reprocess, "missing") == 0)
		rq.reprocess = REPROCESS_MISSING;
	else {
		char q[64];

		res_fail(res, EXIT_BAD_INPUT, "--reprocess must be all, failed or"
			 " missing, not \"%s\"", str_escape(reprocess, q, sizeof q));
		return;
	}
	if (rerun) {
		part_t p;
		if (partition == NULL) {
			res_fail(res, EXIT_BAD_INPUT, "rerun needs a partition:"
				 " backfillctl rerun JOB PARTITION");
			return;
		}
		if (part_parse_key(kc.j->grain, partition, &p, &err) < 0 ||
		    check_bounds(kc.j, p, p, &err) < 0) {
			res_err(res, &err);
			return;
		}
		keys_collect_cb(partition, &kc, &err);
		rq.from_key = rq.to_key = partition;
		goto submit;
	}
	modes = (from || to) + (dates != NULL) + stale + (built_by != NULL);
	if (modes == 0) {
		res_fail(res, EXIT_BAD_INPUT, "say which partitions: --from D --to D,"
			 " --dates-file F, --stale or --built-by VERSION");
		return;
	}
	if (modes > 1 && !(built_by && (from || to) && !dates && !stale)) {
		res_fail(res, EXIT_BAD_INPUT, "give one of --from/--to, --dates-file"
			 " and --stale (--built-by may be narrowed by --from/--to)");
		return;
	}
	if ((from == NULL) != (to == NULL)) {
		res_fail(res, EXIT_BAD_INPUT, "--from and --to go together: give"
			 " both (the same date for one day)");
		return;
	}
	struct part_range r = { 0, -1 };
	if (from) {
		if (range_parse(kc.j->grain, from, to, &r, &err) < 0) {
			res_err(res, &err);
			return;
		}
		if ((!built_by && check_count(kc.j, range_count(&r),
					      "this range", &err) < 0) ||
		    check_bounds(kc.j, r.first, r.last, &err) < 0) {
			res_err(res, &err);
			return;
		}
		part_key(kc.j->grain, r.first, fk);
		part_key(kc.j->grain, r.last, tk);
		rq.from_key = fk;
		rq.to_key = tk;
	}
	if (built_by) {
		rq.kind = "built_by";
		if (store_keys_built_by(sched_store(s), kc.j->name, built_by,
					keys_collect_cb, &kc, &err) < 0) {
			res_err(res, &err);
			goto out;
		}
		if (from) {
			size_t k = 0;
			for (size_t i = 0; i < kc.n; i++)
				if (kc.parts[i] >= r.first && kc.parts[i] <= r.last)
					kc.parts[k++] = kc.parts[i];
			kc.n = k;
		}
		if (check_count(kc.j, (int64_t)kc.n, "the set built by that"
				" version", &err) < 0) {
			res_err(res, &err);
			goto out;
		}
	} else if (stale) {
		rq.kind = "stale";
		if (kc.j->nupstream == 0) {
			res_fail(res, EXIT_BAD_INPUT, "%s has no upstream jobs, so"
				 " nothing of it can be stale: --stale is for"
				 " downstream jobs", kc.j->name);
			return;
		}
		if (sched_stale(s, j, stale_keys_cb, &kc, &err) < 0) {
			res_err(res, &err);
			goto out;
		}
		if (check_count(kc.j, (int64_t)kc.n, "the stale set", &err) < 0) {
			res_err(res, &err);
			goto out;
		}
		if (kc.n == 0) {
			buf_printf(&res->out, "nothing of %s is stale: no request"
				   " queued\n", kc.j->name);
			goto out;
		}
	} else if (dates) {
		if (parse_dates(kc.j, dates, proto_get(req, "dates_file"),
				proto_get(req, "dates_lines"), &kc, &err) < 0) {
			res_err(res, &err);
			goto out;
		}
		if (kc.n == 0) {
			res_fail(res, EXIT_BAD_INPUT, "the dates file holds no"
				 " dates: write one date (YYYY-MM-DD) a line");
			goto out;
		}
		kc.n = parts_unique(kc.parts, kc.n);
		if (check_bounds(kc.j, kc.parts[0], kc.parts[kc.n - 1], &err) < 0) {
			res_err(res, &err);
			goto out;
		}
	} else {
		for (part_t q = r.first; q <= r.last; q++) {
			char key[CAL_KEY_MAX];
			part_key(kc.j->grain, q, key);
			if (keys_collect_cb(key, &kc, &err) < 0) {
				res_err(res, &err);
				goto out;
			}
		}
	}
submit:
	kc.n = parts_unique(kc.parts, kc.n);
	rq.parts = kc.parts;
	rq.nparts = kc.n;
	if (!verified && kc.n > 0 &&
	    (flag(req, "verify") || (kc.j->verify && !dry))) {
		char vk[CAL_KEY_MAX];

		/* the first partition the request would run */
		part_key(kc.j->grain, kc.parts[rq.reverse ? kc.n - 1 : 0], vk);
		res->stream = verify_start(ctx, req, j, vk, cmd_backfill_verified,
					   &err);
		if (res->stream == NULL)
			res_err(res, &err);
		goto out;
	}
	if (sched_submit(s, &rq, !dry, &plan, &id, &err) < 0) {
		res_err(res, &err);
		goto out;
	}
	if (dry) {
		render_plan(s, &plan, &rq, json, &res->out);
		goto out;
	}
	if (id == 0) {
		if (built_by)
			buf_printf(&res->out, "nothing to run: no partition of %s%s"
				   " was last built by version %s\n", kc.j->name,
				   from ? " in that range" : "", built_by);
		else
			buf_printf(&res->out, "nothing to run: no partition of %s"
				   " in that range matches --reprocess %s\n",
				   kc.j->name, reprocess ? reprocess : "all");
		goto out;
	}
	res->request = id;
	res->total = (int64_t)plan.n;
	if (res->frame) {
		proto_add_int(res->frame, "request", id);
		proto_add_int(res->frame, "total", (long long)plan.n);
	}
	if (json) {
		buf_printf(&res->out, "{\"request\": %" PRId64 ", \"partitions\":"
			   " %zu, \"downstream\": %zu, \"concurrency\": ", id,
			   plan.nroot, plan.n - plan.nroot);
		if (rq.concurrency > 0)
			buf_printf(&res->out, "%d", rq.concurrency);
		else
			buf_addstr(&res->out, "null");
		buf_printf(&res->out, ", \"fail_fast\": %s}\n",
			   rq.fail_fast ? "true" : "false");
	} else {
		buf_printf(&res->out, "request %" PRId64 ": queued %zu partition%s"
			   " of %s and %zu downstream", id, plan.nroot,
			   plan.nroot == 1 ? "" : "s", kc.j->name,
			   plan.n - plan.nroot);
		if (rq.concurrency > 0)
			buf_printf(&res->out, "; at most %d at once",
				   rq.concurrency);
		if (rq.fail_fast)
			buf_addstr(&res->out, "; fail-fast");
		buf_addstr(&res->out, "\n");
	}
out:
	plan_free(&plan);
	free(kc.parts);
	free(keep);
}

/* The proof passed: queue the request as asked (verify.h's then). */
static void
cmd_backfill_verified(struct cmd_ctx *ctx, const struct proto_msg *req,
		      struct cmd_stream *cs, struct buf *out)
{
	struct cmd_res res = { .status = EXIT_DONE };
	const char *name = proto_get(req, "cmd");

	buf_init(&res.out);
	err_clear(&res.err);
	cmd_backfill_common(ctx, req, &res, strcmp(name, "rerun") == 0, true);
	if (res.stream != NULL) { /* not from a verified request */
		res.stream->free(res.stream);
		res_fail(&res, EXIT_WORK_FAILED, "internal error: a verified"
			 " request asked for a proof again");
	}
	cs->status = res.status;
	cs->err = res.err;
	cs->request = res.request;
	cs->total = res.total;
	if (res.status == EXIT_DONE || !res.err.msg[0])
		buf_add(out, res.out.data, res.out.len);
	buf_free(&res.out);
}

static void
cmd_backfill(struct cmd_ctx *ctx, const struct proto_msg *req,
	     struct cmd_res *res)
{
	cmd_backfill_common(ctx, req, res, false, false);
}

static void
cmd_rerun(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	cmd_backfill_common(ctx, req, res, true, false);
}

/* verify JOB PARTITION: the proof alone. */
static void
cmd_verify(struct cmd_ctx *ctx, const struct proto_msg *req,
	   struct cmd_res *res)
{
	const char *partition = proto_get(req, "partition");
	struct err err;
	int j;

	if ((j = cmd_job(ctx, req, res, true)) < 0)
		return;
	if (partition == NULL) {
		res_fail(res, EXIT_BAD_INPUT, "verify needs a partition:"
			 " backfillctl verify JOB PARTITION");
		return;
	}
	res->stream = verify_start(ctx, req, j, partition, NULL, &err);
	if (res->stream == NULL)
		res_err(res, &err);
}

/* ---- status ----------------------------------------------------------- */

struct count_ctx {
	int64_t n;
};

/* Count stale partitions. */
static int
stale_count_cb(int job, part_t part, bool built, int64_t built_at,
	       const struct stale_input *in, size_t nin, void *data,
	       struct err *err)
{
	(void)job; (void)part; (void)built; (void)built_at; (void)in;
	(void)nin; (void)err;
	((struct count_ctx *)data)->n++;
	return 0;
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
	if (v.error[0])
		buf_printf(out, "warehouse %s: throttled since %s: %s (max"
			   " %.15g); no new run starts there\n", wh, at,
			   v.error, v.max);
	else
		buf_printf(out, "warehouse %s: %s since %s: value %.15g above"
			   " max %.15g; no new run starts there%s\n", wh,
			   v.critical ? "critical" : "throttled", at, v.value,
			   v.max, v.critical ? ", runs in flight are requeued" :
			   "");
}

static void
cmd_status(struct cmd_ctx *ctx, const struct proto_msg *req,
	   struct cmd_res *res)
{
	struct sched *s = ctx->sched;
	const struct config *cfg = sched_config(s);
	bool json = flag(req, "json");
	int only = -1;
	struct table t = { .ncols = 12 };
	struct err err;

	if (proto_get(req, "job") && (only = cmd_job(ctx, req, res, true)) < 0)
		return;
	if (json)
	{
		char now[CAL_KEY_MAX];

		cal_format_iso_ms(clock_now_ms(), now);
		struct store_stats ss;

		store_stats(sched_store(s), &ss);
		const char *why;
		int64_t since;
		char since_s[CAL_KEY_MAX];
		bool failed = sched_store_failed(s, &why, &since);

		buf_printf(&res->out, "{\"version\": \"%s\", \"now\": \"%s\","
			   " \"running\": %d, \"queued\": %" PRId64 ","
			   " \"runs_kept\": %" PRId64 ", \"store_bytes\": %"
			   PRId64 ", \"wal_bytes\": %" PRId64 ", \"store\":"
			   " {\"path\": ", BACKFILLD_VERSION, now,
			   sched_running(s), sched_queued(s), ss.runs_kept,
			   ss.db_bytes, ss.wal_bytes);
		json_str(&res->out, cfg->state_db);
		cal_format_iso_ms(since, since_s);
		buf_printf(&res->out, ", \"state\": \"%s\", \"since\": ",
			   failed ? "failed" : "ok");
		json_str(&res->out, failed ? since_s : NULL);
		buf_addstr(&res->out, ", \"error\": ");
		json_str(&res->out, failed ? why : NULL);
		buf_addstr(&res->out, "}, \"jobs\": [");
	}
	else {
		const char *head[12] = { "JOB", "GRAIN", "PAUSED", "WATERMARK",
			"NEXT DUE", "CATCHUP", "QUEUED", "RUNNING", "SUCCEEDED",
			"FAILED", "BLOCKED", "STALE" };
		table_row(&t, head);
	}
	for (size_t i = 0, k = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];
		struct sched_job_view v;
		int64_t counts[MS_COUNT];
		struct count_ctx cc = { 0 };
		char wm[CAL_KEY_MAX], nd[CAL_KEY_MAX], gf[CAL_KEY_MAX],
		     gt[CAL_KEY_MAX];

		if (only >= 0 && (int)i != only)
			continue;
		sched_job_view(s, (int)i, &v);
		counts[MS_SUCCEEDED] = v.succeeded;
		counts[MS_FAILED] = v.failed;
		if (j->nupstream > 0)
			sched_stale(s, (int)i, stale_count_cb, &cc, &err);
		if (v.has_watermark)
			part_key(j->grain, v.watermark, wm);
		if (v.has_next_due)
			cal_format_iso_ms(v.next_due * 1000, nd);
		if (json) {
			buf_addstr(&res->out, k++ ? ",\n  {" : "\n  {");
			buf_addstr(&res->out, "\"name\": ");
			json_str(&res->out, j->name);
			buf_printf(&res->out, ", \"grain\": \"%s\", \"paused\": %s,"
				   " \"watermark\": ", grain_name(j->grain),
				   v.paused ? "true" : "false");
			json_str(&res->out, v.has_watermark ? wm : NULL);
			buf_addstr(&res->out, ", \"next_due\": ");
			json_str(&res->out, v.has_next_due ? nd : NULL);
			buf_printf(&res->out, ", \"catchup\": \"%s\", \"gap\": ",
				   v.catchup);
			if (v.has_gap) {
				part_key(j->grain, v.gap_from, gf);
				part_key(j->grain, v.gap_to, gt);
				buf_printf(&res->out, "{\"from\": \"%s\", \"to\":"
					   " \"%s\", \"partitions\": %" PRId64 "}",
					   gf, gt, v.gap_to - v.gap_from + 1);
			} else {
				buf_addstr(&res->out, "null");
			}
			buf_printf(&res->out, ", \"queued\": %" PRId64 ", \"running\":"
				   " %" PRId64 ", \"succeeded\": %" PRId64 ","
				   " \"failed\": %" PRId64 ", \"blocked\": %" PRId64
				   ", \"stale\": %" PRId64 ", \"late\": %" PRId64
				   ", \"oldest_late\": ", v.queued, v.running,
				   counts[MS_SUCCEEDED], counts[MS_FAILED],
				   v.blocked, cc.n, v.late);
			if (v.late > 0)
				part_key(j->grain, v.late_oldest, gf);
			json_str(&res->out, v.late > 0 ? gf : NULL);
			buf_addstr(&res->out, "}");
			if (v.has_sensor) {
				char lc[CAL_KEY_MAX], nc[CAL_KEY_MAX];

				cal_format_iso_ms(v.last_check_ms, lc);
				cal_format_iso_ms(v.next_check * 1000, nc);
				res->out.len--; /* reopen the job object */
				buf_addstr(&res->out, ", \"late_data\": {\"last_check\": ");
				json_str(&res->out, v.has_last_check ? lc : NULL);
				buf_addstr(&res->out, ", \"next_check\": ");
				json_str(&res->out, nc);
				buf_printf(&res->out, ", \"found\": %" PRId64
					   ", \"error\": ", v.found);
				json_str(&res->out, v.sensor_error);
				buf_addstr(&res->out, "}}");
			}
		} else {
			char c[6][24], catch[80];
			snprintf(c[0], 24, "%" PRId64, v.queued);
			snprintf(c[1], 24, "%" PRId64, v.running);
			snprintf(c[2], 24, "%" PRId64, counts[MS_SUCCEEDED]);
			snprintf(c[3], 24, "%" PRId64, counts[MS_FAILED]);
			snprintf(c[4], 24, "%" PRId64, v.blocked);
			snprintf(c[5], 24, "%" PRId64, cc.n);
			if (v.has_gap) {
				part_key(j->grain, v.gap_from, gf);
				part_key(j->grain, v.gap_to, gt);
				snprintf(catch, sizeof catch, "refused (gap %s..%s)",
					 gf, gt);
			} else {
				snprintf(catch, sizeof catch, "%s", v.catchup);
			}
			const char *row[12] = { j->name, grain_name(j->grain),
				v.paused ? "yes" : "no", v.has_watermark ? wm : "-",
				v.has_next_due ? nd : "-", catch, c[0], c[1], c[2],
				c[3], c[4], c[5] };
			table_row(&t, row);
		}
	}
	if (json) {
		buf_addstr(&res->out, "\n], \"warehouses\": [");
		for (size_t w = 0; w < cfg->nwarehouses; w++) {
			char why[256], at[CAL_KEY_MAX];
			int64_t at_ms = 0;
			int st = sched_warehouse_state(s, cfg->warehouses[w].name,
						       why, sizeof why, &at_ms);

			buf_addstr(&res->out, w ? ",\n  {\"name\": " : "\n  {\"name\": ");
			json_str(&res->out, cfg->warehouses[w].name);
			buf_printf(&res->out, ", \"kind\": \"%s\", \"state\": \"%s\","
				   " \"checked_at\": ", cfg->warehouses[w].kind ==
				   WH_POSTGRES ? "postgres" : "sqlite",
				   st > 0 ? "ok" : st < 0 ? "unreachable" : "unknown");
			cal_format_iso_ms(at_ms, at);
			json_str(&res->out, st ? at : NULL);
			buf_addstr(&res->out, ", \"error\": ");
			json_str(&res->out, st < 0 ? why : NULL);
			buf_addstr(&res->out, ", \"throttle\": ");
			cmd_throttle_json(s, cfg->warehouses[w].name, &res->out);
			buf_addstr(&res->out, "}");
		}
		buf_addstr(&res->out, cfg->nwarehouses ? "\n]}\n" : "]}\n");
		return;
	}
	table_print(&t, &res->out);
	{
		struct store_stats ss;

		store_stats(sched_store(s), &ss);
		buf_printf(&res->out, "history: %" PRId64 " runs kept; state"
			   " store %.1f MiB, its WAL %.1f MiB\n", ss.runs_kept,
			   (double)ss.db_bytes / 1048576.0,
			   (double)ss.wal_bytes / 1048576.0);
		const char *why;
		int64_t since;
		char since_s[CAL_KEY_MAX];

		if (sched_store_failed(s, &why, &since)) {
			cal_format_iso_ms(since, since_s);
			buf_printf(&res->out, "state store %s cannot be written"
				   " since %s: %s; no new runs start until it"
				   " can (free space on its filesystem)\n",
				   cfg->state_db, since_s, why);
		}
	}
	for (size_t w = 0; w < cfg->nwarehouses; w++) {
		char why[256];
		int64_t at_ms = 0;

		if (sched_warehouse_state(s, cfg->warehouses[w].name, why,
					  sizeof why, &at_ms) < 0)
			buf_printf(&res->out, "warehouse %s: unreachable: %s\n",
				   cfg->warehouses[w].name, why);
		cmd_throttle_text(s, cfg->warehouses[w].name, &res->out);
	}
	for (size_t i = 0; i < cfg->njobs; i++) {
		struct sched_job_view v;
		char lc[CAL_KEY_MAX], nc[CAL_KEY_MAX];

		if (only >= 0 && (int)i != only)
			continue;
		sched_job_view(s, (int)i, &v);
		if (v.late > 0) {
			char ok[CAL_KEY_MAX];

			part_key(cfg->jobs[i].grain, v.late_oldest, ok);
			buf_printf(&res->out, "late %s: %" PRId64 " partition%s"
				   " past the deadline of %" PRId64 "s, oldest %s\n",
				   cfg->jobs[i].name, v.late, v.late == 1 ? "" : "s",
				   cfg->jobs[i].deadline, ok);
		}
		if (!v.has_sensor)
			continue;
		cal_format_iso_ms(v.last_check_ms, lc);
		cal_format_iso_ms(v.next_check * 1000, nc);
		if (!v.has_last_check)
			buf_printf(&res->out, "late_data %s: not checked yet; first"
				   " check %s\n", cfg->jobs[i].name, nc);
		else if (v.sensor_error)
			buf_printf(&res->out, "late_data %s: last check %s failed:"
				   " %s; next %s\n", cfg->jobs[i].name, lc,
				   v.sensor_error, nc);
		else
			buf_printf(&res->out, "late_data %s: last check %s found %"
				   PRId64 " partitions; next %s\n",
				   cfg->jobs[i].name, lc, v.found, nc);
	}
}

/* ---- runs ------------------------------------------------------------- */

/*
 * `runs` is a stream: a cursor over the state store (store_runs_open),
 * one page of at most CMD_RUNS_PAGE rows or about CMD_PAGE_BYTES of text
 * per next(), as one JSON array (json), one object per line (jsonl) or
 * a table whose widths only grow from page to page.
 */
struct runs_ctx {
	struct cmd_stream cs;
	struct store_runs_cursor *cur;
	bool json, jsonl;
	bool started;
	int64_t limit; /* 0: all */
	int64_t n;     /* rows so far */
	struct buf *out;
	struct table t;
	char head[512]; /* a line above the table, or "" */
};

/* One run as JSON or a table row; 1 ends the page. */
static int
runs_cb(const struct store_run_row *r, void *data, struct err *err)
{
	struct runs_ctx *rc = data;
	char st[CAL_KEY_MAX], dur[32], id[24], rq[24], att[12], rows[24];

	(void)err;
	if (rc->json || rc->jsonl) {
		if (rc->jsonl)
			buf_addstr(rc->out, "{\"id\": ");
		else
			buf_printf(rc->out, "%s{\"id\": ", rc->n ?
				   ",\n  " : "\n  ");
		rc->n++;
		if (r->has_id)
			buf_printf(rc->out, "%" PRId64, r->id);
		else
			buf_addstr(rc->out, "null");
		buf_printf(rc->out, ", \"request\": %" PRId64 ", \"job\": ",
			   r->request_id);
		json_str(rc->out, r->job);
		buf_addstr(rc->out, ", \"partition\": ");
		json_str(rc->out, r->key);
		buf_printf(rc->out, ", \"attempt\": %d, \"state\": \"%s\","
			   " \"started_at\": ", r->attempt, r->state);
		json_time(rc->out, r->started_at, r->has_started_at);
		buf_addstr(rc->out, ", \"finished_at\": ");
		json_time(rc->out, r->finished_at, r->has_finished_at);
		buf_addstr(rc->out, ", \"error\": ");
		json_str(rc->out, r->error);
		buf_addstr(rc->out, ", \"rows_changed\": ");
		if (r->has_rows)
			buf_printf(rc->out, "%" PRId64, r->rows_changed);
		else
			buf_addstr(rc->out, "null");
		buf_addstr(rc->out, ", \"code_version\": ");
		json_str(rc->out, r->code_version);
		buf_addstr(rc->out, rc->jsonl ? "}\n" : "}");
		return (rc->limit > 0 && rc->n >= rc->limit) ||
		    rc->out->len >= CMD_PAGE_BYTES;
	}
	fmt_time(r->started_at, r->has_started_at, st);
	if (r->has_finished_at)
		snprintf(dur, sizeof dur, "%.3fs",
			 (double)(r->finished_at - r->started_at) / 1000.0);
	else
		strcpy(dur, "-");
	if (r->has_id)
		snprintf(id, sizeof id, "%" PRId64, r->id);
	else
		strcpy(id, "-");
	snprintf(rq, sizeof rq, "%" PRId64, r->request_id);
	snprintf(att, sizeof att, "%d", r->attempt);
	if (r->has_rows)
		snprintf(rows, sizeof rows, "%" PRId64, r->rows_changed);
	else
		strcpy(rows, "-");
	const char *row[11] = { id, rq, r->job, r->key, att, r->state, st, dur,
		rows, r->code_version ? r->code_version : "-",
		r->error ? r->error : "" };
	table_row(&rc->t, row);
	rc->n++;
	return (rc->limit > 0 && rc->n >= rc->limit) ||
	    rc->t.nrows * 128 >= CMD_PAGE_BYTES;
}

/* The next page of runs. */
static int
runs_next(struct cmd_stream *cs, struct buf *out)
{
	struct runs_ctx *rc = (struct runs_ctx *)cs;
	int64_t want = CMD_RUNS_PAGE;
	int done = 0;

	rc->out = out;
	if (!rc->started) {
		rc->started = true;
		if (rc->json)
			buf_addstr(out, "[");
		buf_addstr(out, rc->head);
	}
	if (rc->limit > 0 && rc->limit - rc->n < want)
		want = rc->limit - rc->n;
	if (want > 0)
		done = store_runs_page(rc->cur, (int)want, runs_cb, rc,
				       &cs->err);
	if (done < 0) {
		cs->status = EXIT_WORK_FAILED;
		table_print(&rc->t, out);
		return -1;
	}
	if (rc->limit > 0 && rc->n >= rc->limit)
		done = 1;
	if (!rc->json && !rc->jsonl)
		table_print(&rc->t, out);
	if (done && rc->json)
		buf_addstr(out, rc->n ? "\n]\n" : "]\n");
	return done;
}

/* Free the runs stream. */
static void
runs_free(struct cmd_stream *cs)
{
	struct runs_ctx *rc = (struct runs_ctx *)cs;

	store_runs_close(rc->cur);
	for (size_t i = 0; i < rc->t.nrows * rc->t.ncols; i++)
		free(rc->t.cells[i]);
	free(rc->t.cells);
	free(rc);
}

/* The line above `runs --request N`'s table that gives the request's own
 * controls, or "" when it has none. */
static void
runs_request_head(struct cmd_ctx *ctx, int64_t request, char *head,
		  size_t size)
{
	char down[256];
	int conc = 0, len = 0;
	bool ff = false;

	head[0] = '\0';
	if (store_request_controls(sched_store(ctx->sched), request, &conc, &ff,
				   down, sizeof down, NULL) != 0 ||
	    (conc == 0 && !ff && down[0] == '\0'))
		return;
	len = snprintf(head, size, "request %" PRId64 ":", request);
	if (conc > 0 && len >= 0 && (size_t)len < size)
		len += snprintf(head + len, size - (size_t)len, " concurrency %d",
				conc);
	if (ff && len >= 0 && (size_t)len < size)
		len += snprintf(head + len, size - (size_t)len, " fail-fast");
	if (down[0] && len >= 0 && (size_t)len < size)
		len += snprintf(head + len, size - (size_t)len, " downstream %s",
				down);
	if (len >= 0 && (size_t)len + 1 < size)
		snprintf(head + len, size - (size_t)len, "\n");
}

static void
cmd_runs(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	bool json = flag(req, "json"), jsonl = flag(req, "jsonl");
	long long request = 0, limit = 0;
	const char *state = proto_get(req, "state");
	const struct config *cfg = sched_config(ctx->sched);
	struct runs_ctx *rc;
	enum mstate ms;
	const char *job = NULL;
	struct err err;
	char id[24];

	if (proto_get(req, "job")) {
		int j = cmd_job(ctx, req, res, true);
		if (j < 0)
			return;
		job = sched_config(ctx->sched)->jobs[j].name;
	}
	if (proto_get(req, "request") &&
	    (proto_get_int(req, "request", &request) < 0 || request <= 0)) {
		res_fail(res, EXIT_BAD_INPUT, "--request takes a positive request"
			 " id");
		return;
	}
	if (proto_get(req, "limit") &&
	    (proto_get_int(req, "limit", &limit) < 0 || limit <= 0)) {
		res_fail(res, EXIT_BAD_INPUT, "--limit takes a positive number");
		return;
	}
	if (state && (mstate_parse(state, &ms) < 0)) {
		res_fail(res, EXIT_BAD_INPUT, "--state must be one of queued,"
			 " running, succeeded, failed, blocked, cancelled");
		return;
	}
	if (json && jsonl) {
		res_fail(res, EXIT_BAD_INPUT, "--json and --jsonl exclude each"
			 " other: choose one");
		return;
	}
	if (!json && !jsonl && limit == 0 && flag(req, "tty"))
		limit = 50;
	rc = calloc(1, sizeof *rc);
	if (rc == NULL) {
		res_fail(res, EXIT_WORK_FAILED, "out of memory");
		return;
	}
	if (store_runs_open(sched_store(ctx->sched), job, request, state,
			    &rc->cur, &err) < 0) {
		free(rc);
		res_err(res, &err);
		return;
	}
	rc->cs.next = runs_next;
	rc->cs.free = runs_free;
	rc->cs.status = EXIT_DONE;
	err_clear(&rc->cs.err);
	rc->json = json;
	rc->jsonl = jsonl;
	rc->limit = limit;
	if (request > 0 && !json && !jsonl)
		runs_request_head(ctx, request, rc->head, sizeof rc->head);
	rc->t.ncols = 11;
	if (!json && !jsonl) {
		const char *head[11] = { "ID", "REQUEST", "JOB", "PARTITION",
			"ATTEMPT", "STATE", "STARTED", "DURATION", "ROWS",
			"VERSION", "ERROR" };

		table_row(&rc->t, head);
		/* page 1's widths from what is known of every page */
		snprintf(id, sizeof id, "%" PRId64,
			 store_runs_max_id(rc->cur));
		if (strlen(id) > rc->t.width[0])
			rc->t.width[0] = strlen(id);
		for (size_t i = 0; i < cfg->njobs; i++)
			if (strlen(cfg->jobs[i].name) > rc->t.width[2])
				rc->t.width[2] = strlen(cfg->jobs[i].name);
		if (rc->t.width[5] < strlen("succeeded"))
			rc->t.width[5] = strlen("succeeded");
		if (rc->t.width[6] < strlen("2026-01-01T00:00:00.000Z"))
			rc->t.width[6] = strlen("2026-01-01T00:00:00.000Z");
	}
	res->stream = &rc->cs;
}

/* ---- stale ------------------------------------------------------------ */

struct stale_ctx {
	struct sched *s;
	bool json;
	size_t n;
	struct buf *out;
	struct table *t;
};

/* One stale partition. */
static int
stale_render_cb(int job, part_t part, bool built, int64_t built_at,
		const struct stale_input *in, size_t nin, void *data,
		struct err *err)
{
	struct stale_ctx *sc = data;
	const struct config *cfg = sched_config(sc->s);
	const struct job_def *j = &cfg->jobs[job];
	char key[CAL_KEY_MAX], ik[CAL_KEY_MAX], t[CAL_KEY_MAX];
	struct buf ins;

	(void)err;
	part_key(j->grain, part, key);
	if (sc->json) {
		buf_addstr(sc->out, sc->n++ ? ",\n  {\"job\": " : "\n  {\"job\": ");
		json_str(sc->out, j->name);
		buf_addstr(sc->out, ", \"partition\": ");
		json_str(sc->out, key);
		buf_addstr(sc->out, ", \"built_at\": ");
		json_time(sc->out, built_at, built);
		buf_addstr(sc->out, ", \"newer_inputs\": [");
		for (size_t i = 0; i < nin; i++) {
			const struct job_def *ij = &cfg->jobs[in[i].job];
			part_key(ij->grain, in[i].part, ik);
			buf_addstr(sc->out, i ? ", {\"job\": " : "{\"job\": ");
			json_str(sc->out, ij->name);
			buf_addstr(sc->out, ", \"partition\": ");
			json_str(sc->out, ik);
			buf_addstr(sc->out, ", \"built_at\": ");
			json_time(sc->out, in[i].built_at, true);
			buf_addstr(sc->out, "}");
		}
		buf_addstr(sc->out, "]}");
		return 0;
	}
	buf_init(&ins);
	for (size_t i = 0; i < nin; i++) {
		const struct job_def *ij = &cfg->jobs[in[i].job];
		part_key(ij->grain, in[i].part, ik);
		if (i == 0 || in[i].job != in[i - 1].job)
			buf_printf(&ins, "%s%s %s", i ? "; " : "", ij->name, ik);
		else
			buf_printf(&ins, ", %s", ik);
	}
	buf_add(&ins, "", 1);
	fmt_time(built_at, built, t);
	const char *row[4] = { j->name, key, built ? t : "never", ins.data };
	table_row(sc->t, row);
	buf_free(&ins);
	sc->n++;
	return 0;
}

static void
cmd_stale(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	struct table t = { .ncols = 4 };
	struct stale_ctx sc = { .s = ctx->sched, .json = flag(req, "json"),
				.out = &res->out, .t = &t };
	const char *head[4] = { "JOB", "PARTITION", "BUILT", "NEWER INPUTS" };
	struct err err;
	int only = -1;

	if (proto_get(req, "job") && (only = cmd_job(ctx, req, res, true)) < 0)
		return;
	if (sc.json)
		buf_addstr(&res->out, "{\"stale\": [");
	else
		table_row(&t, head);
	if (sched_stale(ctx->sched, only, stale_render_cb, &sc, &err) < 0) {
		res_err(res, &err);
		if (!sc.json)
			table_print(&t, &res->out);
		buf_reset(&res->out);
		return;
	}
	if (sc.json) {
		buf_addstr(&res->out, sc.n ? "\n]}\n" : "]}\n");
	} else if (sc.n == 0) {
		table_print(&t, &res->out);
		buf_reset(&res->out);
		buf_addstr(&res->out, "nothing is stale: every downstream partition"
			   " was built after its inputs landed\n");
	} else {
		table_print(&t, &res->out);
		buf_printf(&res->out, "%zu stale; rebuild with: backfillctl backfill"
			   " JOB --stale\n", sc.n);
	}
}

/* ---- pause, resume, cancel, reload ------------------------------------ */

/* pause/resume JOB. */
static void
cmd_pause_common(struct cmd_ctx *ctx, const struct proto_msg *req,
		 struct cmd_res *res, bool pause)
{
	struct err err;
	int j = cmd_job(ctx, req, res, true);

	if (j < 0)
		return;
	if (sched_pause(ctx->sched, j, pause, &err) < 0) {
		res_err(res, &err);
		return;
	}
	buf_printf(&res->out, "%s %s\n", sched_config(ctx->sched)->jobs[j].name,
		   pause ? "paused: nothing new of it starts; runs in flight"
			   " finish" : "resumed");
}

static void
cmd_pause(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	cmd_pause_common(ctx, req, res, true);
}

static void
cmd_resume(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	cmd_pause_common(ctx, req, res, false);
}

static void
cmd_cancel(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	long long id;
	int64_t dropped;
	struct err err;

	if (proto_get_int(req, "request", &id) < 0 || id <= 0) {
		res_fail(res, EXIT_BAD_INPUT, "cancel needs a positive request id:"
			 " backfillctl cancel REQUEST");
		return;
	}
	if (sched_cancel_request(ctx->sched, id, &dropped, &err) < 0) {
		res_err(res, &err);
		return;
	}
	buf_printf(&res->out, "request %lld: %" PRId64 " queued partitions"
		   " dropped; runs in flight finish\n", id, dropped);
}

/* retry REQUEST: its failed, blocked and cancelled partitions again. */
static void
cmd_retry(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	long long id;
	int64_t queued;
	struct err err;

	if (proto_get_int(req, "request", &id) < 0 || id <= 0) {
		res_fail(res, EXIT_BAD_INPUT, "retry needs a positive request id:"
			 " backfillctl retry REQUEST");
		return;
	}
	if (sched_retry_request(ctx->sched, id, &queued, &err) < 0) {
		res_err(res, &err);
		return;
	}
	proto_add_int(res->frame, "request", id);
	buf_printf(&res->out, "request %lld: %" PRId64 " partitions queued"
		   " again\n", id, queued);
}


/* "sql, timeout": the keys of a change, into a buf. */
static void
cmd_keys_text(struct buf *b, const char *const *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%s%s", i ? ", " : "", k[i]);
	buf_add(b, "", 1);
}

/* The reload report as JSON: DESIGN.md's {added, removed, changed} of jobs,
 * then warehouses, settings and what was cancelled. */
static void
cmd_reload_json(const struct config_diff *d, int64_t cancelled, bool dry_run,
		struct buf *out)
{
	buf_printf(out, "{\"dry_run\": %s, \"no_change\": %s, \"added\": ",
		   dry_run ? "true" : "false",
		   config_diff_empty(d) ? "true" : "false");
	json_strv(out, d->jobs.added, d->jobs.nadded);
	buf_addstr(out, ", \"removed\": ");
	json_strv(out, d->jobs.removed, d->jobs.nremoved);
	buf_addstr(out, ", \"changed\": [");
	for (size_t i = 0; i < d->jobs.nchanged; i++) {
		const struct config_diff_changed *c = &d->jobs.changed[i];

		buf_addstr(out, i ? ", {\"name\": " : "{\"name\": ");
		json_str(out, c->name);
		buf_printf(out, ", \"old_code_version\": \"%s\","
			   " \"new_code_version\": \"%s\", \"keys\": ",
			   c->old_code_version, c->new_code_version);
		json_keys(out, c->keys, c->nkeys);
		buf_addstr(out, "}");
	}
	buf_addstr(out, "], \"warehouses\": {\"added\": ");
	json_strv(out, d->warehouses.added, d->warehouses.nadded);
	buf_addstr(out, ", \"removed\": ");
	json_strv(out, d->warehouses.removed, d->warehouses.nremoved);
	buf_addstr(out, ", \"changed\": [");
	for (size_t i = 0; i < d->warehouses.nchanged; i++) {
		const struct config_diff_changed *c = &d->warehouses.changed[i];

		buf_addstr(out, i ? ", {\"name\": " : "{\"name\": ");
		json_str(out, c->name);
		buf_addstr(out, ", \"keys\": ");
		json_keys(out, c->keys, c->nkeys);
		buf_addstr(out, "}");
	}
	buf_addstr(out, "]}, \"settings\": ");
	json_keys(out, d->settings, d->nsettings);
	buf_printf(out, ", \"cancelled\": %" PRId64 "}\n", cancelled);
}

/* The reload report as a table (one row per difference) and a summary
 * line; "no change" when nothing differs. */
static void
cmd_reload_text(const struct config_diff *d, int64_t cancelled, bool dry_run,
		struct buf *out)
{
	struct table t = { .ncols = 4 };
	const char *head[4] = { "CHANGE", "WHAT", "NAME", "DETAIL" };
	struct buf det;
	char cnt[96];

	if (config_diff_empty(d)) {
		buf_addstr(out, dry_run ? "dry run: no change (the running"
			   " configuration is the file's)\n" :
			   "configuration reloaded: no change\n");
		return;
	}
	buf_init(&det);
	table_row(&t, head);
	for (size_t i = 0; i < d->jobs.nadded; i++) {
		const char *row[4] = { "added", "job", d->jobs.added[i], "" };
		table_row(&t, row);
	}
	for (size_t i = 0; i < d->jobs.nremoved; i++) {
		const char *row[4] = { "removed", "job", d->jobs.removed[i],
			"its queued partitions are cancelled" };
		table_row(&t, row);
	}
	for (size_t i = 0; i < d->jobs.nchanged; i++) {
		const struct config_diff_changed *c = &d->jobs.changed[i];

		buf_reset(&det);
		if (strcmp(c->old_code_version, c->new_code_version) != 0)
			buf_printf(&det, "code_version %s -> %s; ",
				   c->old_code_version, c->new_code_version);
		else
			buf_printf(&det, "code_version %s (same); ",
				   c->new_code_version);
		buf_addstr(&det, "keys: ");
		cmd_keys_text(&det, c->keys, c->nkeys);
		const char *row[4] = { "changed", "job", c->name, det.data };
		table_row(&t, row);
	}
	for (size_t i = 0; i < d->warehouses.nadded; i++) {
		const char *row[4] = { "added", "warehouse",
			d->warehouses.added[i], "" };
		table_row(&t, row);
	}
	for (size_t i = 0; i < d->warehouses.nremoved; i++) {
		const char *row[4] = { "removed", "warehouse",
			d->warehouses.removed[i], "" };
		table_row(&t, row);
	}
	for (size_t i = 0; i < d->warehouses.nchanged; i++) {
		const struct config_diff_changed *c = &d->warehouses.changed[i];

		buf_reset(&det);
		buf_addstr(&det, "keys: ");
		cmd_keys_text(&det, c->keys, c->nkeys);
		const char *row[4] = { "changed", "warehouse", c->name,
			det.data };
		table_row(&t, row);
	}
	for (size_t i = 0; i < d->nsettings; i++) {
		const char *row[4] = { "changed", "setting", d->settings[i], "" };
		table_row(&t, row);
	}
	table_print(&t, out);
	buf_free(&det);
	snprintf(cnt, sizeof cnt, "%" PRId64 " queued partition%s of removed"
		 " jobs %s", cancelled, cancelled == 1 ? "" : "s",
		 dry_run ? "would be cancelled" : "cancelled");
	buf_printf(out, "%s: jobs %zu added, %zu removed, %zu changed;"
		   " warehouses %zu added, %zu removed, %zu changed; settings"
		   " %zu changed; %s\n", dry_run ? "dry run, nothing applied" :
		   "configuration reloaded", d->jobs.nadded, d->jobs.nremoved,
		   d->jobs.nchanged, d->warehouses.nadded,
		   d->warehouses.nremoved, d->warehouses.nchanged,
		   d->nsettings, cnt);
}

void
cmd_reload_log(const struct config_diff *d, int64_t cancelled)
{
	struct buf k;

	if (config_diff_empty(d)) {
		log_notice("reload: no change");
		return;
	}
	buf_init(&k);
	for (size_t i = 0; i < d->jobs.nadded; i++)
		log_notice("reload: job=%s added", d->jobs.added[i]);
	for (size_t i = 0; i < d->jobs.nremoved; i++)
		log_notice("reload: job=%s removed", d->jobs.removed[i]);
	for (size_t i = 0; i < d->jobs.nchanged; i++) {
		const struct config_diff_changed *c = &d->jobs.changed[i];

		buf_reset(&k);
		for (size_t n = 0; n < c->nkeys; n++)
			buf_printf(&k, "%s%s", n ? "," : "", c->keys[n]);
		buf_add(&k, "", 1);
		log_notice("reload: job=%s changed old_code_version=%s"
			   " new_code_version=%s keys=%s", c->name,
			   c->old_code_version, c->new_code_version, k.data);
	}
	for (size_t i = 0; i < d->warehouses.nadded; i++)
		log_notice("reload: warehouse=%s added", d->warehouses.added[i]);
	for (size_t i = 0; i < d->warehouses.nremoved; i++)
		log_notice("reload: warehouse=%s removed",
			   d->warehouses.removed[i]);
	for (size_t i = 0; i < d->warehouses.nchanged; i++) {
		const struct config_diff_changed *c = &d->warehouses.changed[i];

		buf_reset(&k);
		for (size_t n = 0; n < c->nkeys; n++)
			buf_printf(&k, "%s%s", n ? "," : "", c->keys[n]);
		buf_add(&k, "", 1);
		log_notice("reload: warehouse=%s changed keys=%s", c->name,
			   k.data);
	}
	for (size_t i = 0; i < d->nsettings; i++)
		log_notice("reload: setting=%s changed", d->settings[i]);
	log_notice("reload: jobs added=%zu removed=%zu changed=%zu warehouses"
		   " added=%zu removed=%zu changed=%zu settings=%zu"
		   " cancelled=%" PRId64, d->jobs.nadded, d->jobs.nremoved,
		   d->jobs.nchanged, d->warehouses.nadded,
		   d->warehouses.nremoved, d->warehouses.nchanged, d->nsettings,
		   cancelled);
	buf_free(&k);
}

/* reload [--dry-run] [--json]: apply (or only compare) and report. */
static void
cmd_reload(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	struct err err;
	struct config_diff d;
	int64_t cancelled = 0;
	bool dry = flag(req, "dry_run");

	if (ctx->reload(ctx->reload_data, dry, &d, &cancelled, &err) < 0) {
		res_err(res, &err);
		return;
	}
	if (flag(req, "json"))
		cmd_reload_json(&d, cancelled, dry, &res->out);
	else
		cmd_reload_text(&d, cancelled, dry, &res->out);
	config_diff_free(&d);
}

/* ---- jobs ------------------------------------------------------------- */

/* The file that defines a job, shortened to a path relative to the main
 * configuration's folder when it lies inside it (for the table). */
static const char *
cmd_short_file(const struct config *cfg, const char *file)
{
	size_t n = strlen(cfg->dir);

	if (strncmp(file, cfg->dir, n) == 0 && file[n] == '/')
		return file + n + 1;
	return file;
}

/* jobs [--json]: the loaded jobs, how each runs, its schedule state, code
 * version and where it is defined. */
static void
cmd_jobs(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	struct sched *s = ctx->sched;
	const struct config *cfg = sched_config(s);
	bool json = flag(req, "json");
	struct table t = { .ncols = 9 };
	const char *head[9] = { "JOB", "GRAIN", "RUNS ON", "UPSTREAM", "PAUSED",
		"CATCHUP", "WATERMARK", "VERSION", "DEFINED AT" };
	struct buf on, up, at;

	buf_init(&on);
	buf_init(&up);
	buf_init(&at);
	if (json)
		buf_addstr(&res->out, "{\"jobs\": [");
	else
		table_row(&t, head);
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];
		struct sched_job_view v;
		char wm[CAL_KEY_MAX];

		sched_job_view(s, (int)i, &v);
		if (v.has_watermark)
			part_key(j->grain, v.watermark, wm);
		if (json) {
			buf_addstr(&res->out, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
			json_str(&res->out, j->name);
			buf_printf(&res->out, ", \"grain\": \"%s\", \"warehouse\": ",
				   grain_name(j->grain));
			json_str(&res->out, j->warehouse_name);
			buf_addstr(&res->out, ", \"command\": ");
			if (j->command != NULL)
				json_strv(&res->out, j->command, j->command_len);
			else
				buf_addstr(&res->out, "null");
			buf_addstr(&res->out, ", \"upstream\": ");
			json_strv(&res->out, j->upstream, j->nupstream);
			buf_printf(&res->out, ", \"paused\": %s, \"catchup\": \"%s\","
				   " \"watermark\": ", v.paused ? "true" : "false",
				   v.catchup);
			json_str(&res->out, v.has_watermark ? wm : NULL);
			buf_printf(&res->out, ", \"code_version\": \"%s\", \"file\": ",
				   j->code_version);
			json_str(&res->out, j->file);
			buf_printf(&res->out, ", \"line\": %d, \"column\": %d}",
				   j->pos.line, j->pos.col);
			continue;
		}
		buf_reset(&on);
		if (j->warehouse_name != NULL)
			buf_printf(&on, "warehouse %s", j->warehouse_name);
		else
			for (size_t a = 0; a < j->command_len; a++)
				buf_printf(&on, "%s%s", a ? " " : "command: ",
					   j->command[a]);
		buf_add(&on, "", 1);
		buf_reset(&up);
		for (size_t u = 0; u < j->nupstream; u++)
			buf_printf(&up, "%s%s", u ? "," : "", j->upstream[u]);
		if (j->nupstream == 0)
			buf_addstr(&up, "-");
		buf_add(&up, "", 1);
		buf_reset(&at);
		buf_printf(&at, "%s:%d", cmd_short_file(cfg, j->file), j->pos.line);
		buf_add(&at, "", 1);
		const char *row[9] = { j->name, grain_name(j->grain), on.data,
			up.data, v.paused ? "yes" : "no", v.catchup,
			v.has_watermark ? wm : "-", j->code_version, at.data };
		table_row(&t, row);
	}
	if (json) {
		buf_printf(&res->out, "%s]}\n", cfg->njobs ? "\n" : "");
	} else {
		table_print(&t, &res->out);
		buf_printf(&res->out, "%zu job%s from %zu file%s\n", cfg->njobs,
			   cfg->njobs == 1 ? "" : "s", cfg->nfiles,
			   cfg->nfiles == 1 ? "" : "s");
	}
	buf_free(&on);
	buf_free(&up);
	buf_free(&at);
}

/* ---- audit ------------------------------------------------------------ */

struct audit_ctx {
	bool json;
	struct buf *out;
	struct table *t;
	size_t n, passed, failed, unrun, downstream;
	char versions[8][32];
	size_t nversions;
};

/* One partition of the audited request. */
static void
audit_cb(const struct store_audit_row *r, void *data)
{
	struct audit_ctx *ac = data;
	bool passed = r->has_run && strcmp(r->item_state, "succeeded") == 0;
	char rb[24], ra[24];

	ac->n++;
	ac->downstream += r->downstream;
	if (!r->has_run)
		ac->unrun++;
	else if (passed)
		ac->passed++;
	else
		ac->failed++;
	if (r->code_version) {
		size_t v;
		for (v = 0; v < ac->nversions; v++)
			if (strcmp(ac->versions[v], r->code_version) == 0)
				break;
		if (v == ac->nversions && v < 8)
			snprintf(ac->versions[ac->nversions++], 32, "%s",
				 r->code_version);
	}
	if (ac->json) {
		buf_addstr(ac->out, ac->n > 1 ? ",\n  {\"job\": " : "\n  {\"job\": ");
		json_str(ac->out, r->job);
		buf_addstr(ac->out, ", \"partition\": ");
		json_str(ac->out, r->key);
		buf_printf(ac->out, ", \"downstream\": %s, \"state\": \"%s\","
			   " \"run\": ", r->downstream ? "true" : "false",
			   r->item_state);
		if (r->has_run)
			buf_printf(ac->out, "%" PRId64, r->run_id);
		else
			buf_addstr(ac->out, "null");
		buf_addstr(ac->out, ", \"code_version\": ");
		json_str(ac->out, r->code_version);
		buf_addstr(ac->out, ", \"config_hash\": ");
		json_str(ac->out, r->config_hash);
		buf_addstr(ac->out, ", \"rows_before\": ");
		if (r->has_rows_before)
			buf_printf(ac->out, "%" PRId64, r->rows_before);
		else
			buf_addstr(ac->out, "null");
		buf_addstr(ac->out, ", \"rows_after\": ");
		if (r->has_rows_after)
			buf_printf(ac->out, "%" PRId64, r->rows_after);
		else
			buf_addstr(ac->out, "null");
		buf_printf(ac->out, ", \"metrics\": %s, \"checks\": %s,"
			   " \"error\": ", r->metrics ? r->metrics : "{}",
			   r->checks ? r->checks : "[]");
		json_str(ac->out, r->error);
		buf_printf(ac->out, ", \"passed\": %s}", passed ? "true" : "false");
		return;
	}
	if (r->has_rows_before)
		snprintf(rb, sizeof rb, "%" PRId64, r->rows_before);
	else
		strcpy(rb, "-");
	if (r->has_rows_after)
		snprintf(ra, sizeof ra, "%" PRId64, r->rows_after);
	else
		strcpy(ra, "-");
	const char *row[8] = { r->job, r->key,
		r->code_version ? r->code_version : "-", rb, ra,
		r->metrics_text && r->metrics_text[0] ? r->metrics_text : "-",
		r->checks_text ? r->checks_text : (r->error ? r->error : "-"),
		!r->has_run ? r->item_state : passed ? "pass" : "FAIL" };
	table_row(ac->t, row);
}

static void
cmd_audit(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	long long id;
	struct table t = { .ncols = 8 };
	struct audit_ctx ac = { .json = flag(req, "json"), .out = &res->out,
				.t = &t };
	const char *head[8] = { "JOB", "PARTITION", "VERSION", "ROWS BEFORE",
		"ROWS AFTER", "METRICS BEFORE -> AFTER", "CHECKS", "RESULT" };
	char job[128];
	bool finished;
	struct err err;

	if (proto_get_int(req, "request", &id) < 0 || id <= 0) {
		res_fail(res, EXIT_BAD_INPUT, "audit needs --request N with a"
			 " positive request id");
		return;
	}
	if (store_request_get(sched_store(ctx->sched), id, job, sizeof job,
			      &finished, &err) != 0) {
		res_fail(res, EXIT_BAD_INPUT, "no request %lld: see 'backfillctl"
			 " runs' for request ids", id);
		return;
	}
	if (ac.json)
		buf_printf(&res->out, "{\"request\": %lld, \"job\": ", id);
	else
		table_row(&t, head);
	if (ac.json) {
		json_str(&res->out, job);
		buf_addstr(&res->out, ", \"partitions\": [");
	}
	if (store_audit_of(sched_store(ctx->sched), id, audit_cb, &ac, &err) < 0) {
		res_err(res, &err);
		if (!ac.json)
			table_print(&t, &res->out);
		buf_reset(&res->out);
		return;
	}
	if (ac.json) {
		buf_printf(&res->out, "%s], \"summary\": {\"partitions\": %zu,"
			   " \"downstream\": %zu, \"passed\": %zu, \"failed\":"
			   " %zu, \"not_run\": %zu, \"code_versions\": [",
			   ac.n ? "\n" : "", ac.n, ac.downstream, ac.passed,
			   ac.failed, ac.unrun);
		for (size_t v = 0; v < ac.nversions; v++)
			buf_printf(&res->out, "%s\"%s\"", v ? ", " : "",
				   ac.versions[v]);
		buf_addstr(&res->out, "]}}\n");
		return;
	}
	table_print(&t, &res->out);
	buf_printf(&res->out, "request %lld (%s): %zu partitions (%zu downstream):"
		   " %zu passed, %zu failed, %zu not run\n", id, job, ac.n,
		   ac.downstream, ac.passed, ac.failed, ac.unrun);
}

/* ---- the table -------------------------------------------------------- */

/* map JOB [--from D --to D]: the job's partitions as ranges (json) or a
 * calendar (colours when tty); see map.h and map_view.h. */
static void
cmd_map(struct cmd_ctx *ctx, const struct proto_msg *req, struct cmd_res *res)
{
	const struct config *cfg = sched_config(ctx->sched);
	struct map m;
	struct err err;
	int j;

	if ((j = cmd_job(ctx, req, res, true)) < 0)
		return;
	if (map_view_build(ctx->sched, j, proto_get(req, "from"),
			   proto_get(req, "to"), &m, &err) < 0) {
		res_err(res, &err);
		return;
	}
	if (flag(req, "json"))
		map_json(&m, cfg->jobs[j].name, &res->out);
	else
		map_text(&m, cfg->jobs[j].name, flag(req, "tty"), &res->out);
	map_free(&m);
}

/* report: the HTML page as out (the client writes it to its file). */
static void
cmd_report(struct cmd_ctx *ctx, const struct proto_msg *req,
	   struct cmd_res *res)
{
	(void)req;
	report_render(ctx->sched, &res->out);
}

static const struct cmd_entry cmd_table[] = {
	{ "backfill", true, cmd_backfill },
	{ "rerun", true, cmd_rerun },
	{ "verify", true, cmd_verify },
	{ "status", false, cmd_status },
	{ "runs", false, cmd_runs },
	{ "stale", false, cmd_stale },
	{ "audit", false, cmd_audit },
	{ "pause", true, cmd_pause },
	{ "resume", true, cmd_resume },
	{ "cancel", true, cmd_cancel },
	{ "retry", true, cmd_retry },
	{ "reload", true, cmd_reload },
	{ "jobs", false, cmd_jobs },
	{ "map", false, cmd_map },
	{ "report", false, cmd_report },
};

/* Whether this request changes state: a mutating command, except a
 * backfill or rerun with dry_run=1 (it only prints the plan). */
static bool
cmd_req_mutates(const struct cmd_entry *ce, const struct proto_msg *req)
{
	if (!ce->mutates)
		return false;
	/* a dry run (a plan, a reload's report) changes nothing */
	return !flag(req, "dry_run");
}

bool
cmd_mutates(const char *name)
{
	for (size_t i = 0; i < sizeof cmd_table / sizeof cmd_table[0]; i++)
		if (strcmp(cmd_table[i].name, name) == 0)
			return cmd_table[i].mutates;
	return false;
}

/* A finished text cut into chunks: the stream of an `out` too large
 * for one frame. */
struct text_stream {
	struct cmd_stream cs;
	char *data;
	size_t len, off;
};

/* The next chunk of the text. */
static int
text_next(struct cmd_stream *cs, struct buf *out)
{
	struct text_stream *ts = (struct text_stream *)cs;
	size_t n = ts->len - ts->off;

	if (n > CMD_PAGE_BYTES) {
		n = CMD_PAGE_BYTES;
		/* not inside a UTF-8 sequence */
		while (n > 1 && ((unsigned char)ts->data[ts->off + n] & 0xc0) ==
		       0x80)
			n--;
	}
	buf_add(out, ts->data + ts->off, n);
	ts->off += n;
	return ts->off == ts->len;
}

/* Free the text stream. */
static void
text_free(struct cmd_stream *cs)
{
	struct text_stream *ts = (struct text_stream *)cs;

	free(ts->data);
	free(ts);
}

void
cmd_stream_end(struct cmd_stream *cs, struct buf *resp)
{
	proto_add_int(resp, "status", cs->status);
	if (cs->err.msg[0])
		proto_add(resp, "err", cs->err.msg);
	if (cs->request > 0) {
		proto_add_int(resp, "request", cs->request);
		proto_add_int(resp, "total", cs->total);
	}
	cs->free(cs);
}

void
cmd_run(struct cmd_ctx *ctx, const struct proto_msg *req, struct buf *resp,
	struct cmd_stream **stream)
{
	const char *name = proto_get(req, "cmd");
	const struct cmd_entry *ce = NULL;
	struct cmd_res res = { .status = EXIT_DONE, .frame = resp };
	struct text_stream *ts;
	char qname[64];
	const char *why;

	*stream = NULL;
	buf_init(&res.out);
	err_clear(&res.err);
	for (size_t i = 0; i < sizeof cmd_table / sizeof cmd_table[0]; i++)
		if (strcmp(cmd_table[i].name, name) == 0)
			ce = &cmd_table[i];
	if (ce == NULL)
		res_fail(&res, EXIT_BAD_INPUT, "unknown command \"%s\": see"
			 " backfillctl --help", str_escape(name, qname, sizeof qname));
	else if (cmd_req_mutates(ce, req) && !ctx->may_change)
		res_fail(&res, EXIT_BAD_INPUT, "permission denied: %s changes"
			 " state and needs root, the daemon's user or the socket's"
			 " group", ce->name);
	else if (cmd_req_mutates(ce, req) &&
		 sched_store_failed(ctx->sched, &why, NULL))
		res_fail(&res, EXIT_WORK_FAILED, "the state store cannot be"
			 " written (%s): nothing was changed; free space on its"
			 " filesystem, backfilld resumes by itself", why);
	else
		ce->exec(ctx, req, &res);
	if (res.stream != NULL) {
		buf_free(&res.out);
		*stream = res.stream;
		return;
	}
	if (res.out.len > CMD_PAGE_BYTES && (res.status == EXIT_DONE ||
	    !res.err.msg[0]) && (ts = calloc(1, sizeof *ts)) != NULL) {
		/* too large for the RESPONSE: DATA frames, then the fields */
		ts->cs.next = text_next;
		ts->cs.free = text_free;
		ts->cs.status = res.status;
		ts->cs.err = res.err;
		ts->len = res.out.len;
		ts->data = buf_steal(&res.out);
		*stream = &ts->cs;
		return;
	}
	if (res.status != EXIT_DONE && res.err.msg[0]) {
		log_info("control: cmd=%s refused: %s",
			 str_escape(name, qname, sizeof qname), res.err.msg);
		buf_reset(&res.out);
	}
	proto_add_int(resp, "status", res.status);
	if (res.out.len > 0) {
		buf_add(&res.out, "", 1);
		proto_add(resp, "out", res.out.data);
	}
	if (res.err.msg[0])
		proto_add(resp, "err", res.err.msg);
	buf_free(&res.out);
}

/* ---- wait ------------------------------------------------------------- */

struct problems_ctx {
	struct buf *out;
	int n;
};

/* One failed or blocked partition of a waited request. */
static void
problem_cb(const char *job, const char *key, const char *state,
	   const char *error, const char *blocked_on, void *data)
{
	struct problems_ctx *pc = data;

	if (pc->n++ >= 20)
		return;
	if (strcmp(state, "blocked") == 0)
		buf_printf(pc->out, "  blocked %s %s: waits for %s, which failed\n",
			   job, key, blocked_on ? blocked_on : "an input");
	else
		buf_printf(pc->out, "  failed  %s %s: %s\n", job, key,
			   error ? error : "failed");
}

void
cmd_wait_summary(struct sched *s, int64_t request_id,
		 const struct sched_progress *p, struct buf *out)
{
	struct problems_ctx pc = { out, 0 };
	struct err err;

	buf_printf(out, "request %" PRId64 ": %" PRId64 " succeeded, %" PRId64
		   " failed, %" PRId64 " blocked, %" PRId64 " cancelled of %"
		   PRId64 " in %.1fs\n", request_id, p->succeeded, p->failed,
		   p->blocked, p->cancelled, p->total,
		   (double)p->elapsed_ms / 1000.0);
	if (p->failed + p->blocked == 0) {
		if (p->cancelled > 0)
			buf_printf(out, "%" PRId64 " partitions were cancelled:"
				   " backfillctl retry %" PRId64 " queues them"
				   " again\n", p->cancelled, request_id);
		return;
	}
	if (store_request_problems(sched_store(s), request_id, problem_cb, &pc,
				   &err) < 0) {
		buf_printf(out, "  (cannot list them: %s)\n", err.msg);
		return;
	}
	if (pc.n > 20)
		buf_printf(out, "  ... and %d more: backfillctl runs --request %"
			   PRId64 "\n", pc.n - 20, request_id);
	buf_printf(out, "fix the cause, then retry what failed (backfillctl"
		   " retry %" PRId64 ", or rerun JOB PARTITION); blocked"
		   " partitions run once their inputs land\n", request_id);
}
