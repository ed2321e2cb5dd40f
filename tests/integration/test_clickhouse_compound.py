#!/usr/bin/env python3
"""Compound partition keys on ClickHouse (issue 44 item 5; docs/clickhouse.md,
"Compound keys"), on the real server: a fact PARTITION BY (dt, store_id),
whose day is the set of its stores' partitions.

- a repair of five days: the live days equal a recompute from raw, a store
  the repaired day no longer has (its partition) is gone from the table,
  the other days' parts are untouched (the same part names, partition ids
  and modification times), no stage row or mark left, and the audit counts
  the day's rows before (the gone store's row too) and after;
- the same with batch: true, and a --verify proof;
- kill -9 between the mark and the publish (the test-only stop before the
  REPLACE), raw changed meanwhile: the restart publishes the marked stage
  (the first build's rows, the gone store dropped), one run succeeded;
- a tuple whose first element is not the grain's key is refused at
  --check-config with what to do; a weekly mart PARTITION BY
  (week_start, store_id) with week_start holding Mondays is published
  week by week, and a fill writing another day there is refused;
- the quarter and year grains: toStartOfQuarter(c), toStartOfYear(c) and a
  Date column holding quarter starts;
- a Distributed fact over two shards with such local tables;
- early cut-off over such a fact: an identical rerun skips the weeks, a
  day that lost a store rebuilds its week alone."""
import os
import subprocess
import time

import harness as h
import test_clickhouse as tc

LO, HI = "2026-02-08", "2026-02-12"
GONE = "2026-02-09"  # the day whose store 9 raw never had

JOB = """
- name: fct
  warehouse: sales
  partition: day
  table: fct_c
  partition_column: dt
  key: [dt, store_id]
  min_rows: 1
  metrics:
    revenue: sum(revenue_cents)
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY dt, store_id
  checks:
    - name: reconciles_with_raw
      sql: SELECT (SELECT sum(revenue_cents) FROM :stage WHERE dt = :partition) = (SELECT sum(amount_cents) FROM raw_sales WHERE dt = :partition)
"""
# without the check (a republish audits raw changed meanwhile)
NO_CHECK = JOB[:JOB.index("  checks:")]


def compound_db():
    """The lesson's warehouse with its fact as fct_c PARTITION BY (dt,
    store_id), wrong for the deploy window as the lesson's, and holding
    a store 9 on GONE that raw never had."""
    db = tc.fresh_db()
    tc.SRV.q("CREATE TABLE fct_c (dt Date, store_id UInt8, sales UInt64, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY (dt, store_id) ORDER BY (dt, store_id)", db)
    tc.SRV.q("INSERT INTO fct_c SELECT * FROM fct_daily_sales", db)
    tc.SRV.q("INSERT INTO fct_c VALUES ('%s', 9, 1, 100)" % GONE, db)
    return db


def fact(db, lo=LO, hi=HI):
    return tc.SRV.rows("SELECT dt, store_id, sales, revenue_cents FROM fct_c WHERE dt BETWEEN"
                       " '%s' AND '%s' ORDER BY dt, store_id" % (lo, hi), db)


def recompute(db, lo=LO, hi=HI):
    return tc.SRV.rows("SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt"
                       " BETWEEN '%s' AND '%s' GROUP BY dt, store_id ORDER BY dt, store_id"
                       % (lo, hi), db)


def parts_outside(db):
    """The active parts of the days outside the window: name, partition
    id, modification time."""
    return tc.SRV.rows("SELECT name, partition_id, toString(modification_time) FROM system.parts"
                       " WHERE database = '%s' AND table = 'fct_c' AND active AND"
                       " NOT (substring(partition, 3, 10) BETWEEN '%s' AND '%s') ORDER BY name"
                       % (db, LO, HI))


def ids_of(db, day, table="fct_c"):
    return [r[0] for r in tc.SRV.rows(
        "SELECT DISTINCT partition_id FROM system.parts WHERE database = '%s' AND table = '%s'"
        " AND active AND substring(partition, 3, 10) = '%s' ORDER BY partition_id"
        % (db, table, day))]


def check_repaired(d, db, untouched, what):
    h.eq(fact(db), recompute(db), "%s: the window equals a recompute" % what)
    h.eq(ids_of(db, GONE), ["20260209-1", "20260209-2", "20260209-3"],
         "%s: the day's partitions (store 9's gone)" % what)
    h.eq(parts_outside(db), untouched, "%s: the other days' parts" % what)
    h.eq(tc.stage_leftovers(db), {}, "%s: stage rows left" % what)
    h.eq(tc.marks_left(db), {}, "%s: marks left" % what)


def run_statements(old, until=None):
    """[(run id, statement)] of the runs' statements (query ids
    backfilld-INSTANCE-RUN-N) not in old, and the set of all their ids;
    until: read again until it holds of them (the server logs a query
    once its answer is sent: the last ones may come a moment after),
    30 s at most."""
    deadline = time.monotonic() + 30
    while True:
        tc.SRV.q("SYSTEM FLUSH LOGS")
        rows = tc.SRV.rows("SELECT query_id, replaceAll(query, '\\n', ' ') FROM"
                           " system.query_log WHERE type = 2 AND user = 'etl' AND"
                           " startsWith(query_id, 'backfilld-')")
        out = [(int(q.split("-")[-2]), t.replace("\\'", "'")) for q, t in rows if q not in old]
        if until is None or until(out) or time.monotonic() > deadline:
            return out, {q for q, _ in rows}
        time.sleep(0.05)


def test_compound_repair():
    """A run a day: --check-config accepts the key, the repair publishes
    each day as the exact set of its stores, the audit counts the gone
    store's row before."""
    db = compound_db()
    untouched = parts_outside(db)
    h.check(len(untouched) > 40, "parts outside the window: %r" % untouched)
    d = h.Daemon(config=tc.ch_config(db, JOB), clock=None, name="chcompound")
    out = subprocess.run([d.backfilld, "--config", d.conf, "--check-config"], capture_output=True,
                         text=True, timeout=60, cwd=d.dir, env=d.env())
    h.check(out.returncode == 0 and "partition keys checked on the server: 1 job" in out.stdout,
            "--check-config of a compound key: %r" % (out,))
    _, old = run_statements(set())
    req = d.enqueue("backfill", "fct", "--from", LO, "--to", HI, "--wait")
    check_repaired(d, db, untouched, "a run a day")
    # each run: the ids read with the after figures (no statement of
    # their own), then one ALTER publishing the day's set
    runs = {r["id"]: r["partition"] for r in d.runs() if r["job"] == "fct"}
    stmts, _ = run_statements(old, lambda out: {r for r, t in out if t.startswith(
        "ALTER TABLE `fct_c`")} == set(runs))
    ids = "table IN ('_backfilld_stage_fct_c', 'fct_c')"
    reads = sorted(r for r, t in stmts if ids in t and not t.startswith("SELECT DISTINCT"))
    alone = sorted(r for r, t in stmts if ids in t and t.startswith("SELECT DISTINCT"))
    alters = {r: t for r, t in stmts if t.startswith("ALTER TABLE `fct_c`")}
    h.eq((reads, alone, sorted(alters)), (sorted(runs), [], sorted(runs)),
         "the runs' reads of the ids (with the after figures, alone) and their publishes")
    gone = [r for r, day in runs.items() if day == GONE][0]
    h.eq(alters[gone], "ALTER TABLE `fct_c` REPLACE PARTITION ID '20260209-1' FROM"
         " `_backfilld_stage_fct_c`, REPLACE PARTITION ID '20260209-2' FROM"
         " `_backfilld_stage_fct_c`, REPLACE PARTITION ID '20260209-3' FROM"
         " `_backfilld_stage_fct_c`, DROP PARTITION ID '20260209-9'", "the publish of %s" % GONE)
    p = [x for x in d.json("audit", "--request", str(req))["partitions"]
         if x["partition"] == GONE][0]
    h.eq((p["rows_before"], p["rows_after"]), (4, 3), "the audit's rows of %s" % GONE)
    h.eq(sorted((c["name"], c["passed"]) for c in p["checks"]
                if c["name"] in ("reconciles_with_raw", "key_unique")),
         [("key_unique", True), ("reconciles_with_raw", True)], "the day's checks")
    # a rerun publishes the same set again: nothing else changes
    before = parts_outside(db)
    d.ok("rerun", "fct", GONE, "--wait")
    check_repaired(d, db, before, "a rerun")
    d.stop()


def test_compound_batch_and_verify():
    """batch: true: one fill, the days published by one ALTER of REPLACEs
    and DROPs by id; a --verify proof of a day publishes nothing."""
    db = compound_db()
    untouched = parts_outside(db)
    d = h.Daemon(config=tc.ch_config(db, JOB + "  batch: true\n"), clock=None,
                 name="chcompoundbatch")
    _, old = run_statements(set())
    d.backfill("fct", LO, HI)
    check_repaired(d, db, untouched, "a batch")
    stmts = run_statements(old, lambda out: any(
        t.startswith("ALTER TABLE `fct_c`") for _, t in out))[0]
    alters = [t for _, t in stmts if t.startswith("ALTER TABLE `fct_c`")]
    h.eq([(t.count(" REPLACE PARTITION ID "), t.count(" DROP PARTITION ID ")) for t in alters],
         [(15, 1)], "the batch's publish: one ALTER, 5 days of 3 stores, store 9 dropped")
    ids = "table IN ('_backfilld_stage_fct_c', 'fct_c')"
    h.eq([(t.startswith("SELECT DISTINCT"), all("'%s'" % day in t for day in h.days(LO, HI)))
          for _, t in stmts if ids in t],
         [(False, True)], "the batch's ids: read once, with the after figures of its 5 days")
    runs = [r for r in d.runs() if r["job"] == "fct"]
    h.eq((len(runs), len({(r["started_at"], r["finished_at"]) for r in runs}),
          {r["state"] for r in runs}), (5, 1, {"succeeded"}), "one batch of 5 days: %r" % runs)
    out = d.ok("verify", "fct", GONE)
    h.check("idempotent" in out and "the stage partition dropped, nothing published" in out,
            "verify's verdict: %r" % out)
    h.eq(tc.stage_leftovers(db), {}, "stage rows left by the proof")
    h.eq(fact(db), recompute(db), "the window after the proof")
    d.stop()


def test_compound_kill9_between_mark_and_publish():
    """kill -9 once the day's stage is marked, before its publish: the
    live day is still the old one (store 9 too); raw changes; the restart
    publishes the marked stage, the first build's rows, store 9 dropped."""
    db = compound_db()
    untouched = parts_outside(db)
    old = fact(db, GONE, GONE)
    first = recompute(db, GONE, GONE)
    d = h.Daemon(config=tc.ch_config(db, NO_CHECK), clock=None, name="chcompoundkill",
                 env={"BACKFILLD_TEST_CH_STOP": "publishing"})
    req = d.enqueue("backfill", "fct", "--from", GONE, "--to", GONE)
    tc.wait_stopped(d, "the publish")
    h.eq(fact(db, GONE, GONE), old, "the live day before its publish")
    h.eq(tc.marks_left(db, settle=False), {"_backfilld_marks_fct_c": 1}, "the day's mark")
    d.kill9()
    tc.SRV.q("INSERT INTO raw_sales SELECT * FROM raw_sales WHERE dt = '%s' LIMIT 3" % GONE, db)
    h.check(recompute(db, GONE, GONE) != first, "raw should have changed")
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    d.restart()
    d.wait_request(req)
    runs = [r for r in d.runs() if r["job"] == "fct"]
    h.eq([r["state"] for r in runs if r["state"] == "succeeded"], ["succeeded"],
         "one succeeded run after the restart: %r" % runs)
    h.eq(fact(db, GONE, GONE), first, "the day after the restart: the marked stage published")
    h.eq(ids_of(db, GONE), ["20260209-1", "20260209-2", "20260209-3"],
         "the day's partitions after the restart")
    h.eq(parts_outside(db), untouched, "the other days' parts")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    h.eq(tc.marks_left(db), {}, "marks left")
    d.stop()


MART = """
- name: mart
  warehouse: sales
  partition: week
  upstream: [fct]
  table: mart_weekly_sales
  partition_column: week_start
  sql: SELECT :partition, sum(revenue_cents) FROM fct_c WHERE dt >= :partition_start AND dt < :partition_end
"""


def test_compound_cutoff():
    """The fingerprint of a compound fact's day (early cut-off): the
    repair rebuilds the two weeks over the window; an identical rerun
    skips them (each day's checksums before and after equal); a day whose
    only change is a store gone (the live table's store 9) rebuilds its
    week alone."""
    db = compound_db()
    tc.SRV.q("ALTER TABLE fct_c DROP PARTITION ID '20260209-9'", db)
    d = h.Daemon(config=tc.ch_config(db, NO_CHECK + MART), clock=None, name="chcompoundcut")
    d.backfill("fct", LO, HI)
    h.eq(fact(db), recompute(db), "the window after the repair")
    weeks = dict(tc.SRV.rows("SELECT week_start, revenue_cents FROM mart_weekly_sales", db))
    want = dict(tc.SRV.rows("SELECT toMonday(dt), sum(amount_cents) FROM raw_sales"
                            " GROUP BY toMonday(dt)", db))
    h.eq((weeks["2026-02-02"], weeks["2026-02-09"]), (want["2026-02-02"], want["2026-02-09"]),
         "the weeks over the window")
    req = d.enqueue("backfill", "fct", "--from", LO, "--to", HI, "--wait")
    runs = d.json("runs", "--request", str(req))
    h.eq(sorted((r["partition"], r["state"]) for r in runs if r["job"] == "mart"),
         [("2026-02-02", "skipped"), ("2026-02-09", "skipped")], "the weeks of an identical rerun")
    for p in d.json("audit", "--request", str(req))["partitions"]:
        if p["job"] == "fct":
            h.check(p["checksum_before"] and p["checksum_before"] == p["checksum_after"],
                    "an identical day's checksums: %r" % p)
    # a store only the live day has: the day's fingerprint differs
    tc.SRV.q("INSERT INTO fct_c VALUES ('2026-02-10', 9, 1, 100)", db)
    req = d.enqueue("backfill", "fct", "--from", LO, "--to", HI, "--wait")
    runs = d.json("runs", "--request", str(req))
    h.eq(sorted((r["partition"], r["state"]) for r in runs if r["job"] == "mart"),
         [("2026-02-02", "skipped"), ("2026-02-09", "succeeded")],
         "a day that lost a store rebuilds its week only")
    h.eq(ids_of(db, "2026-02-10"), ["20260210-1", "20260210-2", "20260210-3"],
         "the day's partitions (store 9's gone)")
    d.stop()


def check_config(d):
    return subprocess.run([d.backfilld, "--config", d.conf, "--check-config"],
                          capture_output=True, text=True, timeout=60, cwd=d.dir, env=d.env())


WEEK_JOB = """
- name: mart
  warehouse: sales
  partition: week
  table: mart_c
  partition_column: week_start
  sql: SELECT %s AS week_start, store_id, sum(amount_cents) FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY week_start, store_id
"""


def test_compound_keys_of_other_forms():
    """(store_id, dt) refused at --check-config, what to do said; a mart
    PARTITION BY (week_start, store_id), week_start holding Mondays,
    published week by week; a fill writing dt there refused, nothing
    published, nothing left in the stage."""
    db = tc.fresh_db()
    tc.SRV.q("CREATE TABLE fct_c (dt Date, store_id UInt8, sales UInt64, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY (store_id, dt) ORDER BY (dt, store_id)", db)
    d = h.Daemon(config=tc.ch_config(db, JOB), clock=None, name="chcompoundbad", start=False)
    r = check_config(d)
    e = h.one_line_error(r.returncode, r.stdout, r.stderr, 2, "--check-config of (store_id, dt)")
    h.check("partitioned by (store_id, dt)" in e and "partition it by dt, or by a tuple"
            " (dt, ...) whose first element is that" in e, "the refusal: %r" % e)
    tc.SRV.q("CREATE TABLE mart_c (week_start Date, store_id UInt8, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY (week_start, store_id) ORDER BY store_id", db)
    tc.SRV.q("INSERT INTO mart_c VALUES ('2026-02-02', 1, 1), ('2026-02-02', 7, 7),"
             " ('2026-01-26', 1, 1)", db)
    d = h.Daemon(config=tc.ch_config(db, WEEK_JOB % "toMonday(dt)"), clock=None,
                 name="chcompoundweek")
    d.backfill("mart", "2026-02-02", "2026-02-09")
    want = tc.SRV.rows("SELECT toMonday(dt) AS w, store_id, sum(amount_cents) FROM raw_sales"
                       " WHERE w IN ('2026-02-02', '2026-02-09') GROUP BY w, store_id"
                       " ORDER BY w, store_id", db)
    h.eq(tc.SRV.rows("SELECT * FROM mart_c WHERE week_start >= '2026-02-02' ORDER BY"
                     " week_start, store_id", db), want, "the weeks after the backfill (store 7 gone)")
    h.eq(tc.SRV.rows("SELECT * FROM mart_c WHERE week_start < '2026-02-02'", db),
         [("2026-01-26", "1", "1")], "the week not backfilled")
    d.stop()
    before = tc.SRV.rows("SELECT * FROM mart_c ORDER BY week_start, store_id", db)
    d = h.Daemon(config=tc.ch_config(db, WEEK_JOB % "dt"), clock=None, name="chcompoundweekbad")
    rc, out, err = d.ctl("backfill", "mart", "--from", "2026-02-02", "--to", "2026-02-02", "--wait")
    h.check(rc != 0, "a fill of other days should fail: %r" % out)
    r = [x for x in d.runs() if x["job"] == "mart"][-1]
    h.check("refused: the stage holds rows of 2026-02-02 whose week_start is" in (r["error"] or ""),
            "the run's error: %r" % r)
    h.eq(tc.SRV.rows("SELECT * FROM mart_c ORDER BY week_start, store_id", db), before,
         "the mart after the refusal")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left after the refusal")
    d.stop()
    # a DateTime first element at the day grain: its partitions are no
    # day's; the run is refused at its publish, the live table unchanged
    tc.SRV.q("CREATE TABLE fct_t (ts DateTime, store_id UInt8, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY (ts, store_id) ORDER BY store_id", db)
    tc.SRV.q("INSERT INTO fct_t VALUES ('2026-02-09 00:00:00', 1, 1)", db)
    job = JOB.replace("table: fct_c", "table: fct_t").replace("partition_column: dt",
                                                               "partition_column: ts")
    job = job[:job.index("  key:")] + ("  sql: SELECT toDateTime(dt) AS ts, store_id,"
                                       " sum(amount_cents) FROM raw_sales WHERE dt = :partition"
                                       " GROUP BY ts, store_id\n")
    d = h.Daemon(config=tc.ch_config(db, job), clock=None, name="chcompoundts")
    rc, out, err = d.ctl("backfill", "fct", "--from", GONE, "--to", GONE, "--wait")
    r = [x for x in d.runs() if x["job"] == "fct"][-1]
    h.check(rc != 0 and "refused: the stage holds 3 rows of 2026-02-09 in no partition whose"
            " first element is 2026-02-09" in (r["error"] or ""), "the run's error: %r" % r)
    h.eq(tc.SRV.rows("SELECT * FROM fct_t", db), [("2026-02-09 00:00:00", "1", "1")],
         "the live table after the refusal")
    d.stop()


def test_compound_shards():
    """A Distributed fact over two shards whose local tables are
    PARTITION BY (dt, store_id), shard 1's holding a store 9 raw never
    had: each shard publishes its days as their exact sets (store 9
    gone), nothing left in the stages."""
    srvs = tc.two_shards()
    try:
        for k, srv in enumerate(srvs):
            srv.q("DROP TABLE fct_local", "sh")
            srv.q("CREATE TABLE fct_local (dt Date, store_id UInt32, sales UInt64, revenue_cents"
                  " Int64) ENGINE = MergeTree PARTITION BY (dt, store_id) ORDER BY (dt, store_id)",
                  "sh")
            srv.q("INSERT INTO fct_local SELECT dt, store_id, 1, 1 FROM raw_local GROUP BY dt,"
                  " store_id", "sh")
        srvs[0].q("INSERT INTO fct_local VALUES ('2026-02-09', 9, 1, 1)", "sh")
        d = h.Daemon(config=tc.shard_config(srvs, listed=True), clock=None, name="chcompoundsh")
        d.backfill("fct", "2026-02-09", "2026-02-10")
        for k, srv in enumerate(srvs):
            h.eq(tc.shard_fact(srv), tc.shard_raw(srv), "shard %d's facts" % (k + 1))
            h.eq(tc.stage_leftovers("sh", srv=srv), {}, "stage rows left on shard %d" % (k + 1))
        d.stop()
    finally:
        for srv in srvs:
            srv.close()


GRAIN_JOB = """
- name: %s
  warehouse: sales
  partition: %s
  table: %s
  partition_column: p
  sql: SELECT %s AS p, store_id, sum(amount_cents) FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY p, store_id
"""


def test_quarter_and_year_grains():
    """A quarterly table PARTITION BY toStartOfQuarter(p), one by p
    holding quarter starts, and a yearly one PARTITION BY
    toStartOfYear(p): each backfilled partition equals a recompute."""
    db = tc.fresh_db()
    shapes = [("q1", "quarter", "toStartOfQuarter(p)", "toStartOfQuarter(dt)"),
              ("q2", "quarter", "p", "toStartOfQuarter(dt)"),
              ("y1", "year", "toStartOfYear(p)", "toStartOfYear(dt)")]
    jobs = ""
    for name, grain, key, fn in shapes:
        tc.SRV.q("CREATE TABLE %s (p Date, store_id UInt8, revenue_cents Int64) ENGINE ="
                 " MergeTree PARTITION BY %s ORDER BY store_id" % (name, key), db)
        tc.SRV.q("INSERT INTO %s VALUES ('2026-01-01', 1, 1), ('2026-01-01', 8, 8)" % name, db)
        jobs += GRAIN_JOB % (name, grain, name, fn)
    d = h.Daemon(config=tc.ch_config(db, jobs), clock=None, name="chgrains")
    for name, grain, key, fn in shapes:
        d.backfill(name, "2026-01-01", "2026-01-01")
        want = tc.SRV.rows("SELECT %s AS p, store_id, sum(amount_cents) FROM raw_sales"
                           " GROUP BY p, store_id ORDER BY p, store_id" % fn, db)
        h.eq(tc.SRV.rows("SELECT * FROM %s ORDER BY p, store_id" % name, db), want,
             "the %s table PARTITION BY %s" % (grain, key))
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    d.stop()


def main():
    tc.start_server(query_log=True)
    tests = [test_compound_repair, test_compound_batch_and_verify,
             test_compound_kill9_between_mark_and_publish, test_compound_keys_of_other_forms,
             test_compound_shards, test_compound_cutoff, test_quarter_and_year_grains]
    only = os.environ.get("BACKFILLD_TEST_ONLY")
    if only:
        tests = [t for t in tests if t.__name__ in only.split(",")]
    h.main(tests)


if __name__ == "__main__":
    main()
