#!/usr/bin/env python3
"""--dry-run (issues 2 and 3): the plan, in run order, for a range crossing
weeks and months: the upstream partitions first, then each downstream
partition with the inputs it waits for, in dependency order; --json gives
the same plan as data; nothing changes in the state store or warehouse."""
import harness as h

import test_chain


def plan(d, *args):
    p = d.json("backfill", *args, "--dry-run")
    h.check(isinstance(p, dict) and isinstance(p.get("partitions"), list),
            "--dry-run --json has no partitions array: %r" % (p,))
    for e in p["partitions"]:
        for k in ("job", "partition", "downstream", "waits_for"):
            h.check(k in e, "plan entry lacks %r: %r" % (k, e))
    h.eq(p.get("total"), len(p["partitions"]), "plan total")
    return p["partitions"]


def check_order(entries):
    """Every partition a downstream entry waits for comes before it."""
    seen = set()
    for e in entries:
        for w in e["waits_for"]:
            h.check((w["job"], w["partition"]) in seen,
                    "%s %s waits for %s %s, which the plan puts later or omits"
                    % (e["job"], e["partition"], w["job"], w["partition"]))
        seen.add((e["job"], e["partition"]))


def waits(e):
    return sorted((w["job"], w["partition"]) for w in e["waits_for"])


def test_plan_crossing_weeks_and_months():
    d = h.sales_daemon(marts=True, monthly=True, name="dryrun")
    state0, wh0 = d.state_dump(), d.wh_dump()
    days = h.days("2026-01-30", "2026-02-03")
    p = plan(d, "fct_daily_sales", "--from", days[0], "--to", days[-1])
    h.eq([(e["job"], e["partition"], e["downstream"], e["waits_for"]) for e in p[:5]],
         [("fct_daily_sales", x, False, []) for x in days],
         "the upstream partitions first, oldest first")
    down = {(e["job"], e["partition"]): e for e in p[5:]}
    fact = lambda xs: sorted(("fct_daily_sales", x) for x in xs)
    want = {("mart_weekly_sales", "2026-01-26"): fact(days[:3]),
            ("mart_weekly_sales", "2026-02-02"): fact(days[3:]),
            ("mart_monthly_sales", "2026-01-01"): fact(days[:2]),
            ("mart_monthly_sales", "2026-02-01"): fact(days[2:])}
    h.eq(sorted(down), sorted(want), "downstream partitions of the plan")
    h.eq(len(p), 9, "plan length (no partition twice)")
    for k, e in down.items():
        h.eq(e["downstream"], True, "downstream flag of %s %s" % k)
        h.eq(waits(e), want[k], "waits_for of %s %s" % k)
    check_order(p)

    # The lesson's window: exactly the two weeks and one month.
    p = plan(d, "fct_daily_sales", "--from", h.WINDOW[0], "--to", h.WINDOW[1])
    h.eq(sorted((e["job"], e["partition"]) for e in p if e["downstream"]),
         [("mart_monthly_sales", "2026-02-01"), ("mart_weekly_sales", "2026-02-02"),
          ("mart_weekly_sales", "2026-02-09")], "downstream of the deploy window")
    h.eq(len(p), 8, "plan length for the deploy window")

    # --no-downstream and --reverse.
    p = plan(d, "fct_daily_sales", "--from", days[0], "--to", days[-1], "--no-downstream")
    h.eq([(e["job"], e["partition"]) for e in p], [("fct_daily_sales", x) for x in days],
         "plan with --no-downstream")
    p = plan(d, "fct_daily_sales", "--from", days[0], "--to", days[-1], "--reverse")
    h.eq([e["partition"] for e in p[:5]], days[::-1], "upstream order with --reverse")
    check_order(p)

    # The human form names every partition.
    out = d.ok("backfill", "fct_daily_sales", "--from", days[0], "--to", days[-1], "--dry-run")
    for k in days + ["2026-01-26", "2026-02-02", "2026-01-01", "2026-02-01"]:
        h.check(k in out, "the human plan does not mention %s:\n%s" % (k, out))
    h.check("mart_weekly_sales" in out and "mart_monthly_sales" in out,
            "the human plan does not name the downstream jobs:\n%s" % out)

    h.eq(d.runs(), [], "runs after dry runs")
    h.eq(d.state_dump(), state0, "state store after dry runs")
    h.eq(d.wh_dump(), wh0, "warehouse after dry runs")
    d.stop()


def test_plan_of_a_chain():
    d = h.Daemon(jobs=test_chain.JOBS, settings={"max_concurrency": 4}, name="dryrunchain")
    state0 = d.state_dump()
    days = h.days("2026-01-28", "2026-02-03")
    p = plan(d, "day", "--from", days[0], "--to", days[-1])
    h.eq([(e["job"], e["partition"]) for e in p[:7]], [("day", x) for x in days],
         "the upstream partitions first")
    rest = {(e["job"], e["partition"]): e for e in p[7:]}
    want = {("week", "2026-01-26"): [("day", x) for x in days[:5]],
            ("week", "2026-02-02"): [("day", x) for x in days[5:]],
            ("month", "2026-01-01"): [("week", "2026-01-26")],
            ("month", "2026-02-01"): [("week", "2026-01-26"), ("week", "2026-02-02")]}
    h.eq(sorted(rest), sorted(want), "downstream partitions of the chain")
    for k, e in rest.items():
        h.eq(waits(e), sorted(want[k]), "waits_for of %s %s" % k)
    check_order(p)
    h.eq(d.state_dump(), state0, "state store after a dry run")
    d.stop()


def test_downstream_stays_within_end():
    """A partition after a job's `end` does not exist (backfilld.yaml(5)): the week
    2026-03-30 straddles into April, but the month job ends at 2026-03-01,
    so April is not planned (an operator request for it is refused too)."""
    d = h.Daemon(jobs=test_chain.JOBS, settings={"max_concurrency": 4}, name="dryrunend")
    rc, out, err = d.ctl("backfill", "month", "--from", "2026-04-01", "--to", "2026-04-01",
                         "--dry-run")
    h.one_line_error(rc, out, err, 2, "backfill of month 2026-04-01, after its end")
    p = plan(d, "day", "--from", "2026-03-30", "--to", "2026-03-31")
    h.eq([(e["job"], e["partition"]) for e in p],
         [("day", "2026-03-30"), ("day", "2026-03-31"), ("week", "2026-03-30"),
          ("month", "2026-03-01")],
         "plan of the last two days (no month after the month job's end)")
    d.stop()


# Two jobs run only by operator backfills (no start): `slow` spends a few
# milliseconds counting, `fresh` never runs before the dry runs below.
ESTIMATE_JOBS = """
- name: slow
  warehouse: w
  partition: day
  concurrency: 2
  sql: |
    DELETE FROM t WHERE dt = :partition;
    INSERT INTO t (dt, n) SELECT :partition, COUNT(*) FROM (WITH RECURSIVE
      c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
      SELECT x FROM c);
- name: fresh
  warehouse: w
  partition: day
  sql: DELETE FROM t WHERE dt = :partition;
"""


def estimate(d, job):
    p = d.json("backfill", job, "--from", "2026-03-01", "--to", "2026-03-04",
               "--dry-run")
    h.check("estimate" in p, "--dry-run --json has no estimate: %r" % (p,))
    return p["estimate"]


def test_estimate_from_history():
    """The plan's estimate (issue 18): none without history (null in JSON,
    said in the table); after runs, a positive duration and warehouse time
    from the median of the job's recent runs, at its concurrency."""
    d = h.Daemon(jobs=ESTIMATE_JOBS, warehouses={"w": "CREATE TABLE t (dt TEXT, n INTEGER);"},
                 settings={"max_concurrency": 4}, clock=None, name="estimate")
    h.eq(estimate(d, "slow"), None, "estimate of a job without history")
    out = d.ok("backfill", "slow", "--from", "2026-03-01", "--to", "2026-03-04", "--dry-run")
    h.check("estimate: none" in out and "no history" in out,
            "the table does not say there is no history:\n%s" % out)

    d.backfill("slow", "2026-01-01", "2026-01-04")
    runs = [r for r in d.runs() if r["state"] == "succeeded"]
    h.eq(len(runs), 4, "successful runs of slow")
    e = estimate(d, "slow")
    h.check(isinstance(e, dict) and e.get("seconds", 0) > 0 and e.get("warehouse_seconds", 0) > 0,
            "estimate of a job with history: %r" % (e,))
    # Four partitions at concurrency 2: two waves; warehouse time: four runs.
    h.check(abs(e["warehouse_seconds"] - 2 * e["seconds"]) < 0.01,
            "warehouse time is the four runs, wall time two waves: %r" % (e,))
    h.eq(e["no_history"], [], "jobs without history")
    out = d.ok("backfill", "slow", "--from", "2026-03-01", "--to", "2026-03-04", "--dry-run")
    h.check("estimate: " in out and "warehouse time" in out and "none" not in out,
            "the table has no estimate:\n%s" % out)
    h.eq(estimate(d, "fresh"), None, "estimate of another job without history")
    d.stop()


if __name__ == "__main__":
    h.main([test_plan_crossing_weeks_and_months, test_plan_of_a_chain,
            test_downstream_stays_within_end, test_estimate_from_history])
