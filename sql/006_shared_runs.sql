-- 006_shared_runs.sql - one execution, one run id.
--
-- A run that serves several requests at once (the same job and partition
-- queued by each: one execution) keeps a runs row per request, for its
-- attempt, audit and outcome in each; every row but the first names the
-- first in shared_run, and `runs` and `audit` show that id for all of
-- them.  NULL: the row is its execution's first, or a run of its own.
ALTER TABLE runs ADD COLUMN shared_run INTEGER;
