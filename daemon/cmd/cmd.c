/*
 * cmd.c - backfillctl's commands, daemon side: the dispatch.
 *
 * cmd_run() finds the command's entry (one file per command, cmd_NAME.c,
 * as tmux lists its cmd_entry structs), refuses a mutating command to a
 * peer without the rights or while the state store cannot be written,
 * parses the request's fields once by the specification shared with
 * backfillctl (cmdspec.h) into a typed request, and calls the handler
 * with it: the only place a command's fields are read (beside `cmd`
 * and, for the rights, `dry_run`).  Its answer goes into
 * the RESPONSE, or becomes a stream of DATA frames when it is one or is
 * too large for one frame.  Also here: the helpers the command files
 * share (cmd_entry.h).
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "log.h"
#include "text.h"
#include "xalloc.h"

/* Refuse with a status and a message. */
void
cmd_fail(struct cmd_res *res, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_setv(&res->err, status, fmt, ap);
	va_end(ap);
	res->status = status;
}

/* Take an error as the result. */
void
cmd_fail_err(struct cmd_res *res, const struct err *err)
{
	res->err = *err;
	res->status = err->code == EXIT_INTERNAL ? EXIT_WORK_FAILED : err->code;
}

/* The job called name, or -1 after refusing. */
int
cmd_job(struct cmd_ctx *ctx, const char *name, struct cmd_res *res)
{
	const struct config *cfg = sched_config(ctx->sched);
	struct buf names;
	char q[128];
	int j;

	if (name == NULL) { /* the specification requires it */
		cmd_fail(res, EXIT_BAD_INPUT, "missing JOB: say which job");
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
	cmd_fail(res, EXIT_BAD_INPUT, "unknown job \"%s\": the configured"
		 " jobs are %s", text_escape(name, q, sizeof q), names.data);
	buf_free(&names);
	return -1;
}

/* A count as JSON, or null when not known. */
void
cmd_json_count(struct buf *out, bool has, int64_t n)
{
	if (has)
		buf_printf(out, "%" PRId64, n);
	else
		buf_addstr(out, "null");
}

/* Format epoch ms as ISO-8601 or "-" when absent. */
void
cmd_fmt_time(int64_t ms, bool has, char *buf)
{
	if (has)
		cal_format_iso_ms(ms, buf);
	else
		strcpy(buf, "-");
}

/* ---- tables ----------------------------------------------------------- */

/* Add a row of ncols strings, each a one-line cell: its control bytes
 * escaped by the one rule for outside text (text.h). */
void
cmd_table_row(struct cmd_table *t, const char *const *cols)
{
	struct buf c;

	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 32;
		t->cells = xreallocarray(t->cells, t->cap * t->ncols,
					 sizeof *t->cells);
	}
	for (size_t i = 0; i < t->ncols; i++) {
		buf_init(&c);
		text_escape_str(&c, cols[i]);
		if (c.len > t->width[i])
			t->width[i] = c.len;
		t->cells[t->nrows * t->ncols + i] = buf_steal(&c);
	}
	t->nrows++;
}

/* Print the rows aligned and free them (cmd_entry.h). */
void
cmd_table_print(struct cmd_table *t, struct buf *out)
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

/* Every command of the daemon, one file each (cmd_NAME.c), as tmux's
 * cmd.c lists them: a new command is a line here and one in the table. */
extern const struct cmd_entry cmd_backfill_entry, cmd_rerun_entry,
    cmd_verify_entry, cmd_status_entry, cmd_runs_entry, cmd_stale_entry,
    cmd_audit_entry, cmd_pause_entry, cmd_resume_entry, cmd_cancel_entry,
    cmd_retry_entry, cmd_reload_entry, cmd_jobs_entry, cmd_map_entry,
    cmd_report_entry, cmd_mark_entry, cmd_logs_entry;

static const struct cmd_entry *const cmd_table[] = {
	&cmd_backfill_entry, &cmd_rerun_entry, &cmd_verify_entry,
	&cmd_status_entry, &cmd_runs_entry, &cmd_stale_entry, &cmd_audit_entry,
	&cmd_pause_entry, &cmd_resume_entry, &cmd_cancel_entry,
	&cmd_retry_entry, &cmd_reload_entry, &cmd_jobs_entry, &cmd_map_entry,
	&cmd_report_entry, &cmd_mark_entry, &cmd_logs_entry
};

/* The entry of a command. */
const struct cmd_entry *
cmd_find(const char *name)
{
	for (size_t i = 0; i < sizeof cmd_table / sizeof cmd_table[0]; i++)
		if (strcmp(cmd_table[i]->spec->name, name) == 0)
			return cmd_table[i];
	return NULL;
}

/* A request field, for cmdspec_check (cmdspec_get_fn). */
static const char *
cmd_get(const void *src, const char *field)
{
	return proto_get(src, field);
}

/* Parse a request by the specification: the one place a command's
 * fields are read. */
int
cmd_parse(const struct cmd_entry *ce, const struct proto_msg *msg,
	  struct cmdspec_req *rq, struct err *err)
{
	return cmdspec_parse(ce->spec, cmd_get, msg, false, rq, err);
}

/* Whether this request changes state: a mutating command, except with
 * dry_run=1 where its specification has --dry-run (a plan, a reload's
 * report: it changes nothing).  Read before the request is parsed, as
 * the rights are checked before its fields (a peer without them is told
 * so whatever it sent), and by control.c for a request it forwards as
 * it came. */
static bool
cmd_req_mutates(const struct cmd_entry *ce, const struct proto_msg *msg)
{
	const char *dry = proto_get(msg, "dry_run");

	if (!(ce->spec->flags & CMDSPEC_MUTATES))
		return false;
	for (const struct cmdspec_arg *a = ce->spec->opts; a->name != NULL; a++)
		if (a->field != NULL && strcmp(a->field, "dry_run") == 0)
			return dry == NULL || strcmp(dry, "1") != 0;
	return true;
}

bool
cmd_request_mutates(const struct proto_msg *req)
{
	const struct cmd_entry *ce = cmd_find(proto_get(req, "cmd"));

	return ce != NULL && cmd_req_mutates(ce, req);
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

/* Find the request's command, check the rights, parse the fields into
 * the typed request the handler receives, and run it; the answer is in
 * res.  The name is left in *name for the log. */
static void
cmd_dispatch(struct cmd_ctx *ctx, const struct proto_msg *msg,
	     struct cmd_res *res, const char **name)
{
	const struct cmd_entry *ce;
	struct cmdspec_req rq = { 0 };
	char qname[64], why[1024];
	struct err err;

	*name = proto_get(msg, "cmd");
	ce = cmd_find(*name);
	if (ce == NULL)
		cmd_fail(res, EXIT_BAD_INPUT, "unknown command \"%s\": see"
			 " backfillctl --help", text_escape(*name, qname,
			 sizeof qname));
	else if (cmd_req_mutates(ce, msg) && !ctx->may_change)
		cmd_fail(res, EXIT_BAD_INPUT, "permission denied: %s changes"
			 " state and needs root, the daemon's user or the socket's"
			 " group", ce->spec->name);
	else if (cmd_req_mutates(ce, msg) &&
		 sched_store_failed(ctx->sched, NULL, NULL)) {
		sched_store_refusal(ctx->sched, why, sizeof why);
		cmd_fail(res, EXIT_WORK_FAILED, "%s", why);
	}
	else if (cmd_parse(ce, msg, &rq, &err) < 0)
		cmd_fail_err(res, &err);
	else
		ce->exec(ctx, &rq, res);
	cmdspec_req_free(&rq);
}

void
cmd_run(struct cmd_ctx *ctx, const struct proto_msg *req, struct buf *resp,
	struct cmd_stream **stream)
{
	struct cmd_res res = { .status = EXIT_DONE, .frame = resp };
	struct text_stream *ts;
	const char *name;
	char qname[64];

	*stream = NULL;
	buf_init(&res.out);
	err_clear(&res.err);
	cmd_dispatch(ctx, req, &res, &name);
	if (res.stream != NULL) {
		buf_free(&res.out);
		*stream = res.stream;
		return;
	}
	if (res.out.len > CMD_PAGE_BYTES && (res.status == EXIT_DONE ||
	    !res.err.msg[0])) {
		/* too large for the RESPONSE: DATA frames, then the fields */
		ts = xcalloc(1, sizeof *ts);
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
			 text_escape(name, qname, sizeof qname), res.err.msg);
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
