#!/usr/bin/env python3
"""Several hosts when the state database goes away, and what every node
says (issue 25), against the contract of docs/several-hosts.md.

Nodes as in test_cluster.py (its Nodes, run.sh and checks), on a
throwaway PostgreSQL server of this test process.

What it checks:
  - the database stopped (pg_ctl stop -m fast) for longer than the lease
    in the middle of a backfill: every node stays up (the same process:
    a restart in place keeps the pid), its socket answers `status`
    throughout, naming the state store (its database, no password) and
    the error; the deposed planner says it restarts in place once the
    store can be written, never "cannot start"; the nodes log a bounded
    number of lines while they wait; once the database is back the
    backfill resumes and every partition succeeds once;
  - `verify JOB PARTITION` (text and --json), `backfill --verify` (with
    and without --dry-run), and `backfill` / `rerun` of a `verify: true`
    job sent to a node that is not the planner answer exactly what the
    planner answers, refusals included, and what they queue runs;
  - `runs kept` and the per-job counts of `status` are the store's on
    every node, before and after the planner is killed and another takes
    over, and after the new planner has run more.
"""
import json
import os
import re
import subprocess
import sys
import time

import harness as h
import test_postgres as tp
import test_cluster as tc

OUTAGE = 5.0      # seconds the database is down: more than the lease
LEASE = 2
# While the database is down, a node logs what changes (lost, deposed,
# back) and retries on timers (a heartbeat a third of the lease, the
# store every 10 s and more): never this many lines a second.
MAX_LINES_PER_S = 5.0


def log_size(d):
    with open(d.log, errors="replace") as f:
        return len(f.read())


def log_since(d, mark):
    with open(d.log, errors="replace") as f:
        return f.read()[mark:]


def status_json(d):
    rj, oj, ej = d.ctl("status", "--json", timeout=20)
    st = None
    if rj == 0:
        try:
            st = json.loads(oj)
        except ValueError:
            h.fail("status --json on %s printed no JSON: %r" % (d.node_name, oj))
    return rj, st


def store_said(c, d):
    """(rc, text, json) of status on node d; the json's from_memory is
    kept only when --json said so both before and after the text (the
    node may start or stop answering from memory between two calls)."""
    _, before = status_json(d)
    rc, out, err = d.ctl("status", timeout=20)
    rj, st = status_json(d)
    if st is not None and (before is None or before.get("from_memory") is None):
        st = dict(st, from_memory=None)
    return rc, out + err, rj, st


def test_store_down():
    c = tc.Nodes(tc.cmd_job("work", concurrency=4), names=("n1", "n2"), lease=LEASE)
    pg = tp.cluster()
    planner = c.planner(c["n1"])
    pids = {n: d.proc.pid for n, d in c.nodes.items()}
    parts = h.days("2025-03-01", "2025-03-24")
    req = tc.backfill(c[planner], "work", parts[0], parts[-1])
    c.wait_until(lambda: len(c.executions()) >= 3, "3 executions before the outage")
    marks = {n: log_size(d) for n, d in c.nodes.items()}
    pg.stop()
    t0 = time.monotonic()
    dbname = "dbname=%s" % c.state.db
    answers = 0
    memory = {}
    try:
        while time.monotonic() - t0 < OUTAGE:
            time.sleep(0.3)
            if time.monotonic() - t0 < 1.5:
                continue   # a heartbeat or a commit finds the loss first
            for name, d in c.nodes.items():
                d.assert_alive("while the database is down")
                rc, text, rj, st = store_said(c, d)
                h.eq((rc, rj), (0, 0), "status (text, --json) exit on %s while the"
                     " database is down: %s" % (name, text))
                h.check(re.search(r"state store PostgreSQL host=\S+ port=\d+ %s "
                                  r"(lost|cannot be written) since " % dbname, text),
                        "status on %s does not name the store and its state:\n%s"
                        % (name, text))
                h.check("(null)" not in text and "filesystem" not in text,
                        "status on %s: %s" % (name, text))
                if st["from_memory"] is not None:
                    h.check(text.startswith("this node answers from its own memory, not"
                                            " the planner's: "), text)
                    memory[name] = st
                s = st["store"]
                h.check(s["state"] in ("lost", "failed") and s["error"] and s["since"]
                        and dbname in s["name"] and "password" not in s["name"],
                        "status --json store on %s: %r" % (name, s))
                answers += 1
    finally:
        down = time.monotonic() - t0
        back = {n: log_size(d) for n, d in c.nodes.items()}
        pg.start()
    # the deposed planner tries its store as soon as it reaches the
    # database again, not at its next retry (10 s after the failure)
    t1 = time.monotonic()
    c.wait_until(lambda: "restarting in place to resume" in
                 log_since(c[planner], marks[planner]),
                 "the planner %s restarting in place" % planner, guard=30)
    print("  %s restarted in place %.1f s after the database was back"
          % (planner, time.monotonic() - t1))
    h.check(time.monotonic() - t1 < 6.0, "the planner restarted %.1f s after the"
            " database was back" % (time.monotonic() - t1))
    print("  database down %.1f s; %d status answers during it" % (down, answers))
    h.check(answers >= 2 * len(c.nodes), "too few status answers while down")
    worker = [n for n in c.nodes if n != planner][0]
    h.check(worker in memory, "%s never answered from its own memory while down" % worker)
    h.eq({j["name"]: (j["queued"], j["succeeded"]) for j in memory[worker]["jobs"]},
         {"work": (None, None)}, "counts of %s, never the planner, from its memory" % worker)
    # the backfill resumes and completes
    via = c[[n for n in c.nodes if n != planner][0]]
    c.wait_view(list(c.nodes), via=via)

    def finished():
        rs = via.try_json("runs", "--request", str(req))
        return rs is not None and len(rs) > 0 and not any(
            r["state"] in ("queued", "running") for r in rs)
    c.wait_until(finished, "request %d finished after the outage" % req, guard=120)
    tc.succeeded_once(via, req, [("work", p) for p in parts])
    h.eq(sorted(set(e["partition"] for e in c.executions() if e["job"] == "work")),
         parts, "partitions executed")
    for name, d in c.nodes.items():
        d.assert_alive("after the outage")
        h.eq(d.proc.pid, pids[name], "the process of %s (a restart in place keeps it)"
             % name)
        with open(d.log, errors="replace") as f:
            waiting = f.read()[marks[name]:back[name]]
        lines = waiting.count("\n")
        print("  %s logged %d lines in the %.1f s the database was down"
              % (name, lines, down))
        h.check(lines <= MAX_LINES_PER_S * down,
                "%s logged %d lines in %.1f s:\n%s" % (name, lines, down, waiting[-3000:]))
        said = log_since(d, marks[name])
        h.check(not re.search(r"(error|err): cannot start: ", said),
                "%s tried to start and could not:\n%s"
                % (name, said[-3000:]))
    said = log_since(c[planner], marks[planner])
    h.check("restarts in place as a worker once the store can be written" in said,
            "the planner %s did not wait for the store to restart:\n%s"
            % (planner, said[-3000:]))
    h.check(said.index("restarts in place as a worker once") <
            said.index("restarting in place to resume"),
            "the planner %s restarted before the store was back:\n%s"
            % (planner, said[-3000:]))
    waited = said[said.index("restarts in place as a worker once"):
                  said.index("restarting in place to resume")]
    h.check("is planner, generation" not in waited,
            "the deposed planner %s took the lease again while it waited:\n%s"
            % (planner, waited))
    # and the nodes work on
    more = h.days("2025-04-01", "2025-04-10")
    req = tc.backfill(c[planner], "work", more[0], more[-1])
    c[planner].wait_request(req)
    tc.succeeded_once(via, req, [("work", p) for p in more])


def test_start_while_down():
    """A node started while the database is down starts (READY=1), answers
    status from its memory naming the store, and once the database is
    back joins, plans and runs."""
    c = tc.Nodes(tc.cmd_job("work", concurrency=2), names=(), lease=LEASE)
    pg = tp.cluster()
    # the store's tables exist (a node ran once), then the database stops
    n1 = c.add("n1")
    c.wait_view(["n1"])
    c.settle()
    n1.stop()
    pg.stop()
    try:
        n1.start()
        pid = n1.proc.pid
        rc, text, rj, st = store_said(c, n1)
        h.eq((rc, rj), (0, 0), "status while the database is down: %s" % text)
        h.check(text.startswith("this node answers from its own memory") and
                re.search(r"state store PostgreSQL host=\S+ port=\d+ dbname=%s lost since "
                          % c.state.db, text), "status of a node started while the"
                " database is down:\n%s" % text)
        h.eq(st["store"]["state"], "lost", "store state in status --json")
        # the calendars' check could not read the store: said, not fatal
        # (docs/configuration.md, "A zone is part of a job's keys")
        h.check("the jobs' calendars were not checked against their built partitions"
                in open(n1.log).read(), "no warning of the calendars not checked")
    finally:
        pg.start()
    c.wait_view(["n1"], guard=60)
    n1.assert_alive("once the database is back")
    h.eq(n1.proc.pid, pid, "the process of n1")
    parts = h.days("2025-05-01", "2025-05-06")
    req = tc.backfill(n1, "work", parts[0], parts[-1])
    n1.wait_request(req)
    tc.succeeded_once(n1, req, [("work", p) for p in parts])


def test_planner_before_store():
    """A node started while the database is down that takes the lease
    when it is back before its state store's own connection was ever
    made: that first connection migrates and counts under the planner's
    fence, and the node takes backfills at once (seen in
    test_cluster_chaos: the first connection's schema check committed
    with the fence before its statements were prepared, failed as a lost
    connection, and so did every probe after it: requests were refused
    for minutes)."""
    c = tc.Nodes(tc.cmd_job("work", concurrency=2), names=(), lease=LEASE)
    pg = tp.cluster()
    n1 = c.add("n1")
    c.wait_view(["n1"])
    c.settle()
    n1.stop()
    pg.stop()
    try:
        n1.start()   # no command until it plans: the store stays unconnected
    finally:
        pg.start()
    c.wait_until(lambda: "this node is now planner" in open(n1.log).read(),
                 "n1 takes the lease once the database is back", guard=60)
    parts = h.days("2025-06-01", "2025-06-03")
    end = time.monotonic() + 15
    while True:
        rc, out, err = n1.ctl("backfill", "work", "--from", parts[0], "--to", parts[-1])
        if rc == 0:
            break
        h.check(time.monotonic() < end, "n1 refuses backfills 15 s after it took"
                " the lease: exit %d: %s%s" % (rc, out, err))
        time.sleep(0.5)
    m = re.search(r"[Rr]equest\D{0,4}(\d+)", out)
    h.check(m, "backfill printed no request: %r" % out)
    n1.wait_request(int(m.group(1)))
    tc.succeeded_once(n1, int(m.group(1)), [("work", p) for p in parts])


SEED = """
CREATE TABLE src (dt TEXT, v INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
INSERT INTO src SELECT d.dt, n.i FROM n,
  (SELECT '2026-01-01' AS dt UNION ALL SELECT '2026-01-02'
   UNION ALL SELECT '2026-01-05') d;
CREATE TABLE out (dt TEXT, v INTEGER);
"""

VERIFY_JOBS = """
- name: appender
  warehouse: w
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  table: out
  partition_column: dt
  sql: INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: overwriter
  warehouse: w
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  table: out
  partition_column: dt
  sql: |
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: always_bad
  warehouse: w
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  table: out
  partition_column: dt
  verify: true
  sql: INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: always_good
  warehouse: w
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  table: out
  partition_column: dt
  verify: true
  sql: |
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition;
- name: slow
  warehouse: w
  partition: day
  start: 2026-01-01
  end: 2026-01-31
  table: out
  partition_column: dt
  sql: |
    DELETE FROM out WHERE dt = :partition;
    INSERT INTO out (dt, v) SELECT dt, v FROM src WHERE dt = :partition
      AND (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
           WHERE i < 20000000) SELECT count(*) FROM n) > 0;
"""


def norm(text):
    """An answer with its request ids left out (each request has its own)."""
    return re.sub(r"(?i)(request\D{0,4})\d+", r"\1N", text)


def test_forwarded_verify():
    c = tc.Nodes(VERIFY_JOBS, names=("n1", "n2"), clock="2026-01-01T00:00:00Z",
                 warehouses={"w": SEED})
    p = c.planner(c["n1"])
    planner, worker = c[p], c[[n for n in c.nodes if n != p][0]]
    same = [
        ("verify", "overwriter", "2026-01-05"),
        ("verify", "overwriter", "2026-01-05", "--json"),
        ("verify", "appender", "2026-01-05"),
        ("verify", "appender", "2026-01-05", "--json"),
        ("backfill", "overwriter", "--from", "2026-01-01", "--to", "2026-01-02",
         "--verify", "--dry-run"),
        ("backfill", "appender", "--from", "2026-01-01", "--to", "2026-01-02",
         "--verify", "--dry-run"),
        ("backfill", "appender", "--from", "2026-01-01", "--to", "2026-01-02", "--verify"),
        ("backfill", "always_bad", "--from", "2026-01-01", "--to", "2026-01-02"),
        ("rerun", "always_bad", "2026-01-01"),
        ("backfill", "always_bad", "--from", "2026-01-01", "--to", "2026-01-02",
         "--dry-run"),
    ]
    for args in same:
        got = [d.ctl(*args) for d in (planner, worker)]
        print("  %s: exit %d; %r" % (" ".join(args), got[1][0],
                                     (got[1][1] + got[1][2]).strip()[:100]))
        h.check((got[1][1] + got[1][2]).strip() != "",
                "%s on the worker printed nothing (exit %d)" % (" ".join(args), got[1][0]))
        h.eq(got[1], got[0], "%s on the worker %s against the planner %s"
             % (" ".join(args), worker.node_name, p))
    # what queues after a proof is queued through the worker too
    for args in (("backfill", "overwriter", "--from", "2026-01-01", "--to", "2026-01-02",
                  "--verify"),
                 ("backfill", "always_good", "--from", "2026-01-01", "--to", "2026-01-02"),
                 ("rerun", "always_good", "2026-01-05")):
        got = [d.ctl(*args) for d in (planner, worker)]
        h.eq(got[0][0], 0, "%s on the planner: %r" % (" ".join(args), got[0]))
        h.eq((got[1][0], norm(got[1][1]), got[1][2]), (got[0][0], norm(got[0][1]), got[0][2]),
             "%s on the worker against the planner" % " ".join(args))
        h.check("idempotent" in got[1][1], "%s on the worker shows no proof: %r"
                % (" ".join(args), got[1][1]))
        reqs = [int(m) for m in re.findall(r"(?i)request\D{0,4}(\d+)", got[1][1])]
        h.check(reqs, "%s on the worker names no request: %r" % (" ".join(args), got[1][1]))
        planner.wait_request(reqs[0])
        runs = worker.runs("--request", str(reqs[0]))
        h.check(runs and all(r["state"] == "succeeded" for r in runs),
                "request %d queued through the worker: %r" % (reqs[0], runs))
    # --wait through the worker
    out = worker.ok("backfill", "always_good", "--from", "2026-01-05", "--to",
                    "2026-01-05", "--wait")
    h.check("idempotent" in out and re.search(r"1 succeeded", out),
            "backfill --wait of a verify: true job through the worker:\n%s" % out)


def test_forward_planner_dies():
    """A forwarded proof whose planner is killed while it runs: the node
    says so within the lease and a few heartbeats, exit 3, instead of
    waiting out the proof's allowance."""
    c = tc.Nodes(VERIFY_JOBS, names=("n1", "n2"), clock="2026-01-01T00:00:00Z",
                 warehouses={"w": SEED})
    p = c.planner(c["n1"])
    planner, worker = c[p], c[[n for n in c.nodes if n != p][0]]
    mark = len(tc.log_of(planner))
    proc = subprocess.Popen([worker.backfillctl, "--socket", worker.sock, "verify", "slow",
                             "2026-01-05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=worker.env())
    try:
        c.wait_until(lambda: "event=verify job=slow partition=2026-01-05 result=started"
                     in tc.log_of(planner)[mark:], "the planner %s proving slow" % p)
        planner.kill9()
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=tc.TAKEOVER + 4 * tc.HEARTBEAT + 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    took = time.monotonic() - t0
    print("  verify on %s after %s was killed: exit %d in %.1f s: %s"
          % (worker.node_name, p, proc.returncode, took, err.strip()))
    e = h.one_line_error(proc.returncode, out, err, 3, "a forwarded verify whose planner died")
    h.check(e.startswith("backfillctl: the planner changed while it handled the"
                         " request") and "none holds the lease" not in e, e)


def store_counts(c):
    """The store's figures: runs kept, and per job the partitions whose
    newest finished run succeeded, and failed."""
    runs = c.state.rows("SELECT count(*) FROM runs")[0][0]
    per = {}
    for job, state, n in c.state.rows(
            "SELECT job, state, count(*) FROM partition_latest GROUP BY 1, 2"):
        per.setdefault(job, {"succeeded": 0, "failed": 0})[state] = n
    return runs, per


def same_counts(c, live, what):
    runs, per = store_counts(c)
    for name in live:
        st = c[name].json("status")
        h.eq(st["runs_kept"], runs, "runs_kept on %s %s (the store's count; from"
             " memory: %r)" % (name, what, st["from_memory"]))
        got = {j["name"]: {"succeeded": j["succeeded"], "failed": j["failed"]}
               for j in st["jobs"]}
        for job in got:
            h.eq(got[job], per.get(job, {"succeeded": 0, "failed": 0}),
                 "counts of %s on %s %s" % (job, name, what))
        h.eq((st["running"], st["queued"]), (0, 0), "running and queued on %s %s"
             % (name, what))
        rc, text = c[name].status_text()
        h.check("history: %d runs kept;" % runs in text,
                "status on %s %s does not say %d runs kept:\n%s" % (name, what, runs, text))
    print("  %s: %d runs kept, %r on %s" % (what, runs, per, ", ".join(live)))


def test_counts_after_failover():
    c = tc.Nodes(tc.cmd_job("work", concurrency=4, sleep="0.1")
                 + tc.cmd_job("other", concurrency=2, sleep="0.1"))
    first = c.planner(c["n1"])
    others = [n for n in c.nodes if n != first]
    req = tc.backfill(c[others[0]], "work", "2025-02-01", "2025-02-20")
    c[others[0]].wait_request(req)
    req = tc.backfill(c[others[1]], "other", "2025-02-01", "2025-02-05")
    c[others[1]].wait_request(req)
    same_counts(c, list(c.nodes), "before the failover")
    c[first].kill9()
    c.wait_role(c[others[0]], first, ("stopped",))
    c.wait_view(others, via=c[others[0]])
    new = c.planner(c[others[0]])
    same_counts(c, others, "after %s took over from %s" % (new, first))
    req = tc.backfill(c[others[1]], "work", "2025-03-01", "2025-03-15")
    c[others[1]].wait_request(req)
    same_counts(c, others, "after the new planner ran more")


TESTS = [test_store_down, test_start_while_down, test_planner_before_store,
         test_forwarded_verify, test_forward_planner_dies,
         test_counts_after_failover]


def main():
    h.binaries()
    try:
        tp.cluster()
        only = sys.argv[1:]
        h.main([tc.isolated(t) for t in TESTS if not only or t.__name__ in only])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
