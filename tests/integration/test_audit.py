#!/usr/bin/env python3
"""The audit report (issue 7) of the lesson's backfill, on the real daemon.

The fact job and the weekly mart declare their tables and a revenue metric;
the backfill of the deploy window 2026-02-08..12 repairs the refunds the
buggy build dropped.  `audit --request N --json` must show, per day, rows
and revenue before and after (after < before where raw_sales has refunds,
both equal to raw_sales' sums), the checks that passed, and the two weeks
rebuilt downstream with their own before and after; the text form ends
with a one-line summary."""
import re

import harness as h

FACT = h.fact_job(1).replace("  retries: 0\n", """  retries: 0
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  min_rows: 1
  metrics:
    revenue: {sql: SUM(revenue_usd), max_change: 50%}
    stores: COUNT(DISTINCT store_id)
""")

WEEKLY = h.WEEKLY_JOB.replace("  upstream: [fct_daily_sales]\n", """  upstream: [fct_daily_sales]
  table: mart_weekly_sales
  partition_column: week_start
  key: [week_start]
  metrics:
    revenue: {sql: SUM(revenue_usd), max_change: 50%}
""")

WEEKS = ["2026-02-02", "2026-02-09"]


def close(a, b, what):
    h.check(a is not None and abs(a - b) < 0.005, "%s: expected %.2f, got %r" % (what, b, a))


def test_audit_of_the_lessons_backfill():
    h.check("table: fct_daily_sales" in FACT and "table: mart_weekly_sales" in WEEKLY,
            "job templates changed in harness.py")
    d = h.Daemon(jobs=FACT + WEEKLY, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 4}, name="audit")
    days = h.days(*h.WINDOW)
    raw_all = {r[0]: r[1] for r in d.query(
        "SELECT dt, SUM(amount_usd) FROM raw_sales GROUP BY dt")}
    raw_pos = {r[0]: r[1] for r in d.query(
        "SELECT dt, SUM(amount_usd) FROM raw_sales WHERE amount_usd > 0 GROUP BY dt")}
    refunds = {r[0]: r[1] for r in d.query(
        "SELECT dt, COUNT(*) FROM raw_sales WHERE amount_usd < 0 GROUP BY dt")}
    fact_before = {r[0]: r[1] for r in d.query(
        "SELECT dt, SUM(revenue_usd) FROM fct_daily_sales GROUP BY dt")}
    mart_before = dict(d.query("SELECT week_start, revenue_usd FROM mart_weekly_sales"))
    h.check(any(refunds.get(x) for x in days), "the demo data has refunds in the window")

    out = d.backfill("fct_daily_sales", *h.WINDOW)
    m = re.search(r"[Rr]equest\D{0,4}(\d+)", out)
    h.check(m, "backfill --wait printed no request id: %r" % out)
    req = int(m.group(1))
    h.assert_fact_repaired(d, *h.WINDOW)

    a = d.json("audit", "--request", req)
    h.eq((a.get("request"), a.get("job")), (req, "fct_daily_sales"), "audit request and job")
    parts = {(p["job"], p["partition"]): p for p in a["partitions"]}
    h.eq(sorted(parts), sorted([("fct_daily_sales", x) for x in days]
                               + [("mart_weekly_sales", w) for w in WEEKS]),
         "audited partitions (the window and its two weeks)")
    for p in a["partitions"]:
        for k in ("job", "partition", "downstream", "state", "run", "code_version",
                  "config_hash", "rows_before", "rows_after", "rows_changed", "metrics",
                  "checks", "error", "passed"):
            h.check(k in p, "audit partition lacks %r: %r" % (k, p))
        h.eq(p["passed"], True, "passed of %s %s" % (p["job"], p["partition"]))
        h.eq(p["state"], "succeeded", "state of %s %s" % (p["job"], p["partition"]))
        h.eq(p["error"], None, "error of %s %s" % (p["job"], p["partition"]))
        h.check(isinstance(p["code_version"], str) and p["code_version"],
                "code_version of %s %s: %r" % (p["job"], p["partition"], p["code_version"]))
        h.check(all(c["passed"] for c in p["checks"]),
                "checks of %s %s: %r" % (p["job"], p["partition"], p["checks"]))
    runs = {(r["job"], r["partition"]): r for r in d.runs("--request", req)}
    for key, p in parts.items():
        h.eq(p["code_version"], runs[key]["code_version"], "audit vs runs code_version of %s" % (key,))

    for x in days:
        p = parts[("fct_daily_sales", x)]
        h.eq(p["downstream"], False, "downstream of day %s" % x)
        h.eq((p["rows_before"], p["rows_after"]), (3, 3), "rows before/after of %s" % x)
        # what its statements wrote: the DELETE of 3 rows, the INSERT of 3
        h.eq(p["rows_changed"], 6, "rows changed of %s" % x)
        h.eq(p["metrics"]["rows"], {"before": 3, "after": 3, "change_pct": 0},
             "metrics.rows of %s" % x)
        h.eq(p["metrics"]["stores"]["after"], 3, "metrics.stores.after of %s" % x)
        rev = p["metrics"]["revenue"]
        close(rev["before"], fact_before[x], "revenue before of %s (the buggy build)" % x)
        close(rev["before"], raw_pos[x], "revenue before of %s (= raw sales without refunds)" % x)
        close(rev["after"], raw_all[x], "revenue after of %s (= raw sales with refunds)" % x)
        close(rev["change_pct"], (raw_all[x] - raw_pos[x]) / abs(raw_pos[x]) * 100,
              "revenue change_pct of %s" % x)
        if refunds.get(x):
            h.check(rev["after"] < rev["before"],
                    "day %s has %d refunds: revenue after %r not below before %r"
                    % (x, refunds[x], rev["after"], rev["before"]))
        else:
            close(rev["after"], rev["before"], "revenue of %s (no refunds)" % x)
        names = sorted(c["name"] for c in p["checks"])
        h.eq(names, sorted(["key_unique", "min_rows", "max_change:revenue",
                            "reconciles_with_raw"]), "checks of %s" % x)

    for w in WEEKS:
        p = parts[("mart_weekly_sales", w)]
        h.eq(p["downstream"], True, "downstream of week %s" % w)
        h.eq((p["rows_before"], p["rows_after"]), (1, 1), "rows before/after of week %s" % w)
        h.eq(p["rows_changed"], 2, "rows changed of week %s" % w)
        rev = p["metrics"]["revenue"]
        truth = sum(v for x, v in raw_all.items() if h.week_of(x) == w)
        close(rev["before"], mart_before[w], "revenue before of week %s" % w)
        close(rev["after"], truth, "revenue after of week %s" % w)
        h.check(rev["after"] < rev["before"], "week %s: revenue after %r not below before %r"
                % (w, rev["after"], rev["before"]))
        close(d.query("SELECT revenue_usd FROM mart_weekly_sales WHERE week_start = ?",
                      (w,))[0][0], truth, "mart_weekly_sales %s" % w)

    sm = a["summary"]
    h.eq({k: sm.get(k) for k in ("partitions", "downstream", "passed", "failed", "not_run")},
         {"partitions": 7, "downstream": 2, "passed": 7, "failed": 0, "not_run": 0},
         "audit summary")
    h.eq(sorted(sm["code_versions"]), sorted({p["code_version"] for p in a["partitions"]}),
         "summary code_versions")

    # The text form: a row per partition and the one-line summary last.
    text = d.ok("audit", "--request", req)
    lines = text.rstrip("\n").split("\n")
    for x in days + WEEKS:
        h.check(any(x in l for l in lines), "text audit has no row for %s:\n%s" % (x, text))
    head = lines[0].split()
    h.check("CHANGED" in head and head[head.index("CHANGED") - 1] == "ROWS",
            "text audit has no ROWS CHANGED column:\n%s" % text)
    row = [l for l in lines if days[0] in l][0]
    h.check(re.search(r"\s3\s+3\s+6\s", row),
            "text audit's row of %s: rows 3 -> 3, 6 changed:\n%s" % (days[0], row))
    last = lines[-1]
    h.check(re.search(r"\b7 partitions\b", last) and re.search(r"\b7 passed\b", last)
            and re.search(r"\b0 failed\b", last),
            "text audit's last line is not the summary: %r" % last)

    # Bad requests: one line, exit 2.
    h.one_line_error(*d.ctl("audit", "--request", 999), expect_rc=2,
                     what="audit of an unknown request")
    h.one_line_error(*d.ctl("audit"), expect_rc=2, what="audit without --request")
    d.stop()   # exit 0, and no sanitizer report in the log


def test_checks_column_of_a_failed_write():
    """A write that fails runs no check: the text audit says "not run",
    not "0/0 passed"."""
    broken = FACT.replace("FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;",
                          "FROM no_such_table WHERE dt = :partition GROUP BY dt, store_id;")
    h.check(broken != FACT, "the fact job's SQL changed in harness.py")
    d = h.Daemon(jobs=broken, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 1}, name="audit-failed")
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", "2026-02-09",
                         "--to", "2026-02-09", "--wait")
    h.check(rc != 0, "a backfill of a broken write succeeded: %s%s" % (out, err))
    req = int(re.search(r"[Rr]equest\D{0,4}(\d+)", out + err).group(1))
    text = d.ok("audit", "--request", req)
    row = [l for l in text.split("\n") if "2026-02-09" in l]
    h.check(row and "not run" in row[0] and "0/0" not in text,
            "the checks column of a failed write:\n%s" % text)
    d.stop()


if __name__ == "__main__":
    h.main([test_audit_of_the_lessons_backfill, test_checks_column_of_a_failed_write])
