-- 005_durations.sql - recent run durations per job, read by --dry-run.
--
-- The estimate of a plan reads each job's newest successful runs (at most
-- a few dozen, newest first).  Without this index that read scanned every
-- run the store keeps; with it, it reads the rows it returns.  Partial:
-- only succeeded runs are indexed, so failures and runs in flight cost
-- nothing here.
CREATE INDEX runs_job_succeeded ON runs (job, id) WHERE state = 'succeeded';
