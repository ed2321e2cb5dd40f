#!/usr/bin/env python3
"""A running total on a PostgreSQL warehouse (issue 41; test_running_total
does the same on SQLite): revenue_to_date's day D is D-1's total plus the
lesson's fact of D.  Built from the buggy fact, then the fact's
2026-02-08..12 repaired: the total's 02-08..02-22 each run once, strictly
in order, with concurrency 4 on the server; the table equals a recompute,
nothing is stale.  Then a sale moved from 02-10 to 02-09 and the same
repair: cut-off runs the total's 02-09 and 02-10 only, the rest of the
cascade skipped.  The throwaway PostgreSQL server of test_postgres.py
(exit 77 without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1)."""
import os

import harness as h
import test_postgres as tp

FIRST, LAST = h.ALL_DAYS
REPAIRED = h.days(*h.WINDOW)
CASCADE = h.days("2026-02-08", LAST)

JOBS = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  concurrency: 4
  table: fct_daily_sales
  partition_column: dt
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
- name: revenue_to_date
  warehouse: sales
  partition: day
  start: 2026-01-26
  concurrency: 4
  max_backfill: 40
  table: revenue_to_date
  partition_column: dt
  upstream:
    - fct_daily_sales
    - {job: revenue_to_date, lookback: 1}
  sql: |
    DELETE FROM revenue_to_date WHERE dt = :partition;
    INSERT INTO revenue_to_date (dt, revenue_usd)
    SELECT CAST(:partition AS date),
      COALESCE((SELECT revenue_usd FROM revenue_to_date
                WHERE dt = CAST(:partition AS date) - 1), 0)
      + COALESCE((SELECT SUM(revenue_usd) FROM fct_daily_sales
                  WHERE dt = CAST(:partition AS date)), 0);
"""


def recompute(c, what):
    got = c.psql("SELECT t.dt, t.revenue_usd, (SELECT SUM(f.revenue_usd) FROM"
                 " fct_daily_sales f WHERE f.dt <= t.dt) FROM revenue_to_date t"
                 " ORDER BY t.dt")
    h.eq([r[0] for r in got], h.days(FIRST, LAST), "revenue_to_date days %s" % what)
    for dt, total, truth in got:
        h.eq(tp.cents(total), tp.cents(truth), "revenue_to_date %s %s" % (dt, what))


def total_runs(d, before):
    new = d.runs()[before:]
    return new, sorted(h.by_job(new, "revenue_to_date"), key=lambda r: r["started_at"])


def test_running_total_on_postgres():
    c = tp.cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE revenue_to_date (dt date PRIMARY KEY,"
             " revenue_usd numeric(16,2))")
    d = tp.pg_daemon(JOBS, tp.pg_warehouse(), settings={"max_concurrency": 8},
                     clock=None, name="pgrtd")
    d.backfill("revenue_to_date", FIRST, LAST)
    recompute(c, "from the buggy fact")
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "refund bug")
    new, total = total_runs(d, before)
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in new),
         sorted([("fct_daily_sales", x, "succeeded") for x in REPAIRED] +
                [("revenue_to_date", x, "succeeded") for x in CASCADE]),
         "the runs of the repair")
    h.eq([r["partition"] for r in total], CASCADE, "the total's runs by start")
    for a, b in zip(total, total[1:]):
        h.check(h.parse_iso(b["started_at"]) >= h.parse_iso(a["finished_at"]),
                "%s started before %s finished" % (b["partition"], a["partition"]))
    recompute(c, "after the repair")
    h.eq(d.json("stale")["stale"], [], "stale after the repair")

    c.as_etl("UPDATE raw_sales SET dt = '2026-02-09' WHERE sale_id ="
             " (SELECT min(sale_id) FROM raw_sales WHERE dt = '2026-02-10')")
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "moved sale")
    new, total = total_runs(d, before)
    want = {x: "skipped" for x in CASCADE}
    want["2026-02-09"] = want["2026-02-10"] = "succeeded"
    h.eq({r["partition"]: r["state"] for r in total}, want,
         "the total's days after the moved sale (cut-off)")
    recompute(c, "after the cut-off")
    h.eq(d.json("stale")["stale"], [], "stale after the cut-off")
    d.stop()


def main():
    if not os.environ.get("BACKFILLD"):
        h.binaries()
    try:
        tp.cluster()
        h.main([test_running_total_on_postgres])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
