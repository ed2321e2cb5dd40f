#!/usr/bin/env python3
"""test_logs.py - backfillctl logs JOB PARTITION [--attempt N] [--follow]
(docs/logs.md).

A command run's output, streamed by the daemon: the newest attempt, an
earlier one with --attempt, a 3 MiB log whole and in order (paged by the
daemon), read by a user who cannot read the log folder (nobody, through
a world-writable socket, when the test runs as root).  --follow prints
what a running command wrote so far at once, goes on while it runs, and
returns 0 when the run ends (the command waits for a file the test
creates: no sleep stands in for the order).  A SQL run's answer is its
state, its error, the statement the error names and that statement's
line.  A partition never run, one only queued, and an attempt that does
not exist are each refused with one line and exit 2.
"""
import os
import subprocess
import time

import harness as h

GUARD = 30.0

JOBS = """
- name: cmd
  partition: day
  catchup: false
  retries: 1
  retry_backoff: 1s
  command: ["sh", "-c", "echo out {partition} attempt $BACKFILLD_ATTEMPT; test $BACKFILLD_ATTEMPT = 2"]
- name: big
  partition: day
  catchup: false
  command: ["sh", "-c", "i=0; while [ $i -lt 30000 ]; do echo line $i %(pad)s; i=$((i+1)); done"]
- name: follow
  partition: day
  catchup: false
  command: ["sh", "-c", "echo started; while [ ! -e %(go)s ]; do sleep 0.05; done; echo finished"]
- name: slow
  partition: day
  catchup: false
  concurrency: 1
  command: ["sh", "-c", "while [ ! -e %(go)s ]; do sleep 0.05; done"]
- name: sql
  warehouse: w
  partition: day
  catchup: false
  retries: 0
  sql: |
    DELETE FROM t WHERE dt = :partition;

    INSERT INTO missing_table VALUES (:partition);
- name: sqlok
  warehouse: w
  partition: day
  catchup: false
  sql: INSERT INTO t VALUES (:partition)
"""

PAD = "x" * 90


def test_logs():
    go = os.path.join(os.environ.get("TMPDIR", "/tmp"), "bfd-logs-go-%d" % os.getpid())
    if os.path.exists(go):
        os.unlink(go)
    d = h.Daemon(jobs=JOBS % {"pad": PAD, "go": go}, name="logs",
                 warehouses={"w": "CREATE TABLE t (dt TEXT);"}, clock=None)
    try:
        run_test(d, go)
    finally:
        if os.path.exists(go):
            os.unlink(go)


def run_test(d, go):
    rc, out, err = d.ctl("logs", "cmd", "2026-02-01")
    e = h.one_line_error(rc, out, err, 2, "logs of a partition never run")
    h.check("cmd 2026-02-01 has never run" in e, e)

    d.wait_request(d.enqueue("backfill", "cmd", "--from", "2026-02-01", "--to", "2026-02-01"))
    h.eq(d.ok("logs", "cmd", "2026-02-01"), "out 2026-02-01 attempt 2\n", "the newest attempt")
    h.eq(d.ok("logs", "cmd", "2026-02-01", "--attempt", "1"), "out 2026-02-01 attempt 1\n",
         "attempt 1")
    rc, out, err = d.ctl("logs", "cmd", "2026-02-01", "--attempt", "3")
    e = h.one_line_error(rc, out, err, 2, "an attempt that does not exist")
    h.check("has no attempt 3: its newest is attempt 2" in e, e)
    rc, out, err = d.ctl("logs", "nope", "2026-02-01")
    h.one_line_error(rc, out, err, 2, "an unknown job")
    rc, out, err = d.ctl("logs", "cmd", "2026-02-30")
    h.one_line_error(rc, out, err, 2, "a bad key")

    # a large log: whole, in order, through the daemon's pages
    d.wait_request(d.enqueue("backfill", "big", "--from", "2026-02-01", "--to", "2026-02-01"))
    out = d.ok("logs", "big", "2026-02-01")
    want = "".join("line %d %s\n" % (i, PAD) for i in range(30000))
    h.eq(len(out), len(want), "bytes of the big log")
    h.check(out == want, "the big log, in order")

    # no access to the log folder needed: nobody reads it through the socket
    try:
        import test_permissions as tp
        nobody = os.geteuid() == 0 and tp.as_nobody_argv() is not None
    except Exception:
        nobody = False
    if nobody:
        os.chmod(d.dir, 0o755)
        os.chmod(os.path.join(d.dir, "logs"), 0o700)
        os.chmod(d.sock, 0o666)
        rc, out, err = tp.ctl_nobody(d, "logs", "cmd", "2026-02-01")
        h.eq((rc, out), (0, "out 2026-02-01 attempt 2\n"), "logs as nobody: %r" % err)
        p = subprocess.run(tp.as_nobody_argv() + ["cat", os.path.join(
            d.dir, "logs", "cmd", "2026-02-01.2.log")], capture_output=True)
        h.check(p.returncode != 0, "nobody cannot read the file itself")

    # a queued partition: not run yet
    slow_req = d.enqueue("backfill", "slow", "--from", "2026-02-01", "--to", "2026-02-02")
    wait_running(d, "slow")
    rc, out, err = d.ctl("logs", "slow", "2026-02-02")
    e = h.one_line_error(rc, out, err, 2, "logs of a queued partition")
    h.check("is queued and has not run yet" in e, e)

    # --follow: what it wrote so far, then the rest, then the end
    req = d.enqueue("backfill", "follow", "--from", "2026-02-01", "--to", "2026-02-01")
    wait_running(d, "follow")
    p = subprocess.Popen([d.backfillctl, "--socket", d.sock, "logs", "follow", "2026-02-01",
                          "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=d.env(), text=True)
    try:
        first = p.stdout.readline()
        h.eq(first, "started\n", "--follow prints what the run wrote so far")
        h.check(p.poll() is None, "--follow goes on while the run runs")
        open(go, "w").close()
        rest, err = p.communicate(timeout=GUARD)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    h.eq(p.returncode, 0, "--follow's exit once the run ended: %r" % err)
    h.eq(rest, "finished\n", "--follow prints the rest")
    h.eq(d.wait_request(req).get("succeeded"), "1", "the followed run")
    h.eq(d.ok("logs", "follow", "2026-02-01", "--follow"), "started\nfinished\n",
         "--follow on a finished run: the log, and the end")
    d.wait_request(slow_req)

    # SQL runs: the error, the statement it names and its line
    d.wait_request(d.enqueue("backfill", "sql", "--from", "2026-02-01", "--to", "2026-02-01"))
    out = d.ok("logs", "sql", "2026-02-01")
    ls = out.split("\n")
    h.check(ls[0].startswith("sql 2026-02-01 run ") and ls[0].endswith("attempt 1): failed"),
            out)
    h.eq(ls[1], "error: statement 2 failed: no such table: missing_table", out)
    h.eq(ls[2], "statement 2, line 3 of sql's SQL:", out)
    h.eq(ls[3], "INSERT INTO missing_table VALUES (:partition)", out)
    d.wait_request(d.enqueue("backfill", "sqlok", "--from", "2026-02-01", "--to", "2026-02-01"))
    out = d.ok("logs", "sqlok", "2026-02-01")
    h.check(out.startswith("sqlok 2026-02-01 run ") and out.endswith("): succeeded\n"), out)
    d.stop()


def wait_running(d, job):
    deadline = time.monotonic() + GUARD
    while d.status(job)[job]["running"] < 1:
        h.check(time.monotonic() < deadline, "%s never ran" % job)
        time.sleep(0.02)


if __name__ == "__main__":
    h.main([test_logs])
