#!/usr/bin/env python3
"""Runs handed ahead (docs/performance.md, "Runs handed ahead"): a job whose
runs take under 20 ms gets its next run started while the current one runs,
and its worker takes it the moment the current one ends.

- short runs: each partition runs once, one attempt, its row written once,
  and the runs' records overlap (the next one was recorded started before
  the current one was recorded finished);
- runs over 20 ms are never handed ahead (no record overlaps);
- a run handed ahead that has not started when the daemon drains, or its
  job is paused, or the configuration reloaded, is taken back: queued
  again without an attempt counted and run once later (at the next start,
  once resumed); no other run of the job starts while it is paused;
- kill -9 with a run handed ahead: after the restart each partition
  succeeds once, with one attempt; the run handed ahead is in the history
  as interrupted, like the run in flight;
- a --fail-fast request's runs are never handed ahead: at concurrency 1,
  with the third partition failing its check, nothing more of it starts
  (2 succeeded, 1 failed, 7 cancelled), where a run handed ahead would
  have started on its worker the moment the failed one ended;
- status counts queued partitions, not requests' items: two hours queued
  by three requests are QUEUED 2.
"""
import re
import sqlite3
import time

import harness as h

SEED = "CREATE TABLE hourly (hour TEXT PRIMARY KEY, n INTEGER);"


def job(rows, name="hourly_rows"):
    """An hourly job of one row per partition, counting `rows` first."""
    return """
- name: %s
  warehouse: wh
  partition: hour
  catchup: false
  concurrency: 1
  retries: 0
  max_backfill: 100000
  sql: |
    DELETE FROM hourly WHERE hour = :partition;
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d)
    INSERT INTO hourly (hour, n) SELECT :partition, count(*) FROM c;
""" % (name, rows)


def hours(n, first="2026-02-01T00"):
    base = time.strptime(first, "%Y-%m-%dT%H")
    t0 = time.mktime(base)
    return [time.strftime("%Y-%m-%dT%H", time.localtime(t0 + 3600 * i)) for i in range(n)]


def daemon(rows, name, any_length=False):
    """any_length: runs handed ahead however long a loaded machine makes
    the short ones (BACKFILLD_TEST_DECK_MS), for the tests of what
    happens to a run handed ahead rather than of the 20 ms bound."""
    env = {"BACKFILLD_TEST_DECK_MS": "600000"} if any_length else None
    return h.Daemon(jobs=job(rows), warehouses={"wh": SEED},
                    settings={"max_concurrency": 2}, clock=None, name=name, env=env)


def backfill_once(d, keys, what):
    d.backfill("hourly_rows", keys[0], keys[-1])
    return once_each(d, keys, what)


def overlaps(runs):
    """Consecutive runs (by id) whose records overlap."""
    rs = sorted(runs, key=lambda r: r["id"])
    return sum(1 for a, b in zip(rs, rs[1:])
               if h.parse_iso(b["started_at"]) < h.parse_iso(a["finished_at"]))


INTERRUPTED = "interrupted: the daemon stopped during the run; queued again"


def once_each(d, keys, what, interrupted=()):
    """Each key succeeded once, at attempt 1, and was written once; the
    only other runs are those of `interrupted` keys a crash cut (kept in
    the history as failed, no attempt)."""
    runs = [r for r in d.runs() if r["job"] == "hourly_rows"]
    cut = [r for r in runs if r["state"] == "failed" and r["error"] == INTERRUPTED]
    h.check({r["partition"] for r in cut} <= set(interrupted),
            "%s: runs cut by a crash: %r" % (what, cut))
    runs = [r for r in runs if r not in cut]
    got = {}
    for r in runs:
        h.check(r["state"] == "succeeded", "%s: run %r" % (what, r))
        h.eq(r["attempt"], 1, "%s: attempt of %s" % (what, r["partition"]))
        got[r["partition"]] = got.get(r["partition"], 0) + 1
    h.eq(sorted(got), sorted(keys), "%s: partitions run" % what)
    h.eq(set(got.values()), {1}, "%s: runs per partition" % what)
    rows = d.query("SELECT hour, n FROM hourly ORDER BY hour", wh="wh")
    h.eq([r[0] for r in rows], sorted(keys), "%s: rows written" % what)
    return runs


def test_short_runs_handed_ahead():
    d = daemon(2000, "ahead")
    keys = hours(300)
    runs = backfill_once(d, keys, "short runs")
    n = overlaps(runs)
    h.check(n >= len(runs) // 4,
            "only %d of %d short runs were recorded started before the one"
            " before them finished: none handed ahead?" % (n, len(runs)))
    d.stop()


def test_long_runs_not_handed_ahead():
    d = daemon(400000, "ahead-long")
    keys = hours(8)
    runs = backfill_once(d, keys, "long runs")
    slow = min(h.parse_iso(r["finished_at"]) - h.parse_iso(r["started_at"]) for r in runs)
    h.check(slow.total_seconds() > 0.02, "runs of 400,000 rows took under 20 ms: %s" % slow)
    h.eq(overlaps(runs), 0, "long runs recorded overlapping (handed ahead)")
    d.stop()


def wait_for(cond, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    h.fail("timed out waiting for %s" % what)


def taken_back(d):
    return open(d.log).read().count("taken back before it started")


def held(d, later):
    """Short runs first; then, the warehouse locked, a backfill of `later`
    whose first run waits on the lock while the one handed ahead after it
    waits for it.  Returns (the lock, the request)."""
    first = hours(20)
    d.backfill("hourly_rows", first[0], first[-1])   # its runs are short
    lock = sqlite3.connect(d.warehouses["wh"], isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    req = d.enqueue("backfill", "hourly_rows", "--from", later[0], "--to", later[-1])
    wait_for(lambda: d.status("hourly_rows")["hourly_rows"]["running"] == 2,
             "a run and the one handed ahead after it")
    h.eq(taken_back(d), 0, "runs taken back before")
    return first, lock, req


def test_drain_takes_back_what_has_not_started():
    d = daemon(10, "ahead-drain", any_length=True)
    later = hours(10, "2026-03-01T00")
    first, lock, req = held(d, later)
    try:
        d.signal(15)
        wait_for(lambda: taken_back(d) == 1, "the run handed ahead taken back on SIGTERM")
        # the one taken back is no run in flight: the drain waits for one
        stop = [l for l in open(d.log) if "stopping: no new runs" in l]
        h.check(len(stop) == 1 and "for 1 runs in flight" in stop[0],
                "stop message, with one run in flight and one handed ahead: %r" % stop)
    finally:
        lock.execute("COMMIT")
        lock.close()
    rc = d.proc.wait(timeout=h.STOP_TIMEOUT)
    d.proc = None
    h.eq(rc, 0, "exit status after the drain")
    d.start()
    d.wait_request(req)
    once_each(d, first + later, "after the drain")
    d.stop()


def test_kill9_with_a_run_handed_ahead():
    """kill -9 while a run waits on the lock and the next is handed ahead
    after it: both stay in the history as interrupted, as every run in
    flight at a crash does, are queued again (neither committed), and
    every partition succeeds once, with one attempt."""
    d = daemon(10, "ahead-kill", any_length=True)
    later = hours(10, "2026-03-01T00")
    first, lock, req = held(d, later)
    try:
        d.kill9()
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    d.start()
    d.wait_request(req)
    # the run that waited on the lock and the one handed ahead after it
    # were both recorded running: both are cut, neither had committed
    once_each(d, first + later, "after kill -9", interrupted=later[:2])
    d.stop()


def test_pause_and_reload_take_back():
    d = daemon(10, "ahead-pause", any_length=True)
    later = hours(10, "2026-03-01T00")
    first, lock, req = held(d, later)
    try:
        d.ok("pause", "hourly_rows")
        wait_for(lambda: taken_back(d) == 1, "the run handed ahead taken back on pause")
    finally:
        lock.execute("COMMIT")
        lock.close()
    # the run that held the slot ends; nothing else starts while paused
    wait_for(lambda: d.status("hourly_rows")["hourly_rows"]["running"] == 0,
             "the run in flight to end")
    h.eq(d.status("hourly_rows")["hourly_rows"]["succeeded"], len(first) + 1,
         "partitions succeeded while paused")
    d.ok("resume", "hourly_rows")
    d.wait_request(req)
    once_each(d, first + later, "after the pause")
    # a reload takes back what was handed ahead under the old definitions
    more = hours(10, "2026-04-01T00")
    lock = sqlite3.connect(d.warehouses["wh"], isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        req = d.enqueue("backfill", "hourly_rows", "--from", more[0], "--to", more[-1])
        wait_for(lambda: d.status("hourly_rows")["hourly_rows"]["running"] == 2,
                 "a run and the one handed ahead after it")
        d.ok("reload")
        wait_for(lambda: taken_back(d) == 2, "the run handed ahead taken back on reload")
    finally:
        lock.execute("COMMIT")
        lock.close()
    d.wait_request(req)
    once_each(d, first + later + more, "after the reload")
    d.stop()


def ff_job(slow):
    """Short hourly runs but `slow`'s, which writes 2,000,000 and fails its
    check (at most 100)."""
    return """
- name: hourly_rows
  warehouse: wh
  partition: hour
  catchup: false
  concurrency: 1
  retries: 0
  max_backfill: 100000
  sql: |
    DELETE FROM hourly WHERE hour = :partition;
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c
      WHERE x < CASE WHEN :partition = '%s' THEN 2000000 ELSE 10 END)
    INSERT INTO hourly (hour, n) SELECT :partition, count(*) FROM c;
  checks:
    - name: at_most_100
      sql: SELECT n <= 100 FROM hourly WHERE hour = :partition
""" % slow


def test_fail_fast_hands_nothing_ahead():
    """At concurrency 1 the third partition runs about a second and fails
    its check; a run handed ahead after it would start on its worker the
    moment it ended, after the failure.  Nothing more of the request may
    start: 2 succeeded, 1 failed, 7 cancelled, and its runs never overlap."""
    keys = hours(10)
    d = h.Daemon(jobs=ff_job(keys[2]), warehouses={"wh": SEED},
                 settings={"max_concurrency": 2}, clock=None, name="ahead-ff",
                 env={"BACKFILLD_TEST_DECK_MS": "600000"})
    rc, out, err = d.ctl("backfill", "hourly_rows", "--from", keys[0], "--to", keys[-1],
                         "--fail-fast", "--wait")
    h.eq(rc, 1, "backfill --fail-fast --wait with a failure (stderr %r)" % err)
    m = re.search(r"request (\d+): (\d+) succeeded, (\d+) failed, (\d+) blocked, "
                  r"(\d+) cancelled of (\d+)", out)
    h.check(m, "--wait summary missing: %r" % out)
    h.eq(tuple(int(x) for x in m.groups()[1:]), (2, 1, 0, 7, 10),
         "summary counts (succeeded, failed, blocked, cancelled, total)")
    ran = [r for r in d.runs() if r["id"] is not None]
    h.eq(sorted(r["partition"] for r in ran), keys[:3], "partitions that ran")
    h.eq(overlaps(ran), 0, "runs of the fail-fast request recorded overlapping")
    h.eq(d.query("SELECT hour FROM hourly ORDER BY hour", wh="wh"),
         [(k,) for k in keys[:2]], "rows written (the failed run rolled back)")
    d.stop()


def test_status_counts_partitions():
    d = daemon(10, "ahead-counts")
    keys = hours(2)
    d.ok("pause", "hourly_rows")
    reqs = [d.enqueue("backfill", "hourly_rows", "--from", keys[0], "--to", keys[-1])
            for _ in range(3)]
    st = d.status("hourly_rows")["hourly_rows"]
    h.eq((st["queued"], st["running"], st["blocked"]), (2, 0, 0),
         "status of two hours queued by three requests")
    out = d.ok("status", "hourly_rows")
    row = out.split("\n")[1].split()   # ... QUEUED RUNNING SUCCEEDED FAILED BLOCKED STALE
    h.eq(row[-6], "2", "QUEUED in the table:\n%s" % out)
    d.ok("resume", "hourly_rows")
    for rq in reqs:
        d.wait_request(rq)
    h.eq(d.status("hourly_rows")["hourly_rows"]["queued"], 0, "queued once all ran")
    d.stop()


if __name__ == "__main__":
    h.main([test_short_runs_handed_ahead, test_long_runs_not_handed_ahead,
            test_drain_takes_back_what_has_not_started, test_kill9_with_a_run_handed_ahead,
            test_pause_and_reload_take_back, test_fail_fast_hands_nothing_ahead,
            test_status_counts_partitions])
