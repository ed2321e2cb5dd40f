#!/usr/bin/env python3
"""The idempotency proof (issue 18): `backfill ... --verify`, `verify JOB
PARTITION` and a job's `verify: true` run the job's SQL for the request's
first partition twice in one transaction, compare the partition after each
run (rows, order-independent checksum), roll back, and refuse the request
(exit 2, one line) when the second run changed it; a passing proof lets the
request run as usual.  Nothing is written by a proof."""
import json
import re
import sqlite3
import subprocess
import time

import harness as h

SEED = """
CREATE TABLE src (dt TEXT, v INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
INSERT INTO src SELECT d.dt, n.i FROM n,
  (SELECT '2026-01-01' AS dt UNION ALL SELECT '2026-01-02'
   UNION ALL SELECT '2026-01-05') d;
CREATE TABLE out (dt TEXT, v INTEGER);
CREATE TABLE outb (dt TEXT, v INTEGER);
CREATE TABLE counter (dt TEXT, v INTEGER);
INSERT INTO counter VALUES ('2026-01-01', 1), ('2026-01-01', 2);
"""

JOBS = """
- name: appender
  warehouse: w
  partition: day
  table: out
  partition_column: dt
  sql: INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: overwriter
  warehouse: w
  partition: day
  table: out
  partition_column: dt
  sql: |
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: incrementer
  warehouse: w
  partition: day
  table: counter
  partition_column: dt
  sql: UPDATE counter SET v = v + 1 WHERE dt = :partition;
- name: always_bad
  warehouse: w
  partition: day
  table: out
  partition_column: dt
  verify: true
  sql: INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: always_good
  warehouse: w
  partition: day
  table: out
  partition_column: dt
  verify: true
  sql: |
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: batch_bad
  warehouse: w
  partition: day
  batch: true
  table: outb
  partition_column: dt
  sql: |
    INSERT INTO outb (dt, v) SELECT s.dt, s.v FROM src s
    JOIN backfill_manifest m ON m.partition_key = s.dt;
- name: batch_good
  warehouse: w
  partition: day
  batch: true
  table: outb
  partition_column: dt
  sql: |
    DELETE FROM outb WHERE dt IN (SELECT partition_key FROM backfill_manifest);
    INSERT INTO outb (dt, v) SELECT s.dt, s.v FROM src s
    JOIN backfill_manifest m ON m.partition_key = s.dt;
- name: plain
  warehouse: w
  partition: day
  sql: DELETE FROM out WHERE dt = :partition;
- name: cmdjob
  partition: day
  command: ["/bin/true"]
"""

RANGE = ("--from", "2026-01-01", "--to", "2026-01-02")


def daemon(name):
    return h.Daemon(jobs=JOBS, warehouses={"w": SEED}, settings={"max_concurrency": 2},
                    name=name)


def refused(d, what, *args):
    rc, out, err = d.ctl(*args)
    return h.one_line_error(rc, out, err, 2, what)


def test_appending_job_refused():
    """--verify refuses an appending job with what changed; nothing runs,
    the warehouse and the runs are as before."""
    d = daemon("verifyappend")
    wh0 = d.wh_dump("w")
    e = refused(d, "backfill --verify of an appending job",
                "backfill", "appender", *RANGE, "--verify")
    h.check("30 -> 60" in e and "appends" in e and "appender" in e and "2026-01-01" in e,
            "the refusal does not say what changed: %r" % e)
    h.eq(d.wh_dump("w"), wh0, "warehouse after a refused proof")
    h.eq(d.runs(), [], "runs after a refused proof")
    # --reverse proves the newest partition first
    e = refused(d, "backfill --verify --reverse", "backfill", "appender", *RANGE,
                "--verify", "--reverse")
    h.check("2026-01-02" in e, "--reverse proves the first partition it runs: %r" % e)
    # a job whose second run changes the content, not the count
    e = refused(d, "verify of a job that reads what it wrote", "verify", "incrementer",
                "2026-01-01")
    h.check("content" in e and "2 rows" in e, "the content change is not named: %r" % e)
    h.eq(d.wh_dump("w"), wh0, "warehouse after refused proofs")
    d.stop()


def test_overwriting_job_passes_and_runs():
    """An overwriting job passes and its request runs as usual (--wait)."""
    d = daemon("verifyok")
    out = d.ok("backfill", "overwriter", *RANGE, "--verify", "--wait")
    h.check("idempotent" in out, "the proof's verdict is not shown:\n%s" % out)
    runs = d.runs()
    h.eq(sorted((r["partition"], r["state"]) for r in runs),
         [("2026-01-01", "succeeded"), ("2026-01-02", "succeeded")], "runs after the proof")
    h.eq(d.query("SELECT dt, COUNT(*) FROM out GROUP BY dt ORDER BY dt", wh="w"),
         [("2026-01-01", 30), ("2026-01-02", 30)], "partitions written once")
    # --json: the request's JSON alone
    r = d.json("backfill", "overwriter", "--from", "2026-01-05", "--to", "2026-01-05",
               "--verify")
    h.check(isinstance(r, dict) and r.get("request"), "backfill --verify --json: %r" % (r,))
    d.wait_request(r["request"])
    h.eq(d.query("SELECT COUNT(*) FROM out WHERE dt = '2026-01-05'", wh="w"), [(30,)],
         "the verified request ran")
    d.stop()


def test_verify_true_applies_to_every_request():
    """verify: true proves every request, --verify or not (rerun too)."""
    d = daemon("verifyalways")
    wh0 = d.wh_dump("w")
    e = refused(d, "backfill of a verify: true appending job", "backfill", "always_bad",
                *RANGE)
    h.check("30 -> 60" in e, "refusal of verify: true: %r" % e)
    refused(d, "rerun of a verify: true appending job", "rerun", "always_bad", "2026-01-01")
    h.eq(d.wh_dump("w"), wh0, "warehouse after refused requests")
    out = d.ok("backfill", "always_good", *RANGE, "--wait")
    h.check("verify always_good 2026-01-01: idempotent" in out,
            "verify: true did not prove the request:\n%s" % out)
    # a dry run only plans: no proof unless --verify
    out = d.ok("backfill", "always_bad", *RANGE, "--dry-run")
    h.check("verify" not in out, "a dry run ran the proof:\n%s" % out)
    refused(d, "dry run with --verify of an appending job", "backfill", "always_bad",
            *RANGE, "--dry-run", "--verify")
    d.stop()


def test_verify_command_alone():
    """verify JOB PARTITION: the proof only, in text and JSON."""
    d = daemon("verifycmd")
    wh0 = d.wh_dump("w")
    out = d.ok("verify", "overwriter", "2026-01-05")
    h.check("idempotent" in out and "30" in out, "verify's verdict:\n%s" % out)
    v = d.json("verify", "overwriter", "2026-01-05")
    h.eq((v["idempotent"], v["rows_before"], v["rows_first"], v["rows_second"]),
         (True, 0, 30, 30), "verify --json")
    h.eq(v["checksum_first"], v["checksum_second"], "checksums of an idempotent job")
    e = refused(d, "verify of an appending job", "verify", "appender", "2026-01-05")
    h.check("30 -> 60" in e, "verify refusal: %r" % e)
    # --json: the verdict on stdout, "idempotent": false, and the line on
    # stderr; exit 2 all the same
    rc, out, err = d.ctl("verify", "appender", "2026-01-05", "--json")
    h.eq(rc, 2, "verify --json of an appending job")
    v = json.loads(out)
    h.eq((v["job"], v["partition"], v["idempotent"], v["rows_before"], v["rows_first"],
          v["rows_second"]), ("appender", "2026-01-05", False, 0, 30, 60),
         "verify --json of an appending job")
    h.check(v["checksum_first"] != v["checksum_second"], "checksums differ: %r" % v)
    h.eq(len(err.splitlines()), 1, "one line on stderr: %r" % err)
    h.check("30 -> 60" in err, "the line says what changed: %r" % err)
    for k in ("checksum_first", "checksum_second"):
        h.check(re.fullmatch(r"[0-9a-f]{16}", v[k]), "%s is 16 hex digits: %r" % (k, v[k]))
    h.eq(d.wh_dump("w"), wh0, "warehouse after proofs")
    h.eq(d.runs(), [], "a proof is not a run")
    d.stop()


def test_batch_mode():
    """batch: true jobs are proved through a one-row backfill_manifest."""
    d = daemon("verifybatch")
    wh0 = d.wh_dump("w")
    e = refused(d, "batch appender", "backfill", "batch_bad", *RANGE, "--verify")
    h.check("30 -> 60" in e, "batch refusal: %r" % e)
    h.eq(d.wh_dump("w"), wh0, "warehouse after a refused batch proof")
    d.ok("backfill", "batch_good", *RANGE, "--verify", "--wait")
    h.eq(d.query("SELECT dt, COUNT(*) FROM outb GROUP BY dt ORDER BY dt", wh="w"),
         [("2026-01-01", 30), ("2026-01-02", 30)], "batch partitions after the proof")
    d.stop()


def test_reload_while_the_proof_runs():
    """The scheduler holds the plan while the proof runs and queues it
    when it passed: a reload meanwhile that moves the job in the list
    (a job added first) queues the request for the same job, by name."""
    d = daemon("verifyreload")
    lock = sqlite3.connect(d.warehouses["w"], isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")   # the proof waits for the warehouse
    argv = [d.backfillctl, "--socket", d.sock, "backfill", "overwriter", *RANGE,
            "--verify"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=d.env(), cwd=d.dir,
                         stdin=subprocess.DEVNULL)
    try:
        started = "event=verify job=overwriter partition=2026-01-01 result=started"
        deadline = time.monotonic() + 30
        while started not in open(d.log).read():
            h.check(time.monotonic() < deadline, "the proof did not start\n%s"
                    % d.log_tail())
            time.sleep(0.05)
        d.write_config(d.config_text.replace(
            "jobs:\n", "jobs:\n  - name: aaa_first\n    warehouse: w\n"
            "    partition: day\n    sql: DELETE FROM out WHERE 0;\n", 1))
        d.ok("reload")
    finally:
        lock.execute("COMMIT")
        lock.close()
    out, err = p.communicate(timeout=h.CTL_TIMEOUT)
    h.eq((p.returncode, err), (0, ""), "backfill --verify across a reload")
    m = re.search(r"request (\d+): queued 2 partitions of overwriter", out)
    h.check(m is not None, "the request queued after the proof:\n%s" % out)
    d.wait_request(int(m.group(1)))
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in d.runs()),
         [("overwriter", "2026-01-01", "succeeded"),
          ("overwriter", "2026-01-02", "succeeded")], "the runs of the request")
    d.stop()


def test_bad_inputs():
    """A job without table/partition_column, a command job, an unknown job or
    partition: exit 2 with one line."""
    d = daemon("verifybad")
    for args in (("verify", "plain", "2026-01-01"),
                 ("verify", "cmdjob", "2026-01-01"),
                 ("backfill", "plain") + RANGE + ("--verify",),
                 ("backfill", "cmdjob") + RANGE + ("--verify",),
                 ("verify", "nosuch", "2026-01-01"),
                 ("verify", "overwriter", "2026-13-01"),
                 ("verify", "overwriter")):
        e = refused(d, " ".join(args), *args)
        if args[1] == "plain":
            h.check("table" in e and "partition_column" in e, "%s: %r" % (args, e))
        if args[1] == "cmdjob":
            h.check("command job" in e, "%s: %r" % (args, e))
    h.eq(d.runs(), [], "runs after bad input")
    d.stop()


if __name__ == "__main__":
    h.main([test_appending_job_refused, test_overwriting_job_passes_and_runs,
            test_verify_true_applies_to_every_request, test_verify_command_alone,
            test_batch_mode, test_reload_while_the_proof_runs, test_bad_inputs])
