#!/usr/bin/env python3
"""Guardrails (issue 7) on the lesson's sales data, on the real daemon.

- a sabotaged job that inserts every row twice fails key_unique, which
  names one duplicated key, and the old partition stays;
- a job that halves revenue fails max_change:revenue (naming the move) and
  is rolled back, while the lesson's fix (refunds) passes within 50%;
- --built-by after a change of the job's SQL and a reload reruns exactly
  the partitions whose latest successful build came from the old version;
- bad input: a metric that is not valid SQL and a key naming a column the
  table lacks fail the run, change no data, and say what is wrong."""
import re

import harness as h

# fct_daily_sales without its PRIMARY KEY, so that a sabotaged job can
# really write a duplicate key (with the key SQLite would refuse it first).
NO_PK = """
CREATE TABLE fct_nopk AS SELECT * FROM fct_daily_sales;
DROP TABLE fct_daily_sales;
ALTER TABLE fct_nopk RENAME TO fct_daily_sales;
"""

GOOD_SQL = """\
DELETE FROM fct_daily_sales WHERE dt = :partition;
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
"""

# The sabotage: every row twice.
DUP_SQL = """\
DELETE FROM fct_daily_sales WHERE dt = :partition;
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
UNION ALL
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
"""

# The bad deploy: revenue halved.
HALF_SQL = """\
DELETE FROM fct_daily_sales WHERE dt = :partition;
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd) / 2
FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
"""


SETTINGS = {"max_concurrency": 2}


def guarded_job(sql, key="[dt, store_id]", metrics=None, extra=""):
    """The fact job with its table declared (no checks of its own)."""
    lines = [
        "- name: fct_daily_sales",
        "  warehouse: sales",
        "  partition: day",
        "  start: 2026-01-26",
        "  end: 2026-02-22",
        "  catchup: false",
        "  retries: 0",
        "  table: fct_daily_sales",
        "  partition_column: dt",
    ]
    if key:
        lines.append("  key: %s" % key)
    lines.append("  min_rows: 1")
    if metrics:
        lines.append("  metrics:")
        for name, text in metrics.items():
            lines.append("    %s: %s" % (name, text))
    if extra:
        lines.extend("  " + l for l in extra.strip("\n").split("\n"))
    lines.append("  sql: |")
    lines.extend("    " + l for l in sql.strip("\n").split("\n"))
    return "\n".join(lines) + "\n"


def daemon(job, name, seed_extra=""):
    return h.Daemon(jobs=job, warehouses={"sales": h.sales_seed() + seed_extra},
                    settings=SETTINGS, name=name)


def rewrite(d, job):
    """A new deploy: the config rewritten with job, and reloaded."""
    d.write_config(d.render(job, SETTINGS))
    d.ok("reload")


def fail_one(d, job, day):
    """backfill JOB DAY --wait that must fail: returns (request, run)."""
    n0 = len(d.runs())
    rc, out, err = d.ctl("backfill", job, "--from", day, "--to", day, "--wait")
    h.eq(rc, 1, "exit status of a backfill whose run fails a guardrail "
         "(stdout %r, stderr %r)" % (out, err))
    new = d.runs()[n0:]
    h.eq([(r["job"], r["partition"], r["state"]) for r in new],
         [(job, day, "failed")], "runs of the failing backfill")
    return new[0]["request"], new[0]


def audit_part(d, req, job, part):
    a = d.json("audit", "--request", req)
    h.eq(a.get("request"), req, "audit --json request")
    ps = [p for p in a.get("partitions", []) if p["job"] == job and p["partition"] == part]
    h.eq(len(ps), 1, "audit partitions of %s %s in %r" % (job, part, a))
    return a, ps[0]


def check_of(p, name):
    cs = [c for c in p["checks"] if c["name"] == name]
    h.eq(len(cs), 1, "checks named %s in %r" % (name, p["checks"]))
    return cs[0]


def test_duplicate_key_rolled_back():
    day = "2026-02-03"
    d = daemon(guarded_job(DUP_SQL), "gr-dup", NO_PK)
    before = d.dump("fct_daily_sales", "dt = ?", (day,))
    h.eq(len(before), 3, "rows of %s before (three stores)" % day)
    whole = d.wh_dump()
    req, run = fail_one(d, "fct_daily_sales", day)
    err = run["error"] or ""
    m = re.search(r"duplicate key dt=(\S+), store_id=(\d+) \((\d+) rows\)", err)
    h.check("key_unique" in err and m is not None,
            "the run's error names key_unique and one duplicated key: %r" % err)
    h.eq(m.group(1), day, "the duplicated key's dt")
    h.check(m.group(2) in ("1", "2", "3"), "duplicated store_id %r" % m.group(2))
    h.eq(m.group(3), "2", "rows of the duplicated key")
    h.eq(len(re.findall(r"store_id=", err)), 1, "one duplicated key named in %r" % err)
    h.eq(d.dump("fct_daily_sales", "dt = ?", (day,)), before,
         "the partition after the failed run (the old rows)")
    h.eq(d.wh_dump(), whole, "the warehouse after the failed run")

    _, p = audit_part(d, req, "fct_daily_sales", day)
    h.eq(p["passed"], False, "audit passed of the failed partition")
    h.eq(p["rows_before"], 3, "audit rows_before")
    h.soft(p["rows_after"] == 6, "audit rows_after (measured in the rolled-back "
           "transaction): %r, expected 6" % (p["rows_after"],))
    c = check_of(p, "key_unique")
    h.eq(c["passed"], False, "key_unique passed")
    h.check(m.group(0) in c["detail"], "key_unique detail %r names %r"
            % (c["detail"], m.group(0)))
    h.eq(check_of(p, "min_rows")["passed"], True, "min_rows passed (6 rows >= 1)")

    # The same job fixed: passes, key_unique with it.
    rewrite(d, guarded_job(GOOD_SQL))
    req2 = d.enqueue("backfill", "fct_daily_sales", "--from", day, "--to", day, "--wait")
    _, p = audit_part(d, req2, "fct_daily_sales", day)
    h.eq(p["passed"], True, "audit passed of the fixed job")
    h.eq(check_of(p, "key_unique")["passed"], True, "key_unique of the fixed job")
    h.eq((p["rows_before"], p["rows_after"]), (3, 3), "rows before/after of the fixed job")
    h.eq(d.dump("fct_daily_sales", "dt = ?", (day,)), before,
         "the partition rebuilt by the fixed job (same rows)")
    d.stop()   # exit 0, and no sanitizer report in the log


def test_min_rows():
    """A job that writes nothing for a day fails min_rows: 1."""
    empty = GOOD_SQL.replace("WHERE dt = :partition GROUP", "WHERE dt = :partition AND 0 GROUP")
    d = daemon(guarded_job(empty), "gr-min")
    day = "2026-02-04"
    before = d.dump("fct_daily_sales", "dt = ?", (day,))
    _, run = fail_one(d, "fct_daily_sales", day)
    h.check("min_rows" in (run["error"] or "") and "0 rows" in run["error"],
            "error names min_rows and the count: %r" % run["error"])
    h.eq(d.dump("fct_daily_sales", "dt = ?", (day,)), before, "partition after min_rows failure")
    d.stop()   # exit 0, and no sanitizer report in the log


def test_max_change_rolled_back():
    metrics = {"revenue": "{sql: SUM(revenue_usd), max_change: 30%}"}
    d = daemon(guarded_job(HALF_SQL, metrics=metrics), "gr-half")
    day = "2026-02-03"
    before = d.dump("fct_daily_sales", "dt = ?", (day,))
    rev = d.query("SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = ?", (day,))[0][0]
    whole = d.wh_dump()
    req, run = fail_one(d, "fct_daily_sales", day)
    err = run["error"] or ""
    h.check("max_change:revenue" in err, "error names max_change:revenue: %r" % err)
    h.check("-50.0%" in err, "error names the move (-50.0%%): %r" % err)
    mv = re.search(r"\((-?[\d.]+) -> (-?[\d.]+)\)", err)
    h.check(mv and abs(float(mv.group(1)) - rev) < 0.006
            and abs(float(mv.group(2)) - rev / 2) < 0.011,
            "error names before -> after (%.2f -> %.2f): %r" % (rev, rev / 2, err))
    h.eq(d.dump("fct_daily_sales", "dt = ?", (day,)), before, "partition after rollback")
    h.eq(d.wh_dump(), whole, "warehouse after rollback")
    _, p = audit_part(d, req, "fct_daily_sales", day)
    mr = p["metrics"].get("revenue")
    h.check(mr is not None, "audit metrics.revenue: %r" % p["metrics"])
    h.check(abs(mr["before"] - rev) < 0.005 and abs(mr["after"] - rev / 2) < 0.005,
            "audit revenue before/after %r, expected %.2f/%.2f" % (mr, rev, rev / 2))
    h.check(abs(mr["change_pct"] + 50) < 0.01, "audit change_pct %r" % mr)
    h.eq(check_of(p, "max_change:revenue")["passed"], False, "max_change:revenue passed")
    h.eq(p["metrics"]["rows"]["before"], 3, "audit metrics.rows.before")

    # The lesson's fix over the deploy window moves revenue by the refunds,
    # well within 30%: every day passes, and the fact table is repaired.
    rewrite(d, guarded_job(GOOD_SQL, metrics=metrics))
    d.backfill("fct_daily_sales", *h.WINDOW)
    h.assert_fact_repaired(d, *h.WINDOW)


def code_version_of(d, day, state="succeeded"):
    rs = [r for r in d.runs("--job", "fct_daily_sales")
          if r["partition"] == day and r["state"] == state]
    h.check(rs, "no %s run of %s" % (state, day))
    return rs[-1]["code_version"]
    d.stop()   # exit 0, and no sanitizer report in the log


def test_built_by():
    first, last = "2026-02-01", "2026-02-10"
    all_days = h.days(first, last)
    d = daemon(guarded_job(GOOD_SQL), "gr-built")
    d.backfill("fct_daily_sales", first, last)
    v1s = {code_version_of(d, x) for x in all_days}
    h.eq(len(v1s), 1, "code versions of the first build")
    v1 = v1s.pop()
    h.check(isinstance(v1, str) and v1, "code_version %r" % v1)

    # Reloading the same definition keeps the version.
    d.ok("reload")
    d.backfill("fct_daily_sales", "2026-02-10", "2026-02-10")
    h.eq(code_version_of(d, "2026-02-10"), v1, "code_version after reloading the same job")

    # A new deploy: the SQL changes (same result, other text).
    rewrite(d, guarded_job(GOOD_SQL.replace("SUM(amount_usd)", "SUM(amount_usd) + 0")))
    d.backfill("fct_daily_sales", "2026-02-05", "2026-02-06")
    v2 = code_version_of(d, "2026-02-05")
    h.check(v2 != v1, "code_version unchanged (%r) after the SQL changed" % v2)
    h.eq(code_version_of(d, "2026-02-06"), v2, "code_version of 2026-02-06")

    want = [x for x in all_days if x not in ("2026-02-05", "2026-02-06")]
    # Narrowed by --from/--to, dry run: the old version's days within.
    dry = d.json("backfill", "fct_daily_sales", "--built-by", v1,
                 "--from", "2026-02-03", "--to", "2026-02-08", "--dry-run")
    h.eq([(p["job"], p["partition"]) for p in dry["partitions"]],
         [("fct_daily_sales", x) for x in ("2026-02-03", "2026-02-04", "2026-02-07", "2026-02-08")],
         "dry run of --built-by v1 --from 2026-02-03 --to 2026-02-08")
    # The version built nothing else: no runs from the dry run.
    n0 = len(d.runs())
    d.ok("backfill", "fct_daily_sales", "--built-by", v1, "--wait")
    new = d.runs()[n0:]
    h.eq(sorted(r["partition"] for r in new), want, "partitions rerun by --built-by v1")
    h.check(all(r["state"] == "succeeded" and r["code_version"] == v2 for r in new),
            "runs of --built-by: %r" % new)
    h.assert_fact_repaired(d, first, last)
    # Nothing is left from v1.
    dry = d.json("backfill", "fct_daily_sales", "--built-by", v1, "--dry-run")
    h.eq(dry["partitions"], [], "dry run of --built-by v1 after the rerun")
    # An unknown version is no error, just nothing to do.
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--built-by", "0123456789abcdef", "--wait")
    print("  --built-by unknown: rc %d out %r err %r" % (rc, out, err))
    h.check(rc in (0, 2), "--built-by unknown version: exit %d, %r %r" % (rc, out, err))
    h.eq(len(d.runs()), n0 + len(new), "runs after --built-by an unknown version")
    d.stop()   # exit 0, and no sanitizer report in the log


def test_bad_metric_sql():
    metrics = {"revenue": "{sql: 'SUM(revenue_usd', max_change: 50%}"}
    d = daemon(guarded_job(GOOD_SQL.replace("SUM(amount_usd)", "SUM(amount_usd) * 2"),
                           metrics=metrics), "gr-badmetric")
    whole = d.wh_dump()
    _, run = fail_one(d, "fct_daily_sales", "2026-02-03")
    err = run["error"] or ""
    print("  error: %s" % err)
    h.check("revenue" in err and "metric" in err,
            "error names the metric revenue: %r" % err)
    h.eq(d.wh_dump(), whole, "warehouse after a run with a broken metric")
    d.stop()   # exit 0, and no sanitizer report in the log


def test_key_missing_column():
    d = daemon(guarded_job(GOOD_SQL.replace("SUM(amount_usd)", "SUM(amount_usd) * 2"),
                           key="[dt, shop_id]"), "gr-badkey")
    whole = d.wh_dump()
    req, run = fail_one(d, "fct_daily_sales", "2026-02-03")
    err = run["error"] or ""
    print("  error: %s" % err)
    h.check("key_unique" in err and "shop_id" in err,
            "error names key_unique and the column: %r" % err)
    # Not a bogus duplicate: SQLite reads an unknown "shop_id" as the
    # string 'shop_id' unless the column is qualified.
    h.check("duplicate key" not in err and "no such column" in err,
            "error says the column does not exist: %r" % err)
    h.eq(d.wh_dump(), whole, "warehouse after a run with a bad key")
    _, p = audit_part(d, req, "fct_daily_sales", "2026-02-03")
    h.eq(check_of(p, "key_unique")["passed"], False, "audit key_unique of the bad key")
    d.stop()   # exit 0, and no sanitizer report in the log


def test_partition_column_missing():
    job = guarded_job(GOOD_SQL).replace("partition_column: dt", "partition_column: day")
    d = daemon(job, "gr-badpcol")
    whole = d.wh_dump()
    _, run = fail_one(d, "fct_daily_sales", "2026-02-03")
    err = run["error"] or ""
    print("  error: %s" % err)
    h.check("no such column" in err and "day" in err and "min_rows" not in err,
            "error says the partition column does not exist: %r" % err)
    h.eq(d.wh_dump(), whole, "warehouse after a run with a bad partition_column")
    d.stop()   # exit 0, and no sanitizer report in the log


if __name__ == "__main__":
    h.main([test_duplicate_key_rolled_back, test_min_rows, test_max_change_rolled_back,
            test_built_by, test_bad_metric_sql, test_key_missing_column,
            test_partition_column_missing])
