-- 007_cutoff.sql - early cut-off downstream (docs/cutoff.md).
--
-- A downstream partition whose inputs in the request all came out of
-- their runs identical is not run: its manifest row, its runs row and its
-- newest run in partition_latest read 'skipped'.  SQLite cannot change a
-- CHECK constraint in place, so the three tables are rebuilt with the
-- new state allowed, the way SQLite's ALTER TABLE page describes: new
-- table, copy, drop, rename, with foreign keys off (the marker line below
-- asks the migration runner for that; it checks them before committing).
-- backfilld: foreign_keys off
--
-- manifest.changed: what the item's run did to its partition, from the
-- fingerprints read before and after its write in its transaction: 0 came
-- out identical, 1 changed, NULL unknown (no fingerprint, not run yet).
-- requests.no_cutoff: backfill --no-cutoff, rebuild the downstream
-- regardless.  run_audit.sum_before and sum_after: the partition's
-- order-independent checksum (the form verify prints) before and after.
CREATE TABLE manifest_new (
    id            INTEGER PRIMARY KEY,
    request_id    INTEGER NOT NULL REFERENCES requests(id),
    job           TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    seq           INTEGER NOT NULL,
    downstream    INTEGER NOT NULL DEFAULT 0,
    -- (checks written as OR chains: an IN list makes SQLite build a
    -- temporary table on every write)
    state         TEXT    NOT NULL CHECK (state = 'queued' OR
                      state = 'running' OR state = 'succeeded' OR
                      state = 'failed' OR state = 'blocked' OR
                      state = 'cancelled' OR state = 'skipped'),
    attempts      INTEGER NOT NULL DEFAULT 0,
    not_before    INTEGER NOT NULL DEFAULT 0,
    blocked_on    TEXT,
    error         TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    changed       INTEGER,
    UNIQUE (request_id, job, partition_key)
);
INSERT INTO manifest_new (id, request_id, job, partition_key, seq, downstream,
    state, attempts, not_before, blocked_on, error, created_at, updated_at)
    SELECT id, request_id, job, partition_key, seq, downstream, state,
        attempts, not_before, blocked_on, error, created_at, updated_at
    FROM manifest;
DROP TABLE manifest;
ALTER TABLE manifest_new RENAME TO manifest;
CREATE INDEX manifest_job_partition ON manifest (job, partition_key);

CREATE TABLE runs_new (
    id            INTEGER PRIMARY KEY,
    manifest_id   INTEGER NOT NULL REFERENCES manifest(id),
    request_id    INTEGER NOT NULL REFERENCES requests(id),
    job           TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    attempt       INTEGER NOT NULL,
    state         TEXT    NOT NULL CHECK (state = 'running' OR
                      state = 'succeeded' OR state = 'failed' OR
                      state = 'cancelled' OR state = 'skipped'),
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    error         TEXT,
    rows_changed  INTEGER,
    code_version  TEXT,
    config_hash   TEXT,
    pgid          INTEGER,
    proc_start    INTEGER,
    shared_run    INTEGER
);
INSERT INTO runs_new (id, manifest_id, request_id, job, partition_key, attempt,
    state, started_at, finished_at, error, rows_changed, code_version,
    config_hash, pgid, proc_start, shared_run)
    SELECT id, manifest_id, request_id, job, partition_key, attempt, state,
        started_at, finished_at, error, rows_changed, code_version,
        config_hash, pgid, proc_start, shared_run
    FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_request ON runs (request_id);
CREATE INDEX runs_manifest ON runs (manifest_id);
CREATE INDEX runs_job_succeeded ON runs (job, id) WHERE state = 'succeeded';

CREATE TABLE partition_latest_new (
    job           TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    run_id        INTEGER NOT NULL,
    state         TEXT    NOT NULL CHECK (state = 'succeeded' OR
                      state = 'failed' OR state = 'skipped'),
    PRIMARY KEY (job, partition_key)
) WITHOUT ROWID;
INSERT INTO partition_latest_new SELECT job, partition_key, run_id, state
    FROM partition_latest;
DROP TABLE partition_latest;
ALTER TABLE partition_latest_new RENAME TO partition_latest;

ALTER TABLE requests ADD COLUMN no_cutoff INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_audit ADD COLUMN sum_before TEXT;
ALTER TABLE run_audit ADD COLUMN sum_after TEXT;
