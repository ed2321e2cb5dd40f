/*
 * verify.c - the idempotency proof (verify.h).
 *
 * One proof is one exec_run with verify set, owned by a stream (struct
 * verify).  Its life:
 *   verify_start    submits the run; the stream's next() pauses;
 *   verify_done_cb  (loop thread) keeps the result and wakes the stream;
 *   next()          renders the verdict, and on success hands the copied
 *                   request to `then` (the backfill goes on);
 *   free()          a client that leaves while the run is in flight
 *                   orphans the proof: verify_done_cb frees it.
 * The run holds its own reference on the configuration it started with.
 */
#include "verify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "exec.h"
#include "json.h"
#include "log.h"
#include "xalloc.h"

struct verify {
	struct cmd_stream cs;  /* first: the stream control.c drives */
	struct exec_run run;
	struct exec_part part;
	struct cmd_ctx ctx;
	struct cmdspec_req req; /* a copy of the request, for then */
	verify_then_fn *then;
	bool json;
	bool running;          /* the run is in flight */
	bool orphan;           /* the stream was freed while it was */
};

int
verify_job_ok(const struct config *cfg, int j, struct err *err)
{
	const struct job_def *jd = &cfg->jobs[j];

	if (jd->sql == NULL)
		return err_set(err, EXIT_BAD_INPUT, "%s is a command job: the"
			       " proof runs a SQL job twice in one rolled-back"
			       " transaction, which a command cannot do",
			       jd->name);
	if (jd->table == NULL || jd->partition_column == NULL)
		return err_set(err, EXIT_BAD_INPUT, "%s declares no table: and"
			       " partition_column:, so there is no partition to"
			       " compare: add them to the job", jd->name);
	return 0;
}

/* Free a proof whose run is over. */
static void
verify_free_all(struct verify *v)
{
	exec_run_clear_results(&v->run);
	if (v->run.cfg)
		config_unref(v->run.cfg);
	cmdspec_req_free(&v->req);
	free(v);
}

/* The run finished (loop thread). */
static void
verify_done_cb(struct exec_run *run)
{
	struct verify *v = run->data;

	v->running = false;
	if (v->orphan) {
		verify_free_all(v);
		return;
	}
	if (v->cs.wake)
		v->cs.wake(v->cs.wake_data);
}

/* The verdict as JSON. */
static void
verify_json(const struct verify *v, bool same, struct buf *out)
{
	const struct exec_run *r = &v->run;

	buf_addstr(out, "{\"job\": ");
	json_str(out, r->job->name);
	buf_addstr(out, ", \"partition\": ");
	json_str(out, v->part.key);
	buf_printf(out, ", \"idempotent\": %s, \"rows_before\": %" PRId64
		   ", \"rows_first\": %" PRId64 ", \"rows_second\": %" PRId64
		   ", \"checksum_first\": ", same ? "true" : "false",
		   r->verify_rows[0], r->verify_rows[1], r->verify_rows[2]);
	json_str(out, r->verify_sum[1]);
	buf_addstr(out, ", \"checksum_second\": ");
	json_str(out, r->verify_sum[2]);
	buf_addstr(out, "}\n");
}

/* Render the verdict; on success go on with the request. */
static int
verify_next(struct cmd_stream *cs, struct buf *out)
{
	struct verify *v = (struct verify *)cs;
	const struct exec_run *r = &v->run;
	const char *job = r->job->name, *key = v->part.key;
	bool same;

	if (v->running)
		return CMD_STREAM_PAUSE;
	if (r->failed) {
		err_set(&cs->err, EXIT_BAD_INPUT, "verify %s %s: the proof could"
			" not run (%s): nothing was queued; fix the job or the"
			" warehouse and try again", job, key, r->error);
		cs->status = EXIT_BAD_INPUT;
		log_info("event=verify job=%s partition=%s result=error error=\"%s\"",
			 job, key, r->error);
		return 1;
	}
	same = r->verify_rows[1] == r->verify_rows[2] &&
	       strcmp(r->verify_sum[1], r->verify_sum[2]) == 0;
	log_info("event=verify job=%s partition=%s result=%s rows=%" PRId64
		 ",%" PRId64 ",%" PRId64, job, key, same ? "idempotent" :
		 "changed", r->verify_rows[0], r->verify_rows[1],
		 r->verify_rows[2]);
	if (!same) {
		cs->status = EXIT_BAD_INPUT;
		/* verify --json: the verdict on stdout, the line on stderr */
		if (v->json && v->then == NULL)
			verify_json(v, same, out);
		if (r->verify_rows[1] != r->verify_rows[2])
			err_set(&cs->err, EXIT_BAD_INPUT, "verify %s %s: the"
				" second run changed rows %" PRId64 " -> %" PRId64
				"%s: the request is refused and nothing was"
				" changed; make the job replace its partition"
				" (delete it first)", job, key,
				r->verify_rows[1], r->verify_rows[2],
				r->verify_rows[2] > r->verify_rows[1] ?
				" (the job appends)" : "");
		else
			err_set(&cs->err, EXIT_BAD_INPUT, "verify %s %s: the"
				" second run changed the partition's content"
				" (%" PRId64 " row%s, checksum %s -> %s): the job"
				" reads what it wrote; the request is refused"
				" and nothing was changed", job, key,
				r->verify_rows[2],
				r->verify_rows[2] == 1 ? "" : "s",
				r->verify_sum[1],
				r->verify_sum[2]);
		return 1;
	}
	if (v->then == NULL) {
		if (v->json)
			verify_json(v, same, out);
		else
			buf_printf(out, "verify %s %s: idempotent: the second"
				   " run left the partition as the first did"
				   " (%" PRId64 " row%s before, %" PRId64
				   " after, checksum %s); rolled back\n", job,
				   key, r->verify_rows[0],
				   r->verify_rows[0] == 1 ? "" : "s",
				   r->verify_rows[2],
				   r->verify_sum[2]);
		return 1;
	}
	if (!v->json)
		buf_printf(out, "verify %s %s: idempotent (%" PRId64 " row%s after"
			   " either run)\n", job, key, r->verify_rows[2],
			   r->verify_rows[2] == 1 ? "" : "s");
	v->then(&v->ctx, &v->req, cs, out);
	return 1;
}

/* The client is done with the stream. */
static void
verify_free(struct cmd_stream *cs)
{
	struct verify *v = (struct verify *)cs;

	if (v->running)
		v->orphan = true;
	else
		verify_free_all(v);
}

struct cmd_stream *
verify_start(struct cmd_ctx *ctx, const struct cmdspec_req *req, int j,
	     const char *key, bool json, verify_then_fn *then, struct err *err)
{
	struct config *cfg = sched_config(ctx->sched);
	const struct job_def *jd = &cfg->jobs[j];
	struct verify *v;
	part_t p;

	if (verify_job_ok(cfg, j, err) < 0 ||
	    part_parse_key(jd->grain, key, &p, err) < 0)
		return NULL;
	v = xcalloc(1, sizeof *v);
	cmdspec_req_dup(req, &v->req);
	v->cs.next = verify_next;
	v->cs.free = verify_free;
	v->ctx = *ctx;
	v->then = then;
	v->json = json;
	part_key(jd->grain, p, v->part.key);
	part_bound(jd->grain, part_start(jd->grain, p), v->part.start);
	part_bound(jd->grain, part_end(jd->grain, p), v->part.end);
	v->run.cfg = config_ref(cfg);
	v->run.job = jd;
	v->run.parts = &v->part;
	v->run.nparts = 1;
	v->run.attempt = 1;
	v->run.verify = true;
	v->run.done_cb = verify_done_cb;
	v->run.data = v;
	v->running = true;
	log_info("event=verify job=%s partition=%s result=started", jd->name,
		 v->part.key);
	exec_submit(sched_exec(ctx->sched), &v->run);
	return &v->cs;
}
