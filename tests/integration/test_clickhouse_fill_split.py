#!/usr/bin/env python3
"""ClickHouse: a batch fills its stage by several statements at once
(docs/clickhouse.md, "Batch"), against a throwaway server
(tools/chserver.py).  ClickHouse 18.16 runs an INSERT ... SELECT in one
thread, so a batch of a job with concurrency c fills its stage by up to c
INSERTs at once, each over a consecutive share of the batch's partitions,
as many as the run holds slots.

A batch job of concurrency 4 over 8 days whose fill reads its rows one a
block, sleeping on each (sleepEachRow), so that a share of two days takes
seconds and the test sees its statements in system.processes:

  - the fill is split: system.processes holds 4 of the daemon's stage
    fills at once; afterwards every day equals raw, one run holds the 8
    partitions, each recorded succeeded once, nothing is left in the
    stage or its marks, and the query log has exactly 4 fills of the run;
  - one share fails (throwIf on its second day, after its first day's
    rows): the run fails with that error, the 3 other fills are killed
    (the query log: one failed by throwIf, three cancelled), nothing is
    published, no query of the daemon is left in system.processes when
    the run is recorded; after the SQL is fixed (reload) a backfill
    makes every day equal raw;
  - timeout: 2s on a split fill: the run times out, none of its 4 queries
    is left on the server when the run is recorded, and one log line says
    that all 4 were stopped on the server (KILL QUERY);
  - kill -9 of the daemon during the split fill, then a restart: every
    partition succeeded once, equal to raw, nothing left in the stage or
    its marks;
  - as many fills as the run holds slots: one for a job of concurrency 1,
    two for concurrency 2, three for concurrency 4 in a request of
    --concurrency 3 (the caps bound the statements in flight).
  - backfillctl cancel of the request while the 4 fills run: a cancel
    drops queued partitions and lets runs in flight finish, and the 8 are
    all the run's: "0 queued partitions dropped", the 4 fills finish
    (none killed, no KILL QUERY line), the run succeeds;
  - SIGTERM while the 4 fills run, past shutdown_grace: 1s: the grace's
    cancel kills all 4 (one log line names them), none of the daemon's
    queries is left on the server once it has exited, the live table is
    unchanged; after a restart every day is built once, equal to raw,
    the drained run recorded cancelled with no attempt counted;
  - two nodes on a PostgreSQL state store (test_cluster.py's Nodes): a
    run holds one slot, so the batch of the job of concurrency 4 fills
    its stage by one statement (the query log), every day equal to raw.

No duration is asserted; every wait is a poll of the server or the
daemon with a guard.  Skipped (77) without clickhouse-server, as
test_clickhouse.py is.
"""
import re
import time

import harness as h
import test_clickhouse as tc
import test_cluster as tcl
import test_postgres as tp


LO, HI = "2026-02-08", "2026-02-15"
DAYS = h.days(LO, HI)
GUARD = 60   # seconds: a failure guard, never a wait

# the batch's SQL over its share (:partition_start .. :partition_end); the
# inner SELECT filters the share's rows, so the sleep (SLEEP s a row, a
# block a row) is over those only; WHERE is the outer query's condition
JOB = """
- name: fct
  warehouse: sales
  partition: day
  batch: true
  concurrency: %(conc)d
  retries: 0
%(extra)s  table: fct_daily_sales
  partition_column: dt
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM (SELECT * FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end) WHERE %(where)s GROUP BY dt, store_id SETTINGS max_block_size = 1
"""
FILL = "INSERT INTO `_backfilld_stage_"


def job(conc=4, sleep=0.2, extra="", where=None):
    return JOB % {"conc": conc, "extra": extra,
                  "where": where or "sleepEachRow(%s) = 0" % sleep}


def fills_running():
    """The query ids of the daemons' stage fills running on the server."""
    return tc.SRV.q("SELECT query_id FROM system.processes WHERE query_id LIKE 'backfilld-%%'"
                    " AND startsWith(query, '%s')" % FILL).split()


def ours_running():
    """The query ids of every query of the daemons running on the server."""
    return tc.SRV.q("SELECT query_id FROM system.processes WHERE query_id LIKE"
                    " 'backfilld-%'").split()


def wait_fills(n):
    """Until n stage fills run on the server at once: their ids."""
    deadline = time.monotonic() + GUARD
    most = []
    while time.monotonic() < deadline:
        ids = fills_running()
        if len(ids) > len(most):
            most = ids
        if len(ids) >= n:
            return sorted(ids)
        time.sleep(0.02)
    h.fail("never %d stage fills at once in system.processes (at most %d: %r)"
           % (n, len(most), most))


def fills_logged(run=None, old=()):
    """[(query_id, type, exception)] of the stage fills in the query log
    (type 2: finished, 3/4: failed) but those of query ids in old (each
    daemon's instance is its own, its run ids start at 1), of run."""
    tc.SRV.q("SYSTEM FLUSH LOGS")
    return sorted(tuple(r) for r in tc.SRV.rows(
        "SELECT query_id, toString(type), exception FROM system.query_log WHERE type != 1"
        " AND startsWith(query_id, 'backfilld-') AND startsWith(query, '%s')" % FILL, "default")
        if r[0] not in old and (run is None or r[0].split("-")[-2] == str(run)))


def old_fills():
    """The query ids of the stage fills logged so far (other daemons')."""
    return {r[0] for r in fills_logged()}


def fact(db):
    return tc.SRV.rows("SELECT dt, store_id, sales, revenue_cents FROM fct_daily_sales"
                       " WHERE dt BETWEEN '%s' AND '%s' ORDER BY dt, store_id" % (LO, HI), db)


def raw(db):
    return tc.SRV.rows("SELECT dt, store_id, count(), sum(amount_cents)"
                       " FROM raw_sales WHERE dt BETWEEN '%s' AND '%s' GROUP BY dt, store_id"
                       " ORDER BY dt, store_id" % (LO, HI), db)


def request_runs(d, req):
    return [r for r in d.runs() if r["request"] == req and r["job"] == "fct"]


def one_run_each(d, req):
    """The request's partitions each succeeded once, by one run (the batch:
    a record a partition, all started at once): the run's id (its first
    record's, the id its queries carry)."""
    rs = request_runs(d, req)
    ok = [r for r in rs if r["state"] == "succeeded"]
    h.eq(sorted(r["partition"] for r in ok), DAYS, "succeeded partitions of request %d" % req)
    h.eq(len({r["started_at"] for r in ok}), 1, "runs holding the batch's partitions: %r" % ok)
    st = d.status()["fct"]
    h.eq((st["queued"], st["running"], st["failed"]), (0, 0, 0), "status of fct")
    return min(r["id"] for r in ok)


def nothing_left(db):
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    h.eq(tc.marks_left(db), {}, "marks left")


def batch(db, name, jobtext, split=True):
    """A daemon on db backfilling the 8 days: (the daemon, the request, the
    query ids of the 4 stage fills seen at once when split)."""
    d = h.Daemon(config=tc.ch_config(db, jobtext), clock=None, name=name)
    req = d.enqueue("backfill", "fct", "--from", LO, "--to", HI)
    return d, req, wait_fills(4) if split else None


def succeeded(d, req, db, what):
    """The request succeeded, one run holding the 8 partitions, each
    recorded once; every day equals raw, nothing left: the run's id."""
    resp = d.wait_request(req, timeout=GUARD)
    h.eq(resp.get("status"), "0", "request %d %s: %r" % (req, what, resp))
    run = one_run_each(d, req)
    h.eq(fact(db), raw(db), "fct_daily_sales against raw %s" % what)
    nothing_left(db)
    return run


def failed(d, req, db, before, what):
    """The request failed, no query of the daemon left on the server when
    it was recorded, nothing published or left: its runs."""
    resp = d.wait_request(req, timeout=GUARD)
    # recorded: the queries are gone by now, not later
    left = ours_running()
    h.check(resp.get("status") != "0", "the batch %s succeeded: %r" % (what, resp))
    h.eq(left, [], "the daemon's queries on the server once the batch %s was recorded" % what)
    h.eq(fact(db), before, "the live table after the batch %s" % what)
    nothing_left(db)
    return request_runs(d, req)


def kill_line(d, run):
    """The one log line of the run's kill: the query ids it names."""
    with open(d.log) as f:
        lines = [l for l in f.read().splitlines() if "KILL QUERY" in l]
    h.eq(len(lines), 1, "log lines of the kill:\n%s" % "\n".join(lines))
    # queries backfilld-INSTANCE-RUN-{N,...} stopped on the server
    m = re.search(r"queries (backfilld-[0-9a-f]{16}-%d-)\{([0-9,]+)\} stopped on the server"
                  r" \(KILL QUERY\), gone after [0-9.]+ s" % run, lines[0])
    h.check(m and ("run=%d" % run) in lines[0], "the kill's line: %r" % lines[0])
    return sorted(m.group(1) + n for n in m.group(2).split(","))


def test_fill_split():
    db = tc.fresh_db()
    h.check(fact(db) != raw(db), "the window's days should differ from raw before the batch")
    old = old_fills()
    d, req, ids = batch(db, "chsplit", job())
    # while its 4 statements run: one run in flight (not its 4 slots), and
    # no partition waiting (the 8 are the run's)
    st = d.json("status")
    h.eq((st["running"], st["queued"]), (1, 0), "status's running and queued during the batch")
    run = succeeded(d, req, db, "after the split batch")
    h.eq([(q, t) for q, t, e in fills_logged(run, old)], [(q, "2") for q in ids],
         "the run's stage fills in the query log: the 4 seen at once, each finished")
    d.stop()


def test_share_fails():
    db = tc.fresh_db()
    before = fact(db)
    old = old_fills()
    # the last share (the 14th and 15th) throws at the first row of the
    # 15th, after the 14th's rows: the other shares are running then
    d, req, ids = batch(db, "chsplitfail", job(
        where="sleepEachRow(0.2) = 0 AND throwIf(dt = toDate('2026-02-15')) = 0"))
    rs = failed(d, req, db, before, "with a failing share")
    h.check(rs and all(r["state"] == "failed" for r in rs), "runs: %r" % rs)
    e = rs[0]["error"] or ""
    h.check("filling the stage" in e and "throwIf" in e, "error: %r" % e)
    logged = fills_logged(rs[0]["id"], old)
    h.eq([q for q, t, x in logged], ids, "the run's stage fills in the query log")
    h.eq(sorted(("throwIf" in x, "cancelled" in x) for q, t, x in logged),
         [(False, True)] * 3 + [(True, False)],
         "one fill failed by throwIf, the other three killed: %r" % logged)
    # the SQL fixed, reloaded: the backfill makes every day equal raw
    d.write_config(tc.ch_config(db, job(sleep=0)))
    d.ok("reload")
    req = d.enqueue("backfill", "fct", "--from", LO, "--to", HI)
    succeeded(d, req, db, "after the fix")
    d.stop()


def test_timeout():
    db = tc.fresh_db()
    before = fact(db)
    d, req, ids = batch(db, "chsplittmo", job(sleep=0.3, extra="  timeout: 2s\n"))
    rs = failed(d, req, db, before, "past its timeout")
    h.check(rs and all("timed out after 2s" in (r["error"] or "") for r in rs), "runs: %r" % rs)
    h.eq(kill_line(d, rs[0]["id"]), ids, "the queries the kill's line names: the 4 fills seen")
    d.stop()


def test_kill9():
    db = tc.fresh_db()
    d, req, ids = batch(db, "chsplitkill", job())
    d.kill9()
    d.start()
    succeeded(d, req, db, "after kill -9 and the restart")
    d.stop()


def test_cancel():
    """backfillctl cancel of the request while the 4 fills run: a cancel
    drops a request's queued partitions and leaves its runs in flight
    alone (docs/commands.md), and the batch's 8 partitions are all the
    run's: nothing is dropped, none of the 4 fills is killed, the run
    succeeds as if never cancelled."""
    db = tc.fresh_db()
    old = old_fills()
    d, req, ids = batch(db, "chsplitcancel", job())
    out = d.ok("cancel", str(req))
    h.eq(out.strip(), "request %d: 0 queued partitions dropped; runs in flight finish" % req,
         "cancel of the batch's request while it runs")
    run = succeeded(d, req, db, "after a cancel during its fill")
    h.eq([(q, t) for q, t, e in fills_logged(run, old)], [(q, "2") for q in ids],
         "the run's stage fills in the query log: the 4 seen at once, each finished")
    with open(d.log) as f:
        h.eq([l for l in f.read().splitlines() if "KILL QUERY" in l], [],
             "log lines of a kill after a cancel")
    d.stop()


def test_drain():
    """SIGTERM while the 4 fills run (0.5 s a row: seconds a share),
    shutdown_grace: 1s: the grace ends with the run in flight and cancels it, which kills all 4 queries (one
    log line names them); the daemon exits 0 with none of its queries left
    on the server, the live table unchanged; after a restart every day is
    built once, equal to raw, nothing left in the stage or marks."""
    db = tc.fresh_db()
    before = fact(db)
    d = h.Daemon(config=tc.ch_config(db, job(sleep=0.5), "shutdown_grace: 1s"), clock=None,
                 name="chsplitdrain")
    req = d.enqueue("backfill", "fct", "--from", LO, "--to", HI)
    ids = wait_fills(4)
    run = int(ids[0].split("-")[-2])
    d.stop()
    # exited: its queries are gone by now, not later
    h.eq(ours_running(), [], "the daemon's queries on the server once it exited")
    h.eq(fact(db), before, "the live table after the drain")
    with open(d.log) as f:
        h.check("shutdown grace over: cancelling 1 runs in flight" in f.read(),
                "the grace should have ended with the batch in flight:\n%s" % d.log_tail())
    h.eq(kill_line(d, run), ids, "the queries the kill's line names: the 4 fills seen")
    d.start()
    succeeded(d, req, db, "after the drain and a restart")
    # the drained run recorded cancelled, no attempt counted (a stop is no
    # attempt: the rebuild is attempt 1 too)
    h.eq(sorted((r["partition"], r["state"], r["attempt"]) for r in request_runs(d, req)),
         sorted([(p, "cancelled", 1) for p in DAYS] + [(p, "succeeded", 1) for p in DAYS]),
         "the request's runs after the drain and the restart")
    d.stop()


def test_width_of_the_caps():
    """As many fills as the run holds slots: the job's concurrency (1: one
    statement, 2: two), or the request's own when lower (backfill
    --concurrency 3 of the job's 4)."""
    for conc, extra, want in ((1, (), 1), (2, (), 2), (4, ("--concurrency", "3"), 3)):
        db = tc.fresh_db()
        old = old_fills()
        d = h.Daemon(config=tc.ch_config(db, job(conc=conc, sleep=0)), clock=None,
                     name="chsplitw%d" % conc)
        req = d.enqueue("backfill", "fct", "--from", LO, "--to", HI, *extra)
        run = succeeded(d, req, db, "of a job of concurrency %d %s" % (conc, extra))
        h.eq(len(fills_logged(run, old)), want, "the stage fills of a batch of a job of"
             " concurrency %d %s" % (conc, extra))
        d.stop()


def test_several_hosts():
    """On several hosts a run holds one slot (docs/several-hosts.md): a
    batch of a job of concurrency 4 on two nodes with a PostgreSQL state
    store (test_cluster.py's Nodes) fills its stage by one statement,
    where one host fills it by 4; every day equals raw, each succeeded
    once, nothing left in the stage or marks.  Skipped (passes, saying
    so) without PostgreSQL."""
    try:
        tp.cluster()
    except SystemExit as e:
        if e.code != h.SKIP:
            raise
        print("  skipped: no PostgreSQL server for the nodes' state store")
        return
    db = tc.fresh_db()
    old = old_fills()
    wh = ("\n  - name: sales\n    clickhouse: %s\n    user: etl\n    password_file: %s"
          % (tc.SRV.url(db), tc.SRV.pwfile))
    c = tcl.Nodes(job(sleep=0), names=(), settings={"max_concurrency": 4, "warehouses": wh})
    for name in ("n1", "n2"):
        c.add(name)
        c.wait_view(list(c.nodes))
    req = tcl.backfill(c["n1"], "fct", LO, HI)
    resp = c["n1"].wait_request(req, timeout=GUARD)
    h.eq(resp.get("status"), "0", "request %d on two nodes: %r" % (req, resp))
    runs = tcl.succeeded_once(c["n1"], req, [("fct", p) for p in DAYS])
    ok = [r for r in runs if r["state"] == "succeeded"]
    h.eq(len({r["started_at"] for r in ok}), 1,
         "runs holding the batch's partitions: %r" % ok)
    h.eq(fact(db), raw(db), "fct_daily_sales against raw after the batch on two nodes")
    nothing_left(db)
    logged = fills_logged(None, old)
    h.eq([t for q, t, e in logged], ["2"],
         "the batch's stage fills in the query log on two nodes: one, finished (%r)" % logged)


def main():
    tc.start_server(query_log=True)
    try:
        h.main([test_fill_split, test_share_fails, test_timeout, test_kill9,
                test_width_of_the_caps, test_cancel, test_drain,
                tcl.isolated(test_several_hosts)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
