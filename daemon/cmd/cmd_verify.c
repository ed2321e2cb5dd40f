/*
 * cmd_verify.c - verify JOB PARTITION: the idempotency proof alone
 * (verify.c).
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
	struct err err;
	int j;

	if ((j = cmd_job(ctx, req->part.job, res)) < 0)
		return;
	res->stream = verify_start(ctx, req, j, req->part.partition.text,
				   req->part.json, NULL, &err);
	if (res->stream == NULL)
		cmd_fail_err(res, &err);
}

const struct cmd_entry cmd_verify_entry = {
	&cmdspec_verify, cmd_verify_exec
};
