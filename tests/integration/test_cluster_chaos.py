#!/usr/bin/env python3
"""Several hosts under random faults (issue 25): three nodes on one
PostgreSQL state store, a SQL job on a PostgreSQL warehouse that counts
its executions there (a row of chaos_execs in the partition's own
transaction, apart from the partition's rewrite) and a command job that
records its start and end (test_cluster.py's run.sh), while a loop of
FAULTS faults chosen at random (CHAOS_SEED, printed, picks them; CHAOS_FAULTS
names the kinds to choose from, all by default) strikes:
kill -9 of a node (started again), a node stopped (SIGSTOP) past the
lease then continued, pg_terminate_backend of every session of the
nodes, a server restart, the database stopped for longer than the lease.
Between faults a new backfill is sent to a node that is up (asked again
until one answers).  At the end:
  - every partition of every request succeeded once;
  - every SQL partition has exactly one committed execution;
  - no two executions of a command partition overlapped in time, and
    each ran;
  - every node is alive, the same process as its last start, and its
    socket answers;
  - status is the same on every node and its counts are the store's.
"""
import datetime
import os
import random
import re
import signal
import sys
import time

import harness as h
import test_postgres as tp
import test_cluster as tc
import test_cluster_outage as to

FAULTS = 20
LEASE = 2
PAST_LEASE = LEASE + 1.5

SQL_JOB = """
- name: fact
  warehouse: dw
  partition: day
  start: 2024-01-01
  end: 2024-12-31
  catchup: false
  concurrency: 4
  retries: 5
  retry_backoff: 1s
  sql: |
    INSERT INTO chaos_execs (part) VALUES (:partition);
    DELETE FROM chaos_fact WHERE dt = :partition;
    INSERT INTO chaos_fact (dt, v) VALUES (:partition, 1);
    SELECT pg_sleep(0.05);
"""


def terminate_sessions(c, pg):
    for db in (c.state.db, "etl"):
        c.state.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = '%s' AND pid <> pg_backend_pid()" % db,
                    db="postgres")


def queued_already(c, args, known, guard=60):
    """The request of backfill `args` the store holds that is not one of
    `known`, or None once nothing forwarded is still waiting for the
    planner: a node may queue a forwarded request whose answer a fault
    then loses (exit 3), and asking again would queue it twice.  What an
    operator does: look before sending again (docs/several-hosts.md)."""
    job, frm, to = args[1], args[3], args[5]
    end = time.monotonic() + guard
    while True:
        try:
            rows = c.state.rows("SELECT id FROM requests WHERE job = '%s' AND"
                                " kind = 'backfill' AND from_key = '%s' AND"
                                " to_key = '%s'" % (job, frm, to))
            ids = [r[0] for r in rows if r[0] not in known]
            if ids:
                return ids[0]
            # a forwarded request not yet read by a planner may still be
            # queued: wait until the mailbox holds none unanswered
            if not c.state.rows("SELECT id FROM mailbox WHERE response IS NULL"):
                return None
        except h.StateError:
            pass   # the store is down: look again
        h.check(time.monotonic() < end, "the store showed neither backfill %s nor"
                " an empty mailbox within %d s" % (" ".join(args), guard))
        time.sleep(0.5)


def send(c, rnd, up, args, known=(), guard=120):
    """Send a backfill to a node that is up, asked again (another node
    too) until one takes it, unless the store shows it queued after all;
    returns the request id."""
    end = time.monotonic() + guard
    while True:
        d = c[rnd.choice(sorted(up))]
        rc, out, err = d.ctl(*args, timeout=60)
        if rc == 0:
            m = re.search(r"[Rr]equest\D{0,4}(\d+)", out)
            h.check(m, "%s printed no request: %r" % (" ".join(args), out))
            return int(m.group(1))
        h.check(rc == 3 or "cannot be written" in err,
                "%s on %s: exit %d: %s%s" % (" ".join(args), d.node_name, rc, out, err))
        if "cannot be written" not in err:   # (that one changed nothing)
            req = queued_already(c, args, known)
            if req is not None:
                return req
        h.check(time.monotonic() < end, "no node took %s within %d s: %s"
                % (" ".join(args), guard, err))
        time.sleep(0.5)


def test_chaos():
    seed = int(os.environ.get("CHAOS_SEED") or random.randrange(1 << 30))
    print("  CHAOS_SEED=%d" % seed)
    rnd = random.Random(seed)
    pg = tp.cluster()
    pg.psql("DROP DATABASE IF EXISTS etl WITH (FORCE)", db="postgres")
    pg.psql("CREATE DATABASE etl OWNER etl", db="postgres")
    pg.as_etl("CREATE TABLE chaos_execs (part text NOT NULL);"
              " CREATE TABLE chaos_fact (dt text NOT NULL, v int NOT NULL)")
    wh = "\n" + tp.pg_warehouse("dw", max_connections=8).rstrip("\n")
    c = tc.Nodes(SQL_JOB + tc.cmd_job("cmd", concurrency=4, sleep="0.2",
                                      start="2024-01-01", end="2024-12-31"),
                 lease=LEASE, clock=None,
                 settings={"warehouses": wh, "max_concurrency": 6})
    up = set(c.nodes)
    requests = []   # (request, job, partitions)
    day = [0]

    def next_range(n):
        first = datetime.date(2024, 1, 10) + datetime.timedelta(day[0])
        day[0] += n
        return h.days(first.isoformat(),
                      (first + datetime.timedelta(n - 1)).isoformat())

    def submit():
        job = rnd.choice(["fact", "cmd"])
        parts = next_range(rnd.randint(3, 8))
        req = send(c, rnd, up, ("backfill", job, "--from", parts[0], "--to", parts[-1]),
                   known={r for r, _, _ in requests})
        requests.append((req, job, parts))

    kinds = (os.environ.get("CHAOS_FAULTS") or
             "kill,stop,terminate,restart,down").split(",")
    done = []
    for i in range(FAULTS):
        submit()
        kind = rnd.choice(kinds)
        victim = rnd.choice(sorted(c.nodes))
        done.append(kind)
        t0 = time.monotonic()
        if kind == "kill":
            c[victim].kill9()
            up.discard(victim)
            time.sleep(rnd.uniform(0.2, LEASE))
            submit()
            c[victim].start()
            up.add(victim)
        elif kind == "stop":
            c[victim].signal(signal.SIGSTOP)
            up.discard(victim)
            time.sleep(PAST_LEASE)
            c[victim].signal(signal.SIGCONT)
            up.add(victim)
        elif kind == "terminate":
            terminate_sessions(c, pg)
        elif kind == "restart":
            pg.stop()
            pg.start()
        elif kind == "down":
            pg.stop()
            try:
                time.sleep(PAST_LEASE)
            finally:
                pg.start()
        print("  fault %d: %s%s (%.1f s)" % (i + 1, kind, " " + victim if kind in
                                            ("kill", "stop") else "",
                                            time.monotonic() - t0))
        time.sleep(rnd.uniform(0.0, 1.0))
    print("  faults: %s" % {k: done.count(k) for k in kinds})
    submit()
    via = c["n1"]
    c.wait_view(list(c.nodes), via=via, guard=120)

    def finished(req):
        def f():
            rs = via.try_json("runs", "--request", str(req))
            return rs is not None and len(rs) > 0 and not any(
                r["state"] in ("queued", "running") for r in rs)
        return f
    for req, job, parts in requests:
        try:
            c.wait_until(finished(req), "request %d finished" % req, guard=120)
        except h.TestFailure:
            print("  manifest of request %d: %r" % (req, c.state.rows(
                "SELECT partition_key, state, attempts, not_before, error FROM"
                " manifest WHERE request_id = %d ORDER BY 1" % req)))
            print("  runs: %r" % (c.state.rows(
                "SELECT id, partition_key, state, attempt, error FROM runs"
                " WHERE request_id = %d ORDER BY 1" % req),))
            print("  work: %r" % (c.state.rows("SELECT * FROM work"),))
            print("  lease: %r; clock %r" % (c.state.rows("SELECT * FROM lease"),
                                             time.time()))
            raise
    for req, job, parts in requests:
        tc.succeeded_once(via, req, [(job, p) for p in parts])
    sql = sorted(p for _, job, parts in requests if job == "fact" for p in parts)
    # (the schedule's newest due partition at the first start is not ours)
    got = sorted(r[0] for r in pg.as_etl("SELECT part FROM chaos_execs")
                 if r[0] in set(sql))
    h.eq(got, sql, "committed executions of the SQL partitions (one each)")
    cmd = sorted(p for _, job, parts in requests if job == "cmd" for p in parts)
    ex = [e for e in c.executions() if e["job"] == "cmd"]
    h.eq(sorted(set(e["partition"] for e in ex)), cmd, "command partitions executed")
    tc.no_overlap(ex)
    print("  %d requests: %d SQL partitions, %d command partitions (%d executions)"
          % (len(requests), len(sql), len(cmd), len(ex)))
    for name, d in c.nodes.items():
        d.assert_alive("after the faults")
        d.ok("status")
    c.wait_until(lambda: all(d.json("status")["running"] == 0 for d in c.nodes.values()),
                 "nothing running on any node")
    to.same_counts(c, list(c.nodes), "after %d faults" % FAULTS)


def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(test_chaos)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
