-- 012_run_changes.sql - the rows a run's statements changed in each
-- partition (issue 40; docs/cutoff.md).
--
-- run_audit.changes: the warehouse's count of rows the run's statements
-- inserted, updated or deleted for that partition (the driver's changes()
-- before and after them), beside the partition_column's rows before and
-- after, which read nothing when the column does not hold the key.  NULL
-- when not counted: a batch run, a ClickHouse stage, a command, an older
-- record.  `audit` shows it (ROWS CHANGED, rows_changed).
ALTER TABLE run_audit ADD COLUMN changes INTEGER CHECK (changes >= 0);
