/*
 * cmd_audit.c - audit --request N: per partition of a request, what ran,
 * what it measured and what its checks said; then the downstream
 * partitions stale now whose window holds a partition the request built
 * (a --no-downstream repair's, by the same windows as `stale`).
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "json.h"
#include "lineage.h"
#include "xalloc.h"

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
	char **built; /* job and key of each partition the request built */
	size_t nbuilt, capbuilt;
	struct buf left; /* the stale partitions it left (audit_left_cb) */
	size_t nleft, nleftjob;
	int ljob;	  /* the job of the open range of `left`, or -1 */
	part_t lfirst, llast;
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
	if (v.passed) {
		if (ac->nbuilt + 2 > ac->capbuilt) {
			ac->capbuilt = ac->capbuilt ? ac->capbuilt * 2 : 64;
			ac->built = xreallocarray(ac->built, ac->capbuilt,
						  sizeof *ac->built);
		}
		ac->built[ac->nbuilt++] = xstrdup(r->job);
		ac->built[ac->nbuilt++] = xstrdup(r->key);
	}
	if (ac->json)
		audit_json_row(ac, r, &v);
	else
		audit_text_row(ac, r, &v);
}

/* Did the request build partition key of job (audit_cb's list)? */
static bool
audit_built(const struct audit_ctx *ac, const char *job, const char *key)
{
	for (size_t i = 0; i < ac->nbuilt; i += 2)
		if (strcmp(ac->built[i], job) == 0 &&
		    strcmp(ac->built[i + 1], key) == 0)
			return true;
	return false;
}

/* Close the text's open range of consecutive stale partitions. */
static void
audit_left_flush(struct audit_ctx *ac, const struct config *cfg)
{
	const struct cal *c;
	char a[CAL_KEY_MAX], b[CAL_KEY_MAX];

	if (ac->ljob < 0)
		return;
	c = job_cal(&cfg->jobs[ac->ljob]);
	cal_key(c, ac->lfirst, a);
	cal_key(c, ac->llast, b);
	if (ac->lfirst == ac->llast)
		buf_printf(&ac->left, "%s", a);
	else
		buf_printf(&ac->left, "%s..%s", a, b);
}

/* One stale partition of job, part, in the text's ranges ("JOB K..K, K;
 * JOB2 K"). */
static void
audit_left_text(struct audit_ctx *ac, const struct config *cfg, int job,
		part_t part)
{
	if (ac->ljob == job && part == ac->llast + 1) {
		ac->llast = part;
		return;
	}
	audit_left_flush(ac, cfg);
	if (ac->ljob != job) {
		buf_printf(&ac->left, "%s%s ", ac->ljob < 0 ? "" : "; ",
			   cfg->jobs[job].name);
		ac->nleftjob++;
	} else
		buf_addstr(&ac->left, ", ");
	ac->ljob = job;
	ac->lfirst = ac->llast = part;
}

/* A stale partition: kept when a newer input is one the request built. */
static int
audit_left_cb(int job, part_t part, bool built, int64_t built_at,
	      const struct stale_input *in, size_t nin, void *data,
	      struct err *err)
{
	struct audit_ctx *ac = data;
	const struct config *cfg = sched_config(ac->sched);
	char k[CAL_KEY_MAX];
	struct buf ins;
	size_t n = 0;

	(void)built; (void)built_at; (void)err;
	buf_init(&ins);
	for (size_t i = 0; i < nin; i++) {
		const struct job_def *ij = &cfg->jobs[in[i].job];

		cal_key(job_cal(ij), in[i].part, k);
		if (!audit_built(ac, ij->name, k))
			continue;
		buf_addstr(&ins, n++ ? ", {\"job\": " : "{\"job\": ");
		json_str(&ins, ij->name);
		buf_addstr(&ins, ", \"partition\": ");
		json_str(&ins, k);
		buf_addstr(&ins, "}");
	}
	if (n > 0 && ac->json) {
		cal_key(job_cal(&cfg->jobs[job]), part, k);
		buf_addstr(&ac->left, ac->nleft ? ",\n  {\"job\": " :
			   "\n  {\"job\": ");
		json_str(&ac->left, cfg->jobs[job].name);
		buf_addstr(&ac->left, ", \"partition\": ");
		json_str(&ac->left, k);
		buf_addstr(&ac->left, ", \"newer_inputs\": [");
		buf_add(&ac->left, ins.data, ins.len);
		buf_addstr(&ac->left, "]}");
	} else if (n > 0)
		audit_left_text(ac, cfg, job, part);
	ac->nleft += n > 0;
	buf_free(&ins);
	return 0;
}

/* The downstream partitions stale now whose window holds a partition
 * the request built: only jobs fed by one it built are read. */
static int
audit_left(struct audit_ctx *ac, struct err *err)
{
	const struct config *cfg = sched_config(ac->sched);
	int rc = 0;

	ac->ljob = -1;
	for (size_t d = 0; d < cfg->njobs && rc == 0; d++) {
		bool fed = false;

		for (size_t i = 0; i < ac->nbuilt && !fed; i += 2) {
			int up = config_job_index(cfg, ac->built[i]);

			fed = up >= 0 && lineage_feeds(cfg, up, (int)d);
		}
		if (fed)
			rc = sched_stale(ac->sched, (int)d, audit_left_cb, ac,
					 err);
	}
	audit_left_flush(ac, cfg);
	return rc;
}

/* Free what audit_cb and audit_left gathered. */
static void
audit_free(struct audit_ctx *ac)
{
	for (size_t i = 0; i < ac->nbuilt; i++)
		free(ac->built[i]);
	free(ac->built);
	buf_free(&ac->left);
}

/* The text's summary lines, below the table. */
static void
audit_text_summary(const struct audit_ctx *ac, long long id,
		   const char *job, struct buf *out)
{
	buf_printf(out, "request %lld (%s): %zu partitions (%zu downstream):"
		   " %zu passed, %zu failed, ", id, job, ac->n, ac->downstream,
		   ac->passed, ac->failed);
	if (ac->skipped > 0)
		buf_printf(out, "%zu skipped (inputs unchanged), ",
			   ac->skipped);
	buf_printf(out, "%zu not run\n", ac->unrun);
	if (ac->nleft > 0)
		buf_printf(out, "left stale: %.*s (%zu partition%s stale now,"
			   " a newer input in the window being a partition this"
			   " request built); rebuild with: backfillctl backfill"
			   " %s --stale\n",
			   (int)ac->left.len, ac->left.data, ac->nleft,
			   ac->nleft == 1 ? "" : "s", ac->nleftjob == 1 ?
			   sched_config(ac->sched)->jobs[ac->ljob].name : "JOB");
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
	buf_init(&ac.left);
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
	if (sched_read_audit_of(ctx->sched, id, audit_cb, &ac, &err) < 0 ||
	    audit_left(&ac, &err) < 0) {
		cmd_fail_err(res, &err);
		if (!ac.json)
			cmd_table_print(&t, &res->out);
		buf_reset(&res->out);
		audit_free(&ac);
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
		buf_printf(&res->out, "]}, \"left_stale\": [%.*s%s]}\n",
			   (int)ac.left.len, ac.left.data, ac.nleft ? "\n" : "");
	} else {
		cmd_table_print(&t, &res->out);
		audit_text_summary(&ac, id, job, &res->out);
	}
	audit_free(&ac);
}

const struct cmd_entry cmd_audit_entry = {
	&cmdspec_audit, cmd_audit_exec
};
