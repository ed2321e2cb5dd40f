-- 007_shard_publishes.sql - each shard's publish of a partition on a
-- ClickHouse Distributed target (as sql/009_shard_publishes.sql).
--
-- A row per (request, job, partition, shard) once that shard's REPLACE
-- went through, written before the next shard publishes; bounded: the
-- rows go with their request (ON DELETE CASCADE).
CREATE TABLE shard_publishes (
    request       bigint  NOT NULL REFERENCES requests(id) ON DELETE CASCADE,
    job           text    NOT NULL,
    partition_key text    NOT NULL,
    shard         integer NOT NULL,
    nshards       integer NOT NULL,
    run_id        bigint  NOT NULL,
    rows_before   bigint  NOT NULL,
    rows_after    bigint  NOT NULL,
    published_at  bigint  NOT NULL,
    PRIMARY KEY (request, job, partition_key, shard)
);
CREATE INDEX shard_publishes_job ON shard_publishes (job, partition_key);
