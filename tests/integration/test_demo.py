#!/usr/bin/env python3
"""The shipped example (config/example.yaml on config/demo/sales.sql), as the
README's demo runs it: the configuration is valid, a backfill of the deploy
window repairs the fact table, rebuilds exactly the weeks 2026-02-02 and
2026-02-09 and the month 2026-02, leaves the rest exactly as it was, and a
second backfill changes nothing.  (test_demo_script.py runs tools/demo.sh.)"""
import os
import sqlite3
import subprocess

import harness as h


def example_daemon(name):
    with open(h.EXAMPLE_YAML) as f:
        text = f.read()
    d = h.Daemon(config=text, clock=None, name=name, start=False)
    state = os.path.join(d.dir, "state")
    os.mkdir(state)
    d.sock = os.path.join(state, "backfilld.sock")
    d.state_db = os.path.join(state, "state.db")
    d.warehouses = {"sales": os.path.join(state, "sales.db")}
    con = sqlite3.connect(d.warehouses["sales"])
    con.executescript(h.sales_seed())
    con.close()
    return d


def test_example_config():
    d = example_daemon("example")
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30)
    h.eq(p.returncode, 0, "backfilld --check-config on config/example.yaml (stderr %r)" % p.stderr)
    d.start()
    weeks_out = "week_start NOT IN ('2026-02-02', '2026-02-09')"
    others = d.dump("mart_weekly_sales", weeks_out)
    jan = d.dump("mart_monthly_sales", "month_start = '2026-01-01'")
    fact_out = d.dump("fct_daily_sales", "dt NOT BETWEEN '%s' AND '%s'" % h.WINDOW)
    d.ok("backfill", "fct_daily_sales", "--from", h.WINDOW[0], "--to", h.WINDOW[1],
         "--reason", "refund bug", "--dry-run")
    h.eq(d.runs(), [], "runs after --dry-run")
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "refund bug")
    h.assert_fact_repaired(d, *h.WINDOW)
    h.eq(d.dump("fct_daily_sales", "dt NOT BETWEEN '%s' AND '%s'" % h.WINDOW), fact_out,
         "fact rows outside the window")
    h.eq(d.dump("mart_weekly_sales", weeks_out), others, "weeks outside the window")
    h.eq(d.dump("mart_monthly_sales", "month_start = '2026-01-01'"), jan, "January")
    for wk in ("2026-02-02", "2026-02-09"):
        [(got,)] = d.query("SELECT revenue_usd FROM mart_weekly_sales WHERE week_start = ?", (wk,))
        [(want,)] = d.query("SELECT SUM(amount_usd) FROM raw_sales WHERE dt >= ? "
                            "AND dt < date(?, '+7 days')", (wk, wk))
        h.check(abs(got - want) < 0.005, "week %s: %.2f, raw_sales says %.2f" % (wk, got, want))
    [(got,)] = d.query("SELECT revenue_usd FROM mart_monthly_sales WHERE month_start = '2026-02-01'")
    [(want,)] = d.query("SELECT SUM(amount_usd) FROM raw_sales WHERE dt >= '2026-02-01'")
    h.check(abs(got - want) < 0.005, "month 2026-02: %.2f, raw_sales says %.2f" % (got, want))
    runs = d.runs()
    h.eq(sorted((r["job"], r["partition"]) for r in runs),
         sorted([("fct_daily_sales", x) for x in h.days(*h.WINDOW)] +
                [("mart_weekly_sales", "2026-02-02"), ("mart_weekly_sales", "2026-02-09"),
                 ("mart_monthly_sales", "2026-02-01")]), "runs of the demo backfill")
    whole = d.wh_dump()
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "again")
    h.eq(d.wh_dump(), whole, "warehouse after the second backfill")
    d.ok("runs", "--limit", "12")
    d.ok("status")
    d.stop()


if __name__ == "__main__":
    h.main([test_example_config])
