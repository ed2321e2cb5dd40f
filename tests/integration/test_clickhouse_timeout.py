#!/usr/bin/env python3
"""ClickHouse: a stopped run ends its query, query ids are the daemon's
own, refusals that no retry cures, and what --check-config checks
(docs/clickhouse.md, "Timeouts and cancellation", "Credentials and
privileges", "The partition key"), against a throwaway server
(tools/chserver.py):

  - a slow fill with timeout: 2s: the run ends within a few seconds (no
    KILL QUERY ... SYNC waiting out its 30 s), its query is gone from
    system.processes when the run is recorded, and one line is logged
    with the job, the partition, the run, the query id and how long the
    server took; every query id is backfilld-INSTANCE-RUN-N;
  - the daemon killed (-9) in the middle of a slow fill with a timeout:
    the server ends the statement itself (max_execution_time: the
    timeout plus 2 s), it does not run on;
  - two daemons with separate state stores on one server (so the same
    run ids) fill at once: no query id clashes (Code: 216), both succeed;
  - a wrong password fails the run once, with what to do, not retried
    although the job has retries;
  - --check-config checks the partition keys against the server (a wrong
    grain: exit 2 with the job's position), says plainly when it could
    not reach it, refuses batch: true on a Distributed table with the
    job's position (so does the start), and names a Distributed job's
    real stage table (its local table's).

Skipped (77) without clickhouse-server, as test_clickhouse.py is.
"""
import os
import re
import subprocess
import textwrap
import threading
import time

import harness as h
import test_clickhouse as tc

# one row a second, a block a row (raw_sales is not partitioned by day: the
# sleep is over the table's rows): a fill of minutes unless stopped
SLOW = """
- name: slow
  warehouse: sales
  partition: day
  timeout: %s
  table: fct_daily_sales
  partition_column: dt
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt = :partition AND sleepEachRow(1) = 0 GROUP BY dt, store_id SETTINGS max_block_size = 1
"""
QID = re.compile(r"^backfilld-[0-9a-f]{16}-[0-9]+-[0-9]+$")


def ours():
    """The query ids of the daemons' queries running on the server."""
    return tc.SRV.q("SELECT query_id FROM system.processes WHERE query_id LIKE"
                    " 'backfilld-%'").split()


def wait_fill(guard=30):
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline:
        rows = tc.SRV.rows("SELECT query_id, query FROM system.processes WHERE query_id"
                           " LIKE 'backfilld-%'", "default")
        for qid, q in rows:
            if "INSERT INTO `_backfilld_stage_" in q:
                return qid
        time.sleep(0.05)
    h.fail("the stage fill never showed in system.processes")


def check_config(d):
    r = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=60, cwd=d.dir, env=d.env())
    return r.returncode, r.stdout, r.stderr


def test_timeout_ends_the_query():
    db = tc.fresh_db()
    before = tc.SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db)
    d = h.Daemon(config=tc.ch_config(db, SLOW % "2s"), clock=None, name="chtmo")
    seen = []
    t = threading.Thread(target=lambda: seen.append(wait_fill()))
    t.start()
    t0 = time.monotonic()
    rc, out, err = d.ctl("backfill", "slow", "--from", "2026-02-09", "--to", "2026-02-09", "--wait")
    took = time.monotonic() - t0
    # recorded: the query is gone by now, not later
    left = ours()
    t.join()
    h.check(rc != 0, "the slow run should time out")
    r = [x for x in d.runs() if x["job"] == "slow"][-1]
    h.check("timed out after 2s" in (r["error"] or ""), "error: %r" % r["error"])
    h.check(took < 10, "the timeout took %.1fs" % took)
    h.eq(left, [], "backfilld queries on the server once the run was recorded")
    h.check(seen and QID.match(seen[0]), "query id %r" % seen)
    with open(d.log) as f:
        log = f.read()
    lines = [l for l in log.splitlines() if "KILL QUERY" in l]
    h.eq(len(lines), 1, "log lines of the kill:\n%s" % "\n".join(lines))
    h.check(("job=slow partition=2026-02-09 run=%d" % r["id"]) in lines[0] and seen[0] in lines[0]
            and re.search(r"gone after [0-9.]+ s", lines[0]), "the kill's line: %r" % lines[0])
    h.eq(tc.SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db),
         before, "live partition after a timeout")
    d.stop()


def test_server_ends_an_orphan():
    db = tc.fresh_db()
    d = h.Daemon(config=tc.ch_config(db, SLOW % "3s"), clock=None, name="chorphan")
    d.ok("backfill", "slow", "--from", "2026-02-09", "--to", "2026-02-09")
    qid = wait_fill()
    d.kill9()
    # max_execution_time = 3 s + 2 s from the query's start: gone well
    # before the fill's minutes (the server checks it between blocks:
    # seconds late here)
    deadline = time.monotonic() + 15
    while qid in ours() and time.monotonic() < deadline:
        time.sleep(0.1)
    h.check(qid not in ours(), "the orphaned fill %s still runs on the server" % qid)
    d.close()


def test_two_daemons_one_server():
    # a fill of about 3 s (the day's 9 rows, 0.3 s each)
    job = """
    - name: slow
      warehouse: sales
      partition: day
      table: fct_daily_sales
      partition_column: dt
      sql: SELECT dt, store_id, count(), sum(amount_cents) FROM (SELECT * FROM raw_sales WHERE dt = :partition) WHERE sleepEachRow(0.3) = 0 GROUP BY dt, store_id SETTINGS max_block_size = 1
    """
    dbs = [tc.fresh_db(), tc.fresh_db()]
    ds = [h.Daemon(config=tc.ch_config(db, job), clock=None, name="chtwo%d" % k)
          for k, db in enumerate(dbs)]
    # both requests queued before either's first fill has ended (each
    # fill takes several seconds), so the runs 1, 2 of both overlap
    reqs = [d.enqueue("backfill", "slow", "--from", "2026-02-09", "--to", "2026-02-10")
            for d in ds]
    for d, rq in zip(ds, reqs):
        d.wait_request(rq, timeout=60)
    for k, d in enumerate(ds):
        runs = [x for x in d.runs() if x["job"] == "slow"]
        h.check(runs and all(x["state"] == "succeeded" for x in runs),
                "daemon %d's runs: %r" % (k, [(x["id"], x["state"], x["error"]) for x in runs]))
        h.check(not any("216" in (x["error"] or "") for x in runs), "a query id clashed")
        d.stop()


def test_wrong_password_not_retried():
    db = tc.fresh_db()
    bad = os.path.join(tc.SRV.dir, "wrong.password")
    with open(bad, "w") as f:
        f.write("nope\n")
    job = """
    - name: fct
      warehouse: sales
      partition: day
      retries: 3
      retry_backoff: 1s
      table: fct_daily_sales
      partition_column: dt
      sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
    """
    d = h.Daemon(config=tc.ch_config(db, job).replace(tc.SRV.pwfile, bad), clock=None,
                 name="chdenied")
    t0 = time.monotonic()
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-10", "--to", "2026-02-10", "--wait")
    h.check(rc != 0, "a wrong password should fail the request")
    runs = [x for x in d.runs() if x["job"] == "fct"]
    h.eq(len(runs), 1, "runs (no retry): %r" % [(x["id"], x["error"]) for x in runs])
    e = runs[0]["error"] or ""
    h.check("Wrong password for user etl" in e and "password_file" in e and "not retried" in e
            and "nope" not in e, "error: %r" % e)
    h.check(time.monotonic() - t0 < 10, "the refusal took %.1fs" % (time.monotonic() - t0))
    with open(d.log) as f:
        log = f.read()
    h.check("will retry" not in log, "the log says it will retry:\n%s" % log[-2000:])
    d.stop()


def test_check_config_reaches_the_server():
    db = tc.fresh_db()
    good = """
    - name: fct
      warehouse: sales
      partition: day
      table: fct_daily_sales
      partition_column: dt
      sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
    """
    d = h.Daemon(config=tc.ch_config(db, good), clock=None, name="chcfgok", start=False)
    rc, out, err = check_config(d)
    h.eq(rc, 0, "--check-config exit (stderr %r)" % err)
    h.check("configuration OK: 1 job," in out and "partition keys checked" in out,
            "stdout: %r" % out)
    # the hourly grain on a table partitioned by day: what the start would
    # refuse (a week or month grain is accepted there: a Date column may
    # hold each partition's first day, docs/clickhouse.md)
    d.write_config(tc.ch_config(db, good.replace("partition: day", "partition: hour")))
    rc, out, err = check_config(d)
    e = h.one_line_error(rc, out, err, 2, "--check-config on a wrong grain")
    h.check("backfilld.yaml:" in e and "is not the job's hour grain" in e, "error: %r" % e)
    # no server: OK, and what was not checked said plainly
    d.write_config(tc.ch_config(db, good).replace(":%d/" % tc.SRV.http, ":%d/" % tc.free_port()))
    rc, out, err = check_config(d)
    h.eq(rc, 0, "--check-config exit without a server (stderr %r)" % err)
    h.check("ClickHouse partition keys not checked" in out and "sales" in out
            and "checked at start" in out, "stdout: %r" % out)


def shard_servers():
    """Two servers, the shards of two_shards, with the lesson's local
    tables (test_clickhouse.two_shards), or a skip."""
    return tc.two_shards()


def test_check_config_distributed():
    srvs = shard_servers()
    try:
        conf = tc.shard_config(srvs, True) + textwrap.indent(textwrap.dedent("""\
            checks:
              - name: has_rows
                sql: SELECT count() > 0 FROM :stage WHERE dt = :partition
            """), "    ")
        d = h.Daemon(config=conf, clock=None, name="chcfgdist", start=False)
        rc, out, err = check_config(d)
        h.eq(rc, 0, "--check-config exit (stderr %r)" % err)
        h.check(":stage -> `_backfilld_stage_fct_local`" in out, "stdout: %r" % out)
        h.check("`_backfilld_stage_fct`" not in out, "stdout: %r" % out)
        batch = re.sub(r"(\n(\s*)partition: day\n)", r"\1\2batch: true\n", conf, count=1)
        h.check(batch != conf, "no job to set batch on")
        d.write_config(batch)
        rc, out, err = check_config(d)
        e = h.one_line_error(rc, out, err, 2, "--check-config with batch on a Distributed table")
        h.check("backfilld.yaml:" in e and "batch: true" in e and "Distributed" in e,
                "error: %r" % e)
        r = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True, text=True,
                           timeout=60, cwd=d.dir, env=d.env())
        e = h.one_line_error(r.returncode, r.stdout, r.stderr, 2,
                             "start with batch on a Distributed table")
        h.check("batch: true" in e and "Distributed" in e, "error: %r" % e)
    finally:
        for srv in srvs:
            srv.close()


def main():
    tc.start_server()
    h.main([test_timeout_ends_the_query, test_server_ends_an_orphan,
            test_two_daemons_one_server, test_wrong_password_not_retried,
            test_check_config_reaches_the_server, test_check_config_distributed])


if __name__ == "__main__":
    main()
