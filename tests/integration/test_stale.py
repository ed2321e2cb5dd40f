#!/usr/bin/env python3
"""Staleness (issue 3): a fact backfill with --no-downstream leaves the marts
stale (the lesson's trap, on purpose); `stale --json` lists exactly the
affected weeks and month with the newer inputs; `backfill JOB --stale`
rebuilds exactly those; a --stale request with nothing stale succeeds, says
so, and enqueues nothing."""
import harness as h

WINDOW_DAYS = h.days(*h.WINDOW)


def stale(d):
    s = d.json("stale")
    h.check(isinstance(s, dict) and isinstance(s.get("stale"), list),
            "stale --json has no stale array: %r" % (s,))
    out = {}
    for e in s["stale"]:
        for k in ("job", "partition", "built_at", "newer_inputs"):
            h.check(k in e, "stale entry lacks %r: %r" % (k, e))
        out[(e["job"], e["partition"])] = e
    return out


def expected_inputs(part, key_of):
    return sorted(("fct_daily_sales", x) for x in WINDOW_DAYS if key_of(x) == part)


def check_entries(entries, built):
    want = {("mart_weekly_sales", "2026-02-02"): expected_inputs("2026-02-02", h.week_of),
            ("mart_weekly_sales", "2026-02-09"): expected_inputs("2026-02-09", h.week_of),
            ("mart_monthly_sales", "2026-02-01"): expected_inputs("2026-02-01", h.month_of)}
    h.eq(sorted(entries), sorted(want), "stale partitions")
    for key, e in entries.items():
        got = sorted((i["job"], i["partition"]) for i in e["newer_inputs"])
        h.eq(got, want[key], "newer_inputs of stale %s %s" % key)
        if built:
            b = h.parse_iso(e["built_at"])
            for i in e["newer_inputs"]:
                h.check(h.parse_iso(i["built_at"]) > b,
                        "stale %s %s: input %s built at %s, not after %s"
                        % (key + (i["partition"], i["built_at"], e["built_at"])))
        else:
            h.eq(e["built_at"], None, "built_at of %s %s, never built by backfilld" % key)
            for i in e["newer_inputs"]:
                h.parse_iso(i["built_at"])


def rebuild_stale(d, job, parts):
    n0 = len(d.runs())
    d.ok("backfill", job, "--stale", "--wait")
    new = d.runs()[n0:]
    h.eq(sorted((r["job"], r["partition"]) for r in new), sorted((job, p) for p in parts),
         "runs of backfill %s --stale" % job)
    h.check(all(r["state"] == "succeeded" for r in new), "runs of --stale: %r" % new)
    # Again: nothing stale, nothing enqueued, a message saying so.
    n1 = len(d.runs())
    rc, out, err = d.ctl("backfill", job, "--stale", "--wait")
    h.eq(rc, 0, "backfill %s --stale with nothing stale (stderr %r)" % (job, err))
    h.check("stale" in (out + err).lower(),
            "backfill %s --stale with nothing stale says nothing about it: %r %r" % (job, out, err))
    h.eq(len(d.runs()), n1, "runs after a --stale request with nothing stale")


def test_no_downstream_then_stale_fresh_marts():
    """The seeded marts were never built by backfilld (built_at null)."""
    # The test clock: nothing due, so the schedule builds nothing at start.
    d = h.sales_daemon(marts=True, monthly=True, name="stale1")
    h.eq(stale(d), {}, "stale partitions before anything landed")
    marts_before = d.dump("mart_weekly_sales")
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--no-downstream")
    h.assert_fact_repaired(d, *h.WINDOW)
    h.eq([r["job"] for r in d.runs() if r["job"] != "fct_daily_sales"], [],
         "downstream runs of a --no-downstream backfill")
    h.eq(d.dump("mart_weekly_sales"), marts_before, "the weekly mart (not rebuilt: stale)")
    check_entries(stale(d), built=False)

    others = d.dump("mart_weekly_sales", "week_start NOT IN ('2026-02-02', '2026-02-09')")
    rebuild_stale(d, "mart_weekly_sales", ["2026-02-02", "2026-02-09"])
    h.eq(d.dump("mart_weekly_sales", "week_start NOT IN ('2026-02-02', '2026-02-09')"), others,
         "weeks outside the stale set (unchanged)")
    for wk in ("2026-02-02", "2026-02-09"):
        [(got,)] = d.query("SELECT revenue_usd FROM mart_weekly_sales WHERE week_start = ?", (wk,))
        [(want,)] = d.query("SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt >= ? "
                            "AND dt < date(?, '+7 days')", (wk, wk))
        h.check(abs(got - want) < 0.005, "week %s: %.2f, the fact says %.2f" % (wk, got, want))
    left = stale(d)
    h.eq(sorted(left), [("mart_monthly_sales", "2026-02-01")], "stale after the weekly rebuild")
    rebuild_stale(d, "mart_monthly_sales", ["2026-02-01"])
    h.eq(stale(d), {}, "stale after both rebuilds")
    d.stop()


def test_no_downstream_after_built():
    """The marts were built by backfilld, then their inputs landed again."""
    d = h.sales_daemon(marts=True, monthly=True, clock=None, name="stale2")
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1])
    h.eq(stale(d), {}, "stale partitions after a backfill with its downstream")
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--no-downstream")
    check_entries(stale(d), built=True)
    rebuild_stale(d, "mart_weekly_sales", ["2026-02-02", "2026-02-09"])
    rebuild_stale(d, "mart_monthly_sales", ["2026-02-01"])
    h.eq(stale(d), {}, "stale after the rebuilds")
    # The stale set survives a restart (it lives in the state store).
    d.backfill("fct_daily_sales", "2026-02-16", "2026-02-16", "--no-downstream")
    d.restart()
    h.eq(sorted(stale(d)), [("mart_monthly_sales", "2026-02-01"),
                            ("mart_weekly_sales", "2026-02-16")], "stale after a restart")
    d.stop()


if __name__ == "__main__":
    h.main([test_no_downstream_then_stale_fresh_marts, test_no_downstream_after_built])
