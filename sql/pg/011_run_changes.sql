-- 011_run_changes.sql - the rows a run's statements changed in each
-- partition (issue 40; docs/cutoff.md); the same column as the SQLite
-- store's sql/012_run_changes.sql.
--
-- run_audit.changes: the warehouse's count of rows the run's statements
-- inserted, updated or deleted for that partition; NULL when not counted
-- (a batch run, a ClickHouse stage, a command, an older record).
ALTER TABLE run_audit ADD COLUMN changes bigint CHECK (changes >= 0);
