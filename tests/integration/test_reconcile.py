#!/usr/bin/env python3
"""Reconciliation across warehouses (issue 29, docs/configuration.md "Reconciliation").

The lesson's question "do the numbers reconcile against raw?" asked of
another warehouse: the landing database holds the raw sales as
`sales(day, amount)`; the fact job writes fct_daily_sales on the sales
warehouse and reconciles SUM(revenue_usd) of the partition with the
landing's SUM(amount) of the day.

- SQLite landing, SQLite sales: the backfill of the lesson's window passes
  with refunds included; with the buggy SQL (refunds excluded) every run
  fails, rolls back, and the audit holds source, target and difference;
- a landing that cannot be reached fails the check (not passes it), and
  with severity: warn the partition is published with a warning;
- a source query that outlives its own timeout fails the check (SQLite:
  interrupted; PostgreSQL: pg_sleep cancelled on the server, the daemon
  answering status and runs meanwhile);
- reconcile SQL is scanned like job SQL: a source or target that reads the
  wall clock or controls a transaction is refused with its position by
  --check-config, at start and on reload (the old configuration kept);
- different drivers (with PostgreSQL, skipped without it unless
  BACKFILLD_REQUIRE_POSTGRES=1): SQLite landing with a PostgreSQL sales
  warehouse, and a PostgreSQL landing with a SQLite sales warehouse."""
import os
import shutil
import subprocess
import sys
import time

import harness as h
import test_guardrails as tg

# the landing's copy of raw: another schema, another warehouse
LANDING_SQL = ("CREATE TABLE sales AS SELECT dt AS day, amount_usd AS amount"
               " FROM raw_sales;")

BUGGY_SQL = tg.GOOD_SQL.replace("WHERE dt = :partition GROUP",
                                "WHERE dt = :partition AND amount_usd > 0 GROUP")


def job(sql, source_wh="landing", target_wh="sales", extra="", timeout="",
        source_sql="SELECT SUM(amount) FROM sales WHERE day = :partition"):
    lines = [
        "- name: fct_daily_sales",
        "  warehouse: %s" % target_wh,
        "  partition: day",
        "  start: 2026-01-26",
        "  end: 2026-02-22",
        "  catchup: false",
        "  retries: 0",
        "  reconcile:",
        "    - name: revenue_matches_source",
        "      source:",
        "        warehouse: %s" % source_wh,
        "        sql: %s" % source_sql,
    ]
    if timeout:
        lines.append("        timeout: %s" % timeout)
    lines += [
        "      target: SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = :partition",
        "      tolerance: 0.1%",
    ]
    if extra:
        lines += ["      " + l for l in extra.strip("\n").split("\n")]
    lines.append("  sql: |")
    lines.extend("    " + l for l in sql.strip("\n").split("\n"))
    return "\n".join(lines) + "\n"


SETTINGS = {"max_concurrency": 2, "metrics_file": "m.prom"}


def sqlite_daemon(sql, name, **kw):
    return h.Daemon(jobs=job(sql, **kw),
                    warehouses={"sales": h.sales_seed(),
                                "landing": h.sales_seed() + LANDING_SQL},
                    settings=SETTINGS, name=name)


def rewrite(d, text):
    d.write_config(d.render(text, SETTINGS))
    d.ok("reload")


def prom(d):
    """{sample name and labels: value} of the metrics file."""
    out = {}
    with open(os.path.join(d.dir, "m.prom")) as f:
        text = f.read()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return text, out


def window_runs(d, n0, state):
    new = d.runs()[n0:]
    h.eq(sorted((r["partition"], r["state"]) for r in new),
         [(x, state) for x in h.days(*h.WINDOW)], "runs of the window")
    return new


def recon_of(p):
    return tg.check_of(p, "reconcile:revenue_matches_source")


def raw_sum(d, day, refunds=True):
    q = "SELECT SUM(amount_usd) FROM raw_sales WHERE dt = ?"
    if not refunds:
        q += " AND amount_usd > 0"
    return d.query(q, (day,))[0][0]


def assert_failed_window(d, truth, excluded):
    """The buggy job over the window: every run fails, nothing changes,
    the audit holds both values.  truth(day): the landing's sum;
    excluded(day): what the buggy job would write."""
    whole = d.wh_dump() if d.warehouses.get("sales") else None
    n0 = len(d.runs())
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", h.WINDOW[0],
                         "--to", h.WINDOW[1], "--wait")
    h.eq(rc, 1, "backfill of the buggy job: exit (%r %r)" % (out, err))
    new = window_runs(d, n0, "failed")
    req = new[0]["request"]
    for r in new:
        h.check("check reconcile:revenue_matches_source failed for %s" % r["partition"]
                in (r["error"] or ""), "run error %r" % r["error"])
    if whole is not None:
        h.eq(d.wh_dump(), whole, "the sales warehouse after the failed backfill")
    for day in h.days(*h.WINDOW):
        _, p = tg.audit_part(d, req, "fct_daily_sales", day)
        c = recon_of(p)
        h.eq((p["passed"], c["passed"], c["result"]), (False, False, "failed"),
             "audit of %s" % day)
        src, tgt = truth(day), excluded(day)
        h.check(abs(c["source"] - src) < 0.005 and abs(c["target"] - tgt) < 0.005
                and abs(c["difference"] - (tgt - src)) < 0.01,
                "audit values of %s: %r, expected source %.2f target %.2f" % (day, c, src, tgt))
        h.check("above tolerance 0.1%" in c["detail"], "detail %r" % c["detail"])


def assert_passed_window(d, truth):
    n0 = len(d.runs())
    req = d.enqueue("backfill", "fct_daily_sales", "--from", h.WINDOW[0],
                    "--to", h.WINDOW[1], "--wait")
    window_runs(d, n0, "succeeded")
    for day in h.days(*h.WINDOW):
        _, p = tg.audit_part(d, req, "fct_daily_sales", day)
        c = recon_of(p)
        h.eq((p["passed"], c["passed"], c["result"]), (True, True, "passed"),
             "audit of %s" % day)
        h.check(abs(c["source"] - truth(day)) < 0.005 and abs(c["difference"]) < 0.005,
                "audit values of %s: %r" % (day, c))


def test_sqlite_to_sqlite():
    d = sqlite_daemon(BUGGY_SQL, "rc-sqlite")
    assert_failed_window(d, lambda x: raw_sum(d, x), lambda x: raw_sum(d, x, False))
    h.eq(d.status()["fct_daily_sales"].get("reconciled_through", "absent"), None,
         "reconciled_through after failed reconciles")
    rewrite(d, job(tg.GOOD_SQL))
    assert_passed_window(d, lambda x: raw_sum(d, x))
    h.assert_fact_repaired(d, *h.WINDOW)
    h.eq(d.status()["fct_daily_sales"].get("reconciled_through"), h.WINDOW[1],
         "reconciled_through after the window passed")
    out = d.ok("status")
    h.check("reconciled fct_daily_sales: through %s" % h.WINDOW[1] in out,
            "status text names the reconciled-through partition:\n%s" % out)
    # an older partition that passes later does not move it back
    d.ok("backfill", "fct_daily_sales", "--from", "2026-02-01", "--to", "2026-02-01", "--wait")
    h.eq(d.status()["fct_daily_sales"].get("reconciled_through"), h.WINDOW[1],
         "reconciled_through after an older partition passed")
    d.stop()
    text, got = prom(d)
    lab = '{job="fct_daily_sales",check="reconcile:revenue_matches_source"'
    h.eq(got.get("backfilld_checks_total" + lab + ',result="failed"}'), 5.0, "failed counted")
    h.eq(got.get("backfilld_checks_total" + lab + ',result="passed"}'), 6.0, "passed counted")
    src = raw_sum(d, "2026-02-01")
    h.check(abs(got.get("backfilld_reconcile_source" + lab + "}", -1) - src) < 0.005
            and abs(got.get("backfilld_reconcile_difference" + lab + "}", -1)) < 0.005,
            "the newest comparison's values in the metrics:\n%s" % text)
    tool = shutil.which("promtool")
    if tool:
        p = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True,
                           text=True)
        h.check(p.returncode == 0, "promtool check metrics: %s%s" % (p.stdout, p.stderr))
    # kept in the state store: the same after a restart (and after kill -9)
    d.start()
    h.eq(d.status()["fct_daily_sales"].get("reconciled_through"), h.WINDOW[1],
         "reconciled_through after a restart")
    d.kill9()
    d.start()
    h.eq(d.status()["fct_daily_sales"].get("reconciled_through"), h.WINDOW[1],
         "reconciled_through after kill -9 and a start")
    h.check("reconciled fct_daily_sales: through %s" % h.WINDOW[1] in d.ok("status"),
            "status text after the restarts")
    d.stop()


def test_unreachable_source():
    day = "2026-02-03"
    d = sqlite_daemon(tg.GOOD_SQL, "rc-gone")
    os.unlink(d.warehouses["landing"])
    whole = d.wh_dump()
    _, run = tg.fail_one(d, "fct_daily_sales", day)
    err = run["error"] or ""
    h.check("reconcile:revenue_matches_source" in err and "source landing" in err,
            "the error names the check and the source: %r" % err)
    h.eq(d.wh_dump(), whole, "the sales warehouse after the failed run")
    d.stop()
    # the same, with severity: warn: published, with a warning
    d = sqlite_daemon(tg.GOOD_SQL, "rc-gone-warn", extra="severity: warn")
    os.unlink(d.warehouses["landing"])
    n0 = len(d.runs())
    req = d.enqueue("backfill", "fct_daily_sales", "--from", day, "--to", day, "--wait")
    new = d.runs()[n0:]
    h.eq([(r["state"], r["warnings"]) for r in new], [("succeeded", True)],
         "the warned run")
    _, p = tg.audit_part(d, req, "fct_daily_sales", day)
    c = recon_of(p)
    h.eq((c["result"], c["source"]), ("warned", None), "audit of the unreachable source")
    d.stop()


def test_null_source():
    """A source that returns NULL (no row of the day on the landing) fails
    the check, and the words say the source was NULL: no "difference +0",
    which a NULL does not have."""
    d = sqlite_daemon(tg.GOOD_SQL, "rc-null",
                      source_sql="SELECT SUM(amount) FROM sales WHERE day = 'never'")
    _, run = tg.fail_one(d, "fct_daily_sales", "2026-02-03")
    err = run["error"] or ""
    h.check("source NULL, target " in err and "the source was NULL" in err,
            "the error says the source was NULL: %r" % err)
    h.check("difference" not in err.replace("no difference", ""),
            "a NULL source has no difference: %r" % err)
    d.stop()


def test_source_timeout():
    """A source query slower than its timeout (a recursive CTE counting to
    a billion) is interrupted: the check fails, quickly."""
    slow = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
            " WHERE x < 1000000000) SELECT COUNT(*) FROM c")
    d = sqlite_daemon(tg.GOOD_SQL, "rc-slow", timeout="1s", source_sql=slow)
    _, run = tg.fail_one(d, "fct_daily_sales", "2026-02-03")
    err = run["error"] or ""
    h.check("timed out" in err and "source landing" in err, "error %r" % err)
    started, finished = h.parse_iso(run["started_at"]), h.parse_iso(run["finished_at"])
    h.check((finished - started).total_seconds() < 20, "run took %r" % (finished - started))
    d.stop()


def daemon_refusal(d):
    """--check-config, then a start of the daemon: (rc, one line) each."""
    out = []
    for args in (["--check-config", "--config", d.conf], ["--config", d.conf]):
        p = subprocess.run([d.backfilld] + args, capture_output=True, text=True,
                           timeout=60, cwd=d.dir, env=d.env())
        out.append(h.one_line_error(p.returncode, p.stdout, p.stderr, 2,
                                    "backfilld %s" % " ".join(args[:1])))
    return out


def test_recon_sql_scanned():
    """Reconcile SQL through the job SQL's scans: the wall clock (in the
    dialect of the warehouse each side runs on) and transaction control,
    refused by --check-config, at start and by reload, with the position."""
    clock = "SELECT SUM(amount) FROM sales WHERE day = date('now')"
    commit = "SELECT SUM(amount) FROM sales WHERE day = :partition; COMMIT"
    target = "SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = :partition"
    cases = [
        (job(tg.GOOD_SQL, source_sql=clock), "'now'",
         "job \"fct_daily_sales\" reconcile \"revenue_matches_source\" source reads the"
         " wall clock ('now'): take the date from :partition, or set allow_wall_clock: true"),
        (job(tg.GOOD_SQL, source_sql=commit), "COMMIT",
         "job \"fct_daily_sales\" reconcile \"revenue_matches_source\" source statement 2"
         " controls the run's transaction (COMMIT): "),
        (job(tg.GOOD_SQL).replace(target, target + " AND CURRENT_DATE > dt"), "CURRENT_DATE",
         "job \"fct_daily_sales\" reconcile \"revenue_matches_source\" target reads the"
         " wall clock (CURRENT_DATE)"),
        (job(tg.GOOD_SQL).replace(target, "'" + target + "; ROLLBACK'"), "ROLLBACK",
         "job \"fct_daily_sales\" reconcile \"revenue_matches_source\" target statement 2"
         " controls the run's transaction (ROLLBACK): "),
    ]
    d = sqlite_daemon(tg.GOOD_SQL, "rc-scan")
    good = d.config_text
    for text, needle, want in cases:
        d.write_config(d.render(text, SETTINGS))
        line = next(n for n, l in enumerate(d.config_text.split("\n"), 1) if needle in l)
        col = d.config_text.split("\n")[line - 1].index(needle) + 1
        pos = "backfilld.yaml:%d:%d: " % (line, col)
        for e in daemon_refusal(d):
            h.check(pos + want in e, "refusal %r, want %r" % (e, pos + want))
        rc, out, err = d.ctl("reload")
        e = h.one_line_error(rc, out, err, 2, "reload of %s" % needle)
        h.check(pos + want in e, "reload said %r, want %r" % (e, pos + want))
    # the configuration the daemon kept still reconciles
    d.write_config(good)
    d.backfill("fct_daily_sales", "2026-02-03", "2026-02-03")
    h.eq([r["state"] for r in d.runs()[-1:]], ["succeeded"], "a run after the refusals")
    # allow_wall_clock lets the source read the clock, as for job SQL
    d.write_config(d.render(job(tg.GOOD_SQL, source_sql=clock).replace(
        "  retries: 0\n", "  retries: 0\n  allow_wall_clock: true\n"), SETTINGS))
    d.ok("reload")
    d.stop()


# ------------------------------------------------------------- other drivers

def pg():
    import test_postgres as tp
    return tp


def test_sqlite_source_pg_target():
    tp = pg()
    c = tp.cluster()
    c.fresh_db()
    d = tp.pg_daemon(job(BUGGY_SQL),
                     tp.pg_warehouse("sales") + "  - name: landing\n    sqlite: landing.db\n",
                     name="rc-pg-target", start=False)
    import sqlite3
    con = sqlite3.connect(os.path.join(d.dir, "landing.db"))
    con.executescript(h.sales_seed() + LANDING_SQL)
    con.commit()

    def landing(day):
        return con.execute("SELECT SUM(amount) FROM sales WHERE day = ?", (day,)).fetchone()[0]

    def landing_pos(day):
        return con.execute("SELECT SUM(amount) FROM sales WHERE day = ? AND amount > 0",
                           (day,)).fetchone()[0]
    d.start()
    assert_failed_window(d, landing, landing_pos)
    d.write_config(open(d.conf).read().replace(" AND amount_usd > 0", ""))
    d.ok("reload")
    assert_passed_window(d, landing)
    d.stop()
    con.close()


def test_pg_source_sqlite_target():
    tp = pg()
    c = tp.cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE sales AS SELECT dt AS day, amount_usd AS amount FROM raw_sales")
    d = h.Daemon(config=None, jobs=job(BUGGY_SQL, source_sql="SELECT SUM(amount)"
                                       " FROM sales WHERE day = :partition::date"),
                 warehouses={"sales": h.sales_seed()}, name="rc-pg-source", start=False)
    text = open(d.conf).read().replace(
        "warehouses:\n", "warehouses:\n" + tp.pg_warehouse("landing"), 1)
    d.write_config(text)
    d.start()

    def landing(day):
        return float(c.as_etl("SELECT SUM(amount) FROM sales WHERE day = '%s'" % day)[0][0])
    assert_failed_window(d, landing, lambda x: raw_sum(d, x, False))
    d.write_config(open(d.conf).read().replace(" AND amount_usd > 0", ""))
    d.ok("reload")
    assert_passed_window(d, landing)
    h.assert_fact_repaired(d, *h.WINDOW)
    d.stop()


def test_pg_source_timeout_cancelled():
    """A PostgreSQL source slower than its timeout (pg_sleep) is cancelled
    on the server, not abandoned there, and fails the check; while it
    sleeps the daemon answers status and runs (the source runs on a
    worker thread, off the loop)."""
    tp = pg()
    c = tp.cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE sales AS SELECT dt AS day, amount_usd AS amount FROM raw_sales")
    slow = "SELECT SUM(amount) FROM sales, pg_sleep(60) WHERE day = :partition::date"
    d = h.Daemon(config=None, jobs=job(tg.GOOD_SQL, timeout="3s", source_sql=slow),
                 warehouses={"sales": h.sales_seed()}, name="rc-pg-slow", start=False)
    d.write_config(open(d.conf).read().replace(
        "warehouses:\n", "warehouses:\n" + tp.pg_warehouse("landing"), 1))
    d.start()
    whole = d.wh_dump()
    day = "2026-02-03"
    sleeping = ("SELECT pid FROM pg_stat_activity WHERE query LIKE '%%pg_sleep(60)%%'"
                " AND state = 'active' AND pid <> pg_backend_pid()")
    req = d.enqueue("backfill", "fct_daily_sales", "--from", day, "--to", day)
    deadline = time.monotonic() + 60
    while not c.psql(sleeping):
        h.check(time.monotonic() < deadline, "the source query never ran on the server")
        h.check(not d.runs() or d.runs()[-1]["state"] in ("queued", "running"),
                "the run ended before its source query was seen: %r" % d.runs()[-1:])
    # the source sleeps on the server: the daemon answers meanwhile
    st = d.status()
    h.check("fct_daily_sales" in st, "status while the source sleeps: %r" % st)
    h.eq([(r["partition"], r["state"]) for r in d.runs()], [(day, "running")],
         "runs while the source sleeps")
    d.wait_request(req)
    [run] = d.runs()
    err = run["error"] or ""
    h.eq(run["state"], "failed", "the run whose source timed out")
    h.check("reconcile:revenue_matches_source" in err and "source landing" in err
            and "timed out" in err, "error %r" % err)
    h.eq(c.psql(sleeping), [], "the source query left running on the server (not cancelled)")
    h.eq(d.wh_dump(), whole, "the sales warehouse after the failed run")
    _, p = tg.audit_part(d, req, "fct_daily_sales", day)
    h.eq((recon_of(p)["result"], recon_of(p)["source"]), ("failed", None),
         "audit of the timed-out source")
    d.stop()


if __name__ == "__main__":
    tests = [test_sqlite_to_sqlite, test_unreachable_source, test_null_source,
             test_source_timeout, test_recon_sql_scanned]
    if "--postgres" in sys.argv:
        tests = [test_sqlite_source_pg_target, test_pg_source_sqlite_target,
                 test_pg_source_timeout_cancelled]
    if "--state" in sys.argv:
        # on the store BACKFILLD_TEST_STATE names (meson: test_reconcile_statepg)
        tests = [test_sqlite_to_sqlite]
    h.main(tests)
