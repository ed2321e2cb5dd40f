-- sales.sql - the demo warehouse: the lesson's sales example, mid-incident.
--
-- Run it with the sqlite3 CLI on a fresh file:
--     sqlite3 demo/state/sales.db < config/demo/sales.sql
--
-- raw_sales is the truth: four ISO weeks of sales (2026-01-26 .. 2026-02-22,
-- Monday to Sunday), three stores, two to four sales per store and day, and
-- every seventh sale a refund (a negative amount).  The data is generated
-- here, deterministically, so every run of this script gives the same bytes.
--
-- fct_daily_sales was built correctly for every date EXCEPT the deploy
-- window 2026-02-08 .. 2026-02-12, when the buggy build excluded refunds
-- (amount_usd > 0 only).  The marts were built from that fact table, so
-- mart_weekly_sales is wrong for the weeks of 2026-02-02 and 2026-02-09 (the
-- window straddles them: 2026-02-08 is a Sunday) and mart_monthly_sales is
-- wrong for 2026-02.  The other weeks and January are right.
--
-- Backfilling fct_daily_sales for the window repairs the fact table; the
-- lesson's trap is that the marts still lie until exactly those weeks (and
-- that month) are rebuilt too.

BEGIN;

CREATE TABLE raw_sales (
    sale_id    INTEGER PRIMARY KEY,
    dt         TEXT    NOT NULL,      -- YYYY-MM-DD
    store_id   INTEGER NOT NULL,
    amount_usd REAL    NOT NULL       -- negative for a refund
);

CREATE TABLE fct_daily_sales (
    dt          TEXT    NOT NULL,
    store_id    INTEGER NOT NULL,
    sales       INTEGER NOT NULL,     -- rows in raw_sales
    revenue_usd REAL    NOT NULL,     -- their summed amount, refunds included
    PRIMARY KEY (dt, store_id)
);

CREATE TABLE mart_weekly_sales (
    week_start  TEXT PRIMARY KEY,     -- the Monday of the ISO week
    revenue_usd REAL
);

CREATE TABLE mart_monthly_sales (
    month_start TEXT PRIMARY KEY,     -- the first day of the month
    revenue_usd REAL
);

-- Every (day, store, n) with n = 1 .. 2 + (day + store) % 3, in that order;
-- sale_id follows the insertion order.
INSERT INTO raw_sales (dt, store_id, amount_usd)
WITH RECURSIVE
    days(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM days WHERE d < 27),
    stores(s) AS (SELECT 1 UNION ALL SELECT s + 1 FROM stores WHERE s < 3),
    seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 4)
SELECT date('2026-01-26', '+' || d || ' days'), s, 0
FROM days, stores, seq
WHERE n <= 2 + (d + s) % 3
ORDER BY d, s, n;

-- Amounts between 5.00 and 254.99; every seventh sale is a refund of part
-- of a purchase.
UPDATE raw_sales
SET amount_usd = CASE
    WHEN sale_id % 7 = 0 THEN -ROUND(5 + (sale_id * 3571) % 6000 / 100.0, 2)
    ELSE ROUND(5 + (sale_id * 7919) % 25000 / 100.0, 2)
END;

-- The correct build, outside the deploy window.
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales
WHERE dt NOT BETWEEN '2026-02-08' AND '2026-02-12'
GROUP BY dt, store_id
ORDER BY dt, store_id;

-- The buggy build that ran during the deploy window: refunds excluded.
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales
WHERE dt BETWEEN '2026-02-08' AND '2026-02-12' AND amount_usd > 0
GROUP BY dt, store_id
ORDER BY dt, store_id;

-- The marts, built from the fact table as it stood (so they inherit the bug).
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT date(dt, 'weekday 0', '-6 days') AS week_start, SUM(revenue_usd)
FROM fct_daily_sales
GROUP BY week_start
ORDER BY week_start;

INSERT INTO mart_monthly_sales (month_start, revenue_usd)
SELECT date(dt, 'start of month') AS month_start, SUM(revenue_usd)
FROM fct_daily_sales
GROUP BY month_start
ORDER BY month_start;

COMMIT;
