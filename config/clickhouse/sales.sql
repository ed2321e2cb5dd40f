-- sales.sql - the lesson's sales example on ClickHouse, mid-incident
-- (docs/clickhouse.md).  Money is in cents (Int64), so sums are exact.
--
-- Run it statement by statement (clickhouse-client --multiquery) in the
-- warehouse's database.
--
-- raw_sales is the truth: four ISO weeks of sales (2026-01-26 ..
-- 2026-02-22), three stores, two to four sales per store and day, every
-- sale with (day + store + n) % 4 = 0 a refund (a negative amount), generated deterministically.
-- fct_daily_sales was built correctly for every date EXCEPT the deploy
-- window 2026-02-08 .. 2026-02-12, when the buggy build excluded refunds;
-- mart_weekly_sales, built from it, is wrong for the weeks of 2026-02-02
-- and 2026-02-09.  Backfilling the window repairs the fact table; backfilld
-- then rebuilds exactly those two weeks.

CREATE TABLE raw_sales (
    sale_id      UInt32,
    dt           Date,
    store_id     UInt8,
    amount_cents Int64          -- negative for a refund
) ENGINE = MergeTree PARTITION BY toYYYYMM(dt) ORDER BY (dt, store_id, sale_id);

CREATE TABLE fct_daily_sales (
    dt            Date,
    store_id      UInt8,
    sales         UInt64,       -- rows in raw_sales
    revenue_cents Int64         -- their summed amount, refunds included
) ENGINE = MergeTree PARTITION BY dt ORDER BY (dt, store_id);

CREATE TABLE mart_weekly_sales (
    week_start    Date,         -- the Monday of the ISO week
    revenue_cents Int64
) ENGINE = MergeTree PARTITION BY toMonday(week_start) ORDER BY week_start;

INSERT INTO raw_sales
SELECT toUInt32(d * 100 + s * 10 + n) AS id, toDate('2026-01-26') + d, s,
       if((d + s + n) % 4 = 0, -toInt64(500 + (id * 3571) % 6000),
          toInt64(500 + (id * 7919) % 25000))
FROM (SELECT d, s, arrayJoin(range(toUInt64(2 + (d + s) % 3))) + 1 AS n
      FROM (SELECT number AS d, arrayJoin([1, 2, 3]) AS s FROM numbers(28)));

INSERT INTO fct_daily_sales
SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales
WHERE dt < toDate('2026-02-08') OR dt > toDate('2026-02-12')
GROUP BY dt, store_id;

INSERT INTO fct_daily_sales
SELECT dt, store_id, countIf(amount_cents > 0), sumIf(amount_cents, amount_cents > 0)
FROM raw_sales
WHERE dt >= toDate('2026-02-08') AND dt <= toDate('2026-02-12')
GROUP BY dt, store_id;

INSERT INTO mart_weekly_sales
SELECT toMonday(dt), sum(revenue_cents) FROM fct_daily_sales GROUP BY toMonday(dt);
