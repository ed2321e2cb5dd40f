/*
 * cmd_verify.c - verify JOB PARTITION: the idempotency proof alone (the
 * scheduler's sched_proof_start, answered by verify.c).
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

/* verify JOB PARTITION: the proof alone. */
static void
cmd_verify_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	   struct cmd_res *res)
{
	struct sched_proof *p;
	struct err err;
	int j;

	if ((j = cmd_job(ctx, req->part.job, res)) < 0)
		return;
	p = sched_proof_start(ctx->sched, j, req->part.partition.text, &err);
	if (p == NULL)
		cmd_fail_err(res, &err);
	else
		res->stream = verify_stream(p, req->part.json, NULL, NULL,
					    NULL);
}

const struct cmd_entry cmd_verify_entry = {
	&cmdspec_verify, cmd_verify_exec
};
