#!/usr/bin/env python3
"""The fence of a ClickHouse publish on several hosts (docs/several-hosts.md,
"Exactly once"; docs/clickhouse.md, "Several hosts").

Two nodes on a throwaway PostgreSQL state store (test_cluster.py's Nodes,
`lease: 3s`) and a throwaway clickhouse-server (test_clickhouse.py's
Server), a write-audit-publish job on the lesson's fact.  The worker is
stopped right before a REPLACE (the test-only hook
BACKFILLD_TEST_CH_STOP=publishing: the node sends itself SIGSTOP), raw
changes for the partitions it had audited, the planner declares the
worker's runs interrupted and builds them again from the new raw; then
the worker is continued.

What it checks: the worker, continued past its lease, does not publish
(its fence: no REPLACE once its lease could have run out); the same with
the planner stopped before one of its own runs' REPLACE (n2 takes the
lease over);
the live partitions equal the new raw (the planner's build, not the
worker's older audited stage); every partition succeeded once.  Skipped
(77) without PostgreSQL or ClickHouse unless BACKFILLD_REQUIRE_POSTGRES=1
or BACKFILLD_REQUIRE_CLICKHOUSE=1.
"""
import signal
import time

import harness as h
import test_cluster as tc
import test_clickhouse as tch
import test_postgres as tp

GUARD = 90.0
DAYS = h.days("2026-02-02", "2026-02-17")   # 16 partitions

JOBS = """
- name: fct
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  retries: 0
  concurrency: 4
  table: fct_daily_sales
  partition_column: dt
  sql: SELECT dt, store_id, count(), sum(amount_cents) + sleepEachRow(0.25) FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
"""


def node_tables(name):
    """The stage's marks table of node `name` (its hashed suffix)."""
    h32 = 2166136261
    for ch in name.encode():
        h32 = ((h32 ^ ch) * 16777619) & 0xFFFFFFFF
    return "_backfilld_marks_fct_daily_sales_n%08x" % h32


def stopped(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def two_nodes(db, victim):
    """n1 (the planner) and n2 on a warehouse of db; `victim` stops itself
    right before its first REPLACE."""
    wh = ("\n  - name: sales\n    clickhouse: %s\n    user: etl\n    password_file: %s"
          % (tch.SRV.url(db), tch.SRV.pwfile))
    c = tc.Nodes(JOBS, names=(), settings={"max_concurrency": 4, "warehouses": wh})
    for name in ("n1", "n2"):
        d = c.add(name, start=False)
        if name == victim:
            d.extra_env["BACKFILLD_TEST_CH_STOP"] = "publishing"
        d.start()
        c.wait_view(list(c.nodes))
    h.eq(c.planner(c["n1"]), "n1", "the planner (the first node started)")
    return c


def pause_then_continue(c, db, victim, via):
    """A backfill through via; victim stops before a REPLACE; raw changes
    for what it audited; the request completes without it; it goes on
    and learns it was declared dead.  Returns the request and the
    partitions the victim had audited."""
    v = c[victim]
    req = tc.backfill(via, "fct", DAYS[0], DAYS[-1])
    c.wait_until(lambda: stopped(v.proc.pid), "%s stopped before a publish" % victim,
                 guard=GUARD)
    marked = sorted(r[0] for r in tch.SRV.rows(
        "SELECT partition FROM `%s`" % node_tables(victim), db))
    h.check(marked, "%s stopped with no partition audited" % victim)
    # raw changes now: a build from here differs from the victim's stage
    for day in marked:
        tch.SRV.q("INSERT INTO raw_sales SELECT * FROM raw_sales WHERE dt = '%s' LIMIT 2" % day, db)
    # every partition run again without the victim, or a statement of the
    # node that took over waiting on a lock the victim's query in flight
    # holds (a SELECT whose answer it does not read while stopped): a
    # REPLACE, or the ALTER or INSERT before it, running for over a second
    def done():
        return set(DAYS) <= {r[0] for r in c.state.rows(
            "SELECT partition_key FROM runs WHERE request_id = %d AND state = 'succeeded'"
            % req)}
    def stuck():
        return int(tch.SRV.q(
            "SELECT count() FROM system.processes WHERE (query LIKE '%%ALTER TABLE%%'"
            " OR query LIKE '%%INSERT INTO%%') AND query NOT LIKE '%%system.processes%%'"
            " AND elapsed > 1").strip()) > 0

    # ... and, either way, the victim declared dead by another node first:
    # continued before its lease ran out, it would be no victim at all
    def declared_dead():
        return any("nodes declared dead" in line and victim in line.rsplit(":", 1)[-1]
                   for name, d in c.nodes.items() if name != victim
                   for line in d.log_tail(400).splitlines())
    c.wait_until(lambda: declared_dead() and (done() or stuck()),
                 "the partitions run again without %s (or waiting on its lock)" % victim,
                 guard=GUARD)
    v.signal(signal.SIGCONT)
    # (a wait forwarded to a stopped planner may end when the lease moves)
    c.wait_until(done, "every partition of the backfill succeeded", guard=GUARD)
    # a node restarting in place (deposed, or declared dead) resets the
    # connections open to it; its new image listens on the same socket
    for attempt in range(3):
        try:
            via.wait_request(req, timeout=GUARD)
            break
        except (ConnectionResetError, BrokenPipeError):
            if attempt == 2:
                raise
            time.sleep(1.0)
    tc.succeeded_once(via, req, [("fct", p) for p in DAYS])
    # the victim's worker thread goes on at once from where it stopped
    # (its fence check, then the REPLACE it would send); its loop learns
    # it was declared dead (or deposed) only after a round trip
    c.wait_until(lambda: "was declared dead" in v.log_tail(400) or
                 "restarting in place" in v.log_tail(400),
                 "%s learning it was declared dead" % victim, guard=GUARD)
    c.wait_view(list(c.nodes), via=via)
    return req, marked


def live_equals_raw(db, victim, marked):
    fact, raw = tch.fact_vs_raw(db, DAYS[0], DAYS[-1])
    h.eq(fact, raw, "the live partitions after %s continued (its older stage not published)"
         % victim)
    print("  %s had audited %s; not published after its lease" % (victim, marked))


def test_paused_worker_does_not_publish():
    db = tch.fresh_db()
    c = two_nodes(db, "n2")
    req, marked = pause_then_continue(c, db, "n2", c["n1"])
    live_equals_raw(db, "n2", marked)


def test_paused_planner_does_not_publish():
    """The same with the planner stopped before one of its own runs'
    REPLACE: n2 takes the lease over and runs the partitions again; n1,
    continued, publishes nothing and restarts in place, as a worker."""
    db = tch.fresh_db()
    c = two_nodes(db, "n1")
    req, marked = pause_then_continue(c, db, "n1", c["n2"])
    live_equals_raw(db, "n1", marked)
    c.wait_view(list(c.nodes), via=c["n1"], planner="n2")


def main():
    h.binaries()
    try:
        tp.cluster()
        tch.SRV = tch.Server()
        h.main([tc.isolated(test_paused_worker_does_not_publish),
                tc.isolated(test_paused_planner_does_not_publish)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()
        if tch.SRV is not None:
            tch.SRV.close()


if __name__ == "__main__":
    main()
