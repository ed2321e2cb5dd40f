-- 009_budgets.sql - a backfill request's budget of warehouse time
-- (backfillctl backfill --budget DURATION, max_backfill_time); the same
-- columns as the SQLite store's sql/011_budgets.sql.
--
-- budget_ms: the request's budget (NULL: none).  spent_ms: the warehouse
-- time its runs have taken so far, written with each run's end, so that
-- a restart (or another planner) goes on counting from there.
-- over_budget_at: when its measured time passed 1.5 times the budget and
-- the rest was cancelled (NULL: never, or resumed since by retry).
ALTER TABLE requests ADD COLUMN budget_ms bigint CHECK (budget_ms > 0);
ALTER TABLE requests ADD COLUMN spent_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN over_budget_at bigint;
CREATE INDEX requests_over_budget ON requests (id) WHERE over_budget_at IS NOT NULL;
