#!/usr/bin/env python3
"""Exactly-once commits of SQL partitions (docs/guarantees.md, "Tables in your
warehouse"): the daemon killed between a run's warehouse commit and the
state store write that records it, then started again.  The run is queued
again by the recovery, finds its row of backfilld_commits, commits nothing
and is recorded succeeded with the note "already committed by run N at T":
the job's SQL ran once, on a SQLite warehouse and on a PostgreSQL one.

The kill happens at a known point, without a hook in the daemon: the test
holds the warehouse's write lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: a
LOCK TABLE on the job's log table) so that the run waits in its
transaction, takes the state store's write lock (BEGIN IMMEDIATE on
state.db: the daemon cannot record the run's end), lets the warehouse go,
sees the run's row land in the warehouse and kills the daemon there.

Also: a failed run writes no row (its retry runs), a new request (rerun)
runs again with a row of its own, a --verify proof writes no row, a batch
writes one row per partition."""
import os
import sqlite3
import subprocess
import time

import harness as h

KEY = "2026-02-10"

JOB = """
- name: logged
  warehouse: sales
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  retries: 0
  sql: |
    INSERT INTO exec_log (part) VALUES (:partition);
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out (dt, n) VALUES (:partition, 1);
"""

SEED = """
CREATE TABLE exec_log (part TEXT);
CREATE TABLE out (dt TEXT PRIMARY KEY, n INTEGER);
"""


def until(cond, what, timeout=60):
    """Wait for cond() (a state another process reaches), up to timeout."""
    deadline = time.monotonic() + timeout
    while not cond():
        h.check(time.monotonic() < deadline, "%s: not within %d s" % (what, timeout))
        time.sleep(0.02)


class SqliteWh:
    """The SQLite warehouse of daemon d, its write lock held by the test."""

    def __init__(self, d):
        self.d = d
        self.con = None

    def hold(self):
        self.con = sqlite3.connect(self.d.warehouses["sales"], timeout=30,
                                   isolation_level=None)
        self.con.execute("BEGIN IMMEDIATE")

    def release(self):
        self.con.execute("ROLLBACK")
        self.con.close()

    def executions(self):
        return [r[0] for r in self.d.query("SELECT part FROM exec_log ORDER BY 1")]

    def commits(self):
        return [(int(a), b, c, int(e)) for a, b, c, e in self.d.wh_commits()]


class PgWh:
    """A PostgreSQL warehouse in the throwaway cluster; exec_log locked by
    a psql session of the test's."""

    def __init__(self):
        import test_postgres
        self.c = test_postgres.cluster()
        self.c.fresh_db()
        self.c.as_etl("CREATE TABLE exec_log (part text);"
                      " CREATE TABLE out (dt text PRIMARY KEY, n int)")

    def hold(self):
        self.release = self.c.lock("exec_log")

    def executions(self):
        return [r[0] for r in self.c.psql("SELECT part FROM exec_log ORDER BY 1")]

    def commits(self):
        if self.c.psql("SELECT to_regclass('backfilld_commits') IS NULL") == [("t",)]:
            return []
        return [(int(a), b, c, int(e)) for a, b, c, e in self.c.psql(
            "SELECT request_id, job, partition_key, run_id FROM backfilld_commits"
            " ORDER BY 1, 2, 3")]


def running(d):
    return d.state_rows("SELECT count(*) FROM runs WHERE state = 'running'")[0][0] == 1


def lose_the_result(d, wh):
    """Run KEY of `logged` and kill the daemon after its warehouse commit,
    before the state store recorded it; returns the request's id."""
    wh.hold()
    req = d.enqueue("backfill", "logged", "--from", KEY, "--to", KEY)
    until(lambda: running(d), "the run recorded running")
    release = hold_state(d)   # the daemon's next write waits
    try:
        wh.release()
        until(lambda: wh.executions() == [KEY], "the run's commit in the warehouse")
        d.kill9()
    finally:
        release()
    return req


def hold_state(d):
    """Make the state store's writers wait; returns what lets them go."""
    if h.STATE == "sqlite":
        state = sqlite3.connect(d.state_db, timeout=30, isolation_level=None)
        state.execute("BEGIN IMMEDIATE")

        def release():
            state.execute("ROLLBACK")
            state.close()
        return release
    # BACKFILLD_TEST_STATE=postgres: the tables a run's end writes
    p = subprocess.Popen(d.state.c.psql_cmd(d.state.db), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    p.stdin.write("BEGIN; LOCK TABLE runs, manifest IN EXCLUSIVE MODE;\n\\echo locked\n")
    p.stdin.flush()
    h.eq(p.stdout.readline().strip(), "locked", "psql holding the state store's runs")

    def release():
        # the killed daemon's transaction, sent whole with its COMMIT
        # (pipelined), waits on the lock in its server process: end it, as
        # a daemon that died before its commit reached the server
        p.stdin.write("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                      " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                      " AND wait_event_type = 'Lock';\n")
        p.stdin.write("ROLLBACK;\n\\q\n")
        p.stdin.flush()
        p.wait(timeout=60)
    return release


def check_once(d, wh, req):
    """After the restart: one execution, one row, one success with the note."""
    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    h.eq(wh.executions(), [KEY], "executions of the job's SQL (the log it writes)")
    runs = d.runs()
    got = [(r["id"], r["state"]) for r in runs]
    if h.STATE == "postgres" and got == [(1, "succeeded")]:
        # the PostgreSQL store: the worker's result reached the work table
        # (the test holds only the runs and manifest tables), and the run
        # was recorded once: either the next planner adopted it, or the
        # killed planner's transaction, whose COMMIT the server had
        # received with its writes (one round trip, store_pg.c), went
        # through once the test let the tables go: not lost, nothing run
        # again
        log = d.log_tail(200)
        h.check("adopted from the earlier planner" in log or
                "succeeded" in log.split("---- start 2")[0],
                "the log says the run was adopted, or recorded before the kill")
        h.eq(d.state_rows("SELECT count(*) FROM work")[0][0], 0,
             "work rows left once the result was recorded")
        h.eq(wh.commits(), [(req, "logged", KEY, 1)], "backfilld_commits")
    else:
        h.eq(got, [(1, "failed"), (2, "succeeded")],
             "runs of the partition: the one the kill interrupted, the one"
             " that found its commit")
        h.check("already committed by run 1 at " in (runs[1]["error"] or ""),
                "the second run's note: %r" % runs[1]["error"])
        h.check("interrupted" in (runs[0]["error"] or ""),
                "the first run's error: %r" % runs[0]["error"])
        h.eq(wh.commits(), [(req, "logged", KEY, 1)], "backfilld_commits")
        h.check("already committed by run 1 at " in d.log_tail(200),
                "the log says the partition was already committed")
    st = d.status()["logged"]
    h.eq((st["queued"], st["running"], st["failed"]), (0, 0, 0), "status after the restart")


def test_lost_result_sqlite():
    d = h.Daemon(jobs=JOB, warehouses={"sales": SEED}, settings={"max_concurrency": 2},
                 name="once")
    wh = SqliteWh(d)
    req = lose_the_result(d, wh)
    check_once(d, wh, req)

    # a new request for the partition is a new execution: it runs
    out = d.ok("rerun", "logged", KEY, "--wait")
    h.eq(wh.executions(), [KEY, KEY], "executions after a rerun (%s)" % out.strip())
    h.eq([c[:3] for c in wh.commits()], [(req, "logged", KEY), (req + 1, "logged", KEY)],
         "backfilld_commits after the rerun: one row per request")
    d.stop()


def test_lost_result_postgres():
    import test_postgres
    wh = PgWh()
    d = test_postgres.pg_daemon(JOB, test_postgres.pg_warehouse(),
                                settings={"max_concurrency": 2}, name="oncepg")
    req = lose_the_result(d, wh)
    check_once(d, wh, req)
    d.stop()


FAILING = """
- name: flaky
  warehouse: sales
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  retries: 0
  sql: |
    INSERT INTO exec_log (part) VALUES (:partition);
    INSERT INTO out (dt, n) SELECT :partition, 1 FROM gate WHERE open = 1;
  checks:
    - name: wrote
      sql: SELECT count(*) FROM out WHERE dt = :partition
- name: proven
  warehouse: sales
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  table: out
  partition_column: dt
  sql: |
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out (dt, n) VALUES (:partition, 2);
- name: batched
  warehouse: sales
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  batch: true
  sql: |
    INSERT INTO exec_log (part) SELECT 'batch' FROM backfill_manifest LIMIT 1;
"""


def test_failures_proofs_batches():
    d = h.Daemon(jobs=FAILING, warehouses={"sales": SEED + "CREATE TABLE gate (open INTEGER);"
                                           "INSERT INTO gate VALUES (0);"},
                 settings={"max_concurrency": 2}, name="oncefail")
    wh = SqliteWh(d)
    rc = d.ctl("backfill", "flaky", "--from", KEY, "--to", KEY, "--wait")
    h.check(rc[0] != 0, "the failing run's request succeeded: %r" % (rc,))
    h.eq(wh.commits(), [], "backfilld_commits after a failed run (rolled back)")
    req = 1
    con = d.wh()
    con.execute("UPDATE gate SET open = 1")
    con.commit()
    con.close()
    d.ok("retry", str(req), "--wait")
    h.eq(wh.commits(), [(req, "flaky", KEY, 2)],
         "backfilld_commits after the retry of the same request")

    before = wh.commits()
    d.ok("verify", "proven", KEY)
    h.eq(wh.commits(), before, "backfilld_commits after a --verify proof")

    d.ok("backfill", "batched", "--from", "2026-02-01", "--to", "2026-02-03", "--wait")
    rows = [c for c in wh.commits() if c[1] == "batched"]
    h.eq([c[2] for c in rows], ["2026-02-01", "2026-02-02", "2026-02-03"],
         "backfilld_commits of one batch: a row per partition")
    ids = {r["id"] for r in d.runs() if r["job"] == "batched"}
    h.check({c[3] for c in rows} <= ids, "backfilld_commits of the batch name runs %r,"
            " not the batch's %r" % ({c[3] for c in rows}, ids))
    d.stop()


if __name__ == "__main__":
    h.main([test_lost_result_sqlite, test_failures_proofs_batches,
            test_lost_result_postgres])
