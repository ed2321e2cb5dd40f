/*
 * verify.h - the answer of the idempotency proof (`backfill --verify`,
 * `verify JOB PARTITION`, a job's `verify: true`).
 *
 * The proof is the scheduler's (sched_proof_start, sched_backfill in
 * scheduler.h): the job's SQL runs for one partition twice in one
 * rolled-back warehouse transaction on the executor's worker.  Here is
 * its answer, which waits for the worker as a paused stream (cmd.h), so
 * the loop never blocks on the warehouse: the verdict, then, for a
 * backfill, the request the scheduler queued once the proof passed.
 */
#ifndef BACKFILLD_VERIFY_H
#define BACKFILLD_VERIFY_H

#include "cmd.h"
#include "scheduler.h"

/* The rest of the answer once the proof passed (a backfill's, from
 * p->bf): out, and status, err, request and total into cs. */
typedef void verify_then_fn(void *data, const struct sched_proof *p,
			    struct cmd_stream *cs, struct buf *out);

/* A stream answering the proof p, which it takes over (released with
 * the stream); the verdict as JSON when json.  When the proof passed and
 * then is set, then(data, ...) ends the answer; free_data(data) when the
 * stream is freed (either may be NULL). */
struct cmd_stream *verify_stream(struct sched_proof *p, bool json,
				 verify_then_fn *then, void *data,
				 void (*free_data)(void *));

#endif
