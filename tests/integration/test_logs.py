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

Logs by run (test_logs_by_run): three requests of one partition each have
their own log (named by run id), `logs` prints the newest run's alone and
`--attempt N` the attempt of the newest request; `--attempt 4294967297`
is refused (out of range), not read as attempt 1; one execution serving
two requests has one log; once keep_runs prunes the older runs, their
logs are deleted with them and the newest stays; a log of the older
naming (PARTITION.ATTEMPT.log) is still read.
"""
import datetime
import glob
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
        files = glob.glob(os.path.join(d.dir, "logs", "cmd", "2026-02-01.run-*.log"))
        h.eq(len(files), 2, "one log per run of cmd 2026-02-01: %r" % files)
        p = subprocess.run(tp.as_nobody_argv() + ["cat", files[0]], capture_output=True)
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


BY_RUN = """
- name: each
  partition: day
  catchup: false
  keep_runs: 1h
  retries: 1
  retry_backoff: 1s
  command: ["sh", "-c", "n=$(cat %(count)s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %(count)s; echo run $n attempt $BACKFILLD_ATTEMPT; test $BACKFILLD_ATTEMPT = 2"]
- name: shared
  partition: day
  catchup: false
  command: ["sh", "-c", "echo shared {partition}"]
"""


def test_logs_by_run():
    day0 = datetime.datetime(2026, 3, 1)
    count = os.path.join(os.environ.get("TMPDIR", "/tmp"), "bfd-logs-count-%d" % os.getpid())
    if os.path.exists(count):
        os.unlink(count)
    d = h.Daemon(jobs=BY_RUN % {"count": count}, name="logsrun",
                 clock=day0.strftime("%Y-%m-%dT%H:%M:%SZ"))
    try:
        folder = os.path.join(d.dir, "logs", "each")
        # three requests of one partition, each two attempts (the retry is
        # due once the test clock passes its backoff)
        now = day0
        for i in range(3):
            req = d.enqueue("backfill", "each", "--from", "2026-02-01", "--to", "2026-02-01")
            deadline = time.monotonic() + GUARD
            while not [r for r in d.runs("--request", req) if r["state"] == "failed"]:
                h.check(time.monotonic() < deadline, "attempt 1 of request %s (guard)" % req)
                time.sleep(0.02)
            now += datetime.timedelta(seconds=5)
            d.set_clock(now.strftime("%Y-%m-%dT%H:%M:%SZ"))
            d.wait_request(req)
        runs = sorted(r["id"] for r in d.runs("--job", "each"))
        h.eq(len(runs), 6, "runs of each 2026-02-01")
        files = sorted(glob.glob(os.path.join(folder, "2026-02-01.run-*.log")))
        h.eq(sorted(int(f.rsplit("run-", 1)[1][:-4]) for f in files), runs,
             "one log per run, named by its run id")
        h.eq(d.ok("logs", "each", "2026-02-01"), "run 6 attempt 2\n",
             "logs: the newest run alone, not every request's")
        h.eq(d.ok("logs", "each", "2026-02-01", "--attempt", "1"), "run 5 attempt 1\n",
             "--attempt 1: of the newest request")
        # out of range: refused, never read modulo 2^32 as attempt 1
        for bad in ("4294967297", "2147483648", "999999999999999999"):
            rc, out, err = d.ctl("logs", "each", "2026-02-01", "--attempt", bad)
            e = h.one_line_error(rc, out, err, 2, "--attempt %s" % bad)
            h.check("--attempt %s is out of range" % bad in e, e)
        rc, out, err = d.ctl("logs", "each", "2026-02-01", "--attempt", "2147483647")
        e = h.one_line_error(rc, out, err, 2, "--attempt 2147483647")
        h.check("has no attempt 2147483647: its newest is attempt 2" in e, e)

        # one run serving two requests: one log, named by the id runs shows
        d.ok("pause", "shared")
        r1 = d.enqueue("backfill", "shared", "--from", "2026-02-01", "--to", "2026-02-01")
        r2 = d.enqueue("backfill", "shared", "--from", "2026-02-01", "--to", "2026-02-01")
        d.ok("resume", "shared")
        for r in (r1, r2):
            d.wait_request(r)
        ids = {r["id"] for r in d.runs("--job", "shared")}
        h.eq(len(ids), 1, "one run id shown for the two requests: %r" % ids)
        files = glob.glob(os.path.join(d.dir, "logs", "shared", "*.log"))
        h.eq([os.path.basename(f) for f in files], ["2026-02-01.run-%d.log" % ids.pop()],
             "the shared run's one log")
        h.eq(d.ok("logs", "shared", "2026-02-01"), "shared 2026-02-01\n", "logs of a shared run")

        # a day later keep_runs (1h) prunes the older runs: their logs go too
        d.set_clock((day0 + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        deadline = time.monotonic() + GUARD
        while True:
            kept = sorted(r["id"] for r in d.runs("--job", "each"))
            files = sorted(glob.glob(os.path.join(folder, "*.log")))
            names = sorted(int(f.rsplit("run-", 1)[1][:-4]) for f in files)
            if len(kept) < len(runs) and names == kept:
                break
            h.check(time.monotonic() < deadline,
                    "logs left %r, runs kept %r of %r (guard)" % (names, kept, runs))
            time.sleep(0.05)
        h.check(runs[-1] in kept, "the newest run is kept: %r" % kept)
        h.eq(d.ok("logs", "each", "2026-02-01"), "run 6 attempt 2\n", "logs after pruning")
        # a log written before logs were named by run is still read
        os.rename(os.path.join(folder, "2026-02-01.run-%d.log" % runs[-1]),
                  os.path.join(folder, "2026-02-01.2.log"))
        h.eq(d.ok("logs", "each", "2026-02-01"), "run 6 attempt 2\n",
             "logs of a run whose log has the old name")
        d.assert_alive("after pruning")
        d.stop()
    finally:
        if os.path.exists(count):
            os.unlink(count)


if __name__ == "__main__":
    h.main([test_logs, test_logs_by_run])
