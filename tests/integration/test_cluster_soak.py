#!/usr/bin/env python3
"""What several hosts keep in the state database stays bounded
(docs/several-hosts.md, "The tables"): three nodes on one PostgreSQL store
(test_cluster.py's Nodes), ROUNDS rounds of a backfill of PARTS command
partitions and PARTS SQL partitions, each asked on a node that is not the
planner (a forwarded control request) and awaited on another, with
`status` asked on every node between them (more forwarded requests).

After every round, once the requests are finished:
  - `work` is empty: the planner deletes a run's row once it recorded its
    result;
  - `mailbox` is empty: a forwarded request's row is deleted by the node
    that fetched its answer;
  - `nodes` holds the three nodes, one row each;
  - each node holds as many sessions on the state database
    (pg_stat_activity, by the application_name each node's PGAPPNAME
    gives it) as after the first round, and at most SESSIONS.
At the end: mail older than five minutes (answered, never fetched: its
forwarder died) is deleted by the planner within a few heartbeats; mail
younger stays.  Every SQL partition was committed once, on one node's
warehouse (backfilld_commits, the request's id as the workers got it).

Then an hourly backfill of 3,000 partitions over two nodes: the planner
vacuums `work` as it collects results, so the table stays a few pages.
And a worker sends the ends of runs that end close together in one
exchange, not one each (test_finishes_sent_together).
"""
import os
import re
import shutil
import sqlite3
import sys
import tempfile

import harness as h
import test_cluster as tc
import test_postgres as tp

ROUNDS = 12
PARTS = 20
SESSIONS = 4     # a node's sessions on the state database, at most

SQL_JOB = """
- name: sqlj
  warehouse: wh
  partition: day
  start: 2025-01-01
  end: 2025-12-31
  catchup: false
  concurrency: 4
  retries: 0
  sql: INSERT INTO ran (k) VALUES (:partition)
"""


def sessions(c):
    """{node: sessions on the state database}, by application_name."""
    rows = c.state.sql("SELECT application_name, count(*) FROM pg_stat_activity"
                       " WHERE datname = '%s' AND application_name LIKE 'soak-%%'"
                       " GROUP BY 1" % c.state.db, db="postgres")
    return {r[0][len("soak-"):]: r[1] for r in rows}


def count(c, table):
    return c.state.rows("SELECT count(*) FROM %s" % table)[0][0]


def start_nodes(c, names):
    for n in names:
        d = c.add(n, start=False)
        d.extra_env["PGAPPNAME"] = "soak-" + n
        d.start()
    c.wait_view(names)
    c.settle()


def test_cluster_tables_bounded():
    names = ("n1", "n2", "n3")
    c = tc.Nodes(tc.cmd_job("work", concurrency=4, sleep="0") + SQL_JOB, names=(),
                 warehouses={"wh": "CREATE TABLE ran (k TEXT);"})
    start_nodes(c, names)
    first = None
    sqlreqs = []
    days = h.days("2025-01-01", "2025-12-31")
    for rnd in range(ROUNDS):
        planner = c.planner(c["n1"])
        others = [n for n in names if n != planner]
        asker, waiter = c[others[0]], c[others[1]]
        parts = days[rnd * PARTS:(rnd + 1) * PARTS]
        reqs = [tc.backfill(asker, job, parts[0], parts[-1]) for job in ("work", "sqlj")]
        sqlreqs.append(reqs[1])
        for n in names:
            c[n].ok("status")
        for req in reqs:
            resp = waiter.wait_request(req)
            h.eq(resp.get("status"), "0", "round %d: request %d: %r" % (rnd, req, resp))
        c.wait_until(lambda: count(c, "work") == 0,
                     "round %d: work empty once the requests finished" % rnd)
        c.wait_until(lambda: count(c, "mailbox") == 0,
                     "round %d: mailbox empty once every answer was fetched" % rnd)
        h.eq(sorted(r[0] for r in c.state.rows("SELECT name FROM nodes")), list(names),
             "round %d: nodes" % rnd)
        now = sessions(c)
        h.eq(sorted(now), list(names), "round %d: nodes with sessions on the state"
             " database (%r)" % (rnd, now))
        for n, k in now.items():
            h.check(k <= SESSIONS, "round %d: %s holds %d sessions on the state"
                    " database, above %d" % (rnd, n, k, SESSIONS))
        if first is None:
            first = now
        for n in names:
            h.check(now[n] <= first[n], "round %d: %s's sessions grew from %d to %d"
                    % (rnd, n, first[n], now[n]))
    print("  sessions per node: %r; %d executions of commands"
          % (first, len(c.executions())))
    h.eq(len(c.executions()), ROUNDS * PARTS, "command executions")

    # mail a dead forwarder left behind: the planner's reap deletes it
    # after five minutes of the database's clock, not before
    c.state.sql("INSERT INTO mailbox (from_node, request, response, created_at,"
                " answered_at) VALUES ('gone', '\\x00', '\\x00', now() - interval"
                " '6 minutes', now() - interval '6 minutes'), ('gone', '\\x01',"
                " '\\x01', now() - interval '4 minutes', now() - interval '4 minutes')")
    c.wait_until(lambda: count(c, "mailbox") == 1, "mail older than five minutes deleted")
    h.eq(c.state.rows("SELECT request FROM mailbox"), [("\\x01",)],
         "the mail younger than five minutes stays")

    # every SQL partition committed once, each in the warehouse of the
    # node that ran it, under the request the planner offered it for
    rows = []
    for n in names:
        con = sqlite3.connect(c[n].warehouses["wh"])
        try:
            mine = con.execute("SELECT request_id, partition_key FROM"
                               " backfilld_commits WHERE job = 'sqlj'").fetchall()
            ran = con.execute("SELECT count(*) FROM ran").fetchone()[0]
        finally:
            con.close()
        h.eq(len(mine), ran, "%s: rows of backfilld_commits and executions of sqlj" % n)
        rows += [r for r in mine if r[0] in sqlreqs]
    h.eq(sorted(r[1] for r in rows), days[:ROUNDS * PARTS],
         "partitions of sqlj in backfilld_commits (once each, over the nodes)")
    h.eq({r[0] for r in rows}, set(sqlreqs), "requests in backfilld_commits")

HOURLY_JOB = """
- name: hourly
  warehouse: wh
  partition: hour
  catchup: false
  concurrency: 8
  retries: 0
  max_backfill: 100000
  sql: INSERT INTO ran (k) VALUES (:partition)
"""
WORK_PARTS = 3000   # partitions of the hourly backfill
WORK_PAGES = 64     # pages of `work` at most after it (measured: 35 to 40)


def test_work_table_vacuumed():
    """The planner vacuums `work` as it collects results (every 500): an
    hourly backfill of WORK_PARTS partitions over two nodes leaves the
    table at most WORK_PAGES pages, where without the vacuums it grew by
    about 36 pages a thousand partitions (each run leaves four dead row
    versions, and pruning does not give their room back to new offers)."""
    c = tc.Nodes(HOURLY_JOB, names=("n1", "n2"), settings={"max_concurrency": 8},
                 warehouses={"wh": "CREATE TABLE ran (k TEXT);"})
    c.settle()
    planner = c.planner(c["n1"])
    keys = ["%s" % k for k in h.days("2025-01-01", "2025-12-31")]
    hours = ["%sT%02d" % (d, hr) for d in keys for hr in range(24)][:WORK_PARTS]
    req = tc.backfill(c[planner], "hourly", hours[0], hours[-1])
    resp = c[planner].wait_request(req, timeout=300)
    h.eq(resp.get("status"), "0", "hourly request: %r" % (resp,))
    c.wait_until(lambda: count(c, "work") == 0, "work empty once the request finished")
    (pages, vacuums), = c.state.rows(
        "SELECT pg_relation_size('work') / current_setting('block_size')::int,"
        " vacuum_count FROM pg_stat_user_tables WHERE relname = 'work'")
    ran = sum(sqlite3.connect(c[n].warehouses["wh"]).execute(
        "SELECT count(*) FROM ran").fetchone()[0] for n in ("n1", "n2"))
    print("  work: %d pages, %d vacuums, after %d partitions" % (pages, vacuums, ran))
    h.eq(ran, WORK_PARTS, "partitions run")
    h.check(vacuums >= 1, "the planner never vacuumed work")
    h.check(pages <= WORK_PAGES, "work holds %d pages after %d partitions, above %d"
            % (pages, WORK_PARTS, WORK_PAGES))


BURST = 32   # command partitions claimed at once by one worker

BURST_JOB = """
- name: burst
  partition: day
  start: 2025-01-01
  catchup: false
  concurrency: %d
  retries: 0
  nodes: [n2]
  command: ["/bin/sh", "-c", "touch @DIR@/started/$BFD_TEST_NODE.$1;
            while [ -d @DIR@ ] && [ ! -e @DIR@/release ]; do sleep 0.005; done; d=${1##*-};
            sleep $(printf 0.%%03d $((${d#0} * 2)))",
            "sh", "{partition}"]
""" % BURST


def test_finishes_sent_together():
    """A worker with several runs in flight sends the ends of those that
    end within a few milliseconds of each other in one exchange
    (docs/several-hosts.md): BURST commands of a job only n2 runs,
    claimed together, released together and ending two milliseconds
    apart (each sleeps twice its day of the month in ms), go in fewer
    than BURST / 2 exchanges (its debug log says what each one sent):
    measured 7 to 9, and 22 or 23 when each end went at the next turn."""
    tmp = tempfile.mkdtemp(prefix="bfd-burst-")
    started, release = os.path.join(tmp, "started"), os.path.join(tmp, "release")
    os.mkdir(started)
    open(release, "w").close()   # the schedule's run at the start goes through
    c = tc.Nodes(BURST_JOB.replace("@DIR@", tmp), names=("n1", "n2"),
                 settings={"max_concurrency": BURST, "log_level": "debug"})
    try:
        os.unlink(release)
        for f in os.listdir(started):
            os.unlink(os.path.join(started, f))
        planner = c.planner(c["n1"])
        h.eq(planner, "n1", "the planner (n2 runs the job)")
        days = h.days("2025-02-01", "2025-12-31")[:BURST]
        log = c["n2"].log
        seen = len(open(log).read().split("\n"))
        req = tc.backfill(c[planner], "burst", days[0], days[-1])
        c.wait_until(lambda: len(os.listdir(started)) == BURST,
                     "the %d commands running" % BURST)
        open(release, "w").close()
        resp = c[planner].wait_request(req, timeout=tc.GUARD)
        h.eq(resp.get("status"), "0", "burst request: %r" % (resp,))
        tc.succeeded_once(c[planner], req, [("burst", d) for d in days])
        h.eq({f.split(".")[0] for f in os.listdir(started)}, {"n2"}, "nodes that ran them")
        sent = [int(m.group(1)) for m in
                (re.search(r"sent the ends of (\d+) runs in one exchange", line)
                 for line in open(log).read().split("\n")[seen:]) if m]
        print("  the ends of %d runs in %d exchanges: %r" % (sum(sent), len(sent), sent))
        h.eq(sum(sent), BURST, "runs whose ends n2 sent")
        h.check(len(sent) < BURST / 2, "%d exchanges for the ends of %d runs ending two ms"
                " apart: one exchange per end?" % (len(sent), BURST))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(test_cluster_tables_bounded), tc.isolated(test_work_table_vacuumed),
                tc.isolated(test_finishes_sent_together)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    sys.exit(main())
