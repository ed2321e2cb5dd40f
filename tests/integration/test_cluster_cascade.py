#!/usr/bin/env python3
"""A running total on several hosts (issue 41; DESIGN, "A job in its own
upstream"; docs/several-hosts.md): two nodes on one PostgreSQL state
store, a fact and a total (upstream [fact, {job: total, lookback: 1}]),
both command jobs with concurrency 4.  The planner plans the cascade as
one host does: a repair of the fact's 2025-01-03..04 sent to the worker
node rebuilds the total's 2025-01-03 to its newest built day (01-08),
each once, each started after the one before it ended, whichever node
ran it; --dry-run on the worker lists the cascade.

Nodes and the throwaway PostgreSQL server as in test_cluster.py (exit 77
without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1)."""
import harness as h
import test_cluster as tc
import test_postgres as tp

JOBS = tc.cmd_job("fact", sleep="0.1", catchup="false", end="2025-01-08") + """
- name: total
  partition: day
  start: 2025-01-01
  end: 2025-01-08
  concurrency: 4
  retries: 0
  upstream: [fact, {job: total, lookback: 1}]
  command: ["/bin/bash", "@RUN@", "{partition}", "0.1"]
"""


def in_order(execs, what):
    """Each execution of the total started after the one before it ended."""
    es = sorted(execs, key=lambda e: e["start"])
    for a, b in zip(es, es[1:]):
        h.check(b["start"] >= a["end"], "%s: total %s (on %s) started %.3f s before"
                " %s (on %s) ended" % (what, b["partition"], b["node"],
                                        a["end"] - b["start"], a["partition"],
                                        a["node"]))
    return [e["partition"] for e in es]


def test_cascade_on_two_nodes():
    c = tc.Nodes(JOBS, names=("n1", "n2"))
    n1 = c["n1"]
    planner = c.planner(n1)
    worker = c["n2" if planner == "n1" else "n1"]
    first = tc.backfill(c[planner], "fact", "2025-01-01", "2025-01-08")
    c[planner].wait_request(first)
    days = h.days("2025-01-01", "2025-01-08")
    tc.succeeded_once(n1, first, [("fact", d) for d in days] +
                      [("total", d) for d in days])
    ex = [e for e in c.executions() if e["job"] == "total"]
    h.eq(in_order(ex, "the first build"), days, "the total's days by start")
    plan = worker.json("backfill", "fact", "--from", "2025-01-03", "--to",
                       "2025-01-04", "--dry-run")["partitions"]
    cascade = h.days("2025-01-03", "2025-01-08")
    h.eq([(e["job"], e["partition"], [(w["job"], w["partition"]) for w in e["waits_for"]])
          for e in plan if e["job"] == "total"],
         [("total", d, ([("fact", d)] if d <= "2025-01-04" else []) +
           ([("total", p)] if d > "2025-01-03" else []))
          for d, p in zip(cascade, h.days("2025-01-02", "2025-01-07"))],
         "--dry-run on the worker node: the cascade, each day after the day before")
    c.mark += len(c.executions())
    repair = tc.backfill(worker, "fact", "2025-01-03", "2025-01-04")
    worker.wait_request(repair)
    tc.succeeded_once(n1, repair, [("fact", "2025-01-03"), ("fact", "2025-01-04")] +
                      [("total", d) for d in cascade])
    ex = c.executions()
    tc.no_overlap(ex)
    h.eq(in_order([e for e in ex if e["job"] == "total"], "the repair"), cascade,
         "the total's days by start after the repair")
    print("  executions per node: %s" % tc.per_node(ex))


def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(test_cascade_on_two_nodes)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
