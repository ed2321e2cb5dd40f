/*
 * cmd.h - the daemon side of backfillctl's commands: one handler per
 * command, from a table, each turning a REQUEST's fields into a change of
 * the scheduler or a report, rendered as a human table or as JSON.
 */
#ifndef BACKFILLD_CMD_H
#define BACKFILLD_CMD_H

#include <stdbool.h>

#include "proto.h"
#include "scheduler.h"

struct cmd_ctx {
	struct sched *sched;
	/* reload the configuration (SIGHUP's work); fills err on failure */
	int (*reload)(void *data, struct err *err);
	void *reload_data;
	bool may_change; /* the peer may run mutating commands */
};

/* Run a synchronous command: adds status, out, err and the command's
 * fields to the RESPONSE frame being built in `resp`.  `wait` is handled
 * by control.c. */
void cmd_run(struct cmd_ctx *ctx, const struct proto_msg *req,
	     struct buf *resp);
/* True when the command changes state (needs may_change). */
bool cmd_mutates(const char *name);
/* The summary `wait` prints when a request is done. */
void cmd_wait_summary(struct sched *s, int64_t request_id,
		      const struct sched_progress *p, struct buf *out);

#endif
