/*
 * cmd_map.c - map JOB: a job's partitions as a calendar or as ranges of one
 * state.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map_view.h"

/* map JOB [--from D --to D]: the job's partitions as ranges (json) or a
 * calendar (colours when tty); see map.h and map_view.h. */
static void
cmd_map_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	     struct cmd_res *res)
{
	const struct config *cfg = sched_config(ctx->sched);
	struct map m;
	struct err err;
	int j;

	if ((j = cmd_job(ctx, req->map.job, res)) < 0)
		return;
	if (map_view_build(ctx->sched, j, req->map.from, req->map.to, &m,
			   &err) < 0) {
		cmd_fail_err(res, &err);
		return;
	}
	if (req->map.json)
		map_json(&m, cfg->jobs[j].name, &res->out);
	else
		map_text(&m, cfg->jobs[j].name, req->tty, &res->out);
	map_free(&m);
}

const struct cmd_entry cmd_map_entry = {
	&cmdspec_map, cmd_map_exec
};
