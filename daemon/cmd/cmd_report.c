/*
 * cmd_report.c - report: the HTML report page, which the client writes to
 * its file.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* report: the HTML page as out (the client writes it to its file). */
static void
cmd_report_exec(struct cmd_ctx *ctx, const struct cmdspec_req *req,
	   struct cmd_res *res)
{
	(void)req;
	report_render(ctx->sched, &res->out);
}

const struct cmd_entry cmd_report_entry = {
	&cmdspec_report, cmd_report_exec
};
