-- 001_init.sql - the state store's first schema.
--
-- Times are epoch milliseconds (UTC).  Partition keys are the text a job
-- gets as :partition (docs/configuration.md, "Concepts").  Every state change is
-- committed here before it is acknowledged to a client.

-- One row per operator or scheduler request: a set of partitions of one
-- job, plus the downstream partitions it triggers.
CREATE TABLE requests (
    id            INTEGER PRIMARY KEY,
    job           TEXT    NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN ('schedule', 'catchup',
                      'backfill', 'rerun', 'stale', 'built_by', 'late_data')),
    reason        TEXT,
    from_key      TEXT,
    to_key        TEXT,
    reprocess     TEXT    NOT NULL DEFAULT 'all'
                      CHECK (reprocess IN ('all', 'failed', 'missing')),
    reverse       INTEGER NOT NULL DEFAULT 0,
    no_downstream INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    cancelled     INTEGER NOT NULL DEFAULT 0
);

-- The manifest: one row per job and partition a request must run.
-- seq orders the rows of a request (run order); downstream rows wait until
-- no partition of the same request that maps into them is queued or running.
CREATE TABLE manifest (
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
                      state = 'cancelled'),
    attempts      INTEGER NOT NULL DEFAULT 0,
    not_before    INTEGER NOT NULL DEFAULT 0,
    blocked_on    TEXT,
    error         TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (request_id, job, partition_key)
);
CREATE INDEX manifest_job_partition ON manifest (job, partition_key);

-- One row per attempt.
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    manifest_id   INTEGER NOT NULL REFERENCES manifest(id),
    request_id    INTEGER NOT NULL REFERENCES requests(id),
    job           TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    attempt       INTEGER NOT NULL,
    state         TEXT    NOT NULL CHECK (state = 'running' OR
                      state = 'succeeded' OR state = 'failed' OR
                      state = 'cancelled'),
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    error         TEXT,
    rows_changed  INTEGER,
    code_version  TEXT
);
CREATE INDEX runs_request ON runs (request_id);
CREATE INDEX runs_job_partition ON runs (job, partition_key);

-- The last successful build of each partition: when it landed and, for a
-- downstream partition, the newest landing among its inputs it was built
-- from.  Staleness is computed from this table.
CREATE TABLE partitions (
    job           TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    built_at      INTEGER NOT NULL,
    inputs_at     INTEGER,
    run_id        INTEGER,
    code_version  TEXT,
    PRIMARY KEY (job, partition_key)
) WITHOUT ROWID;

-- Per job: the schedule's watermark (newest partition it materialised),
-- the catchup state, and the operator's pause.
CREATE TABLE jobs (
    job           TEXT    PRIMARY KEY,
    watermark     TEXT,
    catchup       TEXT    NOT NULL DEFAULT 'ok'
                      CHECK (catchup IN ('ok', 'refused', 'off')),
    gap_from      TEXT,
    gap_to        TEXT,
    paused        INTEGER NOT NULL DEFAULT 0,
    paused_at     INTEGER,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
