#!/usr/bin/env python3
"""The fence the warehouse enforces, descriptors, and the warehouse's set-up
(issue 25; docs/several-hosts.md, "Exactly once" and "Descriptors").

Two nodes on a throwaway PostgreSQL state store (test_cluster.py's Nodes,
`lease: 3s`), a SQL job on a PostgreSQL warehouse that rewrites its day in
`fact` and inserts one row into `audit`, then sleeps a second inside its
transaction (so that runs are in flight when a node is paused).  Each node
logs in as application_name = its name (PGAPPNAME), so the test sees in
pg_stat_activity which node's sessions run a partition.

What it checks:
  - a worker paused (SIGSTOP) while its runs are in flight, continued once
    the planner has declared its runs interrupted and they have run again
    elsewhere: its late transactions do not commit: one audit row per
    partition, one fact row per partition, one backfilld_commits row each,
    every partition succeeded once;
  - the same with the planner paused with runs of its own in flight (it is
    deposed when continued and restarts in place);
  - a command job pinned to the node listing /proc/self/fd sees only
    /dev/null and its log (0, 1, 2), after an ordinary start and after a
    restart in place;
  - on a fresh PostgreSQL warehouse, 16 first runs at once (retries 0) all
    succeed: backfilld_commits is created once, never by racing runs.
"""
import glob
import os
import re
import signal
import subprocess
import sys
import time

import harness as h
import test_cluster as tc
import test_postgres as tp

GUARD = 90.0
WH_DB = "fence_wh"
DAYS = h.days("2025-03-01", "2025-04-09")   # 40 partitions

FDS = r"""import os
d = '/proc/self/fd/'
print('fds ' + ' '.join(f + '=' + os.readlink(d + f)
      for f in sorted(os.listdir(d), key=int) if os.path.exists(d + f)))
"""

JOBS = """
- name: fact
  warehouse: dw
  partition: day
  start: 2025-01-01
  catchup: false
  retries: 0
  concurrency: 8
  sql: |
    DELETE FROM fact WHERE day = :partition;
    INSERT INTO fact (day, n) VALUES (:partition, 1);
    INSERT INTO audit (day, node) VALUES (:partition, current_setting('application_name'));
    SELECT pg_sleep(1);
- name: fds
  partition: day
  start: 2025-01-01
  catchup: false
  retries: 0
  nodes: [n1]
  command: ["/usr/bin/python3", "-c", %s]
""" % ('"' + FDS.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"')


def wh_sql(q):
    return tp.cluster().psql(q, db=WH_DB)


def fresh_warehouse():
    pg = tp.cluster()
    pg.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % WH_DB, db="postgres")
    pg.psql("CREATE DATABASE %s OWNER etl" % WH_DB, db="postgres")
    wh_sql("SET ROLE etl; CREATE TABLE fact (day text, n int);"
           " CREATE TABLE audit (day text, node text)")


def warehouse_yaml():
    pg = tp.cluster()
    return ("\n  - name: dw\n    postgres: \"host=%s port=%d dbname=%s user=etl\"\n"
            "    password_file: %s\n    max_connections: 16" % (pg.sockdir, tp.PORT, WH_DB,
                                                          pg.pwfile))


def two_nodes():
    fresh_warehouse()
    c = tc.Nodes(JOBS, names=(), settings={"max_concurrency": 8,
                                           "warehouses": warehouse_yaml()})
    for name in ("n1", "n2"):
        d = c.add(name, start=False)
        d.extra_env["PGAPPNAME"] = name
        d.start()
        c.wait_view(list(c.nodes))
    c.settle()
    return c


def active_on(node):
    """Sessions of node running a partition (in its pg_sleep) now."""
    return int(wh_sql("SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'"
                      " AND application_name = '%s' AND state = 'active'"
                      " AND query LIKE '%%pg_sleep%%'" % (WH_DB, node))[0][0])


def lock_waiters():
    return int(wh_sql("SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'"
                      " AND wait_event_type = 'Lock'" % WH_DB)[0][0])


def interrupted(c, req, node):
    """Partitions of req whose runs the planner declared interrupted
    because node stopped."""
    return {r[0] for r in c.state.rows(
        "SELECT partition_key FROM runs WHERE request_id = %d AND state = 'failed'"
        " AND error LIKE 'interrupted: node %s stopped%%'" % (req, node))}


def succeeded(c, req):
    return {r[0] for r in c.state.rows(
        "SELECT partition_key FROM runs WHERE request_id = %d AND state = 'succeeded'"
        % req)}


def exactly_once(c, via, req):
    via.wait_request(req, timeout=GUARD)
    tc.succeeded_once(via, req, [("fact", p) for p in DAYS])
    first, last = DAYS[0], DAYS[-1]
    audit = wh_sql("SELECT day, count(*) FROM audit WHERE day BETWEEN '%s' AND '%s'"
                   " GROUP BY day HAVING count(*) <> 1" % (first, last))
    h.eq(audit, [], "days of audit with other than one row (a late transaction committed)")
    h.eq(int(wh_sql("SELECT count(*) FROM audit WHERE day BETWEEN '%s' AND '%s'"
                    % (first, last))[0][0]), len(DAYS), "audit rows")
    fact = wh_sql("SELECT day, count(*) FROM fact WHERE day BETWEEN '%s' AND '%s'"
                  " GROUP BY day HAVING count(*) <> 1" % (first, last))
    h.eq(fact, [], "days of fact with other than one row")
    h.eq(int(wh_sql("SELECT count(DISTINCT day) FROM fact WHERE day BETWEEN '%s' AND '%s'"
                    % (first, last))[0][0]), len(DAYS), "days in fact")
    h.eq(int(wh_sql("SELECT count(*) FROM backfilld_commits WHERE request_id = %d"
                    % req)[0][0]), len(DAYS), "backfilld_commits rows of the request")


def pause_past_lease(c, victim, via, req, why):
    """SIGSTOP victim while it runs partitions, wait until the planner has
    declared them interrupted and they ran again elsewhere (or wait on the
    late transaction's locks), SIGCONT; returns the interrupted ones."""
    c.wait_until(lambda: active_on(victim) > 0,
                 "%s running partitions of the backfill" % victim, guard=GUARD)
    c[victim].signal(signal.SIGSTOP)
    t0 = time.monotonic()
    lost = c.wait_until(lambda: interrupted(c, req, victim),
                        "the planner declaring %s's runs interrupted (%s)" % (victim, why),
                        guard=GUARD)
    c.wait_until(lambda: lost <= succeeded(c, req) or lock_waiters() > 0,
                 "the interrupted partitions %s run again elsewhere" % sorted(lost),
                 guard=GUARD)
    lost = interrupted(c, req, victim)
    print("  %s paused %.1f s; %d partitions interrupted and run again: %s"
          % (victim, time.monotonic() - t0, len(lost), sorted(lost)[:6]))
    c[victim].signal(signal.SIGCONT)
    return lost


def fd_listing(d, day):
    """Run the fds job for day on d's node; the descriptors its command
    had, as {fd: target}, and its log's path."""
    req = d.enqueue("backfill", "fds", "--from", day, "--to", day)
    d.wait_request(req, timeout=GUARD)
    logs = glob.glob(os.path.join(d.dir, "logs", "**", "%s.*.log" % day), recursive=True)
    h.eq(len(logs), 1, "the fds job's logs for %s under %s" % (day, d.dir))
    with open(logs[0]) as f:
        text = f.read()
    m = re.search(r"^fds (.*)$", text, re.M)
    h.check(m, "the fds job printed no listing:\n%s" % text)
    fds = dict(x.split("=", 1) for x in m.group(1).split())
    return {int(k): v for k, v in fds.items()}, os.path.realpath(logs[0])


def only_standard(d, day, what):
    fds, log = fd_listing(d, day)
    h.eq(sorted(fds), [0, 1, 2], "descriptors a command run has %s (%r)" % (what, fds))
    h.eq((fds[0], fds[1], fds[2]), ("/dev/null", log, log),
         "what a command run's descriptors are %s" % what)


def test_paused_worker():
    c = two_nodes()
    planner = c.planner(c["n1"])
    worker = [n for n in c.nodes if n != planner][0]
    via = c[planner]
    req = tc.backfill(via, "fact", DAYS[0], DAYS[-1])
    lost = pause_past_lease(c, worker, via, req, "a worker paused")
    h.check(lost, "no run of the paused worker was interrupted")
    exactly_once(c, via, req)
    c.wait_view(list(c.nodes), via=c[worker])


def test_paused_planner():
    c = two_nodes()
    planner = c.planner(c["n1"])
    h.eq(planner, "n1", "the planner (the first node started)")
    other = c["n2"]
    only_standard(c[planner], "2025-01-02", "after an ordinary start")
    with open(c[planner].log, errors="replace") as f:
        mark = len(f.read())
    req = tc.backfill(other, "fact", DAYS[0], DAYS[-1])
    lost = pause_past_lease(c, planner, other, req, "the planner paused")
    h.check(lost, "no run of the paused planner was interrupted")
    # deposed when continued: it restarts in place, as a worker
    c.wait_until(lambda: "restarting in place" in tc.log_of(c[planner])[mark:],
                 "%s restarting in place once deposed" % planner, guard=GUARD)
    exactly_once(c, other, req)
    c.wait_view(list(c.nodes), via=c[planner], planner="n2")
    h.check(c[planner].alive(), "%s exited after its restart in place" % planner)
    only_standard(c[planner], "2025-01-03", "after a restart in place")


def test_first_runs_create_once():
    """Sixteen first runs at once on a fresh warehouse, retries 0: none
    fails creating backfilld_commits.  The race is made certain: the test
    holds a transaction that creates the table (not its index),
    uncommitted, so that every run's creation waits on it; then it
    commits, releasing them all at the same instant to create the index."""
    job = """
    - name: first
      warehouse: dw
      partition: day
      start: 2025-01-01
      catchup: false
      retries: 0
      concurrency: 16
      sql: |
        INSERT INTO audit (day, node) VALUES (:partition, 'x');
    """
    pg = tp.cluster()
    wh = ("  - name: dw\n    postgres: \"host=%s port=%d dbname=%s user=etl\"\n"
          "    password_file: %s\n    max_connections: 16\n"
          % (pg.sockdir, tp.PORT, WH_DB, pg.pwfile))
    days = h.days("2025-02-01", "2025-02-16")
    # no warehouse at the start (its one scheduled run fails to connect):
    # the backfill's runs are the first to reach it
    pg.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % WH_DB, db="postgres")
    d = tp.pg_daemon(job, wh, settings={"max_concurrency": 16}, name="first")
    holder = None
    try:
        fresh_warehouse()
        holder = subprocess.Popen(pg.psql_cmd(WH_DB), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        holder.stdin.write(
            "SET ROLE etl;\nBEGIN;\nCREATE TABLE backfilld_commits ("
            " request_id bigint NOT NULL, job text NOT NULL,"
            " partition_key text NOT NULL, run_id bigint NOT NULL,"
            " committed_at bigint NOT NULL,"
            " PRIMARY KEY (job, request_id, partition_key));\nSELECT 'held';\n")
        holder.stdin.flush()
        h.eq(holder.stdout.readline().strip(), "held", "the test's transaction")
        req = d.enqueue("backfill", "first", "--from", days[0], "--to", days[-1])
        end = time.monotonic() + GUARD
        while lock_waiters() < len(days):
            h.check(time.monotonic() < end, "only %d of %d first runs wait to create the"
                    " table" % (lock_waiters(), len(days)))
            time.sleep(0.05)
        holder.stdin.write("COMMIT;\n\\q\n")
        holder.stdin.close()
        h.eq(holder.wait(timeout=GUARD), 0, "the test's psql")
        d.wait_request(req, timeout=GUARD)
        runs = d.runs("--request", str(req))
        bad = [(r["partition"], r["error"]) for r in runs if r["state"] != "succeeded"]
        h.eq(bad, [], "first runs on a fresh warehouse that did not succeed")
        h.eq(len(runs), len(days), "runs of the request")
        h.eq(int(wh_sql("SELECT count(*) FROM backfilld_commits WHERE request_id = %d"
                        % req)[0][0]), len(days), "backfilld_commits rows")
        # the key is the table's one index: a run's row writes one b-tree
        h.eq(wh_sql("SELECT indexname FROM pg_indexes WHERE tablename = 'backfilld_commits'"),
             [("backfilld_commits_pkey",)], "its indexes")
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        d.stop()
        d.close()


def isolated(test):
    return tc.isolated(test)


TESTS = [test_first_runs_create_once, test_paused_worker, test_paused_planner]


def main():
    h.binaries()
    try:
        tp.cluster()
        only = sys.argv[1:]
        h.main([isolated(t) for t in TESTS if not only or t.__name__ in only])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
