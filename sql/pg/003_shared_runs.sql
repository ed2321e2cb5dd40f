-- 003_shared_runs.sql - one execution, one run id (sql/006_shared_runs.sql
-- for SQLite: the same column).
--
-- A run that serves several requests at once keeps a runs row per
-- request; every row but the first names the first in shared_run, and
-- `runs` and `audit` show that id for all of them.  NULL: the row is its
-- execution's first, or a run of its own.
ALTER TABLE runs ADD COLUMN shared_run bigint;
