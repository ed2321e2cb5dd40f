/*
 * cmd_runs.c - runs: the runs, newest first, streamed page by page from the
 * store.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "json.h"
#include "severity.h"
#include "text.h"
#include "xalloc.h"

/* Rows of `runs` per page. */
#define CMD_RUNS_PAGE 500

/*
 * `runs` is a stream: a cursor over the state store (store_runs_open),
 * one page of at most CMD_RUNS_PAGE rows or about CMD_PAGE_BYTES of text
 * per next(), as one JSON array (json), one object per line (jsonl) or
 * a table whose widths only grow from page to page.
 */
struct runs_ctx {
	struct cmd_stream cs;
	struct store_runs_cursor *cur;
	struct sched *sched;
	bool json, jsonl;
	bool started;
	int64_t limit; /* 0: all */
	int64_t n;     /* rows so far */
	struct buf *out;
	struct cmd_table t;
	char head[512]; /* a line above the table, or "" */
};

void
cmd_json_time(struct buf *b, int64_t ms, bool has)
{
	char t[CAL_KEY_MAX];

	if (!has) {
		buf_addstr(b, "null");
		return;
	}
	cal_format_iso_ms(ms, t);
	json_str(b, t);
}

/* One run as a JSON object (an element of the array, or a line). */
static void
runs_json_row(struct runs_ctx *rc, const struct store_run_row *r,
	      const struct cmd_shards *sh, bool has_sh)
{
	struct buf *out = rc->out;

	if (rc->jsonl)
		buf_addstr(out, "{\"id\": ");
	else
		buf_printf(out, "%s{\"id\": ", rc->n ? ",\n  " : "\n  ");
	rc->n++;
	cmd_json_count(out, r->has_id, r->id);
	buf_printf(out, ", \"request\": %" PRId64 ", \"job\": ",
		   r->request_id);
	json_str(out, r->job);
	buf_addstr(out, ", \"partition\": ");
	json_str(out, r->key);
	buf_printf(out, ", \"attempt\": %d, \"state\": \"%s\","
		   " \"started_at\": ", r->attempt, r->state);
	cmd_json_time(out, r->started_at, r->has_started_at);
	buf_addstr(out, ", \"finished_at\": ");
	cmd_json_time(out, r->finished_at, r->has_finished_at);
	buf_addstr(out, ", \"error\": ");
	json_str(out, r->error);
	buf_printf(out, ", \"warnings\": %s",
		   strcmp(r->state, "succeeded") == 0 &&
		   severity_is_note(r->error) ? "true" : "false");
	buf_addstr(out, ", \"rows_changed\": ");
	cmd_json_count(out, r->has_rows, r->rows_changed);
	buf_addstr(out, ", \"code_version\": ");
	json_str(out, r->code_version);
	buf_addstr(out, ", \"marked_by\": ");
	json_str(out, r->marked_by);
	buf_addstr(out, ", \"shards\": ");
	cmd_shards_json(out, sh, has_sh);
	buf_addstr(out, rc->jsonl ? "}\n" : "}");
}

/* One run as a row of the table. */
static void
runs_text_row(struct runs_ctx *rc, const struct store_run_row *r,
	      const struct cmd_shards *sh, bool has_sh)
{
	char st[CAL_KEY_MAX], dur[32], id[24], rq[24], att[12], rows[24];
	char shards[320], errcol[4096];

	cmd_fmt_time(r->started_at, r->has_started_at, st);
	/* a partition cancelled before it started has a finish only */
	if (r->has_started_at && r->has_finished_at)
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
	/* a partition some shards have not published yet says so */
	if (has_sh && sh->published < sh->of) {
		cmd_shards_text(sh, shards, sizeof shards);
		snprintf(errcol, sizeof errcol, "%s%s%s", shards,
			 r->error ? "; " : "", r->error ? r->error : "");
	} else {
		snprintf(errcol, sizeof errcol, "%s", r->error ? r->error : "");
	}
	const char *row[11] = { id, rq, r->job, r->key, att, r->state, st, dur,
		rows, r->code_version ? r->code_version : "-", errcol };
	cmd_table_row(&rc->t, row);
	rc->n++;
}

/* One run as JSON or a table row; 1 ends the page. */
static int
runs_cb(const struct store_run_row *r, void *data, struct err *err)
{
	struct runs_ctx *rc = data;
	struct cmd_shards sh = { 0 };
	bool has_sh = r->has_id && cmd_shards_read(rc->sched, r->request_id,
						   r->job, r->key, r->id, &sh);

	(void)err;
	if (rc->json || rc->jsonl) {
		runs_json_row(rc, r, &sh, has_sh);
		return (rc->limit > 0 && rc->n >= rc->limit) ||
		    rc->out->len >= CMD_PAGE_BYTES;
	}
	runs_text_row(rc, r, &sh, has_sh);
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
		done = sched_read_runs_page(rc->cur, (int)want, runs_cb, rc,
					    &cs->err);
	if (done < 0) {
		cs->status = EXIT_WORK_FAILED;
		cmd_table_print(&rc->t, out);
		return -1;
	}
	if (rc->limit > 0 && rc->n >= rc->limit)
		done = 1;
	if (!rc->json && !rc->jsonl)
		cmd_table_print(&rc->t, out);
	if (done && rc->json)
		buf_addstr(out, rc->n ? "\n]\n" : "]\n");
	return done;
}

/* Free the runs stream. */
static void
runs_free(struct cmd_stream *cs)
{
	struct runs_ctx *rc = (struct runs_ctx *)cs;

	sched_read_runs_close(rc->cur);
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
	if (sched_read_request_controls(ctx->sched, request, &conc, &ff,
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

/* Count a partition of a job in the state store. */
static void
runs_history_cb(const char *key, enum mstate st, void *data)
{
	(void)key;
	(void)st;
	(*(int64_t *)data)++;
}

/* A job no longer configured whose partitions the state store still has
 * (its history stays reachable by `runs --job`): true, and the note above
 * the table in *head. */
static bool
runs_removed_job(struct cmd_ctx *ctx, const char *name, char *head,
		 size_t size)
{
	int64_t n = 0;
	struct err err;
	char q[128];

	/* every partition key starts with its year's digits */
	if (sched_read_last_states(ctx->sched, name, "0", ":",
				   runs_history_cb, &n, &err) < 0 || n == 0)
		return false;
	snprintf(head, size, "job %s is not in the configuration (removed?):"
		 " its runs from the state store\n",
		 text_escape(name, q, sizeof q));
	return true;
}

/* The table's head row, and page 1's widths from what is known of
 * every page (the newest id, the job names, the widest state and
 * time), so that the pages stay aligned. */
static void
runs_table_head(struct runs_ctx *rc, const struct config *cfg,
		const char *job)
{
	const char *head[11] = { "ID", "REQUEST", "JOB", "PARTITION",
		"ATTEMPT", "STATE", "STARTED", "DURATION", "ROWS", "VERSION",
		"ERROR" };
	char id[24];

	cmd_table_row(&rc->t, head);
	snprintf(id, sizeof id, "%" PRId64, sched_read_runs_max_id(rc->cur));
	if (strlen(id) > rc->t.width[0])
		rc->t.width[0] = strlen(id);
	for (size_t i = 0; i < cfg->njobs; i++)
		if (strlen(cfg->jobs[i].name) > rc->t.width[2])
			rc->t.width[2] = strlen(cfg->jobs[i].name);
	if (job != NULL && strlen(job) > rc->t.width[2])
		rc->t.width[2] = strlen(job);
	if (rc->t.width[5] < strlen("succeeded"))
		rc->t.width[5] = strlen("succeeded");
	if (rc->t.width[6] < strlen("2026-01-01T00:00:00.000Z"))
		rc->t.width[6] = strlen("2026-01-01T00:00:00.000Z");
}

static void
cmd_runs_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	      struct cmd_res *res)
{
	const struct cmdreq_runs *q = &req->runs;
	bool text = !q->json && !q->jsonl;
	long long limit = q->limit;
	const struct config *cfg = sched_config(ctx->sched);
	struct runs_ctx *rc;
	char removed[256] = "", rjob[128];
	bool fin;
	struct err err;

	if (q->job != NULL && config_job_index(cfg, q->job) < 0 &&
	    !runs_removed_job(ctx, q->job, removed, sizeof removed)) {
		(void)cmd_job(ctx, q->job, res); /* unknown: its error */
		return;
	}
	/* a request the store does not know: as audit, retry and wait */
	if (q->request > 0 &&
	    sched_read_request_get(ctx->sched, q->request, rjob, sizeof rjob,
				   &fin, &err) != 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "no request %lld: see"
			 " 'backfillctl runs' for request ids",
			 (long long)q->request);
		return;
	}
	/* positive integers, a known state, not json with jsonl: the
	 * specification checked them */
	if (text && limit == 0 && req->tty)
		limit = 50;
	rc = xcalloc(1, sizeof *rc);
	if (sched_read_runs_open(ctx->sched, q->job, q->request,
				 q->state.name, &rc->cur, &err) < 0) {
		free(rc);
		cmd_fail_err(res, &err);
		return;
	}
	rc->sched = ctx->sched;
	rc->cs.next = runs_next;
	rc->cs.free = runs_free;
	rc->cs.status = EXIT_DONE;
	err_clear(&rc->cs.err);
	rc->json = q->json;
	rc->jsonl = q->jsonl;
	rc->limit = limit;
	if (q->request > 0 && text)
		runs_request_head(ctx, q->request, rc->head, sizeof rc->head);
	if (removed[0] && text)
		snprintf(rc->head + strlen(rc->head),
			 sizeof rc->head - strlen(rc->head), "%s", removed);
	rc->t.ncols = 11;
	if (text)
		runs_table_head(rc, cfg, q->job);
	res->stream = &rc->cs;
}

const struct cmd_entry cmd_runs_entry = {
	&cmdspec_runs, cmd_runs_exec
};
