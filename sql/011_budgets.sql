-- 011_budgets.sql - a backfill request's budget of warehouse time
-- (backfillctl backfill --budget DURATION, max_backfill_time).
--
-- budget_ms: the request's budget (NULL: none).  spent_ms: the warehouse
-- time its runs have taken so far (the wall time of each run of a SQL
-- job, start to end), written with each run's end, so that a restart
-- goes on counting from there.  over_budget_at: when its measured time
-- passed 1.5 times the budget and the rest was cancelled (NULL: never, or
-- resumed since by retry, which counts from zero again).  Partial index:
-- `status` lists the requests stopped over budget without a scan.
ALTER TABLE requests ADD COLUMN budget_ms INTEGER CHECK (budget_ms > 0);
ALTER TABLE requests ADD COLUMN spent_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN over_budget_at INTEGER;
CREATE INDEX requests_over_budget ON requests (id) WHERE over_budget_at IS NOT NULL;
