#!/usr/bin/env python3
"""Check severity (issue 29, docs/configuration.md "Guardrails"), on the real daemon.

- a failing check and a failing max_change of severity: warn publish the
  partition (no rollback); the run succeeds with warnings, and that is
  visible in `runs` (JSON field and text note), `audit` (result warned),
  the metrics file (backfilld_checks_total, promtool-clean), the report
  and the on_warning hook, which runs once per partition with the note;
- the same checks with the default severity (error) roll back."""
import os
import re
import shutil
import subprocess
import time

import harness as h
import test_guardrails as tg
import test_hooks as th

DAY = "2026-02-03"

WARN_JOB = tg.guarded_job(
    tg.HALF_SQL,
    metrics={"revenue": "{sql: SUM(revenue_usd), max_change: 30%, severity: SEV}"},
    extra="""\
checks:
  - name: revenue_over_1m
    sql: SELECT SUM(revenue_usd) > 1000000 FROM fct_daily_sales WHERE dt = :partition
    severity: SEV
  - name: has_rows
    sql: SELECT COUNT(*) > 0 FROM fct_daily_sales WHERE dt = :partition
on_warning: """ + th.HOOK % "warn.txt" + """
on_failure: """ + th.HOOK % "fail.txt" + "\n")


def job(sev):
    return WARN_JOB.replace("SEV", sev)


def checks_samples(path):
    with open(path) as f:
        text = f.read()
    out = {}
    for line in text.splitlines():
        m = re.match(r'backfilld_checks_total\{job="([^"]*)",check="([^"]*)",'
                     r'result="(\w+)"\} (\d+)$', line)
        if m:
            out[(m.group(1), m.group(2), m.group(3))] = int(m.group(4))
    return text, out


def test_warning_publishes():
    d = h.Daemon(jobs=job("warn"), warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 2, "metrics_file": "m.prom",
                           "report_file": "report.html"}, name="ck-warn")
    rev = d.query("SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = ?", (DAY,))[0][0]
    n0 = len(d.runs())
    req = d.enqueue("backfill", "fct_daily_sales", "--from", DAY, "--to", DAY, "--wait")
    new = d.runs()[n0:]
    h.eq([(r["partition"], r["state"], r["warnings"]) for r in new],
         [(DAY, "succeeded", True)], "runs --json of the run with failed warnings")
    note = new[0]["error"] or ""
    h.check(note.startswith("warning: check revenue_over_1m failed for %s" % DAY)
            and "1 more" in note, "the run's note names the first warning: %r" % note)
    # published: revenue halved, as the job wrote it
    got = d.query("SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = ?", (DAY,))[0][0]
    h.check(abs(got - rev / 2) < 0.011, "revenue after the warned run: %.2f, expected %.2f"
            % (got, rev / 2))
    out = d.ok("runs", "--job", "fct_daily_sales")
    h.check("warning: check revenue_over_1m" in out, "runs text shows the note:\n%s" % out)

    _, p = tg.audit_part(d, req, "fct_daily_sales", DAY)
    h.eq(p["passed"], True, "audit passed of the published partition")
    c = tg.check_of(p, "revenue_over_1m")
    h.eq((c["passed"], c["severity"], c["result"]), (False, "warn", "warned"),
         "audit of the warned check")
    c = tg.check_of(p, "max_change:revenue")
    h.eq((c["passed"], c["severity"], c["result"]), (False, "warn", "warned"),
         "audit of the warned max_change")
    c = tg.check_of(p, "has_rows")
    h.eq((c["passed"], c["severity"], c["result"]), (True, "error", "passed"),
         "audit of a passed check")
    text = d.ok("audit", "--request", str(req))
    h.check("max_change:revenue (warning):" in text, "audit text marks the warning:\n%s" % text)

    lines = th.await_lines(d, "warn.txt", 1, "on_warning")
    h.eq(len(lines), 1, "on_warning lines")
    parts = lines[0].split("|")
    h.eq(parts[1:4], ["fct_daily_sales", DAY, str(req)], "on_warning's job, partition, request")
    h.check(parts[4].startswith("warning: check revenue_over_1m"),
            "on_warning's {error} is the note: %r" % parts[4])
    h.eq(th.hook_lines(d, "fail.txt"), [], "on_failure did not run")

    d.ok("report", "--html", os.path.join(d.dir, "now.html"))
    with open(os.path.join(d.dir, "now.html")) as f:
        page = f.read()
    sect = page.split("<h2>Warnings</h2>", 1)
    h.check(len(sect) == 2 and "revenue_over_1m" in sect[1].split("<h2>", 1)[0],
            "the report's Warnings section lists the run")
    d.stop()
    path = os.path.join(d.dir, "m.prom")
    text, got = checks_samples(path)
    want = {("fct_daily_sales", "revenue_over_1m", "warned"): 1,
            ("fct_daily_sales", "revenue_over_1m", "failed"): 0,
            ("fct_daily_sales", "revenue_over_1m", "passed"): 0,
            ("fct_daily_sales", "max_change:revenue", "warned"): 1,
            ("fct_daily_sales", "has_rows", "passed"): 1,
            ("fct_daily_sales", "min_rows", "passed"): 1}
    for k, v in want.items():
        h.eq(got.get(k), v, "backfilld_checks_total%r" % (k,))
    tool = shutil.which("promtool")
    if tool:
        p = subprocess.run([tool, "check", "metrics"], input=text,
                           capture_output=True, text=True)
        h.check(p.returncode == 0, "promtool check metrics: %s%s" % (p.stdout, p.stderr))


def test_error_rolls_back():
    d = h.Daemon(jobs=job("error"), warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 2, "metrics_file": "m.prom"},
                 name="ck-error")
    before = d.dump("fct_daily_sales", "dt = ?", (DAY,))
    req, run = tg.fail_one(d, "fct_daily_sales", DAY)
    h.eq(run["warnings"], False, "runs --json warnings of a failed run")
    h.check((run["error"] or "").startswith("check revenue_over_1m failed"),
            "error %r" % run["error"])
    h.eq(d.dump("fct_daily_sales", "dt = ?", (DAY,)), before, "partition after rollback")
    _, p = tg.audit_part(d, req, "fct_daily_sales", DAY)
    h.eq(tg.check_of(p, "revenue_over_1m")["result"], "failed", "audit result")
    th.await_lines(d, "fail.txt", 1, "on_failure")
    d.stop()
    h.eq(th.hook_lines(d, "warn.txt"), [], "on_warning did not run")
    _, got = checks_samples(os.path.join(d.dir, "m.prom"))
    h.eq(got.get(("fct_daily_sales", "revenue_over_1m", "failed")), 1, "failed counted")
    h.eq(got.get(("fct_daily_sales", "revenue_over_1m", "warned")), 0, "warned counted")


if __name__ == "__main__":
    h.main([test_warning_publishes, test_error_rolls_back])
