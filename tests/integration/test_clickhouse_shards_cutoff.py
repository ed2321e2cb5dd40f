#!/usr/bin/env python3
"""Early cut-off and the shards of a ClickHouse Distributed table (issue
43; docs/cutoff.md, "Drivers and hosts"; rule CUTOFF-7 in
docs/architecture.md): no run reads the fingerprint of a partition
published shard by shard (each shard holds part of it), so the job's
downstream always runs, and `backfill --dry-run` says so: none of it is
"conditional".  The dry run used to call it conditional, deciding by a
rule of its own."""
import harness as h
import test_clickhouse as tc

DAY = "2026-02-09"
DOWNSTREAM = """- name: wk
  partition: day
  upstream: [fct]
  command: ["true"]
"""


def test_dry_run_of_a_distributed_job():
    srvs = tc.two_shards()
    try:
        conf = tc.shard_config(srvs, listed=True) + \
            "\n".join("  " + l if l else l for l in DOWNSTREAM.split("\n"))
        d = h.Daemon(config=conf, clock=None, name="chshcutoff")
        plan = d.json("backfill", "fct", "--from", DAY, "--to", DAY, "--dry-run")
        h.eq(sorted((p["job"], p["downstream"]) for p in plan["partitions"]),
             [("fct", False), ("wk", True)], "the plan: fct's day and wk's downstream")
        h.eq((plan["conditional"], [p["conditional"] for p in plan["partitions"]]),
             (0, [False, False]),
             "--dry-run --json: wk is not conditional (fct's fingerprint is never read)")
        out = d.ok("backfill", "fct", "--from", DAY, "--to", DAY, "--dry-run")
        h.check("conditional" not in out, "--dry-run names no conditional partition:\n%s" % out)
        req = d.enqueue("backfill", "fct", "--from", DAY, "--to", DAY, "--wait")
        states = sorted((r["job"], r["state"]) for r in d.runs() if r.get("request") == req)
        h.eq(states, [("fct", "succeeded"), ("wk", "succeeded")],
             "the run agrees: wk runs, never skipped")
        d.stop()
    finally:
        for srv in srvs:
            srv.close()


def main():
    # the servers are the test's own (tc.two_shards); no shared one
    h.main([test_dry_run_of_a_distributed_job])


if __name__ == "__main__":
    main()
