#!/usr/bin/env python3
"""ClickHouse runs spare each partition the set-up statements
(docs/clickhouse.md, "The write-audit-publish sequence") without losing
what they guarded, against a throwaway server (tools/chserver.py):

  - the stage table is created only when the clear finds none: a stage
    table dropped between two runs is created again by the next run,
    which succeeds at its first attempt (retries: 0);
  - the partition key is checked once a connection: the backfill's runs
    after the first send no system.tables query (the server's own
    query_log says so), and after a failed run the next one checks it
    again: a live table recreated at another grain while the daemon runs
    fails the publish, then the retry with the key error and the job's
    position; the live rows stay as they were;
  - a run of one partition sends five statements once the key is checked
    and the stage exists (docs/clickhouse.md, "Round trips": the state
    read, the fill, the after figures, the mark, the REPLACE), a batch of
    seven partitions 7 REPLACEs and at most 6 more; a metric whose SQL
    binds :partition is read a statement at a time, as before, and the
    audit's figures are the same either way;
  - a fact whose partition column is a DateTime (PARTITION BY toDate(ts),
    toStartOfHour(ts) for an hourly one) holding any instant of the day
    (its start too): each run's stage is audited with its rows (it was
    refused as empty: 18.16 compares a DateTime with a Date as never
    equal), the rows published, the audit's rows and metric before and
    after right, one partition a run and in a batch;
  - runs handed ahead (docs/performance.md): a short job's next run
    recorded started while the current one runs, each partition once;
    kill -9 with a run on a stopped server and one handed ahead after
    it: both cut, every partition then succeeds once and equals raw;
  - the start's sweep of stale marks beside a run of the job: killed
    (kill -9) after the record of one partition (B) of a request of two
    and before its release, restarted with the worker that takes the
    sweep held (a test-only hook) until the other partition (A) is
    queued again: the sweep drops B's stage partition and its mark all
    the same (before, a run of the job queued when the sweep was taken
    left the whole sweep to the next start), A succeeds once, B is not
    run again, both equal raw.

Skipped (77) without clickhouse-server, as test_clickhouse.py is.
"""
import os
import signal
import time

import harness as h
import test_clickhouse as tc

JOB = """
- name: fct
  warehouse: sales
  partition: day
  table: fct_daily_sales
  partition_column: dt
  retries: %d
  retry_backoff: 1s
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
"""
STAGE = "_backfilld_stage_fct_daily_sales"


def stage_exists(db):
    return tc.SRV.q("SELECT count() FROM system.tables WHERE database = '%s' AND name = '%s'"
                    % (db, STAGE)).strip() == "1"


def test_stage_dropped_between_runs():
    db = tc.fresh_db()
    d = h.Daemon(config=tc.ch_config(db, JOB % 0).replace("max_concurrency: 4", "max_concurrency: 1"), clock=None,
                 name="chstage")
    h.check(not stage_exists(db), "the stage table exists before any run")
    d.backfill("fct", "2026-02-09", "2026-02-09")
    h.check(stage_exists(db), "the first run did not create the stage table")
    tc.SRV.q("DROP TABLE `%s`" % STAGE, db)
    d.backfill("fct", "2026-02-10", "2026-02-10")
    r = [x for x in d.runs() if x["job"] == "fct" and x["partition"] == "2026-02-10"]
    h.eq([(x["attempt"], x["state"]) for x in r], [(1, "succeeded")],
         "runs of 2026-02-10 after the stage table was dropped")
    h.check(stage_exists(db), "the stage table was not created again")
    fact, raw = tc.fact_vs_raw(db, "2026-02-09", "2026-02-10")
    h.eq(fact, raw, "fact vs raw for the two days")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    d.stop()


def test_key_checked_once_then_after_failure():
    db = tc.fresh_db()
    n0 = count_key_checks()
    d = h.Daemon(config=tc.ch_config(db, JOB % 1).replace("max_concurrency: 4", "max_concurrency: 1"), clock=None,
                 name="chkey")
    d.backfill("fct", "2026-02-02", "2026-02-08")
    runs = [x for x in d.runs() if x["job"] == "fct" and x["state"] == "succeeded"]
    h.eq(len(runs), 7, "runs of the week")
    # one worker (max_concurrency 1), so one connection: its first run
    # checks the key, the six others do not (checked once a run: 7)
    h.eq(count_key_checks() - n0, 1, "system.tables queries of the 7 runs")
    # the live table recreated at the week grain, with the same rows
    tc.SRV.q("RENAME TABLE fct_daily_sales TO fct_old", db)
    tc.SRV.q("CREATE TABLE fct_daily_sales AS fct_old ENGINE = MergeTree"
             " PARTITION BY toMonday(dt) ORDER BY (dt, store_id)", db)
    tc.SRV.q("INSERT INTO fct_daily_sales SELECT * FROM fct_old", db)
    before = tc.SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db)
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-10", "--to", "2026-02-10",
                         "--wait")
    h.check(rc != 0, "a backfill onto a table at another grain succeeded: %r" % out)
    r = [x for x in d.runs() if x["job"] == "fct" and x["partition"] == "2026-02-10"]
    h.eq([(x["attempt"], x["state"]) for x in r], [(1, "failed"), (2, "failed")],
         "attempts of 2026-02-10")
    h.check("publishing" in (r[0]["error"] or ""), "first attempt's error: %r" % r[0]["error"])
    e = r[1]["error"] or ""
    h.check("backfilld.yaml:" in e and "partitioned by toMonday(dt)" in e and
            "partition it by dt" in e, "the retry did not check the key again: %r" % e)
    h.eq(tc.SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db), before,
         "live rows after the refused runs")
    d.stop()


def count_key_checks():
    """Runs' system.tables lookups of fct_daily_sales so far (the server's
    query_log; a run's queries have the query_id backfilld-RUN-N)."""
    tc.SRV.q("SYSTEM FLUSH LOGS")
    return int(tc.SRV.q("SELECT count() FROM system.query_log WHERE type = 2 AND user = 'etl'"
                        " AND startsWith(query_id, 'backfilld-') AND"
                        " position(query, 'system.tables') > 0 AND"
                        " position(query, 'fct_daily_sales') > 0").strip())
RT_JOB = """
- name: fct
  warehouse: sales
  partition: day
  table: fct_daily_sales
  partition_column: dt
  min_rows: 1
%s  metrics:
    revenue: {sql: "%s", max_change: 1000%%}
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE %s GROUP BY dt, store_id
"""


def statements_by_run():
    """Statements the runs sent so far, by run id ({id: n}; a run's queries
    have the query_id backfilld-INSTANCE-RUN-N, earlier backfilld-RUN-N:
    the run is the last field but one; each daemon's ids start at 1)."""
    tc.SRV.q("SYSTEM FLUSH LOGS")
    return {int(r): int(n) for r, n in tc.SRV.rows(
        "SELECT toInt64OrZero(splitByChar('-', query_id)[-2]) AS r, count() FROM"
        " system.query_log WHERE type = 2 AND user = 'etl' AND"
        " startsWith(query_id, 'backfilld-') GROUP BY r")}


def run_query_ids():
    """The query ids of the runs' statements so far."""
    tc.SRV.q("SYSTEM FLUSH LOGS")
    return {r[0] for r in tc.SRV.rows(
        "SELECT query_id FROM system.query_log WHERE type = 2 AND user = 'etl'"
        " AND startsWith(query_id, 'backfilld-')")}


def run_statement_kinds(old_ids):
    """{run id: [kind, ...]} of the runs' statements whose query ids are
    not in old_ids (a daemon's own: its instance is new), in the order of
    their number N: fill, figures, mark, publish or the start of the
    statement's text."""
    tc.SRV.q("SYSTEM FLUSH LOGS")
    out = {}
    rows = tc.SRV.rows("SELECT query_id, replaceAll(query, '\\n', ' ') FROM"
                       " system.query_log WHERE type = 2 AND user = 'etl' AND"
                       " startsWith(query_id, 'backfilld-')")
    for qid, q in sorted(((qid, q) for qid, q in rows if qid not in old_ids),
                         key=lambda r: int(r[0].split("-")[-1])):
        run = int(qid.split("-")[-2])
        q = q.replace("\\'", "'")   # TSV's escape of a quote
        if q.startswith("INSERT INTO `_backfilld_stage_"):
            kind = "fill"
        elif (q.startswith("SELECT concat('bn\\\\t-'") and "GROUP BY" not in q
              and "UNION ALL SELECT concat('an\\\\t-'" in q):
            # the live table's before, the stage's after: no GROUP BY
            kind = "figures"
        elif q.startswith("INSERT INTO `_backfilld_marks_"):
            kind = "mark"
        elif q.startswith("ALTER TABLE `fct_daily_sales` REPLACE PARTITION"):
            kind = "publish"
        else:
            kind = q[:40]
        out.setdefault(run, []).append(kind)
    return out


def release_statements():
    """Statements outside any run (no backfilld- query id) on the stage and
    marks tables of fct_daily_sales so far: the releases after a record
    (and the sweep at start)."""
    tc.SRV.q("SYSTEM FLUSH LOGS")
    return int(tc.SRV.q("SELECT count() FROM system.query_log WHERE type = 2 AND user = 'etl'"
                        " AND NOT startsWith(query_id, 'backfilld-') AND"
                        " (position(query, '_backfilld_stage_fct_daily_sales') > 0 OR"
                        " position(query, '_backfilld_marks_fct_daily_sales') > 0)").strip())


def audit_figures(d, req):
    return sorted((p["partition"], p["rows_before"], p["rows_after"],
                   p["metrics"]["revenue"]["before"], p["metrics"]["revenue"]["after"],
                   sorted((c["name"], c["passed"]) for c in p["checks"]))
                  for p in d.json("audit", "--request", str(req))["partitions"])


def test_round_trips():
    lo, hi = "2026-02-02", "2026-02-08"
    figures = {}
    for name, batch, metric, where in (
            ("set", "", "sum(revenue_cents)", "dt = :partition"),
            ("one", "", "sumIf(revenue_cents, dt = :partition)", "dt = :partition"),
            ("batch", "  batch: true\n", "sum(revenue_cents)",
             "dt >= :partition_start AND dt < :partition_end")):
        db = tc.fresh_db()
        n0 = statements_by_run()
        ids0 = run_query_ids()
        d = h.Daemon(config=tc.ch_config(db, RT_JOB % (batch, metric, where)).replace(
            "max_concurrency: 4", "max_concurrency: 1"), clock=None, name="chrt" + name)
        r0 = release_statements()   # the sweep at start is done once READY
        d.backfill("fct", lo, hi)
        runs = sorted((r for r in d.runs() if r["job"] == "fct"), key=lambda r: r["id"])
        h.eq({r["state"] for r in runs}, {"succeeded"}, "states of the runs (%s)" % name)
        fact, raw = tc.fact_vs_raw(db, lo, hi)
        h.eq(fact, raw, "fact vs raw (%s)" % name)
        n1 = statements_by_run()
        n = {r["id"]: n1.get(r["id"], 0) - n0.get(r["id"], 0) for r in runs}
        if name == "set":
            # the first run checks the key, creates the stage tables,
            # clears its stage partition whatever the state read said
            # and learns the stage (docs/clickhouse.md, "Round trips");
            # each later one sends four, named here in order
            kinds = run_statement_kinds(ids0)
            h.eq([kinds.get(r["id"]) for r in runs[1:]],
                 [["fill", "figures", "mark", "publish"]] * 6,
                 "statements of the runs after the first")
            h.check(len(kinds[runs[0]["id"]]) > 4,
                    "the first run's statements: %r" % kinds[runs[0]["id"]])
        elif name == "one":
            h.check(all(n[r["id"]] > 4 for r in runs[1:]),
                    "a metric binding :partition: statements %r" % n)
        else:
            # one run: the key, the stage tables, the state, the fill, the
            # after figures, the marks, 7 REPLACEs
            h.eq(len(runs), 7, "partitions of the batch")
            h.check(len(set(r["request"] for r in runs)) == 1, "one request")
            h.check(sum(n.values()) <= 7 + 6 + 3, "statements of the batch: %r" % n)
        figures[name] = audit_figures(d, runs[0]["request"])
        h.eq(tc.stage_leftovers(db), {}, "stage rows left (%s)" % name)
        h.eq(tc.marks_left(db), {}, "marks left (%s)" % name)
        d.stop()
        if name == "set":
            # and the releases after the records, outside the runs, many
            # runs' at once (docs/clickhouse.md, "Round trips"): the runs
            # holding marks of their partitions read, their drop, the
            # stage partitions' drop, once the daemon had no run for 1 s
            # (here after the last, unless the machine stalls; three for
            # each run before)
            rel = release_statements() - r0
            h.check(3 <= rel <= 9, "statements releasing the runs' stages"
                    " and marks: %d, for %d runs" % (rel, len(runs)))
    h.eq(figures["one"], figures["set"], "audit figures, a statement at a time vs set")
    h.eq(figures["batch"], figures["set"], "audit figures, batch vs one a run")


DT_JOB = """
- name: tfct
  warehouse: sales
  partition: %s
  table: %s
  partition_column: ts
  min_rows: 1
%s  metrics:
    total: {sql: "sum(v)", max_change: 1000%%}
  sql: SELECT ts, v FROM tsrc WHERE %s
"""
DT_DAYS = ["2026-02-02", "2026-02-03", "2026-02-04"]
DT_TIMES = ["00:00:00", "00:45:10", "23:59:59"]


def dt_figures(d, req):
    return sorted((p["partition"], p["state"], p["rows_before"], p["rows_after"],
                   p["metrics"]["total"]["after"])
                  for p in d.json("audit", "--request", str(req))["partitions"])


def test_datetime_partition_column():
    for name, grain, table, batch, where in (
            ("day", "day", "tf", "", "toDate(ts) = :partition"),
            ("batch", "day", "tf", "  batch: true\n",
             "toDate(ts) >= :partition_start AND toDate(ts) < :partition_end"),
            ("hour", "hour", "th", "", "toStartOfHour(ts) = :partition")):
        db = tc.fresh_db(seed=False)
        tc.SRV.script(
            "CREATE TABLE tsrc (ts DateTime, v Float64) ENGINE = MergeTree ORDER BY ts;"
            " CREATE TABLE tf (ts DateTime, v Float64) ENGINE = MergeTree"
            " PARTITION BY toDate(ts) ORDER BY ts;"
            " CREATE TABLE th (ts DateTime, v Float64) ENGINE = MergeTree"
            " PARTITION BY toStartOfHour(ts) ORDER BY ts;"
            " INSERT INTO tsrc VALUES " + ", ".join(
                "('%s %s', %d)" % (x, t, 10 * i + k + 1)
                for i, x in enumerate(DT_DAYS) for k, t in enumerate(DT_TIMES)), db)
        d = h.Daemon(config=tc.ch_config(db, DT_JOB % (grain, table, batch, where)).replace(
            "max_concurrency: 4", "max_concurrency: 1"), clock=None, name="chdt" + name)
        if grain == "day":
            lo, hi = DT_DAYS[0], DT_DAYS[-1]
            want = [(x, 3, sum(10 * i + k + 1 for k in range(3)))
                    for i, x in enumerate(DT_DAYS)]
        else:
            # the first hour of a day: its start and an instant in it
            lo = hi = DT_DAYS[1] + "T00"
            want = [(lo, 2, 11 + 12)]
        for rnd in (0, 1):
            rc, out, err = d.ctl("backfill", "tfct", "--from", lo, "--to", hi, "--wait")
            h.check(rc == 0, "%s: a backfill of the DateTime fact (round %d):\n%s%s\n%s"
                    % (name, rnd, out, err, d.log_tail(20)))
            req = int(out.split("request ")[1].split(":")[0])
            figs = [f for f in dt_figures(d, req) if f[3] or f[0] in [w[0] for w in want]]
            h.eq([(f[0], f[1], f[3], f[4]) for f in figs if f[0] in [w[0] for w in want]],
                 [(k, "succeeded", n, s) for k, n, s in want],
                 "%s: the audit's rows and metric after (round %d)" % (name, rnd))
            if rnd == 1:
                h.eq([f[2] for f in figs if f[0] in [w[0] for w in want]],
                     [n for _, n, _ in want], "%s: the rows before a rebuild" % name)
        fn = "toDate" if grain == "day" else "toStartOfHour"
        got = tc.SRV.rows("SELECT toString(%s(ts)), toString(count()), toString(sum(v))"
                          " FROM %s GROUP BY %s(ts) ORDER BY %s(ts)" % (fn, table, fn, fn), db)
        h.eq([(g[0][:13].replace(" ", "T") if grain == "hour" else g[0], int(g[1]),
               float(g[2])) for g in got],
             [(k, n, float(s)) for k, n, s in want], "%s: the published rows" % name)
        h.eq(tc.stage_leftovers(db), {}, "stage rows left (%s)" % name)
        h.eq(tc.marks_left(db), {}, "marks left (%s)" % name)
        d.stop()


def overlaps(runs):
    """Consecutive runs (by id) whose records overlap: the next one was
    recorded started before the one before it was recorded finished."""
    rs = sorted(runs, key=lambda r: r["id"])
    return sum(1 for a, b in zip(rs, rs[1:])
               if h.parse_iso(b["started_at"]) < h.parse_iso(a["finished_at"]))


def wait_for(cond, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            h.fail("timed out waiting for %s" % what)
        time.sleep(0.02)


def test_runs_handed_ahead():
    """A ClickHouse job's runs are handed ahead as a SQLite job's are
    (docs/performance.md, "Runs handed ahead"; BACKFILLD_TEST_DECK_MS
    lifts the 20 ms bound so that a loaded test machine's runs qualify
    too): the records of a week's runs overlap, each partition runs once,
    at its first attempt, and equals raw, no stage row or mark left.  Then
    the server stopped (SIGSTOP) under a run, the run handed ahead after
    it waits (two running at concurrency 1), kill -9: after the restart
    both are in the history as interrupted, every partition succeeds
    once, the rows equal raw, nothing is left in the stage."""
    db = tc.fresh_db()
    job = (JOB % 0).replace("  retries:", "  concurrency: 1\n  retries:")
    d = h.Daemon(config=tc.ch_config(db, job).replace("max_concurrency: 4",
                                                      "max_concurrency: 2"),
                 clock=None, name="chdeck", env={"BACKFILLD_TEST_DECK_MS": "600000"})
    week = h.days("2026-02-02", "2026-02-08")
    d.backfill("fct", week[0], week[-1])
    runs = [r for r in d.runs() if r["job"] == "fct"]
    h.eq(sorted((r["partition"], r["attempt"], r["state"]) for r in runs),
         [(p, 1, "succeeded") for p in week], "runs of the week")
    n = overlaps(runs)
    h.check(n >= len(runs) // 2, "only %d of %d runs were recorded started before the one"
            " before them finished: none handed ahead?" % (n, len(runs)))
    fact, raw = tc.fact_vs_raw(db, week[0], week[-1])
    h.eq(fact, raw, "fact vs raw for the week")
    later = h.days("2026-02-10", "2026-02-14")
    os.killpg(tc.SRV.proc.pid, signal.SIGSTOP)
    try:
        req = d.enqueue("backfill", "fct", "--from", later[0], "--to", later[-1])
        wait_for(lambda: d.status("fct")["fct"]["running"] == 2,
                 "a run on the stopped server and the one handed ahead after it")
        d.kill9()
    finally:
        os.killpg(tc.SRV.proc.pid, signal.SIGCONT)
    d.start()
    d.wait_request(req)
    runs = [r for r in d.runs() if r["job"] == "fct" and r["partition"] in later]
    cut = sorted(r["partition"] for r in runs if r["state"] == "failed")
    h.eq(cut, later[:2], "runs cut by the kill: the one on the stopped server and the one"
         " handed ahead after it")
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "succeeded"), later,
         "partitions succeeded once after the restart")
    fact, raw = tc.fact_vs_raw(db, later[0], later[-1])
    h.eq(fact, raw, "fact vs raw after kill -9 with a run handed ahead")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    h.eq(tc.marks_left(db), {}, "marks left")
    d.stop()


def stage_of(db, day):
    """(stage rows, marks) of partition day of fct_daily_sales."""
    return (int(tc.SRV.q("SELECT count() FROM `%s` WHERE dt = '%s'" % (STAGE, day), db)),
            int(tc.SRV.q("SELECT count() FROM _backfilld_marks_fct_daily_sales WHERE"
                         " partition = '%s'" % day, db)))


def test_sweep_beside_a_queued_run():
    """The start's sweep drops a stale stage partition and its mark while
    another partition of the job has a run queued (docs/clickhouse.md,
    "Exactly once"): a request of two days, the daemon stopped after the
    record of the first day it ran (B) and before its release
    (BACKFILLD_TEST_CH_STOP=recorded), killed; the restart holds its one
    worker before it takes the sweep (BACKFILLD_TEST_CH_SWEEP) until the
    other day (A) is recorded running again, so queued behind the held
    worker when the sweep is taken.  B's stage partition and mark go, A
    succeeds once, B is not run again, both days equal raw."""
    db = tc.fresh_db()
    days = ["2026-02-09", "2026-02-10"]
    cfg = tc.ch_config(db, JOB % 0).replace("max_concurrency: 4", "max_concurrency: 1")
    d = h.Daemon(config=cfg, clock=None, name="chsweep",
                 env={"BACKFILLD_TEST_CH_STOP": "recorded"})
    req = d.enqueue("backfill", "fct", "--from", days[0], "--to", days[-1])
    tc.wait_stopped(d, "the release of the first run recorded")
    done = d.state_rows("SELECT partition_key FROM runs WHERE job = 'fct' AND"
                        " state = 'succeeded'")
    h.eq(len(done), 1, "runs recorded succeeded when stopped before the release: %r" % done)
    b = done[0][0]
    a = [x for x in days if x != b][0]
    nb = stage_of(db, b)
    h.check(nb[0] > 0 and nb[1] == 1, "%s's stage rows and mark before the kill: %r" % (b, nb))
    last = max(r[0] for r in d.state_rows("SELECT id FROM runs"))
    d.kill9()
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    fifo = os.path.join(d.dir, "sweep.fifo")
    os.mkfifo(fifo)
    d.extra_env["BACKFILLD_TEST_CH_SWEEP"] = fifo
    fd = None
    try:
        d.restart()
        fd = tc.open_fifo_to_write(fifo)
        h.check(fd is not None, "the worker was not held before the sweep:\n%s"
                % d.log_tail())
        # recorded running, so handed to the executor (the same turn of
        # the loop, before it answers runs): queued, the one worker held
        wait_for(lambda: [r for r in d.runs() if r["partition"] == a and
                          r["state"] == "running" and r["id"] > last],
                 "%s queued again after the restart" % a)
        h.eq(stage_of(db, b), nb, "%s's stage rows and mark while the sweep is held" % b)
    finally:
        tc.release_fifo(fifo, fd)
    d.wait_request(req)
    deadline = time.monotonic() + 30
    while stage_of(db, b) != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    h.eq(stage_of(db, b), (0, 0), "%s's stage rows and mark after the restart's sweep" % b)
    runs = [r for r in d.runs() if r["request"] == req]
    h.eq(sorted((r["partition"], r["state"]) for r in runs if r["state"] == "succeeded"),
         sorted([(a, "succeeded"), (b, "succeeded")]),
         "one success a partition (B not run again): %r" % runs)
    fact, raw = tc.fact_vs_raw(db, days[0], days[-1])
    h.eq(fact, raw, "fact vs raw for the two days")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    h.eq(tc.marks_left(db), {}, "marks left")
    d.stop()


def main():
    # tools/chserver.py's server: the same users as test_clickhouse's, and a query_log
    # in a folder of the suite's (test_leftovers finds it if it is left
    # running), removed with it
    tc.start_server(query_log=True)
    h.main([test_stage_dropped_between_runs, test_key_checked_once_then_after_failure,
            test_round_trips, test_datetime_partition_column, test_runs_handed_ahead,
            test_sweep_beside_a_queued_run])


if __name__ == "__main__":
    main()
