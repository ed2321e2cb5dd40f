#!/usr/bin/env python3
"""A ReplicatedMergeTree target publishes once and the replicas follow
(docs/clickhouse.md, "Replicated targets"; issue 26).

The harness (tools/chserver.py) starts a throwaway standalone ZooKeeper
(java and Debian's `zookeeper` package: its own data dir and free port on
127.0.0.1) and two clickhouse-servers, replicas r1 and r2 of shard 1 on
it (their macros, <zookeeper> section and interserver ports), all stopped
whatever the outcome.  The lesson's warehouse (config/clickhouse/sales.sql)
is created on both with every MergeTree made a ReplicatedMergeTree on one
ZooKeeper path per table, seeded on r1 and replicated to r2.  The daemon's
warehouse points at r1 alone.

What it checks:
  - the key check at start accepts a ReplicatedMergeTree target (the
    daemon starts), and reads its key: the same target under a job of
    the week grain is refused with the job's position;
  - the lesson's backfill (the deploy window, then its two weeks
    downstream): r1 repaired; r2, once synced (its replication log read to
    r1's last entry and its queue empty, polled with a deadline), has the
    same rows in every table; each partition published exactly once (one
    REPLACE per partition in r1's query_log, none on r2: the replicas
    follow through ZooKeeper); the stage is a plain MergeTree on r1 and
    absent from r2, and holds no rows on either; a rerun changes nothing
    and reads no engine again (the stage is there);
  - a failing check publishes nothing on either replica: r1's live rows
    as they were, no new entry in the table's replication log, r2 synced
    and unchanged.

Skipped (77) without clickhouse-server, the ClickHouse driver or
ZooKeeper; with BACKFILLD_REQUIRE_CLICKHOUSE=1 (CI) each of them missing
is a failure.
"""
import os
import re
import subprocess
import sys
import time

import harness as h
import test_clickhouse as tc

sys.path.insert(0, os.path.join(h.SOURCE_ROOT, "tools"))
from chserver import ChServer, ChServerError, ZkServer  # noqa: E402

R1 = R2 = None
SYNC_TIMEOUT = 60.0   # guard: a replica follows within seconds (issue 26)
TABLES = ("raw_sales", "fct_daily_sales", "mart_weekly_sales")
NDB = 0
KEEP = bool(os.environ.get("KEEP_TMP"))  # the servers' folders too


def replicated_sales_sql():
    """config/clickhouse/sales.sql with each table a ReplicatedMergeTree
    on its own ZooKeeper path: (CREATE statements, INSERT statements)."""
    with open(os.path.join(tc.CH_DIR, "sales.sql")) as f:
        text = "\n".join(l for l in f.read().splitlines() if not l.strip().startswith("--"))
    creates, inserts = [], []
    for st in (s.strip() for s in text.split(";")):
        if st.startswith("CREATE TABLE"):
            name = st.split()[2]
            n = st.count("ENGINE = MergeTree")
            st = st.replace("ENGINE = MergeTree", "ENGINE = ReplicatedMergeTree("
                            "'/clickhouse/tables/{shard}/{db}/%s', '{replica}')" % name)
            h.eq(n, 1, "MergeTree engines in sales.sql's %s" % name)
            creates.append(st)
        elif st:
            inserts.append(st)
    return creates, inserts


def fresh_db(seed=True):
    """A new database on both replicas with the lesson's warehouse,
    seeded on r1 (seed) and synced to r2."""
    global NDB
    NDB += 1
    db = "rwh%d" % NDB
    creates, inserts = replicated_sales_sql()
    for srv in (R1, R2):
        srv.q("CREATE DATABASE %s" % db)
        for st in creates:
            srv.q(st.replace("{db}", db), db)
    for st in inserts if seed else ():
        R1.q(st, db)
    for t in TABLES if seed else ():
        sync(db, t)
    return db


def replica_state(srv, db, table):
    """(log_max_index, log_pointer, queue_size) of srv's replica of table."""
    rows = srv.rows("SELECT log_max_index, log_pointer, queue_size FROM system.replicas"
                    " WHERE database = '%s' AND table = '%s'" % (db, table))
    h.eq(len(rows), 1, "system.replicas rows of %s.%s" % (db, table))
    return tuple(int(v) for v in rows[0])


def sync(db, table):
    """Wait until r2 has done everything r1's replica of table logged so
    far: r2's log pointer past r1's last entry, r2's queue empty.  Polled
    with a deadline: replication has no event a client can wait on."""
    last = replica_state(R1, db, table)[0]
    deadline = time.monotonic() + SYNC_TIMEOUT
    while True:
        _, pointer, queue = replica_state(R2, db, table)
        if pointer > last and queue == 0:
            return
        if time.monotonic() > deadline:
            h.fail("r2's %s.%s not synced in %.0f s: log pointer %d (r1's last entry %d),"
                   " queue %d" % (db, table, SYNC_TIMEOUT, pointer, last, queue))
        time.sleep(0.05)


def table_rows(srv, db, table):
    return srv.rows("SELECT * FROM %s ORDER BY tuple(*)" % table, db)


def etl_queries(srv, pattern):
    """Statements the daemon (user etl) finished on srv whose text has
    pattern (the server's query_log)."""
    srv.q("SYSTEM FLUSH LOGS")
    return [q.replace("\\'", "'") for (q,) in srv.rows(
        "SELECT replaceRegexpAll(query, '\\\\s+', ' ') FROM system.query_log"
        " WHERE type = 2 AND user = 'etl' AND position(query, '%s') > 0" % pattern)]


def publishes(srv, since=None):
    """{(table, partition): REPLACEs} in srv's query_log (its text names no
    database), less those counted in `since`, an earlier result."""
    out = {}
    for q in etl_queries(srv, "REPLACE PARTITION"):
        # ALTER TABLE `t` REPLACE PARTITION 'K' FROM `s`[, REPLACE PARTITION ...]
        m = re.fullmatch(r"ALTER TABLE `(\w+)` ((?:,? ?REPLACE PARTITION '[^']+' FROM `\w+`)+)",
                         q.strip())
        h.check(m is not None, "a REPLACE the test cannot read: %r" % q)
        for part in re.findall(r"REPLACE PARTITION '([^']+)'", m.group(2)):
            key = (m.group(1), part)
            out[key] = out.get(key, 0) + 1
    for k, n in (since or {}).items():
        out[k] -= n
    return {k: n for k, n in out.items() if n}


def stage_tables(srv, db):
    """{name: engine} of the daemon's tables (stage, marks) in db."""
    return dict(srv.rows("SELECT name, engine FROM system.tables WHERE database = '%s'"
                         " AND startsWith(name, '_backfilld_')" % db))


def test_lesson_replicated():
    db = fresh_db()
    h.eq(R1.q("SELECT engine FROM system.tables WHERE database = '%s' AND"
              " name = 'fct_daily_sales'" % db).strip(), "ReplicatedMergeTree",
         "the target's engine")
    tc.SRV = R1
    conf = tc.ch_config(db, tc.example_jobs())
    lookups0 = len(etl_queries(R1, "SELECT engine_full"))
    # the key check at start accepts the ReplicatedMergeTree targets
    d = h.Daemon(config=conf, clock=None, name="chrepl")
    d.settle()   # the schedule's run at start publishes before the count
    r2_before = {t: table_rows(R2, db, t) for t in TABLES}
    fact, raw = tc.fact_vs_raw(db, *h.WINDOW)
    h.check(fact != raw, "the seeded fact should be wrong in the deploy window")
    pub1, pub2 = publishes(R1), publishes(R2)
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "refund bug")
    fact, raw = tc.fact_vs_raw(db, *h.WINDOW)
    h.eq(fact, raw, "r1: repaired fact vs raw for the deploy window")
    for t in TABLES:
        sync(db, t)
        h.eq(table_rows(R2, db, t), table_rows(R1, db, t), "r2's %s vs r1's" % t)
    h.check(table_rows(R2, db, "fct_daily_sales") != r2_before["fct_daily_sales"],
            "r2's fact did not change")
    h.check(table_rows(R2, db, "mart_weekly_sales") != r2_before["mart_weekly_sales"],
            "r2's weeks did not change")
    h.eq(table_rows(R2, db, "raw_sales"), r2_before["raw_sales"], "r2's raw_sales")
    # each partition published exactly once, on r1; the replicas follow
    runs = [r for r in d.runs() if r["state"] == "succeeded"]
    want = sorted([("fct_daily_sales", p) for p in h.days(*h.WINDOW)] +
                  [("mart_weekly_sales", w) for w in ("2026-02-02", "2026-02-09")])
    h.eq(sorted((r["job"], r["partition"]) for r in runs), want, "runs that succeeded")
    h.eq(publishes(R1, pub1), {k: 1 for k in want}, "REPLACEs on r1 per partition")
    h.eq(publishes(R2, pub2), {}, "REPLACEs on r2")
    # the stage: an unreplicated MergeTree on r1, nothing on r2
    for srv, name in ((R1, "r1"), (R2, "r2")):
        h.eq(tc.stage_leftovers(db, srv=srv), {}, "stage rows left on %s" % name)
        h.eq(tc.marks_left(db, srv=srv), {}, "marks left on %s" % name)
    stages = stage_tables(R1, db)
    h.eq(stages.get("_backfilld_stage_fct_daily_sales"), "MergeTree", "r1's stage engines %r" % stages)
    h.eq(stages.get("_backfilld_stage_mart_weekly_sales"), "MergeTree", "r1's stage engines %r" % stages)
    h.eq(stage_tables(R2, db), {}, "the daemon's tables on r2")
    lookups = len(etl_queries(R1, "SELECT engine_full"))
    h.check(lookups > lookups0, "no engine_full lookup: was the stage created AS the target?")
    # a rerun changes nothing, and finds the stages: no engine read again
    snap = {t: table_rows(R1, db, t) for t in TABLES}
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "again")
    for t in TABLES:
        sync(db, t)
        h.eq(table_rows(R1, db, t), snap[t], "r1's %s after a rerun" % t)
        h.eq(table_rows(R2, db, t), snap[t], "r2's %s after a rerun" % t)
    h.eq(len(etl_queries(R1, "SELECT engine_full")), lookups,
         "engine_full lookups of the rerun (its stages exist)")
    h.eq(stage_tables(R2, db), {}, "the daemon's tables on r2 after a rerun")
    d.stop()


# test_clickhouse's job whose check always fails, without retries: its
# backfill ends at the first failure
FAILING_CHECK = tc.FAILING_CHECK.replace("  partition_column: dt\n",
                                         "  partition_column: dt\n  retries: 0\n", 1)


def test_failing_check_publishes_nothing():
    db = fresh_db()
    tc.SRV = R1
    before = table_rows(R1, db, "fct_daily_sales")
    h.eq(table_rows(R2, db, "fct_daily_sales"), before, "r2's fact before")
    log0 = replica_state(R1, db, "fct_daily_sales")[0]
    pub1 = publishes(R1)
    d = h.Daemon(config=tc.ch_config(db, FAILING_CHECK), clock=None, name="chreplcheck")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-10", "--wait")
    h.check(rc != 0, "a failing check should fail the backfill: %r" % out)
    runs = [x for x in d.runs() if x["job"] == "fct"]
    h.eq(sorted((x["partition"], x["state"]) for x in runs),
         [("2026-02-09", "failed"), ("2026-02-10", "failed")], "runs")
    for x in runs:
        h.check("check never failed for %s" % x["partition"] in (x["error"] or ""),
                "error: %r" % x["error"])
    h.eq(table_rows(R1, db, "fct_daily_sales"), before, "r1's fact after a failed check")
    h.eq(replica_state(R1, db, "fct_daily_sales")[0], log0,
         "entries in the fact's replication log after a failed check")
    sync(db, "fct_daily_sales")
    h.eq(table_rows(R2, db, "fct_daily_sales"), before, "r2's fact after a failed check")
    h.eq(publishes(R1, pub1), {}, "REPLACEs on r1")
    for srv, name in ((R1, "r1"), (R2, "r2")):
        h.eq(tc.stage_leftovers(db, srv=srv), {}, "stage rows left on %s" % name)
    h.eq(stage_tables(R2, db), {}, "the daemon's tables on r2")
    d.stop()


def test_key_check_replicated():
    db = fresh_db(seed=False)
    tc.SRV = R1
    good = FAILING_CHECK[:FAILING_CHECK.index("  checks:")]
    d = h.Daemon(config=tc.ch_config(db, good), clock=None, name="chreplkey")
    h.check(d.proc.poll() is None, "the daemon on a ReplicatedMergeTree target is not running")
    d.stop()
    # a Date key at the hour grain (at a week's it is accepted: the column
    # holding each week's first day, test_clickhouse_keys)
    bad = good.replace("partition: day", "partition: hour")
    d = h.Daemon(config=tc.ch_config(db, bad), clock=None, name="chreplgrain", start=False)
    r = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True, text=True,
                       timeout=60, cwd=d.dir, env=d.env())
    e = h.one_line_error(r.returncode, r.stdout, r.stderr, 2,
                         "start on a ReplicatedMergeTree target at another grain")
    h.check("backfilld.yaml:" in e and "partitioned by dt" in e and "toStartOfHour(dt)" in e,
            "error should give the position and the key to use: %r" % e)


def main():
    global R1, R2
    if not os.path.exists(os.path.join(os.path.dirname(h.binaries()[0]), "backfilld-ch.so")):
        tc.skip("this build has no ClickHouse driver (libcurl4-openssl-dev)")
    try:
        zk = ZkServer(prefix="zk-", parent=h.suite_mkdtemp("zk"), own_parent=True, keep=KEEP)
    except ChServerError as e:
        tc.skip(str(e))
    h.register_server(zk)   # closed last: the servers after it first
    srvs = []
    try:
        for n in (1, 2):
            srvs.append(ChServer(prefix="server-", parent=h.suite_mkdtemp("ch"), own_parent=True,
                                 query_log=True, extra=zk.replica_xml(1, "r%d" % n),
                                 keep=KEEP))
            h.register_server(srvs[-1])
    except ChServerError as e:
        tc.skip(str(e))
    R1, R2 = srvs
    h.main([test_key_check_replicated, test_lesson_replicated,
            test_failing_check_publishes_nothing])


if __name__ == "__main__":
    main()
