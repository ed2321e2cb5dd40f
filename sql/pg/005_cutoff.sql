-- 005_cutoff.sql - early cut-off downstream (docs/cutoff.md; the same as
-- sql/007_cutoff.sql for SQLite).
--
-- A downstream partition whose inputs in the request all came out of
-- their runs identical is not run: its manifest row, its runs row and its
-- newest run in partition_latest read 'skipped'.  manifest.changed: what
-- the item's run did to its partition (false identical, true changed,
-- NULL unknown); requests.no_cutoff: backfill --no-cutoff;
-- run_audit.sum_before and sum_after: the partition's order-independent
-- checksum before and after the write.
ALTER TABLE manifest DROP CONSTRAINT manifest_state_check;
ALTER TABLE manifest ADD CONSTRAINT manifest_state_check CHECK (state IN
    ('queued', 'running', 'succeeded', 'failed', 'blocked', 'cancelled',
     'skipped'));
ALTER TABLE manifest ADD COLUMN changed boolean;
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check CHECK (state IN
    ('running', 'succeeded', 'failed', 'cancelled', 'skipped'));
ALTER TABLE partition_latest DROP CONSTRAINT partition_latest_state_check;
ALTER TABLE partition_latest ADD CONSTRAINT partition_latest_state_check
    CHECK (state IN ('succeeded', 'failed', 'skipped'));
ALTER TABLE requests ADD COLUMN no_cutoff boolean NOT NULL DEFAULT false;
ALTER TABLE run_audit ADD COLUMN sum_before text;
ALTER TABLE run_audit ADD COLUMN sum_after text;
