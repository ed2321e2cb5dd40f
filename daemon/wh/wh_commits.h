/*
 * wh_commits.h - exactly-once commits of SQL partitions: the table
 * backfilld_commits the daemon keeps in each warehouse it writes.
 *
 * A row says "the partition `partition_key` of `job`, asked for by
 * request `request_id`, was committed by run `run_id` at `committed_at`"
 * (milliseconds, the daemon's clock).  It is written in the run's own
 * transaction, so it exists if and only if the run's work was committed.
 * Its key, (request_id, job, partition_key), identifies one requested
 * execution of a partition: every request (an operator's backfill, rerun
 * or stale, and the clock schedule's, catchup's and sensors' own requests,
 * with the downstream partitions they bring along) has an id in the state
 * store, shared by all attempts of its manifest item and new for each new
 * request.  So a run queued again after its node died between the
 * warehouse commit and the state store write finds the row, commits
 * nothing, and is recorded succeeded with a note (docs/guarantees.md,
 * "Tables in your warehouse"; docs/several-hosts.md, "Guarantees").
 *
 * Rules that must always hold:
 *  COMMITS-1. The lookup comes first in the run's transaction, the insert last,
 *     so a run that fails (or is interrupted, or a --verify proof, which
 *     never calls these) leaves no row, and a run that finds every row
 *     of its identities runs no statement of the job.
 *  COMMITS-2. A row older than the request it names (committed_at < the
 *     request's created_at) is a leftover of an earlier state store
 *     whose request ids came back (a store deleted and created again, or
 *     a SQLite id reused after pruning): it is replaced, never trusted.
 *  COMMITS-3. Growth: the first run of each request on a connection deletes,
 *     in its own transaction, its job's rows of older requests committed
 *     before the job's keep_runs (the history's retention); later runs
 *     of the request delete nothing.  The key leads with the job and the
 *     request (request ids only grow), so that deletion reads one range
 *     of the key, and the table has no other index: a run's insert
 *     writes one b-tree, not three (SQLite: WITHOUT ROWID).
 *  COMMITS-4. The fence (docs/several-hosts.md, "Exactly once"): the insert
 *     is a plain INSERT on the key, never ON CONFLICT DO NOTHING, and only for
 *     the identities the lookup found missing.  So of two transactions
 *     writing one identity (a run abandoned by a node paused past its
 *     lease, and the run queued again elsewhere) at most one commits:
 *     the other fails on the key (PostgreSQL: the second insert waits for
 *     the first transaction and fails once it commits; SQLite: BEGIN
 *     IMMEDIATE serialises them and the second one's lookup finds the
 *     row).  The table is created once, in a transaction of its own under
 *     a lock (PostgreSQL: an advisory transaction lock), so that first
 *     runs starting at once never race to create it; a creation that
 *     fails all the same (a session that took no lock created it) is
 *     fine once the table is there.
 */
#ifndef BACKFILLD_WH_COMMITS_H
#define BACKFILLD_WH_COMMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "wh.h"

/* One identity a run commits: a partition (index into the run's parts)
 * of a request. */
struct wh_commit {
	int64_t request;     /* the request's id in the state store */
	int64_t request_at;  /* its created_at (ms); 0: unknown (trusted) */
	int64_t run_id;      /* the run row that commits it */
	size_t part;
};

/* Create backfilld_commits if absent (outside any transaction; in one
 * of its own, under a lock: COMMITS-4). */
int wh_commits_ensure(struct wh_conn *conn, struct err *err);
/* Inside the run's transaction, before its statements: 1 when every
 * identity already has a row (note filled: "already committed by run N
 * at T"), 0 when the run must write (rows older than their request
 * deleted, COMMITS-2), -1 with err; present[i] (NULL: not wanted) says
 * whether identity i has a row.  After a failed record and its rollback,
 * outside any transaction: 1 when another run committed them all
 * meanwhile (COMMITS-4). */
int wh_commits_seen(struct wh_conn *conn, const char *job,
		    const char *const *keys, const struct wh_commit *c,
		    size_t n, bool *present, char *note, size_t notesz,
		    struct err *err);
/* Inside the run's transaction, after its statements: a row for each
 * identity not present (present NULL: every one; an identity that has a
 * row fails the insert, COMMITS-4), then, when prune_before (ms) > 0, the
 * job's rows of requests older than the run's committed before it
 * deleted (COMMITS-3: the caller passes 0 but for a request's first run). */
int wh_commits_record(struct wh_conn *conn, const char *job,
		      const char *const *keys, const struct wh_commit *c,
		      size_t n, const bool *present, int64_t now,
		      int64_t prune_before, struct err *err);

#endif
