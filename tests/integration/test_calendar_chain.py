#!/usr/bin/env python3
"""Jobs in different calendars feeding each other (issue 42): a UTC hourly
fact feeds a Berlin daily mart (Berlin days of 2023-10-29, 25 hours, and
its neighbours), which feeds a Berlin quarterly rollup.  A repair of the
UTC day 2023-10-29 rebuilds exactly the Berlin days overlapping it
(2023-10-29, which began at 22:00Z the day before, and 2023-10-30, which
began at 23:00Z on it), then the quarter; the three tables then equal a
recompute from scratch on the same raw data.

The mart selects its fact hours by :partition_start_utc ..
:partition_end_utc, the fact's rows carry their own UTC start: a Berlin day
is 23, 24 or 25 of them."""
import harness as h

SEED = """
CREATE TABLE raw (ts TEXT, amount INTEGER);
WITH RECURSIVE h(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM h WHERE n < 143)
INSERT INTO raw SELECT datetime('2023-10-26 22:00:00', '+' || n || ' hours',
    '+' || (n % 7) || ' minutes'), 1 + n % 5 FROM h;
CREATE TABLE fct (hour TEXT PRIMARY KEY, hour_utc TEXT, amount INTEGER);
CREATE TABLE mart (day TEXT PRIMARY KEY, hours INTEGER, amount INTEGER);
CREATE TABLE rollup (quarter TEXT PRIMARY KEY, days INTEGER, amount INTEGER);
"""

JOBS = """
- name: fct
  warehouse: sales
  partition: hour
  sql: |
    DELETE FROM fct WHERE hour = :partition;
    INSERT INTO fct SELECT :partition, :partition_start_utc, COALESCE(SUM(amount), 0)
    FROM raw WHERE ts >= :partition_start AND ts < :partition_end;
- name: mart
  warehouse: sales
  partition: day
  timezone: Europe/Berlin
  upstream: [fct]
  sql: |
    DELETE FROM mart WHERE day = :partition;
    INSERT INTO mart SELECT :partition, COUNT(*), SUM(amount) FROM fct
    WHERE hour_utc >= :partition_start_utc AND hour_utc < :partition_end_utc;
- name: rollup
  warehouse: sales
  partition: quarter
  timezone: Europe/Berlin
  upstream: [mart]
  sql: |
    DELETE FROM rollup WHERE quarter = :partition;
    INSERT INTO rollup SELECT :partition, COUNT(*), SUM(amount) FROM mart
    WHERE day >= :partition_start AND day < :partition_end;
"""

# the UTC hours of the Berlin days 2023-10-27 .. 2023-10-31
FIRST, LAST = "2023-10-26T22", "2023-10-31T22"
REPAIR = "UPDATE raw SET amount = amount * 10 WHERE ts >= '2023-10-29 00:00:00'" \
         " AND ts < '2023-10-30 00:00:00'"


def tables(d):
    return {t: d.query("SELECT * FROM %s ORDER BY 1" % t) for t in ("fct", "mart", "rollup")}


def daemon(name):
    return h.Daemon(jobs=JOBS, warehouses={"sales": SEED}, clock=None, name=name, start=False)


def test_repair_equals_recompute():
    d = daemon("calchain")
    d.start()
    d.backfill("fct", FIRST, LAST)
    h.eq([r[:2] for r in d.query("SELECT day, hours FROM mart ORDER BY day")],
         [("2023-10-27", 24), ("2023-10-28", 24), ("2023-10-29", 25), ("2023-10-30", 24),
          ("2023-10-31", 24)], "Berlin days and the UTC hours each holds")
    h.eq(d.query("SELECT quarter, days FROM rollup"), [("2023-10-01", 5)], "the quarter")

    con = d.wh("sales")  # a late load changes the raw data of the UTC day
    con.execute(REPAIR)
    con.commit()
    con.close()
    before = {r["request"] for r in d.runs()}
    d.backfill("fct", "2023-10-29T00", "2023-10-29T23")
    runs = [r for r in d.runs() if r["request"] not in before]
    h.eq(sorted(r["partition"] for r in runs if r["job"] == "mart"),
         ["2023-10-29", "2023-10-30"], "the Berlin days the UTC day 2023-10-29 overlaps")
    h.eq([r["partition"] for r in runs if r["job"] == "rollup"], ["2023-10-01"],
         "the quarter rebuilt once")
    h.eq(len([r for r in runs if r["job"] == "fct"]), 24, "the UTC hours repaired")
    repaired = tables(d)
    d.stop()

    fresh = daemon("calchain-fresh")
    con = fresh.wh("sales")
    con.execute(REPAIR)
    con.commit()
    con.close()
    fresh.start()
    fresh.backfill("fct", FIRST, LAST)
    h.eq(repaired, tables(fresh), "the repaired tables against a recompute from scratch")
    fresh.stop()


if __name__ == "__main__":
    h.main([test_repair_equals_recompute])
