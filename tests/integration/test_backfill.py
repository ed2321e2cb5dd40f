#!/usr/bin/env python3
"""The lesson's fact backfill on the real daemon (issue 2).

The demo warehouse's fct_daily_sales was built without refunds for the deploy
window 2026-02-08..12.  A backfill of the window must rebuild exactly those
days with refunds included, leave every other row byte for byte as it was,
and a second backfill must change nothing.
"""
import os

import harness as h


def test_fact_backfill_repairs_window_only():
    d = h.sales_daemon(name="backfill")
    first, last = h.WINDOW
    outside = "dt NOT BETWEEN '%s' AND '%s'" % (first, last)
    others_before = d.dump("fct_daily_sales", outside)
    raw_before = d.dump("raw_sales")
    h.check(len(others_before) > 0, "seed has no fact rows outside the window")
    # The seed is wrong inside the window (refunds missing): the test would
    # be vacuous otherwise.
    truth = h.raw_truth(d, first, last)
    got = h.fact_rows(d, first, last)
    h.check(any(abs(got.get(k, (0, 0))[1] - v[1]) > 0.005 for k, v in truth.items()),
            "seed fact table already agrees with raw_sales in the window")

    out = d.backfill("fct_daily_sales", first, last, "--reason", "refund bug")
    h.assert_fact_repaired(d, first, last)
    h.eq(d.dump("fct_daily_sales", outside), others_before,
         "fct_daily_sales rows outside the window (must be untouched)")
    h.eq(d.dump("raw_sales"), raw_before, "raw_sales (must be untouched)")

    runs = d.runs()
    h.eq(sorted(r["partition"] for r in runs), h.days(first, last),
         "partitions run by the backfill")
    for r in runs:
        h.eq(r["job"], "fct_daily_sales", "run job")
        h.eq(r["state"], "succeeded", "state of run %s" % r["partition"])
        h.eq(r["attempt"], 1, "attempt of run %s" % r["partition"])
        h.check(r["error"] in (None, ""), "run %s has an error: %r" % (r["partition"], r["error"]))
        h.check(isinstance(r["code_version"], str) and r["code_version"],
                "run %s has no code_version" % r["partition"])
        h.check(h.parse_iso(r["started_at"]) <= h.parse_iso(r["finished_at"]),
                "run %s finished before it started" % r["partition"])
    h.eq(len({r["request"] for r in runs}), 1, "requests of one backfill")

    # A second backfill of the same range changes nothing at all.
    whole = d.wh_dump()
    d.backfill("fct_daily_sales", first, last, "--reason", "again")
    h.eq(d.wh_dump(), whole, "warehouse after a second identical backfill")
    runs2 = d.runs()
    h.eq(len(runs2), 2 * len(runs), "runs after the second backfill (reprocess all)")
    h.eq(len({r["request"] for r in runs2}), 2, "requests after two backfills")

    st = d.status()
    h.check("fct_daily_sales" in st, "status --json lacks fct_daily_sales: %r" % st)
    j = st["fct_daily_sales"]
    for k in ("name", "paused", "watermark", "catchup", "queued", "running",
              "succeeded", "failed", "blocked"):
        h.check(k in j, "status --json job lacks %r: %r" % (k, j))
    h.eq((j["queued"], j["running"], j["failed"], j["blocked"]), (0, 0, 0, 0),
         "status queued/running/failed/blocked after the backfills")
    h.check(j["succeeded"] >= 5, "status succeeded %r < 5" % j["succeeded"])
    h.check(j["catchup"] in ("ok", "refused", "off"), "status catchup %r" % j["catchup"])
    d.stop()


def test_reason_with_quotes_and_sql_is_data():
    d = h.sales_daemon(name="reason")
    raw_before = d.dump("raw_sales")
    reason = "x'); DROP TABLE requests; DROP TABLE raw_sales;-- \"quoted\" \\ ; ok"
    d.backfill("fct_daily_sales", "2026-02-10", "2026-02-10", "--reason", reason)
    h.assert_fact_repaired(d, "2026-02-10", "2026-02-10")
    h.eq(d.dump("raw_sales"), raw_before, "raw_sales after a reason holding SQL")
    h.check(reason in d.state_values(),
            "the reason text was not stored verbatim in the state store")
    h.eq(len(d.runs()), 1, "runs")
    d.stop()


def test_dates_file_and_reprocess():
    d = h.sales_daemon(name="datesfile")
    path = os.path.join(d.dir, "dates.txt")
    with open(path, "w") as f:
        f.write("# deploy window, two days\n2026-02-09\n\n2026-02-11\n")
    d.ok("backfill", "fct_daily_sales", "--dates-file", path, "--wait")
    runs = d.runs()
    h.eq(sorted(r["partition"] for r in runs), ["2026-02-09", "2026-02-11"],
         "partitions run from --dates-file")
    h.assert_fact_repaired(d, "2026-02-09", "2026-02-09")
    h.assert_fact_repaired(d, "2026-02-11", "2026-02-11")

    # --reprocess missing over the window: only the days never run.
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reprocess", "missing")
    runs = d.runs()
    h.eq(sorted(r["partition"] for r in runs),
         sorted(["2026-02-09", "2026-02-11"] + ["2026-02-08", "2026-02-10", "2026-02-12"]),
         "partitions after --reprocess missing (each exactly once)")
    # --reprocess failed: nothing failed, nothing runs.
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", h.WINDOW[0], "--to",
                         h.WINDOW[1], "--reprocess", "failed", "--wait")
    h.eq(rc, 0, "backfill --reprocess failed with nothing failed (stderr %r)" % err)
    h.eq(len(d.runs()), 5, "runs after --reprocess failed with nothing failed")
    h.assert_fact_repaired(d, *h.WINDOW)
    d.stop()


if __name__ == "__main__":
    h.main([test_fact_backfill_repairs_window_only,
            test_reason_with_quotes_and_sql_is_data,
            test_dates_file_and_reprocess])
