-- 003_history.sql - history that stays cheap to read and can be pruned.
--
-- partition_latest: per job and partition, the newest finished run that
-- succeeded or failed and its state.  status counts partitions by it
-- (loaded once at start, then kept in memory), --reprocess failed|missing
-- and the refused-gap check read it by key range, and pruning keeps the
-- run it names.  One row per partition that ever finished, so reading it
-- costs what the partitions cost, never what the history costs.
CREATE TABLE partition_latest (
    job           TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    run_id        INTEGER NOT NULL,
    state         TEXT    NOT NULL CHECK (state = 'succeeded' OR
                      state = 'failed'),
    PRIMARY KEY (job, partition_key)
) WITHOUT ROWID;
INSERT INTO partition_latest (job, partition_key, run_id, state)
    SELECT job, partition_key, id, state FROM runs WHERE id IN
        (SELECT MAX(id) FROM runs WHERE state = 'succeeded' OR
         state = 'failed' GROUP BY job, partition_key);

-- Runs were read by (job, partition) only to find the newest one, which
-- partition_latest now holds.  They are read by manifest row instead
-- (audit, and the foreign-key check when pruning deletes a manifest row).
DROP INDEX runs_job_partition;
CREATE INDEX runs_manifest ON runs (manifest_id);

-- The requests still open, found at start without reading the rest.
CREATE INDEX requests_open ON requests (id) WHERE finished_at IS NULL;

-- A command run's process group and its leader's start time (clock ticks
-- since boot, /proc/PID/stat field 22), so that a restarted daemon ends
-- what a crashed one left running, and only that.
ALTER TABLE runs ADD COLUMN pgid INTEGER;
ALTER TABLE runs ADD COLUMN proc_start INTEGER;
