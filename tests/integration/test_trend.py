#!/usr/bin/env python3
"""Trend checks (docs/checks.md "Trend checks"): a metric held against the
job's own recent history, on the real daemon.

The lesson's fact job declares revenue: {sql: SUM(revenue_usd), trend:
{last: 28, max_sigma: 3}}.  On a SQLite warehouse and on a PostgreSQL one
(`--postgres`: exit 77 without PostgreSQL, unless
BACKFILLD_REQUIRE_POSTGRES=1):

- a backfill of the first thirteen days, oldest first, passes: the first
  seven with "not enough history", then each against the days before it
  (mean and sd in the audit, as computed here from raw);
- the fourteenth day's raw rows are ten times too large and the day was
  never loaded (no before for max_change): its run fails and rolls back,
  the audit holds value, mean, sd, history and sigma, and the failed value
  is not recorded in the history;
- with severity: warn the same day is published with a warning (runs,
  audit) and its value joins the history; the metrics file counts the
  check's outcomes (13 passed, 1 failed, 1 warned);
- the history is bounded: last + 1 values per (job, metric) after any
  number of runs, kept across a restart; a window made smaller trims it
  at reload and at start, a trend removed drops it."""
import os
import time
import statistics
import sys

import harness as h
import test_guardrails as tg

SETTINGS = {"max_concurrency": 2, "metrics_file": "m.prom"}
FIRST = ("2026-01-26", "2026-02-07")
BAD = "2026-02-08"
REST = ("2026-02-09", "2026-02-22")


def job(sev="error", last=28, min_history=None, trend=True):
    t = "last: %d, max_sigma: 3" % last
    if min_history:
        t += ", min_history: %d" % min_history
    metric = "{sql: SUM(revenue_usd), trend: {%s}, severity: %s}" % (t, sev) if trend \
        else "{sql: SUM(revenue_usd)}"
    return tg.guarded_job(tg.GOOD_SQL, metrics={"revenue": metric}).replace(
        "  retries: 0\n", "  retries: 0\n  concurrency: 1\n")


def trend_of(d, req, day):
    _, p = tg.audit_part(d, req, "fct_daily_sales", day)
    return p, tg.check_of(p, "trend:revenue")


def history(d):
    return d.state_rows("SELECT partition_key FROM trend_values WHERE job = ? AND"
                        " metric = ? ORDER BY partition_key", ("fct_daily_sales", "revenue"))


class Sales:
    """The warehouse behind the test: raw sums, sabotage, the fact's sum."""

    def __init__(self, query, write):
        self.query, self.write = query, write

    def raw(self, day):
        return float(self.query("SELECT SUM(amount_usd) FROM raw_sales WHERE dt = '%s'" % day))

    def fct(self, day):
        v = self.query("SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = '%s'" % day)
        return None if v in (None, "") else float(v)


def flow(d, sales, rewrite):
    # first load of the sabotaged day: nothing before it
    sales.write("DELETE FROM fct_daily_sales WHERE dt = '%s'" % BAD)
    req = d.enqueue("backfill", "fct_daily_sales", "--from", FIRST[0], "--to", FIRST[1],
                    "--wait")
    days = h.days(*FIRST)
    h.eq(sorted((r["partition"], r["state"]) for r in d.runs() if r["request"] == req),
         [(x, "succeeded") for x in days], "runs of the first thirteen days")
    raws = [sales.raw(x) for x in days]
    for i, day in enumerate(days):
        p, c = trend_of(d, req, day)
        h.eq((c["result"], c["history"]), ("passed", i), "trend of %s" % day)
        if i < 7:
            h.check("not enough history: %d partition" % i in c["detail"] and c["sigma"] is None,
                    "detail of %s: %r" % (day, c))
        else:
            h.check(abs(c["mean"] - statistics.mean(raws[:i])) < 0.01
                    and abs(c["stddev"] - statistics.stdev(raws[:i])) < 0.01
                    and c["sigma"] <= 3, "trend figures of %s: %r" % (day, c))
    h.eq([r[0] for r in history(d)], days, "the history after the first days")

    # ten times its neighbours, on its first load
    raw = sales.raw(BAD)
    sales.write("UPDATE raw_sales SET amount_usd = amount_usd * 10 WHERE dt = '%s'" % BAD)
    req, run = tg.fail_one(d, "fct_daily_sales", BAD)
    h.check("check trend:revenue failed for %s" % BAD in (run["error"] or ""),
            "the run's error: %r" % run["error"])
    h.eq(sales.fct(BAD), None, "the sabotaged day after the failed run (rolled back)")
    p, c = trend_of(d, req, BAD)
    h.eq((p["passed"], c["passed"], c["result"], c["severity"], c["history"]),
         (False, False, "failed", "error", 13), "audit of the sabotaged day")
    h.check(abs(c["value"] - 10 * raw) < 0.05 and abs(c["mean"] - statistics.mean(raws)) < 0.01
            and abs(c["stddev"] - statistics.stdev(raws)) < 0.01 and c["sigma"] > 20,
            "audit values of the sabotaged day: %r" % c)
    h.check("above max_sigma 3" in c["detail"], "detail %r" % c["detail"])
    h.check(BAD not in [r[0] for r in history(d)], "a failed run's value is not history")

    # severity: warn publishes it, and says so
    rewrite(job("warn"))
    n0 = len(d.runs())
    req = d.enqueue("backfill", "fct_daily_sales", "--from", BAD, "--to", BAD, "--wait")
    new = d.runs()[n0:]
    h.eq([(r["partition"], r["state"], r["warnings"]) for r in new], [(BAD, "succeeded", True)],
         "runs of the warned day")
    h.check((new[0]["error"] or "").startswith("warning: check trend:revenue failed for %s" % BAD),
            "the run's note: %r" % new[0]["error"])
    h.check(abs(sales.fct(BAD) - 10 * raw) < 0.05, "the warned day is published")
    p, c = trend_of(d, req, BAD)
    h.eq((p["passed"], c["passed"], c["result"], c["severity"]),
         (True, False, "warned", "warn"), "audit of the warned day")
    h.check(abs(c["value"] - 10 * raw) < 0.05 and c["sigma"] > 20, "warned values %r" % c)
    h.check(BAD in [r[0] for r in history(d)], "a published value is history")
    # the metrics file counts the trend check's outcomes (written on stop)
    d.stop()
    lab = 'backfilld_checks_total{job="fct_daily_sales",check="trend:revenue",result="%s"}'
    with open(os.path.join(d.dir, "m.prom")) as f:
        prom = dict(l.rsplit(" ", 1) for l in f.read().splitlines() if l and l[0] != "#")
    h.eq([prom.get(lab % r) for r in ("passed", "failed", "warned")], ["13", "1", "1"],
         "backfilld_checks_total of trend:revenue")
    d.start()

    # the bound: last + 1 values whatever the number of runs
    rewrite(job("warn", last=4, min_history=2))
    h.eq(len(history(d)), 5, "values kept after the window became 4")
    d.backfill("fct_daily_sales", *REST)
    h.eq([r[0] for r in history(d)], h.days("2026-02-18", REST[1]),
         "values kept after fourteen more runs (last 4, + 1)")
    d.restart()
    h.eq(len(history(d)), 5, "values kept across a restart")
    # a window made smaller while the daemon was down: trimmed at start
    d.stop()
    rewrite(job("warn", last=2, min_history=2), reload=False)
    d.start()
    # trimmed once the node holds the store (on a shared store, once it is
    # planner, which may come after its socket answers)
    want = h.days("2026-02-20", REST[1])
    end = time.monotonic() + 30
    while [r[0] for r in history(d)] != want and time.monotonic() < end:
        time.sleep(0.1)
    h.eq([r[0] for r in history(d)], want, "values kept after a start with last 2")
    rewrite(job(trend=False))
    h.eq(history(d), [], "values of a metric whose trend was removed")
    d.stop()


def test_sqlite():
    d = h.Daemon(jobs=job(), warehouses={"sales": h.sales_seed()}, settings=SETTINGS,
                 name="trend-lite")

    def query(sql):
        return d.query(sql)[0][0]

    def write(sql):
        con = d.wh()
        con.execute(sql)
        con.commit()
        con.close()
    def rewrite(text, reload=True):
        d.write_config(d.render(text, SETTINGS))
        if reload:
            d.ok("reload")
    flow(d, Sales(query, write), rewrite)


def test_postgres():
    import test_postgres as tp
    c = tp.cluster()
    c.fresh_db()
    d = tp.pg_daemon(job(), tp.pg_warehouse("sales"), settings=SETTINGS, name="trend-pg")

    def query(sql):
        rows = c.as_etl(sql)  # psql prints NULL as an empty line: none
        return rows[0][0] if rows else None

    def rewrite(text, reload=True):
        d.write_config(open(d.conf).read().split("jobs:\n")[0] + "jobs:\n" +
                       "\n".join("  " + l for l in text.strip("\n").split("\n")) + "\n")
        if reload:
            d.ok("reload")
    flow(d, Sales(query, lambda sql: c.as_etl(sql)), rewrite)


if __name__ == "__main__":
    h.main([test_postgres] if "--postgres" in sys.argv else [test_sqlite])
