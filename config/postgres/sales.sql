-- sales.sql - the demo warehouse on PostgreSQL: the lesson's sales example,
-- mid-incident.  The same tables and the same rows as config/demo/sales.sql
-- (the SQLite version), with PostgreSQL types: dates are `date`, money is
-- `numeric`, so sums are exact.
--
-- Run it as the warehouse's owner on an empty database:
--     psql -X -v ON_ERROR_STOP=1 -d etl -f config/postgres/sales.sql
--
-- raw_sales is the truth: four ISO weeks of sales (2026-01-26 .. 2026-02-22,
-- Monday to Sunday), three stores, two to four sales per store and day, and
-- every seventh sale a refund (a negative amount), generated here,
-- deterministically.
--
-- fct_daily_sales was built correctly for every date EXCEPT the deploy
-- window 2026-02-08 .. 2026-02-12, when the buggy build excluded refunds.
-- The marts were built from that fact table, so mart_weekly_sales is wrong
-- for the weeks of 2026-02-02 and 2026-02-09 and mart_monthly_sales for
-- 2026-02.  Backfilling the window repairs the fact table; backfilld then
-- rebuilds exactly those weeks and that month.

BEGIN;

CREATE TABLE raw_sales (
    sale_id    integer       PRIMARY KEY,
    dt         date          NOT NULL,
    store_id   integer       NOT NULL,
    amount_usd numeric(12,2) NOT NULL     -- negative for a refund
);
CREATE INDEX raw_sales_dt ON raw_sales (dt);

CREATE TABLE fct_daily_sales (
    dt          date          NOT NULL,
    store_id    integer       NOT NULL,
    sales       integer       NOT NULL,   -- rows in raw_sales
    revenue_usd numeric(14,2) NOT NULL,   -- their summed amount, refunds included
    PRIMARY KEY (dt, store_id)
);

CREATE TABLE mart_weekly_sales (
    week_start  date PRIMARY KEY,         -- the Monday of the ISO week
    revenue_usd numeric(14,2)
);

CREATE TABLE mart_monthly_sales (
    month_start date PRIMARY KEY,         -- the first day of the month
    revenue_usd numeric(14,2)
);

-- Every (day, store, n) with n = 1 .. 2 + (day + store) % 3, numbered in
-- that order (the SQLite version's rowids); amounts between 5.00 and
-- 254.99, every seventh sale a refund of part of a purchase.
INSERT INTO raw_sales (sale_id, dt, store_id, amount_usd)
SELECT id, dt, s,
       CASE WHEN id % 7 = 0 THEN -ROUND(5 + (id * 3571) % 6000 / 100.0, 2)
            ELSE ROUND(5 + (id * 7919) % 25000 / 100.0, 2) END
FROM (
    SELECT row_number() OVER (ORDER BY d, s, n) AS id,
           DATE '2026-01-26' + d AS dt, s
    FROM generate_series(0, 27) AS d,
         generate_series(1, 3) AS s,
         generate_series(1, 4) AS n
    WHERE n <= 2 + (d + s) % 3
) AS g;

-- The correct build, outside the deploy window.
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales
WHERE dt NOT BETWEEN '2026-02-08' AND '2026-02-12'
GROUP BY dt, store_id;

-- The buggy build that ran during the deploy window: refunds excluded.
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales
WHERE dt BETWEEN '2026-02-08' AND '2026-02-12' AND amount_usd > 0
GROUP BY dt, store_id;

-- The marts, built from the fact table as it stood (so they inherit the bug).
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT date_trunc('week', dt)::date, SUM(revenue_usd)
FROM fct_daily_sales
GROUP BY 1;

INSERT INTO mart_monthly_sales (month_start, revenue_usd)
SELECT date_trunc('month', dt)::date, SUM(revenue_usd)
FROM fct_daily_sales
GROUP BY 1;

COMMIT;
