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
(its fence: no REPLACE once its lease could have run out);
the live partitions equal the new raw (the planner's build, not the
worker's older audited stage); every partition succeeded once.  Skipped
(77) without PostgreSQL or ClickHouse unless BACKFILLD_REQUIRE_POSTGRES=1
or BACKFILLD_REQUIRE_CLICKHOUSE=1.
"""
import signal

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
    return "_backfilld_audited_fct_daily_sales_n%08x" % h32


def stopped(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def test_paused_worker_does_not_publish():
    db = tch.fresh_db()
    wh = ("\n  - name: sales\n    clickhouse: %s\n    user: etl\n    password_file: %s"
          % (tch.SRV.url(db), tch.SRV.pwfile))
    c = tc.Nodes(JOBS, names=(), settings={"max_concurrency": 4, "warehouses": wh})
    c.add("n1")
    c.wait_view(["n1"])
    w = c.add("n2", start=False)
    w.extra_env["BACKFILLD_TEST_CH_STOP"] = "publishing"
    w.start()
    c.wait_view(["n1", "n2"])
    via = c["n1"]
    h.eq(c.planner(via), "n1", "the planner")
    req = tc.backfill(via, "fct", DAYS[0], DAYS[-1])
    c.wait_until(lambda: stopped(w.proc.pid), "n2 stopped before a publish", guard=GUARD)
    marked = sorted(r[0] for r in tch.SRV.rows("SELECT partition FROM `%s`" % node_tables("n2"),
                                                db))
    h.check(marked, "n2 stopped with no partition audited")
    # raw changes now: a build from here differs from n2's audited stage
    for day in marked:
        tch.SRV.q("INSERT INTO raw_sales SELECT * FROM raw_sales WHERE dt = '%s' LIMIT 2" % day, db)
    via.wait_request(req, timeout=GUARD)
    tc.succeeded_once(via, req, [("fct", p) for p in DAYS])
    w.signal(signal.SIGCONT)
    # n2's worker thread goes on at once from where it stopped (its fence
    # check, then the REPLACE it would send); its loop learns it was
    # declared dead only after a heartbeat, cancels, and registers again
    c.wait_until(lambda: "was declared dead" in w.log_tail(400),
                 "n2 learning it was declared dead", guard=GUARD)
    c.wait_view(["n1", "n2"])
    fact, raw = tch.fact_vs_raw(db, DAYS[0], DAYS[-1])
    h.eq(fact, raw, "the live partitions after n2 continued (its older stage not published)")
    print("  n2 had audited %s; not published after its lease" % marked)


def main():
    h.binaries()
    try:
        tp.cluster()
        tch.SRV = tch.Server()
        h.main([tc.isolated(test_paused_worker_does_not_publish)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()
        if tch.SRV is not None:
            tch.SRV.close()


if __name__ == "__main__":
    main()
