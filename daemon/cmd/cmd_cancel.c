/*
 * cmd_cancel.c - cancel REQUEST: drop the queued partitions of a request.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void
cmd_cancel_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
		struct cmd_res *res)
{
	long long id = req->request.request;
	int64_t dropped;
	struct err err;

	if (sched_cancel_request(ctx->sched, id, &dropped, &err) < 0) {
		cmd_fail_err(res, &err);
		return;
	}
	buf_printf(&res->out, "request %lld: %" PRId64 " queued partitions"
		   " dropped; runs in flight finish\n", id, dropped);
}

const struct cmd_entry cmd_cancel_entry = {
	&cmdspec_cancel, cmd_cancel_exec
};
