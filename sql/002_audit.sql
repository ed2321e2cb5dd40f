-- 002_audit.sql - what each run changed and whether it passed.
--
-- runs.config_hash: the hash of the configuration file the run's job was
-- loaded from (runs.code_version is the hash of the job's own definition).
-- run_audit: one row per partition a run wrote: rows and metrics before and
-- after the write, every check's outcome, pass or fail.  metrics and checks
-- are JSON text in the shapes `backfillctl audit --json` prints, and
-- metrics_text and checks_text the one-line forms its table prints.
ALTER TABLE runs ADD COLUMN config_hash TEXT;

CREATE TABLE run_audit (
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    partition_key TEXT    NOT NULL,
    rows_before   INTEGER,
    rows_after    INTEGER,
    metrics       TEXT    NOT NULL DEFAULT '{}',
    checks        TEXT    NOT NULL DEFAULT '[]',
    metrics_text  TEXT,   -- the same, one line for people
    checks_text   TEXT,
    passed        INTEGER NOT NULL,
    PRIMARY KEY (run_id, partition_key)
) WITHOUT ROWID;

-- late_data sensors, per job: :since of the next check (the start of the
-- previous successful one), when it last ran, what it found, its error.
ALTER TABLE jobs ADD COLUMN late_since INTEGER;
ALTER TABLE jobs ADD COLUMN late_checked_at INTEGER;
ALTER TABLE jobs ADD COLUMN late_found INTEGER;
ALTER TABLE jobs ADD COLUMN late_error TEXT;
