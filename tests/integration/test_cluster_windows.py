#!/usr/bin/env python3
"""A rolling window on several hosts (issue 41; test_windows.py
test_rolling_window_repair does it on one): two nodes on one PostgreSQL
state store and one PostgreSQL warehouse, a daily fact and a 7-day mart
(upstream {job: fct, lookback: 6}), SQL jobs with concurrency 4.  A
repair of the fact's 2025-01-08..12 sent to the worker node is planned by
the planner as on one host: its runs are the fact's 5 days and the mart's
2025-01-08..18, each succeeded once, each mart day started after the
repaired days in its window landed; the worker ran some of them (claimed
from the work table) and the planner the rest; each partition was
committed once (a row of the run's own transaction), and both tables
then equal a recompute.

Nodes and the throwaway PostgreSQL server as in test_cluster.py (exit 77
without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1)."""
import collections
import re

import harness as h
import test_cluster as tc
import test_postgres as tp

DAYS = h.days("2025-01-01", "2025-01-20")
REPAIRED = h.days("2025-01-08", "2025-01-12")
ROLLED = h.days("2025-01-08", "2025-01-18")
EVENTS = {x: 100 * (i + 1) + 50 for i, x in enumerate(DAYS)}

SEED = """
CREATE TABLE w_events (dt date, amount bigint);
CREATE TABLE w_fct (dt date PRIMARY KEY, revenue bigint);
CREATE TABLE w_rolling (dt date PRIMARY KEY, revenue_7d bigint);
CREATE TABLE w_execs (job text, dt date);
"""

JOBS = """
- name: fct
  warehouse: dw
  partition: day
  start: 2025-01-01
  end: 2025-01-20
  catchup: false
  concurrency: 4
  retries: 0
  sql: |
    DELETE FROM w_fct WHERE dt = CAST(:partition AS date);
    INSERT INTO w_fct SELECT CAST(:partition AS date), SUM(amount) FROM w_events
    WHERE dt >= CAST(:partition_start AS date) AND dt < CAST(:partition_end AS date);
    INSERT INTO w_execs SELECT 'fct', CAST(:partition AS date) FROM pg_sleep(0.1);
- name: mart_rolling_7d
  warehouse: dw
  partition: day
  end: 2025-01-20
  concurrency: 4
  retries: 0
  upstream:
    - job: fct
      lookback: 6
  sql: |
    DELETE FROM w_rolling WHERE dt = CAST(:partition AS date);
    INSERT INTO w_rolling SELECT CAST(:partition AS date), SUM(revenue) FROM w_fct
    WHERE dt >= CAST(:partition_start AS date) - 6 AND dt < CAST(:partition_end AS date);
    INSERT INTO w_execs SELECT 'mart_rolling_7d', CAST(:partition AS date) FROM pg_sleep(0.1);
"""


def recompute(pg, what):
    rows = [(a, int(b)) for a, b in pg.psql("SELECT dt, revenue FROM w_fct ORDER BY dt")]
    h.eq(rows, sorted(EVENTS.items()), "fct %s" % what)
    rows = [(a, int(b)) for a, b in pg.psql("SELECT dt, revenue_7d FROM w_rolling ORDER BY dt")]
    h.eq(rows, [(x, sum(EVENTS[y] for y in DAYS[max(0, i - 6):i + 1]))
                for i, x in enumerate(DAYS)], "mart_rolling_7d %s" % what)


def claimed_since(d, offset):
    """(job, partition) node d claimed from the work table after offset in its log."""
    return set(re.findall(r"job=(\S+) partition=([^\s.]+)\S* run=\d+ attempt=\d+"
                          r" claimed by this node", tc.log_of(d)[offset:]))


def test_rolling_window_on_two_nodes():
    pg = tp.cluster()
    pg.psql("DROP DATABASE IF EXISTS etl WITH (FORCE)", db="postgres")
    pg.psql("CREATE DATABASE etl OWNER etl", db="postgres")
    pg.as_etl(SEED + "INSERT INTO w_events VALUES %s;"
              % ", ".join("('%s', %d)" % kv for kv in EVENTS.items()))
    wh = "\n" + tp.pg_warehouse("dw", max_connections=8).rstrip("\n")
    c = tc.Nodes(JOBS, names=("n1", "n2"), clock=None, settings={"warehouses": wh})
    planner = c.planner(c["n1"])
    worker = c["n2" if planner == "n1" else "n1"]
    first = tc.backfill(c[planner], "fct", DAYS[0], DAYS[-1])
    c[planner].wait_request(first)
    recompute(pg, "after the first build")

    pg.as_etl("INSERT INTO w_events VALUES %s; DELETE FROM w_execs"
              % ", ".join("('%s', 10000)" % x for x in REPAIRED))
    for x in REPAIRED:
        EVENTS[x] += 10000
    offsets = {n: len(tc.log_of(c[n])) for n in ("n1", "n2")}
    repair = tc.backfill(worker, "fct", REPAIRED[0], REPAIRED[-1])
    worker.wait_request(repair)
    want = [("fct", x) for x in REPAIRED] + [("mart_rolling_7d", x) for x in ROLLED]
    runs = tc.succeeded_once(c[planner], repair, want)
    h.eq(sorted(r["state"] for r in runs), ["succeeded"] * len(want),
         "the repair's runs (each once, nothing else)")
    committed = collections.Counter(pg.psql("SELECT job, CAST(dt AS text) FROM w_execs"))
    h.eq(sorted(committed.items()), sorted((k, 1) for k in want),
         "partitions committed in the warehouse (once each)")
    fct_done = {r["partition"]: h.parse_iso(r["finished_at"]) for r in runs
                if r["job"] == "fct"}
    for r in runs:
        if r["job"] == "mart_rolling_7d":
            window = [x for x in REPAIRED if x in h.days(DAYS[0], r["partition"])[-7:]]
            h.check(h.parse_iso(r["started_at"]) >= max(fct_done[x] for x in window),
                    "mart_rolling_7d %s started before the repaired days in its window"
                    " (%s) landed" % (r["partition"], window))
    by_worker = claimed_since(worker, offsets[worker.node_name])
    by_planner = claimed_since(c[planner], offsets[planner])
    print("  claimed by the worker: %d, by the planner: %d, the planner's own share: %d"
          % (len(by_worker), len(by_planner), len(want) - len(by_worker) - len(by_planner)))
    h.check(by_worker and set(want) - by_worker,
            "the worker claimed %d of the %d partitions: not both nodes"
            % (len(by_worker), len(want)))
    recompute(pg, "after the repair")
    h.eq(worker.json("stale")["stale"], [], "stale after the repair")


def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(test_rolling_window_on_two_nodes)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
