#!/usr/bin/env python3
"""Batch runs under faults (docs/budgets-and-chunks.md, "Chunks"): kill -9
inside a `batch: true` run on each warehouse, and a batched running total
on PostgreSQL.

kill -9 in a batch run, then a restart: the request ends with one success
a partition and every partition of the target equal to a recompute from
raw; before the restart nothing of the batch was published partially.
The kill comes at an event the test awaits, never after a sleep:
  - SQLite: the test holds a read transaction on the warehouse (a SHARED
    lock), so the batch's transaction writes every partition and then
    waits at its COMMIT for the lock it needs to write the file (its
    PENDING lock, which refuses new readers: a fresh read failing "database
    is locked" is the event); killed there, its journal rolls it back, and
    the live table holds the old rows of every partition of the batch;
  - PostgreSQL: the batch's last statement writes to a table the test has
    locked, after its DELETE and INSERT of every partition (the session
    waiting on the lock in pg_stat_activity is the event); the live table,
    read by the test meanwhile, holds the old rows of every partition, and
    still does once the orphaned session has ended (it never commits);
  - ClickHouse: the daemon stops itself (BACKFILLD_TEST_CH_STOP) either
    before the batch's first REPLACE statement (`publishing`: every stage
    partition audited and marked, none published) or right after it
    (`published`), in a batch of 70 days: a REPLACE statement holds 64
    partitions, so the first 64 days are published, each whole, and the
    last 6 still hold their old rows (a batch on ClickHouse is atomic per
    partition, not as a whole: docs/clickhouse.md, "Batch"); the restart
    publishes the rest from the marked stage, not filled again (a sale
    that lands after the kill is not in it: the request publishes what it
    audited), and no stage row or mark is left.

A running total with batch: true on PostgreSQL (SCHED-9; the SQLite and
ClickHouse forms are test_running_total.py and test_running_total_ch.py):
its first build is one run; a repair of one fact day rebuilds that day of
the total and every later built day in one run, after the fact's day; a
backfill of one day of the total itself does the same from that day; each
time every day equals a recompute, and nothing is stale.

The PostgreSQL parts use the throwaway cluster of test_postgres.py, the
ClickHouse part a throwaway clickhouse-server (tools/chserver.py), both
stopped whatever the outcome.  Without either, the parts that can run do,
then the test exits 77 (unless BACKFILLD_REQUIRE_POSTGRES=1 or
BACKFILLD_REQUIRE_CLICKHOUSE=1: then it fails)."""
import os
import sqlite3
import sys
import time

import harness as h

LO, HI = "2026-02-01", "2026-02-14"      # the batch: two weeks, the deploy window in it
BATCH_DAYS = h.days(LO, HI)
GUARD = 60                               # seconds: a failure guard, never a wait


def until(cond, what, timeout=GUARD):
    """Until cond() holds: a state another process reaches (guard only)."""
    deadline = time.monotonic() + timeout
    while not cond():
        h.check(time.monotonic() < deadline, "%s: not within %d s (guard)" % (what, timeout))
        time.sleep(0.02)


def one_success_each(d, req, job, keys):
    """The request recorded exactly one succeeded run of each key, and
    status has nothing of the job queued, running or failed."""
    runs = [r for r in d.runs() if r["request"] == req and r["job"] == job]
    ok = sorted(r["partition"] for r in runs if r["state"] == "succeeded")
    h.eq(ok, sorted(keys), "the succeeded runs of request %d (one a partition)" % req)
    st = d.status()[job]
    h.eq((st["queued"], st["running"], st["failed"]), (0, 0, 0),
         "status of %s after the restart" % job)
    return runs


def batch_in_flight(d, req, keys):
    """Every partition of the request is running, in one run (one start)."""
    rs = [r for r in d.runs() if r["request"] == req]
    h.eq(sorted((r["partition"], r["state"]) for r in rs),
         [(k, "running") for k in sorted(keys)], "the request's runs before the kill")
    h.eq(len({r["started_at"] for r in rs}), 1, "one batch run before the kill: %r" % rs)


# ---------------------------------------------------------------- SQLite

SQLITE_JOB = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  batch: true
  retries: 0
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  sql: |
    DELETE FROM fct_daily_sales WHERE dt IN (SELECT partition_key FROM backfill_manifest);
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales
    WHERE dt IN (SELECT partition_key FROM backfill_manifest) GROUP BY dt, store_id;
"""


HOLDER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
con.execute("BEGIN")
con.execute("SELECT count(*) FROM fct_daily_sales").fetchall()
print("held", flush=True)
sys.stdin.readline()
con.execute("ROLLBACK")
"""


def hold_shared(path):
    """A read transaction on the warehouse (its SHARED lock) in a process
    of its own (SQLite's locks are a process's: one of this process would
    let this process's readers through); returns what ends it."""
    import subprocess
    p = subprocess.Popen([sys.executable, "-c", HOLDER, path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    h.eq(p.stdout.readline().strip(), "held", "the read transaction on the warehouse")

    def release():
        p.stdin.close()
        h.eq(p.wait(timeout=GUARD), 0, "the read transaction's process")
    return release


def sqlite_readable(path):
    """Whether a new connection can read the warehouse now (no waiting):
    False once a writer holds its PENDING lock, at its COMMIT."""
    con = sqlite3.connect(path, timeout=0)
    try:
        con.execute("SELECT count(*) FROM raw_sales").fetchall()
        return True
    except sqlite3.OperationalError as e:
        h.check("locked" in str(e), "reading the warehouse: %s" % e)
        return False
    finally:
        con.close()


def test_kill9_batch_sqlite():
    d = h.Daemon(jobs=SQLITE_JOB, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 4}, name="bfsqlite")
    path = d.warehouses["sales"]
    # a run before: the warehouse has backfilld_commits (its creation
    # would wait for the test's lock too, outside the batch)
    d.backfill("fct_daily_sales", "2026-02-20", "2026-02-20")
    old = h.fact_rows(d, LO, HI)
    h.check(old != h.raw_truth(d, LO, HI), "the seed's fact should differ from raw"
            " in the deploy window")
    release = hold_shared(path)
    try:
        req = d.enqueue("backfill", "fct_daily_sales", "--from", LO, "--to", HI)
        until(lambda: not sqlite_readable(path),
              "the batch's transaction at its COMMIT (the warehouse refusing new readers)")
        h.check(os.path.exists(path + "-journal"),
                "the batch wrote nothing in its transaction (no rollback journal)")
        batch_in_flight(d, req, BATCH_DAYS)
        d.kill9()
    finally:
        release()
    # the first reader rolls the killed transaction's hot journal back
    h.eq(h.fact_rows(d, LO, HI), old, "the live table after the kill (the old rows of"
         " every partition of the batch)")
    h.eq([c for c in d.wh_commits() if c[0] == req], [],
         "backfilld_commits of the request after the kill")
    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    runs = one_success_each(d, req, "fct_daily_sales", BATCH_DAYS)
    killed = [r for r in runs if r["state"] != "succeeded"]
    h.eq(sorted(r["partition"] for r in killed), BATCH_DAYS,
         "the killed batch's runs, one a partition")
    h.check(all(r["state"] == "failed" and "interrupted" in (r["error"] or "")
                for r in killed), "the killed batch's runs: %r" % killed)
    h.assert_fact_repaired(d, *h.ALL_DAYS)
    h.eq(sorted(c[2] for c in d.wh_commits() if c[0] == req), BATCH_DAYS,
         "backfilld_commits of the request: a row a partition")
    d.stop()


# ---------------------------------------------------------------- PostgreSQL

PG_JOB = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  batch: true
  retries: 0
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  sql: |
    DELETE FROM fct_daily_sales f USING backfill_manifest m
    WHERE f.dt = m.partition_key::date;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT r.dt, r.store_id, COUNT(*), SUM(r.amount_usd)
    FROM raw_sales r JOIN backfill_manifest m ON r.dt = m.partition_key::date
    GROUP BY r.dt, r.store_id;
    INSERT INTO batch_log (n) SELECT count(*) FROM backfill_manifest;
"""


def pg_fact(c, lo, hi):
    return c.psql("SELECT dt, store_id, sales, revenue_usd FROM fct_daily_sales"
                  " WHERE dt BETWEEN '%s' AND '%s' ORDER BY dt, store_id" % (lo, hi))


def pg_raw(c, lo, hi):
    return c.psql("SELECT dt, store_id, count(*), sum(amount_usd) FROM raw_sales"
                  " WHERE dt BETWEEN '%s' AND '%s' GROUP BY dt, store_id"
                  " ORDER BY dt, store_id" % (lo, hi))


def pg_daemon_sessions(c, waiting=False):
    """The daemon's sessions on the warehouse (application_name backfilld);
    waiting: only those waiting on a lock."""
    return [r[0] for r in c.psql(
        "SELECT translate(left(query, 60), E'\\n|', '  ') FROM pg_stat_activity"
        " WHERE datname = 'etl' AND application_name = 'backfilld'" +
        (" AND wait_event_type = 'Lock'" if waiting else ""))]


def test_kill9_batch_postgres():
    import test_postgres as tp
    c = tp.cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE batch_log (n int)")
    d = tp.pg_daemon(PG_JOB, tp.pg_warehouse(), name="bfpg")
    old = pg_fact(c, LO, HI)
    h.check(old != pg_raw(c, LO, HI), "the seed's fact should differ from raw")
    release = c.lock("batch_log")
    try:
        req = d.enqueue("backfill", "fct_daily_sales", "--from", LO, "--to", HI)
        until(lambda: any("batch_log" in q for q in pg_daemon_sessions(c, waiting=True)),
              "the batch's last statement waiting on batch_log")
        batch_in_flight(d, req, BATCH_DAYS)
        d.kill9()
        h.eq(pg_fact(c, LO, HI), old, "the live table after the kill, the batch's"
             " transaction still open (the old rows of every partition)")
    finally:
        release()
    # the orphaned session goes on once the lock is gone, then finds its
    # client gone: it ends, and its transaction with it, uncommitted
    until(lambda: pg_daemon_sessions(c) == [], "the killed daemon's sessions ending")
    h.eq(pg_fact(c, LO, HI), old, "the live table once the killed daemon's session ended")
    h.eq(c.psql("SELECT count(*) FROM batch_log"), [("0",)], "batch_log after the kill")
    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    one_success_each(d, req, "fct_daily_sales", BATCH_DAYS)
    h.eq(pg_fact(c, *h.ALL_DAYS), pg_raw(c, *h.ALL_DAYS),
         "fct_daily_sales against a recompute from raw_sales")
    h.eq(c.psql("SELECT n FROM batch_log"), [(str(len(BATCH_DAYS)),)],
         "batch_log: the batch committed once, all its partitions in one run")
    h.eq(sorted(r[0] for r in c.psql(
        "SELECT partition_key FROM backfilld_commits WHERE request_id = %d" % req)),
        BATCH_DAYS, "backfilld_commits of the request: a row a partition")
    d.stop()


# the running total, batch: true: the days of one run computed set-based,
# a running SUM over the batch's days (backfill_manifest) seeded from the
# day before its first day, which is built
TOTAL_JOBS = """
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
  batch: true
  table: revenue_to_date
  partition_column: dt
  upstream:
    - fct_daily_sales
    - {job: revenue_to_date, lookback: 1}
  sql: |
    DELETE FROM revenue_to_date t USING backfill_manifest m
    WHERE t.dt = m.partition_key::date;
    INSERT INTO revenue_to_date (dt, revenue_usd)
    SELECT m.partition_key::date,
      COALESCE((SELECT revenue_usd FROM revenue_to_date
                WHERE dt = CAST(:partition_start AS date) - 1), 0)
      + SUM(COALESCE(f.revenue_usd, 0)) OVER (ORDER BY m.partition_key
                                               ROWS UNBOUNDED PRECEDING)
    FROM backfill_manifest m
    LEFT JOIN (SELECT dt, SUM(revenue_usd) AS revenue_usd FROM fct_daily_sales
               WHERE dt >= CAST(:partition_start AS date)
                 AND dt < CAST(:partition_end AS date) GROUP BY dt) f
      ON f.dt = m.partition_key::date;
"""


def pg_total_recompute(c, what):
    """Every day of revenue_to_date equals the fact summed up to it."""
    import test_postgres as tp
    got = c.psql("SELECT t.dt, t.revenue_usd, (SELECT SUM(f.revenue_usd) FROM"
                 " fct_daily_sales f WHERE f.dt <= t.dt) FROM revenue_to_date t"
                 " ORDER BY t.dt")
    h.eq([r[0] for r in got], h.days(*h.ALL_DAYS), "revenue_to_date days %s" % what)
    for dt, total, truth in got:
        h.eq(tp.cents(total), tp.cents(truth), "revenue_to_date %s %s" % (dt, what))


def one_run(runs, keys, what):
    """The runs are the days `keys`, all succeeded, in one run (one start
    and one end)."""
    h.eq(sorted((r["partition"], r["state"]) for r in runs),
         [(k, "succeeded") for k in keys], "%s: the days run" % what)
    h.eq(len({(r["started_at"], r["finished_at"]) for r in runs}), 1,
         "%s: one run" % what)


def test_batch_running_total_postgres():
    import test_postgres as tp
    c = tp.cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE revenue_to_date (dt date PRIMARY KEY, revenue_usd numeric(16,2))")
    d = tp.pg_daemon(TOTAL_JOBS, tp.pg_warehouse(), settings={"max_concurrency": 8},
                     clock=None, name="bfpgrtd")
    d.backfill("revenue_to_date", *h.ALL_DAYS)
    one_run(d.runs(), h.days(*h.ALL_DAYS), "the first build")
    pg_total_recompute(c, "from the buggy fact")
    bug = c.psql("SELECT revenue_usd FROM revenue_to_date WHERE dt = '%s'" % h.ALL_DAYS[1])

    # a repair of one fact day (its refunds): that day of the total and
    # every later built day, one run, after the fact's day landed
    day = "2026-02-10"
    before = len(d.runs())
    d.backfill("fct_daily_sales", day, day, "--reason", "refund bug")
    new = d.runs()[before:]
    h.eq([(r["partition"], r["state"]) for r in h.by_job(new, "fct_daily_sales")],
         [(day, "succeeded")], "the fact's repaired day")
    cascade = h.days(day, h.ALL_DAYS[1])
    total = h.by_job(new, "revenue_to_date")
    one_run(total, cascade, "the cascade of the repair")
    h.eq(len(new), 1 + len(cascade), "the runs of the repair (nothing else)")
    h.check(h.parse_iso(total[0]["started_at"]) >=
            h.parse_iso(h.by_job(new, "fct_daily_sales")[0]["finished_at"]),
            "the cascade's run started before the fact's day landed")
    pg_total_recompute(c, "after the repair of %s" % day)
    h.check(c.psql("SELECT revenue_usd FROM revenue_to_date WHERE dt = '%s'"
                   % h.ALL_DAYS[1]) != bug, "the newest day kept the buggy total")
    h.eq(d.json("stale")["stale"], [], "stale after the repair")

    # a backfill of one day of the total itself: it and every later day
    c.as_etl("UPDATE revenue_to_date SET revenue_usd = 0 WHERE dt >= '2026-02-18'")
    before = len(d.runs())
    d.backfill("revenue_to_date", "2026-02-18", "2026-02-18")
    one_run(d.runs()[before:], h.days("2026-02-18", h.ALL_DAYS[1]),
            "a backfill of the total's 2026-02-18")
    pg_total_recompute(c, "after the backfill of 2026-02-18")
    d.stop()


# ---------------------------------------------------------------- ClickHouse

CH_JOB = """
- name: fct
  warehouse: sales
  partition: day
  batch: true
  retries: 0
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY dt, store_id
"""

CH_LO, CH_HI = "2025-01-01", "2025-03-11"   # 70 days: two REPLACE statements (64 + 6)
CH_DAYS = h.days(CH_LO, CH_HI)
CHUNK = 64                                  # partitions a REPLACE statement (CHWAP_CHUNK)


def ch_fact(db, days):
    import test_clickhouse as tc
    return tc.SRV.rows("SELECT dt, store_id, sales, revenue_cents FROM fct_daily_sales"
                       " WHERE dt BETWEEN '%s' AND '%s' ORDER BY dt, store_id"
                       % (days[0], days[-1]), db)


def ch_raw(db, days):
    import test_clickhouse as tc
    return tc.SRV.rows("SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales"
                       " WHERE dt BETWEEN '%s' AND '%s' GROUP BY dt, store_id"
                       " ORDER BY dt, store_id" % (days[0], days[-1]), db)


def ch_kill9(point, published):
    """A batch of the 70 days, the daemon stopped at `point` and killed:
    the first `published` days hold the batch's rows (a recompute), the
    others their old rows; a sale lands after the kill; after the restart
    every day equals the recompute from raw the batch audited (the sale
    that came later not in it: the marked stage published again, not
    filled again), one success each, no stage row or mark left."""
    import test_clickhouse as tc
    db = tc.fresh_db()
    # raw for the 70 days (3 stores a day), and a live table built wrong
    # from it (every day's revenue 1 cent off): the batch changes each day
    tc.SRV.q("INSERT INTO raw_sales SELECT toUInt32(100000 + number), toDate('%s') +"
             " intDiv(number, 3), 1 + number %% 3, toInt64(100 + number) FROM numbers(210)"
             % CH_LO, db)
    tc.SRV.q("INSERT INTO fct_daily_sales SELECT dt, store_id, count(), sum(amount_cents) + 1"
             " FROM raw_sales WHERE dt BETWEEN '%s' AND '%s' GROUP BY dt, store_id"
             % (CH_LO, CH_HI), db)
    old = ch_fact(db, CH_DAYS)
    raw = ch_raw(db, CH_DAYS)
    h.eq(len(raw), 210, "raw groups of the 70 days")
    h.check(all(a != b for a, b in zip(old, raw)), "the old rows should differ from raw")
    d = h.Daemon(config=tc.ch_config(db, CH_JOB), clock=None, name="bfch" + point,
                 env={"BACKFILLD_TEST_CH_STOP": point})
    req = d.enqueue("backfill", "fct", "--from", CH_LO, "--to", CH_HI)
    tc.wait_stopped(d, point)
    split = CH_DAYS[published - 1] if published else None
    got = ch_fact(db, CH_DAYS)
    want = [r for r in raw if split is not None and r[0] <= split] + \
        [o for o in old if split is None or o[0] > split]
    h.eq(got, want, "the live table when stopped at %s: the first %d days of the batch"
         " published, the rest their old rows" % (point, published))
    # the marks' table: _backfilld_marks_fct_daily_sales, with a node's
    # suffix on the PostgreSQL state store (several hosts)
    marks = [n for (n,) in tc.SRV.rows(
        "SELECT name FROM system.tables WHERE database = currentDatabase() AND"
        " name LIKE '\\_backfilld\\_marks\\_fct\\_daily\\_sales%'", db)]
    h.eq(len(marks), 1, "the marks' tables: %r" % marks)
    h.eq(tc.SRV.rows("SELECT count(), uniqExact(run) FROM `%s`" % marks[0], db),
         [(str(len(CH_DAYS)), "1")],
         "the batch's marks when stopped at %s: every partition, one run" % point)
    d.kill9()
    # a sale of the last day lands after the kill: the restart publishes
    # the stage the batch audited, and does not fill it again
    tc.SRV.q("INSERT INTO raw_sales VALUES (99999, '%s', 1, 7)" % CH_HI, db)
    h.check(ch_raw(db, CH_DAYS) != raw, "raw_sales should have changed")
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    one_success_each(d, req, "fct", CH_DAYS)
    h.eq(ch_fact(db, CH_DAYS), raw, "fct_daily_sales against a recompute from raw_sales"
         " as the request read it (the audited stage, not filled again)")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left after the restart")
    h.eq(tc.marks_left(db), {}, "marks left after the restart")
    d.stop()


def test_kill9_batch_clickhouse_before_publish():
    ch_kill9("publishing", 0)


def test_kill9_batch_clickhouse_between_publishes():
    ch_kill9("published", CHUNK)


# ---------------------------------------------------------------- main

def available(what, start):
    """start() a server; None when it can (its tests run), else the exit
    code its skip asked for (77, or 1 when the server is required)."""
    try:
        start()
        return None
    except SystemExit as e:
        print("%s: %s" % (what, "required and missing" if e.code == 1 else "skipped"))
        return e.code


def main():
    import test_clickhouse as tc
    import test_postgres as tp
    h.binaries()
    tests = [test_kill9_batch_sqlite]
    skipped = []
    for what, start, ts in (
            ("PostgreSQL", tp.cluster,
             [test_kill9_batch_postgres, test_batch_running_total_postgres]),
            ("ClickHouse", tc.start_server,
             [test_kill9_batch_clickhouse_before_publish,
              test_kill9_batch_clickhouse_between_publishes])):
        code = available(what, start)
        if code is None:
            tests += ts
        else:
            skipped.append(code)
    try:
        h.main(tests)
    except SystemExit as e:
        if e.code != 0 or not skipped:
            raise
    # every test that could run passed; the ones that could not: a skip,
    # or a failure where the server is required
    sys.exit(1 if 1 in skipped else h.SKIP)


if __name__ == "__main__":
    main()
