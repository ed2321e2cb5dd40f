-- 008_mark_node.sql - backfillctl mark (docs/mark.md): a partition recorded as
-- built without running it (repaired by hand).
--
-- runs.marked_by: the operator who marked it (the control socket peer's
-- user), NULL for a run that ran.  A mark is a runs row like any other
-- (succeeded, its note saying who marked it and why), so `runs`, `audit`,
-- partition_latest, staleness and pruning treat it as a landing; `map`
-- shows a partition whose newest run is a mark as marked.  The request of
-- a mark is stored with kind 'rerun' (the partitions named, with their
-- downstream): the CHECK on requests.kind cannot be widened in place.
ALTER TABLE runs ADD COLUMN marked_by text;
--
-- runs.node: the node that ran the run (several hosts), written when the
-- planner collects its result: where a command run's log is (backfillctl
-- logs, docs/logs.md).  NULL for a mark and a run still running.
ALTER TABLE runs ADD COLUMN node text;
