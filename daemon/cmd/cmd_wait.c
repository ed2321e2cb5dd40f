/*
 * cmd_wait.c - the summary `backfillctl ... --wait` prints when its request
 * is done (control.c runs the wait itself: PROGRESS frames, then this).
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <string.h>

#include "text.h"

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
	if (strcmp(state, "blocked") == 0) {
		buf_printf(pc->out, "  blocked %s %s: waits for %s, which failed\n",
			   job, key, blocked_on ? blocked_on : "an input");
	} else {
		buf_printf(pc->out, "  failed  %s %s: ", job, key);
		text_escape_str(pc->out, error ? error : "failed");
		buf_addstr(pc->out, "\n");
	}
}

/* A partition whose run failed in the request and which landed later
 * through another one (a later run, a mark): succeeded in the request,
 * but `audit` says its run failed (FAIL (landed later by request M)). */
static void
landed_cb(const struct store_audit_row *r, void *data)
{
	int64_t *n = data;

	if (r->has_run && r->run_state != NULL &&
	    strcmp(r->item_state, "succeeded") == 0 &&
	    strcmp(r->run_state, "succeeded") != 0 &&
	    strcmp(r->run_state, "skipped") != 0)
		(*n)++;
}

void
cmd_wait_summary(struct sched *s, int64_t request_id,
		 const struct sched_progress *p, struct buf *out)
{
	struct problems_ctx pc = { out, 0 };
	int64_t landed = 0;
	struct err err;

	/* as audit: what failed here is not counted succeeded */
	if (p->succeeded > 0 &&
	    sched_read_audit_of(s, request_id, landed_cb, &landed,
				&err) < 0)
		landed = 0;
	buf_printf(out, "request %" PRId64 ": %" PRId64 " succeeded, ",
		   request_id, p->succeeded - landed);
	if (landed > 0)
		buf_printf(out, "%" PRId64 " landed later by another request"
			   " (their run here failed: backfillctl audit %"
			   PRId64 "), ", landed, request_id);
	/* early cut-off (docs/cutoff.md): named only when it skipped some */
	if (p->skipped > 0)
		buf_printf(out, "%" PRId64 " skipped (inputs unchanged), ",
			   p->skipped);
	buf_printf(out, "%" PRId64 " failed, %" PRId64 " blocked, %" PRId64
		   " cancelled of %" PRId64 " in %.1fs\n", p->failed,
		   p->blocked, p->cancelled, p->total,
		   (double)p->elapsed_ms / 1000.0);
	if (p->failed + p->blocked == 0) {
		if (p->cancelled > 0)
			buf_printf(out, "%" PRId64 " partitions were cancelled:"
				   " backfillctl retry %" PRId64 " queues them"
				   " again\n", p->cancelled, request_id);
		return;
	}
	if (sched_read_request_problems(s, request_id, problem_cb, &pc,
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
