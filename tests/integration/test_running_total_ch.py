#!/usr/bin/env python3
"""A running total on a ClickHouse warehouse (issue 41; test_running_total
does the same on SQLite, test_running_total_pg on PostgreSQL):
revenue_to_date's day D is D-1's total plus the lesson's fact of D, both
jobs write-audit-publish (table, partition_column): each day's SELECT
fills the stage, reading the previous day from the total's own live
table, where the day before was published by its own run.

- built from the buggy fact (config/clickhouse/sales.sql), then the
  fact's 2026-02-08..12 repaired: the total's 02-08..02-22 each run once,
  strictly in order (each started after the one before finished, and
  after its fact day), with concurrency 4 on the job; nothing else runs;
  the table then equals a recompute from the fact, nothing is stale, no
  stage row or mark is left;
- a sale of x on 02-09 and a refund of x on 02-10 and the same repair: cut-off (the
  ClickHouse fingerprint of the live partition before and of the stage
  after) runs the total's 02-09 and 02-10 only, 02-08 and 02-11..22
  skipped, and the table still equals a recompute.

The server is a throwaway clickhouse-server (tools/chserver.py), stopped
whatever the outcome; exit 77 without it or the ClickHouse driver (unless
BACKFILLD_REQUIRE_CLICKHOUSE=1)."""

import harness as h
import test_clickhouse as tc

FIRST, LAST = h.ALL_DAYS                 # 2026-01-26 .. 2026-02-22
REPAIRED = h.days(*h.WINDOW)             # 2026-02-08 .. 2026-02-12
CASCADE = h.days("2026-02-08", LAST)     # what the repair rebuilds of the total

JOBS = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  concurrency: 4
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  sql: |
    SELECT dt, store_id, count(), sum(amount_cents)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
- name: revenue_to_date
  warehouse: sales
  partition: day
  start: 2026-01-26
  concurrency: 4
  max_backfill: 40
  table: revenue_to_date
  partition_column: dt
  key: [dt]
  upstream:
    - fct_daily_sales
    - {job: revenue_to_date, lookback: 1}
  sql: |
    SELECT :partition,
      (SELECT sum(revenue_cents) FROM revenue_to_date WHERE dt = :partition - 1)
      + (SELECT sum(revenue_cents) FROM fct_daily_sales WHERE dt = :partition)
"""


def recompute(db, what):
    """Every day of revenue_to_date, one row each, equals the fact summed
    up to it."""
    got = tc.SRV.rows("SELECT t.dt, t.revenue_cents FROM revenue_to_date t ORDER BY t.dt", db)
    h.eq([r[0] for r in got], h.days(FIRST, LAST), "revenue_to_date days %s" % what)
    truth = dict(tc.SRV.rows(
        "SELECT d, sumIf(revenue_cents, dt <= d) FROM fct_daily_sales"
        " ARRAY JOIN arrayMap(x -> toDate('%s') + x, range(28)) AS d GROUP BY d" % FIRST, db))
    for dt, total in got:
        h.eq(int(total), int(truth[dt]), "revenue_to_date %s %s (a recompute)" % (dt, what))


def total_runs(d, before):
    new = d.runs()[before:]
    return new, sorted(h.by_job(new, "revenue_to_date"), key=lambda r: r["started_at"])


def one_after_another(runs, what):
    """Each run (by start) started after the one before it finished: no
    two days in one run (the days of one run share its start), none
    overlapping."""
    h.eq(len({r["started_at"] for r in runs}), len(runs), "%s: distinct starts" % what)
    for a, b in zip(runs, runs[1:]):
        h.check(h.parse_iso(b["started_at"]) >= h.parse_iso(a["finished_at"]),
                "%s: %s started before %s finished" % (what, b["partition"], a["partition"]))


def clean(db, what):
    h.eq(tc.stage_leftovers(db), {}, "stage rows left %s" % what)
    h.eq(tc.marks_left(db), {}, "marks left %s" % what)


def test_running_total_on_clickhouse():
    db = tc.fresh_db()
    tc.SRV.q("CREATE TABLE revenue_to_date (dt Date, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY dt ORDER BY dt", db)
    d = h.Daemon(config=tc.ch_config(db, JOBS),
                 clock=None, name="chrtd")
    d.backfill("revenue_to_date", FIRST, LAST)
    recompute(db, "from the buggy fact")
    bug = tc.SRV.q("SELECT revenue_cents FROM revenue_to_date WHERE dt = '%s'" % LAST, db)

    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "refund bug")
    new, total = total_runs(d, before)
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in new),
         sorted([("fct_daily_sales", x, "succeeded") for x in REPAIRED] +
                [("revenue_to_date", x, "succeeded") for x in CASCADE]),
         "the runs of the repair (each day of the total once, nothing else)")
    h.eq([r["partition"] for r in total], CASCADE, "the total's runs by start")
    one_after_another(total, "the cascade")
    fact_done = {r["partition"]: h.parse_iso(r["finished_at"])
                 for r in h.by_job(new, "fct_daily_sales")}
    for r in total:
        if r["partition"] in fact_done:
            h.check(h.parse_iso(r["started_at"]) >= fact_done[r["partition"]],
                    "revenue_to_date %s started before its fact day landed" % r["partition"])
    recompute(db, "after the repair")
    h.check(tc.SRV.q("SELECT revenue_cents FROM revenue_to_date WHERE dt = '%s'" % LAST, db)
            != bug, "the newest day kept the buggy total")
    h.eq(d.json("stale")["stale"], [], "stale after the repair")
    clean(db, "after the repair")

    # a sale of x on 02-09 and a refund of x on 02-10 (a sale moved, without
    # a mutation): the fact's 02-09 and 02-10 change, the total's 02-09
    # changes, its 02-10 comes out identical, so 02-11..22 are skipped
    tc.SRV.q("INSERT INTO raw_sales VALUES (90001, '2026-02-09', 1, 4321),"
             " (90002, '2026-02-10', 2, -4321)", db)
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "a sale moved")
    new, total = total_runs(d, before)
    want = {x: "skipped" for x in CASCADE}
    want["2026-02-09"] = want["2026-02-10"] = "succeeded"
    h.eq({r["partition"]: r["state"] for r in total}, want,
         "the total's days after the moved sale (cut-off)")
    recompute(db, "after the cut-off")
    h.eq(d.json("stale")["stale"], [], "stale after the cut-off")
    clean(db, "after the cut-off")
    d.stop()


# the total with batch: true (SCHED-9): the cascade's days of a request are
# one run, whose stage is filled once over its interval
# (:partition_start..:partition_end): each day of it the day before the
# batch (read from the live table, built) plus the fact summed from the
# batch's first day to it, set-based
BATCH_TOTAL = JOBS[:JOBS.index("  sql: |\n    SELECT :partition,")] + """  batch: true
  sql: |
    SELECT d,
      (SELECT sum(revenue_cents) FROM revenue_to_date WHERE dt = :partition_start - 1)
      + sumIf(f.revenue_cents, f.dt <= d)
    FROM fct_daily_sales AS f
    ARRAY JOIN arrayMap(x -> :partition_start + x,
                        range(toUInt32(:partition_end - :partition_start))) AS d
    WHERE f.dt >= :partition_start AND f.dt < :partition_end
    GROUP BY d
"""


def one_batch(runs, what):
    """The runs are one batch run: one start, one end, every day of it."""
    h.eq(len({(r["started_at"], r["finished_at"]) for r in runs}), 1,
         "%s: one run" % what)


def test_batch_runs_the_cascade_as_one():
    """batch: true on a running total: its own named days (the first
    build) are one run, and so is its cascade (the repair), started after
    the repair's last fact day landed; the table equals a recompute and
    no stage row or mark is left.  Each batch fills its stage by one
    statement although the job's concurrency is 4: its SQL seeds each
    day from the day before the batch, so it cannot be split."""
    tc.SRV.q("SYSTEM FLUSH LOGS")
    tc.SRV.q("TRUNCATE TABLE system.query_log")
    db = tc.fresh_db()
    tc.SRV.q("CREATE TABLE revenue_to_date (dt Date, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY dt ORDER BY dt", db)
    d = h.Daemon(config=tc.ch_config(db, BATCH_TOTAL), clock=None, name="chrtdbatch")
    d.backfill("revenue_to_date", FIRST, LAST)
    recompute(db, "from the buggy fact, batch: true")
    built = d.runs()
    h.eq(sorted(r["partition"] for r in built), h.days(FIRST, LAST), "the first build's days")
    one_batch(built, "the first build (batch: true)")
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "refund bug")
    new, total = total_runs(d, before)
    h.eq(sorted((r["partition"], r["state"]) for r in total),
         [(x, "succeeded") for x in CASCADE], "the cascade's days (batch: true)")
    one_batch(total, "the cascade (batch: true)")
    fact_done = max(h.parse_iso(r["finished_at"]) for r in h.by_job(new, "fct_daily_sales"))
    h.check(h.parse_iso(total[0]["started_at"]) >= fact_done,
            "the cascade's batch started before the repair's last fact day landed")
    recompute(db, "after the repair, batch: true")
    h.eq(d.json("stale")["stale"], [], "stale after the repair, batch: true")
    clean(db, "after the repair, batch: true")
    tc.SRV.q("SYSTEM FLUSH LOGS")
    h.eq(tc.SRV.q("SELECT count() FROM system.query_log WHERE type = 2 AND query LIKE"
                  " 'INSERT INTO `_backfilld_stage_revenue_to_date`%'").strip(), "2",
         "the stage fills of the two batches (the first build, the cascade)")
    d.stop()


def main():
    tc.start_server(query_log=True)
    h.main([test_running_total_on_clickhouse, test_batch_runs_the_cascade_as_one])


if __name__ == "__main__":
    main()
