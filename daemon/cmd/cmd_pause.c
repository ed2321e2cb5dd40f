/*
 * cmd_pause.c - pause and resume JOB: freeze and unfreeze a job's schedule
 * and queue.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* pause/resume JOB. */
static void
pause_common(struct cmd_ctx *ctx, const struct cmdspec_req *req,
		 struct cmd_res *res, bool pause)
{
	struct err err;
	int j = cmd_job(ctx, req->show.job, res);

	if (j < 0)
		return;
	if (sched_pause(ctx->sched, j, pause, &err) < 0) {
		cmd_fail_err(res, &err);
		return;
	}
	buf_printf(&res->out, "%s %s\n", sched_config(ctx->sched)->jobs[j].name,
		   pause ? "paused: nothing new of it starts; runs in flight"
			   " finish" : "resumed");
}

static void
cmd_pause_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	       struct cmd_res *res)
{
	pause_common(ctx, req, res, true);
}

static void
cmd_resume_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
		struct cmd_res *res)
{
	pause_common(ctx, req, res, false);
}

const struct cmd_entry cmd_pause_entry = {
	&cmdspec_pause, cmd_pause_exec
};

const struct cmd_entry cmd_resume_entry = {
	&cmdspec_resume, cmd_resume_exec
};
