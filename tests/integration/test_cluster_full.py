#!/usr/bin/env python3
"""Several hosts on a state database whose filesystem fills up (issue 25).

The state database lives in a tablespace on a small tmpfs that the test
mounts (40 MiB; root only: skipped, exit 77, otherwise) and fills in the
middle of a backfill of three nodes.  While it is full:
  - no node restarts in place (a restart needs a probe that extends a
    table of the database by 16 MiB to commit, store_pg.c);
  - each node logs at most MAX_LINES_PER_S lines a second besides the
    lines of runs it starts and ends (a planner whose own commits still
    fit runs on for a while, and says so per run), and the
    database serves at most MAX_XACTS_PER_S transactions a second for
    all of them together (pg_stat_database: xact_commit + xact_rollback
    of the state database; three idle nodes make a few);
  - `status` on every node, the planner's and forwarded ones alike,
    answers (exit 0) within STATUS_BOUND seconds, naming the store;
  - every node stays up, the same process.
Once the filler is removed, the nodes resume by themselves and every
partition of the request succeeds exactly once.

The store's retry interval starts at 1 s for the test
(BACKFILLD_TEST_STORE_RETRY_MS) and doubles, as it does from 10 s.
"""
import os
import pwd
import re
import subprocess
import sys
import time

import harness as h
import test_postgres as tp
import test_cluster as tc

SIZE = "40M"
FULL_FOR = 15.0         # seconds measured while full
MAX_LINES_PER_S = 5.0   # per node
# all nodes together; most of it is the test's own `status` on each node
# every second (a forwarded one goes through the store's mailbox) and the
# heartbeats: measured 40 to 63 under load, where a retry storm would make
# thousands
MAX_XACTS_PER_S = 100.0
STATUS_BOUND = tc.LEASE + 2 + 3.0
# a run's own lines: as many as the runs, not noise about the store
PROGRESS = re.compile(r"info: job=\S+ partition=\S+ (request=\d+ run=\d+ attempt=\d+ started"
                      r"|request=\d+ run=\d+ succeeded in|run=\d+ attempt=\d+ claimed by)")


def fill(path):
    """Fill the filesystem at path, leaving nothing free; returns the
    filler's path."""
    p = os.path.join(path, "filler")
    with open(p, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    return p


def xacts(state):
    return state.sql("SELECT xact_commit + xact_rollback FROM pg_stat_database"
                     " WHERE datname = '%s'" % state.db, db="postgres")[0][0]


def log_size(d):
    with open(d.log, errors="replace") as f:
        return len(f.read())


def test_full_store():
    if os.geteuid() != 0:
        print("SKIP: mounting a tmpfs for the state database needs root")
        raise SystemExit(h.SKIP)
    pg = tp.cluster()
    ts = os.path.join(pg.dir, "full_ts")
    os.mkdir(ts)
    pw = pwd.getpwnam("postgres")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,uid=%d,gid=%d,mode=0700"
                        % (SIZE, pw.pw_uid, pw.pw_gid), "tmpfs", ts],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("SKIP: cannot mount a tmpfs: %s" % r.stderr.strip())
        raise SystemExit(h.SKIP)
    os.environ["BACKFILLD_TEST_STORE_RETRY_MS"] = "1000"
    state = None
    try:
        pg.psql("CREATE TABLESPACE full_ts LOCATION '%s'" % ts, db="postgres")
        state = tc.SharedState(pg.bindir, pg.sockdir, tp.PORT, pg.pwfile, "full_state")
        state.sql("ALTER DATABASE full_state SET TABLESPACE full_ts", db="postgres")
        c = tc.Nodes(tc.cmd_job("work", concurrency=6, sleep="0.2"), state=state)
        pids = {n: d.proc.pid for n, d in c.nodes.items()}
        parts = h.days("2025-01-01", "2025-10-31")
        req = tc.backfill(c["n2"], "work", parts[0], parts[-1])
        c.wait_until(lambda: len(c.executions()) >= 10, "10 executions")
        marks = {n: log_size(d) for n, d in c.nodes.items()}
        filler = fill(ts)
        print("  %s filled (%d MiB of filler)" % (ts, os.path.getsize(filler) >> 20))

        def failing():
            for d in c.nodes.values():
                with open(d.log, errors="replace") as f:
                    if "No space left on device" in f.read()[marks[d.node_name]:]:
                        return True
            return False
        c.wait_until(failing, "a node saying No space left on device", guard=90)
        t0 = time.monotonic()
        x0 = xacts(state)
        start = {n: log_size(d) for n, d in c.nodes.items()}
        slowest = 0.0
        while time.monotonic() - t0 < FULL_FOR:
            for name, d in c.nodes.items():
                d.assert_alive("while the state store is full")
                a = time.monotonic()
                rc, out, err = d.ctl("status", timeout=STATUS_BOUND + 30)
                took = time.monotonic() - a
                slowest = max(slowest, took)
                h.eq(rc, 0, "status on %s while full: %s%s" % (name, out, err))
                h.check(took <= STATUS_BOUND, "status on %s took %.1f s while full"
                        % (name, took))
                h.check("runs kept" in out, "status on %s while full:\n%s" % (name, out))
            time.sleep(1.0)
        elapsed = time.monotonic() - t0
        time.sleep(1.0)   # the servers' statistics of the last second
        x1 = xacts(state)
        print("  while full for %.1f s: %.1f transactions/s; slowest status %.2f s"
              % (elapsed, (x1 - x0) / elapsed, slowest))
        h.check((x1 - x0) / elapsed <= MAX_XACTS_PER_S,
                "%d transactions in %.1f s while full" % (x1 - x0, elapsed))
        for name, d in c.nodes.items():
            with open(d.log, errors="replace") as f:
                text = f.read()
            window = text[start[name]:]
            lines = len([ln for ln in window.splitlines() if not PROGRESS.search(ln)])
            print("  %s: %d lines in %.1f s" % (name, lines, elapsed))
            h.check(lines <= MAX_LINES_PER_S * (elapsed + 1.0),
                    "%s logged %d lines in %.1f s while full:\n%s"
                    % (name, lines, elapsed, window[-3000:]))
            h.check("restarting in place" not in text[marks[name]:],
                    "%s restarted in place while the store was full:\n%s"
                    % (name, text[marks[name]:][-3000:]))
        os.unlink(filler)
        t1 = time.monotonic()
        via = c["n2"]

        def finished():
            rs = via.try_json("runs", "--request", str(req))
            return rs is not None and len(rs) > 0 and not any(
                r["state"] in ("queued", "running") for r in rs)
        c.wait_until(finished, "request %d finished once space was freed" % req, guard=180)
        print("  finished %.1f s after the space was freed" % (time.monotonic() - t1))
        tc.succeeded_once(via, req, [("work", p) for p in parts])
        h.eq(sorted(set(e["partition"] for e in c.executions())), parts,
             "partitions executed")
        for name, d in c.nodes.items():
            d.assert_alive("after the store was freed")
            h.eq(d.proc.pid, pids[name], "the process of %s" % name)
        for d in c.nodes.values():
            d.stop()
    finally:
        if state is not None:
            try:
                state.sql("DROP DATABASE IF EXISTS full_state WITH (FORCE)", db="postgres")
                state.sql("DROP TABLESPACE IF EXISTS full_ts", db="postgres")
            except h.StateError as e:
                print("  cleanup: %s" % e)
        subprocess.run(["umount", "-l", ts])


def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(test_full_store)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
