#!/usr/bin/env python3
"""trend_bench.py - what a trend check costs a run (docs/checks.md).

    tests/bench/trend_bench.py [--days N] [--runs R] [--smoke]

One daily job writing one row a partition on a SQLite warehouse, guarded
(table, partition_column) with one metric, in three variants run in the
same process, alternating, R times each (default 3) over a backfill of N
days (default 400) at max_concurrency 1, on a fresh daemon each time:

  metric     revenue: {sql: SUM(v)}: measured before and after, no trend
  trend28    the same with trend: {last: 28, max_sigma: 1000}
  trend1000  the same with trend: {last: 1000, max_sigma: 1000}

It prints the median wall time of each backfill (backfillctl ... --wait),
per partition, and the ratio of each trend variant to `metric` (the cost
of reading the history before each run and recording after it).  It also
checks the bound: after the backfill the state store holds last + 1
values.  --smoke: 20 days, one run, the bound checked, no timing.
Needs the built binaries (BACKFILLD/BACKFILLCTL, or build/).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
import harness as h  # noqa: E402

SEED = "CREATE TABLE t (dt TEXT NOT NULL, v REAL NOT NULL);"
SQL = ("DELETE FROM t WHERE dt = :partition;\n"
       "    INSERT INTO t VALUES (:partition, 100 + (julianday(:partition) % 7))")


def job(trend):
    metric = "{sql: SUM(v)}" if trend is None else \
        "{sql: SUM(v), trend: {last: %d, max_sigma: 1000}}" % trend
    return """
- name: j
  warehouse: w
  partition: day
  catchup: false
  max_backfill: 5000
  table: t
  partition_column: dt
  metrics:
    revenue: %s
  sql: |
    %s
""" % (metric, SQL)


def one(trend, first, last):
    d = h.Daemon(jobs=job(trend), warehouses={"w": SEED}, settings={"max_concurrency": 1},
                 name="trendbench")
    t0 = time.monotonic()
    d.ok("backfill", "j", "--from", first, "--to", last, "--wait", timeout=3600)
    took = time.monotonic() - t0
    kept = d.state_rows("SELECT COUNT(*) FROM trend_values")[0][0]
    d.stop()
    d.close()
    if trend is not None and kept != min(trend + 1, ndays(first, last)):
        h.fail("trend %d: %d values kept, expected %d" % (trend, kept,
                                                            min(trend + 1, ndays(first, last))))
    return took


def ndays(first, last):
    return len(h.days(first, last))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=400)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.days, a.runs = 20, 1
    first = "2024-01-01"
    last = h.days(first, "2030-12-31")[a.days - 1]
    variants = [("metric", None), ("trend28", 28), ("trend1000", 1000)]
    times = {name: [] for name, _ in variants}
    for _ in range(a.runs):
        for name, trend in variants:
            times[name].append(one(trend, first, last))
    if a.smoke:
        print("trend_bench smoke: bounds held")
        return
    base = statistics.median(times["metric"])
    print("%d daily partitions, %d runs each, medians:" % (a.days, a.runs))
    for name, _ in variants:
        m = statistics.median(times[name])
        print("  %-10s %7.2f s  %6.2f ms/partition  %.2fx metric" % (
            name, m, 1000 * m / a.days, m / base))


if __name__ == "__main__":
    main()
