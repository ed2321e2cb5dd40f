/*
 * verify.c - the answer of the idempotency proof (verify.h).
 *
 * The proof (struct sched_proof) is the scheduler's; its answer is a
 * stream (struct verify) that owns it:
 *   verify_stream  takes the proof over; the stream's next() pauses;
 *   verify_done    (loop thread, the proof's done) wakes the stream;
 *   next()         renders the verdict, and on success hands over to
 *                  `then` (a backfill's answer);
 *   free()         releases the proof: one still in flight is freed by
 *                  the scheduler when its run ends, and nothing of its
 *                  request is queued.
 */
#include "verify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "xalloc.h"

struct verify {
	struct cmd_stream cs;  /* first: the stream control.c drives */
	struct sched_proof *p;
	verify_then_fn *then;
	void *data;
	void (*free_data)(void *);
	bool json;
};

/* The proof ended (loop thread). */
static void
verify_done(void *data)
{
	struct verify *v = data;

	if (v->cs.wake)
		v->cs.wake(v->cs.wake_data);
}

/* The verdict as JSON. */
static void
verify_json(const struct verify *v, bool same, struct buf *out)
{
	const struct exec_run *r = &v->p->run;

	buf_addstr(out, "{\"job\": ");
	json_str(out, r->job->name);
	buf_addstr(out, ", \"partition\": ");
	json_str(out, v->p->part.key);
	buf_printf(out, ", \"idempotent\": %s, \"rows_before\": %" PRId64
		   ", \"rows_first\": %" PRId64 ", \"rows_second\": %" PRId64
		   ", \"checksum_first\": ", same ? "true" : "false",
		   r->verify_rows[0], r->verify_rows[1], r->verify_rows[2]);
	json_str(out, r->verify_sum[1]);
	buf_addstr(out, ", \"checksum_second\": ");
	json_str(out, r->verify_sum[2]);
	buf_addstr(out, "}\n");
}

/* The refusal of a proof whose second run changed the partition. */
static void
verify_changed(const struct verify *v, struct cmd_stream *cs)
{
	const struct exec_run *r = &v->p->run;
	const char *job = r->job->name, *key = v->p->part.key;

	if (r->verify_rows[1] != r->verify_rows[2])
		err_set(&cs->err, EXIT_BAD_INPUT, "verify %s %s: the second"
			" run changed rows %" PRId64 " -> %" PRId64 "%s: the"
			" request is refused and nothing was changed; make the"
			" job replace its partition (delete it first)", job,
			key, r->verify_rows[1], r->verify_rows[2],
			r->verify_rows[2] > r->verify_rows[1] ?
			" (the job appends)" : "");
	else
		err_set(&cs->err, EXIT_BAD_INPUT, "verify %s %s: the second"
			" run changed the partition's content (%" PRId64
			" row%s, checksum %s -> %s): the job reads what it"
			" wrote; the request is refused and nothing was"
			" changed", job, key, r->verify_rows[2],
			r->verify_rows[2] == 1 ? "" : "s", r->verify_sum[1],
			r->verify_sum[2]);
}

/* How the proof's writes were undone: a transaction rolled back, or on
 * ClickHouse, which has none, the stage partition dropped and nothing
 * published (docs/clickhouse.md, "Verify"). */
static const char *
verify_undone(const struct exec_run *r)
{
	const struct job_def *jd = r->job;

	if (r->cfg != NULL && jd != NULL && jd->warehouse >= 0 &&
	    (size_t)jd->warehouse < r->cfg->nwarehouses &&
	    r->cfg->warehouses[jd->warehouse].kind == WH_CLICKHOUSE)
		return "the stage partition dropped, nothing published";
	return "rolled back";
}

/* Render the verdict; on success go on with the answer. */
static int
verify_next(struct cmd_stream *cs, struct buf *out)
{
	struct verify *v = (struct verify *)cs;
	const struct exec_run *r = &v->p->run;
	const char *job = r->job->name, *key = v->p->part.key;

	if (v->p->running)
		return CMD_STREAM_PAUSE;
	if (r->failed) {
		err_set(&cs->err, EXIT_BAD_INPUT, "verify %s %s: the proof could"
			" not run (%s): nothing was queued; fix the job or the"
			" warehouse and try again", job, key, r->error);
		cs->status = EXIT_BAD_INPUT;
		return 1;
	}
	if (!sched_proof_passed(v->p)) {
		cs->status = EXIT_BAD_INPUT;
		/* verify --json: the verdict on stdout, the line on stderr */
		if (v->json && v->then == NULL)
			verify_json(v, false, out);
		verify_changed(v, cs);
		return 1;
	}
	if (v->then == NULL) {
		if (v->json)
			verify_json(v, true, out);
		else
			buf_printf(out, "verify %s %s: idempotent: the second"
				   " run left the partition as the first did"
				   " (%" PRId64 " row%s before, %" PRId64
				   " after, checksum %s); %s\n", job,
				   key, r->verify_rows[0],
				   r->verify_rows[0] == 1 ? "" : "s",
				   r->verify_rows[2],
				   r->verify_sum[2], verify_undone(r));
		return 1;
	}
	if (!v->json)
		buf_printf(out, "verify %s %s: idempotent (%" PRId64 " row%s after"
			   " either run)\n", job, key, r->verify_rows[2],
			   r->verify_rows[2] == 1 ? "" : "s");
	v->then(v->data, v->p, cs, out);
	return 1;
}

/* The client is done with the stream. */
static void
verify_free(struct cmd_stream *cs)
{
	struct verify *v = (struct verify *)cs;

	v->p->done = NULL;
	sched_proof_release(v->p);
	if (v->free_data != NULL)
		v->free_data(v->data);
	free(v);
}

struct cmd_stream *
verify_stream(struct sched_proof *p, bool json, verify_then_fn *then,
	      void *data, void (*free_data)(void *))
{
	struct verify *v = xcalloc(1, sizeof *v);

	v->cs.next = verify_next;
	v->cs.free = verify_free;
	v->p = p;
	v->then = then;
	v->data = data;
	v->free_data = free_data;
	v->json = json;
	p->done = verify_done;
	p->data = v;
	return &v->cs;
}
