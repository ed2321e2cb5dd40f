-- 010_fewer_writes.sql - fewer writes per partition on the PostgreSQL store
-- (issue 27; docs/design-notes.md, "The PostgreSQL store's writes per
-- partition"): what a partition's rows cost beyond their own row versions.
--
-- The foreign keys of manifest and runs go.  Each one was a trigger per
-- inserted row: a SELECT ... FOR KEY SHARE of the row referenced, which
-- also writes a lock into that row (a WAL record, a dirtied page) and,
-- on the requests row that every item and run of a request references,
-- makes its later updates create a MultiXact.  Three of them per
-- partition (its manifest row's request, its run's manifest row and
-- request).  What they checked, the code already holds, because only
-- one connection writes these tables (the planner's store, each
-- transaction fenced by the lease: docs/several-hosts.md) and:
--   manifest.request_id -> requests: items are added to a request in the
--     transaction that creates it or to a request still open (expansion,
--     downstream); a request is deleted only by pruning, finished, and
--     only in a statement that finds no manifest row or run of it (NOT
--     EXISTS in the same DELETE, store_pg_sql.c P_PRUNE_REQUEST_DEL);
--   runs.manifest_id -> manifest: a run starts for an item the scheduler
--     loaded from the store, of an open request; a manifest row is
--     deleted only by pruning, of a finished request, in a statement that
--     finds no run of it (P_PRUNE_MANIFEST_DEL);
--   runs.request_id -> requests: the run's item's request (as above).
-- The SQLite store keeps its foreign keys (they cost no extra write
-- there: the row looked up is already in the page cache, no lock is
-- written).  run_audit and shard_publishes keep theirs.
ALTER TABLE manifest DROP CONSTRAINT IF EXISTS manifest_request_id_fkey;
ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_manifest_id_fkey;
ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_request_id_fkey;

-- A run's finish changed `state`, the predicate column of
-- runs_job_succeeded, so it could never be a HOT update: a new entry in
-- each of the four indexes of runs.  The same index without the
-- predicate (the newest runs of a job by id; the durations query keeps
-- its own state = 'succeeded' filter) leaves the finish no indexed
-- column to change; fillfactor keeps room on the page for it.
CREATE INDEX runs_job_id ON runs (job, id);
DROP INDEX runs_job_succeeded;
ALTER TABLE runs SET (fillfactor = 80);
-- a manifest row is updated twice (running, then its outcome), no
-- indexed column changes: room on its page keeps both updates HOT
ALTER TABLE manifest SET (fillfactor = 80);

-- work: a row lives from its offer to its collection (a few per run in
-- flight: no more than the cluster's max_concurrency), and the claim and
-- the done report each changed `state`, the predicate of its three
-- partial indexes: never HOT, a new entry in two indexes each.  Without
-- them the claim, the done report and the cancel flag are HOT updates
-- on a page with room (fillfactor); the queries by state read the few
-- rows of the table.
DROP INDEX work_offered;
DROP INDEX work_claimed;
DROP INDEX work_done;
ALTER TABLE work SET (fillfactor = 50);
