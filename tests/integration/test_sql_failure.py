#!/usr/bin/env python3
"""SQL that fails (issue 2): a failing check or statement rolls the whole
partition back (the old rows stay), the run is retried `retries` times with
backoff and then marked failed with an error naming the check, --wait exits
1, and the other partitions of the request land."""
import harness as h

FAILING_CHECK = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  retries: 1
  retry_backoff: 1s
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
  checks:
    - name: reconciles_with_raw
      sql: SELECT (SELECT ROUND(SUM(revenue_usd),2) FROM fct_daily_sales WHERE dt = :partition)
                IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)
    - name: not_the_tenth
      sql: SELECT :partition <> '2026-02-10'
"""

FAILING_STATEMENT = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  retries: 0
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
    SELECT abs(-9223372036854775807 - 1) WHERE :partition = '2026-02-11';
"""


def test_failing_check_rolls_back_and_retries():
    d = h.Daemon(jobs=FAILING_CHECK, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 2}, clock=None, name="failcheck")
    bad = "2026-02-10"
    before = d.dump("fct_daily_sales", "dt = ?", (bad,))
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", h.WINDOW[0],
                         "--to", h.WINDOW[1], "--wait")
    h.eq(rc, 1, "backfill --wait with a failing partition (stdout %r, stderr %r)" % (out, err))
    h.soft(bad in out + err, "the --wait summary does not name the failed partition %s:\n%s%s"
            % (bad, out, err))
    h.eq(d.dump("fct_daily_sales", "dt = ?", (bad,)), before,
         "fct_daily_sales for %s after its failed runs (rolled back)" % bad)
    for day in h.days(*h.WINDOW):
        if day != bad:
            h.assert_fact_repaired(d, day, day)
    runs = [r for r in d.runs() if r["partition"] == bad]
    h.eq([(r["attempt"], r["state"]) for r in runs], [(1, "failed"), (2, "failed")],
         "attempts of %s (retries: 1)" % bad)
    for r in runs:
        h.check(r["error"] and "not_the_tenth" in r["error"],
                "the error of a failed run does not name the check: %r" % r["error"])
    gap = (h.parse_iso(runs[1]["started_at"]) - h.parse_iso(runs[0]["finished_at"])).total_seconds()
    h.check(gap >= 0.9, "the retry started %.3f s after the failure (retry_backoff 1s)" % gap)
    st = d.status()["fct_daily_sales"]
    h.check(st["failed"] >= 1, "status failed count %r" % st["failed"])
    d.assert_alive()
    d.stop()


def test_failing_statement_rolls_back():
    d = h.Daemon(jobs=FAILING_STATEMENT, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 2}, name="failstmt")
    bad = "2026-02-11"
    before = d.dump("fct_daily_sales", "dt = ?", (bad,))
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", h.WINDOW[0],
                         "--to", h.WINDOW[1], "--wait")
    h.eq(rc, 1, "backfill --wait with a failing statement (stdout %r, stderr %r)" % (out, err))
    h.eq(d.dump("fct_daily_sales", "dt = ?", (bad,)), before,
         "fct_daily_sales for %s after its failed run (rolled back)" % bad)
    runs = [r for r in d.runs() if r["partition"] == bad]
    h.eq([r["state"] for r in runs], ["failed"], "runs of %s" % bad)
    h.check(runs[0]["error"] and "overflow" in runs[0]["error"].lower(),
            "the error does not carry SQLite's message: %r" % runs[0]["error"])
    ok = [r for r in d.runs() if r["state"] == "succeeded"]
    h.eq(len(ok), 4, "the other partitions of the request succeeded")
    d.stop()


def test_wait_after_the_request_finished():
    """A wait that arrives after its request finished (and left memory)
    still reports the request's real counts and a failing status."""
    d = h.Daemon(jobs="""
- name: boom
  partition: day
  command: ["sh", "-c", "exit 3"]
""", name="latewait")
    rc, out, err = d.ctl("rerun", "boom", "2026-02-10")
    h.eq(rc, 0, "rerun without --wait (%r %r)" % (out, err))
    req = int(out.split()[1].rstrip(":"))
    first = d.wait_request(req)          # finished while we asked, or before
    second = d.wait_request(req)         # certainly after: from the store
    for resp in (first, second):
        h.eq((resp.get("status"), resp.get("total"), resp.get("failed")), ("1", "1", "1"),
             "wait on a finished request: %r" % resp)
        h.check("boom 2026-02-10" in resp.get("out", ""),
                "the summary names the failed partition: %r" % resp.get("out"))
    d.stop()


if __name__ == "__main__":
    h.main([test_failing_check_rolls_back_and_retries, test_failing_statement_rolls_back, test_wait_after_the_request_finished])
