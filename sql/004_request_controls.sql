-- 004_request_controls.sql - the controls an operator gives one request
-- (backfillctl backfill --concurrency N --fail-fast --downstream JOBS).
--
-- concurrency: at most this many runs of the request at once (NULL: only
-- the job's and the global caps).  fail_fast: after the request's first
-- partition that failed for good, its queued and blocked partitions are
-- cancelled.  downstream: the downstream jobs it was narrowed to, comma
-- separated, for the record (NULL: every downstream job).  They are read
-- back at start with the request's open rows, and kept when `retry`
-- reopens the request.
ALTER TABLE requests ADD COLUMN concurrency INTEGER CHECK (concurrency > 0);
ALTER TABLE requests ADD COLUMN fail_fast INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN downstream TEXT;
