#!/usr/bin/env python3
"""Faults of a SQLite warehouse (issue 12): a clock read the static check
cannot see fails the run; a warehouse file deleted or replaced while open
is noticed before the next run; a run waiting on a locked warehouse, or
for its turn behind another run of the same daemon, obeys its timeout and
the daemon's shutdown_grace (measured on the monotonic clock against twice
the configured time: a correctness bound, not a performance target)."""
import os
import signal
import sqlite3
import threading
import time

import harness as h

WH_SEED = """
CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);
CREATE VIEW hidden_clock AS SELECT date('now') AS d;
CREATE VIEW fixed AS SELECT date('2026-01-31', '+1 month') AS d;
"""

CLOCK_JOB = """
- name: hide
  warehouse: sales
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  catchup: false
  retries: 0
%(extra)s  sql: |
    INSERT OR REPLACE INTO t SELECT :partition, d FROM hidden_clock;
- name: dates
  warehouse: sales
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  catchup: false
  retries: 0
  sql: |
    INSERT OR REPLACE INTO t SELECT :partition,
      date(:partition, '+1 day') || ' ' || datetime(:partition_start, '+1 day')
      || ' ' || time(:partition, '+90 minutes') || ' ' || strftime('%%Y/%%W', :partition)
      || ' ' || julianday(:partition) || ' ' || unixepoch(:partition)
      || ' ' || (SELECT d FROM fixed) || ' ' || quote(date(NULL));
"""

EXPECTED_DATES = ("SELECT date(?, '+1 day') || ' ' || datetime(?, '+1 day') || ' ' ||"
                  " time(?, '+90 minutes') || ' ' || strftime('%Y/%W', ?) || ' ' ||"
                  " julianday(?) || ' ' || unixepoch(?) || ' ' ||"
                  " date('2026-01-31', '+1 month') || ' ' || quote(date(NULL))")


def test_hidden_clock_read_fails_the_run():
    d = h.Daemon(jobs=CLOCK_JOB % {"extra": ""}, warehouses={"sales": WH_SEED},
                 name="clock")
    rc, out, err = d.ctl("backfill", "hide", "--from", "2026-01-05", "--to",
                         "2026-01-05", "--wait")
    h.eq(rc, 1, "a run reading the wall clock through a view (%r %r)" % (out, err))
    (r,) = [r for r in d.runs() if r["job"] == "hide"]
    want = ("job reads the wall clock: date('now'); take the date from :partition,"
            " or set allow_wall_clock: true")
    h.check(r["error"] and want in r["error"], "error of the run: %r" % r["error"])
    h.eq(d.query("SELECT count(*) FROM t"), [(0,)], "rows written by the refused run")

    # date and time functions with a time value: SQLite's own results
    d.backfill("dates", "2026-01-05", "2026-01-05")
    con = sqlite3.connect(":memory:")
    p = "2026-01-05"
    want = con.execute(EXPECTED_DATES, (p, p, p, p, p, p)).fetchone()[0]
    h.eq(d.query("SELECT d FROM t WHERE dt = ?", (p,)), [(want,)],
         "date functions evaluated by the daemon")
    d.stop()

    d2 = h.Daemon(jobs=CLOCK_JOB % {"extra": "  allow_wall_clock: true\n"},
                  warehouses={"sales": WH_SEED}, name="clockok")
    d2.backfill("hide", "2026-01-05", "2026-01-05")
    got = d2.query("SELECT d FROM t WHERE dt = '2026-01-05'")
    today = sqlite3.connect(":memory:").execute("SELECT date('now')").fetchone()[0]
    h.check(len(got) == 1 and got[0][0] in (today,) + tuple(
        sqlite3.connect(":memory:").execute("SELECT date('now', '-1 day')").fetchone()),
        "allow_wall_clock: the view's date('now') was written: %r" % (got,))
    d2.stop()


FILE_JOB = """
- name: load
  warehouse: sales
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  catchup: false
  retries: 0
  concurrency: 2
  sql: |
    INSERT OR REPLACE INTO t VALUES (:partition, 'x');
"""


def wh_state(d):
    st = d.json("status")
    (w,) = [w for w in st["warehouses"] if w["name"] == "sales"]
    return w


def remove_db(path):
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def test_warehouse_file_deleted_or_replaced():
    d = h.Daemon(jobs=FILE_JOB, warehouses={"sales": "CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);"},
                 settings={"max_concurrency": 2}, name="whfile")
    path = d.warehouses["sales"]
    d.backfill("load", "2026-01-01", "2026-01-04")
    h.eq(wh_state(d)["state"], "ok", "warehouse state before the file goes")

    remove_db(path)
    rc, out, err = d.ctl("backfill", "load", "--from", "2026-01-05", "--to",
                         "2026-01-08", "--wait")
    h.eq(rc, 1, "a backfill into a deleted warehouse file (%r %r)" % (out, err))
    runs = [r for r in d.runs() if r["partition"] >= "2026-01-05"]
    h.eq(len(runs), 4, "runs after the deletion")
    want = "warehouse sales: its file %s was deleted or replaced while open" % path
    for r in runs:
        h.eq(r["state"], "failed", "state of a run into the deleted file")
        h.check(r["error"] and want in r["error"], "error: %r" % r["error"])
    w = wh_state(d)
    h.eq(w["state"], "unreachable", "warehouse state with its file gone")
    h.check(want in (w["error"] or ""), "warehouse error %r" % w["error"])

    # a new file at the path: the next runs go there (documented)
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);")
    con.close()
    d.backfill("load", "2026-01-09", "2026-01-10")
    h.eq(d.query("SELECT dt FROM t ORDER BY dt"), [("2026-01-09",), ("2026-01-10",)],
         "rows of the new warehouse file")
    h.eq(wh_state(d)["state"], "ok", "warehouse state with a file back")

    # replaced (renamed over) while open: noticed too, the new one is used
    tmp = path + ".new"
    con = sqlite3.connect(tmp)
    con.executescript("CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);")
    con.close()
    os.rename(tmp, path)
    d.backfill("load", "2026-01-11", "2026-01-11")
    h.eq(d.query("SELECT dt FROM t"), [("2026-01-11",)], "rows of the replacing file")
    d.stop()


LOCK_JOB = """
- name: locked
  warehouse: sales
  partition: day
  start: 2025-01-01
  end: 2025-12-31
  catchup: false
  retries: 0
  timeout: 2s
  sql: |
    INSERT OR REPLACE INTO t VALUES (:partition, 'x');
- name: patient
  warehouse: sales
  partition: day
  start: 2025-01-01
  end: 2025-12-31
  catchup: false
  retries: 0
  sql: |
    INSERT OR REPLACE INTO t VALUES (:partition, 'y');
"""


def hold_lock(path):
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.execute("BEGIN EXCLUSIVE")
    return con


def terminate(d):
    """SIGTERM the daemon; the seconds until it exited."""
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(60)
    d.proc = None
    return time.monotonic() - t0


def test_timeout_while_locked():
    d = h.Daemon(jobs=LOCK_JOB, warehouses={"sales": "CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);"},
                 clock=None, name="locked")
    con = hold_lock(d.warehouses["sales"])
    try:
        t0 = time.monotonic()
        rc, out, err = d.ctl("backfill", "locked", "--from", "2025-03-01", "--to",
                             "2025-03-01", "--wait")
        elapsed = time.monotonic() - t0
    finally:
        con.rollback()
        con.close()
    h.eq(rc, 1, "a run on a locked warehouse (%r %r)" % (out, err))
    print("timeout 2s on a locked warehouse: failed after %.2f s" % elapsed)
    h.check(elapsed < 4.0, "timeout 2s: the run failed only after %.2f s" % elapsed)
    (r,) = [r for r in d.runs() if r["job"] == "locked"]
    h.check(r["error"] and ("timed out" in r["error"] or "locked" in r["error"]),
            "error of the run: %r" % r["error"])
    d.stop()


def test_shutdown_while_locked():
    d = h.Daemon(jobs=LOCK_JOB, warehouses={"sales": "CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);"},
                 settings={"shutdown_grace": "2s"}, clock=None, name="lockstop")
    con = hold_lock(d.warehouses["sales"])
    try:
        d.enqueue("backfill", "patient", "--from", "2025-03-01", "--to", "2025-03-01")
        deadline = time.monotonic() + 20
        while not any(r["state"] == "running" for r in d.runs()):
            h.check(time.monotonic() < deadline, "the run never started")
            time.sleep(0.05)
        time.sleep(0.3)
        elapsed = terminate(d)
    finally:
        con.rollback()
        con.close()
    print("SIGTERM with shutdown_grace 2s, a run waiting on a lock: exit after %.2f s"
          % elapsed)
    h.check(elapsed < 4.0, "shutdown_grace 2s: the daemon took %.2f s to exit" % elapsed)
    d.check_sanitizers()


# The runs of one daemon that write one SQLite file take turns in the
# daemon (daemon/wh/wh_sqlite_queue.h): a run waiting for its turn obeys
# its timeout and the shutdown as one waiting on the file lock does.
# "hold" (no start: no schedule, backfills only) keeps the file in a
# statement that never ends on its own (a recursive count, interrupted by
# the stop).
TURN_JOBS = LOCK_JOB + """
- name: hold
  warehouse: sales
  partition: day
  end: 2025-12-31
  retries: 0
  sql: |
    INSERT OR REPLACE INTO t SELECT :partition, count(*) FROM
      (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
       SELECT x FROM c);
"""


def hold_turn(d):
    """Start "hold" and return once its transaction holds the file (a
    write lock taken from outside fails at once)."""
    d.enqueue("backfill", "hold", "--from", "2025-06-01", "--to", "2025-06-01")
    deadline = time.monotonic() + 20
    while True:
        con = sqlite3.connect(d.warehouses["sales"], timeout=0, isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute("ROLLBACK")
        except sqlite3.OperationalError as e:
            h.check("locked" in str(e), "taking the write lock: %s" % e)
            return
        finally:
            con.close()
        h.check(time.monotonic() < deadline, "the hold run never took the warehouse")
        time.sleep(0.02)


def test_timeout_waiting_for_the_turn():
    d = h.Daemon(jobs=TURN_JOBS, warehouses={"sales": "CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);"},
                 settings={"shutdown_grace": "2s"}, clock=None, name="turn")
    hold_turn(d)
    t0 = time.monotonic()
    rc, out, err = d.ctl("backfill", "locked", "--from", "2025-03-01", "--to",
                         "2025-03-01", "--wait")
    elapsed = time.monotonic() - t0
    h.eq(rc, 1, "a run waiting for another run's turn (%r %r)" % (out, err))
    print("timeout 2s waiting for the turn: failed after %.2f s" % elapsed)
    h.check(elapsed < 4.0, "timeout 2s: the run failed only after %.2f s" % elapsed)
    (r,) = [r for r in d.runs() if r["job"] == "locked"]
    print("error of the run: %r" % r["error"])
    h.check(r["error"] and ("timed out" in r["error"] or "locked by another run" in r["error"]),
            "error of the run: %r" % r["error"])
    h.eq([r["state"] for r in d.runs() if r["job"] == "hold"], ["running"],
         "the hold run, still writing")
    h.eq(d.query("SELECT dt FROM t WHERE dt IN ('2025-03-01', '2025-06-01')"), [],
         "rows of the two runs written while the file was held")
    d.stop()


def test_shutdown_waiting_for_the_turn():
    d = h.Daemon(jobs=TURN_JOBS, warehouses={"sales": "CREATE TABLE t (dt TEXT PRIMARY KEY, d TEXT);"},
                 settings={"shutdown_grace": "2s"}, clock=None, name="turnstop")
    hold_turn(d)
    d.enqueue("backfill", "patient", "--from", "2025-03-01", "--to", "2025-03-01")
    deadline = time.monotonic() + 20
    while sorted(r["job"] for r in d.runs() if r["state"] == "running") != ["hold", "patient"]:
        h.check(time.monotonic() < deadline, "the patient run never started")
        time.sleep(0.05)
    elapsed = terminate(d)
    print("SIGTERM with shutdown_grace 2s, one run writing, one waiting for its turn:"
          " exit after %.2f s" % elapsed)
    h.check(elapsed < 4.0, "shutdown_grace 2s: the daemon took %.2f s to exit" % elapsed)
    con = sqlite3.connect(d.warehouses["sales"])
    h.eq(con.execute("SELECT dt FROM t WHERE dt IN ('2025-03-01', '2025-06-01')").fetchall(),
         [], "rows committed by either run")
    con.close()
    d.check_sanitizers()


if __name__ == "__main__":
    h.main([test_hidden_clock_read_fails_the_run, test_warehouse_file_deleted_or_replaced,
            test_timeout_while_locked, test_shutdown_while_locked,
            test_timeout_waiting_for_the_turn, test_shutdown_waiting_for_the_turn])
