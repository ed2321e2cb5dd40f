#!/usr/bin/env python3
"""Throttling above `critical` (issue 18), on a PostgreSQL warehouse of the
throwaway cluster of test_postgres.py (skipped with 77 when no server can
be started, unless BACKFILLD_REQUIRE_POSTGRES=1): PostgreSQL lets the test
raise the load while a run holds its transaction open (SQLite's writer
lock would not).  A run in flight is interrupted on the server and queued
again without an attempt counted; nothing starts while the load stays
above max; once it drops the partition runs to success, attempt 1."""
import os
import time

import harness as h
import test_postgres as tp

GUARD = 60.0

SEED = """
DROP TABLE IF EXISTS load, knob, out_t;
CREATE TABLE load (v numeric);
INSERT INTO load VALUES (0);
CREATE TABLE knob (s numeric);
INSERT INTO knob VALUES (60);
CREATE TABLE out_t (dt date, n integer);
"""

JOBS = """
- name: slow
  warehouse: dw
  partition: day
  sql: |
    DELETE FROM out_t WHERE dt = :partition::date;
    SELECT pg_sleep((SELECT s FROM knob));
    INSERT INTO out_t VALUES (:partition::date, 1);
"""


def wh():
    return tp.pg_warehouse("dw") + """    throttle:
      sql: SELECT v FROM load
      max: 10
      critical: 50
      every: 1s
"""


def throttle(d):
    st = d.json("status")
    return {w["name"]: w for w in st["warehouses"]}["dw"]["throttle"]


def wait(what, pred):
    deadline = time.monotonic() + GUARD
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            h.fail("%s not seen within %.0f s" % (what, GUARD))
        time.sleep(0.05)


def test_critical_requeues_runs_in_flight():
    c = tp.cluster()
    c.fresh_db()
    c.as_etl(SEED)
    d = tp.pg_daemon(JOBS, wh(), name="pgthrottle", clock=None)
    wait("the first throttle check", lambda: throttle(d) and throttle(d)["checks"] > 0)
    req = d.enqueue("backfill", "slow", "--from", "2026-01-01", "--to", "2026-01-01")
    # in its pg_sleep on the server: a run recorded running may not have
    # read the knob yet, and would then sleep 0 s and succeed
    wait("the run in flight", lambda: [r for r in d.runs() if r["state"] == "running"] and
         c.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep%'"
                " AND state = 'active' AND pid <> pg_backend_pid()") == [("1",)])
    c.as_etl("UPDATE load SET v = 100; UPDATE knob SET s = 0")
    t = wait("critical", lambda: throttle(d)["state"] == "critical" and throttle(d))
    h.eq((t["value"], t["critical"]), (100, 50), "critical in status --json")
    wait("the run requeued", lambda: [r["state"] for r in d.runs()] == ["cancelled", "queued"]
         or [r["state"] for r in d.runs()] == ["queued", "cancelled"])
    h.eq(c.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep%'"
                " AND pid <> pg_backend_pid()"), [("0",)], "the statement ended on the server")
    first = throttle(d)["checks"]
    wait("three more checks", lambda: throttle(d)["checks"] >= first + 3)
    h.eq(sorted(r["state"] for r in d.runs()), ["cancelled", "queued"],
         "nothing starts while critical")
    out = d.ok("status")
    h.check("warehouse dw: critical since" in out, "status text:\n%s" % out)
    c.as_etl("UPDATE load SET v = 0")
    d.wait_request(req)
    runs = d.runs()
    h.eq(sorted((r["state"], r["attempt"]) for r in runs),
         [("cancelled", 1), ("succeeded", 1)], "a requeued run is not counted as an attempt")
    h.eq(c.psql("SELECT count(*) FROM out_t"), [("1",)], "the partition landed once")
    d.stop()


def test_slow_query_times_out():
    """A throttle query that does not answer within its timeout (every,
    at most 10 s) is cancelled on the server and counts as throttled,
    saying so; the next checks start on a fresh connection."""
    c = tp.cluster()
    c.fresh_db()
    c.as_etl(SEED)
    w = tp.pg_warehouse("dw") + """    throttle:
      sql: SELECT 1 FROM pg_sleep(30)
      max: 10
      every: 1s
"""
    d = tp.pg_daemon(JOBS, w, name="pgthrottleslow", clock=None)
    t = wait("a timed-out check", lambda: throttle(d)["checks"] >= 2 and throttle(d))
    h.eq(t["state"], "throttled", "state after a timed-out check")
    h.check(t["error"] and ("did not answer" in t["error"] or "cancel" in t["error"]),
            "a slow throttle query does not say why: %r" % (t,))
    # no pile of sleeping sessions: each check was cancelled on the server
    n = int(c.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%'"
                   " AND state = 'active' AND pid <> pg_backend_pid()")[0][0])
    h.check(n <= 1, "%d throttle queries still sleep on the server" % n)
    d.stop()


def main():
    if not os.environ.get("BACKFILLD"):
        h.binaries()
    try:
        tp.cluster()
        h.main([test_critical_requeues_runs_in_flight, test_slow_query_times_out])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
