-- 009_shard_publishes.sql - each shard's publish of a partition on a
-- ClickHouse Distributed target (docs/clickhouse.md, "Beyond one server").
--
-- A row per (request, job, partition, shard) once that shard's REPLACE
-- went through, written before the next shard publishes: a run of the
-- request queued again after a crash publishes only the shards without
-- one.  nshards: how many shards the run published to; rows_before and
-- rows_after: that shard's audit counts (the run's sums include them).
-- Bounded: the rows go with their request (ON DELETE CASCADE).
CREATE TABLE shard_publishes (
    request       INTEGER NOT NULL REFERENCES requests(id) ON DELETE CASCADE,
    job           TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    shard         INTEGER NOT NULL,
    nshards       INTEGER NOT NULL,
    run_id        INTEGER NOT NULL,
    rows_before   INTEGER NOT NULL,
    rows_after    INTEGER NOT NULL,
    published_at  INTEGER NOT NULL,
    PRIMARY KEY (request, job, partition_key, shard)
) WITHOUT ROWID;
CREATE INDEX shard_publishes_job ON shard_publishes (job, partition_key);
