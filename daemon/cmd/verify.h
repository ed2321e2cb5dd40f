/*
 * verify.h - the idempotency proof (`backfill --verify`, `verify JOB
 * PARTITION`, a job's `verify: true`).
 *
 * Before anything of a request commits, the job's SQL runs for one
 * partition twice in one warehouse transaction, on the executor's worker
 * (exec_run.verify), the partition's content read before and after each
 * run (row count, order-independent checksum: wh.h digest), and the
 * transaction is rolled back.  Idempotent: the second run left the
 * partition as the first did.  The answer waits for the worker as a
 * paused stream (cmd.h), so the loop never blocks on the warehouse.
 */
#ifndef BACKFILLD_VERIFY_H
#define BACKFILLD_VERIFY_H

#include "cmd.h"
#include "cmdspec.h"

/* What to do once the proof passed: the request goes on (out, status,
 * err, request and total into cs). */
typedef void verify_then_fn(struct cmd_ctx *ctx,
			    const struct cmdspec_req *req,
			    struct cmd_stream *cs, struct buf *out);

/* Can job j be verified?  0, or -1 with err (exit 2, one line). */
int verify_job_ok(const struct config *cfg, int j, struct err *err);
/* Start the proof of job j on partition key; the stream answers it (as
 * JSON when json) and, when it passed and then is set, calls then with a
 * copy of req (cmdspec_req_dup).  NULL with err when it cannot start. */
struct cmd_stream *verify_start(struct cmd_ctx *ctx,
				const struct cmdspec_req *req, int j,
				const char *key, bool json,
				verify_then_fn *then, struct err *err);

#endif
