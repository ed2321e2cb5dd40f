#!/usr/bin/env python3
"""The audit of a partition published on the shards of a ClickHouse
Distributed table (issue 44 item 3; docs/clickhouse.md, "Beyond one
server"), on two real servers of a cluster:

- rows and every metric are the sums over the shards, each summed from
  the values read on the servers themselves (before: the live local
  tables before the run; after: once published);
- audit --json gives each shard's figures beside the totals
  (metrics.NAME.shards: [{shard, before, after, change_pct}]);
- each check names the shard it ran on (checks[].shard), and the text
  names the shard of a failed one;
- a metric's trend is judged once, on the sum over the shards."""
import json

import harness as h
import test_clickhouse as tc

DAY = "2026-02-09"
METRICS = """  metrics:
    revenue: sum(revenue_cents)
    sales: sum(sales)
  checks:
    - name: low_stores
      severity: warn
      sql: SELECT count() = 0 FROM :stage WHERE dt = :partition AND store_id > 2
"""


def figures(srv):
    """(rows, revenue, sales) of DAY in srv's local table."""
    r = srv.rows("SELECT count(), sum(revenue_cents), sum(sales) FROM fct_local"
                 " WHERE dt = '%s'" % DAY, "sh")[0]
    return tuple(int(x) for x in r)


def test_audit_sums_the_shards():
    srvs = tc.two_shards()
    try:
        conf = tc.shard_config(srvs, listed=True) + "\n".join(
            "  " + line if line else line for line in METRICS.split("\n"))
        d = h.Daemon(config=conf, clock=None, name="chshaudit")
        before = [figures(srv) for srv in srvs]
        req = d.enqueue("backfill", "fct", "--from", DAY, "--to", DAY, "--wait")
        after = [figures(srv) for srv in srvs]
        for k, srv in enumerate(srvs):
            h.eq([r for r in tc.shard_fact(srv) if r[0] == DAY],
                 [r for r in tc.shard_raw(srv) if r[0] == DAY], "shard %d's facts" % (k + 1))
        h.check(after[0] != after[1] and before != after,
                "the shards should differ, and the run change them: %r %r" % (before, after))
        au = [p for p in d.json("audit", "--request", str(req))["partitions"]
              if p["partition"] == DAY]
        h.eq(len(au), 1, "audit --json's partitions of %s" % DAY)
        p = au[0]
        h.eq((p["rows_before"], p["rows_after"]),
             (before[0][0] + before[1][0], after[0][0] + after[1][0]), "rows, the shards' sum")
        for col, name in ((0, "rows"), (1, "revenue"), (2, "sales")):
            m = p["metrics"][name]
            h.eq((m["before"], m["after"]),
                 (before[0][col] + before[1][col], after[0][col] + after[1][col]),
                 "%s in total: the sum of the shards' values read from the servers" % name)
            h.eq([(s["shard"], s["before"], s["after"]) for s in m["shards"]],
                 [(k + 1, before[k][col], after[k][col]) for k in range(2)],
                 "%s per shard" % name)
        h.eq(sorted((c["name"], c["shard"], c["passed"]) for c in p["checks"]
                    if c["name"] == "low_stores"),
             [("low_stores", 1, True), ("low_stores", 2, False)],
             "each check's shard (shard 2 holds stores 3-4): %s" % json.dumps(p["checks"]))
        _, text, _ = d.ctl("audit", "--request", str(req))
        # integer cents print as integers, no ".00" (text_figure)
        h.check("revenue %d -> %d (" % (before[0][1] + before[1][1],
                                        after[0][1] + after[1][1]) in text,
                "the text's revenue is the shards' sum, an integer: %r" % text)
        h.check("low_stores (shard 2) (warning):" in text,
                "the text names the failed check's shard: %r" % text)
        d.stop()
    finally:
        for srv in srvs:
            srv.close()


def test_resumed_run_metrics_unknown():
    """kill -9 right after shard 1's publish, then a restart: the run
    queued again skips shard 1 (recorded) and reads no figures of it, so
    the audit's rows still add up (shard 1's from the record) while the
    metric's total and shard 1's entry are null (not one shard's value
    shown as the whole)."""
    srvs = tc.two_shards()
    try:
        conf = tc.shard_config(srvs, listed=True) + "\n".join(
            "  " + line if line else line for line in METRICS.split("\n"))
        d = h.Daemon(config=conf, clock=None, name="chshresume",
                     env={"BACKFILLD_TEST_CH_STOP": "shard"})
        before = [figures(srv) for srv in srvs]
        req = d.enqueue("backfill", "fct", "--from", DAY, "--to", DAY)
        tc.wait_stopped(d, "shard 1's publish")
        d.kill9()
        d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
        d.restart()
        d.wait_request(req)
        after = [figures(srv) for srv in srvs]
        p = [x for x in d.json("audit", "--request", str(req))["partitions"]
             if x["partition"] == DAY][-1]
        h.eq((p["passed"], p["rows_before"], p["rows_after"]),
             (True, before[0][0] + before[1][0], after[0][0] + after[1][0]),
             "the resumed run's rows: the shards' sum, shard 1's from the record")
        m = p["metrics"]["revenue"]
        h.eq((m["before"], m["after"]), (None, None),
             "the metric's total, shard 1 not read again")
        h.eq([(x["shard"], x["before"], x["after"]) for x in m["shards"]],
             [(1, None, None), (2, before[1][1], after[1][1])], "the metric per shard")
        h.eq(sorted(c["shard"] for c in p["checks"] if c["name"] == "low_stores"), [2],
             "the checks of the shard run again")
        d.stop()
    finally:
        for srv in srvs:
            srv.close()


def test_trend_judged_on_the_sums():
    """A metric with trend: judged once a partition, on the sum over the
    shards (the value its history holds), not once a shard on the shard's
    part of it: one trend:revenue check, no shard, its value the total."""
    srvs = tc.two_shards()
    try:
        conf = tc.shard_config(srvs, listed=True) + "\n".join(
            "  " + line if line else line for line in METRICS.replace(
                "revenue: sum(revenue_cents)",
                "revenue: {sql: sum(revenue_cents), trend: {last: 7, max_sigma: 100}}"
            ).split("\n"))
        d = h.Daemon(config=conf, clock=None, name="chshtrend")
        req = d.enqueue("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-10",
                        "--wait")
        after = [srv.rows("SELECT sum(revenue_cents) FROM fct_local WHERE dt = '2026-02-10'",
                          "sh")[0][0] for srv in srvs]
        p = [x for x in d.json("audit", "--request", str(req))["partitions"]
             if x["partition"] == "2026-02-10"][0]
        trend = [c for c in p["checks"] if c["name"] == "trend:revenue"]
        h.eq([(c.get("shard"), c["value"]) for c in trend],
             [(None, float(sum(int(a) for a in after)))],
             "the trend check of 2026-02-10: once, on the shards' sum: %r" % trend)
        h.eq(p["metrics"]["revenue"]["after"], sum(int(a) for a in after),
             "the metric's total")
        d.stop()
    finally:
        for srv in srvs:
            srv.close()


def main():
    # the servers are the test's own (tc.two_shards); no shared one
    h.main([test_audit_sums_the_shards, test_resumed_run_metrics_unknown,
            test_trend_judged_on_the_sums])


if __name__ == "__main__":
    main()
