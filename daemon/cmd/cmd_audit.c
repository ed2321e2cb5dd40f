/*
 * cmd_audit.c - audit --request N: per partition of a request, what ran,
 * what it measured and what its checks said.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* ---- audit ------------------------------------------------------------ */

struct audit_ctx {
	struct sched *sched;
	int64_t request;
	bool json;
	struct buf *out;
	struct cmd_table *t;
	size_t n, passed, failed, unrun, downstream, skipped;
	char versions[8][32];
	size_t nversions;
};

/* What the audit says of one partition (audit_cb). */
struct audit_verdict {
	bool passed;  /* the request's own run succeeded */
	bool skipped; /* early cut-off (docs/cutoff.md): not run, its build
		       * stands */
	const char *note; /* landed through another request: why */
	struct cmd_shards sh;
	bool has_sh;  /* ... published shard by shard */
	bool partial; /* some shards have not published: not passed */
};

/* Count a partition in the summary, and its code version. */
static void
audit_count(struct audit_ctx *ac, const struct store_audit_row *r,
	    const struct audit_verdict *v)
{
	size_t i;

	ac->n++;
	ac->downstream += r->downstream;
	if (!r->has_run)
		ac->unrun++;
	else if (v->passed)
		ac->passed++;
	else if (v->skipped)
		ac->skipped++;
	else
		ac->failed++;
	if (r->code_version == NULL)
		return;
	for (i = 0; i < ac->nversions; i++)
		if (strcmp(ac->versions[i], r->code_version) == 0)
			break;
	if (i == ac->nversions && i < 8)
		snprintf(ac->versions[ac->nversions++], 32, "%s",
			 r->code_version);
}

/* One partition as a JSON object of the "partitions" array. */
static void
audit_json_row(struct audit_ctx *ac, const struct store_audit_row *r,
	       const struct audit_verdict *v)
{
	struct buf *out = ac->out;

	buf_addstr(out, ac->n > 1 ? ",\n  {\"job\": " : "\n  {\"job\": ");
	json_str(out, r->job);
	buf_addstr(out, ", \"partition\": ");
	json_str(out, r->key);
	buf_printf(out, ", \"downstream\": %s, \"state\": \"%s\", \"run\": ",
		   r->downstream ? "true" : "false", r->item_state);
	cmd_json_count(out, r->has_run, r->run_id);
	buf_addstr(out, ", \"code_version\": ");
	json_str(out, r->code_version);
	buf_addstr(out, ", \"config_hash\": ");
	json_str(out, r->config_hash);
	buf_addstr(out, ", \"rows_before\": ");
	cmd_json_count(out, r->has_rows_before, r->rows_before);
	buf_addstr(out, ", \"rows_after\": ");
	cmd_json_count(out, r->has_rows_after, r->rows_after);
	buf_addstr(out, ", \"rows_changed\": ");
	cmd_json_count(out, r->has_changes, r->changes);
	buf_printf(out, ", \"metrics\": %s, \"checks\": %s, \"error\": ",
		   r->metrics ? r->metrics : "{}", r->checks ? r->checks : "[]");
	json_str(out, r->error);
	buf_addstr(out, ", \"note\": ");
	json_str(out, v->note);
	buf_addstr(out, ", \"reason\": ");
	json_str(out, v->skipped ? r->error : NULL);
	buf_addstr(out, ", \"checksum_before\": ");
	json_str(out, r->sum_before);
	buf_addstr(out, ", \"checksum_after\": ");
	json_str(out, r->sum_after);
	buf_addstr(out, ", \"shards\": ");
	cmd_shards_json(out, &v->sh, v->has_sh);
	buf_printf(out, ", \"passed\": %s}", v->passed ? "true" : "false");
}

/* One partition as a row of the table. */
static void
audit_text_row(struct audit_ctx *ac, const struct store_audit_row *r,
	       const struct audit_verdict *v)
{
	char rb[24], ra[24], rc[24], result[400], shards[320];

	if (r->has_rows_before)
		snprintf(rb, sizeof rb, "%" PRId64, r->rows_before);
	else
		strcpy(rb, "-");
	if (r->has_rows_after)
		snprintf(ra, sizeof ra, "%" PRId64, r->rows_after);
	else
		strcpy(ra, "-");
	/* what the run's statements wrote, which rows before and after do
	 * not show when partition_column does not hold the key */
	if (r->has_changes)
		snprintf(rc, sizeof rc, "%" PRId64, r->changes);
	else
		strcpy(rc, "-");
	const char *row[9] = { r->job, r->key,
		r->code_version ? r->code_version : "-", rb, ra, rc,
		r->metrics_text && r->metrics_text[0] ? r->metrics_text : "-",
		r->checks_text ? r->checks_text : (r->error ? r->error : "-"),
		result };

	if (!r->has_run)
		snprintf(result, sizeof result, "%s", r->item_state);
	else if (v->passed)
		snprintf(result, sizeof result, "pass");
	else if (v->skipped)
		snprintf(result, sizeof result, "skipped (%s)",
			 r->error ? r->error : "inputs unchanged");
	else if (v->partial) {
		cmd_shards_text(&v->sh, shards, sizeof shards);
		snprintf(result, sizeof result, "FAIL (%s)", shards);
	} else if (v->note != NULL)
		snprintf(result, sizeof result, "FAIL (%s)", v->note);
	else
		snprintf(result, sizeof result, "FAIL");
	cmd_table_row(ac->t, row);
}

/*
 * One partition of the audited request.  What passed is the request's own
 * run of it (the one `runs --request N` lists): a partition whose run
 * failed here and which landed later through another request is
 * succeeded in the request (`state`) but its run did not pass, and its
 * note says which request landed it.
 */
static void
audit_cb(const struct store_audit_row *r, void *data)
{
	struct audit_ctx *ac = data;
	struct audit_verdict v = { 0 };

	v.passed = r->has_run && r->run_state != NULL &&
	    strcmp(r->run_state, "succeeded") == 0;
	v.skipped = r->has_run && r->run_state != NULL &&
	    strcmp(r->run_state, "skipped") == 0;
	v.note = r->has_run && !v.passed &&
	    strcmp(r->item_state, "succeeded") == 0 ? r->item_error : NULL;
	v.has_sh = r->has_run && cmd_shards_read(ac->sched, ac->request,
						 r->job, r->key, 0, &v.sh);
	v.partial = v.has_sh && v.sh.published < v.sh.of;
	audit_count(ac, r, &v);
	if (ac->json)
		audit_json_row(ac, r, &v);
	else
		audit_text_row(ac, r, &v);
}

static void
cmd_audit_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	       struct cmd_res *res)
{
	long long id = req->request.request;
	struct cmd_table t = { .ncols = 9 };
	struct audit_ctx ac = { .json = req->request.json, .out = &res->out,
				.t = &t };
	const char *head[9] = { "JOB", "PARTITION", "VERSION", "ROWS BEFORE",
		"ROWS AFTER", "ROWS CHANGED", "METRICS BEFORE -> AFTER", "CHECKS",
		"RESULT" };
	char job[128];
	bool finished;
	struct err err;

	ac.sched = ctx->sched;
	ac.request = id;
	if (sched_read_request_get(ctx->sched, id, job, sizeof job,
				   &finished, &err) != 0) {
		cmd_fail(res, EXIT_BAD_INPUT, "no request %lld: see 'backfillctl"
			 " runs' for request ids", id);
		return;
	}
	if (ac.json)
		buf_printf(&res->out, "{\"request\": %lld, \"job\": ", id);
	else
		cmd_table_row(&t, head);
	if (ac.json) {
		json_str(&res->out, job);
		buf_addstr(&res->out, ", \"partitions\": [");
	}
	if (sched_read_audit_of(ctx->sched, id, audit_cb, &ac, &err) < 0) {
		cmd_fail_err(res, &err);
		if (!ac.json)
			cmd_table_print(&t, &res->out);
		buf_reset(&res->out);
		return;
	}
	if (ac.json) {
		buf_printf(&res->out, "%s], \"summary\": {\"partitions\": %zu,"
			   " \"downstream\": %zu, \"passed\": %zu, \"failed\":"
			   " %zu, \"skipped\": %zu, \"not_run\": %zu,"
			   " \"code_versions\": [",
			   ac.n ? "\n" : "", ac.n, ac.downstream, ac.passed,
			   ac.failed, ac.skipped, ac.unrun);
		for (size_t v = 0; v < ac.nversions; v++)
			buf_printf(&res->out, "%s\"%s\"", v ? ", " : "",
				   ac.versions[v]);
		buf_addstr(&res->out, "]}}\n");
		return;
	}
	cmd_table_print(&t, &res->out);
	buf_printf(&res->out, "request %lld (%s): %zu partitions (%zu downstream):"
		   " %zu passed, %zu failed, ", id, job, ac.n, ac.downstream,
		   ac.passed, ac.failed);
	if (ac.skipped > 0)
		buf_printf(&res->out, "%zu skipped (inputs unchanged), ",
			   ac.skipped);
	buf_printf(&res->out, "%zu not run\n", ac.unrun);
}

const struct cmd_entry cmd_audit_entry = {
	&cmdspec_audit, cmd_audit_exec
};
