#!/usr/bin/env python3
"""batch: true (backfilld.yaml(5), batch): all partitions of a request
run as one run over a backfill_manifest table, with the same results as
per-partition runs, checks per partition, and the downstream weeks after."""
import harness as h

BATCH_FACT = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  batch: true
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  sql: |
    DELETE FROM fct_daily_sales WHERE dt IN (SELECT partition_key FROM backfill_manifest);
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales
    WHERE dt IN (SELECT partition_key FROM backfill_manifest) GROUP BY dt, store_id;
  checks:
    - name: reconciles_with_raw
      sql: SELECT (SELECT ROUND(SUM(revenue_usd),2) FROM fct_daily_sales WHERE dt = :partition)
                IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)
"""


def marts(d):
    return d.query("SELECT week_start, ROUND(revenue_usd, 2) FROM mart_weekly_sales"
                   " ORDER BY week_start")


def test_batch_matches_per_partition():
    per = h.sales_daemon(marts=True, name="perpart")
    per.backfill("fct_daily_sales", *h.WINDOW)
    per_fact = h.fact_rows(per, *h.ALL_DAYS)

    d = h.Daemon(jobs=BATCH_FACT + h.WEEKLY_JOB, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 4}, name="batch")
    out = d.backfill("fct_daily_sales", *h.WINDOW)
    h.check("7 succeeded, 0 failed" in out, "backfill --wait summary: %r" % out)
    h.assert_fact_repaired(d, *h.WINDOW)
    h.eq(h.fact_rows(d, *h.ALL_DAYS), per_fact, "fact table: batch against per-partition")
    h.eq(marts(d), marts(per), "weekly mart: batch against per-partition")

    runs = d.runs()
    fact = h.by_job(runs, "fct_daily_sales")
    h.eq(sorted(r["partition"] for r in fact), h.days(*h.WINDOW), "fact partitions run")
    h.eq(len({r["started_at"] for r in fact}), 1,
         "one batch run: every partition's run shares its start time")
    h.check(all(r["state"] == "succeeded" for r in fact), "batch runs: %r" % fact)
    weeks = h.by_job(runs, "mart_weekly_sales")
    h.eq(sorted(r["partition"] for r in weeks), ["2026-02-02", "2026-02-09"], "weeks rebuilt")
    last_fact = max(h.parse_iso(r["finished_at"]) for r in fact)
    h.check(all(h.parse_iso(r["started_at"]) >= last_fact for r in weeks),
            "a week started before the batch that feeds it finished")

    # the checks ran once per partition inside the batch's transaction
    audit = d.json("audit", "--request", str(runs[0]["request"]))
    for p in audit["partitions"]:
        if p["job"] != "fct_daily_sales":
            continue
        names = sorted(c["name"] for c in p["checks"])
        h.eq(names, ["key_unique", "min_rows", "reconciles_with_raw"],
             "checks of %s" % p["partition"])
        h.check(all(c["passed"] for c in p["checks"]), "checks of %s: %r" % (p["partition"], p))


def test_batch_check_failure_rolls_back_all():
    bad = BATCH_FACT.replace("IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)",
                             "IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition"
                             " AND :partition <> '2026-02-10')")
    d = h.Daemon(jobs=bad, warehouses={"sales": h.sales_seed()}, name="batchbad")
    before = h.fact_rows(d, *h.ALL_DAYS)
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", h.WINDOW[0], "--to", h.WINDOW[1],
                         "--wait")
    h.eq(rc, 1, "a batch whose check fails for one partition (%r %r)" % (out, err))
    h.check("2026-02-10" in out and "reconciles_with_raw" in out,
            "the summary names the failed check and partition: %r" % out)
    h.eq(h.fact_rows(d, *h.ALL_DAYS), before, "the whole batch rolled back")


BATCH_WEEKS = h.WEEKLY_JOB.replace("  sql: |", "  batch: true\n  sql: |").replace(
    "DELETE FROM mart_weekly_sales WHERE week_start = :partition;",
    "DELETE FROM mart_weekly_sales WHERE week_start IN"
    " (SELECT partition_key FROM backfill_manifest);").replace(
    "SELECT :partition, SUM(revenue_usd) FROM fct_daily_sales\n"
    "    WHERE dt >= :partition_start AND dt < :partition_end;",
    "SELECT m.partition_key, SUM(f.revenue_usd) FROM backfill_manifest m\n"
    "    JOIN fct_daily_sales f ON f.dt >= m.partition_start AND f.dt < m.partition_end\n"
    "    GROUP BY m.partition_key;")


def test_batch_downstream_weeks_one_run():
    """The weeks a batch of days feeds, ready at once, are one batch run
    of their batch: true job (one start in the log), with the
    per-partition results."""
    h.check("backfill_manifest m" in BATCH_WEEKS and "batch: true" in BATCH_WEEKS,
            "the weekly job was not made a batch job:\n%s" % BATCH_WEEKS)
    per = h.sales_daemon(marts=True, name="perweeks")
    per.backfill("fct_daily_sales", *h.WINDOW)
    d = h.Daemon(jobs=BATCH_FACT + BATCH_WEEKS, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 4}, name="batchweeks")
    out = d.backfill("fct_daily_sales", *h.WINDOW)
    h.check("7 succeeded, 0 failed" in out, "backfill --wait summary: %r" % out)
    h.eq(marts(d), marts(per), "weekly mart: batch weeks against per-partition")
    weeks = h.by_job(d.runs(), "mart_weekly_sales")
    h.eq(sorted(r["partition"] for r in weeks), ["2026-02-02", "2026-02-09"], "weeks rebuilt")
    with open(d.log, errors="replace") as f:
        starts = [ln for ln in f if "job=mart_weekly_sales" in ln and " started" in ln]
    h.eq(len(starts), 1, "the two weeks should start as one run: %r" % starts)
    h.check("partition=2026-02-02..2026-02-09" in starts[0] and
            "one batch of 2 partitions" in starts[0], "the weeks' run: %r" % starts[0])
    h.check(all(r["state"] == "succeeded" for r in weeks), "week runs: %r" % weeks)


if __name__ == "__main__":
    h.main([test_batch_matches_per_partition, test_batch_check_failure_rolls_back_all,
            test_batch_downstream_weeks_one_run])
