#!/usr/bin/env python3
"""Downstream rebuilds (issue 3): the lessons' practice problem on the real
daemon.  Backfilling the fact table for the deploy window 2026-02-08..12
(which straddles the ISO weeks of 2026-02-02 and 2026-02-09) rebuilds exactly
those two weeks of the weekly mart and the February row of the monthly
rollup, each once and only after all of its days finished; the other weeks
and January keep their values exactly; a rerun changes nothing."""
import harness as h


def mart_truth(d, table, key, first, end_expr):
    return d.query("SELECT %s, (SELECT SUM(revenue_usd) FROM fct_daily_sales "
                   "WHERE dt >= %s AND dt < %s) FROM %s ORDER BY 1"
                   % (key, key, end_expr, table))


def assert_mart_agrees(d, weeks, months):
    for wk, truth in mart_truth(d, "mart_weekly_sales", "week_start", None,
                                "date(week_start, '+7 days')"):
        if wk in weeks:
            got = d.query("SELECT revenue_usd FROM mart_weekly_sales WHERE week_start = ?", (wk,))[0][0]
            h.check(abs(got - truth) < 0.005,
                    "mart_weekly_sales %s: %.2f, the repaired fact says %.2f" % (wk, got, truth))
    for mo, truth in mart_truth(d, "mart_monthly_sales", "month_start", None,
                                "date(month_start, '+1 month')"):
        if mo in months:
            got = d.query("SELECT revenue_usd FROM mart_monthly_sales WHERE month_start = ?", (mo,))[0][0]
            h.check(abs(got - truth) < 0.005,
                    "mart_monthly_sales %s: %.2f, the repaired fact says %.2f" % (mo, got, truth))


def assert_each_after_inputs(runs, down_job, key_of, up_job="fct_daily_sales"):
    """Each downstream partition ran once per request, after all its days."""
    by_req = {}
    for r in runs:
        by_req.setdefault(r["request"], []).append(r)
    for req, rs in by_req.items():
        ups = [r for r in rs if r["job"] == up_job]
        downs = [r for r in rs if r["job"] == down_job]
        keys = sorted({key_of(r["partition"]) for r in ups})
        h.eq(sorted(r["partition"] for r in downs), keys,
             "%s runs of request %s (each containing partition exactly once)" % (down_job, req))
        for w in downs:
            inputs = [r for r in ups if key_of(r["partition"]) == w["partition"]]
            last = max(h.parse_iso(r["finished_at"]) for r in inputs)
            h.check(h.parse_iso(w["started_at"]) >= last,
                    "%s %s started at %s before its last input finished at %s"
                    % (down_job, w["partition"], w["started_at"], last))


def test_practice_problem():
    # The real clock: the order of runs is asserted from their times.
    d = h.sales_daemon(marts=True, monthly=True, concurrency=2, clock=None, name="practice")
    weeks_out = "week_start NOT IN ('2026-02-02', '2026-02-09')"
    weekly_other = d.dump("mart_weekly_sales", weeks_out)
    monthly_jan = d.dump("mart_monthly_sales", "month_start <> '2026-02-01'")
    h.eq(len(weekly_other), 2, "seeded weeks outside the window")
    stale_before = d.dump("mart_weekly_sales", "NOT (%s)" % weeks_out)

    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "refund bug")
    h.assert_fact_repaired(d, *h.WINDOW)
    assert_mart_agrees(d, {"2026-02-02", "2026-02-09"}, {"2026-02-01"})
    h.check(d.dump("mart_weekly_sales", "NOT (%s)" % weeks_out) != stale_before,
            "the two weeks of the window were not rebuilt")
    h.eq(d.dump("mart_weekly_sales", weeks_out), weekly_other,
         "mart_weekly_sales outside the window's weeks (must keep its values exactly)")
    h.eq(d.dump("mart_monthly_sales", "month_start <> '2026-02-01'"), monthly_jan,
         "mart_monthly_sales for January (must keep its value exactly)")

    runs = d.runs()
    h.eq(sorted(r["partition"] for r in h.by_job(runs, "mart_weekly_sales")),
         ["2026-02-02", "2026-02-09"], "weekly mart partitions rebuilt")
    h.eq([r["partition"] for r in h.by_job(runs, "mart_monthly_sales")],
         ["2026-02-01"], "monthly rollup partitions rebuilt")
    h.check(all(r["state"] == "succeeded" for r in runs), "not every run succeeded: %r" % runs)
    assert_each_after_inputs(runs, "mart_weekly_sales", h.week_of)
    assert_each_after_inputs(runs, "mart_monthly_sales", h.month_of)

    # Rerun-safe: the same backfill again changes nothing.
    whole = d.wh_dump()
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "again")
    h.eq(d.wh_dump(), whole, "warehouse after a second identical backfill")
    runs = d.runs()
    assert_each_after_inputs(runs, "mart_weekly_sales", h.week_of)
    h.eq(len(h.by_job(runs, "mart_weekly_sales")), 4, "weekly runs after two backfills")
    d.stop()


def test_weeks_once_with_full_month():
    """A whole month of days at concurrency 3: five weeks, each run once."""
    d = h.sales_daemon(marts=True, monthly=True, concurrency=3, clock=None, name="weeks",
                       settings={"max_concurrency": 4})
    d.backfill("fct_daily_sales", "2026-01-26", "2026-02-22")
    runs = d.runs()
    h.eq(len(h.by_job(runs, "fct_daily_sales")), 28, "fact runs")
    assert_each_after_inputs(runs, "mart_weekly_sales", h.week_of)
    assert_each_after_inputs(runs, "mart_monthly_sales", h.month_of)
    assert_mart_agrees(d, {"2026-01-26", "2026-02-02", "2026-02-09", "2026-02-16"},
                       {"2026-01-01", "2026-02-01"})
    d.stop()


def test_backfill_of_the_downstream_job_itself():
    """Operator requests for a downstream job work like any other backfill:
    the weeks that contain the dates."""
    d = h.sales_daemon(marts=True, clock=None, name="downjob")
    fact_before = d.dump("fct_daily_sales")
    d.backfill("mart_weekly_sales", "2026-02-01", "2026-02-02")
    runs = d.runs()
    h.eq(sorted((r["job"], r["partition"]) for r in runs),
         [("mart_weekly_sales", "2026-01-26"), ("mart_weekly_sales", "2026-02-02")],
         "runs of a weekly backfill for 2026-02-01..02 (the weeks containing them)")
    h.eq(d.dump("fct_daily_sales"), fact_before, "the fact table (upstream untouched)")
    rc, out, err = d.ctl("backfill", "mart_weekly_sales", "--from", "2026-02-03",
                         "--to", "2026-02-03", "--wait")
    h.eq(rc, 0, "weekly backfill from a mid-week date (stderr %r)" % err)
    h.eq(h.by_job(d.runs(), "mart_weekly_sales")[-1]["partition"], "2026-02-02",
         "the week of a mid-week date")
    d.stop()


if __name__ == "__main__":
    h.main([test_practice_problem, test_weeks_once_with_full_month,
            test_backfill_of_the_downstream_job_itself])
