/*
 * olrun.h - the runs' OpenLineage events: the scheduler's run facts
 * (sched_on_run_fact) turned into events (lib/olevent.h) and handed to
 * the transport (server/base/olsend.h).  On the loop thread.
 *
 * A run's UUID is drawn (version 4, getrandom) when it begins and kept
 * until it ends, so START and its end carry the same runId; a run
 * skipped by early cut-off is one COMPLETE event (nothing started) with
 * backfilld_partition.skipped true.  A downstream run's parent facet is
 * its request: a UUID that is a function of the namespace, the request's
 * id and creation time (the same after a restart), named as the
 * request's own job.  A run the daemon was stopped in the middle of ends
 * with ABORT; one left running by a crash has no end event (its START's
 * UUID died with the daemon).
 */
#ifndef BACKFILLD_OLRUN_H
#define BACKFILLD_OLRUN_H

#include "olsend.h"
#include "scheduler.h"

struct olrun;

/* Emit s's runs' events through send (both outlive it). */
struct olrun *olrun_new(struct sched *s, struct olsend *send);
void olrun_free(struct olrun *r);

#endif
