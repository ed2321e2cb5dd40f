-- 008_trends.sql - what checks remember across runs.
--
-- jobs.reconciled_through: the newest partition of the job whose
-- reconcile checks all passed (status shows it; it survives a restart).
--
-- trend_values: a metric's value after each successful run, per job,
-- metric and partition, for the metric's trend check (its own recent
-- history).  Bounded: each (job, metric) keeps the newest `last` + 1
-- values (by run, then partition), trimmed as each one is recorded and
-- at start and reload (a metric whose trend is gone loses its rows).
ALTER TABLE jobs ADD COLUMN reconciled_through TEXT;

CREATE TABLE trend_values (
    job           TEXT    NOT NULL,
    metric        TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    value         REAL    NOT NULL,
    run_id        INTEGER NOT NULL,
    PRIMARY KEY (job, metric, partition_key)
) WITHOUT ROWID;
CREATE INDEX trend_values_newest ON trend_values (job, metric, run_id, partition_key);
