-- 006_trends.sql - what checks remember across runs (as sql/008_trends.sql).
--
-- jobs.reconciled_through: the newest partition of the job whose
-- reconcile checks all passed (status shows it; it survives a restart).
--
-- trend_values: a metric's value after each successful run, per job,
-- metric and partition, for the metric's trend check.  Bounded: each
-- (job, metric) keeps the newest `last` + 1 values (by run, then
-- partition), trimmed as each one is recorded and at start and reload.
ALTER TABLE jobs ADD COLUMN reconciled_through text;

CREATE TABLE trend_values (
    job           text             NOT NULL,
    metric        text             NOT NULL,
    partition_key text             NOT NULL,
    value         double precision NOT NULL,
    run_id        bigint           NOT NULL,
    PRIMARY KEY (job, metric, partition_key)
);
CREATE INDEX trend_values_newest ON trend_values (job, metric, run_id, partition_key);
