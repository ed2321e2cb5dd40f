/*
 * cmd_retry.c - retry REQUEST: queue again what failed, was blocked or
 * cancelled.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* retry REQUEST: its failed, blocked and cancelled partitions again. */
static void
cmd_retry_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	       struct cmd_res *res)
{
	long long id = req->request.request;
	int64_t queued;
	struct err err;

	if (sched_retry_request(ctx->sched, id, &queued, &err) < 0) {
		cmd_fail_err(res, &err);
		return;
	}
	proto_add_int(res->frame, "request", id);
	buf_printf(&res->out, "request %lld: %" PRId64 " partitions queued"
		   " again\n", id, queued);
}

const struct cmd_entry cmd_retry_entry = {
	&cmdspec_retry, cmd_retry_exec
};
